"""The DR oracle's journal part: durability before OK, and what verification must find.

Separate from the call and commit checks because it reads different evidence: the fsyncs
the journal made, and the verifier's verdicts after the kit tampered with the file.
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.model import step_verb, tamper_index

__all__ = ["check_journal"]


def check_journal(
    records: list[dict[str, Any]], when: list[dict[str, Any]], events: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """DR-JOURNAL-DURABLE and DR-JOURNAL-VERIFY findings for a journal scenario."""
    out: list[tuple[str, str]] = []
    ok = [r for r in records if r["exit"] and r["exit"].get("outcome") == "ok"]
    for count, r in enumerate(ok, start=1):
        durable = r["exit"].get("durable_entries", 0)
        if durable < count:
            out.append((
                "DR-JOURNAL-DURABLE",
                f"record {r['enter']['n']} returned OK when only {durable} of the {count} "
                "entries written so far had been fsync'd",
            ))  # fmt: skip
    tampered: list[dict[str, Any]] = []
    verifies = iter(e for e in events if e["type"] == "journal_verify")
    for step in when:
        verb = step_verb(step)
        if verb == "tamper_journal":
            tampered.append(step[verb])
        elif verb == "verify_journal":
            found = next(verifies, None)
            if found is None:
                break
            out.extend(_check_verify(found, tampered, [r["enter"]["payload"] for r in ok]))
    return out


def _check_verify(
    found: dict[str, Any], tampered: list[dict[str, Any]], mutations: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    rule = "DR-JOURNAL-VERIFY"
    got = f"ok={found.get('ok')} bad_index={found.get('bad_index')} ({found.get('reason')})"
    if not tampered:
        if not found.get("ok") or found.get("mutations") != mutations:
            return [(
                rule,
                f"an untouched journal must verify and hold the {len(mutations)} OK'd mutations "
                f"in order; got {got} with {found.get('entries')} entries",
            )]  # fmt: skip
        return []
    out = []
    want = tamper_index(tampered[0], len(mutations))
    if found.get("ok") or found.get("bad_index") != want:
        out.append((rule, f"after {tampered[0]} verification must fail at entry {want}; got {got}"))
    if "truncate_bytes" in tampered[0] and not found.get("torn_tail"):
        out.append((rule, "a journal cut mid-entry must be reported as a torn tail"))
    return out
