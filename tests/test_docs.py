"""The docs agree with the catalogue and the suite: no rule exists in one place only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from seamspec.conformance import catalogue, load_scenarios, rule_coverage, rules_markdown

DOCS = Path(__file__).parents[1] / "docs"
CONTRACT_PAGES = {
    "write-observer-chain": DOCS / "contracts" / "write-observer-chain.md",
    "shell-output": DOCS / "contracts" / "shell-output-observer.md",
    "dispatch-recorder": DOCS / "contracts" / "dispatch-recorder.md",
}


@pytest.mark.parametrize("contract", sorted(CONTRACT_PAGES))
def test_rules_table_is_generated_from_the_catalogue(contract: str) -> None:
    text = CONTRACT_PAGES[contract].read_text(encoding="utf-8")
    begin, end = f"<!-- begin rules: {contract} -->", f"<!-- end rules: {contract} -->"
    assert begin in text, f"marker missing in {CONTRACT_PAGES[contract]}"
    assert end in text, f"marker missing in {CONTRACT_PAGES[contract]}"
    table = text.split(begin, 1)[1].split(end, 1)[0].strip() + "\n"
    assert table == rules_markdown(contract), (
        "the docs' rules table is out of date: replace it with "
        f"`seamspec rules --markdown --contract {contract}`"
    )


@pytest.mark.parametrize("contract", sorted(CONTRACT_PAGES))
def test_every_rule_id_in_the_docs_exists(contract: str) -> None:
    text = CONTRACT_PAGES[contract].read_text(encoding="utf-8")
    mentioned = set(re.findall(r"\b(?:WOC|SOO|DR)-[A-Z0-9]+(?:-[A-Z0-9]+)*\b(?!-\*)", text))
    unknown = {m for m in mentioned if m not in catalogue()}
    assert not unknown, (
        f"{CONTRACT_PAGES[contract].name} mentions rules not in the catalogue: {unknown}"
    )


def test_every_published_rule_is_cited_by_a_scenario() -> None:
    coverage = rule_coverage(load_scenarios())
    for contract in CONTRACT_PAGES:
        for rule in catalogue().rules_of(contract):
            assert coverage[rule.id], f"rule {rule.id} is cited by no scenario"
