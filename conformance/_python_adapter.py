"""An adapter for implementations written in Python, built from per-contract drivers.

Each driver performs one contract's scenarios on an anyio event loop; this class runs
them on the chosen backend, so the same implementation is judged on asyncio and trio.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Protocol

import anyio

if sys.version_info < (3, 11):  # anyio brings the backport on 3.10
    from exceptiongroup import BaseExceptionGroup

from ._adapter import ImplementationInfo, Trace
from ._errors import Unsupported

__all__ = ["ContractDriver", "PythonAdapter"]


def _sole_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one real error inside task-group wrappers, so its message reaches the report.

    A driver's own ``ImplementationError`` raised inside a task group arrives wrapped in
    an exception group; unwrapped, it says what went wrong instead of "ExceptionGroup".
    A group of several errors is kept whole: none of them is the story on its own.
    """
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


class ContractDriver(Protocol):
    contract: str

    @property
    def features(self) -> tuple[str, ...]: ...

    async def perform(self, request: Mapping[str, Any]) -> Trace: ...


class PythonAdapter:
    """Runs scenarios in-process through the given drivers on one anyio backend.

    Example, for a chain of your own (see docs/usage.md for the whole file)::

        adapter = PythonAdapter(
            name="my-chain", version="1.2",
            drivers=[WriteObserverChainDriver(MyChainImplementation())],
        )
    """

    def __init__(
        self,
        *,
        name: str,
        version: str,
        drivers: list[ContractDriver],
        backend: str = "asyncio",
        details: Mapping[str, str] | None = None,
    ) -> None:
        if backend not in ("asyncio", "trio"):
            raise ValueError(f"backend must be 'asyncio' or 'trio', not {backend!r}")
        self._drivers = {d.contract: d for d in drivers}
        self._backend = backend
        features = sorted({f for d in drivers for f in d.features})
        self._info = ImplementationInfo(
            name=name,
            language="python",
            version=version,
            contracts=tuple(self._drivers),
            features=tuple(features),
            details={"backend": backend, **(details or {})},
        )

    def info(self) -> ImplementationInfo:
        return self._info

    def run(self, request: Mapping[str, Any]) -> Trace:
        driver = self._drivers.get(request["contract"])
        if driver is None:
            raise Unsupported(
                f"{self._info.name} does not implement the {request['contract']} contract"
            )
        try:
            trace: Trace = anyio.run(driver.perform, request, backend=self._backend)
        except BaseExceptionGroup as group:
            raise _sole_error(group) from group
        return trace

    def close(self) -> None:
        """Nothing to release: drivers hold no state between scenarios."""
