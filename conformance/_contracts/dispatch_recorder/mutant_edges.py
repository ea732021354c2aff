"""Broken dispatch recorders at the edges outsiders asked about, where the page was silent
or unclear: a rewrite that changes nothing, a cancellation that waits, an approval's
denial text.

Each class is the reference executor with one plausible mistake, a few lines that *are*
the bug; ``mutants.py`` registers them with the rule each one breaks.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from seamspec.reference import (
    Allow,
    Decision,
    DispatchMutation,
    RecordOutcome,
    RequireApproval,
    RewriteArgs,
    ToolCall,
    ToolExecutor,
)

__all__ = [
    "ApprovalDenialWithoutReason",
    "CancelWaitsForRecord",
    "JsonEqualRewriteSkipped",
    "UnchangedRewriteSkipped",
]


class UnchangedRewriteSkipped(ToolExecutor):
    """Skips the record of a rewrite whose new arguments are the call's own ("nothing to sign")."""

    def _pre_mutation(self, call: ToolCall, decision: Decision) -> DispatchMutation | None:
        if isinstance(decision, RewriteArgs) and decision.new_args == call.args:
            return None
        return super()._pre_mutation(call, decision)


def _same_json(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a == b


class JsonEqualRewriteSkipped(ToolExecutor):
    """Treats a rewrite to the same JSON value (other spacing, key order) as no rewrite: runs the
    original bytes, unrecorded."""

    def _pre_mutation(self, call: ToolCall, decision: Decision) -> DispatchMutation | None:
        if isinstance(decision, RewriteArgs) and _same_json(decision.new_args, call.args):
            return None
        return super()._pre_mutation(call, decision)


class CancelWaitsForRecord(ToolExecutor):
    """Shields each record from the caller's cancellation "so the signer is never interrupted":
    a cancelled turn waits until the record answers or its time limit runs out."""

    async def _record_in_time(self, mutation: DispatchMutation) -> RecordOutcome:
        with anyio.CancelScope(shield=True):
            outcome = await super()._record_in_time(mutation)
        return outcome


class ApprovalDenialWithoutReason(ToolExecutor):
    """Denies a refused approval with a fixed text that leaves out the approval's reason."""

    async def _prepare(self, call: ToolCall, decision: Decision) -> Any:
        if isinstance(decision, RequireApproval):
            approved = self.approver is not None and await self.approver(call, decision.reason)
            if not approved:
                return self._denied(call, "approval required and not given")
            decision = Allow()  # approved: asked once, then runs as proposed
        return await super()._prepare(call, decision)
