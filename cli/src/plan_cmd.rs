//! `memshard plan`: output of the planner as text, JSON or SVG.

use memshard::plan::{FlavorDiff, Keys, Method, Plan, TagAudit};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Run `f` while a progress line is drawn on a terminal's standard error (long runs only).
pub fn with_progress<T>(total: u64, f: impl FnOnce(&AtomicU64) -> T) -> T {
    let done = AtomicU64::new(0);
    let finished = AtomicBool::new(false);
    let show = std::io::stderr().is_terminal() && total >= 200_000;
    std::thread::scope(|s| {
        if show {
            s.spawn(|| {
                while !finished.load(Ordering::Relaxed) {
                    let d = done.load(Ordering::Relaxed).min(total);
                    let pct = d as f64 * 100.0 / total as f64;
                    let bar = "#".repeat((pct / 5.0) as usize);
                    eprint!("\rplanning [{bar:<20}] {pct:5.1}% of {total} keys");
                    std::thread::sleep(Duration::from_millis(100));
                }
                eprint!("\r{:60}\r", "");
            });
        }
        let r = f(&done);
        finished.store(true, Ordering::Relaxed);
        r
    })
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// The flavor comparison as text.
pub fn diff_text(d: &FlavorDiff) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} vs {}: {} of {} keys ({}) are placed on different servers",
        d.flavors.0,
        d.flavors.1,
        d.differ,
        d.keys,
        pct(d.differ as f64 / d.keys.max(1) as f64)
    );
    let _ = writeln!(o, "why:");
    for r in &d.reasons {
        let _ = writeln!(o, "  - {r}");
    }
    let _ = writeln!(
        o,
        "per server: points in {} / {}, first point name",
        d.flavors.0, d.flavors.1
    );
    for (addr, a, b, na, nb) in &d.servers {
        let mark = if a != b || na != nb { " *" } else { "" };
        let _ = writeln!(o, "  {addr:<28} {a:>6} / {b:<6} {na:?} / {nb:?}{mark}");
    }
    if !d.pairs.is_empty() {
        let _ = writeln!(
            o,
            "disagreements ({} -> {}: keys):",
            d.flavors.0, d.flavors.1
        );
        for (x, y, n) in d.pairs.iter().take(10) {
            let _ = writeln!(o, "  {} -> {}: {n}", d.servers[*x].0, d.servers[*y].0);
        }
    }
    o
}

/// SVG: per-server ketama load before and after, and the moved share per method.
pub fn svg(p: &Plan) -> String {
    let k = p.methods.iter().find(|m| m.method == Method::Ketama);
    let n = p.servers.len();
    let row = 22.0;
    let bars_h = n as f64 * row + 40.0;
    let methods_h = p.methods.len() as f64 * row + 40.0;
    let (w, label_w, bar_w) = (760.0, 220.0, 240.0);
    let h = 40.0 + bars_h + methods_h;
    let (wb, wa): (u64, u64) = p.servers.iter().fold((0, 0), |(b, a), s| {
        (
            b + u64::from(s.weight_before.unwrap_or(0)),
            a + u64::from(s.weight_after.unwrap_or(0)),
        )
    });
    let weight_max = p
        .servers
        .iter()
        .flat_map(|s| {
            [
                s.weight_before.map(|w| f64::from(w) / wb.max(1) as f64),
                s.weight_after.map(|w| f64::from(w) / wa.max(1) as f64),
            ]
        })
        .flatten()
        .fold(0.0, f64::max);
    let max_share = k
        .map(|k| {
            k.keys_before
                .iter()
                .chain(&k.keys_after)
                .copied()
                .max()
                .unwrap_or(1) as f64
                / p.keys.max(1) as f64
        })
        .unwrap_or(1.0)
        .max(weight_max)
        .max(1e-9);
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="10" y="22" font-size="15" font-weight="bold">memshard plan: {} keys, flavor {}</text>"#,
        p.keys,
        esc(&p.flavor)
    );
    let y0 = 50.0;
    let _ = writeln!(
        o,
        r##"<text x="10" y="{y0}" font-weight="bold">Keys per server (ketama): <tspan fill="#4477aa">before</tspan> / <tspan fill="#ee6677">after</tspan>; black mark: weight share</text>"##
    );
    if let Some(k) = k {
        for (i, s) in p.servers.iter().enumerate() {
            let y = y0 + 12.0 + i as f64 * row;
            let b = k.keys_before[i] as f64 / p.keys.max(1) as f64;
            let a = k.keys_after[i] as f64 / p.keys.max(1) as f64;
            let _ = writeln!(
                o,
                r#"<text x="10" y="{}">{}</text>"#,
                y + 14.0,
                esc(&s.addr)
            );
            let _ = writeln!(
                o,
                r##"<rect x="{label_w}" y="{}" width="{:.1}" height="8" fill="#4477aa"/>"##,
                y + 2.0,
                bar_w * b / max_share
            );
            let _ = writeln!(
                o,
                r##"<rect x="{label_w}" y="{}" width="{:.1}" height="8" fill="#ee6677"/>"##,
                y + 10.0,
                bar_w * a / max_share
            );
            // each list's weight share: a bar past its mark is a server above its share
            for (weight, total, dy) in [(s.weight_before, wb, 0.0), (s.weight_after, wa, 8.0)] {
                if let Some(w) = weight {
                    let x = label_w + bar_w * (f64::from(w) / total.max(1) as f64) / max_share;
                    let _ = writeln!(
                        o,
                        r#"<line class="weight-share" x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{}" stroke="black" stroke-width="2"/>"#,
                        y + 1.0 + dy,
                        y + 9.0 + dy
                    );
                }
            }
            let _ = writeln!(
                o,
                r#"<text x="{}" y="{}">{:.1}% → {:.1}%</text>"#,
                label_w + bar_w + 10.0,
                y + 14.0,
                b * 100.0,
                a * 100.0
            );
        }
    }
    let y1 = y0 + bars_h;
    let _ = writeln!(
        o,
        r#"<text x="10" y="{y1}" font-weight="bold">Share of keys that move</text>"#
    );
    for (i, m) in p.methods.iter().enumerate() {
        let y = y1 + 12.0 + i as f64 * row;
        let _ = writeln!(
            o,
            r#"<text x="10" y="{}">{}</text>"#,
            y + 14.0,
            m.method.name()
        );
        let _ = writeln!(
            o,
            r##"<rect x="{label_w}" y="{}" width="{:.1}" height="14" fill="#228833"/>"##,
            y + 3.0,
            bar_w * m.moved_share
        );
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}">{}</text>"#,
            label_w + bar_w + 10.0,
            y + 14.0,
            pct(m.moved_share)
        );
    }
    let _ = writeln!(o, "</svg>");
    o
}

