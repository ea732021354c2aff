"""The one list of contracts the kit knows, and how the core reaches into a contract's room.

A contract is a folder under ``seamspec.conformance._contracts`` holding the same parts
in each: ``catalogue.yaml`` (rules and optional features), ``schema.json`` (its scenario
vocabulary), and the modules ``model`` (``lint``), ``oracle`` and ``expect`` (``check``),
``driver``, ``reference_adapter`` (``reference_driver()``), ``mutants``, ``strategies``
(``scenarios()``) and optionally ``timeline`` (``render``) and ``waits``
(``expected_wait``). The loader, runner, reports
and quality tools find those parts through :func:`rooms` only, so this table is the one
place in the core that names a contract: adding a contract is adding its folders and one
line here.

Rooms are imported lazily by module name: validating scenario files must not import a
contract's driver (which pulls in the reference) or its strategies (which need the
optional ``hypothesis``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.abc import Traversable
from types import ModuleType
from typing import Any

__all__ = [
    "CONTRACTS",
    "ContractJudge",
    "ContractRoom",
    "contract_caveats",
    "contract_judges",
    "contract_linters",
    "contract_waits",
    "room",
    "rooms",
]

#: contract name -> the package of its room, in the order the kit presents contracts.
_ROOMS: dict[str, str] = {
    "write-observer-chain": "seamspec.conformance._contracts.write_observer_chain",
    "shell-output": "seamspec.conformance._contracts.shell_output",
    "dispatch-recorder": "seamspec.conformance._contracts.dispatch_recorder",
}

#: Contract names in the order the kit presents them.
CONTRACTS: tuple[str, ...] = tuple(_ROOMS)

Linter = Callable[[dict[str, Any]], list[tuple[tuple[str | int, ...], str]]]
# (scenario request incl. given/when, then, trace) -> list of (rule_id or "", message)
ContractJudge = Callable[
    [dict[str, Any], dict[str, Any], list[dict[str, Any]]], list[tuple[str, str]]
]


@dataclass(frozen=True)
class ContractRoom:
    """One contract's folder: its data files and its modules, loaded on first use."""

    name: str
    package: str

    def module(self, part: str) -> ModuleType:
        """The room's module ``part`` (``"oracle"``, ``"driver"``, ...), imported now."""
        return importlib.import_module(f"{self.package}.{part}")

    def optional_module(self, part: str) -> ModuleType | None:
        """Like :meth:`module`, or None when the room has no such module."""
        name = f"{self.package}.{part}"
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name != name:
                raise  # the module exists but one of its own imports is missing
            return None

    def data_file(self, name: str) -> Traversable:
        """A data file shipped in the room (``catalogue.yaml``, ``schema.json``)."""
        return resources.files(self.package).joinpath(name)


@cache
def rooms() -> tuple[ContractRoom, ...]:
    return tuple(ContractRoom(name, package) for name, package in _ROOMS.items())


def room(contract: str) -> ContractRoom:
    """The room of ``contract``; KeyError for a name the kit does not know."""
    return ContractRoom(contract, _ROOMS[contract])


@cache
def contract_linters() -> dict[str, Linter]:
    """contract -> its cross-reference checker for scenario files (``model.lint``)."""
    return {r.name: r.module("model").lint for r in rooms()}


@cache
def contract_caveats() -> dict[str, ContractJudge]:
    """contract -> its oracle's ``caveats`` (rules a trace was judged on by the
    implementation's word alone), for the rooms whose oracle has one."""
    found = {r.name: getattr(r.module("oracle"), "caveats", None) for r in rooms()}
    return {name: judge for name, judge in found.items() if judge is not None}


@cache
def contract_judges() -> dict[str, tuple[ContractJudge, ContractJudge]]:
    """contract -> (oracle over universal rules, judge of the scenario's own ``then``)."""
    return {r.name: (r.module("oracle").check, r.module("expect").check) for r in rooms()}


#: (given, when) -> seconds a correct implementation deliberately waits (its limits).
WaitEstimate = Callable[[dict[str, Any], list[Any]], float]


@cache
def contract_waits() -> dict[str, WaitEstimate]:
    """contract -> how long its scenarios deliberately wait (``waits.expected_wait``).

    Only for ordering: the scenarios that wait longest start first. A room without a
    ``waits`` module has none listed, and its scenarios count as not waiting.
    """
    found = {r.name: r.optional_module("waits") for r in rooms()}
    return {name: module.expected_wait for name, module in found.items() if module is not None}
