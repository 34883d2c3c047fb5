//! The trace spans of commands (feature `tracing`), filled as OpenTelemetry's database client
//! spans so that `tracing-opentelemetry` exports them as such; nothing without the feature.
//!
//! A command of one key is one span, its request to the key's server. A command of many keys
//! or servers (`get_multi`, `set_multi`, `delete_multi`, `set_multi_noreply`, `version`,
//! `flush_all`, `stats`, `verbosity`) is a parent span ([`command`]) with a child span per
//! server ([`request`]), each the child of the span current where it is made: the blocking
//! client enters the parent (and carries it to its fan-out threads), the async client runs
//! the command's future in it.
//!
//! Every field is declared when the span is made (`Empty` until recorded) because `tracing`
//! records only declared fields. Nothing is formatted or counted for a span no subscriber
//! wants: each step checks [`tracing::Span::is_disabled`] first.
#![cfg_attr(not(feature = "tracing"), allow(unused_variables))]

use crate::error::Error;
use crate::servers::Server;
use crate::settings::Settings;

/// A span of a command or of one of its requests (nothing without the `tracing` feature).
pub(crate) struct Span {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

/// The guard of an entered [`Span`].
pub(crate) struct Entered<'a> {
    #[cfg(feature = "tracing")]
    _entered: tracing::span::Entered<'a>,
    #[cfg(not(feature = "tracing"))]
    _span: std::marker::PhantomData<&'a Span>,
}

/// The keys of a command or request, as its span names them.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) trait Keys {
    fn count(&self) -> usize;
    /// The `i`th key, if there is one.
    fn key(&self, i: usize) -> Option<&[u8]>;
}

/// The keys of a multi-key read or delete.
pub(crate) struct Listed<'a, K>(pub(crate) &'a [K]);

impl<K: AsRef<[u8]>> Keys for Listed<'_, K> {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn key(&self, i: usize) -> Option<&[u8]> {
        self.0.get(i).map(AsRef::as_ref)
    }
}

/// The keys of a multi-key write's items.
pub(crate) struct Paired<'a, K, V>(pub(crate) &'a [(K, V)]);

impl<K: AsRef<[u8]>, V> Keys for Paired<'_, K, V> {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn key(&self, i: usize) -> Option<&[u8]> {
        self.0.get(i).map(|(k, _)| k.as_ref())
    }
}

/// A command without keys (`version`, `flush_all`, `stats`).
pub(crate) struct NoKeys;

impl Keys for NoKeys {
    fn count(&self) -> usize {
        0
    }
    fn key(&self, _: usize) -> Option<&[u8]> {
        None
    }
}

/// The caller's span and subscriber, carried to a thread of the blocking client's fan-out so
/// that the spans made there are children of the command's span, recorded by the same
/// subscriber (which may be the caller thread's own, `tracing::subscriber::with_default`).
pub(crate) struct Carried {
    #[cfg(feature = "tracing")]
    here: Option<(tracing::Dispatch, tracing::Span)>,
}

/// The guard of [`Carried::enter`].
pub(crate) struct InCarried<'a> {
    // dropped in this order: the span left before its subscriber stops being the default
    #[cfg(feature = "tracing")]
    _entered: Option<(
        tracing::span::Entered<'a>,
        tracing::dispatcher::DefaultGuard,
    )>,
    #[cfg(not(feature = "tracing"))]
    _carried: std::marker::PhantomData<&'a Carried>,
}

impl Carried {
    /// The caller's subscriber and current span (nothing to carry without a subscriber).
    #[inline]
    pub(crate) fn here() -> Carried {
        Carried {
            #[cfg(feature = "tracing")]
            // not `Span::current()` inside `get_default`'s closure: nested, it sees no subscriber
            here: tracing::dispatcher::get_default(|d| {
                (!d.is::<tracing::subscriber::NoSubscriber>()).then(|| d.clone())
            })
            .map(|d| (d, tracing::Span::current())),
        }
    }

    /// Make the carried subscriber this thread's default and enter the carried span, until
    /// the guard drops.
    #[inline]
    pub(crate) fn enter(&self) -> InCarried<'_> {
        InCarried {
            #[cfg(feature = "tracing")]
            _entered: self.here.as_ref().map(|(dispatch, span)| {
                let default = tracing::dispatcher::set_default(dispatch);
                (span.enter(), default)
            }),
            #[cfg(not(feature = "tracing"))]
            _carried: std::marker::PhantomData,
        }
    }
}

