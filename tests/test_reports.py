"""Reports, manifests and the CI gate, as a user drives them from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from junitparser import JUnitXml

from seamspec._cli import main

MUTANT = "mutant:woc-after-reversed"
WOC = ["--contract", "write-observer-chain"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["run", "-q", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("reports")
    paths = {
        "reference": folder / "ref.json",
        "mutant": folder / "mut.json",
        "junit": folder / "mut.xml",
    }
    assert main(["run", "-q", *WOC, "--report-json", str(paths["reference"])]) == 0
    assert (
        main(
            [
                "run",
                "-q",
                *WOC,
                "--impl",
                MUTANT,
                "--report-json",
                str(paths["mutant"]),
                "--junit-xml",
                str(paths["junit"]),
                "--write-manifest",
                str(folder / "manifest.yaml"),
            ]
        )
        == 1
    )
    paths["manifest"] = folder / "manifest.yaml"
    return paths


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_manifest_turns_known_failures_into_xfail(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = yaml.safe_load(reports["manifest"].read_text())
    failed = {r["scenario"] for r in _load(reports["mutant"])["results"] if r["status"] == "fail"}
    assert set(manifest["expected_failures"]) == failed
    code, out, _ = _run(
        capsys, *WOC, "--impl", MUTANT, "--expect", str(reports["manifest"]), "--strict"
    )
    assert code == 0
    assert out.strip().splitlines()[-1].endswith(f" 0 failed, {len(failed)} xfailed")


def test_written_manifest_leaves_out_recommendations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run with strict-profile recommendations writes a manifest it then passes with --strict.

    woc-join-newline breaks upstream's WOC-JOIN (failures) and seamspec's WOC-JOIN-EXACT
    (recommendations under the default profile); only the failures belong in the file.
    """
    manifest, report = tmp_path / "gaps.yaml", tmp_path / "r.json"
    args = ["--impl", "mutant:woc-join-newline", "-k", "join"]
    code, _, _ = _run(
        capsys, *args, "--write-manifest", str(manifest), "--report-json", str(report)
    )
    assert code == 1
    results = _load(report)["results"]
    recommended = {r["scenario"] for r in results if r["counts_as"] == "recommendation"}
    failed = {r["scenario"] for r in results if r["counts_as"] == "failure"}
    assert recommended
    assert failed
    assert set(yaml.safe_load(manifest.read_text())["expected_failures"]) == failed
    code, out, _ = _run(capsys, *args, "--expect", str(manifest), "--strict")
    assert code == 0, out


def test_unexpected_pass_fails_only_with_strict(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, *WOC, "--expect", str(reports["manifest"]))
    assert code == 0
    assert "unexpected pass" in out
    assert "xpassed" in out.strip().splitlines()[-1]
    code, out, _ = _run(capsys, *WOC, "--expect", str(reports["manifest"]), "--strict")
    assert code == 1
    assert "DOES NOT CONFORM" in out


def test_manifest_with_unknown_scenario_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "expected_failures:\n  woc-join-two-annotations: {reason: known}\n  woc-no-such-thing: {reason: x}\n"
    )
    code, _, err = _run(capsys, "--expect", str(manifest))
    assert code == 2
    assert f"{manifest}:3: manifest names unknown scenario 'woc-no-such-thing'" in err


def test_malformed_manifest_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("expected_failures:\n  woc-join-two-annotations: {}\n")
    code, _, err = _run(capsys, "--expect", str(manifest))
    assert code == 2
    assert "'reason' is a required property" in err


