//! Stampede protection against a real memcached: leases on a miss across two
//! processes of 100 threads each, and across 1,000 tasks of the async client; stale values
//! served after `invalidate`; early recache; the lease of a killed winner ending. Each count is
//! what the recompute functions report, summed over the processes.
//!
//! The second process is this test binary run again with `MEMSHARD_STAMPEDE_CHILD` set: the
//! `child` test (ignored, so a plain run lists it as ignored rather than as a pass; run with
//! `--ignored` by [`spawn_child`]) does the work and prints its counts; without the variable it
//! fails. memcached listens on 127.0.17.1, which no other test binary uses.
//!
//! No assertion depends on how long something takes: a phase that must overlap another waits for
//! a state (readers served, a recompute running), with a deadline only a broken client reaches.
//! The unprotected control runs are asserted to stampede, so the protected counts mean
//! something.

mod common;

use common::servers::{Memcached, require};
use memshard::{Client, Stampede};
use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const IP: Ipv4Addr = Ipv4Addr::new(127, 0, 17, 1);

fn client(addr: &str, stampede: Stampede) -> Client {
    Client::builder()
        .server_list(addr)
        .unwrap()
        .pool_size(16)
        .checkout_timeout(Duration::from_secs(5))
        .stampede(stampede)
        .build()
        .unwrap()
}

/// The same binary, running only `child` with `mode`.
fn spawn_child(mode: &str, addr: &str, key: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MEMSHARD_STAMPEDE_CHILD", format!("{mode} {addr} {key}"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The rest of the next line of `child`'s output from `prefix` on.
fn line_from(child: &mut Child, prefix: &str) -> String {
    let out = child.stdout.as_mut().unwrap();
    let mut reader = BufReader::new(out);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "child ended before {prefix}"
        );
        // libtest prints "test child ... " before the child's first line
        if let Some(at) = line.find(prefix) {
            return line[at..].trim_end().to_string();
        }
    }
}

/// The TTL memcached reports for `key` (`mg <key> t`, on a connection of the test's own):
/// `None` on a miss, `Some(-1)` for a value stored without expiry.
fn ttl_left(m: &Memcached, key: &str) -> Option<i64> {
    let reply = m.raw(format!("mg {key} t\r\n").as_bytes(), b"\r\n");
    let line = String::from_utf8(reply).unwrap();
    let line = line.trim_end();
    if line == "EN" {
        return None;
    }
    let t = line
        .strip_prefix("HD t")
        .unwrap_or_else(|| panic!("mg {key} t: {line:?}"));
    Some(t.parse().unwrap())
}

/// The value of `key` was stored for `secs` seconds, at some point after `since`: memcached
/// reports `secs` less one per tick of its clock (once a second) between the store and the
/// `mg`, so at least `secs` less the whole seconds since `since`, less one.
#[track_caller]
fn assert_ttl(m: &Memcached, key: &str, secs: i64, since: Instant) {
    let t = ttl_left(m, key).unwrap_or_else(|| panic!("{key} is not stored"));
    let ticks = since.elapsed().as_secs() as i64 + 1;
    assert!(
        (secs - ticks..=secs).contains(&t),
        "{key}: TTL left {t} s, stored for {secs} s at most {ticks} ticks ago"
    );
}

/// Polls `done` every millisecond until it holds; panics with `what` after 30 s (a state that
/// never comes, not a slow machine).
#[track_caller]
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "30 s without {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// 100 threads of one process asking for `key` at once; the recompute takes 300 ms.
fn hundred_threads(c: &Client, key: &str, go: &(dyn Fn() + Sync)) -> (u64, u64, u64) {
    let (recomputes, errors, right) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let barrier = Barrier::new(100);
    std::thread::scope(|s| {
        for _ in 0..100 {
            s.spawn(|| {
                barrier.wait();
                go();
                let got = c.get_or_compute(key, Duration::from_secs(60), || {
                    recomputes.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(300));
                    Ok::<_, std::io::Error>(b"computed".to_vec())
                });
                match got {
                    Ok(item) if item.value == b"computed"[..] => {
                        right.fetch_add(1, Ordering::SeqCst)
                    }
                    Ok(item) => panic!("wrong value {:?}", item.value),
                    Err(e) => {
                        eprintln!("error: {e}");
                        errors.fetch_add(1, Ordering::SeqCst)
                    }
                };
            });
        }
    });
    (
        recomputes.into_inner(),
        errors.into_inner(),
        right.into_inner(),
    )
}

