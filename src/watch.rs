//! Watchers that keep a client's server list current: a server-list file re-read when it
//! changes, and a DNS name whose addresses are the servers, re-resolved on an interval. Both
//! clients start them (`watch_server_file`, `watch_dns`); each runs on a thread of its own.

use crate::error::Result;
use crate::servers::{Server, parse_server_list};
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running watcher. Dropping it stops the watch.
#[derive(Debug)]
#[must_use = "dropping the watcher stops the watch"]
pub struct Watcher {
    stop: Arc<AtomicBool>,
    state: Arc<WatchState>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct WatchState {
    applied: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Watcher {
    /// Server lists applied so far (including the first one).
    pub fn applied(&self) -> u64 {
        self.state.applied.load(Ordering::Relaxed)
    }

    /// The last problem met (unreadable file, bad line, failed lookup); the client keeps its
    /// servers meanwhile.
    pub fn last_error(&self) -> Option<String> {
        self.state.last_error.lock().ok().and_then(|e| e.clone())
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn spawn(
    apply: impl Fn(Vec<Server>) -> Result<()> + Send + 'static,
    interval: Duration,
    mut read: impl FnMut() -> Result<Vec<Server>, String> + Send + 'static,
) -> Watcher {
    let stop = Arc::new(AtomicBool::new(false));
    let state = Arc::new(WatchState::default());
    let (s2, st2) = (stop.clone(), state.clone());
    let thread = std::thread::Builder::new()
        .name("memshard-watch".into())
        .spawn(move || {
            let mut current: Option<Vec<Server>> = None;
            while !s2.load(Ordering::Relaxed) {
                match read() {
                    Ok(list) if current.as_ref() != Some(&list) => match apply(list.clone()) {
                        Ok(()) => {
                            current = Some(list);
                            st2.applied.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            *st2.last_error.lock().unwrap_or_else(|p| p.into_inner()) =
                                Some(e.to_string())
                        }
                    },
                    Ok(_) => {}
                    Err(e) => *st2.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e),
                }
                // sleep in short steps so that dropping the watcher is prompt
                let mut left = interval;
                while !left.is_zero() && !s2.load(Ordering::Relaxed) {
                    let step = left.min(Duration::from_millis(50));
                    std::thread::sleep(step);
                    left -= step;
                }
            }
        })
        .ok();
    Watcher {
        stop,
        state,
        thread,
    }
}

/// Re-read the server-list file at `path` every `interval`; when its servers change, `apply`
/// them. A file that cannot be read or parsed leaves the servers as they are (see
/// [`Watcher::last_error`]).
pub(crate) fn server_file(
    apply: impl Fn(Vec<Server>) -> Result<()> + Send + 'static,
    path: PathBuf,
    interval: Duration,
) -> Watcher {
    spawn(apply, interval, move || {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let list = parse_server_list(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if list.is_empty() {
            return Err(format!(
                "{}: no servers; keeping the current list",
                path.display()
            ));
        }
        Ok(list)
    })
}

/// Resolve `name` every `interval`; its A/AAAA addresses, each with `port` and `weight`, are
/// the servers, and `apply` gets them when they change. Addresses are sorted, so the order (and
/// placement) does not flap when the resolver returns them in another order.
pub(crate) fn dns(
    apply: impl Fn(Vec<Server>) -> Result<()> + Send + 'static,
    name: &str,
    (port, weight): (u16, u32),
    interval: Duration,
) -> Watcher {
    let name = name.to_string();
    spawn(apply, interval, move || {
        let mut ips: Vec<std::net::IpAddr> = (name.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| format!("resolving {name}: {e}"))?
            .map(|a| a.ip())
            .collect();
        ips.sort();
        ips.dedup();
        if ips.is_empty() {
            return Err(format!(
                "{name} resolved to no address; keeping the current list"
            ));
        }
        Ok(ips
            .into_iter()
            .map(|ip| Server::new(ip.to_string(), port).with_weight(weight))
            .collect())
    })
}
