//! The blocking client's prober: one thread probes every down server of a client, started by
//! the first server to go down and ended when none is left down (the schedule is the core's,
//! [`crate::core::failure::eject`]).

use super::conn::Conn;
use super::pool::Pool;
use crate::core::Core;
use crate::core::failure::probe::{Rejoin, Target};
use crate::core::view::Member;
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
            probe(&core, &m);
        }
        let Some(wait) = core.probes_left() else {
            return;
        };
        drop(core);
        std::thread::sleep(wait);
    }
}

/// Run the probe of `m` where the core says: its exchanges on `m` on one connection, each
/// fallback's on a new one.
fn probe(core: &Shared, m: &Arc<Member<Pool>>) {
    let opts = &core.settings.conn;
    let connect = |m: &Member<Pool>| {
        Conn::connect(m.server.connect_host(), m.server.port, &m.server.addr, opts)
    };
    let mut rejoin = Rejoin::new(core, m);
    let mut probed: Option<Conn> = None;
    while let Some(target) = rejoin.target() {
        let ok = match target {
            Target::Probed => match probed.take().map_or_else(|| connect(m), Ok) {
                Ok(mut c) => {
                    let ok = c.run(&mut rejoin).is_ok();
                    probed = ok.then_some(c);
                    ok
                }
                Err(_) => false,
            },
            Target::Fallback(f) => connect(&f).and_then(|mut c| c.run(&mut rejoin)).is_ok(),
        };
        rejoin.ran(ok);
    }
}
