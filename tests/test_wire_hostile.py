"""Hostile implementations: the kit's memory stays bounded, every misplaced answer is
blamed on the scenario it belongs to, and nothing an implementation starts outlives the run.

The figures of docs/reliability.md come from ``tests/hostile_trials.py`` run in full; the
tests here run the same trials, fewer of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from seamspec.conformance import Runner, RunResult, load_scenarios
from seamspec.conformance._core import processes
from seamspec.conformance._wire.child import STDERR_LINE_LIMIT, STDOUT_LINE_LIMIT
from seamspec.conformance._wire.client import WireAdapter
from seamspec.conformance._wire.messages import MAX_VALUES, ProtocolError, decode_line
from tests.hostile_trials import memory_trial

FAKE = Path(__file__).parent / "wire_fakes" / "fake_impl.py"
SCENARIOS = [s for s in load_scenarios() if s.contract == "write-observer-chain" and not s.requires]
MIB = 1024 * 1024
#: The bound the kit promises (docs/reliability.md), whatever an implementation writes.
MEMORY_BOUND_MB = 256


def fake(mode: str, arg: str = "") -> list[str]:
    return [sys.executable, str(FAKE), mode, *([arg] if arg else [])]


def run(mode: str, count: int = 3, **options: float) -> tuple[RunResult, WireAdapter]:
    adapter = WireAdapter(fake(mode), **options)  # type: ignore[arg-type]  # kwargs by name
    runner = Runner(adapter, timeout=60)
    results = []
    try:
        for scenario in SCENARIOS[:count]:
            results.append(runner.run_one(scenario))
            late = runner.late_results()
            results = [
                next((x for x in late if x.scenario.id == r.scenario.id), r) for r in results
            ]
    finally:
        adapter.close()
    late = runner.late_results()
    results = [next((x for x in late if x.scenario.id == r.scenario.id), r) for r in results]
    return RunResult(runner.info, results, 0, 0), adapter


# -- memory ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "argument", "needle"),
    [
        ("huge-stdout-line", str(2 * STDOUT_LINE_LIMIT), "more than 32 MiB to its stdout"),
        ("huge-stderr-line", str(4 * STDERR_LINE_LIMIT), "more than 1 MiB to its stderr"),
        ("wide", str(30 * MIB), f"holds more than {MAX_VALUES} JSON values"),
        ("deep", str(400_000), "nests its JSON too deeply"),
    ],
)
def test_memory_is_bounded_and_the_stream_and_limit_are_named(
    mode: str, argument: str, needle: str
) -> None:
    outcome = memory_trial(mode, argument, pattern="woc-cancel-[dp]*")
    assert outcome.exit_code == 1, outcome.output
    assert outcome.peak_mb <= MEMORY_BOUND_MB, f"{mode}: kit peak {outcome.peak_mb:.0f} MB"
    text = " ".join(outcome.output.split())
    assert needle in text, outcome.output[-2000:]
    # reported against the scenario being run, which is named in the same message
    assert "scenario woc-cancel-during-before-write: the implementation" in text
    assert not outcome.traceback
    assert outcome.leftovers == []


def test_a_long_legitimate_trace_is_still_read() -> None:
    """The value limit counts values outside strings: long strings with commas pass."""
    text = "a,b,[c],{d}," * 200_000
    line = json.dumps({"type": "trace", "seq": 1, "trace": [{"type": "x", "text": text}]})
    assert len(line) > 2 * MIB
    assert decode_line(line.encode(), expected=("trace",), strict=False)["trace"][0]["text"] == text
    with pytest.raises(ProtocolError, match="JSON values"):
        decode_line(b"[" + b"{}," * 400_000 + b"{}]", expected=("trace",), strict=False)


# -- answers out of turn -----------------------------------------------------------------


def test_a_duplicate_in_the_same_write_is_the_answered_scenario_error() -> None:
    result, _ = run("duplicate", count=2)
    assert [r.status for r in result.results] == ["error", "error"]
    first = result.results[0]
    assert f"scenario {first.scenario.id}: the implementation broke the protocol" in first.detail
    assert "it wrote more after its answer" in first.detail
    assert '"seq": 1' in first.detail


def test_a_late_duplicate_blames_the_earlier_scenario_not_the_next() -> None:
    result, _ = run("duplicate-late", count=3, max_restarts=5)
    first, second, third = result.results
    assert first.status == "error"
    assert "answered this scenario (seq 1) a second time" in first.detail
    assert f"waiting for its answer to scenario {second.scenario.id}" in first.detail
    assert second.status == "error"  # its own duplicate came during the third
    assert third.status == "pass"  # the last one was never duplicated: judged on its merits


def test_a_seqless_error_after_an_answer_is_placed_on_that_answer() -> None:
    same_write, _ = run("seqless-error", count=1)
    assert same_write.results[0].status == "error"
    assert "background failure after seq 1" in same_write.results[0].detail
    later, _ = run("seqless-error-late", count=2)
    first, second = later.results
    assert first.status == "error"
    assert "wrote an error without seq, which answers no run" in first.detail
    assert second.status == "pass"  # asked again of a fresh child, answered properly


def test_a_seqless_error_answer_is_the_scenario_own_protocol_error() -> None:
    result, adapter = run("seqless-answer", count=2)
    assert [r.status for r in result.results] == ["error", "error"]
    for seq, r in enumerate(result.results, 1):
        assert f"scenario {r.scenario.id}: the implementation broke the protocol" in r.detail
        assert f"forgot seq {seq}" in r.detail
    assert adapter.restarts >= 1


def test_output_after_the_last_answer_is_found_at_stop() -> None:
    result, _ = run("chatty-stop", count=2)
    assert [r.status for r in result.results] == ["pass", "error"]
    assert "it wrote more before it stopped" in result.results[1].detail


def test_the_cli_reports_late_errors_in_the_verdict(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    command = " ".join(fake("duplicate-late"))
    done = subprocess.run(
        [sys.executable, "-m", "seamspec", "run", "--impl-cmd", command,
         "-k", "woc-cancel-[dip]*", "--report-json", str(report)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "[late] ERROR woc-cancel-during-before-write" in done.stdout
    statuses = {r["scenario"]: r["status"] for r in json.loads(report.read_text())["results"]}
    assert statuses["woc-cancel-during-before-write"] == "error"
    assert statuses["woc-cancel-propagates"] == "pass"


# -- processes ---------------------------------------------------------------------------


def _marked(marker: str) -> list[int]:
    needle = f"SEAMSPEC_TEST_MARKER={marker}".encode()
    found = []
    for process in processes.process_table().values():
        try:
            environ = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in environ and process.state != "Z":
            found.append(process.pid)
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and prctl")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_setsid_grandchildren_do_not_outlive_the_run(jobs: str) -> None:
    marker = uuid.uuid4().hex
    command = " ".join(fake("setsid-grandchild"))
    done = subprocess.run(
        [sys.executable, "-m", "seamspec", "run", "-q", "-j", jobs, "--impl-cmd", command,
         "-k", "woc-cancel-[dp]*"],
        capture_output=True, text=True, timeout=120, check=False,
        env=dict(os.environ, SEAMSPEC_TEST_MARKER=marker),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert _marked(marker) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_kill_tree_reaches_other_sessions() -> None:
    """A child's tree, a grandchild in a session of its own included, ends at once."""
    code = "import os, time; os.setsid(); time.sleep(600)"
    parent = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {code!r}]); time.sleep(600)"],
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    below: list[processes.Process] = []
    while not (below and below[0].pgrp != parent.pid):  # out of reach of a group kill
        assert time.monotonic() < deadline, "the grandchild never called setsid()"
        time.sleep(0.02)
        below = processes.descendants(parent.pid)
    killed = processes.kill_tree(parent.pid)
    parent.wait(5)
    assert {p.pid for p in killed} >= {parent.pid, below[0].pid}
    time.sleep(0.1)
    assert processes.living(below) == []


