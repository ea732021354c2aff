"""The ``seamspec`` command line.

Exit codes a CI can trust: 0 every MUST scenario passed; 1 a conformance failure or an
implementation error; 2 a usage error or a malformed scenario file (nothing was run).
Each command lives in its own module; this one only builds the parser and maps the
kit's exceptions to exit codes and messages.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console

from seamspec import __version__
from seamspec._cmd_explain import add_explain_parser
from seamspec._cmd_quality import add_quality_parsers
from seamspec._cmd_report import add_report_parsers
from seamspec._cmd_run import add_run_parser
from seamspec._cmd_suite import add_suite_parsers
from seamspec._journal_cli import add_journal_parser
from seamspec._wire_cli import add_commands as add_wire_parsers
from seamspec.conformance import AdapterLoadError, ScenarioError

EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seamspec",
        description="Conformance kit for the interception seams of AI coding-agent tool harnesses.",
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # CI logs are not terminals: give tables room instead of rich's 80-column default.
    width = None if sys.stdout.isatty() else 160
    console = Console(highlight=False, soft_wrap=True, width=width)
    errors = Console(stderr=True, highlight=False)
    try:
        code: int = args.func(args, console)
        return code
    except ScenarioError as error:
        for problem in error.problems:
            print(str(problem), file=sys.stderr)
        errors.print(
            f"{len(error.problems)} problem(s) in scenario files; nothing was run. "
            "Fix them, then check with `seamspec validate`.",
            style="red",
        )
        return EXIT_USAGE
    except AdapterLoadError as error:
        errors.print(f"error: {error}", style="red", markup=False)
        return EXIT_USAGE
    except KeyboardInterrupt:
        errors.print("interrupted", style="red")
        return 130
