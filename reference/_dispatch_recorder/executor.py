"""The tool executor: policy decisions, fail-closed recording, then dispatch.

Every DR rule about a single tool call is decided here, in :meth:`ToolExecutor.execute`:
the pre-dispatch decision, the record that must succeed before a mutation applies, the
tool run, and the post-dispatch redaction. The turn loop only sequences calls and steps.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio

from seamspec.reference._dispatch_recorder.model import (
    WITHHELD_NOTICE,
    ContextInjection,
    DispatchMutation,
    DispatchRecorder,
    InputRewrite,
    Message,
    MutationKind,
    RecordError,
    RecordOk,
    RecordOutcome,
    ResultRedaction,
    ToolCall,
    denial_text,
)

__all__ = [
    "Allow",
    "CallOutcome",
    "Decision",
    "Deny",
    "DispatchPolicy",
    "InjectContext",
    "RequireApproval",
    "RewriteArgs",
    "ToolExecutor",
    "ToolInvocation",
    "ToolRunner",
]


@dataclass(frozen=True)
class Allow:
    """Run the call as proposed. Not a mutation: nothing is recorded."""


@dataclass(frozen=True)
class Deny:
    """Refuse the call; the model gets a denial with ``reason``. Not a mutation."""

    reason: str


@dataclass(frozen=True)
class RequireApproval:
    """Ask the approver first; run unchanged if approved, deny otherwise. Not a mutation."""

    reason: str


@dataclass(frozen=True)
class RewriteArgs:
    """Run the call with ``new_args`` (a JSON string) instead: a recorded mutation."""

    new_args: str


@dataclass(frozen=True)
class InjectContext:
    """Run the call with extra ``context``, also shown to the model: a recorded mutation."""

    context: str


Decision = Allow | Deny | RequireApproval | RewriteArgs | InjectContext


@runtime_checkable
class DispatchPolicy(Protocol):
    """Decides what happens to a call before it runs, and what the model sees after."""

    async def before_dispatch(self, call: ToolCall) -> Decision: ...

    async def after_dispatch(self, call: ToolCall, result: str) -> str | None:
        """The redacted result to release instead of ``result``, or ``None`` to keep it."""
        ...


@dataclass(frozen=True)
class ToolInvocation:
    """What a tool actually runs with: the effective args and any injected context."""

    call_id: str
    name: str
    args: str
    context: tuple[str, ...] = ()


@runtime_checkable
class ToolRunner(Protocol):
    async def run(self, invocation: ToolInvocation) -> str: ...


Approver = Callable[[ToolCall, str], Awaitable[bool]]


@dataclass(frozen=True)
class CallOutcome:
    """What one call added to the transcript, and why.

    ``status`` is ``ran`` or ``denied``; ``record_errors`` lists every record that failed
    for this call (a per-call outcome: a record error never ends the turn).
    """

    call: ToolCall
    status: str
    messages: tuple[Message, ...]
    record_errors: tuple[str, ...] = ()


class ToolExecutor:
    """Runs proposed tool calls through the policy, the recorder and the tools.

    Args:
        tools: runs an invocation and returns its result text.
        policy: the pre-dispatch decision and the optional post-dispatch redaction.
        recorder: where mutations are recorded before they apply. ``None`` means no
            mutation applies at all (DR-ABSENT): rewrites, injections and redactions are
            dropped and the call runs exactly as proposed. That includes redactions, so
            with no recorder the model sees unredacted results.
        approver: answers :class:`RequireApproval`; without one such calls are denied.
        record_time_limit: seconds one ``record`` may take; past it the record counts as
            failed, even if it completes afterwards (DR-HANG). ``None``: no limit.
    """

    def __init__(
        self,
        tools: ToolRunner,
        policy: DispatchPolicy,
        recorder: DispatchRecorder | None = None,
        *,
        approver: Approver | None = None,
        record_time_limit: float | None = 10.0,
    ) -> None:
        if record_time_limit is not None and not record_time_limit > 0:
            raise ValueError(f"record_time_limit must be positive or None, not {record_time_limit}")
        self.tools = tools
        self.policy = policy
        self.recorder = recorder
        self.approver = approver
        self.record_time_limit = math.inf if record_time_limit is None else record_time_limit

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        """One fail-closed record: any outcome but a timely :class:`RecordOk` is an error.

        An exception from the recorder is a failed record (DR-RAISE). A record still
        running at the time limit is cancelled and failed; one that shields itself and
        returns after the limit is failed too, whatever it returns (DR-HANG). The limit
        is this call's own: a slow tool or an earlier hung record takes nothing from it.
        The caller's own cancellation is not caught: it propagates, and nothing is
        applied (DR-CANCEL), even when it arrived while the recorder was deaf to it (a
        signer finishing a signature) and the recorder then answered OK: that pending
        cancellation is delivered here, before the caller can apply anything.
        """
        outcome = await self._record_in_time(mutation)
        await anyio.lowlevel.checkpoint_if_cancelled()
        return outcome

    async def _record_in_time(self, mutation: DispatchMutation) -> RecordOutcome:
        """The recorder's answer under this record's own time limit, as a record outcome."""
        assert self.recorder is not None
        with anyio.move_on_after(self.record_time_limit) as limit:
            try:
                outcome = await self.recorder.record(mutation)
            except Exception as error:
                return RecordError(f"the recorder raised {error!r}")
        if limit.cancel_called:
            return RecordError(f"the record took longer than {self.record_time_limit:g} s")
        if isinstance(outcome, RecordOk):
            return outcome
        if isinstance(outcome, RecordError):
            return outcome
        return RecordError(f"the recorder returned {outcome!r}, which is not an outcome")

    async def execute(self, call: ToolCall) -> CallOutcome:
        """Decide, record what must be recorded, run, and release the result.

        Each stage is its own method so that each fail-closed decision sits in one place.
        """
        decision = await self.policy.before_dispatch(call)
        prepared = await self._prepare(call, decision)
        if isinstance(prepared, CallOutcome):
            return prepared
        result = await self._run(prepared)
        released, errors = await self._release(call, result)
        messages = [Message("context", text, call.id) for text in prepared.context]
        messages.append(Message("tool", released, call.id))
        return CallOutcome(call, "ran", tuple(messages), errors)

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | CallOutcome:
        """The invocation to run, or the denial; a pre-dispatch mutation is recorded first."""
        if isinstance(decision, Deny):
            return self._denied(call, decision.reason)
        if isinstance(decision, RequireApproval):
            approved = self.approver is not None and await self.approver(call, decision.reason)
            if not approved:
                return self._denied(call, f"approval required and not given: {decision.reason}")
        mutation = self._pre_mutation(call, decision)
        if mutation is None:
            return ToolInvocation(call.id, call.name, call.args)
        outcome = await self.record(mutation)
        if isinstance(outcome, RecordError):
            what = (
                "argument rewrite"
                if isinstance(mutation.kind, InputRewrite)
                else "context injection"
            )
            reason = f"the {what} could not be recorded: {outcome.reason}"
            return self._denied(call, reason, (outcome.reason,))
        return self._applied(call, mutation.kind)

    def _pre_mutation(self, call: ToolCall, decision: Decision) -> DispatchMutation | None:
        """The mutation a decision asks for; ``None`` if it is none, or if no recorder is
        wired (DR-ABSENT: then the call runs exactly as proposed)."""
        if self.recorder is None:
            return None
        if isinstance(decision, RewriteArgs):
            return DispatchMutation(call.id, call.name, InputRewrite(call.args, decision.new_args))
        if isinstance(decision, InjectContext):
            return DispatchMutation(call.id, call.name, ContextInjection(decision.context))
        return None

    def _applied(self, call: ToolCall, kind: MutationKind) -> ToolInvocation:
        """The invocation once a pre-dispatch mutation has been recorded."""
        if isinstance(kind, InputRewrite):
            return ToolInvocation(call.id, call.name, kind.new_args)
        if isinstance(kind, ContextInjection):
            return ToolInvocation(call.id, call.name, call.args, (kind.context,))
        raise TypeError(f"{kind!r} is not a pre-dispatch mutation")

    async def _release(self, call: ToolCall, result: str) -> tuple[str, tuple[str, ...]]:
        """What the model sees of ``result``: itself, its recorded redaction, or the notice."""
        redacted = await self.policy.after_dispatch(call, result)
        if redacted is None or self.recorder is None:
            return result, ()
        mutation = DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
        outcome = await self.record(mutation)
        if isinstance(outcome, RecordError):
            return WITHHELD_NOTICE, (outcome.reason,)
        return redacted, ()

    async def _run(self, invocation: ToolInvocation) -> str:
        """A tool that raises gives an error result; the turn goes on (not a DR concern)."""
        try:
            return await self.tools.run(invocation)
        except Exception as error:
            return f"[tool failed] {error!r}"

    def _denied(self, call: ToolCall, reason: str, errors: tuple[str, ...] = ()) -> CallOutcome:
        return CallOutcome(call, "denied", (Message("tool", denial_text(reason), call.id),), errors)
