"""The plugin as users run it: one item per scenario, named by ID; -k and --junitxml work."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

pytest_plugins = ["pytester"]


def test_scenarios_collect_by_id(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--seamspec-impl", "reference", "--collect-only", "-q")
    lines = result.stdout.lines
    assert "seamspec::write-observer-chain::woc-join-two-annotations" in lines
    assert "seamspec::write-observer-chain::woc-cancel-propagates" in lines
    assert "seamspec::shell-output::soo-capped-echo" in lines


def test_off_unless_asked(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--collect-only", "-q")
    assert "seamspec::" not in result.stdout.str()


def test_k_and_junitxml(pytester: pytest.Pytester) -> None:
    xml = pytester.path / "out.xml"
    result = pytester.runpytest(
        "--seamspec-impl", "reference-trio", "-k", "join", f"--junitxml={xml}"
    )
    result.assert_outcomes(passed=xml.read_text().count("<testcase"))
    assert 'name="woc-join-two-annotations"' in xml.read_text()
    assert "woc-cancel-propagates" not in result.stdout.str()


def test_failing_implementation_fails_items_with_the_detail(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        broken_adapter="""
        from seamspec.conformance import ImplementationInfo

        class Silent:
            def info(self):
                return ImplementationInfo("silent", "python", "0", ("write-observer-chain",))
            def run(self, request):
                return []
            def close(self):
                pass

        adapter = Silent()
        """
    )
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--seamspec-impl", "broken_adapter:adapter", "-k", "woc-join-two-annotations"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*WOC-JOIN*", "*after_write*"])


def test_bad_impl_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--seamspec-impl", "nowhere_xyz:adapter")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*cannot import module*"])


def test_xdist(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--seamspec-impl", "reference", "-n", "2", "-k", "join or cancel")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) > 2
    assert "failed" not in outcomes


def test_impl_cmd_judges_over_the_wire(pytester: pytest.Pytester) -> None:
    command = f"{sys.executable} -m seamspec serve-reference"
    result = pytester.runpytest("--seamspec-impl-cmd", command, "-k", "join")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) > 2
    assert "failed" not in outcomes


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--seamspec-impl-cmd", f"{sys.executable} -c pass"], "*exited*"),
        (["--seamspec-impl-cmd", ""], "*--impl-cmd is empty*"),
        (["--seamspec-impl-cmd", "x", "--seamspec-impl", "reference"], "*not both*"),
    ],
)
def test_bad_impl_cmd_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], needle: str
) -> None:
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([needle])


def test_scenarios_option_alone_collects_those_scenarios(pytester: pytest.Pytester) -> None:
    """``--seamspec-scenarios DIR`` asks for seamspec by itself: no --seamspec needed."""
    folder = pytester.path / "mine"
    folder.mkdir()
    shipped = Path(__file__).parents[1] / "scenarios" / "write-observer-chain"
    for name in ("woc-join-two-annotations.yaml", "woc-none-empty-chain.yaml"):
        shutil.copy(shipped / name, folder / name)
    result = pytester.runpytest("--seamspec-scenarios", str(folder), "--collect-only", "-q")
    ids = [line for line in result.stdout.lines if line.startswith("seamspec::")]
    assert ids == [
        "seamspec::write-observer-chain::woc-join-two-annotations",
        "seamspec::write-observer-chain::woc-none-empty-chain",
    ]
    result = pytester.runpytest("--seamspec-scenarios", str(folder))
    result.assert_outcomes(passed=2)


def test_junit_class_names_match_seamspec_run(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A CI may switch between `seamspec run --junit-xml` and the plugin: same names."""
    from seamspec._cli import main

    folder = tmp_path / "three-contracts"
    folder.mkdir()
    shipped = Path(__file__).parents[1] / "scenarios"
    for name in (
        "write-observer-chain/woc-join-two-annotations.yaml",
        "shell-output/soo-capped-echo.yaml",
        "dispatch-recorder/dr-allow-makes-no-record.yaml",
    ):
        shutil.copy(shipped / name, folder)
    ours, theirs = tmp_path / "run.xml", pytester.path / "pytest.xml"
    assert main(["run", "-q", "--scenarios", str(folder), "--junit-xml", str(ours)]) == 0
    pytester.runpytest("--seamspec-scenarios", str(folder), f"--junitxml={theirs}")

    def cases(path: Path) -> set[tuple[str, str]]:
        return {
            (case.classname, case.name) for suite in JUnitXml.fromfile(str(path)) for case in suite
        }

    from_run, from_pytest = cases(ours), cases(theirs)
    assert from_run == from_pytest
    assert ("seamspec.write-observer-chain", "woc-join-two-annotations") in from_run
    assert {classname for classname, _ in from_run} == {
        "seamspec.write-observer-chain",
        "seamspec.shell-output",
        "seamspec.dispatch-recorder",
    }
