//! Routes between pools: change the cluster, the ring flavour or the hash without a miss
//! storm, survive a server's loss without overloading its neighbours, keep two pools in step,
//! send each key prefix to its own pool, replicate across zones. A [`Router`](crate::Router)
//! (and [`aio::Router`](crate::aio::Router) with feature `async`) combines clients, each a
//! ring and its servers: two of them in one of the four two-pool routes below, or any number
//! in a route composed of [`policy`] parts (a prefix selector whose `session:` keys are
//! replicated over zones, one of which has a gutter), described by a [`RouteNode`].
//!
//! Rules every route keeps:
//!
//! - **One copy is one server and one key as sent.** Where both pools put a key on the same
//!   server under the same wire key (a flavour or hash switch over the same servers leaves
//!   about 1/n of the keys where they were), the route reads and writes it once: a second
//!   `incr` would count twice, and deleting "the old copy" would delete the new one. A mirror
//!   refuses two pools that share a server.
//! - **CAS tokens carry their copy** ([`RouteCas`]): a route's `gets` says which pool and
//!   server gave the unique, and `cas` goes there only, or is refused with
//!   [`Error::Route`] when the route would no longer read that copy.
//! - **A copy that missed a write is never read again before it is repaired.** When one copy
//!   takes a write or delete and the other fails, the failed copy's key is recorded in its
//!   client's rejoin log and its server is kept out of reads until the client's prober has
//!   deleted the key there (the mechanism auto-eject uses). A copy that
//!   refused a write (an error reply) is deleted at once.
//! - **Read-modify commands apply once**, to the authoritative copy; the other copy is then
//!   deleted, never rewritten.
//! - **Backfills use `add`**, with the flags: a value written meanwhile wins.
//! - A failure is an I/O error, a timeout, a broken reply, no connection, or a server marked
//!   down. A miss is not a failure, nor a refusal (`NOT_STORED`, `EXISTS`, an error reply):
//!   those would be the same on the other pool.
//!
//! # Warm-up: `Router::warm_up(new, old, backfill)`
//!
//! | command | what the route does |
//! |---|---|
//! | `get`, `get_multi` | new pool; the keys it misses (or fails on) are read from the old pool, and each old hit is copied into the new pool with `add` at the `backfill` expiry (text memcached cannot tell the remaining TTL, so it is a setting, never a silent "forever") |
//! | `gets` | as `get`, then `gets` again on the new pool after a backfill, so the token is always the new pool's (mcrouter `WarmUpRoute.h`) |
//! | `set`, `touch`, `set_multi` | new pool, then old pool; the new pool's result (a touch that only the old pool's copy answered is `Touched`) |
//! | `delete`, `delete_multi` | old pool, then new pool (in that order a concurrent reader cannot copy the deleted value back); `Deleted` when either copy was deleted |
//! | `add` | if the old pool has the key: copied into the new pool, `NotStored`; else `add` on the new pool |
//! | `replace`, `append`, `prepend`, `incr`, `decr` | new pool; if the key is absent there but in the old pool, it is copied first and the command applied once; the old copy is then deleted |
//! | `cas` | new pool only, with a token from the new pool; the old copy is then deleted |
//!
//! Remaining race (mcrouter's too): a reader that read the old pool just before a concurrent
//! `delete` of another process can copy the deleted value back into the new pool; it lives at
//! most the backfill expiry.
//!
//! Two pools hold one copy when they give the key the same server address **as written** and
//! the same key as sent: write each server the same way in both pools (`127.0.0.1:11211` and
//! `localhost:11211` are two servers to the route).
//!
//! # Migration: `Router::migrate(new, old, Migration)`
//!
//! A warm-up for a time window: before its start, the old pool alone; during the window, the
//! warm-up above; during the tail, the new pool alone with deletes to both; then the new pool
//! alone ([`Phase`]).
//!
//! # Gutter: `Router::gutter(main, gutter, ttl)`
//!
//! When a main server fails, its keys are served from a small separate pool with a short TTL
//! instead of being rehashed onto its neighbours ("Scaling Memcache at Facebook", NSDI 2013;
//! mcrouter's `FailoverWithExptimeRoute`). The main client must not auto-eject.
//!
//! | command | what the route does |
//! |---|---|
//! | `get`, `gets`, `get_multi` | main; on a failure, the gutter (a miss is not a failure) |
//! | `set`, `add`, `replace`, `touch`, `delete`, `set_multi`, `delete_multi` | main; on a failure, the gutter, with the expiry capped at `ttl` (0 = never becomes `ttl`); the key is recorded: the main server deletes it before it serves reads again, and the gutter deletes it once the server is back |
//! | `incr`, `decr`, `append`, `prepend` | main; on a failure, refused: on the gutter they would start from nothing |
//! | `cas` | on the copy its token came from, while the route still reads that copy |
//!
//! A write that timed out on a stopped server can still be applied when it resumes (it sat
//! in the server's socket); the server's cleanup on return deletes the key after that in
//! practice, but the two are not ordered. A write to a returning server between the gutter's
//! cleanup and the next route call leaves the gutter's copy until that call cleans it; it is
//! read only if the server fails again first.
//!
//! # Mirror: `Router::mirror(a, b, ReadPolicy)`
//!
//! | command | what the route does |
//! |---|---|
//! | `get`, `gets`, `get_multi` | the preferred pool ([`ReadPolicy`]); on a failure, the other |
//! | `set`, `touch`, `delete` (and multi) | both; `Ok` when one copy took it (the other is repaired as above), the preferred pool's error when neither did |
//! | `add`, `replace`, `append`, `prepend`, `incr`, `decr` | both, each once; the preferred pool's result; when the two results differ, the other copy is deleted |
//! | `cas` | the token's pool only; the other copy is then deleted |
//! | `verify` | reads both and compares value and flags |
//!
//! A pool that was out comes back without the keys written while it was out (deleted, never
//! stale): reads of those keys miss on it until they are written again, and an `incr` on a
//! key only the other pool still has counts from nothing there, so the other copy is deleted
//! as divergent.
//!
//! # Composed routes: [`Router::compose`](crate::Router::compose), [`RouteNode`]
//!
//! Each policy's children are pools or other policies; the four routes above are leaves over
//! two pools. Every policy counts into the router's one [`RouteStats`].
//!
//! **Prefix** ([`policy::prefix`], mcrouter `PrefixSelectorRoute`): every command of a key
//! goes to the route of the longest prefix the key starts with, else to the default; with no
//! default, it is refused with [`Error::Route`] (counted as `unmatched`), never guessed.
//! Multi-key commands split by route and answer in input order.
//!
//! **Operation** ([`policy::operation`], mcrouter `OperationSelectorRoute`): each command goes
//! to the route named for it (`get` covers `gets` and `get_multi`; `set`, `set_multi`;
//! `delete`, `delete_multi`), the others to the default; a command with neither is a
//! configuration error when the route is built.
//!
//! **Zones** ([`policy::zones`], Netflix EVCache; mcrouter `AllSyncRoute`,
//! `AllMajorityRoute`, `MissFailoverRoute`):
//!
//! | command | what the route does |
//! |---|---|
//! | `get`, `gets`, `get_multi` | the local zone; a miss or a failure there is read from the other read zones in order (`zone_fallback_reads`, `zone_fallback_hits`); warming zones are never read |
//! | `set`, `add`, `replace`, `append`, `prepend`, `touch`, `delete`, `incr`, `decr` (and multi) | every zone, together; the answer of the first read zone (local first) that took it, once the [`Ack`](policy::zones::Ack) policy's count of read zones took it (`one`, `quorum`: more than half, `all`), else [`Error::Route`] naming how many did (`zone_short_writes`; the zones that took it keep it) |
//! | (a zone that missed a write) | when a zone failed a write others took, its copy is repaired as above (deleted, or its server held out of reads until the key is deleted there); a read-modify command that answered differently in a zone deletes that zone's copy (`zone_divergences`) |
//! | `cas` | the zone whose servers include the token's; the other zones' copies are then deleted |
//! | `verify` | reads every read zone and compares value and flags |
//!
//! Zones must not share a server, the local zone must be read (not warming), and a zone can be
//! any route (a pool, a gutter route, a prefix selector).
//!
//! # Not on a route
//!
//! `gat`, `gats`, `get_or_compute` (leases), the typed-value commands, `stats`, `flush_all`,
//! `version` and the other server-wide commands are not routed: call them on one pool's
//! client ([`Router::pool`](crate::Router::pool)), knowing which copy they touch.
//!
//! Layer: routes. The decisions here are sans-IO or written once over the clients' shared
//! transport; the two `Router` handles (expanded in each client's module) drive them. May
//! import: `core`, `settings`, `error`, `proto`, `ring`, `value`, `observe` — never a client.

