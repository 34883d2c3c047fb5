//! The lease loop of `get_or_compute` (stampede protection), written once for both clients: a
//! sans-IO [`Leasing`] decides after each lookup whether to serve, wait, give up or recompute,
//! and [`Won::finish`] whether the recomputed value is stored or the lease given back; the
//! flow [`get_or_compute`] only sends what they ask over its [`Transport`].

use super::aside;
use super::exchange::{Lookup, MetaOne};
use super::keys::KeyRules;
use super::transport::Transport;
use crate::Expiry;
use crate::error::{Error, Result};
use crate::observe;
use crate::outcome::Item;
use crate::settings::stampede::{Stampede, Waiting};
use std::future::{Future, Ready, ready};
use std::time::Duration;

/// The error a failing recompute returns.
pub(crate) type RecomputeError = Box<dyn std::error::Error + Send + Sync>;

/// A recomputed value as it is stored: bytes, flags, and whether it says "no such value"
/// (kept for the negative TTL instead of the caller's expiry).
pub(crate) type Stored = (Vec<u8>, u32, bool);

/// What a caller does after a lookup.
#[derive(Debug)]
pub(crate) enum Then {
    /// Serve this value (fresh, or stale while another caller recomputes).
    Serve(Item),
    /// Another caller recomputes and there is nothing to serve: look again after this pause.
    Pause(Duration),
    /// The wait for another caller's value is over: fail with this `LeaseBusy`.
    GiveUp(Error),
    /// This caller holds the lease: recompute, then [`Won::finish`].
    Recompute(Won),
}

/// A lease this caller won.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Won {
    /// The CAS the store must carry (the lease).
    pub(crate) cas: u64,
    /// The key had no value: memcached holds an empty placeholder until the lease ends.
    pub(crate) placeholder: bool,
}

/// What the winner does with its recompute.
#[derive(Debug)]
pub(crate) enum Finish {
    /// Store these bytes and flags under the lease (a "no such value" when the flag is set).
    Store(Stored),
    /// Fail with this error; first give the lease back (`md … C`) when `release`, so that the
    /// next caller need not wait for the lease to end.
    Fail { error: Error, release: bool },
}

/// One caller's lookups of one key: how long it has waited for another caller's value.
#[derive(Debug)]
pub(crate) struct Leasing<'s> {
    stampede: &'s Stampede,
    server: &'s str,
    key: &'s [u8],
    /// Since the first lookup that found another caller recomputing.
    waiting: Option<Waiting>,
}

impl<'s> Leasing<'s> {
    /// The lookups of `key` on `server` under `stampede`.
    pub(crate) fn new(stampede: &'s Stampede, server: &'s str, key: &'s [u8]) -> Self {
        Leasing {
            stampede,
            server,
            key,
            waiting: None,
        }
    }

    /// What to do after a lookup found `found`.
    pub(crate) fn looked_up(&mut self, found: Lookup) -> Then {
        match found {
            Lookup::Fresh(item) | Lookup::Pending { stale: Some(item) } => Then::Serve(item),
            Lookup::Won { cas, current } => Then::Recompute(Won {
                cas,
                placeholder: current.is_none(),
            }),
            Lookup::Pending { stale: None } => {
                let stampede = self.stampede;
                let waiting = self.waiting.get_or_insert_with(|| stampede.waiting());
                match waiting.next_pause() {
                    Ok(pause) => Then::Pause(pause),
                    Err(waited) => Then::GiveUp(Error::LeaseBusy {
                        server: self.server.to_string(),
                        key: String::from_utf8_lossy(self.key).into_owned(),
                        waited,
                    }),
                }
            }
        }
    }
}

