"""Tampering with a journal file the way an attacker or a crash would, for DR scenarios.

The kit (not the implementation) does the damage, so that every implementation is judged
on the same edited bytes. Entries are newline-terminated lines: the one framing fact the
operations rely on.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from seamspec.conformance._core.errors import ImplementationError

__all__ = ["tamper", "tamper_bytes"]


def tamper_bytes(data: bytes, op: Mapping[str, Any]) -> bytes:
    """``data`` after one tampering operation (see the schema's ``tamper_journal``)."""
    lines = data.splitlines(keepends=True)
    named = [op["flip_byte"]["entry"]] if "flip_byte" in op else list(op.get("swap", []))
    named += [op[k] for k in ("delete", "duplicate") if k in op]
    if any(int(i) >= len(lines) for i in named):
        # The linter keeps indexes below the entries the turn can make: a shorter file is
        # the implementation's (it journalled less), never an IndexError in the kit.
        raise ImplementationError(
            f"the kit was to tamper with journal entry {max(int(i) for i in named)}, but the "
            f"journal file holds only {len(lines)} entr{'y' if len(lines) == 1 else 'ies'}"
        )
    if "flip_byte" in op:
        entry, offset = int(op["flip_byte"]["entry"]), int(op["flip_byte"]["offset"])
        line = bytearray(lines[entry])
        line[offset % len(line)] ^= int(op["flip_byte"].get("mask", 0x01))
        lines[entry] = bytes(line)
    elif "delete" in op:
        del lines[int(op["delete"])]
    elif "swap" in op:
        i, j = (int(x) for x in op["swap"])
        lines[i], lines[j] = lines[j], lines[i]
    elif "duplicate" in op:
        i = int(op["duplicate"])
        lines.insert(i + 1, lines[i])
    elif "truncate_bytes" in op:
        return data[: len(data) - int(op["truncate_bytes"])]
    else:
        raise ValueError(f"unknown tampering {dict(op)!r}")
    return b"".join(lines)


def tamper(path: Path, op: Mapping[str, Any]) -> None:
    path.write_bytes(tamper_bytes(path.read_bytes(), op))
