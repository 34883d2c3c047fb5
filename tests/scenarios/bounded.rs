//! Bounded reads: a server that never ends a multi-line reply can neither
//! hold a caller past the read timeout nor make the client buffer without limit.
//!
//! Each scenario runs a fake server on 127.0.0.1 that answers the request with an endless
//! reply: `STAT` lines after `stats`, `ERROR` lines after `set_multi_noreply`, `VALUE` blocks
//! for the asked keys after `get_multi`. Slowly (a line every 10 ms, so a deadline renewed per
//! line would never expire): the call must end with a read `Timeout`, the whole reply's
//! deadline counted from the start of its read. Fast: the call must end with a `Protocol`
//! error naming the server and the limit, and the memory the call holds must stay well below
//! what the server sent: at its peak, at most a quarter of the bytes sent (the heap bytes the
//! calling thread holds, counted by this binary's allocator; see [`held_during`]). Each fast
//! flood sends many times the limit, so a client that stops at the limit holds a small part of
//! it and a client that kept reading (even one that still reports the limit) holds it all.
//!
//! The fake servers stop after a fixed number of lines (never a wall-clock time) and then close
//! the connection, so a client without the bounds fails with an I/O error (end of stream)
//! instead of hanging.

use crate::api::{Api, ParityApi, Settings, build};
use crate::support::LO;
use memshard::Expiry;
use memshard::Protocol;
use memshard::{Error, Server};
use memshard::{STATS_MAX_BYTES, STATS_MAX_LINES};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

const READ_TIMEOUT: Duration = Duration::from_millis(300);

/// Heap bytes live on each thread, and their peak: the allocator of this test binary counts
/// what the thread that allocates holds. Other tests' threads, running meanwhile, do not count,
/// so no tolerance for them is needed (process-wide VmRSS would need one, and freed buffers
/// would hide from it).
mod held {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static LIVE: Cell<i64> = const { Cell::new(0) };
        static PEAK: Cell<i64> = const { Cell::new(0) };
    }

    fn note(delta: i64) {
        let _ = LIVE.try_with(|live| {
            let now = live.get() + delta;
            live.set(now);
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
        });
    }

    /// Starts a measure: the peak is reset to what the thread holds now.
    pub fn start() -> i64 {
        let now = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(now));
        now
    }

    /// The most the thread held since `start`, beyond what it held then.
    pub fn peak_since(start: i64) -> u64 {
        (PEAK.with(Cell::get) - start).max(0) as u64
    }

    struct Counting;

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            let p = unsafe { System.alloc(l) };
            if !p.is_null() {
                note(l.size() as i64);
            }
            p
        }
        unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
            let p = unsafe { System.alloc_zeroed(l) };
            if !p.is_null() {
                note(l.size() as i64);
            }
            p
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            unsafe { System.dealloc(p, l) };
            note(-(l.size() as i64));
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
            let q = unsafe { System.realloc(p, l, new) };
            if !q.is_null() {
                note(new as i64 - l.size() as i64);
            }
            q
        }
    }

    #[global_allocator]
    static A: Counting = Counting;
}

/// The heap the calling thread held at the peak of `call`, beyond what it held before. The
/// blocking client reads on the calling thread; the async scenarios' futures are polled by
/// `block_on` on it too.
async fn held_during<T>(call: impl Future<Output = T>) -> (T, u64) {
    let start = held::start();
    let out = call.await;
    (out, held::peak_since(start))
}

/// A bounded call may hold at most a quarter of what the fake server sent.
#[track_caller]
fn assert_held_bounded(held: u64, sent: u64) {
    assert!(
        held <= sent / 4,
        "the call held {held} bytes at its peak, more than a quarter of the {sent} bytes sent"
    );
}

/// What a fake server sends after reading a request.
#[derive(Clone)]
struct Flood {
    /// One unit of the endless reply (a line, or a VALUE block); for [`Flood::meta_hits`], the
    /// hits made from the request are appended to it.
    unit: Vec<u8>,
    /// Answer each `mg` of the request with a one-byte hit carrying the tokens it asked for
    /// (opaque, key, flags, ...), so that the reply is one a client cannot refuse until it
    /// repeats; the request is read up to its `mn`.
    meta_hits: bool,
    /// Pause between units (zero: as fast as the socket takes them, many units per write).
    every: Duration,
    /// Units sent at most before the server closes the connection.
    max: u64,
}

impl Flood {
    /// The bytes it sends to one request (without the meta hits appended to the unit).
    fn sent(&self) -> u64 {
        self.unit.len() as u64 * self.max
    }
}