impl Won {
    /// The winner's recompute gave `recomputed`; `store` turns a value into the bytes and
    /// flags to store, which must fit `keys`' value limit.
    pub(crate) fn finish<V, E: Into<RecomputeError>>(
        self,
        key: &[u8],
        recomputed: std::result::Result<V, E>,
        store: impl FnOnce(V) -> Result<Stored>,
        keys: &KeyRules,
    ) -> Finish {
        let stored = match recomputed {
            Ok(value) => store(value),
            Err(e) => Err(recompute_failed(key, e)),
        };
        match stored.and_then(|s| keys.check_value(&s.0).map(|()| s)) {
            Ok(stored) => Finish::Store(stored),
            // a stale or early value stays served by the others until the lease ends
            Err(error) => Finish::Fail {
                error,
                release: self.placeholder,
            },
        }
    }
}

fn recompute_failed<E: Into<RecomputeError>>(key: &[u8], e: E) -> Error {
    Error::Recompute {
        key: String::from_utf8_lossy(key).into_owned(),
        source: std::sync::Arc::from(e.into()),
    }
}

/// The blocking client's recompute function as the flow takes it: its result, ready.
pub(crate) fn ready_now<V, E>(
    recompute: impl FnOnce() -> std::result::Result<V, E>,
) -> impl FnOnce() -> Ready<std::result::Result<V, E>> {
    move || ready(recompute())
}

/// The async client's recompute function as the flow takes it: as it is.
#[cfg(feature = "async")]
pub(crate) fn as_is<F>(recompute: F) -> F {
    recompute
}

/// The value of `key`: looked up with a lease and, if this caller wins it, recomputed by
/// `recompute`, turned into bytes and flags by `store`, and stored for `expiry`.
pub(crate) async fn leased<T, F, Fut, V, E>(
    t: &T,
    key: &[u8],
    expiry: Expiry,
    recompute: F,
    store: impl FnOnce(V) -> Result<Stored>,
) -> Result<Item>
where
    T: Transport,
    F: FnOnce() -> Fut,
    Fut: Future<Output = std::result::Result<V, E>>,
    E: Into<RecomputeError>,
{
    let core = t.core();
    core.note_key(key);
    let exptime = expiry.exptime_now();
    let st = &core.settings.stampede;
    let r = match core.route(key, true) {
        Ok(r) => r,
        Err(e) => return without_cache(t, key, e, recompute, store).await,
    };
    let mut leasing = Leasing::new(st, &r.member.server.addr, key);
    let won = loop {
        let mut ex = MetaOne::lookup(&r.wire, st.lease_secs(), st.early_recache_secs());
        let found = match t.on(&r.member, &mut ex).await {
            Ok(found) => found,
            Err(e) => return without_cache(t, key, e, recompute, store).await,
        };
        match leasing.looked_up(found) {
            Then::Serve(item) => return Ok(item),
            Then::Pause(pause) => t.pause(pause).await,
            Then::GiveUp(e) => return Err(e),
            Then::Recompute(won) => break won,
        }
    };
    core.aside.recomputed();
    let (value, flags, negative) = match won.finish(key, recompute().await, store, &core.keys) {
        Finish::Store(stored) => stored,
        Finish::Fail { error, release } => {
            if release {
                // best effort: a placeholder left behind only delays the next caller until
                // the lease ends
                let _ = t
                    .on(&r.member, &mut MetaOne::release(&r.wire, won.cas))
                    .await;
            }
            return Err(error);
        }
    };
    let exptime = if negative {
        core.aside.negative_stored();
        st.negative_ttl_secs()
    } else {
        exptime
    };
    let mut ex = MetaOne::store_leased(&r.wire, &value, (flags, exptime), won.cas);
    if let Err(e) = t.on(&r.member, &mut ex).await {
        // the value is in hand: a cache that cannot keep it does not make it wrong
        if !aside::recompute_instead(st, &e) {
            return Err(e);
        }
        core.aside.served_without_cache();
        observe::served_without_cache(Some(&r.member.observe), &r.member.server.addr, key, &e);
    }
    core.forget([key]);
    Ok(Item::new(value, flags, None))
}

