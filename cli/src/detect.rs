//! `memshard detect`: which placement put the keys that are on these servers, and which
//! codecs read their values. I/O only: each server's keys (its metadump, or the keys of
//! --key-file looked up on every server) go to the library's `detect::Detector`.

use crate::{Failure, NetArgs, usage};
use clap::Args;
use memshard::detect::{CodecTally, Detection, Detector};
use memshard::{Client, Flavor, Server};
use std::collections::HashSet;
use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct DetectArgs {
    /// Server list file: `HOST:PORT [WEIGHT] [NAME]` per line, in the order and with the
    /// weights and names the peers were given (modulo placements follow the order, ketama
    /// ones the weights, twemproxy the names).
    #[arg(long, value_name = "FILE", required_unless_present = "discover")]
    servers: Option<PathBuf>,
    /// Find the servers through cluster auto discovery (an ElastiCache configuration endpoint,
    /// or with --discover-kind memorystore a Memorystore discovery endpoint), each flavor
    /// naming the nodes as its peer does.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "servers")]
    discover: Option<String>,
    /// elasticache (data nodes answer discovery too) or memorystore (only the endpoint does).
    #[arg(long, value_name = "KIND", default_value = "elasticache", requires = "discover",
          value_parser = ["elasticache", "memorystore"])]
    discover_kind: String,
    /// Keys to look for, one per line (e.g. from logs), instead of the servers' own key lists
    /// (`lru_crawler metadump`, which needs memcached 1.4.31 or later): each is looked up on
    /// every server.
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// Most keys read in all (shared evenly between the servers).
    #[arg(long, default_value_t = 100_000, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000_000))]
    max_keys: usize,
    /// Values read per server to name the codecs that wrote them (0: none).
    #[arg(long, default_value_t = 100, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=10_000))]
    sample_values: usize,
    /// Print `{"keys", "flavors": [{"flavor","hash","agree"}...], "codecs": [{"codec","values"}...]}`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    net: NetArgs,
}

/// Keys per `get` while looking keys up.
const LOOKUP_BATCH: usize = 100;
/// Sampled values per `get`.
const SAMPLE_BATCH: usize = 8;
/// Progress on standard error every this many keys.
const PROGRESS_EVERY: u64 = 20_000;

/// The servers as the connection list, and the detector over each flavor's spelling of them.
fn servers(a: &DetectArgs) -> Result<(Vec<Server>, Detector), Failure> {
    if let Some(endpoint) = &a.discover {
        let d = memshard::discovery::Discovery::new(endpoint)
            .map_err(|e| usage(format!("--discover: {e}")))?;
        let d = match a.discover_kind.as_str() {
            "memorystore" => d.kind_of(memshard::discovery::DiscoveryKind::Memorystore),
            _ => d,
        };
        let timeout = Duration::from_millis(a.net.timeout_ms);
        let config = memshard::discovery::fetch(d.endpoint(), timeout).map_err(|e| Failure {
            code: 1,
            msg: e.to_string(),
        })?;
        let list = memshard::discovery::servers_for(&config, Flavor::LibmemcachedModula);
        let det = Detector::per_flavor(|f| memshard::discovery::servers_for(&config, f))
            .map_err(|e| usage(format!("--discover: {e}")))?;
        return Ok((list, det));
    }
    let path = a
        .servers
        .as_ref()
        .ok_or_else(|| usage("give --servers FILE or --discover HOST:PORT"))?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("cannot read server list {}: {e}", path.display())))?;
    let list = memshard::parse_server_list(&text)
        .map_err(|e| usage(format!("{}: {e}", path.display())))?;
    let det = Detector::new(&list).map_err(|e| usage(format!("{}: {e}", path.display())))?;
    Ok((list, det))
}

/// A client of `s` alone: every request goes to that server, whatever the key.
fn one_server(a: &DetectArgs, s: &Server) -> Result<Client, Failure> {
    let b = a.net.builder(2).servers([s.clone()]);
    a.net.security.apply(b)?.build().map_err(usage)
}

/// Dumps of one server before a short one is taken as it is.
const DUMP_ATTEMPTS: u32 = 3;
/// Between them: the crawl in the way is usually over by then.
const DUMP_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

