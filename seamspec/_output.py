"""How the command line talks: one error per line on stderr, and argparse made helpful.

Errors are read in CI logs and grepped, so each one is a single line however long
(rich would wrap it at 80 columns when stderr is not a terminal). argparse is taught
three things it does not do by itself: suggest the closest valid value for a choice,
state every option's default in ``--help``, and end ``--help`` with the exit codes.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

from seamspec.conformance._core.suggest import did_you_mean

__all__ = [
    "EXIT_CODES",
    "MAX_JOBS",
    "HelpFormatter",
    "Parser",
    "command_line",
    "count",
    "error",
    "one_line",
    "output_problems",
    "seconds",
]

#: What each command's exit codes mean, printed at the end of its ``--help``.
EXIT_CODES: dict[str, str] = {
    "run": "0 every MUST scenario passed; 1 a conformance failure, an implementation "
    "error, or nothing judged; 2 a usage error or a malformed scenario file (nothing ran)",
    "validate": "0 every file is valid; 2 a problem in a file, or a usage error",
    "rules": "0 done (with --coverage: no gap); 1 --coverage found a gap; 2 a usage error",
    "report": "0 written; 2 a report that cannot be read, or a usage error",
    "diff": "0 nothing newly failing; 1 something newly failing; 2 a usage error",
    "explain": "0 explained; 2 no such rule or scenario, or a usage error",
    "mutants": "0 every mutant killed for the right reason; 1 a survivor; 2 a usage error",
    "fuzz": "0 every fuzzed contract passed (warnings and recommendations are only "
    "reported, as by run); 1 a failure or an implementation error, or nothing was fuzzed; "
    "2 a usage error, or a command that does not start an implementation",
    "schema": "0 written (with --check: up to date); 1 --check found a stale or missing "
    "file; 2 a usage error or a scenario file whose contract cannot be read",
    "new": "0 the skeleton was written; 2 a bad ID, an existing file, or a usage error",
    "serve-reference": "0 stopped cleanly; 130 interrupted",
    "smoke": "0 every check passed; 1 a check failed; 2 a usage error",
    "journal": "0 valid (or done); 1 invalid or tampered with; 2 a usage error or an "
    "input that cannot be read",
}


def one_line(message: object) -> str:
    """``message`` with its line breaks folded, so that one error is one line."""
    parts = [part.strip() for part in str(message).splitlines()]
    return "; ".join(part for part in parts if part)


def error(message: object, *, prefix: str = "error: ") -> None:
    """Print one error line on stderr, never wrapped."""
    print(prefix + one_line(message), file=sys.stderr, flush=True)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's layout and appends ``(default: X)`` where help does not say it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            default not in (None, False, argparse.SUPPRESS)
            and "default" not in text
            and not isinstance(action, argparse._HelpAction | argparse._VersionAction)
            and (action.option_strings or action.nargs in ("?", "*"))
        ):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """argparse with "did you mean" for choices and one-line usage errors (exit 2)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            names = [str(c) for c in choices]
            hint = did_you_mean(str(value), names)
            message = f"invalid choice: {value!r}" + (f"; {hint}" if hint else "")
            message += f" (choose from {', '.join(names)})"
            raise argparse.ArgumentError(action, message)

    def error(self, message: str) -> NoReturn:
        error(f"{self.prog}: {message} (see `{self.prog} --help`)", prefix="")
        self.exit(2)


def count(minimum: int, maximum: int | None = None, zero: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number from ``minimum`` (to ``maximum``).

    ``zero`` says what 0 means when it is allowed with a meaning of its own ("one per
    CPU"), so the message for a wrong value says it too.
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum or (maximum is not None and value > maximum):
            allowed = (
                f"from {minimum} to {maximum}" if maximum is not None else f"{minimum} or more"
            )
            raise argparse.ArgumentTypeError(
                f"{value} is out of range: give {allowed}" + (f" (0: {zero})" if zero else "")
            )
        return value

    parse.__name__ = "count"
    return parse


#: The most worker processes ``-j`` starts: each one runs its own implementation, and
#: more than this only compete for the same CPUs.
MAX_JOBS = 256

#: The longest time limit accepted: a day. Longer ones overflow the clocks' waits.
MAX_SECONDS = 86_400.0


def seconds(text: str) -> float:
    """An argparse type: a time limit, a finite number of seconds above 0, at most a day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text} is out of range: give a number of seconds above 0 and at most "
            f"{MAX_SECONDS:g} (a day)"
        )
    return value


def command_line(text: str) -> str:
    """An argparse type: a command line that splits into words as a POSIX shell would."""
    try:
        shlex.split(text)
    except ValueError as problem:
        raise argparse.ArgumentTypeError(
            f"cannot split {text!r} into words ({str(problem).lower()}): quote it as a "
            "POSIX shell would"
        ) from None
    return text  # an empty one is refused where the command is started, with its own hint


def _unwritable(path: Path, *, folder: bool) -> str | None:
    """Why nothing can be written at ``path``, or None. Nothing is created to find out."""
    if path.is_dir() and not folder:
        return "is a folder; name a file"
    if path.exists() and folder and not path.is_dir():
        return "is a file; name a folder"
    if path.exists():
        return None if os.access(path, os.W_OK) else "is not writable"
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"cannot be created: {ancestor} is not a folder"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"cannot be created: {ancestor} is not writable"
    return None


def output_problems(
    outputs: Iterable[tuple[str, Path | None]], *, folders: bool = False
) -> list[str]:
    """One line per output option whose path cannot be written, checked before any work.

    A run that takes minutes must not end with "Is a directory" and no report; each
    ``(option, path)`` is checked as a file (as a folder with ``folders``).
    """
    found = []
    for option, path in outputs:
        if path is not None:
            why = _unwritable(path, folder=folders)
            if why:
                found.append(f"{option} {path}: {why}")
    return found
