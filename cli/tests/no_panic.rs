//! No setting and no input makes the library or the CLI panic or abort: every setting that
//! cannot work is an error at build time with a message that says what to do.
//!
//! A property test with a seeded PRNG (a splitmix64, a few lines; `proptest` would add a crate
//! and its shrinking, which these inputs do not need: every failure prints its seed, case and
//! settings, and the settings are already small) feeds random builder settings — durations
//! including 0 and `Duration::MAX`, pool sizes including 0 and `u32::MAX`, `min_idle`, weights
//! including 0, every flavour, random server lists — to both builders and to `Ring::new` /
//! `Ring::with_options`, and random bytes and token soups to the server-list and configuration
//! parsers, under `catch_unwind`. `MEMSHARD_SEED=<n>` replays a run; `MEMSHARD_CASES=<n>`
//! changes its length.
//!
//! Then one test per panic that was fixed, each of which panicked (or aborted) before:
//! zero weights, a libmemcached configuration's extreme timeouts, and the CLI's float and range
//! arguments. Extreme durations and pool sizes refused by both builders run in
//! tests/scenarios.rs (`settings_that_cannot_work_are_refused_at_build`).
//!
//! Only loopback addresses are targets: servers sit on 127.255.x.y (where no test listens; the
//! test servers use 127.0.0.1 and 127.[1-254].x.y) or on a unix socket path that does not
//! exist, so every connection attempt is refused at once.

mod support;

use memshard::Expiry;
use memshard::config;
use memshard::hash::KEY_HASHES;
use memshard::{
    Client, Error, FLAVORS, FailurePolicy, Flavor, HashTag, KeyHash, MAX_POOL_SIZE, MAX_TIMEOUT,
    Ring, RingError, Server, SettingError,
};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

/// splitmix64: small, seedable, good enough to pick settings.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

