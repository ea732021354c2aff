"""An outsider's shell-output observer runner: batch 9's own implementation.

Outsider batch 9 (soo9, see ``__init__``): written from the docs alone (the contract page
without its boundary checklist, oracle coverage and outsider sections, the driver's
docstring, the Python adapter's, CONTRACTS.md, usage.md and adapters.md), without reading
the reference, its adapter, the oracle or the scenarios. Kept as written (the original
``b9soo_base.py`` had sha256
a01c804ecfbae12bf1fe9800189fb1c75e3dc003453a4a387e94e2e6ddb8592c); only the imports,
typing, the linter's layout and the adapter builder at the end were touched. By the
outsider's own runs it conforms to every scenario of main dd292d7 (108 of 108) under both
profiles, on asyncio and trio; it is the control the batch's variants (``batch9.py``) are
judged against.

The outsider's own summary of the design (not the reference's):

One observed invocation = one ``Session``: a phase (ACTIVE / FINISHED / CANCELLED), a live
budget per stream, an unbounded FIFO and one presentation thread that calls the observer.
``Shell.run`` spawns the child in its own process group, drains both pipes on two threads
(they only capture and offer), and decides on the caller's side whether the call completed
(both pipes at EOF and the child reaped), timed out, or was cancelled.

One fix by the kit, found by ``soo-timeout-detached-grandchild-holds-pipes`` (a
grandchild outside the process group holds the pipes after the time limit's kill): after
that kill the base waited for end of file on the pipes up to 5 s (``KILL_WAIT``,
``_wait_reaped``), so the call returned only when that grandchild let go, not at its
limit (SOO-TIMEOUT). It now waits only until the killed group is gone and then briefly
for the pipes (``at_limit.wait_after_kill``); the wait as written is kept, as the mutant
``out-soo-base9-timeout-waits-for-pipes`` (``waits_for_pipes`` at the end of this file).
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
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver
from seamspec.conformance._contracts.shell_output.outsiders.at_limit import wait_after_kill
from seamspec.conformance._core.python_adapter import PythonAdapter

log = logging.getLogger("b9soo.shell")
log.addHandler(logging.NullHandler())

ACTIVE, FINISHED, CANCELLED = "active", "finished", "cancelled"
READ_SIZE = 65536
POLL = 0.002
KILL_WAIT = 5.0


class ShellOutputStream(enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


def _as_stream(stream: Any) -> ShellOutputStream:
    if isinstance(stream, ShellOutputStream):
        return stream
    return ShellOutputStream(str(getattr(stream, "value", stream)))


class CommandRefused(Exception):
    pass


class CommandFailed(Exception):
    pass


class Result:
    def __init__(  # noqa: PLR0917 (the outsider's signature)
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


class _Observer:
    """Normalises an observer object or a plain function."""

    def __init__(self, observer: Any) -> None:
        if hasattr(observer, "on_output"):
            self.on_output = observer.on_output
            self.on_finish = getattr(observer, "on_finish", None)
        else:
            self.on_output = observer
            self.on_finish = None


class Session:
    """Phase, budget per stream, FIFO and the presentation thread of one invocation."""

    def __init__(self, shell: Shell, invocation: int, observer: Any, budget: int) -> None:
        self.shell = shell
        self.invocation = invocation
        self._obs = _Observer(observer)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._phase = ACTIVE
        self._disabled = False
        self._budget = {ShellOutputStream.STDOUT: budget, ShellOutputStream.STDERR: budget}
        self._queue: deque[tuple[str, Any, bytes]] = deque()
        self._busy = False
        self._ended = False
        self._thread = threading.Thread(
            target=self._present, name=f"b9soo-present-{invocation}", daemon=True
        )
        self._thread.start()

    # --- the producer side: never blocks on the observer -------------------------------

    def _take(self, stream: ShellOutputStream, chunk: bytes) -> bytes:
        """The part of ``chunk`` the budget still admits (caller holds the lock)."""
        left = self._budget[stream]
        if left <= 0:
            return b""
        part = bytes(chunk[:left])
        self._budget[stream] = left - len(part)
        return part

    def offer(self, stream: Any, chunk: bytes) -> None:
        stream = _as_stream(stream)
        if not chunk:
            return
        with self._cond:
            if self._phase != ACTIVE or self._disabled:
                return
            part = self._take(stream, chunk)
            if not part:
                return
            self._queue.append(("out", stream, part))
            self._cond.notify()

    def finish(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = FINISHED
            if not self._disabled:
                self._queue.append(("finish", None, b""))
            self._cond.notify()

    def cancel(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = CANCELLED
            self._drop()
            self._cond.notify()

    # --- the presentation thread ------------------------------------------------------

    def _next(self) -> tuple[str, Any, bytes] | None:
        with self._cond:
            while True:
                if self._disabled or self._phase == CANCELLED:
                    self._drop()
                    return None
                if self._queue:
                    self._busy = True
                    return self._queue.popleft()
                self._cond.wait()

    def _drop(self) -> None:
        """Forget everything queued (caller holds the lock)."""
        self._queue.clear()

    def _deliver_output(self, stream: ShellOutputStream, chunk: bytes) -> bool:
        """Call on_output; False when it raised, which ends observation."""
        try:
            self._obs.on_output(self.invocation, stream, chunk)
        except Exception:
            log.exception("on_output of invocation %s raised", self.invocation)
            with self._cond:
                self._disabled = True
                self._drop()
            return False
        return True

    def _deliver_finish(self) -> None:
        if self._obs.on_finish is not None:
            try:
                self._obs.on_finish(self.invocation)
            except Exception:
                log.exception("on_finish of invocation %s raised", self.invocation)

    def _present(self) -> None:
        try:
            while True:
                item = self._next()
                if item is None:
                    return
                kind, stream, chunk = item
                try:
                    if kind == "finish":
                        self._deliver_finish()
                        return
                    if not self._deliver_output(stream, chunk):
                        return
                finally:
                    with self._cond:
                        self._busy = False
        finally:
            with self._cond:
                self._ended = True
                self._busy = False

    def idle(self) -> bool:
        with self._cond:
            return not self._busy and not self._queue


class _Capture:
    """The result's own copy of one pipe, capped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > max(room, 0):
            self.truncated = True


