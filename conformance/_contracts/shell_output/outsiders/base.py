"""An outsider's shell-output observer: a command runner with live observation.

Outsider batch 1 (see ``__init__``): kept as written (sha256 b161f88c...6ac0); only
imports, typing and the adapter builders at the end were touched so that it type-checks
with the kit. It conforms to every scenario, and it is the control the batch's variants
(``batch1.py``) are judged against.

Written from docs/contracts/shell-output-observer.md and the room's driver docstring only.

Per observed invocation: one ObservationSession (phase ACTIVE/FINISHED/CANCELLED, a live
budget per stream, an unbounded FIFO queue) and one presentation thread that calls the
observer. Pipe-draining threads copy bytes into the result capture, then offer them to the
session (lock + append, never blocking on the observer). A waiter thread reaps the child
once both pipes closed and wakes the async caller.

One fix by the kit, found by ``soo-timeout-detached-grandchild-holds-pipes`` (a
grandchild outside the process group holds the pipes after the time limit's kill): after
that kill the base waited for end of file on the pipes up to 5 s (``PIPE_CLOSE_LIMIT``),
so the call returned only when that grandchild let go, not at its limit (SOO-TIMEOUT).
It now waits only until the killed group is gone and then briefly for the pipes
(``at_limit.wait_after_kill``); the wait as written is kept, as the mutant
``out-soo-base1-timeout-waits-for-pipes`` (``waits_for_pipes`` at the end of this file).
"""

from __future__ import annotations

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

log = logging.getLogger("outsider.soo")
log.addHandler(logging.NullHandler())

READ_SIZE = 64 * 1024
PIPE_CLOSE_LIMIT = 5.0


