"""The one interface between the kit and an implementation under test.

An adapter receives a scenario *without* its expectations (``given`` and ``when`` as
plain data), performs it with the implementation's own code, and returns a trace: a list
of JSON-ready events. The kit judges the trace; the adapter never learns what was
expected, so it cannot be written to the test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Adapter", "ImplementationInfo", "LateError", "Trace"]

Trace = list[dict[str, Any]]


@dataclass(frozen=True)
class ImplementationInfo:
    """What an implementation says about itself; reports carry it."""

    name: str
    language: str
    version: str
    contracts: tuple[str, ...]
    features: tuple[str, ...] = ()
    details: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "language": self.language,
            "version": self.version,
            "contracts": list(self.contracts),
            "features": list(self.features),
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class LateError:
    """Something wrong with a scenario that came to light after its result was given.

    An implementation behind a process boundary can answer a scenario twice, or write
    more after its answer; the kit sees that only later, while it runs the next scenario
    or stops the process. An adapter that can tell offers ``take_late_errors()`` (returning
    these, once each); the Runner then turns the scenario named here into an ``error``.
    """

    scenario: str
    message: str
    context: str = ""


@runtime_checkable
class Adapter(Protocol):
    """Implement these two methods (and ``close``) to put an implementation under test.

    ``run`` is called once per scenario, from a worker thread, with the scenario's
    ``{"id", "contract", "given", "when"}``. Return the trace, or raise
    :class:`~seamspec.conformance.Unsupported` to skip. Any other exception, or a trace
    that breaks the trace schema, makes the scenario an ``error``.
    """

    def info(self) -> ImplementationInfo: ...

    def run(self, request: Mapping[str, Any]) -> Trace: ...

    def close(self) -> None: ...