#[test]
#[ignore = "the second process of the cross-process tests, run by them"]
fn child() {
    let spec = std::env::var("MEMSHARD_STAMPEDE_CHILD")
        .expect("`child` is the second process of a cross-process test: MEMSHARD_STAMPEDE_CHILD");
    let parts: Vec<&str> = spec.split(' ').collect();
    let (mode, addr, key) = (parts[0], parts[1], parts[2]);
    match mode {
        "herd" => {
            let c = client(addr, Stampede::default().wait(Duration::from_secs(10)));
            println!("READY");
            // every process starts when the parent stores the go key
            let go = || {
                while c.get(format!("{key}:go")).unwrap().is_none() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            };
            let (recomputes, errors, right) = hundred_threads(&c, key, &go);
            println!("COUNTS {recomputes} {errors} {right}");
        }
        "win-and-die" => {
            let c = client(addr, Stampede::default().lease(Duration::from_secs(2)));
            let _ = c.get_or_compute(key, Duration::from_secs(60), || {
                println!("WON");
                std::thread::sleep(Duration::from_secs(3600));
                Ok::<_, std::io::Error>(b"never".to_vec())
            });
        }
        other => panic!("mode {other}"),
    }
}

#[test]
fn two_processes_of_a_hundred_threads_recompute_a_missing_key_once() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(IP, 0, "");
    let since = Instant::now();
    let key = "stampede:herd";
    let mut children: Vec<Child> = (0..2)
        .map(|_| spawn_child("herd", &m.addr(), key))
        .collect();
    for c in &mut children {
        line_from(c, "READY");
    }
    let c = client(&m.addr(), Stampede::default());
    c.set(format!("{key}:go"), "1", Duration::from_secs(60))
        .unwrap();
    let mut total = [0u64; 3];
    for mut child in children {
        let counts = line_from(&mut child, "COUNTS");
        for (t, n) in total.iter_mut().zip(counts.split(' ').skip(1)) {
            *t += n.parse::<u64>().unwrap();
        }
        assert!(child.wait().unwrap().success());
    }
    eprintln!("2 x 100 threads: recomputes, errors, right values = {total:?}");
    assert_eq!(total, [1, 0, 200]);
    // stored for the 60 s asked, not without expiry
    assert_ttl(&m, key, 60, since);
    // without protection, the same herd recomputes many times: what the lease saves. The
    // control must stampede, or the herd above proved nothing: each thread's miss comes long
    // before the first 300 ms recompute ends, so (nearly) every thread recomputes.
    let plain = AtomicU64::new(0);
    let barrier = Barrier::new(100);
    std::thread::scope(|s| {
        for _ in 0..100 {
            s.spawn(|| {
                barrier.wait();
                if c.get("stampede:plain").unwrap().is_none() {
                    plain.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(300));
                    c.set("stampede:plain", "computed", Duration::from_secs(60))
                        .unwrap();
                }
            });
        }
    });
    let plain = plain.into_inner();
    eprintln!("the same 100 threads without protection: {plain} recomputes");
    assert!(
        plain >= 50,
        "the unprotected control recomputed {plain} times: the threads did not overlap"
    );
}

#[test]
fn a_thousand_async_tasks_recompute_a_missing_key_once() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(IP, 0, "");
    let since = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = memshard::aio::Client::builder()
            .server_list(&m.addr())
            .unwrap()
            .pool_size(32)
            .checkout_timeout(Duration::from_secs(5))
            .stampede(Stampede::default().wait(Duration::from_secs(10)))
            .build()
            .unwrap();
        let recomputes = Arc::new(AtomicU64::new(0));
        let tasks: Vec<_> = (0..1000)
            .map(|_| {
                let (c, recomputes) = (c.clone(), recomputes.clone());
                tokio::spawn(async move {
                    c.get_or_compute("stampede:async", Duration::from_secs(60), || async {
                        recomputes.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        Ok::<_, std::io::Error>(b"computed".to_vec())
                    })
                    .await
                })
            })
            .collect();
        let mut errors = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(item) => assert_eq!(item.value, &b"computed"[..]),
                Err(e) => {
                    eprintln!("{e}");
                    errors += 1
                }
            }
        }
        eprintln!(
            "1000 tasks: {} recomputes, {errors} errors",
            recomputes.load(Ordering::SeqCst)
        );
        assert_eq!((recomputes.load(Ordering::SeqCst), errors), (1, 0));
    });
    assert_ttl(&m, "stampede:async", 60, since);
}

