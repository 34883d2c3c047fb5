//! The reads and writes of a `Replicated` key, written once for both clients over their
//! [`Transport`]. Which copies, in which order, and what a read returns are decided by
//! [`Copies`] and [`ReadOutcome`]. Copies are written one after another: two or three round
//! trips, and the first failure is never hidden by a concurrent success.

use super::exchange::Retrieve;
use super::ops::{delete_on, retrieve_on, store_on};
use super::outcome::{DeleteOutcome, Item, StoreOutcome};
use super::replica::{Copies, ReadOutcome};
use super::transport::Transport;
use crate::Expiry;
use crate::error::Result;
use crate::proto::StoreCommand;

/// Write every copy (and drop the key from the near cache). One result per copy.
pub(crate) async fn set<T: Transport>(
    t: &T,
    copies: &Copies<T::Pool>,
    value: &[u8],
    flags: u32,
    expiry: Expiry,
) -> Vec<Result<StoreOutcome>> {
    if let Err(e) = copies.check() {
        return vec![Err(e)];
    }
    let mut out = Vec::with_capacity(copies.copies.len());
    let meta = (flags, expiry.exptime_now());
    for (m, wire) in &copies.copies {
        out.push(store_on(t, m, StoreCommand::Set, wire, value, meta).await);
    }
    t.core().forget([&copies.key[..]]);
    out
}

/// Read one copy chosen at random; on a miss or an error try the others in turn.
pub(crate) async fn get<T: Transport>(t: &T, copies: &Copies<T::Pool>) -> Result<Option<Item>> {
    let mut seen = ReadOutcome::default();
    for (m, wire) in copies.read_order()? {
        let keys = [&wire[..]];
        let mut ex = Retrieve::new(&keys, false, None);
        if let Some(item) = seen.note(retrieve_on(t, m, &mut ex).await) {
            return Ok(Some(item));
        }
    }
    seen.none_found()
}

/// Delete every copy (and drop the key from the near cache). One result per copy.
pub(crate) async fn delete<T: Transport>(
    t: &T,
    copies: &Copies<T::Pool>,
) -> Vec<Result<DeleteOutcome>> {
    if let Err(e) = copies.check() {
        return vec![Err(e)];
    }
    let mut out = Vec::with_capacity(copies.copies.len());
    for (m, wire) in &copies.copies {
        out.push(delete_on(t, m, wire).await);
    }
    t.core().forget([&copies.key[..]]);
    out
}
