"""An outsider's shell-output observer runner: batch 8's own implementation.

Outsider batch 8 (soo8, see ``__init__``): written from the docs alone (the contract page
without its boundary checklist, oracle coverage and outsider sections, the seed page,
CONTRACTS.md, usage.md, scenarios.md and the driver's docstring), without reading the
reference, its adapter, the oracle or the scenarios. Kept as written (the original
``b8soo_base.py`` had sha256
086f37b7253d023d4b3751f2c4060683680cdc463c48692bbffb947d50517703); only the imports,
typing, the linter's layout and the adapter builder at the end were touched. It conforms
to every scenario under both profiles (105 of 105, the outsider's own runs against main
425fce3; 108 of 108 with batch 8's scenarios, on asyncio and trio), and it is the
control the batch's variants (``batch8.py``) are judged against.

The outsider's own summary of the design (not the reference's):

One observed invocation = a session (phase, per-stream live budget, unbounded FIFO,
one presentation thread). Drain threads only capture and offer. The async caller polls
a threading.Event set by a waiter thread (works on asyncio and trio alike).

One fix by the kit, found by ``soo-timeout-detached-grandchild-holds-pipes`` (a
grandchild outside the process group holds the pipes after the time limit's kill): after
that kill the base waited for end of file on the pipes up to 5 s (``KILL_WAIT``), so the
call returned only when that grandchild let go, not at its limit (SOO-TIMEOUT). It now
waits only until the killed group is gone and then briefly for the pipes
(``at_limit.wait_after_kill``); the wait as written is kept, as the mutant
``out-soo-base8-timeout-waits-for-pipes`` (``waits_for_pipes`` at the end of this file).
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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver
from seamspec.conformance._contracts.shell_output.outsiders.at_limit import wait_after_kill
from seamspec.conformance._core.python_adapter import PythonAdapter

log = logging.getLogger("b8soo")
log.addHandler(logging.NullHandler())

ACTIVE, FINISHED, CANCELLED, DISABLED = "active", "finished", "cancelled", "disabled"
_FINISH = object()
READ_SIZE = 65536
POLL = 0.005
KILL_WAIT = 5.0


class ShellOutputStream(enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


_STREAMS = {"stdout": ShellOutputStream.STDOUT, "stderr": ShellOutputStream.STDERR}


def _name(stream: object) -> str:
    return str(getattr(stream, "value", stream))


class CommandRefused(Exception):
    pass


class CommandFailed(Exception):
    pass


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
        self.parts: list[bytes] = []
        self.kept = 0
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - self.kept
        if room > 0:
            piece = data[:room]
            self.parts.append(piece)
            self.kept += len(piece)

    def value(self) -> bytes:
        return b"".join(self.parts)

    @property
    def truncated(self) -> bool:
        return self.total > self.cap


class Session:
    """Phase + budget + queue + one presentation thread for one invocation."""

    def __init__(self, runner: ShellRunner, observer: Any, invocation: int, budget: int) -> None:
        self.runner = runner
        self.observer = observer
        self.invocation = invocation
        if hasattr(observer, "on_output"):
            self._on_output = observer.on_output
            self._on_finish = getattr(observer, "on_finish", None)
        elif callable(observer):
            self._on_output = observer
            self._on_finish = None
        else:
            raise TypeError("observer must have on_output or be callable")
        self._cond = threading.Condition(threading.Lock())
        self._phase = ACTIVE
        self._left = {"stdout": budget, "stderr": budget}
        self._queue: deque[Any] = deque()
        self._busy = False
        self._ended = False
        self._thread = threading.Thread(
            target=self._present, name=f"b8soo-present-{invocation}", daemon=True
        )
        self._thread.start()

    # --- producer side (never blocks beyond a short lock) ---------------------------
    def offer(self, stream: object, chunk: bytes) -> bool:
        name = _name(stream)
        with self._cond:
            if self._phase != ACTIVE or not chunk:
                return False
            left = self._left.get(name, 0)
            if left <= 0:
                return False
            data = bytes(chunk[:left])
            self._left[name] = left - len(data)
            self._queue.append((name, data))
            self._cond.notify()
            return True

    def finish(self) -> None:
        with self._cond:
            if self._phase == ACTIVE:
                self._phase = FINISHED
                self._queue.append(_FINISH)
                self._cond.notify()

    def cancel(self) -> None:
        with self._cond:
            if self._phase == ACTIVE:
                self._phase = CANCELLED
                self._queue.clear()
                self._cond.notify()

    # --- consumer side -----------------------------------------------------------------
    def _call(self, function: Callable[..., Any], *args: Any) -> None:
        function(*args)

    def _present(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and self._phase == ACTIVE:
                        self._cond.wait()
                    if self._phase in (CANCELLED, DISABLED) or not self._queue:
                        return
                    item = self._queue.popleft()
                    self._busy = True
                try:
                    if item is _FINISH:
                        if self._on_finish is not None:
                            try:
                                self._call(self._on_finish, self.invocation)
                            except Exception as error:
                                self.runner._finish_failed(self, error)
                        return
                    name, data = item
                    try:
                        self._call(self._on_output, self.invocation, _STREAMS[name], data)
                    except Exception as error:
                        with self._cond:
                            self._phase = DISABLED
                            self._queue.clear()
                        self.runner._observer_failed(self, error)
                        return
                finally:
                    with self._cond:
                        self._busy = False
        finally:
            with self._cond:
                self._ended = True

    def idle(self) -> bool:
        with self._cond:
            return self._ended or (not self._busy and not self._queue)


class ShellRunner:
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
        self._policy = policy
        self._thread_hook = thread_hook
        self._ids_lock = threading.Lock()
        self._next_id = 1
        self._sessions_lock = threading.Lock()
        self._sessions: list[Session] = []

    session_class: type[Session] = Session

    # --- IDs and sessions ---------------------------------------------------------------
    def _take_id(self) -> int:
        with self._ids_lock:
            value = self._next_id
            self._next_id += 1
            return value

    def observe(self, observer: Any) -> Session:
        session = self.session_class(self, observer, self._take_id(), self.live_budget)
        with self._sessions_lock:
            self._sessions.append(session)
        return session

    def _observer_failed(self, session: Session, error: BaseException) -> None:
        log.warning("observer on_output failed for %s: %r", session.invocation, error)

    def _finish_failed(self, session: Session, error: BaseException) -> None:
        log.warning("observer on_finish failed for %s: %r", session.invocation, error)

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

    # --- process path ---------------------------------------------------------------------
    def _reads(self, pipe: Any) -> Iterator[bytes]:
        while True:
            data = pipe.read(READ_SIZE)
            if not data:
                return
            yield data

    def _drain(self, name: str, pipe: Any, capture: _Capture, session: Session | None) -> None:
        if self._thread_hook is not None:
            self._thread_hook("drain", None if session is None else session.invocation)
        try:
            for data in self._reads(pipe):
                capture.add(data)
                if session is not None:
                    session.offer(name, data)
        except OSError:
            pass
        finally:
            pipe.close()

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        try:  # noqa: SIM105 (kept as the outsider wrote it)
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    async def _after_limit_kill(self, proc: subprocess.Popen[bytes], done: threading.Event) -> None:
        """The kit's fix: return once the killed group is gone, not at end of file."""
        await wait_after_kill(proc, done.is_set)

    @staticmethod
    async def _wait(done: threading.Event) -> None:
        while not done.is_set():
            await anyio.sleep(POLL)

    async def _stop(
        self, session: Session | None, proc: subprocess.Popen[bytes], done: threading.Event
    ) -> None:
        """A cancellation: stop observation at once, then end the process group."""
        if session is not None:
            session.cancel()
        self._kill(proc)

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> ShellResult:
        argv = list(argv)
        if self._policy is not None:
            reason = self._policy(argv)
            if reason is not None:
                raise CommandRefused(reason)
        session = None
        if observer is not None:
            session = self.observe(observer)
            if on_invocation is not None:
                on_invocation(session.invocation)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
        except OSError as error:
            if session is not None:
                session.cancel()
            raise CommandFailed(f"cannot spawn {argv[0]!r}: {error}") from error
        captures = {"stdout": _Capture(self.output_cap), "stderr": _Capture(self.output_cap)}
        drains = [
            threading.Thread(
                target=self._drain, args=(name, pipe, captures[name], session), daemon=True
            )
            for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr))
        ]
        done = threading.Event()

        def waiter() -> None:
            for thread in drains:
                thread.join()
            proc.wait()
            done.set()

        for thread in drains:
            thread.start()
        threading.Thread(target=waiter, daemon=True).start()

        timed_out = False
        try:
            if timeout is None:
                await self._wait(done)
            else:
                with anyio.move_on_after(max(0.0, float(timeout))):
                    await self._wait(done)
                timed_out = not done.is_set()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._stop(session, proc, done)
            raise
        if timed_out:
            if session is not None:
                session.cancel()
            self._kill(proc)
            await self._after_limit_kill(proc, done)
            exit_code = None
        else:
            exit_code = proc.returncode
            if session is not None:
                session.finish()
        return ShellResult(
            exit_code=exit_code,
            stdout=captures["stdout"].value(),
            stderr=captures["stderr"].value(),
            stdout_truncated=captures["stdout"].truncated,
            stderr_truncated=captures["stderr"].truncated,
            timed_out=timed_out,
        )


