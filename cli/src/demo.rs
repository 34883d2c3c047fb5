//! `memshard demo`: start a few real memcached servers on loopback, load keys through memshard,
//! show how they spread, then add a server and measure how many keys still hit with ketama
//! against modulo placement, next to what the ring predicts without servers.
//!
//! Where memcached is not installed (or with `--offline`) it shows the offline part alone: the
//! same cluster shape and keys placed by the ring, what moves when a server is added, and the
//! one command that adds the live part.
//!
//! Every memcached it starts runs under a small `sh` wrapper that waits on a pipe from us and
//! kills memcached when the pipe closes: on a normal return, on an error (the [`Servers`] guard
//! closes the pipes on drop and waits), and also when memshard itself dies (Ctrl-C, kill).

use super::{DemoArgs, Failure, usage};
use memshard::Expiry;
use memshard::{Client, Flavor, KeyHash, Ring, StoreOutcome, parse_server_list};
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Keys per multi-key call.
const BATCH: usize = 1000;
const LOOPBACK: Ipv4Addr = Ipv4Addr::LOCALHOST;

fn fail(msg: impl std::fmt::Display) -> Failure {
    Failure {
        code: 1,
        msg: msg.to_string(),
    }
}

/// One memcached, under its wrapper shell.
struct Memcached {
    port: u16,
    pid: u32,
    wrapper: Child,
    /// Closing this pipe makes the wrapper kill memcached.
    stdin: Option<ChildStdin>,
}

impl Memcached {
    fn addr(&self) -> String {
        format!("{LOOPBACK}:{}", self.port)
    }