fn seed() -> u64 {
    let seed = std::env::var("MEMSHARD_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6d65_6d73_6861_7264);
    println!("seed {seed} (MEMSHARD_SEED={seed} replays this run)");
    seed
}

fn cases(default: u64) -> u64 {
    std::env::var("MEMSHARD_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn duration(r: &mut Rng) -> Duration {
    match r.below(12) {
        0 => Duration::ZERO,
        1 => Duration::from_nanos(1),
        2 => Duration::from_millis(1),
        3 => Duration::from_millis(50),
        4 => Duration::from_secs(1),
        5 => MAX_TIMEOUT,
        6 => MAX_TIMEOUT + Duration::from_nanos(1),
        7 => Duration::from_secs(u64::MAX),
        8 => Duration::MAX,
        9 => Duration::from_micros(u64::MAX),
        _ => Duration::from_nanos(r.next() >> r.below(64)),
    }
}

fn count(r: &mut Rng, around: u32) -> u32 {
    match r.below(9) {
        0 => 0,
        1 => 1,
        2 => 8,
        3 => around,
        4 => around.saturating_add(1),
        5 => MAX_POOL_SIZE,
        6 => MAX_POOL_SIZE + 1,
        7 => u32::MAX,
        _ => r.below(64) as u32,
    }
}

fn weight(r: &mut Rng) -> u32 {
    match r.below(7) {
        0 => 0,
        1 => 1,
        2 => u32::MAX,
        3 => u32::MAX / 2,
        4 => r.next() as u32,
        _ => r.below(1000) as u32 + 1,
    }
}

/// A random server on a loopback address nothing listens on (or a missing unix socket).
fn server(r: &mut Rng) -> Server {
    let s = if r.chance(10) {
        Server::new("/nonexistent/memshard-no-panic.sock", 0)
    } else {
        let host = format!("127.255.{}.{}", r.below(256), r.below(254) + 1);
        Server::new(host, (r.below(65535) + 1) as u16)
    };
    let s = s.with_weight(weight(r));
    if r.chance(4) {
        s.with_name(format!("node-{}", r.below(100)))
    } else {
        s
    }
}

fn servers(r: &mut Rng) -> Vec<Server> {
    let n = match r.below(8) {
        0 => 0,
        1 => 1,
        2 => 40,
        _ => r.below(6) + 1,
    };
    (0..n).map(|_| server(r)).collect()
}

fn flavor(r: &mut Rng) -> Flavor {
    r.pick(FLAVORS).1
}

fn key_hash(r: &mut Rng) -> Option<KeyHash> {
    (!r.chance(3)).then(|| r.pick(KEY_HASHES).1)
}

fn tag(r: &mut Rng) -> Option<HashTag> {
    r.chance(3)
        .then(|| HashTag::new(r.next() as u8, r.next() as u8))
}

fn bytes(r: &mut Rng, max: u64) -> Vec<u8> {
    let n = r.below(max + 1);
    (0..n).map(|_| r.next() as u8).collect()
}

/// Every setting of a builder, drawn at random.
#[derive(Debug, Clone)]
struct Settings {
    servers: Vec<Server>,
    flavor: Flavor,
    hash: Option<KeyHash>,
    tag: Option<HashTag>,
    pool_size: u32,
    min_idle: Option<u32>,
    checkout: Duration,
    connect: Duration,
    read: Duration,
    write: Duration,
    ping: bool,
    max_value: usize,
    prefix: Option<Vec<u8>>,
    hash_with_prefix: bool,
    policy: FailurePolicy,
}

/// Settings drawn one by one from everything, extremes included (most such cases are refused
/// at build); or, half the time, usable settings of which at most two are drawn that way.
fn settings(r: &mut Rng) -> Settings {
    let pool_size = count(r, 8);
    let wild = Settings {
        servers: servers(r),
        flavor: flavor(r),
        hash: key_hash(r),
        tag: tag(r),
        pool_size,
        min_idle: (!r.chance(3)).then(|| count(r, pool_size)),
        checkout: duration(r),
        connect: duration(r),
        read: duration(r),
        write: duration(r),
        ping: r.chance(2),
        max_value: *r.pick(&[0, 1, 1 << 20, usize::MAX]),
        prefix: r.chance(3).then(|| {
            if r.chance(2) {
                bytes(r, 300)
            } else {
                format!("p{}:", r.below(1000)).into_bytes()
            }
        }),
        hash_with_prefix: r.chance(2),
        policy: FailurePolicy::new(*r.pick(&[0, 1, 2, u32::MAX]), duration(r), r.chance(2)),
    };
    if r.chance(2) {
        return wild;
    }
    let ms = |r: &mut Rng| Duration::from_millis(r.below(30) + 1);
    let mut s = Settings {
        servers: (0..r.below(5) + 1)
            .map(|_| {
                let s = server(r);
                // small weights: a ring of memshard-weighted points is built in debug builds too
                let w = s.weight.max(1) % 50 + 1;
                s.with_weight(w)
            })
            .collect(),
        flavor: wild.flavor,
        hash: None,
        tag: wild.tag,
        pool_size: (r.below(16) + 1) as u32,
        min_idle: None,
        checkout: ms(r),
        connect: ms(r),
        read: ms(r),
        write: ms(r),
        ping: wild.ping,
        max_value: 1 << 20,
        prefix: None,
        hash_with_prefix: wild.hash_with_prefix,
        policy: FailurePolicy::new((r.below(3)) as u32, ms(r), wild.policy.auto_eject),
    };
    s.min_idle = Some(r.below(u64::from(s.pool_size) + 1) as u32);
    for _ in 0..r.below(3) {
        match r.below(12) {
            0 => s.servers = wild.servers.clone(),
            1 => s.hash = wild.hash,
            2 => s.pool_size = wild.pool_size,
            3 => s.min_idle = wild.min_idle,
            4 => s.checkout = wild.checkout,
            5 => s.connect = wild.connect,
            6 => s.read = wild.read,
            7 => s.write = wild.write,
            8 => s.max_value = wild.max_value,
            9 => s.prefix = wild.prefix.clone(),
            10 => s.policy = wild.policy,
            _ => s.policy.retry_timeout = wild.policy.retry_timeout,
        }
    }
    s
}

/// Every setting of `$s` on the builder `$b` (both builders have the same setters).
macro_rules! apply {
    ($b:expr, $s:expr) => {{
        let s = $s;
        let mut b = $b
            .servers(s.servers.clone())
            .flavor(s.flavor)
            .pool_size(s.pool_size)
            .checkout_timeout(s.checkout)
            .connect_timeout(s.connect)
            .read_timeout(s.read)
            .write_timeout(s.write)
            .ping_on_checkout(s.ping)
            .max_value_size(s.max_value)
            .hash_with_prefix(s.hash_with_prefix)
            .failure_policy(s.policy);
        if let Some(h) = s.hash {
            b = b.hash(h);
        }
        if let Some(t) = s.tag {
            b = b.hash_tag(t);
        }
        if let Some(n) = s.min_idle {
            b = b.min_idle(n);
        }
        if let Some(p) = &s.prefix {
            b = b.prefix(p);
        }
        b
    }};
}

impl Settings {
    fn blocking(&self) -> memshard::Builder<memshard::Client> {
        apply!(Client::builder(), self)
    }

    fn nonblocking(&self) -> memshard::aio::Builder {
        apply!(memshard::aio::Client::builder(), self)
    }

    /// Short enough that a request to a refused server returns soon even from a pool that
    /// retries connecting until its checkout timeout (r2d2).
    fn quick(&self) -> bool {
        let q = Duration::from_millis(100);
        self.checkout <= q && self.connect <= q && self.read <= q && self.write <= q
    }
}

/// Runs `f`, failing the test with `what` if it panics.
fn no_panic<T>(what: impl std::fmt::Display, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("PANIC: {msg}\n  in {what}");
        }
    }
}

