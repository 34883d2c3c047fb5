//! Meta reply parser: `parse_meta` never panics, every `Done` stays inside the input, its
//! token ranges are the tokens, and nothing allocates in proportion to a claimed `VA` length.
//!
//! The body is `entries/meta_reply.rs`, shared with the corpus replay test
//! (`tests/fuzz_corpora.rs` in the main crate).
#![no_main]

#[path = "../entries/common.rs"]
mod common;
#[path = "../entries/meta_reply.rs"]
mod entry;

#[global_allocator]
static ALLOC: common::PeakAlloc = common::PeakAlloc;

libfuzzer_sys::fuzz_target!(|input: &[u8]| entry::run(input));
