//! Real memcached and nutcracker processes for the tests.
//!
//! Every process a test starts is its own: it listens on an address picked at random (a free
//! port, or port 11211 on a random 127.x.y.z), the readiness check proves the listener belongs
//! to the process just started (memcached's `stats` pid, nutcracker's socket in `/proc`), and a
//! bind failure is retried on another address. Every process is stopped synchronously (SIGKILL,
//! then reaped) when its handle drops and, for handles kept in statics, when the test binary
//! exits, so the next test binary never meets a server of this one.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Where a program is: `PATH`, then /usr/sbin (Debian puts nutcracker there, outside a normal
/// user's `PATH`).
pub fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.push(PathBuf::from("/usr/sbin"));
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// Whether a required program is present. Missing under CI is a failure, not a skip.
pub fn require(name: &str) -> bool {
    if program(name).is_some() {
        return true;
    }
    super::skip(name, "not installed");
    false
}

/// A port that nothing listens on at the moment on `ip`.
pub fn free_port(ip: Ipv4Addr) -> u16 {
    let l = TcpListener::bind((ip, 0)).expect("bind an ephemeral port");
    l.local_addr().expect("local addr").port()
}

/// A random loopback address other than 127.0.0.1, for servers that must sit on port 11211.
pub fn random_loopback() -> Ipv4Addr {
    Ipv4Addr::new(
        127,
        fastrand::u8(1..=254),
        fastrand::u8(..),
        fastrand::u8(1..=254),
    )
}

// ---------------------------------------------------------------------------------------
// owned child processes
// ---------------------------------------------------------------------------------------

/// Pids of the children still running, killed and reaped by [`stop_all_at_exit`].
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// Children are spawned by one thread that lives as long as the test binary: their
/// parent-death signal (which follows the spawning *thread*) then fires only when the test
/// binary itself dies, even when it is killed before its exit handlers can run.
fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        // SAFETY: registers a plain `extern "C"` function; it only takes a lock and makes
        // kill/waitpid calls.
        let rc = unsafe { libc::atexit(stop_all_at_exit) };
        assert_eq!(rc, 0, "atexit");
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("test-process-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("spawner thread");
        Mutex::new(tx)
    })
}

extern "C" fn stop_all_at_exit() {
    let pids = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for pid in pids {
        kill_and_reap(pid);
    }
}

fn kill_and_reap(pid: u32) {
    // SAFETY: kill and waitpid on a pid this process spawned and has not reaped yet.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
        libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
    }
}

/// A child process of the test binary, killed and reaped when dropped or at exit.
pub struct Owned {
    child: Child,
    pub pid: u32,
}

impl Owned {
    pub fn spawn(mut cmd: Command) -> io::Result<Owned> {
        cmd.stdin(Stdio::null());
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let (tx, rx) = mpsc::channel();
        // The lock covers send and registration, so no child exists unregistered at exit.
        let spawner = spawner().lock().unwrap_or_else(|e| e.into_inner());
        spawner.send((cmd, tx)).expect("spawner thread is running");
        let child = rx.recv().expect("spawner answers")?;
        let pid = child.id();
        LIVE.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
        Ok(Owned { child, pid })
    }

    /// Some(status) once the process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&p| p != self.pid);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether process `pid` holds a listening TCP socket on `addr` (from /proc, so a listener of
/// another process on the same address is never taken for ours).
pub fn listens(pid: u32, addr: SocketAddr) -> bool {
    let SocketAddr::V4(v4) = addr else {
        return false;
    };
    // /proc/net/tcp: local address as little-endian hex IPv4 and hex port, state 0A = LISTEN.
    let want = format!(
        "{:08X}:{:04X}",
        u32::from_le_bytes(v4.ip().octets()),
        v4.port()
    );
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    let inodes: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 9 && f[1] == want && f[3] == "0A").then(|| format!("socket:[{}]", f[9]))
        })
        .collect();
    if inodes.is_empty() {
        return false;
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path())
            .map(|l| inodes.iter().any(|i| Path::new(i) == l))
            .unwrap_or(false)
    })
}

// ---------------------------------------------------------------------------------------
// memcached
// ---------------------------------------------------------------------------------------

