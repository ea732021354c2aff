"""Deliberately broken shell-output implementations ("mutants"), one broken rule each.

Each mutant is the reference runner with one plausible mistake, labelled with the MUST
rule it breaks; ``tests/test_soo_mutants.py`` runs the scenarios citing that rule against
it and demands a ``fail`` verdict. The reference :class:`ObservationSession` and
:class:`ShellRunner` are cut at their decision points (``_accept``, ``_next_item``,
``_deliver``, ``_on_panic``, ``_complete``, ``_on_timeout``...), so a mutant overrides
one of them and nothing else: its docstring and its few lines *are* the bug.

Watch the kit catch one::

    seamspec run --impl mutant:soo-shared-budget --contract shell-output
"""

from __future__ import annotations

import contextlib
import contextvars
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio

from seamspec import __version__
from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver
from seamspec.conformance._contracts.shell_output.reference_adapter import ReferenceShellOutput
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    InvocationIds,
    ObservationSession,
    SessionPhase,
    ShellOutputStream,
    ShellResult,
    ShellRunner,
)
from seamspec.reference._shell_output.runner import CommandFailed
from seamspec.reference._shell_output.session import Item, _Finish, log

__all__ = ["MUTANTS", "Mutant", "mutant_adapter"]


def _with_session(session: type[ObservationSession]) -> type[ShellRunner]:
    return type(f"RunnerWith{session.__name__}", (ShellRunner,), {"session_class": session})


# -- session mutants ----------------------------------------------------------------------


class _EmptyWhenSpent(ObservationSession):
    """Once a stream's budget is spent, still calls on_output, with an empty chunk."""

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes | None:
        accepted = super()._accept(stream, chunk)
        return b"" if accepted is None else accepted


class _Decoded(ObservationSession):
    """Cleans chunks up as UTF-8 text (invalid or split sequences become U+FFFD)."""

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes | None:
        accepted = super()._accept(stream, chunk)
        return None if accepted is None else accepted.decode("utf-8", "replace").encode()


class _Lifo(ObservationSession):
    """Presents the newest queued chunk first (a stack instead of a queue)."""

    def _next_item(self) -> Item:
        if len(self._queue) > 1 and isinstance(self._queue[-1], _Finish):
            item = self._queue[-2]
            del self._queue[-2]
            return item
        return self._queue.pop()


class _SharedBudget(ObservationSession):
    """Counts stdout and stderr against one budget for the whole invocation."""

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes | None:
        return super()._accept(ShellOutputStream.STDOUT, chunk)


class _ZeroUnlimited(ObservationSession):
    """Treats a budget of 0 as "no limit", as many config options do."""

    def __init__(self, invocation: int, observer: Any, budget: int) -> None:
        super().__init__(invocation, observer, budget or sys.maxsize)


class _DeliverOnFeeder(ObservationSession):
    """Calls on_output right away on the thread that offers the chunk (the drain)."""

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        stream = ShellOutputStream(stream)
        with self._cond:
            if self._phase is not SessionPhase.ACTIVE or self._disabled:
                return
            accepted = self._accept(stream, chunk)
        if accepted:
            try:
                self._deliver(stream, accepted)
            except Exception:
                with self._cond:
                    self._on_panic()


class _ThreadPerCallback(ObservationSession):
    """Runs each on_output on a fresh thread (one at a time), not the session's thread."""

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        failure: list[BaseException] = []

        def call() -> None:
            try:
                super(_ThreadPerCallback, self)._deliver(stream, chunk)
            except Exception as error:
                failure.append(error)

        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        worker.join()
        if failure:
            raise failure[0]


class _OneAtATime(ObservationSession):
    """Takes a lock shared by every session of its runner around each callback."""

    shared: threading.Lock

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        with self.shared:
            super()._deliver(stream, chunk)

    def _call_finish(self) -> None:
        with self.shared:
            super()._call_finish()


class _HeldUntilEnd(ObservationSession):
    """Holds every accepted chunk back until the invocation completes."""

    def __init__(self, invocation: int, observer: Any, budget: int) -> None:
        self._held: list[Item] = []
        super().__init__(invocation, observer, budget)

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        stream = ShellOutputStream(stream)
        with self._cond:
            if self._phase is SessionPhase.ACTIVE and not self._disabled:
                accepted = self._accept(stream, chunk)
                if accepted:
                    self._held.append((stream, accepted))

    def finish(self) -> None:
        with self._cond:
            if self._phase is SessionPhase.ACTIVE:
                self._queue.extend(self._held)
        super().finish()


