"""The kit's own journal check (``journal_audit``), its forger and tampering, on their own.

The kit's check is written from the documented format, apart from the reference's
verifier. Two independent readings of one format should agree on every file: here they
are compared on a real reference journal under thousands of tamperings (byte flips,
cuts at every length, entry moves, and every forgery the kit can make with the key), and
on hand-made lines that probe one clause of the format each. Where they disagree, one of
them is wrong about the format.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from seamspec.conformance._contracts.dispatch_recorder.journal_audit import (
    audit_journal,
    canonical,
    fingerprint,
)
from seamspec.conformance._contracts.dispatch_recorder.journal_forge import (
    KitKey,
    entry_line,
    journal_bytes,
)
from seamspec.conformance._contracts.dispatch_recorder.journal_steps import (
    OPERATIONS,
    TamperError,
    tamper_bytes,
)
from seamspec.reference import (
    ContextInjection,
    DispatchMutation,
    InputRewrite,
    JournalRecorder,
    KeySigner,
    MutationKind,
    ResultRedaction,
    journal_fingerprint,
    scan_journal,
)

ENTRIES = 6
MUTATIONS: list[dict[str, Any]] = [
    {"kind": "input_rewrite", "tool_call_id": f"c{i}", "tool_name": "shell",
     "original_args": '{"cmd":"ls"}', "new_args": '{"cmd":"ls -1 ✓"}'}
    for i in range(ENTRIES)
]  # fmt: skip


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[KitKey, bytes]:
    """A journal written by the reference JournalRecorder, signed with a kit key."""
    key = KitKey()
    folder = tmp_path_factory.mktemp("audit")
    private, _ = key.write(folder)
    path = folder / "dispatch.journal"
    kinds: list[MutationKind] = [
        InputRewrite('{"cmd":"ls"}', '{"cmd":"ls -1"}'),
        ContextInjection("no force pushes \u2014 ever\n"),
        ResultRedaction('{"token":"sk-1"}', '{"token":"[redacted]"}'),
    ]

    async def write() -> None:
        async with JournalRecorder.open(path, KeySigner.from_file(private)) as journal:
            for i in range(ENTRIES):
                await journal.record(DispatchMutation(f"c{i}", "tool", kinds[i % 3]))

    anyio.run(write)
    return key, path.read_bytes()


def _both(data: bytes, key: KitKey, anchor: int | None) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    kit = audit_journal(data, key.raw_public, expected_entries=anchor)
    ref = scan_journal(data, key.private.public_key(), expected_entries=anchor)
    return (
        (kit.ok, kit.bad_index, kit.torn_tail, len(kit.entries)),
        (ref.ok, ref.bad_index, ref.torn_tail, len(ref.entries)),
    )


def test_the_kit_reads_a_reference_journal(written: tuple[KitKey, bytes]) -> None:
    key, data = written
    verdict = audit_journal(data, key.raw_public, expected_entries=ENTRIES)
    assert verdict.ok, verdict.reason
    assert [e.mutation["tool_call_id"] for e in verdict.entries] == [f"c{i}" for i in range(6)]
    assert verdict.entries[-1].end == len(data)
    assert key.fingerprint == journal_fingerprint(key.private.public_key())


def test_the_kits_journal_is_one_the_reference_reads() -> None:
    key = KitKey()
    data = journal_bytes(key, MUTATIONS)
    found = scan_journal(data, key.private.public_key(), expected_entries=ENTRIES)
    assert found.ok, found.reason
    assert [e.mutation for e in found.entries] == MUTATIONS


def _operations(rng: random.Random, lines: int, size: int) -> dict[str, Any]:
    entry = rng.randrange(lines)
    kind = rng.choice(
        ["flip_byte", "delete", "swap", "duplicate", "truncate_bytes", "edit", "reencode",
         "forge", "splice", "append"]
    )  # fmt: skip
    if kind == "flip_byte":
        return {kind: {"entry": entry, "offset": rng.randrange(-400, 400),
                       "mask": rng.randrange(1, 256)}}  # fmt: skip
    if kind in ("delete", "duplicate"):
        return {kind: entry}
    if kind == "swap":
        return {kind: [entry, rng.randrange(lines)]}
    if kind == "truncate_bytes":
        return {kind: rng.randrange(1, size + 1)}
    if kind == "edit":
        field = rng.choice(["seq", "prev", "v", "sig", "mutation.tool_name", "mutation.new"])
        return {
            kind: {"entry": entry, "field": field, "value": rng.choice([1, True, 2.0, "x", None])}
        }
    if kind == "reencode":
        return {
            kind: {"entry": entry, "style": rng.choice(["spaces", "reordered_keys", "escaped"])}
        }
    if kind == "forge":
        return {kind: {"entry": entry, "rechain": rng.random() < 0.5, "signature": rng.choice(
            ["valid", "no_domain", "other_domain", "other_key"])}}  # fmt: skip
    if kind == "splice":
        return {kind: {"entry": entry, "from_entry": rng.randrange(lines)}}
    return {kind: {}}


def test_the_kit_and_the_reference_agree_on_every_tampering(written: tuple[KitKey, bytes]) -> None:
    """3,000 random tamperings, one to three at a time, anchored or not."""
    key, original = written
    rng = random.Random(20261201)
    disagreements = []
    for trial in range(3000):
        data = original
        for _ in range(rng.randint(1, 3)):
            lines = data.count(b"\n") + (not data.endswith(b"\n"))
            if not lines:
                break
            op = _operations(rng, lines, len(data))
            try:
                data = tamper_bytes(data, op, key)
            except TamperError:
                continue
        anchor = rng.choice([None, ENTRIES])
        kit, ref = _both(data, key, anchor)
        if kit != ref:
            disagreements.append((trial, kit, ref))
    assert not disagreements, disagreements[:5]


def test_cuts_at_every_length(written: tuple[KitKey, bytes]) -> None:
    key, data = written
    for cut in range(len(data) + 1):
        kit, ref = _both(data[:cut], key, None)
        assert kit == ref, cut
        verdict = audit_journal(data[:cut], key.raw_public)
        ends = [e.end for e in audit_journal(data, key.raw_public).entries]
        if cut in ends or cut == 0:
            assert verdict.ok
        elif cut + 1 in ends:  # only the newline is missing: may be whole, not torn
            assert not verdict.ok
            assert not verdict.torn_tail
        else:
            assert verdict.torn_tail


def _line(key: KitKey, **changes: Any) -> bytes:
    """Entry 0, signed correctly, then ``changes`` applied to its parsed JSON."""
    line, _ = entry_line(key, 0, key.fingerprint, MUTATIONS[0])
    entry = json.loads(line)
    entry.update(changes)
    return (
        json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        + b"\n"
    )


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ({"seq": True}, "sequence number True"),
        ({"v": "2"}, "format version '2'"),
        ({"extra": 1}, "exactly the fields"),
        ({"sig": "A" * 128}, "128 lower-case hex"),
        ({"prev": "0" * 64}, "signed by another key"),
        ({"mutation": "text"}, "not an object"),
    ],
)
def test_each_clause_of_the_format(case: dict[str, Any], expected: str) -> None:
    key = KitKey()
    verdict = audit_journal(_line(key, **case), key.raw_public)
    assert verdict.bad_index == 0
    assert expected in str(verdict.reason)
    ref = scan_journal(_line(key, **case), key.private.public_key())
    assert ref.bad_index == 0


@pytest.mark.parametrize(
    "line",
    [
        b'{"mutation":{},"prev":"x","seq":0,"seq":0,"sig":"","v":2}\n',  # duplicate key
        b'{"mutation":{"n":NaN},"prev":"x","seq":0,"sig":"","v":2}\n',  # not JSON's
        b'{"mutation":{"s":"\\ud800"},"prev":"x","seq":0,"sig":"","v":2}\n',  # lone surrogate
        b'{"mutation":{"s":"\xff"},"prev":"x","seq":0,"sig":"","v":2}\n',  # not UTF-8
        b"[1, 2]\n",
    ],
)
def test_lines_that_are_not_entries(line: bytes) -> None:
    key = KitKey()
    verdict = audit_journal(line, key.raw_public)
    assert verdict.bad_index == 0
    assert not verdict.torn_tail


def test_the_wrong_key_is_named_as_such(written: tuple[KitKey, bytes]) -> None:
    _, data = written
    other = KitKey()
    verdict = audit_journal(data, other.raw_public)
    assert verdict.bad_index == 0
    assert "signed by another key" in str(verdict.reason)
    assert other.fingerprint[:16] in str(verdict.reason)


def test_tampering_names_a_missing_entry_instead_of_crashing(written: tuple[KitKey, bytes]) -> None:
    key, data = written
    for op in ({"delete": 99}, {"swap": [0, 99]}, {"forge": {"entry": 6}},
               {"splice": {"entry": 0, "from_entry": 9}}, {"truncate_bytes": 10**6}):  # fmt: skip
        with pytest.raises(TamperError):
            tamper_bytes(data, op, key)


def test_canonical_is_the_documented_encoding() -> None:
    value = {"b": "é\n", "a": [1, {"d": None, "c": True}]}
    assert canonical(value) == '{"a":[1,{"c":true,"d":null}],"b":"é\\n"}'.encode()
    assert len(fingerprint(bytes(32))) == 64
    with pytest.raises(ValueError, match="JSON compliant"):
        canonical({"x": float("nan")})


def test_forged_entries_sign_what_they_say(tmp_path: Path) -> None:
    key = KitKey()
    data = journal_bytes(key, MUTATIONS[:3])
    for signature, ok in (("valid", True), ("no_domain", False), ("other_domain", False),
                          ("other_key", False)):  # fmt: skip
        forged = tamper_bytes(
            data, {"forge": {"entry": 1, "signature": signature, "rechain": True}}, key
        )
        verdict = audit_journal(forged, key.raw_public)
        assert verdict.ok is ok, signature
        if ok:
            assert verdict.entries[1].mutation["tool_call_id"] == "c1-forged"


@pytest.mark.parametrize(
    "op",
    [
        {"edit": {"entry": 1, "field": "note", "value": "approved by the operator"}},
        {"forge": {"entry": 1, "field": "v", "value": 2.0, "rechain": True}},
    ],
)
def test_signed_bytes_left_whole_still_fail_at_the_changed_entry(op: dict[str, Any]) -> None:
    """Outsider batch 6: an unsigned extra top-level field leaves every signature good, and
    a version of 2.0 signed again (and the chain after it) leaves nothing else wrong; the
    kit and the reference both name entry 1."""
    key = KitKey()
    tampered = tamper_bytes(journal_bytes(key, MUTATIONS[:3]), op, key)
    kit, ref = _both(tampered, key, 3)
    assert kit == ref == (False, 1, False, 1)


def test_tamper_figures_command() -> None:
    """The command behind docs/reliability.md's tamper table, in small."""
    from tests.journal_tamper_figures import tamper_figures

    figures = tamper_figures(5)
    assert set(figures) == set(OPERATIONS)
    for counts in figures.values():
        assert counts["trials"] == 5
        assert counts["verdicts_agree"] == 5


