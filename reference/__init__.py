"""seamspec's reference implementation of the interception seams it specifies.

The reference is small, readable code that passes the kit's own scenarios: the write tools
with their single observer seam, the observer chain, and the checkpoint, formatter and
diagnostics observers that the canonical chain is built from, plus the tiny child programs
that scenarios run. It exists so that every rule in the catalogue is backed by code that
demonstrably satisfies it, and so implementers have something concrete to compare with;
it is not meant to be the fastest or most featureful implementation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._checkpoint import CheckpointObserver
from ._diagnostics import DiagnosticsObserver
from ._formatter import FormatterObserver
from ._write_observer import (
    ANNOTATION_SEPARATOR,
    ObserverFailure,
    ObserverFailureWarning,
    WriteObserver,
    WriteObserverChain,
)
from ._write_path import ToolResult, WriteTools

if TYPE_CHECKING:
    from ._stubs import STUB_PROGRAMS, stub_command

__all__ = [
    "ANNOTATION_SEPARATOR",
    "STUB_PROGRAMS",
    "CheckpointObserver",
    "DiagnosticsObserver",
    "FormatterObserver",
    "ObserverFailure",
    "ObserverFailureWarning",
    "ToolResult",
    "WriteObserver",
    "WriteObserverChain",
    "WriteTools",
    "stub_command",
]

_LAZY = frozenset({"STUB_PROGRAMS", "stub_command"})


def __getattr__(name: str) -> Any:
    # ``_stubs`` is imported on first use only: ``python -m seamspec.reference._stubs``
    # imports this package first, and a package that had already imported the module
    # makes runpy print a RuntimeWarning on the stub's stderr.
    if name in _LAZY:
        from . import _stubs

        return getattr(_stubs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
