//! Replays the fuzz corpora on the stable toolchain, without libFuzzer: every file of
//! `fuzz/corpus/<target>/` goes through that target, and every reproducer in
//! `fuzz/crashes-found/` through every target (a fuzz target accepts any bytes, so each must
//! pass all of them). The bodies are the fuzz targets' own: `fuzz/entries/<target>.rs`, which
//! `fuzz/fuzz_targets/<target>.rs` calls too.
//!
//! A missing or empty corpus folder, a fuzz target with no entry here, or a target that does
//! not call its entry file fails the test; nothing passes by replaying nothing.

// The reply targets' shared allocator and bound; they reach it as `crate::common`.
#[path = "../fuzz/entries/common.rs"]
mod common;
#[path = "../fuzz/entries/meta_reply.rs"]
mod meta_reply;
#[path = "../fuzz/entries/meta_request.rs"]
mod meta_request;
#[path = "../fuzz/entries/reply.rs"]
mod reply;
#[path = "../fuzz/entries/ring.rs"]
mod ring;
#[path = "../fuzz/entries/server_list.rs"]
mod server_list;

use std::fs;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

// The reply targets' allocation bound counts allocations through this allocator.
#[global_allocator]
static ALLOC: common::PeakAlloc = common::PeakAlloc;

/// A fuzz target's body: `fuzz_target!(|data| entry::run(data))`.
type Entry = fn(&[u8]);

/// Every fuzz target and its entry function.
const TARGETS: &[(&str, Entry)] = &[
    ("meta_reply", meta_reply::run),
    ("meta_request", meta_request::run),
    ("reply", reply::run),
    ("ring", ring::run),
    ("server_list", server_list::run),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The regular files of `dir`, sorted, minus those `skip` names; panics if the folder is
/// missing or holds none.
fn inputs(dir: &Path, skip: &[&str]) -> Vec<PathBuf> {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| {
            e.unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .path()
        })
        .filter(|p| p.is_file())
        .filter(|p| !skip.iter().any(|s| p.file_name() == Some(s.as_ref())))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no inputs to replay", dir.display());
    files
}

/// Feeds every file to `run`; returns one line per input that panicked.
fn replay(target: &str, run: Entry, files: &[PathBuf]) -> Vec<String> {
    let mut failures = Vec::new();
    for file in files {
        let data = fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(&data))) {
            let msg = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            failures.push(format!("{target} <- {}: {msg}", file.display()));
        }
    }
    failures
}

/// Printed past the test harness's output capture, so that a passing run shows it too.
fn report(line: &str) {
    let _ = std::io::stderr().write_all(format!("fuzz_corpora: {line}\n").as_bytes());
}

fn replay_corpus(target: &str) {
    let &(_, run) = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .expect("a target of TARGETS");
    let dir = fuzz_dir().join("corpus").join(target);
    let files = inputs(&dir, &[]);
    let failures = replay(target, run, &files);
    assert!(
        failures.is_empty(),
        "{} of {} inputs failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    report(&format!(
        "replayed {} inputs of fuzz/corpus/{target} through {target}",
        files.len()
    ));
}

#[test]
fn meta_reply_corpus() {
    replay_corpus("meta_reply");
}

#[test]
fn meta_request_corpus() {
    replay_corpus("meta_request");
}

#[test]
fn reply_corpus() {
    replay_corpus("reply");
}

#[test]
fn ring_corpus() {
    replay_corpus("ring");
}

#[test]
fn server_list_corpus() {
    replay_corpus("server_list");
}

#[test]
fn crash_reproducers_through_every_target() {
    let files = inputs(&fuzz_dir().join("crashes-found"), &["README.md"]);
    let mut failures = Vec::new();
    for &(target, run) in TARGETS {
        failures.extend(replay(target, run, &files));
    }
    assert!(
        failures.is_empty(),
        "{} replays failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    report(&format!(
        "replayed {} inputs of fuzz/crashes-found through each of {} targets",
        files.len(),
        TARGETS.len()
    ));
}

/// Every `fuzz/fuzz_targets/<name>.rs` has an entry in `TARGETS` (and so a corpus test) and
/// includes `entries/<name>.rs`, the body replayed here; every entry has a target.
#[test]
fn every_fuzz_target_is_replayed() {
    let mut found = Vec::new();
    for file in inputs(&fuzz_dir().join("fuzz_targets"), &[]) {
        if file.extension().is_some_and(|e| e == "rs") {
            let name = file.file_stem().unwrap().to_string_lossy().into_owned();
            let src = fs::read_to_string(&file).unwrap();
            let include = format!("#[path = \"../entries/{name}.rs\"]");
            assert!(
                src.contains(&include),
                "{} does not include its entry ({include}), so the replay would not run its body",
                file.display()
            );
            found.push(name);
        }
    }
    let mut listed: Vec<String> = TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(
        found, listed,
        "fuzz/fuzz_targets/*.rs and TARGETS in tests/fuzz_corpora.rs differ: add the new \
         target's entry and its corpus test"
    );
}

