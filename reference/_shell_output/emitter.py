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
"""

from __future__ import annotations

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
_FD = {"stdout": 1, "stderr": 2}


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
    gates = Path(script.get("gates", "."))
    for step in script["steps"]:
        if "wait" in step:
            while not (gates / str(step["wait"])).exists():
                time.sleep(GATE_POLL)
        elif "sleep" in step:
            time.sleep(float(step["sleep"]))
        elif "hang" in step:
            while True:
                time.sleep(3600)
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
