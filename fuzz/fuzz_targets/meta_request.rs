//! Meta request encoder: `MetaRequest::encode` never panics, and what it accepts it writes as
//! exactly one well-formed command line (plus the data block of `ms`) carrying the key and the
//! flags in order; what memcached would refuse it refuses.
//!
//! The body is `entries/meta_request.rs`, shared with the corpus replay test
//! (`tests/fuzz_corpora.rs` in the main crate).
#![no_main]

#[path = "../entries/meta_request.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::run(data));
