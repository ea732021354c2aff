"""A command runner that spawns real child processes, with optional live observation.

The runner owns the command's *result*: exit code, stdout and stderr each under the
output cap, truncation flags, timed-out flag. Observation (see :mod:`.session`)
is a side channel for presentation that can never change that result: the draining
threads copy every byte into the result's capture first, and only then offer it to the
session. So the result is identical with and without an observer, whatever it does.

Threads per invocation: two pipe-draining threads (stdout, stderr) that only capture and
offer, one waiter that reaps the child once both pipes are closed, and, when observed,
the session's presentation thread. The async caller only waits for the waiter's signal
(a self-pipe, so asyncio and trio wait the same way, without a thread pool): a time
limit or a cancellation kills the child's whole process group and stops observation at
once, without waiting for a callback that may be blocked.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, cast

import anyio

from seamspec.reference._shell_output.observer import (
    PROCESS_IDS,
    InvocationIds,
    OutputCallable,
    ShellInvocationId,
    ShellOutputObserver,
    ShellOutputStream,
    as_shell_observer,
)
from seamspec.reference._shell_output.session import ObservationSession

__all__ = ["CommandFailed", "CommandRefused", "ShellResult", "ShellRunner"]

#: Default output cap per stream (upstream's safe shell uses the same).
DEFAULT_OUTPUT_CAP = 1024 * 1024
#: How long a timed-out invocation waits for its killed process group to be gone.
KILL_GRACE = 5.0
#: Then how long it waits for end of file on the pipes: the group is gone, so only a
#: process that left it can still hold them, and the call does not wait for that one
#: (SOO-TIMEOUT: it returns at its limit, as upstream's outer timeout does).
PIPE_GRACE = 0.1
#: How often a timed-out invocation looks whether its killed group is gone.
GROUP_POLL = 0.005
#: Pipe buffer asked for (Linux; the default is 64 KiB). Bigger buffers mean fewer,
#: larger chunks: less locking and fewer thread wake-ups per byte.
PIPE_SIZE = 1024 * 1024
#: The pipe buffer assumed when the system cannot say (Linux's default).
DEFAULT_PIPE_SIZE = 64 * 1024

#: Returns a refusal reason for a command, or None to let it run.
Policy = Callable[[Sequence[str]], "str | None"]
#: Told the role ("drain") and invocation of each pipe-draining thread, on that thread.
ThreadHook = Callable[[str, "ShellInvocationId | None"], None]


class CommandRefused(Exception):
    """The policy refused the command before anything was spawned."""


class CommandFailed(Exception):
    """The command could not be run (for example the program does not exist)."""


@dataclass(frozen=True)
class ShellResult:
    """The authoritative outcome of one command, whatever any observer saw.

    ``exit_code`` is None when the time limit killed the command (``timed_out``); a
    negative code means a signal ended it otherwise. ``stdout``/``stderr`` are the first
    ``output_cap`` bytes of each stream; ``*_truncated`` says more were written.
    """

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool


class _Capture:
    """One stream of the result: the first ``cap`` bytes, and whether more came."""

    def __init__(self, cap: int) -> None:
        self._lock = threading.Lock()
        self._cap = cap
        self._data = bytearray()
        self.truncated = False

    def add(self, chunk: bytes | memoryview) -> None:
        with self._lock:
            room = self._cap - len(self._data)
            if room > 0:
                self._data += chunk[:room]
            if len(chunk) > room:
                self.truncated = True

    def value(self) -> bytes:
        with self._lock:
            return bytes(self._data)


class _Completion:
    """A one-shot signal from the waiter thread to the async caller, over a self-pipe.

    Whoever is last (the waiter setting it, or the caller giving up on it) closes the
    pipe, so a cancelled caller leaks no descriptor.
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        self._lock = threading.Lock()
        self._done = False
        self._abandoned = False

    def set(self) -> None:
        with self._lock:
            self._done = True
            if self._abandoned:
                self._close()
            else:
                os.write(self._write, b"x")

    async def wait(self) -> None:
        await anyio.wait_readable(self._read)

    def release(self) -> None:
        with self._lock:
            if self._done:
                self._close()
            else:
                self._abandoned = True

    def _close(self) -> None:
        os.close(self._read)
        os.close(self._write)


