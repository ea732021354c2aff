"""A deliberately misbehaving wire-protocol implementation, one misbehaviour per mode.

Run as ``python fake_impl.py MODE [ARG]``. Every mode shakes hands correctly unless the
mode is about the handshake; a mode's misbehaviour starts at the first ``run`` message,
so each test exercises exactly one failure path of the kit's WireAdapter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

MODE = sys.argv[1]
ARG = sys.argv[2] if len(sys.argv) > 2 else ""
INFO = {
    "name": f"fake-{MODE}",
    "language": "python",
    "version": "0",
    "contracts": ["write-observer-chain"],
    "features": ["write-tools", "hook-time-limit"],
}


def send(message: dict[str, Any] | str) -> None:
    text = message if isinstance(message, str) else json.dumps(message)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def note(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def ready_marker() -> None:
    """Tell a test (through the file named by ARG) that a run message has arrived."""
    if ARG:
        with open(ARG + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.replace(ARG + ".tmp", ARG)


def main() -> int:
    adapter = None
    served = 0
    if MODE == "deaf":  # shakes hands, then never reads its stdin again
        sys.stdin.readline()
        send({"type": "started", "protocol": 1, "implementation": INFO})
        time.sleep(3600)
    for line in sys.stdin:
        message = json.loads(line)
        if message["type"] == "start":
            if MODE == "silent-handshake":
                time.sleep(3600)
            if MODE == "wrong-version":
                send({"type": "started", "protocol": 99, "implementation": INFO})
                continue
            if MODE == "banner":
                send("Loading implementation... done")
            send({"type": "started", "protocol": 1, "implementation": INFO})
            continue
        if message["type"] == "stop":
            return 0
        seq = message["seq"]
        if MODE == "crash":
            note("fake: about to crash on purpose (helpful diagnostic 4711)")
            return 3
        if MODE == "hang":
            grandchild = subprocess.Popen(["sleep", "600"])
            note(f"fake: grandchild {grandchild.pid}")
            ready_marker()
            time.sleep(3600)
        if MODE == "close-stdout":
            os.close(1)
            time.sleep(3600)
        if MODE == "garbage":
            send("%%% this is not json %%%")
            continue
        if MODE == "chatty":
            send("progress: 50% done")
            continue
        if MODE == "bad-schema":
            send({"type": "trace", "seq": seq, "trace": "not a list"})
            continue
        if MODE == "extra-key":
            send({"type": "trace", "seq": seq, "trace": [], "debug": True})
            continue
        if MODE == "wrong-seq":
            send({"type": "trace", "seq": seq + 100, "trace": []})
            continue
        if MODE == "caught-error":
            note("fake: stderr line before the caught error")
            send(
                {
                    "type": "error",
                    "seq": seq,
                    "message": "my driver fell over",
                    "context": "at step 2",
                }
            )
            continue
        if MODE == "die-after":
            if served >= int(ARG):
                note(f"fake: dying after {served} scenarios")
                os._exit(5)
            if adapter is None:
                from seamspec.conformance._implementations import reference_adapter

                adapter = reference_adapter()
            served += 1
            send({"type": "trace", "seq": seq, "trace": adapter.run(message["request"])})
            continue
        send({"type": "skip", "seq": seq, "reason": f"mode {MODE} skips everything"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
