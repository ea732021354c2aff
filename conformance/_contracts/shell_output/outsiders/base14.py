"""An outsider's shell-output observer runner: batch 14's own implementation.

Outsider batch 14 (b14soo): written from the docs of main ecbade0 alone (the contract page,
scenarios.md, usage.md, adapters.md, the seeds and the driver, plus the public
``seamspec run`` and ``seamspec rules``), without reading the reference, its adapter, the
oracle or the scenarios. Kept as written (the original ``b14soo_base.py`` had sha256
aec172daaec3f7826925b13611d68b397d4f0d378d94171e5e3278f60b51e84f); only the imports, the
type annotations the outsider left out (mypy strict), ``noqa`` marks for the linter's
complaints (the layout is ruff format's) and the adapter builder at the end (``build``,
for either backend) changed. By the outsider's own runs it conforms to every
shell-output scenario of main ecbade0 (151 of 151) under both profiles, on asyncio and
trio. It is the control the batch's variants (``batch14.py``) are judged against.

The outsider's summary of the design: one session per observed invocation (phase, a live
budget per stream, a deque that also holds a FINISH marker, its own presentation thread),
two drain threads (capture first, then offer), a reaper thread, and an async caller that
polls every 5 ms (the same code on asyncio and trio). At the limit it cancels the session,
then SIGKILLs the group, then waits up to 1 s for the reap and up to 0.1 s for end of
file. Small chunks are merged into the newest queued entry once the queue is 16 entries
behind.

(The outsider's module docstring: "b14soo base: a shell-output runner written from the contract page alone. One observed invocation: a session (phase, live budget per stream, FIFO queue) with its own presentation thread; a drain thread per pipe (capture into the result, then offer); a reaper thread that collects the child's exit. The async caller polls a completion event, so it works the same under asyncio and trio.")
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
from seamspec.conformance._core.python_adapter import PythonAdapter

log = logging.getLogger("b14soo.shell")
log.addHandler(logging.NullHandler())

POLL = 0.005
MERGE_BEHIND = 16
MERGE_MAX = 256 * 1024


class Stream(enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


def _stream(value: Any) -> Stream:
    if isinstance(value, Stream):
        return value
    return Stream(str(getattr(value, "value", value)))


class CommandRefused(Exception):
    pass


class CommandFailed(Exception):
    pass


@dataclass
class Result:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool


_FINISH = object()

ACTIVE, FINISHED, CANCELLED, DISABLED = "active", "finished", "cancelled", "disabled"


class Session:
    def __init__(self, shell: Shell, observer: Any, invocation: int, budget: int) -> None:
        self.shell = shell
        self.invocation = invocation
        self._observer = observer
        if callable(getattr(observer, "on_output", None)):
            self._on_output = observer.on_output
            fin = getattr(observer, "on_finish", None)
            self._on_finish = fin if callable(fin) else None
        else:
            self._on_output = observer
            self._on_finish = None
        self._cond = threading.Condition()
        self._phase = ACTIVE
        self._queue: deque[Any] = deque()
        self._left = self._initial_budget(budget)
        self._in_callback = False
        self._ended = False
        self._thread = threading.Thread(
            target=self._present, name=f"b14soo-present-{invocation}", daemon=True
        )
        self._thread.start()

    # -- budget -------------------------------------------------------------------------
    def _initial_budget(self, budget: int) -> dict[Stream, int]:
        return {Stream.STDOUT: budget, Stream.STDERR: budget}

    def _cut(self, stream: Stream, chunk: bytes) -> bytes | None:
        """Apply the live budget (called under the lock); None: drop."""
        left = self._left[stream]
        if left <= 0:
            return None
        if len(chunk) > left:
            chunk = chunk[:left]
        self._left[stream] = left - len(chunk)
        return chunk

    # -- queue --------------------------------------------------------------------------
    def _enqueue(self, stream: Stream, chunk: bytes) -> None:
        q = self._queue
        if len(q) >= MERGE_BEHIND and len(chunk) < MERGE_MAX:
            for i in range(len(q) - 1, -1, -1):
                entry = q[i]
                if entry is _FINISH:
                    break
                if entry[0] is stream:
                    if len(entry[1]) + len(chunk) <= MERGE_MAX:
                        q[i] = (stream, entry[1] + chunk)
                        return
                    break
        q.append((stream, chunk))

    def offer(self, stream: Any, chunk: Any) -> None:
        stream = _stream(stream)
        data = bytes(chunk)
        if not data:
            return
        with self._cond:
            if self._phase != ACTIVE:
                return
            cut = self._cut(stream, data)
            if cut is None or len(cut) == 0 and not self._allow_empty():  # noqa: RUF021
                return
            self._enqueue(stream, cut)
            self._cond.notify_all()

    def _allow_empty(self) -> bool:
        return False

    def finish(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = FINISHED
            self._queue.append(_FINISH)
            self._cond.notify_all()

    def cancel(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = CANCELLED
            self._queue.clear()
            self._cond.notify_all()

    # -- presentation -------------------------------------------------------------------
    def _present(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and self._phase in (ACTIVE, FINISHED):
                        self._cond.wait()
                    if not self._queue:
                        return  # cancelled or disabled
                    item = self._queue.popleft()
                    self._in_callback = True
                try:
                    if item is _FINISH:
                        if self._on_finish is not None:
                            try:
                                self._on_finish(self.invocation)
                            except Exception:
                                log.exception("on_finish of invocation %s failed", self.invocation)
                        return
                    stream, chunk = item
                    try:
                        self._on_output(self.invocation, stream, chunk)
                    except Exception:
                        log.exception("on_output of invocation %s failed", self.invocation)
                        with self._cond:
                            self._phase = DISABLED
                            self._queue.clear()
                        return
                finally:
                    with self._cond:
                        self._in_callback = False
                        self._cond.notify_all()
        finally:
            with self._cond:
                self._ended = True
                self._queue.clear()
                self._cond.notify_all()

    def idle(self) -> bool:
        with self._cond:
            return self._ended or (not self._queue and not self._in_callback)


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
        self._id_lock = threading.Lock()
        self._next_id = 0
        self._sessions_lock = threading.Lock()
        self._sessions: list[Session] = []

    # -- sessions -----------------------------------------------------------------------
    def _take_id(self) -> int:
        with self._id_lock:
            self._next_id += 1
            return self._next_id

    def _budget(self) -> int:
        return self.live_budget

    def observe(self, observer: Any) -> Session:
        session = self.session_class(self, observer, self._take_id(), self._budget())
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
            time.sleep(POLL)

    # -- processes ----------------------------------------------------------------------
    def _is_observed(self, observer: Any) -> bool:
        return observer is not None

    def _spawn(self, argv: Sequence[str], observed: bool) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )

    def _kill(self, proc: subprocess.Popen[bytes], observed: bool) -> None:
        try:  # noqa: SIM105
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:  # noqa: SIM105
            proc.kill()
        except (ProcessLookupError, OSError):
            pass

    def _capture(self, cap_state: dict[str, Any], data: bytes) -> None:
        buf: bytearray = cap_state["buf"]
        room = self.output_cap - len(buf)
        if len(data) > room:
            cap_state["truncated"] = True
        if room > 0:
            buf += data[:room]

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> Result:
        started = time.monotonic()
        deadline = None if timeout is None else started + max(0.0, float(timeout))
        reason = self.policy(argv)
        if reason is not None:
            raise CommandRefused(reason)
        observed = self._is_observed(observer)
        session = self.observe(observer) if observed else None
        invocation = session.invocation if session else None
        if session is not None and on_invocation is not None:
            on_invocation(invocation)  # type: ignore[arg-type]
        try:
            proc = self._spawn(argv, observed)
        except OSError as error:
            if session is not None:
                session.cancel()
            raise CommandFailed(f"cannot spawn {argv[0]!r}: {error}") from error

        lock = threading.Lock()
        caps: dict[Stream, dict[str, Any]] = {
            Stream.STDOUT: {"buf": bytearray(), "truncated": False},
            Stream.STDERR: {"buf": bytearray(), "truncated": False},
        }
        eof = {Stream.STDOUT: threading.Event(), Stream.STDERR: threading.Event()}
        exited = threading.Event()
        pipes: dict[Stream, Any] = {Stream.STDOUT: proc.stdout, Stream.STDERR: proc.stderr}

        def drain(stream: Stream) -> None:
            self.thread_hook("drain", invocation)
            fd = pipes[stream].fileno()
            try:
                while True:
                    try:
                        data = os.read(fd, 65536)
                    except OSError:
                        break
                    if not data:
                        break
                    with lock:
                        self._capture(caps[stream], data)
                    if session is not None:
                        session.offer(stream, data)
            finally:
                eof[stream].set()
                try:  # noqa: SIM105
                    pipes[stream].close()
                except OSError:
                    pass

        def reap() -> None:
            proc.wait()
            exited.set()

        for s in (Stream.STDOUT, Stream.STDERR):
            threading.Thread(
                target=drain, args=(s,), daemon=True, name=f"b14soo-drain-{s.value}"
            ).start()
        threading.Thread(target=reap, daemon=True, name="b14soo-reap").start()

        def completed() -> bool:
            return exited.is_set() and eof[Stream.STDOUT].is_set() and eof[Stream.STDERR].is_set()

        def snapshot(exit_code: int | None, timed_out: bool) -> Result:
            with lock:
                return Result(
                    exit_code=exit_code,
                    stdout=bytes(caps[Stream.STDOUT]["buf"]),
                    stderr=bytes(caps[Stream.STDERR]["buf"]),
                    stdout_truncated=bool(caps[Stream.STDOUT]["truncated"]),
                    stderr_truncated=bool(caps[Stream.STDERR]["truncated"]),
                    timed_out=timed_out,
                )

        ended = False
        try:
            while True:
                if completed():
                    ended = True
                    if session is not None:
                        session.finish()
                    return snapshot(proc.returncode, False)
                if deadline is not None and time.monotonic() >= deadline:
                    break
                await anyio.sleep(POLL)
            # the time limit fired: stop observing first, then end the group
            ended = True
            if session is not None:
                session.cancel()
            self._kill(proc, observed)
            await self._after_kill(exited, eof)
            return snapshot(None, True)
        finally:
            if not ended:  # cancelled (or something else went wrong)
                if session is not None:
                    session.cancel()
                self._kill(proc, observed)

    async def _after_kill(
        self, exited: threading.Event, eof: dict[Stream, threading.Event]
    ) -> None:
        limit = time.monotonic() + 1.0
        while not exited.is_set() and time.monotonic() < limit:
            await anyio.sleep(POLL)
        limit = time.monotonic() + 0.1
        while not all(e.is_set() for e in eof.values()) and time.monotonic() < limit:
            await anyio.sleep(POLL)


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


def make_adapter(
    impl: Any = None, *, name: str = "b14soo-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[ShellOutputDriver(impl if impl is not None else Implementation())],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(name="b14soo-base-trio", backend="trio")


def build(
    backend: str = "asyncio",
    implementation: Implementation | None = None,
    name: str = "soo-outsider-base-14",
) -> PythonAdapter:
    """The outsider's base (or a variant's ``implementation``) as an adapter: the control.

    (The outsider's file ends with ``adapter`` and ``adapter_trio`` built by
    ``make_adapter``; this builds the same for either backend, for the kit's meta-test.)
    """
    return make_adapter(implementation, name=name, backend=backend)
