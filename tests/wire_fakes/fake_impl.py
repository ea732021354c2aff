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
            if MODE == "chatty-stop" and _PREVIOUS is not None:
                send(_PREVIOUS)  # the last answer once more, on the way out
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
        if MODE in HOSTILE:
            adapter = adapter or _reference()
            HOSTILE[MODE](seq, message["request"], adapter)
            continue
        send({"type": "skip", "seq": seq, "reason": f"mode {MODE} skips everything"})
    return 0


# -- hostile modes: each answers correctly (the reference's trace) apart from one abuse --


def _reference() -> Any:
    from seamspec.conformance._implementations import reference_adapter

    return reference_adapter()


def _answer(seq: int, request: dict[str, Any], adapter: Any) -> dict[str, Any]:
    try:
        return {"type": "trace", "seq": seq, "trace": adapter.run(request)}
    except Exception as error:  # a reference skip (Unsupported) or error: say so
        return {"type": "skip", "seq": seq, "reason": f"{type(error).__name__}: {error}"}


def _write_raw(fd: int, total: int, block: bytes = b"x" * (1024 * 1024)) -> None:
    """Write ``total`` bytes (no newline) to ``fd``, blocking as the pipe fills."""
    while total > 0:
        view = memoryview(block)[: min(total, len(block))]
        while view:
            view = view[os.write(fd, view) :]
        total -= min(total, len(block))


def _huge_stdout_line(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """A trace message that never ends: ARG bytes, no newline, the pipe kept open."""
    sys.stdout.flush()
    os.write(1, b'{"type":"trace","seq":%d,"trace":[{"type":"' % seq)
    _write_raw(1, int(ARG))
    time.sleep(3600)


def _huge_stderr_line(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """ARG bytes of stderr without a newline, then a correct answer."""
    _write_raw(2, int(ARG))
    send(_answer(seq, request, adapter))


def _stdout_flood(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """The right answer, then endless valid-looking lines that answer nothing."""
    send(_answer(seq, request, adapter))
    line = (json.dumps({"type": "skip", "seq": seq, "reason": "again"}) + "\n").encode()
    while True:
        os.write(1, line * 1000)


def _wide(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """A syntactically valid trace of ARG bytes made of tiny objects (cheap to write,
    expensive to parse)."""
    count = int(ARG) // 3
    sys.stdout.write(f'{{"type":"trace","seq":{seq},"trace":[' + "{}," * count + "{}]}\n")
    sys.stdout.flush()


def _deep(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """A line nested ARG levels deep."""
    depth = int(ARG)
    sys.stdout.write(f'{{"type":"trace","seq":{seq},"trace":' + "[" * depth + "]" * depth + "}\n")
    sys.stdout.flush()


def _duplicate(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """The right answer twice, in one write."""
    line = json.dumps(_answer(seq, request, adapter))
    send(line + "\n" + line)


def _duplicate_late(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """Each answer is sent again just before the next answer (so after the next run)."""
    global _PREVIOUS  # noqa: PLW0603 - one fake process, one conversation
    if _PREVIOUS is not None:
        send(_PREVIOUS)
    _PREVIOUS = json.dumps(_answer(seq, request, adapter))
    send(_PREVIOUS)


def _remembered(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """The right answer, kept (the chatty-stop mode sends it again when told to stop)."""
    global _PREVIOUS  # noqa: PLW0603 - one fake process, one conversation
    _PREVIOUS = json.dumps(_answer(seq, request, adapter))
    send(_PREVIOUS)


def _seqless_error(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """The right answer, then (same write) an error with no seq."""
    late = json.dumps({"type": "error", "message": f"background failure after seq {seq}"})
    send(json.dumps(_answer(seq, request, adapter)) + "\n" + late)


def _seqless_error_late(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """From the second run on, an error without seq comes first (a complaint about the
    previous scenario, written only now), then the right answer."""
    global _PREVIOUS  # noqa: PLW0603 - one fake process, one conversation
    if _PREVIOUS is not None:
        send({"type": "error", "message": f"late complaint, before answering seq {seq}"})
    _PREVIOUS = "answered"
    send(_answer(seq, request, adapter))


def _seqless_answer(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """Every answer is an error that forgot its seq."""
    send({"type": "error", "message": f"failed, and forgot seq {seq}"})


def _setsid_grandchild(seq: int, request: dict[str, Any], adapter: Any) -> None:
    """Leave a grandchild in its own session (out of reach of a process-group kill), and
    one more, orphaned by a double fork, then answer correctly."""
    code = "import os, sys, time; os.setsid(); print(os.getpid(), file=sys.stderr, flush=True); time.sleep(600)"
    escaped = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    assert escaped.stderr is not None
    note(f"fake: setsid grandchild {escaped.stderr.readline().strip()}")
    middle = os.fork()
    if middle == 0:  # the intermediate: start the orphan, tell its pid, exit at once
        os.setsid()
        orphan = os.fork()
        if orphan == 0:
            time.sleep(600)
            os._exit(0)
        note(f"fake: orphan grandchild {orphan}")
        os._exit(0)
    os.waitpid(middle, 0)
    send(_answer(seq, request, adapter))


_PREVIOUS: str | None = None
HOSTILE = {
    "huge-stdout-line": _huge_stdout_line,
    "huge-stderr-line": _huge_stderr_line,
    "stdout-flood": _stdout_flood,
    "wide": _wide,
    "deep": _deep,
    "duplicate": _duplicate,
    "duplicate-late": _duplicate_late,
    "seqless-error": _seqless_error,
    "setsid-grandchild": _setsid_grandchild,
    "chatty-stop": _remembered,
    "seqless-error-late": _seqless_error_late,
    "seqless-answer": _seqless_answer,
}


if __name__ == "__main__":
    sys.exit(main())
