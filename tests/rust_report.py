"""Checks a JSON report of the Rust example (examples/rust) against what it promises.

Under the default profile every shell-output scenario must pass, be skipped only because
it needs a feature the example does not declare, or fail only on seamspec's own choices
(a strict-profile recommendation) listed in the example's manifest; the manifest must
list nothing else. ``nox -s rust`` runs it on the report it wrote.

    python -m tests.rust_report reports/rust.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

MANIFEST = Path(__file__).parents[1] / "examples" / "rust" / "known-failures.yaml"
UNDECLARED = "does not declare the feature(s)"


def problems(report: dict[str, Any]) -> list[str]:
    """Every way the report breaks the example's promise (empty: it keeps it)."""
    listed = set(yaml.safe_load(MANIFEST.read_text())["expected_failures"])
    results = [r for r in report["results"] if r["contract"] == "shell-output"]
    out = [] if results else ["the report has no shell-output results"]
    recommended = set()
    for r in results:
        if r["counts_as"] == "pass":
            continue
        if r["counts_as"] == "skip" and UNDECLARED in r["detail"]:
            continue
        if r["counts_as"] == "recommendation":
            recommended.add(r["scenario"])
            continue
        out.append(f"{r['scenario']}: {r['counts_as']}: {r['detail']}")
    if recommended != listed:
        out.append(
            f"the manifest lists {sorted(listed - recommended)} that are not recommendations, "
            f"and misses {sorted(recommended - listed)}"
        )
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    found = problems(json.loads(Path(argv[0]).read_text()))
    for line in found:
        print(f"rust example: {line}", file=sys.stderr)
    if not found:
        print("rust example: conforms under the default profile; recommendations = manifest")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
