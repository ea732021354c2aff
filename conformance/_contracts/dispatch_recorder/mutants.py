"""Deliberately broken dispatch recorders ("mutants"), one broken DR rule each.

Each mutant is the reference with one plausible mistake: an executor stage, the turn
loop, the journal or its verifier replaced by a subclass whose few lines *are* the bug.
``tests/test_dr_mutants.py`` demands that the shipped scenarios give each one a ``fail``
from a scenario citing its rule. Mutants are ordinary adapters too::

    seamspec run --impl mutant:dr-apply-before-record
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seamspec import __version__
from seamspec.conformance._contracts.dispatch_recorder import mutant_edges as edges
from seamspec.conformance._contracts.dispatch_recorder import mutant_executors as more
from seamspec.conformance._contracts.dispatch_recorder import mutant_journals as mj
from seamspec.conformance._contracts.dispatch_recorder import mutant_sweep13 as s13
from seamspec.conformance._contracts.dispatch_recorder.driver import (
    DispatchRecorderDriver,
    DispatchRecorderImplementation,
)
from seamspec.conformance._contracts.dispatch_recorder.outsiders import (
    batch1,
    batch3,
    batch4,
    batch5,
    batch6,
    batch7,
    batch8,
    batch9,
    batch10,
    batch11,
    batch12,
    batch13,
    batch14,
)
from seamspec.conformance._contracts.dispatch_recorder.reference_adapter import ReferenceDispatch
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    OK,
    ContextInjection,
    Decision,
    DispatchMutation,
    InputRewrite,
    JournalEntry,
    JournalRecorder,
    Message,
    MutationKind,
    RecorderBase,
    RecordError,
    RecordOutcome,
    Signer,
    ToolCall,
    ToolExecutor,
    ToolInvocation,
    Verification,
    run_turn,
)
from seamspec.reference._dispatch_recorder.journal_format import entry_hash, signed_bytes
from seamspec.reference._dispatch_recorder.turn_loop import CommitFailed

__all__ = ["MUTANTS", "DrMutant", "mutant_adapter"]


# --------------------------------------------------------------------------------------
# Executor mutants: each overrides one stage of the reference ToolExecutor.


class _ApplyBeforeRecord(ToolExecutor):
    """Applies a pre-dispatch mutation at once and records it after the tool ran."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | Any:
        mutation = self._pre_mutation(call, decision)
        if mutation is None:
            return await super()._prepare(call, decision)
        invocation = self._applied(call, mutation.kind)
        self._owed: DispatchMutation | None = mutation
        return invocation

    async def _run(self, invocation: ToolInvocation) -> str:
        result = await super()._run(invocation)
        owed = getattr(self, "_owed", None)
        if owed is not None:
            self._owed = None
            await self.record(owed)
        return result


class _RecordTwice(ToolExecutor):
    """Retries every successful record once more "to be safe": two entries per mutation."""

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        outcome = await super().record(mutation)
        return await super().record(mutation) if outcome == OK else outcome


class _RewriteRunsOriginal(ToolExecutor):
    """Records the rewrite, then runs the call with its original arguments."""

    def _applied(self, call: ToolCall, kind: MutationKind) -> ToolInvocation:
        if isinstance(kind, InputRewrite):
            return ToolInvocation(call.id, call.name, call.args)
        return super()._applied(call, kind)


class _FailOpen(ToolExecutor):
    """When a pre-dispatch record fails, runs the call as proposed instead of denying it."""

    kind: type = InputRewrite

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | Any:
        mutation = self._pre_mutation(call, decision)
        if mutation is None or not isinstance(mutation.kind, self.kind):
            return await super()._prepare(call, decision)
        outcome = await self.record(mutation)
        if isinstance(outcome, RecordError):
            return ToolInvocation(call.id, call.name, call.args)
        return self._applied(call, mutation.kind)


class _InjectFailOpen(_FailOpen):
    kind = ContextInjection


class _InjectNotPassed(ToolExecutor):
    """Records the injection and shows it to the model, but runs the tool without it."""

    def _applied(self, call: ToolCall, kind: MutationKind) -> ToolInvocation:
        if isinstance(kind, ContextInjection):
            return ToolInvocation(call.id, call.name, call.args)
        return super()._applied(call, kind)


