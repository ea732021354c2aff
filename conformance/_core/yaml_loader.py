"""Safe, bounded YAML loading that remembers where every value came from.

Error messages must name the line, so the loader keeps a map from a value's path in the
document (``("given", "observers", 2, "name")``) to its 1-based line. Only YAML's safe
subset is accepted: a tag such as ``!!python/object`` is an error, never code.

Scenario files come from anywhere, so the loader also bounds what one file can cost
(:data:`LIMITS`): its size, how deep it nests, how many aliases it uses and how big it
becomes once they are expanded ("billion laughs"), and the size of each string and
integer. Whatever is loaded is JSON data an implementation in any language can read
exactly: strings of valid Unicode, finite numbers, integers within 2^53, booleans, nulls,
lists and mappings with string keys. Every refusal is a :class:`YamlProblem` with a line.
"""

from __future__ import annotations

import math
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "LIMITS",
    "SAFE_INTEGER",
    "Limits",
    "LoadedYaml",
    "YamlProblem",
    "load_yaml",
    "read_text",
]

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Limits:
    """What one YAML file may cost. Far above any real scenario (the largest shipped file
    is under 2 KiB, 9 levels deep, 150 values, with no alias), far below what would hurt
    the kit."""

    #: bytes in the file
    file_bytes: int = 128 * 1024
    #: lists and mappings inside each other, aliases expanded
    depth: int = 32
    #: alias uses (``*name``)
    aliases: int = 100
    #: values (every scalar, list, mapping and key), aliases expanded
    values: int = 2_000
    #: characters in one string
    string_chars: int = 64 * 1024
    #: characters in all strings together, aliases expanded
    text_chars: int = 1024 * 1024
    #: characters in one integer literal (checked before it is converted)
    integer_chars: int = 40


LIMITS = Limits()

#: The largest integer magnitude accepted: every JSON reader (JavaScript's included)
#: holds integers up to 2^53 - 1 exactly, and a scenario must mean the same everywhere.
SAFE_INTEGER = 2**53 - 1