/// An error of the library: it says something, and names no CLI flag.
fn check_error(e: &dyn std::error::Error, what: &dyn std::fmt::Display) {
    let msg = e.to_string();
    assert!(
        !msg.trim().is_empty(),
        "an error without a message: {e:?} in {what}"
    );
    assert!(
        !msg.contains(" --") && !msg.starts_with("--"),
        "a library error names a CLI flag: {msg} in {what}"
    );
}

fn check_result<T>(r: &Result<T, Error>, what: &dyn std::fmt::Display) {
    if let Err(e) = r {
        check_error(e, what);
    }
}

#[test]
fn random_settings_never_panic_either_builder_or_the_ring() {
    let seed = seed();
    let mut r = Rng(seed);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (mut built, mut refused, mut requests) = (0, 0, 0);
    let mut slowest = (Duration::ZERO, String::new());
    for case in 0..cases(300) {
        let started = std::time::Instant::now();
        let s = settings(&mut r);
        let what = format!("case {case} of seed {seed}: {s:?}");
        let what = &what as &dyn std::fmt::Display;

        let ring = no_panic(what, || {
            Ring::with_options(s.servers.clone(), s.flavor, s.hash, s.tag)
        });
        if let Err(e) = &ring {
            check_error(e, what);
        }
        no_panic(what, || Ring::new(s.servers.clone(), s.flavor)).err();

        let client = no_panic(what, || s.blocking().build());
        check_result(&client, what);
        match &client {
            Ok(c) => {
                built += 1;
                assert!(
                    ring.is_ok(),
                    "a client over a list the ring refuses: {what}"
                );
                if s.quick() {
                    requests += 1;
                    check_result(&no_panic(what, || c.get("no-panic:k")), what);
                    check_result(
                        &no_panic(what, || c.set("no-panic:k", "v", Expiry::NEVER)),
                        what,
                    );
                    let multi = no_panic(what, || c.get_multi(&["a", "b", "c"]));
                    multi.iter().for_each(|r| check_result(r, what));
                }
                let other = servers(&mut r);
                check_result(&no_panic(what, || c.set_servers(other)), what);
            }
            Err(_) => refused += 1,
        }
        drop(client);

        {
            let client = {
                let _in_runtime = rt.enter();
                no_panic(what, || s.nonblocking().build())
            };
            check_result(&client, what);
            assert_eq!(
                client.is_ok(),
                s.blocking().build().is_ok(),
                "the builders disagree: {what}"
            );
            if let Ok(c) = client {
                // every target refuses connections: fail fast, whatever the timeouts
                let what = what.to_string();
                let handle = rt.spawn(async move {
                    let get = c.get("no-panic:k").await;
                    let set = c.set("no-panic:k", "v", Expiry::NEVER).await;
                    let multi = c.get_multi(&["a", "b", "c"]).await;
                    (get, set, multi)
                });
                let joined = rt.block_on(async {
                    tokio::time::timeout(Duration::from_secs(120), handle).await
                });
                let (get, set, multi) = match joined {
                    Ok(Ok(v)) => v,
                    Ok(Err(e)) => panic!("PANIC in an async request: {e} in {what}"),
                    Err(_) => panic!("an async request to a refusing server hung: {what}"),
                };
                check_result(&get, &what);
                check_result(&set, &what);
                multi.iter().for_each(|r| check_result(r, &what));
            }
        }
        if started.elapsed() > slowest.0 {
            slowest = (started.elapsed(), what.to_string());
        }
    }
    println!("slowest case: {:?}: {}", slowest.0, slowest.1);
    println!(
        "builder cases: {built} built ({requests} with blocking requests), {refused} refused at build"
    );
    assert!(
        built > 0 && refused > 0,
        "the cases should cover both outcomes"
    );
}

