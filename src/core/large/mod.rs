//! Large values ([`Builder::large_values`](crate::Builder::large_values)): a value over the
//! chunk size is stored as chunks under keys of their own, then an index under its key, the
//! index last; a read assembles the whole from the index and its chunks, or reports a miss.
//! Each flow is written once for both clients over their [`Transport`], and is the plain
//! command when large values are off.
//!
//! Why the index last, as mcrouter's `BigValueRoute` does: a reader that finds an index finds
//! every chunk that write stored (short of eviction), and a writer's random id keeps the
//! chunks of two writes apart, so no reader sees bytes of two writes; the CRC of the whole
//! catches the rest. Chunks go where their own keys route (mcrouter's choice too): a 50 MB
//! value is spread over the servers and read from all of them in parallel, not from one.

pub(crate) mod format;

use super::exchange::Retrieve;
use super::ops;
use super::transport::Transport;
use crate::Expiry;
use crate::error::{Error, Result};
use crate::outcome::{DeleteOutcome, Item, StoreOutcome, TouchOutcome};
use crate::proto::StoreCommand;
use format::{Index, MAGIC};

/// The chunk size when large values are on.
fn chunk_of<T: Transport>(t: &T) -> Option<usize> {
    t.core().settings.large_values
}

/// Whether a store of `value` goes in chunks: large values on, and the value over the chunk
/// size or starting as an index does (so that it is never read as one).
pub(crate) fn chunked(chunk: Option<usize>, value: &[u8]) -> bool {
    chunk.is_some_and(|c| value.len() > c || value.starts_with(MAGIC))
}

/// A storage command of `key`: in chunks when [`chunked`], else the plain command.
pub(crate) async fn store<T: Transport>(
    t: &T,
    cmd: StoreCommand,
    key: &[u8],
    value: &[u8],
    (flags, exptime): (u32, u32),
) -> Result<StoreOutcome> {
    let chunk = match chunk_of(t) {
        Some(chunk) if chunked(Some(chunk), value) => chunk,
        _ => return ops::store(t, cmd, key, value, (flags, exptime)).await,
    };
    if matches!(cmd, StoreCommand::Append | StoreCommand::Prepend) {
        return Err(Error::Config(format!(
            "append and prepend take at most the large-value chunk size ({chunk} bytes); set the whole value instead"
        )));
    }
    let index = Index::of(value, chunk, fastrand::u64(..));
    let keys = index.chunk_keys(key, t.core().keys.prefix.len());
    let pairs: Vec<(&[u8], &[u8])> = keys
        .iter()
        .map(Vec::as_slice)
        .zip(format::split(value, chunk))
        .collect();
    let stored = ops::set_multi_at(t, &pairs, (0, exptime)).await;
    if let Some(failed) = stored.into_iter().find_map(|r| match r {
        Ok(StoreOutcome::Stored) => None,
        Ok(other) => Some(Err(Error::protocol(
            "set",
            format!("a chunk was {other:?}"),
        ))),
        Err(e) => Some(Err(e)),
    }) {
        forget_chunks(t, &keys).await;
        return failed;
    }
    let r = ops::store(t, cmd, key, &index.encode(), (flags, exptime)).await;
    if !matches!(r, Ok(StoreOutcome::Stored)) {
        forget_chunks(t, &keys).await;
    }
    r
}

/// Delete chunks no index points to, as far as the servers let (what is left is evicted by
/// memcached's LRU or expires).
async fn forget_chunks<T: Transport>(t: &T, keys: &[Vec<u8>]) {
    let _ = ops::delete_multi(t, keys).await;
}

/// The read `item` of `key` made whole, with large values on: an index's value assembled
/// from its chunks (with the index's flags and CAS unique), `None` when a chunk is gone or
/// from another write or the index is damaged; any other item as it is. With `touch`, the
/// chunks get the index's new expiry too.
pub(crate) async fn complete<T: Transport>(
    t: &T,
    key: &[u8],
    item: Item,
    touch: Option<u32>,
) -> Result<Option<Item>> {
    let index = match Index::parse(&item.value) {
        None => return Ok(Some(item)),
        Some(Err(())) => return Ok(None),
        Some(Ok(index)) => index,
    };
    let keys = index.chunk_keys(key, t.core().keys.prefix.len());
    let got = t.get_multi_raw(&keys).await;
    let mut chunks = Vec::with_capacity(got.len());
    for r in got {
        chunks.push(r?);
    }
    let whole = index.assemble(chunks.iter().map(|c| c.as_ref().map(|c| &c.value[..])));
    let Some(value) = whole else { return Ok(None) };
    if let Some(exptime) = touch {
        touch_chunks(t, &keys, exptime).await?;
    }
    Ok(Some(Item::new(value, item.flags, item.cas)))
}

