"""An outsider's dispatch recorder: tool executor and turn loop, no journal (batch 8).

Written from docs/contracts/dispatch-recorder.md and the driver's protocol (plus the public
model types of ``seamspec.reference``), without reading the reference, the scenarios or
the mutants; the reference's ``run_turn`` and ``ToolExecutor`` are not used. Kept as
written (the original ``b8dr_base.py`` had sha256
999cbd009d8b8b62e507a87eedfac5919c801c8f55fabf705a501af0555ada88); only imports, typing,
the layout (ruff format) and the adapter factories at the end (``make_adapter`` takes a
backend, ``build`` replaces the module-level ``adapter``) were touched. It declares
``record-time-limit`` and has no signed journal. It conforms under both profiles on main
425fce3 (107 passed, 49 skipped for ``signed-journal``, on its first run), and it is the
control the batch's variants (``batch8.py``) are judged against.
"""

from __future__ import annotations

import math
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
    """A step could not be committed; the turn stopped."""


class Harness:
    features: tuple[str, ...] = ("record-time-limit",)

    # --- limits -------------------------------------------------------------------
    @staticmethod
    def _deadline(limit: float | None) -> float:
        if limit is None:
            return math.inf
        if limit <= 0:
            return -math.inf  # 0 is not a limit: everything fails closed
        return anyio.current_time() + limit

    # --- the recorder -------------------------------------------------------------
    async def _record(
        self, recorder: Any, mutation: DispatchMutation, limit: float | None
    ) -> tuple[bool, str]:
        outcome: Any = None
        raised: str | None = None
        with anyio.CancelScope(deadline=self._deadline(limit)) as scope:
            try:
                outcome = await recorder.record(mutation)
            except Exception as error:
                raised = repr(error)
        # A cancellation of the caller wins over any answer and over the time limit.
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            return False, f"no answer within the record time limit ({limit} s)"
        if raised is not None:
            return False, raised
        if isinstance(outcome, RecordOk):
            return True, ""
        if isinstance(outcome, RecordError):
            return False, outcome.reason
        return False, f"unexpected answer {outcome!r}"

    async def _commit(
        self, recorder: Any, step: int, messages: tuple[Message, ...], limit: float | None
    ) -> None:
        commit = getattr(recorder, "commit_accepted_step", None)
        if commit is None:
            return
        outcome: Any = None
        raised: str | None = None
        with anyio.CancelScope(deadline=self._deadline(limit)) as scope:
            try:
                outcome = await commit(messages)
            except Exception as error:
                raised = f"{type(error).__name__}: {error}"
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            reason = f"no answer within the commit time limit ({limit} s)"
        elif raised is not None:
            reason = raised
        elif isinstance(outcome, RecordOk):
            return
        elif isinstance(outcome, RecordError):
            reason = outcome.reason
        else:
            reason = f"unexpected answer {outcome!r}"
        raise TurnStopped(f"step {step} could not be committed, so the turn stopped: {reason}")

    # --- one call -----------------------------------------------------------------
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
        args = call.args
        context: tuple[str, ...] = ()
        before: list[Message] = []
        if isinstance(decision, Allow):
            pass
        elif isinstance(decision, Deny):
            return [Message("tool", DENIED + decision.reason, call.id)]
        elif isinstance(decision, RequireApproval):
            approved = False
            if approver is not None:
                answer = approver(call, decision.reason)
                if hasattr(answer, "__await__"):
                    answer = await answer
                approved = answer is True
            if not approved:
                text = DENIED + "approval required and not given: " + decision.reason
                return [Message("tool", text, call.id)]
        elif isinstance(decision, RewriteArgs):
            if recorder is not None:
                mutation = DispatchMutation(
                    call.id, call.name, InputRewrite(call.args, decision.new_args)
                )
                ok, why = await self._record(recorder, mutation, limit)
                if not ok:
                    text = DENIED + "the argument rewrite could not be recorded: " + why
                    return [Message("tool", text, call.id)]
                args = decision.new_args
        elif isinstance(decision, InjectContext):
            if recorder is not None:
                mutation = DispatchMutation(call.id, call.name, ContextInjection(decision.context))
                ok, why = await self._record(recorder, mutation, limit)
                if not ok:
                    text = DENIED + "the context injection could not be recorded: " + why
                    return [Message("tool", text, call.id)]
                context = (decision.context,)
                before.append(Message("context", decision.context, call.id))
        else:
            return [Message("tool", DENIED + f"unknown decision {decision!r}", call.id)]

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

    # --- the turn -----------------------------------------------------------------
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
                await self._commit(recorder, step, tuple(messages), commit_time_limit)
            if not calls:
                return transcript
            step += 1


def make_adapter(impl: Harness, name: str = "b8dr-base", backend: str = "asyncio") -> PythonAdapter:
    """A harness as an adapter (the original had ``make_adapter(impl, name)`` and a
    module-level ``adapter``; the backend is the kit's addition)."""
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[DispatchRecorderDriver(impl)],
        backend=backend,
        concurrent=True,
    )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter: the control its variants are measured against."""
    return make_adapter(Harness(), backend=backend)
