"""The HTML report, rendered by a real headless Chromium and read back from the DOM.

Skipped when Chromium is not installed, unless SEAMSPEC_REQUIRE_BROWSER=1 (the nox
``browser`` session installs Debian's chromium and sets it, so CI cannot skip silently).
The screenshot is kept in reports/ as an artifact.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from seamspec._cli import main

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).parents[1] / "reports"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("SEAMSPEC_REQUIRE_BROWSER") == "1":
            pytest.fail(
                "SEAMSPEC_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)"
            )
        pytest.skip("no chromium on PATH; `nox -s browser` installs it and runs this test")
    return found


class _Tables(HTMLParser):
    """Collects the text of every cell of the tables with an id, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.failures = 0
        self.lane_pictures = 0
        self.shaded_rows = 0
        self.lanes: set[str] = set()
        self.panel_titles: set[str] = set()
        self._svg_text: list[str] | None = None
        self._in_title = False
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "table" and attributes.get("id"):
            self._table = str(attributes["id"])
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
        elif tag == "div" and attributes.get("class") == "failure":
            self.failures += 1
        elif tag == "svg" and attributes.get("class") == "lanes":
            self.lane_pictures += 1
        elif tag == "rect" and attributes.get("class") == "differs":
            self.shaded_rows += 1
        elif tag == "text" and attributes.get("class") in ("lane", "panel-title"):
            self._svg_text = [str(attributes["class"])]
        elif tag == "title" and self._svg_text is not None:
            self._in_title = True  # a tooltip, not the visible name

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag == "text" and self._svg_text is not None:
            kind, *words = self._svg_text
            (self.lanes if kind == "lane" else self.panel_titles).add("".join(words).strip())
            self._svg_text = None
        if tag in ("td", "th") and self._table and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._svg_text is not None and not self._in_title:
            self._svg_text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def _chromium(chromium: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )


def test_html_report_in_a_real_browser(
    chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, mutant = tmp_path / "ref.json", tmp_path / "mut.json"
    woc = ["--contract", "write-observer-chain", "-q"]
    assert main(["run", *woc, "--report-json", str(reference)]) == 0
    assert (
        main(["run", *woc, "--impl", "mutant:woc-after-reversed", "--report-json", str(mutant)])
        == 1
    )
    page = tmp_path / "report.html"
    assert main(["report", "html", str(reference), str(mutant), "-o", str(page)]) == 0
    capsys.readouterr()

    dom = _chromium(chromium, tmp_path, "--dump-dom", page.as_uri()).stdout
    parsed = _Tables()
    parsed.feed(dom)
    matrix = parsed.tables["rule-matrix"]
    header, rows = matrix[0], {row[0]: row for row in matrix[1:]}
    assert header[2] == "counts under"
    assert header[3:] == ["seamspec-reference-asyncio", "seamspec-mutant-woc-after-reversed"]
    assert rows["WOC-ORDER-AFTER"][2:] == ["every profile", "pass", "FAIL"]
    # A scenario failing because of the reversed order is not held against WOC-JOIN.
    assert rows["WOC-JOIN"][3:] == ["pass", "pass"]
    assert rows["WOC-SLOW"][2] == "feature hook-time-limit"
    scenarios = {row[0]: row for row in parsed.tables["scenario-matrix"][1:]}
    assert scenarios["woc-join-two-annotations"][2:] == ["pass", "FAIL"]
    assert parsed.failures > 0
    # every failure draws its trace as lanes, beside the reference's, in the live DOM
    assert parsed.lane_pictures == parsed.failures
    assert {"caller", "fmt", "diag"} <= parsed.lanes
    assert parsed.panel_titles >= {
        "expected (the reference)",
        "observed (seamspec-mutant-woc-after-reversed)",
    }
    assert parsed.shaded_rows > 0

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "html-report.png"
    shot.unlink(missing_ok=True)
    _chromium(chromium, tmp_path, f"--screenshot={shot}", "--window-size=1400,2200", page.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000


def test_explain_svg_renders_in_a_real_browser(
    chromium: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lanes picture of a failing shell-output run: a standalone SVG Chromium draws."""
    svg = tmp_path / "lanes.svg"
    args = ["explain", "soo-callbacks-on-presentation-thread", "--svg", str(svg)]
    assert main([*args, "--impl", "mutant:soo-thread-per-callback"]) == 0
    capsys.readouterr()
    dom = _chromium(chromium, tmp_path, "--dump-dom", svg.as_uri()).stdout
    parsed = _Tables()
    parsed.feed(dom)
    assert parsed.lane_pictures == 1
    assert {"caller", "drain 1", "presentation 1", "presentation 2"} <= parsed.lanes
    assert parsed.shaded_rows > 0
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "lanes.png"
    shot.unlink(missing_ok=True)
    _chromium(chromium, tmp_path, f"--screenshot={shot}", "--window-size=1800,700", svg.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000
