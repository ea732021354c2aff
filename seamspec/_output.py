"""How the command line talks: one error per line on stderr, and argparse made helpful.

Errors are read in CI logs and grepped, so each one is a single line however long
(rich would wrap it at 80 columns when stderr is not a terminal). argparse is taught
three things it does not do by itself: suggest the closest valid value for a choice,
state every option's default in ``--help``, and end ``--help`` with the exit codes.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from seamspec.conformance._core.suggest import did_you_mean

__all__ = ["EXIT_CODES", "HelpFormatter", "Parser", "error", "one_line"]

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
