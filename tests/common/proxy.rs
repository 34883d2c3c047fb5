//! A fault-injecting TCP proxy in front of a real memcached, on loopback only: pass, delay,
//! stall, truncate or corrupt the bytes, and count what reaches the server.
#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
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
}

pub struct State {
    mode: AtomicU8,
    pub delay_ms: AtomicU64,
    pub to_server_bytes: AtomicU64,
    pub connections: AtomicU64,
    /// Id of the newest connection: truncation and corruption apply to it only, so a late
    /// reply on an abandoned connection cannot take the fault meant for the next request.
    latest: AtomicU64,
    inject: Mutex<Vec<u8>>,
    stop: AtomicBool,
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
            _ => Mode::Pass,
        }
    }
    /// Corrupt the next server chunk with `bytes`.
    pub fn corrupt_next(&self, bytes: &[u8]) {
        *self.inject.lock().unwrap() = bytes.to_vec();
        self.set(Mode::Corrupt);
    }
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
            latest: AtomicU64::new(0),
            inject: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
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
        if st.mode() == Mode::Stall {
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
        while st.mode() == Mode::Stall && !st.stop.load(Ordering::SeqCst) {
            thread::sleep(Duration::from_millis(1));
        }
        let mut data = &buf[..n];
        let injected;
        if to_server {
            st.to_server_bytes.fetch_add(n as u64, Ordering::SeqCst);
        } else if st.latest.load(Ordering::SeqCst) == id {
            match st.mode() {
                Mode::Delay => {
                    thread::sleep(Duration::from_millis(st.delay_ms.load(Ordering::SeqCst)))
                }
                Mode::Truncate => {
                    st.set(Mode::Pass);
                    let _ = to.write_all(&data[..n / 2]);
                    close(&from, &to);
                    return;
                }
                Mode::Corrupt => {
                    injected = std::mem::take(&mut *st.inject.lock().unwrap());
                    st.set(Mode::Pass);
                    data = &injected;
                }
                _ => {}
            }
        } else if st.mode() == Mode::Delay {
            thread::sleep(Duration::from_millis(st.delay_ms.load(Ordering::SeqCst)));
        }
        if to.write_all(data).is_err() {
            close(&from, &to);
            return;
        }
    }
}