class _RedactReleasesOriginal(ToolExecutor):
    """Records the redaction, then releases the original result anyway."""

    async def _release(self, call: ToolCall, result: str) -> tuple[str, tuple[str, ...]]:
        released, errors = await super()._release(call, result)
        return (result, errors) if not errors else (released, errors)


class _RedactFailReleasesOriginal(ToolExecutor):
    """When the redaction cannot be recorded, releases the original (fail open)."""

    async def _release(self, call: ToolCall, result: str) -> tuple[str, tuple[str, ...]]:
        released, errors = await super()._release(call, result)
        return (result, errors) if errors else (released, errors)


class _AbsentApplies(ToolExecutor):
    """With no recorder, applies mutations unrecorded instead of dropping them."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | Any:
        if self.recorder is None:
            self.recorder = _Yes()
            try:
                return await super()._prepare(call, decision)
            finally:
                self.recorder = None
        return await super()._prepare(call, decision)


class _Yes(RecorderBase):
    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        return OK


class _RecordsAllow(ToolExecutor):
    """Records every dispatch, allowed calls included, as a no-op rewrite."""

    def _pre_mutation(self, call: ToolCall, decision: Decision) -> DispatchMutation | None:
        found = super()._pre_mutation(call, decision)
        if found is None and self.recorder is not None:
            return DispatchMutation(call.id, call.name, InputRewrite(call.args, call.args))
        return found


class _RaiseIsOk(ToolExecutor):
    """Treats a recorder that raised as having recorded ("it probably got through")."""

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        outcome = await super().record(mutation)
        if isinstance(outcome, RecordError) and "raised" in outcome.reason:
            return OK
        return outcome


class _LateOkApplied(ToolExecutor):
    """Checks ``cancelled_caught`` instead of ``cancel_called``: a late OK is honoured."""

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        assert self.recorder is not None
        with anyio.move_on_after(self.record_time_limit) as limit:
            try:
                return await self.recorder.record(mutation)
            except Exception as error:
                return RecordError(repr(error))
        assert limit.cancelled_caught
        return RecordError("timed out")


class _CancelSwallowed(ToolExecutor):
    """Catches ``BaseException`` around ``record``: cancellation becomes a record error."""

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        try:
            return await super().record(mutation)
        except BaseException as error:
            return RecordError(f"record interrupted: {error!r}")


class _BothOneRecord(ToolExecutor):
    """Thinks one record covers a call: after a recorded pre-mutation, redacts unrecorded."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> ToolInvocation | Any:
        self._covered = self._pre_mutation(call, decision) is not None
        return await super()._prepare(call, decision)

    async def _release(self, call: ToolCall, result: str) -> tuple[str, tuple[str, ...]]:
        if getattr(self, "_covered", False):
            redacted = await self.policy.after_dispatch(call, result)
            return (result if redacted is None else redacted), ()
        return await super()._release(call, result)


# --------------------------------------------------------------------------------------
# Turn-loop mutants.


async def _loop(
    prompt: str, provider: Any, executor: ToolExecutor, *, mode: str
) -> Sequence[Message]:
    """A turn loop with one of three commit mistakes (see the mutant statements)."""
    messages = [Message("user", prompt)]
    pending: list[Message] | None = None
    for _ in range(64):
        step = await provider.next_step(tuple(messages))
        if pending is not None:  # "pipelined": commits the previous step only now
            await _commit_or_fail(executor, pending, mode)
            pending = None
        accepted = [Message("assistant", step.text, tool_calls=step.tool_calls)]
        for call in step.tool_calls:
            accepted.extend((await executor.execute(call)).messages)
        messages.extend(accepted)
        if executor.recorder is not None:
            if mode == "pipelined" and step.tool_calls:
                pending = accepted
            else:
                await _commit_or_fail(executor, accepted, mode)
        if not step.tool_calls:
            return messages
    return messages


async def _commit_or_fail(executor: ToolExecutor, accepted: list[Message], mode: str) -> None:
    recorder = executor.recorder
    assert recorder is not None
    if mode == "default-fails" and (
        type(recorder).commit_accepted_step is RecorderBase.commit_accepted_step
    ):
        raise CommitFailed(0, "the recorder supplies no durability barrier", accepted)
    try:
        outcome = await recorder.commit_accepted_step(accepted)
    except Exception:
        outcome = RecordError("raised")
    if isinstance(outcome, RecordError) and mode != "swallow":
        raise CommitFailed(0, outcome.reason, accepted)


