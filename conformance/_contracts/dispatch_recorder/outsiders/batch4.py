"""Six broken variants of ``base4``, each with exactly one plausible bug.

Outsider batch 4 of the dispatch recorder (dr4), written before any of them was run
against the suite (the original ``b4dr4_variants.py`` had sha256
511ec16702087dd81032a1078b5e9a17f40784cb2c4ff325b1e1526446d27174). Kept as written: only
imports, typing and the catalogue at the end (``VARIANTS`` maps each name to its harness
instead of listing adapter factories) changed. Against the suite of 2026-12-02 05:30 (121
scenarios) one was killed properly (``out-dr4-anchor-ignores-extra-entries``, under the
strict profile DR-JOURNAL-VERIFY counts in) and five survived; the scenarios named in
``docs/contracts/dispatch-recorder.md`` ("Outsider mutants") were written for them.
Variants still in ``PENDING`` are kept but not registered as mutants yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.dispatch_recorder.outsiders.base4 import (
    Executor,
    Implementation,
    Journal,
    JournalCorrupt,
    Scan,
    make_adapter,
    raw_public_key,
    scan,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import DispatchMutation, Message, ToolCall


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its harness."""

    name: str
    rule: str
    statement: str
    harness: Implementation


# --------------------------------------------------------------------------------------
# 1. DR-ONE-RECORD: a record that raised a transport error is retried once.
# --------------------------------------------------------------------------------------


class RetryTransientExecutor(Executor):
    """A signer behind a network hop sometimes drops a connection; the author retries a
    record once when the recorder raised an OSError (ConnectionError, TimeoutError,
    BrokenPipeError, ...), within the same time limit. A retry that succeeds applies a
    mutation whose first record failed, and the signer may have recorded it twice."""

    TRANSIENT = (OSError,)

    async def record(self, mutation: DispatchMutation) -> tuple[bool, str]:
        recorder = self.recorder

        async def with_retry() -> Any:
            try:
                return await recorder.record(mutation)
            except self.TRANSIENT:
                await anyio.sleep(0.005)  # a short back-off, then one more try
                return await recorder.record(mutation)

        return await self._call_recorder(with_retry, self.record_time_limit)


class RetryTransientImplementation(Implementation):
    executor_class = RetryTransientExecutor


# --------------------------------------------------------------------------------------
# 2. DR-REDACT-FAIL: a failed tool's text is released when its redaction fails.
# --------------------------------------------------------------------------------------


class FailureTextReleasedExecutor(Executor):
    """The author reasons that ``[tool failed] ...`` is the harness's own text, not the
    tool's output, so withholding it when its redaction cannot be recorded would only
    hide an error from the model. But the failure text quotes the exception, which may
    hold the secret the policy meant to redact."""

    def withheld(self, result: str, tool_raised: bool) -> str:
        if tool_raised:
            return result
        return super().withheld(result, tool_raised)


class FailureTextReleasedImplementation(Implementation):
    executor_class = FailureTextReleasedExecutor


# --------------------------------------------------------------------------------------
# 3. DR-COMMIT-STEP: the list handed to commit_accepted_step is cleared afterwards.
# --------------------------------------------------------------------------------------


class ReusedStepBufferExecutor(Executor):
    """The turn keeps one ``pending`` buffer for the step being built, hands it to
    ``commit_accepted_step`` and clears it once the commit returned OK, to reuse it for
    the next step. A recorder that keeps the list it was given (to write it out with its
    next group commit, or to resume from) finds it empty, or holding a later step's
    messages: upstream hands the recorder its own ``Vec<Message>``."""

    async def run(self, prompt: str) -> list[Message]:
        transcript: list[Message] = [Message(role="user", content=prompt)]
        pending: list[Message] = []
        step = 0
        while True:
            response = await self.provider.next_step(list(transcript))
            calls = tuple(response.tool_calls)
            pending.append(Message(role="assistant", content=response.text, tool_calls=calls))
            for call in calls:
                pending.extend(await self.dispatch(call))
            transcript.extend(pending)
            await self.commit(step, pending)
            pending.clear()
            if not calls:
                return transcript
            step += 1


class ReusedStepBufferImplementation(Implementation):
    executor_class = ReusedStepBufferExecutor


# --------------------------------------------------------------------------------------
# 4. DR-JOURNAL-REOPEN: a journal that holds only a torn tail is refused.
# --------------------------------------------------------------------------------------


class TornOnlyRefusedJournal(Journal):
    """The author read "damaged in entry 0: refused, not cut to nothing" as "never cut a
    journal to nothing", so a file whose only content is a torn first entry (the
    harness crashed during its very first append, which was never acknowledged) is
    refused instead of cut off and continued: the harness cannot start again."""

    @classmethod
    def check_existing(cls, scanned: Scan, path: Path) -> None:
        if scanned.torn_tail and not scanned.entries:
            raise JournalCorrupt(f"{path}: no complete entry to continue from; refusing")
        super().check_existing(scanned, path)


