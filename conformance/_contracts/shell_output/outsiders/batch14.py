"""Seven plausible broken variants of ``base14``: each has exactly one bug.

Outsider batch 14 (b14soo), written from the docs of main ecbade0 before any of them was
run against the suite (the original ``b14soo_variants.py`` had sha256
de3435f36e422a1be57f3e13e35c0c934a3ef34b9724603d3c9eb3f832f444c4). Kept as written: only
imports, type annotations the outsider left out (mypy strict), ``noqa`` marks, the
linter's layout and the catalogue at the end (``OutsiderMutant`` records a spec instead of
a ``VARIANTS`` list of triples with ``V_*`` adapter factories) changed. Labels changed
after triage are in ``RELABELLED``, variants found not to be bugs in ``REJECTED``,
variants no scenario catches yet in ``PENDING`` (with why) and real bugs no scenario can
catch deterministically in ``UNSEEN``; only the rest are registered as mutants
(``MUTANTS``).

First try, judged against main ecbade0 by the meta-test's standard (a scenario citing the
rule fails it at MUST level and the oracle names the rule): 6 of 7 killed properly;
``out-b14soo-falsy-observer-unobserved`` survived (every observer the kit handed over was
truthy, so ``if observer:`` looked like ``is not None``). Triage gave the scenario
vocabulary a falsy observer (``falsy: true``, feature ``soo-falsy-observer``, which the
Python driver declares for every implementation), and
``finish-falsy-observer-is-observed`` kills it under SOO-FINISH. See
docs/contracts/shell-output-observer.md, "Outsider mutants", batch 14, for each.

(The outsider's module docstring: "b14soo variants: the base with exactly one plausible
bug each.")
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seamspec.conformance._contracts.shell_output.outsiders import base14 as base
from seamspec.conformance._contracts.shell_output.outsiders.base14 import (
    Implementation,
    Session,
    Shell,
    Stream,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter


def _impl(shell_cls: type[Shell]) -> Implementation:
    impl = Implementation()
    impl.shell_class = shell_cls
    return impl


# 1. `if observer:` -- an observer object that is falsy (defines __len__ == 0, e.g. a pane
#    that is a list of lines, empty at the start) is taken for "no observer".
class FalsyObserverShell(Shell):
    def _is_observed(self, observer: Any) -> bool:
        return bool(observer)


# 2. Unobserved fast path: only observed commands get their own process group (the group
#    kill was added "for the observer"), so an unobserved timed-out command's grandchild
#    survives the limit.
class UnobservedNoGroupShell(Shell):
    def _spawn(self, argv: Sequence[str], observed: bool) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=observed,
            close_fds=True,
        )

    def _kill(self, proc: subprocess.Popen[bytes], observed: bool) -> None:
        if observed:
            try:  # noqa: SIM105
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:  # noqa: SIM105
            proc.kill()
        except (ProcessLookupError, OSError):
            pass


# 3. Coalescing behind a slow observer appends a small chunk to the *oldest* queued entry
#    of its stream instead of the newest: bytes jump ahead of entries queued before them.
class MergeOldestSession(Session):
    def _enqueue(self, stream: Stream, chunk: bytes) -> None:
        q = self._queue
        if len(q) >= base.MERGE_BEHIND and len(chunk) < base.MERGE_MAX:
            for i in range(len(q)):
                entry = q[i]
                if entry is base._FINISH:
                    break
                if entry[0] is stream:
                    if len(entry[1]) + len(chunk) <= base.MERGE_MAX:
                        q[i] = (stream, entry[1] + chunk)
                        return
                    break
        q.append((stream, chunk))


class MergeOldestShell(Shell):
    session_class = MergeOldestSession


# 4. The budget keeps an "exhausted" flag set only by the chunk that is cut (`len > left`);
#    a chunk that fills the budget exactly leaves the flag unset, so the next chunk is cut
#    to b"" and delivered as an empty on_output (once).
class ExactFillSession(Session):
    def _initial_budget(self, budget: int) -> dict[Stream, int]:
        self._exhausted = {Stream.STDOUT: budget <= 0, Stream.STDERR: budget <= 0}
        return {Stream.STDOUT: budget, Stream.STDERR: budget}

    def _cut(self, stream: Stream, chunk: bytes) -> bytes | None:
        if self._exhausted[stream]:
            return None
        left = self._left[stream]
        if len(chunk) > left:
            chunk = chunk[:left]
            self._exhausted[stream] = True
        self._left[stream] = left - len(chunk)
        return chunk

    def _allow_empty(self) -> bool:
        return True


class ExactFillShell(Shell):
    session_class = ExactFillSession


# 5. `live_budget or output_cap`: a live budget of 0 falls back to the cap (right whenever
#    the cap is 0 too, which is how upstream reaches a budget of 0).
class BudgetZeroFallbackShell(Shell):
    def _budget(self) -> int:
        return self.live_budget or self.output_cap


# 6. The per-stream budget dict is built once per runner and each session aliases it
#    instead of copying: a second invocation starts with what the first one left.
class SharedBudgetSession(Session):
    def _initial_budget(self, budget: int) -> dict[Stream, int]:
        shell = self.shell
        if getattr(shell, "_budgets", None) is None:
            shell._budgets = {Stream.STDOUT: budget, Stream.STDERR: budget}  # type: ignore[attr-defined]
        return shell._budgets  # type: ignore[attr-defined,no-any-return]


class SharedBudgetShell(Shell):
    session_class = SharedBudgetSession


# 7. The result's truncation flag is set only in the branch where the capture still had
#    room: a stream whose capture is already exactly full (or a cap of 0) is never flagged
#    however much more the child writes in later reads.
class CapFullUnflaggedShell(Shell):
    def _capture(self, cap_state: dict[str, Any], data: bytes) -> None:
        buf: bytearray = cap_state["buf"]
        room = self.output_cap - len(buf)
        if room > 0:
            if len(data) > room:
                cap_state["truncated"] = True
            buf += data[:room]


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-b14soo-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    shell_class: type[Shell]


#: name, rule and statement as the outsider wrote them (a rule since changed is in
#: ``RELABELLED``), and the runner with the bug.
_SPECS = [
    OutsiderMutant(
        "out-b14soo-falsy-observer-unobserved",
        "SOO-FINISH",
        "run() tests `if observer:`, so an observer object that is falsy (len() 0) is run "
        "unobserved: no ID, no on_output, no on_finish after a normal completion.",
        FalsyObserverShell,
    ),
    OutsiderMutant(
        "out-b14soo-unobserved-no-process-group",
        "SOO-TIMEOUT-GROUP",
        "Only observed commands are started in their own process group and killed by group; "
        "an unobserved command that times out has only its leader killed, its grandchild lives on.",
        UnobservedNoGroupShell,
    ),
    OutsiderMutant(
        "out-b14soo-merge-into-oldest-entry",
        "SOO-PIPE-ORDER",
        "Once 16 entries behind, a small chunk is merged into the oldest queued entry of its "
        "stream instead of the newest, so later bytes overtake bytes queued before them.",
        MergeOldestShell,
    ),
    OutsiderMutant(
        "out-b14soo-exact-fill-empty-chunk",
        "SOO-NONEMPTY",
        "The budget's exhausted flag is set only by a chunk that is cut (len > left), so after "
        "a chunk fills the budget exactly the next chunk is cut to b'' and delivered empty.",
        ExactFillShell,
    ),
    OutsiderMutant(
        "out-b14soo-budget-zero-falls-back-to-cap",
        "SOO-BUDGET-ZERO",
        "The live budget is `live_budget or output_cap`, so a live budget of 0 with a non-zero "
        "cap delivers up to the cap.",
        BudgetZeroFallbackShell,
    ),
    OutsiderMutant(
        "out-b14soo-budget-shared-across-invocations",
        "SOO-BUDGET",
        "Every session aliases one per-runner budget dict instead of copying it, so later "
        "invocations of the same runner start with what earlier ones left of the budget.",
        SharedBudgetShell,
    ),
    OutsiderMutant(
        "out-b14soo-cap-full-later-read-unflagged",
        "SOO-ENVELOPE",
        "The result's *_truncated flag is set only while the capture still has room, so a "
        "stream already exactly at the cap (or a cap of 0) is never flagged for later bytes.",
        CapFullUnflaggedShell,
    ),
]

#: Every variant the outsider wrote, by name.
VARIANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}

#: Labels changed after the batch was judged, with the label the outsider gave and why.
RELABELLED: dict[str, tuple[str, str]] = {}

#: Variants triage found not to be bugs, with the reason (kept here, never registered).
REJECTED: dict[str, str] = {}

#: Variants kept but not registered as mutants yet (no scenario catches them), with why.
PENDING: dict[str, str] = {}

#: Variants that are real bugs the suite cannot see deterministically (none so far).
UNSEEN: dict[str, str] = {}

#: The variants registered as mutants.
MUTANTS: dict[str, OutsiderMutant] = {
    name: v
    for name, v in VARIANTS.items()
    if name not in PENDING and name not in REJECTED and name not in UNSEEN
}


def implementation(name: str) -> Implementation:
    """The outsider's implementation with the named variant's bug."""
    return _impl(VARIANTS[name].shell_class)


def build(name: str, backend: str = "asyncio") -> PythonAdapter:
    """The named variant as an adapter (the outsider's ``V_*`` attributes, either backend)."""
    return make_adapter(implementation(name), name=name, backend=backend)
