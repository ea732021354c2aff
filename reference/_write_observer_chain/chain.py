"""The write-observer protocol and the ordered chain that composes observers.

The chain is the only place in the reference that decides ordering, joining and what
happens when an observer misbehaves; every rule of the WOC contract that is about the
chain (as opposed to the write path that calls it) is decided in :func:`_run_hook`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import anyio

__all__ = [
    "ANNOTATION_SEPARATOR",
    "ObserverFailure",
    "ObserverFailureWarning",
    "WriteObserver",
    "WriteObserverChain",
]

#: Joins the non-empty annotations of a chain (WOC-JOIN): one blank line, so that a
#: formatter's diff and a diagnostics block read as separate paragraphs in a tool result.
ANNOTATION_SEPARATOR = "\n\n"

Hook = Literal["before_write", "after_write"]


@runtime_checkable
class WriteObserver(Protocol):
    """Something that wants to see every file mutation made by the agent's tools.

    ``path`` has already been resolved and passed the sandbox check. ``before_write``
    runs before the file is created, overwritten or deleted; ``after_write`` runs only
    after the mutation succeeded and may return text to append to the tool's result.

    Observers must be quick and must not treat their own problems as the edit's
    problems: raising is allowed (the chain contains it), but it never fails the write.
    """

    async def before_write(self, path: Path) -> None: ...

    async def after_write(self, path: Path) -> str | None: ...


@dataclass(frozen=True)
class ObserverFailure:
    """One observer hook that raised or ran past the chain's per-hook time limit."""

    observer: WriteObserver
    hook: Hook
    error: BaseException | None
    timed_out: bool

    def describe(self) -> str:
        name = getattr(self.observer, "name", None) or type(self.observer).__name__
        if self.timed_out:
            return f"write observer {name!r}: {self.hook} ran past its time limit; skipped"
        return f"write observer {name!r}: {self.hook} raised {self.error!r}; skipped"


class ObserverFailureWarning(UserWarning):
    """A write observer failed. The edit went ahead; only the observer's work was lost.

    Likely causes: the observer's external program is missing or slow, or the file was
    not in the shape the observer expected. The chain warns once per observer and keeps
    calling it, so a transient problem heals by itself.
    """


def _default_warning_sink(failure: ObserverFailure) -> None:
    warnings.warn(ObserverFailureWarning(failure.describe()), stacklevel=3)


class WriteObserverChain:
    """An ordered list of observers that is itself one observer.

    The write tools hold exactly one observer; composing checkpoint, formatters and
    diagnostics is done here rather than at each call site, so the order is decided
    once by whoever builds the chain (canonically: checkpoint, formatters, diagnostics).

    Args:
        observers: run in this order for *both* hooks (not reversed for ``after_write``:
            diagnostics must read what the formatters left).
        hook_time_limit: seconds one hook may take; past it the hook is cancelled and
            counts as a failure (WOC-SLOW). ``None`` means no limit of its own: nested in
            a chain that has one, this chain's observers run under the outer limit. The
            limit is per leaf observer, never per nested chain as a whole, so the observer
            that hangs is the one cut off and named, and the rest still run (WOC-NESTED).
        on_failure: called once per failing observer for the chain's lifetime
            (WOC-FAIL-WARN). Defaults to emitting :class:`ObserverFailureWarning`.
    """

    def __init__(
        self,
        observers: Sequence[WriteObserver],
        *,
        hook_time_limit: float | None = None,
        on_failure: Callable[[ObserverFailure], None] | None = None,
    ) -> None:
        if hook_time_limit is not None and not hook_time_limit > 0:
            raise ValueError(
                f"hook_time_limit must be positive seconds or None, got {hook_time_limit!r}"
            )
        self._observers = tuple(observers)
        self._hook_time_limit = hook_time_limit
        self._on_failure = on_failure or _default_warning_sink
        self._warned: set[int] = set()

    @property
    def observers(self) -> tuple[WriteObserver, ...]:
        return self._observers

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self._observers)!r})"

    async def before_write(self, path: Path) -> None:
        await self._run_hook("before_write", path, math.inf)

    async def after_write(self, path: Path) -> str | None:
        return await self._joined("after_write", path, math.inf)

    async def _joined(self, hook: Hook, path: Path, inherited_limit: float) -> str | None:
        annotations = await self._run_hook(hook, path, inherited_limit)
        return ANNOTATION_SEPARATOR.join(annotations) if annotations else None

    async def _run_hook(self, hook: Hook, path: Path, inherited_limit: float) -> list[str]:
        """Call ``hook`` on every observer, one after another, and collect annotations.

        - Order is list order for both hooks; each hook is awaited before the next starts.
        - An ``Exception`` (or a timeout) is contained: reported once, no annotation,
          and the next observer still runs.
        - Cancellation of the caller is *not* a failure: it is a ``BaseException`` and
          propagates from the ``await`` at once, so later observers never start.
        - Empty strings and ``None`` add nothing; any other string is kept verbatim.
        - The time limit (this chain's own, else the one inherited from the chain this one
          is nested in) bounds each leaf observer's hook. A nested chain is not timed as a
          whole: it is handed the limit and applies it to its own observers.
        """
        time_limit = inherited_limit if self._hook_time_limit is None else self._hook_time_limit
        annotations: list[str] = []
        for observer in self._observers:
            call: Callable[[Path], Awaitable[str | None]]
            if isinstance(observer, WriteObserverChain):
                call = functools.partial(observer._joined, hook, inherited_limit=time_limit)
                leaf_limit = math.inf
            else:
                call = getattr(observer, hook)
                leaf_limit = time_limit
            result: str | None = None
            with anyio.move_on_after(leaf_limit) as limit:
                try:
                    result = await call(path)
                except Exception as error:
                    self._report(ObserverFailure(observer, hook, error, timed_out=False))
                    continue
            if limit.cancelled_caught:
                self._report(ObserverFailure(observer, hook, None, timed_out=True))
                continue
            if hook == "after_write" and isinstance(result, str) and result:
                annotations.append(result)
        return annotations

    def _report(self, failure: ObserverFailure) -> None:
        key = id(failure.observer)
        if key in self._warned:
            return
        self._warned.add(key)
        # A broken warning sink (or warnings turned into errors) must not fail the edit either.
        with contextlib.suppress(Exception):
            self._on_failure(failure)
