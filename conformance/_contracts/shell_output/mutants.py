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

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass
from types import ModuleType

from seamspec import __version__
from seamspec.conformance._contracts.shell_output import mutant_edges as edges
from seamspec.conformance._contracts.shell_output import mutant_runners as runners
from seamspec.conformance._contracts.shell_output import mutant_sessions as sessions
from seamspec.conformance._contracts.shell_output.driver import (
    ShellOutputDriver,
    ShellOutputImplementation,
)
from seamspec.conformance._contracts.shell_output.outsiders import (
    base,
    base2,
    base4,
    base5,
    base6,
    base7,
    base8,
    base9,
    batch1,
    batch2,
    batch4,
    batch5,
    batch6,
    batch7,
    batch8,
    batch9,
    batch10,
    batch11,
    batch13,
    batch14,
)
from seamspec.conformance._contracts.shell_output.reference_adapter import ReferenceShellOutput
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import ObservationSession, ShellRunner

__all__ = ["MUTANTS", "NOW_SEEN", "Mutant", "mutant_adapter"]


def _with_session(session: type[ObservationSession]) -> type[ShellRunner]:
    return type(f"RunnerWith{session.__name__}", (ShellRunner,), {"session_class": session})


# -- the catalogue ------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """One named bug: the rule it breaks, what it does wrong, and how to build it."""

    name: str
    rule: str
    statement: str
    runner: type[ShellRunner] = ShellRunner
    #: Who wrote it: ``kit`` (against the reference) or ``outsider batch N`` (from the docs).
    origin: str = "kit"
    #: An outsider mutant is their own implementation with the bug, not the reference's.
    outsider: Callable[[], ShellOutputImplementation] | None = None

    def implementation(self) -> ShellOutputImplementation:
        if self.outsider is not None:
            return self.outsider()
        return ReferenceShellOutput(self.runner)


def _m(name: str, rule: str, runner: type[ShellRunner] | type[ObservationSession]) -> Mutant:
    cls: type[ShellRunner] = (
        _with_session(runner) if issubclass(runner, ObservationSession) else runner
    )
    doc = (runner.__doc__ or "").strip().splitlines()[0] if runner.__doc__ else name
    return Mutant(name, rule, doc, cls)


