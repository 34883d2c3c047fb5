//! Values against the real peers, both directions.
//!
//! One memcached on 127.0.25.1 (a free port; no other test binary uses 127.0.25.x), one server
//! so the peers need no distribution settings (placement is proven elsewhere). For each peer —
//! php-memcached, pylibmc, dalli, spymemcached, node `memcached` — through its driver in
//! `tests/values/`:
//!
//! - **peer → memshard**: the driver stores its matrix (keys `<peer>:<case>`) and prints each
//!   value as the peer sees it, in the CLI's `get --json` convention; `memshard get --codec C
//!   --json` must print the same type and value. Also accepted, and shown as such in the matrix:
//!   `foreign` with the encoding [`allowed_foreign`] names for that case, and what the peer
//!   itself reads back of its own value when that differs from what it stored
//!   (`peer_reads_back`: the peer's write is lossy, e.g. node writes -0 as `0`).
//! - **memshard → peer**: `memshard set --codec C --type T KEY VALUE` for each case of
//!   [`write_cases`], then the driver's `read` must show the same type and value, except where
//!   [`Expect`] says otherwise (the peer's own reads are lossy, or the peer cannot hold the
//!   value and memshard must refuse it with a non-zero exit and a message).
//! - php-memcached `increment` on an int memshard wrote, then `get`: an int.
//!
//! The matrix (peer × type × direction) is printed and saved to `target/values-matrix.md`; any
//! MISMATCH, unexpected refusal or peer error fails the test. Expected values always come from
//! the peer (its driver's rendering), never from memshard.
//!
//! Numbers in the JSON lines are compared by their text through Rust's correctly rounded
//! parser ([`parse_line`]), whatever serde_json's float settings, so `1e+100` (Python),
//! `1.0e+100` (PHP, Ruby) and `1.0E100` (Java) are the same double.
//!
//! A missing peer is SKIPPED (printed), or a failure when `CI` is set. node's driver needs
//! `npm ci` in `tests/values/` (scripts/test.sh runs it).

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::servers::{Memcached, program, require};
use common::{TempDir, drivers, path_string, runs, skip as missing};
use serde_json::Value as J;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use support::memshard;

const IP: Ipv4Addr = Ipv4Addr::new(127, 0, 25, 1);
const UTF8: &str = "h\u{e9}llo w\u{f6}rld \u{2713} \u{65e5}\u{672c}\u{8a9e} \u{1f680}";

// ---------------------------------------------------------------------------------------
// values as the JSON lines spell them
// ---------------------------------------------------------------------------------------

/// A value in the CLI's `--json` convention, comparable exactly.
#[derive(Debug, Clone)]
enum V {
    Str(String),
    /// lowercase hex
    Bytes(String),
    /// decimal text
    Int(String),
    Float(f64),
    Bool(bool),
    Null,
    Json(J),
    Msgpack(J),
    Foreign {
        encoding: String,
        hex: String,
    },
    Unknown(String),
    Other(String),
}

impl PartialEq for V {
    fn eq(&self, other: &V) -> bool {
        use V::*;
        match (self, other) {
            (Str(a), Str(b)) | (Bytes(a), Bytes(b)) | (Int(a), Int(b)) => a == b,
            // bit for bit (-0.0 is not 0.0), any NaN is NaN
            (Float(a), Float(b)) => (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits(),
            (Bool(a), Bool(b)) => a == b,
            (Null, Null) => true,
            (Json(a), Json(b)) | (Msgpack(a), Msgpack(b)) => a == b,
            (
                Foreign {
                    encoding: a,
                    hex: x,
                },
                Foreign {
                    encoding: b,
                    hex: y,
                },
            ) => a == b && x == y,
            (Unknown(a), Unknown(b)) | (Other(a), Other(b)) => a == b,
            _ => false,
        }
    }
}

fn short(s: &str) -> String {
    if s.chars().count() <= 48 {
        return format!("{s:?}");
    }
    let head: String = s.chars().take(32).collect();
    format!("{head:?}… ({} bytes)", s.len())
}

impl std::fmt::Display for V {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            V::Str(s) => write!(f, "string {}", short(s)),
            V::Bytes(h) => write!(f, "bytes {}", short(h)),
            V::Int(d) => write!(f, "int {d}"),
            V::Float(x) if x.is_nan() => write!(f, "float NaN"),
            V::Float(x) if x.is_infinite() => {
                write!(f, "float {}Infinity", if *x < 0.0 { "-" } else { "" })
            }
            V::Float(x) => write!(f, "float {x:?}"),
            V::Bool(b) => write!(f, "bool {b}"),
            V::Null => write!(f, "null"),
            V::Json(j) => write!(f, "json {}", short(&j.to_string())),
            V::Msgpack(j) => write!(f, "msgpack {}", short(&j.to_string())),
            V::Foreign { encoding, hex } => write!(f, "foreign({encoding}) {}", short(hex)),
            V::Unknown(s) => write!(f, "unknown {s}"),
            V::Other(s) => write!(f, "{s}"),
        }
    }
}