class ShellOutputStream(str, enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


def _stream(value: object) -> ShellOutputStream:
    return ShellOutputStream(getattr(value, "value", value))


class CommandRefused(Exception):
    """The policy refused the command before anything was spawned."""


class InvocationIds:
    """A counter of observed invocations, starting at 1."""

    def __init__(self, start: int = 1) -> None:
        self._next = start
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            value = self._next
            self._next += 1
            return value


class Phase(enum.Enum):
    ACTIVE = "active"
    FINISHED = "finished"
    CANCELLED = "cancelled"


_FINISH = object()


def _hooks(observer: Any) -> tuple[Callable[..., None], Callable[[int], None] | None]:
    """(on_output, on_finish or None) for an observer object or a plain callable."""
    on_output = getattr(observer, "on_output", None)
    if on_output is None:
        if not callable(observer):
            raise TypeError(f"not a shell-output observer: {observer!r}")
        return observer, None
    return on_output, getattr(observer, "on_finish", None)


class ObservationSession:
    """Phase, live budget, queue and presentation thread of one observed invocation."""

    def __init__(self, invocation: int, observer: Any, budget: int) -> None:
        self.invocation = invocation
        self._on_output, self._on_finish = _hooks(observer)
        self._cond = threading.Condition()
        self._phase = Phase.ACTIVE
        self._disabled = False
        self._left = {ShellOutputStream.STDOUT: budget, ShellOutputStream.STDERR: budget}
        self._queue: deque[Any] = deque()
        self._busy = False
        self._start()

    def _start(self) -> None:
        self._thread = threading.Thread(
            target=self._present, name=f"soo-present-{self.invocation}", daemon=True
        )
        self._thread.start()

    # --- producer side (drain threads, or the embedding) -------------------------------

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes:
        """The part of ``chunk`` the live budget still admits; charges the budget."""
        left = self._left[stream]
        if left <= 0:
            return b""
        part = bytes(chunk[:left])
        self._left[stream] = left - len(part)
        return part

    def offer(self, stream: object, chunk: bytes) -> None:
        name = _stream(stream)
        with self._cond:
            if self._phase is not Phase.ACTIVE or self._disabled:
                return
            part = self._accept(name, chunk)
            if not part:
                return
            self._queue.append((name, part))
            self._cond.notify()

    def finish(self) -> None:
        with self._cond:
            if self._phase is not Phase.ACTIVE:
                return
            self._phase = Phase.FINISHED
            if not self._disabled:
                self._queue.append(_FINISH)
            self._cond.notify()

    def cancel(self) -> None:
        with self._cond:
            if self._phase is not Phase.ACTIVE:
                return
            self._phase = Phase.CANCELLED
            self._queue.clear()
            self._cond.notify()

    # an invocation that failed after observation began ends like a cancellation
    abort = cancel

    def idle(self) -> bool:
        with self._cond:
            if not self._thread.is_alive():
                return True
            return not self._busy and not self._queue

    # --- presentation thread -------------------------------------------------------------

    def _next(self) -> Any:
        with self._cond:
            while not self._queue and self._phase is Phase.ACTIVE and not self._disabled:
                self._cond.wait()
            if self._phase is Phase.CANCELLED or self._disabled or not self._queue:
                return None
            self._busy = True
            return self._queue.popleft()

    def _done_one(self) -> None:
        with self._cond:
            self._busy = False

    def _present(self) -> None:
        while True:
            item = self._next()
            if item is None:
                return
            if item is _FINISH:
                self._deliver_finish()
                self._done_one()
                return
            stream, chunk = item
            try:
                self._on_output(self.invocation, stream, chunk)
            except Exception:
                log.exception(
                    "shell-output observer failed; observation of %d ends", self.invocation
                )
                with self._cond:
                    self._disabled = True
                    self._queue.clear()
                    self._busy = False
                return
            self._done_one()

    def _deliver_finish(self) -> None:
        if self._on_finish is None:
            return
        try:
            self._on_finish(self.invocation)
        except Exception:
            log.exception("shell-output observer's on_finish failed (ignored)")


@dataclass
class ShellResult:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool


class _Capture:
    """The result's own copy of one stream, capped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.kept = 0
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - self.kept
        if room > 0:
            part = data[:room]
            self.parts.append(part)
            self.kept += len(part)

    def value(self) -> bytes:
        return b"".join(self.parts)

    @property
    def truncated(self) -> bool:
        return self.total > self.cap


class _Invocation:
    """One running child: its drain threads, its capture and its waiter."""

    def __init__(
        self,
        shell: ShellRunner,
        proc: subprocess.Popen[bytes],
        session: ObservationSession | None,
    ) -> None:
        self.shell = shell
        self.proc = proc
        self.session = session
        cap = shell._result_cap(session)
        self.captures = {
            ShellOutputStream.STDOUT: _Capture(cap),
            ShellOutputStream.STDERR: _Capture(cap),
        }
        self.pipes_closed = threading.Event()
        self.done = threading.Event()
        self.drains = [
            threading.Thread(
                target=self.shell._drain,
                args=(self, ShellOutputStream.STDOUT, proc.stdout),
                daemon=True,
            ),
            threading.Thread(
                target=self.shell._drain,
                args=(self, ShellOutputStream.STDERR, proc.stderr),
                daemon=True,
            ),
        ]
        self.waiter = threading.Thread(target=self._wait, daemon=True)

    @property
    def invocation(self) -> int | None:
        return None if self.session is None else self.session.invocation

    def start(self) -> None:
        for t in self.drains:
            t.start()
        self.waiter.start()

    def _wait(self) -> None:
        for t in self.drains:
            t.join()
        self.pipes_closed.set()
        self.proc.wait()
        self.done.set()

    def kill(self) -> None:
        try:  # noqa: SIM105 (kept as the outsider wrote it)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def result(self, *, timed_out: bool) -> ShellResult:
        out = self.captures[ShellOutputStream.STDOUT]
        err = self.captures[ShellOutputStream.STDERR]
        return ShellResult(
            exit_code=None if timed_out else self.proc.returncode,
            stdout=out.value(),
            stderr=err.value(),
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
            timed_out=timed_out,
        )


class ShellRunner:
    """Runs commands as child processes, observed live and capped in the result."""

    session_class = ObservationSession

    def __init__(
        self,
        *,
        output_cap: int = 1024 * 1024,
        live_budget: int | None = None,
        policy: Callable[[Sequence[str]], str | None] | None = None,
        thread_hook: Callable[[str, int | None], None] | None = None,
        ids: InvocationIds | None = None,
    ) -> None:
        self.output_cap = output_cap
        self.live_budget = output_cap if live_budget is None else live_budget
        self.policy = policy or (lambda argv: None)
        self.thread_hook = thread_hook or (lambda role, invocation: None)
        self.ids = ids or InvocationIds()
        self._sessions: list[ObservationSession] = []
        self._sessions_lock = threading.Lock()

    # --- sessions --------------------------------------------------------------------

    def observe(self, observer: Any) -> ObservationSession:
        """The session ``run`` would use: takes an ID and starts a presentation thread."""
        return self._new_session(self.ids.take(), observer)

    def _new_session(self, invocation: int, observer: Any) -> ObservationSession:
        session = self.session_class(invocation, observer, self.live_budget)
        with self._sessions_lock:
            self._sessions.append(session)
        return session

    def _open(
        self, observer: Any, on_invocation: Callable[[int], None] | None
    ) -> ObservationSession | None:
        """Observation for one run: None when unobserved (no ID is taken)."""
        if observer is None:
            return None
        session = self.observe(observer)
        if on_invocation is not None:
            on_invocation(session.invocation)
        return session

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            with self._sessions_lock:
                sessions = list(self._sessions)
            if all(s.idle() for s in sessions):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    # --- processes -------------------------------------------------------------------

    def _spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,
        )

    def _drain(self, inv: _Invocation, stream: ShellOutputStream, pipe: Any) -> None:
        self.thread_hook("drain", inv.invocation)
        capture = inv.captures[stream]
        try:
            while True:
                data = pipe.read(READ_SIZE)
                if not data:
                    break
                capture.add(data)
                if inv.session is not None:
                    inv.session.offer(stream, data)
        finally:
            pipe.close()

    async def _wait_event(self, event: threading.Event, limit: float | None = None) -> bool:
        return await anyio.to_thread.run_sync(event.wait, limit, abandon_on_cancel=True)

    async def _after_limit_kill(self, inv: _Invocation) -> None:
        """The kit's fix: return once the killed group is gone, not at end of file."""
        await wait_after_kill(inv.proc, inv.pipes_closed.is_set)

    def _stop(self, inv: _Invocation) -> None:
        """Cancellation or time limit: stop observing at once, kill the process group."""
        if inv.session is not None:
            inv.session.cancel()
        inv.kill()

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> ShellResult:
        reason = self.policy(argv)
        if reason is not None:
            raise CommandRefused(reason)
        session = self._open(observer, on_invocation)
        try:
            proc = self._spawn(argv)
        except BaseException:
            self._spawn_failed(session)
            raise
        inv = _Invocation(self, proc, session)
        inv.start()
        timed_out = False
        try:
            if timeout is None:
                await self._wait_event(inv.done)
            else:
                with anyio.move_on_after(timeout) as scope:
                    await self._wait_event(inv.done)
                timed_out = scope.cancelled_caught and not inv.done.is_set()
        except BaseException:
            self._stop(inv)
            raise
        if timed_out:
            self._stop(inv)
            await self._after_limit_kill(inv)
            return inv.result(timed_out=True)
        if session is not None:
            session.finish()
            await self._after_finish(session)
        return inv.result(timed_out=False)

    # --- small hooks -------------------------------------------------------------------

    def _result_cap(self, session: ObservationSession | None) -> int:
        """The result's own cap per stream: never the live budget."""
        return self.output_cap

    def _spawn_failed(self, session: ObservationSession | None) -> None:
        """Spawning failed after an ID was taken: observation ends without on_finish."""
        if session is not None:
            session.abort()

    async def _after_finish(self, session: ObservationSession) -> None:
        """Nothing: run() never waits for the observer (SOO-NO-WAIT)."""


class Implementation:
    """What the kit's ShellOutputDriver asks for."""

    features: tuple[str, ...] = ("soo-process", "soo-session", "soo-live-budget")

    def __init__(self, shell_class: type[ShellRunner] = ShellRunner) -> None:
        self.shell_class = shell_class

    def make_shell(
        self,
        *,
        output_cap: int,
        live_budget: int,
        policy: Callable[[Sequence[str]], str | None],
        thread_hook: Callable[[str, int | None], None],
    ) -> ShellRunner:
        return self.shell_class(
            output_cap=output_cap,
            live_budget=live_budget,
            policy=policy,
            thread_hook=thread_hook,
            ids=InvocationIds(),
        )


def make_adapter(
    name: str,
    shell_class: type[ShellRunner] = ShellRunner,
    implementation: Any = None,
    backend: str = "asyncio",
) -> PythonAdapter:
    impl = implementation if implementation is not None else Implementation(shell_class)
    return PythonAdapter(
        name=name, version="0.1", drivers=[ShellOutputDriver(impl)], backend=backend
    )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The outsider's base as an adapter (the control of the batch)."""
    return make_adapter("soo-outsider-base", backend=backend)


# --- the base as written, before the kit's fix (see the docstring) -----------------------


class WaitsForPipesRunner(ShellRunner):
    """After the time limit's group kill, waits up to 5 s for end of file on the pipes."""

    async def _after_limit_kill(self, inv: _Invocation) -> None:
        await self._wait_event(inv.pipes_closed, PIPE_CLOSE_LIMIT)


def waits_for_pipes() -> Implementation:
    """The base as written (the mutant ``out-soo-base1-timeout-waits-for-pipes``)."""
    return Implementation(WaitsForPipesRunner)
