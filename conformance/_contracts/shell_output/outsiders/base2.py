"""An outsider's shell-output observer runner: batch 2's own implementation.

Outsider batch 2 (see ``__init__``): written from docs/contracts/shell-output-observer.md,
the seed page, CONTRACTS.md, usage.md and the driver's docstring, without reading the
reference, its adapter or the scenarios. Kept as written (the original ``base.py`` had
sha256 88f8eab9e987d1f2b40ec157f10f47d9db128876379049d47f87c423cdef5a8f); only imports,
typing, two rewrites the linter asked for that keep the behaviour (``contextlib.suppress``,
a split ``assert``) and the adapter builders at the end were touched. It conforms to
every scenario, and it is the control the batch's variants (``batch2.py``) are judged
against.

Pieces, per observed invocation:

* ``Session``: phase (ACTIVE / FINISHED / CANCELLED), one live budget per stream, an
  unbounded FIFO queue and one presentation thread that calls the observer.
* ``Shell.run``: policy check, ID, spawn (own process group), two pipe-draining threads
  that copy into the result capture and offer to the session, a waiter thread that
  reaps the child once both pipes are closed; the async caller polls the waiter's event,
  enforces the time limit and handles cancellation.

One fix by the kit, found by ``soo-timeout-detached-grandchild-holds-pipes`` (a
grandchild outside the process group holds the pipes after the time limit's kill): after
that kill the base waited for end of file on the pipes up to 2 s (``PIPE_GRACE``), so
the call returned only when that grandchild let go, not at its limit (SOO-TIMEOUT). It
now waits only until the killed group is gone and then briefly for the pipes
(``at_limit.wait_after_kill``); the wait as written is kept, as the mutant
``out-soo-base2-timeout-waits-for-pipes`` (``waits_for_pipes`` at the end of this file).
"""

from __future__ import annotations

import collections
import contextlib
import enum
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver
from seamspec.conformance._contracts.shell_output.outsiders.at_limit import wait_after_kill
from seamspec.conformance._core.python_adapter import PythonAdapter

log = logging.getLogger("fresh_soo.shell")
log.addHandler(logging.NullHandler())

READ_SIZE = 64 * 1024
#: After a time limit killed the group, how long the caller waits for the pipes to close.
PIPE_GRACE = 2.0
#: Coalescing: once this many entries are queued, a chunk smaller than MERGE_SMALL is
#: appended to the newest entry of its stream, while that stays within MERGE_MAX.
MERGE_BEHIND = 16
MERGE_SMALL = 4096
MERGE_MAX = 256 * 1024


