"""``seamspec fuzz --impl-cmd``: generated scenarios over the wire, counted as ``run`` counts.

What must hold for a harness author who fuzzes an implementation in another language:
the JavaScript example passes; kit mutants served over the wire are found, and the saved
file fails ``seamspec run`` over the wire the same way, under the same profile; a crash
and a hang each give a saved, shrunk reproducer and leave no process behind; only what
the implementation declares is sent; a run that judged nothing fails.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from seamspec._cli import main
from tests.fuzz_mutants_wire import fuzz_mutant

FAKE = Path(__file__).parent / "wire_fakes" / "fuzz_fake.py"
JS = Path(__file__).parent.parent / "examples" / "js" / "seamspec-impl.mjs"
WOC = "write-observer-chain"


def fake(mode: str, file: Path) -> str:
    return f"{sys.executable} {FAKE} {mode} {file}"


def alive(pid: int) -> bool:
    """True if ``pid`` is a running (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def left_behind(pidfile: Path, limit: float = 5.0) -> list[int]:
    """The pids the fake recorded that still run after ``limit`` s (init reaps orphans)."""
    pids = [int(line) for line in pidfile.read_text().split()]
    assert pids, "the fake recorded no process"
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return []
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def saved_file(folder: Path) -> Path:
    (path,) = sorted(folder.glob("*.yaml"))
    return path


def run_report(tmp_path: Path, *args: str) -> tuple[int, dict[str, str]]:
    """``seamspec run ARGS``: the exit code and what each scenario counted as."""
    report = tmp_path / "run.json"
    code = main(["run", "-q", *args, "--report-json", str(report)])
    results = json.loads(report.read_text())["results"]
    return code, {r["scenario"]: r["counts_as"] for r in results}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_js_example_fuzzes_what_it_declares_and_passes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["fuzz", "--impl-cmd", f"node {JS}", "--examples", "20", "--seed", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "write-observer-chain: every example passed (20 judged" in out
    assert "dispatch-recorder: every example passed (20 judged" in out
    assert out.strip().splitlines()[-1] == (
        "2 contract(s) passed, 0 failed, 1 skipped (shell-output)"
    )


def test_a_finding_counts_as_under_run_with_the_same_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The bug this was built on: against woc-join-newline, fuzz saved a scenario that
    broke only WOC-JOIN-EXACT (seamspec's, a recommendation by default), which then
    conformed under run. Under the default profile what fuzz reports must fail run."""
    found = tmp_path / "found"
    args = ["fuzz", "--impl", "mutant:woc-join-newline", "--contract", WOC]
    assert main([*args, "--examples", "500", "--seed", "1", "--save-failures", str(found)]) == 1
    out = capsys.readouterr().out
    path = saved_file(found)
    assert "[WOC-JOIN]" in path.read_text()
    assert f"`seamspec run --impl mutant:woc-join-newline --scenarios {path}`" in out
    code, counted = run_report(
        tmp_path, "--impl", "mutant:woc-join-newline", "--scenarios", str(path)
    )
    assert (code, counted) == (1, {path.stem: "failure"})
    assert run_report(tmp_path, "--scenarios", str(path)) == (0, {path.stem: "pass"})


# A write-observer-chain mutant of an upstream rule, found over the wire and replayed, is
# docs/quality.md's console example (woc-after-reversed: fuzz --impl-cmd, run --impl-cmd on
# what it saved, the reference on it), which tests/test_doc_examples.py runs: not again here.
@pytest.mark.parametrize(
    ("mutant", "profile", "kind"),
    [
        ("dr-rewrite-fail-open", "upstream", "failure"),
        ("dr-cancel-swallowed", "strict", "failure"),  # a seamspec rule: strict only
        ("woc-warn-never", "strict", "warning"),  # a SHOULD rule: never a failure
    ],
)
def test_a_mutant_served_over_the_wire_is_found_and_replays(
    mutant: str, profile: str, kind: str, tmp_path: Path
) -> None:
    # A failure ends the search at once; a warning is only looked for once the whole
    # first search found nothing counted, so its examples are all run: fewer of them
    # (60 find it with this seed), to keep the test near 20 s rather than 90 s.
    examples = 60 if kind == "warning" else 300
    outcome = fuzz_mutant(mutant, examples=examples, seed=1, profile=profile, folder=tmp_path)
    assert outcome.ok, outcome.line()
    assert set(outcome.found.values()) == {kind}


def test_a_crash_gives_a_shrunk_reproducer_and_leaves_no_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pids, found = tmp_path / "pids", tmp_path / "found"
    command = fake("crash", pids)
    args = ["fuzz", "--impl-cmd", command, "--contract", WOC, "--examples", "30", "--seed", "1"]
    assert main([*args, "--save-failures", str(found)]) == 1
    out = capsys.readouterr().out
    assert "ERROR (the implementation crashed, hung or broke the protocol) on this shrunk" in out
    assert not left_behind(pids)
    path = saved_file(found)
    document = yaml.safe_load(path.read_text())
    assert "exited with code 3" in path.read_text()
    # Shrunk: the least that meets the fake's trigger is two observers.
    assert len(document["given"]["observers"]) == 2
    code, counted = run_report(tmp_path, "--impl-cmd", command, "--scenarios", str(path))
    assert (code, counted) == (1, {path.stem: "error"})
    assert not left_behind(pids)


def test_a_hang_gives_a_shrunk_reproducer_and_leaves_no_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pids, found = tmp_path / "pids", tmp_path / "found"
    command = fake("hang", pids)
    args = ["fuzz", "--impl-cmd", command, "--contract", WOC, "--request-timeout", "1.5"]
    assert main([*args, "--examples", "30", "--seed", "1", "--save-failures", str(found)]) == 1
    out = capsys.readouterr().out
    assert not left_behind(pids)
    path = saved_file(found)
    assert "did not answer scenario woc-fuzz within 1.5 s" in path.read_text()
    assert len(yaml.safe_load(path.read_text())["given"]["observers"]) == 2
    # The command fuzz prints carries its limit, so the replay does not wait a minute.
    assert f"--request-timeout 1.5 --scenarios {path}`" in out
    code, counted = run_report(
        tmp_path, "--impl-cmd", command, "--request-timeout", "1.5", "--scenarios", str(path)
    )
    assert (code, counted) == (1, {path.stem: "error"})
    assert not left_behind(pids)


def test_restarts_used_up_stop_fuzzing_with_a_reproducer_that_still_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Left to go on, every example would error "not run" and be shrunk into a scenario
    that passes: fuzzing stops instead, with the smallest failure seen."""
    pids, found = tmp_path / "pids", tmp_path / "found"
    command = fake("crash", pids)
    args = ["fuzz", "--impl-cmd", command, "--contract", WOC, "--max-restarts", "1"]
    assert main([*args, "--examples", "30", "--seed", "1", "--save-failures", str(found)]) == 1
    out = capsys.readouterr().out
    assert "fuzzing stopped early: the implementation's restarts are used up (1," in out
    path = saved_file(found)
    assert "(error; not fully shrunk)" in path.read_text()
    code, counted = run_report(tmp_path, "--impl-cmd", command, "--scenarios", str(path))
    assert (code, counted) == (1, {path.stem: "error"})
    assert not left_behind(pids)


def test_only_declared_features_are_sent(tmp_path: Path) -> None:
    """The fake declares no optional feature: no write tool and no hook time limit."""
    requests = tmp_path / "requests"
    args = ["fuzz", "--impl-cmd", fake("record", requests), "--contract", WOC]
    assert main([*args, "--examples", "40", "--seed", "2"]) == 0
    sent = [json.loads(line) for line in requests.read_text().splitlines()]
    assert len(sent) >= 40
    assert {r["contract"] for r in sent} == {WOC}
    steps = {kind for r in sent for step in r["when"] for kind in step}
    assert not steps & {"write", "edit", "delete"}
    assert not any("hook_time_limit" in r["given"] for r in sent)


def test_a_run_that_judged_nothing_says_so_and_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["fuzz", "--impl-cmd", fake("skip", tmp_path / "pids"), "--examples", "10"]
    assert main([*args, "--seed", "1"]) == 1
    out = capsys.readouterr().out
    assert "write-observer-chain: SKIPPED: no generated example" in out
    assert "nothing was judged" in out
    assert "nothing was fuzzed: every contract was skipped" in out
    assert out.strip().splitlines()[-1] == (
        "0 contract(s) passed, 0 failed, 3 skipped "
        "(write-observer-chain, shell-output, dispatch-recorder)"
    )


def test_sigterm_stops_fuzzing_at_once_and_leaves_no_process(tmp_path: Path) -> None:
    """A CI job's cancel: hypothesis would take the SystemExit ``run`` raises on SIGTERM
    for a failing example and go on shrinking, so fuzz must stop another way."""
    pids = tmp_path / "pids"
    command = [sys.executable, "-m", "seamspec", "fuzz", "--impl-cmd", fake("hang", pids)]
    command += ["--contract", WOC, "--request-timeout", "30", "--examples", "30", "--seed", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        # The fake records its own pid, then its grandchild's once it hangs.
        while time.monotonic() < deadline and (
            not pids.exists() or len(pids.read_text().split()) < 2
        ):
            time.sleep(0.05)
        assert len(pids.read_text().split()) >= 2, "the fake never hung"
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 143, err
    assert "terminated (SIGTERM)" in err
    assert not left_behind(pids)