/// Tokens the parsers know, to make inputs that get past their first check.
const TOKENS: &[&str] = &[
    "--SERVER=",
    "--DISTRIBUTION=consistent",
    "--DISTRIBUTION=",
    "--HASH=",
    "MD5",
    "CRC",
    "--NAMESPACE=",
    "--HASH-WITH-NAMESPACE",
    "--REMOVE-FAILED-SERVERS=",
    "--RETRY-TIMEOUT=",
    "--RCV-TIMEOUT=",
    "--POOL-MAX=",
    "127.0.0.1",
    "127.255.0.1",
    "[::1]",
    "[",
    "]",
    ":",
    "::",
    "/?",
    "/",
    ",",
    " ",
    "\t",
    "\n",
    "\r\n",
    "#",
    "- ",
    "0",
    "1",
    "11211",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "-1",
    "\"",
    "name",
    "\u{e9}",
    "\u{0}",
];

fn soup(r: &mut Rng) -> String {
    let n = r.below(24);
    (0..n)
        .map(|_| {
            if r.chance(8) {
                String::from_utf8_lossy(&bytes(r, 6)).into_owned()
            } else {
                r.pick(TOKENS).to_string()
            }
        })
        .collect()
}

/// A number as a configuration would write it: small, at a type's edge, or past it.
fn number(r: &mut Rng) -> String {
    match r.below(8) {
        0 => "0".into(),
        1 => "18446744073709551615".into(),
        2 => "18446744073709551616".into(),
        3 => "4294967295".into(),
        4 => "2147483648".into(),
        5 => "-1".into(),
        _ => r.below(5000).to_string(),
    }
}

