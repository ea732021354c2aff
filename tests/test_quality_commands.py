"""``seamspec mutants`` and ``rules --coverage`` as CI gates."""

from __future__ import annotations

import json
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
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"{len(rows)} killed, 0 survived"
