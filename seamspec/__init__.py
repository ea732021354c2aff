"""seamspec: a reference specification and conformance kit for the interception seams of
AI coding-agent tool harnesses (write-observer chain, shell-output observer, dispatch
recorder).

Public surfaces: :mod:`seamspec.reference` (the reference implementation) and
:mod:`seamspec.conformance` (scenarios, adapters, oracles, runner, reports).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("seamspec")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
