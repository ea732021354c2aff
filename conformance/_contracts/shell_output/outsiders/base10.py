"""An outsider's shell-output observer runner: batch 10's own implementation.

Outsider batch 10 (soo10, see ``__init__``): written from the docs alone (the contract page
without its boundary checklist, oracle coverage and outsider sections, the driver's
docstring, the Python adapter's, usage.md, adapters.md and one seed), without reading the
reference, its adapter, the oracle or the scenarios. Kept as written (the original
``b10soo_base.py`` had sha256
71b7c4f66aa825c50b03d3a708a8c04944ba1cf057b9d55e078d5a7d0cd0b21c); only the imports,
typing, the linter's layout and the adapter builder at the end were touched. By the
outsider's own runs it conforms to every scenario of main 867e31e (118 of 118) under both
profiles, on asyncio and trio; it is the control the batch's variants (``batch10.py``) are
judged against.

The outsider's own summary of the design (not the reference's):

One presentation thread per observed invocation, an unbounded deque per session guarded
by one condition, drain threads that only copy and offer, a waiter thread that joins the
drains then reaps the child, and an async caller that polls a ``threading.Event`` inside
an anyio cancel scope whose deadline is the time limit (the same on asyncio and trio, no
thread pool). At the limit it cancels the session first, then SIGKILLs the process group
and waits up to 1 s for the pipes.

One fix by the kit, found by ``soo-timeout-detached-grandchild-holds-pipes`` (a
grandchild outside the process group holds the pipes after the time limit's kill): after
that kill ``_stop_at_limit`` waited up to 1 s (``KILL_DRAIN_LIMIT``) for end of file on
the pipes, so the call returned 1 s past its limit, right at that scenario's bound (0.5
s limit, 1.5 s). It now waits only until the killed group is gone and then briefly for
the pipes (``at_limit.wait_after_kill``). The wait as written is not registered as a
mutant: it lands on the bound itself, so no scenario kills it deterministically.
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

log = logging.getLogger("b10soo.shell")
log.addHandler(logging.NullHandler())

READ_SIZE = 65536
POLL = 0.003
#: After a time limit kill: how long the caller waits for the pipes to close.
KILL_DRAIN_LIMIT = 1.0


class ShellOutputStream(enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


def _stream(value: Any) -> ShellOutputStream:
    if isinstance(value, ShellOutputStream):
        return value
    return ShellOutputStream(str(getattr(value, "value", value)))


class CommandRefused(Exception):
    pass


class CommandFailed(Exception):
    pass


class _Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 1

    def take(self) -> int:
        with self._lock:
            value = self._next
            self._next += 1
            return value


_FINISH = object()


class Session:
    """Phase + per-stream budget + FIFO + presentation thread for one invocation."""

    def __init__(self, invocation: int, observer: Any, budget: int, shell: Shell) -> None:
        self.invocation = invocation
        self._shell = shell
        if hasattr(observer, "on_output"):
            self._on_output = observer.on_output
            self._on_finish = getattr(observer, "on_finish", None)
        else:
            self._on_output = observer
            self._on_finish = None
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[Any] = deque()
        self._phase = "ACTIVE"  # ACTIVE, FINISHED, CANCELLED
        self._stopped = False  # presentation must end (cancel, raise)
        self._busy = False  # a callback is in flight
        self._ended = False
        self._left = {ShellOutputStream.STDOUT: budget, ShellOutputStream.STDERR: budget}
        self._start_presentation()

    def _start_presentation(self) -> None:
        self._thread = threading.Thread(
            target=self._present, name=f"soo-present-{self.invocation}", daemon=True
        )
        self._thread.start()

    # --- producer side ---------------------------------------------------------
    def _admit(self, stream: ShellOutputStream, chunk: bytes) -> bytes:
        left = self._left[stream]
        if left <= 0:
            return b""
        if len(chunk) > left:
            chunk = chunk[:left]
        self._left[stream] = left - len(chunk)
        return chunk

    def offer(self, stream: Any, chunk: Any) -> None:
        stream = _stream(stream)
        data = bytes(chunk)
        if not data:
            return
        with self._cond:
            if self._phase != "ACTIVE" or self._stopped:
                return
            data = self._admit(stream, data)
            if not data:
                return
            self._queue.append((stream, data))
            self._cond.notify()

    def finish(self) -> None:
        with self._cond:
            if self._phase != "ACTIVE":
                return
            self._phase = "FINISHED"
            if not self._stopped:
                self._queue.append(_FINISH)
            self._cond.notify()

    def cancel(self) -> None:
        with self._cond:
            if self._phase != "ACTIVE":
                return
            self._phase = "CANCELLED"
            self._stopped = True
            self._queue.clear()
            self._cond.notify()

    # --- presentation thread ---------------------------------------------------
    def _present(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and not self._stopped:
                        self._cond.wait()
                    if self._stopped:
                        return
                    item = self._queue.popleft()
                    self._busy = True
                try:
                    if item is _FINISH:
                        if self._on_finish is not None:
                            try:
                                self._on_finish(self.invocation)
                            except Exception:
                                log.exception("on_finish failed (invocation %s)", self.invocation)
                        return
                    stream, data = item
                    try:
                        self._on_output(self.invocation, stream, data)
                    except Exception:
                        log.exception("on_output failed (invocation %s)", self.invocation)
                        with self._cond:
                            self._stopped = True
                            self._queue.clear()
                        return
                finally:
                    with self._cond:
                        self._busy = False
        finally:
            with self._cond:
                self._ended = True
                self._queue.clear()

    def idle(self) -> bool:
        with self._cond:
            return self._ended or (not self._queue and not self._busy)


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
        self.buf = bytearray()
        self.truncated = False

    def add(self, data: bytes) -> None:
        room = self.cap - len(self.buf)
        if len(data) > room:
            self.truncated = True
            if room > 0:
                self.buf += data[:room]
        else:
            self.buf += data


class Shell:
    session_class = Session

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
        self._ids = _Counter()
        self._sessions_lock = threading.Lock()
        self._sessions: list[Session] = []

    # --- sessions ------------------------------------------------------------
    def _new_id(self) -> int:
        return self._ids.take()

    def observe(self, observer: Any) -> Session:
        session = self.session_class(self._new_id(), observer, self.live_budget, self)
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

    # --- processes -----------------------------------------------------------
    def _drain(
        self, fd: int, stream: ShellOutputStream, capture: _Capture, session: Session | None
    ) -> None:
        self.thread_hook("drain", None if session is None else session.invocation)
        try:
            while True:
                try:
                    data = os.read(fd, READ_SIZE)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not data:
                    break
                capture.add(data)
                if session is not None:
                    session.offer(stream, data)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _child_env(self, observed: bool) -> dict[str, str] | None:
        return None  # inherit, observed or not

    def _spawn(self, argv: Sequence[str], *, observed: bool) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            bufsize=0,
            env=self._child_env(observed),
        )

    def _kill_group(self, proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, OSError):
            proc.kill()

    def _timed_out_exit_code(self, proc: subprocess.Popen[bytes]) -> int | None:
        return None

    def _limit(self, timeout: float | None) -> float | None:
        return timeout

    def _complete(self, session: Session | None, proc: subprocess.Popen[bytes]) -> None:
        """Normal completion: both pipes at EOF and the child reaped."""
        if session is not None:
            session.finish()

    async def _stop_at_limit(self, proc: subprocess.Popen[bytes], done: threading.Event) -> None:
        """The time limit fired (observation already cancelled): end the group."""
        self._kill_group(proc)
        # the kit's fix (see the docstring): not the pipes' end of file, the group's end
        await wait_after_kill(proc, done.is_set)

    async def _wait_done(self, done: threading.Event, timeout: float | None) -> bool:
        """Wait for completion; True if it completed before the limit."""
        timeout = self._limit(timeout)
        deadline = float("inf") if timeout is None else anyio.current_time() + timeout
        with anyio.CancelScope(deadline=deadline) as scope:
            while not done.is_set():
                await anyio.sleep(POLL)
        return not scope.cancelled_caught

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
        session: Session | None = None
        if observer is not None:
            session = self.observe(observer)
            if on_invocation is not None:
                on_invocation(session.invocation)
        try:
            proc = self._spawn(argv, observed=session is not None)
        except OSError as error:
            if session is not None:
                session.cancel()
            raise CommandFailed(f"cannot spawn {argv[0]!r}: {error}") from error
        out_cap, err_cap = _Capture(self.output_cap), _Capture(self.output_cap)
        assert proc.stdout is not None
        assert proc.stderr is not None
        out_fd = os.dup(proc.stdout.fileno())
        err_fd = os.dup(proc.stderr.fileno())
        proc.stdout.close()
        proc.stderr.close()
        drains = [
            threading.Thread(
                target=self._drain,
                args=(out_fd, ShellOutputStream.STDOUT, out_cap, session),
                daemon=True,
            ),
            threading.Thread(
                target=self._drain,
                args=(err_fd, ShellOutputStream.STDERR, err_cap, session),
                daemon=True,
            ),
        ]
        for t in drains:
            t.start()
        done = threading.Event()

        def waiter() -> None:
            for t in drains:
                t.join()
            proc.wait()
            done.set()

        threading.Thread(target=waiter, daemon=True).start()

        try:
            completed = await self._wait_done(done, timeout)
        except BaseException:
            if session is not None:
                session.cancel()
            self._kill_group(proc)
            raise
        if completed:
            self._complete(session, proc)
            return ShellResult(
                exit_code=proc.returncode,
                stdout=bytes(out_cap.buf),
                stderr=bytes(err_cap.buf),
                stdout_truncated=out_cap.truncated,
                stderr_truncated=err_cap.truncated,
                timed_out=False,
            )
        # the time limit fired first: a cancellation for the observer
        if session is not None:
            session.cancel()
        await self._stop_at_limit(proc, done)
        return ShellResult(
            exit_code=self._timed_out_exit_code(proc),
            stdout=bytes(out_cap.buf),
            stderr=bytes(err_cap.buf),
            stdout_truncated=out_cap.truncated,
            stderr_truncated=err_cap.truncated,
            timed_out=True,
        )


class Implementation:
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
            output_cap=output_cap,
            live_budget=live_budget,
            policy=policy,
            thread_hook=thread_hook,
        )


def make_adapter(
    implementation: Implementation, *, name: str = "b10soo-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[ShellOutputDriver(implementation)],
        backend=backend,
        concurrent=True,
    )


def build(
    backend: str = "asyncio",
    implementation: Implementation | None = None,
    name: str = "soo-outsider-base-10",
) -> PythonAdapter:
    """The outsider's base (or a variant's ``implementation``) as an adapter: the control.

    (The outsider's file ended with module-level ``adapter`` and ``adapter_trio`` built by
    ``make_adapter``; this builds the same for either backend, for the kit's meta-test.)
    """
    return make_adapter(implementation or Implementation(), name=name, backend=backend)


def adapter() -> PythonAdapter:
    """The base on asyncio (the outsider's ``adapter``)."""
    return build()


def adapter_trio() -> PythonAdapter:
    """The base on trio (the outsider's ``adapter_trio``)."""
    return build("trio", name="soo-outsider-base-10-trio")
