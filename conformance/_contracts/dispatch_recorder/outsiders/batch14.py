"""Six broken variants of ``base14``, each with exactly one plausible bug.

Outsider batch 14 of the dispatch recorder (b14dr), written before any of them was run
against the suite (the original ``b14dr_variants.py`` had sha256
5fad3738a1d14406c2ec5fc3f1c6562eed2c4ea4047e6c8d40a648aa1cb3b7f6; its own docstring: "the
base (b14dr_base) with exactly one plausible bug each"). Kept as written: only imports,
annotations, the layout (ruff format) and the catalogue at the end (``VARIANTS`` maps each
name to a ``Variant`` with its harness class instead of listing (name, rule, statement)
triples, and the module's ``V_*`` factories are gone: ``adapter(name)`` and
``implementation(name)`` build a fresh harness, as each factory did) changed.

First try: written from the docs of main ecbade0 and judged against the suite of the same
main, four were killed properly (``out-b14dr-reason-splitlines`` by
``dr-outcome-text-of-a-non-ascii-recorder-reason``,
``out-b14dr-original-args-first-seen`` by ``dr-record-first-a-reused-call-id-is-recorded-again``,
``out-b14dr-verify-cache-by-size`` by ``dr-journal-edited-version-detected``,
``out-b14dr-verify-sig-any-case`` by ``dr-journal-uppercase-sig-detected``); two survived
(``out-b14dr-redaction-bom-dropped``, ``out-b14dr-verify-universal-newlines``), and the
scenarios written for them before this import (main e87df1d, named in
``docs/contracts/dispatch-recorder.md``, "Outsider mutants", batch 14) kill them now.
Variants in ``PENDING`` are kept but not registered as mutants yet; those in ``REJECTED``
are not bugs and never will be.
"""

from __future__ import annotations

