"""The shell-output page agrees with the suite: its checklists name real things.

The page's "Boundary checklist" maps each rule to the scenarios that pin its edges, its
"Upstream says, seamspec adds" table explains each rule's origin, and its "Outsider
mutants" table names mutants and the scenarios that now catch them. All are written by
hand, so a renamed scenario or a new rule could leave them stale without this test.
"""

from __future__ import annotations

import re
from pathlib import Path

from seamspec.conformance import catalogue, load_scenarios
from seamspec.conformance._contracts.shell_output.mutants import MUTANTS

PAGE = Path(__file__).parents[1] / "docs" / "contracts" / "shell-output-observer.md"
CONTRACT = "shell-output"


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _rows(section: str, prefix: str = "| SOO-") -> dict[str, str]:
    rows = {}
    for line in section.splitlines():
        if line.startswith(prefix):
            rows[line.strip().strip("|").split("|")[0].strip().strip("`")] = line
    return rows


def test_boundary_checklist_covers_every_rule_with_real_citing_scenarios() -> None:
    scenarios = {s.id: s for s in load_scenarios() if s.contract == CONTRACT}
    rows = _rows(_section("Boundary checklist"))
    rules = {r.id for r in catalogue() if r.contract == CONTRACT}
    assert set(rows) == rules, f"rules missing from the checklist: {sorted(rules - set(rows))}"
    for rule, line in rows.items():
        named = re.findall(r"`([a-z0-9-]+)`", line.split("|")[-2])
        assert named, f"{rule}: no scenario named"
        for short in named:
            scenario = scenarios.get(f"soo-{short}")
            assert scenario is not None, f"{rule}: no scenario soo-{short}"
            assert rule in scenario.rules, f"{rule}: soo-{short} does not cite it"


def test_every_soo_scenario_is_in_the_checklist() -> None:
    named = set(re.findall(r"`([a-z0-9-]+)`", _section("Boundary checklist")))
    ids = {s.id.removeprefix("soo-") for s in load_scenarios() if s.contract == CONTRACT}
    assert ids <= named, f"scenarios the checklist does not name: {sorted(ids - named)}"


def test_upstream_table_matches_each_rules_origin_and_citation() -> None:
    rows = _rows(_section("Upstream says, seamspec adds"))
    for rule in catalogue().rules_of(CONTRACT):
        assert rule.id in rows, f"{rule.id} is missing from 'Upstream says, seamspec adds'"
        origin = rows[rule.id].split("|")[2]
        assert rule.origin in origin, f"{rule.id}: the table says {origin.strip()!r}"
        if rule.origin == "upstream":
            assert rule.citation, f"{rule.id} is an upstream rule without a citation"


def test_outsider_table_names_real_mutants_and_catching_scenarios() -> None:
    scenarios = {s.id: s for s in load_scenarios() if s.contract == CONTRACT}
    rows = _rows(_section("Outsider mutants"), prefix="| `out-soo-")
    assert rows, "the outsider table is empty"
    for name, line in rows.items():
        mutant = MUTANTS[name]
        assert mutant.origin.startswith("outsider"), name
        cells = line.strip().strip("|").split("|")
        assert cells[1].strip() == mutant.rule, f"{name}: the table says {cells[1].strip()}"
        for short in re.findall(r"`([a-z0-9-]+)`", cells[-1]):
            assert mutant.rule in scenarios[f"soo-{short}"].rules, f"{name}: soo-{short}"
