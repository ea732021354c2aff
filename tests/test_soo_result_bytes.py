"""SOO-RESULT-BYTES apart from SOO-ENVELOPE: which wrong result streams are upstream's text.

Upstream's envelope holds the first cap bytes lossy-decoded and cut back to a character
boundary within the cap (shell_tool.rs:1954-1957, 1961-1969). The oracle names such a
stream SOO-RESULT-BYTES (strict profile), so upstream conforms by default; any other
difference stays SOO-ENVELOPE's.
"""

from __future__ import annotations

import pytest

from seamspec.conformance._contracts.shell_output.oracle_result import (
    _as_upstream_text,
    upstream_text,
)


@pytest.mark.parametrize(
    ("written", "cap", "text"),
    [
        ("ab€\n".encode(), 4, b"ab"),  # the cut inside the euro sign backs off
        (b"\xff\xfea\r\n", 64, "\ufffd\ufffda\r\n".encode()),  # CRLF kept, U+FFFD
        (b"\xff\xff", 4, "\ufffd".encode()),  # the decoded text outgrew the cap
        (b"abc", 2, b"ab"),  # valid text is the bytes themselves
    ],
)
def test_upstream_text(written: bytes, cap: int, text: bytes) -> None:
    assert upstream_text(written, cap) == text


def test_only_the_lossy_form_moves_to_result_bytes() -> None:
    written = {"stdout": "ab€\n".encode(), "stderr": b"\xff\xff"}
    wrong: dict[str, tuple[object, object]] = {
        "stdout_hex": ("6162", "6162e282"),  # upstream's back-off
        "stderr_hex": ("efbfbd", "ffff"),  # upstream's U+FFFD, cut back
        "stderr_truncated": (True, False),  # flagged since the text outgrew the cap
        "exit_code": (1, 0),
    }
    moved = _as_upstream_text(wrong, written, 4)
    assert set(moved) == {"stdout_hex", "stderr_hex", "stderr_truncated"}
    # newlines converted as well: not upstream's form, so SOO-ENVELOPE's
    text_mode: dict[str, tuple[object, object]] = {"stdout_hex": ("61620a", "61620d0a")}
    assert _as_upstream_text(text_mode, {"stdout": b"ab\r\n", "stderr": b""}, 64) == {}
