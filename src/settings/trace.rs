//! What the trace spans of commands hold (feature `tracing`): their level, and whether and how
//! they name the keys.

/// Whether the span of a command names its keys, in `db.query.text` (`get user:42`). Keys are
/// often personal data (a user id, an e-mail address) that a tracing backend should not
/// receive, so the default is [`TraceKeys::Off`].
///
/// A command of many keys names the first [`TRACE_KEYS_SHOWN`] and counts the others
/// (`get_multi a b c d … (+96 more)`); each key is cut at 250 bytes (memcached's limit), so the
/// text stays short whatever the call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceKeys {
    /// No key in any span: no `db.query.text`.
    #[default]
    Off,
    /// The keys as sent (with the client's prefix), bytes that are not UTF-8 replaced by `�`.
    Full,
    /// Each key replaced by a stable hash, `#` and 16 hex digits (FNV-1a 64 of the key as sent):
    /// the same key gives the same text in every process and release, so a hot or slow key
    /// can be followed across traces without its text leaving the process. Not a secret: a
    /// key that can be guessed can be hashed and compared.
    Hashed,
}

/// How many keys `db.query.text` names for a command of many keys.
pub const TRACE_KEYS_SHOWN: usize = 4;

/// The span settings a builder collected.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Trace {
    /// The level of every command's spans.
    pub(crate) level: tracing::Level,
    pub(crate) keys: TraceKeys,
}

impl Default for Trace {
    fn default() -> Self {
        Trace {
            level: tracing::Level::INFO,
            keys: TraceKeys::Off,
        }
    }
}
