"""More broken dispatch recorders: the boundaries (time limits, cancellation, exact bytes,
empty values, approvals, what a commit holds) that the first mutants in ``mutants.py`` do
not reach.

Each class or loop is the reference with one plausible mistake, a few lines that *are*
the bug; ``mutants.py`` registers them with the rule each one breaks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import anyio

from seamspec.reference import (
    OK,
    ContextInjection,
    Decision,
    DispatchMutation,
    InjectContext,
    InputRewrite,
    Message,
    MutationKind,
    RecordError,
    RecordOutcome,
    RequireApproval,
    RewriteArgs,
    ToolCall,
    ToolExecutor,
    ToolInvocation,
    denial_text,
)
from seamspec.reference._dispatch_recorder.turn_loop import CommitFailed

__all__ = [
    "AbsentDeniesMutations",
    "AbsentWithholds",
    "ApprovalInverted",
    "ApprovalReasonInjected",
    "ApprovalSpeculative",
    "ApprovalUnwiredRuns",
    "BlankContextDropped",
    "CancelLateOkApplied",
    "DenialParaphrased",
    "DenialsDropped",
    "DeniesUnrecorded",
    "EmptyRedactionIgnored",
    "InjectUnrecorded",
    "LimitFromCallStart",
    "LimitIgnored",
    "LimitPerTurn",
    "RaiseEscapes",
    "RecordCanonicalJson",
    "RedactCanonicalJson",
    "RedactsDenials",
    "RetryFailedRecord",
    "RewriteCanonicalJson",
    "WithheldEmpty",
    "loop_commit_cancel_is_failure",
    "loop_commit_early",
    "loop_commit_late_ok",
    "loop_commit_prompt_first",
    "loop_commit_transcript",
    "loop_final_uncommitted",
]


def _canonical(text: str) -> str:
    """What a "canonicalise the JSON" helper does: sorted keys, no spaces, ASCII escapes.

    Compact JSON with sorted keys and ASCII text comes back unchanged, so only arguments
    that are valid but not canonical JSON show the bug.
    """
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return text


# --------------------------------------------------------------------------------------
# Time limits and cancellation.


class LimitFromCallStart(ToolExecutor):
    """Starts one clock per tool call: a slow tool leaves the redaction record no time."""

    async def execute(self, call: ToolCall) -> Any:
        self._deadline = anyio.current_time() + self.record_time_limit
        return await super().execute(call)

    async def _record_in_time(self, mutation: DispatchMutation) -> RecordOutcome:
        left = getattr(self, "_deadline", math.inf) - anyio.current_time()
        with anyio.move_on_after(max(0.0, left)) as limit:
            try:
                outcome = await self._inner_record(mutation)
            except Exception as error:
                return RecordError(f"the recorder raised {error!r}")
        if limit.cancel_called:
            return RecordError("the call's time limit ran out")
        return outcome

    async def _inner_record(self, mutation: DispatchMutation) -> RecordOutcome:
        assert self.recorder is not None
        outcome: RecordOutcome = await self.recorder.record(mutation)
        return outcome


class LimitPerTurn(LimitFromCallStart):
    """One record budget for the whole turn: a hung record uses up everyone's time."""

    async def execute(self, call: ToolCall) -> Any:
        return await ToolExecutor.execute(self, call)

    async def _record_in_time(self, mutation: DispatchMutation) -> RecordOutcome:
        if not hasattr(self, "_deadline"):
            self._spent = 0.0
        self._deadline = anyio.current_time() + self.record_time_limit - self._spent
        started = anyio.current_time()
        try:
            return await super()._record_in_time(mutation)
        finally:
            self._spent += anyio.current_time() - started


class LimitIgnored(ToolExecutor):
    """Puts no time limit on ``record`` at all ("the signer always answers")."""

    async def _record_in_time(self, mutation: DispatchMutation) -> RecordOutcome:
        assert self.recorder is not None
        try:
            outcome: RecordOutcome = await self.recorder.record(mutation)
        except Exception as error:
            return RecordError(f"the recorder raised {error!r}")
        return outcome