/// One reader's first answer, counted per thread: `first` is set by the first call of each
/// thread only.
fn count_first(first: &mut bool, counter: &AtomicU64) {
    if std::mem::take(first) {
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

/// After `invalidate`, 50 readers at once: one wins and recomputes; its recompute does not end
/// before each of the other 49 readers has been served the stale value (a state, polled), so
/// every one of them must have been: per thread, 49 first answers are the stale value and one
/// (the winner's) is the new one.
#[test]
fn after_invalidate_readers_get_the_stale_value_while_one_caller_refreshes() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(IP, 0, "");
    let since = Instant::now();
    let c = client(&m.addr(), Stampede::default());
    let key = "stampede:stale";
    c.set(key, "old", Duration::from_secs(60)).unwrap();
    assert_eq!(c.invalidate(key).unwrap(), memshard::DeleteOutcome::Deleted);
    let (recomputes, first_stale, first_fresh, fresh, errors) = (
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
    );
    let barrier = Barrier::new(50);
    std::thread::scope(|s| {
        for _ in 0..50 {
            s.spawn(|| {
                barrier.wait();
                let mut first = true;
                // keep reading while the refresh runs; stop once the new value is served
                loop {
                    let got = c.get_or_compute(key, Duration::from_secs(60), || {
                        recomputes.fetch_add(1, Ordering::SeqCst);
                        wait_until("the 49 other readers served the stale value", || {
                            first_stale.load(Ordering::SeqCst) == 49
                        });
                        Ok::<_, std::io::Error>(b"new".to_vec())
                    });
                    match got.as_ref().map(|i| &i.value[..]) {
                        Ok(b"old") => count_first(&mut first, &first_stale),
                        Ok(b"new") => {
                            count_first(&mut first, &first_fresh);
                            fresh.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                        Ok(v) => panic!("wrong value {v:?}"),
                        Err(e) => {
                            eprintln!("{e}");
                            errors.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                    };
                }
            });
        }
    });
    let counts = [&recomputes, &first_stale, &first_fresh, &fresh, &errors]
        .map(|a| a.load(Ordering::SeqCst));
    eprintln!(
        "invalidate: recomputes, readers first served stale, readers first served fresh, fresh \
         reads, errors = {counts:?}"
    );
    assert_eq!(counts, [1, 49, 1, 50, 0]);
    assert_eq!(c.get(key).unwrap().unwrap().value, &b"new"[..]);
    assert_ttl(&m, key, 60, since);
    assert_eq!(
        c.invalidate("stampede:absent").unwrap(),
        memshard::DeleteOutcome::NotFound
    );
}

/// Early recache without waiting for a clock: a value with an hour left is served and never
/// recomputed; touched down to 20 s left (below the 30 s of `early_recache`), 20 readers at
/// once: one wins and recomputes while the value is still stored, and its recompute does not
/// end before each of the other 19 has been served the old value (a state, polled).
#[test]
fn early_recache_refreshes_a_hot_key_before_it_expires_once() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(IP, 0, "");
    let since = Instant::now();
    let stampede = Stampede::default().early_recache(Duration::from_secs(30));
    let c = client(&m.addr(), stampede);
    let key = "stampede:early";
    c.set(key, "v1", Duration::from_secs(3600)).unwrap();
    for _ in 0..50 {
        let got = c
            .get_or_compute(key, Duration::from_secs(3600), || {
                Err::<Vec<u8>, _>(std::io::Error::other("recomputed with an hour left"))
            })
            .unwrap();
        assert_eq!(got.value, &b"v1"[..]);
    }
    assert_eq!(
        c.touch(key, Duration::from_secs(20)).unwrap(),
        memshard::TouchOutcome::Touched
    );
    let (recomputes, still_there, first_v1, first_v2, errors) = (
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
    );
    let barrier = Barrier::new(20);
    std::thread::scope(|s| {
        for _ in 0..20 {
            s.spawn(|| {
                barrier.wait();
                let mut first = true;
                loop {
                    let got = c.get_or_compute(key, Duration::from_secs(3600), || {
                        recomputes.fetch_add(1, Ordering::SeqCst);
                        // the old value is still stored: the refresh comes before expiry
                        if c.get(key).unwrap().is_some_and(|i| i.value == b"v1"[..]) {
                            still_there.fetch_add(1, Ordering::SeqCst);
                        }
                        wait_until("the 19 other readers served v1", || {
                            first_v1.load(Ordering::SeqCst) == 19
                        });
                        Ok::<_, std::io::Error>(b"v2".to_vec())
                    });
                    match got.as_ref().map(|i| &i.value[..]) {
                        Ok(b"v1") => count_first(&mut first, &first_v1),
                        Ok(b"v2") => {
                            count_first(&mut first, &first_v2);
                            break;
                        }
                        Ok(v) => panic!("wrong value {v:?}"),
                        Err(e) => {
                            eprintln!("{e}");
                            errors.fetch_add(1, Ordering::SeqCst);
                            break;
                        }
                    };
                }
            });
        }
    });
    let counts = [&recomputes, &still_there, &first_v1, &first_v2, &errors]
        .map(|a| a.load(Ordering::SeqCst));
    eprintln!(
        "early recache: recomputes, refreshed before expiry, readers first served v1, readers \
         first served v2, errors = {counts:?}"
    );
    assert_eq!(counts, [1, 1, 19, 1, 0]);
    assert_eq!(c.get(key).unwrap().unwrap().value, &b"v2"[..]);
    // the refresh is stored for the hour asked, not for what was left of the old value
    assert_ttl(&m, key, 3600, since);
}

#[test]
fn a_killed_winners_lease_ends_and_another_caller_recomputes() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(IP, 0, "");
    let key = "stampede:killed";
    let mut winner = spawn_child("win-and-die", &m.addr(), key);
    line_from(&mut winner, "WON");
    winner.kill().unwrap();
    winner.wait().unwrap();
    // the lease is 2 s; waiting up to 10 s, this caller wins once it ends
    let stampede = Stampede::default()
        .lease(Duration::from_secs(2))
        .wait(Duration::from_secs(10));
    let c = client(&m.addr(), stampede);
    let recomputes = AtomicU64::new(0);
    let got = c
        .get_or_compute(key, Duration::from_secs(60), || {
            recomputes.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(b"recomputed".to_vec())
        })
        .unwrap();
    assert_eq!(
        (&got.value[..], recomputes.into_inner()),
        (&b"recomputed"[..], 1)
    );
    // a wait shorter than the lease: the error says another caller holds it
    let mut winner = spawn_child("win-and-die", &m.addr(), "stampede:killed2");
    line_from(&mut winner, "WON");
    let short = client(
        &m.addr(),
        Stampede::default().wait(Duration::from_millis(100)),
    );
    let err = short
        .get_or_compute("stampede:killed2", Duration::from_secs(60), || {
            Ok::<_, std::io::Error>(b"x".to_vec())
        })
        .unwrap_err();
    assert!(matches!(err, memshard::Error::LeaseBusy { .. }), "{err}");
    winner.kill().unwrap();
    winner.wait().unwrap();
}

#[test]
fn a_failing_recompute_gives_the_lease_back() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(IP, 0, "");
    let c = client(&m.addr(), Stampede::default().wait(Duration::ZERO));
    let key = "stampede:fails";
    let err = c
        .get_or_compute(key, Duration::from_secs(60), || {
            Err::<Vec<u8>, _>(std::io::Error::other("database down"))
        })
        .unwrap_err();
    assert!(matches!(&err, memshard::Error::Recompute { .. }), "{err}");
    assert!(
        std::error::Error::source(&err)
            .unwrap()
            .to_string()
            .contains("database down")
    );
    // the next caller wins at once instead of waiting for a lease nobody holds
    let got = c
        .get_or_compute(key, Duration::from_secs(60), || {
            Ok::<_, std::io::Error>(b"ok".to_vec())
        })
        .unwrap();
    assert_eq!(got.value, &b"ok"[..]);
}