/// A fake server on 127.0.0.1 answering every request on every connection with `flood`; its
/// port.
fn fake_server(flood: Flood) -> u16 {
    let listener = TcpListener::bind((LO, 0)).expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("local addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let flood = flood.clone();
            std::thread::spawn(move || serve(conn, &flood));
        }
    });
    port
}

fn serve(mut conn: TcpStream, flood: &Flood) {
    // the request: one read is enough for the small requests of these scenarios
    let mut req = [0u8; 64 * 1024];
    let mut got = match conn.read(&mut req) {
        Ok(n) if n > 0 => n,
        _ => return,
    };
    let mut unit = flood.unit.clone();
    if flood.meta_hits {
        // a pipeline of quiet gets may come in more than one segment; its `mn` ends it (a
        // client that sends none gets its hits after a second of quiet)
        let _ = conn.set_read_timeout(Some(Duration::from_secs(1)));
        while !req[..got].ends_with(b"mn\r\n") && got < req.len() {
            match conn.read(&mut req[got..]) {
                Ok(n) if n > 0 => got += n,
                _ => break,
            }
        }
        unit.extend(meta_hits(&req[..got]));
    }
    let per_write = if flood.every.is_zero() { 256 } else { 1 };
    let chunk: Vec<u8> = unit.repeat(per_write as usize);
    let mut done = 0;
    while done < flood.max {
        if conn.write_all(&chunk).is_err() {
            // the client dropped the connection
            return;
        }
        done += per_write;
        if !flood.every.is_zero() {
            std::thread::sleep(flood.every);
        }
    }
}

/// A one-byte hit (`VA 1 ...` + `x`) for each `mg` line of `request`, with the tokens it asked
/// for: `O`/`k` echoed, `f0`, `c1`, `s1`, `t-1`, `b`; `v` and `q` give none.
fn meta_hits(request: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in String::from_utf8_lossy(request).split("\r\n") {
        let mut tokens = line.split(' ');
        if tokens.next() != Some("mg") {
            continue;
        }
        let Some(key) = tokens.next() else { continue };
        let mut reply = String::from("VA 1");
        for flag in tokens {
            let echo = match flag.split_at(flag.len().min(1)) {
                ("O", opaque) => format!("O{opaque}"),
                ("k", _) => format!("k{key}"),
                ("f", _) => "f0".into(),
                ("c", _) => "c1".into(),
                ("s", _) => "s1".into(),
                ("t", _) => "t-1".into(),
                ("b", _) => "b".into(),
                _ => continue,
            };
            reply.push(' ');
            reply.push_str(&echo);
        }
        out.extend_from_slice(reply.as_bytes());
        out.extend_from_slice(b"\r\nx\r\n");
    }
    out
}

fn slow(unit: &[u8]) -> Flood {
    // 10 ms a unit for 2000 units: 20 s at least, far past the read timeout
    Flood {
        meta_hits: false,
        unit: unit.to_vec(),
        every: Duration::from_millis(10),
        max: 2000,
    }
}

fn fast(unit: &[u8], max: u64) -> Flood {
    Flood {
        meta_hits: false,
        unit: unit.to_vec(),
        every: Duration::ZERO,
        max,
    }
}

fn client<C: Api>(port: u16) -> C {
    build::<C>(|b| {
        b.servers(vec![Server::new("127.0.0.1", port)])
            .read_timeout(READ_TIMEOUT)
    })
}

/// A read timeout from the fake server.
#[track_caller]
fn assert_read_timeout(e: &Error, port: u16) {
    match e {
        Error::Timeout { server, op, .. } => {
            assert_eq!(server, &format!("127.0.0.1:{port}"));
            assert_eq!(*op, "read");
        }
        other => panic!("expected a read Timeout, got {other:?}"),
    }
}

/// A Protocol error from the fake server whose detail names `limit`.
#[track_caller]
fn assert_limit(e: &Error, port: u16, limit: &str) {
    match e {
        Error::Protocol { server, detail } => {
            assert_eq!(server, &format!("127.0.0.1:{port}"));
            assert!(
                detail.contains(limit),
                "the error should name the limit {limit}: {detail}"
            );
        }
        other => panic!("expected a Protocol error naming {limit}, got {other:?}"),
    }
}

async fn one_stats<C: Api>(c: &C) -> Error {
    let mut all = c.stats(None).await;
    assert_eq!(all.len(), 1);
    match all.pop() {
        Some((_, Err(e))) => e,
        Some((_, Ok(s))) => panic!("stats of an endless reply returned {} lines", s.len()),
        None => unreachable!(),
    }
}