/// `touch` each of `keys` with `exptime`: a chunk gone fails the whole.
async fn touch_chunks<T: Transport>(t: &T, keys: &[Vec<u8>], exptime: u32) -> Result<()> {
    for r in ops::touch_many(t, keys, exptime).await? {
        if r? != TouchOutcome::Touched {
            return Err(Error::protocol("touch", "a chunk of the value is gone"));
        }
    }
    Ok(())
}

/// Every read of `keys` (`results`, in order) made whole (see [`complete`]): the chunks of
/// every index found read in one multi-get, one pipelined request per server.
pub(crate) async fn complete_many<T: Transport, K: AsRef<[u8]>>(
    t: &T,
    keys: &[K],
    mut results: Vec<Result<Option<Item>>>,
) -> Vec<Result<Option<Item>>> {
    if chunk_of(t).is_none() {
        return results;
    }
    let prefix = t.core().keys.prefix.len();
    // (slot, index, first chunk key's place in `wanted`)
    let mut found = Vec::new();
    let mut wanted: Vec<Vec<u8>> = Vec::new();
    for (i, (r, k)) in results.iter_mut().zip(keys).enumerate() {
        let Ok(Some(item)) = r else { continue };
        match Index::parse(&item.value) {
            None => {}
            Some(Err(())) => *r = Ok(None),
            Some(Ok(index)) => {
                found.push((i, index, wanted.len()));
                wanted.extend(index.chunk_keys(k.as_ref(), prefix));
            }
        }
    }
    if found.is_empty() {
        return results;
    }
    let got = t.get_multi_raw(&wanted).await;
    for (i, index, at) in found {
        let mine = &got[at..at + index.count()];
        let whole = match mine.iter().find_map(|r| r.as_ref().err()) {
            Some(e) => Err(e.clone()),
            None => {
                let chunks = mine.iter().map(|r| {
                    r.as_ref()
                        .ok()
                        .and_then(|c| c.as_ref())
                        .map(|c| &c.value[..])
                });
                Ok(index.assemble(chunks))
            }
        };
        if let Ok(Some(item)) = &results[i] {
            let (flags, cas) = (item.flags, item.cas);
            results[i] = whole.map(|v| v.map(|v| Item::new(v, flags, cas)));
        }
    }
    results
}

/// `get` of `key` made whole: the near cache's copy while it is fresh, else the server's
/// (kept in the near cache).
///
/// `ops`'s steps of a get, in this future: awaited as a future of their own, nesting it
/// and moving its result out cost ~30 of an async get's ~5,200 instructions (callgrind).
pub(crate) async fn get<T: Transport>(t: &T, key: &[u8]) -> Result<Option<Item>> {
    let item = match ops::get_begin(t.core(), key)? {
        ops::Get::Near(item) => item,
        ops::Get::Ask(r) => {
            let keys = [&r.wire[..]];
            let mut ex = Retrieve::new(&keys, false, None);
            t.on(&r.member, &mut ex).await?;
            match ops::get_end(t.core(), key, &r.member, &mut ex) {
                Some(item) => item,
                None => return Ok(None),
            }
        }
    };
    // Checked here, before `complete`'s future is made: making, polling and dropping it
    // cost ~100 of an async get's ~5,500 instructions (callgrind).
    match chunk_of(t) {
        Some(_) => complete(t, key, item, None).await,
        None => Ok(Some(item)),
    }
}

/// A retrieval of `key` (`gets`, `gat`, `gats`) made whole.
pub(crate) async fn retrieve<T: Transport>(
    t: &T,
    key: &[u8],
    cas: bool,
    touch: Option<u32>,
) -> Result<Option<Item>> {
    match ops::retrieve(t, key, cas, touch).await? {
        Some(item) if chunk_of(t).is_some() => complete(t, key, item, touch).await,
        item => Ok(item),
    }
}

