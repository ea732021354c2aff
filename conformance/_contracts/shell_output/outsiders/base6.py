"""An outsider's shell-output observer runner: batch 6's own implementation.

Outsider batch 6 (soo6, see ``__init__``): written from docs/contracts/shell-output-observer.md
(without its boundary checklist, oracle coverage and outsider sections), the seed page,
CONTRACTS.md, usage.md, scenarios.md and the driver's docstring, without reading the
reference, its adapter, the oracle or the scenarios. Kept as written (the original
``b6soo_base.py`` had sha256
8ab0385c0a03b7f7b5c3bfea02c615db2856e4ec959be74162e108f48f8ab9bd); only the imports, typing,
the linter's rewrites that keep the behaviour, and the adapter builder at the end were
touched. It conforms to every scenario under both profiles (93 of 93, the outsider's own
runs against main f94b013), and it is the control the batch's variants (``batch6.py``)
are judged against.

The outsider's own summary of the design (not the reference's):

One observed invocation = one ``Session``: a phase (ACTIVE / FINISHED / CANCELLED /
DISABLED), a live budget per stream, an unbounded FIFO queue and one presentation
thread that calls the observer. Pipe-draining threads only copy bytes into the result
capture and offer them to the session (a lock and an append). The async caller polls a
completion event set by a waiter thread (works on asyncio and trio alike).

The pieces are small methods so that the variants file can change one of them.

One fix by the kit, found by ``soo-timeout-detached-grandchild-holds-pipes`` (a
grandchild outside the process group holds the pipes after the time limit's kill): after
that kill the base waited for end of file on the pipes up to 5 s (``KILL_WAIT``), so the
call returned only when that grandchild let go, not at its limit (SOO-TIMEOUT). It now
waits only until the killed group is gone and then briefly for the pipes
(``at_limit.wait_after_kill``); the wait as written is kept, as the mutant
``out-soo-base6-timeout-waits-for-pipes`` (``waits_for_pipes`` at the end of this file).
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver
from seamspec.conformance._contracts.shell_output.outsiders.at_limit import wait_after_kill
from seamspec.conformance._core.python_adapter import PythonAdapter

log = logging.getLogger("b6soo.shell")
log.addHandler(logging.NullHandler())

#: Once this many entries wait in a session's queue, small chunks are merged into their
#: stream's newest queued entry (chunk boundaries are not promised, bytes and order are).
COALESCE_AFTER = 16
COALESCE_SMALL = 64 * 1024
COALESCE_MAX = 256 * 1024
#: Read size of the pipe-draining threads.
READ_SIZE = 64 * 1024
#: How often the async caller looks at the completion event.
POLL = 0.004
#: After a kill, how long the caller waits at most for the pipes to close.
KILL_WAIT = 5.0


class ShellOutputStream(enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


def _stream(stream: object) -> ShellOutputStream:
    if isinstance(stream, ShellOutputStream):
        return stream
    return ShellOutputStream(str(getattr(stream, "value", stream)))


class CommandRefused(Exception):
    """The policy refused the command before anything was spawned."""


class CommandFailed(Exception):
    """The command could not be spawned."""


@dataclass
class ShellResult:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool


class _Finish:
    """The end-of-output marker queued behind the chunks on normal completion."""


FINISH = _Finish()


class _Entry:
    __slots__ = ("parts", "size", "stream")

    def __init__(self, stream: ShellOutputStream, chunk: bytes) -> None:
        self.stream = stream
        self.parts = [chunk]
        self.size = len(chunk)

    def data(self) -> bytes:
        return self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)


ACTIVE, FINISHED, CANCELLED, DISABLED = "ACTIVE", "FINISHED", "CANCELLED", "DISABLED"


class Session:
    """Observation of one invocation."""

    def __init__(self, shell: Shell, observer: Any, invocation: int, budget: int) -> None:
        self.shell = shell
        self.invocation = invocation
        if hasattr(observer, "on_output"):
            self._on_output: Callable[[int, ShellOutputStream, bytes], None] = observer.on_output
            self._on_finish: Callable[[int], None] | None = getattr(observer, "on_finish", None)
        else:  # a plain callable: on_output only
            self._on_output = observer
            self._on_finish = None
        self._observer = observer
        self._cond = threading.Condition()
        self._queue: deque[_Entry | _Finish] = deque()
        self._phase = ACTIVE
        self._busy = False
        self._budget = budget
        self._left = {ShellOutputStream.STDOUT: budget, ShellOutputStream.STDERR: budget}
        self._thread = self._start_thread()

    # -- the caller's side -------------------------------------------------------------

    def offer(self, stream: object, chunk: bytes) -> None:
        """Account and enqueue; never blocks on the observer."""
        s = _stream(stream)
        if not chunk:
            return
        chunk = bytes(chunk)
        with self._cond:
            if self._phase != ACTIVE:
                return
            chunk = self._accept(s, chunk)
            if not chunk:
                return
            self._enqueue(s, chunk)
            self._cond.notify_all()

    def finish(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = FINISHED
            self._queue.append(FINISH)
            self._cond.notify_all()

    def cancel(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return  # first of finish and cancel wins
            self._phase = CANCELLED
            self._queue.clear()
            self._cond.notify_all()

    def idle(self) -> bool:
        with self._cond:
            return not self._queue and not self._busy

    # -- budget and queue (called under the lock) --------------------------------------

    def _accept(self, s: ShellOutputStream, chunk: bytes) -> bytes:
        """Cut the chunk to what is left of its stream's live budget."""
        left = self._left[s]
        if left <= 0:
            return b""
        if len(chunk) > left:
            chunk = chunk[:left]
        self._left[s] = left - len(chunk)
        return chunk

    def _enqueue(self, s: ShellOutputStream, chunk: bytes) -> None:
        if len(self._queue) >= COALESCE_AFTER and len(chunk) < COALESCE_SMALL:
            for entry in reversed(self._queue):
                if isinstance(entry, _Entry) and entry.stream is s:
                    if entry.size + len(chunk) <= COALESCE_MAX:
                        entry.parts.append(chunk)
                        entry.size += len(chunk)
                        return
                    break
        self._queue.append(_Entry(s, chunk))

    # -- the presentation thread -------------------------------------------------------

    def _start_thread(self) -> threading.Thread:
        thread = threading.Thread(
            target=self._present, name=f"b6soo-present-{self.invocation}", daemon=True
        )
        thread.start()
        return thread

    def _next(self) -> _Entry | _Finish | None:
        """The next thing to deliver, or None when this thread is to end (under the lock)."""
        while not self._queue and self._phase == ACTIVE:
            self._cond.wait()
        if self._phase in (CANCELLED, DISABLED) or not self._queue:
            return None
        self._busy = True
        return self._queue.popleft()

    def _present(self) -> None:
        while True:
            with self._cond:
                item = self._next()
            if item is None:
                return
            if isinstance(item, _Finish):
                self._deliver_finish()
                return
            try:
                self._on_output(self.invocation, item.stream, item.data())
            except Exception:
                log.exception("on_output of invocation %s raised", self.invocation)
                with self._cond:
                    self._phase = DISABLED
                    self._queue.clear()
                    self._busy = False
                return
            with self._cond:
                self._busy = False

    def _deliver_finish(self) -> None:
        try:
            if self._on_finish is not None:
                self._on_finish(self.invocation)
        except Exception:
            log.exception("on_finish of invocation %s raised", self.invocation)
        finally:
            with self._cond:
                self._busy = False


