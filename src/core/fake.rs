//! A [`Transport`] without sockets, for the unit tests of the flows: each server is an
//! in-memory memcached of the text protocol (enough of it for the flows), a server can be made
//! to fail, and meta replies (leases) can be scripted. Exchanges run through the core's own
//! [`Link`], so the bytes are the ones the clients send.

use super::Core;
use super::exchange::Exchange;
use super::failure::eject::ServerPool;
use super::link::{Link, Next};
use super::transport::{Transport, Work};
use super::view::Member;
use crate::error::{Error, Result};
use crate::outcome::Item;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::{Future, Ready, ready};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The fake's pool: nothing to pool.
pub(crate) struct NoPool;

impl ServerPool for NoPool {
    fn invalidate(&self) {}
}

/// A scripted reply: made from the request it answers.
pub(crate) type Reply = Box<dyn FnOnce(&[u8]) -> Vec<u8> + Send>;

/// `reply` with `{o}` replaced by the request's opaque token (`O…`), as memcached echoes it.
pub(crate) fn meta(reply: &'static str) -> Reply {
    Box::new(move |req: &[u8]| {
        let line = String::from_utf8_lossy(req);
        let o = line
            .split_whitespace()
            .find_map(|t| t.strip_prefix('O'))
            .unwrap_or("")
            .to_string();
        reply.replace("{o}", &o).into_bytes()
    })
}

#[derive(Default)]
struct Server {
    items: HashMap<Vec<u8>, (Vec<u8>, u32, u64)>,
    next_cas: u64,
}

/// A client over in-memory servers.
pub(crate) struct Fake {
    core: Core<NoPool>,
    servers: Mutex<HashMap<String, Server>>,
    /// Servers that fail every request (an I/O error).
    pub(crate) down: Mutex<HashSet<String>>,
    /// Replies given, in order, instead of the in-memory server's.
    pub(crate) script: Mutex<VecDeque<Reply>>,
    /// Every request: `(server, bytes)`.
    pub(crate) sent: Mutex<Vec<(String, String)>>,
    pub(crate) pauses: Mutex<Vec<Duration>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Fake {
    /// A client of `list` (a server list), with `tune` applied to its builder.
    pub(crate) fn new(
        list: &str,
        tune: impl FnOnce(crate::Builder<Fake>) -> crate::Builder<Fake>,
    ) -> Fake {
        let b = tune(crate::Builder::default().server_list(list).expect("list"));
        let settings = b.checked().expect("settings");
        Fake {
            core: Core::new(settings, Box::new(|_| NoPool)).expect("core"),
            servers: Mutex::default(),
            down: Mutex::default(),
            script: Mutex::default(),
            sent: Mutex::default(),
            pauses: Mutex::default(),
        }
    }

    /// The requests sent so far, as text.
    pub(crate) fn sent(&self) -> Vec<(String, String)> {
        lock(&self.sent).clone()
    }

    /// The value `server` holds for `key` (as sent).
    pub(crate) fn held(&self, server: &str, key: &str) -> Option<Vec<u8>> {
        let servers = lock(&self.servers);
        servers
            .get(server)?
            .items
            .get(key.as_bytes())
            .map(|i| i.0.clone())
    }

    pub(crate) fn fail(&self, server: &str) {
        lock(&self.down).insert(server.to_string());
    }

    fn drive<E: Exchange>(&self, m: &Member<NoPool>, ex: &mut E) -> Result<E::Output> {
        let addr = &m.server.addr;
        let mut link = Link::new(addr, &self.core.settings.conn.for_server(&m.server));
        let mut reply = VecDeque::new();
        let mut fresh = true;
        loop {
            match link.advance(ex, fresh)? {
                Next::Write => {
                    let req = link.pending_write().to_vec();
                    link.wrote();
                    let text = String::from_utf8_lossy(&req).into_owned();
                    lock(&self.sent).push((addr.clone(), text));
                    let scripted = lock(&self.script).pop_front();
                    reply.extend(match scripted {
                        Some(answer) => answer(&req),
                        None => self.answer(addr, &req),
                    });
                }
                Next::Read(_) => {
                    let spare = link.spare();
                    let n = spare.len().min(reply.len());
                    if n == 0 {
                        return Err(Error::protocol(addr, "fake: no reply to read"));
                    }
                    for (slot, b) in spare.iter_mut().zip(reply.drain(..n)) {
                        *slot = b;
                    }
                    link.received(n)?;
                }
                Next::Done(v) => return Ok(v),
            }
            fresh = false;
        }
    }

    /// The in-memory server `addr`'s replies to `req` (text protocol).
    fn answer(&self, addr: &str, mut req: &[u8]) -> Vec<u8> {
        let mut servers = lock(&self.servers);
        let s = servers.entry(addr.to_string()).or_default();
        let mut out = Vec::new();
        while let Some(end) = req.windows(2).position(|w| w == b"\r\n") {
            let line = String::from_utf8_lossy(&req[..end]).into_owned();
            req = &req[end + 2..];
            let w: Vec<&str> = line.split_whitespace().collect();
            let key = |i: usize| w.get(i).unwrap_or(&"").as_bytes().to_vec();
            let num = |i: usize| w.get(i).and_then(|t| t.parse::<u64>().ok()).unwrap_or(0);
            let answer: String = match w.first().copied().unwrap_or("") {
                cmd @ ("get" | "gets") => {
                    let mut a = String::new();
                    for k in &w[1..] {
                        if let Some((v, f, c)) = s.items.get(k.as_bytes()) {
                            let v = String::from_utf8_lossy(v);
                            let cas = if cmd == "gets" {
                                format!(" {c}")
                            } else {
                                String::new()
                            };
                            a += &format!("VALUE {k} {f} {}{cas}\r\n{v}\r\n", v.len());
                        }
                    }
                    a + "END\r\n"
                }
                cmd @ ("set" | "add" | "replace" | "append" | "prepend" | "cas") => {
                    let len = num(4) as usize;
                    let data = req[..len].to_vec();
                    req = &req[len + 2..];
                    let (k, flags) = (key(1), num(2) as u32);
                    let had = s.items.get(&k).cloned();
                    s.next_cas += 1;
                    let cas = s.next_cas;
                    let stored = match (cmd, had) {
                        ("set", _) | ("add", None) => Some((data, flags, cas)),
                        ("replace", Some(_)) => Some((data, flags, cas)),
                        ("append", Some((mut v, f, _))) => {
                            v.extend(data);
                            Some((v, f, cas))
                        }
                        ("prepend", Some((v, f, _))) => Some(([data, v].concat(), f, cas)),
                        ("cas", Some((_, _, c))) if c == num(5) => Some((data, flags, cas)),
                        ("cas", Some(_)) => {
                            out.extend(b"EXISTS\r\n");
                            continue;
                        }
                        ("cas", None) => {
                            out.extend(b"NOT_FOUND\r\n");
                            continue;
                        }
                        _ => None,
                    };
                    match stored {
                        Some(item) => {
                            s.items.insert(k, item);
                            "STORED\r\n".into()
                        }
                        None => "NOT_STORED\r\n".into(),
                    }
                }
                "delete" => match s.items.remove(&key(1)) {
                    Some(_) => "DELETED\r\n".into(),
                    None => "NOT_FOUND\r\n".into(),
                },
                "touch" => match s.items.contains_key(&key(1)) {
                    true => "TOUCHED\r\n".into(),
                    false => "NOT_FOUND\r\n".into(),
                },
                cmd @ ("incr" | "decr") => match s.items.get_mut(&key(1)) {
                    Some(item) => {
                        let n: u64 = String::from_utf8_lossy(&item.0).parse().unwrap_or(0);
                        let n = match cmd {
                            "incr" => n.wrapping_add(num(2)),
                            _ => n.saturating_sub(num(2)),
                        };
                        item.0 = n.to_string().into_bytes();
                        format!("{n}\r\n")
                    }
                    None => "NOT_FOUND\r\n".into(),
                },
                "flush_all" => {
                    s.items.clear();
                    "OK\r\n".into()
                }
                "version" => "VERSION fake\r\n".into(),
                _ => "ERROR\r\n".into(),
            };
            out.extend(answer.into_bytes());
        }
        out
    }
}

#[allow(refining_impl_trait)]
impl Transport for Fake {
    type Pool = NoPool;