/// What a parent span learns from its requests as they end: hits and misses summed, and the
/// kind of the first failure.
pub(crate) struct Tally {
    #[cfg(feature = "tracing")]
    counted: Option<(usize, usize, Option<&'static str>)>,
}

impl Tally {
    /// One request ended with `err`; `hits` tells its hits and misses (asked only when the
    /// span is recorded: it counts).
    #[inline]
    pub(crate) fn add(
        &mut self,
        hits: impl FnOnce() -> Option<(usize, usize)>,
        err: Option<&Error>,
    ) {
        #[cfg(feature = "tracing")]
        if let Some((h, m, first)) = &mut self.counted {
            match err {
                Some(e) => *first = first.or(Some(super::kind(e))),
                None => {
                    if let Some((hits, misses)) = hits() {
                        *h += hits;
                        *m += misses;
                    }
                }
            }
        }
    }
}

impl Span {
    /// Enter the span until the guard drops (not across an `.await`).
    #[inline]
    pub(crate) fn enter(&self) -> Entered<'_> {
        Entered {
            #[cfg(feature = "tracing")]
            _entered: self.span.enter(),
            #[cfg(not(feature = "tracing"))]
            _span: std::marker::PhantomData,
        }
    }

    /// `fut` run inside the span.
    #[cfg(feature = "tracing")]
    #[inline]
    pub(crate) fn run<F: std::future::Future>(
        &self,
        fut: F,
    ) -> tracing::instrument::Instrumented<F> {
        use tracing::Instrument;
        fut.instrument(self.span.clone())
    }

    /// `fut` itself: there is no span. Not an `async fn` wrapping `fut.await`: that future
    /// would hold `fut` and copy it in (a request's future is several KB: 280 instructions of
    /// memcpy per async get, callgrind).
    #[cfg(not(feature = "tracing"))]
    #[inline]
    pub(crate) fn run<F: std::future::Future>(&self, fut: F) -> F {
        fut
    }

    /// The request or command ended: `err` as `error.type` and an error status, or the hits
    /// and misses `hits` tells (asked only when the span is recorded).
    #[inline]
    pub(crate) fn ended(&self, hits: impl FnOnce() -> Option<(usize, usize)>, err: Option<&Error>) {
        let mut tally = self.tally();
        tally.add(hits, err);
        self.close(tally);
    }

    /// A tally for the requests of this command.
    #[inline]
    pub(crate) fn tally(&self) -> Tally {
        Tally {
            #[cfg(feature = "tracing")]
            counted: (!self.span.is_disabled()).then_some((0, 0, None)),
        }
    }

    /// Record what `tally` counted: the first failure's kind, or the hits and misses.
    #[inline]
    pub(crate) fn close(&self, tally: Tally) {
        #[cfg(feature = "tracing")]
        match tally.counted {
            Some((_, _, Some(kind))) => {
                self.span.record("error.type", kind);
                self.span.record("otel.status_code", "ERROR");
            }
            Some((hits, misses, None)) if hits + misses > 0 => {
                self.span.record("db.memcached.hit_count", hits);
                self.span.record("db.memcached.miss_count", misses);
            }
            _ => {}
        }
    }
}

/// A span named `memshard` at `$level` (a constant, as `tracing` needs) with every field of a
/// database client span declared.
#[cfg(feature = "tracing")]
macro_rules! db_span {
    ($level:expr, $operation:expr) => {
        tracing::span!(
            target: "memshard",
            $level,
            "memshard",
            otel.name = $operation,
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            db.system.name = "memcached",
            db.operation.name = $operation,
            db.operation.batch.size = tracing::field::Empty,
            db.query.text = tracing::field::Empty,
            db.memcached.key_count = tracing::field::Empty,
            db.memcached.hit_count = tracing::field::Empty,
            db.memcached.miss_count = tracing::field::Empty,
            server.address = tracing::field::Empty,
            server.port = tracing::field::Empty,
            error.type = tracing::field::Empty,
        )
    };
}

/// A span of `operation` at `level`, with nothing recorded yet.
#[cfg(feature = "tracing")]
fn new(level: tracing::Level, operation: &'static str) -> tracing::Span {
    use tracing::Level;
    match level {
        Level::ERROR => db_span!(Level::ERROR, operation),
        Level::WARN => db_span!(Level::WARN, operation),
        Level::INFO => db_span!(Level::INFO, operation),
        Level::DEBUG => db_span!(Level::DEBUG, operation),
        _ => db_span!(Level::TRACE, operation),
    }
}

/// The span of a command of many keys or servers: the parent of its requests' spans.
#[inline]
pub(crate) fn command(settings: &Settings, operation: &'static str, keys: &impl Keys) -> Span {
    #[cfg(feature = "tracing")]
    {
        let span = new(settings.trace.level, operation);
        if !span.is_disabled() {
            describe(&span, settings, operation, keys);
        }
        Span { span }
    }
    #[cfg(not(feature = "tracing"))]
    Span {}
}

