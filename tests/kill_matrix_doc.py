"""The kill matrix table of docs/quality.md, written from a ``seamspec mutants`` report.

    seamspec mutants --report-json reports/kill-matrix.json
    python -m tests.kill_matrix_doc reports/kill-matrix.json docs/quality.md

The table is the report, not prose: pasting it by hand let it fall behind the registry
(103 rows were shown while 135 mutants existed). ``tests/test_quality_commands.py`` checks
that the table names every registered mutant with its rule and contract, so a mutant
added without rerunning this fails the tests. Rows keep the table's existing order; new
mutants go last, by contract and rule.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["HEADER", "table_rows", "write_table"]

HEADER = "| mutant | contract | breaks | what it does wrong |"
_NAME = re.compile(r"\| `([^`]+)` \|")


def table_rows(text: str) -> tuple[int, int]:
    """The line span (start, end) of the kill matrix's rows in ``text``'s lines."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADER)) + 2
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return start, end


def write_table(report: list[dict[str, Any]], doc: Path) -> int:
    """Rewrite ``doc``'s kill matrix rows from ``report``; the number of rows written."""
    lines = doc.read_text(encoding="utf-8").split("\n")
    start, end = table_rows("\n".join(lines))
    old = [m.group(1) for line in lines[start:end] if (m := _NAME.match(line))]
    position = {name: i for i, name in enumerate(old)}
    ordered = sorted(
        report,
        key=lambda o: (position.get(o["mutant"], len(old)), o["contract"], o["rule"], o["mutant"]),
    )
    rows = []
    for o in ordered:
        first = o["killed_by_citing"][0] if o["killed_by_citing"] else None
        killed = f"`{first}`" if first else f"**{o['verdict']}**"
        statement = o["statement"].replace("|", "\\|")
        rows.append(f"| `{o['mutant']}` | {o['contract']} | {o['rule']} | {statement} | {killed} |")
    lines[start:end] = rows
    doc.write_text("\n".join(lines), encoding="utf-8")
    return len(rows)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tests.kill_matrix_doc REPORT.json docs/quality.md", file=sys.stderr)
        return 2
    report = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    print(f"{write_table(report, Path(argv[1]))} rows written to {argv[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