/// A libmemcached configuration string that mostly parses: servers, distribution, and
/// options with numbers at their edges; sometimes with a token dropped or soup added.
fn libmemcached_config(r: &mut Rng) -> String {
    let mut parts: Vec<String> = Vec::new();
    for _ in 0..r.below(4) + 1 {
        let mut s = format!("--SERVER=127.255.{}.{}", r.below(256), r.below(254) + 1);
        if !r.chance(3) {
            s.push_str(&format!(":{}", *r.pick(&["9", "11211", "0", "65536"])));
        }
        if r.chance(2) {
            s.push_str(&format!("/?{}", number(r)));
        }
        parts.push(s);
    }
    parts.insert(
        r.below(parts.len() as u64 + 1) as usize,
        "--DISTRIBUTION=consistent".into(),
    );
    for opt in [
        "--RETRY-TIMEOUT",
        "--RCV-TIMEOUT",
        "--REMOVE-FAILED-SERVERS",
        "--POOL-MAX",
        "--CONNECT-TIMEOUT",
    ] {
        if r.chance(2) {
            parts.push(format!("{opt}={}", number(r)));
        }
    }
    if r.chance(3) {
        parts.push(format!(
            "--HASH={}",
            *r.pick(&["MD5", "CRC", "MURMUR", "none"])
        ));
    }
    if r.chance(4) {
        parts.push(format!(
            "--NAMESPACE={}",
            soup(r).replace(char::is_whitespace, "")
        ));
    }
    if r.chance(4) {
        let i = r.below(parts.len() as u64) as usize;
        parts.remove(i);
    }
    if r.chance(4) {
        parts.push(soup(r));
    }
    parts.join(" ")
}

fn yaml(r: &mut Rng) -> String {
    let mut y = String::from("pool:\n");
    for key in [
        "listen",
        "hash",
        "distribution",
        "hash_tag",
        "auto_eject_hosts",
        "server_failure_limit",
        "server_retry_timeout",
        "timeout",
        "redis",
    ] {
        if r.chance(2) {
            y.push_str(&format!("  {key}: {}\n", soup(r).replace('\n', " ")));
        }
    }
    if !r.chance(5) {
        y.push_str("  servers:\n");
        for _ in 0..r.below(4) + 1 {
            let entry = if r.chance(3) {
                soup(r).replace('\n', " ")
            } else {
                format!(
                    "127.255.{}.{}:{}:{} node{}",
                    r.below(256),
                    r.below(254) + 1,
                    *r.pick(&["9", "11211", "0"]),
                    number(r),
                    r.below(9)
                )
            };
            y.push_str(&format!("   - {entry}\n"));
        }
    }
    y
}

/// A nutcracker.yml pool with every field drawn at random, numbers at their edges.
fn yaml_fields(r: &mut Rng) -> String {
    let mut y = String::from("pool:\n");
    if r.chance(2) {
        y.push_str(&format!(
            "  hash: {}\n",
            *r.pick(&["md5", "fnv1a_64", "crc32a", "x"])
        ));
    }
    if r.chance(3) {
        y.push_str(&format!(
            "  hash_tag: \"{}\"\n",
            *r.pick(&["{}", "$$", "x", ""])
        ));
    }
    for key in ["server_failure_limit", "server_retry_timeout", "timeout"] {
        if r.chance(2) {
            y.push_str(&format!("  {key}: {}\n", number(r)));
        }
    }
    if r.chance(2) {
        y.push_str("  auto_eject_hosts: true\n");
    }
    y.push_str("  servers:\n");
    for _ in 0..r.below(4) + 1 {
        y.push_str(&format!(
            "   - 127.255.{}.{}:9:{}\n",
            r.below(256),
            r.below(254) + 1,
            number(r)
        ));
    }
    y
}

