"""Seven plausible broken variants of ``base8``: each has exactly one bug.

Outsider batch 8 (soo8), written before any of them was run against the suite (the
original ``b8soo_variants.py`` had sha256
b47af43a87b6e3c1795b444376de42a9a2ec00f8b02e61ac20c636aa8518cf2d). Kept as written: only
imports, typing, the linter's layout and the catalogue at the end (``OutsiderMutant``
records a spec instead of a ``VARIANTS`` list of adapter factories) changed.

First try, against the suite of main 425fce3 (105 scenarios), judged by the lead on a
heavily loaded machine by the meta-test's standard (a scenario citing the rule fails it
at MUST level and the oracle names the rule): three killed properly
(``out-soo8-budget-drop-latch`` by the soo-session-budget-* scenarios,
``out-soo8-finish-panic-mutes-observer`` by soo-finish-panic-next-command-still-live and
soo-session-finish-panic-next-session, ``out-soo8-observer-lock`` by
soo-session-shared-observer and soo-shared-observer-two-invocations); one killed only by
another rule's scenario (``out-soo8-early-finish-when-spent``, by
soo-session-budget-zero-cancel, which cites SOO-CANCEL); three survived
(``out-soo8-utf8-holdback``: no live scenario ended a read inside a UTF-8 sequence;
``out-soo8-cancel-reaps-first``: no cancel scenario delivered output in the window between
the kill and the session's cancel; ``out-soo8-panic-cancels-siblings``: no scenario had a
raise while another invocation of the same observer was live). See
docs/contracts/shell-output-observer.md, "Outsider mutants", batch 8, for what kills each
now; ``out-soo8-cancel-reaps-first`` is listed in ``UNSEEN`` and not registered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.outsiders import base8 as base
from seamspec.conformance._contracts.shell_output.outsiders.base8 import (
    ACTIVE,
    Implementation,
    Session,
    ShellRunner,
)


# 1. SOO-BUDGET: a global "overflowed" fast-path flag drops the other stream too.
class _LatchSession(Session):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._overflowed = False
        super().__init__(*args, **kwargs)

    def offer(self, stream: object, chunk: bytes) -> bool:
        name = base._name(stream)
        with self._cond:
            if self._phase != ACTIVE or not chunk or self._overflowed:
                return False
            left = self._left.get(name, 0)
            if left <= 0:
                self._overflowed = True  # budget spent: stop taking output from now on
                return False
            data = bytes(chunk[:left])
            self._left[name] = left - len(data)
            self._queue.append((name, data))
            self._cond.notify()
            return True


class _LatchRunner(ShellRunner):
    session_class = _LatchSession


# 2. SOO-LIVE: drains hold back an incomplete trailing UTF-8 sequence until the next read.
def _incomplete_tail(data: bytes) -> int:
    """How many bytes at the end of data start a UTF-8 sequence that is not complete."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue  # continuation byte: look further back
        if byte & 0xE0 == 0xC0:
            need = 2
        elif byte & 0xF0 == 0xE0:
            need = 3
        elif byte & 0xF8 == 0xF0:
            need = 4
        else:
            return 0
        return back if back < need else 0
    return 0


class _HoldbackRunner(ShellRunner):
    def _reads(self, pipe: Any) -> Iterator[bytes]:
        carry = b""
        for data in super()._reads(pipe):
            data = carry + data  # noqa: PLW2901 (kept as the outsider wrote it)
            keep = _incomplete_tail(data)
            carry = data[len(data) - keep :] if keep else b""
            data = data[: len(data) - keep]  # noqa: PLW2901 (kept as the outsider wrote it)
            if data:
                yield data
        if carry:
            yield carry


# 3. SOO-FINISH-PANIC: an observer whose on_finish raised gets no on_finish again.
class _MuteRunner(ShellRunner):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._broken_finish: set[int] = set()

    def observe(self, observer: Any) -> Session:
        session = super().observe(observer)
        if id(observer) in self._broken_finish:
            session._on_finish = None
        return session

    def _finish_failed(self, session: Session, error: BaseException) -> None:
        super()._finish_failed(session, error)
        self._broken_finish.add(id(session.observer))


# 4. SOO-CANCEL: on cancellation the group is killed and reaped before the session stops.
class _ReapFirstRunner(ShellRunner):
    async def _stop(self, session: Session | None, proc: Any, done: threading.Event) -> None:
        self._kill(proc)
        with anyio.move_on_after(base.KILL_WAIT):
            await self._wait(done)  # no zombies: reap before we report the cancel
        if session is not None:
            session.cancel()


