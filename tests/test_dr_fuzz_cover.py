"""``seamspec fuzz`` for the dispatch recorder reaches every tampering group at any seed.

Random examples reach a rare shape by luck (hypothesis makes few fresh examples and
mutates the rest): at seed 2, 500 examples held no valid forgery re-chained on a journal
the turn wrote whole, and ``dr-journal-verify-remembers`` survived. Each run now also
tries one cover example per tampering group (the strategies' ``covers()``), within its
budget; and hypothesis's constants from local modules are off while fuzzing, so that a
seed's examples do not move with unrelated code.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from seamspec.conformance import load_adapter, validate_files
from seamspec.conformance._contracts.dispatch_recorder.strategies import covers, dr_scenarios
from seamspec.conformance._contracts.dispatch_recorder.strategies_journal import (
    GROUPS,
    RECIPES,
    tampering_groups,
)
from seamspec.conformance._quality import fuzz as fuzz_module
from seamspec.conformance._quality.fuzz import fuzz
from seamspec.conformance._quality.fuzz_search import local_constants_off

CONTRACT = "dispatch-recorder"
#: Enough for the covers and a few random examples: the guarantee needs no luck.
BUDGET = 40


def _drawn(strategy: Any, count: int, seed: int) -> list[dict[str, Any]]:
    """The first ``count`` examples hypothesis generates from ``strategy`` at ``seed``."""
    got: list[dict[str, Any]] = []

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(document: dict[str, Any]) -> None:
        got.append(document)

    hypothesis_seed(seed)(collect)()
    return got


def _remembering_forgery(document: dict[str, Any]) -> bool:
    """A valid forgery re-chained on a journal the turn wrote whole (no earlier entries):
    it verifies, with other mutations than the recorder wrote."""
    recorder = document["given"].get("recorder") or {}
    ops = [s["tamper_journal"] for s in document["when"] if "tamper_journal" in s]
    if not recorder.get("journal") or recorder.get("existing_journal") or not ops:
        return False
    forged = ops[0].get("forge", {})
    return bool(forged.get("signature") == "valid" and forged.get("rechain"))


def test_groups_are_the_recipes_and_the_append_on_an_empty_journal() -> None:
    assert set(GROUPS) == {*RECIPES, "append:empty"}
    assert len(GROUPS) == len(set(GROUPS)) == 17


def test_each_cover_starts_with_its_group_and_is_a_valid_scenario(tmp_path: Path) -> None:
    documents = []
    for group, strategy in zip(GROUPS, covers(), strict=True):
        with local_constants_off():
            (document,) = _drawn(strategy, 1, seed=0)
        assert tampering_groups(document)[:1] == [group], group
        documents.append(document)
    forged = documents[GROUPS.index("forge:valid")]
    assert _remembering_forgery(forged)
    paths = []
    for index, document in enumerate(documents):
        path = tmp_path / f"dr-cover-{index}.yaml"
        path.write_text(yaml.safe_dump({"id": f"dr-cover-{index}", **document}), "utf-8")
        paths.append(path)
    scenarios, problems = validate_files(paths)
    assert not problems, problems
    assert len(scenarios) == len(GROUPS)


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The documents of the examples a fuzz run judges, in order."""
    documents: list[dict[str, Any]] = []
    make = fuzz_module.scenario_from_document

    def logging(document: dict[str, Any]) -> Any:
        documents.append(document)
        return make(document)

    monkeypatch.setattr(fuzz_module, "scenario_from_document", logging)
    return documents


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_seed_reaches_every_group(seed: int, logged: list[dict[str, Any]]) -> None:
    adapter = load_adapter("reference")
    try:
        assert fuzz(adapter, CONTRACT, examples=BUDGET, seed=seed, shrink=False) is None
    finally:
        adapter.close()
    assert len(logged) == BUDGET
    reached = {group for document in logged for group in tampering_groups(document)}
    assert reached == set(GROUPS)
    assert any(_remembering_forgery(document) for document in logged)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_seed_finds_the_remembering_verifier(seed: int) -> None:
    """Only a journal that verifies with other mutations than were recorded shows it."""
    mutant = load_adapter("mutant:dr-journal-verify-remembers")
    try:
        failure = fuzz(mutant, CONTRACT, examples=BUDGET, seed=seed, shrink=False)
    finally:
        mutant.close()
    assert failure is not None, f"dr-journal-verify-remembers survived seed {seed}"
    assert failure.document["given"]["recorder"]["journal"] is True


def test_local_constants_are_off_while_fuzzing() -> None:
    """The installed hypothesis still has the private hook seamspec replaces: if an
    upgrade removes or renames it, this fails (fuzzing itself only warns)."""
    from hypothesis.internal.conjecture import providers

    with local_constants_off() as off:
        assert off
        assert not any(providers._get_local_constants().set_for_type(t) for t in (int, str))


def test_a_seeds_examples_do_not_move_with_local_code(tmp_path: Path) -> None:
    """Loading a local module full of constants leaves a seed's examples as they were.

    The control is that hypothesis does read the module's constants when they are on:
    shown on its pool, not on the draws. Whether those constants move a seed's draws
    depends on what else the process loaded (the pool is every local module's constants,
    and it grows with the test files pytest imports), so under xdist, after another test
    file, the same seed's examples did not move, and a control on them failed."""
    from hypothesis.internal.conjecture import providers

    def draw() -> list[dict[str, Any]]:
        with local_constants_off():
            return _drawn(dr_scenarios(), 400, seed=11)

    before = draw()
    source = tmp_path / "seamspec_fuzz_constants_probe.py"
    # hypothesis ignores integers between -100 and 100; the plan's numbers go to 2**16
    numbers = ", ".join(str(n) for n in range(1000, 1040))
    texts = ", ".join(f'"probe {n}"' for n in range(20))
    source.write_text(f"NUMBERS = ({numbers})\nTEXTS = ({texts})\n", "utf-8")
    spec = importlib.util.spec_from_file_location(source.stem, source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[source.stem] = module
    try:
        after = draw()
        pool = providers._get_local_constants().set_for_type(int)
        with local_constants_off():
            pool_off = providers._get_local_constants().set_for_type(int)
    finally:
        del sys.modules[source.stem]
    assert after == before
    assert 1000 in pool  # hypothesis does read local constants when they are on
    assert 1000 not in pool_off