/// A small deterministic generator (xorshift64*): the random runs below are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Byte strings the parsers and encoders care about, spliced in by `mutate`.
const DICT: &[&[u8]] = &[
    b"\r\n",
    b"\r",
    b"\n",
    b" ",
    b"\0",
    b"VA ",
    b"HD",
    b"EN",
    b"NF",
    b"NS",
    b"EX",
    b"MN",
    b"VALUE ",
    b"END\r\n",
    b"ERROR",
    b"CLIENT_ERROR ",
    b"SERVER_ERROR ",
    b" O",
    b" k",
    b" t-1",
    b" c",
    b" h1",
    b"0",
    b"01",
    b"4294967295",
    b"4294967296",
    b"18446744073709551614",
    b"18446744073709551615",
    b"18446744073709551616",
    b"\xff",
    b"\x80",
];

/// One libFuzzer-like mutation (or a few) of `input`.
fn mutate(rng: &mut Rng, input: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        let len = input.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(len + 1);
                input.insert(i, rng.next() as u8);
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(16));
                input.drain(i..i + n);
            }
            4 | 5 => {
                let i = rng.below(len + 1);
                let d = DICT[rng.below(DICT.len())];
                input.splice(i..i, d.iter().copied());
            }
            6 if len > 0 => {
                let (a, b) = (rng.below(len), rng.below(len));
                let (a, b) = (a.min(b), a.max(b));
                let piece = input[a..=b].to_vec();
                let i = rng.below(len + 1);
                input.splice(i..i, piece);
            }
            _ if len > 0 => input.truncate(rng.below(len)),
            _ => input.push(rng.next() as u8),
        }
    }
}

/// Runs `target` on `count` inputs: half mutated corpus seeds, half random bytes (short, or
/// built from `DICT` pieces); fails listing one input per kind of panic (its message up to the
/// first digit, quote or bracket) and how often each kind occurred.
fn random_inputs(target: &str, seed: u64) {
    let count: usize = std::env::var("FUZZ_RANDOM_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let &(_, run) = TARGETS
        .iter()
        .find(|(n, _)| *n == target)
        .expect("a target");
    let seeds: Vec<Vec<u8>> = inputs(&fuzz_dir().join("corpus").join(target), &[])
        .iter()
        .map(|p| fs::read(p).unwrap())
        .collect();
    let mut rng = Rng(seed);
    // The failures are collected below; millions of panic messages would bury them.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    // kind of panic -> (times, first input, its message)
    let mut kinds: std::collections::BTreeMap<String, (usize, Vec<u8>, String)> =
        Default::default();
    for i in 0..count {
        let mut data = match i % 4 {
            0 | 1 => seeds[rng.below(seeds.len())].clone(),
            2 => (0..rng.below(64)).map(|_| rng.next() as u8).collect(),
            _ => {
                let mut d = vec![rng.next() as u8];
                for _ in 0..rng.below(12) {
                    d.extend_from_slice(DICT[rng.below(DICT.len())]);
                }
                d
            }
        };
        mutate(&mut rng, &mut data);
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(&data))) {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let kind: String = msg
                .chars()
                .take_while(|c| !c.is_ascii_digit() && !matches!(c, '"' | '[' | '('))
                .collect();
            kinds.entry(kind).or_insert((0, data, msg)).0 += 1;
        }
    }
    std::panic::set_hook(hook);
    let failed: usize = kinds.values().map(|k| k.0).sum();
    report(&format!(
        "{target}: {count} random and mutated inputs, {failed} panicked in {} ways",
        kinds.len()
    ));
    let lines: Vec<String> = kinds
        .values()
        .map(|(n, data, msg)| format!("{n} times, e.g. {data:?}: {msg}"))
        .collect();
    assert!(
        kinds.is_empty(),
        "{failed} of {count} inputs panicked through {target}:\n{}",
        lines.join("\n")
    );
}

// Not part of the default run (the corpora are): a cheap stand-in for libFuzzer where
// cargo-fuzz is missing. `FUZZ_RANDOM_INPUTS=2000000 cargo test --release --test fuzz_corpora
// -- --ignored random_inputs` runs two million inputs per target (default 20 000).
#[test]
#[ignore]
fn random_inputs_meta_reply() {
    random_inputs("meta_reply", 0x9E37_79B9_7F4A_7C15);
}

#[test]
#[ignore]
fn random_inputs_meta_request() {
    random_inputs("meta_request", 0xD1B5_4A32_D192_ED03);
}

#[test]
#[ignore]
fn random_inputs_reply() {
    random_inputs("reply", 0x94D0_49BB_1331_11EB);
}
