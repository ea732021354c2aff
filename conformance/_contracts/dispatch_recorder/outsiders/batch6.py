"""Six broken variants of ``base6``, each with exactly one plausible bug.

Outsider batch 6 of the dispatch recorder (dr6), written before any of them was run
against the suite (the original ``b6dr_variants.py`` had sha256
d4d45e2cdaffa4211654f5b0eb389ff71367aacbf59b5dce2193de9c6f3b1400). Kept as written: only
imports, typing, the layout (ruff format) and the catalogue at the end (``VARIANTS`` maps
each name to its implementation instead of listing adapter factories, and the module's
``V_*`` adapters are gone: ``adapter(name)`` builds one) changed. Against the suite of
main f94b013 (138 scenarios, 2026-12-02) one was killed properly
(``out-dr6-inject-fail-quotes-context``, by the inject-fail scenarios' check that the
context reaches the model nowhere) and five survived (``out-dr6-verify-extra-field``,
``out-dr6-verify-version-float``, ``out-dr6-reopen-cuts-tail-first``,
``out-dr6-final-commit-unbounded``, ``out-dr6-deny-reason-stripped``); the scenarios named
in ``docs/contracts/dispatch-recorder.md`` ("Outsider mutants", batch 6) were written for
them. Variants in ``PENDING`` are kept but not registered as mutants yet; those in
``REJECTED`` are not bugs and never will be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.outsiders.base6 import (
    DENIED,
    FIELDS,
    Harness,
    Implementation,
    Journal,
    JournalRefused,
    Verifier,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# --------------------------------------------------------------------------------------
# 1. DR-JOURNAL-VERIFY: the field check only asks that the five fields be present.
# --------------------------------------------------------------------------------------


class ExtraFieldVerifier(Verifier):
    def fields_problem(self, entry: dict[str, Any]) -> bool:
        # "every entry must have mutation, prev, seq, sig and v": a subset test, so an
        # entry carrying an extra top-level field (outside the signed body) still reads.
        return not FIELDS <= set(entry)  # noqa: SIM300 (kept as written)


class ExtraFieldImpl(Implementation):
    verifier_class = ExtraFieldVerifier


# --------------------------------------------------------------------------------------
# 2. DR-JOURNAL-VERIFY: the version is compared by value, so 2.0 passes for 2.
# --------------------------------------------------------------------------------------


class VersionFloatVerifier(Verifier):
    @staticmethod
    def version_ok(v: Any) -> bool:
        # `seq` got its type check after the `true`-as-1 story; `v` is compared by value,
        # so a correctly signed entry whose version is the float 2.0 reads as version 2.
        same: bool = v == 2
        return same


class VersionFloatImpl(Implementation):
    verifier_class = VersionFloatVerifier


# --------------------------------------------------------------------------------------
# 3. DR-JOURNAL-REOPEN: a torn tail is cut off before the rest is checked for damage.
# --------------------------------------------------------------------------------------


class CutFirstJournal(Journal):
    @classmethod
    def resume(
        cls, fd: int, data: bytes, key: Any, fsync: Any, verifier: Verifier
    ) -> tuple[int, str]:
        # "First undo the crash, then verify": an unterminated tail that cannot be a
        # whole entry is cut at once, and only then are the entries checked. A damaged
        # journal ending in a torn tail is refused, but no longer as it was left.
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            if not verifier.may_be_entry(data[keep:]):
                cls.cut(fd, keep, fsync)
                data = data[:keep]
        verdict = verifier.scan(data, key, None)
        if verdict.ok:
            return verdict.lines, verdict.head
        raise JournalRefused(f"the journal does not verify: {verdict.reason}")


class CutFirstImpl(Implementation):
    journal_class = CutFirstJournal


# --------------------------------------------------------------------------------------
# 4. DR-COMMIT-FAIL: the final step's commit runs without the commit time limit.
# --------------------------------------------------------------------------------------


class FinalCommitUnboundedHarness(Harness):
    def commit_limit(self, final: bool) -> float | None:
        # "The limit keeps a hung barrier from holding the next provider call; after the
        # final answer there is none, so let the last commit take the time it needs."
        return None if final else self.commit_time_limit


class FinalCommitUnboundedImpl(Implementation):
    harness_class = FinalCommitUnboundedHarness


# --------------------------------------------------------------------------------------
# 5. DR-OUTCOME-TEXT: a policy's deny reason is stripped of surrounding whitespace.
# --------------------------------------------------------------------------------------


class DenyStripHarness(Harness):
    def deny_text(self, reason: str) -> str:
        # Policy reasons often come from YAML block scalars with a trailing newline.
        return DENIED + reason.strip()


class DenyStripImpl(Implementation):
    harness_class = DenyStripHarness


# --------------------------------------------------------------------------------------
# 6. DR-INJECT-FAIL: the denial of an unrecordable injection quotes the context.
# --------------------------------------------------------------------------------------


class InjectQuoteHarness(Harness):
    def inject_failed_text(self, context: str, reason: str) -> str:
        # A "helpful" denial that says which injection could not be recorded: the
        # context thereby reaches the model after all.
        return DENIED + f"the context injection {context!r} could not be recorded: " + reason


class InjectQuoteImpl(Implementation):
    harness_class = InjectQuoteHarness


#: Labels changed when the batch was taken in, with why. The bug is the same.
RELABELLED: dict[str, str] = {}

_WRITTEN: tuple[tuple[str, str, str, type[Implementation]], ...] = (
    (
        "out-dr6-verify-extra-field",
        "DR-JOURNAL-VERIFY",
        "The verifier checks that the five fields are present rather than that they are "
        "exactly the entry's keys, so an entry with an extra, unsigned top-level field "
        "verifies.",
        ExtraFieldImpl,
    ),
    (
        "out-dr6-verify-version-float",
        "DR-JOURNAL-VERIFY",
        "The verifier compares the version by value only, so a correctly signed entry "
        "with v 2.0 is accepted.",
        VersionFloatImpl,
    ),
    (
        "out-dr6-reopen-cuts-tail-first",
        "DR-JOURNAL-REOPEN",
        "On open the journal cuts a torn tail before checking the entries for damage, so "
        "a damaged journal ending in a torn tail is refused but not left as it was.",
        CutFirstImpl,
    ),
    (
        "out-dr6-final-commit-unbounded",
        "DR-COMMIT-FAIL",
        "The commit time limit is not applied to the final step's commit, so a hung "
        "final commit holds the turn instead of stopping it with an error.",
        FinalCommitUnboundedImpl,
    ),
    (
        "out-dr6-deny-reason-stripped",
        "DR-OUTCOME-TEXT",
        "A Deny's reason is stripped of leading and trailing whitespace in the denial "
        "text, which must be exactly the prefix and the policy's reason.",
        DenyStripImpl,
    ),
    (
        "out-dr6-inject-fail-quotes-context",
        "DR-INJECT-FAIL",
        "The denial for an injection that could not be recorded quotes the context "
        "(repr), so the context reaches the model.",
        InjectQuoteImpl,
    ),
)


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its implementation."""

    name: str
    rule: str
    statement: str
    implementation: Implementation


#: Every variant of the batch by its own name (``out-dr6-...``), as written.
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
    return make_adapter(VARIANTS[name].implementation, name, backend=backend)


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
