"""Tampering with a journal file the way an attacker or a crash would, for DR scenarios.

The kit (never the implementation) does the damage, on the file the implementation
wrote, so that every implementation's verifier is judged on the same bytes. Some
operations only need the framing (entries are ``\\n``-terminated lines): flip a byte,
delete, swap or duplicate entries, cut bytes off the end. The others use the kit's key
(:mod:`.journal_forge`): edit a value and keep the entry valid canonical JSON; re-encode
an entry with the same values in other bytes; forge an entry and sign it again, correctly
or without the domain prefix, under another prefix or with another key, optionally
re-chaining everything after it; splice in an entry from another journal signed with the
same key; append a correctly signed entry. What a verifier must then say is not written
here: the kit's own reading of the result (:mod:`.journal_audit`) decides it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.journal_audit import canonical
from seamspec.conformance._contracts.dispatch_recorder.journal_forge import (
    KitKey,
    entry_line,
    journal_bytes,
)

__all__ = ["OPERATIONS", "TamperError", "split_lines", "tamper_bytes"]

#: Every tampering operation, as named in the schema's ``tamper_journal``.
OPERATIONS = (
    "flip_byte", "delete", "swap", "duplicate", "truncate_bytes",
    "edit", "reencode", "forge", "splice", "append",
)  # fmt: skip


class TamperError(ValueError):
    """The tampering cannot be done on this journal: an entry it names is missing, or not
    readable enough to edit (the kit's own check of the journal says why)."""


def split_lines(data: bytes) -> list[bytes]:
    """The journal's lines, each with its ``\\n`` (a last one may lack it).

    Only ``\\n`` frames an entry: ``bytes.splitlines`` would also split at ``\\r``, which
    a flipped byte can create inside an entry.
    """
    lines, pos = [], 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end == -1 else end + 1
        lines.append(data[pos:end])
        pos = end
    return lines


def _line(lines: list[bytes], index: Any) -> bytes:
    if not isinstance(index, int) or not 0 <= index < len(lines):
        raise TamperError(f"entry {index} does not exist: the journal has {len(lines)} line(s)")
    return lines[index]


def _entry(lines: list[bytes], index: int) -> dict[str, Any]:
    try:
        entry = json.loads(_line(lines, index).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        entry = None
    if not isinstance(entry, dict) or not isinstance(entry.get("mutation"), dict):
        raise TamperError(f"entry {index} is not a JSON entry with a mutation: cannot edit it")
    return entry


def _set(entry: dict[str, Any], field: str, value: Any) -> None:
    if field.startswith("mutation."):
        entry["mutation"][field.removeprefix("mutation.")] = value
    else:
        entry[field] = value


def _reencode(entry: dict[str, Any], style: str) -> bytes:
    """The same values in other bytes: still JSON, no longer canonical."""
    if style == "spaces":
        text = json.dumps(entry, sort_keys=True, ensure_ascii=False)
    elif style == "reordered_keys":
        text = json.dumps(dict(reversed(sorted(entry.items()))), separators=(",", ":"))
    elif style in ("uppercase_sig", "uppercase_prev"):
        # the same hex digits with their letters in upper case: the same bytes to a
        # decoder that ignores case (bytes.fromhex), other bytes in the file
        field = style.removeprefix("uppercase_")
        text = canonical({**entry, field: str(entry[field]).upper()}).decode("utf-8")
    elif style in ("newline_after_sig", "newline_after_prev"):
        # the same hex digits followed by a newline (written canonically: "\\n" inside
        # the JSON string): the same bytes to a decoder that skips whitespace
        # (bytes.fromhex), and a match for a check written as re.match("^...$")
        field = style.removeprefix("newline_after_")
        text = canonical({**entry, field: str(entry[field]) + "\n"}).decode("utf-8")
    else:  # "escaped": the tool call id spelt with \\u escapes
        ident = str(entry["mutation"].get("tool_call_id", ""))
        escaped = '"' + "".join(f"\\u{ord(c):04x}" for c in ident) + '"'
        plain = canonical(entry).decode("utf-8")
        text = plain.replace(json.dumps(ident, ensure_ascii=False), escaped, 1)
    return text.encode("utf-8") + b"\n"


def _forge(lines: list[bytes], op: Mapping[str, Any], key: KitKey) -> None:
    index = int(op["entry"])
    entry = _entry(lines, index)
    if "field" in op:
        _set(entry, str(op["field"]), op.get("value"))
    else:
        entry["mutation"]["tool_call_id"] = f"{entry['mutation'].get('tool_call_id')}-forged"
    line, chain = entry_line(
        key, entry.get("seq"), str(entry.get("prev")), entry["mutation"],
        signature=op.get("signature", "valid"), version=entry.get("v"),
    )  # fmt: skip
    lines[index] = line
    if op.get("rechain"):
        for later in range(index + 1, len(lines)):
            following = _entry(lines, later)
            lines[later], chain = entry_line(
                key, following.get("seq"), chain, following["mutation"], version=following.get("v")
            )


def tamper_bytes(data: bytes, op: Mapping[str, Any], key: KitKey) -> bytes:
    """``data`` after one tampering operation (see the schema's ``tamper_journal``)."""
    lines = split_lines(data)
    if "flip_byte" in op:
        spec = op["flip_byte"]
        line = bytearray(_line(lines, int(spec["entry"])))
        line[int(spec["offset"]) % len(line)] ^= int(spec.get("mask", 0x01))
        lines[int(spec["entry"])] = bytes(line)
    elif "delete" in op:
        _line(lines, op["delete"])
        del lines[int(op["delete"])]
    elif "swap" in op:
        i, j = (int(x) for x in op["swap"])
        lines[i], lines[j] = _line(lines, j), _line(lines, i)
    elif "duplicate" in op:
        lines.insert(int(op["duplicate"]) + 1, _line(lines, op["duplicate"]))
    elif "truncate_bytes" in op:
        cut = int(op["truncate_bytes"])
        if cut > len(data):
            raise TamperError(f"cannot cut {cut} bytes from a journal of {len(data)}")
        return data[: len(data) - cut]
    elif "edit" in op:
        spec = op["edit"]
        entry = _entry(lines, int(spec["entry"]))
        _set(entry, str(spec["field"]), spec.get("value"))
        lines[int(spec["entry"])] = canonical(entry) + b"\n"
    elif "reencode" in op:
        spec = op["reencode"]
        lines[int(spec["entry"])] = _reencode(_entry(lines, int(spec["entry"])), spec["style"])
    elif "forge" in op:
        _forge(lines, op["forge"], key)
    elif "splice" in op:
        spec = op["splice"]
        other = [
            {"kind": "context_injection", "tool_call_id": f"other-{n}", "tool_name": "other",
             "context": f"from another journal signed with the same key ({n})"}
            for n in range(len(lines))
        ]  # fmt: skip
        _line(lines, spec["entry"])
        lines[int(spec["entry"])] = _line(
            split_lines(journal_bytes(key, other)), spec["from_entry"]
        )
    elif "append" in op and not lines:
        # An empty journal: the entry is chained to the key's genesis hash, as entry 0.
        mutation = {
            "kind": "context_injection", "tool_call_id": "appended-by-the-kit",
            "tool_name": "kit", "context": "appended to an empty journal by the kit",
        }  # fmt: skip
        lines.append(entry_line(key, 0, key.fingerprint, mutation)[0])
    elif "append" in op:
        last = _entry(lines, len(lines) - 1)
        mutation = dict(last["mutation"], tool_call_id="appended-by-the-kit")
        _, chain = entry_line(key, last.get("seq"), str(last.get("prev")), last["mutation"])
        lines.append(entry_line(key, len(lines), chain, mutation)[0])
    else:
        raise ValueError(f"unknown tampering {dict(op)!r}")
    return b"".join(lines)