# --------------------------------------------------------------------------------------
# Journal mutants.


class _JournalOkBeforeFsync(JournalRecorder):
    """Acknowledges each batch once it is written; the real fsync waits for ``close``."""

    _deferred_fsync: Callable[[int], None] = os.fsync

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        signer: Signer,
        *,
        fsync: Callable[[int], None] = os.fsync,
        workers: int | None = None,
    ) -> JournalRecorder:
        recorder = super().open(path, signer, fsync=lambda fd: None, workers=workers)
        assert isinstance(recorder, _JournalOkBeforeFsync)
        recorder._deferred_fsync = fsync
        return recorder

    def close(self) -> None:
        if self._fd >= 0:
            self._deferred_fsync(self._fd)
        super().close()


def _verify_without_chain(data: bytes, key: Ed25519PublicKey) -> Verification:
    """Checks each line's signature over its own ``seq`` and ``prev``, not the chain."""
    found = Verification()
    for index, line in enumerate(data.splitlines(keepends=True)):
        try:
            entry = json.loads(line)
            signed = signed_bytes(entry["seq"], entry["prev"], entry["mutation"])
            key.verify(bytes.fromhex(entry["sig"]), signed)
        except (ValueError, KeyError, TypeError, InvalidSignature):
            found.bad_index, found.reason = index, "bad entry"
            return found
        digest = entry_hash(signed)
        found.entries.append(JournalEntry(index, entry["prev"], entry["mutation"], digest, 0, 0))
    return found


# --------------------------------------------------------------------------------------
# The registry.

Verifier = Callable[[bytes, Ed25519PublicKey, "int | None", Path], Verification]


@dataclass(frozen=True)
class DrMutant:
    """One named bug: the rule it breaks, what it does wrong, and how to build it."""

    name: str
    rule: str
    statement: str
    executor: type[ToolExecutor] = ToolExecutor
    loop_mode: str | None = None
    turn: Callable[[str, Any, ToolExecutor, float | None], Awaitable[Sequence[Message]]] | None = (
        None
    )
    journal: type[Any] = JournalRecorder
    lax_verify: bool = False
    #: A replacement verifier: (journal bytes, public key, anchor, path) -> Verification.
    verifier: Verifier | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: Who wrote it: ``kit`` (against the reference) or ``outsider batch N`` (from the docs).
    origin: str = "kit"
    #: An outsider mutant is their own implementation with the bug, not the reference's.
    outsider: Callable[[], DispatchRecorderImplementation] | None = None

    def implementation(self) -> DispatchRecorderImplementation:
        if self.outsider is not None:
            return self.outsider()
        mutant = self

        class Implementation(ReferenceDispatch):
            executor = mutant.executor
            journal = mutant.journal

            async def loop(
                self, prompt: str, provider: Any, executor: ToolExecutor, limit: float | None
            ) -> Sequence[Message]:
                if mutant.turn is not None:
                    return await mutant.turn(prompt, provider, executor, limit)
                if mutant.loop_mode is None:
                    result = await run_turn(prompt, provider, executor, commit_time_limit=limit)
                    return result.messages
                return await _loop(prompt, provider, executor, mode=mutant.loop_mode)

            def verify_journal(
                self, path: Path, public_key: Ed25519PublicKey, *, expected_entries: int | None
            ) -> Verification:
                if mutant.lax_verify:
                    return _verify_without_chain(path.read_bytes(), public_key)
                if mutant.verifier is not None:
                    return mutant.verifier(path.read_bytes(), public_key, expected_entries, path)
                return super().verify_journal(path, public_key, expected_entries=expected_entries)

        return Implementation()


