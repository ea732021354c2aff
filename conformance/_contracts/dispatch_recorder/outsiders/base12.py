"""An outsider's dispatch recorder: its own turn loop and tool executor, no journal (batch 12).

Written from docs/contracts/dispatch-recorder.md, docs/scenarios.md, docs/usage.md,
docs/adapters.md, the seeds and the driver protocol only (plus the public CLI and the
public model types of ``seamspec.reference``); the reference's ``run_turn``,
``ToolExecutor`` and ``commit_step`` are not used. Kept as written (the original
``b12dr_base.py`` had sha256
be9dbe8c61e7539f46c6499d77830e5f59150fd06a5955a7238f9f706c8a37f7); only imports (the
driver and ``PythonAdapter`` from their own modules), typing (one annotation), one
``noqa`` and one addition at the end (``build(backend)``, the factory the meta-test
calls; the original's ``make_adapter``, ``adapter`` and ``adapter_trio`` are kept) were
touched. It declares ``record-time-limit`` and has no signed journal. By its author's run
it conformed under both profiles and both backends (main 83f2bad: 125 passed, 56 skipped
for ``signed-journal``), and it is the control the batch's variants (``batch12.py``) are
judged against. The per-turn executor (``_Turn``) and the harness's text hooks are split
so that each variant changes one piece.
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
    ToolCall,
    ToolInvocation,
)

DENIED = "[tool call denied] "
WITHHELD = "[result withheld: its redaction could not be recorded]"


class StepNotCommitted(Exception):
    """A step's commit did not return OK: the turn stopped there."""

    def __init__(self, step: int, reason: str) -> None:
        super().__init__(f"step {step} could not be committed, so the turn stopped: {reason}")
        self.step = step
        self.reason = reason


class Harness:
    """Runs one turn: provider steps, each call through the policy, records, commits."""

    features: tuple[str, ...] = ("record-time-limit",)
    #: the per-turn executor; a subclass may name its own subclass of ``_Turn``
    turn_class: type | None = None

    # -- the turn loop ---------------------------------------------------------------

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
        turn: _Turn = (self.turn_class or _Turn)(self, provider, tools, policy, recorder, approver,
                     record_time_limit, commit_time_limit)  # fmt: skip
        return await turn.run(prompt)

    # -- pieces a subclass may change -------------------------------------------------

    def new_turn_state(self) -> dict[str, Any]:
        return {}

    def transcript_start(self, prompt: str) -> list[Message]:
        return [Message("user", prompt, None, ())]

    def release_text(self, text: str) -> str:
        """What the model sees for a result that is released."""
        return text

    def tool_failure_text(self, error: Exception) -> str:
        return f"[tool failed] {error!r}"

    def denial(self, reason: str) -> str:
        return DENIED + reason

    def unrecorded_text(self, what: str, reason: str) -> str:
        return self.denial(f"the {what} could not be recorded: {reason}")

    def approval_text(self, reason: str) -> str:
        return self.denial(f"approval required and not given: {reason}")


