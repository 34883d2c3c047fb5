//! Reply parser: `parse_reply` and `parse_retrieval` never panic, every `Done` stays inside the
//! input, and nothing allocates in proportion to a length the server merely claims.
//!
//! The body is `entries/reply.rs`, shared with the corpus replay test (`tests/fuzz_corpora.rs`
//! in the main crate).
#![no_main]

#[path = "../entries/common.rs"]
mod common;
#[path = "../entries/reply.rs"]
mod entry;

#[global_allocator]
static ALLOC: common::PeakAlloc = common::PeakAlloc;

libfuzzer_sys::fuzz_target!(|input: &[u8]| entry::run(input));
