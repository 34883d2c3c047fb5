//! `memshard stats`: every server's `stats` and `stats settings` side by side (as memstat and
//! memcached-tool show them), their totals, each server's items against its share of the ring,
//! and with --watch the rates since the previous sample. The requests and the ring are the
//! library's; this is arithmetic on the servers' own counters, and output.

use crate::{Failure, NetArgs, RingArgs, parse_finite};
use clap::Args;
use clap::builder::RangedU64ValueParser;
use memshard::{Client, Ring, Server, Stats};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

#[derive(Args)]
pub struct StatsArgs {
    #[command(flatten)]
    ring: RingArgs,
    #[command(flatten)]
    net: NetArgs,
    /// Print JSON: {"time", "servers": [...], "totals": {...}}, each server with its "address"
    /// and numbers, or its "address", "error" and "down" (false: it answered, with a refusal)
    /// when it gave no stats. Indented for one sample; with --watch one object per line (JSON
    /// Lines).
    #[arg(long)]
    json: bool,
    /// Sample again every SECONDS (above 0, at most 86400) until interrupted, adding each
    /// server's gets/s, sets/s, hits/s and evictions/s since the previous sample.
    #[arg(long, value_name = "SECONDS", value_parser = parse_interval)]
    watch: Option<f64>,
    /// With --watch: stop after N samples (default: run until interrupted).
    #[arg(long, value_name = "N", requires = "watch",
          value_parser = RangedU64ValueParser::<u64>::new().range(1..))]
    count: Option<u64>,
    /// Synthetic keys (`key:<i>`) routed over the client's ring (its flavor, hash and weights)
    /// to measure each server's share of it (1 to 10000000).
    #[arg(long, default_value_t = 100_000, value_name = "N",
          value_parser = RangedU64ValueParser::<u64>::new().range(1..=MAX_SHARE_KEYS))]
    share_keys: u64,
    /// Flag a server whose share of the items is at least RATIO times its share of the ring
    /// (above 0).
    #[arg(long, default_value_t = 1.5, value_name = "RATIO", value_parser = parse_ratio)]
    skew_ratio: f64,
    /// Flag nothing while the servers that answered hold fewer than N items in all: a few
    /// keys say little about placement.
    #[arg(long, default_value_t = 100, value_name = "N")]
    skew_min_items: u64,
}

/// Most `--share-keys`: a few seconds of routing for the slowest flavors.
const MAX_SHARE_KEYS: u64 = 10_000_000;
/// Longest `--watch` interval: a day.
const MAX_INTERVAL_SECONDS: f64 = 86_400.0;

/// `--watch`: above 0 and at most a day.
fn parse_interval(s: &str) -> Result<f64, String> {
    let v = parse_finite(s, "seconds")?;
    if v > 0.0 && v <= MAX_INTERVAL_SECONDS {
        Ok(v)
    } else {
        Err(format!(
            "{s} s is out of range: give more than 0 and at most {MAX_INTERVAL_SECONDS} s (a day)"
        ))
    }
}

/// `--skew-ratio`: above 0.
fn parse_ratio(s: &str) -> Result<f64, String> {
    let v = parse_finite(s, "a ratio")?;
    if v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{s} is out of range: a ratio is above 0"))
    }
}

/// What one server said.
#[derive(Clone, Debug, Default)]
struct Numbers {
    version: Option<String>,
    uptime: Option<u64>,
    curr_items: Option<u64>,
    bytes: Option<u64>,
    limit_maxbytes: Option<u64>,
    get_hits: Option<u64>,
    get_misses: Option<u64>,
    evictions: Option<u64>,
    curr_connections: Option<u64>,
    cmd_get: Option<u64>,
    cmd_set: Option<u64>,
    /// From `stats settings`.
    item_size_max: Option<u64>,
    /// `stats settings` failed while `stats` answered (a proxy may refuse the group).
    settings_error: Option<String>,
}

