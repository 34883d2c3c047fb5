//! A connection's read deadline timer: one tokio [`Sleep`] kept armed between requests,
//! polled only when the task waiting on it is not the one it already wakes.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::time::{Instant, Sleep};

/// One connection's read deadline timer.
///
/// Kept between requests and moved only when it fired before the new deadline or is set
/// later than it: a request's deadline is later than the one before it, so a busy connection
/// re-arms it about once per read timeout rather than per read. Registering a tokio timer per
/// read and dropping it cost ~1,000 of the ~6,500 user-space instructions of an async get
/// (callgrind).
///
/// A timer that has not fired holds the waker it was last polled with, and wakes that task
/// when it fires. While the same task waits again, polling it only registers the same waker
/// again: ~100 of an async get's ~5,300 instructions (`Sleep::poll` and
/// `AtomicWaker::register_by_ref`, callgrind), so that poll is left out. It is polled after
/// every reset (tokio's alternative timer registers at its first poll) and whenever the
/// waiting task is another one.
///
/// The timer only wakes the read early; the deadline is checked against the clock.
#[derive(Debug)]
pub(crate) struct ReadTimer {
    sleep: Pin<Box<Sleep>>,
    /// The waker of the task the armed timer wakes; `None` after a reset or once it fired.
    wakes: Option<Waker>,
    /// How many times the `Sleep` was polled.
    #[cfg(test)]
    polls: usize,
}

impl ReadTimer {
    /// A timer for `until`, registered at its first poll.
    pub(crate) fn new(until: Instant) -> ReadTimer {
        ReadTimer {
            sleep: Box::pin(tokio::time::sleep_until(until)),
            wakes: None,
            #[cfg(test)]
            polls: 0,
        }
    }

    /// Armed to fire no later than `until`: moved when it is set later or already fired.
    #[inline]
    pub(crate) fn arm(&mut self, until: Instant) {
        if self.sleep.deadline() > until || self.sleep.is_elapsed() {
            self.reset(until);
        }
    }

    /// Moved to `until` (an earlier request's deadline passed before this one's).
    pub(crate) fn reset(&mut self, until: Instant) {
        self.sleep.as_mut().reset(until);
        self.wakes = None;
    }

    /// Ready once the timer fired; otherwise it wakes `cx`'s task when it does.
    #[inline]
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(w) = &self.wakes
            && same_task(w, cx.waker())
            && !self.sleep.is_elapsed()
        {
            // armed, and waking this task already: a fire after the check above wakes it too
            return Poll::Pending;
        }
        #[cfg(test)]
        {
            self.polls += 1;
        }
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.wakes = None;
                Poll::Ready(())
            }
            Poll::Pending => {
                self.wakes = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// How many times the `Sleep` was polled.
    #[cfg(test)]
    pub(crate) fn polls(&self) -> usize {
        self.polls
    }
}

/// Whether `a` and `b` wake the same way: the same data and the same functions. Not
/// `Waker::will_wake`, which also asks for the same vtable address: tokio's `block_on` polls
/// with a waker whose clone has an equal vtable at another address, so `will_wake` never
/// holds there (tokio 1.54; `#[tokio::main]`'s body is such a `block_on`).
#[inline]
fn same_task(a: &Waker, b: &Waker) -> bool {
    a.data() == b.data() && a.vtable() == b.vtable()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;
    use std::time::Duration;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    /// One poll of the timer from the calling task.
    async fn poll_once(t: &mut ReadTimer) -> Poll<()> {
        poll_fn(|cx| Poll::Ready(t.poll(cx))).await
    }

    /// Polled again by the task it already wakes, the `Sleep` is left alone; by another task,
    /// after a reset or after it fired, it is polled.
    #[test]
    fn the_sleep_is_polled_only_for_a_new_waker_or_deadline() {
        runtime().block_on(async {
            let far = Instant::now() + Duration::from_secs(60);
            let mut t = ReadTimer::new(far);
            assert_eq!(poll_once(&mut t).await, Poll::Pending);
            assert_eq!(poll_once(&mut t).await, Poll::Pending);
            assert_eq!(t.polls(), 1, "the same task: polled once");
            let t = tokio::spawn(async move {
                assert_eq!(poll_once(&mut t).await, Poll::Pending);
                assert_eq!(poll_once(&mut t).await, Poll::Pending);
                t
            })
            .await;
            let mut t = t.expect("joined");
            assert_eq!(t.polls(), 2, "another task: polled once more");
            t.arm(far + Duration::from_secs(1));
            assert_eq!(poll_once(&mut t).await, Poll::Pending);
            assert_eq!(t.polls(), 3, "armed later: not moved, polled for this task");
            assert_eq!(poll_once(&mut t).await, Poll::Pending);
            assert_eq!(t.polls(), 3);
            t.arm(far);
            assert_eq!(poll_once(&mut t).await, Poll::Pending);
            assert_eq!(t.polls(), 3, "armed at its own deadline: not moved");
            t.arm(far - Duration::from_secs(1));
            assert_eq!(poll_once(&mut t).await, Poll::Pending);
            assert_eq!(t.polls(), 4, "moved earlier: polled again");
            t.reset(Instant::now() + Duration::from_millis(20));
            assert_eq!(poll_once(&mut t).await, Poll::Pending);
            tokio::time::sleep(Duration::from_millis(40)).await;
            assert_eq!(poll_once(&mut t).await, Poll::Ready(()), "fired");
            assert_eq!(poll_once(&mut t).await, Poll::Ready(()), "still fired");
            assert_eq!(t.polls(), 7);
        });
    }

    /// A clone wakes as its original; wakers of two tasks do not.
    #[test]
    fn a_waker_and_its_clone_wake_the_same_task() {
        runtime().block_on(async {
            let here = poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
            let same = poll_fn(|cx| Poll::Ready(same_task(&here, cx.waker()))).await;
            assert!(same, "a clone");
            let there = tokio::spawn(poll_fn(|cx| Poll::Ready(cx.waker().clone())))
                .await
                .expect("joined");
            assert!(!same_task(&here, &there));
            assert!(!same_task(&there, &here));
            assert!(same_task(&there, &there.clone()));
            assert!(!same_task(&here, Waker::noop()));
        });
    }

    /// Armed and polled by one task, the timer still wakes another task that waits on it at
    /// its deadline: the waker it holds is replaced.
    #[test]
    fn a_timer_polled_by_one_task_wakes_the_next() {
        runtime().block_on(async {
            let mut t = ReadTimer::new(Instant::now() + Duration::from_millis(100));
            assert_eq!(poll_once(&mut t).await, Poll::Pending);
            let other = tokio::spawn(async move { poll_fn(|cx| t.poll(cx)).await });
            let fired = tokio::time::timeout(Duration::from_secs(5), other).await;
            assert!(matches!(fired, Ok(Ok(()))), "{fired:?}");
        });
    }

    /// A timer that fired is moved by `arm` and wakes its task at the new deadline.
    #[test]
    fn a_fired_timer_is_armed_again() {
        runtime().block_on(async {
            let mut t = ReadTimer::new(Instant::now() + Duration::from_millis(10));
            poll_fn(|cx| t.poll(cx)).await;
            let started = Instant::now();
            t.arm(started + Duration::from_millis(50));
            let waited = tokio::time::timeout(Duration::from_secs(5), poll_fn(|cx| t.poll(cx)))
                .await
                .map(|()| started.elapsed());
            assert!(
                matches!(waited, Ok(w) if w >= Duration::from_millis(45)),
                "{waited:?}"
            );
        });
    }
}
