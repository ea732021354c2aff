"""The child program of shell-output scenarios: writes what its script says, nothing else.

Run as ``python -m seamspec.reference._shell_output.emitter SCRIPT_JSON`` (or the ``seamspec-emitter``
console script). A scenario can only ever run this program, with its script as data, so
a scenario file can never become an arbitrary command line. Any adapter, in any
language, runs it as an ordinary command.

The script is a JSON object ``{"gates": DIR, "reached": DIR, "alive": FILE, "steps":
[...]}``; each step is one of:

- ``{"out": TEXT}`` / ``{"err": TEXT}``: write the UTF-8 bytes of TEXT to stdout/stderr;
- ``{"out_hex": HEX}`` / ``{"err_hex": HEX}``: write raw bytes (may be invalid UTF-8);
- ``{"flood": "stdout"|"stderr", "bytes": N}``: write N bytes of a fixed pattern, fast;
- ``{"drip": "stdout"|"stderr", "text": TEXT, "count": N, "every": SECONDS}``: write
  TEXT N times, pausing SECONDS before each write after the first (a command that keeps
  printing: only what it writes is data, never when);
- ``{"wait": NAME}``: block until the file ``DIR/NAME`` exists (a *gate*: the scenario
  releases it by creating that file), polling every few milliseconds;
- ``{"sleep": SECONDS}``: sleep (benchmarks only; scenarios use gates);
- ``{"hang": true}``: block forever (until killed);
- ``{"exit": CODE}``: exit at once with CODE;
- ``{"signal": "TERM"|"KILL"}``: kill itself with that signal (restored to its default
  action first), at once: a child that ends by a signal the runner did not send;
- ``{"ignore_term": true}``: ignore SIGTERM from now on (grandchildren forked later
  inherit it): only SIGKILL ends this process, as a program that traps TERM;
- ``{"env_save": NAME}`` / ``{"env_check": NAME}``: write nothing while the environment
  is the one another call of the scenario saved under NAME (``env_save`` saves its own,
  as the file ``env-NAME`` in the gate folder); ``env_check`` writes one line to stderr
  naming the variables that differ (or that nothing was saved) otherwise;
  ``{"stdin_save"|"stdin_check": NAME}`` do the same for what standard input is (its
  identity: type, device and inode, or closed; nothing is read from it) and
  ``{"cwd_save"|"cwd_check": NAME}`` for the working directory (``PROBES``);
- ``{"grandchild": "hang"}``: fork a grandchild that keeps stdout and stderr open and
  blocks until killed, then go on at once. It stays in the emitter's process group, so
  killing the group is what ends it; killing only the emitter leaves the pipes open.
- ``{"grandchild": "detached", "until": NAME, "orphaned": [...]}``: fork a grandchild
  that leaves the emitter's process group (``setsid``) and keeps stdout and stderr open
  until the gate NAME is released, then exits; the emitter goes on once the grandchild
  has noted its process ID and left the group. No group kill ends it, so the pipes stay
  open after the emitter's group was killed. ``orphaned`` (optional: ``out``, ``err``,
  ``out_hex``, ``err_hex`` steps) is what it writes as soon as the emitter is gone (it
  was re-parented), before it waits for NAME; in a script that never exits by itself,
  that is only after the runner killed the emitter.

``reached`` (optional) is a folder: before waiting on gate NAME the emitter creates the
file ``reached/NAME``, so the kit knows that everything the script writes before that
gate has been written to the pipes.

``alive`` (optional) is how the kit sees, on its own, whether any process of this
invocation is still running: the emitter opens FILE, takes a shared ``flock`` on it and
writes its process ID there before anything else; every grandchild inherits that lock.
The lock goes away only when the last of them has exited, so a kit that can take an
exclusive lock on FILE knows that the emitter and all its grandchildren are gone.

Every write goes straight to the file descriptor (no buffering) so that each step is
visible to the parent as soon as it is done. Without an ``exit`` step the code is 0.

An emitter never outlives its scenario: while it waits on a gate or hangs, it exits
with code 125 as soon as the gate folder is gone (the scenario ended) or its parent
process has died (it was re-parented), so that an interrupted kit leaves no process
polling forever. A ``grandchild`` watches the gate folder only: outliving the emitter
is what it is for. A detached grandchild also ends when its gate folder is gone, and it
writes its process ID to the alive file before it leaves the group, so the kit can always
kill it at the end of a scenario (``evidence.kill_survivors``). Once out of the group it
lets go of the alive file's lock and holds one on ``FILE.detached`` instead (writing its
process ID there too), so FILE's lock says whether a process of the command's *group* is
left, which is what a time limit must end, whatever the detached grandchild still does.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import stat
import sys
import time

# Every shell-output scenario starts this program, many more than once, so its start-up is
# most of that suite's CPU: nothing is imported at run time beyond what it needs (no
# pathlib, typing or contextlib: about a third of the start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

__all__ = [
    "PATTERN",
    "detached_alive",
    "detached_grandchildren",
    "ends_by_signal",
    "expected_output",
    "flood_bytes",
    "has_grandchild",
    "main",
    "orphaned_output",
]

#: The bytes ``flood`` repeats: one 64-byte line, so a prefix is easy to eyeball.
PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_\n"
GATE_POLL = 0.002
#: How often a hanging emitter checks that its scenario still exists.
HANG_POLL = 0.05
#: The exit code of an emitter that ended because its scenario did.
ORPHANED = 125
_FD = {"stdout": 1, "stderr": 2}
_SIGNALS = {"TERM": signal.SIGTERM, "KILL": signal.SIGKILL}


class _Orphaned(Exception):
    """The gate folder is gone or the parent died: nobody will ever release a gate."""


def _check_alive(gates: str, parent: int | None) -> None:
    if parent is not None and os.getppid() != parent:
        raise _Orphaned("its parent process died")
    if not os.path.isdir(gates):
        raise _Orphaned(f"its gate folder {gates} is gone")


def flood_bytes(count: int) -> bytes:
    """The exact bytes ``{"flood": ..., "bytes": count}`` writes."""
    whole, rest = divmod(count, len(PATTERN))
    return PATTERN * whole + PATTERN[:rest]


def _reached(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps the emitter gets to: up to an ``exit`` or a ``hang``."""
    out = []
    for step in steps:
        out.append(step)
        if "exit" in step or "hang" in step or "signal" in step:
            break
    return out


