//! The blocking client: [`Client`], its connections, pools, prober and fan-out. Only I/O
//! lives here; what to send and what replies mean is the core's.
//!
//! Layer: a client. May import: `core`, `settings` and the public types; never
//! `aio`. Decides nothing the core decides.

mod client;
mod conn;
mod fan_out;
mod pool;
mod prober;
mod replica;
mod router;

pub use client::Client;
pub use replica::Replicated;
pub use router::Router;
