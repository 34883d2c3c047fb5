//! Replicated keys on the async client: the handle is defined once for both clients
//! ([`crate::core::api`]); the copies are the core's ([`crate::core::replica`]).

use super::client::Client;
use super::pool::Pool;

crate::core::api::replicated_handle!(Client, Pool, async await);
