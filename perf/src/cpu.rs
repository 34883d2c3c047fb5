//! Client CPU time (user + system) from getrusage, for the CPU-per-operation columns of the
//! I/O rows and the thread-scaling table: on a shared 2-core machine wall-clock figures swing
//! with the other work, CPU time per operation much less, and it is what a service pays.
//!
//! A single-threaded loop reads its own thread's time (`RUSAGE_THREAD`), so the other threads
//! of the process (idle pool reapers, the prober) are not counted; a multi-threaded run reads
//! the whole process (`RUSAGE_SELF`). Linux sums each thread's scheduler runtime for these, so
//! the total is exact to the microsecond, although the user / system split is sampled.

use std::hint::black_box;
use std::time::Instant;

/// Whose CPU time to read.
#[derive(Clone, Copy)]
pub(crate) enum Who {
    /// The calling thread.
    Thread,
    /// The whole process, every thread.
    Process,
}

/// User + system CPU time so far, in ns.
pub(crate) fn cpu_ns(who: Who) -> u64 {
    let w = match who {
        Who::Thread => libc::RUSAGE_THREAD,
        Who::Process => libc::RUSAGE_SELF,
    };
    // Unsafe because std has no CPU-time clock: getrusage only writes the struct it is given,
    // which is plain integers, so a zeroed one is a valid value to start from.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(w, &mut ru);
        assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
        ru
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime) + us(ru.ru_stime)) * 1000
}

/// Wall-clock and CPU time per operation of one repetition, in ns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub wall: f64,
    pub cpu: f64,
}

/// `f(i)` for `i` in `0..ops` on this thread: wall-clock and thread CPU time per op.
pub(crate) fn per_op(ops: usize, mut f: impl FnMut(usize)) -> Sample {
    let c = cpu_ns(Who::Thread);
    let t = Instant::now();
    for i in 0..ops {
        f(i);
    }
    let wall = t.elapsed().as_nanos() as f64;
    let cpu = (cpu_ns(Who::Thread) - c) as f64;
    Sample {
        wall: wall / ops as f64,
        cpu: cpu / ops as f64,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

/// As `interleave_n`, for contenders that return a [`Sample`]: one warm-up each, `reps`
/// interleaved rounds, and the median of each field on its own.
pub(crate) fn interleave_samples(
    reps: usize,
    contenders: &mut [&mut dyn FnMut() -> Sample],
) -> Vec<Sample> {
    for c in contenders.iter_mut() {
        black_box(c());
    }
    let mut runs = vec![Vec::with_capacity(reps); contenders.len()];
    for _ in 0..reps {
        for (c, r) in contenders.iter_mut().zip(runs.iter_mut()) {
            r.push(c());
        }
    }
    runs.into_iter()
        .map(|r: Vec<Sample>| Sample {
            wall: median(r.iter().map(|s| s.wall).collect()),
            cpu: median(r.iter().map(|s| s.cpu).collect()),
        })
        .collect()
}

/// What a multi-threaded run measured.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    /// Operations per second, all threads together.
    pub ops_per_s: f64,
    /// 99th percentile of one operation's latency, in ns.
    pub p99: f64,
    /// Process CPU time per operation, in ns.
    pub cpu: f64,
}

/// `threads` threads, each with its own state from `setup(thread)` (made before the clock
/// starts), run `op(state, thread, i)` for `dur`, timing each call. The process CPU time is
/// read once all threads are set up and again when all have stopped, so setup and teardown
/// (connecting, spawning) are not counted.
pub(crate) fn run_threads<S: Send>(
    threads: usize,
    dur: std::time::Duration,
    setup: &(impl Fn(usize) -> S + Sync),
    op: &(impl Fn(&mut S, usize, usize) + Sync),
) -> Run {
    let ready = std::sync::Barrier::new(threads + 1);
    let done = std::sync::Barrier::new(threads + 1);
    let (ops, mut lat, wall, cpu) = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let (ready, done) = (&ready, &done);
                s.spawn(move || {
                    let mut state = setup(t);
                    // about 40k ops/s over all threads on loopback: no regrowth in the loop
                    let mut lat: Vec<u32> =
                        Vec::with_capacity((dur.as_secs_f64() * 60_000.0) as usize / threads + 64);
                    ready.wait();
                    let start = Instant::now();
                    let mut i = 0;
                    while start.elapsed() < dur {
                        for _ in 0..16 {
                            let t0 = Instant::now();
                            op(&mut state, t, i);
                            lat.push(t0.elapsed().as_nanos().min(u32::MAX as u128) as u32);
                            i += 1;
                        }
                    }
                    done.wait();
                    (i, lat, state)
                })
            })
            .collect();
        ready.wait();
        let (c, t) = (cpu_ns(Who::Process), Instant::now());
        done.wait();
        let (wall, cpu) = (t.elapsed(), cpu_ns(Who::Process) - c);
        let mut ops = 0;
        let mut all = Vec::new();
        for h in hs {
            // the state (sockets) is dropped here, after the clocks stopped
            let (n, lat, _state) = h.join().expect("thread");
            ops += n;
            all.extend(lat);
        }
        (ops, all, wall, cpu)
    });
    let k = (lat.len() * 99 / 100).min(lat.len() - 1);
    let p99 = *lat.select_nth_unstable(k).1 as f64;
    Run {
        ops_per_s: ops as f64 / wall.as_secs_f64(),
        p99,
        cpu: cpu as f64 / ops as f64,
    }
}