impl Numbers {
    fn from_stats(stats: &Stats) -> Numbers {
        let map: HashMap<&str, &str> = stats
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        // a counter the server does not report (or not as a number) is shown as unknown
        let num = |name: &str| map.get(name).and_then(|v| v.trim().parse::<u64>().ok());
        Numbers {
            version: map.get("version").map(|v| v.to_string()),
            uptime: num("uptime"),
            curr_items: num("curr_items"),
            bytes: num("bytes"),
            limit_maxbytes: num("limit_maxbytes"),
            get_hits: num("get_hits"),
            get_misses: num("get_misses"),
            evictions: num("evictions"),
            curr_connections: num("curr_connections"),
            cmd_get: num("cmd_get"),
            cmd_set: num("cmd_set"),
            item_size_max: None,
            settings_error: None,
        }
    }

    fn hit_ratio(&self) -> Option<f64> {
        hit_ratio(self.get_hits?, self.get_misses?)
    }
}

/// get_hits / (get_hits + get_misses); none before the first get.
fn hit_ratio(hits: u64, misses: u64) -> Option<f64> {
    let gets = hits.saturating_add(misses);
    (gets > 0).then(|| hits as f64 / gets as f64)
}

/// Per second since the previous sample.
#[derive(Clone, Copy, Debug, Default)]
struct Rates {
    gets: f64,
    sets: f64,
    hits: f64,
    evictions: f64,
}

/// The counters rates are taken from, and when they were read.
#[derive(Clone, Copy)]
struct Counters {
    at: Instant,
    uptime: u64,
    cmd_get: u64,
    cmd_set: u64,
    get_hits: u64,
    evictions: u64,
}

impl Counters {
    fn of(n: &Numbers, at: Instant) -> Option<Counters> {
        Some(Counters {
            at,
            uptime: n.uptime?,
            cmd_get: n.cmd_get?,
            cmd_set: n.cmd_set?,
            get_hits: n.get_hits?,
            evictions: n.evictions?,
        })
    }

    /// None when the server restarted in between (its uptime or a counter went back): the
    /// difference would not be what it served.
    fn rates_since(&self, before: &Counters) -> Option<Rates> {
        let secs = self.at.checked_duration_since(before.at)?.as_secs_f64();
        if secs <= 0.0 || self.uptime < before.uptime {
            return None;
        }
        let per_s = |now: u64, then: u64| now.checked_sub(then).map(|d| d as f64 / secs);
        Some(Rates {
            gets: per_s(self.cmd_get, before.cmd_get)?,
            sets: per_s(self.cmd_set, before.cmd_set)?,
            hits: per_s(self.get_hits, before.get_hits)?,
            evictions: per_s(self.evictions, before.evictions)?,
        })
    }
}

/// One server in one sample.
struct Row {
    /// As `memshard route` prints it: the address it is reached at.
    shown: String,
    /// The address as listed: what the ring's shares are counted by.
    addr: String,
    answer: Result<Numbers, Failed>,
    /// Its share of the ring among the servers that answered.
    ring_share: Option<f64>,
    /// Its share of the items held by the servers that answered.
    item_share: Option<f64>,
    rates: Option<Rates>,
    skewed: bool,
}

impl Row {
    fn items_per_ring(&self) -> Option<f64> {
        let ring = self.ring_share.filter(|&r| r > 0.0)?;
        Some(self.item_share? / ring)
    }
}

/// Why a server has no numbers.
struct Failed {
    /// It could not answer (refused, timed out, already marked down), as opposed to refusing
    /// the request (authentication, a proxy without `stats`).
    down: bool,
    why: String,
}

/// One sample of every server.
struct Sample {
    time: SystemTime,
    rows: Vec<Row>,
    totals: Totals,
}

#[derive(Default)]
struct Totals {
    servers: usize,
    answered: usize,
    curr_items: u64,
    bytes: u64,
    limit_maxbytes: u64,
    get_hits: u64,
    get_misses: u64,
    evictions: u64,
    curr_connections: u64,
    rates: Option<Rates>,
}

/// Keys the ring routes to each server (by its address as listed), for one ring.
struct RingShares {
    ring: Arc<Ring>,
    routed: HashMap<String, u64>,
}

impl RingShares {
    fn of(ring: Arc<Ring>, keys: u64) -> RingShares {
        let mut counts = vec![0u64; ring.servers().len()];
        let mut key = String::new();
        for i in 0..keys {
            key.clear();
            let _ = write!(key, "key:{i}");
            if let Some(s) = ring.route(key.as_bytes())
                && let Some(c) = counts.get_mut(s)
            {
                *c += 1;
            }
        }
        let routed = ring
            .servers()
            .iter()
            .zip(counts)
            .map(|(s, c)| (s.addr.clone(), c))
            .collect();
        RingShares { ring, routed }
    }
}

