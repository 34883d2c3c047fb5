//! Replays the fuzz corpora on the stable toolchain, without libFuzzer: every file of
//! `fuzz/corpus/<target>/` goes through that target, and every reproducer in
//! `fuzz/crashes-found/` through every target (a fuzz target accepts any bytes, so each must
//! pass all of them). The bodies are the fuzz targets' own: `fuzz/entries/<target>.rs`, which
//! `fuzz/fuzz_targets/<target>.rs` calls too.
//!
//! A missing or empty corpus folder, a fuzz target with no entry here, or a target that does
//! not call its entry file fails the test; nothing passes by replaying nothing.

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

// The reply target's allocation bound counts allocations through this allocator.
#[global_allocator]
static ALLOC: reply::PeakAlloc = reply::PeakAlloc;

/// A fuzz target's body: `fuzz_target!(|data| entry::run(data))`.
type Entry = fn(&[u8]);

/// Every fuzz target and its entry function.
const TARGETS: &[(&str, Entry)] = &[
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