/// One memcached process, killed and reaped on drop (or when the test binary exits).
pub struct Memcached {
    pub ip: Ipv4Addr,
    pub port: u16,
    pub pid: u32,
    process: Owned,
    /// Where and how the test's own plaintext requests go, for a server whose port does not
    /// answer them as they are (TLS, authentication); `None`: its port.
    admin: Option<Admin>,
}

/// How the test itself reaches a memcached started with [`Memcached::start_with`].
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// A plaintext listener on a free port of the same address (`-l notls:ip:port`), for a
    /// server with TLS (`-Z`) on its port.
    pub plaintext_port: bool,
    /// `user` and `password` to log in with before each connection's first request (`-Y`).
    pub login: Option<(String, String)>,
}

#[derive(Clone, Debug)]
struct Admin {
    addr: SocketAddr,
    login: Option<(String, String)>,
}

enum Start {
    Ready,
    /// The process exited (typically: the address was taken); try another address.
    Exited(String),
}

impl Memcached {
    /// memcached on `ip:port` with extra arguments (`-o idle_timeout=2`, ...). Port 0: a free
    /// port, retried on another port if it was taken meanwhile. A fixed `ip:port` that is taken
    /// is a failure.
    pub fn start(ip: Ipv4Addr, port: u16, extra: &str) -> Memcached {
        Self::start_where(
            extra,
            || (ip, if port == 0 { free_port(ip) } else { port }),
            port == 0,
        )
    }

    /// memcached on port 11211 of a random 127.x.y.z (the default-port naming rule of the
    /// peers runs live), retried on another address if that one is taken.
    pub fn on_11211(extra: &str) -> Memcached {
        Self::start_where(extra, || (random_loopback(), 11211), true)
    }

    /// memcached on `ip:port` (0: a free port, retried on another if taken meanwhile) with
    /// extra arguments given one by one (paths, `-o` lists), reached by the test as `access`
    /// says: the readiness check, [`Memcached::text`], [`Memcached::stat`] and the other raw
    /// requests go to the plaintext port and log in first.
    pub fn start_with(ip: Ipv4Addr, port: u16, args: &[String], access: &Access) -> Memcached {
        Self::start_inner(
            |cmd| {
                cmd.args(args);
            },
            || (ip, if port == 0 { free_port(ip) } else { port }),
            port == 0,
            access,
        )
    }

    fn start_where(
        extra: &str,
        addr: impl FnMut() -> (Ipv4Addr, u16),
        may_retry: bool,
    ) -> Memcached {
        Self::start_inner(
            |cmd| {
                cmd.args(extra.split_whitespace());
            },
            addr,
            may_retry,
            &Access::default(),
        )
    }

