//! `memshard bench`: a memcslap-like load over real servers, and `--route-only` timing.

use crate::routed::Routed;
use hdrhistogram::Histogram;
use memshard::Expiry;
use memshard::{Client, Error, Ring};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// What to run.
pub struct Spec {
    pub threads: usize,
    pub ops: Option<u64>,
    pub seconds: Option<f64>,
    pub keys: u64,
    pub value_size: usize,
    pub get_ratio: f64,
    pub verify: bool,
    /// Part of every key, so that runs (and their checks) never see each other's values.
    pub run_id: String,
    /// With `seconds`: report the operations that start in the last this-many seconds
    /// separately, per home server (the server the full ring gives the key), so that a run
    /// that lived through faults shows it recovered in the same process.
    pub recover_window: Option<f64>,
    /// Print this many of the hottest keys at the end (the client counts them).
    pub hot_keys: usize,
    /// Share of operations on the first 10 keys.
    pub hot_share: f64,
}

/// What a run saw, for the exit status.
pub struct Outcome {
    /// Values read that this run never wrote for that key (or no longer could be there).
    pub wrong: u64,
    /// Errors in the recover window, when one was asked for.
    pub window_errors: Option<u64>,
    /// The first refused or missing login: no load ran against that server, whatever the
    /// other counts say.
    pub auth: Option<String>,
}

/// Operations of one home server within the recover window.
#[derive(Default, Clone)]
struct WindowStats {
    ops: u64,
    gets: u64,
    hits: u64,
    sets: u64,
    checked: u64,
    wrong: u64,
    /// By error kind.
    errors: BTreeMap<String, u64>,
}

impl WindowStats {
    fn add(&mut self, o: &WindowStats) {
        self.ops += o.ops;
        self.gets += o.gets;
        self.hits += o.hits;
        self.sets += o.sets;
        self.checked += o.checked;
        self.wrong += o.wrong;
        for (k, n) in &o.errors {
            *self.errors.entry(k.clone()).or_default() += n;
        }
    }
}

/// What one thread saw.
#[derive(Default)]
struct ThreadReport {
    ops: u64,
    gets: u64,
    hits: u64,
    sets: u64,
    wrong: u64,
    checked: u64,
    errors: BTreeMap<(String, String), u64>,
    /// The first authentication error, as it reads.
    auth: Option<String>,
    latency: Option<Histogram<u64>>,
    /// Per home server (index in the ring's server list), with a recover window.
    window: Vec<WindowStats>,
}

fn error_kind(e: &Error) -> (&'static str, Option<&str>) {
    match e {
        Error::Io { server, .. } => ("Io", Some(server)),
        Error::Timeout { server, .. } => ("Timeout", Some(server)),
        Error::Protocol { server, .. } => ("Protocol", Some(server)),
        Error::Server { server, .. } => ("Server", Some(server)),
        Error::Pool { server, .. } => ("Pool", Some(server)),
        Error::ServerDown { server, .. } => ("ServerDown", Some(server)),
        Error::InvalidKey { .. } => ("InvalidKey", None),
        Error::ValueTooLarge { .. } => ("ValueTooLarge", None),
        Error::Auth { server, .. } => ("Auth", Some(server)),
        _ => ("Other", None),
    }
}

/// A value that names its key, writer and version, padded to `size` bytes.
fn make_value(key: &str, thread: usize, version: u64, size: usize) -> Vec<u8> {
    let mut v = format!("{key}|{thread}|{version}|").into_bytes();
    let pad = size.saturating_sub(v.len());
    v.extend(std::iter::repeat_n(b'.', pad));
    v
}

fn parse_value(v: &[u8]) -> Option<(&str, u64)> {
    let s = std::str::from_utf8(v).ok()?;
    let mut p = s.splitn(4, '|');
    let key = p.next()?;
    let _thread = p.next()?;
    let version = p.next()?.parse().ok()?;
    let rest = p.next()?;
    rest.bytes().all(|b| b == b'.').then_some((key, version))
}

