"""Six broken variants of ``base10``, each with exactly one plausible bug.

Outsider batch 10 of the dispatch recorder (dr10), written before any of them was run
against the suite (the original ``b10dr_variants.py`` had sha256
866d825c555251a807c8f6f94d66ff3b4b0fe4534afe40b32914fb7febca13d0). Kept as written: only
imports, typing, the layout (ruff format) and the catalogue at the end (``VARIANTS`` maps
each name to its harness instead of listing adapter factories, and the module's ``V_*``
adapters are gone: ``adapter(name)`` builds one) changed. Against the suite of main
2439341 (2026-12-02) one was killed properly (``out-dr10-inject-fail-names-context``) and
five survived (``out-dr10-verify-genesis-unchecked``, ``out-dr10-reopen-one-read``,
``out-dr10-approval-reason-repr``, ``out-dr10-empty-final-dropped``,
``out-dr10-redaction-original-raw-error``); the scenarios named in
``docs/contracts/dispatch-recorder.md`` ("Outsider mutants", batch 10) were written for
them. Variants in ``PENDING`` are kept but not registered as mutants yet; those in
``REJECTED`` are not bugs and never will be.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.outsiders import base10 as base
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import DispatchMutation, Message, ResultRedaction

# ----------------------------------------------------------------------------- 1 verify


def _verify_chain_from_file(
    path: Any, public_key: Any, *, expected_entries: int | None = None
) -> base.Verdict:
    """Checks every link between entries, but takes the chain's start from entry 0's own
    ``prev`` ("entry 0 has no previous entry to compare with") instead of the key's
    genesis hash."""
    data = Path(path).read_bytes()
    start = None
    first = data.split(b"\n", 1)[0]
    try:
        entry = json.loads(first)
        if isinstance(entry, dict) and isinstance(entry.get("prev"), str):
            start = entry["prev"]
    except ValueError:
        pass
    return base.scan(data, public_key, expected_entries, start=start)


class VerifyGenesisUnchecked(base.Implementation):
    def verify_journal(
        self, path: Any, public_key: Any, *, expected_entries: int | None = None
    ) -> base.Verdict:
        return _verify_chain_from_file(path, public_key, expected_entries=expected_entries)


# ----------------------------------------------------------------------------- 2 reopen


class OneReadJournal(base.Journal):
    @staticmethod
    def _read_existing(fd: int) -> bytes:
        # "A journal is small": one read of up to 1 MiB, taken to be the whole file.
        return os.read(fd, 1 << 20)


class ReopenOneRead(base.Implementation):
    journal_class = OneReadJournal


# ----------------------------------------------------------------------------- 3 text


class ApprovalReprExecutor(base.Executor):
    def approval_denial(self, reason: str) -> str:
        return base.DENIED + f"approval required and not given ({reason!r})"


class ApprovalReasonRepr(base.Implementation):
    executor_class = ApprovalReprExecutor


# ----------------------------------------------------------------------------- 4 final


class DropEmptyResponseExecutor(base.Executor):
    def response_messages(self, step: Any, calls: tuple[Any, ...]) -> list[Message]:
        # Provider APIs reject an assistant message with neither text nor tool calls.
        if not step.text and not calls:
            return []
        return [Message("assistant", step.text, None, calls)]


class EmptyFinalDropped(base.Implementation):
    executor_class = DropEmptyResponseExecutor


# ----------------------------------------------------------------------------- 5 inject


class NamingDenialExecutor(base.Executor):
    def unrecorded_denial(self, what: str, payload: str, attempt: base._Attempt) -> str:
        # Helpful: say which context could not be recorded.
        if what == "the context injection":
            return (
                base.DENIED
                + f"the context injection ({payload}) could not be recorded: "
                + attempt.reason
            )
        return super().unrecorded_denial(what, payload, attempt)


class InjectFailNamesContext(base.Implementation):
    executor_class = NamingDenialExecutor


# ----------------------------------------------------------------------------- 6 record


class RawFailureExecutor(base.Executor):
    def redaction_mutation(
        self, call: Any, result: str, redacted: str, failure: Exception | None
    ) -> DispatchMutation:
        # The journal keeps the tool's own output: for a tool that raised, its message.
        original = str(failure) if failure is not None else result
        return DispatchMutation(call.id, call.name, ResultRedaction(original, redacted))


class RedactionOriginalRawError(base.Implementation):
    executor_class = RawFailureExecutor


_WRITTEN: tuple[tuple[str, str, str, type[base.Implementation]], ...] = (
    (
        "out-dr10-verify-genesis-unchecked",
        "DR-JOURNAL-VERIFY",
        "The verifier checks every link between entries but starts the chain from entry 0's "
        "own prev field instead of the key's genesis hash, so an entry 0 re-signed with a "
        "different prev (and the rest re-chained) verifies.",
        VerifyGenesisUnchecked,
    ),
    (
        "out-dr10-reopen-one-read",
        "DR-JOURNAL-REOPEN",
        "Opening an existing journal reads it with a single os.read of up to 1 MiB, so a "
        "journal larger than that looks like it ends in a torn tail and is cut at the last "
        "newline inside the first MiB, destroying acknowledged entries.",
        ReopenOneRead,
    ),
    (
        "out-dr10-approval-reason-repr",
        "DR-OUTCOME-TEXT",
        "A refused or unwired approval's denial quotes the RequireApproval reason with repr(), "
        "which contains the reason verbatim only when it has no backslash, line break, "
        "control character or both kinds of quote.",
        ApprovalReasonRepr,
    ),
    (
        "out-dr10-empty-final-dropped",
        "DR-COMMIT-FINAL",
        "A final answer with empty text is dropped (no assistant message, as provider APIs "
        "reject empty ones), so that step has no messages and is never committed.",
        EmptyFinalDropped,
    ),
    (
        "out-dr10-inject-fail-names-context",
        "DR-INJECT-FAIL",
        "The denial of an injection whose record failed names the context it could not "
        "record, so the unrecorded context reaches the model through the denial text.",
        InjectFailNamesContext,
    ),
    (
        "out-dr10-redaction-original-raw-error",
        "DR-ONE-RECORD",
        "For a tool that raised, the redaction record's original_result is str(error), the "
        "raw exception message, not the failure text the policy was asked about and the "
        "redaction replaced.",
        RedactionOriginalRawError,
    ),
)

#: Rules changed from what the outsider wrote, with why (none).
RELABELLED: dict[str, str] = {}


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its harness."""

    name: str
    rule: str
    statement: str
    implementation: base.Implementation


#: Every variant of the batch by its own name (``out-dr10-...``), as written.
VARIANTS: dict[str, Variant] = {
    name: Variant(name, RELABELLED.get(name, rule), statement, cls())
    for name, rule, statement, cls in _WRITTEN
}

#: Variants kept but not yet registered as mutants (no scenario kills them yet), with why.
PENDING: dict[str, str] = {}

#: Variants that are not bugs (upstream and seamspec allow what they do), with why; kept
#: here, never registered as mutants.
REJECTED: dict[str, str] = {}


def implementation(name: str) -> base.Implementation:
    """The harness of variant ``name``, as the DR driver wants one."""
    return VARIANTS[name].implementation


def adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    return base.make_adapter(VARIANTS[name].implementation, name, backend=backend)


#: The variants registered as mutants (under their own names): all but pending and rejected.
MUTANTS = {n: v for n, v in VARIANTS.items() if n not in PENDING and n not in REJECTED}

__all__ = [
    "MUTANTS",
    "PENDING",
    "REJECTED",
    "RELABELLED",
    "VARIANTS",
    "Variant",
    "adapter",
    "implementation",
]
