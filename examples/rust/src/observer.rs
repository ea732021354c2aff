//! The observer seam: what a presentation layer implements to watch a command's output.

use crate::ids::InvocationId;

/// Which pipe a chunk was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputStream {
    /// The child's standard output.
    Stdout,
    /// The child's standard error.
    Stderr,
}

impl OutputStream {
    /// `"stdout"` or `"stderr"`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }

    /// The stream with that name, if it is one.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "stdout" => Some(Self::Stdout),
            "stderr" => Some(Self::Stderr),
            _ => None,
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Self::Stdout => 0,
            Self::Stderr => 1,
        }
    }
}

/// Watches the output of running commands. Presentation only: nothing an observer
/// does (block, panic, take its time) changes a command or its result.
///
/// Every call for one invocation happens on that invocation's own presentation thread,
/// one at a time and in queue order; never on a thread that reads the pipes and never on
/// the caller's thread. Two invocations have two presentation threads, so one observer
/// shared by both may be called concurrently and must guard its own state.
///
/// `chunk` is never empty and is exactly what was read from the pipe (it may end inside a
/// UTF-8 sequence). A panic in `on_output` ends the observation of that invocation only.
pub trait ShellOutputObserver: Send + Sync + 'static {
    /// A non-empty chunk of raw output.
    fn on_output(&self, invocation: InvocationId, stream: OutputStream, chunk: &[u8]);

    /// The invocation completed normally and every chunk accepted before that has been
    /// delivered. Runs after the last `on_output`, on the same thread. Never called after
    /// a cancellation, a time limit, a failure, or a panicking `on_output`. A panic here is
    /// contained. The default does nothing.
    fn on_finish(&self, _invocation: InvocationId) {}
}

/// A plain closure is an observer without a finish notice.
impl<F> ShellOutputObserver for F
where
    F: Fn(InvocationId, OutputStream, &[u8]) + Send + Sync + 'static,
{
    fn on_output(&self, invocation: InvocationId, stream: OutputStream, chunk: &[u8]) {
        self(invocation, stream, chunk);
    }
}
