"""An outsider's dispatch recorder: tool executor and turn loop, no journal (batch 7).

Written from docs/contracts/dispatch-recorder.md and the driver's protocol (plus the public
model types of ``seamspec.reference``), without reading the reference, the scenarios or
the mutants. Kept as written (the original ``b7dr_base.py`` had sha256
2b08c5a8cd1674a4d87228ed24f94187dbfaa8992c3aa1d48f91a90f9a443625); only imports, typing,
the layout (ruff format) and the adapter factories at the end (``make_adapter``,
``build``) were touched. It declares ``record-time-limit`` and has no signed journal. It
conforms under both profiles on main 9c7b1af (99 passed, 49 skipped for
``signed-journal``, on its first run), and it is the control the batch's variants
(``batch7.py``) are judged against. Its methods are small so that each variant overrides
one.
"""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import anyio.lowlevel

from seamspec.conformance._contracts.dispatch_recorder.driver import DispatchRecorderDriver
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    Allow,
    CommitFailed,
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


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _check_limit(name: str, limit: float | None) -> None:
    if limit is not None and not limit > 0:
        raise ValueError(f"{name} must be positive or None")


class Harness:
    """The turn loop and executor. Methods are small so that variants override one."""

    features: tuple[str, ...] = ("record-time-limit",)

    # ---------------------------------------------------------------- records

    async def _record(
        self, recorder: Any, mutation: DispatchMutation, limit: float | None
    ) -> tuple[bool, str]:
        """One record call under its own time limit. Returns (ok, reason)."""
        deadline = anyio.current_time() + limit if limit is not None else float("inf")
        outcome: Any = None
        error: str | None = None
        with anyio.CancelScope(deadline=deadline) as scope:
            try:
                outcome = await recorder.record(mutation)
            except Exception as exc:  # a raise is a failed record; cancellation passes
                error = repr(exc)
        # A pending cancellation wins over the answer and over our own limit.
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            return False, f"the record timed out after {limit} s"
        if error is not None:
            return False, error
        if isinstance(outcome, RecordOk):
            return True, ""
        if isinstance(outcome, RecordError):
            return False, outcome.reason
        return False, f"unexpected record outcome {outcome!r}"

    async def _commit(
        self, recorder: Any, step: int, messages: tuple[Message, ...], limit: float | None
    ) -> None:
        commit = getattr(recorder, "commit_accepted_step", None)
        if commit is None:
            return  # the protocol default: OK
        deadline = anyio.current_time() + limit if limit is not None else float("inf")
        outcome: Any = None
        error: str | None = None
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

    # ---------------------------------------------------------------- one call

    def _denied(self, call: Any, reason: str) -> list[Message]:
        return [Message("tool", DENIED + reason, tool_call_id=call.id)]

    async def _run_tool(self, tools: Any, call: Any, args: str, contexts: tuple[str, ...]) -> str:
        try:
            result: str = await tools.run(ToolInvocation(call.id, call.name, args, contexts))
            return result
        except Exception as exc:
            return "[tool failed] " + repr(exc)

    async def _pre(
        self, call: Any, decision: Any, recorder: Any, approver: Any, limit: float | None
    ) -> tuple[str | None, str, tuple[str, ...]]:
        """Returns (denial reason or None, args, contexts)."""
        args = call.args
        if isinstance(decision, Allow):
            return None, args, ()
        if isinstance(decision, Deny):
            return decision.reason, args, ()
        if isinstance(decision, RequireApproval):
            if approver is None:
                return "approval required and no approver is wired: " + decision.reason, args, ()
            approved = await _maybe_await(approver(call, decision.reason))
            if approved is not True:
                return "approval required and not given: " + decision.reason, args, ()
            return None, args, ()
        if isinstance(decision, RewriteArgs):
            if recorder is None:
                return None, args, ()  # no recorder: no mutation applies
            ok, reason = await self._record(
                recorder,
                DispatchMutation(call.id, call.name, InputRewrite(call.args, decision.new_args)),
                limit,
            )
            if not ok:
                return "the argument rewrite could not be recorded: " + reason, args, ()
            return None, decision.new_args, ()
        if isinstance(decision, InjectContext):
            if recorder is None:
                return None, args, ()
            ok, reason = await self._record(
                recorder,
                DispatchMutation(call.id, call.name, ContextInjection(decision.context)),
                limit,
            )
            if not ok:
                return "the context injection could not be recorded: " + reason, args, ()
            return None, args, (decision.context,)
        return f"unknown policy decision {decision!r}", args, ()

    async def _post(
        self, call: Any, result: str, policy: Any, recorder: Any, limit: float | None
    ) -> str:
        redacted = await _maybe_await(policy.after_dispatch(call, result))
        if redacted is None or recorder is None:
            return result
        ok, _reason = await self._record(
            recorder,
            DispatchMutation(call.id, call.name, ResultRedaction(result, redacted)),
            limit,
        )
        return redacted if ok else WITHHELD

    async def _execute(
        self,
        call: Any,
        *,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        limit: float | None,
    ) -> list[Message]:
        decision = await _maybe_await(policy.before_dispatch(call))
        denial, args, contexts = await self._pre(call, decision, recorder, approver, limit)
        if denial is not None:
            return self._denied(call, denial)
        result = await self._run_tool(tools, call, args, contexts)
        released = await self._post(call, result, policy, recorder, limit)
        out = [Message("context", c, tool_call_id=call.id) for c in contexts]
        out.append(Message("tool", released, tool_call_id=call.id))
        return out

    # ---------------------------------------------------------------- the turn

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
        _check_limit("record_time_limit", record_time_limit)
        _check_limit("commit_time_limit", commit_time_limit)
        transcript: list[Message] = [Message("user", prompt)]
        step = 0
        while True:
            ps = await provider.next_step(tuple(transcript))
            calls = tuple(ps.tool_calls or ())
            step_messages: list[Message] = [Message("assistant", ps.text, tool_calls=calls)]
            for call in calls:
                step_messages.extend(
                    await self._execute(
                        call,
                        tools=tools,
                        policy=policy,
                        recorder=recorder,
                        approver=approver,
                        limit=record_time_limit,
                    )
                )
            transcript.extend(step_messages)
            if recorder is not None:
                await self._commit(recorder, step, tuple(step_messages), commit_time_limit)
            if not calls:
                return transcript
            step += 1


def make_adapter(
    harness: Harness, name: str = "outsider-batch7-dr-base", backend: str = "asyncio"
) -> PythonAdapter:
    """A harness as an adapter (the original had ``make_adapter(harness, name)`` and a
    module-level ``impl`` and ``adapter``; the backend is the kit's addition)."""
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[DispatchRecorderDriver(harness)],
        backend=backend,
        concurrent=True,
    )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter: the control its variants are measured against."""
    return make_adapter(Harness(), backend=backend)
