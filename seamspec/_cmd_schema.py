"""``seamspec schema`` and ``seamspec new``: scenario files that validate in an editor.

The kit validates scenarios with a schema it composes at load time (the core shape plus
each contract room's ``schema.json``). ``schema`` writes that same schema as
self-contained files, one for every contract and one for all, so that an editor
(yaml-language-server) or ``check-jsonschema`` can use it offline. ``--modelines``
points each scenario file at its contract's file with a comment on its first line::

    # yaml-language-server: $schema=../../schemas/write-observer-chain.scenario.schema.json

The modeline is a path relative to the scenario file, not a URL: the project publishes
no schema at any address, and a relative path works in a checkout, offline, and for
whatever version of the kit wrote the files next to it. ``new`` writes a skeleton with
that modeline already in place.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from seamspec._output import error
from seamspec.conformance._core.catalogue import CONTRACTS, catalogue
from seamspec.conformance._core.scenario import (
    Scenario,
    contract_scenario_schema,
    load_scenarios,
    scenario_schema,
)
from seamspec.conformance._core.suggest import did_you_mean
from seamspec.conformance._core.yaml_loader import YamlProblem, load_yaml, read_text

__all__ = ["add_schema_parsers", "modeline_for", "schema_files", "set_modeline"]

EXIT_OK, EXIT_STALE, EXIT_USAGE = 0, 1, 2
ALL_CONTRACTS_FILE = "scenario.schema.json"
MODELINE = re.compile(r"^#\s*yaml-language-server:\s*\$schema=\S*\s*$")


def schema_file_name(contract: str) -> str:
    return f"{contract}.scenario.schema.json"


def add_schema_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    schema = sub.add_parser(
        "schema",
        help="print or write the self-contained scenario JSON Schema(s), for editors",
        description="Print the scenario schema (all contracts, or --contract), or write one "
        f"file per contract plus {ALL_CONTRACTS_FILE} to --output. Every $ref is local, so "
        "each file works offline on its own.",
    )
    schema.add_argument("--contract", choices=CONTRACTS, help="print only this contract's schema")
    schema.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="DIR",
        help="write every schema file into DIR instead of printing one",
    )
    schema.add_argument(
        "--check",
        action="store_true",
        help="with --output: write nothing; exit 1 if a file in DIR is missing or stale",
    )
    schema.add_argument(
        "--modelines",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="with --output: add or update the `# yaml-language-server: $schema=...` line "
        "of these scenario files (or every .yaml file under these folders), pointing at "
        "their contract's file in DIR",
    )
    schema.set_defaults(func=cmd_schema)

    new = sub.add_parser(
        "new",
        help="write a scenario skeleton for ID's contract, with a schema modeline",
        description="Write DIR/ID.yaml: a valid scenario of the contract ID's prefix names, "
        "started from the simplest shipped one, with TODOs to replace. The schema files "
        "the modeline points to are written too when missing.",
    )
    new.add_argument("id", metavar="ID", help="the new scenario's ID, e.g. woc-my-case")
    new.add_argument(
        "--dir", type=Path, default=Path("."), metavar="DIR", help="folder to write it in"
    )
    new.add_argument(
        "--schemas",
        type=Path,
        default=Path("schemas"),
        metavar="DIR",
        help="folder of the schema files (`seamspec schema --output DIR`) the modeline points to",
    )
    new.set_defaults(func=cmd_new)


def schema_files() -> dict[str, str]:
    """File name -> text of every schema ``seamspec schema --output`` writes."""
    files = {ALL_CONTRACTS_FILE: _dump(scenario_schema())}
    for contract in CONTRACTS:
        files[schema_file_name(contract)] = _dump(contract_scenario_schema(contract))
    return files


def _dump(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def modeline_for(scenario_file: Path, schema_dir: Path, contract: str) -> str:
    """The modeline of ``scenario_file``: a relative path to its contract's schema."""
    target = os.path.relpath(schema_dir / schema_file_name(contract), scenario_file.parent)
    return f"# yaml-language-server: $schema={Path(target).as_posix()}"