class TornOnlyRefusedImplementation(Implementation):
    journal_class = TornOnlyRefusedJournal


# --------------------------------------------------------------------------------------
# 5. DR-JOURNAL-VERIFY: the anchor detects missing entries, not extra ones.
# --------------------------------------------------------------------------------------


class AnchorLowerBoundImplementation(Implementation):
    """The author thinks of the anchor as protection against truncation only ("at least
    N entries must be there"), so a journal with correctly signed entries appended past
    the anchor (by whoever holds the key) verifies."""

    def verify_journal(
        self, path: Path, public_key: Any, *, expected_entries: int | None = None
    ) -> Scan:
        found = scan(Path(path).read_bytes(), raw_public_key(public_key), None)
        if expected_entries is not None and found.ok and len(found.entries) < expected_entries:
            found.bad_index = len(found.entries)
            found.reason = (
                f"the journal holds {len(found.entries)} entries, expected {expected_entries}"
            )
        return found


# --------------------------------------------------------------------------------------
# 6. DR-REWRITE: a rewrite to the empty string runs the original arguments.
# --------------------------------------------------------------------------------------


class EmptyRewriteFallsBackExecutor(Executor):
    """``new_args or call.args``: the author treats an empty rewrite as "keep the
    arguments". The rewrite to ``""`` is recorded, then the tool runs with the original
    arguments the policy meant to replace, and the signed entry says otherwise."""

    def effective_args(self, call: ToolCall, new_args: str) -> str:
        return new_args or call.args


class EmptyRewriteFallsBackImplementation(Implementation):
    executor_class = EmptyRewriteFallsBackExecutor


#: Labels changed when the batch was taken in, with why. The bug is the same.
RELABELLED: dict[str, str] = {}

_WRITTEN: tuple[tuple[str, str, str, type[Implementation]], ...] = (
    (
        "out-dr4-retry-transient-record-error",
        "DR-ONE-RECORD",
        "A record that raised an OSError (ConnectionError, TimeoutError, ...) is retried "
        "once within the same time limit, so a failed record can still authorise its "
        "mutation.",
        RetryTransientImplementation,
    ),
    (
        "out-dr4-failure-text-not-withheld",
        "DR-REDACT-FAIL",
        "When the tool raised and the redaction of its failure text cannot be recorded, "
        "the unredacted failure text (which may quote a secret) is released instead of "
        "the withheld notice.",
        FailureTextReleasedImplementation,
    ),
    (
        "out-dr4-commit-list-cleared-after-commit",
        "DR-COMMIT-STEP",
        "The list handed to commit_accepted_step is the turn's reusable step buffer and is "
        "cleared right after the commit returns, so a recorder that keeps it holds an "
        "empty (or later) step.",
        ReusedStepBufferImplementation,
    ),
    (
        "out-dr4-torn-only-journal-refused",
        "DR-JOURNAL-REOPEN",
        "A journal whose only content is a torn first entry is refused as damaged instead "
        "of having the torn tail cut off and being continued from genesis.",
        TornOnlyRefusedImplementation,
    ),
    (
        "out-dr4-anchor-ignores-extra-entries",
        "DR-JOURNAL-VERIFY",
        "The verifier's anchor (expected_entries) only detects a journal with fewer "
        "entries, so correctly signed entries appended past the anchor verify.",
        AnchorLowerBoundImplementation,
    ),
    (
        "out-dr4-empty-rewrite-runs-original",
        "DR-REWRITE",
        "A recorded rewrite whose new_args is the empty string runs the tool with the "
        "original arguments (new_args or call.args).",
        EmptyRewriteFallsBackImplementation,
    ),
)

#: Every variant of the batch by its own name (``out-dr4-...``), as written.
VARIANTS: dict[str, Variant] = {
    name: Variant(name, RELABELLED.get(name, rule), statement, harness())
    for name, rule, statement, harness in _WRITTEN
}

#: Variants kept but not yet registered as mutants (no scenario kills them yet), with why.
PENDING: dict[str, str] = {}


def implementation(name: str) -> Implementation:
    """The harness of variant ``name``, as the DR driver wants an implementation."""
    return VARIANTS[name].harness


def adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    return make_adapter(VARIANTS[name].harness, f"outsider-{name}", backend=backend)


#: The variants registered as mutants (under their own names): all but the pending ones.
MUTANTS = {name: v for name, v in VARIANTS.items() if name not in PENDING}

__all__ = ["MUTANTS", "PENDING", "RELABELLED", "VARIANTS", "Variant", "adapter", "implementation"]