class CancelLateOkApplied(ToolExecutor):
    """Acts on a record's OK at once, though the turn was cancelled while it was signing."""

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        return await self._record_in_time(mutation)


class RaiseEscapes(ToolExecutor):
    """Lets an exception from the recorder escape: one recorder hiccup ends the turn."""

    async def _record_in_time(self, mutation: DispatchMutation) -> RecordOutcome:
        assert self.recorder is not None
        outcome: RecordOutcome = await self.recorder.record(mutation)
        return outcome


# --------------------------------------------------------------------------------------
# Records: how many, with which bytes.


class RetryFailedRecord(ToolExecutor):
    """Retries a record that failed once, and applies the mutation if the retry worked."""

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        outcome = await super().record(mutation)
        return await super().record(mutation) if isinstance(outcome, RecordError) else outcome


class RecordCanonicalJson(ToolExecutor):
    """Records arguments and results re-serialised ("normalised") instead of verbatim."""

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        kind = mutation.kind
        if isinstance(kind, InputRewrite):
            kind = InputRewrite(_canonical(kind.original_args), _canonical(kind.new_args))
        return await super().record(
            DispatchMutation(mutation.tool_call_id, mutation.tool_name, kind)
        )


class RewriteCanonicalJson(ToolExecutor):
    """Records the rewrite verbatim but runs the tool with the arguments re-serialised."""

    def _applied(self, call: ToolCall, kind: MutationKind) -> ToolInvocation:
        if isinstance(kind, InputRewrite):
            return ToolInvocation(call.id, call.name, _canonical(kind.new_args))
        return super()._applied(call, kind)


class RedactCanonicalJson(ToolExecutor):
    """Records the redaction verbatim but releases it re-serialised."""

    async def _release(self, call: ToolCall, result: str) -> tuple[str, tuple[str, ...]]:
        released, errors = await super()._release(call, result)
        return (_canonical(released) if not errors and released != result else released), errors


class EmptyRedactionIgnored(ToolExecutor):
    """Reads an empty redaction as "no redaction" (``if not redacted``): unrecorded, raw."""

    async def _release(self, call: ToolCall, result: str) -> tuple[str, tuple[str, ...]]:
        redacted = await self.policy.after_dispatch(call, result)
        if not redacted:
            return result, ()
        return await super()._release(call, result)


class BlankContextDropped(ToolExecutor):
    """Records the injection, then tidies the context: whitespace-only context vanishes."""

    def _applied(self, call: ToolCall, kind: MutationKind) -> ToolInvocation:
        if isinstance(kind, ContextInjection):
            context = (kind.context.strip(),) if kind.context.strip() else ()
            return ToolInvocation(call.id, call.name, call.args, context)
        return super()._applied(call, kind)


class InjectUnrecorded(ToolExecutor):
    """Treats a context injection as harmless: applies it without recording it."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | Any:
        mutation = self._pre_mutation(call, decision)
        if mutation is not None and isinstance(mutation.kind, ContextInjection):
            return self._applied(call, mutation.kind)
        return await super()._prepare(call, decision)


class DeniesUnrecorded(ToolExecutor):
    """Denies every rewrite without asking the recorder ("rewrites are not supported")."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | Any:
        if isinstance(decision, RewriteArgs) and self.recorder is not None:
            return self._denied(call, "argument rewrites are not supported")
        return await super()._prepare(call, decision)


class RedactsDenials(ToolExecutor):
    """Runs the post-dispatch policy over denials too, recording a redaction of them."""

    async def execute(self, call: ToolCall) -> Any:
        outcome = await super().execute(call)
        if outcome.status != "denied" or self.recorder is None:
            return outcome
        text = outcome.messages[-1].content
        released, errors = await self._release(call, text)
        return type(outcome)(call, "denied", (Message("tool", released, call.id),), errors)


# --------------------------------------------------------------------------------------
# Approvals, texts, no recorder.