#[test]
fn random_bytes_never_panic_the_parsers() {
    let seed = seed();
    let mut r = Rng(seed ^ 0x7061_7273_6572);
    let mut parsed = [0u64; 3];
    for case in 0..cases(300) * 10 {
        let text = match r.below(4) {
            0 => String::from_utf8_lossy(&bytes(&mut r, 200)).into_owned(),
            1 => libmemcached_config(&mut r),
            _ => soup(&mut r),
        };
        let what = format!("case {case} of seed {seed}: {text:?}");
        let what = &what as &dyn std::fmt::Display;
        let list = no_panic(what, || memshard::parse_server_list(&text));
        match &list {
            Ok(servers) if !servers.is_empty() && servers.len() < 100 => {
                parsed[0] += 1;
                let f = flavor(&mut r);
                if let Err(e) = no_panic(what, || Ring::new(servers.clone(), f)) {
                    check_error(&e, what);
                }
            }
            Ok(_) => {}
            Err(e) => assert!(!e.to_string().is_empty(), "no message: {what}"),
        }
        match no_panic(what, || config::libmemcached(&text)) {
            Ok(cfg) => {
                parsed[1] += 1;
                // a peer configuration's timeouts go to the builder: an error, never a panic
                check_result(
                    &no_panic(what, || Client::builder().peer_config(cfg).build()),
                    what,
                );
            }
            Err(e) => assert!(!e.to_string().is_empty(), "no message: {what}"),
        }
        let y = match r.below(3) {
            0 => yaml(&mut r),
            1 => yaml_fields(&mut r),
            _ => text.clone(),
        };
        let what = format!("case {case} of seed {seed}: {y:?}");
        let what = &what as &dyn std::fmt::Display;
        match no_panic(what, || config::twemproxy(&y, None)) {
            Ok(cfg) => {
                parsed[2] += 1;
                check_result(
                    &no_panic(what, || Client::builder().peer_config(cfg).build()),
                    what,
                );
            }
            Err(e) => assert!(!e.to_string().is_empty(), "no message: {what}"),
        }
        no_panic(what, || config::twemproxy_pools(&y)).ok();
    }
    println!(
        "parsed: {} server lists, {} libmemcached strings, {} nutcracker.yml pools",
        parsed[0], parsed[1], parsed[2]
    );
}

/// Total weight 0: uhashring and hash-ring divided by zero in `exact_digests` (a panic); the
/// other weighted flavours built a ring with no points that failed only at the first request
/// ("the ring has no points"); the unweighted ones ignored it. Now every flavour refuses a
/// weight of 0 at build, naming the server.
#[test]
fn zero_weight_is_an_error_at_build_for_every_flavour() {
    let all_zero = vec![
        Server::new("127.255.0.1", 11211).with_weight(0),
        Server::new("127.255.0.2", 11211).with_weight(0),
    ];
    let one_zero = vec![
        Server::new("127.255.0.1", 11211).with_weight(3),
        Server::new("127.255.0.2", 11211).with_weight(0),
    ];
    for &(name, f) in FLAVORS {
        for (list, zero) in [
            (&all_zero, "127.255.0.1:11211"),
            (&one_zero, "127.255.0.2:11211"),
        ] {
            let r = no_panic(name, || Ring::new(list.clone(), f));
            match r {
                Err(RingError::ZeroWeight { server }) => assert_eq!(server, zero),
                other => panic!("{name}: {other:?}"),
            }
            let r = no_panic(name, || {
                Client::builder().servers(list.clone()).flavor(f).build()
            });
            let e = r.expect_err(name);
            assert!(e.to_string().contains("weight 0"), "{name}: {e}");
        }
    }
    // exact_digests itself: a total of 0 gives 0, not a division by zero
    assert_eq!(memshard::ring::flavor::exact_digests(0, 0, 2), 0);
    assert_eq!(memshard::ring::flavor::exact_digests(1, 1, 2), 80);
}

fn setting_error(r: Result<Client, Error>) -> SettingError {
    match r {
        Err(Error::Setting(e)) => {
            check_error(&e, &"a setting error");
            e
        }
        Err(e) => panic!("expected a setting error, got {e}"),
        Ok(_) => panic!("expected a setting error, the client was built"),
    }
}

