"""Reports derived from a run: the versioned JSON report, and JUnit XML made from it.

The JSON report is the source of truth; every other format is produced from it, so all
formats agree on the counts by construction.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from seamspec import __version__
from seamspec.conformance._core.catalogue import SPEC_VERSION
from seamspec.conformance._core.runner import RunResult

__all__ = [
    "REPORT_VERSION",
    "report_schema",
    "to_json_report",
    "verdict_word",
    "write_json_report",
    "write_junit_xml",
]

REPORT_VERSION = 1


@cache
def report_schema() -> dict[str, Any]:
    text = resources.files("seamspec.conformance").joinpath("schemas/report.schema.json")
    schema: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return schema


def to_json_report(run: RunResult) -> dict[str, Any]:
    results = []
    for r in run.results:
        entry: dict[str, Any] = {
            "scenario": r.scenario.id,
            "title": r.scenario.title,
            "contract": r.scenario.contract,
            "rules": list(r.scenario.rules),
            "level": r.scenario.level,
            "status": r.status,
            "profile": r.scenario.profile,
            "counts_as": r.counts_as,
            "detail": r.detail,
            "broken_rules": r.broken_rules,
            "findings": [f.to_json() for f in r.findings],
            "duration": round(r.duration, 6),
            "file": r.scenario.source,
        }
        if r.caveats:
            entry["judged_by_declaration"] = [{"rule": rule, "why": why} for rule, why in r.caveats]
        if r.status == "fail" and r.trace is not None:
            entry["trace"] = r.trace
            if r.expected_trace is not None:
                entry["expected_trace"] = r.expected_trace
        results.append(entry)
    report = {
        "report_version": REPORT_VERSION,
        "kit": {"name": "seamspec", "version": __version__},
        "spec_version": SPEC_VERSION,
        "profile": run.profile,
        "implementation": run.implementation.to_json(),
        "started": datetime.fromtimestamp(run.started, timezone.utc).isoformat(),
        "duration": round(run.duration, 6),
        "summary": run.summary(),
        "verdict": _verdict(run),
        "results": results,
    }
    import jsonschema  # here, not at start-up: it costs a quarter of a second to import

    jsonschema.validate(report, report_schema())
    return report


def _verdict(run: RunResult) -> dict[str, Any]:
    nothing = run.nothing_judged()
    word = "nothing judged" if nothing else "conforms" if run.ok else "does not conform"
    return {
        "ok": run.ok,
        "word": word,
        "nothing_judged": nothing,
        "unjudged_contracts": run.unjudged_contracts(),
    }


def verdict_word(report: dict[str, Any]) -> str:
    """The verdict of a JSON report, also for reports written before it was stored."""
    stored = report.get("verdict")
    if isinstance(stored, dict):
        return str(stored["word"])
    s = report["summary"]
    return "conforms" if s["failed"] == 0 and s["errors"] == 0 else "does not conform"


def write_json_report(run: RunResult, path: Path) -> dict[str, Any]:
    report = to_json_report(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def write_junit_xml(report: dict[str, Any], path: Path) -> None:
    """One test case per scenario, classed by contract; SHOULD failures are not failures."""
    suite = TestSuite(f"seamspec:{report['implementation']['name']}")
    for entry in report["results"]:
        case = TestCase(
            entry["scenario"], classname=f"seamspec.{entry['contract']}", time=entry["duration"]
        )
        status, counts_as = entry["status"], entry["counts_as"]
        message = f"rules {', '.join(entry['broken_rules'] or entry['rules'])}"
        if counts_as == "failure":
            case.result = [Failure(message)]
            case.result[0].text = entry["detail"]
        elif status == "error":
            case.result = [Error(entry["detail"].splitlines()[0] if entry["detail"] else "error")]
            case.result[0].text = entry["detail"]
        elif status in ("skip", "xfail"):
            case.result = [Skipped(entry["detail"] or status)]
        elif counts_as == "warning":
            case.system_out = f"SHOULD-level finding (warning):\n{entry['detail']}"
        elif counts_as == "recommendation":
            case.system_out = (
                f"strict-profile recommendation (not counted under profile "
                f"{report.get('profile', 'upstream')}):\n{entry['detail']}"
            )
        suite.add_testcase(case)
    xml = JUnitXml()
    xml.add_testsuite(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    xml.write(str(path), pretty=True)
