"""An outsider's shell-output observer runner: batch 7's own implementation.

Outsider batch 7 (soo7, see ``__init__``): written from the docs alone (the contract page
without its boundary checklist, oracle coverage and outsider sections, the seed page,
CONTRACTS.md, usage.md, scenarios.md and the driver's docstring), without reading the
reference, its adapter, the oracle or the scenarios. Kept as written (the original
``b7soo_base.py`` had sha256
6e73e07e4f577332d6f5de61f59103d3a850555ac943aa20c6d71af9415e6213); only the imports,
typing, the linter's layout and the adapter builder at the end were touched. It conforms
to every scenario under both profiles (99 of 99, the outsider's own runs against main
9c7b1af), and it is the control the batch's variants (``batch7.py``) are judged against.

The outsider's own summary of the design (not the reference's):

Per observed invocation a Session (phase, per-stream live budget, FIFO queue, one
presentation thread); per child process two drain threads that copy into the result
(own cap) and offer to the session, and a waiter thread that reaps the child once both
pipes reached EOF. The async caller polls the waiter's event.

One fix by the kit, found by ``soo-timeout-detached-grandchild-holds-pipes`` (a
grandchild outside the process group holds the pipes after the time limit's kill): after
that kill the base waited for end of file on the pipes up to 5 s, so the call returned
only when that grandchild let go, not at its limit (SOO-TIMEOUT). It now waits only
until the killed group is gone and then briefly for the pipes
(``at_limit.wait_after_kill``); the wait as written is kept, as the mutant
``out-soo-base7-timeout-waits-for-pipes`` (``waits_for_pipes`` at the end of this file).
"""

from __future__ import annotations

import collections
import enum
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver
from seamspec.conformance._contracts.shell_output.outsiders.at_limit import wait_after_kill
from seamspec.conformance._core.python_adapter import PythonAdapter

ACTIVE, FINISHED, CANCELLED = "ACTIVE", "FINISHED", "CANCELLED"
READ_SIZE = 65536