    fn start_inner(
        extra: impl Fn(&mut Command),
        mut addr: impl FnMut() -> (Ipv4Addr, u16),
        may_retry: bool,
        access: &Access,
    ) -> Memcached {
        let bin = program("memcached").expect("memcached is installed");
        let mut why = String::new();
        for _ in 0..20 {
            let (ip, port) = addr();
            let mut cmd = Command::new(&bin);
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } == 0 {
                cmd.args(["-u", "root"]);
            }
            cmd.args(["-U", "0", "-m", "32", "-t", "2", "-c", "1024"]);
            let admin = if access.plaintext_port {
                // Each free port's listener is closed before the next is bound, so two picks
                // in a row can be the same port: memcached then listens in plaintext only
                // there, and a TLS client reads plaintext (seen 1 run in 15).
                let plain = std::iter::repeat_with(|| free_port(ip))
                    .find(|&p| p != port)
                    .unwrap_or(0);
                cmd.args(["-l", &format!("notls:{ip}:{plain}")])
                    .args(["-l", &format!("{ip}:{port}")]);
                Some(SocketAddr::from((ip, plain)))
            } else {
                cmd.args(["-l", &ip.to_string(), "-p", &port.to_string()]);
                access.login.is_some().then(|| SocketAddr::from((ip, port)))
            };
            let admin = admin.map(|addr| Admin {
                addr,
                login: access.login.clone(),
            });
            extra(&mut cmd);
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
            let mut process = Owned::spawn(cmd).expect("spawn memcached");
            let ready = match &admin {
                None => wait_memcached(&mut process, SocketAddr::from((ip, port))),
                Some(a) => wait_memcached_at(&mut process, SocketAddr::from((ip, port)), a),
            };
            match ready {
                Start::Ready => {
                    return Memcached {
                        ip,
                        port,
                        pid: process.pid,
                        process,
                        admin,
                    };
                }
                Start::Exited(w) => why = w,
            }
            if !may_retry {
                break;
            }
        }
        panic!("memcached did not start: {why}");
    }

    pub fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    pub fn sock(&self) -> SocketAddr {
        SocketAddr::from((self.ip, self.port))
    }

    /// Sends `sig` (STOP, CONT, KILL, ...) and waits until the process is in the state it
    /// asks for: stopped, running again, or gone.
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid.to_string())
            .status()
            .expect("kill");
        assert!(ok.success(), "kill -{sig} {}", self.pid);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            // the state is the first field after the ")" that closes the command name
            let stat =
                std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("");
            let reached = match sig {
                // The leader turns zombie before its other threads have closed the listener:
                // gone means refused too.
                "KILL" | "TERM" => {
                    (state == "Z" || state.is_empty())
                        && TcpStream::connect_timeout(&self.sock(), Duration::from_millis(100))
                            .is_err()
                }
                _ => (state == "T" || state == "t") == (sig == "STOP"),
            };
            if reached {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("memcached {} did not reach the state of SIG{sig}", self.pid);
    }

    /// A raw text-protocol connection to this server alone (bypassing memshard): to its
    /// plaintext port and logged in, for a server started with [`Memcached::start_with`].
    pub fn text(&self) -> Text {
        match &self.admin {
            None => Text::open(self.sock()),
            Some(a) => {
                let mut t = Text::open(a.addr);
                if let Some((user, password)) = &a.login {
                    t.login(user, password);
                }
                t
            }
        }
    }

    /// One raw request; the reply up to and including `until`.
    pub fn raw(&self, request: &[u8], until: &[u8]) -> Vec<u8> {
        let mut t = self.text();
        t.send(request);
        t.until(until)
    }

    /// The value of `key` on this server alone, if it holds it.
    pub fn raw_get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.text().get_many(&[key]).remove(key)
    }

    /// A counter from `stats` once it reads the same three times in a row: a connection that
    /// was just closed (the start-up check's, the previous `stats`) can still be counted in
    /// `curr_connections` for a moment.
    pub fn settled_stat(&self, name: &str) -> u64 {
        let (mut last, mut same) = (self.stat(name), 1);
        while same < 3 {
            std::thread::sleep(Duration::from_millis(10));
            let now = self.stat(name);
            (last, same) = if now == last {
                (now, same + 1)
            } else {
                (now, 1)
            };
        }
        last
    }

    /// A counter from `stats`.
    pub fn stat(&self, name: &str) -> u64 {
        let out = self.raw(b"stats\r\n", b"END\r\n");
        stat_value(&out, name)
            .unwrap_or_else(|| panic!("no stat {name}"))
            .parse()
            .unwrap_or_else(|_| panic!("stat {name} is not a number"))
    }
}