def set_modeline(text: str, modeline: str) -> str:
    """``text`` with ``modeline`` as its first line, replacing an earlier modeline."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if not line.startswith("#"):
            break
        if MODELINE.match(line.rstrip("\r\n")):
            del lines[index]
            break
    return modeline + newline + "".join(lines)


def _scenario_files(paths: list[Path]) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    problems: list[str] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
        elif path.is_file():
            files.append(path)
        else:
            problems.append(f"{path}: no such file or folder")
    return files, problems


def _contract_of(path: Path, text: str) -> str:
    """The contract a scenario file names; ValueError saying why not."""
    try:
        data = load_yaml(text).data
    except YamlProblem as problem:
        raise ValueError(f"{path}:{problem.line or 1}: {problem.message}") from None
    contract = data.get("contract") if isinstance(data, dict) else None
    if contract not in CONTRACTS:
        guess = did_you_mean(str(contract), CONTRACTS) if contract else ""
        raise ValueError(
            f"{path}: cannot tell which schema applies: contract {contract!r} is not one of "
            f"{', '.join(CONTRACTS)}" + (f"; {guess}" if guess else "")
        )
    return str(contract)


def write_modelines(paths: list[Path], schema_dir: Path) -> tuple[int, int, list[str]]:
    """Add or update the modeline of every scenario file: (changed, unchanged, problems)."""
    files, problems = _scenario_files(paths)
    changed = unchanged = 0
    for path in files:
        try:
            text = read_text(path)  # bytes decoded as they are: line endings kept
            contract = _contract_of(path, text)
        except YamlProblem as problem:
            problems.append(f"{path}:{problem.line or 1}: {problem.message}")
            continue
        except OSError as problem:
            problems.append(f"{path}: cannot read the file: {problem.strerror or problem}")
            continue
        except ValueError as problem:
            problems.append(str(problem))
            continue
        updated = set_modeline(text, modeline_for(path, schema_dir, contract))
        if updated == text:
            unchanged += 1
            continue
        with path.open("w", encoding="utf-8", newline="") as handle:
            handle.write(updated)
        changed += 1
    return changed, unchanged, problems


def _stale(output: Path) -> list[str]:
    stale = []
    for name, text in schema_files().items():
        path = output / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(str(path))
    return stale


def _write_schemas(output: Path) -> list[Path]:
    output.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in schema_files().items():
        path = output / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def cmd_schema(args: argparse.Namespace, console: Console) -> int:
    if (args.check or args.modelines) and args.output is None:
        error("--check and --modelines need --output DIR (the folder of the schema files)")
        return EXIT_USAGE
    if args.output is None:
        schema = contract_scenario_schema(args.contract) if args.contract else scenario_schema()
        print(_dump(schema), end="")
        return EXIT_OK
    if args.check:
        stale = _stale(args.output)
        for path in stale:
            error(f"{path} is missing or out of date; run `seamspec schema --output {args.output}`")
        if not stale:
            console.print(f"{len(schema_files())} schema file(s) in {args.output} are up to date")
        return EXIT_STALE if stale else EXIT_OK
    written = _write_schemas(args.output)
    console.print(
        f"{len(written)} schema file(s) written to {args.output} "
        f"({len(schema_files()) - len(written)} already up to date)",
        highlight=False,
    )
    if not args.modelines:
        return EXIT_OK
    changed, unchanged, problems = write_modelines(args.modelines, args.output)
    for problem in problems:
        error(problem)
    console.print(
        f"modelines: {changed} file(s) updated, {unchanged} already up to date"
        + (f", {len(problems)} problem(s)" if problems else ""),
        highlight=False,
    )
    return EXIT_USAGE if problems else EXIT_OK


# -- seamspec new -----------------------------------------------------------------------


def _contract_for_id(scenario_id: str) -> str:
    """The contract whose scenario prefix ``scenario_id`` starts with; ValueError if none."""
    contracts = catalogue().contracts
    by_prefix = {c.scenario_prefix: name for name, c in contracts.items()}
    if not re.fullmatch(r"[a-z]+-[a-z0-9]+(-[a-z0-9]+)*", scenario_id):
        raise ValueError(
            f"{scenario_id!r} is not a scenario ID: lower-case words joined by '-', "
            f"starting with a contract prefix ({', '.join(sorted(by_prefix))}), e.g. woc-my-case"
        )
    prefix = scenario_id.split("-", 1)[0]
    if prefix not in by_prefix:
        guess = did_you_mean(prefix, by_prefix)
        raise ValueError(
            f"no contract has the scenario prefix {prefix!r}"
            + (f"; {guess}" if guess else "")
            + f" (prefixes: {', '.join(f'{p} ({c})' for p, c in sorted(by_prefix.items()))})"
        )
    return by_prefix[prefix]


def _simplest(contract: str) -> Scenario:
    mine = [s for s in load_scenarios() if s.contract == contract]
    return min(mine, key=lambda s: (len(s.requires), len(s.when), len(str(s.given)), s.id))


def skeleton(scenario_id: str, contract: str, modeline: str) -> str:
    """A valid scenario to start from: the simplest shipped one, with TODOs to replace."""
    start = _simplest(contract)
    head = {
        "id": scenario_id,
        "title": "TODO: one line saying what this scenario shows",
        "contract": contract,
        "rules": list(start.rules),
        "level": "MUST",
        "tags": [],
    }
    if start.profile != "upstream":
        head["profile"] = start.profile  # a strict scenario's rules need it to validate
    if start.requires:
        head["requires"] = list(start.requires)
    body = {"given": start.given, "when": start.when, "then": start.then}

    def dump(data: dict[str, Any]) -> str:
        return yaml.safe_dump(
            data, sort_keys=False, default_flow_style=None, allow_unicode=True, width=88
        )

    return (
        f"{modeline}\n"
        f"# A new {contract} scenario, started from {start.id}.\n"
        "# Replace each TODO and the steps below, check it with `seamspec validate`,\n"
        f"# then run it with `seamspec run --scenarios {scenario_id}.yaml`.\n"
        + dump(head)
        + "description: >-\n"
        "  TODO: the situation, what must happen, and why, for a reader who does not know\n"
        "  the rule yet.\n" + dump(body)
    )


def cmd_new(args: argparse.Namespace, console: Console) -> int:
    try:
        contract = _contract_for_id(args.id)
    except ValueError as problem:
        error(problem)
        return EXIT_USAGE
    path = args.dir / f"{args.id}.yaml"
    if path.exists():
        error(f"{path} already exists; pick another ID or --dir")
        return EXIT_USAGE
    args.dir.mkdir(parents=True, exist_ok=True)
    text = skeleton(args.id, contract, modeline_for(path, args.schemas, contract))
    path.write_text(text, encoding="utf-8")
    console.print(f"wrote {path} ({contract})", highlight=False)
    target = args.schemas / schema_file_name(contract)
    if not target.is_file():
        _write_schemas(args.schemas)
        console.print(f"wrote the schema files into {args.schemas} (the modeline's target)")
    elif _stale(args.schemas):
        console.print(
            f"note: the schema files in {args.schemas} are out of date; "
            f"`seamspec schema --output {args.schemas}` rewrites them",
            highlight=False,
        )
    console.print(f"next: edit it, then `seamspec validate {path}`", highlight=False)
    return EXIT_OK