class _BoundedQueue(ObservationSession):
    """A one-slot queue (back-pressure): the feeding (draining) thread waits while it is full."""

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        with self._cond:
            while self._queue and self._phase is SessionPhase.ACTIVE:
                self._cond.wait(0.05)
        super().offer(stream, chunk)


class _FinishDropsQueue(ObservationSession):
    """Completion drops what is still queued and says on_finish straight away."""

    def finish(self) -> None:
        with self._cond:
            if self._phase is SessionPhase.ACTIVE:
                self._queue.clear()
        super().finish()


class _AcceptsLate(ObservationSession):
    """Keeps accepting (and presenting) chunks after completion."""

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        stream = ShellOutputStream(stream)
        with self._cond:
            if self._phase is SessionPhase.CANCELLED or self._disabled:
                return
            accepted = self._accept(stream, chunk)
            if accepted:
                self._queue.append((stream, accepted))
                self._cond.notify()

    def _present(self) -> None:
        super()._present()
        while True:
            with self._cond:
                if not self._queue:
                    self._cond.wait(0.5)
                if not self._queue or self._phase is SessionPhase.CANCELLED:
                    return
                item = self._queue.popleft()
            if not isinstance(item, _Finish):
                self._deliver(*item)


class _DeliversAfterPanic(ObservationSession):
    """Logs a raising on_output and goes on delivering the queue (and on_finish)."""

    def _on_panic(self) -> None:
        pass


class _CancelWaitsForCallback(ObservationSession):
    """cancel() gives a callback in flight up to 2 s to return before it returns itself."""

    def cancel(self) -> None:
        super().cancel()
        self.join(2.0)


class _CancelFinishes(ObservationSession):
    """Treats cancellation as completion: drains the queue, then on_finish."""

    def cancel(self) -> None:
        self.finish()


class _FinishPanicBreaksObserver(ObservationSession):
    """Records an observer whose on_finish failed, so its runner can shun it."""

    broken: set[int]

    def _call_finish(self) -> None:
        hook = getattr(self.observer, "on_finish", None)
        try:
            if hook is not None:
                hook(self.invocation)
        except Exception:
            self.broken.add(id(self.observer))


class _RecordsDelivered(ObservationSession):
    """Remembers what it delivered (used by the envelope mutant's runner)."""

    def __init__(self, invocation: int, observer: Any, budget: int) -> None:
        self.delivered: dict[ShellOutputStream, bytes] = {s: b"" for s in ShellOutputStream}
        super().__init__(invocation, observer, budget)

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        self.delivered[stream] += chunk
        super()._deliver(stream, chunk)


# -- runner mutants -----------------------------------------------------------------------


class _SerializingRunner(ShellRunner):
    """Serializes callbacks across all of a runner's invocations, so panes never interleave."""

    session_class = _OneAtATime

    def observe(self, observer: Any) -> ObservationSession:
        session = super().observe(observer)
        assert isinstance(session, _OneAtATime)
        session.shared = self.__dict__.setdefault("_shared_lock", threading.Lock())
        return session


class _LockPerObserver(ObservationSession):
    """Holds a lock per observer object around each callback (sessions keyed by observer)."""

    locks: dict[int, threading.Lock]

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        with self.locks.setdefault(id(self.observer), threading.Lock()):
            super()._deliver(stream, chunk)

    def _call_finish(self) -> None:
        with self.locks.setdefault(id(self.observer), threading.Lock()):
            super()._call_finish()


class _OneObserverOneLane(ShellRunner):
    """Serializes the invocations that share an observer object, so it never sees two at once."""

    session_class = _LockPerObserver

    def observe(self, observer: Any) -> ObservationSession:
        session = super().observe(observer)
        assert isinstance(session, _LockPerObserver)
        session.locks = self.__dict__.setdefault("_observer_locks", {})
        return session