BASE = Path(__file__).resolve().parent.parent / "scenarios" / "dispatch-recorder"


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("  - turn: t1\n  - tamper_journal: {delete: 3}\n  - verify_journal: {}\n", "entry 3 does not exist"),
        ("  - turn: t1\n  - tamper_journal: {append: {}}\n  - tamper_journal: {delete: 3}\n"
         "  - verify_journal: {}\n", None),
        ("  - verify_journal: {}\n  - turn: t1\n", "needs the turn to be over"),
        ("  - turn: t1\n  - verify_journal: {}\n  - join: t1\n", "follows the kit's journal steps"),
    ],
)  # fmt: skip
def test_journal_steps_are_checked_when_the_file_is_loaded(
    tmp_path: Path, when: str, expected: str | None
) -> None:
    """Issue 14: a tamper index past the end is the file's mistake, with its line, not an
    IndexError blamed on the implementation at run time."""
    from seamspec.conformance import validate_files

    source = (BASE / "dr-journal-deleted-entry-detected.yaml").read_text(encoding="utf-8")
    head, _, rest = source.partition("when:\n")
    text = head + "when:\n" + when + "then:" + rest.partition("then:")[2]
    path = tmp_path / "dr-journal-deleted-entry-detected.yaml"
    path.write_text(
        text.replace("journal:\n    - {ok: false, bad_index: 1}", "journal: []"), encoding="utf-8"
    )
    _, problems = validate_files([path])
    messages = [str(p) for p in problems]
    if expected is None:
        assert not messages
    else:
        assert any(expected in m for m in messages), messages
        assert all((p.line or 0) > 1 for p in problems)
