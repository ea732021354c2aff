"""Every figure in docs/benchmarks.md comes from a benchmark script, word for word.

Running the benchmarks takes minutes, so no test runs them in full. Instead each script
writes what it prints to ``benchmarks/results/<script>.txt`` (committed with the page),
and these tests check the two ends: the page's ``text`` blocks quote those files exactly
(a line ``...`` may stand for lines left out), and each script, run on a tiny workload
(``--quick``), still prints lines of the same shapes as its recorded file (the same
lines with every number and every verdict, met or not, blanked). A figure typed into the
page, or a script whose output changed without a new recorded run, fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
RESULTS = BENCHMARKS / "results"
PAGE = REPO / "docs" / "benchmarks.md"
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))
TEXT_BLOCK = re.compile(r"^```text\n(.*?)^```", re.MULTILINE | re.DOTALL)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def text_blocks() -> list[tuple[int, list[str]]]:
    page = PAGE.read_text(encoding="utf-8")
    return [
        (page.count("\n", 0, m.start()) + 1, m.group(1).splitlines())
        for m in TEXT_BLOCK.finditer(page)
    ]


def quotes(block: list[str], recorded: list[str]) -> bool:
    """Whether ``block`` is ``recorded`` with runs of lines left out where it says ``...``."""
    segments: list[list[str]] = [[]]
    for line in block:
        if line == "..." or line.startswith("... "):
            segments.append([])
        else:
            segments[-1].append(line)
    position = 0
    for segment in (s for s in segments if s):
        for start in range(position, len(recorded) - len(segment) + 1):
            if recorded[start : start + len(segment)] == segment:
                position = start + len(segment)
                break
        else:
            return False
    return any(segments)


VERDICT = re.compile(r"\b(?:NOT met|missed|met)\b")


def shape(line: str) -> str:
    """The line with its figures and verdicts blanked: what a tiny run must print too."""
    return re.sub(r"\s+", " ", VERDICT.sub("<verdict>", NUMBER.sub("#", line))).strip()


def test_there_is_a_recorded_file_for_every_script_and_no_other() -> None:
    assert SCRIPTS, "no benchmark scripts found"
    recorded = {p.stem for p in RESULTS.glob("*.txt")}
    expected = {p.stem for p in SCRIPTS}
    assert recorded == expected, (
        f"benchmarks/results/ should hold one file per script: missing "
        f"{sorted(expected - recorded)} (run the script), stale {sorted(recorded - expected)}"
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_page_quotes_the_recorded_output(script: Path) -> None:
    recorded = (RESULTS / f"{script.stem}.txt").read_text(encoding="utf-8").splitlines()
    assert any(quotes(block, recorded) for _, block in text_blocks()), (
        f"docs/benchmarks.md has no text block quoting benchmarks/results/{script.stem}.txt: "
        f"paste the file (lines may be left out with '...')"
    )


def test_every_figure_on_the_page_comes_from_a_recorded_file() -> None:
    files = [p.read_text(encoding="utf-8").splitlines() for p in sorted(RESULTS.glob("*.txt"))]
    for line, block in text_blocks():
        assert any(quotes(block, recorded) for recorded in files), (
            f"docs/benchmarks.md:{line}: this text block is not a quote of any file in "
            "benchmarks/results/: figures must be pasted from a script's recorded output"
        )


def test_a_quote_must_match_word_for_word() -> None:
    recorded = ["header", "run 1: 0.91", "run 2: 0.93", "over 2 runs: 0.92"]
    assert quotes(["header", "...", "over 2 runs: 0.92"], recorded)
    assert quotes(recorded, recorded)
    assert not quotes(["header", "over 2 runs: 0.92"], recorded), "a gap needs '...'"
    assert not quotes(["over 2 runs: 0.95"], recorded), "a changed figure"
    assert not quotes(["over 2 runs: 0.92", "...", "header"], recorded), "out of order"
    assert not quotes(["..."], recorded), "nothing quoted at all"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_quick_run_prints_lines_of_the_recorded_shapes(script: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    done = subprocess.run(
        [sys.executable, str(script), "--quick", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, f"{script.name} --quick failed:\n{done.stdout}\n{done.stderr}"
    printed = out.read_text(encoding="utf-8").splitlines()
    assert printed == done.stdout.splitlines(), "the recorded file is not what was printed"
    recorded = (RESULTS / f"{script.stem}.txt").read_text(encoding="utf-8").splitlines()
    # The first line says what was measured, which --quick makes smaller on purpose.
    assert printed[0].split()[:2] == recorded[0].split()[:2]
    new = {shape(line) for line in printed} - {shape(printed[0])}
    old = {shape(line) for line in recorded} - {shape(recorded[0])}
    assert new == old, (
        f"{script.name} prints lines of other shapes than benchmarks/results/{script.stem}.txt; "
        f"rerun it in full and update docs/benchmarks.md.\nonly now: {sorted(new - old)}\n"
        f"only recorded: {sorted(old - new)}"
    )
