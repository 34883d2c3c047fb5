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
//! assert_eq!(client.set("k", "v", std::time::Duration::from_secs(300)).await?, StoreOutcome::Stored);
//! let values = client.get_multi(&["k", "other"]).await; // all servers concurrently
//! # Ok(()) }
//! ```
//!
//! # Design: a bb8 pool per server, one request per connection at a time
//!
//! Each server gets a [bb8](https://docs.rs/bb8) pool of connections (`pool_size`,
//! `min_idle`, `checkout_timeout` map to bb8's `max_size`, `min_idle`, `connection_timeout`;
//! the client checks each connection it checks out itself, see *Stale connections* below).
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
//! until the client has read every reply of the exchange; a
//! connection that goes back to its pool in flight — because the future using it was dropped
//! by a `timeout`, a `select!`, or an aborted task — is closed by bb8 (`has_broken`), so no
//! later request can read a reply meant for a cancelled one. `tests/async_live.rs` cancels
//! thousands of requests at random points and checks every value read afterwards.
//!
//! # Failures
//!
//! The blocking client's [`FailurePolicy`](crate::FailurePolicy) state machine
//!: after `failure_limit` consecutive failures a server is down and
//! its keys fail fast with `ServerDown`; a tokio task probes it after `retry_timeout`; with
//! `auto_eject` its keys move to the ring over the live servers, built by the same code as the
//! blocking client's.
//!
//! A connect that fails ends the checkout at once with its own error (`Io` with
//! `ConnectionRefused`, or a connect `Timeout`), counted once for the server however many
//! checkouts were waiting for it. bb8 0.9 alone would not: with `retry_connection(false)` a
//! failed background connect only frees its slot, and the checkouts waiting for it sleep until
//! their `connection_timeout`; the client watches the pool's connect errors instead. So a
//! refusing server costs its own keys one connect attempt each until it is marked down, and
//! never holds the other servers' keys of a multi-key call, nor the other tasks.
//!
//! # Stale connections and bytes nobody asked for
//!
//! A pooled connection may have been closed by the server while it sat idle (memcached
//! `-o idle_timeout`, a restart), or the server may have written bytes that no request asked
//! for. Every checkout first makes one non-blocking read on the socket
//! (no round trip): a connection at end of stream, reset, or with
//! bytes waiting is dropped and the next one taken, and this counts nothing against the
//! server. (A connection that fails this on its very first checkout, fresh from connecting,
//! does count: the server closes or talks to new connections.)
//!
//! The server can also close the connection just as the request arrives. A failure that looks
//! like that (end of stream, reset or broken pipe, on a reused connection, before any byte of
//! the reply) does not count either; instead:
//!
//! - reads, `set`, `replace`, `delete`, `touch`, the multi-key calls and the server-wide
//!   commands are sent again, once, on a new connection, and that outcome counts;
//! - `add`, `incr`, `decr`, `cas`, `append` and `prepend` are never sent twice once a byte was
//!   written (a second application would change the value again, or report a false
//!   conflict): the error is returned, saying so, and counts nothing against the server; the
//!   next request's new connection finds out whether the server is well.
//!
//! These rules, and everything else that is not I/O, are the blocking client's own: both
//! clients run the same sans-IO core.
//!
//! A reply that cannot belong to its request (`STORED` to a get, a `VALUE` for a key that was
//! not asked for) is a `Protocol` error, and the connection is dropped.
//!
//! # Live membership
//!
//! As the blocking client: [`Client::set_servers`] swaps in a new view (ring, members, routing)
//! atomically. Every request loads the view once and finishes on it; servers that stay (same
//! host and port) keep their pool and health, new servers get pools, and a removed server's
//! pool is dropped when its last request ends. [`Client::plan_servers`] tells beforehand which
//! share of keys the change moves.
//!
//! Layer: a client. May import: `core`, `settings`, tokio and bb8; never
//! `blocking`. Decides nothing the core decides.

mod client;
mod conn;
mod pool;
mod prober;
mod read_timer;
mod replica;
mod router;

/// The builder of the async [`Client`]: the blocking client's settings, names and defaults.
pub type Builder = crate::Builder<Client>;
pub use client::Client;
pub use replica::Replicated;
pub use router::Router;
