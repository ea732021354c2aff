"""The implementations the kit ships, and loading any implementation by name.

``--impl`` accepts the reference on either backend, one of the kit's mutants, or any
``package.module:attribute``. The reference adapter is assembled from each contract
room's ``reference_adapter.reference_driver()``, so it covers every registered contract
without naming one.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from types import ModuleType

from seamspec import __version__
from seamspec.conformance._core.adapter import Adapter, ImplementationInfo
from seamspec.conformance._core.errors import AdapterLoadError
from seamspec.conformance._core.python_adapter import ContractDriver, PythonAdapter
from seamspec.conformance._core.registry import rooms
from seamspec.conformance._core.suggest import did_you_mean
from seamspec.conformance._quality.mutants import all_mutants, mutant_adapter

__all__ = [
    "BUILTIN_ADAPTERS",
    "asyncio_adapter",
    "implementation_info",
    "load_adapter",
    "reference_adapter",
    "reference_drivers",
    "trio_adapter",
]


def reference_drivers() -> list[ContractDriver]:
    """One reference driver per registered contract, in the registry's order."""
    return [room.module("reference_adapter").reference_driver() for room in rooms()]


def reference_adapter(backend: str = "asyncio") -> PythonAdapter:
    return PythonAdapter(
        name=f"seamspec-reference-{backend}",
        version=__version__,
        drivers=reference_drivers(),
        backend=backend,
        concurrent=True,
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


#: Short names for the implementations shipped with the kit.
BUILTIN_ADAPTERS = {
    "reference": f"{__name__}:asyncio_adapter",
    "reference-asyncio": f"{__name__}:asyncio_adapter",
    "reference-trio": f"{__name__}:trio_adapter",
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


def _where(error: BaseException) -> str:
    """`` (at FILE:LINE)``: the innermost frame of the traceback, where the user's code failed."""
    frames = traceback.extract_tb(error.__traceback__)
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def implementation_info(adapter: Adapter, name: str) -> ImplementationInfo:
    """``adapter.info()``, or :class:`AdapterLoadError` saying what went wrong in it.

    Without its info the kit cannot tell what the implementation declares, so nothing can
    be judged: a usage error (exit 2), not a conformance failure.
    """
    try:
        info = adapter.info()
    except (AdapterLoadError, KeyboardInterrupt):
        raise
    except (Exception, SystemExit) as error:
        raise AdapterLoadError(
            f"{name}: the adapter's info() raised {type(error).__name__}: {error}{_where(error)}"
        ) from error
    if not isinstance(info, ImplementationInfo):
        raise AdapterLoadError(
            f"{name}: the adapter's info() returned a {type(info).__name__}, "
            "not an ImplementationInfo"
        )
    return info


def load_adapter(spec: str) -> Adapter:
    """Load ``reference``, ``reference-trio``, ``mutant:NAME`` or ``package.module:attribute``.

    The attribute may be an adapter, or a class or function that takes no arguments and
    returns one. ``mutant:NAME`` is one of the kit's deliberately broken chains, so anyone
    can watch the suite catch it.
    """
    if spec.startswith("mutant:"):
        name = spec.removeprefix("mutant:")
        if name not in all_mutants():
            guess = did_you_mean(name, all_mutants())
            raise AdapterLoadError(
                f"--impl {spec!r}: no such mutant"
                + (f"; {guess}" if guess else "")
                + f" (known: {', '.join(sorted(all_mutants()))})"
            )
        return mutant_adapter(name)
    target = BUILTIN_ADAPTERS.get(spec, spec)
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        guess = did_you_mean(spec, BUILTIN_ADAPTERS)
        raise AdapterLoadError(
            f"--impl {spec!r} is neither a built-in name ({', '.join(sorted(BUILTIN_ADAPTERS))}) "
            "nor of the form package.module:attribute" + (f"; {guess}" if guess else "")
        )
    try:
        module = _import_module(module_name)
    except ImportError as error:
        raise AdapterLoadError(
            f"--impl {spec!r}: cannot import module {module_name!r}: {error}\n"
            "  hint: install your package in the same environment as seamspec, or run from "
            "the folder that contains it"
        ) from error
    except (Exception, SystemExit) as error:  # the module's own code failed as it ran
        raise AdapterLoadError(
            f"--impl {spec!r}: importing module {module_name!r} raised "
            f"{type(error).__name__}: {error}{_where(error)}"
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
        except (Exception, SystemExit) as error:
            raise AdapterLoadError(
                f"--impl {spec!r}: calling {attribute}() to build the adapter failed: "
                f"{error!r}{_where(error)}"
            ) from error
    if not isinstance(obj, Adapter):
        raise AdapterLoadError(
            f"--impl {spec!r}: {type(obj).__name__} is not an adapter: "
            "it needs info(), run(request) and close()"
        )
    return obj
