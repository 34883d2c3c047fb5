//! The memcached meta protocol (1.6 and later): `mg`, `ms`, `md`, `ma`, `mn` requests and their
//! replies, pure functions over bytes like the text layer. What memcached 1.6.18 accepts and
//! answers was recorded from the server in `meta-vectors/`; the tests here replay those
//! transcripts.

mod reply;
mod request;
#[cfg(test)]
mod vectors;

pub use reply::{MetaItem, MetaReply, MetaStatus, MetaTokens, parse_meta};
pub use request::{ArithMode, MetaCommand, MetaEncodeError, MetaFlag, MetaRequest, SetMode};
