//! A shell-output observer for a coding agent's command runner, in plain Rust (std only).
//!
//! While a command runs, its output is shown live to an observer (a terminal pane, a
//! progress line) without giving that observer any say over the command: a slow, stuck
//! or panicking observer can neither stall the child nor change its result.
//!
//! - [`observer`]: the [`ShellOutputObserver`] trait and [`OutputStream`].
//! - [`ids`]: the one process-wide invocation counter.
//! - [`session`]: [`ObservationSession`], one per observed invocation: the phase, the
//!   per-stream budget, the unbounded queue and the presentation thread.
//! - [`runner`]: [`ShellRunner`], which spawns real processes and feeds a session.
//! - [`json`]: a small JSON reader/writer for the conformance binary.
//!
//! The design follows the observer of the `agent-bridle-tool-shell` crate; the README
//! lists where and how.

pub mod ids;
pub mod json;
pub mod observer;
pub mod runner;
pub mod session;

pub use ids::InvocationId;
pub use observer::{OutputStream, ShellOutputObserver};
pub use runner::{Canceller, RunError, RunOptions, Running, ShellResult, ShellRunner};
pub use session::{ObservationSession, Phase, Presenters};
