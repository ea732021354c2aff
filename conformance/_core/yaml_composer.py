"""YAML events to plain JSON data, within the limits, without recursion.

PyYAML's own composer recurses (deep nesting ends in RecursionError), resolves an alias
to the very node that contains it (``&r [*r]`` is a cycle) and expands aliases without
counting ("billion laughs"). So the kit reads the parser's events itself, with an
explicit stack: every value, alias expansion, string and level of nesting is counted
as it arrives, and the first one past a limit stops the parse at its line. The events
come from libyaml when PyYAML has it (the wheels do: tokens in C, about five times
faster), else from PyYAML's Python parser, stopped early on deep brackets.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from seamspec.conformance._core.yaml_limits import SAFE_INTEGER, Limits, YamlProblem

__all__ = ["Path_", "compose"]

Path_ = tuple[str | int, ...]

#: libyaml's safe loader (its parser in C, PyYAML's resolver and safe constructor).
_C_LOADER: Any = getattr(yaml, "CSafeLoader", None)
_PLAIN_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}
_INT_TAG = "tag:yaml.org,2002:int"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_SURROGATE = re.compile("[\ud800-\udfff]")
_LIMITS_HINT = "docs/scenarios.md lists the limits"
_NOT_JSON = {
    "bytes": ("binary data (!!binary)", "write the bytes as a string, or as hex where allowed"),
    "date": ("a date", "quote it: YAML 1.1 reads an unquoted 2024-01-01 as a date"),
    "datetime": ("a timestamp", "quote it: YAML 1.1 reads 2024-01-01 10:00 as a timestamp"),
}


class _PythonLoader(yaml.SafeLoader):
    """PyYAML's Python parser, for an install without libyaml."""

    limits: Limits

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        """Stop ``[[[[...`` in the scanner: PyYAML weighs every open bracket at every token
        (1,000 brackets on a line take a second), long before the composer sees them."""
        super().fetch_flow_collection_start(token_class)
        if self.flow_level > self.limits.depth:
            raise YamlProblem(
                f"lists and mappings nested more than {self.limits.depth} deep",
                self.line + 1,
                f"flatten the data; {_LIMITS_HINT}",
            )


def _source(text: str, limits: Limits) -> Any:
    if _C_LOADER is not None:
        return _C_LOADER(text)
    loader = _PythonLoader(text)
    loader.limits = limits
    return loader


@dataclass
class _Open:
    """A list or mapping whose end event has not come yet."""

    value: list[Any] | dict[str, Any]
    path: Path_
    anchor: str | None
    values_before: int
    text_before: int
    key: str | None = None  # a mapping's key waiting for its value
    height: int = 1  # levels of nesting, this one included


@dataclass
class _Anchored:
    """What an alias to this anchor adds: its value and what it costs."""

    value: Any
    values: int
    text: int
    height: int


