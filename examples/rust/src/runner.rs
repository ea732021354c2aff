//! A command runner that spawns real child processes and can be observed while they run.
//!
//! Per invocation: the child leads its own process group; one thread drains each pipe
//! (it keeps the first `output_cap` bytes for the result, offers that same prefix to the
//! observation session, and reads on to end of file, discarding the rest); one reaper
//! thread notices the child's exit, waits until both pipes are drained, then reaps it.
//! When observed, the session adds its presentation thread.
//!
//! The result belongs to the runner alone: exit code, both streams capped at
//! `output_cap`, the truncation flags. The observer's live budget is that same cap, so
//! it sees at most what the result keeps. Observation never changes the result.
//!
//! Order of an observed run: policy check, spawn, *then* the invocation ID is taken and
//! the session opened (a command that cannot be spawned takes no ID), then the threads.
//!
//! A time limit kills the child's whole process group at once with SIGKILL (a
//! backgrounded grandchild holding a pipe dies with it), cancels observation, and
//! returns without waiting for the pipes: `timed_out`, no exit code, no stdout, and
//! stderr `command timed out after Ns`. Cancelling (or dropping the [`Running`] handle
//! before it produced an outcome) kills the group and cancels observation the same way.

use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::ids::InvocationId;
use crate::observer::{OutputStream, ShellOutputObserver};
use crate::session::{ObservationSession, Presenters};

/// Default per-stream output cap (the same 64 KiB default as upstream's host shell).
pub const DEFAULT_OUTPUT_CAP: usize = 64 * 1024;
/// Bytes asked for per read from a pipe.
const READ_SIZE: usize = 64 * 1024;

/// Returns a refusal reason for a command line, or `None` to let it run.
pub type Policy = Arc<dyn Fn(&[String]) -> Option<String> + Send + Sync>;
/// Instrumentation: called on each pipe-draining thread as it starts, with the role
/// (`"drain"`) and the invocation it serves (if observed).
pub type ThreadHook = Arc<dyn Fn(&str, Option<InvocationId>) + Send + Sync>;

/// The authoritative outcome of one command, whatever any observer saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellResult {
    /// The exit code; `-1` when a signal ended the child; `None` when the time limit did.
    pub exit_code: Option<i32>,
    /// The first `output_cap` bytes of standard output (empty on a time limit).
    pub stdout: Vec<u8>,
    /// The first `output_cap` bytes of standard error (a fixed notice on a time limit).
    pub stderr: Vec<u8>,
    /// More than `output_cap` bytes were written to standard output.
    pub stdout_truncated: bool,
    /// More than `output_cap` bytes were written to standard error.
    pub stderr_truncated: bool,
    /// The time limit ended the command.
    pub timed_out: bool,
}

/// Why a command produced no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// The policy refused it before anything was spawned (no ID was taken).
    Refused(String),
    /// It could not be spawned (no ID was taken).
    Spawn(String),
    /// The caller cancelled it (or dropped its handle).
    Cancelled,
    /// Reading its output failed after it was spawned.
    Failed(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(why) => write!(f, "command refused: {why}"),
            Self::Spawn(why) => write!(f, "cannot run the command: {why}"),
            Self::Cancelled => write!(f, "command cancelled"),
            Self::Failed(why) => write!(f, "command failed: {why}"),
        }
    }
}

impl std::error::Error for RunError {}

/// What to attach to one run.
#[derive(Default)]
pub struct RunOptions {
    observer: Option<Arc<dyn ShellOutputObserver>>,
    timeout: Option<Duration>,
    on_invocation: Option<Box<dyn FnOnce(InvocationId)>>,
}

