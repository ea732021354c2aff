"""The ``seamspec`` command line.

Exit codes a CI can trust: 0 every MUST scenario passed; 1 a conformance failure or an
implementation error; 2 a usage error or a malformed scenario file (nothing was run).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from seamspec import __version__
from seamspec.conformance import (
    AdapterLoadError,
    Runner,
    RunResult,
    Scenario,
    ScenarioError,
    ScenarioResult,
    catalogue,
    load_adapter,
    load_scenarios,
    rule_coverage,
    rules_markdown,
    summary_line,
    validate_files,
    write_json_report,
    write_junit_xml,
)
from seamspec.conformance._catalogue import CONTRACTS

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

_STYLE = {
    "pass": "green",
    "fail": "red",
    "error": "magenta",
    "skip": "yellow",
    "xfail": "cyan",
    "xpass": "red",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seamspec", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--version", action="version", version=f"seamspec {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run the conformance suite against an implementation")
    run.add_argument(
        "--impl",
        default="reference",
        metavar="X",
        help="reference (default), reference-trio, or package.module:attribute of a Python adapter",
    )
    run.add_argument(
        "--contract", action="append", choices=CONTRACTS, help="only this contract (repeatable)"
    )
    run.add_argument(
        "-k",
        dest="pattern",
        metavar="PATTERN",
        help="only scenarios whose ID, title or tags contain PATTERN (a glob if it has * or ?)",
    )
    run.add_argument(
        "--scenarios",
        action="append",
        type=Path,
        metavar="PATH",
        help="scenario files or folders (default: the suite shipped with seamspec)",
    )
    run.add_argument("--report-json", type=Path, metavar="PATH", help="write the JSON report here")
    run.add_argument("--junit-xml", type=Path, metavar="PATH", help="write JUnit XML here")
    run.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="time limit for one scenario (default 60)",
    )
    run.add_argument(
        "-x", "--fail-fast", action="store_true", help="stop at the first failure or error"
    )
    run.add_argument(
        "-q", "--quiet", action="store_true", help="print only failures and the summary"
    )

    validate = sub.add_parser("validate", help="check scenario files without running anything")
    validate.add_argument("paths", nargs="*", type=Path, metavar="PATH")

    rules = sub.add_parser("rules", help="list the rules and the scenarios that cite them")
    rules.add_argument(
        "--json", action="store_true", help="print JSON: [{id, contract, level, scenarios}]"
    )
    rules.add_argument(
        "--markdown",
        action="store_true",
        help="print the docs' rules table (the docs are checked against it)",
    )
    rules.add_argument("--contract", choices=CONTRACTS)
    rules.add_argument("--scenarios", action="append", type=Path, metavar="PATH")
    return parser


def _select(
    scenarios: list[Scenario], contracts: Sequence[str] | None, pattern: str | None
) -> list[Scenario]:
    chosen = [s for s in scenarios if not contracts or s.contract in contracts]
    if pattern:
        needle = pattern.lower()
        is_glob = any(c in pattern for c in "*?[")

        def matches(s: Scenario) -> bool:
            hay = [s.id, s.title.lower(), *s.tags]
            if is_glob:
                return any(fnmatch.fnmatch(h, needle) for h in hay)
            return any(needle in h for h in hay)

        chosen = [s for s in chosen if matches(s)]
    return chosen


def _print_result(console: Console, result: ScenarioResult, quiet: bool) -> None:
    status = result.status.upper() if not result.is_warning else "WARN"
    style = _STYLE.get(result.status, "white") if not result.is_warning else "yellow"
    if quiet and result.status in ("pass", "skip", "xfail"):
        return
    console.print(
        f"[{style}]{status:5}[/] {result.scenario.id}  [dim]{result.duration * 1000:.0f} ms[/]",
        highlight=False,
    )


def _print_problems(console: Console, result: RunResult) -> None:
    bad = [r for r in result.results if r.status in ("fail", "error", "xpass")]
    if not bad:
        return
    console.rule("problems")
    for r in bad:
        label = "warning (SHOULD)" if r.is_warning else r.status
        console.print(
            f"[bold]{r.scenario.id}[/] ({label}) rules {', '.join(r.scenario.rules)}",
            highlight=False,
        )
        console.print(f"  [dim]{r.scenario.source}[/]", highlight=False)
        for line in r.detail.splitlines() or ["(no detail)"]:
            console.print(f"  {line}", highlight=False, markup=False)


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    scenarios = load_scenarios(args.scenarios)
    chosen = _select(scenarios, args.contract, args.pattern)
    if not chosen:
        console.print("no scenario matches the selection (check --contract and -k)", style="red")
        return EXIT_USAGE
    adapter = load_adapter(args.impl)
    try:
        info = adapter.info()
        console.print(
            f"seamspec {__version__}: {len(chosen)} scenarios against {info.name} {info.version} "
            f"({info.language}; contracts: {', '.join(info.contracts) or 'none'})",
            highlight=False,
        )
        runner = Runner(
            adapter, timeout=args.timeout, on_result=lambda r: _print_result(console, r, args.quiet)
        )
        result = runner.run(
            chosen,
            stop=(lambda r: (r.status in ("fail", "error") and r.is_failure) or r.status == "error")
            if args.fail_fast
            else None,
        )
    finally:
        adapter.close()
    _print_problems(console, result)
    if args.report_json or args.junit_xml:
        report_path = args.report_json
        if report_path:
            report = write_json_report(result, report_path)
            console.print(f"JSON report: {report_path}", highlight=False)
        else:
            from seamspec.conformance import to_json_report

            report = to_json_report(result)
        if args.junit_xml:
            write_junit_xml(report, args.junit_xml)
            console.print(f"JUnit XML: {args.junit_xml}", highlight=False)
    summary = result.summary()
    if summary["warnings"]:
        console.print(
            f"{summary['warnings']} SHOULD-level warning(s): reported, not counted as failures",
            style="yellow",
        )
    verdict = "CONFORMS" if result.ok else "DOES NOT CONFORM"
    console.print(
        f"verdict: {info.name} {verdict} ({result.duration:.1f} s)",
        style="green" if result.ok else "red",
        highlight=False,
    )
    # The closing line is plain text so that CI log readers can parse it.
    print(summary_line(summary), flush=True)
    return EXIT_OK if result.ok else EXIT_FAILED


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from seamspec.conformance import default_scenario_root

    scenarios, problems = validate_files(args.paths or [default_scenario_root()])
    for problem in problems:
        print(str(problem), file=sys.stderr)
    if problems:
        print(
            f"{len(problems)} problem(s); {len(scenarios)} valid scenario file(s)", file=sys.stderr
        )
        return EXIT_USAGE
    console.print(f"{len(scenarios)} scenario file(s) valid", style="green")
    return EXIT_OK


def cmd_rules(args: argparse.Namespace, console: Console) -> int:
    scenarios = load_scenarios(args.scenarios)
    coverage = rule_coverage(scenarios)
    chosen = [r for r in catalogue() if not args.contract or r.contract == args.contract]
    if args.json:
        rows = [
            {"id": r.id, "contract": r.contract, "level": r.level, "scenarios": coverage[r.id]}
            for r in chosen
        ]
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if args.markdown:
        print(rules_markdown(args.contract), end="")
        return EXIT_OK
    from rich.table import Table

    table = Table("rule", "level", "scenarios", "text")
    for rule in chosen:
        cited = ", ".join(coverage[rule.id]) if coverage[rule.id] else "[red]none[/]"
        table.add_row(rule.id, rule.level, cited, rule.text)
    console.print(table)
    uncovered = [rule.id for rule in chosen if not coverage[rule.id]]
    if uncovered:
        console.print(f"rules cited by no scenario: {', '.join(uncovered)}", style="red")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console(stderr=False, highlight=False)
    errors = Console(stderr=True, highlight=False)
    try:
        if args.command == "run":
            return cmd_run(args, console)
        if args.command == "validate":
            return cmd_validate(args, console)
        return cmd_rules(args, console)
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
