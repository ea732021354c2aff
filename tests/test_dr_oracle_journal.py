"""The DR oracle's journal findings on hand-made traces: one per branch that no shipped
mutant reaches in the natural course (a missing kit check, no file, entries from
nowhere, durable bytes cut or changed afterwards, a failed fsync that claims bytes) and
the messages users read first; and the linter's and driver's side of ``fsync_fails``."""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.dispatch_recorder import model
from seamspec.conformance._contracts.dispatch_recorder.driver import DispatchRecorderDriver
from seamspec.conformance._contracts.dispatch_recorder.oracle_journal import (
    caveats,
    check_journal,
)

A = {"kind": "context_injection", "tool_call_id": "c1", "tool_name": "shell", "context": "x"}
B = {"kind": "context_injection", "tool_call_id": "c2", "tool_name": "shell", "context": "y"}


def _records(*payloads: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "enter": {"n": n, "call": p["tool_call_id"], "payload": p},
            "exit": {"n": n, "outcome": "ok"},
        }
        for n, p in enumerate(payloads)
    ]


def _check(**fields: Any) -> dict[str, Any]:
    base = {"type": "journal_check", "exists": True, "fsync_evidence": "observed", "ok": True,
            "reason": None, "mutations": [A], "ends": [100], "size": 100,
            "rewritten_after_fsync": []}  # fmt: skip
    return {**base, **fields}


