//! The blocking client: [`Client`], its connections, pools, prober and fan-out. Only I/O
//! lives here; what to send and what replies mean is the [core](crate::core).

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
