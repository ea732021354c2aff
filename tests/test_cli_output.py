"""What a new user meets in the first hour: quiet output, one-line errors that suggest
the right name, and a --help that answers every question about defaults and exit codes."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from seamspec._cli import _parser, main
from seamspec._cmd_run import select
from seamspec.conformance import load_scenarios

EXAMPLES = Path(__file__).parents[1] / "docs" / "examples"
COUNTER = re.compile(r"^\[\s*\d+/\d+\] (\S+)\s+(\S+)")


@pytest.fixture
def example_adapter(monkeypatch: pytest.MonkeyPatch) -> str:
    """The docs' adapter: it declares one contract and none of its features."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    return "other_chain_adapter:adapter"


def _lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


def test_skips_are_folded_into_one_line_per_reason(
    example_adapter: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--impl", example_adapter]) == 0
    out = capsys.readouterr().out
    scenarios = load_scenarios()
    soo = sum(1 for s in scenarios if s.contract == "shell-output")
    dr = sum(1 for s in scenarios if s.contract == "dispatch-recorder")
    assert f"{soo} scenarios skipped: contract shell-output not declared" in out
    assert f"{dr} scenarios skipped: contract dispatch-recorder not declared" in out
    assert "skipped: feature write-tools not declared" in out
    statuses = [m[1] for line in _lines(out) if (m := COUNTER.match(line))]
    assert "SKIP" not in statuses
    # every judged scenario still has its line: the WOC scenarios that need no feature
    judged = sum(1 for s in scenarios if s.contract == "write-observer-chain" and not s.requires)
    assert judged > 0
    assert statuses.count("PASS") == judged
    skip_lines = [line for line in _lines(out) if " skipped: " in line]
    assert len(skip_lines) <= 8  # a handful of reasons, not 110 scenarios


def test_verbose_lists_every_skip_with_its_reason(
    example_adapter: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "-v", "--impl", example_adapter, "--contract", "shell-output"]) == 1
    out = capsys.readouterr().out
    skips = [line for line in _lines(out) if (m := COUNTER.match(line)) and m[1] == "SKIP"]
    assert len(skips) == sum(1 for s in load_scenarios() if s.contract == "shell-output")
    assert all("does not declare the shell-output contract" in line for line in skips)


def test_quiet_prints_only_problems_verdict_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "-q", "--impl", "mutant:woc-after-reversed", "--contract", "shell-output"])
    out = capsys.readouterr().out
    assert code == 1  # the mutant declares only write-observer-chain: nothing judged
    assert not any(COUNTER.match(line) for line in _lines(out))
    assert "seamspec 0." not in out  # no header
    assert " scenarios skipped: " not in out
    assert "verdict:" in out
    assert _lines(out)[-1].endswith("skipped")
    code = main(["run", "-q", "--impl", "mutant:woc-after-reversed", "-k", "woc-join-two"])
    out = capsys.readouterr().out
    assert code == 1
    assert not any(COUNTER.match(line) for line in _lines(out))
    assert "woc-join-two-annotations (fail)" in out  # the problems section


def test_parallel_output_comes_in_scenario_order(capsys: pytest.CaptureFixture[str]) -> None:
    """The slice holds the time-limit scenarios, which start first and finish last."""
    pattern = "woc-[js]*"
    args = ["run", "-k", pattern, "--impl", "mutant:woc-after-reversed"]
    assert main([*args, "-j", "4"]) == 1
    out = capsys.readouterr().out
    printed = [m[2] for line in _lines(out) if (m := COUNTER.match(line))]
    wanted = [s.id for s in select(load_scenarios(), None, pattern)]
    assert any(s.startswith("woc-slow-") for s in wanted)
    assert printed == wanted
    counters = [int(line.split("/")[0].strip("[ ")) for line in _lines(out) if COUNTER.match(line)]
    assert counters == list(range(1, len(wanted) + 1))


