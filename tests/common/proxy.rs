//! A fault-injecting TCP proxy in front of a real memcached, on loopback only: pass, delay,
//! stall, truncate or corrupt the bytes, close a connection as a request arrives, push bytes
//! nobody asked for to the client, and count what reaches the server.
#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// What the proxy does to traffic right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Forward everything.
    Pass = 0,
    /// Hold every byte (both ways) until the mode changes.
    Stall = 1,
    /// Sleep `delay_ms` before forwarding each chunk from the server.
    Delay = 2,
    /// Forward half of the next chunk from the server, then close both sides.
    Truncate = 3,
    /// Replace the next chunk from the server with the injected bytes, then pass.
    Corrupt = 4,
    /// Drop the next chunk from the client (a request) and close both sides, as a server
    /// closing an idle connection just as a request arrives does; then pass.
    CloseOnRequest = 5,
    /// Forward the next chunk from the server with the injected bytes after it, in the same
    /// write (a reply followed by bytes nobody asked for); then pass.
    AppendStray = 6,
}

pub struct State {
    mode: AtomicU8,
    pub delay_ms: AtomicU64,
    pub to_server_bytes: AtomicU64,
    pub connections: AtomicU64,
    /// Truncations done: a Truncate mode that met a reply and closed its connection.
    pub truncated: AtomicU64,
    /// Connections with an id up to this one are held (both ways) whatever the mode, until
    /// [`State::release_held`]: the bytes a stopped server's socket buffer would hold.
    held_upto: AtomicU64,
    /// Id of the newest connection: truncation and corruption apply to it only, so a late
    /// reply on an abandoned connection cannot take the fault meant for the next request.
    latest: AtomicU64,
    inject: Mutex<Vec<u8>>,
    /// The newest connection's client side (for bytes pushed unasked) and the client's address.
    latest_client: Mutex<Option<(TcpStream, SocketAddr)>>,
    stop: AtomicBool,
    /// Whether forwarded bytes are kept in `recorded` (off unless asked: the fault tests pass
    /// millions of requests through the proxy).
    record: AtomicBool,
    /// Forwarded bytes while recording: `(to_server, bytes)` per chunk, as forwarded.
    recorded: Mutex<Vec<(bool, Vec<u8>)>>,
}

impl State {
    pub fn set(&self, m: Mode) {
        self.mode.store(m as u8, Ordering::SeqCst);
    }
    pub fn mode(&self) -> Mode {
        match self.mode.load(Ordering::SeqCst) {
            1 => Mode::Stall,
            2 => Mode::Delay,
            3 => Mode::Truncate,
            4 => Mode::Corrupt,
            5 => Mode::CloseOnRequest,
            6 => Mode::AppendStray,
            _ => Mode::Pass,
        }
    }
    /// Pass again, for new connections only: every connection opened so far stays held, its
    /// bytes (a request sent before, say) kept back until [`State::release_held`].
    pub fn pass_new_only(&self) {
        self.held_upto
            .store(self.connections.load(Ordering::SeqCst), Ordering::SeqCst);
        self.set(Mode::Pass);
    }
    /// Forward what the held connections kept back, and everything after it.
    pub fn release_held(&self) {
        self.held_upto.store(0, Ordering::SeqCst);
    }
    fn holds(&self, id: u64) -> bool {
        self.mode() == Mode::Stall || id <= self.held_upto.load(Ordering::SeqCst)
    }
    /// Corrupt the next server chunk with `bytes`.
    pub fn corrupt_next(&self, bytes: &[u8]) {
        *self.inject.lock().unwrap() = bytes.to_vec();
        self.set(Mode::Corrupt);
    }
    /// Send `bytes` after the next server chunk, in the same write.
    pub fn append_next(&self, bytes: &[u8]) {
        *self.inject.lock().unwrap() = bytes.to_vec();
        self.set(Mode::AppendStray);
    }
    /// Write `bytes` to the newest connection's client now, between replies (nothing asked
    /// for them). Returns once they wait unread in the client's socket (see
    /// [`State::unread_at_client`]), so the client's next request meets them.
    pub fn push_to_client(&self, bytes: &[u8]) {
        let guard = self.latest_client.lock().unwrap();
        let (client, peer) = guard.as_ref().expect("a client connected");
        (&*client)
            .write_all(bytes)
            .expect("push bytes to the client");
        let peer = *peer;
        drop(guard);
        let t = std::time::Instant::now();
        while unread_at(peer) == 0 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "pushed bytes never reached the client's socket"
            );
            thread::sleep(Duration::from_millis(1));
        }
    }
    /// Keep every forwarded chunk from now on (dropping what was kept so far).
    pub fn start_recording(&self) {
        self.recorded.lock().unwrap().clear();
        self.record.store(true, Ordering::SeqCst);
    }
    /// What was forwarded since [`State::start_recording`], joined per direction:
    /// `(requests, replies)`. Recording goes on.
    pub fn recorded(&self) -> (Vec<u8>, Vec<u8>) {
        let kept = self.recorded.lock().unwrap();
        let join = |to_server: bool| -> Vec<u8> {
            kept.iter()
                .filter(|(t, _)| *t == to_server)
                .flat_map(|(_, b)| b.iter().copied())
                .collect()
        };
        (join(true), join(false))
    }
    /// Bytes waiting unread in the newest connection's client socket (its receive queue in
    /// /proc/net/tcp).
    pub fn unread_at_client(&self) -> u64 {
        let peer = self.latest_client.lock().unwrap().as_ref().map(|(_, p)| *p);
        peer.map_or(0, unread_at)
    }
}

