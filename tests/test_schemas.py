"""Scenario files validate in editors: self-contained schemas, modelines, `seamspec new`.

The independent check is check-jsonschema, which knows nothing of seamspec: given only
the schema a scenario's modeline points to, it must accept a good scenario and reject a
broken one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from seamspec._cli import main
from seamspec._cmd_schema import MODELINE, schema_files
from seamspec.conformance import CONTRACTS, load_scenarios, validate_files
from seamspec.conformance._core.scenario import contract_scenario_schema, scenario_schema

ROOT = Path(__file__).parents[1]
SHIPPED = ROOT / "scenarios"


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for item in node for r in _refs(item)]
    return []


def _pointer(schema: dict[str, Any], ref: str) -> Any:
    node: Any = schema
    for part in ref.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


@pytest.mark.parametrize("contract", [None, *CONTRACTS])
def test_schemas_are_self_contained(contract: str | None) -> None:
    schema = scenario_schema() if contract is None else contract_scenario_schema(contract)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert str(schema["$id"]).startswith("urn:seamspec:schema:scenario")
    refs = _refs(schema)
    assert refs
    for ref in refs:
        assert ref.startswith("#/"), f"{ref} points outside the document"
        _pointer(schema, ref)  # resolves, or KeyError
    assert "seamspec.invalid" not in json.dumps(schema)


def _plain_validator(schema: dict[str, Any]) -> Any:
    """What ``jsonschema.validate`` builds on each call (the schema checked, then a
    validator for its draft), built once: the same check, without re-checking the schema
    for each of the suite's files."""
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_every_shipped_scenario_validates_with_plain_jsonschema() -> None:
    """No registry, no retrieval: the schema alone, as an editor has it."""
    whole = _plain_validator(scenario_schema())
    per_contract = {c: _plain_validator(contract_scenario_schema(c)) for c in CONTRACTS}
    for scenario in load_scenarios():
        per_contract[scenario.contract].validate(scenario.raw)
        whole.validate(scenario.raw)


def test_the_committed_schema_files_are_current(capsys: pytest.CaptureFixture[str]) -> None:
    """schemas/ is what modelines point to; a changed room schema must be rewritten there."""
    assert main(["schema", "--output", str(ROOT / "schemas"), "--check"]) == 0, (
        "run `seamspec schema --output schemas`"
    )
    assert {p.name for p in (ROOT / "schemas").glob("*.json")} == set(schema_files())


def test_check_reports_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--output", str(tmp_path)]) == 0
    (tmp_path / "shell-output.scenario.schema.json").write_text("{}\n")
    assert main(["schema", "--output", str(tmp_path), "--check"]) == 1
    err = capsys.readouterr().err
    assert "shell-output.scenario.schema.json is missing or out of date" in err


def test_schema_prints_one_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--contract", "dispatch-recorder"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == contract_scenario_schema("dispatch-recorder")
    assert printed["properties"]["contract"]["enum"] == ["dispatch-recorder"]


@pytest.fixture
def copied_suite(tmp_path: Path) -> Path:
    """A copy of the shipped scenarios, laid out as in the repository, without modelines
    (as they were before `--modelines` first ran on them)."""
    shutil.copytree(SHIPPED, tmp_path / "scenarios", ignore=shutil.ignore_patterns("*.py"))
    for path in (tmp_path / "scenarios").rglob("*.yaml"):
        lines = path.read_bytes().splitlines(keepends=True)
        if lines and MODELINE.match(lines[0].decode().rstrip("\r\n")):
            path.write_bytes(b"".join(lines[1:]))
    return tmp_path


