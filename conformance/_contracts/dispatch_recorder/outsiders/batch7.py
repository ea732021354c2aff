"""Six broken variants of ``base7``, each with exactly one plausible bug.

Outsider batch 7 of the dispatch recorder (dr7), written before any of them was run
against the suite (the original ``b7dr_variants.py`` had sha256
99b0c83d73db2096ce89c16a9e3b0414c0e4412b84669c275838ce5ccbb08269). Kept as written: only
imports, typing, the layout (ruff format) and the catalogue at the end (``VARIANTS`` maps
each name to its harness instead of listing adapter factories, and the module's ``V_*``
adapters are gone: ``adapter(name)`` builds one) changed; ``OriginalTruncated`` imports
``WITHHELD`` and ``_maybe_await`` at the top instead of inside ``_post``. Against the
suite of main 9c7b1af (2026-12-02) none was killed properly: all six survived
(``out-dr7-dedup-call-id``, ``out-dr7-original-truncated``, ``out-dr7-call-record-budget``,
``out-dr7-commit-shielded``, ``out-dr7-empty-reason-ok``, ``out-dr7-commit-retry-oserror``);
the scenarios named in ``docs/contracts/dispatch-recorder.md`` ("Outsider mutants", batch 7)
were written for them. Variants in ``PENDING`` are kept but not registered as mutants yet;
those in ``REJECTED`` are not bugs and never will be.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel

from seamspec.conformance._contracts.dispatch_recorder.outsiders.base7 import (
    WITHHELD,
    Harness,
    _maybe_await,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    CommitFailed,
    DispatchMutation,
    InputRewrite,
    Message,
    RecordError,
    RecordOk,
    ResultRedaction,
    RewriteArgs,
)

# ------------------------------------------------------------------------------ 1
_seen: contextvars.ContextVar[set[tuple[str, str]]] = contextvars.ContextVar("b7dr_seen")


class DedupCallId(Harness):
    """Makes record idempotent per turn: a (tool_call_id, kind) already recorded OK is not
    recorded again, so a provider that reuses a call id in a later step gets its second
    mutation applied without any record."""

    async def run_turn(self, **kw: Any) -> list[Message]:
        token = _seen.set(set())
        try:
            return await super().run_turn(**kw)
        finally:
            _seen.reset(token)

    async def _record(
        self, recorder: Any, mutation: DispatchMutation, limit: float | None
    ) -> tuple[bool, str]:
        key = (mutation.tool_call_id, mutation.kind.kind)
        seen = _seen.get()
        if key in seen:
            return True, ""  # "already recorded"
        ok, reason = await super()._record(recorder, mutation, limit)
        if ok:
            seen.add(key)
        return ok, reason


# ------------------------------------------------------------------------------ 2
PREVIEW = 4096


class OriginalTruncated(Harness):
    """Keeps journal entries bounded: a redaction's original_result is recorded as its first
    4096 characters (the redacted result, what the model sees, is recorded whole)."""

    async def _post(
        self, call: Any, result: str, policy: Any, recorder: Any, limit: float | None
    ) -> str:
        redacted = await _maybe_await(policy.after_dispatch(call, result))
        if redacted is None or recorder is None:
            return result
        ok, _ = await self._record(
            recorder,
            DispatchMutation(call.id, call.name, ResultRedaction(result[:PREVIEW], redacted)),
            limit,
        )
        return redacted if ok else WITHHELD


# ------------------------------------------------------------------------------ 3
_budget: contextvars.ContextVar[list[float]] = contextvars.ContextVar("b7dr_budget")


class CallRecordBudget(Harness):
    """Reads record_time_limit as the signer budget of one tool call: the call's records
    (pre-dispatch and redaction) share it; the tool's own run time is not charged."""

    async def _execute(self, call: Any, **kw: Any) -> list[Message]:
        limit = kw["limit"]
        token = _budget.set([limit] if limit is not None else [])
        try:
            return await super()._execute(call, **kw)
        finally:
            _budget.reset(token)

    async def _record(
        self, recorder: Any, mutation: DispatchMutation, limit: float | None
    ) -> tuple[bool, str]:
        budget = _budget.get([])
        if not budget:
            return await super()._record(recorder, mutation, limit)
        started = anyio.current_time()
        try:
            return await super()._record(recorder, mutation, budget[0])
        finally:
            budget[0] -= anyio.current_time() - started


# ------------------------------------------------------------------------------ 4
class CommitShielded(Harness):
    """Never tears a durable write: the commit runs shielded from cancellation (its own
    time limit still applies inside the shield); the cancellation is honoured after."""

    async def _commit(
        self, recorder: Any, step: int, messages: tuple[Message, ...], limit: float | None
    ) -> None:
        commit = getattr(recorder, "commit_accepted_step", None)
        if commit is None:
            return
        outcome: Any = None
        error: str | None = None
        with anyio.CancelScope(shield=True):
            deadline = anyio.current_time() + limit if limit is not None else float("inf")
            with anyio.CancelScope(deadline=deadline) as scope:
                try:
                    outcome = await commit(messages)
                except Exception as exc:
                    error = repr(exc)
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            raise CommitFailed(step, f"the commit timed out after {limit} s", messages)
        if error is not None:
            raise CommitFailed(step, error, messages)
        if isinstance(outcome, RecordOk):
            return
        if isinstance(outcome, RecordError):
            raise CommitFailed(step, outcome.reason, messages)
        raise CommitFailed(step, f"unexpected commit outcome {outcome!r}", messages)