/// The receive queue of the local TCP socket bound to `addr` (an IPv4 loopback address of
/// this process's client), from /proc/net/tcp.
fn unread_at(addr: SocketAddr) -> u64 {
    let SocketAddr::V4(v4) = addr else {
        return 0;
    };
    let want = local_hex(v4);
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // fields: sl local rem st tx_queue:rx_queue ...
            (f.len() > 4 && f[1] == want)
                .then(|| f[4].split_once(':'))
                .flatten()
                .and_then(|(_, rx)| u64::from_str_radix(rx, 16).ok())
        })
        .sum()
}

fn local_hex(a: SocketAddrV4) -> String {
    format!(
        "{:08X}:{:04X}",
        u32::from_le_bytes(a.ip().octets()),
        a.port()
    )
}

pub struct FaultProxy {
    pub addr: SocketAddr,
    pub state: Arc<State>,
}

impl FaultProxy {
    /// Listen on a free 127.0.0.1 port and forward to `upstream` (a loopback address).
    pub fn start(upstream: SocketAddr) -> FaultProxy {
        assert!(upstream.ip().is_loopback(), "tests only talk to loopback");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let state = Arc::new(State {
            mode: AtomicU8::new(0),
            delay_ms: AtomicU64::new(0),
            to_server_bytes: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
            held_upto: AtomicU64::new(0),
            latest: AtomicU64::new(0),
            inject: Mutex::new(Vec::new()),
            latest_client: Mutex::new(None),
            stop: AtomicBool::new(false),
            record: AtomicBool::new(false),
            recorded: Mutex::new(Vec::new()),
        });
        let st = state.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                if st.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let id = st.connections.fetch_add(1, Ordering::SeqCst) + 1;
                st.latest.store(id, Ordering::SeqCst);
                if let (Ok(c), Ok(peer)) = (client.try_clone(), client.peer_addr()) {
                    *st.latest_client.lock().unwrap() = Some((c, peer));
                }
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (c2, s2) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                let (a, b) = (st.clone(), st.clone());
                thread::spawn(move || pump(client, server, a, true, id));
                thread::spawn(move || pump(s2, c2, b, false, id));
            }
        });
        FaultProxy { addr, state }
    }

    pub fn addr_string(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        self.state.set(Mode::Pass);
        let _ = TcpStream::connect(self.addr);
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, st: Arc<State>, to_server: bool, id: u64) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(5)));
    let mut buf = vec![0u8; 64 * 1024];
    let close = |a: &TcpStream, b: &TcpStream| {
        let _ = a.shutdown(Shutdown::Both);
        let _ = b.shutdown(Shutdown::Both);
    };
    loop {
        if st.stop.load(Ordering::SeqCst) {
            close(&from, &to);
            return;
        }
        if st.holds(id) {
            // hold: read nothing, forward nothing
            thread::sleep(Duration::from_millis(1));
            continue;
        }
        let n = match from.read(&mut buf) {
            Ok(0) => {
                close(&from, &to);
                return;
            }
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(_) => {
                close(&from, &to);
                return;
            }
        };
        // A chunk read just before a stall began is held too.
        while st.holds(id) && !st.stop.load(Ordering::SeqCst) {
            thread::sleep(Duration::from_millis(1));
        }
        let mut data = &buf[..n];
        let injected;
        if to_server && st.latest.load(Ordering::SeqCst) == id && st.mode() == Mode::CloseOnRequest
        {
            st.set(Mode::Pass);
            close(&from, &to);
            return;
        }
        if to_server {
            st.to_server_bytes.fetch_add(n as u64, Ordering::SeqCst);
        } else if st.latest.load(Ordering::SeqCst) == id {
            match st.mode() {
                Mode::Delay => {
                    thread::sleep(Duration::from_millis(st.delay_ms.load(Ordering::SeqCst)))
                }
                Mode::Truncate => {
                    st.set(Mode::Pass);
                    st.truncated.fetch_add(1, Ordering::SeqCst);
                    let _ = to.write_all(&data[..n / 2]);
                    close(&from, &to);
                    return;
                }
                Mode::Corrupt => {
                    injected = std::mem::take(&mut *st.inject.lock().unwrap());
                    st.set(Mode::Pass);
                    data = &injected;
                }
                Mode::AppendStray => {
                    let stray = std::mem::take(&mut *st.inject.lock().unwrap());
                    st.set(Mode::Pass);
                    injected = [data, &stray[..]].concat();
                    data = &injected;
                }
                _ => {}
            }
        } else if st.mode() == Mode::Delay {
            thread::sleep(Duration::from_millis(st.delay_ms.load(Ordering::SeqCst)));
        }
        if st.record.load(Ordering::SeqCst) {
            st.recorded.lock().unwrap().push((to_server, data.to_vec()));
        }
        if to.write_all(data).is_err() {
            close(&from, &to);
            return;
        }
    }
}
