//! `memshard plan` as an operator reads it: the cluster as it is (no `--to`), a change, an
//! access log, as text, JSON, CSV and an HTML report rendered by headless Chromium (Debian's
//! package, installed by scripts/test.sh as every peer is). No server is contacted.

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::servers::require;
use common::{TempDir, TempFile};

use serde_json::Value;
use support::{memshard, parts};

/// The README's example files: `ten.txt` (10 servers weighted 1,1,1,1,1,1,2,2,2,4, the last
/// with a long name), `twelve.txt` (two of weight 2 added), `access.log`.
fn example(name: &str) -> String {
    common::path_string(&common::repo_root().join("examples/operator").join(name))
}

fn run(args: &[&str]) -> String {
    let out = memshard(args);
    let (code, stdout, stderr) = parts(&out);
    assert_eq!(code, 0, "memshard {args:?}: {stderr}");
    stdout
}

fn json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&run(&a)).expect("JSON")
}

/// Describing the cluster as it is needs no `--to`: per server its weight share (exact:
/// 6.25%), key share and ratio, the heaviest and lightest by name; the JSON names servers
/// by address, and the CSV has the same rows.
#[test]
fn the_cluster_as_it_is() {
    let ten = example("ten.txt");
    let args = ["plan", "--servers", &ten, "--keys", "50000"];
    let text = run(&args);
    assert!(text.contains("the cluster as it is: 10 servers"), "{text}");
    assert!(
        text.contains("1 (6.25%)") && text.contains("4 (25%)"),
        "{text}"
    );
    let j = json(&args);
    assert_eq!(j["describe"], true);
    let servers = j["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), 10);
    let long = &servers[9];
    assert_eq!(
        long["address"],
        "cache-with-a-long-name.zone-a.internal:11211"
    );
    assert_eq!(long["weight_share_before"], 0.25);
    // the heaviest and lightest are the servers with the largest and smallest ratio
    let ratio = |s: &Value| s["ratio_before"].as_f64().expect("ratio");
    let heaviest = servers.iter().max_by(|a, b| ratio(a).total_cmp(&ratio(b)));
    let lightest = servers.iter().min_by(|a, b| ratio(a).total_cmp(&ratio(b)));
    let (h, l) = (heaviest.expect("a server"), lightest.expect("a server"));
    let own = &j["methods"][0];
    assert_eq!(own["method"], "ketama");
    assert_eq!(own["heaviest_before"]["server"], h["address"]);
    assert_eq!(own["lightest_before"]["server"], l["address"]);
    let named = format!(
        "heaviest: {} at {:.3}x its weight share; lightest: {} at {:.3}x",
        h["address"].as_str().unwrap_or(""),
        ratio(h),
        l["address"].as_str().unwrap_or(""),
        ratio(l)
    );
    assert!(text.contains(&named), "{named:?} not in {text}");
    // every row aligned: the long name does not push its row's numbers out of their columns
    let rows: Vec<&str> = text.lines().filter(|l| l.contains(":11211 ")).collect();
    let ends: Vec<usize> = rows.iter().map(|r| r.trim_end().len()).collect();
    assert!(ends.windows(2).all(|w| w[0] == w[1]), "{rows:#?}");

    let mut a = args.to_vec();
    a.extend(["--csv", "servers"]);
    let csv = run(&a);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 11, "{csv}");
    assert!(lines[0].starts_with("address,weight_before,weight_after,"));
    assert!(lines[10].starts_with("cache-with-a-long-name.zone-a.internal:11211,4,4,0.25,0.25,"));
}

/// Two servers of weight 2 added, under ketama and under php-memcached's default (modulo):
/// the moves by address, summing to the moved count, the same in JSON and CSV.
#[test]
fn what_moves_when_two_servers_are_added() {
    let (ten, twelve) = (example("ten.txt"), example("twelve.txt"));
    for extra in [&[][..], &["--peer", "php-memcached"][..]] {
        let mut args = vec![
            "plan",
            "--servers",
            &ten,
            "--to",
            &twelve,
            "--keys",
            "40000",
        ];
        args.extend(extra);
        let j = json(&args);
        assert_eq!(j["describe"], false);
        let own = &j["methods"][0];
        let moves = own["moves"].as_array().expect("moves");
        let sum: u64 = moves.iter().map(|m| m["keys"].as_u64().unwrap_or(0)).sum();
        assert_eq!(sum, own["moved"].as_u64().expect("moved"), "{extra:?}");
        assert!(
            moves
                .iter()
                .all(|m| m["from"].is_string() && m["to"].is_string())
        );
        let new = &j["servers"][10];
        assert_eq!(
            (new["address"].as_str(), new["in_before"].as_bool()),
            (Some("10.0.0.11:11211"), Some(false))
        );
        assert_eq!(new["weight_before"], 0);

        let mut a = args.clone();
        a.extend(["--csv", "moves"]);
        let csv = run(&a);
        let own_name = own["method"].as_str().unwrap_or("");
        let rows = csv
            .lines()
            .filter(|l| l.starts_with(&format!("{own_name},")))
            .count();
        assert_eq!(rows, moves.len(), "{extra:?}: one CSV row per move");

        let text = run(&args);
        assert!(text.contains("moved:\n"), "{text}");
        assert!(
            !text.contains("more pairs"),
            "the move list is whole: {text}"
        );
        if extra.is_empty() {
            // ketama: about 2/18 of the weight is new, so about that share moves
            let share = own["moved_share"].as_f64().unwrap_or(0.0);
            assert!((0.15..0.30).contains(&share), "{share}");
        } else {
            assert_eq!(own_name, "libmemcached-modula", "{text}");
            let share = own["moved_share"].as_f64().unwrap_or(0.0);
            assert!(share > 0.7, "modulo moves most keys: {share}");
        }
    }
}

