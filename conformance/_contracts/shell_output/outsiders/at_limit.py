"""The fix every outsider base needed for a time limit: return at the limit, not at end of file.

Not the outsiders' code: the kit's, shared by the bases it fixed (each base's docstring
says where). Every base, like the reference before it, waited after a time limit's group
kill until the pipes reached end of file (for up to 2 or 5 s). A killed group's pipes
close in milliseconds, so no scenario saw it until the emitter's detached grandchild, a
process outside the group that holds the pipes until the kit releases a gate
(``soo-timeout-detached-grandchild-holds-pipes``). Upstream's outer timeout bounds when
the call returns whatever its detached worker still waits for (shell_tool.rs:918-925,
948-961), so such a runner breaks SOO-TIMEOUT; the bases' original waits are kept as
registered mutants (``out-soo*-timeout-waits-for-pipes``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import anyio

__all__ = ["GROUP_LIMIT", "PIPE_GRACE", "group_left", "wait_after_kill"]

#: How long a timed-out call waits for its killed process group to be gone.
GROUP_LIMIT = 5.0
#: Then how long for end of file on the pipes (only a process outside the group is left).
PIPE_GRACE = 0.1
_POLL = 0.002


def group_left(proc: subprocess.Popen[bytes]) -> bool:
    """Whether a process of the group ``proc`` leads is left (its unreaped leader counts)."""
    proc.poll()  # the bases reap only after end of file; a zombie leader keeps the group
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def wait_after_kill(
    proc: subprocess.Popen[bytes], finished: Callable[[], bool], limit: float = GROUP_LIMIT
) -> None:
    """After a time limit's group kill: until ``finished()`` (the base's own end of file and
    reap), but no longer than the killed group takes to go (at most ``limit``) and then
    :data:`PIPE_GRACE`, whatever a process outside the group does with the pipes."""
    with anyio.move_on_after(limit):
        while not finished() and group_left(proc):
            await anyio.sleep(_POLL)
    with anyio.move_on_after(PIPE_GRACE):
        while not finished():
            await anyio.sleep(_POLL)
