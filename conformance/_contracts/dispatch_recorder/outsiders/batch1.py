"""Sixteen broken variants of base.py, each with exactly one plausible bug.

Each section names the rule it breaks and says in one line what it does wrong.

Outsider batch 1 of the dispatch recorder, written before any of them was run against the
suite (the original ``variants.py`` had sha256
f1439df401f7a3b216a54f743ca376b50a85547ba81c75cfa71105c2f26b1a66). Kept as written: only
imports, formatting, typing and the registration changed, and three labels, which rules
added since then (or the page's own wording) moved (see ``RELABELLED``). A seventeenth
bug, found in the base itself by the scenarios written for this batch's survivors, is
section 17; an eighteenth, found in the base by the scenarios written for batch 9
(``cancel-while-a-deaf-redaction-record-raises``), is section 18. ``no_domain_prefix`` (section 16) survived the suite it was written
against; the kit's own reading of the journal, added since, catches it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.dispatch_recorder.outsiders.base import (
    WITHHELD,
    Executor,
    Harness,
    Journal,
    Outcome,
    TurnCommitFailed,
    TurnLoop,
    Verifier,
    canonical,
    denial,
    make_adapter,
    raw_public_key,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    ContextInjection,
    DispatchMutation,
    InputRewrite,
    Message,
    RecorderBase,
    RecordError,
    ResultRedaction,
    RewriteArgs,
    ToolCall,
)


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its harness."""

    name: str
    rule: str
    statement: str
    harness: Harness


VARIANTS: dict[str, Variant] = {}


def variant(name: str, rule: str, statement: str, harness: Harness) -> Harness:
    VARIANTS[name] = Variant(name, RELABELLED.get(name, rule), statement, harness)
    return harness


#: Labels changed when the batch was taken in, with why. The bug is the same.
RELABELLED = {
    "empty_redaction_ignored": "DR-ONE-RECORD",  # the redaction is never recorded at all
    "redact_fail_releases_redacted": "DR-RECORD-FIRST",  # the page: releasing the unrecorded
    # redaction breaks DR-RECORD-FIRST; DR-REDACT-FAIL is about the original
    "final_step_uncommitted": "DR-COMMIT-FINAL",  # the final commit became a rule of its own
}
#: Bugs of rules the kit cannot judge yet: kept, not registered as mutants. (Once
#: ``no_domain_prefix``, which survived because the kit judged journals by the
#: implementation's own verifier; the kit's own journal check now catches it.)
PENDING: dict[str, str] = {}


def harness(**classes: Any) -> Harness:
    built: Harness = type("VariantHarness", (Harness,), classes)()
    return built


# ---------------------------------------------------------------------------------------
# 1. DR-RECORD-FIRST: a rewrite is recorded after the tool ran with the new arguments.
# ---------------------------------------------------------------------------------------


class _DecidedPolicy:
    def __init__(self, inner: Any, decided: dict[str, Any]) -> None:
        self.inner = inner
        self.decided = decided

    async def before_dispatch(self, call: ToolCall) -> Any:
        if call.id in self.decided:
            return self.decided.pop(call.id)
        return await self.inner.before_dispatch(call)

    async def after_dispatch(self, call: ToolCall, result: str) -> Any:
        return await self.inner.after_dispatch(call, result)


