"""WireAdapter against misbehaving implementations: clear errors, bounded time, no leftovers.

Each fake in tests/wire_fakes/fake_impl.py misbehaves in one way. For each, the run must
end within its time limits, every affected scenario must be an ``error`` whose detail
says what went wrong (quoting the offending line, with the child's stderr), and no
process the fake started may survive.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from seamspec.conformance import ImplementationError, Runner, RunResult, load_scenarios
from seamspec.conformance._wire.client import HandshakeError, WireAdapter

FAKE = Path(__file__).parent / "wire_fakes" / "fake_impl.py"
SCENARIOS = [s for s in load_scenarios() if s.contract == "write-observer-chain" and not s.requires]


def fake(mode: str, arg: str = "") -> list[str]:
    return [sys.executable, str(FAKE), mode, *([arg] if arg else [])]


def alive(pid: int) -> bool:
    """True if ``pid`` is a running (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pids: list[int], limit: float = 5.0) -> list[int]:
    """The pids still alive after ``limit`` seconds (orphans are reaped by init, not us)."""
    deadline = time.monotonic() + limit
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


RunFake = Callable[..., tuple[RunResult, WireAdapter]]


@pytest.fixture
def run_fake() -> Iterator[RunFake]:
    adapters: list[WireAdapter] = []

    def go(mode: str, count: int = 3, **options: float | bool) -> tuple[RunResult, WireAdapter]:
        adapter = WireAdapter(fake(mode), **options)  # type: ignore[arg-type]  # kwargs by name
        adapters.append(adapter)
        try:
            result = Runner(adapter, timeout=60).run(SCENARIOS[:count])
        finally:
            adapter.close()
        assert wait_gone(adapter.pids) == [], f"{mode}: child processes left behind"
        return result, adapter

    yield go
    for adapter in adapters:
        adapter.close()


def details(result: RunResult) -> list[str]:
    return [r.detail for r in result.results]


def test_crash_on_first_request_restarts_then_gives_up(run_fake: RunFake) -> None:
    t0 = time.monotonic()
    result, adapter = run_fake("crash", count=4, max_restarts=2)
    assert [r.status for r in result.results] == ["error"] * 4
    first = result.results[0].detail
    assert "exited with code 3 while running scenario" in first
    assert "helpful diagnostic 4711" in first  # the child's stderr is in the context
    assert "was not run" in result.results[3].detail
    assert "--max-restarts 2" in result.results[3].detail
    assert len(adapter.pids) == 3  # the first child and two restarts, no more
    assert time.monotonic() - t0 < 20


def test_hang_is_killed_with_its_grandchildren(run_fake: RunFake) -> None:
    t0 = time.monotonic()
    result, _adapter = run_fake("hang", count=3, request_timeout=1.5, max_restarts=1)
    assert [r.status for r in result.results] == ["error"] * 3
    assert "did not answer scenario" in result.results[0].detail
    assert "within 1.5 s" in result.results[0].detail
    grandchildren = [int(p) for p in re.findall(r"grandchild (\d+)", "\n".join(details(result)))]
    assert len(grandchildren) == 2
    assert wait_gone(grandchildren) == []
    assert time.monotonic() - t0 < 15


@pytest.mark.parametrize(
    ("mode", "needle", "quoted"),
    [
        ("garbage", "the line is not JSON", "%%% this is not json %%%"),
        ("chatty", "the line is not JSON", "progress: 50% done"),
        ("bad-schema", "needs 'trace' as list", '"trace": "not a list"'),
        ("wrong-seq", "the answer has seq 101; the run message had 1", '"seq": 101'),
    ],
)
def test_protocol_breaks_quote_the_line(
    run_fake: RunFake, mode: str, needle: str, quoted: str
) -> None:
    result, _ = run_fake(mode, count=2)
    assert [r.status for r in result.results] == ["error", "error"]
    detail = result.results[0].detail
    assert "broke the protocol" in detail
    assert needle in detail
    assert quoted in detail, detail


def test_strict_mode_checks_the_full_schema(run_fake: RunFake) -> None:
    lax, _ = run_fake("extra-key", count=1)
    assert lax.results[0].status == "fail"  # an empty trace: judged, not a protocol error
    strict, _ = run_fake("extra-key", count=1, strict=True)
    assert strict.results[0].status == "error"
    assert (
        "Additional properties are not allowed ('debug' was unexpected)" in strict.results[0].detail
    )


