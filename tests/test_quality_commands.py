"""``seamspec mutants`` and ``rules --coverage`` as CI gates."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest

from seamspec._cli import main
from seamspec.conformance import load_scenarios
from seamspec.conformance._core.patience import capped, patient
from seamspec.conformance._core.runner import Finding, Runner, ScenarioResult
from seamspec.conformance._core.scenario import Scenario
from seamspec.conformance._core.schedule import side_by_side
from seamspec.conformance._implementations import reference_adapter
from seamspec.conformance._quality.kill_matrix import (
    _in_order,
    kill_level,
    kill_matrix,
    kills,
    patience,
)


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
    outcome = kill_matrix(scenarios, names=["woc-after-reversed", "woc-join-newline"])
    by_name = {o.name: o for o in outcome}
    assert by_name["woc-after-reversed"].verdict in ("caught-elsewhere", "survived")
    # Not killed: every scenario of the contract was tried before saying so.
    assert by_name["woc-after-reversed"].scenarios_run == len(scenarios)
    assert by_name["woc-join-newline"].verdict == "killed"


def test_kill_matrix_stops_at_the_first_kill_by_a_citing_scenario() -> None:
    scenarios = load_scenarios()
    citing = [s.id for s in scenarios if "WOC-JOIN" in s.rules]
    (outcome,) = kill_matrix(scenarios, names=["woc-join-newline"])
    assert outcome.verdict == "killed"
    assert outcome.killed_by_citing == outcome.killed_by[-1:]
    assert outcome.killed_by_citing[0] in citing
    assert outcome.scenarios_run < len(citing), "the search went on after the first kill"


def _result(scenario: Scenario, *findings: Finding) -> ScenarioResult:
    return ScenarioResult(scenario, "fail" if findings else "pass", findings=list(findings))


def test_a_kill_needs_a_citing_scenario_and_a_counted_finding_at_the_rule_s_level() -> None:
    scenarios = load_scenarios()
    by_id = {s.id: s for s in scenarios}
    join = by_id["woc-join-identical-annotations-both-kept"]
    assert "WOC-JOIN" in join.rules
    assert "WOC-ORDER-AFTER" not in join.rules
    must = Finding("oracle", "WOC-JOIN", "MUST", "joined wrongly")
    should = Finding("then", None, "SHOULD", "a SHOULD scenario's then")
    strict_only = Finding("oracle", "WOC-JOIN", "MUST", "joined wrongly", profile="strict")
    assert kills(_result(join, must), "WOC-JOIN", "MUST")
    assert not kills(_result(join), "WOC-JOIN", "MUST")
    assert not kills(_result(join, must), "WOC-ORDER-AFTER", "MUST"), "not citing the rule"
    assert not kills(_result(join, should), "WOC-JOIN", "MUST"), "a SHOULD finding only"
    assert not kills(_result(join, strict_only), "WOC-JOIN", "MUST"), "WOC-JOIN is upstream"
    errored = ScenarioResult(join, "error", "crashed", findings=[must])
    assert not kills(errored, "WOC-JOIN", "MUST")
    # A SHOULD rule no MUST scenario cites is caught at SHOULD; one that MUST scenarios
    # cite (WOC-SLOW, through WOC-SLOW-BOUNDED's) must be caught at MUST.
    assert kill_level("WOC-FAIL-WARN", scenarios) == "SHOULD"
    assert kill_level("WOC-SLOW", scenarios) == "MUST"
    assert kill_level("WOC-JOIN", scenarios) == "MUST"


def test_mutants_command_writes_the_matrix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A slice of two mutants of two contracts; the whole matrix is the `mutants` session."""
    out = tmp_path / "kill.json"
    picked = ["dr-record-twice", "woc-join-newline"]
    args = ["mutants", "--report-json", str(out)]
    code = main([*args, "--mutant", picked[1], "--mutant", picked[0]])
    assert code == 0
    rows = json.loads(out.read_text())
    assert [row["mutant"] for row in rows] == picked
    assert all(row["verdict"] == "killed" for row in rows)
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[0] == f"2 mutants against {len(load_scenarios())} scenarios, 8 at a time"
    assert printed[-1] == f"{len(rows)} killed, 0 survived"
    # progress: one line per mutant as it finishes, counted, with an estimate of the rest
    progress = [line for line in printed if re.match(r"^\[\s*\d+/\d+\] ", line)]
    assert [int(line[1:].split("/")[0]) for line in progress] == list(range(1, len(rows) + 1))
    assert all("(ETA " in line for line in progress[:-1])
    assert progress[-1].endswith("(done)")
    named = {re.split(r"\s+", line.split("] ", 1)[1])[1] for line in progress}
    assert named == {row["mutant"] for row in rows}


