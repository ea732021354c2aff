"""seamspec: a reference specification and conformance kit for the interception seams of
AI coding-agent tool harnesses (write-observer chain, shell-output observer, dispatch
recorder).

Public surfaces: :mod:`seamspec.reference` (the reference implementation) and
:mod:`seamspec.conformance` (scenarios, adapters, oracles, runner, reports).
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed metadata when first asked for.

    Lazily, because importing this package is the first thing the ``seamspec`` command
    does, before its Ctrl-C handling is in place (seamspec/_entry.py): the less it
    costs, the smaller the moment in which a Ctrl-C can still print a traceback.
    """
    if name != "__version__":
        raise AttributeError(f"module 'seamspec' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("seamspec")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found
