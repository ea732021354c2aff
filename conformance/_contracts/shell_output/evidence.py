"""What the kit sees for itself about a command it had run, without asking the implementation.

The implementation under test owns the child's pipes and its threads, and could report
anything about them. Two facts the kit checks on its own, on Linux, through ``/proc``
and a file lock, for implementations that run in the kit's process:

- **who reads the pipes.** While the kit's emitter waits on a gate it writes nothing, so
  a thread that drains its stdout or stderr is blocked in a ``read`` of that pipe. The
  kit finds the pipe's inode through the emitter's ``/proc/PID/fd``, the descriptors of
  this process that refer to it, and the threads whose current system call reads one of
  them (``/proc/self/task/TID/syscall``). A callback seen on such a thread ran on a
  pipe-draining thread, whatever the implementation reported (SOO-THREAD).
- **whether the command is really gone.** The emitter, and every grandchild it forks,
  hold a shared ``flock`` on the invocation's *alive file* for as long as they live (see
  the emitter). When the kit can take the lock exclusively, no process of the invocation
  is left; after a time limit fired, one that is still there outlived it
  (SOO-TIMEOUT-GROUP). A detached grandchild (one that left the process group, which no
  group kill can reach) lets go of that lock and holds one on ``FILE.detached`` instead,
  so the group check never counts it; the kit still kills it at the end of the scenario.

Where ``/proc`` is missing, the reader probe finds nothing; that costs evidence, never a
false finding.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import signal
from pathlib import Path

from seamspec.reference._shell_output.emitter import detached_alive

__all__ = ["alive", "kill_survivors", "pipe_readers"]

#: System calls that read a descriptor given as their first argument, per machine.
_READS = {
    "x86_64": {0, 17, 19, 45, 295, 327},  # read, pread64, readv, recvfrom, preadv, preadv2
    "aarch64": {63, 65, 67, 69, 207, 286},  # read, readv, pread64, preadv, recvfrom, preadv2
}
_STREAM_FD = {"stdout": 1, "stderr": 2}


def alive(path: Path) -> bool | None:
    """Whether a process of the invocation still holds its alive file (None: none ran)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the lock, if we got it
    return False


def _pids(path: Path) -> list[int]:
    with contextlib.suppress(OSError, ValueError):
        return [int(line) for line in path.read_text().split()]
    return []


def kill_survivors(path: Path) -> None:
    """Kill what is left of an invocation (its emitter and grandchildren) at the very end.

    Only processes whose command line names this alive file are touched, so a reused
    process ID is never hit. The emitter leads its process group when the implementation
    started it that way; grandchildren are found as the emitter's group and by their own
    entries, a detached one by its entry in ``FILE.detached`` (and its own new group).
    """
    marker = str(path).encode()
    for held in (path, Path(detached_alive(path))):
        if not alive(held):
            continue
        for pid in _pids(held):
            with contextlib.suppress(OSError):
                if marker in Path(f"/proc/{pid}/cmdline").read_bytes():
                    with contextlib.suppress(OSError):
                        os.killpg(pid, signal.SIGKILL)
                    os.kill(pid, signal.SIGKILL)


def _inode(link: str) -> str | None:
    with contextlib.suppress(OSError):
        target = os.readlink(link)
        if target.startswith("pipe:"):
            return target
    return None


def pipe_readers(path: Path) -> dict[str, set[int]]:
    """Per stream, the native IDs of this process's threads now blocked reading that pipe.

    ``path`` is the invocation's alive file: its first line is the emitter's process ID.
    """
    reads = _READS.get(platform.machine())
    pids = _pids(path)
    if not reads or not pids:
        return {}
    pipes = {
        stream: inode
        for stream, number in _STREAM_FD.items()
        if (inode := _inode(f"/proc/{pids[0]}/fd/{number}")) is not None
    }
    ours: dict[int, str] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc/self/fd"):
            inode = _inode(f"/proc/self/fd/{name}")
            for stream, wanted in pipes.items():
                if inode == wanted:
                    ours[int(name)] = stream
    found: dict[str, set[int]] = {}
    if not ours:
        return found
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = Path(f"/proc/self/task/{tid}/syscall").read_text().split()
                if fields[0] == "running" or int(fields[0]) not in reads:
                    continue
                reading = ours.get(int(fields[1], 16))
                if reading is not None:
                    found.setdefault(reading, set()).add(int(tid))
    return found
