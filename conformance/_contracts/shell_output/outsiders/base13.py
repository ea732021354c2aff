"""An outsider's shell-output observer runner: batch 13's own implementation.

Outsider batch 13 (b13soo): written from the docs of main 79cf702 alone (the contract page
without its boundary checklist, scenarios.md, usage.md, adapters.md, the seeds and the
driver, plus the public ``seamspec run`` and ``seamspec rules``), without reading the
reference, its adapter, the oracle or the scenarios. Kept as written (the original
``b13soo_base.py`` had sha256
bfd6ecef567bbbebbf81dc4631d91baa10cbf3bd3f26e2fe5143489ca828bcc6); only the imports, the
type annotations the outsider left out (mypy strict), ``noqa`` marks for the linter's
complaints (the layout is ruff format's) and the adapter builder at the end (``build``,
for either backend) changed. By the outsider's own runs it conforms to every
shell-output scenario of main 79cf702 (137 of 137) under both profiles, on asyncio and
trio. It is the control the batch's variants (``batch13.py``) are judged against.

The outsider's summary of the design: the child runs in its own session and process
group, one drain thread per pipe (capture, then offer) and one waiter thread that reaps
the child and then joins the drains. A session holds the phase, a live budget per stream
and an unbounded FIFO, with one presentation thread per invocation that calls the
observer holding no lock. The async caller polls a ``threading.Event`` every 5 ms, so the
same code runs on asyncio and trio. At a time limit it cancels the session first, SIGKILLs
the whole group, waits up to 1 s for the child to be reaped and at most 0.1 s more for end
of file.

(The outsider's module docstring: "b13soo: a shell-output observer runner written from the contract page alone. One observed invocation = a child in its own process group, one drain thread per pipe (capture + offer), a session (phase, per-stream live budget, unbounded FIFO) and one presentation thread that calls the observer holding no lock. The async caller polls a threading.Event, which works the same under asyncio and trio.")
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

log = logging.getLogger("b13soo.shell")
log.addHandler(logging.NullHandler())

READ_SIZE = 65536
POLL = 0.005


class ShellOutputStream(enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


def _name(stream: Any) -> str:
    return str(getattr(stream, "value", stream))


class CommandRefused(Exception):
    pass


class CommandFailed(Exception):
    pass


_FINISH = object()
ACTIVE, FINISHED, CANCELLED = "active", "finished", "cancelled"


def _hooks(observer: Any) -> tuple[Callable[..., None], Callable[[int], None] | None]:
    if hasattr(observer, "on_output"):
        return observer.on_output, getattr(observer, "on_finish", None)
    if callable(observer):
        return observer, None
    raise TypeError(f"not an observer: {observer!r}")


class Session:
    """Phase, live budget per stream, FIFO queue and one presentation thread."""

    def __init__(self, runner: ShellRunner, observer: Any, invocation: int, budget: int):
        self.runner = runner
        self.observer = observer
        self.invocation = invocation
        self._on_output, self._on_finish = _hooks(observer)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque[Any] = deque()
        self._phase = ACTIVE
        self._stopped = False  # an on_output raised
        self._left = {"stdout": budget, "stderr": budget}
        self._busy = False
        self._ended = False
        self._thread = threading.Thread(
            target=self._loop, name=f"b13soo-present-{invocation}", daemon=True
        )
        self._thread.start()

    # -- producer side (drain threads, the kit) ---------------------------------------
    def offer(self, stream: Any, chunk: bytes) -> None:
        name = _name(stream)
        with self._cond:
            if self._phase != ACTIVE or self._stopped or not chunk:
                return
            left = self._left.get(name, 0)
            if left <= 0:
                return
            piece = bytes(chunk[:left])
            if not piece:
                return
            self._left[name] = left - len(piece)
            self._queue.append((name, piece))
            self._cond.notify()

    def finish(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = FINISHED
            self._queue.append(_FINISH)
            self._cond.notify()

    def cancel(self) -> None:
        with self._cond:
            if self._phase != ACTIVE:
                return
            self._phase = CANCELLED
            self._queue.clear()
            self._cond.notify()

    # -- presentation thread ----------------------------------------------------------
    def _take(self) -> Any:
        with self._cond:
            while not self._queue and self._phase != CANCELLED and not self._stopped:
                self._cond.wait()
            if self._phase == CANCELLED or self._stopped:
                return None
            self._busy = True
            return self._queue.popleft()

    def _idle(self) -> None:
        with self._cond:
            self._busy = False

    def _stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._queue.clear()

    def _loop(self) -> None:
        try:
            while True:
                item = self._take()
                if item is None:
                    return
                if item is _FINISH:
                    self._deliver_finish()
                    return
                name, piece = item
                try:
                    self._on_output(self.invocation, ShellOutputStream(name), piece)
                except Exception:
                    log.exception("observer on_output failed (invocation %s)", self.invocation)
                    self._stop()
                    return
                self._idle()
        finally:
            with self._cond:
                self._busy = False
                self._ended = True

    def _deliver_finish(self) -> None:
        if self._on_finish is None:
            return
        try:
            self._on_finish(self.invocation)
        except Exception as error:
            log.exception("observer on_finish failed (invocation %s)", self.invocation)
            self.runner._on_finish_failed(self, error)

    def idle(self) -> bool:
        with self._cond:
            return self._ended or (not self._busy and not self._queue)

    def drained(self) -> bool:
        """Everything accepted so far was delivered (or can no longer be)."""
        with self._cond:
            return self._ended or (not self._busy and not self._queue)


@dataclass
class ShellResult:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool


class _Capture:
    """The result's own copy of one pipe, capped."""

    def __init__(self, cap: int):
        self.cap = cap
        self.buf = bytearray()
        self.total = 0
        self.lock = threading.Lock()

    def add(self, data: bytes) -> None:
        with self.lock:
            room = self.cap - len(self.buf)
            if room > 0:
                self.buf += data[:room]
            self.total += len(data)

    def snapshot(self, runner: ShellRunner) -> tuple[bytes, bool]:
        with self.lock:
            return runner._capped(bytes(self.buf), self.total), self.total > self.cap


