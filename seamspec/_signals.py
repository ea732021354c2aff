"""Ctrl-C and SIGTERM for the ``seamspec`` command: stop at once, clean up once, exit 130.

This module imports only the standard library, so that the command's entry point
(``_entry.py``) can put its handlers in place before the kit's heavy imports: a Ctrl-C
while they load ends the command with exit code 130 and one line, not a traceback.

- The first SIGINT becomes ``KeyboardInterrupt`` and the first SIGTERM
  ``SystemExit(143)``; every later one only prints a note, so the cleanup that the
  first one started is not itself cut short by an impatient second Ctrl-C. Inside
  :func:`deferred`, even the first one waits until the block ends.
- A signal that arrives once the command's work is done (while Python shuts down) still
  makes the exit code 130 (or 143): whoever pressed Ctrl-C gets the code they expect.
- :func:`worker_signals` is for ``-j`` worker processes: Ctrl-C is the main process's
  business; SIGTERM closes the worker's adapters (which ends what they run) and exits.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

__all__ = ["EXIT_INTERRUPTED", "blocked", "deferred", "finish", "install", "worker_signals"]

EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


class _State:
    raised = 0  # signals already turned into an exception
    signum = 0  # the one that was
    code: int | None = None  # the command's exit code, once it has one
    deferring = 0
    pending: int | None = None  # a signal that arrived inside deferred()
    finished = False  # the command's work is done; Python is shutting down
    late: int | None = None  # a signal that arrived after that


def finish(code: int) -> int:
    """The command is done with ``code``: from now on a signal only sets the exit code."""
    _State.finished = True
    _State.code = code if _State.late is None else _code(_State.late)
    return _State.code


def _code(signum: int) -> int:
    return EXIT_INTERRUPTED if signum == signal.SIGINT else EXIT_TERMINATED


def _handler(signum: int, _frame: FrameType | None) -> None:
    if _State.finished:
        _State.late = _State.late or signum
        return
    if _State.raised:
        os.write(2, b"seamspec: still stopping (ending what the run started)\n")
        return
    if _State.deferring:
        _State.pending = _State.pending or signum
        return
    _raise(signum)


def _raise(signum: int) -> None:
    _State.raised += 1
    _State.signum = signum
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(EXIT_TERMINATED)


def _unraisable(unraisable: Any) -> None:
    """An exception raised where Python cannot raise it (a weakref callback, ``__del__``)
    is printed and dropped. If it was the one a signal raised, the signal is raised
    again, to land where an exception can propagate: a Ctrl-C is never lost."""
    ours = isinstance(unraisable.exc_value, KeyboardInterrupt) or (
        isinstance(unraisable.exc_value, SystemExit) and _State.signum == signal.SIGTERM
    )
    if ours and _State.raised and not _State.finished:
        _State.raised -= 1
        signal.raise_signal(_State.signum)
        return
    _PREVIOUS_HOOK(unraisable)


_PREVIOUS_HOOK = sys.unraisablehook


def install() -> None:
    """The command's own handling of SIGINT and SIGTERM (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    _State.raised, _State.pending, _State.finished, _State.late = 0, None, False, None
    _State.code = None
    sys.unraisablehook = _unraisable
    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Run a block that an interrupt must not cut in two; the interrupt comes after it."""
    _State.deferring += 1
    try:
        yield
    finally:
        _State.deferring -= 1
        if not _State.deferring and _State.pending is not None:
            signum, _State.pending = _State.pending, None
            _raise(signum)


@atexit.register
def _signal_exit() -> None:
    """Registered first, so it runs last: after a signal, the exit code is its code.

    Also after one handled in good order: CPython turns an exit code into death by
    SIGINT (-2) when a KeyboardInterrupt ever left code run by ``exec`` (which the
    standard library's namedtuple and dataclass use), even if it was caught later.
    """
    if not _State.finished:
        return
    code = _code(_State.late) if _State.late is not None else _State.code
    if code in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def worker_signals(close: Callable[[], None]) -> None:
    """In a ``-j`` worker: ignore Ctrl-C (the main process stops the run) and, on SIGTERM,
    ``close`` (the adapters: an in-process scenario is cancelled, a child implementation
    stopped) and exit at once with 143."""

    def terminate(_signum: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            close()
        finally:
            os._exit(EXIT_TERMINATED)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, terminate)
    # The main process blocks both while it starts workers (so that none is lost between
    # the fork and the lines above); now that they are handled, let them through.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def blocked() -> Iterator[None]:
    """SIGINT and SIGTERM held back in this thread (and in processes forked meanwhile)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
