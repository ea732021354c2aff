"""Every process the kit started, and everything they started, found and ended for sure.

Killing a child's process group misses whatever left the group: a grandchild that
called ``setsid()`` (a session and a group of its own), or one orphaned by a double fork,
which the kernel hands to init. Two things close those gaps on Linux:

- the kit makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``, through
  ctypes): an orphan anywhere below it is re-parented to the kit instead of to init, so
  walking the process tree down from the kit finds every descendant, whatever session
  it is in;
- a tree is ended by first *freezing* it (SIGSTOP to every member, again and again until
  no member is running: a stopped process cannot fork) and only then killing every
  member with SIGKILL, so that nothing can be born between the last look and the kill.

The tree is read from ``/proc`` (``/proc/PID/stat``: parent, group, state, start time).
The start time tells a process from a later one that reused its pid. Elsewhere than Linux
there is no ``/proc`` and no subreaper: :func:`kill_tree` then falls back to killing the
process group, which is what the kit did before.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "Process",
    "become_subreaper",
    "descendants",
    "is_subreaper",
    "kill_tree",
    "living",
    "process_table",
    "start_time",
]

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
#: How long :func:`kill_tree` keeps freezing a tree that goes on changing.
FREEZE_LIMIT = 2.0
_PROC = Path("/proc")


class Process(NamedTuple):
    pid: int
    ppid: int
    pgrp: int
    state: str
    #: Clock ticks after boot when it started: (pid, start) names one process for good.
    start: int


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    function: Callable[..., int] = libc.prctl
    return function


def become_subreaper(enabled: bool = True) -> bool:
    """Make this process the reaper of every orphan below it (or no longer, with
    ``enabled=False``); False where that is not supported."""
    prctl = _prctl()
    if prctl is None:
        return False
    return int(prctl(_PR_SET_CHILD_SUBREAPER, int(enabled), 0, 0, 0)) == 0


def is_subreaper() -> bool:
    prctl = _prctl()
    if prctl is None:
        return False
    flag = ctypes.c_int(0)
    return int(prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)) == 0 and bool(
        flag.value
    )


def _read(entry: str) -> Process | None:
    try:
        text = (_PROC / entry / "stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces or parentheses.
    fields = text.rsplit(")", 1)[1].split()
    return Process(int(entry), int(fields[1]), int(fields[2]), fields[0], int(fields[19]))


def process_table() -> dict[int, Process]:
    """Every process this one can see, by pid (empty where there is no ``/proc``)."""
    if not _PROC.is_dir():
        return {}
    table = {}
    for entry in os.listdir(_PROC):
        if entry.isdigit() and (process := _read(entry)) is not None:
            table[process.pid] = process
    return table


def descendants(root: int, table: dict[int, Process] | None = None) -> list[Process]:
    """The processes below ``root`` (not ``root`` itself), parents before children."""
    table = process_table() if table is None else table
    children: dict[int, list[Process]] = {}
    for process in table.values():
        children.setdefault(process.ppid, []).append(process)
    found: list[Process] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def living(processes: Iterable[Process]) -> list[Process]:
    """Those of ``processes`` that still run (or are stopped): not gone, not zombies."""
    table = process_table()
    return [
        p
        for p in processes
        if (now := table.get(p.pid)) is not None and now.start == p.start and now.state != "Z"
    ]


def _signal(process: Process, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(process.pid, signum)


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), or None if it cannot be read."""
    process = _read(str(pid))
    return None if process is None else process.start


def kill_tree(
    root: int,
    *,
    include_root: bool = True,
    spare: Iterable[tuple[int, int]] = (),
    root_start: int | None = None,
    known: Iterable[Process] = (),
) -> list[Process]:
    """End ``root`` and every process below it, in any session; return those killed.

    Members are frozen with SIGSTOP until none is running, then killed with SIGKILL, as
    are the process groups they lead (a child born in the last instant is in its
    parent's group). A member seen once is followed to the end, so that an orphan that
    was re-parented to this (subreaper) process when its parent died is still found.
    ``root_start``: the root's start time, if known; a root pid that now names another
    process (it ended, and its pid was reused) is then left alone, with its tree.
    ``known``: processes seen below the root earlier (it may be gone by now), ended too.
    ``spare``: ``(pid, start)`` pairs never touched (what existed before a run began).
    Killing this very process is never attempted.
    """
    me = os.getpid()
    keep = set(spare)
    root_valid = root_start is None or start_time(root) == root_start
    seen: dict[tuple[int, int], Process] = {(p.pid, p.start): p for p in known}
    deadline = time.monotonic() + FREEZE_LIMIT
    while True:
        table = process_table()
        if not table:  # no /proc: the process group is all that can be reached
            if root_valid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(root, signal.SIGKILL)
            return []
        members = []
        if root_valid:
            members += [table[root]] if include_root and root in table else []
            members += descendants(root, table)
        for process in list(seen.values()):
            now = table.get(process.pid)
            if now is not None and now.start == process.start:
                members += [now, *descendants(now.pid, table)]
        running = []
        for process in members:
            key = (process.pid, process.start)
            if key in keep or process.pid == me:
                continue
            seen[key] = process
            if process.state not in ("T", "t", "Z"):
                running.append(process)
        if not running or time.monotonic() > deadline:
            break
        for process in running:
            _signal(process, signal.SIGSTOP)
        time.sleep(0.001)
    killed = living(seen.values())
    own_group = os.getpgrp()
    for process in killed:
        _signal(process, signal.SIGKILL)
        if process.pgrp == process.pid and process.pgrp != own_group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pgrp, signal.SIGKILL)
    return killed
