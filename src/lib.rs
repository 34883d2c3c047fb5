//! memshard: a memcached client that places every key on exactly the server other clients pick.
pub mod hash;
pub mod proto;
pub mod ring;
pub mod servers;

pub use hash::{KeyHash, UnknownHash};
pub use ring::{BadHashTag, FLAVORS, Flavor, HashTag, Ring, RingError, UnknownFlavor};
pub use servers::{Server, ServerListError, parse_server_list};
pub mod client;
pub mod conn;
pub mod error;
pub mod pool;

pub use client::{Builder, Client, DeleteOutcome, Item, Stats, StoreOutcome, TouchOutcome};
pub use error::{Error, Result};
