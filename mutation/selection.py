"""Which of cosmic-ray's mutants of a module are run, and which are known equivalents.

cosmic-ray proposes every mutation its operators can make. Four kinds are not run, each
counted apart and never silently:

- mutations inside a **type annotation**: every listed module starts with
  ``from __future__ import annotations``, so annotations are strings that nothing
  evaluates, and ``str | None`` turned into ``str & None`` changes no behaviour;
- mutations that make the module **no valid Python** (a syntax error is no plausible bug);
- mutations **outside the module's scope** (``scope`` in ``modules.yaml``: the functions
  that decide a contract's rules, when a module holds more than that);
- mutations listed in ``equivalents.yaml`` with the reason they cannot change what any
  caller sees. An entry names the mutant by where it is (the enclosing function, the text
  of its line, the operator), not by cosmic-ray's occurrence number, so that unrelated
  edits to the module do not move it; an entry that matches no mutant, or more than one,
  is an error, so a stale list cannot hide anything.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "KINDS",
    "Equivalent",
    "ModuleSpec",
    "Mutant",
    "SelectionError",
    "Verdict",
    "classify",
    "load_equivalents",
    "load_modules",
    "sample",
]

CONTRACT_OF_ROOM = {
    "_write_observer_chain": "write-observer-chain",
    "_shell_output": "shell-output",
    "_dispatch_recorder": "dispatch-recorder",
}


KINDS = ("equivalent", "outside-contract")


class SelectionError(ValueError):
    """modules.yaml or equivalents.yaml is wrong, or no longer matches the code."""


@dataclass(frozen=True)
class ModuleSpec:
    """One module to mutate: its path in the repository and the contract that judges it."""

    path: str
    contract: str
    scope: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """A short name for tables and folders: ``_dispatch_recorder/executor.py``."""
        return "/".join(Path(self.path).parts[-2:])


@dataclass(frozen=True)
class Mutant:
    """One of cosmic-ray's work items (a single mutation), with where it sits."""

    job_id: str
    operator: str
    occurrence: int
    line: int
    col: int
    end: tuple[int, int]
    where: str
    code: str
    #: the mutated line, stripped (``<removed>`` when the mutation removed lines)
    to: str

    def describe(self) -> str:
        return f"{self.where}, line {self.line}: `{self.code}` -> `{self.to}` ({self.operator})"


@dataclass(frozen=True)
class Equivalent:
    """An entry of equivalents.yaml: a mutant that no caller can tell apart, and why."""

    module: str
    where: str
    line: str
    to: str
    operator: str
    reason: str
    col: int | None = None
    #: ``equivalent``: no caller can tell it from the reference. ``outside-contract``: a
    #: Python caller of the reference could, but no rule speaks of it (a constructor's
    #: argument check, a default the kit always overrides, the wording of a message), so
    #: no conformance scenario may demand it.
    kind: str = "equivalent"
    #: How many mutants the entry stands for: more than one only for the same mutation,
    #: at the same column, of identical lines in one definition (two `return False` of
    #: one loop), which nothing else tells apart; the reason must hold for each. Left out
    #: of the repr (and so of the saved runs' fingerprints) while it is 1.
    count: int = field(default=1, repr=False)

    def matches(self, mutant: Mutant) -> bool:
        return (
            self.where == mutant.where
            and self.line == mutant.code
            and self.to == mutant.to
            and self.operator == mutant.operator
            and (self.col is None or self.col == mutant.col)
        )

    def describe(self) -> str:
        return f"{self.module} {self.where}: `{self.line}` -> `{self.to}` ({self.operator})"


@dataclass
class Verdict:
    """How the mutants of one module were sorted before the run."""

    run: list[Mutant] = field(default_factory=list)
    annotations: list[Mutant] = field(default_factory=list)
    invalid: list[Mutant] = field(default_factory=list)
    out_of_scope: list[Mutant] = field(default_factory=list)
    equivalent: list[tuple[Mutant, Equivalent]] = field(default_factory=list)
    #: survivors known to be open (``open`` in equivalents.yaml), by job ID; still run
    open: dict[str, Equivalent] = field(default_factory=dict)