_ALL = [
    _m("soo-empty-chunks", "SOO-NONEMPTY", sessions._EmptyWhenSpent),
    _m("soo-decoded", "SOO-RAW", sessions._Decoded),
    _m("soo-lifo", "SOO-PIPE-ORDER", sessions._Lifo),
    _m("soo-shared-budget", "SOO-BUDGET", sessions._SharedBudget),
    _m("soo-budget-left-zero-unlimited", "SOO-BUDGET", runners._BudgetLeftZeroUnlimited),
    _m("soo-zero-unlimited", "SOO-BUDGET-ZERO", sessions._ZeroUnlimited),
    _m("soo-deliver-on-drain", "SOO-THREAD", sessions._DeliverOnFeeder),
    _m("soo-thread-per-callback", "SOO-SERIAL", sessions._ThreadPerCallback),
    _m("soo-one-presenter", "SOO-ISOLATION", runners._SerializingRunner),
    _m("soo-ids-for-all", "SOO-IDS", runners._IdsForAll),
    _m("soo-ids-skip", "SOO-IDS", runners._IdsSkip),
    _m("soo-same-id", "SOO-IDS", runners._SameId),
    _m("soo-ids-count-down", "SOO-IDS", runners._IdsCountDown),
    _m("soo-numbers-chunks", "SOO-IDS", sessions._NumbersChunks),
    _m("soo-wrong-id-in-callbacks", "SOO-IDS", sessions._WrongIdInCallbacks),
    _m("soo-one-lane-per-observer", "SOO-ISOLATION", runners._OneObserverOneLane),
    _m("soo-held-until-end", "SOO-LIVE", sessions._HeldUntilEnd),
    _m("soo-bounded-queue", "SOO-NO-STALL", sessions._BoundedQueue),
    _m("soo-finish-drops-queue", "SOO-FINISH", sessions._FinishDropsQueue),
    _m("soo-waits-for-observer", "SOO-NO-WAIT", runners._WaitsForObserver),
    _m("soo-accepts-late", "SOO-LATE", sessions._AcceptsLate),
    _m("soo-delivers-after-panic", "SOO-PANIC", sessions._DeliversAfterPanic),
    _m("soo-finish-panic-breaks-observer", "SOO-FINISH-PANIC", runners._FinishPanicRunner),
    _m("soo-finish-panic-holds-output", "SOO-FINISH-PANIC", runners._FinishPanicHoldsRunner),
    _m("soo-cancel-finishes", "SOO-CANCEL", sessions._CancelFinishes),
    _m("soo-cancel-waits-for-callback", "SOO-CANCEL", sessions._CancelWaitsForCallback),
    _m("soo-cancel-joins-presenter", "SOO-CANCEL", runners._CancelJoinsPresenter),
    _m("soo-cancel-waits-for-child", "SOO-CANCEL", runners._CancelWaitsForChild),
    _m("soo-timeout-not-flagged", "SOO-TIMEOUT", runners._TimeoutNotFlagged),
    _m("soo-timeout-message", "SOO-TIMEOUT-RESULT", runners._TimeoutMessage),
    _m("soo-refusal-only-logged", "SOO-DENIED", runners._RefusalOnlyLogged),
    _m("soo-spawn-error-as-result", "SOO-ERROR-NO-FINISH", runners._SpawnErrorAsResult),
    _m("soo-panic-fails-the-call", "SOO-PANIC", runners._PanicFailsTheCall),
    _m("soo-timeout-joins-presenter", "SOO-NO-STALL", runners._TimeoutJoinsPresenter),
    _m("soo-timeout-finishes", "SOO-TIMEOUT", runners._TimeoutFinishes),
    _m("soo-timeout-keeps-queue", "SOO-TIMEOUT", runners._TimeoutKeepsQueue),
    _m("soo-timeout-drops-output", "SOO-TIMEOUT-RESULT", runners._TimeoutDropsOutput),
    _m("soo-kills-leader-only", "SOO-TIMEOUT-GROUP", runners._KillsLeaderOnly),
    _m("soo-envelope-from-observer", "SOO-ENVELOPE", runners._EnvelopeFromObserver),
    _m("soo-full-cap-not-truncated", "SOO-ENVELOPE", runners._FullCapNotTruncated),
    _m("soo-refused-after-observing", "SOO-DENIED", runners._RefusedAfterObserving),
    _m("soo-id-for-refused", "SOO-DENIED-NO-ID", runners._IdForRefused),
    _m("soo-spawn-error-finishes", "SOO-ERROR-NO-FINISH", runners._SpawnErrorFinishes),
    # sweep 13: edges no scenario touched before (the contract page, "Sweep 13")
    _m("soo-timeout-floor-one-second", "SOO-TIMEOUT", edges._TimeoutFloorOneSecond),
    _m("soo-exit-127-is-spawn-failure", "SOO-ERROR-NO-FINISH", edges._ExitStatus127IsSpawnFailure),
    _m("soo-crlf-to-lf", "SOO-RAW", edges._CrlfToLf),
    _m("soo-nfc-for-pane", "SOO-RAW", edges._NfcForPane),
    _m("soo-bell-backspace-stripped", "SOO-RAW", edges._BellAndBackspaceStripped),
    _m("soo-blank-chunks-skipped", "SOO-RAW", edges._BlankChunksSkipped),
    _m("soo-cancel-stops-every-session", "SOO-FINISH", edges._CancelStopsEverySession),
    _m("soo-spawn-error-told-to-pane", "SOO-RAW", edges._SpawnErrorToldToPane),
    _m("soo-timeout-told-to-pane", "SOO-RAW", edges._TimeoutToldToPane),
    _m("soo-result-in-text-mode", "SOO-ENVELOPE", edges._ResultInTextMode),
    _m("soo-result-as-upstream-text", "SOO-RESULT-BYTES", edges._ResultAsUpstreamText),
]