class RecordAfterRunExecutor(Executor):
    """Asks the policy once: a decision it does not handle is replayed to the base path."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.decided: dict[str, Any] = {}
        self.policy = _DecidedPolicy(self.policy, self.decided)

    async def execute(self, call: ToolCall) -> list[Message]:
        decision = await self.policy.before_dispatch(call)
        if isinstance(decision, RewriteArgs) and self.recorder is not None:
            # BUG: run first, then record what was run; deny the result if the record fails.
            result = await self.run_tool(call, decision.new_args, ())
            outcome = await self.record(
                DispatchMutation(call.id, call.name, InputRewrite(call.args, decision.new_args))
            )
            if not outcome.ok:
                return [
                    self.result(
                        call,
                        denial("the argument rewrite could not be recorded: " + outcome.reason),
                    )
                ]
            return [self.result(call, await self.post_dispatch(call, result))]
        self.decided[call.id] = decision
        return await Executor.execute(self, call)


record_after_run = variant(
    "record_after_run",
    "DR-RECORD-FIRST",
    "runs the tool with the rewritten arguments first and records the rewrite afterwards",
    harness(executor_class=RecordAfterRunExecutor),
)


# ---------------------------------------------------------------------------------------
# 2. DR-ONE-RECORD: argument payloads are re-serialised as compact sorted JSON.
# ---------------------------------------------------------------------------------------


def _canonical_args(args: str) -> str:
    try:
        return json.dumps(json.loads(args), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return args


class NormalisedArgsExecutor(Executor):
    async def _call_record(self, mutation: DispatchMutation) -> Any:
        kind = mutation.kind
        if isinstance(kind, InputRewrite):
            # BUG: "canonicalise the arguments before they are signed": not verbatim.
            kind = InputRewrite(_canonical_args(kind.original_args), _canonical_args(kind.new_args))
            mutation = DispatchMutation(mutation.tool_call_id, mutation.tool_name, kind)
        return await self.recorder.record(mutation)


normalised_args = variant(
    "normalised_args",
    "DR-ONE-RECORD",
    "records a rewrite's original and new args re-serialised as compact sorted JSON, not verbatim",
    harness(executor_class=NormalisedArgsExecutor),
)


# ---------------------------------------------------------------------------------------
# 3. DR-INJECT-FAIL: the context message reaches the transcript although the record failed.
# ---------------------------------------------------------------------------------------


class InjectFailLeaksExecutor(Executor):
    async def execute(self, call: ToolCall) -> list[Message]:
        self.pending_context: list[Message] = []
        messages = await super().execute(call)
        if messages and messages[0].role != "context":
            # BUG: the context message built for the call is prepended whatever the outcome.
            return self.pending_context + messages
        return messages

    async def record(self, mutation: DispatchMutation) -> Outcome:
        if isinstance(mutation.kind, ContextInjection):
            self.pending_context = [
                Message("context", mutation.kind.context, tool_call_id=mutation.tool_call_id)
            ]
        return await super().record(mutation)


inject_fail_context_leaks = variant(
    "inject_fail_context_leaks",
    "DR-INJECT-FAIL",
    "when an injection cannot be recorded the call is denied, but the context message "
    "is still put in the transcript before the denial",
    harness(executor_class=InjectFailLeaksExecutor),
)


# ---------------------------------------------------------------------------------------
# 4. DR-REDACT: an empty redacted result is taken for "no redaction".
# ---------------------------------------------------------------------------------------


class EmptyRedactionExecutor(Executor):
    async def post_dispatch(self, call: ToolCall, result: str) -> str:
        redacted = await self.policy.after_dispatch(call, result)
        if not redacted:  # BUG: "" is a redaction (everything hidden), not "keep it"
            return result
        if self.recorder is None:
            return result
        outcome = await self.record(
            DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
        )
        return redacted if outcome.ok else WITHHELD


empty_redaction_ignored = variant(
    "empty_redaction_ignored",
    "DR-REDACT",
    "treats an empty-string redaction as no redaction and releases the original result",
    harness(executor_class=EmptyRedactionExecutor),
)


# ---------------------------------------------------------------------------------------
# 5. DR-REDACT-FAIL: an unrecorded redaction releases the redacted text.
# ---------------------------------------------------------------------------------------


class RedactFailReleasesRedactedExecutor(Executor):
    async def post_dispatch(self, call: ToolCall, result: str) -> str:
        redacted = await self.policy.after_dispatch(call, result)
        if redacted is None or self.recorder is None:
            return result
        await self.record(DispatchMutation(call.id, call.name, ResultRedaction(result, redacted)))
        # BUG: "the redacted text is safe anyway": released whether or not it was recorded.
        return str(redacted)


redact_fail_releases_redacted = variant(
    "redact_fail_releases_redacted",
    "DR-REDACT-FAIL",
    "when the redaction cannot be recorded it releases the redacted text instead of the "
    "withheld notice",
    harness(executor_class=RedactFailReleasesRedactedExecutor),
)


# ---------------------------------------------------------------------------------------
# 6. DR-ABSENT: with no recorder the redaction is applied anyway.
# ---------------------------------------------------------------------------------------


class AbsentRedactsExecutor(Executor):
    async def post_dispatch(self, call: ToolCall, result: str) -> str:
        redacted = await self.policy.after_dispatch(call, result)
        if redacted is None:
            return result
        if self.recorder is None:
            return str(redacted)  # BUG: "redacting is always the safe side"
        outcome = await self.record(
            DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
        )
        return redacted if outcome.ok else WITHHELD


absent_redaction_applied = variant(
    "absent_redaction_applied",
    "DR-ABSENT",
    "with no recorder wired it still applies the redaction instead of releasing the original",
    harness(executor_class=AbsentRedactsExecutor),
)


# ---------------------------------------------------------------------------------------
# 7. DR-NO-MUTATION: an approved call is recorded (as an identity rewrite) for the audit.
# ---------------------------------------------------------------------------------------


class ApprovalRecordedExecutor(Executor):
    async def approve(self, call: ToolCall, reason: str) -> bool:
        approved = await super().approve(call, reason)
        if approved and self.recorder is not None:
            # BUG: a human approval is journalled as an identity rewrite; no record, no run.
            outcome = await self.record(
                DispatchMutation(call.id, call.name, InputRewrite(call.args, call.args))
            )
            return outcome.ok
        return approved


approval_recorded = variant(
    "approval_recorded",
    "DR-NO-MUTATION",
    "records every approved call as an identity input rewrite (and denies it if that fails)",
    harness(executor_class=ApprovalRecordedExecutor),
)


# ---------------------------------------------------------------------------------------
# 8. DR-RAISE: only the exceptions a signer "normally" raises are turned into failures.
# ---------------------------------------------------------------------------------------


class NarrowExceptExecutor(Executor):
    async def record(self, mutation: DispatchMutation) -> Outcome:
        limit = self.record_time_limit
        try:
            with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
                answer = await self._call_record(mutation)
        except (OSError, TimeoutError, ValueError) as error:  # BUG: too narrow
            return Outcome(False, repr(error))
        if scope.cancel_called:
            return Outcome(False, f"the record timed out after {limit} s")
        await anyio.lowlevel.checkpoint_if_cancelled()
        return self._judge(answer)


raise_escapes = variant(
    "raise_escapes",
    "DR-RAISE",
    "catches only OSError/TimeoutError/ValueError from record, so any other exception "
    "escapes and ends the turn",
    harness(executor_class=NarrowExceptExecutor),
)


# ---------------------------------------------------------------------------------------
# 9. DR-HANG: the redaction record is not put under the record time limit.
# ---------------------------------------------------------------------------------------


class RedactionNoLimitExecutor(Executor):
    async def post_dispatch(self, call: ToolCall, result: str) -> str:
        redacted = await self.policy.after_dispatch(call, result)
        if redacted is None or self.recorder is None:
            return result
        mutation = DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
        try:
            # BUG: calls the recorder directly: no time limit for post-dispatch records.
            outcome = self._judge(await self._call_record(mutation))
        except Exception as error:
            outcome = Outcome(False, repr(error))
        return redacted if outcome.ok else WITHHELD


redaction_without_limit = variant(
    "redaction_without_limit",
    "DR-HANG",
    "applies the record time limit to pre-dispatch records only; a redaction record may hang "
    "or answer late and still count",
    harness(executor_class=RedactionNoLimitExecutor),
)


# ---------------------------------------------------------------------------------------
# 10. DR-CANCEL: no cancellation check after a record that returned OK.
# ---------------------------------------------------------------------------------------


class NoCancelCheckExecutor(Executor):
    async def record(self, mutation: DispatchMutation) -> Outcome:
        limit = self.record_time_limit
        try:
            with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
                answer = await self._call_record(mutation)
        except Exception as error:
            return Outcome(False, repr(error))
        if scope.cancel_called:
            return Outcome(False, f"the record timed out after {limit} s")
        # BUG: missing checkpoint_if_cancelled(): a recorder deaf to the turn's cancellation
        # that answers OK afterwards lets the mutation apply (the tool runs) before the
        # cancellation is noticed.
        return self._judge(answer)


no_cancel_check = variant(
    "no_cancel_check",
    "DR-CANCEL",
    "does not check for a pending cancellation after record returns, so a cancellation-deaf "
    "recorder's OK still applies the mutation",
    harness(executor_class=NoCancelCheckExecutor),
)


# ---------------------------------------------------------------------------------------
# 11. DR-BOTH: records are made idempotent per tool call id.
# ---------------------------------------------------------------------------------------


class DedupByCallExecutor(Executor):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.recorded: dict[str, Outcome] = {}

    async def record(self, mutation: DispatchMutation) -> Outcome:
        # BUG: idempotency key is the call id, so a call's second mutation (the redaction
        # after a rewrite or injection) reuses the first record's OK and is never recorded.
        if mutation.tool_call_id in self.recorded and self.recorded[mutation.tool_call_id].ok:
            return self.recorded[mutation.tool_call_id]
        outcome = await super().record(mutation)
        self.recorded[mutation.tool_call_id] = outcome
        return outcome


dedup_by_call_id = variant(
    "dedup_by_call_id",
    "DR-BOTH",
    "caches record outcomes by tool call id, so a redaction after a recorded pre-dispatch "
    "mutation of the same call is applied without its own record",
    harness(executor_class=DedupByCallExecutor),
)


# ---------------------------------------------------------------------------------------
# 12. DR-COMMIT-BARRIER: the final-answer step is not committed.
# ---------------------------------------------------------------------------------------


class FinalStepUncommittedLoop(TurnLoop):
    async def run(
        self, *, prompt: str, provider: Any, executor: Executor, recorder: Any
    ) -> list[Message]:
        messages: list[Message] = [Message("user", prompt)]
        step = 0
        while True:
            response = await provider.next_step(list(messages))
            calls = tuple(response.tool_calls)
            step_messages: list[Message] = [Message("assistant", response.text, tool_calls=calls)]
            for call in calls:
                step_messages.extend(await executor.execute(call))
            messages.extend(step_messages)
            if not calls:
                return messages  # BUG: returns before committing the final step
            if recorder is not None:
                outcome = await self.commit(recorder, step_messages)
                if not outcome.ok:
                    raise TurnCommitFailed(step, outcome.reason, messages)
            step += 1


final_step_uncommitted = variant(
    "final_step_uncommitted",
    "DR-COMMIT-BARRIER",
    "commits only steps that have tool calls; the final answer step is never committed",
    harness(loop_class=FinalStepUncommittedLoop),
)


# ---------------------------------------------------------------------------------------
# 13. DR-COMMIT-DEFAULT: a recorder without its own commit is taken to have no barrier.
# ---------------------------------------------------------------------------------------


class DefaultCommitFailsLoop(TurnLoop):
    async def _call_commit(self, recorder: Any, messages: list[Message]) -> Any:
        own = type(recorder).__dict__.get("commit_accepted_step")
        inherited = getattr(type(recorder), "commit_accepted_step", None)
        if inherited is None or (own is None and inherited is RecorderBase.commit_accepted_step):
            # BUG: "a recorder that cannot supply the barrier fails closed", read as "the
            # default commit is no barrier at all".
            return RecordError("the recorder provides no commit barrier")
        return await recorder.commit_accepted_step(messages)


default_commit_fails_closed = variant(
    "default_commit_fails_closed",
    "DR-COMMIT-DEFAULT",
    "treats a recorder that does not override commit_accepted_step as failing every commit",
    harness(loop_class=DefaultCommitFailsLoop),
)


# ---------------------------------------------------------------------------------------
# 14. DR-JOURNAL-DURABLE: buffered writes, fsync before the buffer is flushed.
# ---------------------------------------------------------------------------------------


class FsyncBeforeFlushJournal(Journal):
    def _append(self, line: bytes) -> None:
        if not hasattr(self, "buffered"):
            self.buffered = open(self.fd, "ab", closefd=False)  # noqa: SIM115
        self.buffered.write(line)
        self.fsync(self.fd)  # BUG: the bytes are still in Python's buffer
        self.buffered.flush()

    def close(self) -> None:
        if hasattr(self, "buffered"):
            self.buffered.close()
        super().close()


fsync_before_flush = variant(
    "fsync_before_flush",
    "DR-JOURNAL-DURABLE",
    "writes entries through a buffered file and fsyncs before flushing it, so OK comes "
    "before the entry reached the disk",
    harness(journal_class=FsyncBeforeFlushJournal),
)


# ---------------------------------------------------------------------------------------
# 15. DR-JOURNAL-VERIFY: the verifier checks signatures but not seq and prev.
# ---------------------------------------------------------------------------------------


class SignatureOnlyVerifier(Verifier):
    def check_position(self, entry: dict[str, Any], index: int, prev: str) -> str | None:
        # BUG: "the signature covers seq and prev, so checking it is enough".
        return None


class SignatureOnlyJournal(Journal):
    verifier_class = SignatureOnlyVerifier


verify_skips_chain = variant(
    "verify_skips_chain",
    "DR-JOURNAL-VERIFY",
    "the verifier checks each entry's signature but never compares seq and prev with the "
    "position and the previous entry",
    harness(journal_class=SignatureOnlyJournal),
)


# ---------------------------------------------------------------------------------------
# 16. DR-JOURNAL-VERIFY: no domain-separation prefix in what is signed and chained.
# ---------------------------------------------------------------------------------------


class NoDomainVerifier(Verifier):
    def signed_bytes(self, body: dict[str, Any]) -> bytes:
        # BUG: the domain prefix is left out of the signed bytes (signer and verifier agree).
        return canonical({k: body[k] for k in ("mutation", "prev", "seq", "v")})

    def genesis(self, public_key: Any) -> str:
        return hashlib.sha256(b"genesis" + raw_public_key(public_key)).hexdigest()


class NoDomainJournal(Journal):
    verifier_class = NoDomainVerifier


no_domain_prefix = variant(
    "no_domain_prefix",
    "DR-JOURNAL-VERIFY",
    "signs and chains canonical bytes without the domain-separation prefix",
    harness(journal_class=NoDomainJournal),
)


# ---------------------------------------------------------------------------------------
# 17. DR-CANCEL (found in the base): a time-out is reported before the cancellation.
# ---------------------------------------------------------------------------------------


class TimeoutHidesCancelExecutor(Executor):
    async def record(self, mutation: DispatchMutation) -> Outcome:
        limit = self.record_time_limit
        try:
            with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
                answer = await self._call_record(mutation)
        except Exception as error:
            return Outcome(False, repr(error))
        if scope.cancel_called:  # BUG: returns before looking for the turn's cancellation
            return Outcome(False, f"the record timed out after {limit} s")
        await anyio.lowlevel.checkpoint_if_cancelled()
        return self._judge(answer)


class TimeoutHidesCancelLoop(TurnLoop):
    async def commit(self, recorder: Any, messages: list[Message]) -> Outcome:
        limit = self.commit_time_limit
        try:
            with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
                answer = await self._call_commit(recorder, messages)
        except Exception as error:
            return Outcome(False, repr(error))
        if scope.cancel_called:  # BUG: as above, for the commit
            return Outcome(False, f"the commit timed out after {limit} s")
        await anyio.lowlevel.checkpoint_if_cancelled()
        return Executor._judge(answer)


timeout_hides_cancel = variant(
    "timeout_hides_cancel",
    "DR-CANCEL",
    "reports a record or commit that ran past its limit as timed out before it looks for "
    "the turn's cancellation, so a cancelled turn carries on",
    harness(executor_class=TimeoutHidesCancelExecutor, loop_class=TimeoutHidesCancelLoop),
)


# ---------------------------------------------------------------------------------------
# 18. DR-CANCEL (found in the base by batch 9's scenarios): a raise hides the cancellation.
# ---------------------------------------------------------------------------------------


class RaiseHidesCancelExecutor(Executor):
    async def record(self, mutation: DispatchMutation) -> Outcome:
        limit = self.record_time_limit
        try:
            with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
                answer = await self._call_record(mutation)
        except Exception as error:  # BUG: returns before looking for the turn's cancellation
            return Outcome(False, repr(error))
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            return Outcome(False, f"the record timed out after {limit} s")
        return self._judge(answer)


class RaiseHidesCancelLoop(TurnLoop):
    async def commit(self, recorder: Any, messages: list[Message]) -> Outcome:
        limit = self.commit_time_limit
        try:
            with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
                answer = await self._call_commit(recorder, messages)
        except Exception as error:  # BUG: as above, for the commit
            return Outcome(False, repr(error))
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            return Outcome(False, f"the commit timed out after {limit} s")
        return Executor._judge(answer)


raise_hides_cancel = variant(
    "raise_hides_cancel",
    "DR-CANCEL",
    "reports a record or commit that raised as failed before it looks for the turn's "
    "cancellation, so a turn cancelled while a deaf recorder ran, and then raised, "
    "carries on",
    harness(executor_class=RaiseHidesCancelExecutor, loop_class=RaiseHidesCancelLoop),
)


def implementation(name: str) -> Harness:
    """The harness of variant ``name``, as the DR driver wants an implementation."""
    return VARIANTS[name].harness


def adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    return make_adapter(VARIANTS[name].harness, name=f"outsider-dr-{name}", backend=backend)


#: The variants registered as mutants (``out-dr-NAME``): all but the pending ones.
MUTANTS = {name: v for name, v in VARIANTS.items() if name not in PENDING}

__all__ = ["MUTANTS", "PENDING", "RELABELLED", "VARIANTS", "Variant", "adapter", "implementation"]
