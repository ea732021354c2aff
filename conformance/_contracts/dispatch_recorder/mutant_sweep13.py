"""Broken dispatch recorders that sweep 13 wrote before any outsider did: the edges a
harness author who reads only the contract page may "tidy" or read line by line.

A recorder's or a commit's reason stripped of its surrounding whitespace; terminal
escapes and control characters taken out of a redaction, a rewrite or a record; a
journal read with ``str.splitlines`` (which also splits at U+2028 and U+0085, both
written raw by the canonical form) when verifying or reopening it; a journal encoded the
way Go's ``encoding/json`` does (``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\u``
escapes); and an approval remembered by call id, which providers reuse from step to step.

Each is the reference with one plausible mistake, a few lines that *are* the bug;
``mutants.py`` registers them with the rule each one breaks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seamspec.reference import (
    Allow,
    ContextInjection,
    Decision,
    DispatchMutation,
    InputRewrite,
    JournalEntry,
    JournalRecorder,
    Message,
    MutationKind,
    RecordError,
    RecordOutcome,
    RequireApproval,
    ResultRedaction,
    Signer,
    ToolCall,
    ToolExecutor,
    ToolInvocation,
    Verification,
)
from seamspec.reference._dispatch_recorder.journal_format import (
    DOMAIN,
    JOURNAL_VERSION,
    _check_line,
    canonical,
    entry_hash,
    genesis_hash,
    may_be_entry,
)
from seamspec.reference._dispatch_recorder.journal_writer import JournalWriter, PendingEntry
from seamspec.reference._dispatch_recorder.turn_loop import (
    CommitFailed,
    ProviderStep,
    _commit,
)

__all__ = [
    "ApprovalRememberedPerCallId",
    "GoEscapingJournal",
    "PayloadSanitised",
    "ReasonStripped",
    "RedactionEscapesStripped",
    "RewriteArgsSanitised",
    "SplitlinesReopenJournal",
    "loop_commit_reason_stripped",
    "verify_with_splitlines",
]

#: What a terminal-output sanitiser removes: CSI and OSC escape sequences, then every C0
#: control character but tab, LF and CR, and DEL.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _sanitised(text: str) -> str:
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


class ReasonStripped(ToolExecutor):
    """Tidies a failed record's reason (``reason.strip()``) before quoting it in the denial:
    a signer's error that ends in a newline, or is indented, loses its whitespace."""

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        outcome = await super().record(mutation)
        if isinstance(outcome, RecordError):
            return RecordError(outcome.reason.strip())
        return outcome


class RedactionEscapesStripped(ToolExecutor):
    """Runs what the model sees through a terminal sanitiser: a recorded redaction is
    released without its escape sequences and control characters."""

    async def _release(self, call: ToolCall, result: str) -> tuple[str, tuple[str, ...]]:
        released, errors = await super()._release(call, result)
        return _sanitised(released), errors


class PayloadSanitised(ToolExecutor):
    """Records a "log-safe" copy of each mutation (control characters and escapes taken
    out, against log injection) and applies the mutation as the policy gave it."""

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        kind: MutationKind = mutation.kind
        if isinstance(kind, InputRewrite):
            kind = InputRewrite(_sanitised(kind.original_args), _sanitised(kind.new_args))
        elif isinstance(kind, ContextInjection):
            kind = ContextInjection(_sanitised(kind.context))
        elif isinstance(kind, ResultRedaction):
            kind = ResultRedaction(
                _sanitised(kind.original_result), _sanitised(kind.redacted_result)
            )
        return await super().record(
            DispatchMutation(mutation.tool_call_id, mutation.tool_name, kind)
        )


class RewriteArgsSanitised(ToolExecutor):
    """Records the rewrite as given, then hands the tool its new arguments without control
    characters and escapes ("so no policy can smuggle escapes into a shell")."""

    def _applied(self, call: ToolCall, kind: MutationKind) -> ToolInvocation:
        if isinstance(kind, InputRewrite):
            return ToolInvocation(call.id, call.name, _sanitised(kind.new_args))
        return super()._applied(call, kind)


