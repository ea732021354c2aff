"""Safe YAML loading that remembers where every value came from.

Error messages must name the line, so the loader keeps a map from a value's path in the
document (``("given", "observers", 2, "name")``) to its 1-based line. Only YAML's safe
subset is accepted: a tag such as ``!!python/object`` is an error, never code.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["LoadedYaml", "YamlProblem", "load_yaml"]

Path_ = tuple[str | int, ...]


class YamlProblem(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


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


class _Constructor(yaml.constructor.SafeConstructor):
    pass


#: libyaml's parser when PyYAML was built with it (the wheels are): the same safe subset
#: and the same nodes with their line marks, about five times faster than the pure-Python
#: one, which is most of the time it takes to load the suite.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> LoadedYaml:
    """Parse exactly one YAML document, rejecting duplicate keys and unsafe tags."""
    try:
        nodes = list(yaml.compose_all(text, Loader=_LOADER))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else None
        raise YamlProblem(f"YAML syntax error: {error.problem or error}", line) from None
    except yaml.YAMLError as error:
        raise YamlProblem(f"YAML error: {error}", None) from None
    if not nodes:
        raise YamlProblem("the file is empty: a scenario file holds one YAML mapping", 1)
    if len(nodes) > 1:
        raise YamlProblem(
            "the file holds several YAML documents ('---'); put one scenario per file",
            nodes[1].start_mark.line + 1,
        )
    lines: dict[Path_, int] = {}
    constructor = _Constructor()
    data = _convert(nodes[0], (), lines, constructor)
    return LoadedYaml(data, lines)


_PLAIN_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


def _convert(node: yaml.Node, path: Path_, lines: dict[Path_, int], c: _Constructor) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _PLAIN_TAGS:
        raise YamlProblem(
            f"unsupported YAML tag {node.tag!r}: scenarios are plain data", node.start_mark.line + 1
        )
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise YamlProblem(
                    "YAML merge keys ('<<') are not supported", key_node.start_mark.line + 1
                )
            key = _scalar(key_node, c)
            if not isinstance(key, str):
                raise YamlProblem(
                    f"mapping key {key!r} is not a string", key_node.start_mark.line + 1
                )
            if key in out:
                raise YamlProblem(f"duplicate key {key!r}", key_node.start_mark.line + 1)
            lines[path + (f"<{key}>",)] = key_node.start_mark.line + 1
            out[key] = _convert(value_node, path + (key,), lines, c)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, path + (i,), lines, c) for i, item in enumerate(node.value)]
    return _scalar(node, c)


def _scalar(node: yaml.Node, c: _Constructor) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise YamlProblem("complex mapping keys are not supported", node.start_mark.line + 1)
    try:
        return c.construct_object(node, deep=True)
    except yaml.constructor.ConstructorError:
        raise YamlProblem(
            f"unsupported YAML tag {node.tag!r}: scenarios are plain data", node.start_mark.line + 1
        ) from None