def test_diff_reports_regressions_with_exit_one(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", str(reports["reference"]), str(reports["mutant"])]) == 1
    out = capsys.readouterr().out
    assert "newly failing" in out
    assert "woc-join-two-annotations: pass -> failure" in out
    assert main(["diff", str(reports["mutant"]), str(reports["reference"])]) == 0
    assert "newly passing" in capsys.readouterr().out
    assert main(["diff", str(reports["reference"]), str(reports["reference"])]) == 0
    assert "no change" in capsys.readouterr().out


def test_diff_rejects_a_file_that_is_not_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bogus = tmp_path / "x.json"
    bogus.write_text('{"hello": 1}')
    assert main(["diff", str(bogus), str(bogus)]) == 2
    assert "not a seamspec JSON report" in capsys.readouterr().err


def test_every_format_agrees_on_the_counts(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _load(reports["mutant"])
    summary = report["summary"]
    suite = next(iter(JUnitXml.fromfile(str(reports["junit"]))))
    assert suite.tests == len(report["results"])
    assert suite.failures == summary["failed"]
    assert suite.skipped == summary["skipped"]
    assert main(["report", "markdown", str(reports["mutant"])]) == 0
    markdown = capsys.readouterr().out
    row = next(line for line in markdown.splitlines() if line.startswith("| seamspec-mutant"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:6] == [str(summary["passed"]), str(summary["failed"]), str(summary["errors"])]
    assert main(["report", "badge", str(reports["mutant"]), "-o", str(tmp_path / "b.json")]) == 0
    badge = json.loads((tmp_path / "b.json").read_text())
    assert badge["color"] == "red"
    assert badge["message"].startswith(
        f"{summary['passed'] - sum(1 for r in report['results'] if r['status'] == 'pass' and r['level'] == 'SHOULD')}/"
    )
    assert (
        main(
            [
                "report",
                "html",
                str(reports["reference"]),
                str(reports["mutant"]),
                "-o",
                str(tmp_path / "r.html"),
            ]
        )
        == 0
    )
    html = (tmp_path / "r.html").read_text()
    assert 'id="rule-matrix"' in html
    assert html.count('class="failure"') == summary["failed"]


def test_parallel_run_gives_the_same_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = tmp_path / "j1.json", tmp_path / "j2.json"
    some = ["-k", "woc-[jn]*"]  # a slice with passes and failures; the whole suite is CI's
    assert main(["run", "-q", *some, "--impl", MUTANT, "--report-json", str(one)]) == 1
    assert main(["run", "-q", *some, "--impl", MUTANT, "-j", "2", "--report-json", str(two)]) == 1
    capsys.readouterr()
    statuses = [[(r["scenario"], r["status"]) for r in _load(p)["results"]] for p in (one, two)]
    assert statuses[0] == statuses[1]
    assert {"pass", "fail"} <= {status for _, status in statuses[0]}


def test_max_fail_stops_early(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, *WOC, "--impl", MUTANT, "--max-fail", "2")
    assert code == 1
    assert "stopped early" in out
    assert out.strip().splitlines()[-1].endswith(" 2 failed")


def test_explain_rule_and_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "WOC-JOIN"]) == 0
    out = capsys.readouterr().out
    assert "why" in out
    assert "woc-join-two-annotations" in out
    assert main(["explain", "woc-cancel-propagates"]) == 0
    out = capsys.readouterr().out
    assert "** cancel c1 **" in out
    assert "<- blocker.after_write  [c1] cancelled" in out
    assert main(["explain", "nothing-like-this"]) == 2


def _result(scenario: str, status: str, counts_as: str, level: str = "MUST") -> dict[str, Any]:
    return {"scenario": scenario, "status": status, "counts_as": counts_as, "level": level}


def test_diff_and_badge_judge_by_what_a_result_counts_as() -> None:
    """A recommendation is no failure under the profile: not newly failing, passed in the badge."""
    from seamspec.conformance._reports.summaries import badge_json, compare_reports

    old = {"results": [_result("a", "pass", "pass"), _result("b", "pass", "pass")]}
    new = {"results": [_result("a", "fail", "recommendation"), _result("b", "fail", "failure")]}
    changes = compare_reports(old, new)
    assert changes["newly failing"] == ["b: pass -> failure"]
    assert changes["other status changes"] == ["a: pass -> recommendation"]
    assert compare_reports(new, old)["newly passing"] == ["b: failure -> pass"]
    report = {**new, "summary": {"failed": 1, "errors": 0}, "verdict": "does not conform"}
    assert badge_json(report)["message"] == "1/2 MUST"


def test_markdown_and_html_name_rules_judged_by_declaration() -> None:
    """A pass the kit could not watch (e.g. fsyncs over the wire) is marked in every format."""
    from seamspec.conformance._reports.html import html_report
    from seamspec.conformance._reports.summaries import by_declaration, markdown_summary

    passing = {
        **_result("dr-journal-durable-across-steps", "pass", "pass"),
        "contract": "dispatch-recorder",
        "rules": ["DR-JOURNAL-DURABLE"],
        "broken_rules": [],
        "findings": [],
        "title": "t",
        "duration": 0.1,
        "detail": "",
        "judged_by_declaration": [{"rule": "DR-JOURNAL-DURABLE", "why": "over the wire"}],
    }
    report = {
        "kit": {"version": "0"},
        "spec_version": "0",
        "profile": "upstream",
        "implementation": {
            "name": "wired",
            "version": "1",
            "language": "rust",
            "contracts": ["dispatch-recorder"],
        },
        "summary": {
            "passed": 1,
            "failed": 0,
            "errors": 0,
            "skipped": 0,
            "xfailed": 0,
            "xpassed": 0,
            "warnings": 0,
        },
        "verdict": "conforms",
        "results": [passing],
    }
    assert by_declaration(report) == {"DR-JOURNAL-DURABLE": ["dr-journal-durable-across-steps"]}
    assert "DR-JOURNAL-DURABLE: 1 passing scenario(s) judged on what" in markdown_summary([report])
    assert "DR-JOURNAL-DURABLE judged by declaration in 1 passing" in html_report([report])
