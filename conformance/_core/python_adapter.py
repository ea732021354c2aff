"""An adapter for implementations written in Python, built from per-contract drivers.

Each driver performs one contract's scenarios on an anyio event loop; this class runs
them on the chosen backend, so the same implementation is judged on asyncio and trio.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import anyio

from seamspec.conformance._core.adapter import ImplementationInfo, Trace
from seamspec.conformance._core.errors import Unsupported

__all__ = ["ContractDriver", "PythonAdapter"]


def _sole_error(error: BaseException) -> BaseException:
    """The one real error inside task-group wrappers, so its message reaches the report.

    A driver's own ``ImplementationError`` raised inside a task group arrives wrapped in
    an exception group; unwrapped, it says what went wrong instead of "ExceptionGroup".
    A group of several errors is kept whole: none of them is the story on its own.
    """
    while _is_group(error) and len(error.exceptions) == 1:  # type: ignore[attr-defined]
        error = error.exceptions[0]  # type: ignore[attr-defined]
    return error


def _is_group(error: BaseException) -> bool:
    # Duck-typed so that it works on 3.10 (the exceptiongroup backport) and 3.11+ alike.
    return isinstance(getattr(error, "exceptions", None), tuple) and hasattr(error, "split")


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
        except BaseException as error:
            sole = _sole_error(error)
            if sole is error:
                raise
            raise sole from error
        return trace

    def query(self, contract: str, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """A question about a scenario just performed (wire protocol 2), for the driver
        that performed it: its ``query(name, body)``."""
        driver = self._drivers.get(contract)
        ask = getattr(driver, "query", None)
        if ask is None:
            raise Unsupported(f"the {contract} driver answers no query ({name!r})")
        answer: dict[str, Any] = anyio.run(ask, name, body, backend=self._backend)
        return answer

    def close(self) -> None:
        """Nothing to release: drivers hold no state between scenarios."""
