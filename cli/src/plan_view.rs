//! `memshard plan` for people and for tools: one view of a plan (the cluster as it is, or a
//! change), with servers named by address everywhere, drawn as aligned text, JSON, CSV tables
//! and a self-contained HTML report with inline SVG charts.

use memshard::plan::{Method, MethodPlan, Plan};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// What the key sample is: synthetic keys, a list of distinct keys, or an access log (lines
/// repeat: each line is one request, so shares are of requests).
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Lines planned (requests when they repeat).
    pub lines: u64,
    /// Distinct keys among them.
    pub distinct: u64,
}

impl Sample {
    /// Whether the sample repeats keys (an access log: shares are request-weighted).
    pub fn weighted(&self) -> bool {
        self.lines > self.distinct
    }

    /// "N keys", or "N requests over M distinct keys" for an access log.
    pub fn describe(&self) -> String {
        if self.weighted() {
            format!(
                "{} requests over {} distinct keys (request-weighted: a key counts once per line)",
                self.lines, self.distinct
            )
        } else {
            format!("{} keys", self.lines)
        }
    }
}

/// One server: its weights and shares before and after (the same when describing).
#[derive(Clone, Debug)]
pub struct ServerView {
    pub addr: String,
    pub weight_before: Option<u32>,
    pub weight_after: Option<u32>,
    pub weight_share_before: f64,
    pub weight_share_after: f64,
    pub keys_before: u64,
    pub keys_after: u64,
    pub key_share_before: f64,
    pub key_share_after: f64,
}

impl ServerView {
    /// Key share over weight share (1.0: exactly its share; `None` when not in the list).
    fn ratio(key_share: f64, weight_share: f64) -> Option<f64> {
        (weight_share > 0.0).then(|| key_share / weight_share)
    }

    pub fn ratio_before(&self) -> Option<f64> {
        Self::ratio(self.key_share_before, self.weight_share_before)
    }

    pub fn ratio_after(&self) -> Option<f64> {
        Self::ratio(self.key_share_after, self.weight_share_after)
    }
}

/// A server and its load relative to its share.
#[derive(Clone, Debug, PartialEq)]
pub struct Extreme {
    pub server: String,
    pub ratio: f64,
}

/// One method's figures, servers by name.
#[derive(Clone, Debug)]
pub struct MethodView {
    pub name: String,
    pub moved: u64,
    pub moved_share: f64,
    pub non_monotone: u64,
    /// Heaviest and lightest before and after, relative to the weight share (modulo and jump
    /// ignore weights: relative to an equal share).
    pub heaviest_before: Option<Extreme>,
    pub lightest_before: Option<Extreme>,
    pub heaviest_after: Option<Extreme>,
    pub lightest_after: Option<Extreme>,
    /// Moves `(from, to, keys)`, largest first.
    pub moves: Vec<(String, String, u64)>,
}

/// A plan as a person or a tool reads it.
#[derive(Clone, Debug)]
pub struct View {
    /// Describing the cluster as it is (no change given).
    pub describe: bool,
    pub sample: Sample,
    pub flavor: String,
    /// The flavor's own method's name (`ketama`, or the flavor's for modulo and rendezvous
    /// flavors).
    pub own: String,
    pub servers: Vec<ServerView>,
    /// The flavor's own method first.
    pub methods: Vec<MethodView>,
}

fn shares(weights: impl Iterator<Item = Option<u32>>) -> Vec<f64> {
    let w: Vec<f64> = weights.map(|w| w.map_or(0.0, f64::from)).collect();
    let total: f64 = w.iter().sum();
    w.iter()
        .map(|x| if total > 0.0 { x / total } else { 0.0 })
        .collect()
}

/// The heaviest and lightest of `counts` against `share` (servers with a share only).
fn extremes(
    names: &[String],
    counts: &[u64],
    share: &[f64],
    total: u64,
) -> (Option<Extreme>, Option<Extreme>) {
    let mut heavy: Option<Extreme> = None;
    let mut light: Option<Extreme> = None;
    for i in 0..names.len() {
        if share[i] <= 0.0 || total == 0 {
            continue;
        }
        let ratio = counts[i] as f64 / total as f64 / share[i];
        let e = Extreme {
            server: names[i].clone(),
            ratio,
        };
        if heavy.as_ref().is_none_or(|h| ratio > h.ratio) {
            heavy = Some(e.clone());
        }
        if light.as_ref().is_none_or(|l| ratio < l.ratio) {
            light = Some(e);
        }
    }
    (heavy, light)
}

