"""The HTML report: one self-contained page (no network), built from JSON reports only.

It answers, at a glance, which implementation meets which rule: a compliance matrix by
rule and by scenario, per-contract summaries, and every failure with its findings (an
expected-versus-observed diff with whitespace drawn) and its trace drawn as lanes beside
the reference's (``html_failures``). No absolute path of the machine that ran it appears.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from html import escape
from typing import Any

from seamspec.conformance._core.catalogue import Rule, catalogue
from seamspec.conformance._reports.html_failures import CSS as FAILURE_CSS
from seamspec.conformance._reports.html_failures import failure_html, scrub_paths
from seamspec.conformance._reports.json_junit import verdict_word
from seamspec.conformance._reports.summaries import by_declaration

__all__ = ["html_report"]

# Worst first: the cell of a rule shows the worst status among the scenarios citing it.
_RANK = ["error", "fail", "xpass", "warn", "reco", "xfail", "pass", "skip"]
_LABEL = {
    "pass": "pass",
    "fail": "FAIL",
    "error": "ERROR",
    "skip": "skip",
    "xfail": "xfail",
    "xpass": "XPASS",
    "warn": "warn",
    "reco": "reco",
}

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1f2328}
h1{font-size:1.6rem}h2{margin-top:2rem;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left}
th{background:#f6f8fa}.s-pass{background:#dafbe1}.s-fail,.s-error,.s-xpass{background:#ffebe9;font-weight:600}
.s-warn{background:#fff8c5}.s-reco{background:#eef6ff}.s-xfail{background:#ddf4ff}.s-skip,.s-none{color:#8c959f}
pre{background:#f6f8fa;padding:.5rem;overflow-x:auto;white-space:pre-wrap}
.card{display:inline-block;border:1px solid #d0d7de;border-radius:6px;padding:.5rem 1rem;margin:.25rem}
.ok{color:#1a7f37}.bad{color:#cf222e}code{font-size:.95em}
"""


def _status(result: dict[str, Any]) -> str:
    counts_as = str(result["counts_as"])
    return {"warning": "warn", "recommendation": "reco"}.get(counts_as, str(result["status"]))


def _status_for_rule(result: dict[str, Any], rule_id: str) -> str:
    """A scenario that failed because of *another* rule says nothing against this one."""
    status = _status(result)
    if (
        status in ("fail", "warn", "reco", "xfail", "xpass")
        and rule_id not in result["broken_rules"]
    ):
        return "pass"
    return status


def _counts_under(rule: Rule) -> str:
    if rule.profile == "strict":
        return "strict profile"
    return f"feature {escape(rule.feature)}" if rule.feature else "every profile"


def _worst(statuses: list[str]) -> str:
    return min(statuses, key=_RANK.index) if statuses else "none"


def _cell(status: str, title: str = "") -> str:
    label = _LABEL.get(status, "&ndash;")
    return f'<td class="s-{status}" title="{escape(title)}">{label}</td>'