mod cas;
#[cfg(feature = "peer-config")]
#[cfg_attr(docsrs, doc(cfg(feature = "peer-config")))]
pub mod file;
pub(crate) mod flow;
mod gutter_log;
pub(crate) mod handle;
mod node;
pub mod policy;
mod spec;
mod stats;
mod write;
#[cfg(feature = "peer-config")]
mod yaml;

pub use cas::{PoolRole, RouteCas, RouteItem};
#[cfg(feature = "peer-config")]
#[cfg_attr(docsrs, doc(cfg(feature = "peer-config")))]
pub use file::{PoolConfig, RouteFile};
pub use node::RouteNode;
pub use policy::pair::RouteSpec;
pub use spec::{Migration, Phase, ReadPolicy};
pub use stats::RouteStats;

pub(crate) use gutter_log::{GutterCleanup, GutterLog};
pub(crate) use spec::{Kind, cap_exptime, gutter_ttl};
pub(crate) use stats::{Counter, Counters};
pub(crate) use write::{Class, Write, Written};

use crate::error::{Error, Result};
use std::time::SystemTime;

/// What a route does with one command, decided at the time of the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One pool serves alone.
    One(PoolRole),
    /// Warm-up: the new pool, falling back to the old one.
    WarmUp,
    /// The new pool alone, deletes to both.
    DeletesBoth,
    /// Main pool, gutter on failure; the gutter TTL.
    Gutter(u32),
    /// Mirror: both pools, reads from this one first.
    Mirror(PoolRole),
}

