"""An adapter for implementations written in Python, built from per-contract drivers.

Each driver performs one contract's scenarios on an anyio event loop; this class runs
them on the chosen backend, so the same implementation is judged on asyncio and trio.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel

from seamspec.conformance._core.adapter import ImplementationInfo, Trace
from seamspec.conformance._core.errors import ImplementationError, Unsupported

__all__ = ["ContractDriver", "PythonAdapter"]

#: How long ``close()`` waits for a cancelled scenario to unwind (its ``finally`` blocks:
#: gates released, child processes killed, temporary folders deleted).
CANCEL_GRACE = 5.0


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
        concurrent: bool = False,
    ) -> None:
        """``concurrent=True`` promises that scenarios may run side by side, in threads of
        one process: each gets its own event loop, and the drivers and the implementation
        keep no state between scenarios (no module-level caches, no fixed paths or ports).
        ``seamspec run`` then runs several at once by default; without it, one at a time
        (``-j N`` then means N worker processes, each with its own copy)."""
        if backend not in ("asyncio", "trio"):
            raise ValueError(f"backend must be 'asyncio' or 'trio', not {backend!r}")
        if backend == "trio":
            _warm_trio_testing()
        self._drivers = {d.contract: d for d in drivers}
        #: Whether ``run`` may be called from several threads at once (see ``__init__``).
        self.concurrent_runs = concurrent
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
        self._lock = threading.Lock()
        #: Scenarios in flight: how to cancel each from another thread, and its end.
        self._running: set[_Flight] = set()

    def info(self) -> ImplementationInfo:
        return self._info

    def run(self, request: Mapping[str, Any]) -> Trace:
        driver = self._drivers.get(request["contract"])
        if driver is None:
            raise Unsupported(
                f"{self._info.name} does not implement the {request['contract']} contract"
            )
        flight = _Flight()
        with self._lock:
            self._running.add(flight)
        box: dict[str, Trace] = {}

        async def cancellable() -> None:
            with anyio.CancelScope() as scope:
                with self._lock:
                    flight.loop = (anyio.lowlevel.current_token(), scope)
                    if flight.cancelled:  # close() came before the loop had started
                        scope.cancel()
                box["trace"] = await driver.perform(request)

        try:
            anyio.run(cancellable, backend=self._backend)
        except BaseException as error:
            sole = _sole_error(error)
            if sole is error:
                raise
            raise sole from error
        finally:
            with self._lock:
                self._running.discard(flight)
            flight.ended.set()
        if "trace" not in box:  # the scope was cancelled by close()
            raise ImplementationError(
                f"scenario {request.get('id', '?')} was cancelled: the adapter was closed"
            )
        return box["trace"]

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
        """Cancel the scenarios in flight and wait (briefly) until they have unwound.

        Drivers hold no state between scenarios, so there is nothing else to release,
        and the adapter can still run scenarios afterwards. This is what ends a run's
        child processes and temporary folders on Ctrl-C: the interrupted scenario runs
        its ``finally`` blocks instead of being abandoned.
        """
        with self._lock:
            running = list(self._running)
            for flight in running:
                flight.cancelled = True
                if flight.loop is not None:
                    # From a helper thread: a loop blocked by synchronous code would
                    # block this call too, and close() must return within its grace.
                    threading.Thread(target=_cancel, args=flight.loop, daemon=True).start()
        deadline = time.monotonic() + CANCEL_GRACE
        for flight in running:
            flight.ended.wait(max(0.0, deadline - time.monotonic()))


class _Flight:
    """One ``run`` in progress: how to cancel it from another thread, and its end."""

    def __init__(self) -> None:
        self.ended = threading.Event()
        self.cancelled = False
        self.loop: tuple[Any, anyio.CancelScope] | None = None


def _cancel(token: Any, scope: anyio.CancelScope) -> None:
    with contextlib.suppress(Exception):  # the loop may have finished meanwhile
        anyio.from_thread.run_sync(scope.cancel, token=token)


def _warm_trio_testing() -> None:
    """Import ``trio.testing`` now, outside any scenario.

    On trio, anyio's ``wait_all_tasks_blocked`` (which drivers use to settle after a step)
    imports ``trio.testing`` on its first call, and that pulls in pytest: half a second,
    several on a loaded machine, spent inside the first scenario of a run. A bound such
    as ``within: 2`` on a cancelled call then measured the import, not the
    implementation (seen on ``woc-cancel-tool-during-before-write`` run alone).
    """
    with contextlib.suppress(ImportError):
        import trio.testing  # noqa: F401 (imported for its side effect: warm)