/// What is kept from one sample to the next.
#[derive(Default)]
struct State {
    shares: Option<RingShares>,
    before: HashMap<String, Counters>,
}

pub fn run(a: StatsArgs) -> Result<(), Failure> {
    // two requests per server at once: `stats` and `stats settings`
    let client = a.ring.client(&a.net, 2)?;
    let samples = match a.watch {
        None => 1,
        Some(_) => a.count.unwrap_or(u64::MAX),
    };
    let interval = Duration::from_secs_f64(a.watch.unwrap_or(0.0));
    let mut state = State::default();
    let mut missing = 0usize;
    let start = Instant::now();
    let stdout = io::stdout();
    for n in 0..samples {
        if n > 0 {
            // on a fixed beat: a slow sample (a server timing out) does not push the next ones
            let beats = u32::try_from(n).unwrap_or(u32::MAX);
            let wait = match start.checked_add(interval.saturating_mul(beats)) {
                Some(due) => due.saturating_duration_since(Instant::now()),
                None => interval,
            };
            std::thread::sleep(wait);
        }
        let s = sample(&client, &a, &mut state);
        let down = s.totals.servers - s.totals.answered;
        missing = missing.max(down);
        let text = if a.json {
            let v = to_json(&s);
            if a.watch.is_some() {
                serde_json::to_string(&v)
            } else {
                serde_json::to_string_pretty(&v)
            }
            .map_err(|e| Failure {
                code: 1,
                msg: e.to_string(),
            })? + "\n"
        } else if n > 0 {
            // a blank line between the blocks of --watch
            format!("\n{}", to_text(&s, true))
        } else {
            to_text(&s, a.watch.is_some())
        };
        let mut out = stdout.lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    if missing > 0 {
        return Err(Failure {
            code: 1,
            msg: format!("{missing} server(s) gave no `stats`"),
        });
    }
    Ok(())
}

/// Ask every server, then work out shares, skew, rates and totals.
fn sample(client: &Client, a: &StatsArgs, state: &mut State) -> Sample {
    // Both groups at once: a server that does not answer costs one timeout, not two.
    let (stats, settings) = std::thread::scope(|scope| {
        let settings = scope.spawn(|| client.stats(Some("settings")));
        let stats = client.stats(None);
        let settings = settings
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (stats, settings)
    });
    let at = Instant::now();
    let time = SystemTime::now();
    let mut settings: HashMap<String, memshard::Result<Stats>> = settings
        .into_iter()
        .map(|(s, r)| (s.addr.clone(), r))
        .collect();
    let mut rows: Vec<Row> = stats
        .into_iter()
        .map(|(server, r)| {
            let answer = r
                .map_err(|e| Failed {
                    down: e.is_server_failure(),
                    why: e.to_string(),
                })
                .map(|st| {
                    let mut n = Numbers::from_stats(&st);
                    match settings.remove(&server.addr) {
                        Some(Ok(set)) => n.item_size_max = item_size_max(&set),
                        Some(Err(e)) => n.settings_error = Some(e.to_string()),
                        None => n.settings_error = Some("not asked".into()),
                    }
                    n
                });
            Row {
                shown: shown(&server),
                addr: server.addr,
                answer,
                ring_share: None,
                item_share: None,
                rates: None,
                skewed: false,
            }
        })
        .collect();

    // the ring can change under discovery: measure each ring once
    let ring = client.ring();
    if !state
        .shares
        .as_ref()
        .is_some_and(|s| Arc::ptr_eq(&s.ring, &ring))
    {
        state.shares = Some(RingShares::of(ring, a.share_keys));
    }
    let routed = |addr: &str| {
        state
            .shares
            .as_ref()
            .and_then(|s| s.routed.get(addr).copied())
    };

    // shares among the servers that answered: a server down holds nothing we can count
    let items_of = |r: &Row| r.answer.as_ref().ok().and_then(|n| n.curr_items);
    let total_items: u64 = rows.iter().filter_map(items_of).sum();
    let total_routed: u64 = rows
        .iter()
        .filter(|r| items_of(r).is_some())
        .filter_map(|r| routed(&r.addr))
        .sum();
    for r in &mut rows {
        let Some(items) = items_of(r) else { continue };
        if total_routed > 0 {
            r.ring_share = routed(&r.addr).map(|k| k as f64 / total_routed as f64);
        }
        if total_items > 0 {
            r.item_share = Some(items as f64 / total_items as f64);
        }
        r.skewed = total_items >= a.skew_min_items
            && r.items_per_ring().is_some_and(|x| x >= a.skew_ratio);
    }

    // rates since the previous sample; a server seen for the first time has none yet
    let mut now = HashMap::new();
    for r in &mut rows {
        let Ok(n) = &r.answer else { continue };
        let Some(c) = Counters::of(n, at) else {
            continue;
        };
        r.rates = state.before.get(&r.addr).and_then(|b| c.rates_since(b));
        now.insert(r.addr.clone(), c);
    }
    state.before = now;

    let mut totals = Totals {
        servers: rows.len(),
        ..Totals::default()
    };
    for r in &rows {
        let Ok(n) = &r.answer else { continue };
        totals.answered += 1;
        let add = |sum: &mut u64, v: Option<u64>| *sum = sum.saturating_add(v.unwrap_or(0));
        add(&mut totals.curr_items, n.curr_items);
        add(&mut totals.bytes, n.bytes);
        add(&mut totals.limit_maxbytes, n.limit_maxbytes);
        add(&mut totals.get_hits, n.get_hits);
        add(&mut totals.get_misses, n.get_misses);
        add(&mut totals.evictions, n.evictions);
        add(&mut totals.curr_connections, n.curr_connections);
        if let Some(x) = r.rates {
            let t = totals.rates.get_or_insert_default();
            t.gets += x.gets;
            t.sets += x.sets;
            t.hits += x.hits;
            t.evictions += x.evictions;
        }
    }
    Sample { time, rows, totals }
}

/// `item_size_max` of a `stats settings` reply.
fn item_size_max(settings: &Stats) -> Option<u64> {
    settings
        .iter()
        .find(|(k, _)| k == "item_size_max")
        .and_then(|(_, v)| v.trim().parse().ok())
}

/// The address a server is reached at, as `memshard route` prints it: a discovered node's IP.
fn shown(s: &Server) -> String {
    match &s.connect_to {
        Some(_) => s.connect_addr(),
        None => s.addr.clone(),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn ratio(v: Option<f64>, places: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.places$}"))
}

fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{:.1}%", v * 100.0))
}

/// The text block of one sample: a title, the table, then any flags and notes.
fn to_text(s: &Sample, rates: bool) -> String {
    let mut header = vec![
        "server",
        "version",
        "uptime",
        "curr_items",
        "bytes",
        "limit_maxbytes",
        "hit_ratio",
        "evictions",
        "curr_connections",
        "item_size_max",
        "items/ring",
    ];
    if rates {
        header.extend(["gets/s", "sets/s", "hits/s", "evictions/s"]);
    }
    let rate_cells = |r: Option<Rates>| -> Vec<String> {
        match r {
            Some(r) => [r.gets, r.sets, r.hits, r.evictions]
                .iter()
                .map(|v| format!("{v:.1}"))
                .collect(),
            None => vec!["-".to_string(); 4],
        }
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    for r in &s.rows {
        let n = match &r.answer {
            Ok(n) => n,
            Err(f) => {
                // a row of two cells: the address, then why, over the other columns
                let state = if f.down { "down" } else { "error" };
                rows.push(vec![r.shown.clone(), format!("{state}: {}", f.why)]);
                continue;
            }
        };
        let mut row = vec![
            r.shown.clone(),
            opt(n.version.as_deref()),
            n.uptime.map_or_else(|| "-".into(), |u| format!("{u}s")),
            opt(n.curr_items),
            opt(n.bytes),
            opt(n.limit_maxbytes),
            ratio(n.hit_ratio(), 3),
            opt(n.evictions),
            opt(n.curr_connections),
            opt(n.item_size_max),
            ratio(r.items_per_ring(), 2),
        ];
        if rates {
            row.extend(rate_cells(r.rates));
        }
        rows.push(row);
    }
    let t = &s.totals;
    let mut total = vec![
        "total".to_string(),
        "-".into(),
        "-".into(),
        t.curr_items.to_string(),
        t.bytes.to_string(),
        t.limit_maxbytes.to_string(),
        ratio(hit_ratio(t.get_hits, t.get_misses), 3),
        t.evictions.to_string(),
        t.curr_connections.to_string(),
        "-".into(),
        "-".into(),
    ];
    if rates {
        total.extend(rate_cells(t.rates));
    }
    rows.push(total);

    let mut out = format!(
        "{}  {} servers, {} answered\n",
        humantime::format_rfc3339_seconds(s.time),
        t.servers,
        t.answered
    );
    out.push_str(&table(&header, &rows));
    for r in &s.rows {
        if r.skewed
            && let Some(x) = r.items_per_ring()
        {
            let _ = writeln!(
                out,
                "{} holds {x:.1}× its ring share of items ({} of the items, {} of the ring)",
                r.shown,
                percent(r.item_share),
                percent(r.ring_share)
            );
        }
        if let Ok(Numbers {
            settings_error: Some(e),
            ..
        }) = &r.answer
        {
            let _ = writeln!(out, "{}: no `stats settings`: {e}", r.shown);
        }
    }
    out
}

/// Columns as wide as their widest cell: the first left-aligned, the rest right-aligned except
/// text (version). A row shorter than the header (a server down) prints its last cell as it is.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        let full = row.len() == header.len();
        for (i, cell) in row.iter().enumerate() {
            // the reason of a short row runs over the columns, so it sets no width
            if full || i + 1 < row.len() {
                width[i] = width[i].max(cell.chars().count());
            }
        }
    }
    let left = |i: usize| i <= 1;
    let line = |cells: &mut dyn Iterator<Item = &str>, n: usize| {
        let mut s = String::new();
        for (i, cell) in cells.enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = width[i].saturating_sub(cell.chars().count());
            if i + 1 == n && n < header.len() {
                s.push_str(cell);
            } else if left(i) {
                s.push_str(cell);
                s.extend(std::iter::repeat_n(' ', pad));
            } else {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(cell);
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(&mut header.iter().copied(), header.len());
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str), row.len()));
    }
    out
}