def html_report(reports: list[dict[str, Any]]) -> str:
    names = [f"{r['implementation']['name']}" for r in reports]
    by_impl = [{res["scenario"]: res for res in r["results"]} for r in reports]
    scenario_ids = sorted({sid for results in by_impl for sid in results})
    contracts = sorted({res["contract"] for r in reports for res in r["results"]})
    out: list[str] = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        "<title>seamspec compliance report</title>",
        f"<style>{_CSS}{FAILURE_CSS}</style></head><body>",
        "<h1>seamspec compliance report</h1>",
        f"<p>kit {escape(reports[0]['kit']['version'])}, rule catalogue {escape(reports[0]['spec_version'])}, "
        f"generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from {len(reports)} report(s).</p>",
    ]
    out.append('<h2 id="summary">Implementations</h2>')
    for report in reports:
        s, impl = report["summary"], report["implementation"]
        word = verdict_word(report)
        ok = word == "conforms"
        out.append(
            f'<div class="card impl-summary"><b>{escape(impl["name"])}</b> {escape(impl["version"])} '
            f"({escape(impl['language'])}; profile {escape(report.get('profile', 'upstream'))})<br>"
            f'<span class="{"ok" if ok else "bad"}">{escape(word)}</span>: '
            f"{s['passed']} passed, {s['failed']} failed, {s['errors']} errors, {s['skipped']} skipped, "
            f"{s['xfailed']} xfail, {s['xpassed']} xpass, {s['warnings']} warnings, "
            f"{s.get('recommendations', 0)} strict-profile recommendations"
            + "".join(
                f'<br><span class="caveat">{escape(rule)} judged by declaration in '
                f"{len(ids)} passing scenario(s): the kit could not watch it</span>"
                for rule, ids in sorted(by_declaration(report).items())
            )
            + "</div>"
        )
    out.append(
        '<h2 id="contracts">Per contract</h2><table id="contract-summary"><tr><th>contract</th>'
    )
    out += [f"<th>{escape(n)}</th>" for n in names]
    out.append("</tr>")
    for contract in contracts:
        out.append(f"<tr><th>{escape(contract)}</th>")
        for results in by_impl:
            mine = [r for r in results.values() if r["contract"] == contract]
            passed = sum(1 for r in mine if r["status"] == "pass")
            run = sum(1 for r in mine if r["status"] != "skip")
            status = _worst([_status(r) for r in mine]) if run else "skip"
            out.append(
                _cell(status, f"{passed}/{run}").replace(
                    _LABEL.get(status, "&ndash;"), f"{passed}/{run} passed", 1
                )
            )
        out.append("</tr>")
    out.append("</table>")

    out.append(
        '<h2 id="rules">Compliance by rule</h2><table id="rule-matrix"><tr><th>rule</th><th>level</th>'
        "<th>counts under</th>"
    )
    out += [f"<th>{escape(n)}</th>" for n in names]
    out.append("</tr>")
    for rule in catalogue():
        if rule.contract not in contracts:
            continue
        out.append(
            f'<tr><th title="{escape(rule.text)}"><code>{rule.id}</code></th><td>{rule.level}</td>'
            f"<td>{_counts_under(rule)}</td>"
        )
        for results in by_impl:
            citing = [
                r for r in results.values() if rule.id in r["rules"] or rule.id in r["broken_rules"]
            ]
            broken = [r["scenario"] for r in citing if rule.id in r["broken_rules"]]
            statuses = [_status_for_rule(r, rule.id) for r in citing]
            out.append(_cell(_worst(statuses), ", ".join(broken) or f"{len(citing)} scenario(s)"))
        out.append("</tr>")
    out.append("</table>")

    out.append(
        '<h2 id="scenarios">Compliance by scenario</h2><table id="scenario-matrix"><tr><th>scenario</th><th>rules</th>'
    )
    out += [f"<th>{escape(n)}</th>" for n in names]
    out.append("</tr>")
    for sid in scenario_ids:
        any_result = next(results[sid] for results in by_impl if sid in results)
        out.append(
            f'<tr><th><a href="#f-{escape(sid)}"><code>{escape(sid)}</code></a></th>'
            f"<td>{escape(', '.join(any_result['rules']))}</td>"
        )
        for results in by_impl:
            result = results.get(sid)
            out.append(
                _cell(_status(result), scrub_paths(result["detail"][:300]))
                if result
                else _cell("none")
            )
        out.append("</tr>")
    out.append("</table>")

    out.append('<h2 id="failures">Failures and errors</h2>')
    failures = 0
    grouped: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for name, results in zip(names, by_impl, strict=True):
        for sid, result in results.items():
            if result["counts_as"] in ("failure", "error", "warning", "recommendation", "xpass"):
                grouped[sid].append((name, result))
    for sid in sorted(grouped):
        for name, result in grouped[sid]:
            failures += 1
            label = _LABEL.get(_status(result), result["status"])
            out.append(failure_html(sid, name, result, label))
    if not failures:
        out.append(
            '<p class="ok" id="no-failures">No failures: every scenario that ran passed.</p>'
        )
    out.append("</body></html>")
    return "\n".join(out) + "\n"
