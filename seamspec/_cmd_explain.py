"""``seamspec explain ID``: how the kit teaches a rule or a scenario."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Any

from rich.console import Console

from seamspec._output import error
from seamspec.conformance import (
    ImplementationError,
    Scenario,
    Unsupported,
    catalogue,
    load_adapter,
    load_scenarios,
)
from seamspec.conformance._core.suggest import did_you_mean
from seamspec.conformance._core.timeline import render_timeline
from seamspec.conformance._reports.lanes_svg import lanes_svg

__all__ = ["add_explain_parser"]


def add_explain_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    explain = sub.add_parser("explain", help="explain a rule (WOC-JOIN) or a scenario (woc-...)")
    explain.add_argument("id", metavar="ID", help="a rule ID or a scenario ID")
    explain.add_argument(
        "--impl",
        default="reference",
        metavar="X",
        help="implementation whose timeline to draw (default reference)",
    )
    explain.add_argument(
        "--svg",
        type=Path,
        metavar="OUT.svg",
        help="for a scenario: also draw its trace as lanes into this SVG file; with an --impl "
        "other than the reference, beside the reference's trace, differences shaded",
    )
    explain.set_defaults(func=cmd_explain)


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=88, initial_indent="  ", subsequent_indent="  ")


def cmd_explain(args: argparse.Namespace, console: Console) -> int:
    scenarios = load_scenarios()
    rules = catalogue()
    is_rule = args.id.upper() in rules
    found = next((s for s in scenarios if s.id == args.id.lower()), None)
    if not is_rule and found is None:
        names = [r.id for r in rules] + [s.id for s in scenarios]
        guess = did_you_mean(args.id, names)
        error(
            f"no rule or scenario called {args.id!r}"
            + (f"; {guess}" if guess else "")
            + "; list them with `seamspec rules`"
        )
        return 2
    if args.svg is not None and found is None:
        error(f"--svg draws a scenario's trace; {args.id!r} is a rule (give a scenario ID)")
        return 2
    if args.svg is not None and not args.svg.parent.is_dir():
        error(f"--svg {args.svg}: no folder {args.svg.parent} to write it in")
        return 2
    # A bad --impl is a usage error before anything is printed.
    adapter = load_adapter(args.impl)
    if is_rule:
        adapter.close()
        rule = rules[args.id.upper()]
        console.print(
            f"[bold]{rule.id}[/] ({rule.level}, {rule.contract}; decided by {rule.origin})"
        )
        console.print(_wrap(rule.text), markup=False)
        console.print("\n[bold]why[/]")
        console.print(_wrap(rule.rationale), markup=False)
        console.print("\n[bold]where it comes from[/]")
        if rule.origin == "upstream":
            console.print(_wrap(f"upstream: {rule.citation or '(no citation)'}"), markup=False)
        else:
            console.print(_wrap("seamspec's own decision: upstream is silent or differs"))
        if rule.profile == "strict":
            counts = "only under --profile strict (otherwise reported as a recommendation)"
        elif rule.feature:
            counts = f"under every profile, for implementations that declare {rule.feature}"
        else:
            counts = "under every profile"
        console.print(f"  counts {counts}", highlight=False, markup=False)
        citing = [s for s in scenarios if rule.id in s.rules]
        console.print(f"\n[bold]scenarios citing it[/] ({len(citing)})")
        for s in citing:
            console.print(f"  {s.id}: {s.title}", highlight=False, markup=False)
        console.print(
            f"\nsee {catalogue().contracts[rule.contract].docs}; "
            "`seamspec explain SCENARIO` draws a timeline"
        )
        return 0
    assert found is not None
    console.print(f"[bold]{found.id}[/]: {found.title}", highlight=False)
    console.print(
        f"  contract {found.contract}, level {found.level}, profile {found.profile}, "
        f"file {found.source}",
        highlight=False,
    )
    console.print("\n[bold]rules[/]")
    for rule_id in found.rules:
        console.print(f"  {rule_id}: {rules[rule_id].text}", highlight=False, markup=False)
    console.print("\n[bold]what it shows[/]")
    console.print(_wrap(found.description), markup=False)
    try:
        trace = adapter.run(found.request())
    except (Unsupported, ImplementationError) as problem:
        console.print(f"\n(no timeline: {problem})", style="yellow", markup=False)
        return 0
    finally:
        adapter.close()
    name = adapter.info().name
    console.print(f"\n[bold]timeline[/] ({name})")
    for line in render_timeline(found.contract, trace):
        console.print(line, highlight=False, markup=False)
    if args.svg is not None:
        expected = None if args.impl in ("reference", "reference-asyncio") else _reference(found)
        args.svg.write_text(
            lanes_svg(found.contract, trace, expected, observed_name=f"observed ({name})"),
            encoding="utf-8",
        )
        console.print(f"\nlanes: {args.svg}", highlight=False, markup=False)
    return 0


def _reference(scenario: Scenario) -> list[dict[str, Any]] | None:
    """The reference's trace of ``scenario``, to draw beside another implementation's."""
    reference = load_adapter("reference")
    try:
        return reference.run(scenario.request())
    except (Unsupported, ImplementationError):
        return None
    finally:
        reference.close()
