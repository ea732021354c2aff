"""The HTML report's failures: a diff that shows whitespace, the trace as lanes beside
the reference's, and nothing of the machine that made it (no absolute paths)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from seamspec._cli import main
from seamspec.conformance._reports.html_failures import (
    display_path,
    expected_observed,
    scrub_paths,
    whitespace_diff,
)

ROOT = Path(__file__).parents[1]


@pytest.mark.parametrize(
    ("message", "pair"),
    [
        ("c1: expected to return 'a\\n\\nb', observed 'a\\nb'", ("a\n\nb", "a\nb")),
        ("hook calls: expected ['x.after_write'], observed []", (["x.after_write"], [])),
        ("file a.py: expected 'x', observed None", ("x", None)),
        ("pane observed stdout b'ab'; expected b'abc'", (b"abc", b"ab")),
        (
            "c1: after_write returned 'a'; expected ' a ' from annotations [' a ']",
            (" a ", "a"),
        ),
        ("c1: expected ok=True, observed ok=False ('denied')", None),
        ("the chain called nothing", None),
    ],
)
def test_expected_and_observed_are_read_from_findings(message: str, pair: Any) -> None:
    assert expected_observed(message) == pair


def test_the_diff_draws_every_space_tab_and_line_end() -> None:
    diff = whitespace_diff(" a \n\n\tb", "a\nb")
    assert diff is not None
    assert '<span class="del">- <span class="ws">·</span>a<span class="ws">·</span>' in diff
    assert '<span class="ws">→</span>b' in diff
    assert diff.count('class="del"') == 3
    assert diff.count('class="ins"') == 2
    assert whitespace_diff(1, 2) is None


def test_paths_are_shortened() -> None:
    assert display_path("/home/me/x/scenarios/shell-output/soo-a.yaml") == (
        "scenarios/shell-output/soo-a.yaml"
    )
    assert display_path("/tmp/abc/mine/woc-a.yaml") == ".../mine/woc-a.yaml"
    assert display_path("mine/woc-a.yaml") == "mine/woc-a.yaml"
    text = 'File "/usr/lib/python3/x.py", line 3 and /tmp/a/b/c.txt, but a/b.py and http://h/x/y'
    scrubbed = scrub_paths(text)
    assert "/usr/lib" not in scrubbed
    assert "/tmp/a" not in scrubbed
    assert ".../python3/x.py" in scrubbed
    assert "a/b.py" in scrubbed
    assert "http://h/x/y" in scrubbed


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A mutant's report on scenarios copied into a temporary folder, plus the page."""
    folder = tmp_path_factory.mktemp("suite")
    for name in ("woc-join-verbatim-no-trimming.yaml", "woc-join-two-annotations.yaml"):
        shutil.copy(ROOT / "scenarios" / "write-observer-chain" / name, folder)
    report, page = folder / "mutant.json", folder / "report.html"
    args = ["run", "-q", "--scenarios", str(folder), "--report-json", str(report)]
    assert main([*args, "--impl", "mutant:woc-join-trimmed", "--profile", "strict"]) == 1
    assert main(["report", "html", str(report), "-o", str(page)]) == 0
    return report, page


def test_failures_keep_the_reference_trace(failing_report: tuple[Path, Path]) -> None:
    report = json.loads(failing_report[0].read_text())
    failed = [r for r in report["results"] if r["status"] == "fail"]
    assert failed
    for result in failed:
        assert result["trace"]
        assert result["expected_trace"]
        assert result["trace"] != result["expected_trace"]


def test_the_reference_report_has_no_comparison(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    assert main(["run", "-q", "-k", "woc-join-two", "--report-json", str(report)]) == 0
    assert not any("expected_trace" in r for r in json.loads(report.read_text())["results"])


def test_html_failures_show_the_diff_and_the_lanes(failing_report: tuple[Path, Path]) -> None:
    html = failing_report[1].read_text()
    # woc-join-two-annotations has no whitespace to trim: it passes
    assert html.count('<div class="failure"') == 1
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="lanes"') == 1
    assert html.count('class="differs"') >= 1
    assert '<pre class="diff">' in html
    # the trimmed annotation: the expected leading spaces are drawn, the observed has none
    assert '<span class="del">- <span class="ws">·</span><span class="ws">·</span>indented' in html


def test_html_has_no_absolute_local_path(
    failing_report: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an implementation that crashes puts a traceback with site-packages paths in details
    crash = tmp_path / "crash.json"
    args = ["run", "-q", "--impl", "tests.fakes:crashing", "-k", "woc-join-two"]
    assert main([*args, "--report-json", str(crash)]) == 1
    page = tmp_path / "both.html"
    assert main(["report", "html", str(failing_report[0]), str(crash), "-o", str(page)]) == 0
    html = page.read_text()
    assert "segfault-ish" in html
    local = {
        str(failing_report[0].parent),
        str(tmp_path),
        os.getcwd(),
        sys.prefix,
        str(Path.home()),
        str(ROOT),
    }
    for path in local:
        if path not in ("/", ""):
            assert path not in html, f"{path} leaks into the HTML report"
