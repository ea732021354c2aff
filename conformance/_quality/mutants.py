"""The catalogue of deliberately broken implementations, across every contract.

Each contract room keeps its mutants in its own ``mutants`` module, exposing
``MUTANTS: dict[str, <mutant>]`` (each with ``name``, ``rule`` and ``statement``) and
``mutant_adapter(name, backend)``. This module only gathers them, so adding a contract's
mutants never touches another contract's file.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import Any

from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.conformance._core.registry import rooms

__all__ = ["all_mutants", "mutant_adapter"]


@cache
def _modules() -> tuple[ModuleType, ...]:
    found = (room.optional_module("mutants") for room in rooms())
    return tuple(module for module in found if module is not None)


def all_mutants() -> dict[str, Any]:
    """Every mutant of every contract, by name."""
    merged: dict[str, Any] = {}
    for module in _modules():
        for name, mutant in module.MUTANTS.items():
            if name in merged:
                raise ValueError(f"mutant name {name!r} is defined twice")
            merged[name] = mutant
    return merged


def mutant_adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    """The named mutant as an adapter whose scenarios may run side by side.

    Every room builds its mutants like its reference: fresh objects and a fresh event
    loop per scenario, nothing shared, so the kit runs them concurrently, as it does the
    reference (``concurrent_runs``).
    """
    for module in _modules():
        if name in module.MUTANTS:
            adapter: PythonAdapter = module.mutant_adapter(name, backend)
            adapter.concurrent_runs = True
            return adapter
    raise KeyError(name)
