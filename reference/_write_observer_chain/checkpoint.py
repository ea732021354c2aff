"""The checkpoint observer: remembers what a file held before the turn first changed it.

It is the reason ``before_write`` exists and the reason it must run before the file is
touched (WOC-SEAM-PRE) and first in the chain: a formatter or any later observer may rewrite
the file, and only the bytes from before the *tool's* mutation are worth restoring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import anyio
import anyio.to_thread

from seamspec.reference._write_observer_chain.write_path import write_bytes_durably

__all__ = ["ABSENT", "CheckpointObserver"]

#: What :meth:`CheckpointObserver.captured` returns for a file that did not exist when it
#: was captured. ``None`` rather than a private sentinel, so that the capture type stays
#: ``bytes | None`` and callers need no import to test for it.
ABSENT: Final = None


class CheckpointObserver:
    """Captures each file's pre-image once per turn and can put all of them back.

    Only the earliest capture of a path in a turn is kept: a second write to the same file
    in one turn must not overwrite the real "before" with an intermediate state. Paths are
    keyed by their resolved form, so aliases of one file share one capture.

    A capture that cannot be taken (permission denied, a directory in the way) raises; the
    chain contains it and the write proceeds without a checkpoint for that file.
    """

    name = "checkpoint"

    def __init__(self) -> None:
        self._captures: dict[Path, bytes | None] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._captures)} captured)"

    async def before_write(self, path: Path) -> None:
        key = Path(path).resolve()
        if key in self._captures:
            return
        try:
            content: bytes | None = await anyio.Path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            content = ABSENT  # a missing parent directory also means "no such file"
        # Checked again: another task may have captured this path while we were reading.
        self._captures.setdefault(key, content)

    async def after_write(self, path: Path) -> str | None:
        """The checkpoint has nothing to tell the model."""
        return None

    def new_turn(self) -> None:
        """Forget every capture, so the next write to each file is captured afresh."""
        self._captures.clear()

    def has_captured(self, path: Path) -> bool:
        return Path(path).resolve() in self._captures

    def captured(self, path: Path) -> bytes | None:
        """The pre-image of ``path`` this turn, or :data:`ABSENT` if it did not exist.

        Raises:
            KeyError: nothing was captured for ``path`` this turn; a missing capture must
                not be mistaken for "the file was absent" (see :meth:`has_captured`).
        """
        key = Path(path).resolve()
        if key not in self._captures:
            raise KeyError(f"no checkpoint captured for {key} this turn")
        return self._captures[key]

    @property
    def paths(self) -> tuple[Path, ...]:
        """The captured paths, in the order they were first written this turn."""
        return tuple(self._captures)

    async def restore(self) -> list[Path]:
        """Write every captured pre-image back; delete files that were absent.

        Captures are kept, so restoring twice is harmless; :meth:`new_turn` forgets them.
        Directories that the turn created are left in place. The first file that cannot be
        restored stops the restore with its ``OSError``.

        Returns:
            The restored paths, in capture order.
        """
        restored: list[Path] = []
        for path, content in list(self._captures.items()):
            if content is ABSENT:
                await anyio.Path(path).unlink(missing_ok=True)
            else:
                await anyio.to_thread.run_sync(write_bytes_durably, path, content)
            restored.append(path)
        return restored