/// A libmemcached configuration's timeouts reach the builder: `--RETRY-TIMEOUT` of u64::MAX
/// seconds overflowed the health state's `now + retry_timeout` at the first failure (a
/// panic). The configuration parser now refuses it, naming the option and the range, and a
/// retry timeout that large set through the builder is a setting error at build.
/// `--RCV-TIMEOUT=0` means "no receive timeout" to libmemcached and now to memshard too
/// (before, a read timeout of 0).
#[test]
fn libmemcached_config_extremes() {
    let e = config::libmemcached(
        "--SERVER=127.255.0.1:9 --DISTRIBUTION=consistent --REMOVE-FAILED-SERVERS=1 --RETRY-TIMEOUT=18446744073709551615",
    )
    .expect_err("u64::MAX seconds of retry timeout");
    let text = e.to_string();
    assert!(
        text.contains("--RETRY-TIMEOUT") && text.contains("out of range") && text.contains("86400"),
        "{text}"
    );
    let cfg = config::libmemcached(
        "--SERVER=127.255.0.1:9 --DISTRIBUTION=consistent --REMOVE-FAILED-SERVERS=1 --RETRY-TIMEOUT=86400",
    )
    .expect("a day is in range");
    let e = setting_error(no_panic("retry_timeout", || {
        Client::builder()
            .peer_config(cfg)
            .failure_policy(FailurePolicy::new(1, Duration::MAX, true))
            .checkout_timeout(Duration::from_millis(50))
            .build()
            .and_then(|c| {
                // before: the failure here marked the server down at now + Duration::MAX
                let _ = c.get("k");
                c.get("k").map(|_| c)
            })
    }));
    assert!(
        matches!(e, SettingError::TimeoutTooLong { setting, .. } if setting == "failure_policy.retry_timeout"),
        "{e}"
    );
    let cfg =
        config::libmemcached("--SERVER=127.255.0.1:9 --DISTRIBUTION=consistent --RCV-TIMEOUT=0")
            .unwrap();
    assert_eq!(
        cfg.timeout, None,
        "0 is libmemcached's 'no receive timeout'"
    );
    let c = Client::builder()
        .peer_config(cfg)
        .checkout_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    check_result(&no_panic("RCV-TIMEOUT=0", || c.get("k")), &"RCV-TIMEOUT=0");
}

// ---------------------------------------------------------------------------------------
// the CLI
// ---------------------------------------------------------------------------------------

fn memshard(args: &[&str]) -> (i32, String) {
    let (code, _, stderr) = support::parts(&support::memshard(args));
    assert!(
        !stderr.contains("panicked"),
        "memshard {args:?} panicked:\n{stderr}"
    );
    (code, stderr)
}

fn servers_file() -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("memshard-no-panic-{}.txt", std::process::id()));
    std::fs::write(&p, "127.255.0.1:9 1\n127.255.0.2:9 1\n").expect("write server list");
    p
}