# 5. SOO-ISOLATION: callbacks to one observer object are serialized across invocations.
class _LockedSession(Session):
    def _call(self, function: Callable[..., Any], *args: Any) -> None:
        with self.runner._observer_lock(self.observer):  # type: ignore[attr-defined]
            function(*args)


class _LockedRunner(ShellRunner):
    session_class = _LockedSession

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._locks: dict[int, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def _observer_lock(self, observer: Any) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(id(observer), threading.Lock())


# 6. SOO-PANIC: an on_output that raised also stops that observer's other live sessions.
class _PanicAllRunner(ShellRunner):
    def _observer_failed(self, session: Session, error: BaseException) -> None:
        super()._observer_failed(session, error)
        with self._sessions_lock:
            siblings = [
                s for s in self._sessions if s is not session and s.observer is session.observer
            ]
        for other in siblings:
            other.cancel()


# 7. SOO-TIMEOUT: a session whose budgets are both spent finishes itself early.
class _EarlyFinishSession(Session):
    def offer(self, stream: object, chunk: bytes) -> bool:
        accepted = super().offer(stream, chunk)
        if all(left <= 0 for left in self._left.values()):
            self.finish()  # nothing more can be shown: let the pane close now
        return accepted


class _EarlyFinishRunner(ShellRunner):
    session_class = _EarlyFinishSession


# --- the catalogue (the outsider's VARIANTS list: name, rule, statement, runner) -------

__all__ = ["MUTANTS", "UNSEEN", "OutsiderMutant", "implementation"]


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-soo8-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    runner_class: type[ShellRunner]


_SPECS = [
    OutsiderMutant(
        "out-soo8-budget-drop-latch",
        "SOO-BUDGET",
        "The first chunk dropped for a spent budget sets a session-wide flag, so later chunks of the other stream are dropped too although its own budget remains.",
        _LatchRunner,
    ),
    OutsiderMutant(
        "out-soo8-utf8-holdback",
        "SOO-LIVE",
        "Drain threads hold back an incomplete trailing UTF-8 sequence until the next read (or EOF), so a read ending inside a character is not offered as read.",
        _HoldbackRunner,
    ),
    OutsiderMutant(
        "out-soo8-finish-panic-mutes-observer",
        "SOO-FINISH-PANIC",
        "An observer whose on_finish raised is remembered by the runner and never gets on_finish again for later invocations.",
        _MuteRunner,
    ),
    OutsiderMutant(
        "out-soo8-cancel-reaps-first",
        "SOO-CANCEL",
        "On cancellation of a run the process group is killed and the pipes drained and the child reaped before the session is cancelled, so chunks keep being accepted and delivered during that window.",
        _ReapFirstRunner,
    ),
    OutsiderMutant(
        "out-soo8-observer-lock",
        "SOO-ISOLATION",
        "Callbacks are made under a per-observer-object lock, so one observer blocked in one invocation delays its deliveries for every other invocation.",
        _LockedRunner,
    ),
    OutsiderMutant(
        "out-soo8-panic-cancels-siblings",
        "SOO-PANIC",
        "An on_output that raises also cancels every other live session watched by the same observer object, not just its own invocation.",
        _PanicAllRunner,
    ),
    OutsiderMutant(
        "out-soo8-early-finish-when-spent",
        "SOO-TIMEOUT",
        "A session finishes itself (queues on_finish) as soon as both streams' budgets are spent, so a call that then times out (or is cancelled) still brings on_finish.",
        _EarlyFinishRunner,
    ),
]

#: Every variant of the batch, by name.
MUTANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}


#: Variants that are real bugs the suite cannot see deterministically, and why; they are
#: not registered as mutants (the contract page, "Outsider mutants", batch 8, says so).
UNSEEN: dict[str, str] = {
    "out-soo8-cancel-reaps-first": (
        "it breaks SOO-CANCEL's 'stop accepting at once' (upstream drops the output guard "
        "first: output_observer.rs:138-145), but the window between the kill and the "
        "session's cancel lasts only until the killed group's pipes reach end of file, a few "
        "milliseconds; no emitter keeps the pipes open past a group kill, and a kill that "
        "depends on the scheduler delivering in those milliseconds is not a kill"
    ),
}


def implementation(name: str) -> Implementation:
    """The outsider's implementation with the named variant's bug."""
    impl = Implementation()
    impl.runner_class = MUTANTS[name].runner_class
    return impl
