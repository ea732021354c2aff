"""Short forms of a JSON report: a Markdown summary for CI job pages and a badge.

Both are computed from the JSON report alone, so they agree with it by construction.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from seamspec.conformance._reports.json_junit import verdict_word

__all__ = ["badge_json", "by_declaration", "compare_reports", "markdown_summary"]


def by_declaration(report: dict[str, Any]) -> dict[str, list[str]]:
    """Per rule, the passing scenarios that judged it only on what the implementation declared.

    Over the wire the kit cannot watch, for instance, an implementation's fsyncs; such a
    pass is weaker evidence than one the kit saw, and every report format says so.
    """
    found: dict[str, list[str]] = {}
    for result in report["results"]:
        if result["status"] not in ("pass", "xpass"):
            continue
        for caveat in result.get("judged_by_declaration", []):
            found.setdefault(caveat["rule"], []).append(result["scenario"])
    return found


def _must_counts(report: dict[str, Any]) -> tuple[int, int]:
    """MUST scenarios whose behaviour passed under the report's profile, of those judged.

    A recommendation passed: it missed only a seamspec decision that the profile does not
    count, so the verdict does not count it either.
    """
    must = [r for r in report["results"] if r["level"] == "MUST" and r["status"] != "skip"]
    passed = ("pass", "xpass", "recommendation")
    return sum(1 for r in must if r.get("counts_as", r["status"]) in passed), len(must)


def badge_json(report: dict[str, Any]) -> dict[str, Any]:
    """A shields.io endpoint badge: MUST scenarios passed out of those run."""
    passed, total = _must_counts(report)
    ok = verdict_word(report) == "conforms"
    color = "brightgreen" if ok and passed == total else "yellow" if ok else "red"
    return {
        "schemaVersion": 1,
        "label": "seamspec",
        "message": f"{passed}/{total} MUST",
        "color": color,
    }


def markdown_summary(reports: list[dict[str, Any]]) -> str:
    lines = ["## seamspec conformance", ""]
    lines += [
        "| implementation | profile | contracts | passed | failed | errors | skipped | xfail | xpass | warnings | recommendations | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for report in reports:
        s, impl = report["summary"], report["implementation"]
        word = verdict_word(report)
        verdict = word if word == "conforms" else f"**{word}**"
        lines.append(
            f"| {impl['name']} {impl['version']} | {report.get('profile', 'upstream')} | "
            f"{', '.join(impl['contracts'])} | {s['passed']} | "
            f"{s['failed']} | {s['errors']} | {s['skipped']} | {s['xfailed']} | {s['xpassed']} | "
            f"{s['warnings']} | {s.get('recommendations', 0)} | {verdict} |"
        )
    for report in reports:
        declared = by_declaration(report)
        if declared:
            lines += ["", f"### {report['implementation']['name']}: judged by declaration", ""]
            lines += [
                f"- {rule}: {len(ids)} passing scenario(s) judged on what the implementation "
                "declared, not on what the kit saw"
                for rule, ids in sorted(declared.items())
            ]
    for report in reports:
        bad = [r for r in report["results"] if r["counts_as"] in ("failure", "error", "xpass")]
        if not bad:
            continue
        lines += ["", f"### {report['implementation']['name']}: problems", ""]
        for r in bad:
            first = (r["detail"].strip().splitlines() or [""])[0].replace("|", "\\|")
            rules = ", ".join(r["broken_rules"] or r["rules"])
            lines.append(f"- `{r['scenario']}` ({r['status']}; {rules}): {first}")
    return "\n".join(lines) + "\n"


def compare_reports(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[str]]:
    """Scenario by scenario: what got worse, what got better, what appeared or went away.

    Worse and better are judged by what each result counts as under its report's
    profile: a pass that became a recommendation (a seamspec decision the profile does
    not count) is a change, not a new failure, just as the verdict does not count it.
    """
    bad = {"failure", "error", "xpass"}
    before = {r["scenario"]: r for r in old["results"]}
    after = {r["scenario"]: r for r in new["results"]}
    changes: dict[str, list[str]] = {
        "newly failing": [],
        "newly passing": [],
        "other status changes": [],
        "added": [],
        "removed": [],
    }
    for sid in sorted(after.keys() - before.keys()):
        changes["added"].append(f"{sid} ({after[sid]['status']})")
    for sid in sorted(before.keys() - after.keys()):
        changes["removed"].append(f"{sid} (was {before[sid]['status']})")
    for sid in sorted(before.keys() & after.keys()):
        was, now = before[sid]["counts_as"], after[sid]["counts_as"]
        if was == now:
            continue
        line = f"{sid}: {was} -> {now}"
        if was not in bad and now in bad:
            changes["newly failing"].append(line)
        elif was in bad and now not in bad:
            changes["newly passing"].append(line)
        else:
            changes["other status changes"].append(line)
    return changes


def status_counts(report: dict[str, Any]) -> Counter[str]:
    return Counter(r["status"] for r in report["results"])