    fn core(&self) -> &Core<NoPool> {
        &self.core
    }

    fn on<E: Work>(&self, m: &Arc<Member<NoPool>>, ex: &mut E) -> Ready<Result<E::Output>> {
        let r = self.core.available(m).and_then(|()| {
            if lock(&self.down).contains(&m.server.addr) {
                let kind = std::io::ErrorKind::ConnectionRefused;
                return Err(Error::io_kind(
                    &m.server.addr,
                    "connect",
                    kind,
                    "fake: down",
                ));
            }
            self.drive(m, ex)
        });
        ready(r)
    }

    fn on_each<E: Work>(
        &self,
        work: Vec<(Arc<Member<NoPool>>, E)>,
    ) -> Ready<Vec<(E, Result<E::Output>)>> {
        let done = work.into_iter().map(|(m, mut ex)| {
            let r = super::transport::now(self, self.on(&m, &mut ex));
            (ex, r)
        });
        ready(done.collect())
    }

    fn get_multi<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Ready<Vec<Result<Option<Item>>>> {
        let got = keys
            .iter()
            .map(|k| super::transport::now(self, super::large::get(self, k.as_ref())));
        ready(got.collect())
    }

    fn get_multi_raw<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Ready<Vec<Result<Option<Item>>>> {
        self.get_multi(keys)
    }

    fn pause(&self, pause: Duration) -> Ready<()> {
        lock(&self.pauses).push(pause);
        ready(())
    }

    fn written_elsewhere(&self, key: &[u8]) -> Result<()> {
        self.core.written_elsewhere(key).map(drop)
    }
}

/// A shared fake, for routes that hold their pools' clients by value.
impl<T: Transport + Send + Sync> Transport for Arc<T> {
    type Pool = T::Pool;

    fn core(&self) -> &Core<T::Pool> {
        (**self).core()
    }

    fn on<E: Work>(
        &self,
        m: &Arc<Member<T::Pool>>,
        ex: &mut E,
    ) -> impl Future<Output = Result<E::Output>> + Send {
        (**self).on(m, ex)
    }

    fn on_each<E: Work>(
        &self,
        work: Vec<(Arc<Member<T::Pool>>, E)>,
    ) -> impl Future<Output = Vec<(E, Result<E::Output>)>> + Send {
        (**self).on_each(work)
    }

    fn get_multi<K: AsRef<[u8]> + Sync>(
        &self,
        keys: &[K],
    ) -> impl Future<Output = Vec<Result<Option<Item>>>> + Send {
        (**self).get_multi(keys)
    }

    fn get_multi_raw<K: AsRef<[u8]> + Sync>(
        &self,
        keys: &[K],
    ) -> impl Future<Output = Vec<Result<Option<Item>>>> + Send {
        (**self).get_multi_raw(keys)
    }

    fn pause(&self, pause: Duration) -> impl Future<Output = ()> + Send {
        (**self).pause(pause)
    }

    fn written_elsewhere(&self, key: &[u8]) -> Result<()> {
        (**self).written_elsewhere(key)
    }
}
