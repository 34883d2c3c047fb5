//! Each command of a client, written once for both clients over their [`Transport`]: route the
//! key, build the core's exchange, run it, and tell the core what was written. The methods of
//! `api` call these (see [`super::transport`]).

use super::Core;
use super::exchange::Exchange;
use super::exchange::{
    MetaOne, Metadump, NoreplySets, Retrieve, Single, StatsExchange, WriteMany, delete_outcome,
    store_outcome,
};
use super::route::Group;
use super::route::Routed;
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
/// copy or the route to the owner.
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

/// `get`: the near cache's copy while it is fresh, else the server's (kept in the near cache).
/// (The blocking client runs the same steps without a future: its hot path.)
pub(crate) async fn get<T: Transport>(t: &T, key: &[u8]) -> Result<Option<Item>> {
    let r = match get_begin(t.core(), key)? {
        Get::Near(item) => return Ok(Some(item)),
        Get::Ask(r) => r,
    };
    let keys = [&r.wire[..]];
    let mut ex = Retrieve::new(&keys, false, None);
    t.on(&r.member, &mut ex).await?;
    Ok(get_end(t.core(), key, &r.member, &mut ex))
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
    t.on(m, &mut Single::store(cmd, wire, value, flags, exptime))
        .await
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

/// A storage command with flags and an expiry. (The blocking client runs the same steps
/// without a future: its hot path; so only the async client calls this.)
#[cfg(feature = "async")]
pub(crate) async fn store_for<T: Transport>(
    t: &T,
    cmd: StoreCommand,
    key: &[u8],
    value: &[u8],
    flags: u32,
    expiry: Expiry,
) -> Result<StoreOutcome> {
    store(t, cmd, key, value, (flags, expiry.exptime_now())).await
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

/// `get`, decoded by `codec`.
#[cfg(feature = "codecs")]
pub(crate) async fn get_value<T: Transport>(
    t: &T,
    codec: crate::value::Transcoder,
    key: &[u8],
) -> Result<Option<crate::value::Value>> {
    let item = get(t, key).await?;
    item.map(|item| t.core().decode_item(&codec, key, &item))
        .transpose()
}

/// `get`, decoded by `codec` and converted to `V`.
#[cfg(feature = "codecs")]
pub(crate) async fn get_as<T: Transport, V: crate::value::FromValue>(
    t: &T,
    codec: crate::value::Transcoder,
    key: &[u8],
) -> Result<Option<V>> {
    let value = get_value(t, codec, key).await?;
    value.map(|v| super::typed_as(key, v)).transpose()
}

/// `set` of `value` as `codec`'s peer stores it.
#[cfg(feature = "codecs")]
pub(crate) async fn set_value<T: Transport, V: crate::value::ToValue + ?Sized>(
    t: &T,
    codec: crate::value::Transcoder,
    key: &[u8],
    value: &V,
    expiry: Expiry,
) -> Result<StoreOutcome> {
    let stored = t.core().encode_value(&codec, key, value)?;
    let meta = (stored.flags, expiry.exptime_now());
    store(t, StoreCommand::Set, key, &stored.bytes, meta).await
}

/// `get_multi`, each hit decoded by `codec` and converted to `V`: each key's own result (a
/// miss, a value, or its codec's or conversion's error), in input order.
#[cfg(feature = "codecs")]
pub(crate) async fn get_many_as<T, K, V>(
    t: &T,
    codec: crate::value::Transcoder,
    keys: &[K],
) -> Vec<Result<Option<V>>>
where
    T: Transport,
    K: AsRef<[u8]> + Sync,
    V: crate::value::FromValue,
{
    let items = t.get_multi(keys).await;
    let core = t.core();
    items
        .into_iter()
        .zip(keys)
        .map(|(r, k)| {
            let k = k.as_ref();
            let item = r?;
            item.map(|item| super::typed_as(k, core.decode_item(&codec, k, &item)?))
                .transpose()
        })
        .collect()
}

/// Encoded values of one flags: `(flags, [(index, bytes)])`.
#[cfg(feature = "codecs")]
type FlagsBatch = (u32, Vec<(usize, Vec<u8>)>);

/// `set_multi` of typed values, each stored as `codec`'s peer stores it: a value that cannot
/// be encoded fails alone; the rest are sent pipelined, one batch per distinct flags (a codec
/// sets flags per value: its type, whether it was compressed). Results in input order.
#[cfg(feature = "codecs")]
pub(crate) async fn set_many_values<T, K, V>(
    t: &T,
    codec: crate::value::Transcoder,
    items: &[(K, V)],
    expiry: Expiry,
) -> Vec<Result<StoreOutcome>>
where
    T: Transport,
    K: AsRef<[u8]> + Sync,
    V: crate::value::ToValue,
{
    let core = t.core();
    let mut out: Vec<Option<Result<StoreOutcome>>> = (0..items.len()).map(|_| None).collect();
    let mut batches: Vec<FlagsBatch> = Vec::new();
    for (i, (k, v)) in items.iter().enumerate() {
        match core.encode_value(&codec, k.as_ref(), v) {
            Ok(e) => match batches.iter_mut().find(|(f, _)| *f == e.flags) {
                Some((_, b)) => b.push((i, e.bytes)),
                None => batches.push((e.flags, vec![(i, e.bytes)])),
            },
            Err(e) => out[i] = Some(Err(e)),
        }
    }
    for (flags, batch) in &batches {
        let pairs: Vec<(&[u8], &[u8])> = batch
            .iter()
            .map(|(i, bytes)| (items[*i].0.as_ref(), bytes.as_slice()))
            .collect();
        let results = set_multi(t, &pairs, *flags, expiry).await;
        for ((i, _), r) in batch.iter().zip(results) {
            out[*i] = Some(r);
        }
    }
    out.into_iter()
        .map(|r| {
            r.unwrap_or_else(|| Err(Error::protocol("set_many_values", "a value was not sent")))
        })
        .collect()
}

/// For each group, `make(group)`'s exchange with its server, servers in parallel, and
/// `results(exchange, outcome, group)` in group order; in the span of `operation` of `keys`.
async fn each_group<'g, 'k: 'g, T, E, O>(
    t: &T,
    (operation, keys): (&'static str, &impl Keys),
    groups: &'g [Group<'k, T::Pool>],
    make: impl Fn(&'g Group<'k, T::Pool>) -> E,
    results: impl Fn(E, Result<E::Output>, &Group<'k, T::Pool>) -> Vec<Result<O>>,
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
        .zip(groups)
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

/// `set_multi`: pipelined per server, servers in parallel; results in input order.
pub(crate) async fn set_multi<T: Transport, K, V>(
    t: &T,
    items: &[(K, V)],
    flags: u32,
    expiry: Expiry,
) -> Vec<Result<StoreOutcome>>
where
    K: AsRef<[u8]> + Sync,
    V: AsRef<[u8]> + Sync,
{
    let core = t.core();
    let batch = core.set_batch(items, (flags, expiry.exptime_now()));
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
/// placement (the ring over every configured server). Servers one after the other: the
/// crawler runs one dump at a time per server anyway, and a sample is small.
pub(crate) async fn check_placement<T: Transport>(t: &T, per_server: usize) -> PlacementCheck {
    let core = t.core();
    let view = core.view();
    let mut servers = Vec::with_capacity(view.members.len());
    for (i, m) in view.members.iter().enumerate() {
        let mut p = ServerPlacement::default();
        let r = {
            let (keys, ring) = (&core.keys, &view.full);
            let mut sink = |k: DumpedKey| match keys.hashed_of_wire(&k.key) {
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
        let stored = now(&f, set_multi(&f, &items, 0, Expiry::NEVER));
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