def test_an_emitter_ends_when_its_gate_folder_goes(tmp_path: Path) -> None:
    from seamspec.reference._shell_output import emitter

    gates = tmp_path / "gates"
    gates.mkdir()
    script = json.dumps({"gates": str(gates), "steps": [{"wait": "never"}]})
    child = subprocess.Popen(
        [sys.executable, "-I", emitter.__file__, script], stderr=subprocess.PIPE
    )
    time.sleep(0.2)
    assert child.poll() is None
    gates.rmdir()
    assert child.wait(5) == emitter.ORPHANED
    assert child.stderr is not None
    assert b"gate folder" in child.stderr.read()


def test_an_emitter_ends_when_its_parent_dies(tmp_path: Path) -> None:
    from seamspec.reference._shell_output import emitter

    script = json.dumps({"gates": str(tmp_path), "steps": [{"hang": True}]})
    # The parent starts the emitter, says its pid, and dies without waiting for it.
    starter = (
        "import subprocess, sys; "
        f"p = subprocess.Popen([sys.executable, '-I', {emitter.__file__!r}, {script!r}]); "
        "print(p.pid, flush=True); import time; time.sleep(0.5)"
    )
    parent = subprocess.run(
        [sys.executable, "-c", starter], capture_output=True, text=True, timeout=30, check=False
    )
    pid = int(parent.stdout.split()[0])
    deadline = time.monotonic() + 5
    while processes.living([p for p in processes.process_table().values() if p.pid == pid]):
        assert time.monotonic() < deadline, "the orphaned emitter is still hanging"
        time.sleep(0.02)