class YamlProblem(Exception):
    def __init__(self, message: str, line: int | None, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.hint = hint


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
    if data.startswith(_UTF16_BOMS) or data.startswith((b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")):
        raise YamlProblem(
            "the file is UTF-16 or UTF-32 text (it starts with a byte order mark)",
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
_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_characters(text: str) -> None:
    found = _NON_PRINTABLE.search(text)
    if found is None:
        return
    at = found.start()
    line_start = text.rfind("\n", 0, at) + 1
    raise YamlProblem(
        f"control character U+{ord(found.group()):04X} at column {at - line_start + 1}: "
        "YAML allows only printable characters in a file",
        text.count("\n", 0, at) + 1,
        'inside a double-quoted string write it as an escape, e.g. "\\x07"',
    )


def load_yaml(text: str, limits: Limits = LIMITS) -> LoadedYaml:
    """Parse exactly one YAML document of JSON data, within ``limits``."""
    _check_characters(text)
    if len(text) > limits.file_bytes:  # characters: never more than the file's bytes
        raise YamlProblem(f"the text is longer than {limits.file_bytes:,} characters", None)
    loader = _BoundedLoader(text, limits)
    try:
        node = loader.get_single_node()
    except yaml.composer.ComposerError as error:
        if "expected a single document" in str(error.context or ""):
            mark = error.problem_mark
            raise YamlProblem(
                "the file holds several YAML documents ('---'); put one scenario per file",
                mark.line + 1 if mark is not None else None,
            ) from None
        raise _syntax(error) from None
    except yaml.MarkedYAMLError as error:
        raise _syntax(error) from None
    except yaml.YAMLError as error:
        raise YamlProblem(f"YAML error: {error}", None) from None
    finally:
        loader.dispose()
    if node is None:
        raise YamlProblem("the file is empty: a scenario file holds one YAML mapping", 1)
    lines: dict[Path_, int] = {}
    data = _Converter(loader, limits, lines).convert(node, (), 0)
    return LoadedYaml(data, lines)


def _syntax(error: yaml.MarkedYAMLError) -> YamlProblem:
    mark = error.problem_mark or error.context_mark
    line = mark.line + 1 if mark is not None else None
    what = error.problem or error.context or str(error)
    return YamlProblem(
        f"YAML syntax error: {what}", line, "fix the YAML; `seamspec validate` rechecks"
    )


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, composing within the limits.

    PyYAML composes recursively (deep nesting would end in RecursionError) and resolves
    an alias to the very node that contains it (``&r [*r]`` is a cycle), so both are
    refused here, before they are built. Nodes are counted as they are composed, so a
    file of a million tiny values stops at the limit instead of being parsed whole.
    """

    def __init__(self, text: str, limits: Limits) -> None:
        super().__init__(text)
        self.limits = limits
        self.depth = 0
        self.nodes = 0
        self.aliases = 0
        self.open_anchors: set[str] = set()
        #: (id of the parent node, item index or id of the key node) -> line of an alias
        self.alias_lines: dict[tuple[int, int], int] = {}

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        """Stop ``[[[[...`` in the scanner: PyYAML weighs every open bracket at every token
        (1,000 brackets on a line take a second), long before the composer sees them."""
        super().fetch_flow_collection_start(token_class)
        if self.flow_level > self.limits.depth:
            raise YamlProblem(
                f"lists and mappings nested more than {self.limits.depth} deep",
                self.line + 1,
                "flatten the data; docs/scenarios.md lists the limits",
            )

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > self.limits.aliases:
                raise YamlProblem(
                    f"more than {self.limits.aliases} aliases ('*name'): "
                    "a scenario file spells its values out",
                    line,
                    "write the values in full; docs/scenarios.md lists the limits",
                )
            if event.anchor in self.open_anchors:
                raise YamlProblem(
                    f"alias '*{event.anchor}' refers to a list or mapping that contains it: "
                    "the document would be infinite",
                    line,
                    "an alias may only repeat a value that is complete before it",
                )
            if parent is not None:
                where = index if isinstance(index, int) else id(index)
                self.alias_lines[(id(parent), where)] = line
            return super().compose_node(parent, index)
        self.nodes += 1
        if self.nodes > self.limits.values:
            raise YamlProblem(
                f"more than {self.limits.values:,} values in one file",
                line,
                "split it into several scenarios; docs/scenarios.md lists the limits",
            )
        if not isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            return super().compose_node(parent, index)
        self.depth += 1
        if self.depth > self.limits.depth:
            raise YamlProblem(
                f"lists and mappings nested more than {self.limits.depth} deep",
                line,
                "flatten the data; docs/scenarios.md lists the limits",
            )
        anchor = event.anchor
        if anchor is not None:
            self.open_anchors.add(anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1
            if anchor is not None:
                self.open_anchors.discard(anchor)


_PLAIN_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}
_INT_TAG = "tag:yaml.org,2002:int"


_NOT_JSON = {
    "bytes": (
        "binary data (!!binary)",
        "write the bytes as a string, or as hex where the schema allows",
    ),
    "date": ("a date", "quote it: YAML 1.1 reads an unquoted 2024-01-01 as a date"),
    "datetime": (
        "a timestamp",
        "quote it: YAML 1.1 reads an unquoted 2024-01-01 10:00 as a timestamp",
    ),
}


class _Converter:
    """Turns composed nodes into plain data, counting what aliases expand to."""

    def __init__(self, loader: _BoundedLoader, limits: Limits, lines: dict[Path_, int]):
        self.constructor = loader
        self.alias_lines = loader.alias_lines
        self.limits = limits
        self.lines = lines
        self.values = 0
        self.text = 0
        #: the line of the outermost alias being expanded: where an expansion problem is
        self.alias_line: int | None = None

    def _child(
        self, parent: yaml.Node, where: int, child: yaml.Node, path: Path_, depth: int
    ) -> Any:
        line = self.alias_lines.get((id(parent), where))
        if line is None or self.alias_line is not None:
            return self.convert(child, path, depth)
        self.alias_line = line
        try:
            return self.convert(child, path, depth)
        finally:
            self.alias_line = None

    def _count(self, node: yaml.Node, depth: int) -> None:
        line = self.alias_line or node.start_mark.line + 1
        self.values += 1
        if self.values > self.limits.values:
            raise YamlProblem(
                f"more than {self.limits.values:,} values once aliases are expanded",
                line,
                "write the values in full, or fewer of them; docs/scenarios.md lists the limits",
            )
        if depth > self.limits.depth:
            raise YamlProblem(
                f"lists and mappings nested more than {self.limits.depth} deep "
                "once aliases are expanded",
                line,
                "flatten the data; docs/scenarios.md lists the limits",
            )

    def convert(self, node: yaml.Node, path: Path_, depth: int) -> Any:
        self._count(node, depth)
        line = node.start_mark.line + 1
        self.lines[path] = line
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _PLAIN_TAGS:
            raise YamlProblem(f"unsupported YAML tag {node.tag!r}: scenarios are plain data", line)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key_line = key_node.start_mark.line + 1
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise YamlProblem("YAML merge keys ('<<') are not supported", key_line)
                self._count(key_node, depth + 1)
                key = self.scalar(key_node)
                if not isinstance(key, str):
                    raise YamlProblem(
                        f"mapping key {key!r:.80} is not a string",
                        key_line,
                        "quote the key (YAML reads yes, no, on, off, numbers and null as non-strings)",
                    )
                if key in out:
                    raise YamlProblem(f"duplicate key {key!r:.80}", key_line)
                self.lines[path + (f"<{key}>",)] = key_line
                out[key] = self._child(node, id(key_node), value_node, path + (key,), depth + 1)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [
                self._child(node, i, item, path + (i,), depth + 1)
                for i, item in enumerate(node.value)
            ]
        return self.scalar(node)

    def scalar(self, node: yaml.Node) -> Any:
        line = node.start_mark.line + 1
        if not isinstance(node, yaml.ScalarNode):
            raise YamlProblem("complex mapping keys are not supported", line)
        if node.tag == _INT_TAG and len(node.value) > self.limits.integer_chars:
            raise YamlProblem(
                f"an integer of {len(node.value):,} characters: integers in scenarios lie "
                f"within ±{SAFE_INTEGER:,} (2^53 - 1)",
                line,
                "quote it if it should be a string",
            )
        try:
            value = self.constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError:
            raise YamlProblem(
                f"unsupported YAML tag {node.tag!r}: scenarios are plain data", line
            ) from None
        except (ValueError, OverflowError):
            kind = node.tag.rsplit(":", 1)[-1]
            raise YamlProblem(
                f"YAML cannot read {node.value[:40]!r} as a {kind}",
                line,
                "quote it if it should be a string",
            ) from None
        return self._plain(value, line)

    def _plain(self, value: Any, line: int) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if abs(value) > SAFE_INTEGER:
                raise YamlProblem(
                    f"integer {value} is outside ±{SAFE_INTEGER:,} (2^53 - 1), the range "
                    "every language reads exactly from JSON",
                    line,
                    "use a smaller number, or quote it if it should be a string",
                )
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise YamlProblem(
                    f"{value} is not a finite number (JSON has no NaN or infinity)",
                    line,
                    "write a finite number",
                )
            return value
        if isinstance(value, str):
            return self._string(value, line)
        kind, hint = _NOT_JSON.get(
            type(value).__name__, (type(value).__name__, "write it as a string")
        )
        raise YamlProblem(
            f"YAML read this value as {kind}: scenarios hold only strings, numbers, "
            "booleans, nulls, lists and mappings",
            line,
            hint,
        )

    def _string(self, value: str, line: int) -> str:
        if len(value) > self.limits.string_chars:
            raise YamlProblem(
                f"a string of {len(value):,} characters; the limit is {self.limits.string_chars:,}",
                line,
                "shorten it; docs/scenarios.md lists the limits",
            )
        self.text += len(value)
        if self.text > self.limits.text_chars:
            raise YamlProblem(
                f"more than {self.limits.text_chars:,} characters of strings once aliases "
                "are expanded",
                self.alias_line or line,
                "write the values in full, or shorter; docs/scenarios.md lists the limits",
            )
        surrogate = _SURROGATE.search(value)
        if surrogate is not None:
            raise YamlProblem(
                f"a lone surrogate U+{ord(surrogate.group()):04X} in a string (from an escape "
                "such as \\ud800): it is not Unicode text and cannot be sent as UTF-8",
                line,
                "write the character itself, or \\U0001F600 for one beyond U+FFFF",
            )
        return value