#[test]
fn typed_values_are_stored_with_the_clients_codec() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(IP, 0, "");
    let c = Client::builder()
        .server_list(&m.addr())
        .unwrap()
        .codec(memshard::value::Codec::PhpMemcached)
        .build()
        .unwrap();
    let recomputes = AtomicU64::new(0);
    for _ in 0..3 {
        let got: i64 = c
            .get_or_compute_as("stampede:typed", Duration::from_secs(60), || {
                recomputes.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::io::Error>(42)
            })
            .unwrap();
        assert_eq!(got, 42);
    }
    assert_eq!(recomputes.into_inner(), 1);
    // stored as php-memcached stores an integer: flags 1 (MEMC_VAL_IS_LONG), decimal text
    let raw = c.get("stampede:typed").unwrap().unwrap();
    assert_eq!((raw.flags, &raw.value[..]), (1, &b"42"[..]));
}

#[test]
fn a_proxy_without_meta_gives_an_error_that_says_so() {
    if !require("memcached") || !require("nutcracker") {
        return;
    }
    let m = Memcached::start(IP, 0, "");
    let proxy = common::servers::Nutcracker::start(1, |listens| {
        format!(
            "alpha:\n  listen: {}\n  hash: fnv1a_64\n  distribution: ketama\n  servers:\n   - {}:1\n",
            listens[0],
            m.addr()
        )
    });
    let strict = Stampede::default().recompute_when_down(false);
    let c = client(&proxy.listens[0].to_string(), strict);
    let err = c
        .get_or_compute("stampede:proxy", Duration::from_secs(60), || {
            Ok::<_, std::io::Error>(b"x".to_vec())
        })
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("at the first meta command") && text.contains("Protocol::Text"),
        "{err}"
    );
    assert!(text.len() <= 300, "{} characters: {text}", text.len());
    // by default the recompute answers (with a warning) where the cache cannot
    let lenient = client(&proxy.listens[0].to_string(), Stampede::default());
    let item = lenient
        .get_or_compute("stampede:proxy", Duration::from_secs(60), || {
            Ok::<_, std::io::Error>(b"x".to_vec())
        })
        .expect("the recompute answers");
    assert_eq!(item.value, &b"x"[..]);
    assert_eq!(lenient.cache_aside_stats().served_without_cache, 1);
    // the text protocol still works through it
    c.set("stampede:proxy", "v", Duration::from_secs(60))
        .unwrap();
    assert_eq!(c.get("stampede:proxy").unwrap().unwrap().value, &b"v"[..]);
}

