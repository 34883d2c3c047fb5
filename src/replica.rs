//! Key replicas for hot keys: `n` copies of one key on `n` distinct servers, read one at
//! random, write all.
//!
//! The servers come from the ring's walk over distinct servers starting at the key's owner (not
//! from hashing derived names and hoping they differ). Copy 0 is the key itself on its owner,
//! so other clients still find it there; copy `i > 0` is stored as `key#r<i>` on the walk's
//! `i`-th server.

use crate::client::{Client, DeleteOutcome, Item, Member, StoreOutcome};
use crate::error::{Error, Result};
use crate::proto::StoreCommand;
use crate::servers::Server;
use std::sync::Arc;

/// Handle returned by [`Client::replicated`].
pub struct Replicated<'c> {
    client: &'c Client,
    /// `(server, key as sent)` per copy.
    copies: Vec<(Arc<Member>, Vec<u8>)>,
    /// The error building the handle met (invalid key), reported by every call.
    error: Option<Error>,
}

impl Client {
    /// `n` copies of `key` on distinct servers (fewer when there are fewer servers).
    ///
    /// ```no_run
    /// # let client = memshard::Client::builder().server_list("127.0.0.1:11211\n127.0.0.1:11212").unwrap().build().unwrap();
    /// let rates = client.replicated("exchange-rates", 3);
    /// rates.set(r#"{"EUR":1.08}"#, 0, 60);   // writes all three copies
    /// let v = rates.get()?;                    // reads one copy at random, falls back to the others
    /// # Ok::<(), memshard::Error>(())
    /// ```
    pub fn replicated(&self, key: impl AsRef<[u8]>, n: usize) -> Replicated<'_> {
        let key = key.as_ref();
        let servers: Vec<Arc<Member>> = self.current_walk(key).into_iter().take(n.max(1)).collect();
        let mut copies = Vec::with_capacity(servers.len());
        let mut error = None;
        for (i, server) in servers.into_iter().enumerate() {
            let mut name = key.to_vec();
            if i > 0 {
                name.extend_from_slice(format!("#r{i}").as_bytes());
            }
            match self.wire_key_for(&name) {
                Ok(wire) => copies.push((server, wire)),
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        Replicated {
            client: self,
            copies,
            error,
        }
    }
}

impl std::fmt::Debug for Replicated<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replicated")
            .field("servers", &self.servers())
            .finish()
    }
}

impl Replicated<'_> {
    /// The servers holding the copies, copy 0 (the key's owner) first.
    pub fn servers(&self) -> Vec<Server> {
        self.copies.iter().map(|(m, _)| m.server.clone()).collect()
    }

    /// Write every copy. One result per copy.
    pub fn set(
        &self,
        value: impl AsRef<[u8]>,
        flags: u32,
        exptime: u32,
    ) -> Vec<Result<StoreOutcome>> {
        if let Some(e) = &self.error {
            return vec![Err(e.clone())];
        }
        let value = value.as_ref();
        self.copies
            .iter()
            .map(|(s, wire)| {
                self.client.check_value_len(value)?;
                self.client
                    .store_on(s, StoreCommand::Set, wire, value, flags, exptime)
            })
            .collect()
    }

    /// Read one copy chosen at random; on a miss or an error try the others in turn. A miss
    /// everywhere is `Ok(None)`; errors everywhere return the last error.
    pub fn get(&self) -> Result<Option<Item>> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let n = self.copies.len();
        if n == 0 {
            return Err(Error::Config("the ring has no points".into()));
        }
        let first = fastrand::usize(..n);
        let mut last_err = None;
        for k in 0..n {
            let (s, wire) = &self.copies[(first + k) % n];
            match self.client.retrieve_on(s, wire, None, false) {
                Ok(Some(item)) => return Ok(Some(item)),
                Ok(None) => {}
                Err(e) => last_err = Some(e),
            }
        }
        // a copy that failed may hold the value: report the failure rather than a miss
        match last_err {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Delete every copy. One result per copy.
    pub fn delete(&self) -> Vec<Result<DeleteOutcome>> {
        if let Some(e) = &self.error {
            return vec![Err(e.clone())];
        }
        self.copies
            .iter()
            .map(|(s, wire)| self.client.delete_on(s, wire))
            .collect()
    }
}
