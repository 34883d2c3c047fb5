//! The async client's prober: one task probes every down server of a client, started by the
//! first server to go down and ended when none is left down (the schedule is the core's,
//! [`crate::core::failure::eject`]). A probe runs on a connection to the down server and on one
//! to each fallback that took copies of its keys, where and in the order
//! [`crate::core::failure::probe`] decides.

use super::conn::AsyncConn;
use super::pool::Pool;
use crate::core::Core;
use crate::core::failure::probe::{Rejoin, Target};
use crate::core::view::Member;
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
            probe(&core, &m).await;
        }
        let Some(wait) = core.probes_left() else {
            return;
        };
        drop(core);
        tokio::time::sleep(wait).await;
    }
}

/// Run the probe of `m` where the core says: its exchanges on `m` on one connection, each
/// fallback's on a new one.
async fn probe(core: &Shared, m: &Arc<Member<Pool>>) {
    let mut rejoin = Rejoin::new(core, m);
    let mut probed: Option<AsyncConn> = None;
    while let Some(target) = rejoin.target() {
        let ok = match target {
            Target::Probed => {
                let conn = match probed.take() {
                    Some(c) => Ok(c),
                    None => connect(core, m).await,
                };
                match conn {
                    Ok(mut c) => {
                        let ok = c.run(&mut rejoin).await.is_ok();
                        probed = ok.then_some(c);
                        ok
                    }
                    Err(_) => false,
                }
            }
            Target::Fallback(f) => match connect(core, &f).await {
                Ok(mut c) => c.run(&mut rejoin).await.is_ok(),
                Err(_) => false,
            },
        };
        rejoin.ran(ok);
    }
}

async fn connect(core: &Shared, m: &Member<Pool>) -> crate::error::Result<AsyncConn> {
    let s = &m.server;
    AsyncConn::connect(s.connect_host(), s.port, &s.addr, &core.settings.conn).await
}