def test_mutants_command_refuses_an_unknown_mutant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mutants", "--mutant", "woc-join-newlin"]) == 2
    assert "did you mean 'woc-join-newline'?" in capsys.readouterr().err
    args = ["mutants", "--mutant", "woc-join-newline", "--contract", "shell-output"]
    assert main(args) == 2
    assert "no mutant matches both --mutant and --contract" in capsys.readouterr().err


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


def test_the_kill_matrix_table_names_every_registered_mutant() -> None:
    """docs/quality.md's table is written by tests/kill_matrix_doc.py from a real run;
    a mutant added or changed without rerunning it fails here."""
    from seamspec.conformance._quality.mutants import all_mutants
    from tests.kill_matrix_doc import table_rows

    text = (Path(__file__).parent.parent / "docs" / "quality.md").read_text(encoding="utf-8")
    start, end = table_rows(text)
    shown = {}
    for line in text.split("\n")[start:end]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        shown[cells[0].strip("`")] = (cells[1], cells[2], cells[4])
    registered = all_mutants()
    assert set(shown) == set(registered), (
        f"missing from the table: {sorted(set(registered) - set(shown))}; "
        f"no longer registered: {sorted(set(shown) - set(registered))} "
        "(run seamspec mutants --report-json R.json; python -m tests.kill_matrix_doc R.json docs/quality.md)"
    )
    for name, mutant in registered.items():
        _contract, rule, killed = shown[name]
        assert rule == mutant.rule, (name, rule, mutant.rule)
        assert killed.startswith("`"), f"{name}: the table says {killed}, not a killing scenario"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_reference_passes_every_scenario_under_the_kill_matrix_patience(backend: str) -> None:
    """The kill matrix caps the kit's waits on a mutant (``kill_matrix.patience``): a
    bound only fair if a conforming implementation meets it, so the reference must pass
    every scenario under it, several at once as the matrix runs them."""
    pytest.importorskip(backend)
    adapter = reference_adapter(backend)
    runner = Runner(adapter, timeout=60.0)

    def run(scenario: Scenario) -> ScenarioResult:
        with capped(patience(scenario)):
            return runner.run_one(scenario)

    try:
        results = side_by_side(
            run, load_scenarios(), 4, on_done=lambda _: None, stop=lambda _: False
        )
    finally:
        adapter.close()
    bad = [f"{r.scenario.id}: {r.status} {r.detail[:300]}" for r in results if r.status == "fail"]
    bad += [f"{r.scenario.id}: error {r.detail[:300]}" for r in results if r.status == "error"]
    assert not bad, "\n".join(bad)


def test_a_patience_cap_reaches_the_adapter_thread_and_only_shortens() -> None:
    assert patient(5.0) == 5.0
    seen: list[float] = []

    class Probe:
        def run(self, request: object) -> list[object]:
            seen.append(patient(5.0))
            return []

    runner = Runner.__new__(Runner)
    runner.adapter, runner.timeout = Probe(), 5.0  # type: ignore[assignment]
    scenario = load_scenarios()[0]
    with capped(1.5):
        assert patient(5.0) == 1.5
        assert patient(1.0) == 1.0
        runner._call_adapter(scenario)
    assert seen == [1.5]
    assert patient(5.0) == 5.0
    with pytest.raises(ValueError, match="must be positive"), capped(0):
        pass


def test_looking_ahead_hands_results_back_in_order_and_stops_starting() -> None:
    scenarios = load_scenarios()[:12]
    started: list[str] = []
    lock = threading.Lock()

    def run(scenario: Scenario) -> ScenarioResult:
        with lock:
            started.append(scenario.id)
        # later scenarios finish first: the order handed back must not follow finishing
        time.sleep(0.02 * (12 - scenarios.index(scenario)) / 12)
        return ScenarioResult(scenario, "pass")

    got = []
    for result in _in_order(run, scenarios, 4):
        got.append(result.scenario.id)
        if len(got) == 3:
            break
    assert got == [s.id for s in scenarios[:3]]
    time.sleep(0.1)  # what was running has ended
    so_far = len(started)
    time.sleep(0.1)
    assert len(started) == so_far, "kept starting scenarios after the caller stopped"
    assert started == [s.id for s in scenarios[:so_far]], "started out of order"