class _Invocation:
    def __init__(self) -> None:
        self.timed_out = False


class ShellRunner:
    def __init__(
        self,
        *,
        output_cap: int = 1 << 20,
        live_budget: int | None = None,
        policy: Callable[[Sequence[str]], str | None] | None = None,
        thread_hook: Callable[[str, int | None], None] | None = None,
    ) -> None:
        self.output_cap = output_cap
        self.live_budget = output_cap if live_budget is None else live_budget
        self.policy = policy
        self.thread_hook = thread_hook
        self._id_lock = threading.Lock()
        self._next_id = 1
        self._sessions_lock = threading.Lock()
        self._sessions: list[Session] = []

    # -- ids and sessions ---------------------------------------------------------
    def _take_id(self) -> int:
        with self._id_lock:
            ident = self._next_id
            self._next_id += 1
            return ident

    def observe(self, observer: Any) -> Session:
        session = Session(self, observer, self._take_id(), self.live_budget)
        with self._sessions_lock:
            self._sessions.append(session)
        return session

    def _on_finish_failed(self, session: Session, error: BaseException) -> None:
        """Contained: nothing else changes."""

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

    # -- result helpers -----------------------------------------------------------
    def _capped(self, data: bytes, total: int) -> bytes:
        return data

    def _exit_failed_spawn(self, code: int) -> bool:
        return False

    def _note_timed_out(self, inv: _Invocation) -> None:
        inv.timed_out = True

    def _limit_fired(self, inv: _Invocation) -> bool:
        return inv.timed_out

    async def _after_return(self, session: Session | None) -> None:
        return None

    # -- processes ----------------------------------------------------------------
    def _drain(
        self, fd: int, name: str, capture: _Capture, session: Session | None, ident: int | None
    ) -> None:
        if self.thread_hook is not None:
            try:  # noqa: SIM105
                self.thread_hook("drain", ident)
            except Exception:
                pass
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
                    session.offer(name, data)
        finally:
            try:  # noqa: SIM105
                os.close(fd)
            except OSError:
                pass

    def _kill_group(self, proc: subprocess.Popen[bytes]) -> None:
        try:  # noqa: SIM105
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:  # noqa: SIM105
            proc.kill()
        except (ProcessLookupError, OSError):
            pass

    def _group_gone(self, pgid: int) -> bool:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    async def _wait_complete(
        self,
        done: threading.Event,
        reaped: threading.Event,
        proc: subprocess.Popen[bytes],
        deadline: float | None,
    ) -> bool:
        """Wait for normal completion (True) or the deadline (False)."""
        while True:
            if done.is_set():
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            await anyio.sleep(POLL)

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> ShellResult:
        started = time.monotonic()
        deadline = None if timeout is None else started + max(0.0, float(timeout))
        argv = list(argv)
        if self.policy is not None:
            reason = self.policy(argv)
            if reason is not None:
                raise CommandRefused(reason)
        session: Session | None = None
        ident: int | None = None
        if observer is not None:
            session = self.observe(observer)
            ident = session.invocation
            if on_invocation is not None:
                on_invocation(ident)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                bufsize=0,
            )
        except OSError as error:
            if session is not None:
                session.cancel()
            raise CommandFailed(f"cannot run {argv[0]!r}: {error}") from error

        inv = _Invocation()
        out_cap, err_cap = _Capture(self.output_cap), _Capture(self.output_cap)
        assert proc.stdout is not None and proc.stderr is not None  # noqa: PT018
        out_fd, err_fd = os.dup(proc.stdout.fileno()), os.dup(proc.stderr.fileno())
        proc.stdout.close()
        proc.stderr.close()
        drains = [
            threading.Thread(
                target=self._drain, args=(out_fd, "stdout", out_cap, session, ident), daemon=True
            ),
            threading.Thread(
                target=self._drain, args=(err_fd, "stderr", err_cap, session, ident), daemon=True
            ),
        ]
        for t in drains:
            t.start()
        done = threading.Event()
        reaped = threading.Event()

        def waiter() -> None:
            proc.wait()
            reaped.set()
            for t in drains:
                t.join()
            done.set()

        threading.Thread(target=waiter, daemon=True).start()

        try:
            completed = await self._wait_complete(done, reaped, proc, deadline)
        except BaseException:
            if session is not None:
                session.cancel()
            self._kill_group(proc)
            raise

        if not completed:
            # the time limit fired: stop observing first, then end the whole group
            self._note_timed_out(inv)
            if session is not None:
                session.cancel()
            self._kill_group(proc)
            t0 = time.monotonic()
            while not reaped.is_set() and time.monotonic() - t0 < 1.0:
                await anyio.sleep(POLL)
            t1 = time.monotonic()
            while not done.is_set() and time.monotonic() - t1 < 0.1:
                await anyio.sleep(POLL)
            out, out_t = out_cap.snapshot(self)
            err, err_t = err_cap.snapshot(self)
            return ShellResult(None, out, err, out_t, err_t, True)

        code = proc.returncode
        if self._exit_failed_spawn(code):
            if session is not None:
                session.cancel()
            raise CommandFailed(f"{argv[0]!r} could not be run (exit status {code})")
        if session is not None:
            if self._limit_fired(inv):
                session.cancel()
            else:
                session.finish()
        out, out_t = out_cap.snapshot(self)
        err, err_t = err_cap.snapshot(self)
        result = ShellResult(code, out, err, out_t, err_t, False)
        await self._after_return(session)
        return result