class ShellOutputStream(enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


class CommandRefused(Exception):
    pass


class CommandFailed(Exception):
    pass


class Result:
    def __init__(  # noqa: PLR0917 (kept as the outsider wrote it)
        self,
        exit_code: int | None,
        stdout: bytes,
        stderr: bytes,
        stdout_truncated: bool,
        stderr_truncated: bool,
        timed_out: bool,
    ) -> None:
        self.exit_code = exit_code
        self.stdout = stdout
        self.stderr = stderr
        self.stdout_truncated = stdout_truncated
        self.stderr_truncated = stderr_truncated
        self.timed_out = timed_out


def _hooks(observer: Any) -> tuple[Callable[..., Any], Callable[..., Any] | None]:
    on_output = getattr(observer, "on_output", None)
    if on_output is None:
        if not callable(observer):
            raise TypeError("observer must have on_output or be callable")
        return observer, None
    return on_output, getattr(observer, "on_finish", None)


class Session:
    """Phase, budgets and queue of one observed invocation; owns its presentation thread."""

    def __init__(self, invocation: int, observer: Any, budget: int, shell: Any = None) -> None:
        self.invocation = invocation
        self.observer = observer
        self.shell = shell
        self._on_output, self._on_finish = _hooks(observer)
        self._cond = threading.Condition()
        self._phase = ACTIVE
        self._disabled = False
        self._queue: collections.deque[tuple[ShellOutputStream, bytes]] = collections.deque()
        self._left = {ShellOutputStream.STDOUT: budget, ShellOutputStream.STDERR: budget}
        self._busy = False
        self._thread = threading.Thread(
            target=self._present, name=f"soo-present-{invocation}", daemon=True
        )
        self._thread.start()

    # --- producer side (drain threads, the driver) ---
    def offer(self, stream: Any, chunk: bytes) -> None:
        if not isinstance(stream, ShellOutputStream):
            stream = ShellOutputStream(str(getattr(stream, "value", stream)))
        if not chunk:
            return
        with self._cond:
            if self._phase != ACTIVE or self._disabled:
                return
            left = self._left[stream]
            if left <= 0:
                return
            piece = self._cut(bytes(chunk), left)
            self._left[stream] = left - len(piece) if len(chunk) <= left else 0
            if not piece:
                return
            self._enqueue(stream, piece)

    def _cut(self, chunk: bytes, left: int) -> bytes:
        """The part of ``chunk`` within the budget that remains (the crossing chunk is cut)."""
        return chunk[:left]

    def _enqueue(self, stream: ShellOutputStream, piece: bytes) -> None:
        """Called holding the lock; never waits (the queue is bounded by the budget)."""
        self._queue.append((stream, piece))
        self._cond.notify_all()

    def finish(self) -> None:
        with self._cond:
            if self._phase == ACTIVE:
                self._phase = FINISHED
                self._cond.notify_all()

    def cancel(self) -> None:
        with self._cond:
            if self._phase == ACTIVE:
                self._phase = CANCELLED
                self._queue.clear()
                self._cond.notify_all()

    # --- presentation thread ---
    def _present(self) -> None:
        while True:
            with self._cond:
                while not self._queue and self._phase == ACTIVE and not self._disabled:
                    self._cond.wait()
                if self._disabled or self._phase == CANCELLED:
                    return
                if self._queue:
                    stream, chunk = self._queue.popleft()
                    self._busy = True
                else:  # FINISHED and drained
                    self._busy = True
                    break
            try:
                self._on_output(self.invocation, stream, chunk)
            except Exception:
                self._raised()
                return
            with self._cond:
                self._busy = False
                self._cond.notify_all()
        try:
            if self._on_finish is not None:
                self._on_finish(self.invocation)
        except Exception:
            pass
        finally:
            with self._cond:
                self._busy = False

    def _raised(self) -> None:
        """on_output raised: observation of this invocation ends."""
        with self._cond:
            self._disabled = True
            self._queue.clear()
            self._busy = False
            self._cond.notify_all()

    def idle(self) -> bool:
        with self._cond:
            if not self._thread.is_alive():
                return True
            return not self._busy and not self._queue and self._phase == ACTIVE


class Capture:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.truncated = True
        if room > 0:
            self.data += chunk[:room]


class Shell:
    def __init__(
        self,
        output_cap: int,
        live_budget: int,
        policy: Callable[[list[str]], str | None],
        thread_hook: Callable[[str, int | None], None],
    ) -> None:
        self.output_cap = output_cap
        self.live_budget = live_budget
        self.policy = policy
        self.thread_hook = thread_hook
        self._ids_lock = threading.Lock()
        self._next_id = 1
        self._sessions_lock = threading.Lock()
        self._sessions: list[Session] = []

    def _take_id(self) -> int:
        with self._ids_lock:
            ident = self._next_id
            self._next_id += 1
            return ident

    session_class: type[Session] = Session

    def _open_session(self, observer: Any) -> Session:
        """One counter for both paths: run() and observe() share it."""
        session = self.session_class(self._take_id(), observer, self.live_budget, self)
        with self._sessions_lock:
            self._sessions.append(session)
        return session

    def observe(self, observer: Any) -> Session:
        return self._open_session(observer)

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            with self._sessions_lock:
                sessions = list(self._sessions)
            if all(s.idle() for s in sessions):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def _reader(self, fd: int, stream: ShellOutputStream) -> Iterator[bytes]:
        """Yield each read of one pipe, as read, until end of file."""
        while True:
            chunk = os.read(fd, READ_SIZE)
            if not chunk:
                return
            yield chunk

    def _drain(self, call: Call, fd: int, stream: ShellOutputStream, capture: Capture) -> None:
        session = call.session
        self.thread_hook("drain", None if session is None else session.invocation)
        try:
            for chunk in self._reader(fd, stream):
                call.last_read = time.monotonic()
                capture.add(chunk)
                if session is not None:
                    session.offer(stream, chunk)
        finally:
            os.close(fd)

    def _waiter(self, call: Call) -> None:
        """Completion: both pipes at end of file, then the child reaped."""
        for d in call.drains:
            d.join()
        call.exit_code = call.proc.wait()
        call.done.set()

    async def _wait(self, call: Call, timeout: float | None) -> bool:
        """Wait for completion or the time limit (wall clock from the call's start);
        True when the limit fired first."""
        with anyio.CancelScope() as scope:
            if timeout is not None:
                scope.deadline = call.started + timeout
            while not call.done.is_set():
                await anyio.sleep(0.005)
        return not call.done.is_set() and scope.cancel_called

    async def _after_limit_kill(self, proc: subprocess.Popen[bytes], call: Call) -> None:
        """The kit's fix: return once the killed group is gone, not at end of file."""
        await wait_after_kill(proc, call.done.is_set)

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        try:  # noqa: SIM105 (kept as the outsider wrote it)
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> Result:
        started = anyio.current_time()
        reason = self.policy(list(argv))
        if reason is not None:
            raise CommandRefused(reason)
        session: Session | None = None
        if observer is not None:
            session = self._open_session(observer)
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
        assert proc.stdout is not None  # (typing only)
        assert proc.stderr is not None
        call = Call(proc, session, started)
        out, err = Capture(self.output_cap), Capture(self.output_cap)
        call.drains = [
            threading.Thread(
                target=self._drain,
                daemon=True,
                args=(call, os.dup(proc.stdout.fileno()), ShellOutputStream.STDOUT, out),
            ),
            threading.Thread(
                target=self._drain,
                daemon=True,
                args=(call, os.dup(proc.stderr.fileno()), ShellOutputStream.STDERR, err),
            ),
        ]
        proc.stdout.close()
        proc.stderr.close()
        for d in call.drains:
            d.start()
        threading.Thread(target=self._waiter, args=(call,), daemon=True).start()

        try:
            timed_out = await self._wait(call, timeout)
        except BaseException:
            if session is not None:
                session.cancel()
            self._kill_group(proc)
            threading.Thread(target=proc.wait, daemon=True).start()
            raise
        if timed_out:
            if session is not None:
                session.cancel()
            self._kill_group(proc)
            await self._after_limit_kill(proc, call)
            return Result(
                None, bytes(out.data), bytes(err.data), out.truncated, err.truncated, True
            )
        if session is not None:
            session.finish()
        return Result(
            call.exit_code, bytes(out.data), bytes(err.data), out.truncated, err.truncated, False
        )


class Call:
    """The state of one process call."""

    def __init__(
        self, proc: subprocess.Popen[bytes], session: Session | None, started: float
    ) -> None:
        self.proc = proc
        self.session = session
        self.started = started
        self.drains: list[threading.Thread] = []
        self.done = threading.Event()
        self.exit_code: int | None = None
        self.last_read = time.monotonic()


class Implementation:
    features: tuple[str, ...] = ("soo-process", "soo-session", "soo-live-budget")
    shell_class: type[Shell] = Shell

    def make_shell(
        self,
        *,
        output_cap: int,
        live_budget: int,
        policy: Callable[[list[str]], str | None],
        thread_hook: Callable[[str, int | None], None],
    ) -> Shell:
        return self.shell_class(output_cap, live_budget, policy, thread_hook)


def build(
    backend: str = "asyncio", impl: Implementation | None = None, name: str = "soo-outsider-base-7"
) -> PythonAdapter:
    """The outsider's base (or a variant's ``impl``) as an adapter: the batch's control.

    (The outsider's file ended with ``make_adapter(impl, name=...)`` and a module-level
    ``adapter``; this builder does the same for the kit's meta-test, with the backend as a
    parameter.)
    """
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[ShellOutputDriver(impl if impl is not None else Implementation())],
        backend=backend,
        concurrent=True,
    )


# --- the base as written, before the kit's fix (see the docstring) -----------------------


class WaitsForPipesShell(Shell):
    """After the time limit's group kill, waits up to 5 s for end of file on the pipes."""

    async def _after_limit_kill(self, proc: subprocess.Popen[bytes], call: Call) -> None:
        with anyio.move_on_after(5.0):
            while not call.done.is_set():
                await anyio.sleep(0.005)


def waits_for_pipes() -> Implementation:
    """The base as written (the mutant ``out-soo-base7-timeout-waits-for-pipes``)."""
    impl = Implementation()
    impl.shell_class = WaitsForPipesShell
    return impl