class _IdsSkip(ShellRunner):
    """Numbers invocations 1, 3, 5...: unique and increasing, but leaving a gap each time."""

    def observe(self, observer: Any) -> ObservationSession:
        self._ids.take()
        return super().observe(observer)


class _IdsForAll(ShellRunner):
    """Takes (and reports) an invocation ID for every command, observed or not."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        if kwargs.get("observer") is None:
            taken = self._ids.take()
            if kwargs.get("on_invocation") is not None:
                kwargs["on_invocation"](taken)
        return await super().run(argv, **kwargs)


class _FrozenIds(InvocationIds):
    def take(self) -> int:
        return 1


class _SameId(ShellRunner):
    """Gives every invocation the same ID (its counter never moves on)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["ids"] = _FrozenIds()
        super().__init__(**kwargs)


class _CountdownIds(InvocationIds):
    def __init__(self) -> None:
        super().__init__()
        self._down = 1_000_000

    def take(self) -> int:
        with self._lock:
            self._down -= 1
            return self._down


class _IdsCountDown(ShellRunner):
    """Hands out IDs from a counter stepped the wrong way: unique, but decreasing."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["ids"] = _CountdownIds()
        super().__init__(**kwargs)


class _NumbersChunks(ObservationSession):
    """Passes a running chunk number as the invocation ID, not the invocation's own ID."""

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        self.__dict__["_n"] = self.__dict__.get("_n", self.invocation) + 1
        self.observer.on_output(self.__dict__["_n"], stream, chunk)


class _WrongIdInCallbacks(ObservationSession):
    """Calls the observer with the ID one above the one the invocation took."""

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        self.observer.on_output(self.invocation + 1, stream, chunk)


class _WaitsForObserver(ShellRunner):
    """Returns only once the observer has seen everything (waits for delivery)."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        result = await super().run(argv, **kwargs)
        with self._lock:
            pending = list(self._sessions)
        await anyio.to_thread.run_sync(lambda: [s.join() for s in pending], abandon_on_cancel=True)
        return result


class _CancelJoinsPresenter(ShellRunner):
    """On cancellation, waits (up to 2 s) for the observer's callback before unwinding."""

    def _stop(self, session: ObservationSession | None) -> None:
        super()._stop(session)
        if session is not None:
            session.join(2.0)


class _TimeoutJoinsPresenter(ShellRunner):
    """On the time limit, gives the observer up to 2 s to finish its callback first."""

    def _on_timeout(self, session: ObservationSession | None) -> None:
        super()._on_timeout(session)
        if session is not None:
            session.join(2.0)


class _CancelWaitsForChild(ShellRunner):
    """Lets the child run on for up to 6 s before honouring a cancellation ("graceful")."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        try:
            return await super().run(argv, **kwargs)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.sleep(6.0)
            raise


class _TimeoutNotFlagged(ShellRunner):
    """Reports a timed-out command as an ordinary exit, code -9, as subprocess shows SIGKILL."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        result = await super().run(argv, **kwargs)
        if not result.timed_out:
            return result
        return replace(result, exit_code=-9, timed_out=False)


class _TimeoutMessage(ShellRunner):
    """Returns upstream ShellTool's timed-out envelope: no output, its own stderr message."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        result = await super().run(argv, **kwargs)
        if not result.timed_out:
            return result
        message = f"command timed out after {int(kwargs.get('timeout') or 0)}s".encode()
        return replace(
            result, stdout=b"", stderr=message, stdout_truncated=False, stderr_truncated=False
        )


class _RefusalOnlyLogged(ShellRunner):
    """Logs a policy refusal and runs the command anyway."""

    def _check_policy(self, argv: list[str]) -> None:
        reason = self._policy(argv) if self._policy is not None else None
        if reason is not None:
            log.warning("policy refused %s (%s); running it anyway", argv[:1], reason)


class _SpawnErrorAsResult(ShellRunner):
    """Reports a program that cannot be spawned as exit code 127, like a shell would."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        try:
            return await super().run(argv, **kwargs)
        except CommandFailed:
            return ShellResult(127, b"", b"", False, False, False)

    def _on_spawn_error(self, session: ObservationSession | None) -> None:
        self._complete(session)