class Implementation:
    features: tuple[str, ...] = ("soo-process", "soo-session", "soo-live-budget")
    runner_class: type[ShellRunner] = ShellRunner

    def make_shell(
        self,
        *,
        output_cap: int,
        live_budget: int,
        policy: Callable[[Sequence[str]], str | None],
        thread_hook: Callable[[str, int | None], None],
    ) -> ShellRunner:
        return self.runner_class(
            output_cap=output_cap, live_budget=live_budget, policy=policy, thread_hook=thread_hook
        )


def make_adapter(
    impl: Implementation | None = None, name: str = "b8soo-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[ShellOutputDriver(impl or Implementation())],
        backend=backend,
        concurrent=True,
    )


def build(
    backend: str = "asyncio", impl: Implementation | None = None, name: str = "soo-outsider-base-8"
) -> PythonAdapter:
    """The outsider's base (or a variant's ``impl``) as an adapter: the batch's control.

    (The outsider's file ended with ``make_adapter(impl, name=...)`` and a module-level
    ``adapter``; the backend became a parameter of both, for the kit's meta-test.)
    """
    return make_adapter(impl, name=name, backend=backend)


# --- the base as written, before the kit's fix (see the docstring) -----------------------


class WaitsForPipesRunner(ShellRunner):
    """After the time limit's group kill, waits up to 5 s for end of file on the pipes."""

    async def _after_limit_kill(self, proc: subprocess.Popen[bytes], done: threading.Event) -> None:
        with anyio.move_on_after(KILL_WAIT):
            await self._wait(done)


def waits_for_pipes() -> Implementation:
    """The base as written (the mutant ``out-soo-base8-timeout-waits-for-pipes``)."""
    impl = Implementation()
    impl.runner_class = WaitsForPipesRunner
    return impl
