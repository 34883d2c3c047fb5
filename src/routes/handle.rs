//! The `Router` handle, defined once and expanded in each client's module: the blocking one's
//! methods call its client plainly, the async one's with `.await`. What to do with each
//! command is decided by the sans-IO parts of [`crate::routes`]; this only sends.

/// Expands, in a client's module, `Router` over `$client` (`async await` for the async
/// client). The client provides `get`, `gets`, `get_multi`, `store`, `delete`, `arith`,
/// `touch_exptime`, `set_multi`, `delete_multi`, `flush_all`, `down_servers` and
/// `written_elsewhere`.
macro_rules! router_handle {
    ($client:ty, $example:literal $(, $async:tt $await:tt)?) => {
        /// Two pools (each a client: a ring and its servers) combined by one route: warm-up
        /// or migration from an old ring to a new one, a gutter pool for failed servers, or
        /// two mirrored pools. What each command does under each route is in
        /// [`memshard::routes`](crate::routes).
        ///
        #[doc = $example]
        #[derive(Clone)]
        pub struct Router {
            /// First and second pool (new/old, main/gutter, a/b).
            pools: [$client; 2],
            state: std::sync::Arc<$crate::routes::State>,
        }

        impl std::fmt::Debug for Router {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let [first, second] = self.state.kind.pool_names();
                f.debug_struct("Router")
                    .field("route", &self.state.name())
                    .field(first, &self.pools[0].ring().servers())
                    .field(second, &self.pools[1].ring().servers())
                    .finish()
            }
        }

        impl Router {
            fn with(first: $client, second: $client, kind: $crate::routes::Kind) -> Router {
                Router {
                    pools: [first, second],
                    state: std::sync::Arc::new($crate::routes::State::new(kind)),
                }
            }

            /// Read `new`, fall back to `old` on a miss and copy what `old` had into `new`
            /// (with `add`, expiring at `backfill`); write both. For a cluster, ring flavour
            /// or hash change without a miss storm.
            pub fn warm_up(new: $client, old: $client, backfill: impl Into<$crate::Expiry>) -> Router {
                let backfill = backfill.into();
                Router::with(new, old, $crate::routes::Kind::WarmUp { backfill })
            }

            /// A warm-up for the window of `migration`, then `new` alone (see
            /// [`Migration`]($crate::routes::Migration)).
            pub fn migrate(new: $client, old: $client, migration: $crate::routes::Migration) -> Router {
                Router::with(new, old, $crate::routes::Kind::Migrate(migration))
            }

            /// `main`'s keys served from `gutter` while their server fails, stored there for
            /// at most `ttl`. `main` must not auto-eject (rehashing a failed server's keys
            /// onto its neighbours is what a gutter avoids): [`Error::Config`]($crate::Error::Config)
            /// otherwise, and for a `ttl` under a second or over 30 days.
            pub fn gutter(main: $client, gutter: $client, ttl: std::time::Duration) -> $crate::Result<Router> {
                if main.core.failures.policy.auto_eject {
                    return Err($crate::Error::Config(
                        "a gutter route needs its main client without auto-eject: build it with FailurePolicy::with_auto_eject(false)".into(),
                    ));
                }
                let ttl = $crate::routes::gutter_ttl(ttl)?;
                Ok(Router::with(main, gutter, $crate::routes::Kind::Gutter { ttl }))
            }

            /// Every key in both `a` and `b`, read as `policy` says. Two pools that share a
            /// server would hold one copy where the route counts two:
            /// [`Error::Config`]($crate::Error::Config).
            pub fn mirror(a: $client, b: $client, policy: $crate::routes::ReadPolicy) -> $crate::Result<Router> {
                let (ra, rb) = (a.ring(), b.ring());
                if let Some(s) = ra.servers().iter().find(|s| rb.servers().iter().any(|t| t.addr == s.addr)) {
                    return Err($crate::Error::Config(format!(
                        "mirrored pools share server {}: give each pool its own servers",
                        s.addr
                    )));
                }
                Ok(Router::with(a, b, $crate::routes::Kind::Mirror { policy }))
            }

            /// The route's counters so far.
            pub fn stats(&self) -> $crate::routes::RouteStats {
                self.state.counters.snapshot()
            }

            /// The client of pool `role`.
            pub fn pool(&self, role: $crate::routes::PoolRole) -> &$client {
                &self.pools[role.index()]
            }

            /// Where a warm-up or migration stands now (`None` for a gutter or mirror).
            pub fn phase(&self) -> Option<$crate::routes::Phase> {
                self.state.kind.phase(std::time::SystemTime::now())
            }

            fn same_copy(&self, key: &[u8]) -> $crate::Result<bool> {
                Ok(self.pools[0].core.locate(key)? == self.pools[1].core.locate(key)?)
            }

            fn owner(&self, p: $crate::routes::PoolRole, key: &[u8]) -> $crate::Result<String> {
                Ok(self.pools[p.index()].core.locate(key)?.0)
            }

            /// `get`: see [the table](crate::routes) for each route.
            pub $($async)? fn get(&self, key: impl AsRef<[u8]>) -> $crate::Result<Option<$crate::Item>> {
                Ok(self.read(key.as_ref(), false)$(.$await)??.map(|(item, _)| item))
            }

            /// `gets`: the value and a token naming the copy it came from, for
            /// [`cas`](Self::cas).
            pub $($async)? fn gets(&self, key: impl AsRef<[u8]>) -> $crate::Result<Option<$crate::routes::RouteItem>> {
                let key = key.as_ref();
                let Some((item, pool)) = self.read(key, true)$(.$await)?? else {
                    return Ok(None);
                };
                let server = self.owner(pool, key)?;
                let unique = item
                    .cas
                    .ok_or_else(|| $crate::Error::protocol(&server, "gets answered without a CAS unique"))?;
                let token = $crate::routes::RouteCas { pool, server, unique };
                Ok(Some($crate::routes::RouteItem { item, token }))
            }

            $($async)? fn read(&self, key: &[u8], cas: bool) -> $crate::Result<Option<($crate::Item, $crate::routes::PoolRole)>> {
                use $crate::routes::{Mode, PoolRole};
                match self.state.mode() {
                    Mode::One(p) => Ok(self.read_on(p, key, cas)$(.$await)??.map(|i| (i, p))),
                    Mode::DeletesBoth => {
                        Ok(self.read_on(PoolRole::First, key, cas)$(.$await)??.map(|i| (i, PoolRole::First)))
                    }
                    Mode::WarmUp => self.warm_read(key, cas)$(.$await)?,
                    Mode::Gutter(_) => {
                        self.clean_gutter()$(.$await)?;
                        self.failover_read(PoolRole::First, key, cas)$(.$await)?
                    }
                    Mode::Mirror(p) => self.failover_read(p, key, cas)$(.$await)?,
                }
            }

            $($async)? fn read_on(&self, p: $crate::routes::PoolRole, key: &[u8], cas: bool) -> $crate::Result<Option<$crate::Item>> {
                let c = &self.pools[p.index()];
                if cas { c.gets(key)$(.$await)? } else { c.get(key)$(.$await)? }
            }

            /// `first`, and the other pool when `first` failed (gutter, mirror).
            $($async)? fn failover_read(&self, first: $crate::routes::PoolRole, key: &[u8], cas: bool) -> $crate::Result<Option<($crate::Item, $crate::routes::PoolRole)>> {
                let e = match self.read_on(first, key, cas)$(.$await)? {
                    Err(e) if $crate::routes::is_failure(&e) => e,
                    r => return r.map(|o| o.map(|i| (i, first))),
                };
                let (reads, hits) = self.state.fallback_counters();
                self.state.count(reads);
                let other = first.other();
                match self.read_on(other, key, cas)$(.$await)? {
                    Ok(found) => {
                        if found.is_some() {
                            self.state.count(hits);
                        }
                        Ok(found.map(|i| (i, other)))
                    }
                    Err(_) => {
                        self.state.count($crate::routes::Counter::fallback_errors);
                        Err(e)
                    }
                }
            }

            /// Warm-up read: new pool, then the old one (unless it is the same copy), and a
            /// backfill of the old pool's value into the new one.
            $($async)? fn warm_read(&self, key: &[u8], cas: bool) -> $crate::Result<Option<($crate::Item, $crate::routes::PoolRole)>> {
                use $crate::routes::PoolRole::{First, Second};
                let got = self.read_on(First, key, cas)$(.$await)?;
                let new_failed = match got {
                    Ok(None) => false,
                    Err(ref e) if $crate::routes::is_failure(e) => true,
                    r => return r.map(|o| o.map(|i| (i, First))),
                };
                if self.same_copy(key)? {
                    return got.map(|_| None);
                }
                let Some(item) = self.old_value(key)$(.$await)? else {
                    return got.map(|_| None);
                };
                if new_failed {
                    return Ok(Some((item, Second)));
                }
                self.backfill(key, &item)$(.$await)?;
                if cas {
                    // the token must be the new pool's, where the cas will go
                    return Ok(self.pools[0].gets(key)$(.$await)??.map(|i| (i, First)));
                }
                Ok(Some((item, First)))
            }

            /// The old pool's value of `key`, counted; a failure counts as a miss.
            $($async)? fn old_value(&self, key: &[u8]) -> Option<$crate::Item> {
                use $crate::routes::Counter;
                self.state.count(Counter::fallback_reads);
                match self.pools[1].get(key)$(.$await)? {
                    Ok(found) => {
                        if found.is_some() {
                            self.state.count(Counter::fallback_hits);
                        }
                        found
                    }
                    Err(_) => {
                        self.state.count(Counter::fallback_errors);
                        None
                    }
                }
            }

            /// Copy `item` into the new pool, unless a value was written there meanwhile.
            $($async)? fn backfill(&self, key: &[u8], item: &$crate::Item) {
                use $crate::routes::Counter;
                let exptime = self.state.kind.backfill().exptime_now();
                let add = $crate::proto::StoreCommand::Add;
                let r = self.pools[0].store(add, key, &item.value, (item.flags, exptime))$(.$await)?;
                self.state.count(match r {
                    Ok($crate::StoreOutcome::Stored) => Counter::backfills,
                    Ok(_) => Counter::backfills_lost,
                    Err(_) => Counter::backfill_errors,
                });
            }

            /// Get many keys: see [the table](crate::routes) for each route. A backfill
            /// (warm-up) is one `add` per key that only the old pool had.
            #[must_use = "each key has its own result"]
            pub $($async)? fn get_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<$crate::Result<Option<$crate::Item>>> {
                use $crate::routes::{Mode, PoolRole, is_failure};
                let (first, warm) = match self.state.mode() {
                    Mode::One(p) => return self.pools[p.index()].get_multi(keys)$(.$await)?,
                    Mode::DeletesBoth => return self.pools[0].get_multi(keys)$(.$await)?,
                    Mode::WarmUp => (PoolRole::First, true),
                    Mode::Gutter(_) => {
                        self.clean_gutter()$(.$await)?;
                        (PoolRole::First, false)
                    }
                    Mode::Mirror(p) => (p, false),
                };
                let mut out = self.pools[first.index()].get_multi(keys)$(.$await)?;
                let again: Vec<usize> = (0..out.len())
                    .filter(|&i| match &out[i] {
                        Ok(Some(_)) => false,
                        Ok(None) => warm,
                        Err(e) => is_failure(e),
                    })
                    .filter(|&i| !warm || matches!(self.same_copy(keys[i].as_ref()), Ok(false)))
                    .collect();
                if again.is_empty() {
                    return out;
                }
                let (reads, hits) = self.state.fallback_counters();
                self.state.count_n(reads, again.len());
                let sub: Vec<&[u8]> = again.iter().map(|&i| keys[i].as_ref()).collect();
                let second = self.pools[first.other().index()].get_multi(&sub)$(.$await)?;
                for (&i, r) in again.iter().zip(second) {
                    match r {
                        Ok(Some(item)) => {
                            self.state.count(hits);
                            if warm && matches!(out[i], Ok(None)) {
                                self.backfill(keys[i].as_ref(), &item)$(.$await)?;
                            }
                            out[i] = Ok(Some(item));
                        }
                        // the other pool answered: its miss is the answer, except that a
                        // warm-up keeps the new pool's failure
                        Ok(None) if !warm => out[i] = Ok(None),
                        Ok(None) => {}
                        Err(_) => self.state.count($crate::routes::Counter::fallback_errors),
                    }
                }
                out
            }

            $crate::core::api::storage_method!(
                /// `set`: see [the table](crate::routes) for each route.
                set, set_raw, Set, [$($async $await)?]
            );
            $crate::core::api::storage_method!(
                /// `add`: see [the table](crate::routes) for each route.
                add, add_raw, Add, [$($async $await)?]
            );
            $crate::core::api::storage_method!(
                /// `replace`: see [the table](crate::routes) for each route.
                replace, replace_raw, Replace, [$($async $await)?]
            );

            /// `append`: see [the table](crate::routes) for each route.
            pub $($async)? fn append(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> $crate::Result<$crate::StoreOutcome> {
                let (k, v) = (key.as_ref(), value.as_ref());
                self.store($crate::proto::StoreCommand::Append, k, v, (0, 0))$(.$await)?
            }

            /// `prepend`: see [the table](crate::routes) for each route.
            pub $($async)? fn prepend(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> $crate::Result<$crate::StoreOutcome> {
                let (k, v) = (key.as_ref(), value.as_ref());
                self.store($crate::proto::StoreCommand::Prepend, k, v, (0, 0))$(.$await)?
            }

            $($async)? fn store(
                &self,
                cmd: $crate::proto::StoreCommand,
                key: &[u8],
                value: &[u8],
                (flags, exptime): (u32, u32),
            ) -> $crate::Result<$crate::StoreOutcome> {
                let w = $crate::routes::Write::Store { cmd, value, flags, exptime };
                self.write(key, w)$(.$await)?.and_then($crate::routes::Written::into_store)
            }

            /// `delete`: see [the table](crate::routes) for each route.
            pub $($async)? fn delete(&self, key: impl AsRef<[u8]>) -> $crate::Result<$crate::DeleteOutcome> {
                let w = $crate::routes::Write::Delete;
                self.write(key.as_ref(), w)$(.$await)?.and_then($crate::routes::Written::into_delete)
            }

            /// `touch`: see [the table](crate::routes) for each route.
            pub $($async)? fn touch(&self, key: impl AsRef<[u8]>, expiry: impl Into<$crate::Expiry>) -> $crate::Result<$crate::TouchOutcome> {
                let w = $crate::routes::Write::Touch(expiry.into().exptime_now());
                self.write(key.as_ref(), w)$(.$await)?.and_then($crate::routes::Written::into_touch)
            }

            /// `incr`: see [the table](crate::routes) for each route.
            pub $($async)? fn incr(&self, key: impl AsRef<[u8]>, delta: u64) -> $crate::Result<Option<u64>> {
                let w = $crate::routes::Write::Arith { incr: true, delta };
                self.write(key.as_ref(), w)$(.$await)?.and_then($crate::routes::Written::into_arith)
            }

            /// `decr`: see [the table](crate::routes) for each route.
            pub $($async)? fn decr(&self, key: impl AsRef<[u8]>, delta: u64) -> $crate::Result<Option<u64>> {
                let w = $crate::routes::Write::Arith { incr: false, delta };
                self.write(key.as_ref(), w)$(.$await)?.and_then($crate::routes::Written::into_arith)
            }

            /// `cas` with a token from this route's [`gets`](Self::gets), on the copy it came
            /// from only: [`Error::Route`]($crate::Error::Route) when the route would not write
            /// that copy now.
            pub $($async)? fn cas(
                &self,
                key: impl AsRef<[u8]>,
                value: impl AsRef<[u8]>,
                expiry: impl Into<$crate::Expiry>,
                token: &$crate::routes::RouteCas,
            ) -> $crate::Result<$crate::StoreOutcome> {
                self.cas_raw(key, value, 0, expiry, token)$(.$await)?
            }

            /// `cas` with the client flags `flags`.
            pub $($async)? fn cas_raw(
                &self,
                key: impl AsRef<[u8]>,
                value: impl AsRef<[u8]>,
                flags: u32,
                expiry: impl Into<$crate::Expiry>,
                token: &$crate::routes::RouteCas,
            ) -> $crate::Result<$crate::StoreOutcome> {
                use $crate::routes::{Mode, PoolRole};
                let key = key.as_ref();
                let mode = self.state.mode();
                if let Mode::Gutter(_) = mode {
                    self.clean_gutter()$(.$await)?;
                }
                let owner_now = |p: PoolRole| self.owner(p, key);
                let main_down = || self.pools[0].core.owner_down(key);
                let p = self.state.cas_target(mode, key, token, owner_now, main_down)?;
                let mut exptime = expiry.into().exptime_now();
                if let (Mode::Gutter(ttl), PoolRole::Second) = (mode, p) {
                    exptime = $crate::routes::cap_exptime(exptime, ttl, std::time::SystemTime::now());
                    self.to_gutter(key)?;
                }
                let cmd = $crate::proto::StoreCommand::Cas(token.unique);
                let r = self.pools[p.index()].store(cmd, key, value.as_ref(), (flags, exptime))$(.$await)?;
                let r = match (mode, p, r) {
                    (Mode::Gutter(_), PoolRole::First, Err(e)) if $crate::routes::is_failure(&e) => {
                        let why = format!("its main server failed ({e}) and a cas is never failed over: read the key again with gets and retry");
                        return Err(self.state.refuse("cas", key, why));
                    }
                    (_, _, r) => r?,
                };
                if r == $crate::StoreOutcome::Stored {
                    match mode {
                        Mode::WarmUp if !self.same_copy(key)? => self.drop_copy(PoolRole::Second, key)$(.$await)?,
                        Mode::Mirror(_) => self.drop_copy(p.other(), key)$(.$await)?,
                        _ => {}
                    }
                }
                Ok(r)
            }

            $($async)? fn write_on(&self, p: $crate::routes::PoolRole, key: &[u8], w: $crate::routes::Write<'_>) -> $crate::Result<$crate::routes::Written> {
                use $crate::routes::{Write, Written};
                let c = &self.pools[p.index()];
                Ok(match w {
                    Write::Store { cmd, value, flags, exptime } => {
                        Written::Store(c.store(cmd, key, value, (flags, exptime))$(.$await)??)
                    }
                    Write::Delete => Written::Delete(c.delete(key)$(.$await)??),
                    Write::Touch(exptime) => Written::Touch(c.touch_exptime(key, exptime)$(.$await)??),
                    Write::Arith { incr, delta } => Written::Arith(c.arith(incr, key, delta)$(.$await)??),
                })
            }

            $($async)? fn write(&self, key: &[u8], w: $crate::routes::Write<'_>) -> $crate::Result<$crate::routes::Written> {
                use $crate::routes::{Mode, PoolRole, Write};
                match self.state.mode() {
                    Mode::One(p) => self.write_on(p, key, w)$(.$await)?,
                    Mode::DeletesBoth if matches!(w, Write::Delete) && !self.same_copy(key)? => {
                        self.both_answer(key, w)$(.$await)?
                    }
                    Mode::DeletesBoth => self.write_on(PoolRole::First, key, w)$(.$await)?,
                    Mode::WarmUp => self.warm_write(key, w)$(.$await)?,
                    Mode::Gutter(ttl) => self.gutter_write(key, w, ttl)$(.$await)?,
                    Mode::Mirror(p) => self.mirror_write(p, key, w)$(.$await)?,
                }
            }

            /// `w` on both copies: a delete on the other copy first (so that a concurrent
            /// reader cannot copy the deleted value back), anything else on `preferred` first.
            /// The result to return, and the other copy's answer when both took it.
            $($async)? fn both(
                &self,
                preferred: $crate::routes::PoolRole,
                key: &[u8],
                w: $crate::routes::Write<'_>,
                any_ok: bool,
            ) -> ($crate::Result<$crate::routes::Written>, Option<$crate::routes::Written>) {
                let other = preferred.other();
                let (rp, ro) = if matches!(w, $crate::routes::Write::Delete) {
                    let ro = self.write_on(other, key, w)$(.$await)?;
                    (self.write_on(preferred, key, w)$(.$await)?, ro)
                } else {
                    let rp = self.write_on(preferred, key, w)$(.$await)?;
                    (rp, self.write_on(other, key, w)$(.$await)?)
                };
                let both_ok = match (&rp, &ro) {
                    (Ok(_), Ok(o)) => Some(*o),
                    _ => None,
                };
                let (r, fix) = $crate::routes::settle((preferred, rp), (other, ro), any_ok);
                if let Some((p, failed)) = fix {
                    self.repair(p, key, failed)$(.$await)?;
                }
                (r, both_ok)
            }

            /// A set, touch or delete on both copies of a warm-up (new pool first): the new
            /// pool's answer, unless only the old copy had the key (a touch or delete found it
            /// there): for the route the key existed.
            $($async)? fn both_answer(&self, key: &[u8], w: $crate::routes::Write<'_>) -> $crate::Result<$crate::routes::Written> {
                match self.both($crate::routes::PoolRole::First, key, w, false)$(.$await)? {
                    (Ok(new), Some(old)) if new.absent() && old.took() => Ok(old),
                    (r, _) => r,
                }
            }

            /// Copy `p` of `key` missed a write the other copy took: delete it now if its
            /// server answered, else have its client keep the server out of reads until the
            /// key is deleted there.
            $($async)? fn repair(&self, p: $crate::routes::PoolRole, key: &[u8], failed: bool) {
                use $crate::routes::Counter;
                self.state.count(Counter::repairs_recorded);
                if let $crate::routes::Kind::Mirror { .. } = self.state.kind {
                    self.state.count(Counter::mirror_partial_writes);
                }
                if !failed && self.pools[p.index()].delete(key)$(.$await)?.is_ok() {
                    return;
                }
                // the key was valid for the write just made, so this cannot fail on the key
                let _ = self.pools[p.index()].written_elsewhere(key);
            }

            /// Copy `p` of `key` is stale after a read-modify command on the other one: delete
            /// it (or have it repaired).
            $($async)? fn drop_copy(&self, p: $crate::routes::PoolRole, key: &[u8]) {
                match self.pools[p.index()].delete(key)$(.$await)? {
                    Ok(_) => self.state.count($crate::routes::Counter::old_copies_deleted),
                    Err(e) => self.repair(p, key, $crate::routes::is_failure(&e))$(.$await)?,
                }
            }

            $($async)? fn warm_write(&self, key: &[u8], w: $crate::routes::Write<'_>) -> $crate::Result<$crate::routes::Written> {
                use $crate::routes::{Class, PoolRole::{First, Second}, Written};
                if self.same_copy(key)? {
                    return self.write_on(First, key, w)$(.$await)?;
                }
                match w.class() {
                    Class::Overwrite => self.both_answer(key, w)$(.$await)?,
                    Class::Add => match self.old_value(key)$(.$await)? {
                        // present in the old pool: the key exists for the route
                        Some(item) => {
                            self.backfill(key, &item)$(.$await)?;
                            Ok(Written::Store($crate::StoreOutcome::NotStored))
                        }
                        None => self.write_on(First, key, w)$(.$await)?,
                    },
                    Class::ReadModify => {
                        let mut r = self.write_on(First, key, w)$(.$await)??;
                        if r.absent() {
                            if let Some(item) = self.old_value(key)$(.$await)? {
                                self.backfill(key, &item)$(.$await)?;
                                r = self.write_on(First, key, w)$(.$await)??;
                            }
                        }
                        if r.took() {
                            self.drop_copy(Second, key)$(.$await)?;
                        }
                        Ok(r)
                    }
                }
            }

            $($async)? fn gutter_write(&self, key: &[u8], w: $crate::routes::Write<'_>, ttl: u32) -> $crate::Result<$crate::routes::Written> {
                use $crate::routes::PoolRole::{First, Second};
                self.clean_gutter()$(.$await)?;
                let e = match self.write_on(First, key, w)$(.$await)? {
                    Err(e) if $crate::routes::is_failure(&e) => e,
                    r => return r,
                };
                if !w.gutter_may_take() {
                    let why = format!("its main server failed ({e}), and on the gutter it would start from nothing: retry once the server is back");
                    return Err(self.state.refuse(w.command(), key, why));
                }
                self.to_gutter(key)?;
                self.write_on(Second, key, w.capped(ttl, std::time::SystemTime::now()))$(.$await)?
            }

            /// `key`'s main server failed and the gutter takes its write: the main server
            /// deletes the key before it serves reads again (held out first, so that the
            /// gutter log never sees the server up with this key unrecorded), and the gutter
            /// deletes it once the server is back.
            fn to_gutter(&self, key: &[u8]) -> $crate::Result<()> {
                let (server, _) = self.pools[0].core.locate(key)?;
                self.pools[0].written_elsewhere(key)?;
                self.state.gutter.record(&server, key);
                self.state.count($crate::routes::Counter::gutter_requests);
                Ok(())
            }

            /// Delete from the gutter what it took for main servers that are back.
            $($async)? fn clean_gutter(&self) {
                use $crate::routes::GutterCleanup;
                if !self.state.gutter.any() {
                    return;
                }
                let down = || self.pools[0].down_servers().into_iter().map(|s| s.addr).collect();
                for (server, todo) in self.state.gutter.take_returned(down) {
                    match todo {
                        GutterCleanup::Delete(keys) => {
                            let results = self.pools[1].delete_multi(&keys)$(.$await)?;
                            let mut left = Vec::new();
                            for (k, r) in keys.into_iter().zip(results) {
                                match r {
                                    Ok(_) => self.state.count($crate::routes::Counter::gutter_cleanup_deletes),
                                    Err(_) => left.push(k),
                                }
                            }
                            self.state.gutter.put_back(&server, left);
                        }
                        GutterCleanup::Flush => {
                            let flushed = self.pools[1].flush_all(None)$(.$await)?;
                            if flushed.iter().any(|(_, r)| r.is_err()) {
                                self.state.gutter.overflow(&server);
                            }
                        }
                    }
                }
            }

            $($async)? fn mirror_write(&self, preferred: $crate::routes::PoolRole, key: &[u8], w: $crate::routes::Write<'_>) -> $crate::Result<$crate::routes::Written> {
                let (r, other) = self.both(preferred, key, w, true)$(.$await)?;
                let differ = matches!((&r, other), (Ok(a), Some(b)) if *a != b);
                if differ && w.class() != $crate::routes::Class::Overwrite {
                    self.state.count($crate::routes::Counter::mirror_divergences);
                    self.drop_copy(preferred.other(), key)$(.$await)?;
                }
                r
            }

            /// Read `key` from both pools and compare value and flags: false (and counted as a
            /// divergence) when both have it and the copies differ. A copy missing from one
            /// pool is not a divergence (it was deleted, or never reached it).
            pub $($async)? fn verify(&self, key: impl AsRef<[u8]>) -> $crate::Result<bool> {
                let key = key.as_ref();
                let a = self.pools[0].get(key)$(.$await)??;
                let b = self.pools[1].get(key)$(.$await)??;
                let same = match (a, b) {
                    (Some(a), Some(b)) => a.value == b.value && a.flags == b.flags,
                    _ => true,
                };
                if !same {
                    self.state.count($crate::routes::Counter::mirror_divergences);
                }
                Ok(same)
            }

            /// Set many items: see [the table](crate::routes) for each route. Results in
            /// input order.
            #[must_use = "each item has its own result"]
            pub $($async)? fn set_multi<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
                &self,
                items: &[(K, V)],
                flags: u32,
                expiry: impl Into<$crate::Expiry>,
            ) -> Vec<$crate::Result<$crate::StoreOutcome>> {
                use $crate::routes::{Mode, PoolRole::First};
                let expiry = expiry.into();
                let (preferred, any_ok) = match self.state.mode() {
                    Mode::One(p) => return self.pools[p.index()].set_multi(items, flags, expiry)$(.$await)?,
                    Mode::DeletesBoth => return self.pools[0].set_multi(items, flags, expiry)$(.$await)?,
                    Mode::Gutter(ttl) => {
                        self.clean_gutter()$(.$await)?;
                        let mut out = self.pools[0].set_multi(items, flags, expiry)$(.$await)?;
                        let failed = self.gutter_takes(&mut out, |i| items[i].0.as_ref());
                        if failed.is_empty() {
                            return out;
                        }
                        let exptime = $crate::routes::cap_exptime(expiry.exptime_now(), ttl, std::time::SystemTime::now());
                        let sub: Vec<(&[u8], &[u8])> = failed.iter().map(|&i| (items[i].0.as_ref(), items[i].1.as_ref())).collect();
                        let second = self.pools[1].set_multi(&sub, flags, $crate::routes::expiry_of(exptime))$(.$await)?;
                        for (&i, r) in failed.iter().zip(second) {
                            out[i] = r;
                        }
                        return out;
                    }
                    Mode::WarmUp => (First, false),
                    Mode::Mirror(p) => (p, true),
                };
                let rp = self.pools[preferred.index()].set_multi(items, flags, expiry)$(.$await)?;
                let two = self.two_copies(items.len(), |i| items[i].0.as_ref(), any_ok);
                let sub: Vec<(&[u8], &[u8])> = two.iter().map(|&i| (items[i].0.as_ref(), items[i].1.as_ref())).collect();
                let other = preferred.other();
                let ro = self.pools[other.index()].set_multi(&sub, flags, expiry)$(.$await)?;
                let ro = $crate::routes::spread(items.len(), &two, ro);
                let (out, fixes) = $crate::routes::settle_all((preferred, rp), (other, ro), any_ok);
                for (i, p, failed) in fixes {
                    self.repair(p, items[i].0.as_ref(), failed)$(.$await)?;
                }
                out
            }

            /// Delete many keys: see [the table](crate::routes) for each route. Results in
            /// input order.
            #[must_use = "each key has its own result"]
            pub $($async)? fn delete_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Vec<$crate::Result<$crate::DeleteOutcome>> {
                use $crate::routes::{Mode, PoolRole::First};
                let (preferred, any_ok) = match self.state.mode() {
                    Mode::One(p) => return self.pools[p.index()].delete_multi(keys)$(.$await)?,
                    Mode::Gutter(_) => {
                        self.clean_gutter()$(.$await)?;
                        let mut out = self.pools[0].delete_multi(keys)$(.$await)?;
                        let failed = self.gutter_takes(&mut out, |i| keys[i].as_ref());
                        if failed.is_empty() {
                            return out;
                        }
                        let sub: Vec<&[u8]> = failed.iter().map(|&i| keys[i].as_ref()).collect();
                        let second = self.pools[1].delete_multi(&sub)$(.$await)?;
                        for (&i, r) in failed.iter().zip(second) {
                            out[i] = r;
                        }
                        return out;
                    }
                    Mode::WarmUp | Mode::DeletesBoth => (First, false),
                    Mode::Mirror(p) => (p, true),
                };
                // the other copy first, as for one key
                let other = preferred.other();
                let two = self.two_copies(keys.len(), |i| keys[i].as_ref(), any_ok);
                let sub: Vec<&[u8]> = two.iter().map(|&i| keys[i].as_ref()).collect();
                let ro = self.pools[other.index()].delete_multi(&sub)$(.$await)?;
                let ro = $crate::routes::spread(keys.len(), &two, ro);
                // as for one key: a key only the other copy had existed for the route
                let found_there: Vec<bool> = ro.iter().map(|r| matches!(r, Some(Ok($crate::DeleteOutcome::Deleted)))).collect();
                let rp = self.pools[preferred.index()].delete_multi(keys)$(.$await)?;
                let (mut out, fixes) = $crate::routes::settle_all((preferred, rp), (other, ro), any_ok);
                for (r, found) in out.iter_mut().zip(found_there) {
                    if found && matches!(r, Ok($crate::DeleteOutcome::NotFound)) {
                        *r = Ok($crate::DeleteOutcome::Deleted);
                    }
                }
                for (i, p, failed) in fixes {
                    self.repair(p, keys[i].as_ref(), failed)$(.$await)?;
                }
                out
            }

            /// The indexes of the keys held in two copies (a mirror's are all).
            fn two_copies<'k>(&self, n: usize, key: impl Fn(usize) -> &'k [u8], mirror: bool) -> Vec<usize> {
                (0..n).filter(|&i| mirror || matches!(self.same_copy(key(i)), Ok(false))).collect()
            }

            /// The indexes of `out` that failed on the main pool, each recorded for the
            /// gutter (a key that cannot be recorded keeps its error).
            fn gutter_takes<'k, T>(&self, out: &mut [$crate::Result<T>], key: impl Fn(usize) -> &'k [u8]) -> Vec<usize> {
                let mut failed = Vec::new();
                for (i, r) in out.iter_mut().enumerate() {
                    if matches!(r, Err(e) if $crate::routes::is_failure(e)) {
                        match self.to_gutter(key(i)) {
                            Ok(()) => failed.push(i),
                            Err(e) => *r = Err(e),
                        }
                    }
                }
                failed
            }
        }
    };
}

pub(crate) use router_handle;
