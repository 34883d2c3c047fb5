//! Live membership: `set_servers`, and the watchers that call it (a server-list file, a DNS
//! name).

use crate::api::{Api, ParityApi, Settings, build};
use crate::common::servers::{Cluster, Memcached};
use crate::support::{LO, assert_placed, refs, same, value, wait_for};
use memshard::Expiry;
use memshard::Server;
use std::path::PathBuf;
use std::time::Duration;

fn server(m: &Memcached) -> Server {
    Server::new(m.ip.to_string(), m.port)
}

fn addrs<C: Api>(c: &C) -> Vec<String> {
    c.ring().servers().iter().map(|s| s.addr.clone()).collect()
}

/// Three servers, then `set_servers` adds a fourth: the ring has the four; the keys whose owner
/// did not change still read, exactly the keys the new ring moves miss; writes land where the
/// new ring says, the new server included.
pub async fn set_servers_adds_a_server<C: Api>() {
    let c = Cluster::on_free_ports(&[1, 1, 1, 1]);
    let three: Vec<Server> = c.servers[..3].iter().map(server).collect();
    let four: Vec<Server> = c.servers.iter().map(server).collect();
    let m = build::<C>(|b| b.servers(three.clone()));
    let items: Vec<(String, String)> = (0..1000)
        .map(|i| (format!("{i}:member"), format!("m{i}")))
        .collect();
    assert!(
        m.set_multi(&items, 0, Expiry::NEVER)
            .await
            .iter()
            .all(|r| r.is_ok())
    );
    let before = m.ring();
    assert_placed(&refs(&c.servers[..3]), &before, &items, same, same);

    m.set_servers(four.clone()).unwrap();
    assert_eq!(m.ring().servers(), &four[..]);
    assert_eq!(m.current_ring().servers(), &four[..]);
    let after = m.ring();
    let keys: Vec<&str> = items.iter().map(|(k, _)| k.as_str()).collect();
    let mut moved = 0;
    for ((k, v), r) in items.iter().zip(m.get_multi(&keys).await) {
        let (was, is) = (
            &before.server_for(k.as_bytes()).unwrap().addr,
            &after.server_for(k.as_bytes()).unwrap().addr,
        );
        if was == is {
            assert_eq!(value(&r, k), v.as_bytes(), "{k} stayed on {is}");
        } else {
            assert_eq!(
                is,
                &c.servers[3].addr(),
                "{k}: only the new server takes keys"
            );
            assert_eq!(r.unwrap(), None, "{k} moved to {is}");
            moved += 1;
        }
    }
    assert!(moved > 0, "the new server took no key");
    let again: Vec<(String, String)> = items
        .iter()
        .map(|(k, v)| (k.clone(), format!("{v}+")))
        .collect();
    assert!(
        m.set_multi(&again, 0, Expiry::NEVER)
            .await
            .iter()
            .all(|r| r.is_ok())
    );
    // the old copies of the moved keys are still on their old servers: check the new ones only
    let moved_items: Vec<(String, String)> = again
        .iter()
        .filter(|(k, _)| before.server_for(k.as_bytes()) != after.server_for(k.as_bytes()))
        .cloned()
        .collect();
    assert_eq!(moved_items.len(), moved);
    assert_placed(&refs(&c.servers[3..]), &after, &moved_items, same, same);
    for ((k, v), r) in again.iter().zip(m.get_multi(&keys).await) {
        assert_eq!(value(&r, k), v.as_bytes());
    }
}

/// A file under the target folder, private to this test.
fn scratch(name: &str) -> PathBuf {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("scenarios-{name}-{}-{seq}.txt", std::process::id()))
}

fn write_atomically(path: &PathBuf, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write the server file");
    std::fs::rename(&tmp, path).expect("rename the server file");
}

/// A watcher on a server-list file: the client follows the file as it is rewritten (2 servers,
/// then 3); a file that does not parse keeps the servers (and says why); the keys go where the
/// watched list's ring says.
pub async fn a_server_file_watcher_follows_the_file<C: ParityApi>() {
    let ms: Vec<Memcached> = (0..3).map(|_| Memcached::start(LO, 0, "")).collect();
    let m = build::<C>(|b| b.servers(vec![server(&ms[0])]));
    let file = scratch("watch");
    let first = |n: usize| -> Vec<String> { ms[..n].iter().map(|m| m.addr()).collect() };
    let write = |n: usize| {
        let text: String = first(n).iter().map(|a| format!("{a} 1\n")).collect();
        write_atomically(&file, &text)
    };
    write(2);
    let w = m.watch_server_file(&file, Duration::from_millis(20));
    wait_for("the watcher applies 2 servers", async || {
        addrs(&m) == first(2)
    })
    .await;
    write(3);
    wait_for("the watcher applies 3 servers", async || {
        addrs(&m) == first(3)
    })
    .await;
    assert_eq!(w.applied(), 2);
    assert_eq!(w.last_error(), None);
    write_atomically(&file, "not a server list ::::\n");
    wait_for("the watcher reports the bad file", async || {
        w.last_error().is_some_and(|e| e.contains("line 1"))
    })
    .await;
    assert_eq!(addrs(&m), first(3), "a bad file keeps the servers");
    assert_eq!(w.applied(), 2, "nothing applied from the bad file");
    drop(w);
    let _ = std::fs::remove_file(&file);
    let items: Vec<(String, String)> = (0..100)
        .map(|i| (format!("{i}:watched"), format!("w{i}")))
        .collect();
    assert!(
        m.set_multi(&items, 0, Expiry::NEVER)
            .await
            .iter()
            .all(|r| r.is_ok())
    );
    let per_server = assert_placed(&refs(&ms), &m.ring(), &items, same, same);
    assert_eq!(per_server.len(), 3, "{per_server:?}");
}

/// A DNS watcher: the name's addresses, with the given port and weight, become the servers
/// (an IP literal, so that no resolver configuration is read).
pub async fn a_dns_watcher_applies_the_addresses<C: ParityApi>() {
    let ms: Vec<Memcached> = (0..2).map(|_| Memcached::start(LO, 0, "")).collect();
    let m = build::<C>(|b| b.servers(vec![server(&ms[0])]));
    let w = m.watch_dns("127.0.0.1", ms[1].port, 3, Duration::from_millis(20));
    wait_for("the dns watcher applies the address", async || {
        m.ring().servers().iter().any(|s| s.port == ms[1].port)
    })
    .await;
    assert!(w.applied() >= 1);
    assert_eq!(
        m.ring().servers(),
        &[Server::new("127.0.0.1", ms[1].port).with_weight(3)],
        "only the name's address"
    );
    m.set("dns", "ok", Expiry::NEVER).await.unwrap();
    assert_eq!(ms[1].raw_get(b"dns").as_deref(), Some(&b"ok"[..]));
    assert_eq!(ms[0].raw_get(b"dns"), None);
}
