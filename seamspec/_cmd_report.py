"""``seamspec report`` and ``seamspec diff``: formats derived from JSON reports."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from seamspec._output import error, output_problems
from seamspec.conformance._reports.json_junit import report_schema
from seamspec.conformance._reports.summaries import badge_json, compare_reports, markdown_summary

__all__ = ["add_report_parsers"]


class ReportError(ValueError):
    """A report file could not be read or is not a seamspec JSON report."""


def add_report_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = sub.add_parser("report", help="turn JSON reports into HTML, Markdown or a badge")
    formats = report.add_subparsers(dest="format", required=True, metavar="FORMAT")
    for name, helptext in (
        ("html", "one self-contained HTML page: compliance matrix, summaries, failures"),
        ("markdown", "a Markdown summary, e.g. for a CI job summary"),
        ("badge", "a shields.io endpoint badge JSON"),
    ):
        fmt = formats.add_parser(name, help=helptext)
        if name == "badge":  # a badge describes exactly one report
            fmt.add_argument(
                "reports",
                nargs=1,
                type=Path,
                metavar="REPORT.json",
                help="one JSON report (`seamspec run --report-json`)",
            )
        else:
            fmt.add_argument(
                "reports",
                nargs="+",
                type=Path,
                metavar="REPORT.json",
                help="JSON reports (`seamspec run --report-json`), one column each",
            )
        fmt.add_argument(
            "-o", "--output", type=Path, metavar="PATH", help="write here instead of stdout"
        )
        fmt.set_defaults(func=cmd_report)

    diff = sub.add_parser(
        "diff", help="what changed between two JSON reports, scenario by scenario"
    )
    diff.add_argument("old", type=Path, metavar="OLD.json", help="the earlier JSON report")
    diff.add_argument("new", type=Path, metavar="NEW.json", help="the later JSON report")
    diff.set_defaults(func=cmd_diff)


def read_report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except OSError as error:
        raise ReportError(f"{path}: cannot read: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}:{error.lineno}: not JSON: {error.msg}") from None
    except UnicodeDecodeError as error:
        raise ReportError(
            f"{path}: not a JSON report: byte {error.start} is not UTF-8 text ({error.reason})"
        ) from None
    except RecursionError:
        raise ReportError(f"{path}: not a seamspec JSON report: nested too deep") from None
    import jsonschema  # here, not at start-up: it costs a quarter of a second to import

    try:
        jsonschema.validate(data, report_schema())
    except jsonschema.ValidationError as error:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ReportError(
            f"{path}: not a seamspec JSON report (at {where}: {error.message}); "
            "write one with `seamspec run --report-json`"
        ) from None
    report: dict[str, Any] = data
    return report


def _emit(text: str, output: Path | None, console: Console) -> None:
    if output is None:
        print(text, end="" if text.endswith("\n") else "\n")
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    console.print(f"wrote {output}", highlight=False)


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    for problem in output_problems([("--output", args.output)]):
        error(problem)
        return 2
    try:
        reports = [read_report(p) for p in args.reports]
    except ReportError as problem:
        error(problem)
        return 2
    if args.format == "markdown":
        _emit(markdown_summary(reports), args.output, console)
    elif args.format == "badge":
        _emit(json.dumps(badge_json(reports[0]), indent=2) + "\n", args.output, console)
    else:
        from seamspec.conformance._reports.html import html_report

        _emit(html_report(reports), args.output, console)
    return 0


def cmd_diff(args: argparse.Namespace, console: Console) -> int:
    """Exit 1 when anything got worse (newly failing), so a CI can gate on it."""
    try:
        old, new = read_report(args.old), read_report(args.new)
    except ReportError as problem:
        error(problem)
        return 2
    changes = compare_reports(old, new)
    styles = {
        "newly failing": "red",
        "newly passing": "green",
        "added": "cyan",
        "removed": "yellow",
    }
    for heading, items in changes.items():
        if items:
            console.print(f"{heading} ({len(items)}):", style=styles.get(heading, "white"))
            for item in items:
                console.print(f"  {item}", highlight=False, markup=False)
    if not any(changes.values()):
        console.print("no change in any scenario's status")
    worse = len(changes["newly failing"])
    console.print(
        f"{worse} newly failing, {len(changes['newly passing'])} newly passing", highlight=False
    )
    return 1 if worse else 0