impl RunOptions {
    /// No observer, no time limit.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Observe the run live.
    #[must_use]
    pub fn observer(mut self, observer: Arc<dyn ShellOutputObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Kill the run (its whole process group) once it has run this long.
    #[must_use]
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// Called on the spawning thread as soon as an observed run has taken its ID.
    #[must_use]
    pub fn on_invocation(mut self, hook: impl FnOnce(InvocationId) + 'static) -> Self {
        self.on_invocation = Some(Box::new(hook));
        self
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs commands; one runner serves any number of concurrent invocations.
#[derive(Clone)]
pub struct ShellRunner {
    output_cap: usize,
    policy: Option<Policy>,
    thread_hook: Option<ThreadHook>,
    presenters: Presenters,
}

impl Default for ShellRunner {
    fn default() -> Self {
        Self::new(DEFAULT_OUTPUT_CAP)
    }
}

impl ShellRunner {
    /// A runner whose results keep at most `output_cap` bytes per stream. The live
    /// budget of every observer it attaches is the same number.
    #[must_use]
    pub fn new(output_cap: usize) -> Self {
        Self {
            output_cap,
            policy: None,
            thread_hook: None,
            presenters: Presenters::new(),
        }
    }

    /// Refuse some commands before anything is spawned.
    #[must_use]
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Instrumentation for pipe-draining threads (see [`ThreadHook`]).
    #[must_use]
    pub fn with_thread_hook(mut self, hook: ThreadHook) -> Self {
        self.thread_hook = Some(hook);
        self
    }

    /// The per-stream cap of results (and the live budget of observers).
    #[must_use]
    pub fn output_cap(&self) -> usize {
        self.output_cap
    }

    /// The presentation threads of sessions this runner opened.
    #[must_use]
    pub fn presenters(&self) -> &Presenters {
        &self.presenters
    }

    /// Wait until every presentation thread this runner started has ended. Nothing in
    /// production needs this; tests and the conformance driver do.
    #[must_use]
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        self.presenters.wait_idle(timeout)
    }

    /// Run `argv` to completion (or its time limit) and return its result.
    ///
    /// # Errors
    /// Refused, unable to spawn, or failed while reading output.
    pub fn run(&self, argv: &[String], options: RunOptions) -> Result<ShellResult, RunError> {
        self.spawn(argv, options)?.wait()
    }

    /// Start `argv` and return a handle to wait for it or cancel it.
    ///
    /// # Errors
    /// Refused by the policy, or the program could not be spawned; in both cases no
    /// invocation ID was taken and the observer hears nothing.
    pub fn spawn(&self, argv: &[String], options: RunOptions) -> Result<Running, RunError> {
        if let Some(policy) = &self.policy {
            if let Some(reason) = policy(argv) {
                return Err(RunError::Refused(reason));
            }
        }
        let Some((program, rest)) = argv.split_first() else {
            return Err(RunError::Spawn("empty command line".into()));
        };
        let mut child = Command::new(program)
            .args(rest)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|error| RunError::Spawn(format!("{program}: {error}")))?;
        let pgid = i32::try_from(child.id()).unwrap_or(0);
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            kill_and_reap(&mut child, pgid);
            return Err(RunError::Spawn("the child's pipes are missing".into()));
        };

        let session = options.observer.map(|observer| {
            ObservationSession::open_tracked(observer, self.output_cap, Some(&self.presenters))
        });
        let invocation = session.as_ref().map(ObservationSession::invocation);
        if let (Some(id), Some(hook)) = (invocation, options.on_invocation) {
            hook(id);
        }

        let inner = Arc::new(Inner {
            pgid,
            session,
            timeout: options.timeout,
            deadline: options.timeout.and_then(|t| Instant::now().checked_add(t)),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let drains = [
            (
                OutputStream::Stdout,
                Box::new(stdout) as Box<dyn Read + Send>,
            ),
            (
                OutputStream::Stderr,
                Box::new(stderr) as Box<dyn Read + Send>,
            ),
        ]
        .into_iter()
        .map(|(stream, pipe)| self.start_drain(pipe, stream, invocation, &inner))
        .collect::<io::Result<Vec<_>>>();
        let drains = match drains {
            Ok(drains) => drains,
            Err(error) => return Err(abandon(&inner, &mut child, &error)),
        };
        let reaper_inner = Arc::clone(&inner);
        let reaper = std::thread::Builder::new()
            .name(format!("shell-reaper-{pgid}"))
            .spawn(move || reap(&reaper_inner, child, drains));
        if let Err(error) = reaper {
            // The child handle went down with the closure; its group can still be killed.
            kill_group(pgid);
            if let Some(session) = &inner.session {
                session.cancel();
            }
            return Err(RunError::Failed(format!("cannot start a thread: {error}")));
        }
        Ok(Running { inner })
    }

    fn start_drain(
        &self,
        pipe: Box<dyn Read + Send>,
        stream: OutputStream,
        invocation: Option<InvocationId>,
        inner: &Arc<Inner>,
    ) -> io::Result<JoinHandle<io::Result<Capture>>> {
        let cap = self.output_cap;
        let hook = self.thread_hook.clone();
        let session = inner.session.clone();
        std::thread::Builder::new()
            .name(format!("shell-drain-{}", stream.name()))
            .spawn(move || {
                if let Some(hook) = hook {
                    hook("drain", invocation);
                }
                drain(pipe, cap, stream, session.as_ref())
            })
    }
}

/// One stream of the result: the first `cap` bytes, and whether more came.
#[derive(Debug, Default)]
struct Capture {
    bytes: Vec<u8>,
    truncated: bool,
}

/// Read `pipe` to end of file. Keep (and offer to the session) at most `cap` bytes,
/// discard the rest, so the child never blocks on a full pipe and memory stays bounded.
fn drain(
    mut pipe: Box<dyn Read + Send>,
    cap: usize,
    stream: OutputStream,
    session: Option<&ObservationSession>,
) -> io::Result<Capture> {
    let mut capture = Capture {
        bytes: Vec::with_capacity(cap.min(READ_SIZE)),
        truncated: false,
    };
    let mut buffer = vec![0u8; READ_SIZE];
    loop {
        let read = match pipe.read(&mut buffer) {
            Ok(0) => return Ok(capture),
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        let kept = (cap - capture.bytes.len()).min(read);
        if kept > 0 {
            capture.bytes.extend_from_slice(&buffer[..kept]);
            if let Some(session) = session {
                session.offer(stream, &buffer[..kept]);
            }
        }
        capture.truncated |= kept < read;
    }
}

#[derive(Default)]
struct State {
    /// Set by the reaper once the child exited and both pipes were drained.
    completion: Option<Result<Completion, String>>,
    /// The leader has been reaped: its pid (and group id) may be reused, never signal it.
    reaped: bool,
    /// Decided once, by the first of: completion seen by a waiter, time limit, cancel.
    outcome: Option<Result<ShellResult, RunError>>,
}

struct Completion {
    status: ExitStatus,
    stdout: Capture,
    stderr: Capture,
}

struct Inner {
    pgid: i32,
    session: Option<ObservationSession>,
    timeout: Option<Duration>,
    deadline: Option<Instant>,
    state: Mutex<State>,
    changed: Condvar,
}

impl Inner {
    /// Kill the group unless the leader was reaped already. Called under the state lock,
    /// which the reaper also holds while it reaps, so the group id is still ours.
    fn kill_locked(&self, state: &State) {
        if !state.reaped {
            kill_group(self.pgid);
        }
    }

    fn cancel(&self) {
        let mut state = lock(&self.state);
        if state.outcome.is_some() {
            return;
        }
        state.outcome = Some(Err(RunError::Cancelled));
        self.kill_locked(&state);
        if let Some(session) = &self.session {
            session.cancel();
        }
        self.changed.notify_all();
    }

    fn timed_out_result(&self) -> ShellResult {
        let seconds = self.timeout.map_or(0, |t| t.as_secs());
        ShellResult {
            exit_code: None,
            stdout: Vec::new(),
            stderr: format!("command timed out after {seconds}s").into_bytes(),
            stdout_truncated: false,
            stderr_truncated: false,
            timed_out: true,
        }
    }
}

/// The reaper thread: wait for the leader to exit (leaving it waitable, so its pid and
/// group id cannot be reused), wait for both pipes to be drained, then reap.
fn reap(inner: &Inner, mut child: Child, drains: Vec<JoinHandle<io::Result<Capture>>>) {
    let kept_waitable = sys::wait_exit_keep_waitable(child.id());
    let mut captures = drains.into_iter().map(|handle| match handle.join() {
        Ok(result) => result.map_err(|error| format!("reading the child's output: {error}")),
        Err(_) => Err("a pipe-draining thread panicked".to_string()),
    });
    let stdout = captures.next().unwrap_or_else(|| Ok(Capture::default()));
    let stderr = captures.next().unwrap_or_else(|| Ok(Capture::default()));
    let early_status = if kept_waitable {
        None
    } else {
        // No waitid here: reap outside the lock (this may block), accepting that the
        // group id is no longer protected afterwards.
        Some(child.wait())
    };
    let mut state = lock(&inner.state);
    let status = match early_status {
        Some(status) => status,
        None => child.wait(),
    };
    state.reaped = true;
    state.completion = Some(match (status, stdout, stderr) {
        (Ok(status), Ok(stdout), Ok(stderr)) => Ok(Completion {
            status,
            stdout,
            stderr,
        }),
        (Err(error), _, _) => Err(format!("waiting for the child: {error}")),
        (_, Err(error), _) | (_, _, Err(error)) => Err(error),
    });
    inner.changed.notify_all();
}

fn kill_and_reap(child: &mut Child, pgid: i32) {
    kill_group(pgid);
    let _ = child.kill();
    let _ = child.wait();
}

fn abandon(inner: &Inner, child: &mut Child, error: &io::Error) -> RunError {
    kill_and_reap(child, inner.pgid);
    if let Some(session) = &inner.session {
        session.cancel();
    }
    RunError::Failed(format!("cannot start a thread: {error}"))
}

fn kill_group(pgid: i32) {
    // Never 0 or 1 or negative: `kill(0)` is our own group, `kill(-1)` is everyone.
    if pgid > 1 {
        sys::kill_process_group(pgid);
    }
}

/// A started command. Wait for it, or cancel it through a [`Canceller`]. Dropping the
/// handle before it produced an outcome cancels the command (kills its group).
pub struct Running {
    inner: Arc<Inner>,
}

/// Cancels a started command from any thread. Cheap to clone.
#[derive(Clone)]
pub struct Canceller {
    inner: Arc<Inner>,
}

impl Canceller {
    /// Stop the command now: kill its process group, cancel observation (without
    /// waiting for a callback in flight). A no-op once it has an outcome.
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}

impl Running {
    /// The invocation ID, when observed.
    #[must_use]
    pub fn invocation(&self) -> Option<InvocationId> {
        self.inner
            .session
            .as_ref()
            .map(ObservationSession::invocation)
    }

    /// A handle that can cancel this command from another thread.
    #[must_use]
    pub fn canceller(&self) -> Canceller {
        Canceller {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Cancel the command (see [`Canceller::cancel`]).
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    /// Wait for the outcome (completion, time limit or cancellation).
    ///
    /// # Errors
    /// Cancelled, or reading the output failed.
    pub fn wait(&self) -> Result<ShellResult, RunError> {
        loop {
            if let Some(outcome) = self.wait_for(None) {
                return outcome;
            }
        }
    }

    /// Wait at most `limit` (forever when `None`); `None` when the command has no
    /// outcome yet. The time limit is enforced by whoever waits.
    pub fn wait_for(&self, limit: Option<Duration>) -> Option<Result<ShellResult, RunError>> {
        let inner = &*self.inner;
        let give_up = limit.and_then(|l| Instant::now().checked_add(l));
        let mut state = lock(&inner.state);
        loop {
            if let Some(outcome) = &state.outcome {
                return Some(outcome.clone());
            }
            if let Some(completion) = state.completion.take() {
                let outcome = match completion {
                    Ok(done) => {
                        let result = ShellResult {
                            exit_code: Some(done.status.code().unwrap_or(-1)),
                            stdout: done.stdout.bytes,
                            stderr: done.stderr.bytes,
                            stdout_truncated: done.stdout.truncated,
                            stderr_truncated: done.stderr.truncated,
                            timed_out: false,
                        };
                        // Only now, with the result built, may the observer be told it
                        // has seen everything; delivery continues without us.
                        if let Some(session) = &inner.session {
                            session.finish();
                        }
                        Ok(result)
                    }
                    Err(why) => {
                        if let Some(session) = &inner.session {
                            session.cancel();
                        }
                        Err(RunError::Failed(why))
                    }
                };
                state.outcome = Some(outcome.clone());
                inner.changed.notify_all();
                return Some(outcome);
            }
            let now = Instant::now();
            if inner.deadline.is_some_and(|deadline| now >= deadline) {
                inner.kill_locked(&state);
                if let Some(session) = &inner.session {
                    session.cancel();
                }
                let outcome = Ok(inner.timed_out_result());
                state.outcome = Some(outcome.clone());
                inner.changed.notify_all();
                return Some(outcome);
            }
            if give_up.is_some_and(|g| now >= g) {
                return None;
            }
            let until = match (inner.deadline, give_up) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            state = match until {
                Some(until) => {
                    inner
                        .changed
                        .wait_timeout(state, until.saturating_duration_since(now))
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => inner
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.inner.cancel();
    }
}

/// The two system calls std does not wrap, declared by hand (std only, no libc crate).
mod sys {
    use std::ffi::c_int;

    extern "C" {
        fn kill(pid: c_int, sig: c_int) -> c_int;
        #[cfg(any(target_os = "linux", target_os = "android", target_os = "macos"))]
        fn waitid(idtype: c_int, id: u32, infop: *mut u8, options: c_int) -> c_int;
    }

    const SIGKILL: c_int = 9;

    /// SIGKILL every process in the group `pgid` (which must be > 1).
    pub(super) fn kill_process_group(pgid: i32) {
        debug_assert!(pgid > 1);
        // SAFETY: `kill` takes plain integers and touches no memory of ours.
        unsafe {
            kill(-pgid, SIGKILL);
        }
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    mod consts {
        pub const P_PID: i32 = 1;
        pub const WEXITED: i32 = 0x0000_0004;
        pub const WNOWAIT: i32 = 0x0100_0000;
    }
    #[cfg(target_os = "macos")]
    mod consts {
        pub const P_PID: i32 = 1;
        pub const WEXITED: i32 = 0x0000_0004;
        pub const WNOWAIT: i32 = 0x0000_0020;
    }

    /// Block until the child `pid` has exited, without reaping it. `false` when that is
    /// not possible here (the caller then reaps the ordinary way).
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "macos"))]
    pub(super) fn wait_exit_keep_waitable(pid: u32) -> bool {
        // siginfo_t is 128 bytes on Linux and 104 on macOS; this buffer is larger and
        // suitably aligned for either.
        let mut info = [0u64; 32];
        loop {
            // SAFETY: `info` is writable, larger than siginfo_t and 8-byte aligned.
            let rc = unsafe {
                waitid(
                    consts::P_PID,
                    pid,
                    info.as_mut_ptr().cast::<u8>(),
                    consts::WEXITED | consts::WNOWAIT,
                )
            };
            if rc == 0 {
                return true;
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return false;
            }
        }
    }

    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos")))]
    pub(super) fn wait_exit_keep_waitable(_pid: u32) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["/bin/sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn exit_code_streams_and_caps() {
        let runner = ShellRunner::new(5);
        let result = runner
            .run(
                &sh("printf 'hello world'; printf e >&2; exit 7"),
                RunOptions::new(),
            )
            .unwrap();
        assert_eq!(result.exit_code, Some(7));
        assert_eq!(result.stdout, b"hello");
        assert!(result.stdout_truncated);
        assert_eq!(result.stderr, b"e");
        assert!(!result.stderr_truncated);
        assert!(!result.timed_out);
    }

    #[test]
    fn observer_sees_the_capped_prefix_then_finish() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let runner = ShellRunner::new(4);
        let result = runner
            .run(
                &sh("printf long-output"),
                RunOptions::new().observer(Arc::new(
                    move |_: InvocationId, _: OutputStream, chunk: &[u8]| {
                        lock(&sink).extend_from_slice(chunk);
                    },
                )),
            )
            .unwrap();
        assert!(runner.wait_idle(Duration::from_secs(2)));
        assert_eq!(result.stdout, b"long");
        assert_eq!(*lock(&seen), b"long");
    }

    #[test]
    fn timeout_kills_a_backgrounded_grandchild_and_returns_promptly() {
        let runner = ShellRunner::new(1024);
        let started = Instant::now();
        let result = runner
            .run(
                &sh("sleep 30 & echo started; wait"),
                RunOptions::new().timeout(Some(Duration::from_millis(300))),
            )
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(result.timed_out);
        assert_eq!(result.exit_code, None);
        assert_eq!(result.stderr, b"command timed out after 0s");
    }

    #[test]
    fn refused_and_missing_take_no_id() {
        let runner = ShellRunner::new(16).with_policy(Arc::new(|argv: &[String]| {
            (argv.first().map(String::as_str) == Some("/bin/false")).then(|| "no".to_string())
        }));
        let called = Arc::new(Mutex::new(false));
        let flag = Arc::clone(&called);
        let refused = runner.spawn(
            &["/bin/false".to_string()],
            RunOptions::new().on_invocation(move |_| *lock(&flag) = true),
        );
        assert!(matches!(refused, Err(RunError::Refused(_))));
        let missing = runner.spawn(
            &["/nonexistent/program".to_string()],
            RunOptions::new().observer(Arc::new(|_: InvocationId, _: OutputStream, _: &[u8]| {})),
        );
        assert!(matches!(missing, Err(RunError::Spawn(_))));
        assert!(!*lock(&called));
    }

    #[test]
    fn cancel_ends_a_hanging_command_at_once() {
        let runner = ShellRunner::new(16);
        let running = runner.spawn(&sh("sleep 30"), RunOptions::new()).unwrap();
        let canceller = running.canceller();
        let waiter = std::thread::spawn(move || running.wait());
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        canceller.cancel();
        assert_eq!(waiter.join().unwrap(), Err(RunError::Cancelled));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
