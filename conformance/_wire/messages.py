"""The messages of the wire protocol: their names, their schemas, and how a line is read.

Both ends of the protocol live in this repository (the kit's :class:`WireAdapter` and the
``serve-reference`` server), and adapter authors write a third in their own language. Keeping
every rule about what a valid line is in one module, backed by the JSON Schemas that
``docs/protocol.md`` publishes, means the Python ends cannot accept something the schemas
forbid, or the other way round.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from seamspec.conformance._core.adapter import ImplementationInfo

if TYPE_CHECKING:
    import jsonschema  # imported where used: it costs a quarter of a second at start-up

__all__ = [
    "ANSWERS",
    "KIT_MESSAGES",
    "PROTOCOL_VERSION",
    "PROTOCOL_VERSIONS",
    "RESPONSES",
    "ProtocolError",
    "decode_line",
    "encode",
    "info_from_started",
    "message_schema",
    "quote",
    "started_message",
    "validate",
]

#: The protocol version the kit offers: the newest it speaks. A new version is added,
#: never changed in place; the kit still speaks every one in :data:`PROTOCOL_VERSIONS`.
PROTOCOL_VERSION = 2
#: Every version the kit speaks. Version 2 adds ``run.request.resources`` (what the kit
#: prepared for the scenario, such as a journal's path and key) and ``query``/``answer``
#: (questions the kit asks the implementation about a scenario it just performed).
PROTOCOL_VERSIONS = (1, 2)

#: Messages the kit writes to the implementation's stdin.
KIT_MESSAGES = ("start", "run", "query", "stop")
#: Messages an implementation may answer a ``run`` with.
RESPONSES = ("trace", "skip", "error")
#: Messages an implementation may answer a ``query`` with (protocol 2).
ANSWERS = ("answer", "error")
_ALL = (*KIT_MESSAGES, "started", *RESPONSES, "answer")

#: How much of an offending line an error message quotes.
QUOTE_LIMIT = 300
#: The most JSON values (strings, objects, arrays, elements) one message may hold, and
#: the line length from which that is counted (see ``_check_values``).
MAX_VALUES = 100_000
CHECKED_FROM = 1024 * 1024


class ProtocolError(Exception):
    """A line that is not a valid protocol message here; the text says what is wrong."""


def quote(line: str | bytes) -> str:
    """The offending line as a reader should see it: repr-quoted, cut at QUOTE_LIMIT."""
    if isinstance(line, bytes):
        # Only the head is decoded: a line can be as long as the kit's read limit.
        size = len(line.rstrip(b"\r\n")) if len(line) < 4096 else len(line)
        text = line[: 4 * QUOTE_LIMIT].decode("utf-8", errors="replace").rstrip("\r\n")
        if size > len(text.encode()) or len(text) > QUOTE_LIMIT:
            return f"{text[:QUOTE_LIMIT]!r}... ({size} bytes)"
        return repr(text)
    text = line.rstrip("\r\n")
    if len(text) > QUOTE_LIMIT:
        return f"{text[:QUOTE_LIMIT]!r}... ({len(text)} characters)"
    return repr(text)


@cache
def message_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one message, shipped as package data."""
    if name not in _ALL:
        raise KeyError(f"no protocol message {name!r}; known: {', '.join(_ALL)}")
    files = resources.files("seamspec.conformance").joinpath("schemas").joinpath("protocol")
    text = files.joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(message_schema(name))


def validate(message: dict[str, Any], name: str) -> None:
    """Full JSON Schema check of ``message`` as a ``name`` message, or :class:`ProtocolError`."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(name).iter_errors(message))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ProtocolError(f"the {name} message breaks its schema at {where}: {error.message}")


def encode(message: dict[str, Any]) -> bytes:
    """One message as one line: compact JSON, no raw newline inside, ``\\n`` at the end."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _light_check(message: dict[str, Any], kind: str) -> None:
    """What every message must get right even outside strict mode: the fields the kit reads.

    Strict mode adds the full schema (unknown keys, trace event shapes and so on); this
    check is cheap enough to run on every line of a large suite.
    """
    wanted: dict[str, tuple[type, ...]] = {
        "started": (int,),
        "trace": (list,),
        "skip": (str,),
        "error": (str,),
        "answer": (dict,),
    }
    field = {
        "started": "protocol",
        "trace": "trace",
        "skip": "reason",
        "error": "message",
        "answer": "answer",
    }.get(kind)
    if field is not None and (
        not isinstance(message.get(field), wanted[kind]) or isinstance(message.get(field), bool)
    ):
        raise ProtocolError(
            f"the {kind} message needs {field!r} as {wanted[kind][0].__name__}, "
            f"got {type(message.get(field)).__name__}"
        )
    if (
        kind in (*RESPONSES, "answer")
        and kind != "error"
        and not isinstance(message.get("seq"), int)
    ):
        raise ProtocolError(f"the {kind} message needs an integer 'seq'")


