"""The command line given what a careless user types: exit 2, one clear line, no traceback.

Each case was reproduced before the fix (issue 14): a traceback and exit 1 (the code for
"the implementation is wrong"), or worse, ``--max-fail 0`` printing CONFORMS after one
scenario and ``--report-json DIR`` failing only after the whole run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from seamspec._cli import main

ONE_SCENARIO = ["-k", "woc-join-two-annotations"]


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "-j", "-1"], "-j/--jobs: -1 is out of range: give from 0 to 256 (0: one per CPU)"),
        (["run", "-j", "many"], "'many' is not a whole number"),
        (["run", "--timeout", "0"], "--timeout: 0 is out of range"),
        (["run", "--timeout", "nan"], "--timeout: nan is out of range"),
        (["run", "--timeout", "1e300"], "at most 86400 (a day)"),
        (["run", "--impl-cmd", "x", "--request-timeout", "-1"], "--request-timeout: -1"),
        (["run", "--impl-cmd", "x", "--max-restarts", "-5"], "--max-restarts: -5 is out of range"),
        (["run", "--max-fail", "0"], "--max-fail: 0 is out of range: give 1 or more"),
        (["fuzz", "--examples", "0"], "--examples: 0 is out of range"),
        (["mutants", "-j", "-3"], "-j/--jobs: -3 is out of range"),
        (
            ["run", "--impl-cmd", 'node "x'],
            "cannot split 'node \"x' into words (no closing quotation)",
        ),
        (["smoke", "--impl-cmd", "node 'x"], "no closing quotation"),
        (["smoke", "--impl-cmd", "x", "--timeout", "-2"], "--timeout: -2 is out of range"),
        (
            ["journal", "verify", "j", "--public-key", "k", "--expect-entries", "-1"],
            "--expect-entries: -1 is out of range: give 0 or more",
        ),
    ],
)
def test_a_bad_number_or_command_is_one_line_and_exit_two(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert says in _one_error_line(captured.err)
    assert captured.out == ""


@pytest.mark.parametrize("option", ["--report-json", "--junit-xml", "--write-manifest"])
def test_an_output_that_cannot_be_written_is_refused_before_the_run(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert main(["run", *ONE_SCENARIO, option, str(folder)]) == 2
    captured = capsys.readouterr()
    assert _one_error_line(captured.err) == f"error: {option} {folder}: is a folder; name a file"
    assert captured.out == ""  # nothing ran

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert main(["run", *ONE_SCENARIO, option, str(blocker / "report")]) == 2
    assert "is not a folder" in _one_error_line(capsys.readouterr().err)


def test_an_output_in_a_new_folder_is_still_fine(tmp_path: Path) -> None:
    report = tmp_path / "new" / "deeper" / "report.json"
    assert main(["run", "-q", *ONE_SCENARIO, "--report-json", str(report)]) == 0
    assert report.is_file()


def test_mutants_report_json_naming_a_folder_is_refused_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mutants", "--report-json", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "is a folder; name a file" in _one_error_line(captured.err)
    assert "mutants against" not in captured.out


@pytest.mark.parametrize("command", [["report", "html"], ["report", "markdown"], ["diff"]])
def test_binary_or_deep_report_files_are_one_line(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "binary.json"
    binary.write_bytes(b'{"a": "\xff\xfe' + bytes(range(256)))
    zeros = tmp_path / "zeros.json"  # looks like UTF-32 to json.loads
    zeros.write_bytes(bytes(range(256)) * 4)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    for path, says in (
        (binary, "is not UTF-8 text"),
        (zeros, "not JSON"),
        (deep, "nested too deep"),
    ):
        paths = [str(path)] * (2 if command == ["diff"] else 1)
        assert main([*command, *paths]) == 2
        assert says in _one_error_line(capsys.readouterr().err)


def test_a_binary_manifest_is_one_located_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "expected.yaml"
    manifest.write_bytes(b"expected_failures:\n  x: \xff\xfe\n")
    assert main(["run", *ONE_SCENARIO, "--expect", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{manifest}:2: not UTF-8 text" in err


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (
            "raise RuntimeError('boom at import')\n",
            "importing module 'hostile_adapter' raised RuntimeError: boom at import (at ",
        ),
        ("import sys\nsys.exit(3)\n", "raised SystemExit: 3"),
        (
            "class A:\n    def info(self):\n        raise ValueError('boom in info')\n"
            "    def run(self, request):\n        return []\n    def close(self):\n        pass\n"
            "adapter = A()\n",
            "the adapter's info() raised ValueError: boom in info (at ",
        ),
        (
            "class A:\n    def info(self):\n        return 'me'\n"
            "    def run(self, request):\n        return []\n    def close(self):\n        pass\n"
            "adapter = A()\n",
            "info() returned a str, not an ImplementationInfo",
        ),
    ],
    ids=["raises-on-import", "exits-on-import", "raises-in-info", "info-not-info"],
)
def test_an_adapter_that_breaks_before_any_scenario_is_a_usage_error(
    source: str,
    says: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "hostile_adapter.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hostile_adapter", raising=False)
    assert main(["run", *ONE_SCENARIO, "--impl", "hostile_adapter:adapter"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert says in line
    if "(at " in says:
        assert str(tmp_path / "hostile_adapter.py") in line


def test_a_close_that_raises_fails_the_run_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The scenarios were judged, so the verdict stands; the run still exits 1, no traceback."""
    (tmp_path / "closing_adapter.py").write_text(
        "from seamspec.conformance import PythonAdapter, WriteObserverChainDriver\n"
        "from seamspec.conformance._contracts.write_observer_chain.reference_adapter import (\n"
        "    ReferenceWriteObservers,\n)\n"
        "class A(PythonAdapter):\n"
        "    def close(self):\n"
        "        raise RuntimeError('socket already gone')\n"
        "adapter = A(name='bad-close', version='1',\n"
        "            drivers=[WriteObserverChainDriver(ReferenceWriteObservers())])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "closing_adapter", raising=False)
    assert main(["run", "-q", *ONE_SCENARIO, "--impl", "closing_adapter:adapter"]) == 1
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert "close() raised RuntimeError: socket already gone; the run fails (exit 1)" in line
    assert "CONFORMS" in captured.out


def test_fuzz_without_hypothesis_says_which_extra(tmp_path: Path) -> None:
    """Run in a child whose import of hypothesis fails, as in an install without [fuzz]."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class _NoHypothesis:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'hypothesis' or name.startswith('hypothesis.'):\n"
        "            raise ModuleNotFoundError(\"No module named 'hypothesis'\", name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _NoHypothesis())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "seamspec", "fuzz", "--examples", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    line = _one_error_line(done.stderr)
    assert "seamspec fuzz needs hypothesis" in line
    assert "pip install 'seamspec[fuzz]'" in line


def test_emitter_help_and_bad_scripts() -> None:
    emitter = [sys.executable, "-m", "seamspec.reference._shell_output.emitter"]
    shown = subprocess.run([*emitter, "--help"], capture_output=True, text=True, check=False)
    assert shown.returncode == 0
    assert shown.stdout.startswith("usage: seamspec-emitter SCRIPT_JSON")
    assert "{flood" in shown.stdout or '"flood"' in shown.stdout
    for argv, says in ((["{x"], "is not JSON"), (["[]"], "must be an object"), ([], "usage")):
        bad = subprocess.run([*emitter, *argv], capture_output=True, text=True, check=False)
        assert bad.returncode == 2
        assert says in _one_error_line(bad.stderr)


def test_key_files_that_cannot_be_written_say_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    private, public = tmp_path / "no-such-folder" / "k", tmp_path / "k.pub"
    assert (
        main(["journal", "keygen", "--private-key", str(private), "--public-key", str(public)]) == 2
    )
    line = _one_error_line(capsys.readouterr().err)
    assert line == f"error: cannot write {private}: No such file or directory"
    assert not public.exists()
    assert (
        main(
            [
                "journal",
                "keygen",
                "--private-key",
                str(tmp_path / "k"),
                "--public-key",
                str(tmp_path / "x" / "p"),
            ]
        )
        == 2
    )
    assert "cannot write" in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "k").exists()  # the half-made pair is removed


@pytest.mark.parametrize("argv", [["rules", "--json"], ["rules"], ["run", *ONE_SCENARIO]])
def test_a_closed_stdout_ends_quietly(argv: list[str]) -> None:
    """``seamspec rules --json | head -1``: the reader is gone before anything is written."""
    read, write = os.pipe()
    os.close(read)  # every write now fails with EPIPE, whatever the timing
    try:
        done = subprocess.run(
            [sys.executable, "-m", "seamspec", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == 141