/// A key file that repeats keys is an access log: the shares are of requests, the report
/// says how many distinct keys, and lists the keys that carry the requests.
#[test]
fn an_access_log_counts_requests() {
    let ten = example("ten.txt");
    let mut log = String::new();
    for i in 0..1000 {
        log += &format!("user:{i}\n");
    }
    for _ in 0..1000 {
        log += "user:hot\n";
    }
    let file = TempFile::new("access.log", &log);
    let args = ["plan", "--servers", &ten, "--key-file", file.path()];
    let text = run(&args);
    assert!(
        text.contains("2000 requests over 1001 distinct keys"),
        "{text}"
    );
    let top = text
        .split("keys that carry the requests")
        .nth(1)
        .unwrap_or("");
    let first = top.lines().nth(1).unwrap_or("");
    assert!(
        first.trim_start().starts_with("user:hot")
            && first.contains("1000")
            && first.contains("50.00%"),
        "{text}"
    );
    let j = json(&args);
    assert_eq!(
        (j["lines"].as_u64(), j["distinct_keys"].as_u64()),
        (Some(2000), Some(1001))
    );
    assert_eq!(j["request_weighted"], true);

    // the README's access log: its tag `acme` piles onto one server
    let log = example("access.log");
    let audit = [
        "plan",
        "--servers",
        &ten,
        "--key-file",
        &log,
        "--hash-tag",
        "{}",
        "--tag-audit",
    ];
    let text = run(&audit);
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("WARNING: tag"))
        .collect();
    assert!(
        warnings.len() == 1 && warnings[0].contains("\"acme\""),
        "{text}"
    );
    let text = run(&["plan", "--servers", &ten, "--key-file", &log]);
    assert!(
        text.contains("3000 requests over 882 distinct keys"),
        "{text}"
    );
}

/// The numbers of an HTML report's server table, read from the DOM Chromium built: each
/// row's server and its `class` cell's `data-value`.
fn dom_values(dom: &str, class: &str) -> Vec<(String, f64)> {
    let cell = format!("class=\"{class}\" data-value=\"");
    dom.split("<tr data-server=\"")
        .skip(1)
        .filter_map(|row| {
            let row = row.split("</tr>").next()?;
            let server = row.split('"').next()?.to_string();
            let value = row.split(&cell).nth(1)?.split('"').next()?.parse().ok()?;
            Some((server, value))
        })
        .collect()
}

fn chromium(args: &[&str]) -> std::process::Output {
    std::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(args)
        .output()
        .expect("run chromium")
}

/// The HTML report as a person sees it: Chromium renders it; its DOM holds the three charts
/// and tables whose numbers equal `--json`'s; a screenshot is a picture, not a blank page.
#[test]
fn the_html_report_renders_in_a_browser() {
    if !require("chromium") {
        return;
    }
    let dir = TempDir::new("plan-report");
    let (ten, twelve) = (example("ten.txt"), example("twelve.txt"));
    let html = dir.path().join("plan.html");
    let html_s = html.to_string_lossy().into_owned();
    let args = [
        "plan",
        "--servers",
        &ten,
        "--to",
        &twelve,
        "--keys",
        "30000",
    ];
    let mut a = args.to_vec();
    a.extend(["--html", &html_s]);
    run(&a);
    let page = std::fs::read_to_string(&html).expect("the report");
    for external in ["<script", "http://", "https://", "@import", "url("] {
        let outside = page.replace("http://www.w3.org/2000/svg", "");
        assert!(!outside.contains(external), "self-contained: {external}");
    }
    let url = format!("file://{html_s}");
    let dom = chromium(&["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    for id in ["share-chart", "move-matrix", "method-chart", "servers"] {
        assert!(
            dom.contains(&format!("id=\"{id}\"")),
            "{id} missing from the rendered page"
        );
    }
    let j = json(&args);
    let want: Vec<(String, f64)> = j["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .map(|s| {
            (
                s["address"].as_str().unwrap_or("").to_string(),
                s["key_share_after"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    assert_eq!(
        dom_values(&dom, "key-share"),
        want,
        "the page's key shares are --json's"
    );
    let heaviest = j["methods"][0]["heaviest_after"]["server"]
        .as_str()
        .unwrap_or("");
    assert!(
        dom.contains(&format!("class=\"heaviest\" data-server=\"{heaviest}\"")),
        "{heaviest}"
    );
    let moves = j["methods"][0]["moves"].as_array().expect("moves");
    let cells = dom.matches("class=\"move\"").count();
    assert_eq!(cells, 12 * 12, "one heat map cell per pair of servers");
    assert!(moves.iter().all(|m| dom.contains(&format!(
        "data-from=\"{}\" data-to=\"{}\" data-value=\"{}\"",
        m["from"].as_str().unwrap_or(""),
        m["to"].as_str().unwrap_or(""),
        m["keys"]
    ))));

    let png = dir.path().join("plan.png");
    let shot = format!("--screenshot={}", png.to_string_lossy());
    let out = chromium(&["--window-size=1000,1400", &shot, &url]);
    assert!(
        png.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png).expect("png"),
    ));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let pixels = &buf[..info.buffer_size()];
    let channels = info.color_type.samples();
    let white = pixels
        .chunks(channels)
        .filter(|p| p.iter().take(3).all(|&c| c > 245))
        .count();
    let red = pixels
        .chunks(channels)
        .filter(|p| p.len() >= 3 && p[0] > 150 && p[1] < 90 && p[2] < 60)
        .count();
    let total = pixels.len() / channels;
    assert!(
        white < total * 97 / 100,
        "the screenshot is blank: {white} of {total} pixels white"
    );
    assert!(
        red > 100,
        "no overloaded server drawn in red ({red} red pixels)"
    );
}
