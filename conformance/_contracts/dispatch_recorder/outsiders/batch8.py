"""Six broken variants of ``base8``, each with exactly one plausible bug.

Outsider batch 8 of the dispatch recorder (dr8), written before any of them was run
against the suite (the original ``b8dr_variants.py`` had sha256
c9103a4efd5608fd0d4fc25fc49e813bdadd28365ecfd7a80c422e8f9455a61f). Kept as written: only
imports, typing, the layout (ruff format) and the catalogue at the end (``VARIANTS`` maps
each name to its harness instead of listing adapter factories, and the module's ``V_*``
adapters are gone: ``adapter(name)`` builds one) changed. Against the suite of main
425fce3 (2026-12-02) four were killed properly (``out-dr8-cancel-flushes-partial-step``,
``out-dr8-original-args-by-id``, ``out-dr8-approval-refusal-redacted``,
``out-dr8-inject-fail-context-kept``) and two survived (``out-dr8-commit-reason-repr``,
``out-dr8-commit-clock-from-step-start``); the scenarios named in
``docs/contracts/dispatch-recorder.md`` ("Outsider mutants", batch 8) were written for
them. Variants in ``PENDING`` are kept but not registered as mutants yet; those in
``REJECTED`` are not bugs and never will be.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel

from seamspec.conformance._contracts.dispatch_recorder.outsiders.base8 import (
    DENIED,
    WITHHELD,
    Harness,
    TurnStopped,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    Allow,
    ContextInjection,
    Deny,
    DispatchMutation,
    InjectContext,
    InputRewrite,
    Message,
    RecordOk,
    RequireApproval,
    ResultRedaction,
    RewriteArgs,
    ToolInvocation,
)


# 1. DR-COMMIT-FAIL: the surfaced error quotes the outcome object's repr, not its reason.
class CommitReasonRepr(Harness):
    async def _commit(
        self, recorder: Any, step: int, messages: tuple[Message, ...], limit: float | None
    ) -> None:
        commit = getattr(recorder, "commit_accepted_step", None)
        if commit is None:
            return
        outcome: Any = None
        with anyio.CancelScope(deadline=self._deadline(limit)) as scope:
            try:
                outcome = await commit(messages)
            except Exception as error:
                outcome = error
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            outcome = f"no answer within the commit time limit ({limit} s)"
        if isinstance(outcome, RecordOk):
            return
        # BUG: !r of a RecordError / exception / string escapes quotes, backslashes and
        # line breaks, so the recorder's reason is no longer in the error verbatim.
        raise TurnStopped(f"step {step} could not be committed: {outcome!r}")


# 2. DR-CANCEL: a cancelled step "saves its progress": the finished calls are committed.
class CancelFlushesPartialStep(Harness):
    async def run_turn(
        self,
        *,
        prompt: str,
        provider: Any,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        record_time_limit: float | None,
        commit_time_limit: float | None,
    ) -> list[Message]:
        transcript: list[Message] = [Message("user", prompt)]
        step = 0
        while True:
            answer = await provider.next_step(tuple(transcript))
            calls = tuple(answer.tool_calls)
            messages: list[Message] = [Message("assistant", answer.text, tool_calls=calls)]
            try:
                for call in calls:
                    messages += await self._call(
                        call,
                        tools=tools,
                        policy=policy,
                        recorder=recorder,
                        approver=approver,
                        limit=record_time_limit,
                    )
            except anyio.get_cancelled_exc_class():
                # BUG: so that a resumed turn need not redo the calls that already ran,
                # commit what this step has so far before letting the cancellation go.
                commit = getattr(recorder, "commit_accepted_step", None)
                if commit is not None and len(messages) > 1:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(1.0):
                        try:  # noqa: SIM105 (kept as written)
                            await commit(tuple(messages))
                        except Exception:
                            pass
                raise
            transcript.extend(messages)
            if recorder is not None:
                await self._commit(recorder, step, tuple(messages), commit_time_limit)
            if not calls:
                return transcript
            step += 1


# 3. DR-ONE-RECORD: "what the model first proposed" is remembered per call ID for the turn.
_PROPOSED: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("_PROPOSED")


class OriginalArgsById(Harness):
    async def run_turn(self, **kwargs: Any) -> list[Message]:
        _PROPOSED.set({})
        return await super().run_turn(**kwargs)

    async def _call(
        self,
        call: Any,
        *,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        limit: float | None,
    ) -> list[Message]:
        decision = await policy.before_dispatch(call)
        # BUG: setdefault keeps the first call of that ID; a later step reusing the ID
        # with other arguments records the earlier call's arguments as original_args.
        proposed = _PROPOSED.get().setdefault(call.id, call.args)
        if isinstance(decision, RewriteArgs) and recorder is not None:
            mutation = DispatchMutation(
                call.id, call.name, InputRewrite(proposed, decision.new_args)
            )
            ok, why = await self._record(recorder, mutation, limit)
            if not ok:
                text = DENIED + "the argument rewrite could not be recorded: " + why
                return [Message("tool", text, call.id)]
            return await self._run_and_release(
                call, decision.new_args, (), [], tools, policy, recorder, limit
            )
        return await _DecidedCall(decision).run(
            self,
            call,
            tools=tools,
            policy=policy,
            recorder=recorder,
            approver=approver,
            limit=limit,
        )

    async def _run_and_release(  # noqa: PLR0917 (kept as written)
        self,
        call: Any,
        args: str,
        context: tuple[str, ...],
        before: list[Message],
        tools: Any,
        policy: Any,
        recorder: Any,
        limit: float | None,
    ) -> list[Message]:
        try:
            result = await tools.run(ToolInvocation(call.id, call.name, args, context))
        except Exception as error:
            result = f"[tool failed] {error!r}"
        redacted = await policy.after_dispatch(call, result)
        if redacted is not None and recorder is not None:
            mutation = DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
            ok, _why = await self._record(recorder, mutation, limit)
            result = redacted if ok else WITHHELD
        return [*before, Message("tool", result, call.id)]


class _DecidedCall:
    """Replays an already-taken decision through the base executor (asks no policy twice)."""

    def __init__(self, decision: Any) -> None:
        self.decision = decision

    async def run(self, harness: Harness, call: Any, *, policy: Any, **kw: Any) -> list[Message]:
        decision = self.decision

        class _Once:
            async def before_dispatch(self, _call: Any) -> Any:
                return decision

            async def after_dispatch(self, c: Any, result: str) -> Any:
                return await policy.after_dispatch(c, result)

        return await Harness._call(harness, call, policy=_Once(), **kw)


# 4. DR-NO-MUTATION: only an explicit Deny skips the post-dispatch policy; a refused
#    approval's denial text is offered to it, and a scripted redaction gets recorded.
class ApprovalRefusalRedacted(Harness):
    async def _call(
        self,
        call: Any,
        *,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        limit: float | None,
    ) -> list[Message]:
        decision = await policy.before_dispatch(call)
        if isinstance(decision, RequireApproval):
            approved = False
            if approver is not None:
                answer = approver(call, decision.reason)
                if hasattr(answer, "__await__"):
                    answer = await answer
                approved = answer is True
            if approved:
                result = await self._tool(call, call.args, (), tools)
            else:
                result = DENIED + "approval required and not given: " + decision.reason
            # BUG: the refusal text is treated as the call's result and goes through the
            # post-dispatch policy like any other result.
            return [
                Message("tool", await self._post(call, result, policy, recorder, limit), call.id)
            ]
        return await _DecidedCall(decision).run(
            self,
            call,
            tools=tools,
            policy=policy,
            recorder=recorder,
            approver=approver,
            limit=limit,
        )

    async def _tool(self, call: Any, args: str, context: tuple[str, ...], tools: Any) -> str:
        try:
            result: str = await tools.run(ToolInvocation(call.id, call.name, args, context))
        except Exception as error:
            result = f"[tool failed] {error!r}"
        return result

    async def _post(
        self, call: Any, result: str, policy: Any, recorder: Any, limit: float | None
    ) -> str:
        redacted = await policy.after_dispatch(call, result)
        if redacted is not None and recorder is not None:
            mutation = DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
            ok, _why = await self._record(recorder, mutation, limit)
            return redacted if ok else WITHHELD
        return result


# 5. DR-INJECT-FAIL: the context message is staged before the record and not taken back.
class InjectFailContextKept(Harness):
    async def _call(
        self,
        call: Any,
        *,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        limit: float | None,
    ) -> list[Message]:
        decision = await policy.before_dispatch(call)
        if isinstance(decision, InjectContext) and recorder is not None:
            before = [Message("context", decision.context, call.id)]
            mutation = DispatchMutation(call.id, call.name, ContextInjection(decision.context))
            ok, why = await self._record(recorder, mutation, limit)
            if not ok:
                text = DENIED + "the context injection could not be recorded: " + why
                # BUG: the staged context message stays in the step's messages.
                return [*before, Message("tool", text, call.id)]
            try:
                result = await tools.run(
                    ToolInvocation(call.id, call.name, call.args, (decision.context,))
                )
            except Exception as error:
                result = f"[tool failed] {error!r}"
            redacted = await policy.after_dispatch(call, result)
            if redacted is not None:
                red = DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
                ok, _why = await self._record(recorder, red, limit)
                result = redacted if ok else WITHHELD
            return [*before, Message("tool", result, call.id)]
        return await _DecidedCall(decision).run(
            self,
            call,
            tools=tools,
            policy=policy,
            recorder=recorder,
            approver=approver,
            limit=limit,
        )


# 6. DR-COMMIT-FAIL: the commit time limit is counted from the start of the step.
class CommitClockFromStepStart(Harness):
    async def run_turn(
        self,
        *,
        prompt: str,
        provider: Any,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        record_time_limit: float | None,
        commit_time_limit: float | None,
    ) -> list[Message]:
        transcript: list[Message] = [Message("user", prompt)]
        step = 0
        while True:
            answer = await provider.next_step(tuple(transcript))
            step_started = anyio.current_time()
            calls = tuple(answer.tool_calls)
            messages: list[Message] = [Message("assistant", answer.text, tool_calls=calls)]
            for call in calls:
                messages += await self._call(
                    call,
                    tools=tools,
                    policy=policy,
                    recorder=recorder,
                    approver=approver,
                    limit=record_time_limit,
                )
            transcript.extend(messages)
            if recorder is not None:
                limit = commit_time_limit
                if limit is not None:
                    # BUG: "the step must be committed within commit_time_limit": the
                    # clock runs from the provider's answer, so slow tools eat the commit's.
                    limit = limit - (anyio.current_time() - step_started)
                await self._commit(recorder, step, tuple(messages), limit)
            if not calls:
                return transcript
            step += 1


_ = (Allow, Deny)  # decision types handled by the base executor

_WRITTEN: tuple[tuple[str, str, str, type[Harness]], ...] = (
    (
        "out-dr8-commit-reason-repr",
        "DR-COMMIT-FAIL",
        "The error surfaced for a failed commit quotes the outcome's repr, so a reason with "
        "quotes, backslashes or line breaks is not in it verbatim.",
        CommitReasonRepr,
    ),
    (
        "out-dr8-cancel-flushes-partial-step",
        "DR-CANCEL",
        "On cancellation mid-step, a shielded commit of the calls already finished is made "
        "before the cancellation propagates.",
        CancelFlushesPartialStep,
    ),
    (
        "out-dr8-original-args-by-id",
        "DR-ONE-RECORD",
        "A rewrite's original_args come from a turn-wide map keyed by call ID (setdefault), so "
        "a reused ID records the earlier call's arguments.",
        OriginalArgsById,
    ),
    (
        "out-dr8-approval-refusal-redacted",
        "DR-NO-MUTATION",
        "A refused or unwired approval's denial text goes through the post-dispatch policy, "
        "and a scripted redaction of it is recorded.",
        ApprovalRefusalRedacted,
    ),
    (
        "out-dr8-inject-fail-context-kept",
        "DR-INJECT-FAIL",
        "When an injection's record fails the call is denied, but the context message staged "
        "before the record stays in the transcript and the commit.",
        InjectFailContextKept,
    ),
    (
        "out-dr8-commit-clock-from-step-start",
        "DR-COMMIT-FAIL",
        "The commit time limit runs from the provider's answer, so slow tools in the step "
        "make a healthy commit count as timed out.",
        CommitClockFromStepStart,
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


#: Every variant of the batch by its own name (``out-dr8-...``), as written.
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