@dataclass
class _Composer:
    source: Any
    limits: Limits
    lines: dict[Path_, int] = field(default_factory=dict)
    values: int = 0
    text: int = 0
    aliases: int = 0
    anchors: dict[str, _Anchored] = field(default_factory=dict)
    open_anchors: set[str] = field(default_factory=set)

    def document(self) -> Any:
        self.source.get_event()  # StreamStart
        if self.source.check_event(yaml.StreamEndEvent):
            raise YamlProblem("the file is empty: a scenario file holds one YAML mapping", 1)
        self.source.get_event()  # DocumentStart
        data = self._value()
        self.source.get_event()  # DocumentEnd
        if not self.source.check_event(yaml.StreamEndEvent):
            second = self.source.get_event()
            raise YamlProblem(
                "the file holds several YAML documents ('---'); put one scenario per file",
                second.start_mark.line + 1,
            )
        return data

    def _value(self) -> Any:
        stack: list[_Open] = []
        while True:
            event = self.source.get_event()
            line = event.start_mark.line + 1
            parent = stack[-1] if stack else None
            if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                done = stack.pop()
                if done.anchor is not None:
                    self.open_anchors.discard(done.anchor)
                    self.anchors[done.anchor] = _Anchored(
                        done.value,
                        self.values - done.values_before,
                        self.text - done.text_before,
                        done.height,
                    )
                value, height, parent = done.value, done.height, stack[-1] if stack else None
            else:
                as_key = (
                    parent is not None and isinstance(parent.value, dict) and parent.key is None
                )
                path = self._path(parent)
                if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                    stack.append(self._start(event, line, path, len(stack) + 1, as_key))
                    continue
                if isinstance(event, yaml.AliasEvent):
                    value = self._alias(event, line, len(stack))
                    height = self.anchors[str(event.anchor)].height
                else:
                    value, height = self._scalar(event, line, as_key), 0
                if not as_key:
                    self.lines[path] = line
            if parent is None:
                return value
            self._attach(parent, value, height, line)

    def _path(self, parent: _Open | None) -> Path_:
        if parent is None:
            return ()
        if isinstance(parent.value, list):
            return parent.path + (len(parent.value),)
        return parent.path + (parent.key,) if parent.key is not None else parent.path

    def _attach(self, parent: _Open, value: Any, height: int, line: int) -> None:
        parent.height = max(parent.height, height + 1)
        if isinstance(parent.value, list):
            parent.value.append(value)
        elif parent.key is not None:
            parent.value[parent.key] = value
            parent.key = None
        else:
            if not isinstance(value, str):
                raise YamlProblem(
                    f"mapping key {value!r:.80} is not a string",
                    line,
                    "quote the key (YAML reads yes, no, on, off, numbers and null as non-strings)",
                )
            if value in parent.value:
                raise YamlProblem(f"duplicate key {value!r:.80}", line)
            parent.key = value
            self.lines[parent.path + (f"<{value}>",)] = line

    def _count(self, line: int, depth: int, what: str = "") -> None:
        self.values += 1
        if self.values > self.limits.values:
            raise YamlProblem(
                f"more than {self.limits.values:,} values {what or 'in one file'}",
                line,
                f"write the values in full, or fewer of them; {_LIMITS_HINT}"
                if what
                else f"split it into several scenarios; {_LIMITS_HINT}",
            )
        if depth > self.limits.depth:
            raise YamlProblem(
                f"lists and mappings nested more than {self.limits.depth} deep"
                + (f" {what}" if what else ""),
                line,
                f"flatten the data; {_LIMITS_HINT}",
            )

    def _start(self, event: Any, line: int, path: Path_, depth: int, as_key: bool) -> _Open:
        if as_key:
            raise YamlProblem(
                "complex mapping keys (a list or mapping as a key) are not supported", line
            )
        values_before, text_before = self.values, self.text
        self._count(line, depth)
        mapping = isinstance(event, yaml.MappingStartEvent)
        tag = event.tag
        if tag is not None and tag != "!" and tag not in _PLAIN_TAGS:
            raise YamlProblem(f"unsupported YAML tag {tag!r}: scenarios are plain data", line)
        self._anchor(event.anchor, line)
        if event.anchor is not None:
            self.open_anchors.add(event.anchor)
        self.lines[path] = line
        value: list[Any] | dict[str, Any] = {} if mapping else []
        return _Open(value, path, event.anchor, values_before, text_before)

    def _anchor(self, name: str | None, line: int) -> None:
        if name is not None and (name in self.anchors or name in self.open_anchors):
            raise YamlProblem(f"anchor '&{name}' is defined twice", line)

    def _alias(self, event: Any, line: int, depth: int) -> Any:
        name = event.anchor
        self.aliases += 1
        if self.aliases > self.limits.aliases:
            raise YamlProblem(
                f"more than {self.limits.aliases} aliases ('*name'): a scenario file spells "
                "its values out",
                line,
                f"write the values in full; {_LIMITS_HINT}",
            )
        if name in self.open_anchors:
            raise YamlProblem(
                f"alias '*{name}' refers to a list or mapping that contains it: the document "
                "would be infinite",
                line,
                "an alias may only repeat a value that is complete before it",
            )
        if name not in self.anchors:
            raise YamlProblem(
                f"YAML syntax error: found undefined alias {name!r}",
                line,
                "define the anchor (&name) before its first use",
            )
        anchored = self.anchors[name]
        self.values += anchored.values - 1
        self._count(line, depth + anchored.height, "once aliases are expanded")
        self._text(anchored.text, line, expanded=True)
        return copy.deepcopy(anchored.value)

    def _text(self, chars: int, line: int, *, expanded: bool = False) -> None:
        self.text += chars
        if self.text > self.limits.text_chars:
            raise YamlProblem(
                f"more than {self.limits.text_chars:,} characters of strings"
                + (" once aliases are expanded" if expanded else ""),
                line,
                f"write the values in full, or shorter; {_LIMITS_HINT}",
            )

    def _scalar(self, event: Any, line: int, as_key: bool) -> Any:
        self._count(line, 0)
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.source.resolve(yaml.ScalarNode, event.value, event.implicit)
        if as_key and tag == _MERGE_TAG:
            raise YamlProblem("YAML merge keys ('<<') are not supported", line)
        if tag == _INT_TAG and len(event.value) > self.limits.integer_chars:
            raise YamlProblem(
                f"an integer of {len(event.value):,} characters: integers in scenarios lie "
                f"within ±{SAFE_INTEGER:,} (2^53 - 1)",
                line,
                "quote it if it should be a string",
            )
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            value = self.source.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError:
            raise YamlProblem(
                f"unsupported YAML tag {tag!r}: scenarios are plain data", line
            ) from None
        except Exception:  # an explicit tag on a value it cannot read: !!bool maybe, !!timestamp x
            raise YamlProblem(
                f"YAML cannot read {event.value[:40]!r} as a {tag.rsplit(':', 1)[-1]}",
                line,
                "quote it if it should be a string",
            ) from None
        value = _plain(value, line)
        if isinstance(value, str):
            wrong = _string_problem(value, self.limits)
            if wrong is not None:
                raise YamlProblem(wrong[0], line, wrong[1])
            self._text(len(value), line)
        self._anchor(event.anchor, line)
        if event.anchor is not None:
            self.anchors[event.anchor] = _Anchored(
                value, 1, len(value) if isinstance(value, str) else 0, 0
            )
        return value


