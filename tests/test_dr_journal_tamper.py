"""Tampering, property-based: every edit to a real signed journal is caught and located.

One journal is written through the real :class:`JournalRecorder` (real Ed25519 key, real
file, fsync'd). Hypothesis then flips any byte, deletes, swaps, duplicates or truncates
entries of a prefix of it; verification (anchored with the number of entries, as a
control plane holding receipts would) must fail and name the first entry that is wrong.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seamspec._cli import main
from seamspec.reference import (
    ContextInjection,
    DispatchMutation,
    InputRewrite,
    JournalRecorder,
    KeySigner,
    MutationKind,
    ResultRedaction,
    generate_keypair,
    load_public_key,
    scan_journal,
)

ENTRIES = 8


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[bytes]]:
    """A real 8-entry journal, its public key file, and its lines."""
    folder = tmp_path_factory.mktemp("journal")
    key, pub, path = folder / "j.key", folder / "j.pub", folder / "dispatch.journal"
    generate_keypair(key, pub)
    kinds: list[MutationKind] = [
        InputRewrite('{"cmd":"ls"}', '{"cmd":"ls -1"}'),
        ContextInjection("no force pushes \u2014 ever\n"),
        ResultRedaction('{"token":"sk-1"}', '{"token":"[redacted]"}'),
    ]

    async def write() -> None:
        async with JournalRecorder.open(path, KeySigner.from_file(key)) as recorder:
            for i in range(ENTRIES):
                mutation = DispatchMutation(f"c{i}", "tool", kinds[i % len(kinds)])
                assert (await recorder.record(mutation)).__class__.__name__ == "RecordOk"

    anyio.run(write)
    return path, pub, path.read_bytes().splitlines(keepends=True)


def _verify(data: bytes, pub: Path, entries: int) -> tuple[bool, int | None]:
    found = scan_journal(data, load_public_key(pub), expected_entries=entries)
    assert found.ok or found.reason
    return found.ok, found.bad_index


@st.composite
def tampering(draw: st.DrawFn) -> tuple[int, str, tuple[int, ...]]:
    n = draw(st.integers(2, ENTRIES))
    op = draw(st.sampled_from(["flip", "delete", "swap", "duplicate", "truncate"]))
    if op == "flip":
        return n, op, (draw(st.integers(0, 10_000)), draw(st.integers(1, 255)))
    if op == "swap":
        i, j = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
        return n, op, (min(i, j), max(i, j))
    if op == "truncate":
        return n, op, (draw(st.integers(1, 10_000)),)
    return n, op, (draw(st.integers(0, n - 1)),)


@settings(max_examples=300, deadline=None)
@given(case=tampering())
def test_any_tampering_is_detected_and_located(
    journal: tuple[Path, Path, list[bytes]], case: tuple[int, str, tuple[int, ...]]
) -> None:
    _, pub, all_lines = journal
    n, op, args = case
    lines = list(all_lines[:n])
    assert _verify(b"".join(lines), pub, n) == (True, None)
    if op == "flip":
        flipped = bytearray(b"".join(lines))
        at = args[0] % len(flipped)
        flipped[at] ^= args[1]
        starts = [sum(len(x) for x in lines[:i]) for i in range(n)]
        expected = max(i for i, s in enumerate(starts) if s <= at)
        tampered = bytes(flipped)
    elif op == "delete":
        expected = args[0]
        del lines[args[0]]
        tampered = b"".join(lines)
    elif op == "swap":
        i, j = args
        lines[i], lines[j] = lines[j], lines[i]
        expected, tampered = i, b"".join(lines)
    elif op == "duplicate":
        lines.insert(args[0] + 1, lines[args[0]])
        expected, tampered = args[0] + 1, b"".join(lines)
    else:
        data = b"".join(lines)
        cut = len(data) - 1 - (args[0] % len(data))  # keep 0 .. len-1 bytes
        tampered = data[:cut]
        ends = [sum(len(x) for x in lines[: i + 1]) for i in range(n)]
        expected = sum(1 for e in ends if e <= cut)  # the first entry not wholly kept
    ok, bad = _verify(tampered, pub, n)
    assert not ok, f"{op} {args} on {n} entries went unnoticed"
    assert bad == expected, f"{op} {args}: verification named entry {bad}, expected {expected}"


def test_cli_names_the_tampered_entry(
    journal: tuple[Path, Path, list[bytes]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, pub, lines = journal
    assert main(["journal", "verify", str(path), "--public-key", str(pub)]) == 0
    swapped = tmp_path / "swapped.journal"
    swapped.write_bytes(b"".join([lines[0], lines[2], lines[1], *lines[3:]]))
    assert main(["journal", "verify", str(swapped), "--public-key", str(pub)]) == 1
    assert "INVALID at entry 1" in capsys.readouterr().err
    torn = tmp_path / "torn.journal"
    torn.write_bytes(b"".join(lines)[:-5])
    assert main(["journal", "verify", str(torn), "--public-key", str(pub)]) == 1
    assert f"entry {ENTRIES - 1}: torn tail" in capsys.readouterr().err
    cut = tmp_path / "cut.journal"
    cut.write_bytes(b"".join(lines[:-1]))
    args = ["journal", "verify", str(cut), "--public-key", str(pub)]
    assert main([*args, "--expect-entries", str(ENTRIES)]) == 1
    assert main(["journal", "verify", str(tmp_path / "absent"), "--public-key", str(pub)]) == 2
    assert main(["journal", "verify", str(path), "--public-key", str(path)]) == 2
    assert main(["journal", "show", str(path)]) == 0
    assert "#0 input_rewrite c0 (tool)" in capsys.readouterr().out
