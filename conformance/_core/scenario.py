"""Scenario files: load, validate against the JSON Schema and the catalogue, locate problems.

Nothing runs until every file is valid, and every problem found is reported at once
(file, line, what is wrong, what to do), the way a linter reports, so that an author
fixes a whole batch in one pass.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seamspec.conformance._core.catalogue import CONTRACTS, Contract, Profile, catalogue
from seamspec.conformance._core.errors import Problem, ScenarioError
from seamspec.conformance._core.registry import contract_linters, room
from seamspec.conformance._core.schema_cache import SchemaVerdicts
from seamspec.conformance._core.suggest import did_you_mean
from seamspec.conformance._core.yaml_loader import LoadedYaml, YamlProblem, load_yaml, read_text

if TYPE_CHECKING:
    # jsonschema is imported where a text is checked, not at start-up: it costs a quarter
    # of a second of CPU, and a suite the verdict cache knows (schema_cache) never needs it.
    import jsonschema
    from jsonschema.exceptions import ValidationError

__all__ = [
    "SCHEMA_ID",
    "Scenario",
    "contract_scenario_schema",
    "contract_schema",
    "default_scenario_root",
    "load_scenarios",
    "scenario_schema",
    "validate_files",
]


@dataclass(frozen=True)
class Scenario:
    """A validated scenario. ``request()`` is all an implementation ever sees of it."""

    id: str
    title: str
    contract: str
    rules: tuple[str, ...]
    level: str
    tags: tuple[str, ...]
    requires: tuple[str, ...]
    description: str
    given: dict[str, Any]
    when: list[Any]
    then: dict[str, Any]
    source: str
    line: int = 1
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: ``strict`` when what ``then`` pins is a seamspec decision (see :data:`PROFILES`).
    profile: Profile = "upstream"

    def request(self) -> dict[str, Any]:
        """The scenario as sent to an implementation: ``given`` and ``when``, never ``then``."""
        return {"id": self.id, "contract": self.contract, "given": self.given, "when": self.when}


#: The schemas' identifiers: names, not addresses. Nothing is ever fetched: every ``$ref``
#: in a composed schema is a JSON pointer into the same document, so one written file is
#: all an editor or validator needs, offline.
SCHEMA_ID = "urn:seamspec:schema:scenario"


@cache
def scenario_schema() -> dict[str, Any]:
    """The whole scenario schema: the generic shape plus one branch per contract.

    The shipped ``scenario.schema.json`` names no contract; the contract names, ID and
    rule prefixes, features and each contract's own ``schema.json`` are filled in from
    the registry and the catalogue, so a new contract needs no edit here. The result is
    self-contained (each room's schema is embedded under ``$defs/<contract>``): the kit
    validates with exactly what ``seamspec schema`` writes for editors.
    """
    return _compose(list(CONTRACTS), SCHEMA_ID)


@cache
def contract_scenario_schema(contract: str) -> dict[str, Any]:
    """The scenario schema for one contract only: what an editor wants for one file.

    Same rules as :func:`scenario_schema`, with ``contract`` fixed, so completion offers
    only that contract's vocabulary. KeyError for an unknown contract.
    """
    if contract not in CONTRACTS:
        raise KeyError(contract)
    return _compose([contract], f"{SCHEMA_ID}:{contract}")


def _compose(names: list[str], schema_id: str) -> dict[str, Any]:
    schema = copy.deepcopy(_schema_file("scenario.schema.json"))
    schema["$id"] = schema_id
    contracts = [catalogue().contracts[name] for name in names]
    properties = schema["properties"]
    scenario_prefixes = "|".join(c.scenario_prefix for c in contracts)
    properties["id"]["pattern"] = f"^({scenario_prefixes})-[a-z0-9]+(-[a-z0-9]+)*$"
    properties["contract"] = {
        "enum": list(names),
        "description": "the contract this scenario tests",
    }
    rule_prefixes = "|".join(c.prefix for c in contracts)
    properties["rules"]["items"]["pattern"] = f"^({rule_prefixes})-[A-Z0-9]+(-[A-Z0-9]+)*$"
    properties["requires"]["items"] = {"enum": [f.name for c in contracts for f in c.features]}
    if len(contracts) == 1:
        properties["contract"]["default"] = names[0]
    schema["$defs"] = {c.name: _embedded(c.name) for c in contracts}
    schema["allOf"] = [_contract_branch(c) for c in contracts]
    return schema


def _embedded(contract: str) -> dict[str, Any]:
    """A room's schema as a ``$defs`` entry: no ``$id`` of its own, local refs re-rooted."""
    part = contract_schema(contract)
    part.pop("$schema", None)
    part.pop("$id", None)
    rerooted: dict[str, Any] = _reroot(part, f"#/$defs/{contract}")
    return rerooted


def _reroot(node: Any, root: str) -> Any:
    if isinstance(node, dict):
        out = {k: _reroot(v, root) for k, v in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            out["$ref"] = root + ref[1:]
        return out
    if isinstance(node, list):
        return [_reroot(item, root) for item in node]
    return node


def _contract_branch(contract: Contract) -> dict[str, Any]:
    part = f"#/$defs/{contract.name}/$defs"
    return {
        "if": {"properties": {"contract": {"const": contract.name}}, "required": ["contract"]},
        "then": {
            "properties": {
                "id": {"pattern": f"^{contract.scenario_prefix}-"},
                "rules": {"items": {"pattern": f"^{contract.prefix}-"}},
                "given": {"$ref": f"{part}/given"},
                "when": {"items": {"$ref": f"{part}/step"}},
                "then": {"$ref": f"{part}/then"},
            }
        },
    }


def _schema_file(name: str) -> dict[str, Any]:
    text = resources.files("seamspec.conformance").joinpath("schemas").joinpath(name)
    schema: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return schema


def contract_schema(contract: str) -> dict[str, Any]:
    """A contract's own part of the scenario schema (``given``, steps, ``then``)."""
    text = room(contract).data_file("schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> jsonschema.Draft202012Validator:
    """The composed scenario schema; every reference in it is local."""
    import jsonschema

    return jsonschema.Draft202012Validator(scenario_schema())


def default_scenario_root() -> Path:
    """The suite shipped inside the package (works from a wheel or an editable install)."""
    return Path(str(resources.files("seamspec.scenarios")))


def _expand(paths: Sequence[Path]) -> tuple[list[Path], list[Problem]]:
    files: list[Path] = []
    problems: list[Problem] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.y*ml") if p.suffix in (".yaml", ".yml"))
            # A folder named x.yaml is skipped; any other file that is not a regular one
            # (a FIFO would block the read for ever) is refused by read_text.
            files.extend(p for p in found if not p.is_dir())
        elif path.exists():
            files.append(path)
        else:
            problems.append(Problem(str(path), None, "no such file or folder"))
    return files, problems


@cache
def _verdicts() -> SchemaVerdicts:
    """Texts already known to satisfy the schema, in this process and from earlier runs
    (``schema_cache``): checking them is most of what loading the suite costs."""
    return SchemaVerdicts(scenario_schema())


def _schema_problems(file: str, loaded: LoadedYaml, text: str) -> list[Problem]:
    verdicts = _verdicts()
    digest = verdicts.digest(text)
    if verdicts.known_valid(digest):
        return []
    problems = _validation_problems(file, loaded, _validator())
    if not problems:
        verdicts.add(digest)
    return problems


def _validation_problems(
    file: str, loaded: LoadedYaml, validator: jsonschema.Draft202012Validator
) -> list[Problem]:
    problems = []
    for found in sorted(validator.iter_errors(loaded.data), key=lambda e: list(e.absolute_path)):
        error = _most_specific(found)
        path = tuple(error.absolute_path)
        where = "/".join(str(p) for p in path) or "(top level)"
        line = loaded.line_of(path)
        message = error.message
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            schema = error.schema if isinstance(error.schema, dict) else {}
            allowed = set(schema.get("properties", {}))
            extra = sorted(set(error.instance) - allowed)
            if extra:
                line = loaded.line_of(path + (f"<{extra[0]}>",)) or line
                guess = did_you_mean(extra[0], allowed)
                message = f"unknown key {extra[0]!r}" + (f"; {guess}" if guess else "")
                message += f" (allowed: {', '.join(sorted(allowed))})" if allowed else ""
        elif error.validator == "enum" and isinstance(error.validator_value, list):
            guess = did_you_mean(str(error.instance), [str(v) for v in error.validator_value])
            if guess:
                message = f"{message}; {guess}"
        elif error.validator == "required":
            message = error.message.replace("is a required property", "is missing (required)")
        problems.append(
            Problem(file, line, f"at {_shorten(where)}: {_shorten(message)}", _hint(error))
        )
    return problems


def _shorten(text: str, limit: int = 300) -> str:
    """A message quotes the offending value: keep a 60 KiB string from filling the screen
    (the end stays: it says what is wrong with the value)."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 100]} ...({len(text) - limit + 40:,} characters)... {text[-60:]}"


def _first_required(error: ValidationError) -> str:
    keys: Any = error.validator_value  # the "required" list of the alternative
    return str(keys[0])


def _most_specific(error: ValidationError) -> ValidationError:
    """For ``oneOf`` (step verbs, behaviours), report the alternative the author meant.

    An alternative whose very shape does not fit (wrong type, or a missing required key
    at its root) was not meant; if exactly one alternative is left, its own error is the
    useful one. If none is left, say which forms are allowed instead of guessing.
    """
    from jsonschema.exceptions import best_match

    while error.validator in ("oneOf", "anyOf") and error.context:
        by_alternative: dict[object, list[ValidationError]] = {}
        for sub in error.context:
            by_alternative.setdefault(sub.schema_path[0], []).append(sub)
        meant = [
            errors
            for errors in by_alternative.values()
            if not any(e.validator in ("type", "required") and not e.relative_path for e in errors)
        ]
        if len(meant) == 1:
            error = best_match(meant[0])
            continue
        required = sorted({_first_required(e) for e in error.context if e.validator == "required"})
        if required and not meant:
            keys = sorted(error.instance) if isinstance(error.instance, dict) else []
            unknown = [k for k in keys if k not in required and k != "note"]
            guess = did_you_mean(unknown[0], required) if unknown else ""
            error.message = (
                f"unknown key {unknown[0]!r}" + (f"; {guess}" if guess else "")
                if unknown
                else "this entry matches no allowed form"
            ) + f" (expected one of: {', '.join(required)})"
            error.validator = "oneOf"
        break
    return error


def _hint(error: ValidationError) -> str:
    if error.validator == "enum":
        return "use one of the listed values"
    if error.validator == "additionalProperties":
        return "check the spelling; `seamspec schema` prints the whole schema"
    if error.validator == "type":
        return "YAML turned the value into another type; quote it if it should be a string"
    if error.validator == "pattern" and isinstance(error.schema, dict):
        meant = error.schema.get("description")
        return f"expected {meant}" if isinstance(meant, str) else ""
    return ""


def _catalogue_problems(file: str, loaded: LoadedYaml) -> list[Problem]:
    data = loaded.data
    problems = []
    rules = catalogue()
    cited = data.get("rules", [])
    contract = data.get("contract")
    for index, rule_id in enumerate(cited if isinstance(cited, list) else []):
        if not isinstance(rule_id, str):
            continue
        line = loaded.line_of(("rules", index))
        if rule_id not in rules:
            known = [r.id for r in rules.rules_of(contract)] if isinstance(contract, str) else []
            guess = did_you_mean(rule_id, known or [r.id for r in rules])
            problems.append(
                Problem(
                    file,
                    line,
                    f"unknown rule ID {rule_id!r}" + (f"; {guess}" if guess else ""),
                    "run `seamspec rules` to list the rules",
                )
            )
        elif rules[rule_id].contract != contract:
            problems.append(
                Problem(
                    file, line, f"rule {rule_id} belongs to contract {rules[rule_id].contract!r}"
                )
            )
    return problems


def _profile_problems(file: str, loaded: LoadedYaml) -> list[Problem]:
    """A scenario that pins only seamspec's decisions must say it is in the strict profile."""
    data, rules = loaded.data, catalogue()
    problems: list[Problem] = []
    listed = data.get("rules", [])
    cited = (
        [r for r in listed if isinstance(r, str) and r in rules] if isinstance(listed, list) else []
    )
    upstream_profile = data.get("profile", "upstream") == "upstream"
    if cited and upstream_profile and all(rules[r].profile == "strict" for r in cited):
        problems.append(
            Problem(
                file,
                loaded.line_of(("rules",)),
                "every rule this scenario cites is seamspec's own decision "
                f"({', '.join(cited)}), yet the scenario is in the upstream profile",
                "add `profile: strict`, or cite the upstream rule it also checks",
            )
        )
    return problems


#: At most this many problems are listed for one file: a file with hundreds of errors
#: is usually one mistake repeated, and the other files' problems must stay visible.
MAX_PROBLEMS_PER_FILE = 20


def validate_files(paths: Sequence[Path]) -> tuple[list[Scenario], list[Problem]]:
    """Load and check every scenario file under ``paths``; return scenarios and all problems.

    Each file is checked on its own: whatever one file holds, the others are still
    checked and their problems reported.
    """
    files, problems = _expand(paths)
    scenarios: list[Scenario] = []
    seen_ids: dict[str, str] = {}
    for path in files:
        file = str(path)
        try:
            scenario, found = _check_file(path, seen_ids)
        except Exception as error:  # a bug in the kit: said so, and the other files go on
            scenario, found = None, [_kit_bug(file, type(error).__name__, str(error))]
        if len(found) > MAX_PROBLEMS_PER_FILE:
            more = len(found) - MAX_PROBLEMS_PER_FILE
            found = found[:MAX_PROBLEMS_PER_FILE] + [
                Problem(file, found[MAX_PROBLEMS_PER_FILE].line, f"... and {more} more problem(s)")
            ]
        problems.extend(found)
        if scenario is not None:
            scenarios.append(scenario)
    _verdicts().save()
    return scenarios, problems


def _kit_bug(file: str, kind: str, message: str) -> Problem:
    return Problem(
        file,
        1,
        f"seamspec could not check this file ({kind}: {message:.200}); this is a bug in "
        "seamspec, not in the file",
        "please report it with the file attached",
    )


def _read(path: Path) -> tuple[LoadedYaml, str] | Problem:
    file = str(path)
    try:
        text = read_text(path)
        return load_yaml(text), text
    except OSError as error:
        return Problem(file, None, f"cannot read the file: {error.strerror or error}")
    except YamlProblem as error:
        return Problem(
            file,
            error.line,
            error.message,
            error.hint or "fix the YAML; `seamspec validate` rechecks",
        )


def _check_file(path: Path, seen_ids: dict[str, str]) -> tuple[Scenario | None, list[Problem]]:
    file = str(path)
    read = _read(path)
    if isinstance(read, Problem):
        return None, [read]
    loaded, text = read
    data = loaded.data
    if not isinstance(data, dict):
        kind = "null" if data is None else type(data).__name__
        return None, [
            Problem(file, 1, f"the document is a {kind}, not a mapping of scenario fields")
        ]
    found = _schema_problems(file, loaded, text) + _catalogue_problems(file, loaded)
    if not found:
        lint = contract_linters().get(data["contract"])
        for at, message in lint(data) if lint else ():
            found.append(Problem(file, loaded.line_of(at), message))
    if not found:
        found = _profile_problems(file, loaded)
    scenario_id = data.get("id")
    if isinstance(scenario_id, str):
        if scenario_id in seen_ids:
            found.append(
                Problem(
                    file,
                    loaded.line_of(("id",)),
                    f"duplicate scenario ID {scenario_id!r:.100} (also in {seen_ids[scenario_id]})",
                    "scenario IDs are stable and unique; pick a new one",
                )
            )
        else:
            seen_ids[scenario_id] = file
        if path.stem != scenario_id:
            found.append(
                Problem(
                    file,
                    loaded.line_of(("id",)),
                    f"file name {path.name!r} does not match the scenario ID {scenario_id!r:.100}",
                    f"rename the file to {scenario_id:.100}.yaml",
                )
            )
    if found:
        return None, found
    scenario = Scenario(
        id=data["id"],
        title=data["title"],
        contract=data["contract"],
        rules=tuple(data["rules"]),
        level=data["level"],
        tags=tuple(data["tags"]),
        requires=tuple(data.get("requires", ())),
        description=data["description"],
        given=data["given"],
        when=data["when"],
        then=data["then"],
        source=file,
        raw=data,
        profile=data.get("profile", "upstream"),
    )
    return scenario, []


def load_scenarios(paths: Iterable[Path] | None = None) -> list[Scenario]:
    """Every scenario under ``paths`` (default: the shipped suite), or :class:`ScenarioError`."""
    scenarios, problems = validate_files(list(paths) if paths else [default_scenario_root()])
    if problems:
        raise ScenarioError(problems)
    return scenarios