class ApprovalUnwiredRuns(ToolExecutor):
    """With no approver wired, lets calls that need approval run ("nobody objected")."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | Any:
        if isinstance(decision, RequireApproval) and self.approver is None:
            return ToolInvocation(call.id, call.name, call.args)
        return await super()._prepare(call, decision)


class DenialParaphrased(ToolExecutor):
    """Words its denials its own way: ``denied (REASON)``, without the fixed prefix."""

    def _denied(self, call: ToolCall, reason: str, errors: tuple[str, ...] = ()) -> Any:
        outcome = super()._denied(call, reason, errors)
        message = Message("tool", f"denied ({reason})", call.id)
        assert outcome.messages[0].content == denial_text(reason)
        return type(outcome)(call, "denied", (message,), errors)


class WithheldEmpty(ToolExecutor):
    """Withholds an unrecordable redaction by releasing an empty result, with no notice."""

    async def _release(self, call: ToolCall, result: str) -> tuple[str, tuple[str, ...]]:
        released, errors = await super()._release(call, result)
        return ("" if errors else released), errors


class AbsentWithholds(ToolExecutor):
    """With no recorder, withholds results a policy wanted redacted (fails closed too far)."""

    async def _release(self, call: ToolCall, result: str) -> tuple[str, tuple[str, ...]]:
        if self.recorder is None and await self.policy.after_dispatch(call, result) is not None:
            return "[result withheld: no recorder]", ()
        return await super()._release(call, result)


# --------------------------------------------------------------------------------------
# Turn loops: what a commit holds, and when.


async def _commit(
    executor: ToolExecutor,
    step: int,
    messages: Sequence[Message],
    limit: float | None,
    *,
    honour_late: bool = False,
) -> None:
    """The reference's commit, with its time limit: only *what* is committed, and when,
    differ (or, with ``honour_late``, whether an OK after the limit counts)."""
    assert executor.recorder is not None
    outcome: Any = None
    with anyio.move_on_after(math.inf if limit is None else limit) as scope:
        try:
            outcome = await executor.recorder.commit_accepted_step(messages)
        except Exception as error:
            outcome = RecordError(f"commit_accepted_step raised {error!r}")
    await anyio.lowlevel.checkpoint_if_cancelled()
    if scope.cancel_called and (not honour_late or outcome is None):
        outcome = RecordError(f"commit_accepted_step took longer than {limit} s")
    if isinstance(outcome, RecordError):
        raise CommitFailed(step, outcome.reason, messages)


async def _turn(
    prompt: str, provider: Any, executor: ToolExecutor, limit: float | None, mode: str
) -> list[Message]:
    messages = [Message("user", prompt)]
    for index in range(64):
        step = await provider.next_step(tuple(messages))
        accepted = [Message("assistant", step.text, tool_calls=step.tool_calls)]
        if mode == "early" and executor.recorder is not None:
            await _commit(executor, index, accepted, limit)
        for call in step.tool_calls:
            accepted.extend((await executor.execute(call)).messages)
        messages.extend(accepted)
        final = not step.tool_calls
        if executor.recorder is not None and mode != "early" and not (mode == "final" and final):
            held = messages if mode == "transcript" else accepted
            await _commit(executor, index, held, limit, honour_late=mode == "late-ok")
        if final:
            return messages
    return messages


async def loop_commit_transcript(
    prompt: str, provider: Any, executor: ToolExecutor, limit: float | None
) -> Any:
    """Commits the whole transcript so far at every step, not the step's own messages."""
    return await _turn(prompt, provider, executor, limit, "transcript")


async def loop_final_uncommitted(
    prompt: str, provider: Any, executor: ToolExecutor, limit: float | None
) -> Any:
    """Skips the commit after the final answer ("nothing follows it")."""
    return await _turn(prompt, provider, executor, limit, "final")


async def loop_commit_early(
    prompt: str, provider: Any, executor: ToolExecutor, limit: float | None
) -> Any:
    """Commits each step as soon as the model answered, before its calls ran."""
    return await _turn(prompt, provider, executor, limit, "early")