/// `bench --seconds NaN` and `1e300` panicked in `Duration::from_secs_f64` (exit 101); a
/// `--timeout-ms 0` tripped r2d2's `assert!`; `plan --points` of u64::MAX overflowed a
/// capacity; `--value-size` of u64::MAX could not be allocated. Now clap rejects each with
/// exit status 2 and a message naming the flag.
#[test]
fn cli_rejects_out_of_range_numbers_with_status_2() {
    let list = servers_file();
    let list = list.to_str().expect("UTF-8 temp path");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["bench", "--servers", list, "--seconds", "NaN"],
            "--seconds",
        ),
        (
            vec!["bench", "--servers", list, "--seconds", "nan"],
            "--seconds",
        ),
        (
            vec!["bench", "--servers", list, "--seconds", "inf"],
            "--seconds",
        ),
        (
            vec!["bench", "--servers", list, "--seconds=-inf"],
            "--seconds",
        ),
        (
            vec!["bench", "--servers", list, "--seconds", "1e300"],
            "--seconds",
        ),
        (
            vec!["bench", "--servers", list, "--seconds=-1"],
            "--seconds",
        ),
        (
            vec!["bench", "--servers", list, "--seconds", "0"],
            "--seconds",
        ),
        (
            vec!["bench", "--servers", list, "--seconds", "x"],
            "--seconds",
        ),
        (
            vec!["bench", "--servers", list, "--get-ratio", "NaN"],
            "--get-ratio",
        ),
        (
            vec!["bench", "--servers", list, "--get-ratio", "1.5"],
            "--get-ratio",
        ),
        (
            vec!["bench", "--servers", list, "--threads", "0"],
            "--threads",
        ),
        (
            vec!["bench", "--servers", list, "--threads", "4294967297"],
            "--threads",
        ),
        (
            vec![
                "bench",
                "--servers",
                list,
                "--value-size",
                "18446744073709551615",
            ],
            "--value-size",
        ),
        (
            vec!["bench", "--servers", list, "--timeout-ms", "0"],
            "--timeout-ms",
        ),
        (
            vec!["get", "--servers", list, "--timeout-ms", "0", "k"],
            "--timeout-ms",
        ),
        (
            vec![
                "get",
                "--servers",
                list,
                "--timeout-ms",
                "18446744073709551615",
                "k",
            ],
            "--timeout-ms",
        ),
        (
            vec![
                "get",
                "--servers",
                list,
                "--retry-timeout-ms",
                "18446744073709551615",
                "k",
            ],
            "--retry-timeout-ms",
        ),
        (
            vec![
                "plan",
                "--servers",
                list,
                "--points",
                "18446744073709551615",
            ],
            "--points",
        ),
        (vec!["plan", "--servers", list, "--points", "0"], "--points"),
        (
            vec![
                "plan",
                "--servers",
                list,
                "--tag-audit",
                "--key-file",
                list,
                "--warn-share",
                "NaN",
            ],
            "--warn-share",
        ),
    ];
    for (args, flag) in cases {
        let (code, stderr) = memshard(&args);
        assert_eq!(code, 2, "memshard {args:?}: {stderr}");
        assert!(
            stderr.contains(flag),
            "memshard {args:?} names {flag}: {stderr}"
        );
    }
    // each in range, but too many in all for the servers: a clear message
    let ten = std::env::temp_dir().join(format!("memshard-no-panic-10-{}.txt", std::process::id()));
    let text: String = (1..=10).map(|i| format!("127.255.0.{i}:9\n")).collect();
    std::fs::write(&ten, text).expect("write server list");
    let ten = ten.to_str().expect("UTF-8 temp path");
    let (code, stderr) = memshard(&["plan", "--servers", ten, "--points", "10,1000000"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--points 1000000"), "{stderr}");
}

/// A libmemcached configuration on the command line: `--RCV-TIMEOUT=0` became a checkout
/// timeout of 0 (r2d2's `assert!`, exit 101); `--RETRY-TIMEOUT=18446744073709551615` with
/// `--REMOVE-FAILED-SERVERS=1` overflowed at the first failure (exit 101). Now the first
/// works (the server is unreachable: exit 1, per-key errors) and the second is refused
/// (exit 2, the option and its range named).
#[test]
fn cli_libmemcached_config_extremes() {
    let (code, stderr) = memshard(&[
        "get",
        "--libmemcached-config",
        "--SERVER=127.255.0.1:9 --DISTRIBUTION=consistent --RCV-TIMEOUT=0",
        "k",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("memshard get: k:"), "{stderr}");
    let (code, stderr) = memshard(&[
        "get",
        "--libmemcached-config",
        "--SERVER=127.255.0.1:9 --DISTRIBUTION=consistent --REMOVE-FAILED-SERVERS=1 --RETRY-TIMEOUT=18446744073709551615",
        "k",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--RETRY-TIMEOUT") && stderr.contains("0 to 86400 s"),
        "{stderr}"
    );
}
