//! Each command of a client, written once for both clients over their [`Transport`]: route the
//! key, build the core's exchange, run it, and tell the core what was written. The methods of
//! `api` call these (see [`super::transport`]).

use super::Core;
use super::exchange::Exchange;
use super::exchange::{
    MetaOne, Metadump, NoreplySets, Retrieve, Single, StatsExchange, WriteMany, delete_outcome,
    store_outcome,
};
use super::item_limit::{self, Known};
use super::route::Routed;
use super::route::{Group, Groups};
use super::transport::Transport;
use super::view::Member;
use crate::Expiry;
use crate::error::{Error, Result};
use crate::observe::Span;
use crate::observe::span::{self, Keys, Listed, NoKeys, Paired};
use crate::outcome::{
    DeleteOutcome, DumpSummary, Item, PlacementCheck, ServerPlacement, Stats, StoreOutcome,
    TouchOutcome,
};
use crate::proto::StoreCommand;
use crate::proto::metadump::DumpedKey;
use crate::servers::Server;
use std::future::Future;
use std::sync::Arc;

/// A server of `T`.
type On<T> = Arc<Member<<T as Transport>::Pool>>;

/// The retrieval `ex` (of one key) on `m`.
pub(crate) async fn retrieve_on<T: Transport>(
    t: &T,
    m: &On<T>,
    ex: &mut Retrieve<'_>,
) -> Result<Option<Item>> {
    t.on(m, ex).await?;
    Ok(t.core().single_hit(m, ex))
}

/// A retrieval of `key` (`gets` with `cas`, `gat` with `touch`), counted as a read of it.
pub(crate) async fn retrieve<T: Transport>(
    t: &T,
    key: &[u8],
    cas: bool,
    touch: Option<u32>,
) -> Result<Option<Item>> {
    let core = t.core();
    core.note_key(key);
    let r = core.route(key, false)?;
    let keys = [&r.wire[..]];
    retrieve_on(t, &r.member, &mut Retrieve::new(&keys, cas, touch)).await
}

/// Where a `get` goes: served from the near cache, or asked of the key's owner.
pub(crate) enum Get<'k, P> {
    Near(Item),
    Ask(Routed<'k, P>),
}

/// The first step of `get`, before any I/O: counted as a read, then the near cache's fresh
/// copy or the route to the owner. `get` runs these steps in
/// [`large::get`](super::large::get)'s future, and the blocking client without one (its hot
/// path).
pub(crate) fn get_begin<'k, P>(core: &Core<P>, key: &'k [u8]) -> Result<Get<'k, P>> {
    core.note_key(key);
    match core.near_lookup(key) {
        Some(item) => Ok(Get::Near(item)),
        None => core.route(key, false).map(Get::Ask),
    }
}

/// The last step of `get`: the hit `ex` read from `m`, kept in the near cache.
pub(crate) fn get_end<P>(
    core: &Core<P>,
    key: &[u8],
    m: &Arc<Member<P>>,
    ex: &mut Retrieve<'_>,
) -> Option<Item> {
    let found = core.single_hit(m, ex);
    if let Some(item) = &found {
        core.near_keep(key, item);
    }
    found
}

/// One storage command of `wire` on `m`.
pub(crate) async fn store_on<T: Transport>(
    t: &T,
    m: &On<T>,
    cmd: StoreCommand,
    wire: &[u8],
    value: &[u8],
    (flags, exptime): (u32, u32),
) -> Result<StoreOutcome> {
    t.core().keys.check_value(value)?;
    fits(t, m, wire, value.len(), flags).await?;
    let r = t
        .on(m, &mut Single::store(cmd, wire, value, flags, exptime))
        .await;
    sized(m, value.len(), r)
}