/// A route's shared state: its kind, counters and gutter log.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) kind: Kind,
    pub(crate) counters: std::sync::Arc<Counters>,
    pub(crate) gutter: GutterLog,
}

impl State {
    #[cfg(test)]
    pub(crate) fn new(kind: Kind) -> State {
        State::counting(kind, std::sync::Arc::default())
    }

    /// A route of `kind` counting into `counters` (a composed route's, shared by its parts).
    pub(crate) fn counting(kind: Kind, counters: std::sync::Arc<Counters>) -> State {
        State {
            kind,
            counters,
            gutter: GutterLog::default(),
        }
    }

    pub(crate) fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// The mode of a command made now.
    pub(crate) fn mode(&self) -> Mode {
        match &self.kind {
            Kind::Gutter { ttl } => Mode::Gutter(*ttl),
            Kind::Mirror { policy } => Mode::Mirror(match policy {
                spec::ReadPolicy::PreferA => PoolRole::First,
                spec::ReadPolicy::PreferB => PoolRole::Second,
                spec::ReadPolicy::Random if fastrand::bool() => PoolRole::First,
                spec::ReadPolicy::Random => PoolRole::Second,
            }),
            kind => {
                let phase = kind.phase(SystemTime::now()).unwrap_or(Phase::WarmUp);
                if let Kind::Migrate(_) = kind {
                    stats::phase(self.name(), phase.number());
                }
                match phase {
                    Phase::Old => Mode::One(PoolRole::Second),
                    Phase::WarmUp => Mode::WarmUp,
                    Phase::NewDeletesBoth => Mode::DeletesBoth,
                    Phase::New => Mode::One(PoolRole::First),
                }
            }
        }
    }

    /// The counters of a read sent to the other pool, and of its hits.
    pub(crate) fn fallback_counters(&self) -> (Counter, Counter) {
        match self.kind {
            Kind::Gutter { .. } => (Counter::gutter_requests, Counter::gutter_hits),
            _ => (Counter::fallback_reads, Counter::fallback_hits),
        }
    }

    pub(crate) fn count(&self, c: Counter) {
        self.counters.one(self.name(), c);
    }

    pub(crate) fn count_n(&self, c: Counter, n: usize) {
        self.counters.add(self.name(), c, n as u64);
    }

    /// The refusal of `command` on `key`, counted.
    pub(crate) fn refuse(&self, command: &'static str, key: &[u8], reason: String) -> Error {
        self.count(Counter::refused);
        Error::Route {
            route: self.name(),
            command,
            key: String::from_utf8_lossy(key).into_owned(),
            reason,
        }
    }