class ShellOutputStream(enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


def _stream(value: Any) -> ShellOutputStream:
    if isinstance(value, ShellOutputStream):
        return value
    return ShellOutputStream(str(getattr(value, "value", value)))


class CommandRefused(Exception):
    """The policy refused the command before anything was spawned."""


class _CallableObserver:
    def __init__(self, function: Callable[..., Any]) -> None:
        self._function = function

    def on_output(self, invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        self._function(invocation, stream, chunk)

    def on_finish(self, invocation: int) -> None:
        return None


def as_shell_observer(observer: Any) -> Any:
    if hasattr(observer, "on_output"):
        return observer
    if callable(observer):
        return _CallableObserver(observer)
    raise TypeError(f"not a shell-output observer: {observer!r}")


class InvocationIds:
    def __init__(self, start: int = 1) -> None:
        self._lock = threading.Lock()
        self._next = start

    def take(self) -> int:
        with self._lock:
            value = self._next
            self._next += 1
            return value


# --- the observation session ------------------------------------------------------------

ACTIVE, FINISHED, CANCELLED = "active", "finished", "cancelled"
_FINISH = object()


class Session:
    """Phase, live budget per stream, FIFO queue, presentation thread."""

    def __init__(self, invocation: int, observer: Any, budget: int) -> None:
        self.invocation = invocation
        self.source = observer
        self._observer = as_shell_observer(observer)
        self._budget = max(0, int(budget))
        self._left = {s: self._budget for s in ShellOutputStream}
        self._cond = threading.Condition()
        self._queue: collections.deque[Any] = collections.deque()
        self.phase = ACTIVE
        self._disabled = False
        self._busy = False
        self._ended = False
        self._thread = threading.Thread(
            target=self._present, name=f"soo-present-{invocation}", daemon=True
        )
        self._thread.start()

    # called from draining threads (or the kit's caller thread)
    def offer(self, stream: Any, chunk: bytes | memoryview) -> None:
        stream = _stream(stream)
        if not chunk:
            return
        with self._cond:
            if self.phase != ACTIVE or self._disabled:
                return
            left = self._left[stream]
            if left <= 0:
                return
            piece = self._keep(chunk, left)
            self._left[stream] = left - len(piece)
            self._enqueue(stream, piece)
            self._cond.notify()

    @staticmethod
    def _keep(chunk: Any, left: int) -> bytes:
        """What the queue keeps of an accepted chunk: its first ``left`` bytes, copied
        (the drain reads into one reused buffer)."""
        return bytes(chunk[:left])

    def _enqueue(self, stream: ShellOutputStream, piece: Any) -> None:
        """Append under the lock; once the observer is behind, coalesce small chunks
        into the newest queued entry of the same stream (bounded in size)."""
        if len(self._queue) >= MERGE_BEHIND and len(piece) < MERGE_SMALL:
            last = self._queue[-1]
            if last is not _FINISH and last[0] is stream and len(last[1]) + len(piece) <= MERGE_MAX:
                if not isinstance(last[1], bytearray):
                    last[1] = bytearray(last[1])
                last[1] += piece
                return
        self._queue.append([stream, piece])

    def finish(self) -> None:
        with self._cond:
            if self.phase != ACTIVE:
                return
            self.phase = FINISHED
            if not self._disabled:
                self._queue.append(_FINISH)
            self._cond.notify()

    def cancel(self) -> None:
        with self._cond:
            if self.phase != ACTIVE:
                return
            self.phase = CANCELLED
            self._queue.clear()
            self._cond.notify()

    def _failed(self) -> None:
        """on_output raised: this invocation's observation is over (nothing else)."""

    def idle(self) -> bool:
        with self._cond:
            return self._ended or (not self._busy and not self._queue)

    def _next_item(self) -> Any:
        with self._cond:
            while True:
                if self._disabled or self.phase == CANCELLED:
                    return None
                if self._queue:
                    self._busy = True
                    return self._queue.popleft()
                if self.phase != ACTIVE:
                    return None
                self._cond.wait()

    def _present(self) -> None:
        try:
            while True:
                item = self._next_item()
                if item is None:
                    return
                try:
                    if item is _FINISH:
                        finish = getattr(self._observer, "on_finish", None)
                        if finish is not None:
                            try:
                                finish(self.invocation)
                            except Exception:
                                log.exception("on_finish of invocation %s raised", self.invocation)
                        return
                    stream, chunk = item
                    if isinstance(chunk, bytearray):
                        chunk = bytes(chunk)
                    try:
                        self._observer.on_output(self.invocation, stream, chunk)
                    except Exception:
                        log.exception("on_output of invocation %s raised", self.invocation)
                        with self._cond:
                            self._disabled = True
                            self._queue.clear()
                        self._failed()
                        return
                finally:
                    with self._cond:
                        self._busy = False
        finally:
            with self._cond:
                self._ended = True
                self._queue.clear()


# --- the process runner -------------------------------------------------------------------


@dataclass
class ShellResult:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool


class _Capture:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes | memoryview) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def truncated(self) -> bool:
        return self.total > self.cap


class Shell:
    session_class: type[Session] = Session

    def __init__(
        self,
        *,
        output_cap: int,
        live_budget: int | None = None,
        policy: Callable[[Sequence[str]], str | None] | None = None,
        thread_hook: Callable[[str, int | None], None] | None = None,
        ids: InvocationIds | None = None,
    ) -> None:
        self.output_cap = output_cap
        self.live_budget = output_cap if live_budget is None else live_budget
        self.policy = policy
        self.thread_hook = thread_hook
        self.ids = ids or InvocationIds()
        self._sessions: list[Session] = []
        self._lock = threading.Lock()

    # sessions -------------------------------------------------------------------------
    def _open(self, observer: Any) -> Session:
        session = self.session_class(self.ids.take(), observer, self.live_budget)
        with self._lock:
            self._sessions.append(session)
        return session

    def observe(self, observer: Any) -> Session:
        return self._open(observer)

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                sessions = list(self._sessions)
            if all(s.idle() for s in sessions):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    # processes -------------------------------------------------------------------------
    def _drain(
        self, fd: int, capture: _Capture, stream: ShellOutputStream, session: Session | None
    ) -> None:
        if self.thread_hook is not None:
            self.thread_hook("drain", getattr(session, "invocation", None))
        buffer = bytearray(READ_SIZE)
        view = memoryview(buffer)
        try:
            while True:
                try:
                    n = os.readv(fd, [buffer])
                except OSError:
                    break
                if n == 0:
                    break
                chunk = view[:n]
                capture.add(chunk)
                if session is not None:
                    session.offer(stream, chunk)
        finally:
            os.close(fd)

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def _end_group_on_timeout(self, proc: subprocess.Popen[bytes]) -> None:
        self._kill_group(proc)

    def _attach(self, observer: Any, on_invocation: Callable[[int], None] | None) -> Session | None:
        """After admission, before spawning: take an ID and open the session."""
        if observer is None:
            return None
        session = self._open(observer)
        if on_invocation is not None:
            on_invocation(session.invocation)
        return session

    @staticmethod
    def _waiter(
        proc: subprocess.Popen[bytes], drains: list[threading.Thread], done: threading.Event
    ) -> None:
        """Completion is both pipes at end of file, then the child reaped."""
        for d in drains:
            d.join()
        proc.wait()
        done.set()

    async def _after_limit_kill(
        self, proc: subprocess.Popen[bytes], drains: list[threading.Thread]
    ) -> None:
        """The kit's fix: return once the killed group is gone, not at end of file."""
        await wait_after_kill(proc, lambda: not any(d.is_alive() for d in drains))

    def _timed_out_result(self, out: _Capture, err: _Capture) -> ShellResult:
        return ShellResult(
            exit_code=None,
            stdout=bytes(out.data),
            stderr=bytes(err.data),
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
            timed_out=True,
        )

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> ShellResult:
        argv = list(argv)
        if self.policy is not None:
            reason = self.policy(argv)
            if reason is not None:
                raise CommandRefused(reason)
        session = self._attach(observer, on_invocation)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except BaseException:
            if session is not None:
                session.cancel()
            raise
        assert proc.stdout is not None
        assert proc.stderr is not None
        out_fd = os.dup(proc.stdout.fileno())
        err_fd = os.dup(proc.stderr.fileno())
        proc.stdout.close()
        proc.stderr.close()
        out = _Capture(self.output_cap)
        err = _Capture(self.output_cap)
        drains = [
            threading.Thread(
                target=self._drain,
                args=(out_fd, out, ShellOutputStream.STDOUT, session),
                daemon=True,
            ),
            threading.Thread(
                target=self._drain,
                args=(err_fd, err, ShellOutputStream.STDERR, session),
                daemon=True,
            ),
        ]
        done = threading.Event()
        for d in drains:
            d.start()
        threading.Thread(target=self._waiter, args=(proc, drains, done), daemon=True).start()

        deadline = None if timeout is None else time.monotonic() + timeout

        def expired() -> bool:
            return deadline is not None and time.monotonic() >= deadline

        timed_out = False
        try:
            delay = 0.001
            while not done.is_set():
                if expired():
                    timed_out = True
                    break
                await anyio.sleep(delay)
                delay = min(delay * 2, 0.01)
            if not timed_out:
                if session is not None:
                    session.finish()
                # the result is built from the captures: both drains must be done
                while any(d.is_alive() for d in drains):
                    if expired():
                        timed_out = True
                        break
                    await anyio.sleep(0.002)
        except BaseException:
            # cancelled (or anything else): stop observing at once, end the group
            if session is not None:
                session.cancel()
            self._kill_group(proc)
            raise

        if timed_out:
            if session is not None:
                session.cancel()
            self._end_group_on_timeout(proc)
            await self._after_limit_kill(proc, drains)
            return self._timed_out_result(out, err)

        return ShellResult(
            exit_code=proc.returncode,
            stdout=bytes(out.data),
            stderr=bytes(err.data),
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
            timed_out=False,
        )


# --- the adapter ------------------------------------------------------------------------


class Implementation:
    """What the kit's ShellOutputDriver asks for; ``shell_class`` is where a variant differs."""

    features: tuple[str, ...] = ("soo-process", "soo-session", "soo-live-budget")

    def __init__(self, shell_class: type[Shell] = Shell) -> None:
        self.shell_class = shell_class

    def make_shell(
        self,
        *,
        output_cap: int,
        live_budget: int,
        policy: Callable[[Sequence[str]], str | None],
        thread_hook: Callable[[str, int | None], None],
    ) -> Shell:
        return self.shell_class(
            output_cap=output_cap,
            live_budget=live_budget,
            policy=policy,
            thread_hook=thread_hook,
            ids=InvocationIds(),
        )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The outsider's base as an adapter (the control of the batch)."""
    return PythonAdapter(
        name="soo-outsider-base-2",
        version="0.1",
        drivers=[ShellOutputDriver(Implementation())],
        backend=backend,
    )


# --- the base as written, before the kit's fix (see the docstring) -----------------------


class WaitsForPipesShell(Shell):
    """After the time limit's group kill, waits up to 2 s for end of file on the pipes."""

    async def _after_limit_kill(
        self, proc: subprocess.Popen[bytes], drains: list[threading.Thread]
    ) -> None:
        grace = time.monotonic() + PIPE_GRACE
        while any(d.is_alive() for d in drains) and time.monotonic() < grace:
            await anyio.sleep(0.005)


def waits_for_pipes() -> Implementation:
    """The base as written (the mutant ``out-soo-base2-timeout-waits-for-pipes``)."""
    return Implementation(WaitsForPipesShell)
