//! Failure handling, in one place: what a failed request means for the request (sent again on a
//! new connection, or returned) and for its server (counted, marked down, ejected from the ring,
//! probed, cleaned and rejoined). Both clients drive it; neither decides any of it.
//!
//! | module | its one job |
//! |---|---|
//! | `call` | one request's verdict after a failure; its metrics and trace span |
//! | `health` | one server's failure count and down state, a state machine with the clock passed in |
//! | `eject` | outcomes → health → ejection: marking down, the ring over live servers, the probe schedule |
//! | `probe` | the exchanges that bring a down server back: on it, then on its fallbacks |
//! | `rejoin` | the keys written elsewhere while a server was out, and where: deleted on it and on those fallbacks before it takes reads |
//!
//! [`Failures`] is the type a reader looks for: a client's failure state, held by its `Core`.
//! What the clients call: `Core::call` and `Core::ended` around every request (`call`),
//! [`call::after_failure`] after a failed exchange, `Core::available` before a checkout,
//! `Core::probe_round` / `Core::probes_left` from their prober, and [`probe::Rejoin`] as the
//! prober's exchanges: where to run the next one, and how it went (`eject`, `probe`).
//!
//! May import: `core` (its exchanges, view and `Core`), `settings`,
//! `error`, `observe`. Never a socket.

pub(crate) mod call;
pub(crate) mod eject;
pub(crate) mod health;
pub(crate) mod probe;
pub(crate) mod rejoin;

use super::view::Member;
use crate::settings::FailurePolicy;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A client's failure handling state; per-server state (health, rejoin log) is in each member.
pub(crate) struct Failures<P> {
    /// When a server is marked down, for how long, and whether its keys move meanwhile.
    pub(crate) policy: FailurePolicy,
    /// The clock origin of every member's health.
    pub(crate) epoch: Instant,
    /// The down servers the prober watches, and whether it runs.
    pub(crate) probes: Mutex<Probes<P>>,
}

impl<P> Failures<P> {
    pub(crate) fn new(policy: FailurePolicy) -> Self {
        Failures {
            policy,
            epoch: Instant::now(),
            probes: Mutex::new(Probes {
                members: Vec::new(),
                running: false,
            }),
        }
    }
}

/// Down servers waiting for their probe, and whether the prober runs.
pub(crate) struct Probes<P> {
    pub(crate) members: Vec<Arc<Member<P>>>,
    pub(crate) running: bool,
}
