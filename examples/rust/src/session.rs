//! One observed invocation: the phase, the per-stream budget, the queue and the thread
//! that presents the queue to the observer.
//!
//! Feeding side: any number of threads call [`ObservationSession::offer`]. An offer only
//! takes a short lock for the byte accounting and appends to an unbounded channel, so a
//! pipe-draining thread never waits for observer code. The channel needs no bound of its
//! own: the budget already limits what can ever be queued to one budget per stream.
//!
//! Presenting side: one thread per session takes messages out in order and calls the
//! observer, each call inside `catch_unwind`. It stops after `on_finish`, after a
//! cancellation, after an `on_output` that panicked, or when every handle is gone.
//!
//! Phases: `Active` accepts chunks within the budget; `Finished` accepts nothing more but
//! still presents what is queued and then calls `on_finish`; `Cancelled` accepts nothing
//! and what is still queued is skipped. The first of `finish` / `cancel` wins.
//! Cancelling never waits for a callback that is running at that moment.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::ids::{self, InvocationId};
use crate::observer::{OutputStream, ShellOutputObserver};

const ACTIVE: u8 = 0;
const FINISHED: u8 = 1;
const CANCELLED: u8 = 2;

/// Where a session is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Accepting chunks.
    Active,
    /// Completed normally: queued chunks are still presented, then `on_finish`.
    Finished,
    /// Cancelled, timed out, failed, or the observer panicked: nothing more is presented.
    Cancelled,
}

fn phase_of(raw: u8) -> Phase {
    match raw {
        ACTIVE => Phase::Active,
        FINISHED => Phase::Finished,
        _ => Phase::Cancelled,
    }
}

enum Message {
    Output(OutputStream, Vec<u8>),
    Finish,
    Cancel,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Observer code never runs under these locks, so a poisoned one only means a
    // panic elsewhere; the data (counters) stays meaningful.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Shared {
    invocation: InvocationId,
    /// Also read by the presentation thread, which holds only this, not `Shared`.
    phase: Arc<AtomicU8>,
    /// Bytes each stream may still deliver. The lock also orders phase changes against
    /// sends, so no chunk can be queued behind the finish notice.
    remaining: Mutex<[usize; 2]>,
    sender: mpsc::Sender<Message>,
}

impl Drop for Shared {
    /// Every handle is gone without a finish: treat it as a cancellation.
    fn drop(&mut self) {
        let _ = self
            .phase
            .compare_exchange(ACTIVE, CANCELLED, Ordering::AcqRel, Ordering::Acquire);
    }
}

/// Live observation of one invocation. Cheap to clone; all clones are the same session.
#[derive(Clone)]
pub struct ObservationSession {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ObservationSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObservationSession")
            .field("invocation", &self.shared.invocation)
            .field("phase", &self.phase())
            .finish()
    }
}

impl ObservationSession {
    /// Take the next invocation ID and start presenting to `observer`, delivering at
    /// most `budget` bytes per stream.
    #[must_use]
    pub fn open(observer: Arc<dyn ShellOutputObserver>, budget: usize) -> Self {
        Self::open_tracked(observer, budget, None)
    }

    /// Like [`open`](Self::open), and count the presentation thread in `presenters`
    /// while it lives (so a caller can wait until observation has gone quiet).
    #[must_use]
    pub fn open_tracked(
        observer: Arc<dyn ShellOutputObserver>,
        budget: usize,
        presenters: Option<&Presenters>,
    ) -> Self {
        let invocation = ids::take();
        let (sender, receiver) = mpsc::channel();
        let phase = Arc::new(AtomicU8::new(ACTIVE));
        let shared = Arc::new(Shared {
            invocation,
            phase: Arc::clone(&phase),
            remaining: Mutex::new([budget, budget]),
            sender,
        });
        let ticket = presenters.map(Presenters::enter);
        let spawned = std::thread::Builder::new()
            .name(format!("shell-output-{invocation}"))
            .spawn(move || {
                let _ticket = ticket;
                present(invocation, &*observer, &phase, &receiver);
            });
        if spawned.is_err() {
            // No thread, no observation: the command itself is unaffected. The
            // ticket went down with the closure, so the idle count stays right.
            shared.phase.store(CANCELLED, Ordering::Release);
        }
        Self { shared }
    }