    /// Which pool a `cas` with `token` goes to in `mode`, given the server that pool's ring
    /// gives the key now (`owner_now(pool)`) and whether the main server is down (gutter).
    pub(crate) fn cas_target(
        &self,
        mode: Mode,
        key: &[u8],
        token: &RouteCas,
        owner_now: impl Fn(PoolRole) -> Result<String>,
        main_down: impl Fn() -> Result<bool>,
    ) -> Result<PoolRole> {
        let names = self.kind.pool_names();
        let from = names[token.pool.index()];
        let expected = match mode {
            Mode::One(p) => p,
            Mode::WarmUp | Mode::DeletesBoth => PoolRole::First,
            Mode::Gutter(_) => {
                let down = main_down()?;
                match (token.pool, down) {
                    (PoolRole::First, true) => {
                        let why = "its main server is down and a cas is never failed over: read the key again with gets (the gutter answers) and retry";
                        return Err(self.refuse("cas", key, why.into()));
                    }
                    (PoolRole::Second, false) => {
                        let why = "the token is the gutter's but the main server is back: read the key again with gets and retry";
                        return Err(self.refuse("cas", key, why.into()));
                    }
                    (p, _) => p,
                }
            }
            Mode::Mirror(_) => token.pool,
        };
        if token.pool != expected {
            let why = format!(
                "the token came from the {from} pool, but the route writes the {} pool now: read the key again with gets and retry",
                names[expected.index()]
            );
            return Err(self.refuse("cas", key, why));
        }
        let now = owner_now(expected)?;
        if now != token.server {
            let why = format!(
                "the token came from {} but the {from} pool keeps the key on {now} now (its servers changed): read the key again with gets and retry",
                token.server
            );
            return Err(self.refuse("cas", key, why));
        }
        Ok(expected)
    }
}

/// Whether `e` means the copy could not be reached (the route may use the other pool), rather
/// than an answer that would be the same on the other pool.
pub(crate) fn is_failure(e: &Error) -> bool {
    e.is_server_failure()
}

/// One write's results on two copies, `preferred` (whose result the caller gets) and `other`:
/// the result to return, and the copy that must be repaired, if one failed while the other
/// took the write. With `any_ok` (mirror) the other copy's success is returned when the
/// preferred one failed.
pub(crate) fn settle<T>(
    preferred: (PoolRole, Result<T>),
    other: (PoolRole, Result<T>),
    any_ok: bool,
) -> (Result<T>, Option<(PoolRole, bool)>) {
    match (preferred, other) {
        ((_, Ok(v)), (p, Err(e))) => (Ok(v), Some((p, is_failure(&e)))),
        ((p, Err(e)), (_, Ok(v))) => {
            let failed = is_failure(&e);
            (if any_ok { Ok(v) } else { Err(e) }, Some((p, failed)))
        }
        ((_, r), _) => (r, None),
    }
}

/// The copies to repair after a multi-key write: `(index, pool, failed)`.
pub(crate) type Repairs = Vec<(usize, PoolRole, bool)>;

/// [`settle`] for each key of a multi-key write: `preferred`'s results, and `other`'s (`None`
/// where the key was not sent there: one copy). The results to return, and the copies to
/// repair as `(index, pool, failed)`.
pub(crate) fn settle_all<T>(
    preferred: (PoolRole, Vec<Result<T>>),
    other: (PoolRole, Vec<Option<Result<T>>>),
    any_ok: bool,
) -> (Vec<Result<T>>, Repairs) {
    let (p, o) = (preferred.0, other.0);
    let mut repairs = Vec::new();
    let out = preferred
        .1
        .into_iter()
        .zip(other.1)
        .enumerate()
        .map(|(i, (rp, ro))| match ro {
            None => rp,
            Some(ro) => {
                let (r, fix) = settle((p, rp), (o, ro), any_ok);
                repairs.extend(fix.map(|(pool, failed)| (i, pool, failed)));
                r
            }
        })
        .collect();
    (out, repairs)
}

/// `sent`'s results (for the indexes `at`, ascending) spread over `n` places, `None` elsewhere.
pub(crate) fn spread<T>(n: usize, at: &[usize], sent: Vec<Result<T>>) -> Vec<Option<Result<T>>> {
    let mut out: Vec<Option<Result<T>>> = (0..n).map(|_| None).collect();
    for (&i, r) in at.iter().zip(sent) {
        out[i] = Some(r);
    }
    out
}