class _Turn:
    def __init__(  # noqa: PLR0917 (kept as written)
        self, harness: Harness, provider: Any, tools: Any, policy: Any, recorder: Any,
        approver: Any, record_time_limit: float | None, commit_time_limit: float | None,
    ) -> None:  # fmt: skip
        for name, limit in (("record_time_limit", record_time_limit),
                            ("commit_time_limit", commit_time_limit)):  # fmt: skip
            if limit is not None and not limit > 0:
                raise ValueError(f"{name} must be positive or None")
        self.h = harness
        self.provider = provider
        self.tools = tools
        self.policy = policy
        self.recorder = recorder
        self.approver = approver
        self.record_limit = record_time_limit
        self.commit_limit = commit_time_limit
        self.state = harness.new_turn_state()

    async def run(self, prompt: str) -> list[Message]:
        transcript = self.h.transcript_start(prompt)
        step_index = 0
        while True:
            step = await self.provider.next_step(tuple(transcript))
            calls = tuple(step.tool_calls or ())
            step_messages: list[Message] = [Message("assistant", step.text, None, calls)]
            for call in calls:
                step_messages.extend(await self.dispatch(call))
            transcript.extend(step_messages)
            if self.recorder is not None:
                await self.commit(step_index, list(step_messages))
            if not calls:
                return transcript
            step_index += 1

    # -- the recorder ------------------------------------------------------------------

    async def _bounded(self, call: Any, limit: float | None) -> tuple[str, Any]:
        """Await ``call()`` under ``limit``: ("ok", outcome), ("raised", error) or
        ("timeout", None). A pending cancellation always wins, before any answer."""
        started = anyio.current_time()
        deadline = started + limit if limit is not None else float("inf")
        try:
            with anyio.CancelScope(deadline=deadline) as scope:
                outcome = await call()
        except Exception as error:
            await anyio.lowlevel.checkpoint_if_cancelled()
            if scope.cancel_called or anyio.current_time() >= deadline:
                return "timeout", None
            return "raised", error
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called or anyio.current_time() >= deadline:
            return "timeout", None
        return "ok", outcome

    async def record(self, mutation: DispatchMutation) -> RecordOk | RecordError:
        status, value = await self._bounded(
            lambda: self.recorder.record(mutation), self.record_limit
        )
        if status == "timeout":
            return RecordError(f"record timed out after {self.record_limit} s")
        if status == "raised":
            return RecordError(f"record raised {value!r}")
        if isinstance(value, RecordOk):
            return value
        if isinstance(value, RecordError):
            return value
        return RecordError(f"record answered {value!r}, not OK")

    async def commit(self, step_index: int, messages: list[Message]) -> None:
        commit = getattr(self.recorder, "commit_accepted_step", None)
        if commit is None:
            return  # the protocol default: OK
        status, value = await self._bounded(lambda: commit(messages), self.commit_limit)
        if status == "timeout":
            raise StepNotCommitted(step_index, f"commit timed out after {self.commit_limit} s")
        if status == "raised":
            raise StepNotCommitted(step_index, f"commit_accepted_step raised {value!r}")
        if isinstance(value, RecordOk):
            return
        if isinstance(value, RecordError):
            raise StepNotCommitted(step_index, value.reason)
        raise StepNotCommitted(step_index, f"commit answered {value!r}, not OK")

    # -- one call --------------------------------------------------------------------

    def _tool_message(self, call: ToolCall, content: str) -> Message:
        return Message("tool", content, call.id, ())

    async def _approve(self, call: ToolCall, reason: str) -> bool:
        if self.approver is None:
            return False
        answer = self.approver(call, reason)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer is True

    async def dispatch(self, call: ToolCall) -> list[Message]:
        decision = await self.policy.before_dispatch(call)
        args = call.args
        context: tuple[str, ...] = ()
        out: list[Message] = []
        if isinstance(decision, Deny):
            return [self._tool_message(call, self.h.denial(decision.reason))]
        if isinstance(decision, RequireApproval):
            if not await self._approve(call, decision.reason):
                return [self._tool_message(call, self.h.approval_text(decision.reason))]
        elif isinstance(decision, RewriteArgs):
            if self.recorder is not None:
                outcome = await self.record(DispatchMutation(
                    call.id, call.name, InputRewrite(call.args, decision.new_args)))  # fmt: skip
                if not isinstance(outcome, RecordOk):
                    text = self.h.unrecorded_text("argument rewrite", outcome.reason)
                    return [self._tool_message(call, text)]
                args = decision.new_args
        elif isinstance(decision, InjectContext):
            if self.recorder is not None:
                outcome = await self.record(DispatchMutation(
                    call.id, call.name, ContextInjection(decision.context)))  # fmt: skip
                if not isinstance(outcome, RecordOk):
                    text = self.h.unrecorded_text("context injection", outcome.reason)
                    return [self._tool_message(call, text)]
                context = (decision.context,)
                out.append(Message("context", decision.context, call.id, ()))
        elif not isinstance(decision, Allow):
            return [self._tool_message(call, self.h.denial(f"unknown decision {decision!r}"))]
        try:
            result = await self.tools.run(ToolInvocation(call.id, call.name, args, context))
        except Exception as error:
            result = self.h.tool_failure_text(error)
        result = str(result)
        redacted = await self.policy.after_dispatch(call, result)
        if redacted is not None and self.recorder is not None:
            outcome = await self.record(DispatchMutation(
                call.id, call.name, ResultRedaction(result, redacted)))  # fmt: skip
            if isinstance(outcome, RecordOk):
                out.append(self._tool_message(call, self.h.release_text(redacted)))
            else:
                out.append(self._tool_message(call, WITHHELD))
            return out
        out.append(self._tool_message(call, self.h.release_text(result)))
        return out


def make_adapter(
    impl: Harness | None = None, *, name: str = "b12dr-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[DispatchRecorderDriver(impl if impl is not None else Harness())],
        backend=backend,
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(name="b12dr-base-trio", backend="trio")


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter on ``backend`` (added on import; the original has
    ``adapter`` and ``adapter_trio``): the control its variants are measured against."""
    return make_adapter(name="outsider-b12dr-base", backend=backend)