def _writes(steps: list[dict[str, Any]]) -> Iterator[tuple[str, bytes]]:
    steps = _reached(steps)
    for step in steps:
        if "out" in step:
            yield "stdout", str(step["out"]).encode()
        elif "err" in step:
            yield "stderr", str(step["err"]).encode()
        elif "out_hex" in step:
            yield "stdout", bytes.fromhex(step["out_hex"])
        elif "err_hex" in step:
            yield "stderr", bytes.fromhex(step["err_hex"])
        elif "flood" in step:
            yield str(step["flood"]), flood_bytes(int(step["bytes"]))
        elif "drip" in step:
            yield str(step["drip"]), str(step["text"]).encode() * int(step["count"])
        elif "exit" in step or "hang" in step or "signal" in step:
            break
        # a grandchild writes nothing here: it keeps the pipes open, and a detached one
        # writes its `orphaned` steps only once the emitter is gone (below)
    for step in steps:
        if step.get("grandchild") == "detached":
            yield from _writes(list(step.get("orphaned", [])))


def expected_output(steps: list[dict[str, Any]]) -> dict[str, bytes]:
    """What the emitter writes to each stream if it runs to the end (the judges use it)."""
    written = {"stdout": b"", "stderr": b""}
    for stream, data in _writes(steps):
        written[stream] += data
    return written


def expected_exit(steps: list[dict[str, Any]]) -> int | None:
    """The exit code if the script ends by itself, None if it hangs.

    A script that kills itself with a signal ends by itself too: its code is the
    signal's number negated, as Python's ``subprocess`` reports it (how a runner in
    another language reports it is not judged: see :func:`ends_by_signal`).
    """
    for step in steps:
        if "exit" in step:
            return int(step["exit"])
        if "signal" in step:
            return -int(_SIGNALS[str(step["signal"])])
        if "hang" in step:
            return None
    return 0


def ends_by_signal(steps: list[dict[str, Any]]) -> bool:
    """Whether the script ends by killing itself with a signal (before any exit or hang)."""
    return any("signal" in step for step in _reached(steps))


def has_grandchild(steps: list[dict[str, Any]]) -> bool:
    """Whether the script starts a grandchild that keeps the pipes open."""
    return any("grandchild" in step for step in steps)