impl View {
    /// The view of `p` over `sample`; `describe` when `p` plans no change.
    pub fn new(p: &Plan, sample: Sample, describe: bool) -> View {
        let ketama = p
            .flavor
            .parse::<memshard::Flavor>()
            .map_or(true, |f| f.is_ketama());
        let own = if ketama { "ketama" } else { p.flavor.as_str() }.to_string();
        let wb = shares(p.servers.iter().map(|s| s.weight_before));
        let wa = shares(p.servers.iter().map(|s| s.weight_after));
        let names: Vec<String> = p.servers.iter().map(|s| s.addr.clone()).collect();
        let total = p.keys;
        let share_of = |n: u64| n as f64 / total.max(1) as f64;
        let k = p.methods.iter().find(|m| m.method == Method::Ketama);
        let servers = p
            .servers
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (kb, ka) = k.map_or((0, 0), |k| (k.keys_before[i], k.keys_after[i]));
                ServerView {
                    addr: s.addr.clone(),
                    weight_before: s.weight_before,
                    weight_after: s.weight_after,
                    weight_share_before: wb[i],
                    weight_share_after: wa[i],
                    keys_before: kb,
                    keys_after: ka,
                    key_share_before: share_of(kb),
                    key_share_after: share_of(ka),
                }
            })
            .collect();
        let equal = |w: &[f64]| -> Vec<f64> {
            let n = w.iter().filter(|x| **x > 0.0).count().max(1) as f64;
            w.iter()
                .map(|x| if *x > 0.0 { 1.0 / n } else { 0.0 })
                .collect()
        };
        let method = |m: &MethodPlan| {
            let weighted = !matches!(m.method, Method::Modulo | Method::Jump);
            let (sb, sa) = if weighted {
                (wb.clone(), wa.clone())
            } else {
                (equal(&wb), equal(&wa))
            };
            let (heaviest_before, lightest_before) = extremes(&names, &m.keys_before, &sb, total);
            let (heaviest_after, lightest_after) = extremes(&names, &m.keys_after, &sa, total);
            MethodView {
                name: if m.method == Method::Ketama {
                    own.clone()
                } else {
                    m.method.name().to_string()
                },
                moved: m.moved,
                moved_share: m.moved_share,
                non_monotone: m.non_monotone,
                heaviest_before,
                lightest_before,
                heaviest_after,
                lightest_after,
                moves: m
                    .moves
                    .iter()
                    .map(|&(f, t, n)| (names[f].clone(), names[t].clone(), n))
                    .collect(),
            }
        };
        let mut methods: Vec<MethodView> = Vec::new();
        methods.extend(
            p.methods
                .iter()
                .filter(|m| m.method == Method::Ketama)
                .map(method),
        );
        methods.extend(
            p.methods
                .iter()
                .filter(|m| m.method != Method::Ketama)
                .map(method),
        );
        View {
            describe,
            sample,
            flavor: p.flavor.clone(),
            own,
            servers,
            methods,
        }
    }

    /// The flavor's own method.
    pub fn own_method(&self) -> Option<&MethodView> {
        self.methods.first()
    }
}

fn pct(x: f64) -> String {
    let s = format!("{:.3}", x * 100.0);
    // 6.25% and 50%, not 6.250% and 50.000%: exact shares read as they are
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

fn ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.3}"))
}

fn extreme(e: &Option<Extreme>) -> String {
    e.as_ref()
        .map_or("-".into(), |e| format!("{} ({:.3})", e.server, e.ratio))
}

/// Rows of cells as aligned columns, column `i` left-aligned where `align`'s `i`th byte is
/// `l` (names) and right-aligned otherwise (numbers), each as wide as its widest cell (long
/// server names included).
fn table(header: &[&str], rows: &[Vec<String>], align: &str) -> String {
    let n = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let mut o = String::new();
    let line = |o: &mut String, cells: Vec<&str>| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = width[i].saturating_sub(c.chars().count());
            if align.as_bytes().get(i) == Some(&b'l') {
                l += &format!("  {c}{}", " ".repeat(pad));
            } else {
                l += &format!("  {}{c}", " ".repeat(pad));
            }
        }
        let _ = writeln!(o, "{}", l.trim_end());
    };
    line(&mut o, header.to_vec());
    for r in rows {
        line(&mut o, r.iter().map(String::as_str).collect());
    }
    o
}