/// The cache could not be asked (`e`): the recompute answers when `e` means the server could
/// not, and the client's settings allow it; else `e`.
async fn without_cache<T, F, Fut, V, E>(
    t: &T,
    key: &[u8],
    e: Error,
    recompute: F,
    store: impl FnOnce(V) -> Result<Stored>,
) -> Result<Item>
where
    T: Transport,
    F: FnOnce() -> Fut,
    Fut: Future<Output = std::result::Result<V, E>>,
    E: Into<RecomputeError>,
{
    let core = t.core();
    if !aside::recompute_instead(&core.settings.stampede, &e) {
        return Err(e);
    }
    core.aside.recomputed();
    core.aside.served_without_cache();
    observe::served_without_cache(None, e.server().unwrap_or(""), key, &e);
    let value = recompute().await.map_err(|r| recompute_failed(key, r))?;
    let (value, flags, _) = store(value)?;
    Ok(Item::new(value, flags, None))
}

/// `get_or_compute`: the value stored as the recompute's bytes, flags 0.
pub(crate) async fn get_or_compute<T, F, Fut, V, E>(
    t: &T,
    key: &[u8],
    expiry: Expiry,
    recompute: F,
) -> Result<Item>
where
    T: Transport,
    F: FnOnce() -> Fut,
    Fut: Future<Output = std::result::Result<V, E>>,
    V: AsRef<[u8]>,
    E: Into<RecomputeError>,
{
    let store = |v: V| Ok((v.as_ref().to_vec(), 0, false));
    leased(t, key, expiry, recompute, store).await
}

