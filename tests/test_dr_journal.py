"""The journal recorder's own promises: group commit, torn-tail recovery, refusing damage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from seamspec.reference import (
    DispatchMutation,
    InputRewrite,
    JournalCorrupt,
    JournalRecorder,
    KeySigner,
    RecordOk,
    TornTailWarning,
    generate_keypair,
    journal_fingerprint,
    scan_journal,
)


@pytest.fixture
def signer(tmp_path: Path) -> KeySigner:
    generate_keypair(tmp_path / "k", tmp_path / "k.pub")
    return KeySigner.from_file(tmp_path / "k")


def _mutation(i: int) -> DispatchMutation:
    return DispatchMutation(f"c{i}", "shell", InputRewrite("{}", f'{{"n":{i}}}'))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_concurrent_records_share_fsyncs(disk_path: Path, signer: KeySigner, backend: str) -> None:
    """On the disk (``disk_path``): records queue up behind an fsync that really waits."""

    async def go() -> tuple[list[object], int]:
        outcomes: list[object] = []
        async with JournalRecorder.open(disk_path / "j", signer) as journal:

            async def one(i: int) -> None:
                outcomes.append(await journal.record(_mutation(i)))

            async with anyio.create_task_group() as group:
                for i in range(16):
                    group.start_soon(one, i)
            return outcomes, journal.fsyncs

    outcomes, fsyncs = anyio.run(go, backend=backend)
    assert all(isinstance(o, RecordOk) for o in outcomes)
    assert fsyncs < 16, f"16 concurrent records took {fsyncs} fsyncs: no group commit"
    found = scan_journal((disk_path / "j").read_bytes(), signer.public_key)
    assert found.ok
    assert len(found.entries) == 16


def test_torn_tail_is_reported_dropped_and_appended_after(
    tmp_path: Path, signer: KeySigner
) -> None:
    path = tmp_path / "j"

    async def write(n: int) -> None:
        async with JournalRecorder.open(path, signer) as journal:
            for i in range(n):
                assert isinstance(await journal.record(_mutation(i)), RecordOk)

    anyio.run(write, 3)
    whole = path.read_bytes()
    path.write_bytes(whole[:-7])  # the last append was interrupted
    with pytest.warns(TornTailWarning, match="entry 2"):
        journal = JournalRecorder.open(path, signer)
    assert journal.torn_tail is not None
    assert journal.entries == 2
    journal.close()
    anyio.run(write, 1)
    found = scan_journal(path.read_bytes(), signer.public_key)
    assert found.ok
    assert [e.mutation["tool_call_id"] for e in found.entries] == ["c0", "c1", "c0"]


def test_damaged_journal_is_not_appended_to(tmp_path: Path, signer: KeySigner) -> None:
    path = tmp_path / "j"

    async def write() -> None:
        async with JournalRecorder.open(path, signer) as journal:
            for i in range(2):
                await journal.record(_mutation(i))

    anyio.run(write)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[1] + lines[0])
    with pytest.raises(JournalCorrupt, match="entry 0"):
        JournalRecorder.open(path, signer)


def test_the_docs_by_hand_verification_works(
    tmp_path: Path, signer: KeySigner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snippet in docs/contracts/dispatch-recorder.md verifies a real journal and
    rejects a tampered one, using nothing but ``cryptography``."""
    page = Path(__file__).parents[1] / "docs" / "contracts" / "dispatch-recorder.md"
    section = page.read_text(encoding="utf-8").split("## Verifying a journal by hand", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "j.pub").write_bytes((tmp_path / "k.pub").read_bytes())
    (tmp_path / "j.fingerprint").write_text(journal_fingerprint(signer.public_key) + "\n")

    async def write() -> None:
        async with JournalRecorder.open(tmp_path / "dispatch.journal", signer) as journal:
            for i in range(3):
                await journal.record(_mutation(i))

    anyio.run(write)
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, str(page), "exec"), {})
    lines = (tmp_path / "dispatch.journal").read_bytes().splitlines(keepends=True)
    (tmp_path / "dispatch.journal").write_bytes(lines[0] + lines[2] + lines[1])
    with pytest.raises(AssertionError):
        exec(compile(snippet, str(page), "exec"), {})


def test_the_docs_signer_process_snippet_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SignerProcess example in the journal's Keys paragraph runs as written."""
    import textwrap

    from seamspec import reference

    page = Path(__file__).parents[1] / "docs" / "contracts" / "dispatch-recorder.md"
    blocks = [
        b.split("```", 1)[0] for b in page.read_text(encoding="utf-8").split("```python\n")[1:]
    ]
    snippet = next(b for b in blocks if "SignerProcess(" in b)
    generate_keypair(tmp_path / "j.key", tmp_path / "j.pub")
    monkeypatch.chdir(tmp_path)
    source = "async def example(mutation):\n" + textwrap.indent(snippet, "    ")
    source += "    return outcome\n"
    scope: dict[str, Any] = dict(vars(reference))
    exec(compile(source, str(page), "exec"), scope)
    outcome: object = anyio.run(scope["example"], _mutation(0))
    assert isinstance(outcome, RecordOk)
    found = scan_journal(
        (tmp_path / "dispatch.journal").read_bytes(), reference.load_public_key("j.pub")
    )
    assert found.ok
    assert len(found.entries) == 1
