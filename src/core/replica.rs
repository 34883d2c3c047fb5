//! Key replicas for hot keys: `n` copies of one key on `n` distinct servers, read one at
//! random, write all.
//!
//! The servers come from the ring's walk over distinct servers starting at the key's owner
//! (not from hashing derived names and hoping they differ). Copy 0 is the key itself on its
//! owner, so other clients still find it there; copy `i > 0` is stored as `key#r<i>` on the
//! walk's `i`-th server.

use super::Core;
use super::view::Member;
use crate::error::{Error, Result};
use crate::servers::Server;
use std::sync::Arc;

/// The copies of one key: `(server, key as sent)` each, or the error naming them met.
pub(crate) struct Copies<P> {
    pub(crate) key: Vec<u8>,
    pub(crate) copies: Vec<(Arc<Member<P>>, Vec<u8>)>,
    error: Option<Error>,
}

impl<P> Core<P> {
    /// `n` copies of `key` on distinct servers (fewer when there are fewer servers).
    pub(crate) fn copies(&self, key: &[u8], n: usize) -> Copies<P> {
        let servers = self.walk(key).into_iter().take(n.max(1));
        let mut copies = Vec::new();
        let mut error = None;
        for (i, server) in servers.enumerate() {
            let mut name = key.to_vec();
            if i > 0 {
                name.extend_from_slice(format!("#r{i}").as_bytes());
            }
            match self.keys.wire(&name) {
                Ok(wire) => copies.push((server, wire.into_owned())),
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        Copies {
            key: key.to_vec(),
            copies,
            error,
        }
    }
}

impl<P> Copies<P> {
    /// The servers holding the copies, copy 0 (the key's owner) first.
    pub(crate) fn servers(&self) -> Vec<Server> {
        self.copies.iter().map(|(m, _)| m.server.clone()).collect()
    }

    /// The error building the copies met (an invalid key), reported by every call.
    pub(crate) fn check(&self) -> Result<()> {
        self.error.clone().map_or(Ok(()), Err)
    }

    /// The copies in the order a read tries them: from one chosen at random, then the others.
    pub(crate) fn read_order(&self) -> Result<impl Iterator<Item = &(Arc<Member<P>>, Vec<u8>)>> {
        self.check()?;
        let n = self.copies.len();
        if n == 0 {
            return Err(Error::Config("the ring has no points".into()));
        }
        let first = fastrand::usize(..n);
        Ok((0..n).map(move |k| &self.copies[(first + k) % n]))
    }
}

/// What a replicated read returns after trying copies: the first value found; a miss
/// everywhere is `Ok(None)`; a copy that failed may hold the value, so with no value found
/// the last failure rather than a miss.
#[derive(Default)]
pub(crate) struct ReadOutcome {
    last_err: Option<Error>,
}

impl ReadOutcome {
    /// Note one copy's result; `Some` when the read is over.
    pub(crate) fn note(&mut self, r: Result<Option<crate::Item>>) -> Option<crate::Item> {
        match r {
            Ok(found) => found,
            Err(e) => {
                self.last_err = Some(e);
                None
            }
        }
    }

    /// No copy had the value.
    pub(crate) fn none_found(self) -> Result<Option<crate::Item>> {
        self.last_err.map_or(Ok(None), Err)
    }
}
