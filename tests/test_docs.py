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


def test_every_path_on_the_architecture_page_exists() -> None:
    """docs/architecture.md is the newcomer's map: each path it names must be there."""
    repo = DOCS.parent
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    named = set(
        re.findall(r"`((?:reference|conformance|scenarios|docs|seamspec|tests)/[^`*<]+)`", text)
    )
    assert len(named) > 20
    missing = sorted(p for p in named if not (repo / p).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
    # The bare file names listed for each room exist in every room that claims them.
    for room in ("write_observer_chain", "shell_output", "dispatch_recorder"):
        for part in (
            "catalogue.yaml",
            "schema.json",
            "model.py",
            "driver.py",
            "oracle.py",
            "expect.py",
            "reference_adapter.py",
            "mutants.py",
            "strategies.py",
            "timeline.py",
        ):
            assert (repo / "conformance" / "_contracts" / room / part).exists(), (room, part)


@pytest.mark.parametrize("contract", sorted(CONTRACT_PAGES))
def test_each_contract_names_its_docs_page_and_explain_points_there(
    contract: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from seamspec._cli import main

    page = catalogue().contracts[contract].docs
    assert DOCS.parent / page == CONTRACT_PAGES[contract], f"{contract}'s catalogue names {page}"
    rule = catalogue().rules_of(contract)[0]
    assert main(["explain", rule.id]) == 0
    assert f"see {page};" in capsys.readouterr().out