#: Variants a batch lists in its ``UNSEEN`` (its file is kept as hashed) that scenarios
#: now catch: batch 8's reap-first cancellation, since the emitter's detached grandchild
#: keeps the pipes open past a group kill (the contract page, batch 8, says how).
NOW_SEEN = frozenset(
    {
        "out-soo8-cancel-reaps-first",
        # batch 9's kill-drain-then-cancel time limit: a detached grandchild in a timed
        # call keeps the pipes open past the kill, so the late lines it writes are
        # delivered (the contract page, batch 9, says how)
        "out-soo9-timeout-kill-drain-then-cancel",
    }
)

#: Each outsider batch with the variants it keeps unregistered (``UNSEEN``: real bugs that
#: no scenario can catch without depending on timing; see the batch's docstring).
_BATCHES: tuple[tuple[int, ModuleType, Collection[str]], ...] = (
    (1, batch1, ()),
    (2, batch2, ()),
    (4, batch4, batch4.UNSEEN),
    (5, batch5, ()),
    (6, batch6, ()),
    (7, batch7, ()),
    (8, batch8, set(batch8.UNSEEN) - NOW_SEEN),
    (9, batch9, set(batch9.UNSEEN) - NOW_SEEN),
    (10, batch10, batch10.UNSEEN),
    # batch 11 registers only its MUTANTS (variants still PENDING are left out there)
    (11, batch11, batch11.UNSEEN),
    # batch 13 likewise (its still-PENDING variants are not in its MUTANTS)
    (13, batch13, batch13.UNSEEN),
    # batch 14 likewise
    (14, batch14, batch14.UNSEEN),
)

#: Each outsider base as written, where a scenario found a bug in the base itself: every
#: base waited after a time limit's group kill for end of file on the pipes, which a
#: grandchild outside the group keeps open (``soo-timeout-detached-grandchild-holds-pipes``;
#: the bases now return once the killed group is gone, ``outsiders/at_limit.py``).
_BASES_AS_WRITTEN: tuple[tuple[int, str, Callable[[], ShellOutputImplementation]], ...] = (
    (1, "out-soo-base1-timeout-waits-for-pipes", base.waits_for_pipes),
    (2, "out-soo-base2-timeout-waits-for-pipes", base2.waits_for_pipes),
    (4, "out-soo-base4-timeout-waits-for-pipes", base4.waits_for_pipes),
    (5, "out-soo-base5-timeout-waits-for-pipes", base5.waits_for_pipes),
    (6, "out-soo-base6-timeout-waits-for-pipes", base6.waits_for_pipes),
    (7, "out-soo-base7-timeout-waits-for-pipes", base7.waits_for_pipes),
    (8, "out-soo-base8-timeout-waits-for-pipes", base8.waits_for_pipes),
    (9, "out-soo-base9-timeout-waits-for-pipes", base9.waits_for_pipes),
)

_ALL += [
    Mutant(
        m.name,
        m.rule,
        m.statement,
        origin=f"outsider batch {number}",
        outsider=functools.partial(batch.implementation, m.name),
    )
    for number, batch, unseen in _BATCHES
    for m in batch.MUTANTS.values()
    if m.name not in unseen
]

_ALL += [
    Mutant(
        name,
        "SOO-TIMEOUT",
        "After the time limit's group kill the runner waits for end of file on the pipes "
        "(2 or 5 s), so a process outside the group that holds them decides when the call "
        "returns, not the limit.",
        origin=f"outsider batch {number}",
        outsider=build,
    )
    for number, name, build in _BASES_AS_WRITTEN
]

#: Every shell-output mutant, by name: the kit's own first, then each outsider batch.
MUTANTS: dict[str, Mutant] = {m.name: m for m in _ALL}


def mutant_adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    """The named mutant as an adapter, exactly like :func:`reference_adapter` builds one."""
    mutant = MUTANTS[name]
    return PythonAdapter(
        name=f"seamspec-mutant-{name}",
        version=__version__,
        drivers=[ShellOutputDriver(mutant.implementation())],
        backend=backend,
        details={"mutant": name, "breaks": mutant.rule, "origin": mutant.origin},
    )
