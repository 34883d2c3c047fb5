//! Reliability on both clients: connections left in a pool by a server that closed
//! them are replaced without counting a failure; a request that meets a connection closed under
//! it is sent again only when repeating it is harmless; bytes nobody asked for are never taken
//! as a reply, and a reply that cannot belong to its request is a protocol error.

use crate::api::{Api, Settings, build, by_protocol};
use crate::common::proxy::{FaultProxy, Mode};
use crate::common::servers::Memcached;
use crate::support::{HOUR, LO, kind, wait_for};
use memshard::Expiry;
use memshard::{DeleteOutcome, Error, FailurePolicy, Server, StoreOutcome, TouchOutcome};
use std::io::ErrorKind;
use std::sync::atomic::Ordering;

const POOL: u64 = 4;

/// Failure limit `limit`, down for the rest of the test once reached.
fn policy(limit: u32) -> FailurePolicy {
    FailurePolicy::new(limit, HOUR, false)
}

/// A memcached behind a fault proxy, and a client of one pooled connection to it through the
/// proxy that marks the server down after `limit` failures (0: never).
fn proxied<C: Api>(limit: u32) -> (Memcached, FaultProxy, C) {
    let m = Memcached::start(LO, 0, "");
    let p = FaultProxy::start(m.sock());
    let c = build::<C>(|b| {
        b.servers(vec![Server::new("127.0.0.1", p.addr.port())])
            .pool_size(1)
            .failure_policy(policy(limit))
    });
    (m, p, c)
}

/// Connections the server has open, other than the one asking.
fn client_conns(m: &Memcached) -> u64 {
    m.stat("curr_connections") - 1
}

/// How the pooled connections are filled before the server closes them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fill {
    /// Concurrent gets: connections that served requests.
    Used,
    /// One get: the others were opened by `min_idle` and never checked out.
    NeverUsed,
}

/// Requests, then a wait until the server counts `POOL` more connections than `base`: the
/// pool's `min_idle(POOL)` opens them itself, so `POOL` connections sit in the pool afterwards.
async fn fill_pool<C: Api>(c: &C, m: &Memcached, key: &str, base: u64, fill: Fill) {
    c.get(key).await.expect("a request that fills the pool");
    wait_for("the server counts the pool's connections", async || {
        client_conns(m) >= base + POOL
    })
    .await;
    if fill == Fill::Used {
        for r in c.gets_at_once(key, POOL as usize, 20).await {
            r.expect("get while filling the pool");
        }
    }
}