def _plain(value: Any, line: int) -> Any:
    """``value`` if JSON carries it exactly in every language, else a YamlProblem."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if abs(value) > SAFE_INTEGER:
            raise YamlProblem(
                f"integer {value} is outside ±{SAFE_INTEGER:,} (2^53 - 1), the range every "
                "language reads exactly from JSON",
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
        return value
    kind, hint = _NOT_JSON.get(type(value).__name__, (type(value).__name__, "write it as a string"))
    raise YamlProblem(
        f"YAML read this value as {kind}: scenarios hold only strings, numbers, booleans, "
        "nulls, lists and mappings",
        line,
        hint,
    )


def _string_problem(value: str, limits: Limits) -> tuple[str, str] | None:
    """(what is wrong, what to do) with a string, or None."""
    if len(value) > limits.string_chars:
        return (
            f"a string of {len(value):,} characters; the limit is {limits.string_chars:,}",
            f"shorten it; {_LIMITS_HINT}",
        )
    surrogate = _SURROGATE.search(value)
    if surrogate is not None:
        return (
            f"a lone surrogate U+{ord(surrogate.group()):04X} in a string (from an escape "
            "such as \\ud800): it is not Unicode text and cannot be sent as UTF-8",
            "write the character itself, or \\U0001F600 for one beyond U+FFFF",
        )
    return None


def compose(text: str, limits: Limits) -> tuple[Any, dict[Path_, int]]:
    """The one document of ``text`` as plain data, and the line of every value's path.

    YamlProblem for anything past a limit or not JSON data; PyYAML's MarkedYAMLError for
    a syntax error (the caller words it).
    """
    source = _source(text, limits)
    composer = _Composer(source, limits)
    try:
        data = composer.document()
    finally:
        source.dispose()
    return data, composer.lines