/// `Err(ItemTooLarge)`, before anything is sent, for a value `m` cannot hold under `wire`
/// with `flags`: `m`'s limit asked once (`stats settings`) when the item could be over
/// memcached's smallest. A server that does not answer the question is not asked again
/// (until it refuses an item): its own answer to the store then tells.
pub(crate) async fn fits<T: Transport>(
    t: &T,
    m: &On<T>,
    wire: &[u8],
    len: usize,
    flags: u32,
) -> Result<()> {
    if !item_limit::worth_asking(wire.len(), len, flags) {
        return Ok(());
    }
    let known = match m.limit.known() {
        Known::Unknown => match t.on(m, &mut StatsExchange::settings()).await {
            Ok(settings) => m.limit.learn(&settings),
            Err(_) => m.limit.learn(&[]),
        },
        known => known,
    };
    item_limit::check(known, &m.server.addr, (wire.len(), len, flags))
}

/// A store's outcome `r` on `m` of a value of `len` bytes: the server's refusal of the item
/// as too large given the length and the limit the client knew (then forgotten: the server
/// may have restarted with a smaller one).
pub(crate) fn sized<P>(m: &Member<P>, len: usize, r: Result<StoreOutcome>) -> Result<StoreOutcome> {
    match r {
        Err(Error::ItemTooLarge {
            server, len: None, ..
        }) => {
            let limit = match m.limit.known() {
                Known::Limit { bytes, .. } => Some(bytes),
                _ => None,
            };
            m.limit.forget();
            Err(Error::ItemTooLarge {
                server,
                len: Some(len),
                limit,
            })
        }
        r => r,
    }
}

/// One storage command of `key`, with `(flags, exptime)`.
pub(crate) async fn store<T: Transport>(
    t: &T,
    cmd: StoreCommand,
    key: &[u8],
    value: &[u8],
    meta: (u32, u32),
) -> Result<StoreOutcome> {
    let r = t.core().route(key, true)?;
    let res = store_on(t, &r.member, cmd, &r.wire, value, meta).await;
    t.core().forget([key]);
    res
}

/// `delete` of `wire` on `m`.
pub(crate) async fn delete_on<T: Transport>(
    t: &T,
    m: &On<T>,
    wire: &[u8],
) -> Result<DeleteOutcome> {
    t.on(m, &mut Single::delete(wire)).await
}

/// `delete` of `key`.
pub(crate) async fn delete<T: Transport>(t: &T, key: &[u8]) -> Result<DeleteOutcome> {
    let r = t.core().route(key, true)?;
    let res = delete_on(t, &r.member, &r.wire).await;
    t.core().forget([key]);
    res
}

/// `incr` (or `decr`) of `key` by `delta`.
pub(crate) async fn arith<T: Transport>(
    t: &T,
    incr: bool,
    key: &[u8],
    delta: u64,
) -> Result<Option<u64>> {
    let r = t.core().route(key, true)?;
    let res = t
        .on(&r.member, &mut Single::arith(incr, &r.wire, delta))
        .await;
    t.core().forget([key]);
    res
}

/// `touch` of each of `keys` with `exptime` as sent, all at once; results in input order
/// (`Err` as a whole for a key that cannot be routed: nothing is sent).
pub(crate) async fn touch_many<T: Transport, K: AsRef<[u8]>>(
    t: &T,
    keys: &[K],
    exptime: u32,
) -> Result<Vec<Result<TouchOutcome>>> {
    let core = t.core();
    let routed = keys
        .iter()
        .map(|k| core.route(k.as_ref(), true))
        .collect::<Result<Vec<_>>>()?;
    let work = routed
        .iter()
        .map(|r| (r.member.clone(), Single::touch(&r.wire, exptime)))
        .collect();
    Ok(t.on_each(work).await.into_iter().map(|(_, r)| r).collect())
}

/// `touch` of `key` with `exptime` as sent.
pub(crate) async fn touch<T: Transport>(t: &T, key: &[u8], exptime: u32) -> Result<TouchOutcome> {
    let r = t.core().route(key, true)?;
    t.on(&r.member, &mut Single::touch(&r.wire, exptime)).await
}