/// Tiny xorshift; the load needs speed and repeatability, not quality.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn worker(
    client: &Client,
    route: Option<&Routed>,
    spec: &Spec,
    t: usize,
    deadline: Option<Instant>,
    quota: u64,
) -> ThreadReport {
    let mut r = ThreadReport {
        latency: Histogram::new_with_bounds(1, 60_000_000, 3).ok(),
        ..ThreadReport::default()
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
    // With --verify each thread writes only its own keys, so it knows every version it sent.
    let threads = spec.threads as u64;
    let own = |i: u64| {
        if spec.verify {
            (i / threads) * threads + t as u64
        } else {
            i
        }
    };
    let mut last_ok: HashMap<u64, u64> = HashMap::new();
    let mut unknown: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut version = 0u64;
    let get_cut = (spec.get_ratio.clamp(0.0, 1.0) * u32::MAX as f64) as u64;
    let hot_cut = (spec.hot_share.clamp(0.0, 1.0) * u32::MAX as f64) as u64;
    let ring = client.ring();
    let window_from = deadline
        .zip(spec.recover_window)
        .map(|(d, w)| d.checked_sub(Duration::from_secs_f64(w)).unwrap_or(d));
    if window_from.is_some() {
        r.window = vec![WindowStats::default(); ring.servers().len()];
    }
    loop {
        if r.ops >= quota || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let hot = (rng.next() & 0xffff_ffff) < hot_cut;
        let mut k = own(rng.next() % if hot { spec.keys.min(10) } else { spec.keys });
        if k >= spec.keys {
            k = t as u64 % spec.keys;
        }
        let key = format!("memshard-bench:{}:{k}", spec.run_id);
        let start = Instant::now();
        // what this operation was, for the recover window
        let (mut hit, mut checked, mut wrong) = (false, false, false);
        let is_get = (rng.next() & 0xffff_ffff) < get_cut;
        let res: Result<(), Error> = if is_get {
            r.gets += 1;
            match route {
                Some(r) => r.router.get(&key),
                None => client.get(&key),
            }
            .map(|item| {
                let Some(item) = item else { return };
                r.hits += 1;
                hit = true;
                if spec.verify {
                    r.checked += 1;
                    checked = true;
                    let ok = parse_value(&item.value).is_some_and(|(vk, ver)| {
                        vk == key
                            && (last_ok.get(&k) == Some(&ver)
                                || unknown.get(&k).is_some_and(|u| u.contains(&ver)))
                    });
                    if !ok {
                        r.wrong += 1;
                        wrong = true;
                        eprintln!(
                            "wrong value for {key}: {:?}",
                            String::from_utf8_lossy(&item.value[..item.value.len().min(80)])
                        );
                    }
                }
            })
        } else {
            r.sets += 1;
            version += 1;
            let v = make_value(&key, t, version, spec.value_size);
            let set = match route {
                Some(r) => r.router.set(&key, &v, Expiry::NEVER),
                None => client.set(&key, &v, Expiry::NEVER),
            };
            match set {
                Ok(_) => {
                    last_ok.insert(k, version);
                    Ok(())
                }
                Err(e) => {
                    // it may or may not have been applied
                    unknown.entry(k).or_default().push(version);
                    Err(e)
                }
            }
        };
        let micros = start.elapsed().as_micros() as u64;
        if let Some(h) = r.latency.as_mut() {
            let _ = h.record(micros.max(1));
        }
        if let Some(w) = window_from
            .filter(|&from| start >= from)
            .and_then(|_| ring.route(key.as_bytes()))
            .and_then(|i| r.window.get_mut(i))
        {
            w.ops += 1;
            if is_get {
                w.gets += 1;
            } else {
                w.sets += 1;
            }
            w.hits += u64::from(hit);
            w.checked += u64::from(checked);
            w.wrong += u64::from(wrong);
            if let Err(e) = &res {
                *w.errors.entry(error_kind(e).0.to_string()).or_default() += 1;
            }
        }
        if let Err(e) = res {
            if r.auth.is_none() && matches!(e, Error::Auth { .. }) {
                r.auth = Some(e.to_string());
            }
            let (kind, server) = error_kind(&e);
            *r.errors
                .entry((server.unwrap_or("-").to_string(), kind.to_string()))
                .or_default() += 1;
        }
        r.ops += 1;
    }
    r
}

/// Run the load and print the report: through `route` when given (`client` is then its
/// new pool's, for the ring and the hot keys), else through `client`.
pub fn run(client: &Client, route: Option<&Routed>, spec: &Spec) -> Outcome {
    let threads = spec.threads.max(1);
    let ops = spec.ops.unwrap_or(if spec.seconds.is_some() {
        u64::MAX
    } else {
        100_000
    });
    let deadline = spec
        .seconds
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    if let Some(r) = route {
        println!("memshard bench: through route {}", r.name);
    }
    println!(
        "memshard bench: {} servers, {threads} threads, {}, {} keys, {}-byte values, get ratio {}{}",
        client.ring().servers().len(),
        match (spec.ops, spec.seconds) {
            (_, Some(s)) => format!("{s} s"),
            _ => format!("{ops} ops"),
        },
        spec.keys,
        spec.value_size,
        spec.get_ratio,
        if spec.verify {
            ", verifying values"
        } else {
            ""
        }
    );
    let started = Instant::now();
    let reports: Vec<ThreadReport> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let quota = ops / threads as u64 + u64::from((t as u64) < ops % threads as u64);
                s.spawn(move || worker(client, route, spec, t, deadline, quota))
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut total = ThreadReport {
        latency: Histogram::new_with_bounds(1, 60_000_000, 3).ok(),
        ..ThreadReport::default()
    };
    let mut window = vec![WindowStats::default(); client.ring().servers().len()];
    for r in reports {
        for (w, rw) in window.iter_mut().zip(&r.window) {
            w.add(rw);
        }
        total.ops += r.ops;
        total.gets += r.gets;
        total.hits += r.hits;
        total.sets += r.sets;
        total.wrong += r.wrong;
        total.checked += r.checked;
        for (k, n) in r.errors {
            *total.errors.entry(k).or_default() += n;
        }
        total.auth = total.auth.or(r.auth);
        if let (Some(t), Some(h)) = (total.latency.as_mut(), r.latency.as_ref()) {
            let _ = t.add(h);
        }
    }
    println!(
        "ops: {} in {elapsed:.2} s = {:.0} ops/s ({} gets, {} hits, {} sets)",
        total.ops,
        total.ops as f64 / elapsed,
        total.gets,
        total.hits,
        total.sets
    );
    if let Some(h) = &total.latency {
        println!(
            "latency: p50 {} us, p99 {} us, p99.9 {} us, max {} us",
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max()
        );
    }
    let errors: u64 = total.errors.values().sum();
    println!("errors: {errors}");
    for ((server, kind), n) in &total.errors {
        println!("  {server} {kind}: {n}");
    }
    if spec.verify {
        println!("values checked: {}", total.checked);
        println!("wrong values: {}", total.wrong);
    }
    if let Some(r) = route {
        println!("{}", crate::routed::counters_line(r));
    }
    report_hot_keys(client, spec.hot_keys, total.gets);
    let window_errors = spec
        .recover_window
        .filter(|_| spec.seconds.is_some())
        .map(|secs| report_window(client, secs, &window));
    Outcome {
        wrong: total.wrong,
        window_errors,
        auth: total.auth,
    }
}

/// The `n` hottest keys read, with their share of the `gets`.
fn report_hot_keys(client: &Client, n: usize, gets: u64) {
    let hot = client.hot_keys();
    if n == 0 || hot.is_empty() {
        return;
    }
    println!("hot keys: the {} most read", hot.len());
    // Space-Saving's counts are upper bounds; with no skew they are mostly error
    if hot.iter().all(|h| h.guaranteed() * 2 < h.count) {
        println!("  (no key stands out: the reads are spread evenly)");
    }
    for h in hot {
        println!(
            "  {} {} reads, at least {} ({:.2}% of gets)",
            String::from_utf8_lossy(&h.key),
            h.count,
            h.guaranteed(),
            100.0 * h.count as f64 / gets.max(1) as f64
        );
    }
}

/// Print the recover window, one line per server (by the full ring); returns its errors.
fn report_window(client: &Client, secs: f64, window: &[WindowStats]) -> u64 {
    println!("recover window: operations started in the last {secs} s, by home server");
    let ring = client.ring();
    let (mut errors, mut wrong) = (0, 0);
    for (server, w) in ring.servers().iter().zip(window) {
        let n: u64 = w.errors.values().sum();
        let kinds: String = w.errors.iter().map(|(k, n)| format!(" {k}={n}")).collect();
        println!(
            "  window {}: ops={} gets={} hits={} sets={} checked={} wrong={} errors={n}{kinds}",
            server.addr, w.ops, w.gets, w.hits, w.sets, w.checked, w.wrong,
        );
        errors += n;
        wrong += w.wrong;
    }
    println!("recover window errors: {errors}");
    println!("recover window wrong values: {wrong}");
    errors
}

/// `--route-only`: ns per route for keys `user:<i>`, no network.
pub fn route_only(ring: &Ring, keys: u64) {
    let keys: Vec<String> = (0..keys.max(1)).map(|i| format!("user:{i}")).collect();
    // warm up, then time whole passes over the keys
    let mut sink = 0usize;
    for k in &keys {
        sink = sink.wrapping_add(ring.route(k.as_bytes()).unwrap_or(0));
    }
    let mut routes = 0u64;
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(500) {
        for k in &keys {
            sink = sink.wrapping_add(ring.route(std::hint::black_box(k.as_bytes())).unwrap_or(0));
        }
        routes += keys.len() as u64;
    }
    let ns = start.elapsed().as_nanos() as f64 / routes as f64;
    std::hint::black_box(sink);
    println!(
        "route: {ns:.1} ns per key ({routes} routes, {} keys, {} servers, flavor {})",
        keys.len(),
        ring.servers().len(),
        ring.flavor()
    );
}