class _PanicFailsTheCall(ShellRunner):
    """Reports an observer that raised to the caller by failing the call."""

    session_class = _RecordsDelivered

    def observe(self, observer: Any) -> ObservationSession:
        session = super().observe(observer)
        assert isinstance(session, _RecordsDelivered)
        _LAST_SESSION.set(session)
        return session

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        _LAST_SESSION.set(None)
        result = await super().run(argv, **kwargs)
        session = _LAST_SESSION.get()
        if session is not None:
            await anyio.to_thread.run_sync(session.join, 1.0)
            if session._disabled:
                raise RuntimeError("the shell-output observer failed")
        return result


class _TimeoutFinishes(ShellRunner):
    """On the time limit, completes observation normally (on_finish included)."""

    def _on_timeout(self, session: ObservationSession | None) -> None:
        self._complete(session)


class _SpawnErrorFinishes(ShellRunner):
    """When the program cannot start, completes observation normally."""

    def _on_spawn_error(self, session: ObservationSession | None) -> None:
        self._complete(session)


class _TimeoutDropsOutput(ShellRunner):
    """On the time limit, returns no output and exit code 124, like coreutils `timeout`."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        result = await super().run(argv, **kwargs)
        if not result.timed_out:
            return result
        return replace(
            result,
            exit_code=124,
            stdout=b"",
            stderr=b"",
            stdout_truncated=False,
            stderr_truncated=False,
        )


class _KillsLeaderOnly(ShellRunner):
    """Ends a timed-out command by killing the child alone, not its process group."""

    def _kill(self, process: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()


class _IdForRefused(ShellRunner):
    """Takes the invocation ID before asking the policy, so a refused command uses one up."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        refused = self._policy is not None and self._policy(list(argv))
        if kwargs.get("observer") is not None and refused:
            self._ids.take()
        return await super().run(argv, **kwargs)