fn stat_value(stats: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(stats);
    let prefix = format!("STAT {name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix).map(|v| v.trim().to_string()))
}

/// Ready when the server at `addr` answers `stats` with the pid of `process`.
fn wait_memcached(process: &mut Owned, addr: SocketAddr) -> Start {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(status) = process.exited() {
            return Start::Exited(format!("memcached on {addr} exited ({status})"));
        }
        // Another process answering there is not ours: ours will fail to bind and exit.
        if stats_pid(addr) == Some(process.pid) {
            return Start::Ready;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Start::Exited(format!("memcached on {addr} did not answer within 10 s"))
}

/// Ready when the plaintext port `admin` answers `stats` (after the login) with the pid of
/// `process`, and that process listens on `addr`.
fn wait_memcached_at(process: &mut Owned, addr: SocketAddr, admin: &Admin) -> Start {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(status) = process.exited() {
            return Start::Exited(format!("memcached on {addr} exited ({status})"));
        }
        if stats_pid_as(admin.addr, admin.login.as_ref()) == Some(process.pid)
            && listens(process.pid, addr)
        {
            return Start::Ready;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Start::Exited(format!("memcached on {addr} did not answer within 10 s"))
}

fn stats_pid(addr: SocketAddr) -> Option<u32> {
    stats_pid_as(addr, None)
}

fn stats_pid_as(addr: SocketAddr, login: Option<&(String, String)>) -> Option<u32> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    if let Some((user, password)) = login {
        let token = format!("{user} {password}");
        s.write_all(format!("set auth 0 0 {}\r\n{token}\r\n", token.len()).as_bytes())
            .ok()?;
        let mut reply = Vec::new();
        let mut byte = [0u8; 1];
        while !reply.ends_with(b"\r\n") {
            if s.read(&mut byte).ok()? == 0 {
                return None;
            }
            reply.push(byte[0]);
        }
        if reply != b"STORED\r\n" {
            return None;
        }
    }
    s.write_all(b"stats\r\n").ok()?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !out.ends_with(b"END\r\n") {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        out.extend_from_slice(&buf[..n]);
    }
    stat_value(&out, "pid")?.parse().ok()
}

/// A cluster of real memcached servers with weights, written as a server list.
pub struct Cluster {
    pub servers: Vec<Memcached>,
    pub weights: Vec<u32>,
}

impl Cluster {
    /// Four servers, weights 3, 1, 2, 1: the first two on port 11211 of random 127.x.y.z
    /// addresses (the default-port naming rule runs live), two on free ports of 127.0.0.1.
    pub fn four() -> Cluster {
        let servers = vec![
            Memcached::on_11211(""),
            Memcached::on_11211(""),
            Memcached::start(Ipv4Addr::LOCALHOST, 0, ""),
            Memcached::start(Ipv4Addr::LOCALHOST, 0, ""),
        ];
        Cluster {
            servers,
            weights: vec![3, 1, 2, 1],
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

// ---------------------------------------------------------------------------------------
// nutcracker
// ---------------------------------------------------------------------------------------

/// A nutcracker process with its configuration folder; killed and the folder removed on drop.
pub struct Nutcracker {
    /// One listen address per pool, in the order given to the configuration function.
    pub listens: Vec<SocketAddr>,
    /// The nutcracker.yml it runs.
    pub yml: String,
    dir: PathBuf,
    process: Owned,
}

impl Nutcracker {
    /// nutcracker running the configuration `yml(listens)` returns for `pools` free listen
    /// addresses on 127.0.0.1 (stats on another free port), retried on new addresses if one
    /// was taken meanwhile.
    pub fn start(pools: usize, yml: impl Fn(&[SocketAddr]) -> String) -> Nutcracker {
        let bin = program("nutcracker").expect("nutcracker is installed");
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("memshard-nutcracker-{}-{seq}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("nutcracker folder");
        let log = dir.join("nutcracker.log");
        let mut why = String::new();
        for _ in 0..20 {
            let lo = Ipv4Addr::LOCALHOST;
            let listens: Vec<SocketAddr> = (0..pools)
                .map(|_| SocketAddr::from((lo, free_port(lo))))
                .collect();
            let text = yml(&listens);
            let conf = dir.join("nutcracker.yml");
            std::fs::write(&conf, &text).expect("write nutcracker.yml");
            let mut cmd = Command::new(&bin);
            cmd.arg("-c")
                .arg(&conf)
                .arg("-o")
                .arg(&log)
                .args([
                    "-s",
                    &free_port(lo).to_string(),
                    "-a",
                    "127.0.0.1",
                    "-v",
                    "5",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let mut process = Owned::spawn(cmd).expect("spawn nutcracker");
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Some(status) = process.exited() {
                    why = format!(
                        "nutcracker exited ({status}); config:\n{text}\nlog:\n{}",
                        std::fs::read_to_string(&log).unwrap_or_default()
                    );
                    break;
                }
                if listens.iter().all(|&l| listens_and_accepts(process.pid, l)) {
                    return Nutcracker {
                        listens,
                        yml: text,
                        dir,
                        process,
                    };
                }
                if Instant::now() > deadline {
                    why = format!("nutcracker did not listen within 10 s; config:\n{text}");
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        panic!("{why}");
    }

    /// The first (or only) pool's listen address.
    pub fn listen(&self) -> SocketAddr {
        self.listens[0]
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("nutcracker.log")).unwrap_or_default()
    }

    /// The nutcracker.yml file it runs.
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("nutcracker.yml")
    }
}

fn listens_and_accepts(pid: u32, addr: SocketAddr) -> bool {
    listens(pid, addr) && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

impl Drop for Nutcracker {
    fn drop(&mut self) {
        // stop the process first: it writes its log into the folder
        let _ = self.process.child.kill();
        let _ = self.process.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

// ---------------------------------------------------------------------------------------
// a raw text-protocol connection (to one memcached or to nutcracker)
// ---------------------------------------------------------------------------------------

/// A memcached text-protocol connection with no memshard code in it: what the peers see.
pub struct Text {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Text {
    pub fn open(addr: SocketAddr) -> Text {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("read timeout");
        s.set_nodelay(true).expect("nodelay");
        Text {
            r: BufReader::new(s.try_clone().expect("clone socket")),
            w: s,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).expect("write request");
    }

    /// memcached's ASCII login (`-Y`): a `set` whose value is `user password`.
    pub fn login(&mut self, user: &str, password: &str) {
        let token = format!("{user} {password}");
        self.send(format!("set auth 0 0 {}\r\n{token}\r\n", token.len()).as_bytes());
        let reply = self.line();
        assert_eq!(reply, b"STORED", "login as {user}");
    }

    /// One reply line without its CRLF; `None` when the peer closed the connection.
    pub fn try_line(&mut self) -> Option<Vec<u8>> {
        let mut l = Vec::new();
        let n = self.r.read_until(b'\n', &mut l).expect("read reply line");
        if n == 0 {
            return None;
        }
        assert!(
            l.ends_with(b"\r\n"),
            "truncated reply {:?}",
            String::from_utf8_lossy(&l)
        );
        l.truncate(l.len() - 2);
        Some(l)
    }

    /// One reply line without its CRLF.
    pub fn line(&mut self) -> Vec<u8> {
        self.try_line().expect("connection closed before the reply")
    }

    /// Everything up to and including `until`.
    pub fn until(&mut self, until: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while !out.ends_with(until) {
            let n = self.r.read(&mut buf).expect("read reply");
            assert!(
                n > 0,
                "connection closed before {:?}",
                String::from_utf8_lossy(until)
            );
            out.extend_from_slice(&buf[..n]);
        }
        out
    }

    /// `set` every item (flags 0, no expiry), pipelined; the reply line of each, in order.
    pub fn set_many<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, items: &[(K, V)]) -> Vec<Vec<u8>> {
        let mut replies = Vec::with_capacity(items.len());
        for chunk in items.chunks(50) {
            let mut req = Vec::new();
            for (k, v) in chunk {
                let (k, v) = (k.as_ref(), v.as_ref());
                req.extend_from_slice(b"set ");
                req.extend_from_slice(k);
                req.extend_from_slice(format!(" 0 0 {}\r\n", v.len()).as_bytes());
                req.extend_from_slice(v);
                req.extend_from_slice(b"\r\n");
            }
            self.send(&req);
            for _ in chunk {
                replies.push(self.line());
            }
        }
        replies
    }

    /// `set` every item and insist on `STORED` for each.
    pub fn store_all<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, items: &[(K, V)]) {
        for ((k, _), r) in items.iter().zip(self.set_many(items)) {
            assert_eq!(
                r,
                b"STORED",
                "set {:?}: {:?}",
                String::from_utf8_lossy(k.as_ref()),
                String::from_utf8_lossy(&r)
            );
        }
    }

    /// The values of those `keys` the other side holds, fetched with multi-key `get`s.
    pub fn get_many<K: AsRef<[u8]>>(&mut self, keys: &[K]) -> HashMap<Vec<u8>, Vec<u8>> {
        let mut got = HashMap::new();
        let mut i = 0;
        while i < keys.len() {
            let mut req = b"get".to_vec();
            while i < keys.len() && (req.len() == 3 || req.len() + keys[i].as_ref().len() < 1900) {
                req.push(b' ');
                req.extend_from_slice(keys[i].as_ref());
                i += 1;
            }
            req.extend_from_slice(b"\r\n");
            self.send(&req);
            loop {
                let l = self.line();
                if l == b"END" {
                    break;
                }
                let parts: Vec<&[u8]> = l.split(|&b| b == b' ').collect();
                assert!(
                    parts.len() >= 4 && parts[0] == b"VALUE",
                    "bad reply {:?}",
                    String::from_utf8_lossy(&l)
                );
                let n: usize = std::str::from_utf8(parts[3])
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .expect("VALUE length");
                let mut data = vec![0u8; n + 2];
                self.r.read_exact(&mut data).expect("read value");
                assert_eq!(&data[n..], b"\r\n", "value not followed by CRLF");
                data.truncate(n);
                got.insert(parts[1].to_vec(), data);
            }
        }
        got
    }
}
