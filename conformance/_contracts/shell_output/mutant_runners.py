"""The kit's shell-output runner mutants: the reference runner with one mistake each.

Each class overrides one decision point of :class:`ShellRunner` (``_check_policy``,
``observe``, ``_complete``, ``_stop``, ``_on_timeout``, ``_kill``, ``_on_spawn_error``) or
wraps ``run``; its docstring and its few lines *are* the bug. ``mutants.py`` names them
and the rule each breaks.
"""

from __future__ import annotations

import contextlib
import contextvars
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import IO, Any, cast

import anyio

from seamspec.conformance._contracts.shell_output.mutant_sessions import (
    _FinishPanicBreaksObserver,
    _HoldsAfterFinishPanic,
    _LockPerObserver,
    _OneAtATime,
    _RecordsDelivered,
)
from seamspec.reference import (
    InvocationIds,
    ObservationSession,
    SessionPhase,
    ShellOutputStream,
    ShellResult,
    ShellRunner,
)
from seamspec.reference._shell_output.runner import CommandFailed, _Capture
from seamspec.reference._shell_output.session import log

__all__: list[str] = []


class _SerializingRunner(ShellRunner):
    """Serializes callbacks across all of a runner's invocations, so panes never interleave."""

    session_class = _OneAtATime

    def observe(self, observer: Any) -> ObservationSession:
        session = super().observe(observer)
        assert isinstance(session, _OneAtATime)
        session.shared = self.__dict__.setdefault("_shared_lock", threading.Lock())
        return session


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
    """On the time limit, gives the observer up to 3 s to finish its callback first."""

    def _on_timeout(self, session: ObservationSession | None) -> None:
        super()._on_timeout(session)
        if session is not None:
            session.join(3.0)


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


class _TimeoutKeepsQueue(ShellRunner):
    """On the time limit, closes the session to new output but still shows what was queued."""

    def _on_timeout(self, session: ObservationSession | None) -> None:
        # "Let the pane show what the command printed before it hung": the session leaves
        # ACTIVE (nothing more is accepted) without a finish notice and without dropping
        # its queue, so the presentation thread delivers the queue, then ends.
        if session is not None:
            with session._cond:
                if session._phase is SessionPhase.ACTIVE:
                    session._phase = SessionPhase.FINISHED
                    session._cond.notify()


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


class _LeftOrNone:
    """What a drain offers to when it counts the live budget itself (see below)."""

    def __init__(self, session: ObservationSession) -> None:
        self.session = session
        self.invocation = session.invocation
        # Each drain counts its own stream; the session keeps no budget of its own.
        self.left: int = session.__dict__.setdefault("drain_budget", session.budget)
        session.budget = sys.maxsize

    def accepting(self, stream: ShellOutputStream) -> bool:
        return self.session.accepting(stream)

    def offer(self, stream: ShellOutputStream, chunk: bytes) -> None:
        if self.left < 0:
            return
        # ``[:n or None]`` reads "no budget" as "no limit"; 0 bytes left reads the same.
        self.session.offer(stream, chunk[: self.left or None])
        self.left -= len(chunk)


class _BudgetLeftZeroUnlimited(ShellRunner):
    """Counts the live budget in each drain with ``chunk[:left or None]``: a stream filled exactly lets its next chunk through whole."""

    def _drain(
        self,
        pipe: IO[bytes],
        stream: ShellOutputStream,
        capture: _Capture,
        session: ObservationSession | None,
    ) -> None:
        counted = None if session is None else cast(ObservationSession, _LeftOrNone(session))
        super()._drain(pipe, stream, capture, counted)


class _CutOnlyCapture(_Capture):
    """A result capture that says truncated only when it cut a chunk (see below)."""

    def add(self, chunk: bytes | memoryview) -> None:
        with self._lock:
            room = self._cap - len(self._data)
            if room > 0:
                self._data += chunk[:room]
                if len(chunk) > room:
                    self.truncated = True


class _FullCapNotTruncated(ShellRunner):
    """Flags a result stream truncated only when a chunk was cut: output that finds the cap already full is dropped unflagged."""

    def _drain(
        self,
        pipe: IO[bytes],
        stream: ShellOutputStream,
        capture: _Capture,
        session: ObservationSession | None,
    ) -> None:
        capture.__class__ = _CutOnlyCapture
        super()._drain(pipe, stream, capture, session)


class _FinishPanicHoldsRunner(ShellRunner):
    """After an on_finish failure, the observer's later invocations are shown only once they complete."""

    session_class = _HoldsAfterFinishPanic

    def observe(self, observer: Any) -> ObservationSession:
        session = super().observe(observer)
        assert isinstance(session, _HoldsAfterFinishPanic)
        session.broken = self.__dict__.setdefault("_broken", set())
        return session
