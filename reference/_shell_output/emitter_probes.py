"""How the emitter compares the way two calls of a scenario spawned it (SOO-ENVELOPE).

``{"env_save": NAME}``, ``{"stdin_save": NAME}`` and ``{"cwd_save": NAME}`` save one part
of how this process was spawned (its environment, what its standard input is, its working
directory) in the gate folder, as the file ``KIND-NAME``; the matching ``*_check`` step
writes nothing when this process's part is the one saved, else one line to stderr saying
how it differs. The comparison runs inside the child, so the kit still knows every byte a
correct runner's child writes: a difference shows as an unexpected stderr line.

Standard input is compared by identity, not by content (nothing is read from it): the
file type, device and inode of descriptor 0 (``/dev/null`` is one character device for
every process; each pipe is its own inode), or that it is closed.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "check", "save"]


def _environment() -> Any:
    return dict(os.environ)


def _stdin() -> Any:
    try:
        info = os.fstat(0)
    except OSError:
        return {"open": False}
    kind = stat.S_IFMT(info.st_mode)
    names = {stat.S_IFCHR: "character device", stat.S_IFIFO: "pipe", stat.S_IFREG: "file"}
    return {
        "open": True,
        "type": names.get(kind, "other"),
        "dev": info.st_dev,
        "ino": info.st_ino,
        "rdev": info.st_rdev,
    }


def _cwd() -> Any:
    return os.getcwd()


#: What each kind of probe reads of this process.
KINDS: dict[str, Callable[[], Any]] = {"env": _environment, "stdin": _stdin, "cwd": _cwd}


def save(kind: str, gates: Path, name: str) -> None:
    """Save this process's ``kind`` under ``name``; writes nothing to the pipes."""
    (gates / f"{kind}-{name}").write_text(json.dumps(KINDS[kind]()))


def check(kind: str, gates: Path, name: str) -> str:
    """Nothing if this process's ``kind`` is the one saved, else one line saying how."""
    saved = gates / f"{kind}-{name}"
    try:
        other = json.loads(saved.read_text())
    except (OSError, ValueError):
        what = "environment" if kind == "env" else kind
        return f"seamspec-emitter: no {what} saved as {saved.name}\n"
    mine = KINDS[kind]()
    if kind == "env":
        names = sorted(k for k in {*mine, *other} if mine.get(k) != other.get(k))
        if not names:
            return ""
        return f"seamspec-emitter: environment differs from {saved.name}: {' '.join(names)}\n"
    if mine == other:
        return ""
    return f"seamspec-emitter: {kind} differs from {saved.name}: {mine} (saved: {other})\n"
