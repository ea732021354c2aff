"""Checks the conformance session's JSON reports of the reference: every scenario a pass.

``seamspec run`` exits 0 on a verdict of CONFORMS, which a skip or a strict-profile
recommendation would not change; the reference declares every contract and feature, so
every scenario of the shipped suite must pass outright, and the results must come back in
the suite's order although they ran eight at a time. ``nox -s conformance`` runs this on
the reports it wrote for both backends. Before, the same was asked by more whole runs of
the reference in the tests session: ``tests/test_runner.py`` (every contract) and the
reference controls of the mutant meta-tests (``tests/test_*_mutants.py``, per contract,
under the strict profile: a status does not depend on the profile, only what it counts as).

    python tests/reference_report.py reports/reference.json reports/reference-trio.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def problems(report: dict[str, Any], suite: list[str]) -> list[str]:
    """Every way the report falls short (empty: every scenario of ``suite`` passed, in order)."""
    results = report["results"]
    out = [
        f"{r['scenario']}: {r['status']}: {r['detail']}" for r in results if r["status"] != "pass"
    ]
    ran = [r["scenario"] for r in results]
    if ran != suite:
        missing = sorted(set(suite) - set(ran))
        extra = sorted(set(ran) - set(suite))
        out.append(
            f"the results are not the suite in its order ({len(ran)} results, {len(suite)} "
            f"scenarios; missing {missing}, not in the suite {extra})"
        )
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    from seamspec.conformance import load_scenarios

    suite = [s.id for s in load_scenarios()]
    failed = False
    for path in argv:
        found = problems(json.loads(Path(path).read_text(encoding="utf-8")), suite)
        for line in found:
            print(f"{path}: {line}", file=sys.stderr)
        if not found:
            print(f"{path}: all {len(suite)} scenarios passed, in the suite's order")
        failed = failed or bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