/// Keys from `--key-file` (one per line) or `--keys N` synthetic ones.
pub fn load_keys(key_file: Option<&std::path::Path>, n: u64) -> std::io::Result<Keys> {
    match key_file {
        None => Ok(Keys::Synthetic(n)),
        Some(p) => {
            let data = std::fs::read(p)?;
            let keys = data
                .split(|&b| b == b'\n')
                .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            Ok(Keys::List(keys))
        }
    }
}

/// The keys that carry an access log's requests, as text.
pub fn top_text(top: &[(String, u64, String)], lines: u64) -> String {
    let mut o = String::new();
    let _ = writeln!(o);
    let _ = writeln!(o, "keys that carry the requests (requests, share, server):");
    let width = top
        .iter()
        .map(|(k, _, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    for (k, n, server) in top {
        let share = pct(*n as f64 / lines.max(1) as f64);
        let _ = writeln!(o, "  {k:<width$}  {n:>9}  {share:>7}  {server}");
    }
    o
}

/// The tag audit as text.
pub fn audit_text(a: &TagAudit, tag: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "tag audit ({tag}): {} keys, {} with a tag, {} distinct tags",
        a.keys,
        a.tagged,
        a.tags.len()
    );
    let _ = writeln!(o, "largest tags:");
    for t in a.tags.iter().take(20) {
        let _ = writeln!(
            o,
            "  {:<30} {:>9} keys {:>7}  -> {}",
            format!("{:?}", t.tag),
            t.keys,
            pct(t.share),
            t.server
        );
    }
    let _ = writeln!(o, "per server: keys, key share, weight share");
    for (addr, n, ks, ws) in &a.servers {
        let _ = writeln!(o, "  {addr:<28} {n:>9} {:>7} {:>7}", pct(*ks), pct(*ws));
    }
    if a.warnings.is_empty() {
        let _ = writeln!(o, "no warnings");
    }
    for w in &a.warnings {
        let _ = writeln!(o, "WARNING: {w}");
    }
    o
}

/// `plan --migrate` as text.
pub fn migrate_text(p: &memshard::plan::MigrationPlan, old: &str, new: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "memshard plan --migrate: {} keys, old ring ({old}, {} servers) -> new ring ({new}, {} servers)",
        p.keys,
        p.fallback_reads_by_server.len(),
        p.backfills_by_server.len()
    );
    let _ = writeln!(
        o,
        "  copy kept (same server, same key as sent): {:>10} ({})",
        p.same_copy,
        pct(1.0 - p.moved_share)
    );
    let _ = writeln!(
        o,
        "  copy moved:                                {:>10} ({}){}",
        p.moved,
        pct(p.moved_share),
        if p.moved_by_prefix > 0 {
            format!(", {} of them by the prefix alone", p.moved_by_prefix)
        } else {
            String::new()
        }
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "cold switch:     {:>10} misses ({}) on the first read after the switch, each a database read",
        p.cold_misses,
        pct(p.cold_miss_share)
    );
    let _ = writeln!(
        o,
        "warm-up route:   {:>10} misses from the switch (only keys absent from both rings miss)",
        p.warm_misses
    );
    let _ = writeln!(
        o,
        "                 extra load in the first pass: {} fallback reads on the old ring, {} backfills (add) into the new ring",
        p.fallback_reads, p.backfills
    );
    let _ = writeln!(o);
    let rows = |o: &mut String, title: &str, list: &[memshard::plan::ServerLoad]| {
        let _ = writeln!(o, "{title}:");
        for s in list {
            let _ = writeln!(o, "  {:<28} {:>10} ({})", s.addr, s.keys, pct(s.share));
        }
    };
    rows(
        &mut o,
        "fallback reads by old server",
        &p.fallback_reads_by_server,
    );
    rows(&mut o, "backfills by new server", &p.backfills_by_server);
    o
}
