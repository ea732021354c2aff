"""The implementation side of the wire protocol, for any in-process Python adapter.

``seamspec serve-reference`` uses it to put the reference behind the protocol. That is
what proves the protocol carries everything a verdict needs: the same suite, run in
process and through this server, must give the same verdict for every scenario.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import IO, Any

from seamspec.conformance._core.adapter import Adapter
from seamspec.conformance._core.errors import Unsupported
from seamspec.conformance._wire.messages import (
    PROTOCOL_VERSIONS,
    ProtocolError,
    decode_line,
    encode,
    quote,
    started_message,
)

__all__ = ["protect_stdout", "serve"]


def protect_stdout() -> IO[bytes]:
    """Reserve the real stdout for protocol messages; everything else printing goes to stderr.

    Returns a binary stream on a duplicate of file descriptor 1, then points descriptor 1
    (and ``sys.stdout``) at stderr, so that a stray ``print`` in an implementation, or a
    child program that inherits descriptor 1, cannot corrupt the protocol stream.
    """
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _log(message: str) -> None:
    print(f"seamspec serve: {message}", file=sys.stderr, flush=True)


def serve(
    adapter: Adapter,
    stdin: IO[bytes],
    stdout: IO[bytes],
    *,
    protocols: tuple[int, ...] = PROTOCOL_VERSIONS,
) -> int:
    """Answer protocol messages from ``stdin`` on ``stdout`` until ``stop`` or end of input.

    ``protocols`` are the versions this side speaks (``serve-reference --protocol 1``
    speaks only version 1, to check that the kit still talks to such implementations).
    Returns the process exit code: 0 after a clean stop, 1 after a protocol error by the
    kit (which is reported on stderr, where a human will look).
    """

    def send(message: dict[str, Any]) -> None:
        stdout.write(encode(message))
        stdout.flush()

    started = False
    version = 1
    for line in stdin:
        if not line.strip():
            continue
        expected = (
            (("run", "query", "stop") if version >= 2 else ("run", "stop"))
            if started
            else ("start",)
        )
        try:
            message = decode_line(line, expected=expected, strict=True)
        except ProtocolError as error:
            _log(f"protocol error: {error}; line: {quote(line)}")
            if not started:
                send({"type": "error", "message": f"expected a start message: {error}"})
            return 1
        kind = message["type"]
        if kind == "start":
            usable = [v for v in protocols if v <= message["protocol"]]
            if not usable:
                speaks = ", ".join(map(str, protocols))
                send(
                    {
                        "type": "error",
                        "message": f"unsupported protocol version {message['protocol']}; "
                        f"this implementation speaks {speaks}",
                    }
                )
                return 1
            version = max(usable)
            send(started_message(adapter.info(), version))
            started = True
        elif kind == "stop":
            return 0
        elif kind == "query":
            send(_answer(adapter, message))
        else:
            send(_perform(adapter, message["seq"], message["request"]))
    return 0


def _answer(adapter: Adapter, message: dict[str, Any]) -> dict[str, Any]:
    """One ``query`` message's answer, or the caught error (an adapter with no ``query``
    cannot answer any)."""
    seq = message["seq"]
    query = getattr(adapter, "query", None)
    try:
        if query is None:
            raise Unsupported(f"this implementation answers no query ({message['query']!r})")
        answer = query(message["contract"], message["query"], message["body"])
        json.dumps(answer)
    except Exception as error:
        return {
            "type": "error",
            "seq": seq,
            "message": f"{type(error).__name__}: {error}",
            "context": traceback.format_exc().rstrip(),
        }
    return {"type": "answer", "seq": seq, "answer": answer}


def _perform(adapter: Adapter, seq: int, request: dict[str, Any]) -> dict[str, Any]:
    """One ``run`` message's answer: the trace, a skip, or the caught error with its traceback."""
    try:
        trace = adapter.run(request)
        json.dumps(trace)  # a trace that is not JSON data is this side's error, reported as such
    except Unsupported as error:
        return {"type": "skip", "seq": seq, "reason": str(error) or "unsupported"}
    except Exception as error:
        return {
            "type": "error",
            "seq": seq,
            "message": f"{type(error).__name__}: {error}",
            "context": traceback.format_exc().rstrip(),
        }
    return {"type": "trace", "seq": seq, "trace": trace}