def _mapping(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SelectionError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def load_modules(path: Path, root: Path) -> list[ModuleSpec]:
    """Read modules.yaml; every module must exist and sit in a known reference room."""
    data = _mapping(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))
    specs = []
    for index, raw in enumerate(data.get("modules") or []):
        entry = _mapping(raw, f"{path}: modules[{index}]")
        module = str(entry.get("path", ""))
        room = Path(module).parent.name
        if room not in CONTRACT_OF_ROOM:
            raise SelectionError(f"{path}: modules[{index}]: {module!r} is in no reference room")
        if not (root / module).is_file():
            raise SelectionError(f"{path}: modules[{index}]: {module} does not exist")
        scope = tuple(str(name) for name in entry.get("scope") or ())
        specs.append(ModuleSpec(module, CONTRACT_OF_ROOM[room], scope))
    if not specs:
        raise SelectionError(f"{path}: no modules listed")
    return specs


def load_equivalents(path: Path, key: str = "equivalents") -> list[Equivalent]:
    """Read one list of equivalents.yaml: ``equivalents`` (not run) or ``open`` (run).

    ``open`` lists survivors that no scenario kills yet, with the reason (usually the
    scenario vocabulary they would need): they are still run and count as survived.
    """
    data = _mapping(yaml.safe_load(path.read_text(encoding="utf-8")) or {}, str(path))
    unknown = set(data) - {"equivalents", "open"}
    if unknown:
        raise SelectionError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    entries = []
    for index, raw in enumerate(data.get(key) or []):
        entry = _mapping(raw, f"{path}: {key}[{index}]")
        missing = [
            k for k in ("module", "where", "line", "to", "operator", "reason") if not entry.get(k)
        ]
        if missing:
            raise SelectionError(f"{path}: {key}[{index}]: missing {', '.join(missing)}")
        col = entry.get("col")
        kind = str(entry.get("kind", "equivalent"))
        if kind not in KINDS:
            raise SelectionError(
                f"{path}: {key}[{index}]: kind {kind!r} is not one of {', '.join(KINDS)}"
            )
        entries.append(
            Equivalent(
                module=str(entry["module"]),
                where=str(entry["where"]),
                line=str(entry["line"]),
                to=str(entry["to"]),
                operator=str(entry["operator"]),
                reason=" ".join(str(entry["reason"]).split()),
                col=int(col) if col is not None else None,
                count=_count(entry.get("count", 1), f"{path}: {key}[{index}]"),
                kind=kind,
            )
        )
    return entries


