"""The failures section of the HTML report: what differed, shown so a person sees it.

Many rules are about exact bytes: annotations joined by exactly one blank line, output
passed through verbatim, nothing trimmed. "expected 'a\\n\\nb', observed 'a\\nb'" in a
sentence is hard to read; a line diff in which every space, tab and line end is drawn
is not. The findings say "expected X, observed Y" (or "saw Y; expected X") with Python
literals; this module finds those literals, diffs them, and draws the trace as lanes
beside the reference's. Published reports must not leak the machine they were made on,
so absolute paths are shortened everywhere on the page.
"""

from __future__ import annotations

import ast
import difflib
import re
from html import escape
from typing import Any

from seamspec.conformance._reports.lanes_svg import lanes_svg

__all__ = [
    "display_path",
    "expected_observed",
    "failure_html",
    "scrub_paths",
    "whitespace_diff",
]

CSS = """
.diff{line-height:1.35}.diff .del{background:#ffebe9;color:#82071e;display:block}
.diff .ins{background:#dafbe1;color:#116329;display:block}.diff .eq{display:block;color:#57606a}
.ws{color:#8c959f}.diff .del .ws{color:#cf8a8a}.diff .ins .ws{color:#6fb07d}
.lanes-box{overflow-x:auto;border:1px solid #d0d7de;border-radius:6px;margin:.5rem 0}
.finding{margin:.25rem 0}
"""

_POSIX = re.compile(r"(?<![\w.~/:-])/(?:[^\s/'\"<>:,()\[\]]+/)+[^\s/'\"<>:,()\[\]]*")
_WINDOWS = re.compile(r"\b[A-Za-z]:\\(?:[^\s\\'\"<>]+\\)+[^\s\\'\"<>]*")
_LITERAL_START = re.compile(r"""(?:[bru]{0,2}['"]|[\[({\-0-9]|None\b|True\b|False\b)""")


def display_path(path: str) -> str:
    """A scenario file as a reader anywhere can take it: ``scenarios/<contract>/x.yaml``."""
    posix = path.replace("\\", "/")
    if not (posix.startswith("/") or re.match(r"^[A-Za-z]:/", posix)):
        return path
    if "/scenarios/" in posix:
        return "scenarios/" + posix.rsplit("/scenarios/", 1)[1]
    return ".../" + "/".join(posix.rsplit("/", 2)[-2:])


def scrub_paths(text: str) -> str:
    """Every absolute path shortened to ``.../parent/name``: no home, no tmp, no venv."""

    def short(match: re.Match[str]) -> str:
        parts = [p for p in re.split(r"[\\/]", match.group(0)) if p]
        return ".../" + "/".join(parts[-2:])

    return _WINDOWS.sub(short, _POSIX.sub(short, text))


def _literal_at_start(text: str) -> tuple[bool, Any]:
    """The longest prefix of ``text`` that is a Python literal (then only trailing words)."""
    text = text.strip()
    ends = sorted({len(text), *(m.start() for m in re.finditer(r" \(|; | ", text))}, reverse=True)
    for end in ends:
        try:
            return True, ast.literal_eval(text[:end])
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return False, None


def _literal_at_end(text: str) -> tuple[bool, Any]:
    """The longest suffix of ``text`` that is a Python literal (after some words)."""
    for match in _LITERAL_START.finditer(text):
        if match.start() and text[match.start() - 1] not in " =:":
            continue
        try:
            return True, ast.literal_eval(text[match.start() :].strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return False, None


def expected_observed(message: str) -> tuple[Any, Any] | None:
    """(expected, observed) when a finding states both as literals, else None."""
    for tail in re.finditer(r", observed ", message):
        head = message[: tail.start()]
        start = head.rfind("expected ")
        if start < 0:
            continue
        ok_want, want = _literal_at_end(head[start + len("expected ") :])
        ok_got, got = _literal_at_start(message[tail.end() :])
        if ok_want and ok_got:
            return want, got
    if "; expected " in message:
        head, _, tail_text = message.rpartition("; expected ")
        ok_got, got = _literal_at_end(head)
        ok_want, want = _literal_at_start(tail_text)
        if ok_want and ok_got:
            return want, got
    return None


def _visible(line: str) -> str:
    """HTML for one line with its whitespace drawn: space ·, tab →, CR ␍, line end ↵."""
    out = []
    for char in line:
        if char == " ":
            out.append('<span class="ws">·</span>')
        elif char == "\t":
            out.append('<span class="ws">→</span>')
        elif char == "\r":
            out.append('<span class="ws">␍</span>')
        elif char == "\n":
            out.append('<span class="ws">↵</span>')
        else:
            out.append(escape(char))
    return "".join(out)


def _lines(value: Any) -> list[str] | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "backslashreplace")
    if isinstance(value, str):
        # A last line without its line end shows no ↵: that difference is visible too.
        return value.splitlines(keepends=True) or [""]
    if isinstance(value, (list, tuple)):
        return [repr(item) + "\n" for item in value]
    return None


def whitespace_diff(expected: Any, observed: Any) -> str | None:
    """A line diff of two strings (or bytes, or lists) with whitespace visible, or None."""
    want, got = _lines(expected), _lines(observed)
    if want is None or got is None:
        return None
    rows = ['<pre class="diff"><span class="eq">- expected   + observed</span>']
    matcher = difflib.SequenceMatcher(None, want, got, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            rows += [f'<span class="eq">  {_visible(line)}</span>' for line in want[a0:a1]]
            continue
        rows += [f'<span class="del">- {_visible(line)}</span>' for line in want[a0:a1]]
        rows += [f'<span class="ins">+ {_visible(line)}</span>' for line in got[b0:b1]]
    rows.append("</pre>")
    return "".join(rows)


def _findings_html(result: dict[str, Any]) -> str:
    out = []
    for finding in result.get("findings", []):
        message = str(finding.get("message", ""))
        label = finding.get("rule") or "then"
        out.append(
            f'<div class="finding"><code>[{escape(str(label))}]</code> '
            f"{escape(scrub_paths(message))}"
        )
        pair = expected_observed(message)
        diff = whitespace_diff(*pair) if pair else None
        if diff:
            out.append(diff)
        out.append("</div>")
    return "".join(out)


def failure_html(sid: str, name: str, result: dict[str, Any], label: str) -> str:
    """One failure: title, rules, file, findings with diffs, the detail, and the lanes."""
    rules = ", ".join(result["broken_rules"] or result["rules"])
    parts = [
        f'<div class="failure" id="f-{escape(sid)}"><h3><code>{escape(sid)}</code> on '
        f"{escape(name)}: {label}</h3>",
        f"<p>{escape(result['title'])}<br>rules: <code>{escape(rules)}</code><br>"
        f"<small>{escape(display_path(result['file']))}</small></p>",
        _findings_html(result),
        f"<details><summary>full detail</summary><pre>"
        f"{escape(scrub_paths(result['detail']))}</pre></details>",
    ]
    trace = result.get("trace")
    if trace:
        svg = lanes_svg(
            result["contract"],
            trace,
            result.get("expected_trace"),
            observed_name=f"observed ({name})",
        )
        parts.append(f'<div class="lanes-box">{scrub_paths_in_svg(svg)}</div>')
    parts.append("</div>")
    return "".join(parts)


def scrub_paths_in_svg(svg: str) -> str:
    """Labels in a drawn trace may hold paths too (a file an observer saw)."""
    return re.sub(r">([^<]*)<", lambda m: ">" + scrub_paths(m.group(1)) + "<", svg)
