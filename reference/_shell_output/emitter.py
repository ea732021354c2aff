"""The child program of shell-output scenarios: writes what its script says, nothing else.

Run as ``python -m seamspec.reference._shell_output.emitter SCRIPT_JSON`` (or the ``seamspec-emitter``
console script). A scenario can only ever run this program, with its script as data, so
a scenario file can never become an arbitrary command line. Any adapter, in any
language, runs it as an ordinary command.

The script is a JSON object ``{"gates": DIR, "steps": [...]}``; each step is one of:

- ``{"out": TEXT}`` / ``{"err": TEXT}``: write the UTF-8 bytes of TEXT to stdout/stderr;
- ``{"out_hex": HEX}`` / ``{"err_hex": HEX}``: write raw bytes (may be invalid UTF-8);
- ``{"flood": "stdout"|"stderr", "bytes": N}``: write N bytes of a fixed pattern, fast;
- ``{"wait": NAME}``: block until the file ``DIR/NAME`` exists (a *gate*: the scenario
  releases it by creating that file), polling every few milliseconds;
- ``{"sleep": SECONDS}``: sleep (benchmarks only; scenarios use gates);
- ``{"hang": true}``: block forever (until killed);
- ``{"exit": CODE}``: exit at once with CODE.

Every write goes straight to the file descriptor (no buffering) so that each step is
visible to the parent as soon as it is done. Without an ``exit`` step the code is 0.

An emitter never outlives its scenario: while it waits on a gate or hangs, it exits
with code 125 as soon as the gate folder is gone (the scenario ended) or its parent
process has died (it was re-parented), so that an interrupted kit leaves no process
polling forever.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["PATTERN", "expected_output", "flood_bytes", "main"]

#: The bytes ``flood`` repeats: one 64-byte line, so a prefix is easy to eyeball.
PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_\n"
GATE_POLL = 0.002
#: How often a hanging emitter checks that its scenario still exists.
HANG_POLL = 0.05
#: The exit code of an emitter that ended because its scenario did.
ORPHANED = 125
_FD = {"stdout": 1, "stderr": 2}


class _Orphaned(Exception):
    """The gate folder is gone or the parent died: nobody will ever release a gate."""


def _check_alive(gates: Path, parent: int) -> None:
    if os.getppid() != parent:
        raise _Orphaned("its parent process died")
    if not gates.is_dir():
        raise _Orphaned(f"its gate folder {gates} is gone")


def flood_bytes(count: int) -> bytes:
    """The exact bytes ``{"flood": ..., "bytes": count}`` writes."""
    whole, rest = divmod(count, len(PATTERN))
    return PATTERN * whole + PATTERN[:rest]


def _writes(steps: list[dict[str, Any]]) -> Iterator[tuple[str, bytes]]:
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
        elif "exit" in step or "hang" in step:
            return


def expected_output(steps: list[dict[str, Any]]) -> dict[str, bytes]:
    """What the emitter writes to each stream if it runs to the end (the judges use it)."""
    written = {"stdout": b"", "stderr": b""}
    for stream, data in _writes(steps):
        written[stream] += data
    return written


def expected_exit(steps: list[dict[str, Any]]) -> int | None:
    """The exit code if the script ends by itself, None if it hangs."""
    for step in steps:
        if "exit" in step:
            return int(step["exit"])
        if "hang" in step:
            return None
    return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view[: 1024 * 1024]) :]


def run(script: dict[str, Any]) -> int:
    try:
        return _run(script)
    except _Orphaned as why:
        with contextlib.suppress(OSError):
            os.write(2, f"seamspec-emitter: exiting: {why}\n".encode())
        return ORPHANED


def _run(script: dict[str, Any]) -> int:
    gates = Path(script.get("gates", "."))
    parent = os.getppid()
    for step in script["steps"]:
        if "wait" in step:
            while not (gates / str(step["wait"])).exists():
                _check_alive(gates, parent)
                time.sleep(GATE_POLL)
        elif "sleep" in step:
            time.sleep(float(step["sleep"]))
        elif "hang" in step:
            while True:
                _check_alive(gates, parent)
                time.sleep(HANG_POLL)
        elif "exit" in step:
            return int(step["exit"])
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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "usage: python -m seamspec.reference._shell_output.emitter SCRIPT_JSON", file=sys.stderr
        )
        return 2
    return run(json.loads(args[0]))


if __name__ == "__main__":
    sys.exit(main())