def _seamspec(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command as a CI runs it: stdout and stderr are pipes, not terminals."""
    return subprocess.run(
        [sys.executable, "-m", "seamspec", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "--impl", "mutant:woc-after-revresed"], "did you mean 'woc-after-reversed'"),
        (["run", "--impl", "refrence"], "did you mean 'reference'"),
        (["run", "--contract", "woc"], "did you mean 'write-observer-chain'"),
        (["run", "--contract", "shell-outptu"], "did you mean 'shell-output'"),
        (["rnu"], "did you mean 'run'"),
        (["run", "--profile", "strcit"], "did you mean 'strict'"),
        (["explain", "WOC-JION"], "did you mean 'WOC-JOIN'"),
        (["explain", "woc-cancel-propagate"], "did you mean 'woc-cancel-propagates'"),
        (["new", "wco-my-case"], "did you mean 'woc'"),
    ],
)
def test_command_line_errors_are_one_line_with_a_suggestion(args: list[str], needle: str) -> None:
    proc = _seamspec(*args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr  # not wrapped at 80 columns, not usage + error
    assert needle in lines[0]
    assert len(lines[0]) > 80 or needle in lines[0]


def _scenario(tmp_path: Path, name: str, old: str, new: str) -> Path:
    source = Path(__file__).parents[1] / "scenarios" / "write-observer-chain" / name
    text = source.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("title:", "titel:", "unknown key 'titel'; did you mean 'title'?"),
        ("hook: after_write", "hook: after_wrtie", "did you mean 'after_write'?"),
        ("after_write: {return", "after_wirte: {return", "did you mean 'after_write'"),
        (
            "rules: [WOC-JOIN",
            "rules: [WOC-JION",
            "unknown rule ID 'WOC-JION'; did you mean 'WOC-JOIN'",
        ),
        (
            "contract: write-observer-chain",
            "contract: write-observer-chian",
            "did you mean 'write-observer-chain'?",
        ),
        ("- call:", "- cal:", "unknown key 'cal'; did you mean 'call'?"),
    ],
)
def test_scenario_file_problems_suggest_the_name_meant(
    tmp_path: Path, old: str, new: str, needle: str
) -> None:
    path = _scenario(tmp_path, "woc-join-two-annotations.yaml", old, new)
    proc = _seamspec("validate", str(path))
    assert proc.returncode == 2
    problems = [line for line in proc.stderr.splitlines() if line.startswith(str(path))]
    assert problems, proc.stderr
    assert any(needle in line for line in problems), proc.stderr
    # every problem is one line: file:line: message (hint: ...)
    assert all(re.match(rf"^{re.escape(str(path))}:\d+: ", line) for line in problems)
    assert len(proc.stderr.splitlines()) == len(problems) + 1  # + the count line


def test_manifest_with_a_misspelt_scenario_suggests_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("expected_failures:\n  woc-join-two-anotations: {reason: known}\n")
    assert main(["run", "-q", "--expect", str(manifest)]) == 2
    assert "did you mean 'woc-join-two-annotations'" in capsys.readouterr().err


def test_explain_with_a_bad_impl_fails_before_printing_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "woc-cancel-propagates", "--impl", "bad"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--impl 'bad'" in captured.err
    assert main(["explain", "WOC-JOIN", "--impl", "nowhere_xyz:adapter"]) == 2
    assert capsys.readouterr().out == ""


def _commands(
    parser: argparse.ArgumentParser, name: str = "seamspec"
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child_name, child in action.choices.items():
                found += _commands(child, f"{name} {child_name}")
    return found


def test_help_documents_every_option_its_default_and_the_exit_codes() -> None:
    for name, parser in _commands(_parser()):
        text = parser.format_help()
        assert "exit codes" in text, f"`{name} --help` does not end with the exit codes"
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            what = f"{name} {'/'.join(action.option_strings) or action.dest}"
            assert action.help, f"{what} has no help text"
            default = action.default
            if default not in (None, False, argparse.SUPPRESS):
                line = parser._get_formatter()._expand_help(action)
                assert "default" in line, f"{what}: --help does not state its default"


def test_badge_usage_matches_what_it_accepts(tmp_path: Path) -> None:
    usage = dict(_commands(_parser()))["seamspec report badge"].format_usage()
    assert "REPORT.json" in usage
    assert "..." not in usage  # one report, not several
    proc = _seamspec("report", "badge", "a.json", "b.json", cwd=tmp_path)
    assert proc.returncode == 2
    assert "unrecognized arguments: b.json" in proc.stderr