fn rates_json(r: Option<Rates>) -> Value {
    match r {
        Some(r) => json!({
            "gets": r.gets,
            "sets": r.sets,
            "hits": r.hits,
            "evictions": r.evictions,
        }),
        None => Value::Null,
    }
}

fn to_json(s: &Sample) -> Value {
    let servers: Vec<Value> = s
        .rows
        .iter()
        .map(|r| match &r.answer {
            Err(f) => json!({ "address": r.shown, "error": f.why, "down": f.down }),
            Ok(n) => {
                let mut v = json!({
                    "address": r.shown,
                    "version": n.version,
                    "uptime": n.uptime,
                    "curr_items": n.curr_items,
                    "bytes": n.bytes,
                    "limit_maxbytes": n.limit_maxbytes,
                    "get_hits": n.get_hits,
                    "get_misses": n.get_misses,
                    "hit_ratio": n.hit_ratio(),
                    "evictions": n.evictions,
                    "curr_connections": n.curr_connections,
                    "cmd_get": n.cmd_get,
                    "cmd_set": n.cmd_set,
                    "item_size_max": n.item_size_max,
                    "ring_share": r.ring_share,
                    "item_share": r.item_share,
                    "items_per_ring": r.items_per_ring(),
                    "skewed": r.skewed,
                    "rates": rates_json(r.rates),
                });
                if let (Some(e), Some(m)) = (&n.settings_error, v.as_object_mut()) {
                    m.insert("settings_error".into(), json!(e));
                }
                v
            }
        })
        .collect();
    let t = &s.totals;
    json!({
        "time": humantime::format_rfc3339_seconds(s.time).to_string(),
        "servers": servers,
        "totals": {
            "servers": t.servers,
            "answered": t.answered,
            "curr_items": t.curr_items,
            "bytes": t.bytes,
            "limit_maxbytes": t.limit_maxbytes,
            "get_hits": t.get_hits,
            "get_misses": t.get_misses,
            "hit_ratio": hit_ratio(t.get_hits, t.get_misses),
            "evictions": t.evictions,
            "curr_connections": t.curr_connections,
            "rates": rates_json(t.rates),
        },
    })
}