/// A hot key expiring again and again under 50 readers for 3 s, each recompute taking 50 ms:
/// the backend calls with and without protection. Without it the herd must stampede (more calls
/// than the protected bound allows). With it, each expiry costs one call: a 2 s TTL lasts at
/// least 1 s and at most 2 s of memcached's clock, so the calls are at least two (the first and
/// one expiry) and at most the seconds run plus one.
#[test]
fn a_hot_key_under_load_costs_one_backend_call_per_expiry() {
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(IP, 0, "");
    let c = client(&m.addr(), Stampede::default().wait(Duration::from_secs(5)));
    let run = |protected: bool| {
        let key = if protected {
            "hot:protected"
        } else {
            "hot:plain"
        };
        let (calls, reads, errors) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
        let started = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..50 {
                s.spawn(|| {
                    let backend = || {
                        calls.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(50));
                        b"value".to_vec()
                    };
                    while started.elapsed() < Duration::from_secs(3) {
                        let ok = if protected {
                            let got = c.get_or_compute(key, Duration::from_secs(2), || {
                                Ok::<_, std::io::Error>(backend())
                            });
                            got.is_ok_and(|i| i.value == b"value"[..])
                        } else {
                            match c.get(key) {
                                Ok(Some(i)) => i.value == b"value"[..],
                                Ok(None) => c.set(key, backend(), Duration::from_secs(2)).is_ok(),
                                Err(_) => false,
                            }
                        };
                        let counter = if ok { &reads } else { &errors };
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        let secs = started.elapsed().as_secs();
        (
            calls.into_inner(),
            reads.into_inner(),
            errors.into_inner(),
            secs,
        )
    };
    let (plain, plain_reads, _, plain_secs) = run(false);
    let (protected, reads, errors, secs) = run(true);
    eprintln!(
        "hot key, 50 readers, 3 s, 2 s TTL: backend calls without protection {plain} ({plain_reads} reads), with protection {protected} ({reads} reads, {errors} errors)"
    );
    assert_eq!(errors, 0);
    // the control stampedes: at its first miss alone, the readers that miss before the first
    // 50 ms call ends all call the backend, far more than one call per expiry
    assert!(
        plain > plain_secs + 1,
        "the unprotected control made {plain} calls in {plain_secs} s: no stampede to protect from"
    );
    // the value expired at least once during the run (a 2 s TTL lasts at most 2 s of
    // memcached's clock, the run 3 s), and each expiry cost one call
    assert!(
        protected >= 2,
        "{protected} calls in {secs} s: the value never expired (stored without its TTL?)"
    );
    assert!(protected <= secs + 1, "{protected} calls in {secs} s");
}

/// A row that is not there: 20 async callers of `get_or_compute_as::<Option<Json<_>>>` at once.
/// The winner's `Ok(None)` is stored for the negative TTL (5 s by default) and shared with the
/// waiting callers: every caller gets `None`, the source is loaded once, and the next caller
/// loads nothing.
#[test]
fn twenty_callers_of_a_missing_row_share_one_load_of_none() {
    use memshard::value::Json;
    if !require("memcached") {
        return;
    }
    #[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
    struct Row {
        id: u64,
    }
    let m = Memcached::start(IP, 0, "");
    let since = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let loads = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let c = rt.block_on(async {
        let c = memshard::aio::Client::builder()
            .server_list(&m.addr())
            .unwrap()
            .pool_size(32)
            .build()
            .unwrap();
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let (c, loads) = (c.clone(), loads.clone());
                tokio::spawn(async move {
                    let started = Instant::now();
                    let r = c
                        .get_or_compute_as("row:404", Duration::from_secs(60), || async {
                            loads.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(300)).await;
                            Ok::<Option<Json<Row>>, std::io::Error>(None)
                        })
                        .await;
                    (r, started.elapsed())
                })
            })
            .collect();
        let mut slowest = Duration::ZERO;
        for t in tasks {
            let (r, took) = t.await.unwrap();
            assert_eq!(r.expect("no error"), None);
            slowest = slowest.max(took);
        }
        eprintln!(
            "20 callers of a missing row: {} loads, slowest answer {slowest:?} (a load takes 300 ms)",
            loads.load(Ordering::SeqCst)
        );
        c
    });
    // every caller came while the one load ran (300 ms, far inside its lease): one load, one
    // None stored
    let n = loads.load(Ordering::SeqCst);
    assert_eq!(n, 1, "{n} loads");
    assert_ttl(&m, "row:404", 5, since);
    // within the negative TTL the next caller loads nothing
    let again = rt.block_on(
        c.get_or_compute_as("row:404", Duration::from_secs(60), || async {
            loads.fetch_add(1, Ordering::SeqCst);
            Ok::<Option<Json<Row>>, std::io::Error>(Some(Json(Row { id: 1 })))
        }),
    );
    assert_eq!(again.unwrap(), None);
    assert_eq!(loads.load(Ordering::SeqCst), n);
    assert_eq!(c.cache_aside_stats().negative_stored, 1);
    eprintln!("total {:?}", started.elapsed());
}