/// `get_or_compute_as`: the value stored and read back through the client's codec.
#[cfg(feature = "codecs")]
pub(crate) async fn get_or_compute_as<T, F, Fut, V, E>(
    t: &T,
    key: &[u8],
    expiry: Expiry,
    recompute: F,
) -> Result<V>
where
    T: Transport,
    F: FnOnce() -> Fut,
    Fut: Future<Output = std::result::Result<V, E>>,
    V: crate::value::ToValue + crate::value::FromValue,
    E: Into<RecomputeError>,
{
    let (core, codec) = (t.core(), &t.core().settings.transcoder);
    let store = |v: V| {
        let stored = core.encode_value(codec, key, &v)?;
        // `Ok(None)` of an `Option` value: "no such value", kept for the negative TTL
        let negative = matches!(v.to_value(), Ok(crate::value::Value::Null));
        Ok((stored.bytes, stored.flags, negative))
    };
    let item = leased(t, key, expiry, recompute, store).await?;
    let value = core.decode_item(codec, key, &item)?;
    super::typed_as(key, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fake::{Fake, meta};
    use crate::core::transport::now;

    const WON: &str = "VA 0 f0 c5 O{o} W\r\n\r\n";
    const WAIT: &str = "VA 0 f0 c5 O{o} Z\r\n\r\n";
    const HD: &str = "HD O{o}\r\n";

    /// A client waiting at most `wait`, whose server answers `replies` in turn.
    fn scripted(wait: Duration, replies: &[&'static str]) -> Fake {
        let f = Fake::new("127.0.0.1:11211", |b| {
            b.stampede(Stampede::default().wait(wait))
        });
        f.script
            .lock()
            .unwrap()
            .extend(replies.iter().map(|r| meta(r)));
        f
    }

    /// `get_or_compute` of `k` with `recompute`, and the requests sent.
    fn run(
        f: &Fake,
        recompute: impl FnOnce() -> std::result::Result<&'static str, std::io::Error>,
    ) -> (Result<Item>, Vec<String>) {
        let r = now(
            f,
            get_or_compute(f, b"k", Expiry::NEVER, ready_now(recompute)),
        );
        (r, f.sent().into_iter().map(|(_, r)| r).collect())
    }

    fn fails() -> std::result::Result<&'static str, std::io::Error> {
        Err(std::io::Error::other("db down"))
    }

    #[test]
    fn a_server_that_cannot_answer_is_answered_by_the_recompute_unless_told_not_to() {
        let f = scripted(Duration::from_secs(3), &[]);
        f.fail("127.0.0.1:11211");
        let (item, _) = run(&f, || Ok("from the source"));
        assert_eq!(item.expect("answered").value, &b"from the source"[..]);
        let stats = f.core().aside.snapshot();
        assert_eq!((stats.recomputes, stats.served_without_cache), (1, 1));
        let strict = Fake::new("127.0.0.1:11211", |b| {
            b.stampede(Stampede::default().recompute_when_down(false))
        });
        strict.fail("127.0.0.1:11211");
        let (r, _) = run(&strict, || Ok("from the source"));
        assert!(r.expect_err("the cache's error").is_server_failure());
        assert_eq!(strict.core().aside.snapshot().served_without_cache, 0);
    }

    #[test]
    fn a_store_that_fails_after_the_recompute_still_answers_with_its_value() {
        // the lookup wins the lease; the store's reply never comes (the script is empty), a
        // protocol failure of the server
        let f = scripted(Duration::from_secs(3), &[WON]);
        let (item, sent) = run(&f, || Ok("fresh"));
        assert_eq!(item.expect("answered").value, &b"fresh"[..], "{sent:?}");
        assert_eq!(f.core().aside.snapshot().served_without_cache, 1);
        let strict = Fake::new("127.0.0.1:11211", |b| {
            b.stampede(Stampede::default().recompute_when_down(false))
        });
        strict.script.lock().unwrap().push_back(meta(WON));
        let (r, _) = run(&strict, || Ok("fresh"));
        assert!(r.is_err());
    }

    #[test]
    fn the_lease_winner_recomputes_and_stores_under_the_lease() {
        let f = scripted(Duration::from_secs(3), &[WON, HD]);
        let (item, sent) = run(&f, || Ok("fresh"));
        assert_eq!(item.unwrap().value, &b"fresh"[..]);
        assert!(sent[0].starts_with("mg k "), "{sent:?}");
        assert!(sent[1].starts_with("ms k 5 ") && sent[1].contains(" C5 "));
    }

    #[test]
    fn a_caller_that_did_not_win_pauses_then_is_served_the_value() {
        let f = scripted(Duration::from_secs(3), &[WAIT, "VA 2 f0 c7 O{o}\r\nv1\r\n"]);
        let (item, sent) = run(&f, || unreachable!("only the winner recomputes"));
        assert_eq!(item.unwrap().value, &b"v1"[..]);
        assert_eq!(f.pauses.lock().unwrap().len(), 1);
        assert_eq!(sent.len(), 2);
    }

    #[test]
    fn the_wait_over_fails_with_lease_busy() {
        let f = scripted(Duration::ZERO, &[WAIT]);
        let e = run(&f, || Ok("never")).0.unwrap_err();
        assert!(matches!(e, Error::LeaseBusy { ref key, .. } if key == "k"));
        assert!(f.pauses.lock().unwrap().is_empty());
    }

    #[test]
    fn a_failed_recompute_gives_the_lease_back() {
        let f = scripted(Duration::from_secs(3), &[WON, HD]);
        let (r, sent) = run(&f, fails);
        assert!(matches!(r, Err(Error::Recompute { .. })), "{r:?}");
        assert!(sent[1].starts_with("md k ") && sent[1].contains(" C5"));
    }

    #[test]
    fn a_stale_value_stays_when_the_recompute_fails() {
        // won over a stale value: nothing to give back, the others are served it meanwhile
        let f = scripted(Duration::from_secs(3), &["VA 3 f0 c6 O{o} X W\r\nold\r\n"]);
        let (r, sent) = run(&f, fails);
        assert!(matches!(r, Err(Error::Recompute { .. })), "{r:?}");
        assert_eq!(sent.len(), 1);
    }

    #[test]
    fn a_value_over_the_limit_is_not_stored() {
        let won = Won {
            cas: 9,
            placeholder: true,
        };
        let keys = Fake::new("127.0.0.1:11211", |b| b).core().keys.clone();
        let big = vec![0u8; 2 << 20];
        match won.finish(
            b"k",
            Ok::<_, std::io::Error>(big),
            |v| Ok((v, 0, false)),
            &keys,
        ) {
            Finish::Fail { error, release } => {
                assert!(matches!(error, Error::ValueTooLarge { .. }));
                assert!(release);
            }
            other => panic!("{other:?}"),
        }
    }
}
