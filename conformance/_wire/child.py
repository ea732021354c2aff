"""One implementation process of the wire protocol: start, read, write, kill.

Kept apart from the adapter so that the adapter reads as the protocol's logic (handshake,
answers, restarts) while every detail of owning a foreign process lives here. Whatever
the process writes, the kit's memory stays bounded:

- stdout is read only when the kit waits for an answer, by the waiting thread itself
  (``select`` with a deadline, so a silent child costs a timeout, not a hang), one line
  at a time, and a line longer than :data:`STDOUT_LINE_LIMIT` ends the read with
  :class:`StreamLimit` instead of growing a buffer without end. What the child writes
  while nobody waits stays in the pipe (the child blocks when it is full);
- stderr is drained all the time by a thread that keeps only the last
  :data:`STDERR_LINES` lines, each cut to :data:`STDERR_SHOWN` characters, and flags a
  line longer than :data:`STDERR_LINE_LIMIT`, which the next read reports.

Killing the child kills its whole tree (``conformance/_core/processes.py``): its process
group, and descendants in other sessions too, so that no grandchild outlives the kit.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import select
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from seamspec.conformance._core import processes
from seamspec.conformance._core.errors import AdapterLoadError
from seamspec.conformance._wire.messages import encode, quote

__all__ = [
    "EOF",
    "STDERR_LINE_LIMIT",
    "STDOUT_LINE_LIMIT",
    "STOP_GRACE",
    "HandshakeError",
    "StreamLimit",
    "WireChild",
]


class HandshakeError(AdapterLoadError):
    """The command did not start an implementation that speaks the protocol.

    Likely causes: a wrong command or path, a missing runtime (``node``, ``java``...), an
    implementation that prints something before its ``started`` message, or one that
    speaks another protocol version. ``seamspec smoke --impl-cmd ...`` says which.
    """


class StreamLimit(Exception):
    """The child wrote more on one line than the kit reads; the text names stream and limit."""

    def __init__(self, stream: str, limit: int) -> None:
        self.stream, self.limit = stream, limit
        super().__init__(
            f"wrote a line of more than {_size(limit)} to its {stream} without a newline "
            f"(the kit reads at most {_size(limit)} per {stream} line, so that no "
            "implementation can exhaust its memory)"
        )


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB" if count >= 1024 * 1024 else f"{count} bytes"


EOF = b""
#: The longest stdout line (one message) the kit reads. The largest trace the shipped
#: suite produces is about 12 MB (a flooding shell-output scenario, hex-encoded).
STDOUT_LINE_LIMIT = 32 * 1024 * 1024
#: The longest stderr line the kit accepts: stderr is for humans, in lines.
STDERR_LINE_LIMIT = 1024 * 1024
#: Lines of the child's stderr kept for error context, and how much of each is shown.
STDERR_LINES = 40
STDERR_SHOWN = 2000
#: How long a child may take to exit after ``stop`` before its process group is killed.
STOP_GRACE = 2.0
#: Bytes read from a pipe at once.
READ_SIZE = 64 * 1024
#: How often a thread waiting for stdout looks at the stderr flag and at kill().
WAKE_UP = 0.1


_LIVE: weakref.WeakSet[WireChild] = weakref.WeakSet()


@atexit.register
def _kill_all_at_exit() -> None:
    """Last line of defence: no child outlives the kit, whatever path the exit took."""
    for child in list(_LIVE):
        child.kill()


class _StderrTail:
    """The last lines of stderr, bounded in count and in length, and the limit's flag."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lines: collections.deque[tuple[int, str]] = collections.deque(maxlen=STDERR_LINES)
        self.count = 0
        self.over_limit = False
        self._shown = bytearray()  # the current line's first STDERR_SHOWN bytes
        self._length = 0  # the current line's length so far

    def feed(self, chunk: bytes) -> None:
        start = 0
        while start < len(chunk):
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            room = STDERR_SHOWN - len(self._shown)
            if room > 0:
                self._shown += chunk[start : min(end, start + room)]
            self._length += end - start
            if self._length > STDERR_LINE_LIMIT:
                self.over_limit = True
            if newline < 0:
                return
            self.end_line()
            start = newline + 1

    def flush(self) -> None:
        """At the end of the stream: a last line without a newline is a line too."""
        if self._length:
            self.end_line()

    def end_line(self) -> None:
        text = self._shown.decode("utf-8", "replace").rstrip()
        if self._length > len(self._shown):
            text += f" ... ({self._length} bytes in all)"
        with self.lock:
            self.lines.append((self.count, text))
            self.count += 1
        self._shown, self._length = bytearray(), 0


