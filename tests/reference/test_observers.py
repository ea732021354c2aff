"""The reference observers, the stub programs they run, and the canonical chain order.

Formatter and diagnostics tests run the kit's real stub programs in real subprocesses: the
point of those observers is how they treat a child (output, failure, hang, cancellation).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from seamspec.reference import (
    STUB_PROGRAMS,
    CheckpointObserver,
    DiagnosticsObserver,
    FormatterObserver,
    ObserverFailure,
    ObserverFailureWarning,
    WriteObserverChain,
    WriteTools,
    stub_command,
)
from seamspec.reference._write_observer_chain.stubs import lint_text, tidy_text

pytestmark = pytest.mark.anyio


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace.resolve()


class Spawned:
    """Every process the observers start, and an optional event set on each start."""

    def __init__(self) -> None:
        self.processes: list[anyio.abc.Process] = []
        self.started: anyio.Event | None = None


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> Spawned:
    record = Spawned()
    real_open_process = anyio.open_process

    async def spy(*args: Any, **kwargs: Any) -> anyio.abc.Process:
        process = await real_open_process(*args, **kwargs)
        record.processes.append(process)
        if record.started is not None:
            record.started.set()
        return process

    monkeypatch.setattr(anyio, "open_process", spy)
    return record


def is_gone(pid: int) -> bool:
    """True once no process (not even a zombie) has this pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# --- stub programs --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("\n\n", ""),
        ("a", "a\n"),
        ("a\n\n\n", "a\n"),
        ("a  \t\n", "a\n"),
        ("\t\tb\n", "        b\n"),
        ("  \tb\t\n", "      b\n"),
        ("a\tb\n", "a\tb\n"),
        ("a\n\nb\n", "a\n\nb\n"),
        ("a\n\n\nb\n", "a\n\n\nb\n"),
        ("a\n\n\n\nb\n", "a\n\nb\n"),
        ("a\n \n\t\n  \n\nb", "a\n\nb\n"),
    ],
)
def test_tidy_rules(text: str, expected: str) -> None:
    assert tidy_text(text) == expected
    assert tidy_text(expected) == expected  # formatted text is a fixed point


def test_lint_rules() -> None:
    text = "ok\nx = 1  \n\tpass  # TODO\n" + "y" * 80 + "\n"
    assert lint_text("f.py", text) == [
        "f.py:2:6: W291 trailing whitespace",
        "f.py:3:1: W191 tab indentation",
        "f.py:3:10: T001 TODO left in code",
        "f.py:4:80: E501 line too long (80 > 79)",
    ]
    assert lint_text("f.py", "clean\n" + "z" * 79 + "\n") == []


def test_stub_command_names_only_kit_programs() -> None:
    assert frozenset({"tidy", "tidy-fail", "tidy-hang", "lint"}) == STUB_PROGRAMS
    command = stub_command("lint", "a.py")
    assert command[0] == sys.executable
    assert Path(command[1]).name == "stubs.py"
    assert command[2:] == ["lint", "a.py"]
    with pytest.raises(ValueError, match="unknown stub program 'rm'"):
        stub_command("rm", "-rf", "/")


def test_stub_programs_do_not_depend_on_the_current_folder(tmp_path: Path) -> None:
    """A folder holding a package named seamspec (a source checkout) must not shadow the kit."""
    (tmp_path / "seamspec").mkdir()
    (tmp_path / "seamspec" / "__init__.py").write_text("raise SystemExit('shadowed')\n")
    tidy = subprocess.run(
        stub_command("tidy"), input=b"a  \n", capture_output=True, check=False, cwd=tmp_path
    )
    assert (tidy.returncode, tidy.stdout) == (0, b"a\n")


def test_stub_programs_run_as_processes(tmp_path: Path) -> None:
    tidy = subprocess.run(stub_command("tidy"), input=b"a  \n", capture_output=True, check=False)
    assert (tidy.returncode, tidy.stdout, tidy.stderr) == (0, b"a\n", b"")
    # stderr is exactly the message: nothing else (e.g. a runpy warning) may precede it.
    fail = subprocess.run(stub_command("tidy-fail"), input=b"a", capture_output=True, check=False)
    assert (fail.returncode, fail.stdout, fail.stderr) == (
        1,
        b"",
        b"tidy-fail: cannot parse input\n",
    )
    source = tmp_path / "a.py"
    source.write_text("# TODO\n")
    lint = subprocess.run(stub_command("lint", str(source)), capture_output=True, check=False)
    assert (lint.returncode, lint.stdout) == (1, f"{source}:1:3: T001 TODO left in code\n".encode())
    source.write_text("fine\n")
    clean = subprocess.run(stub_command("lint", str(source)), capture_output=True, check=False)
    assert (clean.returncode, clean.stdout) == (0, b"")
    missing = subprocess.run(
        stub_command("lint", str(tmp_path / "nope.py")), capture_output=True, check=False
    )
    assert missing.returncode == 2
    assert b"nope.py" in missing.stderr