/// The items the server of `c` holds (`curr_items`), if it says.
fn curr_items(c: &Client) -> Option<u64> {
    let (_, stats) = c.stats(None).into_iter().next()?;
    stats
        .ok()?
        .into_iter()
        .find(|(k, _)| k == "curr_items")
        .and_then(|(_, v)| v.parse().ok())
}

fn progress(keys: u64, server: usize, servers: usize) {
    if keys > 0 && keys.is_multiple_of(PROGRESS_EVERY) {
        eprintln!("memshard detect: {keys} keys read (server {server} of {servers})");
    }
}

pub fn run(a: DetectArgs) -> Result<(), Failure> {
    let (list, mut det) = servers(&a)?;
    let n = list.len();
    let clients = list
        .iter()
        .map(|s| one_server(&a, s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut codecs = CodecTally::new();
    match &a.key_file {
        Some(path) => {
            let keys = read_keys(path, a.max_keys)?;
            for (i, c) in clients.iter().enumerate() {
                let mut sampled = 0;
                for batch in keys.chunks(LOOKUP_BATCH) {
                    for (k, r) in batch.iter().zip(c.get_multi(batch)) {
                        match r {
                            Ok(Some(item)) => {
                                det.observe(k, i);
                                progress(det.keys(), i + 1, n);
                                if sampled < a.sample_values {
                                    sampled += 1;
                                    codecs.observe(item.flags, &item.value);
                                }
                            }
                            Ok(None) => {}
                            Err(e) => return Err(server_failed(&e, false)),
                        }
                    }
                }
            }
        }
        None => {
            for (i, c) in clients.iter().enumerate() {
                // --max-keys in all: an even share each, the remainder to the first servers
                let share = a.max_keys / n + usize::from(i < a.max_keys % n);
                if share == 0 {
                    continue;
                }
                // memcached's LRU crawler skips a sub-LRU it is already crawling (its own
                // background crawl; crawler.c, do_lru_crawler_start): a dump can list fewer
                // keys than the server holds, and still end with END. Checked against
                // `curr_items`, and read again.
                let held = curr_items(c).map(|n| n.min(share as u64));
                let mut attempt = 0;
                let sample_keys = loop {
                    attempt += 1;
                    let before = det.clone();
                    let mut sample_keys: Vec<Vec<u8>> = Vec::new();
                    let want = a.sample_values;
                    let mut listed = 0u64;
                    // a key the crawler lists twice (moved between sub-LRUs mid-walk; see
                    // `Client::metadump`) is one key: counted once
                    let mut seen = HashSet::new();
                    let dumped = c.metadump(&list[i].addr, share, |k| {
                        if !seen.insert(k.key.clone()) {
                            return;
                        }
                        listed += 1;
                        det.observe(&k.key, i);
                        progress(det.keys(), i + 1, n);
                        if sample_keys.len() < want {
                            sample_keys.push(k.key);
                        }
                    });
                    match dumped {
                        // BUSY: another crawl (one at a time per server); its turn comes
                        Err(e) if e.to_string().contains("BUSY") && attempt < DUMP_ATTEMPTS => {
                            det = before;
                            std::thread::sleep(DUMP_RETRY_PAUSE);
                            continue;
                        }
                        Err(e) => return Err(server_failed(&e, true)),
                        Ok(_) => {}
                    }
                    match held {
                        Some(held) if listed < held && attempt < DUMP_ATTEMPTS => {
                            det = before;
                            std::thread::sleep(DUMP_RETRY_PAUSE);
                        }
                        Some(held) if listed < held => {
                            eprintln!(
                                "memshard detect: {}: the dump listed {listed} of {held} items \
                                 after {DUMP_ATTEMPTS} tries (expired items, or the server's LRU \
                                 crawler busy); ranking the keys listed",
                                list[i].addr
                            );
                            break sample_keys;
                        }
                        _ => break sample_keys,
                    }
                };
                // a few values at a time: each may be up to the item size
                for chunk in sample_keys.chunks(SAMPLE_BATCH) {
                    for r in c.get_multi(chunk) {
                        // a key gone since the dump, or a value too large to read: not sampled
                        if let Ok(Some(item)) = r {
                            codecs.observe(item.flags, &item.value);
                        }
                    }
                }
            }
        }
    }
    let detection = det.detection();
    let sampled = codecs.values();
    let codecs: Vec<(String, u64)> = codecs
        .ranked()
        .into_iter()
        .map(|(c, n)| (c.name().to_string(), n))
        .collect();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if a.json {
        let flavors: Vec<serde_json::Value> = detection
            .scores
            .iter()
            .map(|s| {
                serde_json::json!({
                    "flavor": s.candidate.flavor.name(),
                    "hash": s.candidate.hash.to_string(),
                    "agree": s.agree,
                })
            })
            .collect();
        let codecs: Vec<serde_json::Value> = codecs
            .iter()
            .map(|(c, v)| serde_json::json!({"codec": c, "values": v}))
            .collect();
        let doc = serde_json::json!({"keys": detection.keys, "flavors": flavors, "codecs": codecs});
        writeln!(out, "{doc}")?;
    } else {
        write_text(&mut out, &detection, &codecs, sampled)?;
    }
    out.flush()?;
    Ok(())
}

fn server_failed(e: &memshard::Error, dump: bool) -> Failure {
    let hint = if dump {
        " (--key-file FILE: keys, one per line, e.g. from logs)"
    } else {
        ""
    };
    Failure {
        code: 1,
        msg: format!("{e}{hint}"),
    }
}

/// Up to `max` keys of `path`, one per line (LF or CRLF), each once; empty lines skipped.
fn read_keys(path: &PathBuf, max: usize) -> Result<Vec<Vec<u8>>, Failure> {
    let f = std::fs::File::open(path)
        .map_err(|e| usage(format!("cannot read key file {}: {e}", path.display())))?;
    let mut keys = Vec::new();
    let mut input = io::BufReader::new(f);
    let mut line = Vec::new();
    let mut skipped = 0usize;
    let mut seen = HashSet::new();
    while keys.len() < max {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let k = line.strip_suffix(b"\n").unwrap_or(&line);
        let k = k.strip_suffix(b"\r").unwrap_or(k);
        // a log line that is no memcached key cannot be on any server
        match memshard::proto::validate_key(k) {
            Ok(()) => {
                if seen.insert(k.to_vec()) {
                    keys.push(k.to_vec());
                }
            }
            Err(_) if k.is_empty() => {}
            Err(_) => skipped += 1,
        }
    }
    if skipped > 0 {
        eprintln!(
            "memshard detect: {} skipped {skipped} lines that are not memcached keys",
            path.display()
        );
    }
    Ok(keys)
}

fn pct(d: &Detection, agree: u64) -> f64 {
    if d.keys == 0 {
        100.0
    } else {
        agree as f64 * 100.0 / d.keys as f64
    }
}

fn write_text(
    out: &mut impl Write,
    d: &Detection,
    codecs: &[(String, u64)],
    sampled: u64,
) -> io::Result<()> {
    writeln!(out, "keys: {}", d.keys)?;
    if d.keys == 0 {
        writeln!(out, "no key found: nothing to tell the placements apart")?;
    }
    writeln!(
        out,
        "{:<26} {:<14} {:>8} {:>8}",
        "flavor", "hash", "agree", "share"
    )?;
    // the best, everything tied with them, then the next ten
    let best = d.best().len();
    for s in d.scores.iter().take(best.max(1) + 10) {
        writeln!(
            out,
            "{:<26} {:<14} {:>8} {:>7.2}%",
            s.candidate.flavor.name(),
            s.candidate.hash.to_string(),
            s.agree,
            pct(d, s.agree)
        )?;
    }
    let names = |v: &[memshard::detect::Score]| -> String {
        v.iter()
            .map(|s| format!("{}/{}", s.candidate.flavor, s.candidate.hash))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if best > 1 {
        if d.best_place_alike() {
            writeln!(
                out,
                "tied: {} place these keys identically (the same placement on these servers, or too few keys to tell them apart)",
                names(d.best())
            )?;
        } else {
            writeln!(
                out,
                "tied: {} agree on as many keys but place them differently: no single placement wrote these keys",
                names(d.best())
            )?;
        }
    }
    if let Some(top) = d.scores.first()
        && top.agree < d.keys
    {
        writeln!(
            out,
            "no placement puts every key where it is: several clients (or a server list changed since) wrote them"
        )?;
    }
    if sampled > 0 {
        writeln!(out, "values sampled: {sampled}")?;
        for (c, v) in codecs {
            writeln!(out, "  codec {c}: reads {v}")?;
        }
    }
    Ok(())
}