/// `md … I`: mark `key`'s value stale for the lease's time.
pub(crate) async fn invalidate<T: Transport>(t: &T, key: &[u8]) -> Result<DeleteOutcome> {
    let r = t.core().route(key, true)?;
    let lease = t.core().settings.stampede.lease_secs();
    let res = t
        .on(&r.member, &mut MetaOne::invalidate(&r.wire, lease))
        .await;
    t.core().forget([key]);
    res
}

/// For each group, `make(group)`'s exchange with its server, servers in parallel, and
/// `results(exchange, outcome, group)` in group order; in the span of `operation` of `keys`.
async fn each_group<'g, 'k: 'g, T, E, O>(
    t: &T,
    (operation, keys): (&'static str, &impl Keys),
    groups: &'g Groups<'k, T::Pool>,
    make: impl Fn(Group<'g, 'k, T::Pool>) -> E,
    results: impl Fn(E, Result<E::Output>, Group<'g, 'k, T::Pool>) -> Vec<Result<O>>,
) -> Vec<Vec<Result<O>>>
where
    T: Transport,
    E: Exchange + Send,
    E::Output: Send,
{
    let span = span::command(&t.core().settings, operation, keys);
    let work = groups.iter().map(|g| (g.member.clone(), make(g))).collect();
    let done = in_span(&span, || t.on_each(work)).await;
    done.into_iter()
        .zip(groups.iter())
        .map(|((ex, r), g)| results(ex, r, g))
        .collect()
}

/// `on_each()`'s exchanges run in `span`, the parent of their own spans, which then tells
/// how they ended. Entered while `on_each` is called too: the blocking client's does its work
/// then, and returns it ready.
async fn in_span<E: Exchange, F: Future<Output = Vec<(E, Result<E::Output>)>>>(
    span: &Span,
    on_each: impl FnOnce() -> F,
) -> Vec<(E, Result<E::Output>)> {
    let running = {
        let _entered = span.enter();
        on_each()
    };
    let done = span.run(running).await;
    let mut tally = span.tally();
    for (ex, r) in &done {
        tally.add(|| ex.hits(), r.as_ref().err());
    }
    span.close(tally);
    done
}

/// `make()`'s exchange on every server, in parallel; results in server order.
pub(crate) async fn on_all<T, E>(t: &T, make: impl Fn() -> E) -> Vec<(Server, Result<E::Output>)>
where
    T: Transport,
    E: Exchange + Send,
    E::Output: Send,
{
    let view = t.core().view();
    let work: Vec<_> = view.members.iter().map(|m| (m.clone(), make())).collect();
    let operation = work.first().map_or("", |(_, ex)| ex.command());
    let span = span::command(&t.core().settings, operation, &NoKeys);
    let done = in_span(&span, || t.on_each(work)).await;
    let servers = view.members.iter().map(|m| m.server.clone());
    servers.zip(done).map(|(s, (_, r))| (s, r)).collect()
}

/// `set_multi` with `(flags, exptime)` as sent: pipelined per server, servers in parallel;
/// results in input order.
pub(crate) async fn set_multi_at<T: Transport, K, V>(
    t: &T,
    items: &[(K, V)],
    meta: (u32, u32),
) -> Vec<Result<StoreOutcome>>
where
    K: AsRef<[u8]> + Sync,
    V: AsRef<[u8]> + Sync,
{
    let core = t.core();
    let batch = core.set_batch(items, meta);
    let sets = |g| WriteMany::new("set_multi", batch.sets(g, false), store_outcome);
    let span = ("set_multi", &Paired(items));
    let results = each_group(t, span, &batch.groups, sets, |ex, r, _| {
        ex.results(r.err().as_ref())
    })
    .await;
    batch.finish_writes(core, results)
}

/// `delete_multi`: pipelined per server, servers in parallel; results in input order.
pub(crate) async fn delete_multi<T: Transport, K: AsRef<[u8]>>(
    t: &T,
    keys: &[K],
) -> Vec<Result<DeleteOutcome>> {
    let core = t.core();
    let batch = core.delete_batch(keys);
    let deletes = |g| WriteMany::new("delete_multi", batch.deletes(g), delete_outcome);
    let span = ("delete_multi", &Listed(keys));
    let results = each_group(t, span, &batch.groups, deletes, |ex, r, _| {
        ex.results(r.err().as_ref())
    })
    .await;
    batch.finish_writes(core, results)
}

