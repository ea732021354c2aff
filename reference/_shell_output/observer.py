"""The shell-output observer protocol: what an observer is, which stream, which invocation.

An observer watches a shell command's output *while it runs*, for presentation only (a
live terminal pane, a progress line). It never gets authority over the command: the
command's result is decided by the runner alone (see :mod:`._shell_runner`).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = [
    "InvocationIds",
    "ShellInvocationId",
    "ShellOutputObserver",
    "ShellOutputStream",
    "as_shell_observer",
]

#: The number of one observed invocation. Plain ``int``: IDs are compared and printed,
#: never computed with, and a class of its own would only get in implementers' way.
ShellInvocationId = int


class ShellOutputStream(enum.Enum):
    """Which pipe a chunk was read from. Values are the names the trace uses."""

    STDOUT = "stdout"
    STDERR = "stderr"


@runtime_checkable
class ShellOutputObserver(Protocol):
    """Receives raw output chunks of running commands, then (optionally) a finish notice.

    ``on_output`` is required; ``on_finish`` is optional (an observer without it simply
    gets no notice). Both are called on a presentation thread of the invocation, never on
    the thread that reads the child's pipes nor on the caller's event loop, so they may
    block; but separate invocations call the same observer from separate threads at the
    same time, so an observer shared between invocations must lock its own state.
    """

    def on_output(
        self, invocation: ShellInvocationId, stream: ShellOutputStream, chunk: bytes
    ) -> None: ...


OutputCallable = Callable[[ShellInvocationId, ShellOutputStream, bytes], None]


class _CallableObserver:
    """A plain function used as an observer: it gets the output, and no finish notice."""

    def __init__(self, function: OutputCallable) -> None:
        self._function = function

    def on_output(
        self, invocation: ShellInvocationId, stream: ShellOutputStream, chunk: bytes
    ) -> None:
        self._function(invocation, stream, chunk)

    def __repr__(self) -> str:
        return f"<observer {self._function!r}>"


def as_shell_observer(observer: ShellOutputObserver | OutputCallable) -> ShellOutputObserver:
    """Accept either an observer object or a plain ``(invocation, stream, chunk)`` callable.

    An object with ``on_output`` is used as is (even if it is also callable): its
    ``on_finish``, if any, must not be lost by wrapping it.
    """
    if isinstance(observer, ShellOutputObserver):
        return observer
    if callable(observer):
        return _CallableObserver(observer)
    raise TypeError(f"not a shell-output observer: {observer!r}")


def finish_hook(observer: ShellOutputObserver) -> Callable[[ShellInvocationId], None] | None:
    """The observer's ``on_finish``, or None when it has none (the provided no-op)."""
    hook = getattr(observer, "on_finish", None)
    return hook if callable(hook) else None


class InvocationIds:
    """A thread-safe counter of invocation IDs, starting at 1.

    The runner takes one only when an observer is attached: unobserved and refused
    invocations consume nothing, so IDs stay dense for whoever watches. By default every
    runner shares :data:`PROCESS_IDS` (one counter per process, as upstream); a runner
    may be given its own (the conformance kit does, so that a scenario's IDs start at 1
    however many scenarios ran before it).
    """

    def __init__(self, start: int = 1) -> None:
        self._lock = threading.Lock()
        self._next = start

    def take(self) -> ShellInvocationId:
        with self._lock:
            value = self._next
            self._next += 1
            return value

    def peek(self) -> ShellInvocationId:
        """The ID the next observed invocation will get (for tests and diagnostics)."""
        with self._lock:
            return self._next


#: The process-wide counter every runner uses unless given its own.
PROCESS_IDS = InvocationIds()