_JOURNAL_MUTANTS = (
    DrMutant("dr-journal-unsigned-lines", "DR-JOURNAL-FORMAT",
             "writes plain JSON lines, unsigned and unchained; its verifier compares the "
             "file with the copy it kept in memory", journal=mj.UnsignedLinesJournal,
             verifier=mj.verify_unsigned_lines),
    DrMutant("dr-journal-signs-without-domain", "DR-JOURNAL-FORMAT",
             "signs each entry without the domain-separation prefix (its verifier agrees)",
             journal=mj.UndomainedJournal, verifier=mj.verify_undomained),
    DrMutant("dr-journal-fsync-elsewhere", "DR-JOURNAL-DURABLE",
             "fsyncs a padding file next to the journal instead of the journal",
             journal=mj.FsyncElsewhereJournal),
    DrMutant("dr-journal-fsync-before-write", "DR-JOURNAL-DURABLE",
             "fsyncs the journal, then appends the entries and acknowledges them",
             journal=mj.FsyncBeforeWriteJournal),
    DrMutant("dr-journal-reopen-restarts-the-chain", "DR-JOURNAL-REOPEN",
             "opened on an existing journal, appends a new chain from sequence 0 after it",
             journal=mj.FreshChainJournal),
    DrMutant("dr-journal-reopen-keeps-a-torn-tail", "DR-JOURNAL-REOPEN",
             "opened on a journal that ends in a torn tail, appends after the torn bytes",
             journal=mj.KeepsTornTailJournal),
    DrMutant("dr-journal-reopen-writes-past-the-cut", "DR-JOURNAL-REOPEN",
             "cuts a torn tail off, then writes where its descriptor stands (not in append "
             "mode): at the old end of the file, leaving a hole of zero bytes",
             journal=mj.NoAppendModeJournal),
    DrMutant("dr-journal-reopen-cuts-away-damage", "DR-JOURNAL-REOPEN",
             "opened on a journal that does not verify, cuts it back to its last good "
             "entry and appends, hiding the damage", journal=mj.CutsDamageJournal),
    DrMutant("dr-journal-verify-skips-signatures", "DR-JOURNAL-VERIFY",
             "verification checks framing, sequence and chain but no signature",
             verifier=mj.verify_without_signatures),
    DrMutant("dr-journal-verify-accepts-undomained", "DR-JOURNAL-VERIFY",
             "verification also accepts a signature made without the domain prefix",
             verifier=mj.verify_accepting_undomained),
    DrMutant("dr-journal-verify-recanonicalises", "DR-JOURNAL-VERIFY",
             "verification re-encodes each entry canonically instead of checking its bytes",
             verifier=mj.verify_recanonicalised),
    DrMutant("dr-journal-verify-remembers", "DR-JOURNAL-VERIFY",
             "verification returns the mutations the journal remembers writing, not the "
             "ones the file holds", journal=mj.RememberingJournal,
             verifier=mj.verify_remembering),
    DrMutant("dr-journal-verify-loose-types", "DR-JOURNAL-VERIFY",
             "verification compares the sequence number by value, so `true` passes for 1",
             verifier=mj.verify_loose_types),
    DrMutant("dr-journal-verify-tail-always-torn", "DR-JOURNAL-VERIFY",
             "verification calls any final segment without a newline a torn tail, even a "
             "complete entry whose newline was replaced", verifier=mj.verify_any_tail_torn),
)  # fmt: skip

