"""One root exception for the kit, with subclasses that also inherit the matching built-in.

Every message says which step failed and what to do about it, because the people who
read them are adapter authors looking at a red CI run, not the kit's developers.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AdapterLoadError",
    "CatalogueError",
    "ImplementationError",
    "Problem",
    "ScenarioError",
    "SeamspecError",
    "Unsupported",
]


class SeamspecError(Exception):
    """Root of every error the kit raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one scenario file, located for a person to fix."""

    file: str
    line: int | None
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        text = f"{where}: {self.message}"
        # One line per problem: editors, CI annotations and grep read file:line: text,
        # so a line break quoted from a file (an ID, a key) is shown escaped.
        return _one_line(f"{text} (hint: {self.hint})" if self.hint else text)


#: Control characters and Unicode line breaks, shown as escapes in a one-line problem.
_BREAKS = {c: repr(chr(c))[1:-1] for c in (*range(0x20), 0x7F, 0x85, 0x2028, 0x2029)}
_BREAKS[ord("\t")] = "\t"


def _one_line(text: str) -> str:
    return text.translate(_BREAKS)


class ScenarioError(SeamspecError, ValueError):
    """One or more scenario files are malformed; nothing was run.

    The message lists every problem found, each with file and line. Likely causes: a
    typo in a key, a rule ID that is not in the catalogue, a scenario ID used twice, or
    YAML indentation. Run ``seamspec validate PATH`` to see them all without running.
    """

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = [f"{len(problems)} problem(s) in scenario files:"]
        lines += [f"  {p}" for p in problems]
        super().__init__("\n".join(lines))


class CatalogueError(SeamspecError, ValueError):
    """The rule catalogue shipped with the kit is malformed (a bug in the kit itself)."""


class AdapterLoadError(SeamspecError, ImportError):
    """``--impl`` named something that could not be loaded as an adapter.

    Likely causes: a misspelt ``module:attribute``, the module not importable from the
    current environment (is your package installed in the same venv as seamspec?), or an
    attribute that is neither an adapter nor a zero-argument factory returning one.
    """


class ImplementationError(SeamspecError, RuntimeError):
    """The implementation under test crashed, hung, or returned something that is not a
    trace. The scenario's status is ``error``: no verdict on the rules could be reached.
    """

    def __init__(self, message: str, *, context: str = "") -> None:
        self.context = context
        super().__init__(f"{message}\n{context}" if context else message)


class Unsupported(SeamspecError, NotImplementedError):
    """Raised by an adapter for a scenario it does not support; reported as a skip."""