/// The span of one request of `operation` to `server`: a command of one key, or a child of
/// the command's span (the current span) for one of many.
#[inline]
pub(crate) fn request(
    settings: &Settings,
    operation: &'static str,
    server: &Server,
    keys: &impl Keys,
) -> Span {
    #[cfg(feature = "tracing")]
    {
        let span = new(settings.trace.level, operation);
        if !span.is_disabled() {
            let (address, port) = address(server);
            span.record("server.address", address);
            if let Some(port) = port {
                span.record("server.port", port);
            }
            describe(&span, settings, operation, keys);
        }
        Span { span }
    }
    #[cfg(not(feature = "tracing"))]
    Span {}
}

/// Record what the keys tell: how many, and (when the settings say so) the query text.
#[cfg(feature = "tracing")]
fn describe(span: &tracing::Span, settings: &Settings, operation: &str, keys: &impl Keys) {
    let count = keys.count();
    if count >= 1 {
        span.record("db.memcached.key_count", count);
    }
    if count >= 2 {
        span.record("db.operation.batch.size", count);
    }
    if let Some(text) = query_text(settings.trace.keys, operation, keys) {
        span.record("db.query.text", text.as_str());
    }
}

/// `server.address` and `server.port`: the host as configured (IPv6 without brackets, a name
/// unresolved), and its port unless the host is a Unix socket's path.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) fn address(server: &Server) -> (&str, Option<u16>) {
    let unix = server.host.starts_with('/');
    (&server.host, (!unix).then_some(server.port))
}

/// The longest key memcached accepts: longer ones (refused before they are sent) are cut
/// there in the text.
#[cfg(feature = "tracing")]
const KEY_MAX: usize = 250;

/// `db.query.text` under `policy`: the operation and the first keys (all of them up to
/// [`TRACE_KEYS_SHOWN`](crate::settings::TRACE_KEYS_SHOWN)), the others counted; `None` when
/// keys are not traced or there are none.
#[cfg(feature = "tracing")]
pub(crate) fn query_text(
    policy: crate::settings::TraceKeys,
    operation: &str,
    keys: &impl Keys,
) -> Option<String> {
    use crate::settings::{TRACE_KEYS_SHOWN, TraceKeys};
    use std::fmt::Write;
    let count = keys.count();
    if policy == TraceKeys::Off || count == 0 {
        return None;
    }
    let mut text = String::from(operation);
    for k in (0..count.min(TRACE_KEYS_SHOWN)).filter_map(|i| keys.key(i)) {
        text.push(' ');
        let k = &k[..k.len().min(KEY_MAX)];
        match policy {
            TraceKeys::Hashed => {
                let _ = write!(text, "#{:016x}", fnv1a(k));
            }
            _ => text.push_str(&String::from_utf8_lossy(k)),
        }
    }
    if count > TRACE_KEYS_SHOWN {
        let _ = write!(text, " … (+{} more)", count - TRACE_KEYS_SHOWN);
    }
    Some(text)
}