/// `set_multi` with `noreply`, then one `version` per server.
pub(crate) async fn set_multi_noreply<T: Transport, K, V>(
    t: &T,
    items: &[(K, V)],
    flags: u32,
    expiry: Expiry,
) -> Vec<Result<()>>
where
    K: AsRef<[u8]> + Sync,
    V: AsRef<[u8]> + Sync,
{
    let core = t.core();
    let batch = core.set_batch(items, (flags, expiry.exptime_now()));
    let sets = |g| NoreplySets::new(batch.sets(g, true));
    let span = ("set_multi_noreply", &Paired(items));
    let results = each_group(t, span, &batch.groups, sets, |_, r, g| vec![r; g.idx.len()]).await;
    batch.finish_writes(core, results)
}

/// `flush_all [delay]` on every server, the near cache emptied first.
pub(crate) async fn flush_all<T: Transport>(
    t: &T,
    delay: Option<u32>,
) -> Vec<(Server, Result<()>)> {
    t.core().near_clear();
    on_all(t, || Single::flush_all(delay)).await
}

/// `stats [group]` of every server; a group that cannot be sent fails for each server.
pub(crate) async fn stats<T: Transport>(
    t: &T,
    group: Option<&str>,
) -> Vec<(Server, Result<Stats>)> {
    if let Err(e) = StatsExchange::check_group(group) {
        let servers = t.core().ring().servers().to_vec();
        return servers.into_iter().map(|s| (s, Err(e.clone()))).collect();
    }
    on_all(t, || StatsExchange::new(group)).await
}

/// `lru_crawler metadump all` of the server whose address is `server`: each key to `sink`,
/// at most `max_keys`.
pub(crate) async fn metadump<T: Transport>(
    t: &T,
    server: &str,
    max_keys: usize,
    sink: &mut (dyn FnMut(DumpedKey) + Send),
) -> Result<DumpSummary> {
    let view = t.core().view();
    let Some(m) = view.members.iter().find(|m| m.server.addr == server) else {
        return Err(Error::Config(format!(
            "{server} is not one of this client's servers; give one of their addresses as listed"
        )));
    };
    t.on(m, &mut Metadump::new(max_keys, sink)).await
}

/// Up to `per_server` keys of each server's dump, each checked against the client's own
/// placement (the ring over every configured server), each counted once. Servers one after
/// the other: the crawler runs one dump at a time per server anyway, and a sample is small.
pub(crate) async fn check_placement<T: Transport>(t: &T, per_server: usize) -> PlacementCheck {
    let core = t.core();
    let view = core.view();
    let mut servers = Vec::with_capacity(view.members.len());
    for (i, m) in view.members.iter().enumerate() {
        let mut p = ServerPlacement::default();
        // memcached's crawler can list a key twice (see `Client::metadump`); a sample is
        // small, so the keys seen are kept to count each once
        let mut seen = std::collections::HashSet::new();
        let r = {
            let (keys, ring) = (&core.keys, &view.full);
            let mut sink = |k: DumpedKey| match keys.hashed_of_wire(&k.key) {
                _ if !seen.insert(k.key.clone()) => {}
                None => p.foreign += 1,
                Some(hashed) => {
                    p.sampled += 1;
                    if ring.route(hashed) == Some(i) {
                        p.agree += 1;
                    }
                }
            };
            t.on(m, &mut Metadump::new(per_server, &mut sink)).await
        };
        servers.push((m.server.clone(), r.map(|_| p)));
    }
    crate::observe::placement_checked(&servers);
    PlacementCheck { servers }
}

