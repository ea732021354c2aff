"""The reference turn loop, executor and journal, as the DR driver wants them.

Kept in a class of its own so that the DR mutants can subclass it and replace one
piece (the executor class, the loop, the journal) without touching the other contracts.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seamspec.conformance._contracts.dispatch_recorder.driver import DispatchRecorderDriver
from seamspec.reference import (
    DispatchRecorder,
    JournalRecorder,
    Message,
    QuarantinedTailWarning,
    Signer,
    ToolExecutor,
    TornTailWarning,
    Verification,
    run_turn,
    scan_journal,
)

__all__ = ["ReferenceDispatch", "reference_driver"]

# The reference reports what it finds on opening a journal as Python warnings. In a run
# the damage is the kit's own doing (an existing journal it wrote torn, say), the kit
# judges the file itself, and the run's output is its report: these two are not shown.
# A filter, not catch_warnings(), since scenarios open journals in threads side by side.
for _category in (TornTailWarning, QuarantinedTailWarning):
    warnings.filterwarnings("ignore", category=_category)


class ReferenceDispatch:
    """Builds the reference :class:`ToolExecutor` and runs :func:`run_turn` with it."""

    features: tuple[str, ...] = ("signed-journal", "record-time-limit")
    executor: type[ToolExecutor] = ToolExecutor
    journal: type[JournalRecorder] = JournalRecorder

    async def run_turn(
        self,
        *,
        prompt: str,
        provider: Any,
        tools: Any,
        policy: Any,
        recorder: DispatchRecorder | None,
        approver: Any,
        record_time_limit: float | None,
        commit_time_limit: float | None,
    ) -> Sequence[Message]:
        executor = self.executor(
            tools, policy, recorder, approver=approver, record_time_limit=record_time_limit
        )
        result = await self.loop(prompt, provider, executor, commit_time_limit)
        return result

    async def loop(
        self, prompt: str, provider: Any, executor: ToolExecutor, commit_time_limit: float | None
    ) -> Sequence[Message]:
        result = await run_turn(prompt, provider, executor, commit_time_limit=commit_time_limit)
        return result.messages

    def open_journal(
        self, path: Path, signer: Signer, *, fsync: Callable[[int], None]
    ) -> JournalRecorder:
        return self.journal.open(path, signer, fsync=fsync)

    def verify_journal(
        self, path: Path, public_key: Ed25519PublicKey, *, expected_entries: int | None
    ) -> Verification:
        return scan_journal(path.read_bytes(), public_key, expected_entries=expected_entries)


def reference_driver() -> DispatchRecorderDriver:
    return DispatchRecorderDriver(ReferenceDispatch())
