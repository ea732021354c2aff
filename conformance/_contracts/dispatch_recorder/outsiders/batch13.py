"""Six broken variants of ``base13``, each with exactly one plausible bug.

Outsider batch 13 of the dispatch recorder (b13dr), written before any of them was run
against the suite (the original ``b13dr_variants.py`` had sha256
91e9d4d552fdbfb6f7106efb78da884853c2345a84cc1f889513a7a1f15f5020). Kept as written: only
imports, annotations, the layout (ruff format) and the catalogue at the end (``VARIANTS``
maps each name to a ``Variant`` with its harness instead of listing (name, rule,
statement) triples, and the module's ``V_*`` adapters are gone: ``adapter(name)`` builds
one) changed.

First try: written from the docs of main 79cf702 and judged against the suite of main
fcf826a, none was killed properly: all six survived. Then the blind DR sweep 13 (main
479addc, written without seeing this batch) killed three properly
(``out-b13dr-approval-memo-by-call-id``, ``out-b13dr-verify-splitlines``,
``out-b13dr-journal-js-safe-separators``); three survived
(``out-b13dr-reopen-text-mode``, ``out-b13dr-results-sorted-by-call-id``,
``out-b13dr-cancelled-tool-commits-partial-step``), and the triage's scenarios named in
``docs/contracts/dispatch-recorder.md`` ("Outsider mutants", batch 13) were written for
them. Variants in ``PENDING`` are kept but not registered as mutants yet; those in
``REJECTED`` are not bugs and never will be.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from seamspec.conformance._contracts.dispatch_recorder.outsiders import base13 as base
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import Message, ToolInvocation

# ------------------------------------------------------------------------------
# 1. An approval memo keyed by call id: the approver is not asked again for a call
#    whose id an earlier, approved call of the turn had (providers reuse ids).


class _ApprovalMemoTurn(base.Turn):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.approved_ids: set[str] = set()

    async def ask_approval(self, call: Any, reason: str) -> bool:
        if self.approver is None:
            return False
        if call.id in self.approved_ids:  # "don't nag the human twice for one call"
            return True
        approved = await super().ask_approval(call, reason)
        if approved:
            self.approved_ids.add(call.id)
        return approved


class _ApprovalMemoHarness(base.Harness):
    turn_class = _ApprovalMemoTurn


# ------------------------------------------------------------------------------
# 2. The verifier splits the journal with str.splitlines(), which also breaks lines
#    at U+2028, U+2029 and U+0085 that canonical JSON leaves raw inside strings.


def _split_text_lines(data: bytes) -> tuple[list[bytes], bytes]:
    text = data.decode("utf-8", "surrogateescape")
    parts = text.splitlines()
    tail = ""
    if text and not text.endswith("\n") and parts:
        tail = parts.pop()
    encode: Callable[[str], bytes] = lambda s: s.encode("utf-8", "surrogateescape")  # noqa: E731
    return [encode(p) for p in parts], encode(tail)


class _SplitlinesVerifyHarness(base.Harness):
    def verify_journal(
        self, path: Any, public_key: Any, *, expected_entries: int | None = None
    ) -> base.Verdict:
        return base.scan(
            self.read_for_verify(path), public_key, expected_entries, splitter=_split_text_lines
        )


# ------------------------------------------------------------------------------
# 3. Reopening reads the existing journal in text mode (strict UTF-8, universal
#    newlines): a torn tail cut inside a multi-byte character makes the decode fail
#    and the journal is refused; a final newline overwritten by "\r" reads as whole.


class _TextModeReopenJournal(base.Journal):
    def read_existing(self) -> bytes:
        try:
            return self.path.read_text(encoding="utf-8").encode("utf-8")
        except FileNotFoundError:
            return b""


class _TextModeReopenHarness(base.Harness):
    journal_class = _TextModeReopenJournal


# ------------------------------------------------------------------------------
# 4. The journal writer escapes U+2028 / U+2029 as \u2028 / \u2029 ("JS-safe" lines,
#    as Go's encoding/json does); values, signature and chain are unchanged, but the
#    line is no longer canonical(entry).


class _JsSafeJournal(base.Journal):
    def encode_line(self, entry: dict[str, Any]) -> bytes:
        line = base.canonical(entry)
        line = line.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")
        return line + b"\n"


class _JsSafeHarness(base.Harness):
    journal_class = _JsSafeJournal


# ------------------------------------------------------------------------------
# 5. The step's results are put in tool_call_id order (assumes ids like call_0,
#    call_1 sort in proposal order) in both the transcript and the commit.


class _SortedResultsTurn(base.Turn):
    def assemble(
        self, assistant: Message, groups: list[tuple[str, list[Message]]]
    ) -> list[Message]:
        return super().assemble(assistant, sorted(groups, key=lambda group: group[0]))


class _SortedResultsHarness(base.Harness):
    turn_class = _SortedResultsTurn


# ------------------------------------------------------------------------------
# 6. A turn cancelled while a tool runs commits, shielded, what the step finished so
#    far (the assistant message and the earlier calls' results), "so a resumed turn
#    does not run those tools again", and then lets the cancellation propagate.


class _PartialCommitTurn(base.Turn):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tool_interrupted = False

    async def run_tool(self, invocation: ToolInvocation) -> str:
        try:
            return await super().run_tool(invocation)
        except anyio.get_cancelled_exc_class():
            self.tool_interrupted = True
            raise

    async def on_step_abandoned(
        self, assistant: Message, groups: list[tuple[str, list[Message]]]
    ) -> None:
        if not self.tool_interrupted or self.recorder is None:
            return
        with anyio.CancelScope(shield=True):
            try:  # noqa: SIM105
                await self.commit(self.assemble(assistant, groups))
            except Exception:
                pass


class _PartialCommitHarness(base.Harness):
    turn_class = _PartialCommitTurn


# ------------------------------------------------------------------------------

#: What the outsider wrote: (name, rule, statement), in their order.
_WRITTEN: list[tuple[str, str, str]] = [
    (
        "out-b13dr-approval-memo-by-call-id",
        "DR-APPROVAL",
        "The executor remembers the ids of calls the approver approved in this turn and runs "
        "a later call with the same id (providers reuse ids from step to step) without "
        "asking the approver again.",
    ),
    (
        "out-b13dr-verify-splitlines",
        "DR-JOURNAL-VERIFY",
        "The verifier splits the file with str.splitlines(), which also breaks at U+2028, "
        "U+2029 and U+0085 left raw inside canonical JSON strings, so a valid journal whose "
        "mutation holds one is reported damaged.",
    ),
    (
        "out-b13dr-reopen-text-mode",
        "DR-JOURNAL-REOPEN",
        "Reopening reads the existing journal in text mode (strict UTF-8, universal newlines), "
        "so a torn tail cut inside a multi-byte character makes it refuse a journal it must "
        "continue, and a final newline overwritten by a carriage return reads as a whole "
        "entry that it appends after.",
    ),
    (
        "out-b13dr-journal-js-safe-separators",
        "DR-JOURNAL-FORMAT",
        "The journal writer escapes U+2028 and U+2029 as \\u2028 and \\u2029 to keep lines "
        "JS-safe, so an entry holding one is not written canonically (values, signature and "
        "chain unchanged).",
    ),
    (
        "out-b13dr-results-sorted-by-call-id",
        "DR-COMMIT-STEP",
        "The step's context and tool messages are put in tool_call_id order, not proposal "
        "order, in the transcript and the commit (right only while ids sort as proposed).",
    ),
    (
        "out-b13dr-cancelled-tool-commits-partial-step",
        "DR-COMMIT-STEP",
        "When the turn is cancelled while a tool runs, the harness commits, shielded, the "
        "unfinished step (the assistant message and the earlier calls' results) before the "
        "cancellation propagates.",
    ),
]

#: Each variant's harness class, as the outsider wrote it.
_HARNESSES: dict[str, type[base.Harness]] = {
    "out-b13dr-approval-memo-by-call-id": _ApprovalMemoHarness,
    "out-b13dr-verify-splitlines": _SplitlinesVerifyHarness,
    "out-b13dr-reopen-text-mode": _TextModeReopenHarness,
    "out-b13dr-journal-js-safe-separators": _JsSafeHarness,
    "out-b13dr-results-sorted-by-call-id": _SortedResultsHarness,
    "out-b13dr-cancelled-tool-commits-partial-step": _PartialCommitHarness,
}


#: Rules changed from what the outsider wrote, with why.
RELABELLED: dict[str, str] = {
    # Upstream's DR-COMMIT-STEP asks that a commit hold the step's messages in transcript
    # order, which the variant keeps (it sorts both alike); in what order a step's results
    # join the transcript is seamspec's decision, stated in DR-CONTEXT-PLACE.
    "out-b13dr-results-sorted-by-call-id": "DR-CONTEXT-PLACE",
    # What a turn cancelled while a tool runs may commit is not upstream's to say (the
    # seed has no cancellation: a dropped Rust future just stops); the bug is a commit
    # after the caller cancelled, which seamspec's DR-CANCEL forbids, and the oracle
    # names DR-CANCEL for it.
    "out-b13dr-cancelled-tool-commits-partial-step": "DR-CANCEL",
}


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its harness."""

    name: str
    rule: str
    statement: str
    implementation: base.Harness


#: Every variant of the batch by its own name (``out-b13dr-...``), as written.
VARIANTS: dict[str, Variant] = {
    name: Variant(name, RELABELLED.get(name, rule), statement, _HARNESSES[name]())
    for name, rule, statement in _WRITTEN
}

#: Variants kept but not yet registered as mutants (no scenario kills them yet), with why
#: (none left: the triage's scenarios kill the three that survived sweep 13).
PENDING: dict[str, str] = {}

#: Variants that are not bugs (upstream and seamspec allow what they do), with why; kept
#: here, never registered as mutants.
REJECTED: dict[str, str] = {}


def implementation(name: str) -> base.Harness:
    """The harness of variant ``name``, as the DR driver wants one."""
    return VARIANTS[name].implementation


def adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    return base.make_adapter(VARIANTS[name].implementation, name=name, backend=backend)


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
