"""The reference turn loop with recorders the scenarios cannot express: duck-typed ones."""

from __future__ import annotations

import anyio
import pytest

from seamspec.reference import (
    OK,
    Allow,
    Decision,
    DispatchMutation,
    ProviderStep,
    RecordOutcome,
    RewriteArgs,
    ScriptedProvider,
    ToolCall,
    ToolExecutor,
    ToolInvocation,
    run_turn,
)


class OnlyRecord:
    """No base class and no ``commit_accepted_step``: the protocol's default must apply."""

    def __init__(self) -> None:
        self.recorded: list[DispatchMutation] = []

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        self.recorded.append(mutation)
        return OK


class Echo:
    async def run(self, invocation: ToolInvocation) -> str:
        return invocation.args


class RewriteFirst:
    async def before_dispatch(self, call: ToolCall) -> Decision:
        return RewriteArgs('{"safe":true}') if call.id == "c1" else Allow()

    async def after_dispatch(self, call: ToolCall, result: str) -> str | None:
        return None


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_duck_typed_recorder_gets_the_default_commit(backend: str) -> None:
    recorder = OnlyRecord()
    steps = [
        ProviderStep("", (ToolCall("c1", "t", "{}"),)),
        ProviderStep("", (ToolCall("c2", "t", '{"n":2}'),)),
        ProviderStep("done"),
    ]
    executor = ToolExecutor(Echo(), RewriteFirst(), recorder)  # type: ignore[arg-type]

    async def go() -> list[str]:
        result = await run_turn("go", ScriptedProvider(steps), executor)
        return [m.content for m in result.messages if m.role == "tool"]

    assert anyio.run(go, backend=backend) == ['{"safe":true}', '{"n":2}']
    assert [m.tool_call_id for m in recorder.recorded] == ["c1"]
