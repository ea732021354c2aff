"""Six broken variants of ``base11``, each with exactly one plausible bug.

Outsider batch 11 of the dispatch recorder (dr11), written before any of them was run
against the suite (the original ``b11dr_variants.py`` had sha256
fc2caeda2d2d7056da8b18c0db51959ce90d959727f46c98a4878f27f6d91928). Kept as written: only
imports, typing, the layout (ruff format) and the catalogue at the end (``VARIANTS`` maps
each name to its implementation instead of listing adapter factories, and the module's
``V_*`` adapters are gone: ``adapter(name)`` builds one) changed. Against the suite of main
e41a630 (2026-12-02) none was killed properly: all six survived
(``out-dr11-verify-sig-dollar``, ``out-dr11-fsync-error-ignored``,
``out-dr11-reopen-cuts-replaced-newline``, ``out-dr11-redaction-nfc``,
``out-dr11-long-approval-reason-cut``, ``out-dr11-commit-raise-hides-cancel``); the
scenarios named in ``docs/contracts/dispatch-recorder.md`` ("Outsider mutants", batch 11)
were written for them. Variants in ``PENDING`` are kept but not registered as mutants yet;
those in ``REJECTED`` are not bugs and never will be.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel

from seamspec.conformance._contracts.dispatch_recorder.outsiders import base11 as base
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import Message, RecordError, RecordOk

# --------------------------------------------------------------------------- 1
# DR-JOURNAL-VERIFY: the signature's hex check is written as re.match("^...$"), and "$"
# also matches just before a trailing newline. bytes.fromhex skips whitespace, so an
# entry whose `sig` was edited to end in "\n" (escaped in the canonical line) verifies.


class DollarSigVerifier(base.Verifier):
    def sig_format_ok(self, sig: Any) -> bool:
        return isinstance(sig, str) and re.match(r"^[0-9a-f]{128}$", sig) is not None


class SigDollarImpl(base.Implementation):
    verifier = DollarSigVerifier()


# --------------------------------------------------------------------------- 2
# DR-JOURNAL-DURABLE: an fsync that fails is logged and ignored ("some filesystems give
# EINVAL"), and the record still returns OK although the entry is not durable.


class FsyncErrorIgnoredJournal(base.Journal):
    def sync(self, fd: int) -> None:
        try:  # noqa: SIM105 (kept as written)
            self.fsync(fd)
        except OSError:
            pass  # fsync unsupported here (EINVAL); the write itself went through


class FsyncIgnoredImpl(base.Implementation):
    journal_class = FsyncErrorIgnoredJournal


# --------------------------------------------------------------------------- 3
# DR-JOURNAL-REOPEN: on reopening, the tail is taken for a whole entry only if it parses
# as JSON as it stands; a last entry whose newline was replaced by another byte does not,
# so it is cut off as a torn tail instead of being kept (moved whole) or refused.


class ReplacedNewlineCutJournal(base.Journal):
    def tail_may_be_entry(self, tail: bytes) -> bool:
        try:
            return isinstance(json.loads(tail), dict)
        except ValueError:
            return False


class ReopenCutsReplacedNewlineImpl(base.Implementation):
    journal_class = ReplacedNewlineCutJournal


# --------------------------------------------------------------------------- 4
# DR-REDACT: a recorded redaction's text is NFC-normalised before it is released (the
# record carries the policy's text verbatim), so a redaction holding decomposed
# characters (e + U+0301) reaches the model in other bytes than the journal says.


class NfcRedactionHarness(base.Harness):
    def release_redaction(self, redacted: str) -> str:
        return unicodedata.normalize("NFC", redacted)


class RedactionNfcImpl(base.Implementation):
    harness_class = NfcRedactionHarness


# --------------------------------------------------------------------------- 5
# DR-OUTCOME-TEXT: the approval reason (capped for the human approval prompt) is reused
# for the model's denial, so a refused approval whose reason is over 1024 characters is
# cut short with an ellipsis instead of being quoted verbatim.

APPROVAL_REASON_CAP = 1024


class ApprovalReasonCutHarness(base.Harness):
    def approval_denial(self, reason: str) -> str:
        if len(reason) > APPROVAL_REASON_CAP:
            reason = reason[:APPROVAL_REASON_CAP] + "\u2026"
        return "approval required and not given: " + reason


class ApprovalReasonCutImpl(base.Implementation):
    harness_class = ApprovalReasonCutHarness


# --------------------------------------------------------------------------- 6
# DR-CANCEL: when commit_accepted_step raises, the turn is stopped with the error at
# once; unlike the answer paths, the raise path forgets to look for a pending
# cancellation first, so a deaf commit that raises after the turn was cancelled ends the
# turn with an error instead of cancelled.


class CommitRaiseHidesCancelHarness(base.Harness):
    async def commit(self, n: int, messages: tuple[Message, ...]) -> None:
        commit = getattr(self.recorder, "commit_accepted_step", None)
        if commit is None:
            return
        limit = self.commit_time_limit
        outcome: Any = None
        timed_out = False
        prefix = f"step {n} could not be committed, so the turn stopped: "
        try:
            if limit is None:
                outcome = await commit(messages)
            else:
                with anyio.move_on_after(limit) as scope:
                    outcome = await commit(messages)
                timed_out = scope.cancel_called
        except Exception as error:
            raise base.TurnStopped(prefix + f"commit_accepted_step raised {error!r}") from error
        await anyio.lowlevel.checkpoint_if_cancelled()
        if timed_out:
            raise base.TurnStopped(prefix + f"commit_accepted_step did not answer within {limit} s")
        if isinstance(outcome, RecordOk):
            return
        if isinstance(outcome, RecordError):
            raise base.TurnStopped(prefix + outcome.reason)
        raise base.TurnStopped(prefix + f"commit_accepted_step answered {outcome!r}")


class CommitRaiseHidesCancelImpl(base.Implementation):
    harness_class = CommitRaiseHidesCancelHarness


_WRITTEN: tuple[tuple[str, str, str, type[base.Implementation]], ...] = (
    (
        "out-dr11-verify-sig-dollar",
        "DR-JOURNAL-VERIFY",
        "The verifier checks `sig` with re.match('^[0-9a-f]{128}$'), whose '$' matches before "
        "a trailing newline, and bytes.fromhex skips whitespace, so an entry whose sig was "
        "edited to end in a newline still verifies.",
        SigDollarImpl,
    ),
    (
        "out-dr11-fsync-error-ignored",
        "DR-JOURNAL-DURABLE",
        "An fsync of the journal that raises OSError is swallowed and the record returns OK "
        "although its entry never became durable.",
        FsyncIgnoredImpl,
    ),
    (
        "out-dr11-reopen-cuts-replaced-newline",
        "DR-JOURNAL-REOPEN",
        "On reopening, the recorder keeps an unterminated tail only if it parses as JSON as "
        "it stands, so a last entry whose newline was replaced by another byte is cut off "
        "as a torn tail instead of being moved whole or refused.",
        ReopenCutsReplacedNewlineImpl,
    ),
    (
        "out-dr11-redaction-nfc",
        "DR-REDACT",
        "A recorded redaction is NFC-normalised before release, so a redacted result with "
        "decomposed characters reaches the model in other bytes than were recorded.",
        RedactionNfcImpl,
    ),
    (
        "out-dr11-long-approval-reason-cut",
        "DR-OUTCOME-TEXT",
        "A refused approval's denial quotes the RequireApproval reason capped at 1024 "
        "characters plus an ellipsis, so a longer reason is not given verbatim.",
        ApprovalReasonCutImpl,
    ),
    (
        "out-dr11-commit-raise-hides-cancel",
        "DR-CANCEL",
        "When commit_accepted_step raises, the harness stops the turn with an error without "
        "first checking for a pending cancellation, so a deaf commit raising after a cancel "
        "ends the turn with an error instead of cancelled.",
        CommitRaiseHidesCancelImpl,
    ),
)

#: Rules changed from what the outsider wrote, with why (none).
RELABELLED: dict[str, str] = {}


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its implementation."""

    name: str
    rule: str
    statement: str
    implementation: base.Implementation


#: Every variant of the batch by its own name (``out-dr11-...``), as written.
VARIANTS: dict[str, Variant] = {
    name: Variant(name, RELABELLED.get(name, rule), statement, cls())
    for name, rule, statement, cls in _WRITTEN
}

#: Variants kept but not yet registered as mutants (no scenario kills them yet), with why
#: (none left: ``out-dr11-fsync-error-ignored`` waited for ``fsync_fails``).
PENDING: dict[str, str] = {}

#: Variants that are not bugs (upstream and seamspec allow what they do), with why; kept
#: here, never registered as mutants.
REJECTED: dict[str, str] = {}


def implementation(name: str) -> base.Implementation:
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
