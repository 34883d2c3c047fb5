//! The blocking client's prober: one thread probes every down server of a client, started by
//! the first server to go down and ended when none is left down (the schedule is the core's,
//! [`crate::core::failure::eject`]).

use super::conn::Conn;
use super::pool::Pool;
use crate::core::Core;
use crate::core::failure::probe::Rejoin;
use std::sync::{Arc, Weak};

type Shared = Core<Pool>;

/// Start the prober thread for `core`.
pub(crate) fn start(core: &Arc<Shared>) {
    let weak = Arc::downgrade(core);
    let spawned = std::thread::Builder::new()
        .name("memshard-prober".into())
        .spawn(move || run(weak));
    if spawned.is_err() {
        core.prober_not_started();
    }
}

fn run(weak: Weak<Shared>) {
    loop {
        // Hold the client only while working, so dropping it ends this thread.
        let Some(core) = weak.upgrade() else { return };
        for m in core.probe_round() {
            let mut rejoin = Rejoin::new(&core, &m);
            let (s, opts) = (&m.server, &core.settings.conn);
            let probed =
                Conn::connect(&s.host, s.port, &s.addr, opts).and_then(|mut c| c.run(&mut rejoin));
            if probed.is_err() {
                rejoin.failed();
            }
        }
        let Some(wait) = core.probes_left() else {
            return;
        };
        drop(core);
        std::thread::sleep(wait);
    }
}