_SWEEP13_MUTANTS = (
    DrMutant("dr-recorder-reason-stripped", "DR-OUTCOME-TEXT",
             "strips the whitespace around a failed record's reason before quoting it in "
             "the denial", executor=s13.ReasonStripped),
    DrMutant("dr-commit-reason-stripped", "DR-COMMIT-FAIL",
             "strips the whitespace around a failed commit's reason in the turn's error",
             turn=s13.loop_commit_reason_stripped),
    DrMutant("dr-redaction-escapes-stripped", "DR-REDACT",
             "releases a recorded redaction through a terminal sanitiser (escape sequences "
             "and control characters removed)", executor=s13.RedactionEscapesStripped),
    DrMutant("dr-recorded-payload-sanitised", "DR-ONE-RECORD",
             "records a log-safe copy of each payload (escapes and control characters "
             "removed) and applies the payload as given", executor=s13.PayloadSanitised),
    DrMutant("dr-rewrite-args-sanitised", "DR-REWRITE",
             "runs a recorded rewrite with escapes and control characters removed from its "
             "new arguments", executor=s13.RewriteArgsSanitised),
    DrMutant("dr-approval-remembered-per-call-id", "DR-APPROVAL",
             "remembers an approval by call id, so a later step's call with the same id "
             "runs without the approver being asked", executor=s13.ApprovalRememberedPerCallId),
    DrMutant("dr-journal-verify-str-splitlines", "DR-JOURNAL-VERIFY",
             "verification reads the journal with str.splitlines, so U+2028 or U+0085 "
             "inside an entry looks like a torn tail", verifier=s13.verify_with_splitlines),
    DrMutant("dr-journal-reopen-str-splitlines", "DR-JOURNAL-REOPEN",
             "on reopening, looks for a torn tail with str.splitlines and cuts the file at "
             "an entry holding U+2028 or U+0085", journal=s13.SplitlinesReopenJournal),
    DrMutant("dr-journal-go-escapes", "DR-JOURNAL-FORMAT",
             "writes entries as Go's encoding/json does: <, >, &, U+2028 and U+2029 as "
             "\\u escapes, signed that way", journal=s13.GoEscapingJournal),
)  # fmt: skip

