"""Seven plausible broken variants of ``base10``: each has exactly one bug.

Outsider batch 10 (soo10), written before any of them was run against the suite (the
original ``b10soo_variants.py`` had sha256
2b075d68f5aef86d7455e651b9678244128302d43f5900a83aa425c4345d76c6). Kept as written: only
imports, typing, the linter's layout and the catalogue at the end (``OutsiderMutant``
records a spec instead of a ``VARIANTS`` list of adapter factories, and no ``V_*``
module attributes are built at import) changed.

First try, against the suite of main 867e31e (118 scenarios), judged by the lead by the
meta-test's standard (a scenario citing the rule fails it at MUST level and the oracle
names the rule): one killed properly (``out-soo10-cancel-after-finish-wipes-backlog``, by
soo-session-finish-once); six survived (``out-soo10-budget-clamped-to-cap``,
``out-soo10-timeout-whole-seconds``, ``out-soo10-signal-death-no-finish``,
``out-soo10-pinned-presentation-pool``, ``out-soo10-timeout-term-grace``,
``out-soo10-observed-env-force-color``). See docs/contracts/shell-output-observer.md,
"Outsider mutants", batch 10, for what kills each now.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.shell_output.outsiders import base10 as base


# --- 1. SOO-BUDGET: the live budget is clamped to the result's cap ------------------
class _ClampShell(base.Shell):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        # "the pane must never show more than the model gets"
        self.live_budget = min(self.live_budget, self.output_cap)


class _ClampImpl(base.Implementation):
    shell_class = _ClampShell


# --- 2. SOO-TIMEOUT: the limit is taken in whole seconds -----------------------------
class _WholeSecondsShell(base.Shell):
    def _limit(self, timeout: float | None) -> float | None:
        # limits are configured in whole seconds, like the tool's config file
        return None if timeout is None else int(timeout)


class _WholeSecondsImpl(base.Implementation):
    shell_class = _WholeSecondsShell


# --- 3. SOO-FINISH: cancel() after finish() still wipes the backlog ------------------
class _CancelAfterFinishSession(base.Session):
    def cancel(self) -> None:
        with self._cond:
            if self._phase == "CANCELLED":  # idempotent... but not against FINISHED
                return
            self._phase = "CANCELLED"
            self._stopped = True
            self._queue.clear()
            self._cond.notify()


class _CancelAfterFinishShell(base.Shell):
    session_class = _CancelAfterFinishSession


class _CancelAfterFinishImpl(base.Implementation):
    shell_class = _CancelAfterFinishShell


# --- 4. SOO-ERROR-NO-FINISH: a child killed by an outside signal is a "failure" ------
class _SignalDeathShell(base.Shell):
    def _complete(self, session: base.Session | None, proc: subprocess.Popen[bytes]) -> None:
        if session is not None and proc.returncode is not None and proc.returncode < 0:
            # the child crashed (killed by a signal): its output is incomplete, so do
            # not tell the pane it has seen everything
            session.cancel()
            return
        super()._complete(session, proc)


class _SignalDeathImpl(base.Implementation):
    shell_class = _SignalDeathShell


# --- 5. SOO-ISOLATION: presentation on a fixed pool, invocation pinned by ID ---------
POOL_SIZE = 32


class _Worker:
    def __init__(self, slot: int) -> None:
        self._cond = threading.Condition()
        self._jobs: list[Any] = []
        self.thread = threading.Thread(target=self._loop, name=f"soo-present-w{slot}", daemon=True)
        self.thread.start()

    def submit(self, job: Any) -> None:
        with self._cond:
            self._jobs.append(job)
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._jobs:
                    self._cond.wait()
                job = self._jobs.pop(0)
            job()


class _PinnedSession(base.Session):
    def _start_presentation(self) -> None:
        # no thread start per command: the invocation runs on its pinned worker, so
        # all its callbacks still share one thread (SOO-SERIAL)
        shell: _PinnedShell = self._shell  # type: ignore[assignment]  # typing only
        shell._worker_for(self.invocation).submit(self._present)


class _PinnedShell(base.Shell):
    session_class = _PinnedSession

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._workers_lock = threading.Lock()
        self._workers: dict[int, _Worker] = {}

    def _worker_for(self, invocation: int) -> _Worker:
        slot = invocation % POOL_SIZE
        with self._workers_lock:
            worker = self._workers.get(slot)
            if worker is None:
                worker = self._workers[slot] = _Worker(slot)
            return worker


class _PinnedImpl(base.Implementation):
    shell_class = _PinnedShell


# --- 6. SOO-TIMEOUT-GROUP: a polite SIGTERM with a grace before SIGKILL -------------
TERM_GRACE = 3.0


class _TermGraceShell(base.Shell):
    async def _stop_at_limit(self, proc: subprocess.Popen[bytes], done: threading.Event) -> None:
        # graceful first: let the group flush and exit on SIGTERM, SIGKILL what is left
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with anyio.move_on_after(TERM_GRACE):
            while not done.is_set():
                await anyio.sleep(base.POLL)
        await super()._stop_at_limit(proc, done)


class _TermGraceImpl(base.Implementation):
    shell_class = _TermGraceShell


# --- 7. SOO-ENVELOPE: observed commands get colour forced for the pane ---------------
class _ColourShell(base.Shell):
    def _child_env(self, observed: bool) -> dict[str, str] | None:
        if not observed:
            return None
        env = dict(os.environ)
        env["FORCE_COLOR"] = "1"  # the pane renders ANSI colours
        env["CLICOLOR_FORCE"] = "1"
        return env


class _ColourImpl(base.Implementation):
    shell_class = _ColourShell


# --- the list -----------------------------------------------------------------------------


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # out-soo10-..., says what the bug is
    rule: str  # the catalogue rule ID the bug breaks
    statement: str  # what this implementation does wrong
    implementation_class: type[base.Implementation]


_SPECS = [
    OutsiderMutant(
        "out-soo10-budget-clamped-to-cap",
        "SOO-BUDGET",
        "The live budget is clamped to the result's output cap, so with a budget larger than "
        "the cap the observer is cut at the cap instead of at the budget.",
        _ClampImpl,
    ),
    OutsiderMutant(
        "out-soo10-timeout-whole-seconds",
        "SOO-TIMEOUT",
        "The time limit is truncated to whole seconds (int(timeout)), so 0.3 s fires at once "
        "and 2.5 s at 2 s, timing out (no on_finish) commands that would have completed in time.",
        _WholeSecondsImpl,
    ),
    OutsiderMutant(
        "out-soo10-cancel-after-finish-wipes-backlog",
        "SOO-FINISH",
        "Session.cancel() is idempotent only against an earlier cancel: a cancel after "
        "finish() drops the chunks still queued and the on_finish notice.",
        _CancelAfterFinishImpl,
    ),
    OutsiderMutant(
        "out-soo10-signal-death-no-finish",
        "SOO-ERROR-NO-FINISH",
        "A child that completed but was killed by a signal the runner did not send "
        "(negative returncode) is treated as a failure: observation is cancelled, no on_finish.",
        _SignalDeathImpl,
    ),
    OutsiderMutant(
        "out-soo10-pinned-presentation-pool",
        "SOO-ISOLATION",
        "Presentation runs on a lazily grown pool of 32 worker threads with each invocation "
        "pinned to worker id % 32, so invocations 32 IDs apart share one thread and the "
        "later one waits behind the earlier one's callbacks.",
        _PinnedImpl,
    ),
    OutsiderMutant(
        "out-soo10-timeout-term-grace",
        "SOO-TIMEOUT-GROUP",
        "At the time limit the group gets SIGTERM and the call waits up to 3 s for the pipes "
        "to close before SIGKILL, so a descendant that ignores SIGTERM holds the call past "
        "its limit.",
        _TermGraceImpl,
    ),
    OutsiderMutant(
        "out-soo10-observed-env-force-color",
        "SOO-ENVELOPE",
        "An observed command is spawned with FORCE_COLOR=1 and CLICOLOR_FORCE=1 so the pane "
        "shows colours, which changes what colour-aware commands write (and so the result) "
        "compared with the same command unobserved.",
        _ColourImpl,
    ),
]


#: Every variant of the batch, by name.
MUTANTS: dict[str, OutsiderMutant] = {m.name: m for m in _SPECS}

#: Variants that are real bugs the suite cannot see deterministically (none in this batch).
UNSEEN: dict[str, str] = {}


def implementation(name: str) -> base.Implementation:
    """The outsider's implementation with the named variant's bug."""
    return MUTANTS[name].implementation_class()


def build(name: str, backend: str = "asyncio") -> Any:
    """The named variant as an adapter (the outsider's ``V_*`` attributes)."""
    return base.build(backend, implementation(name), name=name)