    /// Kill memcached and wait until it is gone (its port closed).
    fn stop(&mut self) {
        drop(self.stdin.take());
        // The wrapper kills memcached and waits for it; if the wrapper is somehow gone
        // already, kill memcached ourselves.
        if self.wrapper.wait().is_err() || process_alive(self.pid) {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(self.pid.to_string())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Every memcached the demo started; all stopped when dropped.
#[derive(Default)]
struct Servers(Vec<Memcached>);

impl Drop for Servers {
    fn drop(&mut self) {
        // Close every pipe first so that the servers shut down in parallel, then wait.
        for m in &mut self.0 {
            drop(m.stdin.take());
        }
        for m in &mut self.0 {
            m.stop();
        }
    }
}

/// Whether `pid` exists and is not a zombie.
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

/// The memcached binary on PATH.
fn find_memcached() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("memcached"))
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Whether we run as root (memcached then needs `-u root`).
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|rest| rest.split_whitespace().next().map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn free_port() -> Result<u16, Failure> {
    let l = TcpListener::bind((LOOPBACK, 0)).map_err(|e| fail(format!("bind 127.0.0.1:0: {e}")))?;
    Ok(l.local_addr()
        .map_err(|e| fail(format!("local address: {e}")))?
        .port())
}

/// Start one memcached on a free loopback port and wait until it accepts connections. A few
/// tries, in case another process takes the port between our probe and memcached's bind.
fn start_one(bin: &Path, servers: &mut Servers) -> Result<(), Failure> {
    let mut last = String::new();
    for _ in 0..3 {
        let port = free_port()?;
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(r#""$@" >&2 & m=$!; echo $m; read _; kill $m 2>/dev/null; wait $m"#)
            .arg("sh")
            .arg(bin);
        if running_as_root() {
            cmd.args(["-u", "root"]);
        }
        cmd.args(["-U", "0", "-m", "64", "-l", "127.0.0.1", "-p"])
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut wrapper = cmd.spawn().map_err(|e| fail(format!("spawn sh: {e}")))?;
        let stdin = wrapper.stdin.take();
        let mut out = wrapper.stdout.take();
        // Register it before anything else can fail, so the guard stops it.
        let mut pid_text = Vec::new();
        if let Some(out) = out.as_mut() {
            let mut b = [0u8; 1];
            while out.read(&mut b).map(|n| n == 1).unwrap_or(false) && b[0] != b'\n' {
                pid_text.push(b[0]);
            }
        }
        let pid: u32 = String::from_utf8_lossy(&pid_text)
            .trim()
            .parse()
            .unwrap_or(0);
        servers.0.push(Memcached {
            port,
            pid,
            wrapper,
            stdin,
        });
        if pid == 0 {
            return Err(fail("could not start memcached (no pid from its wrapper)"));
        }
        let addr = SocketAddr::from((LOOPBACK, port));
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                return Ok(());
            }
            if !process_alive(pid) {
                last = format!("memcached on {addr} exited at start");
                break;
            }
            if Instant::now() > deadline {
                last = format!("memcached on {addr} did not accept connections within 5 s");
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(mut m) = servers.0.pop() {
            m.stop();
        }
    }
    Err(fail(last))
}

fn client(addrs: &[String], flavor: Flavor) -> Result<Client, Failure> {
    let t = Duration::from_secs(2);
    Client::builder()
        .server_list(&addrs.join("\n"))
        .and_then(|b| {
            b.flavor(flavor)
                .connect_timeout(t)
                .read_timeout(t)
                .write_timeout(t)
                .build()
        })
        .map_err(|e| fail(format!("building the client: {e}")))
}

/// Key placement: ketama (one memshard client over all servers) or modulo (md5 of the key
/// modulo the number of servers, one single-server memshard client per server).
enum Placement {
    Ketama(Client),
    Modulo(Vec<Client>),
}

impl Placement {
    fn ketama(addrs: &[String]) -> Result<Placement, Failure> {
        Ok(Placement::Ketama(client(addrs, Flavor::Libmemcached)?))
    }

    fn modulo(addrs: &[String]) -> Result<Placement, Failure> {
        let clients = addrs
            .iter()
            .map(|a| client(std::slice::from_ref(a), Flavor::Libmemcached))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Placement::Modulo(clients))
    }

    /// Indices of `keys` grouped by the client that owns them.
    fn groups<'a>(&'a self, keys: &[&[u8]]) -> Vec<(&'a Client, Vec<usize>)> {
        match self {
            Placement::Ketama(c) => vec![(c, (0..keys.len()).collect())],
            Placement::Modulo(cs) => {
                let mut g: Vec<(&Client, Vec<usize>)> = cs.iter().map(|c| (c, vec![])).collect();
                for (i, k) in keys.iter().enumerate() {
                    let s = KeyHash::Md5.hash(k) as usize % cs.len();
                    g[s].1.push(i);
                }
                g
            }
        }
    }

    /// Set every item; errors are counted and the first one kept.
    fn load(&self, items: &[(String, String)]) -> Result<(), Failure> {
        for batch in items.chunks(BATCH) {
            let keys: Vec<&[u8]> = batch.iter().map(|(k, _)| k.as_bytes()).collect();
            for (c, idx) in self.groups(&keys) {
                let part: Vec<(&str, &str)> = idx
                    .iter()
                    .map(|&i| (batch[i].0.as_str(), batch[i].1.as_str()))
                    .collect();
                for ((k, _), r) in part.iter().zip(c.set_multi(&part, 0, Expiry::NEVER)) {
                    match r {
                        Ok(StoreOutcome::Stored) => {}
                        Ok(other) => return Err(fail(format!("set {k}: {other:?}"))),
                        Err(e) => return Err(fail(format!("set {k}: {e}"))),
                    }
                }
            }
        }
        Ok(())
    }

    /// How many items read back with their value.
    fn hits(&self, items: &[(String, String)]) -> Result<usize, Failure> {
        let mut hits = 0;
        for batch in items.chunks(BATCH) {
            let keys: Vec<&[u8]> = batch.iter().map(|(k, _)| k.as_bytes()).collect();
            for (c, idx) in self.groups(&keys) {
                let part: Vec<&[u8]> = idx.iter().map(|&i| keys[i]).collect();
                for (&i, r) in idx.iter().zip(c.get_multi(&part)) {
                    match r {
                        Ok(Some(item)) if item.value == batch[i].1.as_bytes() => hits += 1,
                        Ok(_) => {}
                        Err(e) => return Err(fail(format!("get {}: {e}", batch[i].0))),
                    }
                }
            }
        }
        Ok(hits)
    }

    fn flush_all(&self) -> Result<(), Failure> {
        let cs: Vec<&Client> = match self {
            Placement::Ketama(c) => vec![c],
            Placement::Modulo(cs) => cs.iter().collect(),
        };
        for c in cs {
            for (s, r) in c.flush_all(None) {
                r.map_err(|e| fail(format!("flush_all on {}: {e}", s.addr)))?;
            }
        }
        Ok(())
    }
}

fn pct(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// What the ring alone says about `keys` on `before` and on `after` (one server more).
struct Prediction {
    /// Keys each server of `before` owns, in server order.
    per_server: Vec<usize>,
    /// Keys that stay on their server with ketama (libmemcached flavor).
    ketama_stay: usize,
    /// Keys that stay on their server with md5 modulo the server count.
    modulo_stay: usize,
}

fn ring(addrs: &[String]) -> Result<Ring, Failure> {
    let servers =
        parse_server_list(&addrs.join("\n")).map_err(|e| fail(format!("server list: {e}")))?;
    Ring::new(servers, Flavor::Libmemcached).map_err(|e| fail(format!("ring: {e}")))
}

fn predict(before: &[String], after: &[String], keys: &[String]) -> Result<Prediction, Failure> {
    let (old, new) = (ring(before)?, ring(after)?);
    let owner = |r: &Ring, k: &str| r.server_for(k.as_bytes()).map(|s| s.addr.clone());
    let mut p = Prediction {
        per_server: vec![0; before.len()],
        ketama_stay: 0,
        modulo_stay: 0,
    };
    for k in keys {
        let was = owner(&old, k);
        if let Some(i) = was
            .as_ref()
            .and_then(|a| before.iter().position(|b| b == a))
        {
            p.per_server[i] += 1;
        }
        if was.is_some() && was == owner(&new, k) {
            p.ketama_stay += 1;
        }
        let h = KeyHash::Md5.hash(k.as_bytes()) as usize;
        if h % before.len() == h % after.len() {
            p.modulo_stay += 1;
        }
    }
    Ok(p)
}

/// The offline part: the example cluster's addresses are only names here, nothing connects.
fn offline(a: &DemoArgs, why: &str) -> Result<(), Failure> {
    let n = a.servers;
    let addrs: Vec<String> = (0..=n)
        .map(|i| format!("127.0.0.1:{}", 21201 + i))
        .collect();
    let (before, after) = (&addrs[..n], &addrs[..]);
    let keys: Vec<String> = (0..a.keys).map(|i| format!("demo:{i}")).collect();
    let p = predict(before, after, &keys)?;
    println!("memshard demo, offline part ({why})");
    println!(
        "example cluster: {n} servers {}..{} (weight 1, not contacted), {} keys demo:<i>",
        before[0],
        before[n - 1],
        keys.len()
    );
    println!();
    println!("keys per server (placed by the ring, flavor libmemcached = ketama, md5):");
    println!(
        "{:<22} {:>6} {:>8} {:>7}",
        "server", "weight", "keys", "share"
    );
    for (addr, k) in before.iter().zip(&p.per_server) {
        println!("{addr:<22} {:>6} {k:>8} {:>6.1}%", 1, pct(*k, keys.len()));
    }
    println!(
        "{:<22} {:>6} {:>8}",
        "total",
        n,
        p.per_server.iter().sum::<usize>()
    );
    println!();
    println!("adding a server {}:", after[n]);
    println!(
        "ketama: {:.1}% of keys stay on their server (expected ~ {n}/{}) [{}/{}]",
        pct(p.ketama_stay, keys.len()),
        n + 1,
        p.ketama_stay,
        keys.len()
    );
    println!(
        "modulo: {:.1}% of keys stay on their server (expected ~ 1/{}) [{}/{}]",
        pct(p.modulo_stay, keys.len()),
        n + 1,
        p.modulo_stay,
        keys.len()
    );
    println!();
    println!("The live part starts real memcached servers on 127.0.0.1 and measures the hits:");
    println!(
        "    bash scripts/demo.sh      (installs memcached if needed, then runs memshard demo)"
    );
    Ok(())
}

pub fn run(a: DemoArgs) -> Result<(), Failure> {
    if a.keys == 0 {
        return Err(usage("--keys must be at least 1"));
    }
    if !(1..=32).contains(&a.servers) {
        return Err(usage("--servers must be from 1 to 32"));
    }
    if a.offline {
        return offline(&a, "--offline");
    }
    let Some(bin) = find_memcached() else {
        return offline(&a, "memcached is not installed");
    };
    let n = a.servers;
    let started = Instant::now();
    let mut servers = Servers::default();

    println!(
        "memshard demo: {n} memcached servers on 127.0.0.1, {} keys",
        a.keys
    );
    println!();
    for _ in 0..n {
        start_one(&bin, &mut servers)?;
        let m = servers.0.last().expect("just started");
        println!("started memcached {} (pid {})", m.addr(), m.pid);
    }
    let before: Vec<String> = servers.0.iter().map(Memcached::addr).collect();

    // Load the keys through memshard (ketama, libmemcached flavor) and show the spread.
    let items: Vec<(String, String)> = (0..a.keys)
        .map(|i| (format!("demo:{i}"), format!("value-{i}")))
        .collect();
    let ketama_before = Placement::Ketama(client(&before, Flavor::Libmemcached)?);
    let t = Instant::now();
    ketama_before.load(&items)?;
    println!();
    println!(
        "loaded {} keys through memshard (flavor libmemcached = ketama, md5) in {} ms",
        items.len(),
        t.elapsed().as_millis()
    );
    println!();
    let stats = match &ketama_before {
        Placement::Ketama(c) => c.stats(None),
        Placement::Modulo(_) => Vec::new(),
    };
    let mut rows = Vec::new();
    for (s, r) in &stats {
        let st = r
            .as_ref()
            .map_err(|e| fail(format!("stats on {}: {e}", s.addr)))?;
        let items: usize = st
            .iter()
            .find(|(k, _)| k == "curr_items")
            .and_then(|(_, v)| v.parse().ok())
            .ok_or_else(|| fail(format!("stats on {}: no curr_items", s.addr)))?;
        rows.push((s.addr.clone(), s.weight, items));
    }
    let total: usize = rows.iter().map(|r| r.2).sum();
    let total_weight: u32 = rows.iter().map(|r| r.1).sum();
    println!("keys per server (memcached `stats` curr_items):");
    println!(
        "{:<22} {:>6} {:>8} {:>7}  {:>10}",
        "server", "weight", "keys", "share", "weight share"
    );
    for (addr, w, k) in &rows {
        println!(
            "{addr:<22} {w:>6} {k:>8} {:>6.1}%  {:>11.1}%",
            pct(*k, total),
            100.0 * f64::from(*w) / f64::from(total_weight)
        );
    }
    println!("{:<22} {:>6} {total:>8}", "total", total_weight);

    // Add a server.
    start_one(&bin, &mut servers)?;
    let m = servers.0.last().expect("just started");
    println!();
    println!(
        "adding a server: started memcached {} (pid {})",
        m.addr(),
        m.pid
    );
    let after: Vec<String> = servers.0.iter().map(Memcached::addr).collect();
    println!(
        "for each method: flush_all, load all {} keys placed over {n} servers, \
         read them all placed over {}",
        items.len(),
        n + 1
    );
    println!();

    let methods: [(&str, Placement, Placement, String); 2] = [
        (
            "ketama",
            ketama_before,
            Placement::ketama(&after)?,
            format!("{n}/{}", n + 1),
        ),
        (
            "modulo",
            Placement::modulo(&before)?,
            Placement::modulo(&after)?,
            format!("1/{}", n + 1),
        ),
    ];
    let keys: Vec<String> = items.iter().map(|(k, _)| k.clone()).collect();
    let predicted = predict(&before, &after, &keys)?;
    for ((name, old, new, expected), stay) in methods
        .iter()
        .zip([predicted.ketama_stay, predicted.modulo_stay])
    {
        new.flush_all()?;
        old.load(&items)?;
        let hits = new.hits(&items)?;
        println!(
            "{name}: {:.1}% of keys still hit after adding a server (expected ~ {expected}) \
             [{hits}/{} hits; the ring predicted {stay}]",
            pct(hits, items.len()),
            items.len()
        );
    }
    drop(methods);

    let count = servers.0.len();
    drop(servers);
    println!();
    println!(
        "stopped {count} memcached servers; done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
