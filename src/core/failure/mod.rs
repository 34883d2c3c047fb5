//! Failure handling, in one place: what a failed request means for the request (sent again on a
//! new connection, or returned) and for its server (counted, marked down, ejected from the ring,
//! probed, cleaned and rejoined). Both clients drive it; neither decides any of it.
//!
//! | module | its one job |
//! |---|---|
//! | `call` | one request's verdict after a failure; its metrics and trace span |
//! | `health` | one server's failure count and down state, a state machine with the clock passed in |
//! | `eject` | outcomes → health → ejection: marking down, the ring over live servers, the probe schedule |
//! | `probe` | the exchange that brings a down server back |
//! | `rejoin` | the keys written elsewhere while a server was out, deleted before it takes reads |
//!
//! [`Failures`] is the type a reader looks for: the calls each client makes into this module.
//!
//! May import: `crate::core` (its exchanges, view and `Core`), `crate::settings`,
//! `crate::error`, `crate::observe`. Never a socket.

pub(crate) mod call;
pub(crate) mod eject;
pub(crate) mod health;
pub(crate) mod probe;
pub(crate) mod rejoin;
