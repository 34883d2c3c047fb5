//! Ring: build every flavour over small fuzzed server lists and route fuzzed keys; never
//! panics, routes stay in range, `distinct_servers` starts at the owner and never repeats.
//!
//! The body is `entries/ring.rs`, shared with the corpus replay test (`tests/fuzz_corpora.rs`
//! in the main crate).
#![no_main]

#[path = "../entries/ring.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::run(data));