/// Errors in a row, by kind: `[("Io", 2), ("ServerDown", 40), ...]`.
type Runs = Vec<(&'static str, u64)>;

/// Requests (at most 10) until the first success: the errors before it and their kinds.
async fn until_first_success(mut op: impl AsyncFnMut() -> Result<(), Error>) -> (u64, Runs) {
    let mut errors = 0;
    let mut kinds: Runs = Vec::new();
    while errors < 10 {
        match op().await {
            Ok(()) => return (errors, kinds),
            Err(e) => {
                eprintln!("until the first success: {e}");
                errors += 1;
                let k = kind(&e);
                match kinds.last_mut() {
                    Some((last, n)) if *last == k => *n += 1,
                    _ => kinds.push((k, 1)),
                }
            }
        }
    }
    panic!("no success in {errors} requests: {kinds:?}");
}

/// memcached `-o idle_timeout=2` closes the pooled connections while they are idle. The first
/// request afterwards succeeds and nothing counts against the server (failure limit 1 would
/// mark it down at the first counted failure); every stale connection is replaced.
pub async fn connections_closed_by_idle_timeout_are_replaced_without_a_failure<C: Api>() {
    idle_close::<C>(Fill::Used).await
}

/// As [`connections_closed_by_idle_timeout_are_replaced_without_a_failure`], with pooled
/// connections that `min_idle` opened and no request ever used (the async client counts such a
/// connection's idle-check failure against the server: see the parity list).
pub async fn never_used_connections_closed_by_idle_timeout_count_nothing<C: Api>() {
    idle_close::<C>(Fill::NeverUsed).await
}

async fn idle_close<C: Api>(fill: Fill) {
    let m = Memcached::start(LO, 0, "-o idle_timeout=2");
    let base = m.settled_stat("curr_connections") - 1;
    let c = build::<C>(|b| {
        b.servers(vec![Server::new(m.ip.to_string(), m.port)])
            .pool_size(POOL as u32)
            .min_idle(POOL as u32)
            .failure_policy(policy(1))
    });
    let key = "reliability:idle";
    c.set(key, "v", Expiry::NEVER).await.unwrap();
    // a get checks its one connection alone; a multi-get checks its connections with one poll
    for first in ["get", "get_multi"] {
        fill_pool(&c, &m, key, base, fill).await;
        let kicks = m.stat("idle_kicks");
        // the condition itself: memcached closed every pooled connection (it counts the kick
        // before its worker thread closes the connection: both are waited for)
        wait_for("memcached closes the idle pooled connections", async || {
            m.stat("idle_kicks") >= kicks + POOL && client_conns(&m) == base
        })
        .await;
        let (errors, kinds) = until_first_success(async || {
            let got = match first {
                "get" => c.get(key).await?,
                _ => c.get_multi(&[key]).await.remove(0)?,
            };
            match got {
                Some(item) if item.value == b"v"[..] => Ok(()),
                other => panic!("{first} after the idle close: {other:?}"),
            }
        })
        .await;
        assert_eq!(
            (errors, kinds),
            (0, vec![]),
            "{} ({fill:?}): no {first} fails",
            C::NAME
        );
    }
    for _ in 0..2 * POOL {
        assert_eq!(c.get(key).await.unwrap().unwrap().value, &b"v"[..]);
    }
    assert!(c.down_servers().is_empty(), "a healthy server marked down");
}

/// The server is killed and started again on the same address while the pool holds its old
/// connections: the first request after it is back succeeds, whatever the command (a get, a
/// non-idempotent incr, a multi-get, a set), and no failure is counted.
pub async fn a_restarted_server_is_used_at_once_without_a_failure<C: Api>() {
    restart::<C>(Fill::Used).await
}

/// As [`a_restarted_server_is_used_at_once_without_a_failure`], with pooled connections that
/// `min_idle` opened and no request ever used.
pub async fn never_used_connections_to_a_restarted_server_count_nothing<C: Api>() {
    restart::<C>(Fill::NeverUsed).await
}

async fn restart<C: Api>(fill: Fill) {
    let mut m = Memcached::start(LO, 0, "");
    let port = m.port;
    let base = m.settled_stat("curr_connections") - 1;
    let c = build::<C>(|b| {
        b.servers(vec![Server::new(m.ip.to_string(), port)])
            .pool_size(POOL as u32)
            .min_idle(POOL as u32)
            // a counted failure would mark the server down for the rest of the test
            .failure_policy(policy(1))
    });
    for first in ["get", "incr", "get_multi", "set"] {
        c.set("k", "v", Expiry::NEVER).await.unwrap();
        c.set("n", "5", Expiry::NEVER).await.unwrap();
        fill_pool(&c, &m, "k", base, fill).await;
        m.signal("KILL");
        drop(m);
        m = Memcached::start(LO, port, "");
        let (errors, kinds) = until_first_success(async || {
            // the restarted server is empty
            match first {
                "get" => c.get("k").await.map(|v| assert_eq!(v, None)),
                "incr" => c.incr("n", 1).await.map(|v| assert_eq!(v, None)),
                "get_multi" => c
                    .get_multi(&["k", "n"])
                    .await
                    .into_iter()
                    .try_for_each(|r| r.map(|v| assert_eq!(v, None))),
                _ => c
                    .set("k", "again", Expiry::NEVER)
                    .await
                    .map(|o| assert_eq!(o, StoreOutcome::Stored)),
            }
        })
        .await;
        assert_eq!(
            (errors, kinds),
            (0, vec![]),
            "{} ({fill:?}): first request {first}",
            C::NAME
        );
        assert!(c.down_servers().is_empty(), "{first}: server marked down");
        assert_eq!(c.get("k").await.unwrap().is_some(), first == "set");
        // every pooled connection was stale: all are replaced, nothing counted
        for _ in 0..2 * POOL {
            c.get("k").await.unwrap();
        }
        assert!(c.down_servers().is_empty());
    }
}

/// The connection is closed as the request reaches the other side (a proxy drops the request
/// and closes both sides), on a pooled connection: a request that is harmless to send twice is
/// sent again on a new connection and succeeds; one that is not (incr, decr, append, prepend,
/// add, cas) fails with an `Io` error saying it was not sent again, and is not. Neither counts
/// against the server.
pub async fn a_connection_closed_under_a_request_is_retried_only_when_harmless<C: Api>() {
    closed_under::<C>(&["incr", "decr", "append", "prepend", "cas"]).await
}

/// As [`a_connection_closed_under_a_request_is_retried_only_when_harmless`] for `add`: sent
/// twice, an add that was applied the first time answers `NotStored` the second, so it is not
/// harmless. The blocking client does not send it again; the async client does today (its
/// module docs list `add` among the commands it repeats): parity list.
pub async fn an_add_closed_under_it_is_not_sent_again<C: Api>() {
    closed_under::<C>(&["add"]).await
}

async fn closed_under<C: Api>(harmful: &[&str]) {
    let (m, p, c) = proxied::<C>(1);
    c.set("k", "v", Expiry::NEVER).await.unwrap();
    c.set("n", "10", Expiry::NEVER).await.unwrap();
    let harmless = [
        "get",
        "gets",
        "gat",
        "gats",
        "touch",
        "set",
        "replace",
        "delete",
        "get_multi",
        "set_multi",
        "delete_multi",
    ];
    for name in harmless {
        // one request first, so that the fault meets a pooled (reused) connection
        c.set("gone", "x", Expiry::NEVER).await.unwrap();
        c.set("gone2", "x", Expiry::NEVER).await.unwrap();
        let conns = p.state.connections.load(Ordering::SeqCst);
        p.state.set(Mode::CloseOnRequest);
        let ok = match name {
            "get" => c
                .get("k")
                .await
                .is_ok_and(|v| v.is_some_and(|i| i.value == b"v"[..])),
            "gets" => c
                .gets("k")
                .await
                .is_ok_and(|v| v.is_some_and(|i| i.cas.is_some())),
            "gat" => c.gat("k", Expiry::NEVER).await.is_ok_and(|v| v.is_some()),
            "gats" => c.gats("k", Expiry::NEVER).await.is_ok_and(|v| v.is_some()),
            "touch" => c
                .touch("k", Expiry::NEVER)
                .await
                .is_ok_and(|o| o == TouchOutcome::Touched),
            "set" => c
                .set("k", "v", Expiry::NEVER)
                .await
                .is_ok_and(|o| o == StoreOutcome::Stored),
            "replace" => c
                .replace("k", "v", Expiry::NEVER)
                .await
                .is_ok_and(|o| o == StoreOutcome::Stored),
            "delete" => c
                .delete("gone")
                .await
                .is_ok_and(|o| o == DeleteOutcome::Deleted),
            "get_multi" => c
                .get_multi(&["k", "n"])
                .await
                .iter()
                .all(|r| matches!(r, Ok(Some(_)))),
            "set_multi" => c
                .set_multi(&[("k", "v"), ("k2", "v2")], 0, Expiry::NEVER)
                .await
                .iter()
                .all(|r| matches!(r, Ok(StoreOutcome::Stored))),
            _ => c
                .delete_multi(&["gone", "gone2"])
                .await
                .iter()
                .all(|r| matches!(r, Ok(DeleteOutcome::Deleted))),
        };
        assert_eq!(p.state.mode(), Mode::Pass, "{name}: the fault fired");
        assert!(ok, "{}: {name} was not sent again and answered", C::NAME);
        assert_eq!(
            p.state.connections.load(Ordering::SeqCst),
            conns + 1,
            "{name}: one new connection"
        );
        assert!(
            c.down_servers().is_empty(),
            "{name}: counted against the server"
        );
    }
    for &name in harmful {
        assert!(c.get("k").await.is_ok());
        p.state.set(Mode::CloseOnRequest);
        let r: Result<(), Error> = match name {
            "incr" => c.incr("n", 1).await.map(drop),
            "decr" => c.decr("n", 1).await.map(drop),
            "append" => c.append("k", "+").await.map(drop),
            "prepend" => c.prepend("k", "+").await.map(drop),
            "add" => c.add("k", "x", Expiry::NEVER).await.map(drop),
            _ => c.cas("k", "x", Expiry::NEVER, 1).await.map(drop),
        };
        assert_eq!(p.state.mode(), Mode::Pass, "{name}: the fault fired");
        let Err(Error::Io {
            kind: ErrorKind::UnexpectedEof,
            message,
            ..
        }) = &r
        else {
            panic!("{}: {name} on a connection closed under it: {r:?}", C::NAME);
        };
        assert!(message.contains("not sent again"), "{name}: {message}");
        // not sent again: the values are untouched (the async client may send a `version` on
        // a new connection to learn whether the server is up, hence no byte count)
        assert_eq!(
            m.raw_get(b"n").as_deref(),
            Some(&b"10"[..]),
            "{name}: sent again"
        );
        assert_eq!(
            m.raw_get(b"k").as_deref(),
            Some(&b"v"[..]),
            "{name}: sent again"
        );
        assert!(
            c.down_servers().is_empty(),
            "{name}: a new connection answers"
        );
    }
    // the proxy dropped every harmful request: the values are untouched
    assert_eq!(m.raw_get(b"n").as_deref(), Some(&b"10"[..]));
    assert_eq!(m.raw_get(b"k").as_deref(), Some(&b"v"[..]));
    assert_eq!(c.incr("n", 1).await.unwrap(), Some(11));
}

/// Bytes pushed to a pooled connection between replies (`END`, `STORED`, a complete `VALUE`
/// block of the key with another value, a block of another key; meta: their `EN`, `HD`, `VA`
/// equivalents) are found before the next
/// request is written: whichever request comes next (get, add, get_multi, set) gets its own
/// right answer on a new connection, and nothing counts against the server.
pub async fn stray_bytes_between_replies_are_never_taken_as_a_reply<C: Api>() {
    let (m, p, c) = proxied::<C>(1);
    let key = "stray";
    c.set(key, "right", Expiry::NEVER).await.unwrap();
    let strays: [&[u8]; 4] = by_protocol::<C, _>(
        [
            b"END\r\n",
            b"STORED\r\n",
            b"VALUE stray 0 5\r\nwrong\r\nEND\r\n",
            b"VALUE other 0 1\r\nx\r\nEND\r\nSTORED\r\n",
        ],
        // a miss, a stored, a hit of the key with another value (with an opaque a client may
        // use next), a hit of another key then a stored and the end of a quiet pipeline
        [
            b"EN\r\n",
            b"HD\r\n",
            b"VA 5 f0 kstray O1\r\nwrong\r\n",
            b"VA 1 f0 kother\r\nx\r\nHD\r\nMN\r\n",
        ],
    );
    for stray in strays {
        for next in ["get", "add", "get_multi", "set"] {
            let what = format!("{:?} then {next}", String::from_utf8_lossy(stray));
            // a request first: the stray bytes then wait on a pooled connection
            assert_eq!(
                c.get(key).await.unwrap().unwrap().value,
                &b"right"[..],
                "{what}"
            );
            let conns = p.state.connections.load(Ordering::SeqCst);
            p.state.push_to_client(stray);
            let r = match next {
                "get" => c.get(key).await.map(|v| v.map(|i| i.value.to_vec())),
                "add" => c
                    .add(key, "x", Expiry::NEVER)
                    .await
                    .map(|o| (o == StoreOutcome::NotStored).then(|| b"right".to_vec())),
                "get_multi" => c
                    .get_multi(&[key])
                    .await
                    .remove(0)
                    .map(|v| v.map(|i| i.value.to_vec())),
                _ => c
                    .set(key, "right", Expiry::NEVER)
                    .await
                    .map(|o| (o == StoreOutcome::Stored).then(|| b"right".to_vec())),
            };
            assert!(
                matches!(&r, Ok(Some(v)) if v == b"right"),
                "{}: {what}: {r:?}",
                C::NAME
            );
            assert!(c.down_servers().is_empty(), "{what}: counted");
            assert_eq!(
                p.state.connections.load(Ordering::SeqCst),
                conns + 1,
                "{what}: the connection holding them was replaced"
            );
        }
    }
    assert_eq!(m.raw_get(key.as_bytes()).as_deref(), Some(&b"right"[..]));
}

/// Stray bytes in the same segment right after a reply (read together with it): that request
/// gets its right answer or a Protocol error, never a wrong answer, and the next request its
/// right answer.
pub async fn stray_bytes_read_with_a_reply_never_make_a_wrong_answer<C: Api>() {
    let (_server, p, c) = proxied::<C>(0);
    c.set("k", "right", Expiry::NEVER).await.unwrap();
    let strays: [&[u8]; 3] = by_protocol::<C, _>(
        [
            b"END\r\n",
            b"STORED\r\n",
            b"VALUE k 0 5\r\nwrong\r\nEND\r\n",
        ],
        [b"EN\r\n", b"HD\r\n", b"VA 5 f0 kk\r\nwrong\r\n"],
    );
    for stray in strays {
        for op in ["get", "add"] {
            p.state.append_next(stray);
            let outcome = match op {
                "get" => c.get("k").await.map(|v| v.map(|i| i.value.to_vec())),
                _ => c
                    .add("k", "x", Expiry::NEVER)
                    .await
                    .map(|o| (o == StoreOutcome::NotStored).then(|| b"right".to_vec())),
            };
            assert_eq!(p.state.mode(), Mode::Pass, "the stray bytes were sent");
            match outcome {
                Ok(Some(v)) if v == b"right" => {}
                Err(Error::Protocol { .. }) => {}
                other => panic!(
                    "{}: stray {stray:?} after the reply to {op}: {other:?}",
                    C::NAME
                ),
            }
            assert_eq!(c.get("k").await.unwrap().unwrap().value, &b"right"[..]);
        }
    }
}

/// A reply that cannot belong to the request — `STORED` or `DELETED` to a get, a `VALUE` for a
/// key not asked for, `END` to a set (meta: `NS` or `NF` to an `mg`, a `VA` of another key and
/// opaque, `EN` to an `ms`) — is a protocol error; the connection is dropped and the
/// next request is answered right on a new one.
pub async fn a_reply_that_cannot_belong_to_the_request_is_a_protocol_error<C: Api>() {
    let (m, p, c) = proxied::<C>(0);
    let key = "foreign";
    c.set(key, "right", Expiry::NEVER).await.unwrap();
    let wrong: [&[u8]; 3] = by_protocol::<C, _>(
        [
            b"STORED\r\n",
            b"VALUE not-asked 0 1\r\nx\r\nEND\r\n",
            b"DELETED\r\n",
        ],
        // an `ms` refusal, a hit of a key not asked with an opaque never sent, an `md` miss
        [b"NS\r\n", b"VA 1 f0 knot-asked Ostray\r\nx\r\n", b"NF\r\n"],
    );
    for reply in wrong {
        let what = String::from_utf8_lossy(reply).into_owned();
        let conns = p.state.connections.load(Ordering::SeqCst);
        p.state.corrupt_next(reply);
        let r = c.get(key).await;
        assert!(
            matches!(r, Err(Error::Protocol { .. })),
            "{}: {what:?}: {r:?}",
            C::NAME
        );
        assert_eq!(c.get(key).await.unwrap().unwrap().value, &b"right"[..]);
        assert_eq!(
            p.state.connections.load(Ordering::SeqCst),
            conns + 1,
            "{what:?}: the connection was dropped"
        );
    }
    // a miss reply to a set, on a connection that already sent one: a connection without
    // credentials asks `version` before its first set (a -Y server would take that set for a
    // login), and the reply replaced must be the set's
    c.set(key, "right", Expiry::NEVER).await.unwrap();
    p.state
        .corrupt_next(by_protocol::<C, &[u8]>(b"END\r\n", b"EN\r\n"));
    let r = c.set(key, "x", Expiry::NEVER).await;
    assert!(
        matches!(r, Err(Error::Protocol { .. })),
        "{}: a miss reply to a set: {r:?}",
        C::NAME
    );
    // the set itself reached the server; only its reply was replaced
    assert_eq!(c.get(key).await.unwrap().unwrap().value, &b"x"[..]);
    assert_eq!(m.raw_get(key.as_bytes()).as_deref(), Some(&b"x"[..]));
}
