//! Running one job per item (per server) in parallel, on at most [`FAN_OUT_THREADS`] threads.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Threads (the caller's included) a multi-key write or a command to every server uses at
/// most; the items are shared out among them. A thread per server would be thousands of
/// threads for thousands of servers.
const FAN_OUT_THREADS: usize = 32;

/// `f(item)` for each of `items`, in parallel; results in item order.
pub(crate) fn fan_out<'a, G: Sync, T: Send>(
    items: &'a [G],
    f: impl Fn(&'a G) -> T + Sync,
) -> Vec<T> {
    if items.len() <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            out.push((i, f(item)));
        }
        out
    };
    let work = &work;
    let helpers = items.len().min(FAN_OUT_THREADS) - 1;
    let mut all = std::thread::scope(|s| {
        let handles: Vec<_> = (0..helpers).map(|_| s.spawn(work)).collect();
        let mut all = work();
        for h in handles {
            match h.join() {
                Ok(v) => all.extend(v),
                // Our per-server work does not panic; if it did, re-raise it here.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        all
    });
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, t)| t).collect()
}
