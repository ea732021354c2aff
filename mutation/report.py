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
    "CarriedModule",
    "ModuleResult",
    "as_json",
    "carried_modules",
    "markdown_table",
    "problems",
    "progress_line",
    "survivors_text",
    "update_doc",
]

BEGIN = "<!-- mutation:begin (written by `nox -s mutation`; do not edit by hand) -->"
END = "<!-- mutation:end -->"


_DATED = re.compile(r"(\d{4}-\d{2}-\d{2})(?: at commit ([0-9a-f]+(?:\+changes)?))?")


@dataclass(frozen=True)
class CarriedModule:
    """A module with no fresh whole run: its row and survivors from the document's last
    section, with the run they come from, so the table says how old its figures are."""

    name: str  # ``room/file.py``
    cells: tuple[str, ...]  # the first nine cells of its old row (module ... score)
    survivors: tuple[str, ...]  # its old lines of the survivors table
    figures_of: str  # ``2026-12-01 at commit 06b801a``, or just a date
    why: str  # why it was not rerun (no saved run, a stale one)
    today: str

    def run_cell(self) -> str:
        return f"not rerun on {self.today} ({self.why}): figures of {self.figures_of}"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def carried_modules(
    path: Path, missing: Sequence[tuple[str, str]], today: str
) -> list[CarriedModule]:
    """Each of ``missing`` (module path, why) as the document's section last showed it.

    A module the old section does not show cannot be carried over: that is an error, so
    the table never silently loses a module.
    """
    text = path.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    section = text[start:end] if 0 <= start < end else ""
    produced = re.search(r"^Produced by .*$", section, re.MULTILINE)
    dates = sorted(set(_DATED.findall(produced.group(0)))) if produced else []
    single_date = {d for d, _ in dates}
    carried = []
    for module, why in missing:
        name = f"{Path(module).parent.name}/{Path(module).name}"
        rows = [
            _cells(line)
            for line in section.splitlines()
            if line.startswith(f"| `{name}`") and line.count("|") >= 10
        ]
        table = [c for c in rows if len(c) >= 9 and c[2].isdigit()]
        if not table:
            raise SystemExit(f"error: {path} shows no earlier row of {name} to carry over")
        cells = table[0]
        found = _DATED.findall(cells[9]) if len(cells) > 9 else []
        if found:
            date, commit = found[-1]
            figures_of = f"{date} at commit {commit}" if commit else date
        elif len(single_date) == 1:
            figures_of = next(iter(single_date))
        else:
            figures_of = "an earlier run"
        survivors = tuple(
            line
            for line in section.splitlines()
            if line.startswith(f"| `{name}`") and len(_cells(line)) == 5
        )
        carried.append(CarriedModule(name, tuple(cells[:9]), survivors, figures_of, why, today))
    return carried


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


def _run_cell(row: dict[str, Any]) -> str:
    if row.get("date") and row.get("commit"):
        return f"{row['date']} at commit {row['commit']}"
    return "this run"


def markdown_table(rows: Sequence[dict[str, Any]], carried: Sequence[CarriedModule] = ()) -> str:
    """The per-module table, from :func:`as_json` rows (of one run, or saved ones).

    ``carried`` modules (no fresh whole run) keep the row of the document's last table,
    marked as not rerun; the totals count only the modules of ``rows``.
    """
    out = [
        "| module | contract | mutants | killed | of which by time-out | survived "
        "| equivalent | outside the contract | score | run |",
        "|---|---|---|---|---|---|---|---|---|---|",
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
            f"| {cells['eq']} | {cells['out']} | {_percent(row['score'])} | {_run_cell(row)} |"
        )
    for module in carried:
        out.append("| " + " | ".join([*module.cells, module.run_cell()]) + " |")
    judged = total["killed"] + total["survived"] + sum(len(r["not_run"]) for r in rows)
    label = f"all rerun ({len(rows)} of {len(rows) + len(carried)} modules)" if carried else "all"
    out.append(
        f"| {label} | | {total['mutants']} | {total['killed']} | {total['timeouts']} "
        f"| {total['survived']} | {total['eq']} | {total['out']} "
        f"| {_percent(100.0 * total['killed'] / judged if judged else None)} | |"
    )
    notes = [
        "",
        "score = killed / (mutants - equivalent - outside the contract). A mutant is killed "
        "when `seamspec run --contract <contract> --profile strict -q -x` fails on it, or "
        "runs past the per-mutant limit.",
        "",
        f"Not counted{' in the modules rerun' if carried else ''}: "
        f"{sum(r['annotations'] for r in rows)} mutations inside type "
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


def doc_section(
    rows: Sequence[dict[str, Any]],
    equivalents: Sequence[Equivalent],
    carried: Sequence[CarriedModule] = (),
) -> str:
    runs = sorted({f"{row['date']} at commit {row['commit']}" for row in rows})
    produced = f"Produced by `nox -s mutation` ({'; '.join(runs)})."
    if carried:
        produced += (
            f" {len(carried)} module(s) not rerun keep the figures of their last run "
            "(the `run` column), and are left out of the totals."
        )
    lines = [BEGIN, "", produced, ""]
    lines += [markdown_table(rows, carried), ""]
    left = [(row, m) for row in rows for m in row["survived"]]
    old = [line for module in carried for line in module.survivors]
    if left or old:
        lines += ["Survivors left, and why no scenario kills them yet:", ""]
        lines += ["| module | where | line | mutated to | why |", "|---|---|---|---|---|"]
        for row, m in left:
            why = _escape(m["open"]) if m["open"] else "not triaged"
            name = f"{Path(row['module']).parent.name}/{Path(row['module']).name}"
            lines.append(
                f"| `{name}` | `{m['where']}` | `{_escape(m['code'])}` | `{_escape(m['to'])}` "
                f"| {why} |"
            )
        for module in carried:
            note = f" (from the run of {module.figures_of}; not rerun since)"
            for line in module.survivors:
                lines.append(
                    line if "not rerun since" in line else line[: -len(" |")] + note + " |"
                )
        lines.append("")
    lines += [
        "Equivalent mutants and mutants outside the contract "
        f"({sum(e.count for e in equivalents)}, from "
        "`mutation/equivalents.yaml`; skipped on every run, and counted in the table):",
        "",
        "| module | where | line | mutated to | kind | why |",
        "|---|---|---|---|---|---|",
    ]
    for e in equivalents:
        lines.append(
            f"| `{e.module}` | `{e.where}`{f' ({e.count} lines alike)' if e.count > 1 else ''} "
            f"| `{_escape(e.line)}` | `{_escape(e.to)}` | {e.kind} "
            f"| {_escape(e.reason)} |"
        )
    lines += ["", END]
    return "\n".join(lines)


def update_doc(
    path: Path,
    rows: Sequence[dict[str, Any]],
    equivalents: Sequence[Equivalent],
    carried: Sequence[CarriedModule] = (),
) -> None:
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"error: {path} has no {BEGIN} ... {END} block to replace")
    section = doc_section(rows, equivalents, carried)
    path.write_text(pattern.sub(lambda _: section, text), encoding="utf-8")
