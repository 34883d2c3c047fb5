//! The reads and writes of a `Replicated` key, written once for both clients over their
//! [`Transport`]. Which copies, in which order, and what a read returns are decided by
//! [`Copies`] and [`ReadOutcome`]. Copies are written one after another: two or three round
//! trips, and the first failure is never hidden by a concurrent success.

use super::exchange::Retrieve;
use super::ops::{delete_on, retrieve_on, store_on};
use super::replica::{Copies, ReadOutcome};
use super::transport::Transport;
use crate::Expiry;
use crate::error::Result;
use crate::outcome::{DeleteOutcome, Item, StoreOutcome};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fake::Fake;
    use crate::core::transport::now;

    /// Three servers, `k` in two copies, written: the fake, the copies and their servers.
    fn written() -> (Fake, Copies<crate::core::fake::NoPool>, Vec<String>) {
        let f = Fake::new("127.0.0.1:1\n127.0.0.1:2\n127.0.0.1:3", |b| b);
        let copies = f.core().copies(b"k", 2);
        let servers = copies.servers().into_iter().map(|s| s.addr).collect();
        let stored = now(&f, set(&f, &copies, b"v", 0, Expiry::NEVER));
        assert!(matches!(
            stored[..],
            [Ok(StoreOutcome::Stored), Ok(StoreOutcome::Stored)]
        ));
        (f, copies, servers)
    }

    fn read(f: &Fake, copies: &Copies<crate::core::fake::NoPool>) -> Result<Option<Vec<u8>>> {
        Ok(now(f, get(f, copies))?.map(|i| i.value.to_vec()))
    }

    #[test]
    fn every_copy_is_written_and_a_read_falls_over_to_the_next() {
        let (f, copies, servers) = written();
        assert_eq!(f.held(&servers[0], "k").as_deref(), Some(&b"v"[..]));
        assert_eq!(f.held(&servers[1], "k#r1").as_deref(), Some(&b"v"[..]));
        // one copy's server fails: the read finds the other, whichever it tries first
        f.fail(&servers[0]);
        assert_eq!(read(&f, &copies).unwrap().as_deref(), Some(&b"v"[..]));
    }

    #[test]
    fn a_miss_on_one_copy_reads_the_other_and_errors_everywhere_return_the_error() {
        let (f, copies, servers) = written();
        // copy 0 deleted behind the handle's back: a miss there, the value on copy 1
        let gone = now(&f, crate::core::ops::delete(&f, b"k"));
        assert_eq!(gone.unwrap(), DeleteOutcome::Deleted);
        assert_eq!(read(&f, &copies).unwrap().as_deref(), Some(&b"v"[..]));
        let deleted = now(&f, delete(&f, &copies));
        use DeleteOutcome::{Deleted, NotFound};
        assert!(matches!(deleted[..], [Ok(NotFound), Ok(Deleted)]));
        assert_eq!(read(&f, &copies).unwrap(), None);
        servers.iter().for_each(|s| f.fail(s));
        assert!(read(&f, &copies).is_err());
    }

    #[test]
    fn an_invalid_key_fails_every_call() {
        let f = Fake::new("127.0.0.1:1\n127.0.0.1:2", |b| b);
        let copies = f.core().copies(b"bad key", 2);
        let stored = now(&f, set(&f, &copies, b"v", 0, Expiry::NEVER));
        assert!(matches!(stored[..], [Err(_)]));
        assert!(matches!(now(&f, delete(&f, &copies))[..], [Err(_)]));
        assert!(read(&f, &copies).is_err());
        assert!(f.sent().is_empty());
    }
}
