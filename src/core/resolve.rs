//! A server's addresses, found within the connect timeout.
//!
//! `getaddrinfo` cannot be cancelled and can block for many seconds on a sick resolver, so a
//! name is resolved on a thread of its own and waited for no longer than the connect timeout.
//! One look-up of a name is in flight at a time, whoever asks: every caller waits for the same
//! answer, so a resolver that hangs holds one thread per name, not one per call (a thousand
//! calls once left a thousand threads, and filled tokio's blocking pool). An IP address needs
//! no resolver.

use crate::error::{Error, Result};
use crate::settings::{ConnOptions, Resolve, SystemResolver};
use std::collections::HashMap;
#[cfg(feature = "async")]
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
#[cfg(feature = "async")]
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::task::Waker;
#[cfg(feature = "async")]
use std::task::{Context, Poll};
use std::time::Instant;

/// What a look-up answered: `io::Error` is not `Clone`, so its kind and text are shared.
type Answer = std::result::Result<Vec<SocketAddr>, (io::ErrorKind, String)>;

/// One look-up in flight, and everyone waiting for it.
#[derive(Default)]
struct Flight {
    state: Mutex<Landing>,
    landed: Condvar,
}

#[derive(Default)]
struct Landing {
    answer: Option<Answer>,
    wakers: Vec<Waker>,
}

/// A look-up is the same one for the same resolver, name and port. The resolver is told by
/// its address (0 for the system's): the flight holds it, so the address is not reused while
/// the flight is in the map.
type FlightKey = (usize, String, u16);

fn flights() -> &'static Mutex<HashMap<FlightKey, Arc<Flight>>> {
    static FLIGHTS: OnceLock<Mutex<HashMap<FlightKey, Arc<Flight>>>> = OnceLock::new();
    FLIGHTS.get_or_init(Mutex::default)
}

/// The look-up of `host` at `port` in flight, started if none is.
fn flight(opts: &ConnOptions, host: &str, port: u16) -> io::Result<Arc<Flight>> {
    let id = opts
        .resolver
        .as_ref()
        .map_or(0, |r| Arc::as_ptr(r).cast::<()>() as usize);
    let key = (id, host.to_owned(), port);
    let mut map = flights().lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(f) = map.get(&key) {
        return Ok(f.clone());
    }
    let f = Arc::new(Flight::default());
    let (resolver, mine, k) = (resolver_of(opts), f.clone(), key.clone());
    std::thread::Builder::new()
        .name("memshard-resolve".into())
        .spawn(move || {
            let answer = resolver
                .resolve(&k.1, k.2)
                .map_err(|e| (e.kind(), e.to_string()));
            let wakers = {
                let mut landing = mine.state.lock().unwrap_or_else(PoisonError::into_inner);
                landing.answer = Some(answer);
                std::mem::take(&mut landing.wakers)
            };
            mine.landed.notify_all();
            wakers.into_iter().for_each(Waker::wake);
            // the next caller starts a new look-up
            let mut map = flights().lock().unwrap_or_else(PoisonError::into_inner);
            if map.get(&k).is_some_and(|f| Arc::ptr_eq(f, &mine)) {
                map.remove(&k);
            }
        })?;
    map.insert(key, f.clone());
    Ok(f)
}

