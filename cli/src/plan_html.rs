//! `memshard plan --html`: one self-contained page (no network, no scripts, no external fonts)
//! with the plan's charts drawn as inline SVG: key share against weight share per server, the
//! move matrix as a heat map, what each method moves, the tag audit and the keys that carry
//! the requests of an access log. The numbers are also in tables, each cell with its exact
//! value in `data-value`, so that a reader (or a test) can check the picture against `--json`.

use crate::plan_view::{ServerView, View};
use memshard::plan::TagAudit;
use std::fmt::Write as _;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// The width a label of the longest of `names` needs at 12px sans-serif (about 7px a
/// character), so that long server names are drawn whole.
fn label_width<'a>(names: impl Iterator<Item = &'a str>) -> f64 {
    let longest = names.map(|n| n.chars().count()).max().unwrap_or(0);
    (longest as f64 * 7.0 + 16.0).max(120.0)
}

/// The share a server's bars show: after the change, or as it is.
fn shares(v: &View, s: &ServerView) -> (f64, f64, Option<f64>) {
    if v.describe {
        (s.key_share_before, s.weight_share_before, s.ratio_before())
    } else {
        (s.key_share_after, s.weight_share_after, s.ratio_after())
    }
}

/// Bars of key share per server, each with its weight share marked; a server above 1.1× its
/// share is drawn in red.
fn share_chart(v: &View) -> String {
    let label_w = label_width(v.servers.iter().map(|s| s.addr.as_str()));
    let (bar_w, row) = (420.0, 24.0);
    let max = v
        .servers
        .iter()
        .map(|s| {
            let (k, w, _) = shares(v, s);
            k.max(w)
        })
        .fold(1e-9, f64::max);
    let h = 40.0 + row * v.servers.len() as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg id="share-chart" xmlns="http://www.w3.org/2000/svg" width="{}" height="{h}" role="img" aria-label="key share against weight share per server">"#,
        label_w + bar_w + 160.0
    );
    let _ = writeln!(
        o,
        r##"<text x="{label_w}" y="16">key share (bar) and weight share (black mark)</text>"##
    );
    for (i, s) in v.servers.iter().enumerate() {
        let (k, w, r) = shares(v, s);
        let y = 28.0 + i as f64 * row;
        let over = r.is_some_and(|r| r > 1.1);
        let fill = if over { "#cc3311" } else { "#4477aa" };
        let _ = writeln!(
            o,
            r#"<text x="4" y="{}" font-size="12">{}</text>"#,
            y + 14.0,
            esc(&s.addr)
        );
        let _ = writeln!(
            o,
            r##"<rect class="key-share" data-server="{}" data-value="{k}" x="{label_w}" y="{}" width="{:.2}" height="16" fill="{fill}"><title>{}: {} of the keys, {} of the weight</title></rect>"##,
            esc(&s.addr),
            y + 2.0,
            bar_w * k / max,
            esc(&s.addr),
            pct(k),
            pct(w)
        );
        let x = label_w + bar_w * w / max;
        let _ = writeln!(
            o,
            r#"<line class="weight-share" data-server="{}" data-value="{w}" x1="{x:.2}" x2="{x:.2}" y1="{}" y2="{}" stroke="black" stroke-width="2"/>"#,
            esc(&s.addr),
            y,
            y + 20.0
        );
        let note = r.map_or(String::new(), |r| format!("{:.2}×", r));
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" font-size="12">{} {note}</text>"#,
            label_w + bar_w + 8.0,
            y + 14.0,
            pct(k)
        );
    }
    o += "</svg>\n";
    o
}