class Implementation:
    features: tuple[str, ...] = ("soo-process", "soo-session", "soo-live-budget")

    def __init__(self, runner_class: type[ShellRunner] = ShellRunner):
        self.runner_class = runner_class

    def make_shell(
        self,
        *,
        output_cap: int,
        live_budget: int | None,
        policy: Callable[[Sequence[str]], str | None] | None,
        thread_hook: Callable[[str, int | None], None] | None,
    ) -> ShellRunner:
        return self.runner_class(
            output_cap=output_cap,
            live_budget=live_budget,
            policy=policy,
            thread_hook=thread_hook,
        )


def make_adapter(
    impl: Any = None, *, name: str = "b13soo-base", backend: str = "asyncio"
) -> PythonAdapter:
    impl = impl if impl is not None else Implementation()
    return PythonAdapter(
        name=name, version="1.0", drivers=[ShellOutputDriver(impl)], backend=backend
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(name="b13soo-base-trio", backend="trio")


def build(
    backend: str = "asyncio",
    implementation: Implementation | None = None,
    name: str = "soo-outsider-base-13",
) -> PythonAdapter:
    """The outsider's base (or a variant's ``implementation``) as an adapter: the control.

    (The outsider's file ends with ``adapter`` and ``adapter_trio`` built by
    ``make_adapter``; this builds the same for either backend, for the kit's meta-test.)
    """
    return make_adapter(implementation, name=name, backend=backend)
