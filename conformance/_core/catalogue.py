"""The machine-readable rule catalogue: the single source of rule IDs, levels and text.

Docs tables, ``seamspec rules`` and the check that every scenario's ``rules:`` entry is
real are all derived from these files, so a rule cannot exist in one place only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Literal

import yaml

from seamspec.conformance._core.errors import CatalogueError
from seamspec.conformance._core.registry import CONTRACTS, rooms

__all__ = [
    "CONTRACTS",
    "SPEC_VERSION",
    "Catalogue",
    "Contract",
    "Feature",
    "Rule",
    "catalogue",
    "rules_markdown",
]

#: Bumped when a rule is added, split or its meaning changes; reports carry it.
SPEC_VERSION = "2026.11"


Level = Literal["MUST", "SHOULD"]


@dataclass(frozen=True)
class Rule:
    id: str
    contract: str
    level: Level
    text: str
    rationale: str
    origin: Literal["upstream", "seamspec"]

    @property
    def decides_conformance(self) -> bool:
        """MUST rules decide conformance; SHOULD rules are reported as warnings."""
        return self.level == "MUST"


@dataclass(frozen=True)
class Feature:
    """An optional part of a contract; scenarios that need it are skipped when undeclared."""

    name: str
    text: str


@dataclass(frozen=True)
class Contract:
    name: str
    title: str
    prefix: str
    rules: tuple[Rule, ...]
    features: tuple[Feature, ...] = ()

    @property
    def scenario_prefix(self) -> str:
        """What every scenario ID of this contract starts with (``woc`` in ``woc-join-...``)."""
        return self.prefix.lower()


class Catalogue:
    def __init__(self, contracts: list[Contract]) -> None:
        self.contracts = {c.name: c for c in contracts}
        self._rules = {r.id: r for c in contracts for r in c.rules}

    def __iter__(self) -> Iterator[Rule]:
        return iter(self._rules.values())

    def __contains__(self, rule_id: object) -> bool:
        return rule_id in self._rules

    def __getitem__(self, rule_id: str) -> Rule:
        return self._rules[rule_id]

    def rules_of(self, contract: str) -> tuple[Rule, ...]:
        found = self.contracts.get(contract)
        return found.rules if found else ()


def _load_contract(name: str, text: str) -> Contract:
    data = yaml.safe_load(text)
    try:
        prefix = data["prefix"]
        rules = []
        for entry in data["rules"]:
            if not str(entry["id"]).startswith(prefix + "-"):
                raise CatalogueError(f"{name}: rule {entry['id']} does not start with {prefix}-")
            if entry["level"] not in ("MUST", "SHOULD"):
                raise CatalogueError(f"{name}: rule {entry['id']} has level {entry['level']!r}")
            rules.append(
                Rule(
                    id=entry["id"],
                    contract=data["contract"],
                    level=entry["level"],
                    text=" ".join(str(entry["text"]).split()),
                    rationale=" ".join(str(entry["rationale"]).split()),
                    origin=entry["origin"],
                )
            )
        features = tuple(
            Feature(str(entry["name"]), " ".join(str(entry["text"]).split()))
            for entry in data.get("features", ())
        )
        return Contract(data["contract"], data["title"], prefix, tuple(rules), features)
    except (KeyError, TypeError) as error:
        raise CatalogueError(f"catalogue file {name} is malformed: missing {error}") from None


@cache
def catalogue() -> Catalogue:
    """Load every contract's catalogue shipped in the package (cached)."""
    contracts = []
    for room in rooms():
        entry = room.data_file("catalogue.yaml")
        label = f"{room.name}/catalogue.yaml"
        if not entry.is_file():
            raise CatalogueError(f"{label} is missing from {room.package}: a broken install?")
        contracts.append(_load_contract(label, entry.read_text(encoding="utf-8")))
    ids = [r.id for c in contracts for r in c.rules]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CatalogueError(f"rule IDs defined twice in the catalogue: {duplicates}")
    return Catalogue(contracts)


def rules_markdown(contract: str | None = None) -> str:
    """The rules table the docs embed; ``tests/test_docs.py`` checks the docs against it."""
    lines = ["| ID | level | rule | rationale |", "|---|---|---|---|"]
    for rule in catalogue():
        if contract is None or rule.contract == contract:
            text, why = (s.replace("|", "\\|") for s in (rule.text, rule.rationale))
            lines.append(f"| {rule.id} | {rule.level} | {text} | {why} |")
    return "\n".join(lines) + "\n"