/// The own method's moves as a from (rows) × to (columns) heat map.
fn move_matrix(v: &View) -> String {
    let Some(m) = v.own_method() else {
        return String::new();
    };
    if m.moves.is_empty() {
        return "<p>No key moves.</p>\n".into();
    }
    let names: Vec<&str> = v.servers.iter().map(|s| s.addr.as_str()).collect();
    let n = names.len();
    // the column labels are rotated 60 degrees: they need their length's sine above the
    // grid and its cosine to the right of it
    let label = label_width(names.iter().copied());
    let cell = 34.0;
    let most = m.moves.iter().map(|(_, _, k)| *k).max().unwrap_or(1).max(1) as f64;
    let width = label + cell * n as f64 + label * 0.5 + 10.0;
    let height = label + cell * n as f64 + 10.0;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg id="move-matrix" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="keys moved from each server (rows) to each server (columns)">"#
    );
    for (j, to) in names.iter().enumerate() {
        let x = label + cell * j as f64 + cell / 2.0;
        let _ = writeln!(
            o,
            r#"<text x="{x}" y="{}" font-size="11" transform="rotate(-60 {x} {})">{}</text>"#,
            label - 6.0,
            label - 6.0,
            esc(to)
        );
    }
    for (i, from) in names.iter().enumerate() {
        let y = label + cell * i as f64;
        let _ = writeln!(
            o,
            r#"<text x="4" y="{}" font-size="11">{}</text>"#,
            y + cell / 2.0 + 4.0,
            esc(from)
        );
        for (j, to) in names.iter().enumerate() {
            let keys = m
                .moves
                .iter()
                .find(|(f, t, _)| f == from && t == to)
                .map_or(0, |(_, _, k)| *k);
            let heat = keys as f64 / most;
            let fill = if keys == 0 {
                "#f4f4f4".to_string()
            } else {
                let c = |lo: f64, hi: f64| (lo + (hi - lo) * heat).round() as u8;
                format!(
                    "#{:02x}{:02x}{:02x}",
                    c(254.0, 204.0),
                    c(224.0, 51.0),
                    c(210.0, 17.0)
                )
            };
            let _ = writeln!(
                o,
                r#"<rect class="move" data-from="{}" data-to="{}" data-value="{keys}" x="{}" y="{y}" width="{}" height="{}" fill="{fill}" stroke="white"><title>{} → {}: {keys}</title></rect>"#,
                esc(from),
                esc(to),
                label + cell * j as f64,
                cell - 1.0,
                cell - 1.0,
                esc(from),
                esc(to)
            );
        }
    }
    o += "</svg>\n";
    o
}

/// The share of keys each method moves.
fn method_chart(v: &View) -> String {
    let (label_w, bar_w, row) = (120.0, 420.0, 24.0);
    let h = 20.0 + row * v.methods.len() as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg id="method-chart" xmlns="http://www.w3.org/2000/svg" width="{}" height="{h}" role="img" aria-label="share of keys moved per method">"#,
        label_w + bar_w + 120.0
    );
    for (i, m) in v.methods.iter().enumerate() {
        let y = 6.0 + i as f64 * row;
        let _ = writeln!(
            o,
            r##"<text x="4" y="{}" font-size="12">{}</text><rect class="moved" data-method="{}" data-value="{}" x="{label_w}" y="{y}" width="{:.2}" height="16" fill="#228833"/><text x="{}" y="{}" font-size="12">{}</text>"##,
            y + 13.0,
            esc(&m.name),
            esc(&m.name),
            m.moved_share,
            bar_w * m.moved_share,
            label_w + bar_w * m.moved_share + 6.0,
            y + 13.0,
            pct(m.moved_share)
        );
    }
    o += "</svg>\n";
    o
}

fn server_table(v: &View) -> String {
    let mut o = String::from(
        "<table id=\"servers\"><tr><th>server</th><th>weight</th><th>weight share</th><th>key share</th><th>ratio</th></tr>\n",
    );
    for s in &v.servers {
        let (k, w, r) = shares(v, s);
        let weight = if v.describe {
            s.weight_before
        } else {
            s.weight_after
        };
        let _ = writeln!(
            o,
            r#"<tr data-server="{}"><td>{}</td><td>{}</td><td class="weight-share" data-value="{w}">{}</td><td class="key-share" data-value="{k}">{}</td><td class="ratio" data-value="{}">{}</td></tr>"#,
            esc(&s.addr),
            esc(&s.addr),
            weight.map_or("-".into(), |w| w.to_string()),
            pct(w),
            pct(k),
            r.map_or(String::new(), |r| r.to_string()),
            r.map_or("-".into(), |r| format!("{r:.3}"))
        );
    }
    o += "</table>\n";
    o
}