def _grow(pipe: IO[bytes]) -> int:
    """Ask for a bigger pipe buffer and return the size in effect (the read size).

    Not through ``Popen(pipesize=...)``: that raises when the per-user pipe quota is used
    up (many commands at once), and a command must not fail for a performance hint. The
    draining thread reads at most the pipe's size at once: a larger read cannot return
    more, and would only cost a larger buffer.
    """
    set_flag = getattr(fcntl, "F_SETPIPE_SZ", None)
    get_flag = getattr(fcntl, "F_GETPIPE_SZ", None)
    if set_flag is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(pipe.fileno(), set_flag, PIPE_SIZE)
    if get_flag is not None:
        with contextlib.suppress(OSError):
            return max(int(fcntl.fcntl(pipe.fileno(), get_flag)), 4096)
    return DEFAULT_PIPE_SIZE


class _ReadBuffer:
    """One buffer per pipe, read into again and again, for output nobody keeps whole.

    Unobserved output (or output past the observer's budget) is copied only into the
    capture, up to its cap, and then dropped: reading it into a fresh allocation each
    time would cost page faults, and for reads over glibc's mmap threshold a mapping of
    their own. Allocated on first use, so an observed command that never outgrows its
    budget does not pay for it.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._buffer: list[bytearray] = []
        self._view = memoryview(b"")

    def read(self, fd: int) -> memoryview:
        """Read what the pipe has (at most its size); valid until the next read."""
        if not self._buffer:
            self._buffer.append(bytearray(self._size))
            self._view = memoryview(self._buffer[0])
        return self._view[: os.readv(fd, self._buffer)]


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the child and everything it started (it leads its own process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def group_alive(process: subprocess.Popen[bytes]) -> bool:
    """Whether any process of the child's process group is left (a zombie counts)."""
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ShellRunner:
    """Runs commands as child processes; one runner serves any number of invocations.

    ``output_cap`` bounds each stream of the result; ``live_budget`` bounds each stream
    of what an observer sees (default: the output cap, as upstream). ``policy`` can
    refuse a command before it is spawned. ``ids`` is the invocation counter (default:
    the process-wide one). ``thread_hook`` is instrumentation: it is called on each
    pipe-draining thread as it starts (the conformance kit uses it to label threads).
    """

    #: The session type :meth:`observe` creates (a seam for tests and the kit's mutants).
    session_class: type[ObservationSession] = ObservationSession

    def __init__(
        self,
        *,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        live_budget: int | None = None,
        policy: Policy | None = None,
        ids: InvocationIds | None = None,
        thread_hook: ThreadHook | None = None,
    ) -> None:
        self.output_cap = output_cap
        self.live_budget = output_cap if live_budget is None else live_budget
        self._policy = policy
        self._ids = PROCESS_IDS if ids is None else ids
        self._thread_hook = thread_hook
        self._lock = threading.Lock()
        self._sessions: list[ObservationSession] = []

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: ShellOutputObserver | OutputCallable | None = None,
        timeout: float | None = None,
        on_invocation: Callable[[ShellInvocationId], None] | None = None,
    ) -> ShellResult:
        """Run ``argv`` to completion (or until ``timeout`` seconds) and return its result.

        Returns without waiting for the observer: delivery of what is queued, and then
        ``on_finish``, may continue afterwards on the presentation thread.
        """
        argv = list(argv)
        self._check_policy(argv)
        session = None
        if observer is not None:
            session = self.observe(observer)
            if on_invocation is not None:
                on_invocation(session.invocation)
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            self._on_spawn_error(session)
            raise CommandFailed(f"cannot run {argv[0]!r}: {error}") from error
        out, err = _Capture(self.output_cap), _Capture(self.output_cap)
        done = _Completion()
        readers = [
            self._thread(self._drain, process.stdout, ShellOutputStream.STDOUT, out, session),
            self._thread(self._drain, process.stderr, ShellOutputStream.STDERR, err, session),
        ]
        self._thread(self._reap, process, readers, done)
        timed_out = False
        try:
            with anyio.move_on_after(math.inf if timeout is None else timeout) as limit:
                await done.wait()
            if limit.cancelled_caught:
                timed_out = True
                self._on_timeout(session)
                self._kill(process)
                with anyio.CancelScope(shield=True):
                    await self._after_kill(process, done)
        except BaseException:
            # Cancelled by the caller (or interrupted): observation ends now; the waiter
            # thread reaps the killed child and closes everything on its own.
            self._stop(session)
            self._kill(process)
            raise
        finally:
            done.release()
        if not timed_out:
            self._complete(session)
        return ShellResult(
            exit_code=None if timed_out else process.returncode,
            stdout=out.value(),
            stderr=err.value(),
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
            timed_out=timed_out,
        )

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every presentation thread this runner started has ended.

        Not needed in production (nothing waits for observers); tests and the kit use it
        to know that a trace is complete.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            sessions = list(self._sessions)
        ok = all(s.join(max(0.0, deadline - time.monotonic())) for s in sessions)
        with self._lock:
            self._sessions = [s for s in self._sessions if not s.join(0)]
        return ok

    # -- steps, one decision each --------------------------------------------------------

    def _check_policy(self, argv: list[str]) -> None:
        """Refuse before anything happens: no process, no ID, no callback (SOO-DENIED)."""
        reason = self._policy(argv) if self._policy is not None else None
        if reason is not None:
            raise CommandRefused(reason)

    def observe(self, observer: ShellOutputObserver | OutputCallable) -> ObservationSession:
        """Open a session (taking the next ID) for output this runner does not read itself.

        :meth:`run` uses it for every observed command; an embedding that produces output
        some other way can feed the session with ``offer`` and end it with ``finish`` or
        ``cancel``, and gets the same budget, ordering and thread guarantees.
        """
        session = self.session_class(
            self._ids.take(), as_shell_observer(observer), self.live_budget
        )
        with self._lock:
            self._sessions = [s for s in self._sessions if not s.join(0)]
            self._sessions.append(session)
        return session

    def _complete(self, session: ObservationSession | None) -> None:
        """Normal completion: every chunk was offered already; queue the finish notice."""
        if session is not None:
            session.finish()

    def _stop(self, session: ObservationSession | None) -> None:
        """Cancellation, time limit or error: observation ends without ``on_finish``."""
        if session is not None:
            session.cancel()

    def _on_timeout(self, session: ObservationSession | None) -> None:
        """The time limit behaves as a cancellation (SOO-TIMEOUT)."""
        self._stop(session)

    def _kill(self, process: subprocess.Popen[bytes]) -> None:
        """End the command: its whole process group, grandchildren included (SOO-TIMEOUT-GROUP)."""
        kill_group(process)

    @staticmethod
    async def _after_kill(process: subprocess.Popen[bytes], done: _Completion) -> None:
        """After a time limit's kill: wait for the group, then only briefly for the pipes.

        The killed group is gone in milliseconds, and what it wrote is then in the pipes,
        which close at once unless a process outside the group holds them. Waiting for
        their end of file as long as for the group would make such a process decide when
        the call returns; the readers go on without the caller and end on their own.
        """
        with anyio.move_on_after(KILL_GRACE):
            while group_alive(process):
                with anyio.move_on_after(GROUP_POLL):
                    await done.wait()
                    return
        with anyio.move_on_after(PIPE_GRACE):
            await done.wait()

    def _on_spawn_error(self, session: ObservationSession | None) -> None:
        """Observation began but the command could not start: no ``on_finish``."""
        self._stop(session)

    def _drain(
        self,
        pipe: IO[bytes],
        stream: ShellOutputStream,
        capture: _Capture,
        session: ObservationSession | None,
    ) -> None:
        if self._thread_hook is not None:
            self._thread_hook("drain", None if session is None else session.invocation)
        fd = pipe.fileno()
        try:
            size = _grow(pipe)
            reused = _ReadBuffer(size)
            while True:
                chunk: bytes | memoryview
                if session is not None and session.accepting(stream):
                    # A fresh ``bytes`` per read, which the session queues as it is.
                    chunk = os.read(fd, size)
                else:
                    chunk = reused.read(fd)
                if not chunk:
                    break
                capture.add(chunk)
                if session is not None:
                    # offer takes any bytes-like chunk and copies what it keeps (it is
                    # typed bytes so that subclasses written against bytes still fit).
                    session.offer(stream, cast(bytes, chunk))
        finally:
            pipe.close()

    @staticmethod
    def _reap(
        process: subprocess.Popen[bytes], readers: list[threading.Thread], done: _Completion
    ) -> None:
        process.wait()
        for reader in readers:
            reader.join()
        done.set()

    @staticmethod
    def _thread(target: Callable[..., None], *args: object) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        return thread
