"""What a mutation run found, as a table, a survivor list, JSON, and the docs section.

The docs section of ``docs/quality.md`` between the ``mutation:begin`` and
``mutation:end`` markers is written by ``python mutation/run.py --update-doc`` from a
full run, never by hand.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selection import Equivalent, ModuleSpec, Mutant

__all__ = [
    "ModuleResult",
    "as_json",
    "markdown_table",
    "problems",
    "progress_line",
    "survivors_text",
    "update_doc",
]

BEGIN = "<!-- mutation:begin (written by `nox -s mutation`; do not edit by hand) -->"
END = "<!-- mutation:end -->"


@dataclass
class ModuleResult:
    """What one module's session found."""

    spec: ModuleSpec
    proposed: int = 0
    annotations: int = 0
    invalid: int = 0
    out_of_scope: int = 0
    not_sampled: int = 0
    equivalent: list[tuple[Mutant, Equivalent]] = field(default_factory=list)
    open: dict[str, Equivalent] = field(default_factory=dict)
    killed: list[Mutant] = field(default_factory=list)
    timeouts: int = 0
    survived: list[tuple[Mutant, str]] = field(default_factory=list)
    broken: list[tuple[Mutant, str]] = field(default_factory=list)
    baseline_seconds: float = 0.0
    seconds: float = 0.0

    @property
    def mutants(self) -> int:
        """Every mutant in scope: run (killed, survived, broken) or known equivalent."""
        return len(self.killed) + len(self.survived) + len(self.broken) + len(self.equivalent)

    @property
    def score(self) -> float | None:
        """Killed over non-equivalent mutants, in percent (None if none was run)."""
        judged = len(self.killed) + len(self.survived) + len(self.broken)
        return 100.0 * len(self.killed) / judged if judged else None


def _percent(score: float | None) -> str:
    return "n/a" if score is None else f"{score:.1f}%"


def _score(result: ModuleResult) -> str:
    return _percent(result.score)


