"""The cache of texts known to satisfy the schema: skips only what it may, never a problem."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seamspec.conformance import validate_files
from seamspec.conformance._core import scenario as scenario_module
from seamspec.conformance._core.errors import Problem
from seamspec.conformance._core.scenario import default_scenario_root, scenario_schema
from seamspec.conformance._core.schema_cache import SchemaVerdicts
from seamspec.conformance._core.yaml_loader import LoadedYaml

SHIPPED = default_scenario_root() / "write-observer-chain" / "woc-join-two-annotations.yaml"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "cache"
    monkeypatch.setenv("SEAMSPEC_CACHE_DIR", str(folder))
    scenario_module._verdicts.cache_clear()
    yield folder
    scenario_module._verdicts.cache_clear()


def _count_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    checked: list[str] = []
    real = scenario_module._validation_problems

    def counting(file: str, loaded: LoadedYaml, validator: Any) -> list[Problem]:
        checked.append(Path(file).name)
        return real(file, loaded, validator)

    monkeypatch.setattr(scenario_module, "_validation_problems", counting)
    return checked


def test_a_valid_text_is_checked_once_then_remembered_across_processes(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / SHIPPED.name
    copy.write_text(SHIPPED.read_text(encoding="utf-8"), encoding="utf-8")
    checked = _count_checks(monkeypatch)
    scenarios, problems = validate_files([copy])
    assert (len(scenarios), problems, checked) == (1, [], [copy.name])
    (written,) = cache.glob("schema-valid-*.txt")
    assert written.read_text().split() == [SchemaVerdicts.digest(copy.read_text())]
    scenario_module._verdicts.cache_clear()  # as a new process would start
    scenarios, problems = validate_files([copy])
    assert (len(scenarios), problems, checked) == (1, [], [copy.name]), "checked again"


def test_a_changed_or_invalid_text_is_always_checked(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / SHIPPED.name
    copy.write_text(SHIPPED.read_text(encoding="utf-8"), encoding="utf-8")
    validate_files([copy])
    checked = _count_checks(monkeypatch)
    copy.write_text(copy.read_text().replace("level: MUST", "level: MAYBE"), encoding="utf-8")
    for _ in range(2):
        _, problems = validate_files([copy])
        assert any("MAYBE" in p.message for p in problems), problems
    assert checked == [copy.name, copy.name], "a file with problems is never remembered"


def test_the_cache_is_per_schema_and_ignores_what_is_not_a_digest(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdicts = SchemaVerdicts(scenario_schema())
    other = SchemaVerdicts({"type": "object"})
    text = SHIPPED.read_text(encoding="utf-8")
    verdicts.add(SchemaVerdicts.digest(text))
    verdicts.save()
    assert SchemaVerdicts(scenario_schema()).known_valid(SchemaVerdicts.digest(text))
    assert not other.known_valid(SchemaVerdicts.digest(text)), "another schema, another file"
    (written,) = cache.glob("schema-valid-*.txt")
    written.write_text("not a digest\n" + "z" * 64 + "\n\x00\xff\n", encoding="latin-1")
    assert not SchemaVerdicts(scenario_schema()).known_valid(SchemaVerdicts.digest(text))


def test_off_and_unwritable_caches_are_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = SHIPPED.read_text(encoding="utf-8")
    monkeypatch.setenv("SEAMSPEC_CACHE_DIR", "off")
    verdicts = SchemaVerdicts(scenario_schema())
    verdicts.add(SchemaVerdicts.digest(text))
    verdicts.save()
    assert not SchemaVerdicts(scenario_schema()).known_valid(SchemaVerdicts.digest(text))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SEAMSPEC_CACHE_DIR", str(blocker / "below"))
    verdicts = SchemaVerdicts(scenario_schema())
    verdicts.add(SchemaVerdicts.digest(text))
    verdicts.save()  # cannot create the folder: not used, no error
    assert not SchemaVerdicts(scenario_schema()).known_valid(SchemaVerdicts.digest(text))
