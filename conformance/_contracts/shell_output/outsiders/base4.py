"""An outsider's shell-output observer runner: batch 4's own implementation.

Outsider batch 4 (soo4, see ``__init__``): written from docs/contracts/shell-output-observer.md,
the seed page, CONTRACTS.md, usage.md and the driver's docstring, without reading the
reference, its adapter, the oracle or the scenarios (the outsider saw the page's tail
sections, the boundary checklist and the earlier outsider tables, once by accident and said
so in their report). Kept as written (the original ``b4soo4_base.py`` had sha256
6702ea4bd2838b32685a29a11ae0a1890bda233a86baad474f26022d1d3717d1); only the imports, typing,
the linter's rewrites that keep the behaviour, and the adapter builders at the end were
touched. It conforms to every scenario on both anyio backends, and it is the control the
batch's variants (``batch4.py``) are judged against.

The outsider's own summary of the layout (not the reference's):

* ``LiveView``     one observation of one invocation: phase, per-stream budget, a FIFO
                   and one presentation thread that calls the observer.
* ``CommandShell`` runs a command: policy check, ID, spawn (own process group), one
                   reader thread per pipe (capture + offer, never the observer), a reaper
                   thread that collects the exit once both pipes are at EOF and wakes the
                   async caller through a self-pipe.

One fix by the kit, found by ``soo-timeout-detached-grandchild-holds-pipes`` (a
grandchild outside the process group holds the pipes after the time limit's kill): after
that kill the base waited for end of file on the pipes up to 5 s (``KILL_GRACE``), so
the call returned only when that grandchild let go, not at its limit (SOO-TIMEOUT). It
now waits only until the killed group is gone and then briefly for the pipes
(``at_limit.wait_after_kill``); the wait as written is kept, as the mutant
``out-soo-base4-timeout-waits-for-pipes`` (``waits_for_pipes`` at the end of this file).
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

log = logging.getLogger("b4soo4.shell")
log.addHandler(logging.NullHandler())

READ_SIZE = 64 * 1024
#: once this many entries wait for the observer, small chunks are gathered per stream
BEHIND = 16
#: what counts as a small chunk for gathering
SMALL = 4096
#: after a kill, how long the caller waits for the pipes to close before it gives up
KILL_GRACE = 5.0


class Stream(enum.Enum):
    STDOUT = "stdout"
    STDERR = "stderr"


class CommandRefused(Exception):
    """The policy refused the command before anything was spawned."""


@dataclass
class CommandResult:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool


class IdCounter:
    """Dense invocation IDs. An ID whose command could not be spawned is given back, so
    that a watcher never sees a gap for an invocation it could not have observed."""

    def __init__(self, start: int = 1) -> None:
        self._last = start - 1
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            self._last += 1
            return self._last

    def give_back(self, invocation: int) -> None:
        with self._lock:
            if self._last == invocation:  # only if nobody took one since
                self._last -= 1


class _FnObserver:
    """A plain function as an observer: on_output only."""

    def __init__(self, fn: Callable[[int, Stream, bytes], None]) -> None:
        self.on_output = fn


def as_observer(observer: Any) -> Any:
    if hasattr(observer, "on_output"):
        return observer
    if callable(observer):
        return _FnObserver(observer)
    raise TypeError(f"not an observer: {observer!r}")


def _stream(stream: Stream | str) -> Stream:
    return stream if isinstance(stream, Stream) else Stream(str(stream))


_ACTIVE, _FINISHED, _CANCELLED = "active", "finished", "cancelled"
_FINISH = object()  # the queue entry that ends a normal completion
_NOTHING = object()  # nothing to present yet


class LiveView:
    """One invocation's observation. Thread-safe; offer/finish/cancel never block.

    The presenter calls the observer; nothing else does. While the observer keeps up,
    every chunk is one queue entry; once it is ``BEHIND`` entries behind, small chunks
    are gathered per stream and queued as one entry when the queue runs dry.
    """

    def __init__(self, observer: Any, invocation: int, budget: int, on_idle: Callable[[], None]):
        self.invocation = invocation
        self._observer = as_observer(observer)
        self._cond = threading.Condition()
        self._phase = _ACTIVE
        self._dead = False  # on_output raised: nothing more, ever
        self._left = {Stream.STDOUT: max(0, budget), Stream.STDERR: max(0, budget)}
        self._queue: collections.deque[Any] = collections.deque()
        self._pending = {Stream.STDOUT: bytearray(), Stream.STDERR: bytearray()}
        self._busy = False
        self._ended = False
        self._on_idle = on_idle
        self._start_presenter()

    def _start_presenter(self) -> None:
        self._thread = threading.Thread(
            target=self._present, name=f"b4soo4-present-{self.invocation}", daemon=True
        )
        self._thread.start()

    def _wake(self) -> None:
        """The queue or the phase changed (caller holds the lock)."""
        self._cond.notify_all()

    # -- producer side (reader threads, the runner, the kit) -------------------------

    def offer(self, stream: Stream | str, chunk: bytes) -> None:
        stream = _stream(stream)
        if not chunk:
            return
        with self._cond:
            if self._phase != _ACTIVE or self._dead:
                return
            left = self._left[stream]
            if left <= 0:
                return
            piece = bytes(chunk[:left])
            self._left[stream] = left - len(piece)
            if self._gather(stream, piece):
                self._pending[stream] += piece
            else:
                self._queue.append((stream, piece))
            self._wake()

    def _gather(self, stream: Stream, piece: bytes) -> bool:
        """Whether ``piece`` joins the stream's gathered bytes instead of the queue.

        Once a stream has gathered bytes, everything after them is gathered too, or a
        later chunk would overtake them.
        """
        if self._pending[stream]:
            return True
        return len(self._queue) >= BEHIND and len(piece) < SMALL

    def _flush_pending(self) -> None:
        """Move gathered bytes into the queue (caller holds the lock)."""
        for stream, pending in self._pending.items():
            if pending:
                self._queue.append((stream, bytes(pending)))
                pending.clear()

    def _clear_pending(self) -> None:
        for pending in self._pending.values():
            pending.clear()

    def finish(self) -> None:
        with self._cond:
            if self._phase != _ACTIVE:
                return
            self._phase = _FINISHED
            if not self._dead:
                self._flush_pending()
                self._queue.append(_FINISH)
            self._wake()

    def cancel(self) -> None:
        with self._cond:
            if self._phase != _ACTIVE:
                return
            self._phase = _CANCELLED
            self._queue.clear()
            self._clear_pending()
            self._wake()

    # -- consumer side ---------------------------------------------------------------

    def idle(self) -> bool:
        with self._cond:
            return self._ended or (
                not self._busy and not self._queue and not any(self._pending.values())
            )

    def _next_entry(self, *, block: bool) -> Any:
        """The next entry to present; None: presenting is over; _NOTHING: not yet."""
        with self._cond:
            while True:
                if self._ended or self._dead or self._phase == _CANCELLED:
                    return None
                if not self._queue:
                    self._flush_pending()
                if self._queue:
                    self._busy = True
                    return self._queue.popleft()
                if not block:
                    return _NOTHING
                self._cond.wait()

    def _output_failed(self) -> bool:
        """on_output raised: observation of this invocation ends. True: stop presenting."""
        with self._cond:
            self._dead = True
            self._queue.clear()
            self._clear_pending()
        return True

    def _deliver(self, entry: Any) -> bool:
        """Present one entry on the current (presentation) thread. False: the end."""
        try:
            if entry is _FINISH:
                hook = getattr(self._observer, "on_finish", None)
                if hook is not None:
                    try:
                        hook(self.invocation)
                    except Exception:
                        log.exception("on_finish of invocation %s raised", self.invocation)
                return False
            stream, chunk = entry
            try:
                self._observer.on_output(self.invocation, stream, chunk)
            except Exception:
                log.exception("on_output of invocation %s raised", self.invocation)
                if self._output_failed():
                    return False
            return True
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _end(self) -> None:
        with self._cond:
            if self._ended:
                return
            self._ended = True
            self._queue.clear()
            self._clear_pending()
            self._cond.notify_all()
        self._on_idle()

    def _present(self) -> None:
        try:
            while True:
                entry = self._next_entry(block=True)
                if entry is None or not self._deliver(entry):
                    return
        finally:
            self._end()


class _Capture:
    """What the result keeps of one pipe: the first ``cap`` bytes, and whether more came."""

    def __init__(self, cap: int) -> None:
        self.cap = max(0, cap)
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


class _Invocation:
    """One running child: its readers, its reaper and the self-pipe that wakes the caller."""

    def __init__(
        self, shell: CommandShell, proc: subprocess.Popen[bytes], view: LiveView | None
    ) -> None:
        self.shell = shell
        self.proc = proc
        self.view = view
        self.out = _Capture(shell.output_cap)
        self.err = _Capture(shell.output_cap)
        self.exit_code: int | None = None
        self.done = threading.Event()
        self.stopped = False  # a time limit or a cancellation: no finish
        self._stop_lock = threading.Lock()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        self.readers = [
            threading.Thread(
                target=self._drain,
                args=(proc.stdout, Stream.STDOUT, self.out),
                name="b4soo4-drain-out",
                daemon=True,
            ),
            threading.Thread(
                target=self._drain,
                args=(proc.stderr, Stream.STDERR, self.err),
                name="b4soo4-drain-err",
                daemon=True,
            ),
        ]
        self.reaper = threading.Thread(target=self._reap, name="b4soo4-reap", daemon=True)

    def start(self) -> None:
        for t in self.readers:
            t.start()
        self.reaper.start()

    def _drain(self, pipe: Any, stream: Stream, capture: _Capture) -> None:
        self.shell.thread_hook("drain", self.view.invocation if self.view else None)
        fd = pipe.fileno()
        try:
            while True:
                try:
                    chunk = os.read(fd, READ_SIZE)
                except OSError:
                    break
                if not chunk:
                    break
                capture.add(chunk)
                if self.view is not None:
                    self.view.offer(stream, chunk)
        finally:
            pipe.close()

    def _reap(self) -> None:
        for t in self.readers:
            t.join()
        code = self.proc.wait()
        with self._stop_lock:
            self.exit_code = code
            if self.view is not None and not self.stopped:
                self.view.finish()
        self.done.set()
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass
        finally:
            os.close(self.wake_w)

    def stop(self) -> None:
        """Time limit or cancellation: no more observation, kill the whole group."""
        with self._stop_lock:
            self.stopped = True
            if self.view is not None:
                self.view.cancel()
        self.kill_group()

    def kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def result(self, *, timed_out: bool) -> CommandResult:
        out, out_t = self.out.snapshot()
        err, err_t = self.err.snapshot()
        return CommandResult(
            exit_code=None if timed_out else self.exit_code,
            stdout=out,
            stderr=err,
            stdout_truncated=out_t,
            stderr_truncated=err_t,
            timed_out=timed_out,
        )


class CommandShell:
    """Runs commands, optionally observed. ``observe`` gives a bare session."""

    def __init__(
        self,
        *,
        output_cap: int = 1024 * 1024,
        live_budget: int | None = None,
        policy: Callable[[Sequence[str]], str | None] | None = None,
        thread_hook: Callable[[str, int | None], None] | None = None,
        ids: IdCounter | None = None,
    ) -> None:
        self.output_cap = output_cap
        self.live_budget = output_cap if live_budget is None else live_budget
        self.policy = policy or (lambda argv: None)
        self.thread_hook = thread_hook or (lambda role, invocation: None)
        self.ids = ids or IdCounter()
        self._views: list[LiveView] = []
        self._views_lock = threading.Condition()

    # -- sessions --------------------------------------------------------------------

    def _new_view(self, observer: Any) -> LiveView:
        with self._views_lock:
            view = LiveView(observer, self.ids.take(), self.live_budget, self._notify_idle)
            self._views.append(view)
            return view

    def _notify_idle(self) -> None:
        with self._views_lock:
            self._views_lock.notify_all()

    def observe(self, observer: Any) -> LiveView:
        return self._new_view(observer)

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            with self._views_lock:
                views = list(self._views)
            if all(v.idle() for v in views):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(0.01, left))

    # -- commands --------------------------------------------------------------------

    def _spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            bufsize=0,
        )

    async def _after_limit_kill(self, inv: _Invocation) -> None:
        """The kit's fix: return once the killed group is gone, not at end of file."""
        await wait_after_kill(inv.proc, inv.done.is_set)

    async def _wait_done(self, inv: _Invocation) -> None:
        while not inv.done.is_set():
            await anyio.wait_readable(inv.wake_r)
            with contextlib.suppress(BlockingIOError):
                os.read(inv.wake_r, 16)

    def _caller_gone(self, inv: _Invocation) -> None:
        """The caller was cancelled (or anything else escaped): stop at once, never wait."""
        inv.stop()

    async def run(
        self,
        argv: Sequence[str],
        *,
        observer: Any = None,
        timeout: float | None = None,
        on_invocation: Callable[[int], None] | None = None,
    ) -> CommandResult:
        reason = self.policy(argv)
        if reason is not None:
            raise CommandRefused(reason)
        view: LiveView | None = None
        if observer is not None:
            view = self._new_view(observer)
        # spawning (fork + exec) happens off the event loop; shielded, so that a child
        # that was spawned is never lost to a cancellation arriving meanwhile (the
        # cancellation is delivered at the next wait, which kills it)
        with anyio.CancelScope(shield=True):
            try:
                proc = await anyio.to_thread.run_sync(self._spawn, argv)
            except BaseException:
                if view is not None:
                    view.cancel()
                    self.ids.give_back(view.invocation)
                raise
        if view is not None and on_invocation is not None:
            on_invocation(view.invocation)
        inv = _Invocation(self, proc, view)
        inv.start()
        timed_out = False
        try:
            if timeout is None:
                await self._wait_done(inv)
            else:
                with anyio.move_on_after(max(0.0, timeout)) as scope:
                    await self._wait_done(inv)
                if scope.cancelled_caught and not inv.done.is_set():
                    timed_out = True
                    inv.stop()
                    await self._after_limit_kill(inv)
        except BaseException:
            self._caller_gone(inv)
            raise
        finally:
            if inv.done.is_set():
                os.close(inv.wake_r)
            else:
                threading.Thread(target=_close_later, args=(inv,), daemon=True).start()
        return inv.result(timed_out=timed_out)


