"""The one interface between the kit and an implementation under test.

An adapter receives a scenario *without* its expectations (``given`` and ``when`` as
plain data), performs it with the implementation's own code, and returns a trace: a list
of JSON-ready events. The kit judges the trace; the adapter never learns what was
expected, so it cannot be written to the test.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from ._errors import AdapterLoadError

__all__ = ["Adapter", "ImplementationInfo", "Trace", "load_adapter"]

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


#: Short names for the implementations shipped with the kit.
BUILTIN_ADAPTERS = {
    "reference": "seamspec.conformance._reference:asyncio_adapter",
    "reference-asyncio": "seamspec.conformance._reference:asyncio_adapter",
    "reference-trio": "seamspec.conformance._reference:trio_adapter",
}


def _import_module(name: str) -> ModuleType:
    """Import ``name``, also looking in the current folder, as ``python -m`` would.

    The ``seamspec`` console script does not put the current folder on ``sys.path``, yet
    "run from the folder that contains your adapter" is the natural way to try one. The
    folder is added only when the module's own top-level package is what was missing, so
    an adapter with a broken import of its own still reports that import.
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        here = os.getcwd()
        if error.name != name.partition(".")[0] or here in sys.path or "" in sys.path:
            raise
    sys.path.insert(0, here)
    return importlib.import_module(name)


def load_adapter(spec: str) -> Adapter:
    """Load ``reference``, ``reference-trio``, ``mutant:NAME`` or ``package.module:attribute``.

    The attribute may be an adapter, or a class or function that takes no arguments and
    returns one. ``mutant:NAME`` is one of the kit's deliberately broken chains, so anyone
    can watch the suite catch it.
    """
    if spec.startswith("mutant:"):
        from ._mutants import all_mutants, mutant_adapter

        name = spec.removeprefix("mutant:")
        if name not in all_mutants():
            raise AdapterLoadError(
                f"--impl {spec!r}: no such mutant; known: {', '.join(sorted(all_mutants()))}"
            )
        return mutant_adapter(name)
    target = BUILTIN_ADAPTERS.get(spec, spec)
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise AdapterLoadError(
            f"--impl {spec!r} is neither a built-in name ({', '.join(sorted(BUILTIN_ADAPTERS))}) "
            "nor of the form package.module:attribute"
        )
    try:
        module = _import_module(module_name)
    except ImportError as error:
        raise AdapterLoadError(
            f"--impl {spec!r}: cannot import module {module_name!r}: {error}\n"
            "  hint: install your package in the same environment as seamspec, or run from "
            "the folder that contains it"
        ) from error
    try:
        obj = getattr(module, attribute)
    except AttributeError:
        raise AdapterLoadError(
            f"--impl {spec!r}: module {module_name!r} has no attribute {attribute!r}"
        ) from None
    if not isinstance(obj, Adapter) and callable(obj):
        try:
            obj = obj()
        except AdapterLoadError:
            raise
        except Exception as error:
            raise AdapterLoadError(
                f"--impl {spec!r}: calling {attribute}() to build the adapter failed: {error!r}"
            ) from error
    if not isinstance(obj, Adapter):
        raise AdapterLoadError(
            f"--impl {spec!r}: {type(obj).__name__} is not an adapter: "
            "it needs info(), run(request) and close()"
        )
    return obj
