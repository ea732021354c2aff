"""Seven plausible broken variants of ``base13``: each has exactly one bug.

Outsider batch 13 (b13soo), written from the docs of main 79cf702 before any of them was
run against the suite (the original ``b13soo_variants.py`` had sha256
6bf3fdae8abe9d1c0b7da39f1a0a58d3bc48c09e1f254bd2926c871ca0677158). Kept as written: only
imports, type annotations the outsider left out (mypy strict), the linter's layout and the
catalogue at the end (``OutsiderMutant`` records a spec instead of a ``VARIANTS`` list of
triples with ``V_*`` adapter factories) changed, and one label. Labels changed after triage
are in ``RELABELLED``, variants found not to be bugs in ``REJECTED``, variants no scenario
catches yet in ``PENDING`` (with why) and real bugs no scenario can catch
deterministically in ``UNSEEN``; only the rest are registered as mutants (``MUTANTS``).

First try, judged against main fcf826a by the meta-test's standard (a scenario citing the
rule fails it at MUST level and the oracle names the rule): 0 of 7 killed properly
(``out-b13soo-sticky-limit-flag`` was only cited-or-named: soo-serial-after-quiet-period
fails it but cites SOO-SERIAL, not SOO-FINISH), 6 survived. After the blind SOO sweep 13
(main d58f1ad, written without seeing this batch): ``out-b13soo-sticky-limit-flag`` and
``out-b13soo-exit-127-is-spawn-failure`` killed properly, 5 survived. Triage killed four
more with new scenarios (``finish-detached-grandchild-after-leader-exits``,
``finish-panic-sibling-live``, ``session-offer-while-on-finish-blocked``,
``returns-without-waiting-callable``); ``out-b13soo-result-cap-utf8-backoff`` was left
``PENDING`` (upstream's own envelope backs off too) until the lead's decision: it is
relabelled to the new seamspec rule SOO-RESULT-BYTES (strict) and killed by
``result-bytes-cap-inside-character``. See
docs/contracts/shell-output-observer.md, "Outsider mutants", batch 13, for each.

(The outsider's module docstring: "b13soo variants: each is the base with exactly one
plausible bug.")
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.outsiders import base13 as base
from seamspec.conformance._contracts.shell_output.outsiders.base13 import (
    Implementation,
    Session,
    ShellRunner,
    _Invocation,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

log = logging.getLogger("b13soo.shell")


# 1. completion = leader reaped and the process group empty ------------------------------
class GroupEmptyCompletes(ShellRunner):
    """Treats "leader reaped and no process left in its group" as completion.

    The author wanted daemons (`server &` that keep the pipes) not to hang a call, so once
    the group is empty it waits a moment for end of file and then completes anyway. A
    descendant that called setsid() still holds the pipes and may still write.
    """

    async def _wait_complete(
        self,
        done: threading.Event,
        reaped: threading.Event,
        proc: subprocess.Popen[bytes],
        deadline: float | None,
    ) -> bool:
        while True:
            if done.is_set():
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            if reaped.is_set() and self._group_gone(proc.pid):
                t0 = time.monotonic()
                while not done.is_set() and time.monotonic() - t0 < 0.25:
                    await anyio.sleep(base.POLL)
                return True
            await anyio.sleep(base.POLL)


# 2. the "limit fired" flag lives on the runner ------------------------------------------
class StickyLimitFlag(ShellRunner):
    """Records that the time limit fired on the runner, never resets it."""

    _fired: bool = False

    def _note_timed_out(self, inv: _Invocation) -> None:
        inv.timed_out = True
        self._fired = True

    def _limit_fired(self, inv: _Invocation) -> bool:
        return self._fired


# 3. exit status 126/127 read as "could not be spawned" ----------------------------------
class Exit127IsSpawnFailure(ShellRunner):
    def _exit_failed_spawn(self, code: int) -> bool:
        return code in (126, 127)


# 4. an on_finish that raised ends the same observer's other live sessions ---------------
class FinishPanicCancelsSiblings(ShellRunner):
    def _on_finish_failed(self, session: Session, error: BaseException) -> None:
        with self._sessions_lock:
            others = [
                s for s in self._sessions if s is not session and s.observer is session.observer
            ]
        for other in others:
            other.cancel()


# 5. on_finish called under the session's lock -------------------------------------------
class FinishUnderLockSession(Session):
    def _deliver_finish(self) -> None:
        with self._cond:  # "so the phase cannot change while the pane closes"
            if self._on_finish is None:
                return
            try:
                self._on_finish(self.invocation)
            except Exception as error:
                log.exception("observer on_finish failed (invocation %s)", self.invocation)
                self.runner._on_finish_failed(self, error)


class FinishUnderLock(ShellRunner):
    def observe(self, observer: Any) -> Session:
        session = FinishUnderLockSession(self, observer, self._take_id(), self.live_budget)
        with self._sessions_lock:
            self._sessions.append(session)
        return session


# 6. a plain callable (no on_finish) is drained before run() returns ---------------------
class CallableRunWaitsForPane(ShellRunner):
    async def _after_return(self, session: Session | None) -> None:
        if session is None or session._on_finish is not None:
            return
        # "a callable gets no finish notice, so return only once it has seen everything"
        while not session.drained():
            await anyio.sleep(base.POLL)


# 7. the result's cap backs off to a whole UTF-8 character -------------------------------
def _utf8_backoff(data: bytes) -> bytes:
    end = len(data)
    j = end - 1
    while j >= 0 and end - j <= 4 and (data[j] & 0xC0) == 0x80:
        j -= 1
    if j < 0:
        return data
    lead = data[j]
    if lead < 0x80:
        need = 1
    elif lead >> 5 == 0b110:
        need = 2
    elif lead >> 4 == 0b1110:
        need = 3
    elif lead >> 3 == 0b11110:
        need = 4
    else:
        need = 1
    return data[:j] if end - j < need else data


class ResultCapUtf8Backoff(ShellRunner):
    def _capped(self, data: bytes, total: int) -> bytes:
        if total > self.output_cap:
            return _utf8_backoff(data)
        return data


def _impl(runner: type[ShellRunner]) -> Implementation:
    return Implementation(runner)


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-b13soo-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    runner_class: type[ShellRunner]


#: name, rule and statement as the outsider wrote them (a rule since changed is in
#: ``RELABELLED``), and the runner with the bug.
_SPECS = [
    OutsiderMutant(
        "out-b13soo-group-empty-completes",
        "SOO-FINISH",
        "Once the child is reaped and a killpg(pgid, 0) probe finds its process group empty, the runner waits 0.25 s for end of file and then completes (on_finish), although a descendant that left the group with setsid() still holds the pipes and may write.",
        GroupEmptyCompletes,
    ),
    OutsiderMutant(
        "out-b13soo-sticky-limit-flag",
        "SOO-FINISH",
        "The 'time limit fired' flag that decides finish-or-cancel at completion is kept on the runner and never reset, so after one timed-out call every later observed call of that runner that completes normally is cancelled instead of finished (no on_finish).",
        StickyLimitFlag,
    ),
    OutsiderMutant(
        "out-b13soo-exit-127-is-spawn-failure",
        "SOO-ERROR-NO-FINISH",
        "A child that exits by itself with status 126 or 127 is taken for 'command not found' and reported as a spawn failure (raised, observation cancelled, no on_finish) instead of a completed call.",
        Exit127IsSpawnFailure,
    ),
    OutsiderMutant(
        "out-b13soo-finish-panic-cancels-siblings",
        "SOO-FINISH-PANIC",
        "When on_finish raises, the runner cancels every other still-open session of the same observer object, so a concurrent invocation watched by that observer loses its remaining output and its on_finish (later invocations are unaffected).",
        FinishPanicCancelsSiblings,
    ),
    OutsiderMutant(
        "out-b13soo-on-finish-under-session-lock",
        "SOO-NO-STALL",
        "The presentation thread calls on_finish while holding the session's lock (on_output is called without it), so a late offer (or cancel) to that session blocks for as long as on_finish does.",
        FinishUnderLock,
    ),
    OutsiderMutant(
        "out-b13soo-callable-run-waits-for-pane",
        "SOO-NO-WAIT",
        "For a plain-function observer (no on_finish to signal completion) run() waits until everything queued has been delivered before it returns.",
        CallableRunWaitsForPane,
    ),
    OutsiderMutant(
        "out-b13soo-result-cap-utf8-backoff",
        "SOO-RESULT-BYTES",  # the outsider's label was SOO-ENVELOPE: see RELABELLED
        "When a stream exceeds the output cap, the result's capped bytes are backed off to a whole UTF-8 character, so a cap that falls inside a multi-byte sequence returns fewer than cap bytes.",
        ResultCapUtf8Backoff,
    ),
]

#: Every variant the outsider wrote, by name.
VARIANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}

#: Labels changed after the batch was judged, with the label the outsider gave and why.
RELABELLED: dict[str, tuple[str, str]] = {
    "out-b13soo-result-cap-utf8-backoff": (
        "SOO-ENVELOPE",
        "upstream's own envelope for a cap inside a character is the backed-off text, not "
        "the byte-exact cut (run_pipeline lossy-decodes the first cap bytes, "
        "shell_tool.rs:1866-1867 and 1954-1957, then run_script cuts that text to a char "
        "boundary within the cap, 1010-1016 and 1961-1969: 'ab' + U+FFFD becomes 'ab'), so "
        "the variant meets upstream's SOO-ENVELOPE; the byte-exact cut is seamspec's "
        "SOO-RESULT-BYTES (strict profile), which soo-result-bytes-cap-inside-character pins",
    ),
}

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
    return _impl(VARIANTS[name].runner_class)


def build(name: str, backend: str = "asyncio") -> PythonAdapter:
    """The named variant as an adapter (the outsider's ``V_*`` attributes, either backend)."""
    return make_adapter(implementation(name), name=name, backend=backend)