/// FNV-1a, 64 bits: stable across processes, platforms and releases (unlike std's hasher).
#[cfg(feature = "tracing")]
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers::parse_server_list;

    fn split(list: &str) -> (String, Option<u16>) {
        let servers = parse_server_list(list).unwrap();
        let (host, port) = address(&servers[0]);
        (host.to_string(), port)
    }

    #[test]
    fn the_address_splits_into_host_and_port() {
        assert_eq!(split("[::1]:11211"), ("::1".into(), Some(11211)));
        assert_eq!(
            split("[2001:db8::7]:11300 2"),
            ("2001:db8::7".into(), Some(11300))
        );
        assert_eq!(
            split("cache-1.example:11212"),
            ("cache-1.example".into(), Some(11212))
        );
        assert_eq!(split("10.0.0.5:11211:3"), ("10.0.0.5".into(), Some(11211)));
        assert_eq!(
            split("cache-2.example"),
            ("cache-2.example".into(), Some(11211))
        );
        assert_eq!(
            split("/var/run/memcached.sock"),
            ("/var/run/memcached.sock".into(), None)
        );
        let v6 = Server::new("fe80::1", 11211);
        assert_eq!(address(&v6), ("fe80::1", Some(11211)));
    }

    #[cfg(feature = "tracing")]
    #[test]
    fn the_query_text_names_keys_only_when_asked_and_stays_short() {
        use crate::settings::TraceKeys::{Full, Off};
        let one = Listed(&["user:42"]);
        assert_eq!(query_text(Off, "get", &one), None);
        assert_eq!(
            query_text(Full, "get", &one).as_deref(),
            Some("get user:42")
        );
        assert_eq!(query_text(Full, "version", &NoKeys), None);

        let many: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
        assert_eq!(
            query_text(Full, "get_multi", &Listed(&many)).as_deref(),
            Some("get_multi k0 k1 k2 k3 … (+96 more)")
        );
        let items = [("a", "1"), ("b", "2")];
        assert_eq!(
            query_text(Full, "set_multi", &Paired(&items)).as_deref(),
            Some("set_multi a b")
        );

        let long = vec![b'x'; 10_000];
        let longs = [&long[..]; 50];
        let text = query_text(Full, "get_multi", &Listed(&longs)).unwrap();
        assert!(text.len() < 4 * 251 + 40, "{}", text.len());

        // not UTF-8: replaced, never a panic
        let bin: [&[u8]; 1] = [b"\xff\xfe"];
        assert_eq!(
            query_text(Full, "get", &Listed(&bin)).as_deref(),
            Some("get \u{fffd}\u{fffd}")
        );
    }

    /// Exactly as many keys as are shown: all of them, nothing counted after.
    #[cfg(feature = "tracing")]
    #[test]
    fn the_query_text_counts_only_the_keys_not_shown() {
        use crate::settings::{TRACE_KEYS_SHOWN, TraceKeys::Full};
        let keys: Vec<String> = (0..TRACE_KEYS_SHOWN + 1).map(|i| format!("k{i}")).collect();
        let shown = query_text(Full, "get_multi", &Listed(&keys[..TRACE_KEYS_SHOWN])).unwrap();
        assert!(!shown.contains("more"), "{shown}");
        assert_eq!(shown.split(' ').count(), 1 + TRACE_KEYS_SHOWN, "{shown}");
        let one_more = query_text(Full, "get_multi", &Listed(&keys)).unwrap();
        assert!(one_more.ends_with(" … (+1 more)"), "{one_more}");
    }

    #[cfg(feature = "tracing")]
    #[test]
    fn a_hashed_key_is_stable_and_never_the_key() {
        use crate::settings::TraceKeys::Hashed;
        let text = query_text(Hashed, "get", &Listed(&["user:42"])).unwrap();
        // the text must not change between releases: a fixed value
        assert_eq!(text, "get #6c151ea4dcd221c2");
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert!(!text.contains("user"));
        assert_eq!(
            query_text(Hashed, "get", &Listed(&["user:42"])).unwrap(),
            text
        );
        assert_ne!(
            query_text(Hashed, "get", &Listed(&["user:43"])).unwrap(),
            text
        );
        let many = ["a", "b", "c", "d", "e"];
        let text = query_text(Hashed, "delete_multi", &Listed(&many)).unwrap();
        assert!(
            text.starts_with("delete_multi #") && text.ends_with(" … (+1 more)"),
            "{text}"
        );
        assert_eq!(text.matches('#').count(), 4);
    }

    /// Every field recorded after a span's creation, by name.
    #[cfg(feature = "tracing")]
    #[derive(Clone, Default)]
    struct Recorded(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    #[cfg(feature = "tracing")]
    impl tracing::Subscriber for Recorded {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
            struct Names<'a>(&'a mut Vec<String>);
            impl tracing::field::Visit for Names<'_> {
                fn record_debug(&mut self, f: &tracing::field::Field, _: &dyn std::fmt::Debug) {
                    self.0.push(f.name().to_string());
                }
            }
            let mut got = self.0.lock().unwrap_or_else(|p| p.into_inner());
            values.record(&mut Names(&mut got));
        }
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, _: &tracing::Event<'_>) {}
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    /// The span is made at the level asked for, each of the five.
    #[cfg(feature = "tracing")]
    #[test]
    fn the_span_has_the_level_asked_for() {
        use tracing::Level;
        tracing::subscriber::with_default(Recorded::default(), || {
            for level in [
                Level::ERROR,
                Level::WARN,
                Level::INFO,
                Level::DEBUG,
                Level::TRACE,
            ] {
                let span = new(level, "get");
                assert_eq!(span.metadata().map(|m| *m.level()), Some(level));
            }
        });
    }

    /// A parent's hit and miss counts are recorded only when it asked for keys: a write's
    /// span carries none; its first failure's kind with an error status.
    #[cfg(feature = "tracing")]
    #[test]
    fn a_parent_records_counts_only_for_reads_and_the_first_failure() {
        let recorded = |counted| {
            let r = Recorded::default();
            tracing::subscriber::with_default(r.clone(), || {
                let span = Span {
                    span: new(tracing::Level::INFO, "set_multi"),
                };
                span.close(Tally { counted });
            });
            r.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
        };
        assert_eq!(recorded(Some((0, 0, None))), Vec::<String>::new());
        assert_eq!(
            recorded(Some((0, 1, None))),
            ["db.memcached.hit_count", "db.memcached.miss_count"]
        );
        assert_eq!(
            recorded(Some((2, 1, Some("timeout")))),
            ["error.type", "otel.status_code"]
        );
        assert_eq!(recorded(None), Vec::<String>::new());
    }
}