# --- checkpoint -----------------------------------------------------------------------


async def test_checkpoint_keeps_the_earliest_capture_and_restores_it(root: Path) -> None:
    (root / "a.txt").write_bytes(b"old\n")
    (root / "c.txt").write_bytes(b"keep me\n")
    checkpoint = CheckpointObserver()
    tools = WriteTools(root, checkpoint)
    assert (await tools.write("a.txt", "v1\n")).ok
    assert (await tools.write("a.txt", "v2\n")).ok
    assert (await tools.write("new/b.txt", "b\n")).ok
    assert (await tools.delete("c.txt")).ok

    assert checkpoint.captured(root / "a.txt") == b"old\n"
    assert checkpoint.has_captured(root / "new" / "b.txt")
    assert checkpoint.captured(root / "new" / "b.txt") is None  # absent before the turn
    assert not checkpoint.has_captured(root / "other.txt")
    with pytest.raises(KeyError):
        checkpoint.captured(root / "other.txt")

    restored = await checkpoint.restore()
    assert restored == [root / "a.txt", root / "new" / "b.txt", root / "c.txt"]
    assert (root / "a.txt").read_bytes() == b"old\n"
    assert not (root / "new" / "b.txt").exists()
    assert (root / "c.txt").read_bytes() == b"keep me\n"
    assert await checkpoint.restore() == restored  # idempotent: captures are kept


async def test_checkpoint_new_turn_forgets_captures(root: Path) -> None:
    checkpoint = CheckpointObserver()
    tools = WriteTools(root, checkpoint)
    await tools.write("a.txt", "turn 1\n")
    checkpoint.new_turn()
    assert not checkpoint.has_captured(root / "a.txt")
    await tools.write("a.txt", "turn 2\n")
    assert checkpoint.captured(root / "a.txt") == b"turn 1\n"
    assert await checkpoint.after_write(root / "a.txt") is None


async def test_checkpoint_capture_failure_raises_and_captures_nothing(root: Path) -> None:
    (root / "adir").mkdir()
    checkpoint = CheckpointObserver()
    with pytest.raises(IsADirectoryError):
        await checkpoint.before_write(root / "adir")
    assert not checkpoint.has_captured(root / "adir")


# --- formatter ------------------------------------------------------------------------


async def test_formatter_rewrites_the_file_and_returns_a_diff(root: Path) -> None:
    path = root / "a.py"
    path.write_bytes(b"x = 1   \n\ty\n")
    annotation = await FormatterObserver(stub_command("tidy")).after_write(path)
    assert path.read_bytes() == b"x = 1\n    y\n"
    assert annotation == (
        "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-x = 1   \n-\ty\n+x = 1\n+    y"
    )


async def test_formatter_diff_shows_a_missing_final_newline(root: Path) -> None:
    path = root / "a.txt"
    path.write_bytes(b"x")
    annotation = await FormatterObserver(stub_command("tidy")).after_write(path)
    assert path.read_bytes() == b"x\n"
    assert annotation == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x"
    )


async def test_formatter_returns_none_when_nothing_changes(root: Path) -> None:
    path = root / "a.py"
    path.write_bytes(b"tidy\n")
    assert await FormatterObserver(stub_command("tidy")).after_write(path) is None
    assert await FormatterObserver(stub_command("tidy")).after_write(root / "gone.py") is None


async def test_formatter_failure_leaves_the_file_as_written(root: Path) -> None:
    path = root / "a.py"
    path.write_bytes(b"x = 1   \n")
    formatter = FormatterObserver(stub_command("tidy-fail"), name="tidy")
    annotation = await formatter.after_write(path)
    assert annotation == (
        "tidy: formatter failed (exit 1): tidy-fail: cannot parse input; file left as written"
    )
    assert path.read_bytes() == b"x = 1   \n"


async def test_formatter_that_cannot_start_raises(root: Path) -> None:
    path = root / "a.py"
    path.write_bytes(b"x\n")
    with pytest.raises(FileNotFoundError):
        await FormatterObserver([str(root / "no-such-program")]).after_write(path)


async def test_formatter_hang_hits_the_time_limit_and_leaves_no_child(
    root: Path, spawned: Spawned
) -> None:
    path = root / "a.py"
    path.write_bytes(b"x = 1   \n")
    formatter = FormatterObserver(stub_command("tidy-hang"), time_limit=1.0)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 1 s; killed"):
        await formatter.after_write(path)
    assert time.monotonic() - started < 10
    [process] = spawned.processes
    assert is_gone(process.pid)  # killed *and* reaped before the hook returned
    assert path.read_bytes() == b"x = 1   \n"


