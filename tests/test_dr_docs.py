"""The dispatch-recorder page agrees with the suite: its checklists name real things.

The page's "Boundary checklist" maps each rule to the scenarios that pin its edges, and its
"Upstream says, seamspec adds" table explains each rule's origin. Both are written by
hand, so a renamed scenario or a new rule could leave them stale without this test.
"""

from __future__ import annotations

import re
from pathlib import Path

from seamspec.conformance import catalogue, load_scenarios
from seamspec.conformance._contracts.dispatch_recorder.mutants import MUTANTS

PAGE = Path(__file__).parents[1] / "docs" / "contracts" / "dispatch-recorder.md"
CONTRACT = "dispatch-recorder"


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _rows(section: str) -> dict[str, str]:
    return {
        line.strip().strip("|").split("|")[0].strip(): line
        for line in section.splitlines()
        if line.startswith("| DR-")
    }


def test_boundary_checklist_covers_every_rule_with_real_citing_scenarios() -> None:
    scenarios = {s.id: s for s in load_scenarios() if s.contract == CONTRACT}
    rows = _rows(_section("Boundary checklist"))
    rules = {r.id for r in catalogue() if r.contract == CONTRACT}
    assert set(rows) == rules, f"rules missing from the checklist: {sorted(rules - set(rows))}"
    for rule, line in rows.items():
        named = re.findall(r"`([a-z0-9-]+)`", line.split("|")[-2])
        assert named, f"{rule}: no scenario named"
        for short in named:
            scenario = scenarios.get(f"dr-{short}")
            assert scenario is not None, f"{rule}: no scenario dr-{short}"
            assert rule in scenario.rules, f"{rule}: dr-{short} does not cite it"


def test_upstream_table_matches_each_rules_origin_and_citation() -> None:
    rows = _rows(_section("Upstream says, seamspec adds"))
    for rule in catalogue().rules_of(CONTRACT):
        assert rule.id in rows, f"{rule.id} is missing from 'Upstream says, seamspec adds'"
        origin = rows[rule.id].split("|")[2]
        assert rule.origin in origin, f"{rule.id}: the table says {origin.strip()!r}"
        if rule.origin == "upstream":
            assert rule.citation, f"{rule.id} is an upstream rule without a citation"
            assert "seed 004" in rule.citation, f"{rule.id}: cite the seed page and line"
        if rule.feature:
            assert "feature" in origin, f"{rule.id} governs {rule.feature}: say so"


#: Seed page 004 (polyc-agent's DispatchRecorder trait, as received) has 55 lines.
SEED_LINES = 55


def test_every_cited_seed_line_exists() -> None:
    """Citations name lines of seed 004; each must be a line the seed has."""
    for rule in catalogue().rules_of(CONTRACT):
        for first, last in re.findall(r"l\.(\d+)(?:-(\d+))?", rule.citation):
            for number in (first, last or first):
                assert 1 <= int(number) <= SEED_LINES, f"{rule.id} cites l.{number}"


def test_outsider_table_names_real_mutants_and_catching_scenarios() -> None:
    """Each row of "Outsider mutants" names a real outsider mutant, its rule, and scenarios
    that cite that rule (every batch's rows: ``out-dr-*``, ``out-dr4-*``, ``out-b13dr-*``;
    a rule cell may add words after the ID, such as the rule the outsider wrote)."""
    scenarios = {s.id: s for s in load_scenarios() if s.contract == CONTRACT}
    section = _section("Outsider mutants")
    rows = [line for line in section.splitlines() if line.startswith("| `out-")]
    assert rows, "the outsider table is empty"
    for line in rows:
        cells = line.strip().strip("|").split("|")
        name = cells[0].strip().strip("`")
        mutant = MUTANTS[name]
        assert mutant.origin.startswith("outsider"), name
        rule = cells[1].split()[0]
        assert rule == mutant.rule, f"{name}: the table says {cells[1].strip()}"
        named = re.findall(r"`([a-z0-9-]+)`", cells[-1])
        assert named, f"{name}: no scenario named"
        for short in named:
            assert mutant.rule in scenarios[f"dr-{short}"].rules, f"{name}: dr-{short}"