def detached_grandchildren(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The script's ``{"grandchild": "detached", ...}`` steps (outside the process group)."""
    return [step for step in steps if step.get("grandchild") == "detached"]


def orphaned_output(steps: list[dict[str, Any]]) -> dict[str, bytes]:
    """Per stream, what detached grandchildren write only once the emitter is gone."""
    written = {"stdout": b"", "stderr": b""}
    for step in detached_grandchildren(_reached(steps)):
        for stream, data in _writes(list(step.get("orphaned", []))):
            written[stream] += data
    return written


#: The alive file's descriptor (see the module's docstring), once the lock is held.
_alive: list[int] = []
#: The alive file's path, as the script gave it.
_alive_path: list[str] = []


def _hold_alive_lock(path: str) -> None:
    """Take the shared lock that says "a process of this invocation is alive" (see above).

    The descriptor is deliberately never closed: it lives as long as this process and is
    inherited by every grandchild it forks, which appends its own process ID.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    _alive.append(fd)
    _note_pid()


def _note_pid() -> None:
    for fd in _alive:
        os.write(fd, f"{os.getpid()}\n".encode())


def _hang(gates: str, parent: int | None) -> None:
    while True:
        _check_alive(gates, parent)
        time.sleep(HANG_POLL)


def _fork_grandchild(gates: str) -> None:
    """A grandchild in our process group, holding our stdout and stderr, until killed
    (or until the scenario is over: its gate folder gone)."""
    if os.fork() == 0:
        try:
            _note_pid()
            _hang(gates, None)
        finally:
            os._exit(0)


def _fork_detached(gates: str, step: dict[str, Any]) -> None:
    """A grandchild outside our process group, holding our stdout and stderr until its gate.

    The emitter waits until the grandchild has noted its process ID and left the group:
    from then on a group kill cannot reach it, and the kit knows which process to kill.
    """
    parent = os.getpid()
    ready_read, ready_write = os.pipe()
    if os.fork() == 0:
        try:
            os.close(ready_read)
            _note_pid()
            os.setsid()
            _own_alive_lock()
            os.write(ready_write, b"x")
            os.close(ready_write)
            _detached(gates, parent, step)
        finally:
            os._exit(0)
    os.close(ready_write)
    os.read(ready_read, 1)
    os.close(ready_read)


def detached_alive(path: str | os.PathLike[str]) -> str:
    """The alive file of an invocation's detached grandchildren (next to its own)."""
    return f"{os.fspath(path)}.detached"


def _own_alive_lock() -> None:
    """Out of the group, out of the group's alive file: hold the detached one instead.

    The invocation's alive file then says whether a process of its *group* is left (what
    a time limit must end), and ``FILE.detached`` whether a detached grandchild is; the
    inherited descriptor is closed (never unlocked: that would drop the group's lock).
    """
    if not _alive_path:
        return
    for fd in _alive:
        os.close(fd)
    _alive.clear()
    _hold_alive_lock(detached_alive(_alive_path[0]))


def _detached(gates: str, parent: int, step: dict[str, Any]) -> None:
    until = os.path.join(gates, str(step["until"]))
    while os.getppid() == parent:  # the emitter is still there
        if os.path.exists(until) or not os.path.isdir(gates):
            return
        time.sleep(GATE_POLL)
    for stream, data in _writes(list(step.get("orphaned", []))):
        try:  # noqa: SIM105 (no contextlib: start-up, see the imports)
            _write_all(_FD[stream], data)
        except OSError:  # nobody reads the pipe any more: fine
            pass
    while not os.path.exists(until) and os.path.isdir(gates):
        time.sleep(GATE_POLL)


def _probe_stdin() -> dict[str, object]:
    """What descriptor 0 is, by identity: nothing is read from it."""
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


#: What each kind of probe (``{KIND_save: NAME}``, ``{KIND_check: NAME}``) reads of this
#: process: its environment, what its standard input is, its working directory.
PROBES: dict[str, Callable[[], object]] = {
    "env": lambda: dict(os.environ),
    "stdin": _probe_stdin,
    "cwd": os.getcwd,
}


def _probe_save(kind: str, gates: str, name: str) -> None:
    """Save this process's ``kind`` under ``name`` in the gate folder; nothing on the pipes."""
    with open(os.path.join(gates, f"{kind}-{name}"), "w", encoding="utf-8") as file:
        file.write(json.dumps(PROBES[kind]()))


def _probe_check(kind: str, gates: str, name: str) -> str:
    """Nothing if this process's ``kind`` is the one saved, else one line saying how.

    The comparison runs inside the child, so the kit still knows every byte a correct
    runner's child writes: a difference shows as an unexpected stderr line.
    """
    saved = f"{kind}-{name}"
    try:
        with open(os.path.join(gates, saved), encoding="utf-8") as file:
            other = json.loads(file.read())
    except (OSError, ValueError):
        what = "environment" if kind == "env" else kind
        return f"seamspec-emitter: no {what} saved as {saved}\n"
    mine = PROBES[kind]()
    if kind == "env":
        assert isinstance(mine, dict)
        names = sorted(k for k in {*mine, *other} if mine.get(k) != other.get(k))
        if not names:
            return ""
        return f"seamspec-emitter: environment differs from {saved}: {' '.join(names)}\n"
    if mine == other:
        return ""
    return f"seamspec-emitter: {kind} differs from {saved}: {mine} (saved: {other})\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view[: 1024 * 1024]) :]


def run(script: dict[str, Any]) -> int:
    try:
        return _run(script)
    except _Orphaned as why:
        try:  # noqa: SIM105 (no contextlib: start-up, see the imports)
            os.write(2, f"seamspec-emitter: exiting: {why}\n".encode())
        except OSError:
            pass
        return ORPHANED


def _run(script: dict[str, Any]) -> int:
    gates = str(script.get("gates", "."))
    parent = os.getppid()
    if script.get("alive"):
        _alive_path.append(str(script["alive"]))
        _hold_alive_lock(_alive_path[0])
    reached = str(script["reached"]) if script.get("reached") else None
    for step in script["steps"]:
        if "wait" in step:
            if reached is not None:
                os.close(
                    os.open(
                        os.path.join(reached, str(step["wait"])), os.O_WRONLY | os.O_CREAT, 0o644
                    )
                )
            gate = os.path.join(gates, str(step["wait"]))
            while not os.path.exists(gate):
                _check_alive(gates, parent)
                time.sleep(GATE_POLL)
        elif "sleep" in step:
            time.sleep(float(step["sleep"]))
        elif "hang" in step:
            _hang(gates, parent)
        elif step.get("grandchild") == "detached":
            _fork_detached(gates, step)
        elif "grandchild" in step:
            _fork_grandchild(gates)
        elif "exit" in step:
            return int(step["exit"])
        elif "signal" in step:
            number = _SIGNALS[str(step["signal"])]
            if number != signal.SIGKILL:  # SIGKILL's action cannot be set
                signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
            _hang(gates, parent)  # not reached: the signal ends the process
        elif "ignore_term" in step:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        elif any(f"{kind}_save" in step for kind in PROBES):
            ((key, name),) = step.items()
            _probe_save(key.removesuffix("_save"), gates, str(name))
        elif any(f"{kind}_check" in step for kind in PROBES):
            ((key, name),) = step.items()
            _write_all(2, _probe_check(key.removesuffix("_check"), gates, str(name)).encode())
        elif "drip" in step:
            data = str(step["text"]).encode()
            for i in range(int(step["count"])):
                if i:
                    _check_alive(gates, parent)
                    time.sleep(float(step["every"]))
                _write_all(_FD[str(step["drip"])], data)
        elif "flood" in step:
            block = PATTERN * (1024 * 1024 // len(PATTERN))
            whole, rest = divmod(int(step["bytes"]), len(block))
            for _ in range(whole):
                _write_all(_FD[str(step["flood"])], block)
            _write_all(_FD[str(step["flood"])], block[:rest])
        else:
            ((stream, data),) = _writes([step])
            _write_all(_FD[stream], data)
    return 0


_USAGE = (
    "usage: seamspec-emitter SCRIPT_JSON  (or python -m seamspec.reference._shell_output.emitter)"
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["-h"], ["--help"]):
        print(f"{_USAGE}\n\n{__doc__ or ''}".rstrip())
        return 0
    if len(args) != 1:
        print(f"{_USAGE}; see --help", file=sys.stderr)
        return 2
    try:
        script = json.loads(args[0])
    except ValueError as error:
        print(f"seamspec-emitter: SCRIPT_JSON is not JSON ({error}); see --help", file=sys.stderr)
        return 2
    if not isinstance(script, dict) or not isinstance(script.get("steps"), list):
        print(
            'seamspec-emitter: SCRIPT_JSON must be an object {"steps": [...]}; see --help',
            file=sys.stderr,
        )
        return 2
    return run(script)


if __name__ == "__main__":
    sys.exit(main())
