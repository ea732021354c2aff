"""Faults under the real journal: full disk, permission denied, failing fsync, a signer
that raises. ``record`` must return an error (never OK, never raise), and the executor must
then deny the call or withhold the result. Nothing is applied.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from pathlib import Path

import anyio
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seamspec.reference import (
    WITHHELD_NOTICE,
    Allow,
    Decision,
    DispatchMutation,
    InputRewrite,
    JournalRecorder,
    KeyFileError,
    KeySigner,
    RecordError,
    RecordOk,
    RewriteArgs,
    SignerProcess,
    SignerUnavailable,
    ToolCall,
    ToolExecutor,
    ToolInvocation,
    generate_keypair,
    load_private_key,
    load_public_key,
    scan_journal,
)

BACKENDS = ["asyncio", "trio"]
REWRITE = DispatchMutation("c0", "shell", InputRewrite('{"cmd":"a"}', '{"cmd":"b"}'))


class Tools:
    def __init__(self) -> None:
        self.ran: list[ToolInvocation] = []

    async def run(self, invocation: ToolInvocation) -> str:
        self.ran.append(invocation)
        return "SECRET-ORIGINAL-RESULT"


class Policy:
    """Rewrites ``c1``; redacts every result of ``c2``."""

    async def before_dispatch(self, call: ToolCall) -> Decision:
        return RewriteArgs('{"cmd":"safe"}') if call.id == "c1" else Allow()

    async def after_dispatch(self, call: ToolCall, result: str) -> str | None:
        return "[redacted]" if call.id == "c2" else None


@pytest.fixture
def signer(tmp_path: Path) -> KeySigner:
    generate_keypair(tmp_path / "k", tmp_path / "k.pub")
    return KeySigner.from_file(tmp_path / "k")


def _assert_fails_closed(recorder: JournalRecorder, backend: str) -> str:
    """Run a rewrite and a redaction through the executor; both must fail closed."""
    tools = Tools()
    executor = ToolExecutor(tools, Policy(), recorder)

    async def go() -> tuple[str, str]:
        rewritten = await executor.execute(ToolCall("c1", "shell", '{"cmd":"rm -rf /"}'))
        redacted = await executor.execute(ToolCall("c2", "read_env", "{}"))
        return rewritten.messages[-1].content, redacted.messages[-1].content

    denial, released = anyio.run(go, backend=backend)
    assert [i.call_id for i in tools.ran] == ["c2"], "the rewritten call must not run at all"
    assert denial.startswith("[tool call denied]")
    assert released == WITHHELD_NOTICE
    return denial


def _record(recorder: JournalRecorder, backend: str) -> RecordOk | RecordError:
    return anyio.run(recorder.record, REWRITE, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_full_disk(tmp_path: Path, signer: KeySigner, backend: str) -> None:
    """Writes go to /dev/full (ENOSPC from the kernel, not a fake)."""
    recorder = JournalRecorder.open(tmp_path / "j", signer)
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        os.dup2(full, recorder._fd)  # the journal's descriptor now points at a full disk
        outcome = _record(recorder, backend)
        assert isinstance(outcome, RecordError)
        assert "No space left" in outcome.reason
        assert "No space left" in _assert_fails_closed(recorder, backend)
    finally:
        os.close(full)
        recorder.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_fsync_failure_is_sticky(tmp_path: Path, signer: KeySigner, backend: str) -> None:
    """An fsync that fails (ENOSPC, as on a thin-provisioned volume) refuses every record
    from then on: the tail's durability is unknown until the journal is reopened."""
    failing = {"on": True}

    def fsync(fd: int) -> None:
        if failing["on"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        os.fsync(fd)

    recorder = JournalRecorder.open(tmp_path / "j", signer, fsync=fsync)
    assert isinstance(_record(recorder, backend), RecordError)
    failing["on"] = False
    assert isinstance(_record(recorder, backend), RecordError), "must stay refused"
    _assert_fails_closed(recorder, backend)
    recorder.close()
    reopened = JournalRecorder.open(tmp_path / "j", signer)
    assert isinstance(_record(reopened, backend), RecordOk)
    reopened.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_only_descriptor(tmp_path: Path, signer: KeySigner, backend: str) -> None:
    """A descriptor that may not write (EBADF) is an error result, never an exception."""
    path = tmp_path / "j"
    recorder = JournalRecorder.open(path, signer)
    read_only = os.open(path, os.O_RDONLY)
    try:
        os.dup2(read_only, recorder._fd)
        assert isinstance(_record(recorder, backend), RecordError)
        _assert_fails_closed(recorder, backend)
    finally:
        os.close(read_only)
        recorder.close()


def _immutable(path: Path, on: bool) -> bool:
    """``chattr +i``/``-i``: refuses writes even to root (needs CAP_LINUX_IMMUTABLE)."""
    try:
        done = subprocess.run(
            ["chattr", "+i" if on else "-i", str(path)], capture_output=True, check=False
        )
    except OSError:
        return False
    return done.returncode == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_permission_denied_while_recording(
    disk_path: Path, signer: KeySigner, backend: str
) -> None:
    """The journal becomes unwritable under an open recorder (EPERM from the kernel).

    On the disk (``disk_path``): ext4 refuses a write to an immutable file even through a
    descriptor opened before, while tmpfs (Linux 6.18 here) accepts it.
    """
    path = disk_path / "j"
    recorder = JournalRecorder.open(path, signer)
    assert isinstance(_record(recorder, backend), RecordOk)
    if not _immutable(path, True):
        recorder.close()
        pytest.skip("chattr +i is not available here")
    try:
        outcome = _record(recorder, backend)
        assert isinstance(outcome, RecordError)
        assert "not permitted" in outcome.reason
        _assert_fails_closed(recorder, backend)
    finally:
        _immutable(path, False)
        recorder.close()
    found = scan_journal(path.read_bytes(), signer.public_key)
    assert found.ok
    assert len(found.entries) == 1, "only the record that returned OK is there"


def test_permission_denied_on_open(tmp_path: Path, signer: KeySigner) -> None:
    """A journal the process may not write is refused at ``open`` (no recorder is built,
    so nothing can be recorded, let alone applied). Root ignores permission bits, so
    under root the file is made immutable instead."""
    if os.geteuid() != 0:
        folder = tmp_path / "locked"
        folder.mkdir()
        folder.chmod(0o500)
        try:
            with pytest.raises(PermissionError):
                JournalRecorder.open(folder / "j", signer)
        finally:
            folder.chmod(0o700)
        return
    path = tmp_path / "j"
    JournalRecorder.open(path, signer).close()
    if not _immutable(path, True):
        pytest.skip("running as root and chattr +i is not available")
    try:
        with pytest.raises(PermissionError):
            JournalRecorder.open(path, signer)
    finally:
        _immutable(path, False)


def test_private_key_readable_by_others_is_refused(tmp_path: Path) -> None:
    generate_keypair(tmp_path / "k", tmp_path / "k.pub")
    assert (tmp_path / "k").stat().st_mode & 0o777 == 0o600
    (tmp_path / "k").chmod(0o644)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_private_key(tmp_path / "k")


class RaisingSigner:
    def __init__(self, inner: KeySigner) -> None:
        self.inner = inner
        self.fail = True

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.inner.public_key

    def sign(self, data: bytes) -> bytes:
        if self.fail:
            raise RuntimeError("HSM unreachable")
        return self.inner.sign(data)


@pytest.mark.parametrize("backend", BACKENDS)
def test_signer_that_raises(tmp_path: Path, signer: KeySigner, backend: str) -> None:
    """Signing fails before anything is written: that record fails, the journal stays
    valid, and once the signer is back records succeed again (not sticky)."""
    flaky = RaisingSigner(signer)
    path = tmp_path / "j"
    recorder = JournalRecorder.open(path, flaky)
    outcome = _record(recorder, backend)
    assert isinstance(outcome, RecordError)
    assert "HSM unreachable" in outcome.reason
    _assert_fails_closed(recorder, backend)
    assert path.read_bytes() == b"", "nothing may be written for an unsigned mutation"
    flaky.fail = False
    assert isinstance(_record(recorder, backend), RecordOk)
    recorder.close()
    found = scan_journal(path.read_bytes(), signer.public_key)
    assert found.ok
    assert len(found.entries) == 1


def test_one_writer_at_a_time(tmp_path: Path, signer: KeySigner) -> None:
    from seamspec.reference import JournalLocked

    first = JournalRecorder.open(tmp_path / "j", signer)
    with pytest.raises(JournalLocked):
        JournalRecorder.open(tmp_path / "j", signer)
    first.close()
    JournalRecorder.open(tmp_path / "j", signer).close()


def test_journal_file_is_owner_only(tmp_path: Path, signer: KeySigner) -> None:
    JournalRecorder.open(tmp_path / "j", signer).close()
    assert (tmp_path / "j").stat().st_mode & 0o777 == 0o600


# --------------------------------------------------------------------------------------
# The signer in its own process (SignerProcess): started for real, killed and frozen for
# real.


@pytest.mark.parametrize("backend", BACKENDS)
def test_signer_process_signs_a_verifiable_journal(
    tmp_path: Path, disk_path: Path, backend: str
) -> None:
    """The journal on the disk (``disk_path``), so records queue behind a real fsync."""
    generate_keypair(tmp_path / "k", tmp_path / "k.pub")
    path = disk_path / "j"
    with SignerProcess(tmp_path / "k") as signer:

        async def go() -> tuple[list[object], int]:
            outcomes: list[object] = []
            async with JournalRecorder.open(path, signer) as journal:

                async def one(i: int) -> None:
                    mutation = DispatchMutation(f"c{i}", "shell", InputRewrite("{}", "{}"))
                    outcomes.append(await journal.record(mutation))

                async with anyio.create_task_group() as group:
                    for i in range(16):
                        group.start_soon(one, i)
                return outcomes, journal.fsyncs

        outcomes, fsyncs = anyio.run(go, backend=backend)
    assert all(isinstance(o, RecordOk) for o in outcomes)
    assert fsyncs < 16, "no group commit"
    found = scan_journal(path.read_bytes(), load_public_key(tmp_path / "k.pub"))
    assert found.ok
    assert len(found.entries) == 16


@pytest.mark.parametrize("how", ["killed", "frozen"])
def test_a_signer_process_that_dies_or_hangs_fails_closed(tmp_path: Path, how: str) -> None:
    generate_keypair(tmp_path / "k", tmp_path / "k.pub")
    path = tmp_path / "j"
    signer = SignerProcess(tmp_path / "k", timeout=0.5)
    try:
        recorder = JournalRecorder.open(path, signer)
        os.kill(signer.pids[0], signal.SIGKILL if how == "killed" else signal.SIGSTOP)
        outcome = _record(recorder, "asyncio")
        assert isinstance(outcome, RecordError)
        expected = "exit status -9" if how == "killed" else "did not answer within 0.5 s"
        assert expected in outcome.reason
        _assert_fails_closed(recorder, "asyncio")
        recorder.close()
        assert path.read_bytes() == b"", "nothing may be written without a signature"
    finally:
        signer.close()


def test_a_signer_process_refuses_a_readable_or_bogus_key(tmp_path: Path) -> None:
    generate_keypair(tmp_path / "k", tmp_path / "k.pub")
    (tmp_path / "k").chmod(0o640)
    with pytest.raises(SignerUnavailable, match="chmod 600"):
        SignerProcess(tmp_path / "k")
    bogus = tmp_path / "bogus"
    bogus.write_text("not a key\n")
    bogus.chmod(0o600)
    with pytest.raises(SignerUnavailable, match="cannot load the private key"):
        SignerProcess(bogus)