def _count(value: object, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SelectionError(f"{where}: count must be a whole number >= 1, not {value!r}")
    return value


class _Index(ast.NodeVisitor):
    """Qualified names of the definitions and the extents of the annotations of a module."""

    def __init__(self) -> None:
        self.definitions: list[tuple[int, int, str]] = []
        self.annotations: list[tuple[tuple[int, int], tuple[int, int]]] = []
        self._stack: list[str] = []

    def _define(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self._stack.append(node.name)
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        self.definitions.append((first, node.end_lineno or node.lineno, ".".join(self._stack)))
        self.generic_visit(node)
        self._stack.pop()

    def _annotation(self, node: ast.expr | None) -> None:
        if node is not None:
            end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
            self.annotations.append(((node.lineno, node.col_offset), end))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = node.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            self._annotation(arg.annotation)
        for star in (arguments.vararg, arguments.kwarg):
            if star is not None:
                self._annotation(star.annotation)
        self._annotation(node.returns)
        self._define(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._define(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation)
        self.generic_visit(node)

    def where(self, line: int) -> str:
        inside = [(first, name) for first, last, name in self.definitions if first <= line <= last]
        return max(inside)[1] if inside else "<module>"

    def in_annotation(self, start: tuple[int, int], end: tuple[int, int]) -> bool:
        return any(a <= start and end <= b for a, b in self.annotations)


def _in_scope(where: str, scope: Sequence[str]) -> bool:
    return not scope or any(where == name or where.startswith(name + ".") for name in scope)


def classify(
    spec: ModuleSpec,
    source: str,
    proposals: Iterable[tuple[str, str, int, tuple[int, int], tuple[int, int]]],
    equivalents: Sequence[Equivalent],
    *,
    open_entries: Sequence[Equivalent] = (),
    mutated: Mapping[str, str | None] | None = None,
) -> Verdict:
    """Sort cosmic-ray's proposals ``(job_id, operator, occurrence, start, end)``.

    ``mutated`` maps each job ID to its mutated line (stripped), or to None when the
    mutated module is no valid Python (cosmic-ray takes the bare ``*`` of a parameter
    list for a multiplication, for instance): such a file is no plausible bug, and is
    counted apart.

    Raises SelectionError if an equivalent entry of this module matches no mutant or more
    than one, or if a scope name is no definition of the module.
    """
    if "from __future__ import annotations" not in source:
        raise SelectionError(
            f"{spec.path}: no `from __future__ import annotations`, so its annotations are "
            "evaluated and mutations inside them cannot be left out"
        )
    index = _Index()
    index.visit(ast.parse(source))
    names = {name for _, _, name in index.definitions}
    for name in spec.scope:
        if name not in names:
            raise SelectionError(f"modules.yaml: {spec.path}: scope {name!r} is no definition")
    lines = source.splitlines()
    mine = [e for e in equivalents if e.module == spec.key]
    open_mine = [e for e in open_entries if e.module == spec.key]
    used: dict[int, int] = {}
    open_used: dict[int, int] = {}
    verdict = Verdict()
    for job_id, operator, occurrence, start, end in proposals:
        mutant = Mutant(
            job_id=job_id,
            operator=operator,
            occurrence=occurrence,
            line=start[0],
            col=start[1],
            end=end,
            where=index.where(start[0]),
            code=lines[start[0] - 1].strip(),
            to=(mutated or {}).get(job_id) or "",
        )
        if index.in_annotation(start, end):
            verdict.annotations.append(mutant)
        elif mutated is not None and mutated.get(job_id) is None:
            verdict.invalid.append(mutant)
        elif not _in_scope(mutant.where, spec.scope):
            verdict.out_of_scope.append(mutant)
        else:
            found = [n for n, e in enumerate(mine) if e.matches(mutant)]
            if found:
                used[found[0]] = used.get(found[0], 0) + 1
                verdict.equivalent.append((mutant, mine[found[0]]))
            else:
                verdict.run.append(mutant)
                for number, entry in enumerate(open_mine):
                    if entry.matches(mutant):
                        open_used[number] = open_used.get(number, 0) + 1
                        verdict.open[mutant.job_id] = entry
    for entries, counts, key in ((mine, used, "equivalents"), (open_mine, open_used, "open")):
        for number, entry in enumerate(entries):
            count = counts.get(number, 0)
            if count != entry.count:
                what = (
                    "matches no mutant"
                    if count == 0
                    else f"matches {count} mutants, not {entry.count} (add col:, or count:)"
                )
                raise SelectionError(f"equivalents.yaml: {key}: {entry.describe()} {what}")
    for mutants in (verdict.run, verdict.annotations, verdict.invalid, verdict.out_of_scope):
        mutants.sort(key=lambda m: (m.line, m.col, m.operator))
    verdict.equivalent.sort(key=lambda pair: (pair[0].line, pair[0].col, pair[0].operator))
    return verdict


def sample(mutants: Sequence[Mutant], size: int, seed: int) -> list[Mutant]:
    """A fixed, seeded sample, drawn from mutants in a stable order (line, column, operator)."""
    ordered = sorted(mutants, key=lambda m: (m.line, m.col, m.operator))
    if size >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, size), key=lambda m: (m.line, m.col))
