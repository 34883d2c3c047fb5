//! One pool: a client's ring and servers, the leaf of every route. Each command is the
//! client's own; a `cas` goes only to the server its token came from.

use super::{Client, Count, Fut, Items, Policy, Stored};
use crate::Expiry;
use crate::core::large;
use crate::core::ops;
use crate::core::transport::Transport;
use crate::error::{Error, Result};
use crate::outcome::{DeleteOutcome, Item, StoreOutcome};
use crate::proto::StoreCommand;
use crate::routes::{PoolRole, RouteCas, RouteItem, Write, Written};

/// A pool named `name` in its route.
pub(crate) struct Pool<T> {
    pub(crate) name: String,
    pub(crate) client: T,
    pub(crate) count: Count,
}

/// `w` on `client`'s copy of `key`.
pub(crate) async fn write_on<T: Transport>(
    client: &T,
    key: &[u8],
    w: Write<'_>,
) -> Result<Written> {
    Ok(match w {
        Write::Store {
            cmd,
            value,
            flags,
            exptime,
        } => Written::Store(large::store(client, cmd, key, value, (flags, exptime)).await?),
        Write::Delete => Written::Delete(large::delete(client, key).await?),
        Write::Touch(exptime) => Written::Touch(large::touch(client, key, exptime).await?),
        Write::Arith { incr, delta } => Written::Arith(ops::arith(client, incr, key, delta).await?),
    })
}

impl<T: Client> Pool<T> {
    fn owner(&self, key: &[u8]) -> Result<String> {
        Ok(self.client.core().locate(key)?.0)
    }

    async fn gets(&self, key: &[u8]) -> Result<Option<RouteItem>> {
        let Some(item) = large::retrieve(&self.client, key, true, None).await? else {
            return Ok(None);
        };
        let server = self.owner(key)?;
        let unique = item
            .cas
            .ok_or_else(|| Error::protocol(&server, "gets answered without a CAS unique"))?;
        let token = RouteCas {
            pool: PoolRole::First,
            server,
            unique,
        };
        Ok(Some(RouteItem { item, token }))
    }

    async fn cas(&self, key: &[u8], v: Stored<'_>, token: &RouteCas) -> Result<StoreOutcome> {
        let now = self.owner(key)?;
        if now != token.server {
            let why = format!(
                "the token came from {} but pool {} keeps the key on {now} now: read the key again with gets and retry",
                token.server, self.name
            );
            return Err(self.count.refuse("cas", key, why));
        }
        let cmd = StoreCommand::Cas(token.unique);
        let meta = (v.flags, v.expiry.exptime_now());
        large::store(&self.client, cmd, key, v.value, meta).await
    }

    async fn repair(&self, key: &[u8], failed: bool) {
        self.count.one(crate::routes::Counter::repairs_recorded);
        if !failed && large::delete(&self.client, key).await.is_ok() {
            return;
        }
        // the key was valid for the write just made, so this cannot fail on the key
        let _ = self.client.written_elsewhere(key);
    }
}

impl<T: Client> Policy<T> for Pool<T> {
    fn get<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<Item>>> {
        Box::pin(large::get(&self.client, key))
    }

    fn gets<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<RouteItem>>> {
        Box::pin(Pool::gets(self, key))
    }

    fn get_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<Option<Item>>>> {
        Box::pin(self.client.get_multi(keys))
    }

    fn write<'a>(&'a self, key: &'a [u8], w: Write<'a>) -> Fut<'a, Result<Written>> {
        Box::pin(write_on(&self.client, key, w))
    }

    fn cas<'a>(
        &'a self,
        key: &'a [u8],
        value: Stored<'a>,
        token: &'a RouteCas,
    ) -> Fut<'a, Result<StoreOutcome>> {
        Box::pin(Pool::cas(self, key, value, token))
    }

    fn set_multi<'a>(
        &'a self,
        items: &'a Items<'a>,
        flags: u32,
        expiry: Expiry,
    ) -> Fut<'a, Vec<Result<StoreOutcome>>> {
        Box::pin(large::set_multi(&self.client, items, flags, expiry))
    }

    fn delete_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<DeleteOutcome>>> {
        Box::pin(large::delete_multi(&self.client, keys))
    }

    fn verify<'a>(&'a self, _key: &'a [u8]) -> Fut<'a, Result<bool>> {
        // one copy agrees with itself
        Box::pin(async { Ok(true) })
    }

    fn repair<'a>(&'a self, key: &'a [u8], failed: bool) -> Fut<'a, ()> {
        Box::pin(Pool::repair(self, key, failed))
    }

    fn owners(&self, key: &[u8]) -> Result<Vec<String>> {
        Ok(vec![self.owner(key)?])
    }

    fn servers(&self) -> Vec<String> {
        let ring = self.client.core().ring();
        ring.servers().iter().map(|s| s.addr.clone()).collect()
    }

    fn describe(&self) -> String {
        format!("{} [{}]", self.name, self.servers().join(", "))
    }
}
