//! The async client (feature `async`): [`Client`] over tokio, with the blocking client's
//! builder options, commands, outcomes, errors, ring and failure policy.
//!
//! ```no_run
//! # async fn demo() -> memshard::Result<()> {
//! use memshard::StoreOutcome;
//! use memshard::aio::Client;
//! let client = Client::builder()
//!     .server_list("127.0.0.1:11211 2\n127.0.0.1:11212 1")?
//!     .build()?; // inside a tokio runtime
//! assert_eq!(client.set("k", "v", 0, 300).await?, StoreOutcome::Stored);
//! let values = client.get_multi(&["k", "other"]).await; // all servers concurrently
//! # Ok(()) }
//! ```
//!
//! # Design: a bb8 pool per server, one request per connection at a time
//!
//! Each server gets a [bb8](https://docs.rs/bb8) pool of [`AsyncConn`]s (`pool_size`,
//! `min_idle`, `checkout_timeout`, `ping_on_checkout` map to bb8's `max_size`, `min_idle`,
//! `connection_timeout`, `test_on_check_out`, as they map to r2d2's in the blocking client).
//! A request checks a connection out, writes, reads its whole reply, and returns it.
//!
//! The alternative, one multiplexed connection per server with requests pipelined by a writer
//! task and replies matched in order by a reader task, was measured against it in
//! `benches/async_client.rs` (which carries a minimal multiplexed prototype, gets only). One
//! memcached on loopback, 2 worker threads, 32-byte values, median of 5 (2026-11-29, load
//! average ~2.3 from other work, so ±20 %):
//!
//! | gets | bb8 pool (8 conns) | multiplexed (1 conn) | async-memcached (8 conns) |
//! |---|---|---|---|
//! | sequential latency | 9.0 µs | 8.0 µs | 7.8 µs |
//! | 8 concurrent tasks | 142,000 ops/s | 192,000 ops/s | 176,000 ops/s |
//! | 64 concurrent tasks | 130,000 ops/s | 290,000 ops/s | 177,000 ops/s |
//!
//! Multiplexing wins throughput at high concurrency (many requests per write and per read
//! syscall, 2.2x at 64 tasks); latency is the same. The pool is kept because it is the
//! blocking client's model, option for option, and because its failure and cancellation
//! semantics are per request: a timeout, a slow large value or a cancelled future costs one
//! connection and one request, whereas on a multiplexed connection a stalled or huge reply
//! holds up every request queued behind it, a timeout must fail (or reconnect under) every
//! request in flight, and a cancelled request still occupies its place in the reply order.
//! Services that need more than ~130k gets/s per server from one process are the case for
//! adding a multiplexed mode later.
//!
//! The pool also keeps the blocking client's semantics exactly: a timeout or error drops one
//! connection and fails one request, whereas on a multiplexed connection a stalled reply (one
//! large value, one timeout) holds up or fails every request queued behind it.
//!
//! # Cancellation
//!
//! Every future is cancel-safe. A connection is *in flight* from the first byte of a request
//! until the client has read every reply of the exchange ([`AsyncConn::complete`]); a
//! connection that goes back to its pool in flight — because the future using it was dropped
//! by a `timeout`, a `select!`, or an aborted task — is closed by bb8 (`has_broken`), so no
//! later request can read a reply meant for a cancelled one. `tests/async_live.rs` cancels
//! thousands of requests at random points and checks every value read afterwards.
//!
//! # Failures
//!
//! The blocking client's [`FailurePolicy`](crate::FailurePolicy) state machine
//! ([`health`](crate::health)): after `failure_limit` consecutive failures a server is down and
//! its keys fail fast with `ServerDown`; a tokio task probes it after `retry_timeout`; with
//! `auto_eject` its keys move to the ring over the live servers, built by the same code as the
//! blocking client's.
//!
//! # Live membership
//!
//! As the blocking client: [`Client::set_servers`] swaps in a new view (ring, members, routing)
//! atomically. Every request loads the view once and finishes on it; servers that stay (same
//! host and port) keep their pool and health, new servers get pools, and a removed server's
//! pool is dropped when its last request ends. [`Client::plan_servers`] tells beforehand which
//! share of keys the change moves.

mod client;
mod conn;

pub use client::{Builder, Client};
pub use conn::{AsyncConn, Manager};
