"""The reference chain and write tools, as the write-observer-chain driver wants them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.reference import ObserverFailure, WriteObserver, WriteObserverChain, WriteTools

__all__ = ["ReferenceWriteObservers", "reference_driver"]


class ReferenceWriteObservers:
    """The reference chain and write tools, as the WOC driver wants them."""

    features: tuple[str, ...] = ("write-tools", "builtin-observers", "hook-time-limit")

    def make_chain(
        self,
        observers: Sequence[WriteObserver],
        *,
        hook_time_limit: float | None,
        on_failure: Callable[[Any, str], None],
    ) -> WriteObserverChain:
        def report(failure: ObserverFailure) -> None:
            on_failure(failure.observer, failure.describe())

        return WriteObserverChain(observers, hook_time_limit=hook_time_limit, on_failure=report)

    def make_tools(self, root: Path, observer: WriteObserver, *, deny: Sequence[str]) -> WriteTools:
        return WriteTools(root, observer, deny=deny)


def reference_driver() -> WriteObserverChainDriver:
    return WriteObserverChainDriver(ReferenceWriteObservers())
