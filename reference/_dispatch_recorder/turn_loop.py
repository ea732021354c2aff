"""The turn loop: provider steps, tool calls through the executor, a commit barrier per step.

The loop owns one rule the executor cannot see: after each accepted step the recorder's
``commit_accepted_step`` must have returned OK before the loop asks the provider for the
next step or runs another tool (DR-COMMIT-BARRIER). A commit that fails, raises or runs
past its time limit ends the turn with :class:`CommitFailed` (DR-COMMIT-FAIL), whereas a
failed *record* only changes that one call's outcome. Both choices are seamspec's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import anyio

from seamspec.reference._dispatch_recorder.executor import CallOutcome, ToolExecutor
from seamspec.reference._dispatch_recorder.model import (
    Message,
    RecordError,
    RecordOk,
    ToolCall,
    commit_step,
)

__all__ = [
    "CommitFailed",
    "Provider",
    "ProviderStep",
    "ScriptedProvider",
    "TurnResult",
    "run_turn",
]


@dataclass(frozen=True)
class ProviderStep:
    """One model response: text and the tool calls it proposes (none: the turn ends)."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@runtime_checkable
class Provider(Protocol):
    async def next_step(self, messages: Sequence[Message]) -> ProviderStep: ...


class ScriptedProvider:
    """Replays fixed steps, whatever the transcript says; then answers with empty text."""

    def __init__(self, steps: Sequence[ProviderStep]) -> None:
        self._steps = list(steps)
        self.seen: list[tuple[Message, ...]] = []

    async def next_step(self, messages: Sequence[Message]) -> ProviderStep:
        self.seen.append(tuple(messages))
        await anyio.lowlevel.checkpoint()
        return self._steps.pop(0) if self._steps else ProviderStep()


class CommitFailed(Exception):
    """``commit_accepted_step`` did not return OK: the turn stopped before going further.

    ``step`` is the 0-based index of the step whose commit failed; ``messages`` is the
    transcript up to and including that step (useful for a report, not to resume from).
    """

    def __init__(self, step: int, reason: str, messages: Sequence[Message]) -> None:
        super().__init__(f"step {step} could not be committed, so the turn stopped: {reason}")
        self.step = step
        self.reason = reason
        self.messages = tuple(messages)


@dataclass
class TurnResult:
    messages: list[Message]
    calls: list[CallOutcome] = field(default_factory=list)
    steps: int = 0


async def run_turn(
    prompt: str,
    provider: Provider,
    executor: ToolExecutor,
    *,
    commit_time_limit: float | None = 10.0,
    max_steps: int = 64,
) -> TurnResult:
    """Run one user turn to its final answer (a step that proposes no tool call).

    Calls of one step run one after another, in proposal order. With a recorder, every
    step (the final answer included) is committed before anything else happens; with no
    recorder there is nothing to commit to and no barrier.
    """
    limit = math.inf if commit_time_limit is None else commit_time_limit
    result = TurnResult([Message("user", prompt)])
    for index in range(max_steps):
        step = await provider.next_step(tuple(result.messages))
        result.steps += 1
        accepted = [Message("assistant", step.text, tool_calls=step.tool_calls)]
        for call in step.tool_calls:
            outcome = await executor.execute(call)
            result.calls.append(outcome)
            accepted.extend(outcome.messages)
        result.messages.extend(accepted)
        if executor.recorder is not None:
            reason = await _commit(executor.recorder, accepted, limit)
            if reason is not None:
                raise CommitFailed(index, reason, result.messages)
        if not step.tool_calls:
            return result
    raise RuntimeError(f"the turn did not finish within {max_steps} steps")


async def _commit(recorder: object, messages: Sequence[Message], limit: float) -> str | None:
    """``None`` when the commit returned OK in time; otherwise why it did not.

    A cancellation of the turn that arrived while the recorder was deaf to it is
    delivered before the answer is acted on: the turn ends cancelled (DR-CANCEL), not
    with a commit error and not with one more provider call.
    """
    with anyio.move_on_after(limit) as scope:
        try:
            outcome = await commit_step(recorder, messages)
        except Exception as error:
            await anyio.lowlevel.checkpoint_if_cancelled()
            return f"commit_accepted_step raised {error!r}"
    await anyio.lowlevel.checkpoint_if_cancelled()
    if scope.cancel_called:
        return f"commit_accepted_step took longer than {limit:g} s"
    if isinstance(outcome, RecordError):
        return outcome.reason
    if not isinstance(outcome, RecordOk):
        return f"commit_accepted_step returned {outcome!r}, which is not an outcome"
    return None