def test_shipped_modelines_point_at_the_committed_schemas() -> None:
    """Where a shipped scenario has a modeline, it is the one `--modelines` writes."""
    for path in sorted(SHIPPED.rglob("*.yaml")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        if "yaml-language-server" not in first:
            continue
        assert first == (
            f"# yaml-language-server: $schema=../../schemas/{path.parent.name}.scenario.schema.json"
        ), path
        assert (path.parent / first.split("=", 1)[1]).is_file()


def test_modelines_on_a_copy_of_the_suite(
    copied_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenarios, schemas = copied_suite / "scenarios", copied_suite / "schemas"
    before = {p: p.read_bytes() for p in scenarios.rglob("*.yaml")}
    assert main(["schema", "--output", str(schemas), "--modelines", str(scenarios)]) == 0
    assert f"modelines: {len(before)} file(s) updated, 0 already up to date" in (
        capsys.readouterr().out
    )
    for path, original in before.items():
        first, _, rest = path.read_bytes().partition(b"\n")
        contract = path.parent.name
        assert first.decode() == (
            f"# yaml-language-server: $schema=../../schemas/{contract}.scenario.schema.json"
        )
        assert rest == original  # nothing else touched, byte for byte
        target = (path.parent / first.decode().split("=", 1)[1]).resolve()
        assert target == (schemas / f"{contract}.scenario.schema.json").resolve()
    # still the same suite
    again, problems = validate_files([scenarios])
    assert problems == []
    assert len(again) == len(before)
    # idempotent
    assert main(["schema", "--output", str(schemas), "--modelines", str(scenarios)]) == 0
    assert f"0 file(s) updated, {len(before)} already up to date" in capsys.readouterr().out


def test_a_stale_modeline_is_replaced_not_added(
    copied_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copied_suite / "scenarios" / "shell-output" / "soo-capped-echo.yaml"
    body = path.read_text(encoding="utf-8")
    path.write_text(
        "# yaml-language-server: $schema=https://example.invalid/old.json\r\n"
        + body.replace("\n", "\r\n"),
        encoding="utf-8",
        newline="",
    )
    assert main(["schema", "-o", str(copied_suite / "schemas"), "--modelines", str(path)]) == 0
    text = path.read_bytes().decode()
    assert text.count("yaml-language-server") == 1
    assert text.startswith(
        "# yaml-language-server: $schema=../../schemas/shell-output.scenario.schema.json\r\n"
    )
    assert text.endswith(body.replace("\n", "\r\n"))  # line ends kept


def test_modelines_refuse_a_file_without_a_known_contract(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_text("id: woc-x\ncontract: write-observer-chian\n")
    assert main(["schema", "-o", str(tmp_path / "s"), "--modelines", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert "did you mean 'write-observer-chain'" in err[0]
    assert bad.read_text().startswith("id:")  # left alone


def _check_jsonschema(schema: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("check-jsonschema") or str(
        Path(sys.executable).parent / "check-jsonschema"
    )
    return subprocess.run(
        [executable, "--schemafile", str(schema), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _modeline_target(path: Path) -> Path:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert MODELINE.match(first), first
    return path.parent / first.split("=", 1)[1]


def test_check_jsonschema_accepts_the_suite_by_its_modelines(
    copied_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenarios, schemas = copied_suite / "scenarios", copied_suite / "schemas"
    assert main(["schema", "--output", str(schemas), "--modelines", str(scenarios)]) == 0
    for contract in CONTRACTS:
        files = sorted((scenarios / contract).glob("*.yaml"))
        targets = {_modeline_target(f).resolve() for f in files}
        assert len(targets) == 1
        proc = _check_jsonschema(targets.pop(), *files)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_jsonschema_rejects_a_broken_scenario(
    copied_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenarios, schemas = copied_suite / "scenarios", copied_suite / "schemas"
    path = scenarios / "write-observer-chain" / "woc-join-two-annotations.yaml"
    assert main(["schema", "--output", str(schemas), "--modelines", str(path)]) == 0
    path.write_text(path.read_text().replace("hook: after_write", "hook: after_wrtie"))
    proc = _check_jsonschema(_modeline_target(path), path)
    assert proc.returncode == 1
    assert "after_wrtie" in proc.stdout + proc.stderr


@pytest.mark.parametrize("scenario_id", ["woc-my-case", "soo-my-case", "dr-my-case"])
def test_new_writes_a_valid_skeleton_whose_modeline_resolves(
    scenario_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new", scenario_id, "--dir", "mine"]) == 0
    path = tmp_path / "mine" / f"{scenario_id}.yaml"
    text = path.read_text(encoding="utf-8")
    assert "TODO" in text
    target = _modeline_target(path)
    assert target.resolve().parent == (tmp_path / "schemas").resolve()
    (scenario,) = load_scenarios([path])
    assert target.name == f"{scenario.contract}.scenario.schema.json"
    assert scenario.id == scenario_id
    proc = _check_jsonschema(target, path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    capsys.readouterr()
    assert main(["run", "-q", "--scenarios", str(path)]) == 0  # the reference passes it
    assert main(["new", scenario_id, "--dir", "mine"]) == 2  # never overwrites
    assert "already exists" in capsys.readouterr().err
