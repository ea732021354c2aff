"""The shell-output driver's two ways in are features: undeclared ones are skipped."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from seamspec import __version__
from seamspec.conformance import PythonAdapter, Runner, load_scenarios
from seamspec.conformance._contracts.shell_output import evidence, model, own_stdin
from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver, emitter_command
from seamspec.conformance._contracts.shell_output.reference_adapter import ReferenceShellOutput
from seamspec.reference._shell_output import emitter as _emitter
from seamspec.reference._shell_output.emitter import detached_alive


class ProcessesOnly(ReferenceShellOutput):
    features: tuple[str, ...] = ("soo-process",)


def test_an_undeclared_driver_feature_skips_its_scenarios() -> None:
    wanted = {"soo-capped-echo", "soo-session-budget-then-late"}
    scenarios = [s for s in load_scenarios() if s.id in wanted]
    adapter = PythonAdapter(
        name="processes-only", version=__version__, drivers=[ShellOutputDriver(ProcessesOnly())]
    )
    results = {r.scenario.id: r for r in Runner(adapter, timeout=30).run(scenarios).results}
    assert results["soo-capped-echo"].status == "pass"
    skipped = results["soo-session-budget-then-late"]
    assert skipped.status == "skip"
    assert "soo-session" in skipped.detail


def test_the_python_driver_declares_the_falsy_observer_for_every_implementation() -> None:
    """The falsy observer is the kit's object: no implementation has to opt in, and a
    scenario that hands one over must say so, since over the wire it means nothing."""
    assert "soo-falsy-observer" in ShellOutputDriver(ProcessesOnly()).features
    assert ShellOutputDriver(ReferenceShellOutput()).features.count("soo-falsy-observer") == 1
    scenario: dict[str, Any] = {
        "requires": ["soo-process"],
        "given": {"observers": [{"name": "pane", "falsy": True}]},
        "when": [{"run": {"id": "a", "observer": "pane", "script": [{"out": "x"}]}}],
        "then": {},
    }
    assert any("soo-falsy-observer" in why for _, why in model.lint(scenario))
    scenario["requires"].append("soo-falsy-observer")
    assert model.lint(scenario) == []


def test_the_emitter_command_runs_the_kit_file_not_a_command_line() -> None:
    argv = emitter_command({"steps": [{"out": "x"}]})
    assert argv[1:3] == ["-I", "-S"]  # isolated, no site packages: the standard library only
    assert argv[3].endswith("emitter.py")
    assert argv[4] == '{"steps": [{"out": "x"}]}'
    done = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"x", b"")


def test_the_emitter_imports_nothing_it_does_not_need() -> None:
    """Its start-up is most of the shell-output suite's CPU (it starts for every run)."""
    probe = (
        f"import sys; path = {emitter_command({'steps': []})[3]!r};"
        "exec(compile(open(path).read(), path, 'exec'), {'__name__': 'probe'});"
        "print(' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    loaded = set(done.stdout.split())
    assert done.returncode == 0, done.stderr
    unwanted = loaded & {"pathlib", "contextlib", "typing", "seamspec"}
    assert not unwanted, f"the emitter imported {sorted(unwanted)}"


def _detached_emitter(tmp_path: Path, orphaned: list[dict[str, str]]) -> tuple[Any, Path, Path]:
    """An emitter (leading its own group) with a detached grandchild, once both are set up."""
    gates, alive = tmp_path / "gates", tmp_path / "alive"
    gates.mkdir()
    step: dict[str, Any] = {"grandchild": "detached", "until": "free"}
    if orphaned:
        step["orphaned"] = orphaned
    steps: list[dict[str, Any]] = [step, {"out": "ready\n"}, {"hang": True}]
    script = {"gates": str(gates), "alive": str(alive), "steps": steps}
    child = subprocess.Popen(
        emitter_command(script), stdout=subprocess.PIPE, start_new_session=True
    )
    assert child.stdout is not None
    assert child.stdout.read(6) == b"ready\n"
    return child, gates, alive


def _pids(alive: Path) -> list[int]:
    return [int(line) for line in alive.read_text().split()]


def test_a_detached_grandchild_outlives_a_group_kill_and_writes_once_orphaned(
    tmp_path: Path,
) -> None:
    child, gates, alive = _detached_emitter(tmp_path, [{"out": "late\n"}])
    assert child.stdout is not None
    emitter, grandchild = _pids(alive)
    assert emitter == child.pid
    assert os.getpgid(grandchild) != child.pid  # out of reach of a kill of the group
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(5)
    assert child.stdout.read(5) == b"late\n"  # written only once the emitter was gone
    # and it still holds the pipes, but not the group's alive file: that one says the
    # killed group is gone (what a time limit must end); its own says it is not
    assert not evidence.alive(alive)
    assert evidence.alive(Path(detached_alive(alive)))
    assert _pids(Path(detached_alive(alive))) == [grandchild]
    (gates / "free").touch()
    assert child.stdout.read() == b""  # its gate released: it exits, end of file
    deadline = time.monotonic() + 5
    while evidence.alive(Path(detached_alive(alive))):
        assert time.monotonic() < deadline, "the detached grandchild did not end at its gate"
        time.sleep(0.01)


def test_the_kit_kills_a_detached_grandchild_whose_gate_never_opens(tmp_path: Path) -> None:
    child, _, alive = _detached_emitter(tmp_path, [])
    assert child.stdout is not None
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(5)
    assert evidence.alive(Path(detached_alive(alive)))
    evidence.kill_survivors(alive)
    assert child.stdout.read() == b""  # the grandchild is gone, and the pipe with it
    deadline = time.monotonic() + 5
    while evidence.alive(Path(detached_alive(alive))):
        assert time.monotonic() < deadline, "kill_survivors left the detached grandchild"
        time.sleep(0.01)


def test_the_orphaned_output_is_part_of_what_the_script_writes() -> None:
    steps: list[dict[str, Any]] = [
        {"grandchild": "detached", "until": "g", "orphaned": [{"out": "b"}, {"err": "c"}]},
        {"out": "a"},
        {"hang": True},
        {"grandchild": "detached", "until": "h", "orphaned": [{"out": "never"}]},
    ]
    assert _emitter.expected_output(steps) == {"stdout": b"ab", "stderr": b"c"}
    assert _emitter.orphaned_output(steps) == {"stdout": b"b", "stderr": b"c"}


def _emit(tmp_path: Path, steps: list[dict[str, Any]], **env: str) -> Any:
    gates = tmp_path / "gates"
    gates.mkdir(exist_ok=True)
    script = {"gates": str(gates), "steps": steps}
    return subprocess.run(
        emitter_command(script),
        capture_output=True,
        timeout=30,
        env={**os.environ, **env},
        check=False,
    )


def test_a_signal_step_kills_the_emitter_after_what_it_wrote(tmp_path: Path) -> None:
    for name, number in (("TERM", signal.SIGTERM), ("KILL", signal.SIGKILL)):
        steps: list[dict[str, Any]] = [{"out": "a"}, {"signal": name}, {"out": "never"}]
        done = _emit(tmp_path, steps)
        assert (done.returncode, done.stdout) == (-number, b"a")
        assert _emitter.expected_exit(steps) == -number
        assert _emitter.expected_output(steps)["stdout"] == b"a"
        assert _emitter.ends_by_signal(steps)
    assert not _emitter.ends_by_signal([{"exit": 0}, {"signal": "TERM"}])


def test_ignore_term_leaves_only_sigkill(tmp_path: Path) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    script = {"gates": str(gates), "steps": [{"ignore_term": True}, {"out": "x"}, {"hang": True}]}
    child = subprocess.Popen(emitter_command(script), stdout=subprocess.PIPE)
    assert child.stdout is not None
    assert child.stdout.read(1) == b"x"
    child.terminate()
    time.sleep(0.2)  # a test of the emitter itself: nothing to gate on but the signal
    assert child.poll() is None, "the emitter died on SIGTERM"
    child.kill()
    assert child.wait(5) == -signal.SIGKILL


def test_env_check_names_what_differs_from_env_save(tmp_path: Path) -> None:
    assert _emit(tmp_path, [{"env_save": "e"}], SEAMSPEC_PROBE="1").stdout == b""
    same = _emit(tmp_path, [{"env_check": "e"}], SEAMSPEC_PROBE="1")
    assert (same.stdout, same.stderr, same.returncode) == (b"", b"", 0)
    other = _emit(tmp_path, [{"env_check": "e"}], SEAMSPEC_PROBE="2", FORCE_COLOR="1")
    assert b"FORCE_COLOR SEAMSPEC_PROBE" in other.stderr
    assert b"no environment saved" in _emit(tmp_path, [{"env_check": "x"}]).stderr


def test_stdin_and_cwd_checks_see_how_a_child_was_spawned(tmp_path: Path) -> None:
    """The probes compare stdin by identity and the directory by path (SOO-ENVELOPE)."""

    def emit(steps: list[dict[str, Any]], **kw: Any) -> Any:
        gates = tmp_path / "gates"
        gates.mkdir(exist_ok=True)
        command = emitter_command({"gates": str(gates), "steps": steps})
        return subprocess.run(command, capture_output=True, timeout=30, check=False, **kw)

    devnull = {"stdin": subprocess.DEVNULL}
    assert emit([{"stdin_save": "s"}, {"cwd_save": "c"}], cwd=tmp_path, **devnull).stderr == b""
    assert emit([{"stdin_check": "s"}, {"cwd_check": "c"}], cwd=tmp_path, **devnull).stderr == b""
    read, write = os.pipe()
    try:
        piped = emit([{"stdin_check": "s"}], stdin=read)
    finally:
        os.close(read)
        os.close(write)
    assert b"stdin differs from stdin-s" in piped.stderr
    assert b"cwd differs from cwd-c" in emit([{"cwd_check": "c"}], cwd="/", **devnull).stderr


def test_the_driver_swaps_its_own_stdin_only_while_a_scenario_probes_it() -> None:
    before = os.fstat(0) if _open(0) else None
    probing = [{"run": {"id": "a", "script": [{"stdin_save": "s"}]}}]
    assert own_stdin.probes_stdin(probing)
    assert not own_stdin.probes_stdin([{"run": {"id": "a", "script": [{"out": "x"}]}}])
    with own_stdin.distinct_stdin(True), own_stdin.distinct_stdin(True):
        assert stat.S_ISFIFO(os.fstat(0).st_mode)
    after = os.fstat(0) if _open(0) else None
    assert (before and (before.st_dev, before.st_ino)) == (after and (after.st_dev, after.st_ino))


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