/// A custom negative TTL (2 s, not the default 5 s): the `None` is stored for 2 s, no caller
/// loads while it lasts, and once memcached has expired it the next caller loads again and
/// stores what it finds for the TTL of the call. Blocking client (the async one is above).
#[test]
fn a_custom_negative_ttl_is_stored_and_expires() {
    use memshard::value::Json;
    if !require("memcached") {
        return;
    }
    let m = Memcached::start(IP, 0, "");
    let since = Instant::now();
    let c = client(
        &m.addr(),
        Stampede::default().negative_ttl(Duration::from_secs(2)),
    );
    let key = "row:custom-negative";
    let loads = AtomicU64::new(0);
    let load = |found: Option<u64>| {
        loads.fetch_add(1, Ordering::SeqCst);
        Ok::<Option<Json<u64>>, std::io::Error>(found.map(Json))
    };
    let first = c.get_or_compute_as(key, Duration::from_secs(60), || load(None));
    assert_eq!(first.expect("no error"), None);
    assert_ttl(&m, key, 2, since);
    assert_eq!(c.cache_aside_stats().negative_stored, 1);
    // while it lasts, the stored None answers; it cannot have expired within a second of its
    // store (2 s take two ticks of memcached's clock), only a very slow machine gets later
    let cached = c.get_or_compute_as(key, Duration::from_secs(60), || load(Some(7)));
    if since.elapsed() < Duration::from_secs(1) {
        assert_eq!(cached.expect("no error"), None);
        assert_eq!(loads.load(Ordering::SeqCst), 1);
    } else {
        eprintln!("slow machine: the second call came more than 1 s after the store");
        return;
    }
    wait_until("the negative entry's expiry", || {
        ttl_left(&m, key).is_none()
    });
    let fresh = c.get_or_compute_as(key, Duration::from_secs(60), || load(Some(7)));
    assert_eq!(fresh.expect("no error"), Some(Json(7)));
    assert_eq!(c.cache_aside_stats().negative_stored, 1);
    assert_ttl(&m, key, 60, since);
}

