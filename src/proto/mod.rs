//! The memcached ASCII protocol: request encoding and an incremental reply parser, for the
//! text commands and (in [`meta`]) the meta commands.
//!
//! Everything here is a pure function over bytes, tested without sockets. Keys are checked
//! before anything is encoded, so a hostile key can never smuggle a second command in.
//!
//! Layer: bytes. May import: `std` only; nothing of placement, the core or a client. Its
//! errors are its own types, which `error` wraps.

pub mod discovery;
mod key;
pub mod meta;
pub mod metadump;
mod reply;
mod request;

pub(crate) use key::sendable;
pub use key::{KeyError, MAX_KEY_LEN, validate_key};
pub(crate) use reply::value_of;
pub use reply::{MAX_LINE, ParseError, Parsed, Reply, RetrievalItem, parse_reply, parse_retrieval};
pub(crate) use request::encode_retrieval;
pub use request::{Request, StoreCommand};