/// A JSON line, parsed with every number turned into the string "\u{1}" + its text first:
/// serde_json's float parsing is correctly rounded only with its `float_roundtrip` feature
/// (without it `1.0E100` and `1e+100` can come out as two doubles), and big integers must stay
/// exact. [`restore`] and [`number_text`] read them back exactly. (The peers escape control characters in JSON strings, so no string of
/// theirs starts with a raw U+0001.)
fn parse_line(raw: &str) -> Result<J, String> {
    let mut s = String::with_capacity(raw.len() + 32);
    let mut chars = raw.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            s.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    s.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            s.push(c);
        } else if c == '-' || c.is_ascii_digit() {
            s.push_str("\"\\u0001");
            s.push(c);
            while let Some(&n) = chars.peek() {
                if !(n.is_ascii_digit() || matches!(n, '.' | 'e' | 'E' | '+' | '-')) {
                    break;
                }
                s.push(n);
                chars.next();
            }
            s.push('"');
        } else {
            s.push(c);
        }
    }
    serde_json::from_str(&s).map_err(|e| format!("not JSON ({e}): {}", short(raw)))
}

fn number_text(v: &J) -> Option<&str> {
    v.as_str()?.strip_prefix('\u{1}')
}

/// Plain JSON again: integers exactly, other numbers through Rust's correctly rounded parse.
fn restore(v: &J) -> J {
    match v {
        J::String(s) => match s.strip_prefix('\u{1}') {
            Some(t) => t
                .parse::<i64>()
                .map(J::from)
                .or_else(|_| t.parse::<u64>().map(J::from))
                .ok()
                .or_else(|| {
                    t.parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .map(J::Number)
                })
                .unwrap_or_else(|| J::String(t.to_owned())),
            None => v.clone(),
        },
        J::Array(a) => J::Array(a.iter().map(restore).collect()),
        J::Object(o) => J::Object(o.iter().map(|(k, x)| (k.clone(), restore(x))).collect()),
        other => other.clone(),
    }
}

fn field<'a>(line: &'a J, name: &str) -> Option<&'a J> {
    line.as_object()?.get(name)
}

fn field_str(line: &J, name: &str) -> Option<String> {
    let v = field(line, name)?;
    Some(match number_text(v) {
        Some(t) => t.to_owned(),
        None => v.as_str().map_or_else(|| v.to_string(), str::to_owned),
    })
}

/// The `type` and `value` (and `encoding`, `flags`) of a line, as a [`V`].
fn rendered(line: &J) -> Result<V, String> {
    let ty = field(line, "type")
        .and_then(J::as_str)
        .ok_or_else(|| format!("no \"type\" in {}", short(&line.to_string())))?;
    let value = field(line, "value").ok_or("no \"value\"")?;
    let text = || {
        value
            .as_str()
            .filter(|s| !s.starts_with('\u{1}'))
            .map(str::to_owned)
            .ok_or_else(|| format!("{ty} value is not a JSON string: {value}"))
    };
    Ok(match ty {
        "string" => V::Str(text()?),
        "bytes" => V::Bytes(text()?.to_ascii_lowercase()),
        "int" => match number_text(value) {
            Some(t) => V::Int(t.to_owned()),
            None => {
                let t = text()?;
                let digits = t.strip_prefix('-').unwrap_or(&t);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(format!("int value {t:?} is not a decimal integer"));
                }
                V::Int(t)
            }
        },
        "float" => V::Float(match number_text(value) {
            Some(t) => t.parse().map_err(|e| format!("float {t:?}: {e}"))?,
            None => match text()?.as_str() {
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                "NaN" => f64::NAN,
                other => return Err(format!("float value {other:?}")),
            },
        }),
        "bool" => V::Bool(value.as_bool().ok_or("bool value is not true/false")?),
        "null" if value.is_null() => V::Null,
        "json" => V::Json(restore(value)),
        "msgpack" => V::Msgpack(restore(value)),
        "foreign" => V::Foreign {
            encoding: field_str(line, "encoding").unwrap_or_default(),
            hex: text()?,
        },
        "unknown" => V::Unknown(format!(
            "flags {} {}",
            field_str(line, "flags").unwrap_or_default(),
            short(&text().unwrap_or_default())
        )),
        other => V::Other(format!("{other} {}", short(&restore(value).to_string()))),
    })
}

// ---------------------------------------------------------------------------------------
// the peers
// ---------------------------------------------------------------------------------------

struct Peer {
    /// Key prefix and column name: php, pylibmc, dalli, spymemcached, node.
    name: &'static str,
    codec: &'static str,
    /// The driver: program and leading arguments; then `write|read ADDR [KEY...]`.
    cmd: Vec<String>,
}

