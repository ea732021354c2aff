"""The formatter observer: rewrite a file after the tool wrote it, and show the model how.

A formatter that silently changes a file leaves the model with a stale picture of it; the
next ``edit`` would then look for text that no longer exists. The "diff-back" (a unified
diff returned as the annotation) is what keeps the model's picture and the disk in step.

This module also holds :func:`run_bounded`, the one way the reference runs a child program,
shared with the diagnostics observer so both kill and reap their children the same way.
"""

from __future__ import annotations

import contextlib
import difflib
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread

from seamspec.reference._write_observer_chain.write_path import write_bytes_durably

__all__ = ["FormatterObserver", "ProgramRun", "run_bounded"]


@dataclass(frozen=True)
class ProgramRun:
    """What a finished child program left behind."""

    returncode: int
    stdout: bytes
    stderr: bytes

    def first_stderr_line(self) -> str:
        for line in self.stderr.decode("utf-8", errors="replace").splitlines():
            if line.strip():
                return line.strip()
        return ""


async def _collect(stream: anyio.abc.ByteReceiveStream, into: list[bytes]) -> None:
    async for chunk in stream:
        into.append(chunk)


async def _feed(stream: anyio.abc.ByteSendStream, data: bytes) -> None:
    # A child may exit without reading all of its input; that is its business, not ours.
    try:
        if data:
            await stream.send(data)
        await stream.aclose()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass


async def run_bounded(
    command: Sequence[str], stdin: bytes | None, *, time_limit: float, who: str
) -> ProgramRun:
    """Run ``command`` to completion within ``time_limit`` seconds and collect its output.

    The child is killed and reaped whenever this coroutine leaves early, whether by the
    time limit or by the caller's cancellation: an observer must never leave processes
    behind, since the agent may write thousands of files in a session.

    Raises:
        TimeoutError: the time limit passed; the child has been killed.
        OSError: the program could not be started.
    """
    stdout: list[bytes] = []
    stderr: list[bytes] = []
    try:
        with anyio.fail_after(time_limit):
            process = await anyio.open_process(
                list(command),
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            try:
                async with anyio.create_task_group() as group:
                    assert process.stdout is not None  # both were asked for as PIPE
                    assert process.stderr is not None
                    group.start_soon(_collect, process.stdout, stdout)
                    group.start_soon(_collect, process.stderr, stderr)
                    if process.stdin is not None and stdin is not None:
                        group.start_soon(_feed, process.stdin, stdin)
                returncode = await process.wait()
            finally:
                if process.returncode is None:
                    with contextlib.suppress(ProcessLookupError):  # it may have just exited
                        process.kill()
                with anyio.CancelScope(shield=True):
                    await process.wait()  # reap, so not even a zombie is left
                    await process.aclose()
    except TimeoutError:
        raise TimeoutError(
            f"{who}: {' '.join(command)} did not finish within {time_limit:g} s; killed"
        ) from None
    return ProgramRun(returncode, b"".join(stdout), b"".join(stderr))


def _lines(text: str) -> list[str]:
    # Split on "\n" only: str.splitlines would also split on form feeds and the like,
    # producing a diff of lines the file does not have.
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def unified_diff(name: str, before: bytes, after: bytes) -> str:
    """A git-style unified diff of two versions of one file, without a trailing newline.

    A last line without a newline is marked ``\\ No newline at end of file`` (as git
    does), so a change that only adds the final newline still shows up in the diff.
    """
    out: list[str] = []
    diff = difflib.unified_diff(
        _lines(before.decode("utf-8", errors="replace")),
        _lines(after.decode("utf-8", errors="replace")),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    for line in diff:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out).removesuffix("\n")


class FormatterObserver:
    """Pipes the written file through a formatter and writes back what it prints.

    Args:
        command: the formatter's argv; it reads the file on stdin and prints the
            formatted text on stdout, exiting 0 on success.
        name: how annotations and failures name this observer.
        time_limit: seconds the formatter may run before it is killed and the hook
            raises :class:`TimeoutError` (which a chain contains).
    """

    def __init__(
        self, command: Sequence[str], *, name: str = "formatter", time_limit: float = 10.0
    ) -> None:
        if not command:
            raise ValueError("a formatter needs a command")
        if not time_limit > 0:
            raise ValueError(f"time_limit must be positive seconds, got {time_limit!r}")
        self.command = tuple(command)
        self.name = name
        self.time_limit = time_limit

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.command)!r}, name={self.name!r})"

    async def before_write(self, path: Path) -> None:
        """Nothing to do before the write: only the written bytes get formatted."""

    async def after_write(self, path: Path) -> str | None:
        """Format the file in place; return the diff, a failure note, or ``None``.

        A formatter that fails is reported to the model but never "fixes" the file by
        guesswork: the bytes the tool wrote stay exactly as they were.
        """
        try:
            original = await anyio.Path(path).read_bytes()
        except FileNotFoundError:
            return None  # a deletion: nothing to format
        run = await run_bounded(self.command, original, time_limit=self.time_limit, who=self.name)
        if run.returncode != 0:
            reason = run.first_stderr_line()
            detail = f": {reason}" if reason else ""
            return (
                f"{self.name}: formatter failed (exit {run.returncode}){detail}; "
                "file left as written"
            )
        if run.stdout == original:
            return None
        await anyio.to_thread.run_sync(write_bytes_durably, Path(path), run.stdout)
        return unified_diff(Path(path).name, original, run.stdout)
