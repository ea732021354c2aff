"""``seamspec mutants`` and ``seamspec rules --coverage``: proof that the suite catches bugs.

``seamspec fuzz`` is registered here too, next to them; it lives in ``_cmd_fuzz.py``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from rich.console import Console
from rich.table import Table

from seamspec._cmd_fuzz import add_fuzz_parser
from seamspec._output import MAX_JOBS, count, error, output_problems
from seamspec._progress import Counter
from seamspec.conformance import catalogue, load_scenarios, rule_coverage
from seamspec.conformance._core.catalogue import CONTRACTS
from seamspec.conformance._core.suggest import did_you_mean
from seamspec.conformance._quality.kill_matrix import (
    SIDE_BY_SIDE,
    MutantOutcome,
    kill_matrix,
    mutant_names,
)
from seamspec.conformance._quality.mutants import all_mutants

__all__ = ["add_quality_parsers", "coverage_problems"]


def add_quality_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mutants = sub.add_parser("mutants", help="run the suite against every broken implementation")
    mutants.add_argument(
        "--contract", action="append", choices=CONTRACTS, help="only this contract's mutants"
    )
    mutants.add_argument(
        "--report-json", type=Path, metavar="PATH", help="write the kill matrix as JSON"
    )
    mutants.add_argument(
        "--mutant",
        action="append",
        metavar="NAME",
        help="only this mutant (repeatable; `seamspec run --impl mutant:NAME` shows it fail)",
    )
    mutants.add_argument(
        "-j",
        "--jobs",
        type=count(0, MAX_JOBS, zero="one per CPU"),
        default=SIDE_BY_SIDE,
        metavar="N",
        help=f"mutants judged at once, in threads (default {SIDE_BY_SIDE}; 0: one per CPU)",
    )
    mutants.set_defaults(func=cmd_mutants)

    add_fuzz_parser(sub)


def coverage_problems(contract: str | None = None) -> list[str]:
    """Every MUST rule needs a scenario citing it and a mutant that breaks it."""
    cited = rule_coverage(load_scenarios())
    broken_by = {m.rule for m in all_mutants().values()}
    problems = []
    for rule in catalogue():
        if rule.level != "MUST" or (contract and rule.contract != contract):
            continue
        if not cited.get(rule.id):
            problems.append(f"{rule.id}: no scenario cites it")
        if rule.id not in broken_by:
            problems.append(
                f"{rule.id}: no mutant breaks it (a rule no broken implementation can fail is a gap)"
            )
    return problems


def cmd_mutants(args: argparse.Namespace, console: Console) -> int:
    """Exit 1 if any mutant survives or is caught only by scenarios not citing its rule."""
    for problem in output_problems([("--report-json", args.report_json)]):
        error(problem)
        return 2
    scenarios = load_scenarios()
    jobs = args.jobs or os.cpu_count() or 1
    names = mutant_names(args.contract)
    if args.mutant:
        unknown = [n for n in args.mutant if n not in all_mutants()]
        if unknown:
            guess = did_you_mean(unknown[0], all_mutants())
            error(
                f"--mutant {unknown[0]!r}: no such mutant"
                + (f"; {guess}" if guess else "")
                + " (the kill matrix in docs/quality.md lists them)"
            )
            return 2
        names = [n for n in names if n in args.mutant]
        if not names:
            error("no mutant matches both --mutant and --contract")
            return 2
    counter = Counter(len(names))
    console.print(
        f"{counter.total} mutants against {len(scenarios)} scenarios, {jobs} at a time",
        highlight=False,
    )

    def progress(outcome: MutantOutcome) -> None:
        style = {"killed": "green", "caught-elsewhere": "yellow", "survived": "red"}[
            outcome.verdict
        ]
        console.print(
            f"[dim]{counter.step()}[/] [{style}]{outcome.verdict:16}[/] {outcome.name}"
            f"  [dim]({counter.eta()})[/]",
            highlight=False,
        )

    outcomes = kill_matrix(
        scenarios, contracts=args.contract, names=names, jobs=jobs, on_outcome=progress
    )
    table = Table(
        "mutant", "breaks", "killed by (citing the rule)", "also killed by", title="kill matrix"
    )
    for o in outcomes:
        others = sorted(set(o.killed_by) - set(o.killed_by_citing))
        table.add_row(
            o.name,
            o.rule,
            "\n".join(o.killed_by_citing) or "[red]none[/]",
            f"{len(others)} other scenario(s)" if others else "",
        )
    console.print(table)
    if args.report_json:
        args.report_json.parent.mkdir(parents=True, exist_ok=True)
        args.report_json.write_text(json.dumps([o.to_json() for o in outcomes], indent=2) + "\n")
        console.print(f"kill matrix JSON: {args.report_json}", highlight=False)
    bad = [o for o in outcomes if o.verdict != "killed"]
    for o in bad:
        console.print(
            f"{o.name} ({o.rule}): {o.verdict}; {o.statement}", style="red", highlight=False
        )
    killed = len(outcomes) - len(bad)
    print(f"{killed} killed, {len(bad)} survived", flush=True)
    return 1 if bad else 0