import os
import string
from dataclasses import dataclass
from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.outsiders.base14 import (
    PREFIX,
    BaseTurnLoop,
    make_adapter,
    raw_key,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import ToolCall


class ReasonSplitlines(BaseTurnLoop):
    """Normalises the recorder's reason to one line-ending style for the model."""

    def unrecorded_text(self, what: str, reason: str) -> str:
        tidy = "\n".join(reason.splitlines())  # CRLF/CR/U+2028 -> LF, trailing newline gone
        return PREFIX + f"the {what} could not be recorded: " + tidy


class RedactionBomDropped(BaseTurnLoop):
    """Strips a leading byte-order mark from a released redaction (a utf-8-sig habit)."""

    def release_redacted(self, text: str) -> str:
        return text[1:] if text.startswith("\ufeff") else text


class OriginalArgsFirstSeen(BaseTurnLoop):
    """Takes a rewrite's original_args from the turn-wide map of proposals (filled with
    setdefault, "the first proposal is the real one"), so a call ID reused by a later
    step records the first step's arguments."""

    def original_args(self, call: ToolCall, state: dict[tuple[str, str], str]) -> str:
        return state.get(("args", call.id), call.args)


class VerifyCacheBySize(BaseTurnLoop):
    """Caches verdicts by (path, size, key, anchor): the journal is append-only, so "the
    same size means the same file"; an in-place edit that keeps the size is missed."""

    def __init__(self) -> None:
        self._verdicts: dict[Any, Any] = {}

    def verify_journal(
        self, path: Any, public_key: Any, *, expected_entries: int | None = None
    ) -> Any:
        key = (str(path), os.stat(path).st_size, raw_key(public_key), expected_entries)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = super().verify_journal(path, public_key, expected_entries=expected_entries)
            self._verdicts[key] = verdict
        return verdict


class VerifyUniversalNewlines(BaseTurnLoop):
    """Reads the journal in text mode (undecodable bytes kept by surrogateescape), whose
    universal newlines turn a CR or CRLF into LF before the lines are split."""

    def read_journal(self, path: Any) -> bytes:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read().encode("utf-8", "surrogateescape")


class VerifySigAnyCase(BaseTurnLoop):
    """Checks a signature's form as 128 hex digits of either case, so a line whose `sig`
    was rewritten in upper case (not canonical) still verifies."""

    def sig_ok(self, sig: Any) -> bool:
        return isinstance(sig, str) and len(sig) == 128 and all(c in string.hexdigits for c in sig)


#: Each variant's harness class, as the outsider wrote it.
_CLASSES: dict[str, type[BaseTurnLoop]] = {
    "out-b14dr-reason-splitlines": ReasonSplitlines,
    "out-b14dr-redaction-bom-dropped": RedactionBomDropped,
    "out-b14dr-original-args-first-seen": OriginalArgsFirstSeen,
    "out-b14dr-verify-cache-by-size": VerifyCacheBySize,
    "out-b14dr-verify-universal-newlines": VerifyUniversalNewlines,
    "out-b14dr-verify-sig-any-case": VerifySigAnyCase,
}


#: The variants as the outsider listed them: (name, rule as written, statement).
_WRITTEN: list[tuple[str, str, str]] = [
    (
        "out-b14dr-reason-splitlines",
        "DR-OUTCOME-TEXT",
        "The denial for an unrecordable mutation rebuilds the recorder's reason with "
        "'\\n'.join(reason.splitlines()), so CRLF, a lone CR, U+2028/U+2029/U+0085 and a "
        "trailing newline are changed or lost.",
    ),
    (
        "out-b14dr-redaction-bom-dropped",
        "DR-REDACT",
        "A recorded redaction is released with a leading U+FEFF stripped (as a utf-8-sig "
        "decode would), so a redaction starting with a BOM is not released verbatim.",
    ),
    (
        "out-b14dr-original-args-first-seen",
        "DR-ONE-RECORD",
        "A rewrite's original_args come from a turn-wide map keyed by call ID filled with "
        "setdefault, so a later step reusing the ID records the first step's arguments.",
    ),
    (
        "out-b14dr-verify-cache-by-size",
        "DR-JOURNAL-VERIFY",
        "The verifier caches its verdict by (path, size, key, anchor), so a tampering that "
        "keeps the file's size (a flipped byte, swapped entries) after a first verify gets "
        "the cached 'valid' verdict.",
    ),
    (
        "out-b14dr-verify-universal-newlines",
        "DR-JOURNAL-VERIFY",
        "The verifier reads the journal in text mode, so universal newlines turn a CR or "
        "CRLF into LF and a final newline replaced by CR, or CRLF line ends, read as valid.",
    ),
    (
        "out-b14dr-verify-sig-any-case",
        "DR-JOURNAL-VERIFY",
        "The verifier checks `sig` as 128 hex digits of either case (string.hexdigits) and "
        "decodes it with bytes.fromhex, so an upper-case signature is accepted.",
    ),
]

assert [v[0] for v in _WRITTEN] == list(_CLASSES)


#: Rules changed from what the outsider wrote, with why (none: each variant breaks the
#: rule its author named, and the scenario that kills it cites that rule).
RELABELLED: dict[str, str] = {}


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its harness class."""

    name: str
    rule: str
    statement: str
    harness: type[BaseTurnLoop]


#: Every variant of the batch by its own name (``out-b14dr-...``), as written.
VARIANTS: dict[str, Variant] = {
    name: Variant(name, RELABELLED.get(name, rule), statement, _CLASSES[name])
    for name, rule, statement in _WRITTEN
}

#: Variants kept but not yet registered as mutants (no scenario kills them yet), with why
#: (none: four were killed on the first try, and the two survivors have killers since
#: main e87df1d).
PENDING: dict[str, str] = {}

#: Variants that are not bugs (upstream and seamspec allow what they do), with why; kept
#: here, never registered as mutants.
REJECTED: dict[str, str] = {}


def implementation(name: str) -> BaseTurnLoop:
    """A fresh harness of variant ``name``, as the DR driver wants one (a new one each time,
    as the original's factories built one per adapter: the size cache is per harness)."""
    return VARIANTS[name].harness()


def adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    return make_adapter(implementation(name), name=name, backend=backend)


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
