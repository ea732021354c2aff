"""The machine-readable rule catalogue: the single source of rule IDs, levels and text.

Docs tables, ``seamspec rules`` and the check that every scenario's ``rules:`` entry is
real are all derived from these files, so a rule cannot exist in one place only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import yaml

from seamspec.conformance._core.errors import CatalogueError
from seamspec.conformance._core.registry import CONTRACTS, rooms

__all__ = [
    "CONTRACTS",
    "PROFILES",
    "SPEC_VERSION",
    "Catalogue",
    "Contract",
    "Feature",
    "Profile",
    "Rule",
    "catalogue",
    "rules_markdown",
]

#: Bumped when a rule is added, split or its meaning changes; reports carry it.
SPEC_VERSION = "2026.27"


Level = Literal["MUST", "SHOULD"]
Profile = Literal["upstream", "strict"]

#: The profiles a run can judge by: ``upstream`` (the default) counts what the upstream
#: crates promise; ``strict`` also counts seamspec's own decisions at their level.
PROFILES: tuple[Profile, ...] = ("upstream", "strict")


@dataclass(frozen=True)
class Rule:
    id: str
    contract: str
    level: Level
    text: str
    rationale: str
    origin: Literal["upstream", "seamspec"]
    #: Where upstream says it (file:line or seed section); empty for seamspec's own rules.
    citation: str = ""
    #: The optional feature this rule governs, if any (see :attr:`profile`).
    feature: str | None = None

    @property
    def decides_conformance(self) -> bool:
        """MUST rules decide conformance; SHOULD rules are reported as warnings."""
        return self.level == "MUST"

    @property
    def profile(self) -> Profile:
        """The least profile under which this rule counts.

        Upstream's promises count by default. seamspec's own decisions count only under
        ``--profile strict``, except a rule that governs an optional feature: an
        implementation that declares the feature has opted into it, and the scenarios
        that need the feature do not run otherwise.
        """
        return "upstream" if self.origin == "upstream" or self.feature else "strict"

    def counts_under(self, profile: Profile) -> bool:
        return profile == "strict" or self.profile == "upstream"


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
    #: The contract's page in the docs, relative to the repository root.
    docs: str = ""

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


#: libyaml's safe loader when PyPI's PyYAML has it (the same safe subset), else PyYAML's own:
#: the pure-Python parser spent a sixth of a command's start-up on the three catalogues.
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_contract(name: str, text: str) -> Contract:
    data = yaml.load(text, Loader=_SAFE_LOADER)  # a safe loader, C or Python
    try:
        prefix = data["prefix"]
        rules = []
        for entry in data["rules"]:
            if not str(entry["id"]).startswith(prefix + "-"):
                raise CatalogueError(f"{name}: rule {entry['id']} does not start with {prefix}-")
            if entry["level"] not in ("MUST", "SHOULD"):
                raise CatalogueError(f"{name}: rule {entry['id']} has level {entry['level']!r}")
            if entry["origin"] not in ("upstream", "seamspec"):
                raise CatalogueError(f"{name}: rule {entry['id']} has origin {entry['origin']!r}")
            rules.append(
                Rule(
                    id=entry["id"],
                    contract=data["contract"],
                    level=entry["level"],
                    text=" ".join(str(entry["text"]).split()),
                    rationale=" ".join(str(entry["rationale"]).split()),
                    origin=entry["origin"],
                    citation=" ".join(str(entry.get("citation", "")).split()),
                    feature=entry.get("feature"),
                )
            )
        features = tuple(
            Feature(str(entry["name"]), " ".join(str(entry["text"]).split()))
            for entry in data.get("features", ())
        )
        names = {f.name for f in features}
        for rule in rules:
            if rule.feature is not None and rule.feature not in names:
                raise CatalogueError(
                    f"{name}: rule {rule.id} names feature {rule.feature!r}, "
                    f"which is not in the catalogue's features ({', '.join(sorted(names))})"
                )
        return Contract(
            data["contract"], data["title"], prefix, tuple(rules), features, str(data["docs"])
        )
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