class ApprovalRememberedPerCallId(ToolExecutor):
    """Asks the approver once per call id and remembers a yes for the rest of the turn, so a
    call whose id an earlier step's approved call had runs without being asked about."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> Any:
        approved: set[str] = self.__dict__.setdefault("_approved_ids", set())
        if isinstance(decision, RequireApproval):
            if call.id in approved:
                decision = Allow()
            elif self.approver is not None and await self.approver(call, decision.reason):
                approved.add(call.id)
                decision = Allow()
        return await super()._prepare(call, decision)


async def loop_commit_reason_stripped(
    prompt: str, provider: Any, executor: ToolExecutor, limit: float | None
) -> Sequence[Message]:
    """The reference loop, except that a failed commit's reason is ``strip()``-ed before it
    goes into the error the caller gets."""
    messages = [Message("user", prompt)]
    for index in range(64):
        step: ProviderStep = await provider.next_step(tuple(messages))
        accepted = [Message("assistant", step.text, tool_calls=step.tool_calls)]
        for call in step.tool_calls:
            accepted.extend((await executor.execute(call)).messages)
        messages.extend(accepted)
        if executor.recorder is not None:
            reason = await _commit(
                executor.recorder, accepted, float("inf") if limit is None else limit
            )
            if reason is not None:
                raise CommitFailed(index, reason.strip(), messages)
        if not step.tool_calls:
            return messages
    return messages


# --------------------------------------------------------------------------------------
# Journals read line by line with str.splitlines, and one encoded like Go's encoding/json.


def verify_with_splitlines(
    data: bytes, key: Ed25519PublicKey, expected_entries: int | None, path: Path
) -> Verification:
    """Reads the journal as text, line by line with ``str.splitlines(keepends=True)``: a
    line not ending in ``\\n`` is taken for the torn tail, which U+2028 and U+0085 inside
    an entry (raw in the canonical form) also make."""
    found = Verification()
    prev, pos = genesis_hash(key), 0
    for index, part in enumerate(data.decode("utf-8", "replace").splitlines(keepends=True)):
        if not part.endswith("\n"):  # judged as the reference judges a final segment
            found.bad_index, found.reason = index, "a tail without its newline"
            found.torn_tail = not may_be_entry(part.encode("utf-8"))
            return found
        line = part[:-1].encode("utf-8")
        checked = _check_line(line, index, prev, key)
        if isinstance(checked, str):
            found.bad_index, found.reason = index, checked
            return found
        entry, signed = checked
        prev = entry_hash(signed)
        found.entries.append(
            JournalEntry(index, entry["prev"], entry["mutation"], prev, pos, len(line) + 1)
        )
        pos += len(line) + 1
        found.valid_bytes = pos
    count = len(found.entries)
    if expected_entries is not None and count != expected_entries:
        found.bad_index, found.reason = min(count, expected_entries), "anchor"
    return found


class SplitlinesReopenJournal(JournalRecorder):
    """Opened on an existing file, reads it as :func:`verify_with_splitlines` does and cuts
    what that calls a torn tail: at an entry holding U+2028 or U+0085, that entry and
    everything after it (any other file it opens as the reference does)."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        signer: Signer,
        *,
        fsync: Any = os.fsync,
        workers: int | None = None,
    ) -> JournalRecorder:
        file = Path(path)
        if file.exists():
            found = verify_with_splitlines(file.read_bytes(), signer.public_key, None, file)
            if found.torn_tail:  # "the torn tail": cut it, as the reference cuts a real one
                os.truncate(file, found.valid_bytes)
        return super().open(path, signer, fsync=fsync, workers=workers)


def _go_escaped(data: bytes) -> bytes:
    """What Go's ``json.Marshal`` writes where Python's canonical form has raw characters."""
    for raw, escaped in (
        ("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
        ("\u2028", "\\u2028"), ("\u2029", "\\u2029"),
    ):  # fmt: skip
        data = data.replace(raw.encode("utf-8"), escaped.encode("ascii"))
    return data


class _GoEscapingWriter(JournalWriter):
    def submit(self, mutation: dict[str, object], call_soon: Any, on_done: Any) -> PendingEntry:
        with self._lock:
            if self.broken is not None or self._closed:
                return super().submit(mutation, call_soon, on_done)
            body = {
                "mutation": mutation,
                "prev": self.head,
                "seq": self.next_seq,
                "v": JOURNAL_VERSION,
            }
            signed = DOMAIN + _go_escaped(canonical(body))  # the bug: escaped, then signed
            entry = PendingEntry(self.next_seq, self.head, signed, call_soon, on_done)
            self.next_seq += 1
            self.head = entry_hash(signed)
            self._unwritten.append(entry)
            self._to_sign.put(entry)
        return entry


class GoEscapingJournal(JournalRecorder):
    """Signs and writes each entry as Go's ``encoding/json`` encodes it: ``<``, ``>``,
    ``&``, U+2028 and U+2029 as ``\\u`` escapes (valid JSON, the same values, other bytes)."""

    writer_type = _GoEscapingWriter
