//! Reading a route file's YAML values: each reader names the key it read in its error, so a
//! misspelt or mistyped setting is said, never replaced by a default.

use crate::Expiry;
use crate::error::{Error, Result};
use std::time::Duration;
use yaml_rust2::Yaml;

pub(crate) fn bad<T>(msg: impl std::fmt::Display) -> Result<T> {
    Err(Error::Config(format!("route file: {msg}")))
}

/// A value as written, for messages.
pub(crate) fn shown(y: &Yaml) -> String {
    match y {
        Yaml::String(s) => format!("{s:?}"),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Real(r) => r.clone(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Null | Yaml::BadValue => "nothing".into(),
        Yaml::Array(_) => "a list".into(),
        Yaml::Hash(_) => "a mapping".into(),
        Yaml::Alias(_) => "an alias".into(),
    }
}

/// The string at `key`, or `None` when absent.
pub(crate) fn string(y: &Yaml, key: &str) -> Result<Option<String>> {
    match y {
        Yaml::BadValue | Yaml::Null => Ok(None),
        Yaml::String(s) => Ok(Some(s.clone())),
        // `prefix: 42`, `hash_tag: {}` read as other types by YAML; the text is meant
        Yaml::Integer(i) => Ok(Some(i.to_string())),
        other => bad(format!("`{key}` is {}: give a string", shown(other))),
    }
}

/// Whole seconds (or milliseconds) at `key`: a non-negative integer.
pub(crate) fn count(y: &Yaml, key: &str) -> Result<Option<u64>> {
    match y {
        Yaml::BadValue | Yaml::Null => Ok(None),
        Yaml::Integer(i) => u64::try_from(*i)
            .map(Some)
            .or_else(|_| bad(format!("`{key}` is {i}: give a whole number, 0 or more"))),
        other => bad(format!("`{key}` is {}: give a whole number", shown(other))),
    }
}

pub(crate) fn flag(y: &Yaml, key: &str) -> Result<Option<bool>> {
    match y {
        Yaml::BadValue | Yaml::Null => Ok(None),
        Yaml::Boolean(b) => Ok(Some(*b)),
        other => bad(format!("`{key}` is {}: give true or false", shown(other))),
    }
}

/// The keys of mapping `h` not in `known`, as an error naming the first.
pub(crate) fn unknown_keys(h: &yaml_rust2::yaml::Hash, known: &[&str], at: &str) -> Result<()> {
    for k in h.keys() {
        let name = k.as_str().map_or_else(|| shown(k), str::to_string);
        if !known.contains(&name.as_str()) {
            return bad(format!(
                "unknown key `{at}{name}`: {}known keys here are {}",
                if at.is_empty() {
                    "a route's pools are new/old (warm_up, migrate), main/gutter (gutter) or a/b (mirror); "
                } else {
                    ""
                },
                known.join(", ")
            ));
        }
    }
    Ok(())
}

/// `backfill_ttl`: required, seconds above 0 or `never`.
pub(crate) fn backfill(doc: &Yaml, route: &str) -> Result<Expiry> {
    match &doc["backfill_ttl"] {
        Yaml::String(s) if s == "never" => Ok(Expiry::NEVER),
        Yaml::BadValue | Yaml::Null => bad(format!(
            "route {route} needs `backfill_ttl`: the seconds a value copied from the old pool lives in the new one (text memcached cannot tell what is left of its TTL), or `never`"
        )),
        y => match count(y, "backfill_ttl")? {
            Some(0) | None => bad(
                "`backfill_ttl` is 0: give seconds above 0, or `never` for values that never expire",
            ),
            Some(s) => Ok(Expiry::after(Duration::from_secs(s))),
        },
    }
}

/// A required number of seconds at `key`.
pub(crate) fn seconds(doc: &Yaml, key: &str, route: &str, what: &str) -> Result<Duration> {
    match count(&doc[key], key)? {
        Some(s) => Ok(Duration::from_secs(s)),
        None => bad(format!("route {route} needs `{key}`: {what}")),
    }
}
