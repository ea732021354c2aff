"""An outsider's dispatch recorder: its own turn loop and tool executor, no journal (batch 9).

Written from docs/contracts/dispatch-recorder.md only (plus the public model types of
``seamspec.reference``); the reference's ``run_turn``, ``ToolExecutor`` and
``commit_step`` are not used. Kept as written (the original ``b9dr_base.py`` had sha256
5cefd7a6486d7b1cd1f967a6cfadd310af724659bbbd127d6b9160f03e4b5afa); only imports, typing,
the layout (ruff format) and the adapter factories at the end (``make_adapter`` keeps its
backend argument, ``build`` replaces the module-level ``adapter``/``adapter_trio``) were
touched. It declares ``record-time-limit`` and has no signed journal. It conformed under
both profiles and both backends on its first run (main d694025: 109 passed, 49 skipped for
``signed-journal``), and it is the control the batch's variants (``batch9.py``) are judged
against. The executor is split into small hook methods so that each variant changes one.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel

from seamspec.conformance._contracts.dispatch_recorder.driver import DispatchRecorderDriver
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    Allow,
    ContextInjection,
    Deny,
    DispatchMutation,
    InjectContext,
    InputRewrite,
    Message,
    RecordError,
    RecordOk,
    RequireApproval,
    ResultRedaction,
    RewriteArgs,
    ToolInvocation,
)

DENIED = "[tool call denied] "
WITHHELD = "[result withheld: its redaction could not be recorded]"


class TurnStopped(Exception):
    """A step could not be committed: the turn stops (DR-COMMIT-FAIL)."""

    def __init__(self, step: int, reason: str) -> None:
        super().__init__(f"step {step} could not be committed, so the turn stopped: {reason}")
        self.step = step
        self.reason = reason


class _Failed:
    """A record that did not return OK (error answer, raise, or past its limit)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class OutsiderTurnLoop:
    """One turn: provider steps, each call through policy / recorder / tool, commits."""

    features: tuple[str, ...] = ("record-time-limit",)

    # ------------------------------------------------------------------ the turn

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
    ) -> Sequence[Message]:
        transcript: list[Message] = [Message("user", prompt)]
        step_no = 0
        any_calls = False
        while True:
            step = await provider.next_step(tuple(transcript))
            calls = tuple(step.tool_calls)
            step_messages: list[Message] = [Message("assistant", step.text, None, calls)]
            step_state: dict[str, Any] = {"contexts": []}
            for call in calls:
                step_messages.extend(
                    await self._one_call(
                        call,
                        tools=tools,
                        policy=policy,
                        recorder=recorder,
                        approver=approver,
                        limit=record_time_limit,
                        step_state=step_state,
                    )
                )
            any_calls = any_calls or bool(calls)
            transcript.extend(step_messages)
            if recorder is not None and self._should_commit(final=not calls, any_calls=any_calls):
                await self._commit(recorder, tuple(step_messages), step_no, commit_time_limit)
            if not calls:
                return tuple(transcript)
            step_no += 1

    def _should_commit(self, *, final: bool, any_calls: bool) -> bool:
        return True

    # ------------------------------------------------------------------ one call

    async def _one_call(
        self,
        call: Any,
        *,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        limit: float | None,
        step_state: dict[str, Any],
    ) -> list[Message]:
        out: list[Message] = []
        decision = await policy.before_dispatch(call)
        args = call.args
        own_context: tuple[str, ...] = ()

        if isinstance(decision, Deny):
            return [self._tool_message(call, DENIED + decision.reason)]
        if isinstance(decision, RequireApproval):
            approved = False
            if approver is not None:
                answer = approver(call, decision.reason)
                if inspect.isawaitable(answer):
                    answer = await answer
                approved = answer is True
            if not approved:
                return [
                    self._tool_message(
                        call, DENIED + "approval required and not given: " + decision.reason
                    )
                ]
        elif isinstance(decision, RewriteArgs):
            if recorder is not None:
                mutation = self._mutation(call, InputRewrite(call.args, decision.new_args))
                outcome = await self._record(recorder, mutation, limit)
                if isinstance(outcome, _Failed):
                    return await self._denied_by_record(
                        call,
                        "the argument rewrite could not be recorded: " + outcome.reason,
                        policy=policy,
                        recorder=recorder,
                        limit=limit,
                    )
                args = self._tool_args(decision.new_args)
        elif isinstance(decision, InjectContext):
            if recorder is not None:
                mutation = self._mutation(call, ContextInjection(decision.context))
                outcome = await self._record(recorder, mutation, limit)
                if isinstance(outcome, _Failed):
                    return await self._denied_by_record(
                        call,
                        "the context injection could not be recorded: " + outcome.reason,
                        policy=policy,
                        recorder=recorder,
                        limit=limit,
                    )
                own_context = (decision.context,)
                out.append(Message("context", decision.context, call.id))
        elif not isinstance(decision, Allow):
            return [self._tool_message(call, DENIED + f"unknown policy decision {decision!r}")]

        context = self._invocation_context(step_state, own_context)
        try:
            result = await tools.run(ToolInvocation(call.id, call.name, args, context))
        except Exception as error:  # cancellation is a BaseException: it passes
            result = f"[tool failed] {error!r}"
        released = await self._release(call, result, policy=policy, recorder=recorder, limit=limit)
        out.append(self._tool_message(call, released))
        return out

    # hooks the variants change ------------------------------------------------

    def _mutation(self, call: Any, kind: Any) -> DispatchMutation:
        return DispatchMutation(call.id, call.name, kind)

    def _tool_args(self, new_args: str) -> str:
        return new_args

    def _invocation_context(
        self, step_state: dict[str, Any], own: tuple[str, ...]
    ) -> tuple[str, ...]:
        return own

    async def _denied_by_record(
        self, call: Any, reason: str, *, policy: Any, recorder: Any, limit: float | None
    ) -> list[Message]:
        # No tool ran: the post-dispatch policy is not asked (DR-BOTH, DR-NO-MUTATION).
        return [self._tool_message(call, DENIED + reason)]

    def _commit_reason(self, reason: str) -> str:
        return reason

    # ------------------------------------------------------------------ release

    async def _release(
        self, call: Any, result: str, *, policy: Any, recorder: Any, limit: float | None
    ) -> str:
        redacted: str | None = await policy.after_dispatch(call, result)
        if redacted is None or recorder is None:
            return result  # no redaction, or no recorder: the redaction is dropped
        mutation = self._mutation(call, ResultRedaction(result, redacted))
        outcome = await self._record_redaction(recorder, mutation, limit)
        if isinstance(outcome, _Failed):
            return WITHHELD
        return redacted

    async def _record_redaction(
        self, recorder: Any, mutation: DispatchMutation, limit: float | None
    ) -> RecordOk | _Failed:
        return await self._record(recorder, mutation, limit)

    # ------------------------------------------------------------------ recorder

    async def _record(
        self, recorder: Any, mutation: DispatchMutation, limit: float | None
    ) -> RecordOk | _Failed:
        deadline = anyio.current_time() + limit if limit is not None else float("inf")
        outcome: Any = None
        failure: str | None = None
        try:
            with anyio.move_on_at(deadline):
                outcome = await recorder.record(mutation)
        except Exception as error:
            failure = f"recorder raised {error!r}"
        # Cancellation first, before acting on the answer or on the limit (DR-CANCEL).
        await anyio.lowlevel.checkpoint_if_cancelled()
        if failure is not None:
            return _Failed(failure)
        if anyio.current_time() >= deadline:
            return _Failed(f"record timed out after {limit} s")
        if isinstance(outcome, RecordOk):
            return outcome
        if isinstance(outcome, RecordError):
            return _Failed(outcome.reason)
        return _Failed(f"record returned {outcome!r}")

    async def _commit(
        self, recorder: Any, messages: tuple[Message, ...], step_no: int, limit: float | None
    ) -> None:
        commit = getattr(recorder, "commit_accepted_step", None)
        if commit is None:
            return  # a recorder without its own commit: OK (DR-COMMIT-DEFAULT)
        deadline = anyio.current_time() + limit if limit is not None else float("inf")
        outcome: Any = None
        failure: str | None = None
        try:
            with anyio.move_on_at(deadline):
                outcome = await commit(messages)
        except Exception as error:
            failure = f"commit_accepted_step raised {error!r}"
        await anyio.lowlevel.checkpoint_if_cancelled()
        if failure is not None:
            raise TurnStopped(step_no, self._commit_reason(failure))
        if anyio.current_time() >= deadline:
            raise TurnStopped(step_no, f"commit timed out after {limit} s")
        if isinstance(outcome, RecordOk):
            return
        if isinstance(outcome, RecordError):
            raise TurnStopped(step_no, self._commit_reason(outcome.reason))
        raise TurnStopped(step_no, f"commit returned {outcome!r}")

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _tool_message(call: Any, content: str) -> Message:
        return Message("tool", content, call.id)


def make_adapter(impl: Any, name: str, backend: str = "asyncio") -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[DispatchRecorderDriver(impl)],
        backend=backend,
        concurrent=True,
    )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter (the original had module-level ``adapter`` and
    ``adapter_trio``): the control its variants are measured against."""
    return make_adapter(OutsiderTurnLoop(), "b9dr-base", backend=backend)


def adapter() -> PythonAdapter:
    return build("asyncio")


def adapter_trio() -> PythonAdapter:
    return build("trio")
