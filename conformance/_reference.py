"""The reference implementation, wired as the kit's default adapter."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seamspec import __version__
from seamspec.reference import ObserverFailure, WriteObserver, WriteObserverChain, WriteTools

from ._dr_driver import DispatchRecorderDriver
from ._dr_reference import ReferenceDispatch
from ._errors import AdapterLoadError
from ._python_adapter import PythonAdapter
from ._soo_driver import ShellOutputDriver
from ._soo_reference import ReferenceShellOutput
from ._woc_driver import WriteObserverChainDriver

__all__ = ["ReferenceWriteObservers", "asyncio_adapter", "reference_adapter", "trio_adapter"]


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


def reference_adapter(backend: str = "asyncio") -> PythonAdapter:
    return PythonAdapter(
        name=f"seamspec-reference-{backend}",
        version=__version__,
        drivers=[
            WriteObserverChainDriver(ReferenceWriteObservers()),
            ShellOutputDriver(ReferenceShellOutput()),
            DispatchRecorderDriver(ReferenceDispatch()),
        ],
        backend=backend,
    )


def asyncio_adapter() -> PythonAdapter:
    return reference_adapter("asyncio")


def trio_adapter() -> PythonAdapter:
    if importlib.util.find_spec("trio") is None:
        raise AdapterLoadError(
            "--impl reference-trio needs trio, which is not installed in this environment\n"
            "  hint: pip install 'seamspec[trio]'"
        )
    return reference_adapter("trio")
