"""An outsider's shell-output observer runner: batch 5's own implementation.

Outsider batch 5 (soo5, see ``__init__``): written from docs/contracts/shell-output-observer.md
(without its boundary checklist, oracle coverage and outsider sections), the seed page,
CONTRACTS.md, usage.md, scenarios.md and the driver's docstring, without reading the
reference, its adapter, the oracle or the scenarios. Kept as written (the original
``b5soo_base.py`` had sha256
a5d2a496d0df1ba5d6a21a2fb68fb9f1c9c0026cb9f6678616ed2423c7c05544); only the imports, typing,
the linter's rewrites that keep the behaviour, and the adapter builder at the end were
touched. It conforms to every scenario under both profiles (92 of 92, the outsider's own
runs against main b859591), and it is the control the batch's variants (``batch5.py``)
are judged against.

The outsider's own summary of the design (not the reference's):

- ``Shell.observe(observer)`` takes the next ID of this shell's own counter and returns a
  ``Session``: phase ACTIVE/FINISHED/CANCELLED, one live budget per stream, an unbounded
  FIFO queue and one presentation thread that alone calls the observer.
- ``Shell.run(argv, ...)``: policy check first (a refusal takes no ID), then the ID and
  the session, then spawn in a new session (own process group). Two drain threads read
  each pipe with ``os.read`` (whatever is there), copy into the result's capture (own
  cap) and offer to the session. A waiter thread joins both drains, then reaps the child,
  and sets an event. The async caller polls that event (works on any anyio backend),
  with a wall-clock deadline; on the deadline or a cancellation it cancels the session
  first, then kills the whole process group.

One fix by the kit, found by ``soo-timeout-detached-grandchild-holds-pipes`` (a
grandchild outside the process group holds the pipes after the time limit's kill): after
that kill the base waited for end of file on the pipes up to 2 s (``KILL_GRACE``), so
the call returned only when that grandchild let go, not at its limit (SOO-TIMEOUT). It
now waits only until the killed group is gone and then briefly for the pipes
(``at_limit.wait_after_kill``); the wait as written is kept, as the mutant
``out-soo-base5-timeout-waits-for-pipes`` (``waits_for_pipes`` at the end of this file).
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

log = logging.getLogger("b5soo")
log.addHandler(logging.NullHandler())

READ_SIZE = 64 * 1024
#: Once this many entries wait in the queue, a small chunk joins its stream's newest entry.
COALESCE_BEHIND = 16
COALESCE_SMALL = 4096
COALESCE_MAX = 256 * 1024
#: How long a timed-out or cancelled run waits for the pipes to close after the kill.
KILL_GRACE = 2.0
POLL = 0.002


class Stream(enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


def _stream(value: Any) -> Stream:
    return Stream(getattr(value, "value", value))


class CommandRefused(Exception):
    pass


class SpawnFailed(Exception):
    pass


@dataclass
class Result:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool


ACTIVE, FINISHED, CANCELLED = "active", "finished", "cancelled"


class Session:
    """Observation of one invocation."""

    def __init__(self, shell: Shell, invocation: int, observer: Any, budget: int) -> None:
        self.shell = shell
        self.invocation = invocation
        if hasattr(observer, "on_output"):
            self._on_output = observer.on_output
            self._on_finish = getattr(observer, "on_finish", None)
        else:
            self._on_output = observer
            self._on_finish = None
        self.observer = observer
        self._cond = threading.Condition()
        self._phase = ACTIVE
        self._stopped = False  # the presentation thread is ending (cancel, raise, finish)
        self._left = {Stream.STDOUT: budget, Stream.STDERR: budget}
        # entries: ["out", stream, bytearray] or ["finish"]
        self._queue: collections.deque[list[Any]] = collections.deque()
        self._thread = threading.Thread(
            target=self._present, name=f"b5soo-present-{invocation}", daemon=True
        )
        self._thread.start()

    # -- producer side (drain threads, or the kit) -------------------------------------

    def offer(self, stream: Any, chunk: bytes) -> None:
        s = _stream(stream)
        with self._cond:
            if self._phase != ACTIVE or self._stopped:
                return
            left = self._left[s]
            if left <= 0 or not chunk:
                return
            piece = bytes(chunk[:left])
            self._left[s] = left - len(piece)
            self._enqueue(s, piece)
            self._cond.notify()

    def _enqueue(self, s: Stream, piece: bytes) -> None:
        if len(self._queue) >= COALESCE_BEHIND and len(piece) <= COALESCE_SMALL:
            for entry in reversed(self._queue):
                if entry[0] == "out" and entry[1] is s:
                    if len(entry[2]) + len(piece) <= COALESCE_MAX:
                        entry[2] += piece
                        return
                    break
        self._queue.append(["out", s, bytearray(piece)])

    def finish(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = FINISHED
            self._queue.append(["finish"])
            self._cond.notify()

    def cancel(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = CANCELLED
            self._queue.clear()
            self._cond.notify()

    # -- presentation thread -------------------------------------------------------------

    def _next(self) -> list[Any] | None:
        with self._cond:
            while True:
                if self._phase == CANCELLED or self._stopped:
                    return None
                if self._queue:
                    return self._queue.popleft()
                self._cond.wait()

    def _present(self) -> None:
        try:
            while True:
                entry = self._next()
                if entry is None:
                    return
                if entry[0] == "finish":
                    self._call_finish()
                    return
                try:
                    self._on_output(self.invocation, entry[1], bytes(entry[2]))
                except Exception:
                    log.warning(
                        "on_output raised; observation of %s ends", self.invocation, exc_info=True
                    )
                    self._stop()
                    return
        finally:
            with self._cond:
                self._stopped = True
                self._queue.clear()
            self.shell._ended(self)

    def _stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._queue.clear()

    def _call_finish(self) -> None:
        if self._on_finish is None:
            return
        try:
            self._on_finish(self.invocation)
        except Exception:
            log.warning("on_finish raised (ignored)", exc_info=True)

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()


class _Capture:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False
        self.lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        with self.lock:
            room = self.cap - len(self.data)
            if len(chunk) > room:
                self.truncated = True
            if room > 0:
                self.data += chunk[:room]

    def snapshot(self) -> tuple[bytes, bool]:
        with self.lock:
            return bytes(self.data), self.truncated


class Shell:
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
        self._lock = threading.Lock()
        self._next_id = 1
        self._sessions: list[Session] = []

    session_class: type[Session] = Session

    # -- IDs and sessions ------------------------------------------------------------------

    def _take_id(self) -> int:
        with self._lock:
            ident = self._next_id
            self._next_id += 1
            return ident

    def observe(self, observer: Any) -> Session:
        session = self.session_class(self, self._take_id(), observer, self.live_budget)
        with self._lock:
            self._sessions.append(session)
        return session

    def _ended(self, session: Session) -> None:
        pass

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            sessions = list(self._sessions)
        ok = True
        for session in sessions:
            if not session.join(max(0.0, deadline - time.monotonic())):
                ok = False
        return ok

    # -- processes -----------------------------------------------------------------------

    def _spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def _drain(
        self,
        fd: int,
        stream: Stream,
        capture: _Capture,
        session: Session | None,
        invocation: int | None,
    ) -> None:
        self.thread_hook("drain", invocation)
        try:
            while True:
                chunk = os.read(fd, READ_SIZE)
                if not chunk:
                    return
                capture.add(chunk)
                if session is not None:
                    session.offer(stream, chunk)
        except OSError:
            return

    def _kill_group(self, proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def _on_spawn_error(self, session: Session | None) -> None:
        """Spawning failed after observation began: end it without a finish."""
        if session is not None:
            session.cancel()

    def _on_pipes_closed(self, session: Session | None) -> None:
        """Waiter thread, both pipes at EOF and the child reaped (the caller finishes)."""

    def _begin_observation(
        self, observer: Any, on_invocation: Callable[[int], None] | None
    ) -> Session | None:
        if observer is None:
            return None
        session = self.observe(observer)
        if on_invocation is not None:
            on_invocation(session.invocation)
        return session

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> Result:
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        reason = self.policy(argv)
        if reason is not None:
            raise CommandRefused(reason)
        session = self._begin_observation(observer, on_invocation)
        invocation = None if session is None else session.invocation
        try:
            proc = self._spawn(argv)
        except OSError as error:
            self._on_spawn_error(session)
            raise SpawnFailed(f"cannot spawn {argv[0]!r}: {error}") from error
        assert proc.stdout is not None
        assert proc.stderr is not None
        out, err = _Capture(self.output_cap), _Capture(self.output_cap)
        drains = [
            threading.Thread(
                target=self._drain,
                daemon=True,
                args=(proc.stdout.fileno(), Stream.STDOUT, out, session, invocation),
            ),
            threading.Thread(
                target=self._drain,
                daemon=True,
                args=(proc.stderr.fileno(), Stream.STDERR, err, session, invocation),
            ),
        ]
        done = threading.Event()

        def waiter() -> None:
            for d in drains:
                d.join()
            proc.wait()
            proc.stdout.close()  # type: ignore[union-attr]
            proc.stderr.close()  # type: ignore[union-attr]
            self._on_pipes_closed(session)
            done.set()

        for d in drains:
            d.start()
        threading.Thread(target=waiter, daemon=True).start()
        timed_out = False
        try:
            while not done.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    timed_out = True
                    break
                await anyio.sleep(POLL)
        except BaseException:
            if session is not None:
                session.cancel()
            self._kill_group(proc)
            raise
        if timed_out:
            return await self._timed_out(proc, session, done, out, err)
        if session is not None:
            session.finish()
        stdout, out_t = out.snapshot()
        stderr, err_t = err.snapshot()
        return Result(proc.returncode, stdout, stderr, out_t, err_t, False)

    async def _after_limit_kill(self, proc: subprocess.Popen[bytes], done: threading.Event) -> None:
        """The kit's fix: return once the killed group is gone, not at end of file."""
        await wait_after_kill(proc, done.is_set)

    async def _timed_out(
        self,
        proc: subprocess.Popen[bytes],
        session: Session | None,
        done: threading.Event,
        out: _Capture,
        err: _Capture,
    ) -> Result:
        if session is not None:
            session.cancel()
        self._kill_group(proc)
        await self._after_limit_kill(proc, done)
        stdout, out_t = out.snapshot()
        stderr, err_t = err.snapshot()
        return Result(None, stdout, stderr, out_t, err_t, True)


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
            output_cap=output_cap, live_budget=live_budget, policy=policy, thread_hook=thread_hook
        )


def build(
    backend: str = "asyncio", impl: Implementation | None = None, name: str = "soo-outsider-base-5"
) -> PythonAdapter:
    """The outsider's base (or a variant's ``impl``) as an adapter: the batch's control.

    (The outsider's file ended with ``make_adapter(name, shell_class)`` and a module-level
    ``adapter``; this builder does the same for the kit's meta-test.)
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
    """After the time limit's group kill, waits up to 2 s for end of file on the pipes."""

    async def _after_limit_kill(self, proc: subprocess.Popen[bytes], done: threading.Event) -> None:
        limit = time.monotonic() + KILL_GRACE
        while not done.is_set() and time.monotonic() < limit:
            await anyio.sleep(POLL)


def waits_for_pipes() -> Implementation:
    """The base as written (the mutant ``out-soo-base5-timeout-waits-for-pipes``)."""
    impl = Implementation()
    impl.shell_class = WaitsForPipesShell
    return impl
