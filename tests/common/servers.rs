//! Real memcached servers for the tests, started on loopback and stopped with the test process.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether a required program is present. Missing under CI is a failure, not a skip.
pub fn require(program: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !found {
        if std::env::var_os("CI").is_some() {
            panic!("{program} is not installed; .ci/run must install it");
        }
        eprintln!("SKIPPED: {program} is not installed (apt-get install {program})");
    }
    found
}

/// A port that nothing listens on at the moment on `ip`.
pub fn free_port(ip: Ipv4Addr) -> u16 {
    let l = TcpListener::bind((ip, 0)).expect("bind an ephemeral port");
    l.local_addr().expect("local addr").port()
}

/// One memcached process. Dropped: killed. Its wrapper shell also kills it when the test
/// process dies (the wrapper waits on a pipe that closes with us).
pub struct Memcached {
    pub ip: Ipv4Addr,
    pub port: u16,
    child: Child,
    _stdin: ChildStdin,
    pub pid: u32,
}

impl Memcached {
    /// Start memcached on `ip:port` (port 0: a free one).
    pub fn start(ip: Ipv4Addr, port: u16, extra: &str) -> Memcached {
        let port = if port == 0 { free_port(ip) } else { port };
        let script = format!(
            "u=; [ \"$(id -u)\" = 0 ] && u='-u root'; memcached $u -U 0 -m 32 -t 2 -c 1024 -l {ip} -p {port} {extra} & m=$!; echo $m; read _; kill -CONT $m 2>/dev/null; kill $m"
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn sh for memcached");
        let stdin = child.stdin.take().expect("stdin");
        let mut out = child.stdout.take().expect("stdout");
        let mut pid_text = Vec::new();
        let mut b = [0u8; 1];
        while out.read(&mut b).map(|n| n == 1).unwrap_or(false) && b[0] != b'\n' {
            pid_text.push(b[0]);
        }
        let pid: u32 = String::from_utf8_lossy(&pid_text)
            .trim()
            .parse()
            .expect("memcached pid");
        let addr = SocketAddr::from((ip, port));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
            assert!(
                Instant::now() < deadline,
                "memcached on {addr} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Memcached {
            ip,
            port,
            child,
            _stdin: stdin,
            pid,
        }
    }

    pub fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    /// SIGSTOP / SIGCONT the server.
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid.to_string())
            .status()
            .expect("kill");
        assert!(ok.success());
        // Signals are delivered asynchronously: wait until the process is really stopped (or
        // running again), so the test's next request meets the state it expects.
        let want_stopped = sig == "STOP";
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            let stat =
                std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
            // the state is the first field after the ")" that closes the command name
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("");
            if (state == "T" || state == "t") == want_stopped {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A raw text-protocol round trip to this server alone (bypassing memshard).
    pub fn raw(&self, request: &[u8], until: &[u8]) -> Vec<u8> {
        let mut s = TcpStream::connect((self.ip, self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).ok();
        s.write_all(request).expect("write");
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while !out.ends_with(until) {
            let n = s.read(&mut buf).expect("read");
            assert!(n > 0, "server closed");
            out.extend_from_slice(&buf[..n]);
        }
        out
    }

    /// The value of `key` on this server alone, if it holds it.
    pub fn raw_get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut req = b"get ".to_vec();
        req.extend_from_slice(key);
        req.extend_from_slice(b"\r\n");
        let out = self.raw(&req, b"END\r\n");
        if out == b"END\r\n" {
            return None;
        }
        let header_end = out.windows(2).position(|w| w == b"\r\n").expect("header");
        Some(out[header_end + 2..out.len() - 7].to_vec())
    }

    /// A counter from `stats`.
    pub fn stat(&self, name: &str) -> u64 {
        let out = self.raw(b"stats\r\n", b"END\r\n");
        let text = String::from_utf8_lossy(&out);
        text.lines()
            .find_map(|l| {
                l.strip_prefix(&format!("STAT {name} "))
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or_else(|| panic!("no stat {name}"))
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-CONT")
            .arg(self.pid.to_string())
            .status();
        let _ = Command::new("kill").arg(self.pid.to_string()).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A cluster of real memcached servers with weights, written as a server list.
pub struct Cluster {
    pub servers: Vec<Memcached>,
    pub weights: Vec<u32>,
}

impl Cluster {
    /// Four servers: two on port 11211 at 127.0.0.2 and 127.0.0.3 (the default-port naming
    /// rule runs live), two on free ports of 127.0.0.1; weights 3, 1, 2, 1.
    pub fn four() -> Cluster {
        let specs = [
            (Ipv4Addr::new(127, 0, 0, 2), 11211, 3),
            (Ipv4Addr::new(127, 0, 0, 3), 11211, 1),
            (Ipv4Addr::LOCALHOST, 0, 2),
            (Ipv4Addr::LOCALHOST, 0, 1),
        ];
        let servers = specs
            .iter()
            .map(|&(ip, port, _)| Memcached::start(ip, port, ""))
            .collect();
        Cluster {
            servers,
            weights: specs.iter().map(|s| s.2).collect(),
        }
    }

    /// `n` servers on free ports of 127.0.0.1 with the given weights.
    pub fn on_free_ports(weights: &[u32]) -> Cluster {
        let servers = weights
            .iter()
            .map(|_| Memcached::start(Ipv4Addr::LOCALHOST, 0, ""))
            .collect();
        Cluster {
            servers,
            weights: weights.to_vec(),
        }
    }

    pub fn server_list(&self) -> String {
        self.servers
            .iter()
            .zip(&self.weights)
            .map(|(s, w)| format!("{} {w}\n", s.addr()))
            .collect()
    }

    pub fn by_addr(&self, addr: &str) -> &Memcached {
        self.servers
            .iter()
            .find(|s| s.addr() == addr)
            .unwrap_or_else(|| panic!("no server {addr}"))
    }
}
