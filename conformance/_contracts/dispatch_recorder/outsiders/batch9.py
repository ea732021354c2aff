"""Six broken variants of ``base9``, each with exactly one plausible bug.

Outsider batch 9 of the dispatch recorder (dr9), written before any of them was run
against the suite (the original ``b9dr_variants.py`` had sha256
84cf20a58f16a31ba4866975e2b71a9e88495432988a6efec33a94c646839bda). Kept as written: only
imports, typing, the layout (ruff format) and the catalogue at the end (``VARIANTS`` maps
each name to its harness instead of listing adapter factories, and the module's ``V_*``
adapters are gone: ``adapter(name)`` builds one) changed. Against the suite of main
d694025 (2026-12-02) none was killed properly: all six survived
(``out-dr9-tool-name-casefolded``, ``out-dr9-commit-reason-ascii``,
``out-dr9-no-commit-for-toolless-turn``, ``out-dr9-context-carries-to-later-calls``,
``out-dr9-redacted-crlf-normalised``, ``out-dr9-redaction-error-hides-cancel``); the
scenarios named in ``docs/contracts/dispatch-recorder.md`` ("Outsider mutants", batch 9)
were written for them. Variants in ``PENDING`` are kept but not registered as mutants yet;
those in ``REJECTED`` are not bugs and never will be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel

from seamspec.conformance._contracts.dispatch_recorder.outsiders.base9 import (
    WITHHELD,
    OutsiderTurnLoop,
    _Failed,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import DispatchMutation, RecordError, RecordOk, ResultRedaction


# 1. DR-ONE-RECORD: the registry's canonical (case-folded) tool name goes into the record.
class ToolNameCasefolded(OutsiderTurnLoop):
    def _mutation(self, call: Any, kind: Any) -> DispatchMutation:
        # "Tools are looked up case-insensitively; audit entries use the canonical name."
        return DispatchMutation(call.id, call.name.casefold(), kind)


# 2. DR-COMMIT-FAIL: the surfaced commit error is forced to ASCII ("safe for log lines").
class CommitReasonAscii(OutsiderTurnLoop):
    def _commit_reason(self, reason: str) -> str:
        # Line breaks and quotes survive; only non-ASCII characters become "?".
        return reason.encode("ascii", "replace").decode("ascii")


# 3. DR-COMMIT-FINAL: a turn whose first answer is final commits nothing
#    ("no tool ran, nothing happened that needs a durability barrier").
class NoCommitForToolLessTurn(OutsiderTurnLoop):
    def _should_commit(self, *, final: bool, any_calls: bool) -> bool:
        return not (final and not any_calls)


# 4. DR-RECORD-FIRST: injected contexts are kept in one list per step, so every later
#    call of the step also runs with an earlier call's (never for it recorded) context.
class ContextCarriesToLaterCalls(OutsiderTurnLoop):
    def _invocation_context(
        self, step_state: dict[str, Any], own: tuple[str, ...]
    ) -> tuple[str, ...]:
        step_state["contexts"].extend(own)
        return tuple(step_state["contexts"])


# 5. DR-REDACT: the released redacted text goes through the harness's line-ending
#    normaliser (CRLF and lone CR become LF); the record carries it verbatim.
class RedactedLineEndingsNormalised(OutsiderTurnLoop):
    async def _release(
        self, call: Any, result: str, *, policy: Any, recorder: Any, limit: float | None
    ) -> str:
        redacted: str | None = await policy.after_dispatch(call, result)
        if redacted is None or recorder is None:
            return result
        mutation = self._mutation(call, ResultRedaction(result, redacted))
        outcome = await self._record_redaction(recorder, mutation, limit)
        if isinstance(outcome, _Failed):
            return WITHHELD
        return redacted.replace("\r\n", "\n").replace("\r", "\n")


# 6. DR-CANCEL: the redaction path looks for a pending cancellation only before it
#    releases a redacted text ("withholding is always safe, so a failure needs no
#    check"): a deaf redaction record that answers an error after the turn was
#    cancelled withholds the result and the turn carries on to its commit.
class RedactionErrorHidesCancel(OutsiderTurnLoop):
    async def _record_redaction(
        self, recorder: Any, mutation: DispatchMutation, limit: float | None
    ) -> RecordOk | _Failed:
        deadline = anyio.current_time() + limit if limit is not None else float("inf")
        outcome: Any = None
        try:
            with anyio.move_on_at(deadline):
                outcome = await recorder.record(mutation)
        except Exception as error:
            return _Failed(f"recorder raised {error!r}")
        if anyio.current_time() >= deadline:
            return _Failed(f"record timed out after {limit} s")
        if isinstance(outcome, RecordError):
            return _Failed(outcome.reason)
        if not isinstance(outcome, RecordOk):
            return _Failed(f"record returned {outcome!r}")
        await anyio.lowlevel.checkpoint_if_cancelled()  # only before applying
        return outcome


_WRITTEN: tuple[tuple[str, str, str, type[OutsiderTurnLoop]], ...] = (
    (
        "out-dr9-tool-name-casefolded",
        "DR-ONE-RECORD",
        "The record's tool_name is the case-folded tool name (the harness's canonical "
        "registry key), not the call's tool name exactly.",
        ToolNameCasefolded,
    ),
    (
        "out-dr9-commit-reason-ascii",
        "DR-COMMIT-FAIL",
        "The error surfaced for a failed commit is encoded to ASCII with 'replace', so a "
        "recorder reason with non-ASCII characters is not surfaced verbatim.",
        CommitReasonAscii,
    ),
    (
        "out-dr9-no-commit-for-toolless-turn",
        "DR-COMMIT-FINAL",
        "A turn whose very first provider step is the final answer (no tool call at all) "
        "makes no commit, so that final step is never committed.",
        NoCommitForToolLessTurn,
    ),
    (
        "out-dr9-context-carries-to-later-calls",
        "DR-RECORD-FIRST",
        "Injected contexts accumulate in one list per step, so a later call of the same "
        "step runs its tool with an earlier call's context that no record authorised for it.",
        ContextCarriesToLaterCalls,
    ),
    (
        "out-dr9-redacted-crlf-normalised",
        "DR-REDACT",
        "A recorded redaction's text is released with CRLF and lone CR turned into LF, "
        "so the model does not get redacted_result verbatim.",
        RedactedLineEndingsNormalised,
    ),
    (
        "out-dr9-redaction-error-hides-cancel",
        "DR-CANCEL",
        "A redaction record that fails (error, raise or timeout) after the turn was "
        "cancelled withholds the result and the turn goes on to commit, instead of the "
        "cancellation propagating; only a redaction OK is checked for cancellation.",
        RedactionErrorHidesCancel,
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
    implementation: OutsiderTurnLoop


#: Every variant of the batch by its own name (``out-dr9-...``), as written.
VARIANTS: dict[str, Variant] = {
    name: Variant(name, RELABELLED.get(name, rule), statement, cls())
    for name, rule, statement, cls in _WRITTEN
}

#: Variants kept but not yet registered as mutants (no scenario kills them yet), with why
#: (none: the scenarios written for the six survivors kill them all).
PENDING: dict[str, str] = {}

#: Variants that are not bugs (upstream and seamspec allow what they do), with why; kept
#: here, never registered as mutants.
REJECTED: dict[str, str] = {}


def implementation(name: str) -> OutsiderTurnLoop:
    """The harness of variant ``name``, as the DR driver wants one."""
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