/// Re-read the server-list file at `path` every `interval`; apply its servers when they change.
pub(crate) fn watch_server_file<P: Send + Sync + 'static>(
    core: &Arc<super::Core<P>>,
    path: std::path::PathBuf,
    interval: std::time::Duration,
) -> crate::watch::Watcher {
    let core = core.clone();
    crate::watch::server_file(move |list| core.set_servers(list), path, interval)
}

/// Resolve `name` every `interval`; apply its addresses as the servers when they change.
pub(crate) fn watch_dns<P: Send + Sync + 'static>(
    core: &Arc<super::Core<P>>,
    name: &str,
    port_weight: (u16, u32),
    interval: std::time::Duration,
) -> crate::watch::Watcher {
    let core = core.clone();
    let apply = move |list| core.set_servers(list);
    crate::watch::dns(apply, name, port_weight, interval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fake::Fake;
    use crate::core::transport::now;
    use crate::error::Error;

    /// A dump that lists a key twice (memcached's crawler meets a key moved between sub-LRUs
    /// again) counts it once, as sampled and as agreeing.
    #[test]
    fn check_placement_counts_a_key_listed_twice_once() {
        let f = Fake::new("127.0.0.1:1", |b| b);
        let line = |k: &str| format!("key={k} exp=-1 la=1 cas=1 fetch=no cls=1 size=60\n");
        let dump = [line("a"), line("b"), line("a"), "END\r\n".into()].concat();
        for _ in 0..2 {
            let dump = dump.clone();
            crate::core::fake::lock(&f.script).push_back(Box::new(move |req: &[u8]| {
                match req.starts_with(b"lru_crawler metadump") {
                    true => dump.into_bytes(),
                    false => b"VERSION 1.6.18\r\n".to_vec(),
                }
            }));
        }
        let check = now(&f, check_placement(&f, 100));
        let p = check.servers[0].1.as_ref().expect("dumped");
        assert_eq!((p.sampled, p.agree, p.foreign), (2, 2, 0), "{check:?}");
    }

    /// Multi-key writes over three servers: each key's result in its input place, a value too
    /// large refused in its own place, and every key on the server the ring names.
    #[test]
    fn multi_key_writes_answer_each_key_in_input_order() {
        let f = Fake::new("127.0.0.1:1\n127.0.0.1:2\n127.0.0.1:3", |b| {
            b.max_value_size(64)
        });
        let big = vec![b'x'; 65];
        let items: Vec<(String, Vec<u8>)> = (0..30)
            .map(|i| {
                let v = if i == 7 {
                    big.clone()
                } else {
                    format!("v{i}").into_bytes()
                };
                (format!("key:{i}"), v)
            })
            .collect();
        let stored = now(&f, set_multi_at(&f, &items, (0, 0)));
        assert_eq!(stored.len(), 30);
        for (i, r) in stored.iter().enumerate() {
            match i {
                7 => assert!(matches!(r, Err(Error::ValueTooLarge { .. })), "{r:?}"),
                _ => assert!(matches!(r, Ok(StoreOutcome::Stored)), "{i}: {r:?}"),
            }
        }
        let ring = f.core().ring();
        for (i, (k, v)) in items.iter().enumerate().filter(|(i, _)| *i != 7) {
            let at = &ring.server_for(k.as_bytes()).expect("routed").addr;
            assert_eq!(f.held(at, k).as_deref(), Some(&v[..]), "{i} on {at}");
        }
        // the deleted keys and the missing ones, interleaved
        let keys: Vec<String> = (0..30)
            .flat_map(|i| [format!("key:{i}"), format!("missing:{i}")])
            .collect();
        let deleted = now(&f, delete_multi(&f, &keys));
        assert_eq!(deleted.len(), 60);
        for (i, r) in deleted.iter().enumerate() {
            let want = if i % 2 == 0 && i != 14 {
                DeleteOutcome::Deleted
            } else {
                DeleteOutcome::NotFound
            };
            assert_eq!(r.as_ref().ok(), Some(&want), "{}: {r:?}", keys[i]);
        }
    }
}
