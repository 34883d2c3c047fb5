//! The typed-value commands (feature `codecs`), written once for both clients over their
//! [`Transport`]: values encoded and decoded by a codec around the plain commands, large
//! values included.

use super::large;
use super::transport::Transport;
use crate::Expiry;
use crate::error::{Error, Result};
use crate::outcome::StoreOutcome;
use crate::proto::StoreCommand;

/// `get`, decoded by `codec`.
pub(crate) async fn get_value<T: Transport>(
    t: &T,
    codec: crate::value::Transcoder,
    key: &[u8],
) -> Result<Option<crate::value::Value>> {
    let item = large::get(t, key).await?;
    item.map(|item| t.core().decode_item(&codec, key, &item))
        .transpose()
}

/// `get`, decoded by `codec` and converted to `V`.
pub(crate) async fn get_as<T: Transport, V: crate::value::FromValue>(
    t: &T,
    codec: crate::value::Transcoder,
    key: &[u8],
) -> Result<Option<V>> {
    let value = get_value(t, codec, key).await?;
    value.map(|v| super::typed_as(key, v)).transpose()
}

/// `set` of `value` as `codec`'s peer stores it.
pub(crate) async fn set_value<T: Transport, V: crate::value::ToValue + ?Sized>(
    t: &T,
    codec: crate::value::Transcoder,
    key: &[u8],
    value: &V,
    expiry: Expiry,
) -> Result<StoreOutcome> {
    let stored = t.core().encode_value(&codec, key, value)?;
    let meta = (stored.flags, expiry.exptime_now());
    large::store(t, StoreCommand::Set, key, &stored.bytes, meta).await
}

/// `get_multi`, each hit decoded by `codec` and converted to `V`: each key's own result (a
/// miss, a value, or its codec's or conversion's error), in input order.
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
type FlagsBatch = (u32, Vec<(usize, Vec<u8>)>);

/// `set_multi` of typed values, each stored as `codec`'s peer stores it: a value that cannot
/// be encoded fails alone; the rest are sent pipelined, one batch per distinct flags (a codec
/// sets flags per value: its type, whether it was compressed). Results in input order.
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
        let results = large::set_multi(t, &pairs, *flags, expiry).await;
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