impl Flight {
    /// Its answer, waited for until `deadline`.
    fn wait(&self, deadline: Instant) -> Option<Answer> {
        let mut landing = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(a) = &landing.answer {
                return Some(a.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            landing = self
                .landed
                .wait_timeout(landing, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

#[cfg(feature = "async")]
/// The answer of a look-up in flight, as a future that holds no thread while it waits (the
/// async client bounds it with the connect timeout).
pub(crate) struct Landed(Arc<Flight>);

#[cfg(feature = "async")]
impl Future for Landed {
    type Output = io::Result<Vec<SocketAddr>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut landing = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        match &landing.answer {
            Some(a) => Poll::Ready(answered(a.clone())),
            None => {
                if !landing.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    landing.wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

fn answered(a: Answer) -> io::Result<Vec<SocketAddr>> {
    a.map_err(|(kind, text)| io::Error::new(kind, text))
}

/// The look-up of `host` at `port` through `opts`'s resolver, shared with every other caller
/// asking for it meanwhile.
#[cfg(feature = "async")]
pub(crate) fn landed(opts: &ConnOptions, host: &str, port: u16) -> io::Result<Landed> {
    flight(opts, host, port).map(Landed)
}

/// The resolver `opts` names, or the system's.
pub(crate) fn resolver_of(opts: &ConnOptions) -> Arc<dyn Resolve> {
    opts.resolver
        .clone()
        .unwrap_or_else(|| Arc::new(SystemResolver))
}

/// Whether `host` is a name to resolve (not an IP address, not a unix socket path).
pub(crate) fn is_name(host: &str) -> bool {
    !host.starts_with('/')
        && host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_err()
}

/// The addresses of `host` at `port`, within `opts.connect_timeout`; `server` names the server
/// in errors.
pub(crate) fn resolve(
    opts: &ConnOptions,
    host: &str,
    port: u16,
    server: &str,
) -> Result<Vec<SocketAddr>> {
    if let Ok(ip) = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let f = flight(opts, host, port)
        .map_err(|e| Error::io(server, e, "resolve", opts.connect_timeout))?;
    let now = Instant::now();
    let deadline = now.checked_add(opts.connect_timeout).unwrap_or(now);
    let addrs = match f.wait(deadline) {
        Some(a) => {
            answered(a).map_err(|e| Error::io(server, e, "resolve", opts.connect_timeout))?
        }
        None => {
            return Err(Error::Timeout {
                server: server.to_owned(),
                op: "resolve",
                after: opts.connect_timeout,
            });
        }
    };
    if addrs.is_empty() {
        return Err(Error::io_kind(
            server,
            "resolve",
            io::ErrorKind::NotFound,
            format!("{host} resolved to no address"),
        ));
    }
    Ok(addrs)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A resolver that hangs until released (or dropped by every holder), counting its calls.
    #[derive(Debug, Default)]
    pub(crate) struct Gate {
        open: Mutex<bool>,
        opened: Condvar,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl Gate {
        /// Lets every hung look-up answer (an error), so their threads end.
        pub(crate) fn release(&self) {
            *self.open.lock().unwrap_or_else(PoisonError::into_inner) = true;
            self.opened.notify_all();
        }

        /// The look-ups started, read once they reached `expected`, or after 10 s without:
        /// a look-up's thread may start after its callers timed out on a loaded machine.
        pub(crate) fn calls(&self, expected: usize) -> usize {
            let count = || self.calls.load(std::sync::atomic::Ordering::SeqCst);
            let t = std::time::Instant::now();
            while count() < expected && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(1));
            }
            count()
        }
    }

    impl Resolve for Gate {
        fn resolve(&self, _: &str, _: u16) -> io::Result<Vec<SocketAddr>> {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
            while !*open {
                open = self
                    .opened
                    .wait(open)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            Err(io::ErrorKind::TimedOut.into())
        }
    }

    /// The threads of this process now (Linux: one entry a thread in /proc/self/task).
    pub(crate) fn threads() -> usize {
        std::fs::read_dir("/proc/self/task").map_or(0, Iterator::count)
    }

    #[derive(Debug)]
    struct Slow(Duration);
    impl Resolve for Slow {
        fn resolve(&self, _: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
            std::thread::sleep(self.0);
            Ok(vec![SocketAddr::from(([127, 0, 0, 9], port))])
        }
    }

    #[derive(Debug)]
    struct Nothing;
    impl Resolve for Nothing {
        fn resolve(&self, _: &str, _: u16) -> io::Result<Vec<SocketAddr>> {
            Ok(Vec::new())
        }
    }

    fn opts(r: impl Resolve, timeout_ms: u64) -> ConnOptions {
        ConnOptions {
            connect_timeout: Duration::from_millis(timeout_ms),
            resolver: Some(Arc::new(r)),
            ..ConnOptions::default()
        }
    }

    /// Only names go to the resolver: IPv4 and IPv6 addresses (bracketed or not) and unix
    /// socket paths are used as they are.
    #[test]
    fn only_names_are_resolved() {
        for name in ["cache.test", "localhost", "node-1.example"] {
            assert!(is_name(name), "{name}");
        }
        for not in [
            "127.0.0.1",
            "::1",
            "[::1]",
            "[fe80::1]",
            "/tmp/memcached.sock",
        ] {
            assert!(!is_name(not), "{not}");
        }
    }

    #[test]
    fn a_resolver_slower_than_the_connect_timeout_is_a_timeout() {
        let o = opts(Slow(Duration::from_secs(3)), 50);
        let t = Instant::now();
        let e = resolve(&o, "cache.test", 11211, "cache.test:11211").expect_err("too slow");
        assert!(matches!(e, Error::Timeout { op: "resolve", .. }), "{e:?}");
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "waited {:?}",
            t.elapsed()
        );
        let o = opts(Slow(Duration::ZERO), 2000);
        let a = resolve(&o, "cache.test", 11300, "s").expect("resolves");
        assert_eq!(a, [SocketAddr::from(([127, 0, 0, 9], 11300))]);
    }

    /// 1,000 calls for a name whose look-up hangs: each times out, and one look-up (one
    /// thread) serves them all; another name has a look-up of its own.
    #[test]
    fn a_hung_look_up_holds_one_thread_for_every_caller() {
        let hung = Arc::new(Gate::default());
        let o = ConnOptions {
            connect_timeout: Duration::from_millis(5),
            resolver: Some(hung.clone()),
            ..ConnOptions::default()
        };
        std::thread::scope(|s| {
            for _ in 0..20 {
                s.spawn(|| {
                    for _ in 0..50 {
                        let e = resolve(&o, "hung.test", 11211, "s").expect_err("hangs");
                        assert!(matches!(e, Error::Timeout { op: "resolve", .. }), "{e:?}");
                    }
                });
            }
        });
        assert_eq!(hung.calls(1), 1, "one look-up for 1,000 calls");
        let _ = resolve(&o, "other.test", 11211, "s");
        let _ = resolve(&o, "hung.test", 11212, "s");
        assert_eq!(hung.calls(3), 3, "one per name and port");
        hung.release();
    }

    /// The async wait holds no thread: 1,000 waits of a hung look-up leave tokio's blocking
    /// pool free for everything else.
    #[cfg(feature = "async")]
    #[test]
    fn async_waits_for_a_hung_look_up_hold_no_blocking_thread() {
        let hung = Arc::new(Gate::default());
        let o = ConnOptions {
            resolver: Some(hung.clone()),
            ..ConnOptions::default()
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(4)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let waits: Vec<_> = (0..1000)
                .map(|_| {
                    let f = landed(&o, "hung-async.test", 1).expect("started");
                    tokio::spawn(tokio::time::timeout(Duration::from_secs(30), f))
                })
                .collect();
            let other = tokio::task::spawn_blocking(|| 7);
            let got = tokio::time::timeout(Duration::from_secs(5), other).await;
            assert!(
                matches!(got, Ok(Ok(7))),
                "the blocking pool is held: {got:?}"
            );
            assert_eq!(hung.calls(1), 1);
            waits.iter().for_each(|w| w.abort());
            hung.release();
        });
    }

    #[test]
    fn ip_addresses_skip_the_resolver_and_no_address_is_an_error() {
        let o = opts(Nothing, 50);
        let a = resolve(&o, "127.0.0.3", 1, "s").expect("an IP");
        assert_eq!(a, [SocketAddr::from(([127, 0, 0, 3], 1))]);
        let a = resolve(&o, "::1", 2, "s").expect("an IPv6");
        assert_eq!(a[0].port(), 2);
        let e = resolve(&o, "cache.test", 1, "s").expect_err("nothing");
        assert!(e.to_string().contains("resolved to no address"), "{e}");
    }
}
