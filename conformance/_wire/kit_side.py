"""The kit's own part of a scenario over the wire, for contracts that have one.

Some verdicts need evidence the kit gathers itself rather than takes from the trace: for
the dispatch recorder's signed journal, the kit hands the implementation a key and a path
(``run.request.resources``, protocol 2), then reads the file itself, tampers with it and
asks the implementation's verifier about it (``query`` messages). A contract opts in with
an optional ``kit_side`` module in its room, found through the registry like every other
room part, so the wire code names no contract.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from seamspec.conformance._core.adapter import Trace
from seamspec.conformance._core.registry import room

__all__ = ["Ask", "KitSide", "KitSides"]

#: Sends one query (name, body) to the implementation and returns its answer.
Ask = Callable[[str, dict[str, Any]], Mapping[str, Any]]


class KitSide(Protocol):
    """One scenario's kit side: what the implementation gets, and what the kit adds."""

    @property
    def request(self) -> Mapping[str, Any]:
        """The request to send (``when`` without the kit's steps, plus ``resources``)."""
        ...

    def finish(self, trace: Trace, ask: Ask) -> Trace:
        """The trace with the kit's own events added, once the implementation is done."""
        ...


class KitSides:
    """Opens the kit side of each scenario, in a folder of its own removed afterwards."""

    @contextlib.contextmanager
    def open(self, request: Mapping[str, Any], protocol: int) -> Iterator[KitSide | None]:
        """The scenario's kit side (None if its contract has none or needs none).

        Raises :class:`~seamspec.conformance.Unsupported` when the scenario needs a newer
        protocol than the implementation speaks.
        """
        try:
            module = room(str(request.get("contract"))).optional_module("kit_side")
        except KeyError:
            module = None
        if module is None:
            yield None
            return
        with tempfile.TemporaryDirectory(prefix="seamspec-kit-") as folder:
            side: KitSide | None = module.open_session(request, Path(folder), protocol)
            yield side