class Shell:
    """A command runner with live observation."""

    def __init__(
        self,
        *,
        output_cap: int,
        live_budget: int,
        policy: Callable[[Sequence[str]], str | None],
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

    # --- IDs and sessions ---------------------------------------------------------------

    def _take_id(self) -> int:
        with self._ids_lock:
            ident = self._next_id
            self._next_id += 1
            return ident

    session_class: type[Session] = Session

    def observe(self, observer: Any) -> Session:
        session = self.session_class(self, self._take_id(), observer, self.live_budget)
        with self._sessions_lock:
            self._sessions.append(session)
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

    # --- processes ---------------------------------------------------------------------

    def _spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            bufsize=0,
        )

    def _drain(
        self,
        fd: int,
        stream: ShellOutputStream,
        capture: _Capture,
        session: Session | None,
        done: threading.Event,
    ) -> None:
        try:
            self.thread_hook("drain", None if session is None else session.invocation)
            while True:
                try:
                    chunk = os.read(fd, READ_SIZE)
                except OSError:
                    break
                if not chunk:
                    break
                capture.add(chunk)
                if session is not None:
                    session.offer(stream, chunk)
        finally:
            done.set()

    def _kill_group(self, proc: subprocess.Popen[bytes]) -> None:
        try:  # noqa: SIM105 (as written)
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _reaper(
        self, proc: subprocess.Popen[bytes], drained: list[threading.Event], reaped: threading.Event
    ) -> None:
        for event in drained:
            event.wait()
        proc.wait()
        reaped.set()

    def _deadline(self, timeout: float | None) -> float:
        if timeout is None:
            return float("inf")
        return anyio.current_time() + max(0.0, float(timeout))

    def _complete(self, session: Session | None) -> None:
        if session is not None:
            session.finish()

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> Result:
        deadline = self._deadline(timeout)
        reason = self.policy(argv)
        if reason is not None:
            raise CommandRefused(reason)
        session = None
        if observer is not None:
            session = self.observe(observer)
            if on_invocation is not None:
                on_invocation(session.invocation)
        try:
            proc = self._spawn(argv)
        except OSError as error:
            return self._spawn_failed(argv, error, session)

        out_cap, err_cap = _Capture(self.output_cap), _Capture(self.output_cap)
        drained = [threading.Event(), threading.Event()]
        reaped = threading.Event()
        threads = [
            threading.Thread(
                target=self._drain,
                daemon=True,
                args=(_fd(proc.stdout), ShellOutputStream.STDOUT, out_cap, session, drained[0]),
            ),
            threading.Thread(
                target=self._drain,
                daemon=True,
                args=(_fd(proc.stderr), ShellOutputStream.STDERR, err_cap, session, drained[1]),
            ),
        ]
        for t in threads:
            t.start()
        threading.Thread(target=self._reaper, args=(proc, drained, reaped), daemon=True).start()

        ended = False
        try:
            with anyio.CancelScope(deadline=deadline) as scope:
                while not reaped.is_set():
                    await anyio.sleep(POLL)
            if scope.cancelled_caught and not reaped.is_set():  # noqa: SIM108 (as written)
                timed_out = True
            else:
                timed_out = False
            if not timed_out:
                ended = True
                self._complete(session)
                return self._result(proc.returncode, out_cap, err_cap, False)
            ended = True
            await self._time_limit(proc, session, reaped)
            return self._result(None, out_cap, err_cap, True)
        finally:
            if not ended:  # cancelled by the caller (or an unexpected error)
                if session is not None:
                    session.cancel()
                self._kill_group(proc)

    def _spawn_failed(self, argv: Sequence[str], error: OSError, session: Session | None) -> Result:
        if session is not None:
            session.cancel()
        raise CommandFailed(f"cannot spawn {argv[0]!r}: {error}") from error

    async def _wait_reaped(self, reaped: threading.Event) -> None:
        with anyio.move_on_after(KILL_WAIT):
            while not reaped.is_set():
                await anyio.sleep(POLL)

    async def _time_limit(
        self, proc: subprocess.Popen[bytes], session: Session | None, reaped: threading.Event
    ) -> None:
        """The time limit fired first: stop observation, then end the group."""
        if session is not None:
            session.cancel()
        self._kill_group(proc)
        await wait_after_kill(proc, reaped.is_set)  # the kit's fix: not the pipes' end of file

    def _result(
        self, exit_code: int | None, out: _Capture, err: _Capture, timed_out: bool
    ) -> Result:
        return Result(
            exit_code, bytes(out.data), bytes(err.data), out.truncated, err.truncated, timed_out
        )


