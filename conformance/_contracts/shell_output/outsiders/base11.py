"""An outsider's shell-output observer runner: batch 11's own implementation.

Outsider batch 11 (soo11, see ``__init__``): written from the docs alone (the contract page
without its boundary checklist, oracle coverage and outsider sections, the driver's
docstring, usage.md, adapters.md, scenarios.md and seeds 000, 003, 004), without reading the
reference, its adapter, the oracle or the scenarios. Kept as written (the original
``b11soo_base.py`` had sha256
cdf1e813c876b43083528ceff7316774a71293fb7439aacb2109043e981954e1); only the imports, typing
(``features`` annotated as a tuple of any length, as the driver's protocol has it), the
linter's layout (ruff format, and three ``try``/``except``/``pass`` written as
``contextlib.suppress``, the same behaviour) and the adapter builder at the end
(``build``, for either backend) changed. Written from the docs of main 6a1c661: by the
outsider's own runs it conforms to every shell-output scenario there (130 of 130) under
both profiles, on asyncio and trio, and the kit's run against main 83f2bad (130
scenarios, strict) says the same. It is the control the batch's variants
(``batch11.py``) are judged against. Unlike every earlier base it needed no fix after a
time limit: it waits only until no process of the killed group is left, not counting
zombies (it reads ``/proc``), and then at most 0.1 s for the pipes.

The outsider's own summary of the design (not the reference's): a session per observed
invocation holds the phase, a budget per stream and an unbounded deque, and has one
daemon presentation thread of its own. Two drain threads read 64 KiB at a time, copy into
a capped capture, then offer; a waiter thread joins both drains, reaps the child and
writes to a socketpair, which the async caller waits for with
``anyio.wait_socket_readable`` (asyncio and trio alike). A time limit is
``anyio.move_on_after``; when it fires the runner cancels the session, SIGKILLs the
group, waits until no non-zombie process of it is left and gives the pipes at most 0.1 s.
A cancellation cancels the session, kills the group and re-raises. The ID is taken before
spawning; a spawn failure cancels the session and raises ``CommandFailed``.

(The outsider's module docstring: "b11soo: an outsider's shell-output observer runner,
written from the contract page. One observed invocation: a session (phase, per-stream live
budget, FIFO queue) fed by two drain threads, delivered by one presentation thread of its
own; the async caller waits on a socketpair the waiter thread writes to, which works under
asyncio and trio.")
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import signal
import socket
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

log = logging.getLogger("b11soo.shell")
log.addHandler(logging.NullHandler())

READ_SIZE = 64 * 1024


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


class _Plain:
    """A plain function as an observer: no finish notice."""

    def __init__(self, function: Callable[[int, ShellOutputStream, bytes], None]) -> None:
        self.on_output = function


def as_shell_observer(observer: Any) -> Any:
    if hasattr(observer, "on_output"):
        return observer
    if callable(observer):
        return _Plain(observer)
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


_FINISH = object()

ACTIVE, FINISHED, CANCELLED = "active", "finished", "cancelled"


class ObservationSession:
    """Phase + budget per stream + unbounded queue + one presentation thread."""

    def __init__(self, invocation: int, observer: Any, budget: int) -> None:
        self.invocation = invocation
        self._observer = as_shell_observer(observer)
        self._cond = threading.Condition()
        self._phase = ACTIVE
        self._disabled = False
        self._budget = {ShellOutputStream.STDOUT: budget, ShellOutputStream.STDERR: budget}
        self._queue: deque[Any] = deque()
        self._busy = False
        self._ended = False
        self._thread = threading.Thread(
            target=self._present, name=f"b11soo-present-{invocation}", daemon=True
        )
        self._thread.start()

    # -- the producers' side: never blocks beyond a short lock ---------------------
    def offer(self, stream: Any, chunk: bytes | bytearray | memoryview) -> None:
        stream = _stream(stream)
        if not chunk:
            return
        with self._cond:
            if self._phase != ACTIVE or self._disabled:
                return
            left = self._budget[stream]
            if left <= 0:
                return
            piece = bytes(chunk[:left])
            if not piece:
                return
            self._budget[stream] = left - len(piece)
            self._queue.append((stream, piece))
            self._cond.notify_all()

    def finish(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = FINISHED
            if not self._disabled:
                self._queue.append(_FINISH)
            self._cond.notify_all()

    def cancel(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = CANCELLED
            self._queue.clear()
            self._cond.notify_all()

    # -- the presentation thread ---------------------------------------------------
    def _present(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and self._phase != CANCELLED and not self._disabled:
                        self._cond.wait()
                    if self._phase == CANCELLED or self._disabled:
                        return
                    item = self._queue.popleft()
                    self._busy = True
                if item is _FINISH:
                    on_finish = getattr(self._observer, "on_finish", None)
                    if on_finish is not None:
                        try:
                            on_finish(self.invocation)
                        except Exception:
                            log.exception("on_finish of invocation %s raised", self.invocation)
                    return
                stream, piece = item
                try:
                    self._observer.on_output(self.invocation, stream, piece)
                except Exception:
                    log.exception("on_output of invocation %s raised", self.invocation)
                    with self._cond:
                        self._disabled = True
                        self._queue.clear()
                    return
                finally:
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()
        finally:
            with self._cond:
                self._busy = False
                self._ended = True
                self._queue.clear()
                self._cond.notify_all()

    def idle(self) -> bool:
        with self._cond:
            return self._ended or (not self._busy and not self._queue)

    def wait_idle(self, deadline: float) -> bool:
        with self._cond:
            while not (self._ended or (not self._busy and not self._queue)):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True


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
        self.truncated = False
        self.lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        with self.lock:
            room = self.cap - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            if len(chunk) > max(room, 0):
                self.truncated = True

    def snapshot(self) -> tuple[bytes, bool]:
        with self.lock:
            return bytes(self.data), self.truncated


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


class ShellRunner:
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
        self._lock = threading.Lock()
        self._sessions: list[ObservationSession] = []

    # -- sessions ------------------------------------------------------------------
    def observe(self, observer: Any) -> ObservationSession:
        invocation = self.ids.take()
        session = ObservationSession(invocation, observer, self.live_budget)
        with self._lock:
            self._sessions = [s for s in self._sessions if not s._ended]
            self._sessions.append(session)
        return session

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            sessions = list(self._sessions)
        return all(s.wait_idle(deadline) for s in sessions)

    # -- processes -----------------------------------------------------------------
    def _spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )

    def _drain(
        self,
        fd: int,
        stream: ShellOutputStream,
        capture: _Capture,
        session: ObservationSession | None,
        done: threading.Event,
    ) -> None:
        try:
            if self.thread_hook is not None:
                self.thread_hook("drain", None if session is None else session.invocation)
            while True:
                try:
                    chunk = os.read(fd, READ_SIZE)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                capture.add(chunk)
                if session is not None:
                    session.offer(stream, chunk)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
            done.set()

    def _wait(
        self,
        proc: subprocess.Popen[bytes],
        drains: list[threading.Event],
        signal_sock: socket.socket,
        state: dict[str, Any],
    ) -> None:
        for event in drains:
            event.wait()
        proc.wait()
        state["complete"] = True
        try:
            signal_sock.send(b"x")
        except OSError:
            pass
        finally:
            signal_sock.close()

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    async def _reap_group(
        self, proc: subprocess.Popen[bytes], drains: list[threading.Event]
    ) -> None:
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                proc.poll()
            if not _group_alive(proc.pid):
                break
            await anyio.sleep(0.005)
        deadline = time.monotonic() + 0.1
        while time.monotonic() < deadline and not all(d.is_set() for d in drains):
            await anyio.sleep(0.005)

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> ShellResult:
        if self.policy is not None:
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
            if session is not None:
                session.cancel()
            raise CommandFailed(f"cannot spawn {argv[0]!r}: {error}") from error

        out = _Capture(self.output_cap)
        err = _Capture(self.output_cap)
        drains = [threading.Event(), threading.Event()]
        assert proc.stdout is not None
        assert proc.stderr is not None
        out_fd = os.dup(proc.stdout.fileno())
        err_fd = os.dup(proc.stderr.fileno())
        proc.stdout.close()
        proc.stderr.close()
        threading.Thread(
            target=self._drain,
            args=(out_fd, ShellOutputStream.STDOUT, out, session, drains[0]),
            daemon=True,
        ).start()
        threading.Thread(
            target=self._drain,
            args=(err_fd, ShellOutputStream.STDERR, err, session, drains[1]),
            daemon=True,
        ).start()
        receiver, sender = socket.socketpair()
        state: dict[str, Any] = {"complete": False}
        threading.Thread(target=self._wait, args=(proc, drains, sender, state), daemon=True).start()

        timed_out = False
        try:
            if timeout is None:
                await anyio.wait_socket_readable(receiver)
            else:
                with anyio.move_on_after(max(float(timeout), 0.0)):
                    await anyio.wait_socket_readable(receiver)
                if not state["complete"]:
                    timed_out = True
        except BaseException:
            # cancellation (or anything else): stop observing first, then end the group
            if session is not None:
                session.cancel()
            self._kill_group(proc)
            receiver.close()
            raise

        if timed_out:
            if session is not None:
                session.cancel()
            self._kill_group(proc)
            await self._reap_group(proc, drains)
            receiver.close()
            stdout, out_trunc = out.snapshot()
            stderr, err_trunc = err.snapshot()
            return ShellResult(None, stdout, stderr, out_trunc, err_trunc, True)

        receiver.close()
        if session is not None:
            session.finish()
        stdout, out_trunc = out.snapshot()
        stderr, err_trunc = err.snapshot()
        return ShellResult(proc.returncode, stdout, stderr, out_trunc, err_trunc, False)


class Implementation:
    """The ShellOutputImplementation the kit's driver drives."""

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
            output_cap=output_cap,
            live_budget=live_budget,
            policy=policy,
            thread_hook=thread_hook,
        )


def make_adapter(
    impl: Any = None, *, name: str = "b11soo-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[ShellOutputDriver(impl if impl is not None else Implementation())],
        backend=backend,
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(name="b11soo-base-trio", backend="trio")


def build(
    backend: str = "asyncio",
    implementation: Implementation | None = None,
    name: str = "soo-outsider-base-11",
) -> PythonAdapter:
    """The outsider's base (or a variant's ``implementation``) as an adapter: the control.

    (The outsider's file ends with ``adapter`` and ``adapter_trio`` built by
    ``make_adapter``; this builds the same for either backend, for the kit's meta-test.)
    """
    return make_adapter(implementation, name=name, backend=backend)
