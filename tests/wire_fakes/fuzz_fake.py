"""A wire implementation of the write-observer chain that crashes or hangs on cue.

Run as ``python fuzz_fake.py MODE FILE``. With MODE ``crash`` or ``hang``, it performs
every scenario with the reference (loaded before the handshake, so that no healthy
answer, even the first after a restart, comes near a short request limit), except a scenario whose chain has two or more top-level observers:
then it first starts a grandchild (``sleep 600``, in its process group) and either exits
with code 3 (``crash``) or never answers (``hang``). That trigger is common in generated
scenarios, so fuzzing finds it at once, and the least scenario that meets it is small and
known, so a test can tell that the saved reproducer was shrunk. Every pid it starts (its
own and the grandchild's) is appended to PIDFILE, one per line, for a test to check that
none outlives the run.

Two more modes: ``record`` declares no optional feature, performs every scenario with
the reference and appends each request it receives to FILE (one JSON line each), so a
test can tell what the kit sent; ``skip`` answers ``skip`` to every scenario.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

MODE, PIDFILE = sys.argv[1], sys.argv[2]
INFO = {
    "name": f"fuzz-fake-{MODE}",
    "language": "python",
    "version": "0",
    "contracts": ["write-observer-chain"],
    "features": [] if MODE == "record" else ["write-tools"],
}


def record(pid: int) -> None:
    with open(PIDFILE, "a") as handle:
        handle.write(f"{pid}\n")


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def misbehave() -> None:
    # Not on our stdout: a grandchild holding the pipe open would turn a crash into a
    # hang as the kit sees it (no end of file until the time limit).
    grandchild = subprocess.Popen(
        ["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    record(grandchild.pid)
    if MODE == "crash":
        os._exit(3)
    time.sleep(3600)


def main() -> int:
    if MODE != "record":
        record(os.getpid())
    from seamspec.conformance import load_adapter

    adapter = load_adapter("reference")
    for line in sys.stdin:
        message = json.loads(line)
        if message["type"] == "start":
            send({"type": "started", "protocol": 1, "implementation": INFO})
        elif message["type"] == "stop":
            return 0
        else:
            request = message["request"]
            if MODE == "skip":
                send({"type": "skip", "seq": message["seq"], "reason": "skips everything"})
                continue
            if MODE == "record":
                with open(PIDFILE, "a") as handle:
                    handle.write(json.dumps(request) + "\n")
            elif len(request["given"].get("observers", [])) >= 2:
                misbehave()
            trace = adapter.run(request)
            send({"type": "trace", "seq": message["seq"], "trace": trace})
    return 0


if __name__ == "__main__":
    sys.exit(main())
