//! Server-list parser: never panics; every server it returns is usable; an error names a real
//! line.
//!
//! The body is `entries/server_list.rs`, shared with the corpus replay test
//! (`tests/fuzz_corpora.rs` in the main crate).
#![no_main]

#[path = "../entries/server_list.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::run(data));