    /// The invocation ID this session took.
    #[must_use]
    pub fn invocation(&self) -> InvocationId {
        self.shared.invocation
    }

    /// The current phase.
    #[must_use]
    pub fn phase(&self) -> Phase {
        phase_of(self.shared.phase.load(Ordering::Acquire))
    }

    /// Offer a chunk, as a pipe-draining thread does: account it against `stream`'s
    /// budget and queue what fits. Never blocks on the observer.
    pub fn offer(&self, stream: OutputStream, chunk: &[u8]) {
        if chunk.is_empty() || self.shared.phase.load(Ordering::Acquire) != ACTIVE {
            return;
        }
        let mut remaining = lock(&self.shared.remaining);
        if self.shared.phase.load(Ordering::Acquire) != ACTIVE {
            return;
        }
        let left = &mut remaining[stream.index()];
        let take = chunk.len().min(*left);
        if take == 0 {
            return;
        }
        *left -= take;
        // An unbounded channel: `send` never waits. It fails only once the presentation
        // thread has ended, and then there is nobody left to show the chunk to.
        let _ = self
            .shared
            .sender
            .send(Message::Output(stream, chunk[..take].to_vec()));
    }

    /// Normal completion: what is queued is still presented, then `on_finish`.
    /// Returns at once; a no-op unless the session is still active.
    pub fn finish(&self) {
        self.end(FINISHED, Message::Finish);
    }

    /// Cancellation (also a time limit or a failure): stop accepting, skip what is
    /// queued, never call `on_finish`. Returns at once, even while a callback runs.
    /// A no-op unless the session is still active.
    pub fn cancel(&self) {
        self.end(CANCELLED, Message::Cancel);
    }

    fn end(&self, to: u8, message: Message) {
        let _remaining = lock(&self.shared.remaining);
        if self
            .shared
            .phase
            .compare_exchange(ACTIVE, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let _ = self.shared.sender.send(message);
        }
    }
}

/// The presentation thread's loop.
fn present(
    invocation: InvocationId,
    observer: &dyn ShellOutputObserver,
    phase: &AtomicU8,
    receiver: &mpsc::Receiver<Message>,
) {
    while let Ok(message) = receiver.recv() {
        match message {
            Message::Output(stream, chunk) => {
                if phase.load(Ordering::Acquire) == CANCELLED {
                    return;
                }
                let call = catch_unwind(AssertUnwindSafe(|| {
                    observer.on_output(invocation, stream, &chunk);
                }));
                if call.is_err() {
                    // Observation of this invocation ends here; the command does not notice.
                    phase.store(CANCELLED, Ordering::Release);
                    return;
                }
            }
            Message::Finish => {
                let _ = catch_unwind(AssertUnwindSafe(|| observer.on_finish(invocation)));
                return;
            }
            Message::Cancel => return,
        }
    }
}

/// Counts live presentation threads, so that tests and harnesses can wait until every
/// callback has run (production code never needs to wait for observers).
#[derive(Clone, Default)]
pub struct Presenters {
    inner: Arc<(Mutex<usize>, Condvar)>,
}

struct Ticket {
    inner: Arc<(Mutex<usize>, Condvar)>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let (count, changed) = &*self.inner;
        let mut count = lock(count);
        *count -= 1;
        changed.notify_all();
    }
}

