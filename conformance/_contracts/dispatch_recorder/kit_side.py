"""The dispatch recorder's kit side over the wire: the signed journal's session.

Over the wire (protocol 2) the kit gives the implementation the journal's path and the
key to sign with, keeps ``tamper_journal`` and ``verify_journal`` to itself, reads the file
once the trace is back, and asks the implementation's verifier with ``verify_journal``
queries (body: ``path``, ``public_key`` hex, ``expected_entries``; answer: ``ok``,
``bad_index``, ``reason``, ``torn_tail``, ``mutations``). The kit cannot watch the
implementation's fsyncs from here, so DR-JOURNAL-DURABLE is then judged by declaration.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.journal_session import (
    JournalSession,
    wants_journal,
)
from seamspec.conformance._core.adapter import Trace
from seamspec.conformance._core.errors import Unsupported

__all__ = ["open_session"]


class _WireJournal:
    def __init__(self, session: JournalSession) -> None:
        self.session = session
        self.request: Mapping[str, Any] = session.implementation_request()

    def finish(self, trace: Trace, ask: Any) -> Trace:
        def verify(path: Path, public_key: str, anchor: int | None) -> Mapping[str, Any]:
            body = {"path": str(path), "public_key": public_key, "expected_entries": anchor}
            answer: Mapping[str, Any] = ask("verify_journal", body)
            return answer

        return trace + self.session.finish(trace, verify, evidence="declared")


def open_session(request: Mapping[str, Any], folder: Path, protocol: int) -> _WireJournal | None:
    """The kit side of a journal scenario; None for every other scenario."""
    if not wants_journal(request):
        return None
    if protocol < 2:
        raise Unsupported(
            "the kit reads, tampers with and verifies the journal itself, which needs "
            "protocol 2 (resources and query messages); this implementation speaks protocol 1"
        )
    return _WireJournal(JournalSession(request, folder))
