"""Every console example in the README and the docs runs, and prints what the docs show.

What the two kinds of blocks mean is in ``tests/doc_console.py``. A page fails with the
page, the line and both outputs, so the fix is to paste the real output (or fix the
command), never to loosen this test.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.doc_console import DOCS, REPO, Command, output_matches, pages, split_session

FENCE = re.compile(r"^```(\S*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_console_examples_print_what_the_page_shows(page: Path) -> None:
    document = DOCS.parse(page)
    try:
        for example in document:
            example.evaluate()
    finally:
        scratch = document.namespace.get("scratch")
        if isinstance(scratch, Path):
            shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_commands_are_only_shown_in_blocks_that_are_checked(page: Path) -> None:
    """A ``$`` line in a ``text`` or unmarked block would escape both checks."""
    text = page.read_text(encoding="utf-8")
    for match in FENCE.finditer(text):
        language, body = match.group(1), match.group(2)
        if language in ("console", "shell"):
            continue
        line = text.count("\n", 0, match.start()) + 1
        assert not any(row.startswith("$ ") for row in body.splitlines()), (
            f"{page.relative_to(REPO)}:{line}: a ```{language} block shows commands; "
            "mark it console (run and compared) or shell (commands only, parsed)"
        )


def test_a_session_is_cut_at_each_command() -> None:
    assert split_session("$ a\none\ntwo\n$ b\n", 10) == [
        Command("a", 10, ["one", "two"]),
        Command("b", 13, []),
    ]
    with pytest.raises(AssertionError, match="starts with a '\\$ ' command"):
        split_session("orphan output\n$ a\n", 1)


def test_output_comparison_has_placeholders_and_nothing_more() -> None:
    assert output_matches(["verdict: X CONFORMS (13.4 s)"], "verdict: X CONFORMS (0.9 s)\n")
    assert output_matches(
        ["[1/9] PASS  a  12 ms", "...", "9 passed"], "[1/9] PASS  a  3 ms\nb\nc\n9 passed"
    )
    assert output_matches(["seamspec ...: 9 scenarios"], "seamspec 0.1.0: 9 scenarios")
    assert not output_matches(["9 passed"], "8 passed")
    assert not output_matches(["a", "b"], "a\nb\nc")
    assert not output_matches(["CONFORMS"], "DOES NOT CONFORM")
