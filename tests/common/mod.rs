//! Shared test helpers: where the vectors live, and running the `memshard` binary.
#![allow(dead_code)]

pub mod proxy;
pub mod servers;

use std::path::PathBuf;

/// The upstream projects' own test tables, kept in the repository
/// (`compat-vectors/published/`, sources and licences in its README).
pub fn published_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("compat-vectors/published")
}

pub fn published_json(rel: &str) -> serde_json::Value {
    let p = published_dir().join(rel);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub fn published_text(rel: &str) -> String {
    let p = published_dir().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A value that names its key and the version written, padded by the version: a value read
/// back for another key, or a version never written, is caught by [`decode`].
pub fn value_for(key: &str, version: u64) -> String {
    format!("{key}|{version}|{}", "p".repeat((version % 64) as usize))
}

/// The key and version a [`value_for`] value encodes.
pub fn decode(v: &[u8]) -> Option<(String, u64)> {
    let s = std::str::from_utf8(v).ok()?;
    let mut parts = s.splitn(3, '|');
    let key = parts.next()?.to_string();
    let version = parts.next()?.parse().ok()?;
    let pad = parts.next()?;
    (pad.len() == (version % 64) as usize && pad.bytes().all(|b| b == b'p'))
        .then_some((key, version))
}