pub async fn stats_with_endless_slow_lines_times_out_once_for_the_whole_reply<C: Api>() {
    let port = fake_server(slow(b"STAT x y\r\n"));
    let e = one_stats(&client::<C>(port)).await;
    assert_read_timeout(&e, port);
}

pub async fn stats_with_endless_fast_lines_stops_at_the_line_limit<C: Api>() {
    // 64 times the line limit (10 MiB): the lines a bounded client keeps (parsed, about 70
    // bytes each) stay below a quarter of it
    let flood = fast(b"STAT x y\r\n", 64 * STATS_MAX_LINES as u64);
    let sent = flood.sent();
    let port = fake_server(flood);
    let c = client::<C>(port);
    let (e, held) = held_during(one_stats(&c)).await;
    assert_held_bounded(held, sent);
    assert_limit(&e, port, &format!("{STATS_MAX_LINES} lines"));
}

pub async fn stats_with_endless_long_lines_stops_at_the_byte_limit<C: Api>() {
    let line = format!("STAT x {}\r\n", "y".repeat(4000));
    // 32 times the byte limit (32 MiB)
    let flood = fast(line.as_bytes(), 32 * (STATS_MAX_BYTES / line.len()) as u64);
    let sent = flood.sent();
    let port = fake_server(flood);
    let c = client::<C>(port);
    let (e, held) = held_during(one_stats(&c)).await;
    assert_held_bounded(held, sent);
    assert_limit(&e, port, &format!("{STATS_MAX_BYTES} bytes"));
}

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("k{i}")).collect()
}

/// Text: `VALUE` blocks of the 10 keys asked, again and again, never `END`. Meta: a hit for
/// each `mg` of the request (its own opaque and key), again and again, never `MN`: the first
/// repeat is a reply to a request already answered. Either way every key fails with a
/// `Protocol` error (text: naming the limit, 10 keys) and memory stays bounded.
pub async fn get_multi_with_values_repeated_endlessly_stops_at_the_keys_asked<C: Api>() {
    let asked = keys(10);
    let flood = match C::PROTOCOL {
        Protocol::Text => {
            let values: Vec<u8> = asked
                .iter()
                .flat_map(|k| format!("VALUE {k} 0 1\r\nx\r\n").into_bytes())
                .collect();
            fast(&values, 1_000_000)
        }
        Protocol::Meta => Flood {
            meta_hits: true,
            ..fast(b"", 1_000_000)
        },
    };
    // meta: at least one hit a unit; text: the 10 values a unit
    let sent = flood.sent().max(flood.max * b"VA 1\r\nx\r\n".len() as u64);
    let port = fake_server(flood);
    let c = client::<C>(port);
    let (r, held) = held_during(c.get_multi(&asked)).await;
    assert_held_bounded(held, sent);
    assert_eq!(r.len(), 10);
    for r in &r {
        let e = r.as_ref().expect_err("an endless reply");
        match C::PROTOCOL {
            Protocol::Text => assert_limit(e, port, "10 keys"),
            // which rule stops it (a repeated opaque, a key answered twice, a limit) is the
            // meta parser's to word
            Protocol::Meta => assert_limit(e, port, ""),
        }
    }
    println!("{}: {:?}", C::NAME, r[0]);
}

fn items(n: usize) -> Vec<(String, String)> {
    (0..n).map(|i| (format!("k{i}"), "v".to_string())).collect()
}

pub async fn noreply_sets_with_endless_slow_errors_time_out_once_for_the_whole_reply<
    C: ParityApi,
>() {
    // more requests than error lines the server sends within the read timeout, so that the
    // deadline (not the count of requests sent) ends the read
    let port = fake_server(slow(b"ERROR\r\n"));
    let r = client::<C>(port)
        .set_multi_noreply(&items(100), 0, Expiry::NEVER)
        .await;
    assert_eq!(r.len(), 100);
    for r in &r {
        assert_read_timeout(r.as_ref().expect_err("an endless reply"), port);
    }
}

pub async fn noreply_sets_with_endless_fast_errors_stop_at_one_error_per_request<C: ParityApi>() {
    let flood = fast(b"ERROR\r\n", 1_000_000);
    let sent = flood.sent();
    let port = fake_server(flood);
    let c = client::<C>(port);
    let items = items(10);
    let (r, held) = held_during(c.set_multi_noreply(&items, 0, Expiry::NEVER)).await;
    assert_held_bounded(held, sent);
    assert_eq!(r.len(), 10);
    for r in &r {
        assert_limit(r.as_ref().expect_err("an endless reply"), port, "11 lines");
    }
}