/// The view as text.
pub fn text(v: &View) -> String {
    let mut o = String::new();
    let present =
        |f: fn(&ServerView) -> Option<u32>| v.servers.iter().filter(|s| f(s).is_some()).count();
    let (before, after) = (present(|s| s.weight_before), present(|s| s.weight_after));
    if v.describe {
        let _ = writeln!(
            o,
            "memshard plan: the cluster as it is: {} servers, flavor {}, {}",
            before,
            v.flavor,
            v.sample.describe()
        );
    } else {
        let _ = writeln!(
            o,
            "memshard plan: {before} servers -> {after} servers, flavor {}, {}",
            v.flavor,
            v.sample.describe()
        );
    }
    if let Some(m) = v.own_method() {
        let when = if v.describe { "" } else { " after the change" };
        let (h, l) = if v.describe {
            (&m.heaviest_before, &m.lightest_before)
        } else {
            (&m.heaviest_after, &m.lightest_after)
        };
        if let (Some(h), Some(l)) = (h, l) {
            let _ = writeln!(
                o,
                "heaviest{when}: {} at {:.3}x its weight share; lightest: {} at {:.3}x",
                h.server, h.ratio, l.server, l.ratio
            );
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "{} per server:", v.own);
    let rows: Vec<Vec<String>> = v
        .servers
        .iter()
        .map(|s| {
            let w = |x: Option<u32>, share: f64| {
                x.map_or("-".into(), |w| format!("{w} ({})", pct(share)))
            };
            if v.describe {
                vec![
                    s.addr.clone(),
                    w(s.weight_before, s.weight_share_before),
                    s.keys_before.to_string(),
                    pct(s.key_share_before),
                    ratio(s.ratio_before()),
                ]
            } else {
                vec![
                    s.addr.clone(),
                    w(s.weight_before, s.weight_share_before),
                    w(s.weight_after, s.weight_share_after),
                    pct(s.key_share_before),
                    pct(s.key_share_after),
                    ratio(s.ratio_after()),
                ]
            }
        })
        .collect();
    let keys = if v.sample.weighted() {
        "requests"
    } else {
        "keys"
    };
    if v.describe {
        let share = if v.sample.weighted() {
            "request share"
        } else {
            "key share"
        };
        o += &table(
            &["server", "weight (share)", keys, share, "ratio"],
            &rows,
            "l",
        );
    } else {
        o += &table(
            &[
                "server",
                "weight before",
                "weight after",
                "share before",
                "share after",
                "ratio after",
            ],
            &rows,
            "l",
        );
    }
    let _ = writeln!(
        o,
        "(ratio: key share / weight share; 1.000 is exactly its share)"
    );
    if v.describe {
        return o;
    }
    let _ = writeln!(o);
    let rows: Vec<Vec<String>> = v
        .methods
        .iter()
        .map(|m| {
            vec![
                m.name.clone(),
                pct(m.moved_share),
                m.moved.to_string(),
                m.non_monotone.to_string(),
                extreme(&m.heaviest_after),
                extreme(&m.lightest_after),
            ]
        })
        .collect();
    o += &table(
        &[
            "method",
            "moved",
            keys,
            "non-monotone",
            "heaviest after",
            "lightest after",
        ],
        &rows,
        "lrrrll",
    );
    let _ = writeln!(
        o,
        "(heaviest/lightest: load relative to the weight share; modulo and jump ignore weights: relative to an equal share)"
    );
    if let Some(m) = v.own_method() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{} moves (from -> to: {keys}), {} moved:",
            v.own, m.moved
        );
        let unchanged = |a: &str| {
            v.servers
                .iter()
                .find(|s| s.addr == a)
                .is_some_and(|s| s.weight_before.is_some() && s.weight_before == s.weight_after)
        };
        let rows: Vec<Vec<String>> = m
            .moves
            .iter()
            .map(|(f, t, n)| {
                let flag = if unchanged(f) && unchanged(t) {
                    "NON-MONOTONE"
                } else {
                    ""
                };
                vec![
                    f.clone(),
                    "->".into(),
                    t.clone(),
                    n.to_string(),
                    flag.into(),
                ]
            })
            .collect();
        o += &table(&["from", "", "to", keys, ""], &rows, "lll");
    }
    o
}