def _check_values(line: bytes) -> None:
    """Refuse a long line holding more JSON values than any message needs.

    Parsed, JSON grows: ``{},`` is three bytes on the wire and some 70 in memory, so the
    line limit alone (``child.STDOUT_LINE_LIMIT``) does not bound the kit's memory. This
    counts strings and containers and separators outside strings, exactly, without
    parsing: escaped backslashes and quotes removed, every quote left opens or closes a
    string. Lines up to :data:`CHECKED_FROM` bytes cannot hold enough values to matter.
    """
    if len(line) <= CHECKED_FROM:
        return
    plain = line.replace(b"\\\\", b"").replace(b'\\"', b"")
    values = plain.count(b'"') // 2  # the strings
    start = 0
    while values <= MAX_VALUES:  # then the separators between them, without copies
        opening = plain.find(b'"', start)
        end = len(plain) if opening < 0 else opening
        values += sum(plain.count(mark, start, end) for mark in (b",", b"[", b"{"))
        if values > MAX_VALUES:
            break
        if opening < 0:
            return
        closing = plain.find(b'"', opening + 1)
        if closing < 0:
            return  # an unterminated string: the parser says so
        start = closing + 1
    raise ProtocolError(
        f"the line ({len(line)} bytes) holds more than {MAX_VALUES} JSON values (the kit "
        "reads at most that many per message; the largest trace of the shipped suite has "
        "a few hundred)"
    )


def decode_line(line: bytes, *, expected: tuple[str, ...], strict: bool) -> dict[str, Any]:
    """Parse one line the implementation wrote, as one of the ``expected`` message types.

    Raises :class:`ProtocolError` for a line that is not UTF-8 JSON, not an object, of an
    unknown or unexpected type, or (``strict``) not valid against its schema.
    """
    _check_values(line)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("the line is not UTF-8 text") from None
    try:
        message = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProtocolError(
            f"the line is not JSON ({error.msg} at column {error.colno}); "
            "only protocol messages may go to stdout: write logs to stderr"
        ) from None
    except RecursionError:
        raise ProtocolError("the line nests its JSON too deeply to be read") from None
    except ValueError as error:  # for instance an integer of more digits than Python reads
        raise ProtocolError(f"the line is not JSON the kit can read: {error}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"a message must be a JSON object, not a {type(message).__name__}")
    kind = message.get("type")
    if kind not in _ALL:
        raise ProtocolError(
            f"{kind!r} is not a protocol message type (expected {' or '.join(expected)})"
        )
    if kind not in expected:
        raise ProtocolError(
            f"a {kind!r} message is not allowed here (expected {' or '.join(expected)})"
        )
    if strict:
        validate(message, kind)
    else:
        _light_check(message, kind)
    return message


def started_message(info: ImplementationInfo, protocol: int = PROTOCOL_VERSION) -> dict[str, Any]:
    """The handshake answer for an in-process adapter (what ``serve-reference`` sends)."""
    return {
        "type": "started",
        "protocol": protocol,
        "implementation": info.to_json(),
    }


def info_from_started(message: dict[str, Any]) -> ImplementationInfo:
    """The :class:`ImplementationInfo` a valid ``started`` message describes."""
    impl = message["implementation"]
    return ImplementationInfo(
        name=impl["name"],
        language=impl["language"],
        version=impl["version"],
        contracts=tuple(impl["contracts"]),
        features=tuple(impl.get("features", ())),
        details=dict(impl.get("details", {})),
    )
