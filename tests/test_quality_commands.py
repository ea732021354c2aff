"""``seamspec mutants`` and ``rules --coverage`` as CI gates."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seamspec._cli import main
from seamspec.conformance import load_scenarios
from seamspec.conformance._core.scenario import Scenario
from seamspec.conformance._quality.kill_matrix import kill_matrix


def test_coverage_gate_passes_for_the_shipped_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--coverage"]) == 0
    assert "0 gap(s)" in capsys.readouterr().out


def test_kill_matrix_reports_a_survivor_when_scenarios_are_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With only the scenarios that cite WOC-JOIN and not WOC-ORDER-AFTER, the
    reversed-order mutant is not caught for the right reason: the command must say so and
    exit non-zero."""
    scenarios: list[Scenario] = [
        s for s in load_scenarios() if "WOC-JOIN" in s.rules and "WOC-ORDER-AFTER" not in s.rules
    ]
    outcome = kill_matrix(scenarios, contracts=["write-observer-chain"])
    by_name = {o.name: o for o in outcome}
    assert by_name["woc-after-reversed"].verdict in ("caught-elsewhere", "survived")
    assert by_name["woc-join-newline"].verdict == "killed"


def test_mutants_command_writes_the_matrix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "kill.json"
    code = main(
        ["mutants", "--contract", "write-observer-chain", "-j", "2", "--report-json", str(out)]
    )
    assert code == 0
    rows = json.loads(out.read_text())
    assert rows
    assert all(row["verdict"] == "killed" for row in rows)
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1] == f"{len(rows)} killed, 0 survived"
    # progress: one line per mutant as it finishes, counted, with an estimate of the rest
    progress = [line for line in printed if re.match(r"^\[\s*\d+/\d+\] ", line)]
    assert [int(line[1:].split("/")[0]) for line in progress] == list(range(1, len(rows) + 1))
    assert all("(ETA " in line for line in progress[:-1])
    assert progress[-1].endswith("(done)")
    named = {re.split(r"\s+", line.split("] ", 1)[1])[1] for line in progress}
    assert named == {row["mutant"] for row in rows}


def test_fuzz_never_reports_a_skipped_contract_as_passed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The mutant declares only write-observer-chain: shell-output is skipped, not passed,
    and a run that fuzzed nothing fails."""
    args = ["fuzz", "--impl", "mutant:woc-after-reversed", "--examples", "5", "--seed", "1"]
    assert main([*args, "--contract", "shell-output"]) == 1
    out = capsys.readouterr().out
    assert "shell-output: SKIPPED" in out
    assert "nothing was fuzzed" in out
    assert (
        out.strip().splitlines()[-1] == "0 contract(s) passed, 0 failed, 1 skipped (shell-output)"
    )


def test_fuzz_shows_examples_judged_per_contract(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["fuzz", "--contract", "dispatch-recorder", "--examples", "20", "--seed", "3"]
    assert main(args) == 0
    out = capsys.readouterr().out
    progress = re.findall(r"dispatch-recorder: (\d+)/20 examples judged \(ETA [^)]+\)", out)
    assert [int(n) for n in progress] == list(range(2, 20, 2))
    assert "dispatch-recorder: every example passed (20 judged" in out
    assert out.strip().splitlines()[-1] == "1 contract(s) passed, 0 failed"