fn audit_section(a: &TagAudit, tag: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<h2>Hash tags ({})</h2><p>{} keys, {} with a tag, {} distinct tags.</p>",
        esc(tag),
        a.keys,
        a.tagged,
        a.tags.len()
    );
    o += "<table id=\"tags\"><tr><th>tag</th><th>keys</th><th>share</th><th>server</th></tr>\n";
    for t in a.tags.iter().take(20) {
        let _ = writeln!(
            o,
            r#"<tr><td>{}</td><td>{}</td><td class="tag-share" data-value="{}">{}</td><td>{}</td></tr>"#,
            esc(&t.tag),
            t.keys,
            t.share,
            pct(t.share),
            esc(&t.server)
        );
    }
    o += "</table>\n";
    for w in &a.warnings {
        let _ = writeln!(o, "<p class=\"warning\">{}</p>", esc(w));
    }
    o
}

fn top_section(top: &[(String, u64, String)], lines: u64) -> String {
    let mut o = String::from(
        "<h2>Keys that carry the requests</h2><table id=\"top-keys\"><tr><th>key</th><th>requests</th><th>share</th><th>server</th></tr>\n",
    );
    for (k, n, server) in top {
        let share = *n as f64 / lines.max(1) as f64;
        let _ = writeln!(
            o,
            r#"<tr><td>{}</td><td class="requests" data-value="{n}">{n}</td><td>{}</td><td>{}</td></tr>"#,
            esc(k),
            pct(share),
            esc(server)
        );
    }
    o += "</table>\n";
    o
}

/// The report page.
pub fn html(v: &View, audit: Option<(&TagAudit, &str)>, top: &[(String, u64, String)]) -> String {
    let title = if v.describe {
        format!("memshard plan: the cluster as it is ({})", v.flavor)
    } else {
        format!("memshard plan: the change ({})", v.flavor)
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>",
        esc(&title)
    );
    o += "<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}.warning{color:#cc3311}svg{display:block;margin:8px 0}</style>\n";
    let _ = writeln!(o, "</head><body><h1>{}</h1>", esc(&title));
    let _ = writeln!(o, "<p id=\"sample\">{}</p>", esc(&v.sample.describe()));
    if let Some(m) = v.own_method() {
        let (h, l) = if v.describe {
            (&m.heaviest_before, &m.lightest_before)
        } else {
            (&m.heaviest_after, &m.lightest_after)
        };
        if let (Some(h), Some(l)) = (h, l) {
            let _ = writeln!(
                o,
                r#"<p id="extremes">Heaviest: <b class="heaviest" data-server="{}" data-value="{}">{} at {:.3}× its weight share</b>; lightest: <b class="lightest" data-server="{}" data-value="{}">{} at {:.3}×</b>.</p>"#,
                esc(&h.server),
                h.ratio,
                esc(&h.server),
                h.ratio,
                esc(&l.server),
                l.ratio,
                esc(&l.server),
                l.ratio
            );
        }
    }
    let when = if v.describe { "" } else { " after the change" };
    let _ = writeln!(
        o,
        "<h2>Key share against weight share{when} ({})</h2>",
        esc(&v.own)
    );
    o += &share_chart(v);
    o += &server_table(v);
    if !v.describe {
        let _ = writeln!(o, "<h2>Who moves to whom ({})</h2>", esc(&v.own));
        o += &move_matrix(v);
        o += "<h2>Share of keys moved, per method</h2>\n";
        o += &method_chart(v);
    }
    if let Some((a, tag)) = audit {
        o += &audit_section(a, tag);
    }
    if !top.is_empty() {
        o += &top_section(top, v.sample.lines);
    }
    o += "</body></html>\n";
    o
}
