"""Checking a write-observer chain that is not seamspec's own.

The first half is a stand-in for a third-party chain (``ObserverPipeline``); the second
half is the adapter that lets seamspec judge it. Run it from this folder with:

    seamspec run --impl other_chain_adapter:adapter
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seamspec.conformance import PythonAdapter, Unsupported, WriteObserverChainDriver

# --- the implementation under test: a chain written without seamspec in mind ---------


class ObserverPipeline:
    """Runs observers one after another, in list order, for both hooks."""

    def __init__(
        self, stages: Sequence[Any], *, warn: Callable[[Any, BaseException], None]
    ) -> None:
        self.stages = list(stages)
        self.warn = warn
        self.warned: set[int] = set()  # ids of stages that already produced a warning

    async def before_write(self, path: Path) -> None:
        await self._each("before_write", path)

    async def after_write(self, path: Path) -> str | None:
        notes = await self._each("after_write", path)
        return "\n\n".join(notes) if notes else None

    async def _each(self, hook: str, path: Path) -> list[str]:
        notes: list[str] = []
        for stage in self.stages:
            try:
                note = await getattr(stage, hook)(path)
            except Exception as error:  # cancellation is a BaseException: it passes through
                if id(stage) not in self.warned:
                    self.warned.add(id(stage))
                    self.warn(stage, error)
                continue
            if isinstance(note, str) and note:
                notes.append(note)
        return notes


# --- the adapter: tells seamspec how to build that chain -----------------------------


class PipelineUnderTest:
    """Builds an ObserverPipeline the way the kit's driver asks for a chain."""

    features: tuple[str, ...] = ()  # no write tools, no builtin observers, no time limit

    def make_chain(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None,
        on_failure: Callable[[Any, str], None],
    ) -> ObserverPipeline:
        if hook_time_limit is not None:
            raise Unsupported("ObserverPipeline has no per-hook time limit")

        def warn(stage: Any, error: BaseException) -> None:
            on_failure(stage, f"observer failed: {error!r}")

        return ObserverPipeline(observers, warn=warn)


adapter = PythonAdapter(
    name="observer-pipeline",
    version="1.0",
    drivers=[WriteObserverChainDriver(PipelineUnderTest())],
)