async def test_cancelling_the_formatter_kills_the_child(root: Path, spawned: Spawned) -> None:
    path = root / "a.py"
    path.write_bytes(b"x\n")
    formatter = FormatterObserver(stub_command("tidy-hang"), time_limit=60.0)
    finished: list[str | None] = []
    spawned.started = anyio.Event()

    async def run() -> None:
        finished.append(await formatter.after_write(path))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await spawned.started.wait()
        group.cancel_scope.cancel()
    assert finished == []  # the cancellation propagated out of after_write
    [process] = spawned.processes
    assert is_gone(process.pid)


async def test_a_hanging_formatter_in_a_chain_does_not_fail_the_write(root: Path) -> None:
    chain = WriteObserverChain([FormatterObserver(stub_command("tidy-hang"), time_limit=1.0)])
    with pytest.warns(ObserverFailureWarning, match="formatter"):
        result = await WriteTools(root, chain).write("a.py", "x = 1   \n")
    assert (result.ok, result.annotation) == (True, None)
    assert (root / "a.py").read_bytes() == b"x = 1   \n"


# --- diagnostics ----------------------------------------------------------------------


async def test_diagnostics_returns_an_indented_block(root: Path) -> None:
    path = root / "a.py"
    path.write_bytes(b"x = 1 \n# TODO\n")
    annotation = await DiagnosticsObserver(stub_command("lint"), name="lint").after_write(path)
    assert annotation == (
        f"diagnostics (lint):\n"
        f"  {path}:1:6: W291 trailing whitespace\n"
        f"  {path}:2:3: T001 TODO left in code"
    )


async def test_diagnostics_returns_none_for_clean_or_missing_files(root: Path) -> None:
    path = root / "a.py"
    path.write_bytes(b"clean\n")
    diagnostics = DiagnosticsObserver(stub_command("lint"))
    assert await diagnostics.after_write(path) is None
    assert await diagnostics.after_write(root / "gone.py") is None


async def test_diagnostics_hang_hits_the_time_limit(root: Path, spawned: Spawned) -> None:
    path = root / "a.py"
    path.write_bytes(b"x\n")
    with pytest.raises(TimeoutError):
        await DiagnosticsObserver(stub_command("tidy-hang"), time_limit=1.0).after_write(path)
    [process] = spawned.processes
    assert is_gone(process.pid)


# --- the canonical order --------------------------------------------------------------

MESSY = "x = 1   \n\n\n\n# TODO\n"


async def test_canonical_order_checkpoint_formatter_diagnostics(root: Path) -> None:
    path = root / "m.py"
    path.write_bytes(b"old\n")
    failures: list[ObserverFailure] = []
    checkpoint = CheckpointObserver()
    chain = WriteObserverChain(
        [
            checkpoint,
            FormatterObserver(stub_command("tidy"), name="tidy"),
            DiagnosticsObserver(stub_command("lint"), name="lint"),
        ],
        on_failure=failures.append,
    )
    result = await WriteTools(root, chain).write("m.py", MESSY)

    assert failures == []
    assert checkpoint.captured(path) == b"old\n"  # the pre-image, not the tool's bytes
    assert path.read_bytes() == b"x = 1\n\n# TODO\n"
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1,5 +1,3 @@\n-x = 1   \n-\n-\n+x = 1\n \n # TODO"
    block = f"diagnostics (lint):\n  {path}:3:3: T001 TODO left in code"
    assert result.annotation is not None
    assert "W291" not in result.annotation  # diagnostics read the formatted bytes ...
    assert "T001" in result.annotation  # ... and still found what formatting cannot fix
    assert result.ok
    assert result.message == "wrote 19 bytes to m.py"
    assert result.annotation == diff + "\n\n" + block
    assert result.text == "wrote 19 bytes to m.py\n\n" + diff + "\n\n" + block


async def test_diagnostics_before_the_formatter_report_stale_findings(root: Path) -> None:
    """The counter-example: the wrong order makes diagnostics describe bytes now gone."""
    path = root / "m.py"
    chain = WriteObserverChain(
        [
            DiagnosticsObserver(stub_command("lint"), name="lint"),
            FormatterObserver(stub_command("tidy"), name="tidy"),
        ]
    )
    result = await WriteTools(root, chain).write("m.py", MESSY)
    assert result.annotation is not None
    assert f"{path}:1:6: W291 trailing whitespace" in result.annotation
    assert path.read_bytes() == b"x = 1\n\n# TODO\n"