class _RefusedAfterObserving(ShellRunner):
    """Attaches the observer first and checks the policy after (then closes the session)."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        observer, on_invocation = kwargs.get("observer"), kwargs.get("on_invocation")
        if observer is not None and self._policy is not None and self._policy(list(argv)):
            session = self.observe(observer)
            if on_invocation is not None:
                on_invocation(session.invocation)
            session.finish()
        return await super().run(argv, **kwargs)


_LAST_SESSION: contextvars.ContextVar[_RecordsDelivered | None] = contextvars.ContextVar(
    "soo_last_session", default=None
)


class _EnvelopeFromObserver(ShellRunner):
    """Builds the result from what the observer was shown, not from the pipes."""

    session_class = _RecordsDelivered

    def observe(self, observer: Any) -> ObservationSession:
        session = super().observe(observer)
        assert isinstance(session, _RecordsDelivered)
        _LAST_SESSION.set(session)
        return session

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        _LAST_SESSION.set(None)
        result = await super().run(argv, **kwargs)
        session = _LAST_SESSION.get()
        if session is None:
            return result
        await anyio.to_thread.run_sync(session.join, 1.0)
        out, err = (session.delivered[s] for s in ShellOutputStream)
        return replace(result, stdout=out, stderr=err)


class _FinishPanicRunner(ShellRunner):
    """After an on_finish failure, the observer is considered broken for good."""

    session_class = _FinishPanicBreaksObserver

    def observe(self, observer: Any) -> ObservationSession:
        broken: set[int] = self.__dict__.setdefault("_broken", set())
        session = super().observe(observer)
        assert isinstance(session, _FinishPanicBreaksObserver)
        session.broken = broken
        if id(session.observer) in broken:
            session.cancel()
        return session


# -- the catalogue ------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """One named bug: the rule it breaks, what it does wrong, and how to build it."""

    name: str
    rule: str
    statement: str
    runner: type[ShellRunner]

    def implementation(self) -> ReferenceShellOutput:
        return ReferenceShellOutput(self.runner)


def _m(name: str, rule: str, runner: type[ShellRunner] | type[ObservationSession]) -> Mutant:
    cls: type[ShellRunner] = (
        _with_session(runner) if issubclass(runner, ObservationSession) else runner
    )
    doc = (runner.__doc__ or "").strip().splitlines()[0] if runner.__doc__ else name
    return Mutant(name, rule, doc, cls)


_ALL = [
    _m("soo-empty-chunks", "SOO-NONEMPTY", _EmptyWhenSpent),
    _m("soo-decoded", "SOO-RAW", _Decoded),
    _m("soo-lifo", "SOO-PIPE-ORDER", _Lifo),
    _m("soo-shared-budget", "SOO-BUDGET", _SharedBudget),
    _m("soo-zero-unlimited", "SOO-BUDGET-ZERO", _ZeroUnlimited),
    _m("soo-deliver-on-drain", "SOO-THREAD", _DeliverOnFeeder),
    _m("soo-thread-per-callback", "SOO-SERIAL", _ThreadPerCallback),
    _m("soo-one-presenter", "SOO-ISOLATION", _SerializingRunner),
    _m("soo-ids-for-all", "SOO-IDS", _IdsForAll),
    _m("soo-ids-skip", "SOO-IDS", _IdsSkip),
    _m("soo-same-id", "SOO-IDS", _SameId),
    _m("soo-ids-count-down", "SOO-IDS", _IdsCountDown),
    _m("soo-numbers-chunks", "SOO-IDS", _NumbersChunks),
    _m("soo-wrong-id-in-callbacks", "SOO-IDS", _WrongIdInCallbacks),
    _m("soo-one-lane-per-observer", "SOO-ISOLATION", _OneObserverOneLane),
    _m("soo-held-until-end", "SOO-LIVE", _HeldUntilEnd),
    _m("soo-bounded-queue", "SOO-NO-STALL", _BoundedQueue),
    _m("soo-finish-drops-queue", "SOO-FINISH", _FinishDropsQueue),
    _m("soo-waits-for-observer", "SOO-NO-WAIT", _WaitsForObserver),
    _m("soo-accepts-late", "SOO-LATE", _AcceptsLate),
    _m("soo-delivers-after-panic", "SOO-PANIC", _DeliversAfterPanic),
    _m("soo-finish-panic-breaks-observer", "SOO-FINISH-PANIC", _FinishPanicRunner),
    _m("soo-cancel-finishes", "SOO-CANCEL", _CancelFinishes),
    _m("soo-cancel-waits-for-callback", "SOO-CANCEL", _CancelWaitsForCallback),
    _m("soo-cancel-joins-presenter", "SOO-CANCEL", _CancelJoinsPresenter),
    _m("soo-cancel-waits-for-child", "SOO-CANCEL", _CancelWaitsForChild),
    _m("soo-timeout-not-flagged", "SOO-TIMEOUT", _TimeoutNotFlagged),
    _m("soo-timeout-message", "SOO-TIMEOUT-RESULT", _TimeoutMessage),
    _m("soo-refusal-only-logged", "SOO-DENIED", _RefusalOnlyLogged),
    _m("soo-spawn-error-as-result", "SOO-ERROR-NO-FINISH", _SpawnErrorAsResult),
    _m("soo-panic-fails-the-call", "SOO-PANIC", _PanicFailsTheCall),
    _m("soo-timeout-joins-presenter", "SOO-NO-STALL", _TimeoutJoinsPresenter),
    _m("soo-timeout-finishes", "SOO-TIMEOUT", _TimeoutFinishes),
    _m("soo-timeout-drops-output", "SOO-TIMEOUT-RESULT", _TimeoutDropsOutput),
    _m("soo-kills-leader-only", "SOO-TIMEOUT-GROUP", _KillsLeaderOnly),
    _m("soo-envelope-from-observer", "SOO-ENVELOPE", _EnvelopeFromObserver),
    _m("soo-refused-after-observing", "SOO-DENIED", _RefusedAfterObserving),
    _m("soo-id-for-refused", "SOO-DENIED-NO-ID", _IdForRefused),
    _m("soo-spawn-error-finishes", "SOO-ERROR-NO-FINISH", _SpawnErrorFinishes),
]

#: Every shell-output mutant, by name.
MUTANTS: dict[str, Mutant] = {m.name: m for m in _ALL}


def mutant_adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    """The named mutant as an adapter, exactly like :func:`reference_adapter` builds one."""
    mutant = MUTANTS[name]
    return PythonAdapter(
        name=f"seamspec-mutant-{name}",
        version=__version__,
        drivers=[ShellOutputDriver(mutant.implementation())],
        backend=backend,
        details={"mutant": name, "breaks": mutant.rule},
    )