impl Peer {
    fn run(&self, args: &[&str]) -> Vec<J> {
        let out = Command::new(&self.cmd[0])
            .args(&self.cmd[1..])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{}: run {:?}: {e}", self.name, self.cmd));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{} driver {:?} failed ({}):\n{}\n{}",
            self.name,
            args.first(),
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| parse_line(l).unwrap_or_else(|e| panic!("{} driver: {e}", self.name)))
            .collect()
    }
}

fn values_dir() -> PathBuf {
    common::repo_root().join("tests/values")
}

/// The peers installed here, their drivers ready (spymemcached's compiled into `tmp`).
fn peers(tmp: &Path) -> Vec<Peer> {
    let script = |f: &str| path_string(&values_dir().join(f));
    let mut peers = Vec::new();

    match program("php") {
        Some(php)
            if runs(
                &php,
                &["-r", "exit(extension_loaded('memcached') ? 0 : 1);"],
            ) =>
        {
            peers.push(Peer {
                name: "php",
                codec: "php-memcached",
                cmd: vec![path_string(&php), script("php_values.php")],
            })
        }
        Some(_) => missing("php-memcached", "php's memcached extension is not loaded"),
        None => missing("php-memcached", "php is not installed"),
    }

    // Debian's python3 (the one python3-pylibmc installs into), not a virtualenv's
    let python = Some(PathBuf::from("/usr/bin/python3"))
        .filter(|p| p.is_file())
        .or_else(|| program("python3"));
    match python {
        Some(py) if runs(&py, &["-c", "import pylibmc"]) => peers.push(Peer {
            name: "pylibmc",
            codec: "pylibmc",
            cmd: vec![path_string(&py), script("pylibmc_values.py")],
        }),
        Some(_) => missing("pylibmc", "python3 cannot import pylibmc"),
        None => missing("pylibmc", "python3 is not installed"),
    }

    match program("ruby") {
        Some(ruby) if runs(&ruby, &["-e", "require 'dalli'"]) => peers.push(Peer {
            name: "dalli",
            codec: "dalli",
            cmd: vec![path_string(&ruby), script("dalli_values.rb")],
        }),
        Some(_) => missing("dalli", "ruby cannot require dalli"),
        None => missing("dalli", "ruby is not installed"),
    }

    // Compiled once; one JVM per direction.
    match drivers::spymemcached(tmp, &script("SpyValues.java"), "SpyValues") {
        Ok(cmd) => peers.push(Peer {
            name: "spymemcached",
            codec: "spymemcached",
            cmd,
        }),
        Err(why) => missing("spymemcached", &why),
    }

    match program("node") {
        Some(node)
            if values_dir()
                .join("node_modules/memcached/package.json")
                .is_file() =>
        {
            peers.push(Peer {
                name: "node",
                codec: "node-memcached",
                cmd: vec![path_string(&node), script("node_values.js")],
            })
        }
        Some(_) => missing(
            "node memcached",
            "tests/values/node_modules lacks memcached (npm ci in tests/values)",
        ),
        None => missing("node memcached", "node is not installed"),
    }
    peers
}

// ---------------------------------------------------------------------------------------
// memshard's side
// ---------------------------------------------------------------------------------------

