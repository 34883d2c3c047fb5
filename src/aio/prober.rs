//! The async client's prober: one task probes every down server of a client, started by the
//! first server to go down and ended when none is left down (the schedule is the core's,
//! [`crate::core::failure::eject`]).

use super::conn::AsyncConn;
use super::pool::Pool;
use crate::core::Core;
use crate::core::failure::probe::Rejoin;
use std::sync::{Arc, Weak};

type Shared = Core<Pool>;

/// Start the prober task for `core` on `runtime`.
pub(crate) fn start(core: &Arc<Shared>, runtime: &tokio::runtime::Handle) {
    runtime.spawn(run(Arc::downgrade(core)));
}

async fn run(weak: Weak<Shared>) {
    loop {
        // Hold the client only while working, so dropping it ends this task.
        let Some(core) = weak.upgrade() else { return };
        for m in core.probe_round() {
            let mut rejoin = Rejoin::new(&core, &m);
            let (s, opts) = (&m.server, &core.settings.conn);
            let probed = match AsyncConn::connect(&s.host, s.port, &s.addr, opts).await {
                Ok(mut c) => c.run(&mut rejoin).await,
                Err(e) => Err(e),
            };
            if probed.is_err() {
                rejoin.failed();
            }
        }
        let Some(wait) = core.probes_left() else {
            return;
        };
        drop(core);
        tokio::time::sleep(wait).await;
    }
}
