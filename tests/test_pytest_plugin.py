"""The plugin as users run it: one item per scenario, named by ID; -k and --junitxml work."""

from __future__ import annotations

import sys

import pytest

pytest_plugins = ["pytester"]


def test_scenarios_collect_by_id(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--seamspec-impl", "reference", "--collect-only", "-q")
    lines = result.stdout.lines
    assert "seamspec::woc-join-two-annotations" in lines
    assert "seamspec::woc-cancel-propagates" in lines


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
    assert "seamspec::woc-cancel-propagates" not in result.stdout.str()


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