impl Presenters {
    /// A new, empty set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn enter(&self) -> Ticket {
        *lock(&self.inner.0) += 1;
        Ticket {
            inner: Arc::clone(&self.inner),
        }
    }

    /// How many presentation threads are alive now.
    #[must_use]
    pub fn live(&self) -> usize {
        *lock(&self.inner.0)
    }

    /// Wait until no presentation thread is alive; `false` if that did not happen
    /// within `timeout`.
    #[must_use]
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let (count, changed) = &*self.inner;
        let mut count = lock(count);
        while *count > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            count = changed
                .wait_timeout(count, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, Sender};

    #[derive(Debug, PartialEq)]
    enum Seen {
        Out(OutputStream, Vec<u8>),
        Finish,
    }

    struct Recorder(Mutex<Sender<Seen>>);

    impl ShellOutputObserver for Recorder {
        fn on_output(&self, _: InvocationId, stream: OutputStream, chunk: &[u8]) {
            let _ = lock(&self.0).send(Seen::Out(stream, chunk.to_vec()));
        }
        fn on_finish(&self, _: InvocationId) {
            let _ = lock(&self.0).send(Seen::Finish);
        }
    }

    fn recorder() -> (Arc<Recorder>, mpsc::Receiver<Seen>) {
        let (tx, rx) = channel();
        (Arc::new(Recorder(Mutex::new(tx))), rx)
    }

    #[test]
    fn budget_per_stream_then_finish_then_nothing_late() {
        let (obs, rx) = recorder();
        let presenters = Presenters::new();
        let s = ObservationSession::open_tracked(obs, 3, Some(&presenters));
        s.offer(OutputStream::Stdout, b"abcd");
        s.offer(OutputStream::Stderr, b"wxyz");
        s.offer(OutputStream::Stdout, b"more");
        s.finish();
        s.offer(OutputStream::Stdout, b"late");
        assert!(presenters.wait_idle(Duration::from_secs(2)));
        let got: Vec<Seen> = rx.try_iter().collect();
        assert_eq!(
            got,
            vec![
                Seen::Out(OutputStream::Stdout, b"abc".to_vec()),
                Seen::Out(OutputStream::Stderr, b"wxy".to_vec()),
                Seen::Finish
            ]
        );
    }

    #[test]
    fn zero_budget_still_finishes_and_empty_chunks_are_ignored() {
        let (obs, rx) = recorder();
        let presenters = Presenters::new();
        let s = ObservationSession::open_tracked(obs, 0, Some(&presenters));
        s.offer(OutputStream::Stdout, b"abc");
        s.offer(OutputStream::Stderr, b"");
        s.finish();
        assert!(presenters.wait_idle(Duration::from_secs(2)));
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![Seen::Finish]);
    }

    #[test]
    fn panic_ends_observation_and_skips_the_queue() {
        let calls = Arc::new(Mutex::new(0));
        let counted = Arc::clone(&calls);
        let presenters = Presenters::new();
        let s = ObservationSession::open_tracked(
            Arc::new(move |_: InvocationId, _: OutputStream, _: &[u8]| {
                *lock(&counted) += 1;
                panic!("observer failure (expected by this test)");
            }),
            100,
            Some(&presenters),
        );
        s.offer(OutputStream::Stdout, b"one");
        s.offer(OutputStream::Stdout, b"two");
        assert!(presenters.wait_idle(Duration::from_secs(2)));
        assert_eq!(*lock(&calls), 1);
        assert_eq!(s.phase(), Phase::Cancelled);
        s.finish();
        assert_eq!(s.phase(), Phase::Cancelled);
    }

    #[test]
    fn cancel_does_not_wait_for_a_blocked_callback() {
        let (entered_tx, entered_rx) = channel::<()>();
        let (release_tx, release_rx) = channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let entered_tx = Mutex::new(entered_tx);
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&delivered);
        let presenters = Presenters::new();
        let s = ObservationSession::open_tracked(
            Arc::new(move |_: InvocationId, _: OutputStream, chunk: &[u8]| {
                lock(&seen).push(chunk.to_vec());
                let _ = lock(&entered_tx).send(());
                let _ = lock(&release_rx).recv();
            }),
            100,
            Some(&presenters),
        );
        s.offer(OutputStream::Stdout, b"one");
        entered_rx.recv_timeout(Duration::from_secs(2)).unwrap();
        s.offer(OutputStream::Stdout, b"two");
        let started = Instant::now();
        s.cancel();
        assert!(started.elapsed() < Duration::from_millis(500));
        release_tx.send(()).unwrap();
        assert!(presenters.wait_idle(Duration::from_secs(2)));
        assert_eq!(*lock(&delivered), vec![b"one".to_vec()]);
    }

    #[test]
    fn dropping_every_handle_ends_the_thread_without_finish() {
        let (obs, rx) = recorder();
        let presenters = Presenters::new();
        let s = ObservationSession::open_tracked(obs, 10, Some(&presenters));
        drop(s);
        assert!(presenters.wait_idle(Duration::from_secs(2)));
        assert!(rx.try_iter().next().is_none());
    }
}
