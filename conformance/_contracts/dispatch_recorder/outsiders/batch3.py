"""Six broken variants of ``base3``, each with exactly one plausible bug.

Outsider batch 3 of the dispatch recorder, written before any of them was run against the
suite (the original ``variants.py`` had sha256
c76d288dbe2788f4aae6fa44f392b629b489e816e901702551e86a6680e090b0). Kept as written: only
imports, formatting, typing and the registration (``variant`` records the harness instead
of building an adapter) changed, and one label (see ``RELABELLED``). Against the suite of 2026-12-02 (108 scenarios) one was
killed properly (``approval_remembered_per_tool``, under the strict profile of its
seamspec rule) and five survived; the scenarios named in
``docs/contracts/dispatch-recorder.md`` ("Outsider mutants") were written for them.
Variants still in ``PENDING`` are kept but not registered as mutants yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seamspec.conformance._contracts.dispatch_recorder.outsiders.base3 import (
    WITHHELD,
    Denied,
    Executor,
    Implementation,
    Verdict,
    commit,
    make_adapter,
    scan,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    CommitFailed,
    DispatchMutation,
    Message,
    RecordOk,
    RequireApproval,
    ResultRedaction,
    ToolCall,
)


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its harness."""

    name: str
    rule: str
    statement: str
    harness: Implementation


VARIANTS: dict[str, Variant] = {}

#: Labels changed when the batch was taken in, with why. The bug is the same.
RELABELLED = {
    # where a context sits is seamspec's decision, split out of upstream's DR-COMMIT-STEP
    # (which asks only that the commit match the transcript, and the variant reorders both)
    "context_hoisted_before_results": "DR-CONTEXT-PLACE",
}


def variant(
    name: str, rule: str, statement: str
) -> Callable[[type[Implementation]], type[Implementation]]:
    def register(impl_class: type[Implementation]) -> type[Implementation]:
        VARIANTS[name] = Variant(name, RELABELLED.get(name, rule), statement, impl_class())
        return impl_class

    return register


# ---------------------------------------------------------------------- 1. approvals