def _fd(pipe: Any) -> int:
    """The pipe's descriptor (typing only: the outsider's code read ``proc.stdout.fileno()``)."""
    return int(pipe.fileno())


class Impl:
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


def make_adapter(
    shell_class: type[Shell] = Shell, name: str = "b9soo-base", backend: str = "asyncio"
) -> PythonAdapter:
    impl = Impl()
    impl.shell_class = shell_class
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[ShellOutputDriver(impl)],
        backend=backend,
        concurrent=True,
    )


def build(
    backend: str = "asyncio", impl: Impl | None = None, name: str = "soo-outsider-base-9"
) -> PythonAdapter:
    """The outsider's base (or a variant's ``impl``) as an adapter: the batch's control.

    (The outsider's file ended with module-level ``adapter`` and ``adapter_trio`` built by
    ``make_adapter``; this builds the same for either backend, for the kit's meta-test.)
    """
    impl = impl or Impl()
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[ShellOutputDriver(impl)],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    """The base on asyncio (the outsider's ``adapter``)."""
    return build()


def adapter_trio() -> PythonAdapter:
    """The base on trio (the outsider's ``adapter_trio``)."""
    return build("trio", name="soo-outsider-base-9-trio")


# --- the base as written, before the kit's fix (see the docstring) -----------------------


class WaitsForPipesShell(Shell):
    """After the time limit's group kill, waits up to 5 s for end of file on the pipes."""

    async def _time_limit(
        self, proc: subprocess.Popen[bytes], session: Session | None, reaped: threading.Event
    ) -> None:
        if session is not None:
            session.cancel()
        self._kill_group(proc)
        await self._wait_reaped(reaped)


def waits_for_pipes() -> Impl:
    """The base as written (the mutant ``out-soo-base9-timeout-waits-for-pipes``)."""
    impl = Impl()
    impl.shell_class = WaitsForPipesShell
    return impl