def _events(
    records: list[dict[str, Any]], *before_exit: dict[str, Any], check: dict[str, Any]
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for r in records:
        events.append({"type": "record_enter", **r["enter"]})
        events.extend(before_exit)
        events.append(r["exit"] | {"type": "record_exit"})
    # The oracle matches exits by identity: hand it the very dicts it will see.
    for r, e in zip(records, [e for e in events if e["type"] == "record_exit"], strict=True):
        r["exit"] = e
    return [*events, check]


def _rules(out: list[tuple[str, str]]) -> list[str]:
    return [rule for rule, _ in out]


FSYNC = {"type": "journal_fsync", "journal": True, "durable_bytes": 100}


def test_a_good_journal_gives_no_finding() -> None:
    records = _records(A)
    assert check_journal(records, _events(records, FSYNC, check=_check())) == []


def test_no_kit_check_and_no_file() -> None:
    assert _rules(check_journal(_records(A), [])) == ["DR-JOURNAL-FORMAT"]
    out = check_journal(_records(A), [_check(exists=False)])
    assert "wrote no journal" in out[0][1]


def test_entries_from_nowhere() -> None:
    records = _records(A)
    check = _check(mutations=[A, B], ends=[100, 200], size=200)
    out = check_journal(records, _events(records, FSYNC, check=check))
    assert out == [("DR-JOURNAL-FORMAT", out[0][1])]
    assert "no record call carried" in out[0][1]


def test_no_fsync_at_all_says_where_durability_must_go() -> None:
    records = _records(A)
    out = check_journal(records, _events(records, check=_check()))
    assert _rules(out) == ["DR-JOURNAL-DURABLE"]
    assert "no fsync at all" in out[0][1]


def test_an_fsync_of_another_file_is_named() -> None:
    records = _records(A)
    other = {"type": "journal_fsync", "journal": False, "file": "padding", "size": 4096}
    out = check_journal(records, _events(records, other, check=_check()))
    assert "another file (padding)" in out[0][1]


def test_durable_bytes_cut_or_changed_afterwards() -> None:
    records = _records(A)
    cut = check_journal(records, _events(records, FSYNC, check=_check(size=60, ends=[60])))
    assert any("cut off" in message for _, message in cut)
    changed = check_journal(
        records, _events(records, FSYNC, check=_check(rewritten_after_fsync=[0]))
    )
    assert _rules(changed) == ["DR-JOURNAL-DURABLE"]
    assert "changed afterwards" in changed[0][1]


def test_a_verdict_that_differs_from_the_kits() -> None:
    records = _records(A)
    kit = {
        "ok": False,
        "bad_index": 0,
        "torn_tail": False,
        "reason": "entry 0 ...",
        "mutations": [],
    }
    says = {"type": "journal_verify", "ok": True, "bad_index": None, "torn_tail": False,
            "mutations": [A], "entries": 1, "kit": kit}  # fmt: skip
    events = _events(records, FSYNC, check=_check())
    out = check_journal(records, [*events, {"type": "journal_tampered", "op": {"delete": 0}}, says])
    assert out == [("DR-JOURNAL-VERIFY", out[0][1])]
    assert out[0][1].startswith(
        "after {'delete': 0}, the kit reads the journal as invalid at entry 0"
    )


def test_durability_over_the_wire_is_a_caveat() -> None:
    assert caveats([_check(fsync_evidence="declared")])[0][0] == "DR-JOURNAL-DURABLE"
    assert caveats([_check()]) == []
    assert caveats([]) == []


def test_a_journal_whose_last_entry_lost_its_newline() -> None:
    """Refused and left as it is, or gone on with the entry kept beside it: both right. A
    refused journal that was changed anyway, and one that went on without keeping the
    entry, are DR-JOURNAL-REOPEN's (the kit's own runs reach only the second, through
    the outsider mutant ``out-dr5-reopen-cuts-unterminated-entry``)."""
    refused = {"type": "journal_refused", "error": "the last entry lost its newline"}
    lost = {"existing_lost": True, "existing_entries": 0, "mutations": [], "ends": []}
    left = _check(ok=False, lost_kept_in=[], left_unchanged=True, **lost)
    assert check_journal([], [left, refused]) == []
    changed = check_journal([], [_check(ok=False, left_unchanged=False, **lost), refused])
    assert _rules(changed) == ["DR-JOURNAL-REOPEN"]
    assert "changed the file" in changed[0][1]
    records = _records(A)
    moved = _check(lost_kept_in=["dispatch.journal.quarantine-0"], **(lost | {"mutations": [A]}))
    assert check_journal(records, _events(records, FSYNC, check=moved)) == []
    cut = _check(lost_kept_in=[], **(lost | {"mutations": [A]}))
    out = check_journal(records, _events(records, FSYNC, check=cut))
    assert _rules(out) == ["DR-JOURNAL-REOPEN"]
    assert "no file beside it holds that entry whole" in out[0][1]


def test_a_failed_fsync_makes_nothing_durable() -> None:
    """``fsync_fails``: the kit's hook (or, over the wire, the implementation's) reports a
    failed fsync with ``failed: true``. It counts for nothing, even if it also carries
    ``durable_bytes``; the finding says the kit made the fsync fail."""
    records = _records(A)
    failed = {"type": "journal_fsync", "journal": True, "failed": True, "durable_bytes": 100}
    out = check_journal(records, _events(records, failed, check=_check()))
    assert _rules(out) == ["DR-JOURNAL-DURABLE"]
    assert "the kit made the journal's fsyncs fail" in out[0][1]
    refused = [{**records[0], "exit": {"n": 0, "outcome": "error", "reason": "EIO"}}]
    assert check_journal(refused, _events(refused, failed, check=_check())) == []


def test_fsync_fails_is_linted_and_gives_the_feature() -> None:
    """The fault goes with its feature and the journal, and must reach a record; the
    Python driver declares ``fsync-fault`` for any ``signed-journal`` implementation."""
    given: dict[str, Any] = {
        "provider": [{"calls": [{"id": "c1", "tool": "t", "args": "{}"}]}],
        "policy": {"c1": {"pre": {"rewrite": '{"x":1}'}}},
        "recorder": {"journal": True, "fsync_fails": {"from_record": 0}},
    }
    requires = ["signed-journal", "fsync-fault"]

    def lint(given: dict[str, Any], requires: list[str], when: list[Any]) -> list[str]:
        data = {"given": given, "when": when, "then": {}, "requires": requires}
        return [message for _, message in model.lint(data)]

    turn = [{"turn": "t1"}]
    assert lint(given, requires, turn) == []
    assert lint(given, ["signed-journal"], turn) == [
        "`fsync_fails` and `requires: [fsync-fault]` go together"
    ]
    late = {**given, "recorder": {"journal": True, "fsync_fails": {"from_record": 1}}}
    assert any("never reached" in m for m in lint(late, requires, turn))
    reopened = [{"start_turn": "t1"}, {"wait_tool": {}}, {"reopen_journal": {}}, {"join": "t1"}]
    assert any("no `reopen_journal`" in m for m in lint(given, requires, reopened))

    class Impl:
        features: tuple[str, ...] = ("signed-journal",)

        async def run_turn(self, **_: Any) -> Any:
            raise NotImplementedError

    assert "fsync-fault" in DispatchRecorderDriver(Impl()).features
    Impl.features = ("record-time-limit",)
    assert "fsync-fault" not in DispatchRecorderDriver(Impl()).features
