"""The ``seamspec`` command line.

Exit codes a CI can trust: 0 every MUST scenario passed; 1 a conformance failure or an
implementation error; 2 a usage error or a malformed scenario file (nothing was run).
Each command lives in its own module; this one only builds the parser and maps the
kit's exceptions to exit codes and messages.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rich.console import Console

from seamspec import __version__
from seamspec._cmd_explain import add_explain_parser
from seamspec._cmd_quality import add_quality_parsers
from seamspec._cmd_report import add_report_parsers
from seamspec._cmd_run import add_run_parser
from seamspec._cmd_schema import add_schema_parsers
from seamspec._cmd_suite import add_suite_parsers
from seamspec._journal_cli import add_journal_parser
from seamspec._output import EXIT_CODES, Parser, error
from seamspec._wire_cli import add_commands as add_wire_parsers
from seamspec.conformance import AdapterLoadError, ScenarioError

EXIT_USAGE = 2


def _with_exit_codes(parser: argparse.ArgumentParser, command: str | None = None) -> None:
    """End every command's ``--help`` with its exit codes (and its subcommands' too)."""
    if command is not None and command in EXIT_CODES:
        parser.epilog = f"exit codes: {EXIT_CODES[command]}"
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                _with_exit_codes(child, command or name)


def _parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = Parser(
        prog="seamspec",
        description="Conformance kit for the interception seams of AI coding-agent tool harnesses.",
        epilog="exit codes (every command): 0 success; 1 the thing checked is wrong "
        "(a conformance failure, a surviving mutant, an invalid journal); 2 a usage error "
        "or a malformed input, and nothing was judged. `seamspec COMMAND --help` has details.",
    )
    parser.add_argument("--version", action="version", version=f"seamspec {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_run_parser(sub)
    add_suite_parsers(sub)
    add_report_parsers(sub)
    add_explain_parser(sub)
    add_quality_parsers(sub)
    add_wire_parsers(sub)
    add_journal_parser(sub)
    add_schema_parsers(sub)
    _with_exit_codes(parser)
    return parser


class _Console(Console):
    """rich's Console, leaving a closed stdout to :func:`main` (rich would exit 1: the code
    for "the thing checked is wrong")."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # CI logs are not terminals: give tables room instead of rich's 80-column default.
    width = None if sys.stdout.isatty() else 160
    console = _Console(highlight=False, soft_wrap=True, width=width)
    try:
        code: int = args.func(args, console)
        return code
    except ScenarioError as problem:
        for each in problem.problems:
            error(each, prefix="")
        error(
            f"{len(problem.problems)} problem(s) in scenario files; nothing was run. "
            "Fix them, then check with `seamspec validate`."
        )
        return EXIT_USAGE
    except AdapterLoadError as problem:
        error(problem)
        return EXIT_USAGE
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except BrokenPipeError:
        return _reader_gone()


#: The shell's status for a process ended by SIGPIPE (128 + 13), as `yes | head` gives.
EXIT_PIPE = 141


def _reader_gone() -> int:
    """The reader of stdout went away (``seamspec rules --json | head -1``): stop quietly.

    stdout is pointed at /dev/null so that the interpreter's last flush of the buffered
    bytes nobody reads cannot raise again on the way out.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (an embedding caller)
        pass
    return EXIT_PIPE
