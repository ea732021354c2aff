"""``seamspec validate`` and ``seamspec rules``: the suite and the catalogue as data."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from seamspec.conformance import (
    catalogue,
    default_scenario_root,
    load_scenarios,
    rule_coverage,
    rules_markdown,
    validate_files,
)
from seamspec.conformance._core.catalogue import CONTRACTS

__all__ = ["add_suite_parsers"]


def add_suite_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = sub.add_parser("validate", help="check scenario files without running anything")
    validate.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="scenario files or folders (default: the suite shipped with seamspec)",
    )
    validate.set_defaults(func=cmd_validate)

    rules = sub.add_parser("rules", help="list the rules and the scenarios that cite them")
    rules.add_argument(
        "--json", action="store_true", help="print JSON: [{id, contract, level, scenarios}]"
    )
    rules.add_argument(
        "--markdown",
        action="store_true",
        help="print the docs' rules table (the docs are checked against it)",
    )
    rules.add_argument("--contract", choices=CONTRACTS, help="only this contract's rules")
    rules.add_argument(
        "--scenarios",
        action="append",
        type=Path,
        metavar="PATH",
        help="count citations in these scenario files or folders (repeatable; default: the "
        "shipped suite)",
    )
    rules.add_argument(
        "--coverage",
        action="store_true",
        help="exit 1 unless every MUST rule has a scenario citing it and a mutant breaking it",
    )
    rules.set_defaults(func=cmd_rules)


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    scenarios, problems = validate_files(args.paths or [default_scenario_root()])
    for problem in problems:
        print(str(problem), file=sys.stderr)
    if problems:
        print(
            f"{len(problems)} problem(s); {len(scenarios)} valid scenario file(s)", file=sys.stderr
        )
        return 2
    console.print(f"{len(scenarios)} scenario file(s) valid", style="green")
    return 0


def cmd_rules(args: argparse.Namespace, console: Console) -> int:
    coverage = rule_coverage(load_scenarios(args.scenarios))
    chosen = [r for r in catalogue() if not args.contract or r.contract == args.contract]
    if args.coverage:
        from seamspec._cmd_quality import coverage_problems

        problems = coverage_problems(args.contract)
        for problem in problems:
            console.print(problem, style="red", highlight=False, markup=False)
        must = sum(1 for r in chosen if r.level == "MUST")
        console.print(f"{must} MUST rule(s) checked; {len(problems)} gap(s)", highlight=False)
        return 1 if problems else 0
    if args.json:
        rows = [
            {"id": r.id, "contract": r.contract, "level": r.level, "scenarios": coverage[r.id]}
            for r in chosen
        ]
        print(json.dumps(rows, indent=2))
        return 0
    if args.markdown:
        print(rules_markdown(args.contract), end="")
        return 0
    table = Table("rule", "level", "scenarios", "text")
    for rule in chosen:
        # Texts are text, not markup: rule texts quote bracketed literals such as
        # DR-OUTCOME-TEXT's "[tool call denied] ", which rich would take for style tags.
        cited = escape(", ".join(coverage[rule.id])) if coverage[rule.id] else "[red]none[/]"
        table.add_row(escape(rule.id), escape(rule.level), cited, escape(rule.text))
    console.print(table)
    uncovered = [rule.id for rule in chosen if not coverage[rule.id]]
    if uncovered:
        console.print(
            f"rules cited by no scenario: {', '.join(uncovered)}", style="red", markup=False
        )
    return 0