_ALL = (
    DrMutant("dr-apply-before-record", "DR-RECORD-FIRST",
             "runs the tool with the rewritten args first and records the rewrite afterwards",
             executor=_ApplyBeforeRecord),
    DrMutant("dr-record-twice", "DR-ONE-RECORD",
             "records every mutation twice (a retry after success)", executor=_RecordTwice),
    DrMutant("dr-rewrite-runs-original", "DR-REWRITE",
             "records the rewrite but runs the original arguments", executor=_RewriteRunsOriginal),
    DrMutant("dr-rewrite-fail-open", "DR-REWRITE-FAIL",
             "runs the call as proposed when the rewrite cannot be recorded", executor=_FailOpen),
    DrMutant("dr-inject-not-passed", "DR-INJECT",
             "records the injection but runs the tool without the context",
             executor=_InjectNotPassed),
    DrMutant("dr-inject-fail-open", "DR-INJECT-FAIL",
             "runs the call without context when the injection cannot be recorded",
             executor=_InjectFailOpen),
    DrMutant("dr-redact-releases-original", "DR-REDACT",
             "records the redaction, then releases the original result",
             executor=_RedactReleasesOriginal),
    DrMutant("dr-redact-fail-releases-original", "DR-REDACT-FAIL",
             "releases the original result when the redaction cannot be recorded",
             executor=_RedactFailReleasesOriginal),
    DrMutant("dr-absent-applies-mutations", "DR-ABSENT",
             "with no recorder, applies rewrites and injections unrecorded",
             executor=_AbsentApplies),
    DrMutant("dr-records-allow", "DR-NO-MUTATION",
             "records allowed calls too, as a rewrite to the same arguments",
             executor=_RecordsAllow),
    DrMutant("dr-raise-is-ok", "DR-RAISE",
             "treats a recorder that raised as a successful record", executor=_RaiseIsOk),
    DrMutant("dr-late-ok-applied", "DR-HANG",
             "honours an OK that arrives after the record time limit", executor=_LateOkApplied),
    DrMutant("dr-cancel-swallowed", "DR-CANCEL",
             "turns a cancellation during record into a record error and carries on",
             executor=_CancelSwallowed),
    DrMutant("dr-both-one-record", "DR-BOTH",
             "after a recorded pre-dispatch mutation, applies the redaction unrecorded",
             executor=_BothOneRecord),
    DrMutant("dr-commit-pipelined", "DR-COMMIT-BARRIER",
             "commits a step only after asking the provider for the next one",
             loop_mode="pipelined"),
    DrMutant("dr-commit-failure-swallowed", "DR-COMMIT-FAIL",
             "ignores a failed commit and carries on with the turn", loop_mode="swallow"),
    DrMutant("dr-commit-default-fails", "DR-COMMIT-DEFAULT",
             "treats a recorder without its own commit_accepted_step as a failed barrier",
             loop_mode="default-fails"),
    # The boundaries (mutant_executors.py).
    DrMutant("dr-limit-from-call-start", "DR-HANG",
             "starts one record clock per tool call, so a slow tool eats the redaction "
             "record's time", executor=more.LimitFromCallStart),
    DrMutant("dr-limit-per-turn", "DR-HANG",
             "gives all records of a turn one shared time budget", executor=more.LimitPerTurn),
    DrMutant("dr-limit-ignored", "DR-HANG",
             "puts no time limit on record at all", executor=more.LimitIgnored),
    DrMutant("dr-cancel-late-ok-applied", "DR-CANCEL",
             "applies a mutation whose record answered OK after the turn was cancelled",
             executor=more.CancelLateOkApplied),
    DrMutant("dr-commit-cancel-is-failure", "DR-CANCEL",
             "catches everything around the commit, so a cancelled commit ends the turn "
             "as a commit error", turn=more.loop_commit_cancel_is_failure),
    DrMutant("dr-raise-escapes", "DR-RAISE",
             "lets an exception from the recorder escape and end the turn",
             executor=more.RaiseEscapes),
    DrMutant("dr-retry-failed-record", "DR-ONE-RECORD",
             "retries a failed record once and applies the mutation if the retry works",
             executor=more.RetryFailedRecord),
    DrMutant("dr-record-canonical-json", "DR-ONE-RECORD",
             "records rewritten arguments re-serialised as canonical JSON, not verbatim",
             executor=more.RecordCanonicalJson),
    DrMutant("dr-empty-redaction-ignored", "DR-ONE-RECORD",
             "reads a redaction to the empty string as no redaction: unrecorded, raw result",
             executor=more.EmptyRedactionIgnored),
    DrMutant("dr-denies-unrecorded", "DR-ONE-RECORD",
             "denies every rewrite without asking the recorder", executor=more.DeniesUnrecorded),
    DrMutant("dr-rewrite-canonical-json", "DR-REWRITE",
             "runs the tool with the recorded new_args re-serialised as canonical JSON",
             executor=more.RewriteCanonicalJson),
    DrMutant("dr-redact-canonical-json", "DR-REDACT",
             "releases the recorded redaction re-serialised as canonical JSON",
             executor=more.RedactCanonicalJson),
    DrMutant("dr-blank-context-dropped", "DR-INJECT",
             "strips the recorded context, so whitespace-only context is never injected",
             executor=more.BlankContextDropped),
    DrMutant("dr-inject-unrecorded", "DR-RECORD-FIRST",
             "applies context injections without recording them", executor=more.InjectUnrecorded),
    DrMutant("dr-redacts-denials", "DR-BOTH",
             "runs the post-dispatch policy over denials and records a redaction of them",
             executor=more.RedactsDenials),
    DrMutant("dr-absent-withholds", "DR-ABSENT",
             "with no recorder, withholds results the policy wanted redacted",
             executor=more.AbsentWithholds),
    DrMutant("dr-approval-unwired-runs", "DR-APPROVAL",
             "with no approver wired, runs calls that need approval",
             executor=more.ApprovalUnwiredRuns),
    DrMutant("dr-denial-paraphrased", "DR-OUTCOME-TEXT",
             "words denials its own way, without the fixed prefix",
             executor=more.DenialParaphrased),
    DrMutant("dr-withheld-empty", "DR-OUTCOME-TEXT",
             "releases an empty result instead of the withheld notice",
             executor=more.WithheldEmpty),
    DrMutant("dr-commit-whole-transcript", "DR-COMMIT-STEP",
             "commits the whole transcript at every step, not the step's messages",
             turn=more.loop_commit_transcript),
    DrMutant("dr-commit-early", "DR-COMMIT-BARRIER",
             "commits each step as soon as the model answered, before its calls ran",
             turn=more.loop_commit_early),
    DrMutant("dr-final-step-uncommitted", "DR-COMMIT-FINAL",
             "does not commit the final answer step", turn=more.loop_final_uncommitted),
    # Findings nothing else reached (tests/dr_oracle_coverage.py).
    DrMutant("dr-denials-dropped", "DR-REWRITE-FAIL",
             "denies a call by leaving it out of the transcript, with no result at all",
             executor=more.DenialsDropped),
    DrMutant("dr-approval-inverted", "DR-APPROVAL",
             "reads the approver's answer the wrong way round", executor=more.ApprovalInverted),
    DrMutant("dr-approval-reason-injected", "DR-APPROVAL",
             "runs an approved call with the approval's reason as context",
             executor=more.ApprovalReasonInjected),
    DrMutant("dr-approval-speculative", "DR-APPROVAL",
             "starts the tool before the approver answers and drops the result if refused",
             executor=more.ApprovalSpeculative),
    DrMutant("dr-absent-denies-mutations", "DR-ABSENT",
             "with no recorder, denies calls the policy wanted to mutate",
             executor=more.AbsentDeniesMutations),
    DrMutant("dr-commit-prompt-first", "DR-COMMIT-STEP",
             "commits the user's prompt on its own before the first step",
             turn=more.loop_commit_prompt_first),
    DrMutant("dr-commit-late-ok-accepted", "DR-COMMIT-FAIL",
             "takes a commit's OK even when it came after the commit time limit",
             turn=more.loop_commit_late_ok),
    # Edges outsiders asked about (mutant_edges.py).
    DrMutant("dr-unchanged-rewrite-skipped", "DR-REWRITE-UNCHANGED",
             "skips the record of a rewrite to the call's own arguments and runs the call",
             executor=edges.UnchangedRewriteSkipped),
    DrMutant("dr-json-equal-rewrite-skipped", "DR-ONE-RECORD",
             "reads a rewrite to the same JSON value in other bytes as no rewrite: the "
             "original bytes run, unrecorded", executor=edges.JsonEqualRewriteSkipped),
    DrMutant("dr-cancel-waits-for-record", "DR-CANCEL",
             "shields each record from cancellation: a cancelled turn waits until the "
             "record answers or its time limit runs out", executor=edges.CancelWaitsForRecord),
    DrMutant("dr-approval-denial-without-reason", "DR-OUTCOME-TEXT",
             "denies a refused approval without the approval's reason",
             executor=edges.ApprovalDenialWithoutReason),
    DrMutant("dr-journal-ok-before-fsync", "DR-JOURNAL-DURABLE",
             "the journal returns OK once the entry is written, before any fsync",
             journal=_JournalOkBeforeFsync),
    DrMutant("dr-journal-verify-ignores-chain", "DR-JOURNAL-VERIFY",
             "verification checks each signature but not the chain or sequence",
             lax_verify=True),
    *_JOURNAL_MUTANTS,
    *_SWEEP13_MUTANTS,
)  # fmt: skip