def test_caught_error_keeps_the_child_and_its_context(run_fake: RunFake) -> None:
    result, adapter = run_fake("caught-error", count=3)
    assert [r.status for r in result.results] == ["error"] * 3
    assert "reported an error in scenario" in result.results[0].detail
    assert "my driver fell over" in result.results[0].detail
    assert "at step 2" in result.results[0].detail
    assert len(adapter.pids) == 1  # a caught error is an answer: no restart
    assert adapter.exit_code == 0  # and the child stopped cleanly


def test_die_mid_suite() -> None:
    adapter = WireAdapter(fake("die-after", "2"), max_restarts=0)
    try:
        result = Runner(adapter, timeout=60).run(SCENARIOS[:4])
    finally:
        adapter.close()
    assert [r.status for r in result.results] == ["pass", "pass", "error", "error"]
    assert "dying after 2 scenarios" in result.results[2].detail
    assert wait_gone(adapter.pids) == []


@pytest.mark.parametrize(
    ("mode", "needle"),
    [
        (
            "wrong-version",
            "speaks protocol version 99; this kit offered 2 and speaks versions 1, 2",
        ),
        ("banner", "answered the start message with an invalid line"),
        ("silent-handshake", "did not answer the start message within 0.5 s"),
    ],
)
def test_handshake_failures_are_clear(mode: str, needle: str) -> None:
    adapter = WireAdapter(fake(mode), handshake_timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(HandshakeError) as caught:
        adapter.info()
    adapter.close()
    assert needle in str(caught.value)
    assert time.monotonic() - t0 < 10
    assert wait_gone(adapter.pids) == []


def test_missing_program_is_a_load_error() -> None:
    with pytest.raises(HandshakeError, match="cannot start"):
        WireAdapter(["/nonexistent/seamspec-impl"]).info()


def test_abandoned_call_is_ended_by_the_next_one() -> None:
    """When the Runner's own limit fires first, the next run() must not wait on the hang."""
    adapter = WireAdapter(fake("hang"), request_timeout=30)
    try:
        result = Runner(adapter, timeout=0.5).run(SCENARIOS[:2])
        assert [r.status for r in result.results] == ["error", "error"]
        assert result.duration < 10
    finally:
        adapter.close()
    assert wait_gone(adapter.pids) == []


def _run_cli_until_fake_runs(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    marker = tmp_path / "ready"
    command = " ".join([*fake("hang", str(marker))])
    runner = subprocess.Popen(
        [sys.executable, "-m", "seamspec", "run", "-q", "--impl-cmd", command, "-k", "woc-none"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert runner.poll() is None, runner.communicate()[0]
        assert time.monotonic() < deadline, "the fake never received a run message"
        time.sleep(0.02)
    return runner, int(marker.read_text())


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupting_the_runner_kills_the_implementation(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    runner, fake_pid = _run_cli_until_fake_runs(tmp_path)
    assert alive(fake_pid)
    t0 = time.monotonic()
    runner.send_signal(sig)
    out, _ = runner.communicate(timeout=15)
    assert runner.returncode == code, out
    assert time.monotonic() - t0 < 10
    assert wait_gone([fake_pid]) == []


def test_skip_answer_is_a_skip_with_its_reason(run_fake: RunFake) -> None:
    result, adapter = run_fake("skipper", count=2)
    assert [r.status for r in result.results] == ["skip", "skip"]
    assert result.results[0].detail == "mode skipper skips everything"
    assert len(adapter.pids) == 1


def test_closed_stdout_is_a_crash_not_a_hang(run_fake: RunFake) -> None:
    t0 = time.monotonic()
    result, _ = run_fake("close-stdout", count=1, request_timeout=60)
    assert result.results[0].status == "error"
    assert "closed its stdout while running scenario" in result.results[0].detail
    assert time.monotonic() - t0 < 15


def test_a_child_that_stops_reading_cannot_block_the_kit() -> None:
    """A request larger than the pipe buffer, to a child that never reads: a timeout."""
    adapter = WireAdapter(fake("deaf"), request_timeout=1.0)
    given = {"observers": [], "files": {"big.txt": "x" * 2_000_000}}
    big: dict[str, object] = {"id": "big", "contract": "write-observer-chain", "when": []}
    big["given"] = given
    t0 = time.monotonic()
    try:
        adapter.info()
        with pytest.raises(ImplementationError, match="did not read scenario big within 1 s"):
            adapter.run(big)
    finally:
        adapter.close()
    assert time.monotonic() - t0 < 10
    assert wait_gone(adapter.pids) == []