def _close_later(inv: _Invocation) -> None:
    inv.done.wait()
    with contextlib.suppress(OSError):
        os.close(inv.wake_r)


# --- the adapter -----------------------------------------------------------------------


class B4Impl:
    features: tuple[str, ...] = ("soo-process", "soo-session", "soo-live-budget")
    shell_class: type[CommandShell] = CommandShell
    ids_class: type[IdCounter] = IdCounter

    def make_shell(
        self, *, output_cap: int, live_budget: int, policy: Any, thread_hook: Any
    ) -> CommandShell:
        return self.shell_class(
            output_cap=output_cap,
            live_budget=live_budget,
            policy=policy,
            thread_hook=thread_hook,
            ids=self.ids_class(),
        )


def build(backend: str = "asyncio", impl: B4Impl | None = None) -> PythonAdapter:
    """The outsider's base (or a variant's ``impl``) as an adapter: the batch's control."""
    return PythonAdapter(
        name="soo-outsider-base-4",
        version="0.1",
        drivers=[ShellOutputDriver(impl if impl is not None else B4Impl())],
        backend=backend,
        concurrent=True,
    )


# --- the base as written, before the kit's fix (see the docstring) -----------------------


class WaitsForPipesShell(CommandShell):
    """After the time limit's group kill, waits up to 5 s for end of file on the pipes."""

    async def _after_limit_kill(self, inv: _Invocation) -> None:
        with anyio.move_on_after(KILL_GRACE):
            await self._wait_done(inv)


class WaitsForPipesImpl(B4Impl):
    shell_class: type[CommandShell] = WaitsForPipesShell


def waits_for_pipes() -> B4Impl:
    """The base as written (the mutant ``out-soo-base4-timeout-waits-for-pipes``)."""
    return WaitsForPipesImpl()