# ------------------------------------------------------------------------------ 5
class EmptyReasonOk(Harness):
    """The rewrite path duck-types the record's answer: an outcome carrying a (truthy)
    reason is an error, anything else is OK, so RecordError("") authorises the rewrite."""

    async def _pre(
        self, call: Any, decision: Any, recorder: Any, approver: Any, limit: float | None
    ) -> tuple[str | None, str, tuple[str, ...]]:
        if not isinstance(decision, RewriteArgs) or recorder is None:
            return await super()._pre(call, decision, recorder, approver, limit)
        mutation = DispatchMutation(call.id, call.name, InputRewrite(call.args, decision.new_args))
        deadline = anyio.current_time() + limit if limit is not None else float("inf")
        outcome: Any = None
        error: str | None = None
        with anyio.CancelScope(deadline=deadline) as scope:
            try:
                outcome = await recorder.record(mutation)
            except Exception as exc:
                error = repr(exc)
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            error = f"the record timed out after {limit} s"
        if error is None:
            error = getattr(outcome, "reason", None)
        if error:
            return "the argument rewrite could not be recorded: " + error, call.args, ()
        return None, decision.new_args, ()


# ------------------------------------------------------------------------------ 6
class CommitRetryOSError(Harness):
    """A commit that raises a transport error (OSError: ConnectionError, TimeoutError...)
    is retried once before the turn is failed; a retry that answers OK lets it go on."""

    async def _commit(
        self, recorder: Any, step: int, messages: tuple[Message, ...], limit: float | None
    ) -> None:
        commit = getattr(recorder, "commit_accepted_step", None)
        if commit is None:
            return
        outcome: Any = None
        error: str | None = None
        for attempt in range(2):
            outcome, error = None, None
            deadline = anyio.current_time() + limit if limit is not None else float("inf")
            with anyio.CancelScope(deadline=deadline) as scope:
                try:
                    outcome = await commit(messages)
                except OSError as exc:
                    error = repr(exc)
                    if attempt == 0:
                        continue
                except Exception as exc:
                    error = repr(exc)
            break
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            raise CommitFailed(step, f"the commit timed out after {limit} s", messages)
        if error is not None:
            raise CommitFailed(step, error, messages)
        if isinstance(outcome, RecordOk):
            return
        if isinstance(outcome, RecordError):
            raise CommitFailed(step, outcome.reason, messages)
        raise CommitFailed(step, f"unexpected commit outcome {outcome!r}", messages)


# ------------------------------------------------------------------------------ table
_WRITTEN: tuple[tuple[str, str, str, type[Harness]], ...] = (
    (
        "out-dr7-dedup-call-id",
        "DR-RECORD-FIRST",
        "A per-turn 'already recorded' set keyed by (tool_call_id, kind) skips the record of a "
        "later mutation with a reused call id, which is then applied unrecorded.",
        DedupCallId,
    ),
    (
        "out-dr7-original-truncated",
        "DR-ONE-RECORD",
        "A redaction's original_result is recorded as its first 4096 characters, so the "
        "payload of a long result is not carried exactly.",
        OriginalTruncated,
    ),
    (
        "out-dr7-call-record-budget",
        "DR-HANG",
        "record_time_limit is one budget shared by a call's pre-dispatch and redaction "
        "records, so a healthy redaction record can be cut off after a slow pre record.",
        CallRecordBudget,
    ),
    (
        "out-dr7-commit-shielded",
        "DR-CANCEL",
        "The commit runs shielded from cancellation, so a cancelled turn waits for a commit "
        "that honours cancellation until it answers or its time limit runs out.",
        CommitShielded,
    ),
    (
        "out-dr7-empty-reason-ok",
        "DR-REWRITE-FAIL",
        "The rewrite path treats any outcome without a truthy reason as OK, so "
        "RecordError('') runs the tool with the unrecorded new_args.",
        EmptyReasonOk,
    ),
    (
        "out-dr7-commit-retry-oserror",
        "DR-COMMIT-FAIL",
        "A commit that raises an OSError (ConnectionError, TimeoutError) is retried once, "
        "and an OK retry lets the turn go on past the failed commit.",
        CommitRetryOSError,
    ),
)

#: Rules changed from what the outsider wrote, with why (none).
RELABELLED: dict[str, str] = {}


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its harness."""

    name: str
    rule: str
    statement: str
    implementation: Harness


#: Every variant of the batch by its own name (``out-dr7-...``), as written.
VARIANTS: dict[str, Variant] = {
    name: Variant(name, RELABELLED.get(name, rule), statement, cls())
    for name, rule, statement, cls in _WRITTEN
}

#: Variants kept but not yet registered as mutants (no scenario kills them yet), with why.
PENDING: dict[str, str] = {}

#: Variants that are not bugs (upstream and seamspec allow what they do), with why; kept
#: here, never registered as mutants.
REJECTED: dict[str, str] = {}


def implementation(name: str) -> Harness:
    """The harness of variant ``name``, as the DR driver wants one."""
    return VARIANTS[name].implementation


def adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    return make_adapter(VARIANTS[name].implementation, name, backend=backend)


#: The variants registered as mutants (under their own names): all but pending and rejected.
MUTANTS = {n: v for n, v in VARIANTS.items() if n not in PENDING and n not in REJECTED}

__all__ = [
    "MUTANTS",
    "PENDING",
    "REJECTED",
    "RELABELLED",
    "VARIANTS",
    "Variant",
    "adapter",
    "implementation",
]
