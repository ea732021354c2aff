"""One implementation process of the wire protocol: start, read, write, kill.

Kept apart from the adapter so that the adapter reads as the protocol's logic (handshake,
answers, restarts) while every detail of owning a foreign process lives here: readers
that never block the caller, a bounded stderr tail for error messages, and killing the
whole process group so that no grandchild outlives the kit.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import queue
import select
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from seamspec.conformance._core.errors import AdapterLoadError
from seamspec.conformance._wire.messages import encode

__all__ = ["EOF", "STOP_GRACE", "HandshakeError", "WireChild"]


class HandshakeError(AdapterLoadError):
    """The command did not start an implementation that speaks the protocol.

    Likely causes: a wrong command or path, a missing runtime (``node``, ``java``...), an
    implementation that prints something before its ``started`` message, or one that
    speaks another protocol version. ``seamspec smoke --impl-cmd ...`` says which.
    """


EOF = b""
#: Lines of the child's stderr kept for error context.
STDERR_LINES = 40
#: How long a child may take to exit after ``stop`` before its process group is killed.
STOP_GRACE = 2.0


_LIVE: weakref.WeakSet[WireChild] = weakref.WeakSet()


@atexit.register
def _kill_all_at_exit() -> None:
    """Last line of defence: no child outlives the kit, whatever path the exit took."""
    for child in list(_LIVE):
        child.kill()


class WireChild:
    """One running implementation process, with reader threads for stdout and stderr.

    Readers never block the caller: stdout lines go into a queue that the caller polls
    with a deadline, so a silent child costs a timeout, not a hang.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None) -> None:
        try:
            self.process = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=None if env is None else dict(env),
            )
        except OSError as error:
            raise HandshakeError(
                f"--impl-cmd: cannot start {argv[0]!r}: {error.strerror or error}"
            ) from None
        _LIVE.add(self)
        assert self.process.stdin is not None
        os.set_blocking(self.process.stdin.fileno(), False)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self._stderr: collections.deque[tuple[int, str]] = collections.deque(maxlen=STDERR_LINES)
        self._stderr_count = 0
        self._stderr_lock = threading.Lock()
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out.start()
        self._err.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(EOF)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            with self._stderr_lock:
                self._stderr.append((self._stderr_count, raw.decode("utf-8", "replace").rstrip()))
                self._stderr_count += 1

    def stderr_mark(self) -> int:
        with self._stderr_lock:
            return self._stderr_count

    def stderr_since(self, mark: int) -> list[str]:
        """stderr lines written since ``mark``; waits briefly for them only if the child died."""
        if self.process.poll() is not None:
            self._err.join(1.0)
        with self._stderr_lock:
            return [text for index, text in self._stderr if index >= mark]

    def send(self, message: dict[str, Any], deadline: float) -> bool:
        """Write one message by ``deadline``; False if the child stopped reading its stdin.

        The pipe is non-blocking and written with ``select``, because a child that never
        reads would otherwise block a large ``run`` message forever once the pipe fills.
        A child that closed its stdin raises BrokenPipeError (an OSError).
        """
        assert self.process.stdin is not None
        fd = self.process.stdin.fileno()
        view = memoryview(encode(message))
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            _, writable, _ = select.select([], [fd], [], remaining)
            if writable:
                with contextlib.suppress(BlockingIOError):
                    view = view[os.write(fd, view[:65536]) :]
        return True

    def receive(self, deadline: float) -> bytes | None:
        """The next stdout line, ``EOF`` when stdout closed, ``None`` past the deadline."""
        try:
            return self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None

    def exit_code_after_eof(self) -> int | None:
        """The exit code once stdout has closed; None if the child lives on without it."""
        try:
            return self.process.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """Kill the whole process group (grandchildren too) and reap the child."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL does not fail
            self.process.wait(5.0)
        _LIVE.discard(self)

    def stop(self) -> int | None:
        """Ask for a clean stop; return the exit code, or None if the child had to be killed."""
        code: int | None = None
        try:
            self.send({"type": "stop"}, time.monotonic() + STOP_GRACE)
            assert self.process.stdin is not None
            self.process.stdin.close()
            code = self.process.wait(STOP_GRACE)
        except (OSError, ValueError):
            code = self.process.poll()
        except subprocess.TimeoutExpired:
            code = None
        self.kill()  # the group may still hold grandchildren
        return code