async def loop_commit_cancel_is_failure(
    prompt: str, provider: Any, executor: ToolExecutor, limit: float | None
) -> Any:
    """Catches everything around the commit: a cancelled commit becomes a failed one."""
    messages = [Message("user", prompt)]
    for index in range(64):
        step = await provider.next_step(tuple(messages))
        accepted = [Message("assistant", step.text, tool_calls=step.tool_calls)]
        for call in step.tool_calls:
            accepted.extend((await executor.execute(call)).messages)
        messages.extend(accepted)
        if executor.recorder is not None:
            outcome: Any = RecordError("commit_accepted_step took too long")
            with anyio.move_on_after(math.inf if limit is None else limit):
                try:
                    outcome = await executor.recorder.commit_accepted_step(accepted)
                except BaseException as error:  # the bug: cancellation is caught too
                    outcome = RecordError(f"commit interrupted: {error!r}")
            if outcome != OK:
                raise CommitFailed(index, str(getattr(outcome, "reason", outcome)), messages)
        if not step.tool_calls:
            return messages
    return messages


# --------------------------------------------------------------------------------------
# Mutants for findings nothing else reached (tests/dr_oracle_coverage.py).


class DenialsDropped(ToolExecutor):
    """Denies a call by leaving it out of the transcript: the model gets no result at all."""

    def _denied(self, call: ToolCall, reason: str, errors: tuple[str, ...] = ()) -> Any:
        outcome = super()._denied(call, reason, errors)
        return type(outcome)(call, "denied", (), errors)


class ApprovalInverted(ToolExecutor):
    """Reads the approver's answer the wrong way round (``if await approver(...)``: deny)."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | Any:
        if isinstance(decision, RequireApproval) and self.approver is not None:
            if await self.approver(call, decision.reason):
                return self._denied(call, f"approval required and not given: {decision.reason}")
            return ToolInvocation(call.id, call.name, call.args)
        return await super()._prepare(call, decision)


class ApprovalReasonInjected(ToolExecutor):
    """Runs an approved call with the approval's reason as context, "so the tool knows"."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | Any:
        prepared = await super()._prepare(call, decision)
        if isinstance(decision, RequireApproval) and isinstance(prepared, ToolInvocation):
            return ToolInvocation(call.id, call.name, call.args, (decision.reason,))
        return prepared


class ApprovalSpeculative(ToolExecutor):
    """Starts the tool before the approver answers, and drops the result if refused."""

    async def execute(self, call: ToolCall) -> Any:
        decision = await self.policy.before_dispatch(call)
        if not isinstance(decision, RequireApproval) or self.approver is None:
            return await super().execute(call)
        result = await self._run(ToolInvocation(call.id, call.name, call.args))
        if not await self.approver(call, decision.reason):
            return self._denied(call, f"approval required and not given: {decision.reason}")
        released, errors = await self._release(call, result)
        return type(self._denied(call, ""))(
            call, "ran", (Message("tool", released, call.id),), errors
        )


class AbsentDeniesMutations(ToolExecutor):
    """With no recorder, denies calls the policy wanted to mutate (fails closed too far)."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | Any:
        mutating = isinstance(decision, (RewriteArgs, InjectContext))
        if self.recorder is None and mutating:
            return self._denied(call, "no recorder, so the mutation cannot be recorded")
        return await super()._prepare(call, decision)


async def loop_commit_prompt_first(
    prompt: str, provider: Any, executor: ToolExecutor, limit: float | None
) -> Any:
    """Commits the user's prompt before the first step, "so a resumed turn has it"."""
    if executor.recorder is not None:
        await _commit(executor, -1, [Message("user", prompt)], limit)
    return await _turn(prompt, provider, executor, limit, "steps")


async def loop_commit_late_ok(
    prompt: str, provider: Any, executor: ToolExecutor, limit: float | None
) -> Any:
    """Takes a commit's OK even when it came after the commit time limit."""
    return await _turn(prompt, provider, executor, limit, "late-ok")