/// The view as JSON: servers by address everywhere.
pub fn json(v: &View) -> Value {
    let ex = |e: &Option<Extreme>| {
        e.as_ref().map_or(
            Value::Null,
            |e| json!({"server": e.server, "ratio": e.ratio}),
        )
    };
    let servers: Vec<Value> = v
        .servers
        .iter()
        .map(|s| {
            json!({
                "address": s.addr,
                "weight_before": s.weight_before.unwrap_or(0),
                "weight_after": s.weight_after.unwrap_or(0),
                "in_before": s.weight_before.is_some(),
                "in_after": s.weight_after.is_some(),
                "weight_share_before": s.weight_share_before,
                "weight_share_after": s.weight_share_after,
                "keys_before": s.keys_before,
                "keys_after": s.keys_after,
                "key_share_before": s.key_share_before,
                "key_share_after": s.key_share_after,
                "ratio_before": s.ratio_before(),
                "ratio_after": s.ratio_after(),
            })
        })
        .collect();
    let methods: Vec<Value> = v
        .methods
        .iter()
        .map(|m| {
            json!({
                "method": m.name,
                "moved": m.moved,
                "moved_share": m.moved_share,
                "non_monotone": m.non_monotone,
                "heaviest_before": ex(&m.heaviest_before),
                "lightest_before": ex(&m.lightest_before),
                "heaviest_after": ex(&m.heaviest_after),
                "lightest_after": ex(&m.lightest_after),
                "moves": m.moves.iter().map(|(f, t, n)| json!({"from": f, "to": t, "keys": n})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "describe": v.describe,
        "flavor": v.flavor,
        "lines": v.sample.lines,
        "distinct_keys": v.sample.distinct,
        "request_weighted": v.sample.weighted(),
        "servers": servers,
        "methods": methods,
    })
}

/// The CSV tables `plan --csv` writes.
pub const CSV_TABLES: [&str; 2] = ["servers", "moves"];

/// The table `which` (one of [`CSV_TABLES`]) as CSV.
pub fn csv(v: &View, which: &str) -> Result<String, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let put = |w: &mut csv::Writer<Vec<u8>>, row: Vec<String>| {
        w.write_record(&row).map_err(|e| e.to_string())
    };
    match which {
        "servers" => {
            put(
                &mut w,
                [
                    "address",
                    "weight_before",
                    "weight_after",
                    "weight_share_before",
                    "weight_share_after",
                    "keys_before",
                    "keys_after",
                    "key_share_before",
                    "key_share_after",
                    "ratio_before",
                    "ratio_after",
                ]
                .map(String::from)
                .to_vec(),
            )?;
            for s in &v.servers {
                let opt = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
                put(
                    &mut w,
                    vec![
                        s.addr.clone(),
                        s.weight_before.map_or(String::new(), |w| w.to_string()),
                        s.weight_after.map_or(String::new(), |w| w.to_string()),
                        s.weight_share_before.to_string(),
                        s.weight_share_after.to_string(),
                        s.keys_before.to_string(),
                        s.keys_after.to_string(),
                        s.key_share_before.to_string(),
                        s.key_share_after.to_string(),
                        opt(s.ratio_before()),
                        opt(s.ratio_after()),
                    ],
                )?;
            }
        }
        "moves" => {
            put(
                &mut w,
                ["method", "from", "to", "keys"].map(String::from).to_vec(),
            )?;
            for m in &v.methods {
                for (f, t, n) in &m.moves {
                    put(
                        &mut w,
                        vec![m.name.clone(), f.clone(), t.clone(), n.to_string()],
                    )?;
                }
            }
        }
        other => {
            return Err(format!(
                "no CSV table {other:?}: give {}",
                CSV_TABLES.join(" or ")
            ));
        }
    }
    let bytes = w.into_inner().map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}