_OUTSIDERS = (
    tuple(
        DrMutant(
            f"out-dr-{name.replace('_', '-')}",
            variant.rule,
            variant.statement,
            origin="outsider batch 1",
            outsider=functools.partial(batch1.implementation, name),
        )
        for name, variant in batch1.MUTANTS.items()
    )
    + tuple(
        DrMutant(
            f"out-dr-{name.replace('_', '-')}",
            variant.rule,
            variant.statement,
            origin="outsider batch 3",
            outsider=functools.partial(batch3.implementation, name),
        )
        for name, variant in batch3.MUTANTS.items()
    )
    # batches 4 on carry their own names (``out-dr4-...``, ``out-dr5-...``, ...)
    + tuple(
        DrMutant(
            name,
            variant.rule,
            variant.statement,
            origin=f"outsider batch {number}",
            outsider=functools.partial(batch.implementation, name),
        )
        for number, batch in (
            (4, batch4),
            (5, batch5),
            (6, batch6),
            (7, batch7),
            (8, batch8),
            (9, batch9),
            (10, batch10),
            (11, batch11),
            (12, batch12),
            (13, batch13),
            (14, batch14),
        )
        for name, variant in batch.MUTANTS.items()
    )
)

#: Every DR mutant by name: the kit's own, then each outsider batch.
MUTANTS: dict[str, DrMutant] = {mutant.name: mutant for mutant in (*_ALL, *_OUTSIDERS)}


def mutant_adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    """The named mutant as an adapter, built like the reference adapter."""
    mutant = MUTANTS[name]
    return PythonAdapter(
        name=f"seamspec-mutant-{name}",
        version=__version__,
        drivers=[DispatchRecorderDriver(mutant.implementation())],
        backend=backend,
        details={"mutant": name, "breaks": mutant.rule, "origin": mutant.origin},
    )
