"""The command line as a user and a CI see it: output, exit codes, reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from junitparser import JUnitXml

from seamspec._cli import main
from seamspec.conformance import catalogue, load_scenarios, summary_line
from seamspec.conformance._reports.json_junit import report_schema


def _closing_line(out: str) -> str:
    return out.strip().splitlines()[-1]


def test_run_against_reference_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    # A slice: the whole suite against the reference is the conformance session's.
    assert main(["run", "-q", "-k", "join"]) == 0
    out = capsys.readouterr().out
    assert "CONFORMS" in out
    last = _closing_line(out)
    assert last.endswith("passed, 0 failed"), last


def test_reports_agree_with_each_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report_path, junit_path = tmp_path / "r.json", tmp_path / "r.xml"
    assert (
        main(
            [
                "run",
                "-q",
                "-k",
                "join",
                "--report-json",
                str(report_path),
                "--junit-xml",
                str(junit_path),
            ]
        )
        == 0
    )
    report = json.loads(report_path.read_text())
    jsonschema.validate(report, report_schema())
    summary = report["summary"]
    assert summary["passed"] == len(report["results"]) > 0
    assert {"scenario", "contract", "rules", "level", "status", "detail"} <= set(
        report["results"][0]
    )
    suite = next(iter(JUnitXml.fromfile(str(junit_path))))
    assert suite.tests == len(report["results"])
    assert suite.failures == summary["failed"]
    assert f"{summary['passed']} passed, 0 failed" in capsys.readouterr().out


def test_failing_implementation_exits_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_path = tmp_path / "r.json"
    args = ["run", "-q", "-k", "join", "--impl", "tests.fakes:silent"]
    code = main([*args, "--report-json", str(report_path)])
    assert code == 1
    out = capsys.readouterr().out
    assert "DOES NOT CONFORM" in out
    report = json.loads(report_path.read_text())
    assert report["summary"]["failed"] > 0
    assert _closing_line(out) == summary_line(report["summary"])
    failed = [r for r in report["results"] if r["status"] == "fail"]
    assert failed
    assert all(r["detail"] for r in failed)


def test_crashing_implementation_exits_one_with_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-q", "--impl", "tests.fakes:crashing", "-k", "join"]) == 1
    out = capsys.readouterr().out
    assert "errors" in _closing_line(out)
    assert "segfault-ish" in out


def test_selection_by_pattern_and_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-k", "cancel", "--contract", "write-observer-chain"]) == 0
    out = capsys.readouterr().out
    # "[ 1/10] PASS id": the counter is padded, so take the word after PASS.
    ran = {line.split(" PASS ")[1].split()[0] for line in out.splitlines() if " PASS " in line}
    wanted = {
        s.id
        for s in load_scenarios()
        if s.contract == "write-observer-chain"
        and ("cancel" in s.id or "cancel" in s.title.lower() or any("cancel" in t for t in s.tags))
    }
    assert ran == wanted
    assert ran


def test_selection_matching_nothing_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-k", "no-such-scenario-anywhere"]) == 2
    assert "no scenario matches" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("impl", "needle"),
    [
        ("nonsense", "neither a built-in name"),
        ("no_such_module_xyz:adapter", "cannot import module"),
        ("tests.fakes:missing", "has no attribute"),
        ("tests.fakes:CONTRACTS", "is not an adapter"),
    ],
)
def test_bad_impl_is_a_usage_error(
    impl: str, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--impl", impl]) == 2
    assert needle in capsys.readouterr().err


def test_usage_errors_exit_two() -> None:
    with pytest.raises(SystemExit) as caught:
        main(["run", "--contract", "nope"])
    assert caught.value.code == 2


def test_rules_json_lists_every_rule_with_its_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == [r.id for r in catalogue()]
    for row in rows:
        assert set(row) == {"id", "contract", "level", "scenarios"}
        if row["contract"] == "write-observer-chain":
            assert row["scenarios"], f"{row['id']} is cited by no scenario"


def test_console_script_runs_from_any_folder(tmp_path: Path) -> None:
    """The installed command finds the shipped scenarios without the source tree."""
    proc = subprocess.run(
        [sys.executable, "-m", "seamspec", "run", "-q", "-k", "join"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _closing_line(proc.stdout).endswith("passed, 0 failed")


def test_reference_trio_without_trio_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "trio" else real(name, *a)
    )
    assert main(["run", "--impl", "reference-trio"]) == 2
    assert "pip install 'seamspec[trio]'" in capsys.readouterr().err


def test_rules_table_keeps_bracketed_text_of_rules(capsys: pytest.CaptureFixture[str]) -> None:
    """Rule texts are printed as text, not as console markup: DR-OUTCOME-TEXT's exact
    literals (``[tool call denied] ``, the withheld notice) once vanished from the table
    because rich read ``[...]`` as a style tag (outsider batch 5's report)."""
    assert main(["rules", "--contract", "dispatch-recorder"]) == 0
    rows = [line.split("│") for line in capsys.readouterr().out.splitlines()]
    # The text column, wrapped over several lines, read back as one text per table.
    text = " ".join(" ".join(r[-2].split()) for r in rows if len(r) > 2)
    assert "`[tool call denied] ` followed by the reason" in text
    assert "`[result withheld: its redaction could not be recorded]`" in text