class WireChild:
    """One running implementation process.

    stdout is read by whoever waits for an answer (:meth:`receive`); a thread drains
    stderr into a bounded tail.
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
        #: The child's start time: with the pid, it names this process and no later one.
        self._start = processes.start_time(self.process.pid)
        _LIVE.add(self)
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        os.set_blocking(self.process.stdin.fileno(), False)
        self._out = self.process.stdout.fileno()
        self._pending = bytearray()  # stdout read but not yet returned as a line
        self._scanned = 0  # how much of _pending is known to hold no newline
        self._eof = False
        self._killed = False
        self._below: list[processes.Process] = []
        self._tail = _StderrTail()
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._err.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        fd = self.process.stderr.fileno()
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, READ_SIZE):
                self._tail.feed(chunk)
        self._tail.flush()

    @property
    def stderr_over_limit(self) -> bool:
        return self._tail.over_limit

    def stderr_mark(self) -> int:
        with self._tail.lock:
            return self._tail.count

    def stderr_since(self, mark: int) -> list[str]:
        """stderr lines written since ``mark``; waits briefly for them only if the child died."""
        if self.process.poll() is not None:
            self._err.join(1.0)
        with self._tail.lock:
            return [text for index, text in self._tail.lines if index >= mark]

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
        """The next stdout line, ``EOF`` when stdout closed, ``None`` past the deadline.

        Raises :class:`StreamLimit` for a stdout line over :data:`STDOUT_LINE_LIMIT` or a
        stderr line over :data:`STDERR_LINE_LIMIT` (checked first: it is reported against
        whatever the kit is waiting for).
        """
        while True:
            if self._tail.over_limit:
                raise StreamLimit("stderr", STDERR_LINE_LIMIT)
            line = self._take_line()
            if line is not None:
                return line
            if self._eof or self._killed:
                rest, self._pending = bytes(self._pending), bytearray()
                self._scanned = 0
                return rest or EOF
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._read(min(remaining, WAKE_UP))

    def ready_lines(self, limit: int = 8) -> list[str]:
        """Complete lines the child has written already, without waiting (at most
        ``limit``), quoted for an error message (so that none is kept whole).

        For what must not be there: output after an answer, before the next request.
        """
        found: list[str] = []
        while len(found) < limit:
            line = self._take_line()
            if line is None:
                if self._eof or self._killed or not self._read(0.0):
                    break
                continue
            found.append(quote(line))
        return found

    def _read(self, wait: float) -> bool:
        """Read what stdout has within ``wait`` seconds; False if nothing came."""
        try:
            readable, _, _ = select.select([self._out], [], [], wait)
        except (OSError, ValueError):  # the descriptor went away with the child
            self._eof = True
            return False
        if not readable:
            return False
        try:
            chunk = os.read(self._out, READ_SIZE)
        except OSError:
            chunk = b""
        if not chunk:
            self._eof = True
            return False
        self._pending += chunk
        return True

    def _take_line(self) -> bytes | None:
        newline = self._pending.find(b"\n", self._scanned)
        if newline < 0:
            self._scanned = len(self._pending)
            if self._scanned > STDOUT_LINE_LIMIT:
                raise StreamLimit("stdout", STDOUT_LINE_LIMIT)
            return None
        if newline > STDOUT_LINE_LIMIT:
            raise StreamLimit("stdout", STDOUT_LINE_LIMIT)
        with memoryview(self._pending) as view:  # one copy, not two
            line = bytes(view[: newline + 1])
        if newline + 1 == len(self._pending):
            self._pending = bytearray()  # let a large buffer go, not only its contents
        else:
            del self._pending[: newline + 1]
        self._scanned = 0
        return line

    def exit_code_after_eof(self) -> int | None:
        """The exit code once stdout has closed; None if the child lives on without it."""
        try:
            return self.process.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """Kill the child and everything below it, in any session, and reap the child."""
        self._killed = True
        self._pending = bytearray()
        processes.kill_tree(
            self.process.pid,
            root_start=self._start if self.process.returncode is None else -1,
            known=self._below,
        )
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL does not fail
            self.process.wait(5.0)
        _LIVE.discard(self)

    def stop(self) -> tuple[int | None, list[str]]:
        """Ask for a clean stop; return the exit code (None if the child had to be killed)
        and the lines it wrote after its last answer, quoted (there should be none)."""
        code: int | None = None
        stray: list[str] = []
        # Seen now, ended after the child: once it has exited (and been reaped), its pid
        # no longer leads to what it left running in other sessions.
        self._below = processes.descendants(self.process.pid)
        try:
            self.send({"type": "stop"}, time.monotonic() + STOP_GRACE)
            assert self.process.stdin is not None
            self.process.stdin.close()
            deadline = time.monotonic() + STOP_GRACE
            while (line := self.receive(deadline)) and len(stray) < 8:
                stray.append(quote(line))
            code = self.process.wait(max(0.0, deadline - time.monotonic()))
        except (OSError, ValueError, StreamLimit):
            code = self.process.poll()
        except subprocess.TimeoutExpired:
            code = None
        self.kill()  # the group may still hold grandchildren
        return code, stray
