"""Six broken variants of ``base5``, each with exactly one plausible bug.

Outsider batch 5 of the dispatch recorder (dr5), written before any of them was run
against the suite (the original ``b5dr_variants.py`` had sha256
e91a15d72bbbdfb64ce4896f80e01ba69c0d347d0aa640bba1c1e09efbc90cf1). Kept as written: only
imports, typing, the layout (ruff format) and the catalogue at the end (``VARIANTS`` maps
each name to its implementation instead of listing adapter factories) changed. Against
the suite of main b859591 (130 scenarios, 2026-12-02 07:53) two were killed properly
(``out-dr5-inject-denial-quotes-context`` under the default profile,
``out-dr5-cancel-commits-partial-step`` under the strict profile DR-CANCEL counts in) and
four survived; the scenarios named in ``docs/contracts/dispatch-recorder.md`` ("Outsider
mutants", batch 5) were written for them. Variants in ``PENDING`` are kept but not
registered as mutants yet; those in ``REJECTED`` are not bugs and never will be.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seamspec.conformance._contracts.dispatch_recorder.outsiders.base5 import (
    DENIED,
    Harness,
    Implementation,
    Journal,
    JournalError,
    Verdict,
    _maybe,
    make_adapter,
    scan,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import InjectContext, Message

# --- 1. a redaction that changes nothing is not sent to the signer --------------------


class NoopRedactionHarness(Harness):
    async def redact(self, call: Any, result: str, redacted: str) -> str:
        if redacted == result:  # nothing hidden, nothing to sign: skip the round trip
            return result
        return await super().redact(call, result, redacted)


class NoopRedactionImpl(Implementation):
    harness = NoopRedactionHarness


# --- 2. the denial of an unrecordable injection quotes the context --------------------


class QuotingHarness(Harness):
    def unrecorded(self, decision: Any, reason: str) -> str:
        if isinstance(decision, InjectContext):  # say which context, for whoever debugs it
            return (
                f"{DENIED}the context injection {decision.context!r} could not be "
                f"recorded: {reason}"
            )
        return super().unrecorded(decision, reason)


class QuotingImpl(Implementation):
    harness = QuotingHarness


# --- 3. a long recorder reason is cut short in the denial -----------------------------

REASON_LIMIT = 100


class TruncatingHarness(Harness):
    def unrecorded(self, decision: Any, reason: str) -> str:
        if len(reason) > REASON_LIMIT:  # keep the model's context small
            reason = reason[: REASON_LIMIT - 1] + "\u2026"
        return super().unrecorded(decision, reason)


class TruncatingImpl(Implementation):
    harness = TruncatingHarness


# --- 4. reopening cuts everything after the last newline ------------------------------


class CutToNewlineJournal(Journal):
    @staticmethod
    def recover(data: bytes, key: Ed25519PublicKey) -> Verdict:
        keep = data[: data.rfind(b"\n") + 1]  # an unterminated last line is a torn write
        found = scan(keep, key)
        if not found.ok:
            raise JournalError(f"the journal is damaged at entry {found.bad_index}: {found.reason}")
        found.torn_tail = len(keep) != len(data)
        found.good_bytes = len(keep)
        return found


class CutToNewlineImpl(Implementation):
    journal = CutToNewlineJournal


# --- 5. an anchor of 0 entries is taken as "no anchor" ---------------------------------


def _missed_truthy(count: int, expected_entries: int | None) -> bool:
    return bool(expected_entries) and count != expected_entries


class ZeroAnchorImpl(Implementation):
    def verify_journal(
        self, path: Path, public_key: Ed25519PublicKey, *, expected_entries: int | None = None
    ) -> Verdict:
        return scan(Path(path).read_bytes(), public_key, expected_entries, missed=_missed_truthy)


# --- 6. a cancelled step is committed on the way out ----------------------------------


class SaveOnCancelHarness(Harness):
    async def run(self, prompt: str, max_steps: int = 64) -> list[Message]:
        transcript = [Message("user", prompt)]
        for index in range(max_steps):
            step = await _maybe(self.provider.next_step(list(transcript)))
            calls = tuple(step.tool_calls or ())
            messages = [Message("assistant", step.text, tool_calls=calls)]
            try:
                for call in calls:
                    messages.extend(await self.dispatch(call))
            except anyio.get_cancelled_exc_class():
                # Keep what the step did so far, so that the turn can be resumed.
                if self.recorder is not None:
                    with anyio.CancelScope(shield=True):
                        try:  # noqa: SIM105 (kept as written)
                            await self.commit(index, list(messages))
                        except Exception:
                            pass
                raise
            transcript.extend(messages)
            if self.recorder is not None:
                await self.commit(index, list(messages))
            if not calls:
                return transcript
        raise RuntimeError(f"the turn did not finish within {max_steps} steps")


class SaveOnCancelImpl(Implementation):
    harness = SaveOnCancelHarness


#: Labels changed when the batch was taken in, with why. The bug is the same.
RELABELLED: dict[str, str] = {
    # Upstream does not say whether a redaction that changes nothing is a mutation (seed
    # 004 l.25, l.29), as it does not for a rewrite; seamspec records both
    # (DR-REWRITE-UNCHANGED, DR-REDACT-UNCHANGED), so skipping it breaks seamspec's rule.
    "out-dr5-noop-redaction-unrecorded": "DR-REDACT-UNCHANGED",
}

_WRITTEN: tuple[tuple[str, str, str, type[Implementation]], ...] = (
    (
        "out-dr5-noop-redaction-unrecorded",
        "DR-ONE-RECORD",
        "A redaction whose redacted_result equals the original result is released without a "
        "record call, because the author saw nothing to hide and skipped the signer round trip.",
        NoopRedactionImpl,
    ),
    (
        "out-dr5-inject-denial-quotes-context",
        "DR-INJECT-FAIL",
        "The denial of a context injection that could not be recorded quotes the context it "
        "failed to inject, because the author wanted the error to say which injection failed; "
        "the unrecorded context so reaches the model.",
        QuotingImpl,
    ),
    (
        "out-dr5-long-reason-truncated",
        "DR-OUTCOME-TEXT",
        "A recorder reason longer than 100 characters is cut to 99 plus an ellipsis in the "
        "denial text, because the author keeps tool results short for the model's context.",
        TruncatingImpl,
    ),
    (
        "out-dr5-reopen-cuts-unterminated-entry",
        "DR-JOURNAL-REOPEN",
        "Reopening a journal cuts everything after the last newline, so a complete, possibly "
        "acknowledged last entry that lost its newline is destroyed like a torn tail, because "
        "the author's crash recovery treats any unterminated line as an interrupted write.",
        CutToNewlineImpl,
    ),
    (
        "out-dr5-anchor-zero-ignored",
        "DR-JOURNAL-VERIFY",
        "The verifier checks the anchor with `if expected_entries and ...`, so an anchor of 0 "
        "entries is read as no anchor and a journal with entries appended to an empty one "
        "verifies.",
        ZeroAnchorImpl,
    ),
    (
        "out-dr5-cancel-commits-partial-step",
        "DR-CANCEL",
        "When the turn is cancelled during a call's record, the loop commits the step's "
        "messages so far in a shielded block before re-raising, because the author wants a "
        "cancelled turn to be resumable from what it had done.",
        SaveOnCancelImpl,
    ),
)


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its implementation."""

    name: str
    rule: str
    statement: str
    implementation: Implementation


#: Every variant of the batch by its own name (``out-dr5-...``), as written.
VARIANTS: dict[str, Variant] = {
    name: Variant(name, RELABELLED.get(name, rule), statement, impl())
    for name, rule, statement, impl in _WRITTEN
}

#: Variants kept but not yet registered as mutants (no scenario kills them yet), with why.
PENDING: dict[str, str] = {}

#: Variants that are not bugs (upstream and seamspec allow what they do), with why; kept
#: here, never registered as mutants.
REJECTED: dict[str, str] = {}


def implementation(name: str) -> Implementation:
    """The implementation of variant ``name``, as the DR driver wants one."""
    return VARIANTS[name].implementation


def adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    return make_adapter(VARIANTS[name].implementation, f"outsider-{name}", backend=backend)


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
