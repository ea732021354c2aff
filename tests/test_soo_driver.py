"""The shell-output driver's two ways in are features: undeclared ones are skipped."""

from __future__ import annotations

from seamspec import __version__
from seamspec.conformance import PythonAdapter, Runner, load_scenarios
from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver, emitter_command
from seamspec.conformance._contracts.shell_output.reference_adapter import ReferenceShellOutput


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


def test_the_emitter_command_runs_the_kit_file_not_a_command_line() -> None:
    argv = emitter_command({"steps": [{"out": "x"}]})
    assert argv[1] == "-I"
    assert argv[2].endswith("emitter.py")
    assert argv[3] == '{"steps": [{"out": "x"}]}'