class _Capture:
    """The result's bytes of one stream, with its own cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.buf = bytearray()
        self.truncated = False
        self.lock = threading.Lock()

    def add(self, data: bytes) -> None:
        with self.lock:
            room = self.cap - len(self.buf)
            if len(data) > room:
                self.truncated = True
                data = data[: max(room, 0)]
            self.buf += data

    def snapshot(self) -> tuple[bytes, bool]:
        with self.lock:
            return bytes(self.buf), self.truncated


class _Call:
    """One process invocation: the child, its drains, its waiter."""

    def __init__(self, shell: Shell, proc: subprocess.Popen[bytes], session: Session | None):
        self.shell = shell
        self.proc = proc
        self.session = session
        self.out = shell.capture_class(shell.output_cap)
        self.err = shell.capture_class(shell.output_cap)
        self.done = threading.Event()
        self.completed_at: float | None = None
        self.returncode: int | None = None
        assert proc.stdout is not None
        assert proc.stderr is not None
        self.drains = [
            threading.Thread(
                target=shell._drain,
                args=(self, proc.stdout.fileno(), ShellOutputStream.STDOUT, self.out),
                daemon=True,
                name="b6soo-drain-stdout",
            ),
            threading.Thread(
                target=shell._drain,
                args=(self, proc.stderr.fileno(), ShellOutputStream.STDERR, self.err),
                daemon=True,
                name="b6soo-drain-stderr",
            ),
        ]
        self.waiter = threading.Thread(target=self._wait, daemon=True, name="b6soo-waiter")

    def start(self) -> None:
        for d in self.drains:
            d.start()
        self.waiter.start()

    def _wait(self) -> None:
        for d in self.drains:
            d.join()
        self.returncode = self.proc.wait()
        self.completed_at = time.monotonic()
        for f in (self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError):
                f.close()  # type: ignore[union-attr]
        self.done.set()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def result(self, *, timed_out: bool) -> ShellResult:
        out, out_t = self.out.snapshot()
        err, err_t = self.err.snapshot()
        return ShellResult(
            exit_code=None if timed_out else self.returncode,
            stdout=out,
            stderr=err,
            stdout_truncated=out_t,
            stderr_truncated=err_t,
            timed_out=timed_out,
        )


class Shell:
    """A command runner whose output can be observed live."""

    session_class: type[Session] = Session
    capture_class: type[_Capture] = _Capture

    def __init__(
        self,
        *,
        output_cap: int,
        live_budget: int,
        policy: Callable[[Sequence[str]], str | None] | None = None,
        thread_hook: Callable[[str, int | None], None] | None = None,
    ) -> None:
        self.output_cap = output_cap
        self.live_budget = live_budget
        self.policy = policy
        self.thread_hook = thread_hook
        self._lock = threading.Lock()
        self._next_id = 1
        self._sessions: list[Session] = []

    # -- IDs and sessions --------------------------------------------------------------

    async def _after_limit_kill(self, call: _Call) -> None:
        """The kit's fix: return once the killed group is gone, not at end of file."""
        await wait_after_kill(call.proc, call.done.is_set)

    def _take_id(self) -> int:
        with self._lock:
            ident = self._next_id
            self._next_id += 1
            return ident

    def observe(self, observer: Any) -> Session:
        session = self.session_class(self, observer, self._take_id(), self.live_budget)
        with self._lock:
            self._sessions.append(session)
        return session

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

    # -- the process path --------------------------------------------------------------

    def _deadline(self, started: float, timeout: float | None) -> float | None:
        return None if timeout is None else started + timeout

    def _drain(self, call: _Call, fd: int, stream: ShellOutputStream, capture: _Capture) -> None:
        if self.thread_hook is not None:
            self.thread_hook("drain", None if call.session is None else call.session.invocation)
        while True:
            try:
                data = os.read(fd, READ_SIZE)
            except OSError:
                break
            if not data:
                break
            capture.add(data)
            self._offer_read(call, stream, data)
        self._drain_eof(call, stream)

    def _offer_read(self, call: _Call, stream: ShellOutputStream, data: bytes) -> None:
        if call.session is not None:
            call.session.offer(stream, data)

    def _drain_eof(self, call: _Call, stream: ShellOutputStream) -> None:
        pass

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> ShellResult:
        started = time.monotonic()
        deadline = self._deadline(started, timeout)
        if self.policy is not None:
            reason = self.policy(list(argv))
            if reason is not None:
                raise CommandRefused(reason)
        session: Session | None = None
        if observer is not None:
            session = self.observe(observer)
            if on_invocation is not None:
                on_invocation(session.invocation)
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            if session is not None:
                session.cancel()
            raise CommandFailed(f"cannot spawn {argv[0]!r}: {error}") from error
        call = _Call(self, proc, session)
        call.start()
        try:
            while not call.done.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    break
                await anyio.sleep(POLL)
        except BaseException:
            # cancelled: stop observing at once, end the command, let the waiter reap it
            if session is not None:
                session.cancel()
            call.kill()
            raise
        completed = call.done.is_set() and (
            deadline is None or (call.completed_at is not None and call.completed_at <= deadline)
        )
        if completed:
            if session is not None:
                session.finish()
            return call.result(timed_out=False)
        # the time limit fired first: a cancellation for the observer, then the kill
        if session is not None:
            session.cancel()
        call.kill()
        try:
            await self._after_limit_kill(call)
        except BaseException:
            call.kill()
            raise
        return call.result(timed_out=True)


