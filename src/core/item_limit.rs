//! Each server's item size limit, learned from `stats settings` the first time a value might
//! not fit, so that a value that cannot fit is refused before a byte of it is sent.

use crate::error::Error;
use std::sync::atomic::{AtomicU64, Ordering};

/// memcached's smallest `-I` (`ITEM_SIZE_MAX_LOWER_LIMIT`, memcached.c): an item no larger
/// fits every server, and the client never asks.
pub(crate) const SMALLEST_LIMIT: usize = 1024;

/// The bytes memcached 1.6 needs for an item (`item_make_header`, items.c): a 48-byte header,
/// 8 for the CAS unique unless `-C`, the key and its NUL, the value and its `\r\n`, and 4 for
/// non-zero flags. Measured on memcached 1.6.18 at `-I 1m` and `2m`: the largest value stored
/// under a 1-byte key is 1,048,516 bytes (flags 0) and 1,048,512 (flags 1); under a 250-byte
/// key, 1,048,267.
pub(crate) fn item_size(key: usize, value: usize, flags: u32, cas: bool) -> usize {
    48 + if cas { 8 } else { 0 } + key + 1 + value + 2 + if flags != 0 { 4 } else { 0 }
}

/// What the client knows of one server's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Known {
    /// Not asked yet (or forgotten after the server refused an item).
    Unknown,
    /// The server does not report one (a proxy, or no `item_size_max` in its settings).
    Unreported,
    /// `item_size_max` bytes, and whether items carry a CAS unique (`cas_enabled`).
    Limit { bytes: usize, cas: bool },
}

/// One server's [`Known`], shared by its requests: 0 unknown, `u64::MAX` unreported, else
/// the limit shifted left once with the CAS bit below it.
#[derive(Debug, Default)]
pub(crate) struct ItemLimit(AtomicU64);

impl ItemLimit {
    pub(crate) fn known(&self) -> Known {
        match self.0.load(Ordering::Relaxed) {
            0 => Known::Unknown,
            u64::MAX => Known::Unreported,
            v => Known::Limit {
                bytes: usize::try_from(v >> 1).unwrap_or(usize::MAX),
                cas: v & 1 == 1,
            },
        }
    }

    /// Learn the limit from a `stats settings` reply, and return it.
    pub(crate) fn learn(&self, settings: &[(String, String)]) -> Known {
        let get = |name: &str| {
            settings
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let bytes = get("item_size_max").and_then(|v| v.parse::<u64>().ok());
        // memcached 1.6 says "yes"/"no"; a server that says nothing keeps its CAS bytes
        let cas = get("cas_enabled") != Some("no");
        let v = match bytes {
            Some(b) if b > 0 && b < (u64::MAX >> 1) => (b << 1) | u64::from(cas),
            _ => u64::MAX,
        };
        self.0.store(v, Ordering::Relaxed);
        self.known()
    }

    /// Forget the limit: the server refused an item the client thought would fit (it may have
    /// restarted with a smaller `-I`); the next large value asks again.
    pub(crate) fn forget(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// Whether a value of `len` bytes under `wire` with `flags` may need the server's limit to
/// be known before it is sent.
pub(crate) fn worth_asking(wire: usize, len: usize, flags: u32) -> bool {
    item_size(wire, len, flags, true) > SMALLEST_LIMIT
}

/// `Err(ItemTooLarge)` naming `server`, the length and the limit, when `known` says the item
/// cannot fit.
pub(crate) fn check(
    known: Known,
    server: &str,
    (wire, len, flags): (usize, usize, u32),
) -> Result<(), Error> {
    match known {
        Known::Limit { bytes, cas } if item_size(wire, len, flags, cas) > bytes => {
            Err(Error::ItemTooLarge {
                server: server.to_owned(),
                len: Some(len),
                limit: Some(bytes),
            })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// The sizes measured on memcached 1.6.18 at `-I 1m` sit exactly on the limit.
    #[test]
    fn the_measured_largest_values_fit_and_one_byte_more_does_not() {
        let limit = Known::Limit {
            bytes: 1_048_576,
            cas: true,
        };
        for (key, largest, flags) in [
            (1, 1_048_516, 0),
            (1, 1_048_512, 1),
            (250, 1_048_267, 0),
            (250, 1_048_263, 7),
        ] {
            assert!(check(limit, "s", (key, largest, flags)).is_ok());
            let refused = check(limit, "s:1", (key, largest + 1, flags));
            assert!(
                matches!(&refused, Err(Error::ItemTooLarge { server, len: Some(n), limit: Some(1_048_576) }) if server == "s:1" && *n == largest + 1),
                "{refused:?}"
            );
        }
        // without CAS (-C) items are 8 bytes smaller
        let no_cas = Known::Limit {
            bytes: 1_048_576,
            cas: false,
        };
        assert!(check(no_cas, "s", (1, 1_048_524, 0)).is_ok());
        assert!(check(no_cas, "s", (1, 1_048_525, 0)).is_err());
        assert!(check(Known::Unknown, "s", (1, usize::MAX / 2, 0)).is_ok());
        assert!(check(Known::Unreported, "s", (1, usize::MAX / 2, 0)).is_ok());
    }

    #[test]
    fn the_limit_is_learned_from_stats_settings_and_forgotten() {
        let l = ItemLimit::default();
        assert_eq!(l.known(), Known::Unknown);
        let got = l.learn(&settings(&[
            ("maxbytes", "67108864"),
            ("item_size_max", "2097152"),
            ("cas_enabled", "no"),
        ]));
        assert_eq!(
            got,
            Known::Limit {
                bytes: 2_097_152,
                cas: false
            }
        );
        assert_eq!(l.known(), got);
        assert_eq!(
            l.learn(&settings(&[("item_size_max", "1048576")])),
            Known::Limit {
                bytes: 1_048_576,
                cas: true
            }
        );
        l.forget();
        assert_eq!(l.known(), Known::Unknown);
        // a limit that does not fit beside the CAS bit is no limit the client can use
        let huge = (1u64 << 63).to_string();
        for silent in [
            settings(&[]),
            settings(&[("item_size_max", "lots")]),
            settings(&[("item_size_max", "0")]),
            settings(&[("item_size_max", huge.as_str())]),
        ] {
            assert_eq!(l.learn(&silent), Known::Unreported);
        }
    }

    #[test]
    fn only_an_item_over_the_smallest_limit_asks() {
        // 48 + 8 + (1 + 1) + 964 + 2 = 1024
        assert_eq!(item_size(1, 964, 0, true), SMALLEST_LIMIT);
        assert!(!worth_asking(1, 964, 0));
        assert!(worth_asking(1, 965, 0));
        assert!(worth_asking(1, 961, 1));
        assert!(!worth_asking(1, 960, 1));
        assert_eq!(item_size(1, 964, 0, false), SMALLEST_LIMIT - 8);
    }
}
