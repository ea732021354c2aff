"""``SignerProcess``: the journal's signer in a process of its own.

Two reasons to sign elsewhere. The private key stays out of the harness process (upstream
puts the signer in a control plane). And signing stops competing with the event loop for
the GIL: in-process, an Ed25519 signature holds the GIL while it is computed
(``cryptography`` signs without releasing it), so every signature serialises with
everything else the loop does. The journal sends a whole batch of entries per request (``sign_many``),
so a round trip is paid per batch, not per entry.

Failure is loud and closed: a service that cannot load its key fails ``start`` with its
reason; one that dies, answers garbage or takes longer than ``timeout`` makes ``sign_many``
raise :class:`SignerUnavailable`, which the journal turns into failed records.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["SignerProcess", "SignerUnavailable"]

_SERVICE = Path(__file__).with_name("signer_service.py")
_LEN = struct.Struct(">I")
_SIGNATURE = 64


class SignerUnavailable(RuntimeError):
    """The signing service could not start, died, hung past its limit or spoke garbage.

    Its message quotes what the service said (its reason, exit status or stderr). Likely
    causes: a key file with group or others permissions, a key that is not Ed25519, or
    the process being killed.
    """


class SignerProcess:
    """Signs in child processes that hold the private key; use as a context manager.

    ``processes`` children sign in parallel, one request each at a time; the journal's
    workers take whichever is free. One is the default: on a machine with few cores more
    processes only compete with the harness for them (see docs/benchmarks.md). Thread-safe.
    ``timeout`` bounds each answer; ``start_timeout`` (at least ``timeout``) bounds a
    child's start, which loads Python and the key and is the slow part on a busy machine.
    """

    def __init__(
        self,
        private_key: str | os.PathLike[str],
        *,
        processes: int = 1,
        timeout: float = 10.0,
        start_timeout: float = 30.0,
    ) -> None:
        self.timeout = timeout
        self._idle: queue.SimpleQueue[_SigningChild] = queue.SimpleQueue()
        self._children: list[_SigningChild] = []
        try:
            for _ in range(processes):
                child = _SigningChild(os.fspath(private_key), timeout, start_timeout)
                self._children.append(child)
                self._idle.put(child)
        except BaseException:
            self.close()
            raise
        keys = {child.public_bytes for child in self._children}
        if len(keys) != 1:  # the key file changed between two starts
            self.close()
            raise SignerUnavailable("the signing processes loaded different keys")
        self._public_key = Ed25519PublicKey.from_public_bytes(keys.pop())

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self._public_key

    @property
    def pids(self) -> list[int]:
        """The signing processes' ids (to watch them, or to test what their death does)."""
        return [child.pid for child in self._children]

    def sign(self, data: bytes) -> bytes:
        return self.sign_many([data])[0]

    def sign_many(self, messages: Sequence[bytes]) -> list[bytes]:
        """One signature per message, in order, in one round trip to one process."""
        child = self._idle.get()
        try:
            return child.sign_many(messages)
        finally:
            self._idle.put(child)

    def close(self) -> None:
        """Stop every process (each exits at the end of its input; killed if it does not)."""
        for child in self._children:
            child.close()

    def __enter__(self) -> SignerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _SigningChild:
    """One service process and its pipes; used by one thread at a time."""

    def __init__(self, private_key: str, timeout: float, start_timeout: float) -> None:
        self.timeout = timeout
        self.closed = False
        self._process = subprocess.Popen(
            [sys.executable, str(_SERVICE), private_key],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            # Its own limit: starting Python and loading the key takes longer than
            # signing, the more so on a loaded machine (0.5 s was not enough in CI).
            frame = self._read(33, max(start_timeout, timeout))
            if frame[:1] != b"R":
                raise SignerUnavailable(
                    f"the signing service did not start: {self._failure(frame)}"
                )
            self.public_bytes = frame[1:]
            self.pid = self._process.pid
        except BaseException:
            self.close()
            raise

    def sign_many(self, messages: Sequence[bytes]) -> list[bytes]:
        if self.closed:
            raise SignerUnavailable("the signer is closed")
        parts = [_LEN.pack(len(messages))]
        for message in messages:
            parts += (_LEN.pack(len(message)), message)
        body = b"".join(parts)
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(_LEN.pack(len(body)) + body)
            stdin.flush()
        except OSError as error:  # BrokenPipeError: the service is gone
            raise SignerUnavailable(
                f"cannot reach the signing service ({error}): {self._failure(b'')}"
            ) from None
        size = 1 + _SIGNATURE * len(messages)
        frame = self._read(size)
        if frame[:1] == b"K" and len(frame) < size:
            raise SignerUnavailable(f"the signing service stopped mid-answer: {self._failure(b'')}")
        if frame[:1] != b"K":
            raise SignerUnavailable(f"the signing service failed: {self._failure(frame)}")
        return [frame[i : i + _SIGNATURE] for i in range(1, len(frame), _SIGNATURE)]

    def close(self) -> None:
        self.closed = True
        process = self._process
        for stream in (process.stdin, process.stdout, process.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        try:
            process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _read(self, size: int, limit: float | None = None) -> bytes:
        """Up to ``size`` bytes: all of them, or less if an error frame or EOF comes first.

        Reads within ``timeout`` (the GIL is released while waiting); a service that does
        not answer in time is killed.
        """
        stdout = self._process.stdout
        assert stdout is not None
        limit = self.timeout if limit is None else limit
        fd, data = stdout.fileno(), b""
        while len(data) < size:
            if data[:1] == b"E" and len(data) >= 5:
                size = min(size, 5 + _LEN.unpack(data[1:5])[0])
                if len(data) >= size:
                    break
            ready, _, _ = select.select([fd], [], [], limit)
            if not ready:
                self._process.kill()
                raise SignerUnavailable(
                    f"the signing service did not answer within {limit:g} s; it was killed"
                )
            chunk = os.read(fd, size - len(data))
            if not chunk:
                break
            data += chunk
        return data

    def _failure(self, frame: bytes) -> str:
        """Why the service stopped or refused, from its error frame, exit status or stderr."""
        if frame[:1] == b"E":
            if len(frame) < 5:
                frame += self._read(5 - len(frame))
            (size,) = _LEN.unpack(frame[1:5].ljust(4, b"\0"))
            if len(frame) < 5 + size:
                frame += self._read(5 + size - len(frame))
            return frame[5 : 5 + size].decode("utf-8", "replace")
        if frame:
            return f"it sent {frame[:16]!r} where a frame was due (a protocol error)"
        try:
            code = self._process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            code = None
        stderr = self._process.stderr
        text = stderr.read().decode("utf-8", "replace") if stderr is not None else ""
        tail = text.strip().splitlines()[-3:]
        return f"exit status {code}" + (f"; stderr: {' | '.join(tail)}" if tail else "")