fn stderr_line(out: &Output) -> String {
    let e = String::from_utf8_lossy(&out.stderr);
    let e = e.trim();
    if e.is_empty() {
        format!("(no message, {})", out.status)
    } else {
        e.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

/// `memshard get --json` of `keys` with `codec`: each key's value, or why there is none.
fn memshard_get(servers: &str, codec: &str, keys: &[String]) -> HashMap<String, Result<V, String>> {
    let mut args = vec!["get", "--servers", servers, "--codec", codec, "--json"];
    args.extend(keys.iter().map(String::as_str));
    let out = memshard(&args);
    let mut got = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.trim().is_empty() {
            continue;
        }
        let r = parse_line(line).and_then(|j| {
            let key = field_str(&j, "key").ok_or("no key")?;
            Ok((key, rendered(&j)))
        });
        match r {
            Ok((key, v)) => {
                got.insert(key, v);
            }
            Err(e) => panic!("memshard get --json printed a line that is not the contract: {e}"),
        }
    }
    // A key without a line: a miss, or an error that ended the batch; asked alone for the reason.
    for key in keys {
        if !got.contains_key(key) {
            let alone = memshard(&["get", "--servers", servers, "--codec", codec, "--json", key]);
            let why = if alone.status.success() && alone.stdout.is_empty() {
                "memshard: a miss".to_owned()
            } else {
                format!("memshard get: {}", stderr_line(&alone))
            };
            got.insert(key.clone(), Err(why));
        }
    }
    got
}

// ---------------------------------------------------------------------------------------
// the matrix
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Status {
    Ok,
    /// memshard matches what the peer reads of its own value (the peer's round trip is lossy).
    PeerLossy,
    /// Allowed ([`allowed_foreign`]): a format with no value in memshard's model, returned
    /// undecoded with the right encoding.
    Foreign(String),
    /// The peer cannot hold the value: refused (by the peer, or by memshard with a message).
    Unsupported,
    /// memshard does not write that format (listed in [`Expect::MayRefuse`]), and said so.
    NotWritten,
    Mismatch,
    /// memshard refused a value the peer can hold.
    Refused,
    /// The peer failed on its own value.
    Error,
}

impl Status {
    fn failed(&self) -> bool {
        matches!(self, Status::Mismatch | Status::Refused | Status::Error)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Ok => f.write_str("ok"),
            Status::PeerLossy => f.write_str("peer-lossy"),
            Status::Foreign(e) => write!(f, "foreign({e})"),
            Status::Unsupported => f.write_str("unsupported"),
            Status::NotWritten => f.write_str("not-written"),
            Status::Mismatch => f.write_str("MISMATCH"),
            Status::Refused => f.write_str("REFUSED"),
            Status::Error => f.write_str("ERROR"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Dir {
    PeerToMemshard,
    MemshardToPeer,
}

struct Outcome {
    peer: &'static str,
    dir: Dir,
    case: String,
    status: Status,
    note: String,
}

const GROUPS: [&str; 12] = [
    "string",
    "bytes",
    "threshold",
    "100 KB",
    "int",
    "big int",
    "float",
    "bool",
    "null",
    "list",
    "map",
    "incr",
];

/// The matrix row of a case name.
fn group(case: &str) -> &'static str {
    let digits = |s: &str| {
        s.split('_')
            .nth(1)
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
    };
    match case {
        c if c.starts_with("str_100k") => "100 KB",
        c if c.starts_with("str_") && digits(c) => "threshold",
        c if c.starts_with("str_") => "string",
        c if c.starts_with("bytes") => "bytes",
        "int_2p64" | "int_neg_2p100" => "big int",
        c if c.starts_with("int_") || c.starts_with("long_") => "int",
        c if c.starts_with("float") => "float",
        c if c.starts_with("bool") => "bool",
        "null" => "null",
        c if c.starts_with("list") => "list",
        c if c.starts_with("map") => "map",
        "incr" => "incr",
        _ => "other",
    }
}

fn matrix(peers: &[Peer], outcomes: &[Outcome]) -> String {
    let mut md = String::from("| type |");
    let mut cols = Vec::new();
    for p in peers {
        for dir in [Dir::PeerToMemshard, Dir::MemshardToPeer] {
            let title = match dir {
                Dir::PeerToMemshard => format!("{} → memshard", p.name),
                Dir::MemshardToPeer => format!("memshard → {}", p.name),
            };
            let _ = write!(md, " {title} |");
            cols.push((p.name, dir));
        }
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(cols.len()));
    md.push('\n');
    let mut groups: Vec<&str> = GROUPS.to_vec();
    if outcomes.iter().any(|o| group(&o.case) == "other") {
        groups.push("other");
    }
    for g in groups {
        let _ = write!(md, "| {g} |");
        for &(peer, dir) in &cols {
            let mut counts: BTreeMap<&Status, usize> = BTreeMap::new();
            for o in outcomes {
                if o.peer == peer && o.dir == dir && group(&o.case) == g {
                    *counts.entry(&o.status).or_default() += 1;
                }
            }
            let cell = if counts.is_empty() {
                "—".to_owned()
            } else {
                counts
                    .iter()
                    .map(|(s, n)| format!("{s} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = write!(md, " {cell} |");
        }
        md.push('\n');
    }
    let mut totals: BTreeMap<&Status, usize> = BTreeMap::new();
    for o in outcomes {
        *totals.entry(&o.status).or_default() += 1;
    }
    let _ = writeln!(
        md,
        "\n{} checks: {}\n",
        outcomes.len(),
        totals
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let notable: Vec<&Outcome> = outcomes.iter().filter(|o| o.status != Status::Ok).collect();
    if !notable.is_empty() {
        md.push_str("| direction | key | status | note |\n|---|---|---|---|\n");
        for o in notable {
            let (dir, key) = match o.dir {
                Dir::PeerToMemshard => (
                    format!("{} → memshard", o.peer),
                    format!("{}:{}", o.peer, o.case),
                ),
                Dir::MemshardToPeer => (
                    format!("memshard → {}", o.peer),
                    format!("ms:{}:{}", o.peer, o.case),
                ),
            };
            let note = o.note.replace('|', "\\|").replace('\n', " ");
            let _ = writeln!(md, "| {dir} | `{key}` | {} | {note} |", o.status);
        }
    }
    md
}

// ---------------------------------------------------------------------------------------
// peer → memshard
// ---------------------------------------------------------------------------------------

/// The only cases where memshard may answer `foreign` (with this encoding) instead of the typed
/// value: the peer stores them in a serialization format that has no value in memshard's model,
/// which memshard returns undecoded by design (src/value/mod.rs, "Foreign"). Everything else the
/// peers write here is decoded, so a decoder that fell back to `foreign` fails:
/// - php `*_igbinary` (flags type 5, `Memcached::SERIALIZER_IGBINARY`): memshard has no igbinary
///   reader (src/value/php.rs: type 5 is `Foreign`).
/// - spymemcached `int_2p64`, `list`, `map` (flags 0x1): Java serialization of a BigInteger, an
///   ArrayList and a HashMap (SerializingTranscoder:161-164); memshard does not read Java's
///   object stream (src/value/spymemcached.rs: 0x1 is `Foreign`).
///
/// Not listed, so decoded: php's `serialize()` (type 4: null, arrays as `json`) and msgpack
/// (type 7: scalars, arrays as `msgpack`), pylibmc's pickles (floats, None, lists, str-keyed
/// dicts), dalli's Marshal (nil, floats, arrays, hashes, symbols), node's JSON.
fn allowed_foreign(peer: &str, case: &str) -> Option<&'static str> {
    match peer {
        "php" if case.ends_with("_igbinary") => Some("igbinary"),
        "spymemcached" if matches!(case, "int_2p64" | "list" | "map") => Some("java-serialized"),
        _ => None,
    }
}

/// Values the peer itself refuses to store (its driver reports `unsupported`).
fn peer_cannot_store(peer: &str, case: &str) -> bool {
    matches!(
        (peer, case),
        // NullPointerException("Can't serialize null") (BaseSerializingTranscoder:96-98)
        ("spymemcached", "null")
        // JSON.stringify throws on BigInt (memcached.js:924-927)
        | ("node", "int_2p64")
    )
}

fn peer_to_memshard(peer: &Peer, addr: &str, servers: &str, outcomes: &mut Vec<Outcome>) {
    let mut cases = Vec::new();
    for line in peer.run(&["write", addr]) {
        let key = field_str(&line, "key").expect("driver line without key");
        let case = key
            .strip_prefix(&format!("{}:", peer.name))
            .unwrap_or_else(|| panic!("{} wrote key {key:?} outside its prefix", peer.name))
            .to_owned();
        let mut push = |status, note: String| {
            outcomes.push(Outcome {
                peer: peer.name,
                dir: Dir::PeerToMemshard,
                case: case.clone(),
                status,
                note,
            })
        };
        if let Some(why) = field_str(&line, "unsupported") {
            if peer_cannot_store(peer.name, &case) {
                push(Status::Unsupported, format!("{} refuses: {why}", peer.name));
            } else {
                push(
                    Status::Error,
                    format!("{} refused, not listed: {why}", peer.name),
                );
            }
            continue;
        }
        if peer_cannot_store(peer.name, &case) {
            push(
                Status::Error,
                format!("{} stored a value listed as one it cannot store", peer.name),
            );
            continue;
        }
        if let Some(e) = field_str(&line, "error") {
            push(Status::Error, format!("{}: {e}", peer.name));
            continue;
        }
        let want = rendered(&line).unwrap_or_else(|e| panic!("{} driver, {key}: {e}", peer.name));
        let reads_back = field(&line, "peer_reads_back").map(|b| {
            rendered(b).map_err(|_| field_str(b, "error").unwrap_or_else(|| b.to_string()))
        });
        cases.push((key, case, want, reads_back));
    }
    assert!(!cases.is_empty(), "{} stored nothing", peer.name);

    let keys: Vec<String> = cases.iter().map(|c| c.0.clone()).collect();
    let got = memshard_get(servers, peer.codec, &keys);
    for (key, case, want, reads_back) in cases {
        let (status, note) = match &got[&key] {
            Err(why) => (
                Status::Mismatch,
                format!("{} stored {want}; {why}", peer.name),
            ),
            Ok(v) if *v == want => (Status::Ok, String::new()),
            // php's msgpack serializer: the CLI shows msgpack values as JSON under type msgpack
            Ok(V::Msgpack(j)) if case.ends_with("_msgpack") && want == V::Json(j.clone()) => {
                (Status::Ok, String::new())
            }
            Ok(V::Foreign { encoding, .. })
                if allowed_foreign(peer.name, &case) == Some(encoding.as_str()) =>
            {
                (
                    Status::Foreign(encoding.clone()),
                    format!("{} stored {want}", peer.name),
                )
            }
            Ok(v) if reads_back.as_ref().is_some_and(|b| b.as_ref() == Ok(v)) => (
                Status::PeerLossy,
                format!(
                    "{} stored {want} and reads back {v} itself; memshard: {v}",
                    peer.name
                ),
            ),
            Ok(v) => {
                let mut note = format!("{} stored {want}; memshard read {v}", peer.name);
                if let Some(enc) = allowed_foreign(peer.name, &case) {
                    let _ = write!(note, " (foreign({enc}) would be accepted)");
                }
                (Status::Mismatch, note)
            }
        };
        outcomes.push(Outcome {
            peer: peer.name,
            dir: Dir::PeerToMemshard,
            case,
            status,
            note,
        });
    }
}

// ---------------------------------------------------------------------------------------
// memshard → peer
// ---------------------------------------------------------------------------------------

/// What the peer must read of a value memshard wrote.
enum Expect {
    /// The same type and value.
    Same,
    /// The same, or this: what the peer reads of its own value of that type (its round trip is
    /// lossy; the reason names the value-vectors case that shows it).
    PeerReads(V, &'static str),
    /// The peer cannot hold the value: memshard must refuse it (non-zero exit, and the
    /// message of `ValueError::Unsupported`: "... cannot store ...").
    Refuse(&'static str),
    /// The peer holds it in a format memshard does not write: a refusal is `not-written`, a
    /// stored value must read back the same.
    MayRefuse(&'static str),
    /// The peer holds it, but only by luck of its number type: a refusal is `unsupported`, a
    /// stored value must read back the same.
    RefuseOrSame(&'static str),
}

struct WriteCase {
    case: String,
    ty: &'static str,
    arg: String,
    expect: Expect,
}

/// The first n bytes of "line 000000: the quick brown fox jumps over the lazy dog\n" ...
/// (compressible; value-vectors/README.md's text(n)).
fn text(n: usize) -> String {
    let mut s = String::with_capacity(n + 64);
    let mut i = 0;
    while s.len() < n {
        let _ = writeln!(
            s,
            "line {i:06}: the quick brown fox jumps over the lazy dog"
        );
        i += 1;
    }
    s.truncate(n);
    s
}

fn write_cases(peer: &str) -> Vec<WriteCase> {
    use Expect::*;
    let mut cases = Vec::new();
    let mut add = |case: &str, ty: &'static str, arg: &str, expect: Expect| {
        cases.push(WriteCase {
            case: case.to_owned(),
            ty,
            arg: arg.to_owned(),
            expect,
        })
    };
    add("str_ascii", "string", "hello world", Same);
    add("str_utf8", "string", UTF8, Same);
    add("str_empty", "string", "", Same);
    add("str_lf", "string", "line 1\nline 2\n", Same);
    add("bytes", "bytes", "00ff80fe7f", Same);
    // Just below, at and above the peer's default compression threshold (names: the size that
    // decides, the text's for php and spymemcached, the serialized one for dalli).
    let thresholds: Vec<(usize, usize)> = match peer {
        // memcached.compression_threshold 2000, FastLZ (php_memcached.c:1083)
        "php" => vec![(1999, 1999), (2000, 2000), (2001, 2001)],
        // compression_min_size 4096 serialized bytes (value_compressor.rb:14-19); dalli's
        // Marshal of a UTF-8 string of 256..65535 bytes is 12 bytes longer (04 08 49 22 02 LL
        // LL, text, 06 3a 06 45 54: value-vectors/dalli.json threshold_serialized_*)
        "dalli" => vec![(4095, 4083), (4096, 4084), (4097, 4085)],
        // gzip when longer than 16384 (BaseSerializingTranscoder:48, SerializingTranscoder:166)
        "spymemcached" => vec![(16383, 16383), (16384, 16384), (16385, 16385)],
        // pylibmc compresses only with min_compress_len (0 by default); node never compresses
        _ => vec![],
    };
    for (name, n) in thresholds {
        add(&format!("str_{name}"), "string", &text(n), Same);
    }
    add("str_100k", "string", &text(100_000), Same);

    add("int_neg", "int", "-42", Same);
    add("int_zero", "int", "0", Same);
    let i64_max = i64::MAX.to_string();
    let i64_min = i64::MIN.to_string();
    match peer {
        "node" => add(
            "int_max",
            "int",
            &i64_max,
            // node reads numbers with unary + (memcached.js:516-518): 2^63 - 1 has no double,
            // node would read 9223372036854775808
            Refuse("a JavaScript number cannot hold 2^63 - 1"),
        ),
        _ => add("int_max", "int", &i64_max, Same),
    }
    match peer {
        "node" => add(
            "int_min",
            "int",
            &i64_min,
            // -2^63 is a double, so node reads it exactly; but it is outside
            // Number.isSafeInteger, where memshard may refuse ints for node as a rule
            RefuseOrSame("outside JavaScript's safe integers (2^53)"),
        ),
        _ => add("int_min", "int", &i64_min, Same),
    }
    let big = match peer {
        "php" => Refuse("PHP integers are 64-bit (php_memcached.c stores a zend_long)"),
        "node" => Refuse("node stores no BigInt (JSON.stringify throws, memcached.js:924-927)"),
        "spymemcached" => MayRefuse("a BigInteger is Java-serialized (SerializingTranscoder:161)"),
        _ => Same,
    };
    add("int_2p64", "int", "18446744073709551616", big);
    let big = match peer {
        "php" => Refuse("PHP integers are 64-bit"),
        "node" => Refuse("node stores no BigInt"),
        "spymemcached" => MayRefuse("a BigInteger is Java-serialized"),
        _ => Same,
    };
    add(
        "int_neg_2p100",
        "int",
        "-1267650600228229401496703205376",
        big,
    );

    add("float_pi", "float", "3.14", Same);
    let neg_zero = match peer {
        // node writes -0 as `0` (Number.prototype.toString; value-vectors/node.json
        // number_neg_zero): memshard writing `-0` (read back exactly) or `0` are both node's
        "node" => PeerReads(
            V::Float(0.0),
            "node writes -0 as 0 (node.json number_neg_zero)",
        ),
        _ => Same,
    };
    add("float_neg_zero", "float", "-0.0", neg_zero);
    add("float_1e100", "float", "1e100", Same);
    add("float_inf", "float", "Infinity", Same);
    add("float_neg_inf", "float", "-Infinity", Same);
    add("float_nan", "float", "NaN", Same);

    for (case, arg, int) in [("bool_true", "true", "1"), ("bool_false", "false", "0")] {
        let expect = match peer {
            // flags 2 is read with the int parser (_pylibmcmodule.c:624-630; pylibmc.json
            // bool-true reads back int 1)
            "pylibmc" => PeerReads(V::Int(int.into()), "pylibmc reads its bools as ints"),
            _ => Same,
        };
        add(case, "bool", arg, expect);
    }

    let (null, collections) = match peer {
        "spymemcached" => (
            Refuse("spymemcached cannot store null (BaseSerializingTranscoder:96-98)"),
            true,
        ),
        _ => (Same, false),
    };
    add("null", "json", "null", null);
    for (case, arg) in [
        ("list", r#"[1,"two",true,null]"#),
        ("map", r#"{"a":1,"b":"two","c":[1,2]}"#),
    ] {
        let expect = if collections {
            MayRefuse("collections are Java-serialized (SerializingTranscoder:161)")
        } else {
            Same
        };
        add(case, "json", arg, expect);
    }
    cases
}

/// The value `memshard set --type ty` was given.
fn written(ty: &str, arg: &str) -> V {
    match ty {
        "string" => V::Str(arg.to_owned()),
        "bytes" => V::Bytes(arg.to_ascii_lowercase()),
        "int" => V::Int(arg.to_owned()),
        "float" => V::Float(arg.parse().expect("float case")),
        "bool" => V::Bool(arg == "true"),
        _ => match restore(&parse_line(arg).expect("json case")) {
            J::Null => V::Null,
            j => V::Json(j),
        },
    }
}

/// Whether the peer's reading is the value written. JavaScript has one number type: node reads
/// every number as a double, which is the int written only when it is exactly that integer.
fn reads_same(peer: &str, wrote: &V, read: &V) -> bool {
    match (peer, wrote, read) {
        ("node", V::Int(d), V::Float(f)) => {
            f.is_finite() && f.trunc() == *f && (*f as i128).to_string() == *d
        }
        _ => wrote == read,
    }
}

fn memshard_to_peer(peer: &Peer, addr: &str, servers: &str, outcomes: &mut Vec<Outcome>) {
    let cases = write_cases(peer.name);
    let mut stored = Vec::new();
    for c in &cases {
        let key = format!("ms:{}:{}", peer.name, c.case);
        let out = memshard(&[
            "set",
            "--servers",
            servers,
            "--codec",
            peer.codec,
            "--type",
            c.ty,
            // values such as -42 and -Infinity are not options
            "--",
            &key,
            &c.arg,
        ]);
        if out.status.success() {
            stored.push((key, c));
            continue;
        }
        let message = stderr_line(&out);
        // ValueError::Unsupported's message ("{codec} cannot store this {kind} value: ..."), not
        // any failure (a usage error is not a refusal of the type)
        let says_why = message.contains("cannot store this");
        let (status, note) = match &c.expect {
            Expect::Refuse(why) if says_why => {
                (Status::Unsupported, format!("{why}; memshard: {message}"))
            }
            Expect::RefuseOrSame(why) if says_why => {
                (Status::Unsupported, format!("{why}; memshard: {message}"))
            }
            Expect::MayRefuse(why) if says_why => {
                (Status::NotWritten, format!("{why}; memshard: {message}"))
            }
            _ => (
                Status::Refused,
                format!("memshard set --type {} refused: {message}", c.ty),
            ),
        };
        outcomes.push(Outcome {
            peer: peer.name,
            dir: Dir::MemshardToPeer,
            case: c.case.clone(),
            status,
            note,
        });
    }
    if stored.is_empty() {
        return;
    }

    let mut args = vec!["read", addr];
    args.extend(stored.iter().map(|(k, _)| k.as_str()));
    let lines: HashMap<String, J> = peer
        .run(&args)
        .into_iter()
        .map(|l| (field_str(&l, "key").unwrap_or_default(), l))
        .collect();
    for (key, c) in stored {
        let wrote = written(c.ty, &c.arg);
        let read = match lines.get(&key) {
            None => Err("the driver printed nothing".to_owned()),
            Some(l) if field(l, "miss").is_some() => Err(format!("{}: a miss", peer.name)),
            Some(l) => match field_str(l, "error") {
                Some(e) => Err(format!("{}: {e}", peer.name)),
                None => rendered(l)
                    .map(|v| (v, field_str(l, "class").unwrap_or_default()))
                    .map_err(|e| format!("driver: {e}")),
            },
        };
        let (status, note) = match (&c.expect, read) {
            (_, Err(why)) => (Status::Mismatch, format!("memshard wrote {wrote}; {why}")),
            (Expect::Refuse(why), Ok((v, class))) => (
                Status::Mismatch,
                format!(
                    "memshard stored a value the peer cannot hold ({why}); {} read {v} ({class})",
                    peer.name
                ),
            ),
            (_, Ok((v, _))) if reads_same(peer.name, &wrote, &v) => (Status::Ok, String::new()),
            (Expect::PeerReads(lossy, why), Ok((v, class))) if v == *lossy => (
                Status::PeerLossy,
                format!(
                    "memshard wrote {wrote}; {} read {v} ({class}): {why}",
                    peer.name
                ),
            ),
            (_, Ok((v, class))) => (
                Status::Mismatch,
                format!("memshard wrote {wrote}; {} read {v} ({class})", peer.name),
            ),
        };
        outcomes.push(Outcome {
            peer: peer.name,
            dir: Dir::MemshardToPeer,
            case: c.case.clone(),
            status,
            note,
        });
    }
}

/// php-memcached's `increment` on an int memshard wrote, then `get`: the server keeps the flags
/// (type 1, long), so php reads an int (value-vectors/README.md, increment cases).
fn php_increment(peer: &Peer, addr: &str, servers: &str, outcomes: &mut Vec<Outcome>) {
    let key = "ms:php:incr";
    let out = memshard(&[
        "set",
        "--servers",
        servers,
        "--codec",
        peer.codec,
        "--type",
        "int",
        "--",
        key,
        "41",
    ]);
    let (status, note) = if !out.status.success() {
        (
            Status::Refused,
            format!("memshard set --type int: {}", stderr_line(&out)),
        )
    } else {
        let lines = peer.run(&["incr", addr, key]);
        let line = lines.first().expect("php incr printed nothing");
        match (field_str(line, "error"), rendered(line)) {
            (Some(e), _) => (Status::Mismatch, format!("php: {e}")),
            (None, Ok(V::Int(n))) if n == "42" => (Status::Ok, String::new()),
            (None, got) => (
                Status::Mismatch,
                format!(
                    "memshard wrote int 41; php increment then get: {} ({})",
                    got.map_or_else(|e| e, |v| v.to_string()),
                    field_str(line, "class").unwrap_or_default()
                ),
            ),
        }
    };
    outcomes.push(Outcome {
        peer: peer.name,
        dir: Dir::MemshardToPeer,
        case: "incr".into(),
        status,
        note,
    });
}

#[test]
fn values_cross_between_memshard_and_the_real_peers_both_ways() {
    if !require("memcached") {
        return;
    }
    let tmp = TempDir::new("values");
    let peers = peers(&tmp.0);
    if peers.is_empty() {
        common::skip("values_live", "no peer is installed");
        return;
    }

    let mc = Memcached::start(IP, 0, "");
    let addr = mc.addr();
    let servers_file = tmp.0.join("servers.txt");
    std::fs::write(&servers_file, format!("{addr}\n")).expect("server list");
    let servers = path_string(&servers_file);

    let mut outcomes = Vec::new();
    for peer in &peers {
        peer_to_memshard(peer, &addr, &servers, &mut outcomes);
        memshard_to_peer(peer, &addr, &servers, &mut outcomes);
        if peer.name == "php" {
            php_increment(peer, &addr, &servers, &mut outcomes);
        }
    }

    let md = matrix(&peers, &outcomes);
    println!("{md}");
    // target/values-matrix.md, next to the binary's profile directory
    let target = Path::new(env!("CARGO_BIN_EXE_memshard"))
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    let report = format!(
        "# Values against the real peers (tests/values_live.rs)\n\n\
         Peers: {}. One memcached, on {addr}.\n\n{md}",
        peers.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
    );
    std::fs::write(target.join("values-matrix.md"), report).expect("write values-matrix.md");

    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| o.status.failed())
        .map(|o| format!("{} {:?} {}: {} {}", o.peer, o.dir, o.case, o.status, o.note))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} checks failed:\n{}",
        failed.len(),
        outcomes.len(),
        failed.join("\n")
    );
}
