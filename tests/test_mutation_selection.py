"""mutation/selection.py: what the cosmic-ray run leaves out, and how stale lists fail.

The run itself is `nox -s mutation` (too slow for the unit tests); these check the parts
that decide which mutants count, on a small module written here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "mutation"))

from selection import (  # noqa: E402
    Equivalent,
    ModuleSpec,
    SelectionError,
    classify,
    load_equivalents,
    load_modules,
    sample,
)

SOURCE = '''"""A module."""

from __future__ import annotations


def limit(value: int | None, *, cap: int = 4) -> int:
    if value is None or value > cap:
        return cap
    return value


class Box:
    size: int | None = None

    def grow(self) -> None:
        self.size = (self.size or 0) + 1
'''

SPEC = ModuleSpec("reference/_room/mod.py", "some-contract")


Proposal = tuple[str, str, int, tuple[int, int], tuple[int, int]]


def _proposal(job: str, operator: str, line: int, col: int, end_col: int) -> Proposal:
    return (job, operator, 0, (line, col), (line, end_col))


PROPOSALS = [
    # the `|` of `int | None` in the parameter annotation (line 6)
    _proposal("ann", "core/ReplaceBinaryOperator_BitOr_BitAnd", 6, 21, 22),
    # the `>` of `value > cap` (line 7)
    _proposal("cmp", "core/ReplaceComparisonOperator_Gt_GtE", 7, 30, 31),
    # the `+` in Box.grow (line 16)
    _proposal("add", "core/ReplaceBinaryOperator_Add_Sub", 16, 36, 37),
    # the `|` of the class attribute's annotation (line 13)
    _proposal("cls", "core/ReplaceBinaryOperator_BitOr_BitAnd", 13, 14, 15),
]
MUTATED = {
    "ann": "def limit(value: int & None, *, cap: int = 4) -> int:",
    "cmp": "if value is None or value >= cap:",
    "add": "self.size = (self.size or 0) - 1",
    "cls": "size: int & None = None",
}


def test_annotations_are_left_out_and_the_rest_is_run() -> None:
    verdict = classify(SPEC, SOURCE, PROPOSALS, [], mutated=MUTATED)
    assert sorted(m.job_id for m in verdict.annotations) == ["ann", "cls"]
    assert [(m.job_id, m.where) for m in verdict.run] == [("cmp", "limit"), ("add", "Box.grow")]


def test_a_module_that_evaluates_annotations_is_refused() -> None:
    source = SOURCE.replace("from __future__ import annotations\n", "")
    with pytest.raises(SelectionError, match="annotations"):
        classify(SPEC, source, PROPOSALS, [], mutated=MUTATED)


def test_invalid_python_and_scope_are_counted_apart() -> None:
    spec = ModuleSpec(SPEC.path, SPEC.contract, scope=("Box",))
    verdict = classify(spec, SOURCE, PROPOSALS, [], mutated={**MUTATED, "add": None})
    assert [m.job_id for m in verdict.invalid] == ["add"]
    assert [m.job_id for m in verdict.out_of_scope] == ["cmp"]
    assert verdict.run == []


def test_an_unknown_scope_is_an_error() -> None:
    spec = ModuleSpec(SPEC.path, SPEC.contract, scope=("Missing",))
    with pytest.raises(SelectionError, match="scope 'Missing'"):
        classify(spec, SOURCE, PROPOSALS, [], mutated=MUTATED)


def _entry(**changes: str) -> Equivalent:
    fields = {
        "where": "limit",
        "line": "if value is None or value > cap:",
        "to": "if value is None or value >= cap:",
        **changes,
    }
    return Equivalent(
        module="_room/mod.py",
        where=fields["where"],
        line=fields["line"],
        to=fields["to"],
        operator="core/ReplaceComparisonOperator_Gt_GtE",
        reason="because",
    )


def test_an_equivalent_is_matched_by_place_line_and_mutated_line() -> None:
    verdict = classify(SPEC, SOURCE, PROPOSALS, [_entry()], mutated=MUTATED)
    assert [(m.job_id, e.reason) for m, e in verdict.equivalent] == [("cmp", "because")]
    assert [m.job_id for m in verdict.run] == ["add"]


@pytest.mark.parametrize(
    "changes",
    [{"where": "Box.grow"}, {"to": "if value is None or value < cap:"}, {"line": "x"}],
)
def test_an_entry_that_matches_no_mutant_stops_the_run(changes: dict[str, str]) -> None:
    with pytest.raises(SelectionError, match="matches no mutant"):
        classify(SPEC, SOURCE, PROPOSALS, [_entry(**changes)], mutated=MUTATED)


def test_an_entry_that_matches_two_mutants_asks_for_a_column() -> None:
    twice = [*PROPOSALS, _proposal("cmp2", "core/ReplaceComparisonOperator_Gt_GtE", 7, 30, 31)]
    mutated = {**MUTATED, "cmp2": MUTATED["cmp"]}
    with pytest.raises(SelectionError, match="matches 2 mutants"):
        classify(SPEC, SOURCE, twice, [_entry()], mutated=mutated)


def test_an_entry_may_stand_for_identical_mutants_it_counts() -> None:
    """``count:``: identical mutations of identical lines at one column, one reason."""
    from dataclasses import replace

    twice = [*PROPOSALS, _proposal("cmp2", "core/ReplaceComparisonOperator_Gt_GtE", 7, 30, 31)]
    mutated = {**MUTATED, "cmp2": MUTATED["cmp"]}
    verdict = classify(SPEC, SOURCE, twice, [replace(_entry(), count=2)], mutated=mutated)
    assert {m.job_id for m, _ in verdict.equivalent} == {"cmp", "cmp2"}
    with pytest.raises(SelectionError, match="matches 1 mutants, not 2"):
        classify(SPEC, SOURCE, PROPOSALS, [replace(_entry(), count=2)], mutated=MUTATED)


def test_open_entries_are_still_run() -> None:
    verdict = classify(SPEC, SOURCE, PROPOSALS, [], open_entries=[_entry()], mutated=MUTATED)
    assert "cmp" in {m.job_id for m in verdict.run}
    assert set(verdict.open) == {"cmp"}


def test_the_sample_is_fixed_by_its_seed() -> None:
    verdict = classify(SPEC, SOURCE, PROPOSALS, [], mutated=MUTATED)
    assert sample(verdict.run, 1, seed=3) == sample(verdict.run, 1, seed=3)
    assert sample(verdict.run, 5, seed=3) == verdict.run


def test_the_shipped_lists_load() -> None:
    specs = load_modules(ROOT / "mutation" / "modules.yaml", ROOT)
    assert {s.contract for s in specs} == {
        "write-observer-chain",
        "shell-output",
        "dispatch-recorder",
    }
    keys = {s.key for s in specs}
    for key in ("equivalents", "open"):
        for entry in load_equivalents(ROOT / "mutation" / "equivalents.yaml", key):
            assert entry.module in keys, entry.describe()


def test_a_module_not_rerun_keeps_its_old_row_marked_with_its_date(tmp_path: Path) -> None:
    """--carry-over: a module without a fresh whole run keeps the document's old row and
    survivors, marked with the date of those figures, and stays out of the totals."""
    import report

    old_row = "| `_room/mod.py` | some-contract | 10 | 8 | 0 | 1 | 1 | 0 | 88.9% |"
    survivor = "| `_room/mod.py` | `limit` | `a \\| b` | `a & b` | a reason |"
    doc = tmp_path / "quality.md"
    doc.write_text(
        f"intro\n\n{report.BEGIN}\n\nProduced by `nox -s mutation` (2026-12-01 at commit "
        f"abc1234).\n\n| module | ... |\n|---|\n{old_row}\n\n{survivor}\n\n{report.END}\n",
        encoding="utf-8",
    )
    (carried,) = report.carried_modules(doc, [(SPEC.path, "no saved run")], "2026-12-02")
    assert carried.figures_of == "2026-12-01"
    assert carried.cells[2:4] == ("10", "8")
    report.update_doc(doc, [], [], [carried])
    text = doc.read_text(encoding="utf-8")
    assert "| 88.9% | not rerun on 2026-12-02 (no saved run): figures of 2026-12-01 |" in text
    assert "a reason (from the run of 2026-12-01; not rerun since) |" in text
    assert "| all rerun (0 of 1 modules) |" in text
    # carried again a day later: the date of the figures stays that of the run
    (again,) = report.carried_modules(doc, [(SPEC.path, "no saved run")], "2026-12-03")
    assert again.figures_of == "2026-12-01"
    report.update_doc(doc, [], [], [again])
    assert text.count("not rerun since") == doc.read_text(encoding="utf-8").count("not rerun since")
    with pytest.raises(SystemExit, match="no earlier row"):
        report.carried_modules(doc, [("reference/_room/other.py", "no saved run")], "x")
