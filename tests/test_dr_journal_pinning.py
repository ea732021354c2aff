"""Issue 14's journal items: no complete entry is ever destroyed, and the key is pinned.

- A journal whose last entry lost (or had replaced) its newline is not cut as a torn
  tail when it is reopened: the bytes go to a quarantine file next to it, a warning says
  so, and ``journal verify`` refuses to call the journal valid while that file exists.
- ``journal verify --fingerprint`` pins the key: a key file replaced by whoever can write
  the journal, with everything signed again, is refused ("not the pinned key"), and a
  journal checked with the wrong key says which key signed it instead of "does not chain".
"""

from __future__ import annotations

import warnings
from pathlib import Path

import anyio
import pytest

from seamspec._cli import main
from seamspec.reference import (
    ContextInjection,
    DispatchMutation,
    JournalRecorder,
    KeySigner,
    QuarantinedTailWarning,
    TornTailWarning,
    generate_keypair,
    journal_fingerprint,
    load_public_key,
    scan_journal,
)


def _write(path: Path, key: Path, count: int, prefix: str = "c") -> JournalRecorder:
    journal = JournalRecorder.open(path, KeySigner.from_file(key))

    async def write() -> None:
        for i in range(count):
            await journal.record(DispatchMutation(f"{prefix}{i}", "shell", ContextInjection("x")))

    anyio.run(write)
    journal.close()
    return journal


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    private, public = tmp_path / "j.key", tmp_path / "j.pub"
    generate_keypair(private, public)
    return private, public


@pytest.mark.parametrize("damage", [b"\x0b", b""], ids=["newline-replaced", "newline-removed"])
def test_a_complete_last_entry_is_quarantined_not_truncated(
    tmp_path: Path, keys: tuple[Path, Path], damage: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    private, public = keys
    path = tmp_path / "dispatch.journal"
    _write(path, private, 3)
    data = path.read_bytes()
    last = data[data.rfind(b"\n", 0, len(data) - 1) + 1 :]
    path.write_bytes(data[:-1] + damage)
    found = scan_journal(path.read_bytes(), load_public_key(public))
    assert (found.bad_index, found.torn_tail) == (2, False)
    with pytest.warns(QuarantinedTailWarning, match="quarantine"):
        journal = JournalRecorder.open(path, KeySigner.from_file(private))
    try:
        assert journal.quarantined is not None
        assert journal.quarantined.read_bytes() == last[:-1] + damage  # every byte kept
        assert journal.quarantined.stat().st_mode & 0o077 == 0
        assert journal.entries == 2
        assert journal.torn_tail is None
    finally:
        journal.close()
    assert main(["journal", "verify", str(path), "--public-key", str(public)]) == 1
    assert "quarantined tail" in capsys.readouterr().err


def test_a_torn_tail_is_still_cut(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    private, _ = keys
    path = tmp_path / "dispatch.journal"
    _write(path, private, 2)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.warns(TornTailWarning):
        journal = JournalRecorder.open(path, KeySigner.from_file(private))
    journal.close()
    assert journal.quarantined is None
    assert not list(tmp_path.glob("*.quarantine-*"))


def test_keygen_prints_the_fingerprint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    private, public = tmp_path / "k", tmp_path / "k.pub"
    assert (
        main(["journal", "keygen", "--private-key", str(private), "--public-key", str(public)]) == 0
    )
    out = capsys.readouterr().out
    assert journal_fingerprint(load_public_key(public)) in out
    assert main(["journal", "fingerprint", "--public-key", str(public)]) == 0
    assert capsys.readouterr().out.strip() == journal_fingerprint(load_public_key(public))


def test_a_replaced_key_and_a_re_signed_journal_are_refused(
    tmp_path: Path, keys: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    private, public = keys
    pinned = journal_fingerprint(load_public_key(public))
    path = tmp_path / "dispatch.journal"
    _write(path, private, 3)
    verify = ["journal", "verify", str(path), "--public-key", str(public), "--expect-entries", "3"]
    assert main([*verify, "--fingerprint", pinned]) == 0
    capsys.readouterr()
    # Whoever can write the journal replaces the key files and signs everything again.
    path.unlink()
    public.unlink()
    private.unlink()
    generate_keypair(private, public)
    _write(path, private, 3, prefix="forged")
    assert main(verify) == 0  # without the pin, nothing can tell
    capsys.readouterr()
    assert main([*verify, "--fingerprint", pinned]) == 1
    err = capsys.readouterr().err
    assert "not the pinned key" in err
    assert pinned[:16] in err


def test_the_wrong_key_says_which_key_signed(
    tmp_path: Path, keys: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    private, _ = keys
    path = tmp_path / "dispatch.journal"
    _write(path, private, 2)
    other_private, other_public = tmp_path / "o.key", tmp_path / "o.pub"
    generate_keypair(other_private, other_public)
    assert main(["journal", "verify", str(path), "--public-key", str(other_public)]) == 1
    err = capsys.readouterr().err
    signer = journal_fingerprint(KeySigner.from_file(private).public_key)
    expected = journal_fingerprint(load_public_key(other_public))
    assert f"signed by key {signer[:16]}…, expected {expected[:16]}…" in err
    assert "chain" not in err.split("(")[0]


def test_a_malformed_fingerprint_is_a_usage_error(
    tmp_path: Path, keys: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    private, public = keys
    path = tmp_path / "dispatch.journal"
    _write(path, private, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(
            ["journal", "verify", str(path), "--public-key", str(public), "--fingerprint", "xyz"]
        )
    assert code == 2
    assert "64 hex digits" in capsys.readouterr().err
