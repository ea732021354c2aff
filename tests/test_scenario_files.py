"""Malformed scenario files: each one gives exit 2 and names the file, the line and the problem."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from seamspec._cli import main
from seamspec.conformance import ScenarioError, load_scenarios, validate_files

MALFORMED = Path(__file__).parent / "data" / "malformed"
CASES = sorted(MALFORMED.glob("*.yaml"))
LOCATED = re.compile(r"^(?P<file>[^:\n]+\.yaml):(?P<line>\d+): (?P<message>.+)$", re.MULTILINE)


def _expected(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name} must start with '# expect: <message>'"
    return first.removeprefix("# expect: ")


def test_there_are_at_least_ten_malformed_files() -> None:
    assert len(CASES) >= 10


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_validate_rejects_with_file_line_and_problem(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    located = LOCATED.search(err)
    assert located, f"no 'file:line: message' in:\n{err}"
    assert located["file"] == str(path)
    assert int(located["line"]) >= 1
    assert _expected(path) in err


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_run_refuses_to_start(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--scenarios", str(path)]) == 2
    captured = capsys.readouterr()
    assert _expected(path) in captured.err
    assert "nothing was run" in captured.err
    assert "passed" not in captured.out


def test_lines_point_at_the_offending_line() -> None:
    path = MALFORMED / "woc-bad-unknown-key.yaml"
    _, problems = validate_files([path])
    (problem,) = problems
    lines = path.read_text(encoding="utf-8").splitlines()
    assert problem.line is not None
    assert lines[problem.line - 1].startswith("titel:")


def test_duplicate_ids_across_files_name_both(tmp_path: Path) -> None:
    good = next((Path(__file__).parents[1] / "scenarios" / "write-observer-chain").glob("*.yaml"))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(good, tmp_path / "a" / good.name)
    shutil.copy(good, tmp_path / "b" / good.name)
    with pytest.raises(ScenarioError) as caught:
        load_scenarios([tmp_path])
    (problem,) = caught.value.problems
    assert "duplicate scenario ID" in problem.message
    assert str(tmp_path / "a") in problem.message
    assert problem.file == str(tmp_path / "b" / good.name)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    for path in CASES[:4]:
        shutil.copy(path, tmp_path / path.name)
    _, problems = validate_files([tmp_path])
    assert {Path(p.file).name for p in problems} == {p.name for p in CASES[:4]}


def test_missing_path_is_a_problem_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(tmp_path / "nope")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_shipped_suite_is_valid() -> None:
    scenarios, problems = validate_files([Path(__file__).parents[1] / "scenarios"])
    assert problems == []
    assert scenarios
