"""Safe, bounded YAML loading that remembers where every value came from.

Error messages must name the line, so the loader keeps a map from a value's path in the
document (``("given", "observers", 2, "name")``) to its 1-based line. Only YAML's safe
subset is accepted: a tag such as ``!!python/object`` is an error, never code.

Scenario files come from anywhere, so the loader also bounds what one file can cost
(:data:`LIMITS`, in ``yaml_limits``): its size, how deep it nests, how many aliases it
uses and how big it becomes once they are expanded ("billion laughs"), and the size of
each string and integer. Whatever is loaded is JSON data an implementation in any
language can read exactly: strings of valid Unicode, finite numbers, integers within
2^53, booleans, nulls, lists and mappings with string keys (``yaml_composer``). Every
refusal is a :class:`YamlProblem` with a line.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path
from typing import Any

import yaml

from seamspec.conformance._core.yaml_composer import Path_, compose
from seamspec.conformance._core.yaml_limits import LIMITS, SAFE_INTEGER, Limits, YamlProblem

__all__ = [
    "LIMITS",
    "SAFE_INTEGER",
    "Limits",
    "LoadedYaml",
    "YamlProblem",
    "load_yaml",
    "read_text",
]


class LoadedYaml:
    """A loaded document plus the line of each value (keys included, as ``path + ("<key>",)``)."""

    def __init__(self, data: Any, lines: dict[Path_, int]) -> None:
        self.data = data
        self._lines = lines

    def line_of(self, path: Path_) -> int | None:
        """The line of the value at ``path``, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            line = self._lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"


def read_text(path: Path, limits: Limits = LIMITS) -> str:
    """The file's text, read without ever holding more than the size limit.

    YamlProblem (with the line) for a file too large or not UTF-8 (:func:`load_yaml`
    checks the characters); OSError if it cannot be read at all.
    """
    if not stat.S_ISREG(path.stat().st_mode):
        raise YamlProblem(
            "not a regular file (a folder, FIFO, device or socket)", None, "name a scenario file"
        )
    with path.open("rb") as handle:
        data = handle.read(limits.file_bytes + 1)
    if len(data) > limits.file_bytes:
        raise YamlProblem(
            f"the file is larger than the limit of {limits.file_bytes:,} bytes "
            f"(it passes it on this line); scenario files are small",
            data[: limits.file_bytes].count(b"\n") + 1,
            "split it into several scenarios; docs/scenarios.md lists the limits",
        )
    if data.startswith(_UTF16_BOMS) or data.startswith(b"\x00\x00\xfe\xff"):
        raise YamlProblem(
            "the file is UTF-16 or UTF-32 text (it starts with a byte order mark)",
            1,
            "save it as UTF-8",
        )
    if b"\x00" in data[:2]:  # "i\x00d\x00" is how UTF-16 without a byte order mark starts
        raise YamlProblem(
            "the file starts with a NUL byte: it looks like UTF-16 or UTF-32 text",
            1,
            "save it as UTF-8",
        )
    try:
        text = data.removeprefix(_UTF8_BOM).decode("utf-8")
    except UnicodeDecodeError as error:
        start = error.start + (len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0)
        line_start = data.rfind(b"\n", 0, start) + 1
        raise YamlProblem(
            f"not UTF-8 text: byte 0x{data[start]:02x} at column {start - line_start + 1} "
            f"({error.reason})",
            data.count(b"\n", 0, start) + 1,
            "save the file as UTF-8",
        ) from None
    return text


#: What YAML 1.1 forbids in a stream (PyYAML's reader says "position N", not the line).
_NON_PRINTABLE = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _check_characters(text: str) -> None:
    found = _NON_PRINTABLE.search(text)
    if found is None:
        return
    at = found.start()
    line_start = text.rfind("\n", 0, at) + 1
    code = ord(found.group())
    kind = "control character" if code < 0xA0 else "character"
    raise YamlProblem(
        f"{kind} U+{code:04X} at column {at - line_start + 1}: "
        "YAML allows only printable characters in a file",
        text.count("\n", 0, at) + 1,
        'inside a double-quoted string write it as an escape, e.g. "\\x07"',
    )


def load_yaml(text: str, limits: Limits = LIMITS) -> LoadedYaml:
    """Parse exactly one YAML document of JSON data, within ``limits``."""
    _check_characters(text)
    if len(text) > limits.file_bytes:  # characters: never more than the file's bytes
        raise YamlProblem(f"the text is longer than {limits.file_bytes:,} characters", None)
    try:
        data, lines = compose(text, limits)
    except yaml.MarkedYAMLError as error:
        raise _syntax(error, limits) from None
    except yaml.YAMLError as error:
        raise YamlProblem(f"YAML error: {error}", None) from None
    return LoadedYaml(data, lines)


def _syntax(error: yaml.MarkedYAMLError, limits: Limits = LIMITS) -> YamlProblem:
    mark = error.problem_mark or error.context_mark
    line = mark.line + 1 if mark is not None else None
    what = error.problem or error.context or str(error)
    if "nesting depth" in what or "flow level" in str(error.context or ""):
        # libyaml's own bound (its scanner looks ahead past the kit's): the same problem
        return YamlProblem(
            f"lists and mappings nested more than {limits.depth} deep",
            line,
            "flatten the data; docs/scenarios.md lists the limits",
        )
    if "invalid Unicode character escape" in what:  # libyaml's word for \ud800
        return YamlProblem(
            "an escape for a lone surrogate (such as \\ud800) in a string: it is not "
            "Unicode text and cannot be sent as UTF-8",
            line,
            "write the character itself, or \\U0001F600 for one beyond U+FFFF",
        )
    return YamlProblem(
        f"YAML syntax error: {what}", line, "fix the YAML; `seamspec validate` rechecks"
    )
