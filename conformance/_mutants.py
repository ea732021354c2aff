"""The catalogue of deliberately broken implementations, across every contract.

Each contract keeps its mutants in its own module (``_woc_mutants``, ``_soo_mutants``,
``_dr_mutants``), exposing ``MUTANTS: dict[str, <mutant>]`` (each with ``name``, ``rule``
and ``statement``) and ``mutant_adapter(name, backend)``. This module only gathers them,
so adding a contract's mutants never touches another contract's file.
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType
from typing import Any

from ._python_adapter import PythonAdapter

__all__ = ["all_mutants", "mutant_adapter"]

_MODULES = ("_woc_mutants", "_soo_mutants", "_dr_mutants")


@cache
def _modules() -> tuple[ModuleType, ...]:
    found = []
    for name in _MODULES:
        try:
            found.append(importlib.import_module(f"{__package__}.{name}"))
        except ModuleNotFoundError as error:
            if error.name != f"{__package__}.{name}":
                raise
    return tuple(found)


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
    for module in _modules():
        if name in module.MUTANTS:
            adapter: PythonAdapter = module.mutant_adapter(name, backend)
            return adapter
    raise KeyError(name)