/// The [`Expiry`](crate::Expiry) that is sent as `exptime`.
pub(crate) fn expiry_of(exptime: u32) -> crate::Expiry {
    use std::time::{Duration, UNIX_EPOCH};
    let secs = Duration::from_secs(u64::from(exptime));
    match exptime {
        0 => crate::Expiry::NEVER,
        e if u64::from(e) <= crate::settings::expiry::RELATIVE_LIMIT => crate::Expiry::after(secs),
        _ => crate::Expiry::at(UNIX_EPOCH + secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down() -> Error {
        Error::ServerDown {
            server: "s:1".into(),
            retry_in: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn settle_returns_the_preferred_and_names_the_copy_to_repair() {
        let (a, b) = (PoolRole::First, PoolRole::Second);
        let (r, fix) = settle((a, Ok(1)), (b, Err(down())), false);
        assert_eq!((r.ok(), fix), (Some(1), Some((b, true))));
        let (r, fix) = settle((a, Err(down())), (b, Ok(2)), false);
        assert!(
            r.is_err(),
            "warm-up: the new pool's failure is the caller's"
        );
        assert_eq!(fix, Some((a, true)));
        let (r, fix) = settle((a, Err(down())), (b, Ok(2)), true);
        assert_eq!(
            (r.ok(), fix),
            (Some(2), Some((a, true))),
            "mirror: one copy is enough"
        );
        let (r, fix) = settle::<u8>((a, Err(down())), (b, Err(down())), true);
        assert!(r.is_err());
        assert_eq!(fix, None, "nothing took the write: nothing to repair");
        let refused = Error::Server {
            server: "s:1".into(),
            message: "SERVER_ERROR out of memory".into(),
        };
        let (_, fix) = settle((a, Ok(1)), (b, Err(refused)), false);
        assert_eq!(
            fix,
            Some((b, false)),
            "a refusal is repaired by a delete, not a hold"
        );
        let (out, fixes) = settle_all(
            (a, vec![Ok(1), Ok(2)]),
            (b, vec![None, Some(Err(down()))]),
            false,
        );
        assert_eq!(
            out.into_iter().map(|r| r.ok()).collect::<Vec<_>>(),
            [Some(1), Some(2)]
        );
        assert_eq!(fixes, [(1, b, true)]);
    }

    #[test]
    fn expiry_round_trips_through_exptime() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        for e in [0, 1, 60, 2_592_000, 1_800_000_600] {
            assert_eq!(expiry_of(e).exptime(now), e);
        }
    }

    fn token(pool: PoolRole) -> RouteCas {
        RouteCas {
            pool,
            server: "s:1".into(),
            unique: 7,
        }
    }

    #[test]
    fn cas_goes_only_to_the_copy_that_gave_the_token() {
        let warm = State::new(Kind::WarmUp {
            backfill: crate::Expiry::NEVER,
        });
        let same = |_: PoolRole| Ok("s:1".to_string());
        let moved = |_: PoolRole| Ok("s:2".to_string());
        let up = || Ok(false);
        let t = |p| token(p);
        assert_eq!(
            warm.cas_target(Mode::WarmUp, b"k", &t(PoolRole::First), same, up)
                .ok(),
            Some(PoolRole::First)
        );
        let e = warm.cas_target(Mode::WarmUp, b"k", &t(PoolRole::Second), same, up);
        assert!(
            matches!(e, Err(Error::Route { .. })),
            "an old-pool token is refused"
        );
        let e = warm.cas_target(Mode::WarmUp, b"k", &t(PoolRole::First), moved, up);
        assert!(e.is_err(), "the key moved since gets");
        assert_eq!(warm.counters.snapshot().refused, 2);

        let gutter = State::new(Kind::Gutter { ttl: 60 });
        let main_down = || Ok(true);
        let g = Mode::Gutter(60);
        assert!(
            gutter
                .cas_target(g, b"k", &t(PoolRole::First), same, main_down)
                .is_err()
        );
        assert_eq!(
            gutter
                .cas_target(g, b"k", &t(PoolRole::Second), same, main_down)
                .ok(),
            Some(PoolRole::Second)
        );
        assert!(
            gutter
                .cas_target(g, b"k", &t(PoolRole::Second), same, up)
                .is_err()
        );
        assert_eq!(
            gutter
                .cas_target(g, b"k", &t(PoolRole::First), same, up)
                .ok(),
            Some(PoolRole::First)
        );
    }

    /// A mirror with random reads reads from both pools, each about half the time; the fixed
    /// policies always from theirs.
    #[test]
    fn random_mirror_reads_go_to_both_pools() {
        let mode = |policy| State::new(spec::Kind::Mirror { policy }).mode();
        let (mut first, mut second) = (0, 0);
        for _ in 0..200 {
            match mode(spec::ReadPolicy::Random) {
                Mode::Mirror(PoolRole::First) => first += 1,
                Mode::Mirror(PoolRole::Second) => second += 1,
                other => panic!("{other:?}"),
            }
        }
        // 200 fair coin flips: fewer than 50 on either side has odds below 1e-12
        assert!(first >= 50 && second >= 50, "{first} / {second}");
        let a = mode(spec::ReadPolicy::PreferA);
        assert_eq!(a, Mode::Mirror(PoolRole::First));
        let b = mode(spec::ReadPolicy::PreferB);
        assert_eq!(b, Mode::Mirror(PoolRole::Second));
    }
}