def progress_line(result: ModuleResult) -> str:
    return (
        f"{result.spec.key}: {len(result.killed)} killed, {len(result.survived)} survived, "
        f"{len(result.equivalent)} equivalent, score {_score(result)} "
        f"({result.seconds:.0f} s; suite {result.baseline_seconds:.1f} s)"
    )


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The per-module table, from :func:`as_json` rows (of one run, or saved ones)."""
    out = [
        "| module | contract | mutants | killed | of which by time-out | survived "
        "| equivalent | outside the contract | score |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    total = dict.fromkeys(("mutants", "killed", "timeouts", "survived", "eq", "out"), 0)
    for row in rows:
        kinds = [e["kind"] for e in row["equivalent"]]
        cells = {
            "mutants": row["mutants"],
            "killed": row["killed"],
            "timeouts": row["timeouts"],
            "survived": len(row["survived"]),
            "eq": kinds.count("equivalent"),
            "out": kinds.count("outside-contract"),
        }
        for key, value in cells.items():
            total[key] += value
        scope = ", ".join(f"`{s}`" for s in row.get("scope") or ())
        name = f"`{Path(row['module']).parent.name}/{Path(row['module']).name}`"
        out.append(
            f"| {name}{f' (scope: {scope})' if scope else ''} | {row['contract']} "
            f"| {cells['mutants']} | {cells['killed']} | {cells['timeouts']} | {cells['survived']} "
            f"| {cells['eq']} | {cells['out']} | {_percent(row['score'])} |"
        )
    judged = total["killed"] + total["survived"] + sum(len(r["not_run"]) for r in rows)
    out.append(
        f"| all | | {total['mutants']} | {total['killed']} | {total['timeouts']} "
        f"| {total['survived']} | {total['eq']} | {total['out']} "
        f"| {_percent(100.0 * total['killed'] / judged if judged else None)} |"
    )
    notes = [
        "",
        "score = killed / (mutants - equivalent - outside the contract). A mutant is killed "
        "when `seamspec run --contract <contract> --profile strict -q -x` fails on it, or "
        "runs past the per-mutant limit.",
        "",
        f"Not counted: {sum(r['annotations'] for r in rows)} mutations inside type "
        "annotations (never evaluated: every module has `from __future__ import "
        f"annotations`), {sum(r['invalid'] for r in rows)} that leave no valid Python "
        "(cosmic-ray reads the bare `*` of a parameter list as a multiplication) and "
        f"{sum(r['out_of_scope'] for r in rows)} outside a module's scope.",
    ]
    sampled = sum(r["not_sampled"] for r in rows)
    if sampled:
        notes.append(f"A sample: {sampled} mutants were left out (--sample).")
    broken = sum(len(r["not_run"]) for r in rows)
    if broken:
        notes.append(f"{broken} mutants could not be run (counted as not killed).")
    return "\n".join(out + notes)


def survivors_text(results: Sequence[ModuleResult]) -> str:
    lines = []
    for r in results:
        for mutant, diff in r.survived:
            entry = r.open.get(mutant.job_id)
            status = f"open: {entry.reason}" if entry else "NOT TRIAGED"
            lines.append(f"\nsurvived: {r.spec.key} {mutant.describe()} [{status}]")
            lines.extend("    " + line for line in diff.splitlines()[2:])
        for mutant, why in r.broken:
            lines.append(f"\nnot run: {r.spec.key} {mutant.describe()}: {why[-500:]}")
    return "\n".join(lines)


def problems(results: Sequence[ModuleResult], fail_under: float) -> list[str]:
    """Why the run fails: a low score, an untriaged survivor, a stale open entry."""
    found = []
    for r in results:
        if r.score is not None and r.score < fail_under:
            found.append(f"{r.spec.key}: score {_score(r)} is below {fail_under:g}%")
        survivors = {m.job_id for m, _ in r.survived}
        for mutant, _ in r.survived:
            if mutant.job_id not in r.open:
                found.append(
                    f"{r.spec.key}: {mutant.describe()} survived and is not triaged: write a "
                    "scenario that kills it, or list it in mutation/equivalents.yaml"
                )
        for mutant in r.killed:
            entry = r.open.get(mutant.job_id)
            if entry is not None and mutant.job_id not in survivors:
                found.append(
                    f"{r.spec.key}: {entry.describe()} is killed now: remove it from `open`"
                )
        for mutant, why in r.broken:
            found.append(f"{r.spec.key}: {mutant.describe()} could not be run: {why[-200:]}")
    return found


def _mutant_json(mutant: Mutant) -> dict[str, Any]:
    return {
        "where": mutant.where,
        "line": mutant.line,
        "col": mutant.col,
        "code": mutant.code,
        "to": mutant.to,
        "operator": mutant.operator,
        "occurrence": mutant.occurrence,
    }


def as_json(results: Sequence[ModuleResult]) -> list[dict[str, Any]]:
    return [
        {
            "module": r.spec.path,
            "contract": r.spec.contract,
            "mutants": r.mutants,
            "killed": len(r.killed),
            "timeouts": r.timeouts,
            "scope": list(r.spec.scope),
            "survived": [
                {
                    **_mutant_json(m),
                    "diff": diff,
                    "open": r.open[m.job_id].reason if m.job_id in r.open else None,
                }
                for m, diff in r.survived
            ],
            "equivalent": [
                {**_mutant_json(m), "kind": e.kind, "reason": e.reason} for m, e in r.equivalent
            ],
            "not_run": [{**_mutant_json(m), "why": why} for m, why in r.broken],
            "annotations": r.annotations,
            "invalid": r.invalid,
            "out_of_scope": r.out_of_scope,
            "not_sampled": r.not_sampled,
            "score": r.score,
            "seconds": round(r.seconds, 1),
        }
        for r in results
    ]


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def doc_section(rows: Sequence[dict[str, Any]], equivalents: Sequence[Equivalent]) -> str:
    runs = sorted({f"{row['date']} at commit {row['commit']}" for row in rows})
    lines = [BEGIN, "", f"Produced by `nox -s mutation` ({'; '.join(runs)}).", ""]
    lines += [markdown_table(rows), ""]
    left = [(row, m) for row in rows for m in row["survived"]]
    if left:
        lines += ["Survivors left, and why no scenario kills them yet:", ""]
        lines += ["| module | where | line | mutated to | why |", "|---|---|---|---|---|"]
        for row, m in left:
            why = _escape(m["open"]) if m["open"] else "not triaged"
            name = f"{Path(row['module']).parent.name}/{Path(row['module']).name}"
            lines.append(
                f"| `{name}` | `{m['where']}` | `{_escape(m['code'])}` | `{_escape(m['to'])}` "
                f"| {why} |"
            )
        lines.append("")
    lines += [
        f"Equivalent mutants and mutants outside the contract ({len(equivalents)}, from "
        "`mutation/equivalents.yaml`; skipped on every run, and counted in the table):",
        "",
        "| module | where | line | mutated to | kind | why |",
        "|---|---|---|---|---|---|",
    ]
    for e in equivalents:
        lines.append(
            f"| `{e.module}` | `{e.where}` | `{_escape(e.line)}` | `{_escape(e.to)}` | {e.kind} "
            f"| {_escape(e.reason)} |"
        )
    lines += ["", END]
    return "\n".join(lines)


def update_doc(
    path: Path, rows: Sequence[dict[str, Any]], equivalents: Sequence[Equivalent]
) -> None:
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"error: {path} has no {BEGIN} ... {END} block to replace")
    section = doc_section(rows, equivalents)
    path.write_text(pattern.sub(lambda _: section, text), encoding="utf-8")