class Implementation:
    """What ShellOutputDriver asks for."""

    features: tuple[str, ...] = ("soo-process", "soo-session", "soo-live-budget")
    shell_class: type[Shell] = Shell

    def make_shell(
        self,
        *,
        output_cap: int,
        live_budget: int,
        policy: Callable[[Sequence[str]], str | None],
        thread_hook: Callable[[str, int | None], None],
    ) -> Shell:
        return self.shell_class(
            output_cap=output_cap, live_budget=live_budget, policy=policy, thread_hook=thread_hook
        )


def build(
    backend: str = "asyncio", impl: Implementation | None = None, name: str = "soo-outsider-base-6"
) -> PythonAdapter:
    """The outsider's base (or a variant's ``impl``) as an adapter: the batch's control.

    (The outsider's file ended with ``make_adapter(implementation, name=...)`` and a
    module-level ``adapter``; this builder does the same for the kit's meta-test, with the
    backend as a parameter.)
    """
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[ShellOutputDriver(impl if impl is not None else Implementation())],
        backend=backend,
        concurrent=True,
    )


# --- the base as written, before the kit's fix (see the docstring) -----------------------


class WaitsForPipesShell(Shell):
    """After the time limit's group kill, waits up to 5 s for end of file on the pipes."""

    async def _after_limit_kill(self, call: _Call) -> None:
        limit = time.monotonic() + KILL_WAIT
        while not call.done.is_set() and time.monotonic() < limit:
            await anyio.sleep(POLL)


def waits_for_pipes() -> Implementation:
    """The base as written (the mutant ``out-soo-base6-timeout-waits-for-pipes``)."""
    impl = Implementation()
    impl.shell_class = WaitsForPipesShell
    return impl