/// One of three servers stopped (SIGSTOP) under a loop of `get_or_compute_as` over keys on
/// every server, on both clients: no call fails, every value is right, and the calls the
/// stopped server could not answer are counted as answered by the recompute. A plain `get` of
/// the stopped server's keys fails with an error that `is_server_failure()`. Servers on
/// 127.0.17.2 to 127.0.17.4.
#[test]
fn a_stopped_server_fails_no_get_or_compute_call() {
    if !require("memcached") {
        return;
    }
    let servers: Vec<Memcached> = (2..=4)
        .map(|i| Memcached::start(Ipv4Addr::new(127, 0, 17, i), 0, ""))
        .collect();
    let list: String = servers.iter().map(|s| format!("{}\n", s.addr())).collect();
    let value_of = |k: &str| format!("v:{k}");
    let keys: Vec<String> = (0..600).map(|i| format!("aside:{i}")).collect();
    let stopped = &servers[1];
    // a short read timeout: the stopped server's first calls wait for it, then it is down
    let policy = memshard::FailurePolicy::default().with_retry_timeout(Duration::from_secs(30));
    let blocking = Client::builder()
        .server_list(&list)
        .unwrap()
        .read_timeout(Duration::from_millis(200))
        .failure_policy(policy)
        .build()
        .unwrap();
    let owned_by_stopped: Vec<&String> = keys
        .iter()
        .filter(|k| {
            blocking.ring().server_for(k.as_bytes()).map(|s| &s.addr) == Some(&stopped.addr())
        })
        .collect();
    assert!(owned_by_stopped.len() > 100, "keys on every server");
    stopped.signal("STOP");
    let mut errors = 0;
    for k in &keys {
        match blocking.get_or_compute_as(k, Duration::from_secs(60), || {
            Ok::<_, std::io::Error>(value_of(k))
        }) {
            Ok(v) => assert_eq!(v, value_of(k)),
            Err(e) => {
                eprintln!("blocking {k}: {e}");
                errors += 1;
            }
        }
    }
    let stats = blocking.cache_aside_stats();
    eprintln!("blocking: 600 calls, {errors} failed, {stats:?}");
    assert_eq!(errors, 0);
    assert!(
        stats.served_without_cache >= owned_by_stopped.len() as u64 / 2,
        "{stats:?}"
    );
    let e = blocking
        .get(owned_by_stopped[0])
        .expect_err("the server is stopped");
    assert!(e.is_server_failure(), "{e}");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = memshard::aio::Client::builder()
            .server_list(&list)
            .unwrap()
            .read_timeout(Duration::from_millis(200))
            .failure_policy(policy)
            .build()
            .unwrap();
        let mut errors = 0;
        for k in &keys {
            let v = value_of(k);
            match c
                .get_or_compute_as(k, Duration::from_secs(60), || async move {
                    Ok::<_, std::io::Error>(v)
                })
                .await
            {
                Ok(v) => assert_eq!(v, value_of(k)),
                Err(e) => {
                    eprintln!("async {k}: {e}");
                    errors += 1;
                }
            }
        }
        let stats = c.cache_aside_stats();
        eprintln!("async: 600 calls, {errors} failed, {stats:?}");
        assert_eq!(errors, 0);
        assert!(stats.served_without_cache > 0, "{stats:?}");
        let e = c.get(owned_by_stopped[0]).await.expect_err("stopped");
        assert!(e.is_server_failure(), "{e}");
    });
    stopped.signal("CONT");
}
