"""What the sandbox check of a write-tools scenario refuses: deny patterns and symbolic links.

A scenario only says ``deny: [...]``, ``symlinks: {...}`` and a tool step's ``path``; every
conforming implementation must refuse exactly the same paths, or the kit could not say
which writes must call no hook (WOC-SEAM-DENIED). This module is that meaning, written
once: the linter, the driver and the oracle all use it, and the contract page describes
it in words ("What a deny pattern matches"). It works on strings only and never touches
the file system, so the oracle can judge a trace from any language.

The decisions, in short:

- a deny pattern is a case-sensitive ``fnmatch`` glob (``*`` matches any run of characters,
  ``/`` included; ``?`` one character; ``[...]`` a set) matched against the *whole* relative
  path and against *each of its parent directories*, so ``.git`` refuses ``.git/config``
  and ``.git/hooks/x``, ``build/cache`` refuses ``build/cache/a/b.o``, and ``*.lock``
  refuses ``sub/poetry.lock``; a pattern is anchored at the root (``node_modules`` does not
  refuse ``pkg/node_modules/x``; write ``*/node_modules`` for that);
- the check judges the *resolved* path (upstream: "already resolved + sandbox-checked"):
  symbolic links and ``..`` are resolved first, left to right as the kernel does; a path
  that resolves out of the root, or to the root itself, is refused, and a link leading
  into a denied folder is refused like that folder;
- a link whose target is allowed is followed: the tool changes the target (the link stays
  a link) and the hooks are given the target's resolved path. Where the link itself lies
  does not matter, only where it leads.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MAX_LINK_HOPS", "deny_match", "is_refused", "parents", "resolve"]

#: How many links one path may pass through before it counts as a loop (Linux: 40).
MAX_LINK_HOPS = 40


def parents(rel: str) -> list[str]:
    """``rel`` and each of its parent directories: ``a/b/c`` -> ``a/b/c``, ``a/b``, ``a``."""
    out = [rel]
    head = posixpath.dirname(rel)
    while head not in ("", "/", "."):
        out.append(head)
        head = posixpath.dirname(head)
    return out


def deny_match(rel: str, deny: Sequence[str]) -> str | None:
    """The first deny pattern that refuses ``rel`` (or one of its parents), else None."""
    for pattern in deny:
        if any(fnmatch.fnmatchcase(candidate, pattern) for candidate in parents(rel)):
            return pattern
    return None


def resolve(path: str, symlinks: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Where ``path`` leads, relative to the root, following the scenario's links.

    Returns None when the path leaves the root: it is absolute, climbs out with ``..``,
    passes through a link to a place outside the root, or loops. ``""`` is the root itself.
    Components are resolved left to right like the kernel does, so ``link/..`` is the
    parent of the link's *target*, not the folder holding the link.
    """
    if not path or path.startswith("/") or "\0" in path:
        return None
    stack: list[str] = []
    queue = deque(path.split("/"))
    hops = 0
    while queue:
        part = queue.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                return None
            stack.pop()
            continue
        stack.append(part)
        link = symlinks.get("/".join(stack))
        if link is None:
            continue
        hops += 1
        if hops > MAX_LINK_HOPS or "outside" in link:
            return None
        stack = []
        queue.extendleft(reversed(str(link["to"]).split("/")))
    return "/".join(stack)


def is_refused(path: str, given: Mapping[str, Any]) -> bool:
    """Whether a conforming sandbox check refuses a tool step's ``path`` in this ``given``."""
    resolved = resolve(path, given.get("symlinks", {}))
    if resolved is None or resolved == "":
        return True
    return deny_match(resolved, list(given.get("deny", []))) is not None