class _RememberingExecutor(Executor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._approved_tools: set[str] = set()

    async def _approval(
        self, call: ToolCall, decision: RequireApproval
    ) -> Denied | tuple[str, tuple[str, ...]]:
        # BUG: "approve once, don't ask again for this tool this turn": a later call of
        # the same tool that needs approval runs without the approver being asked.
        if call.name in self._approved_tools:
            return str(call.args), ()
        outcome = await super()._approval(call, decision)
        if not isinstance(outcome, Denied):
            self._approved_tools.add(call.name)
        return outcome


@variant(
    "approval_remembered_per_tool",
    "DR-APPROVAL",
    "an approval is remembered per tool name for the rest of the turn, so a later call of "
    "that tool needing approval runs without asking the approver",
)
class ApprovalRemembered(Implementation):
    executor_class = _RememberingExecutor


# ---------------------------------------------------------------------- 2. commits / order


async def _run_turn_hoisting_context(
    prompt: str,
    provider: Any,
    executor: Executor,
    commit_time_limit: float | None,
    max_steps: int = 64,
) -> list[Message]:
    messages: list[Message] = [Message(role="user", content=prompt)]
    for step in range(max_steps):
        proposed = await provider.next_step(list(messages))
        calls = tuple(proposed.tool_calls)
        assistant = Message(role="assistant", content=proposed.text, tool_calls=calls)
        produced: list[Message] = []
        for call in calls:
            produced.extend(await executor.execute(call))
        # BUG: providers want the tool results contiguous after the assistant message,
        # so the step's injected contexts are all moved ahead of every tool result
        # (instead of each call's context just before its own result).
        contexts = [m for m in produced if m.role == "context"]
        results = [m for m in produced if m.role != "context"]
        step_messages = [assistant, *contexts, *results]
        messages.extend(step_messages)
        if executor.recorder is not None:
            failure = await commit(executor.recorder, step_messages, commit_time_limit)
            if failure is not None:
                raise CommitFailed(step, failure, list(messages))
        if not calls:
            return messages
    raise RuntimeError(f"the turn did not end within {max_steps} steps")


@variant(
    "context_hoisted_before_results",
    "DR-COMMIT-STEP",
    "a step's injected context messages are all placed right after the assistant message, "
    "ahead of every tool result, not just before their own call's result (in commits and "
    "transcript alike)",
)
class ContextHoisted(Implementation):
    async def turn_loop(
        self, prompt: str, provider: Any, executor: Executor, commit_time_limit: float | None
    ) -> list[Message]:
        return await _run_turn_hoisting_context(prompt, provider, executor, commit_time_limit)


# ---------------------------------------------------------------------- 3. record time limit


class _PerCallDeadlineExecutor(Executor):
    _deadline: float | None = None

    async def execute(self, call: ToolCall) -> list[Message]:
        self._deadline = None  # a fresh budget for each call
        return await super().execute(call)

    def _limit_scope(self) -> anyio.CancelScope:
        if self.record_time_limit is None:
            return anyio.CancelScope()
        # BUG: one deadline per call, started by its first record, so that a call never
        # waits longer than the limit on the signer in total; the redaction record after
        # a recorded rewrite and a slow tool inherits an expired deadline.
        if self._deadline is None:
            self._deadline = anyio.current_time() + self.record_time_limit
        return anyio.move_on_at(self._deadline)


@variant(
    "limit_per_call_from_first_record",
    "DR-HANG",
    "the record time limit is one deadline per call started by its first record, so a "
    "redaction record after a recorded pre-dispatch mutation and a slow tool is cut off "
    "although it answers at once",
)
class LimitPerCall(Implementation):
    executor_class = _PerCallDeadlineExecutor


# ---------------------------------------------------------------------- 4. cancellation


class _PostRecordUncheckedExecutor(Executor):
    async def _post_dispatch(self, call: ToolCall, output: str) -> str:
        redacted: str | None = await self.policy.after_dispatch(call, output)
        if redacted is None or self.recorder is None:
            return output
        mutation = DispatchMutation(call.id, call.name, ResultRedaction(output, redacted))
        outcome: Any = None
        raised: BaseException | None = None
        with self._limit_scope() as scope:
            try:
                outcome = await self.recorder.record(mutation)
            except Exception as error:
                raised = error
        # BUG: written separately from the pre-dispatch path, this one has no
        # checkpoint_if_cancelled(): "the tool already ran, nothing left to protect".
        # A deaf redaction record answering after a cancellation is acted on, and the
        # turn carries on to the next call / the step's commit.
        if scope.cancel_called or raised is not None or not isinstance(outcome, RecordOk):
            return WITHHELD
        return redacted


@variant(
    "redaction_record_ignores_cancel",
    "DR-CANCEL",
    "no cancellation check after a redaction's record (only after pre-dispatch records): a "
    "deaf redaction record answering after the turn was cancelled is released and the turn "
    "goes on to commit",
)
class RedactionIgnoresCancel(Implementation):
    executor_class = _PostRecordUncheckedExecutor


# ---------------------------------------------------------------------- 5. journal verify


def _sig_hex_lenient(sig: Any) -> bool:
    # BUG: "the signature is 64 bytes in hex": checked by decoding it, but bytes.fromhex
    # accepts upper-case digits, so a line whose sig letters changed case still verifies
    # (the same signature bytes) although the line is no longer what was written.
    if not isinstance(sig, str) or len(sig) != 128:
        return False
    try:
        return len(bytes.fromhex(sig)) == 64
    except ValueError:
        return False


@variant(
    "sig_hex_case_insensitive",
    "DR-JOURNAL-VERIFY",
    "the verifier checks sig by decoding it with bytes.fromhex, which accepts upper-case "
    "hex, so an entry whose signature digits changed case is accepted",
)
class SigHexLenient(Implementation):
    def verify_journal(
        self, path: str | Path, public_key: Ed25519PublicKey, *, expected_entries: int | None = None
    ) -> Verdict:
        return scan(Path(path).read_bytes(), public_key, expected_entries, sig_ok=_sig_hex_lenient)


# ---------------------------------------------------------------------- 6. what the model sees


class _RedactDenialsExecutor(Executor):
    async def _denied(self, call: ToolCall, denial: Denied) -> list[Message]:
        if not denial.by_policy:
            return await super()._denied(call, denial)
        # BUG: "everything the model reads passes through the post-dispatch policy, a
        # denial reason may quote secrets too": a policy denial (deny, refused or
        # unwired approval) is handed to after_dispatch like a tool result, and a
        # redaction of it is recorded and released.
        text = await self._post_dispatch(call, f"[tool call denied] {denial.reason}")
        return [Message(role="tool", content=text, tool_call_id=call.id)]


@variant(
    "policy_denials_redacted",
    "DR-NO-MUTATION",
    "a policy denial's text goes through the post-dispatch policy, so a deny or refused "
    "approval with a redaction scripted for its call makes a record and releases the "
    "redacted text instead of the denial",
)
class DenialsRedacted(Implementation):
    executor_class = _RedactDenialsExecutor


#: Variants kept but not yet registered as mutants (no scenario kills them yet), with why.
PENDING: dict[str, str] = {}


def implementation(name: str) -> Implementation:
    """The harness of variant ``name``, as the DR driver wants an implementation."""
    return VARIANTS[name].harness


def adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    return make_adapter(VARIANTS[name].harness, f"outsider-dr-{name}", backend=backend)


#: The variants registered as mutants (``out-dr-NAME``): all but the pending ones.
MUTANTS = {name: v for name, v in VARIANTS.items() if name not in PENDING}

__all__ = ["MUTANTS", "PENDING", "RELABELLED", "VARIANTS", "Variant", "adapter", "implementation"]