/// `delete` of `key`, and of its chunks when it holds a large value (read first).
pub(crate) async fn delete<T: Transport>(t: &T, key: &[u8]) -> Result<DeleteOutcome> {
    if chunk_of(t).is_none() {
        return ops::delete(t, key).await;
    }
    let index = ops::retrieve(t, key, false, None).await?;
    let r = ops::delete(t, key).await;
    if let Some(index) = index
        .as_ref()
        .and_then(|i| Index::parse(&i.value))
        .and_then(Result::ok)
    {
        forget_chunks(t, &index.chunk_keys(key, t.core().keys.prefix.len())).await;
    }
    r
}

/// `delete_multi` of `keys`, and of the chunks of those that hold large values.
pub(crate) async fn delete_multi<T: Transport, K: AsRef<[u8]>>(
    t: &T,
    keys: &[K],
) -> Vec<Result<DeleteOutcome>> {
    if chunk_of(t).is_none() {
        return ops::delete_multi(t, keys).await;
    }
    let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
    let read = t.get_multi_raw(&keys).await;
    let r = ops::delete_multi(t, &keys).await;
    let prefix = t.core().keys.prefix.len();
    let chunks: Vec<Vec<u8>> = read
        .iter()
        .zip(keys)
        .filter_map(|(r, k)| {
            let index = Index::parse(&r.as_ref().ok()?.as_ref()?.value)?.ok()?;
            Some(index.chunk_keys(k, prefix))
        })
        .flatten()
        .collect();
    if !chunks.is_empty() {
        forget_chunks(t, &chunks).await;
    }
    r
}

/// `touch` of `key`, and of its chunks when it holds a large value.
pub(crate) async fn touch<T: Transport>(t: &T, key: &[u8], exptime: u32) -> Result<TouchOutcome> {
    if chunk_of(t).is_none() {
        return ops::touch(t, key, exptime).await;
    }
    // `gat` touches and reads in one round; the chunks only if it is an index
    let item = ops::retrieve(t, key, false, Some(exptime)).await?;
    let Some(item) = item else {
        return Ok(TouchOutcome::NotFound);
    };
    if let Some(Ok(index)) = Index::parse(&item.value) {
        touch_chunks(
            t,
            &index.chunk_keys(key, t.core().keys.prefix.len()),
            exptime,
        )
        .await?;
    }
    Ok(TouchOutcome::Touched)
}

/// `set_multi`: the items [`chunked`] each stored in chunks, the rest pipelined as usual;
/// results in input order.
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
    let exptime = expiry.exptime_now();
    let chunk = chunk_of(t);
    if !items.iter().any(|(_, v)| chunked(chunk, v.as_ref())) {
        return ops::set_multi_at(t, items, (flags, exptime)).await;
    }
    let (large, small): (Vec<usize>, Vec<usize>) =
        (0..items.len()).partition(|&i| chunked(chunk, items[i].1.as_ref()));
    let pairs: Vec<(&[u8], &[u8])> = small
        .iter()
        .map(|&i| (items[i].0.as_ref(), items[i].1.as_ref()))
        .collect();
    let mut out: Vec<Option<Result<StoreOutcome>>> = (0..items.len()).map(|_| None).collect();
    for (&i, r) in small
        .iter()
        .zip(ops::set_multi_at(t, &pairs, (flags, exptime)).await)
    {
        out[i] = Some(r);
    }
    for i in large {
        let (k, v) = (items[i].0.as_ref(), items[i].1.as_ref());
        out[i] = Some(store(t, StoreCommand::Set, k, v, (flags, exptime)).await);
    }
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::protocol("set_multi", "a value was not sent"))))
        .collect()
}

/// `set_multi_noreply`: the items [`chunked`] each stored in chunks (with replies: a chunk
/// must be known stored before its index is written), the rest as usual.
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
    let chunk = chunk_of(t);
    if !items.iter().any(|(_, v)| chunked(chunk, v.as_ref())) {
        return ops::set_multi_noreply(t, items, flags, expiry).await;
    }
    set_multi(t, items, flags, expiry)
        .await
        .into_iter()
        .map(|r| r.map(drop))
        .collect()
}
