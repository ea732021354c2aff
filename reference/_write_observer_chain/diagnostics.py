"""The diagnostics observer: tell the model what a checker thinks of the file it just wrote.

Diagnostics come last in the canonical chain because they must describe the bytes that will
stay on disk, i.e. after every formatter ran; a finding about whitespace the formatter has
already removed would send the model chasing a problem that no longer exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio

from seamspec.reference._write_observer_chain.formatter import run_bounded

__all__ = ["DiagnosticsObserver"]


class DiagnosticsObserver:
    """Runs ``[*command, path]`` and returns its stdout as an indented, labelled block.

    The exit status is not interpreted: checkers conventionally exit non-zero exactly when
    they have something to say, so stdout alone decides. A checker that prints nothing
    (success, or a failure reported only on stderr) adds no annotation.

    Args:
        command: the checker's argv, without the path (it is appended).
        name: shown in the block header, so several checkers can be told apart.
        time_limit: seconds the checker may run before it is killed and the hook raises
            :class:`TimeoutError` (which a chain contains).
    """

    def __init__(
        self, command: Sequence[str], *, name: str = "diagnostics", time_limit: float = 10.0
    ) -> None:
        if not command:
            raise ValueError("a diagnostics observer needs a command")
        if not time_limit > 0:
            raise ValueError(f"time_limit must be positive seconds, got {time_limit!r}")
        self.command = tuple(command)
        self.name = name
        self.time_limit = time_limit

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.command)!r}, name={self.name!r})"

    async def before_write(self, path: Path) -> None:
        """Nothing to check before the write: the findings are about the new bytes."""

    async def after_write(self, path: Path) -> str | None:
        if not await anyio.Path(path).exists():
            return None  # a deletion: nothing left to check
        run = await run_bounded(
            [*self.command, str(path)], None, time_limit=self.time_limit, who=self.name
        )
        text = run.stdout.decode("utf-8", errors="replace").rstrip("\r\n")
        if not text.strip():
            return None
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        return "\n".join([f"diagnostics ({self.name}):", *(f"  {line}" for line in lines)])
