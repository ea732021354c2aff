"""Expected-failure manifests: the known gaps of an implementation, each with a reason.

A harness that does not (yet) meet every rule still wants a green CI that turns red on
*new* failures. The manifest lists the scenarios expected to fail; the runner reports
them as ``xfail``, and a listed scenario that passes as ``xpass`` (an unexpected pass:
with ``--strict`` it fails the run, so the manifest cannot silently go stale).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from seamspec.conformance._core.errors import Problem, ScenarioError
from seamspec.conformance._core.scenario import scenario_schema
from seamspec.conformance._core.suggest import did_you_mean
from seamspec.conformance._core.yaml_loader import YamlProblem, load_yaml, read_text

__all__ = ["ExpectedFailure", "load_manifest", "manifest_text"]


def _schema() -> dict[str, Any]:
    """Manifest keys are scenario IDs, with the same pattern scenario files must follow."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["expected_failures"],
        "properties": {
            "implementation": {"type": "string"},
            "expected_failures": {
                "type": "object",
                "propertyNames": {"pattern": scenario_schema()["properties"]["id"]["pattern"]},
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["reason"],
                    "properties": {
                        "reason": {"type": "string", "minLength": 1},
                        "issue": {"type": "string"},
                    },
                },
            },
        },
    }


@dataclass(frozen=True)
class ExpectedFailure:
    scenario: str
    reason: str
    issue: str | None = None


def load_manifest(
    path: Path, known_scenarios: Iterable[str] | None = None
) -> dict[str, ExpectedFailure]:
    """Read a manifest; every problem is a :class:`ScenarioError` with file and line.

    A scenario ID that no longer exists is an error rather than a silent no-op: a
    renamed or deleted scenario would otherwise hide a real gap.
    """
    file = str(path)
    try:
        loaded = load_yaml(read_text(path))
    except OSError as error:
        raise ScenarioError(
            [Problem(file, None, f"cannot read the manifest: {error.strerror or error}")]
        ) from None
    except YamlProblem as error:
        raise ScenarioError([Problem(file, error.line, error.message, error.hint)]) from None
    import jsonschema

    problems = [
        Problem(file, loaded.line_of(tuple(e.absolute_path)), f"manifest: {e.message}")
        for e in jsonschema.Draft202012Validator(_schema()).iter_errors(loaded.data)
    ]
    if problems:
        raise ScenarioError(problems)
    entries = loaded.data["expected_failures"]
    if known_scenarios is not None:
        known = set(known_scenarios)
        for scenario_id in entries:
            if scenario_id not in known:
                guess = did_you_mean(scenario_id, known)
                problems.append(
                    Problem(
                        file,
                        loaded.line_of(("expected_failures", scenario_id)),
                        f"manifest names unknown scenario {scenario_id!r}"
                        + (f"; {guess}" if guess else ""),
                        "remove the entry, or fix the ID (scenario IDs are listed by `seamspec run -k`)",
                    )
                )
    if problems:
        raise ScenarioError(problems)
    return {
        sid: ExpectedFailure(sid, entry["reason"], entry.get("issue"))
        for sid, entry in entries.items()
    }


def manifest_text(report: dict[str, Any]) -> str:
    """A manifest listing every failing or erroring scenario of a report, to start from.

    A recommendation (a seamspec-only decision the run's profile does not count) is left
    out: it does not fail the run, so listing it would turn it into an unexpected pass
    and make ``--expect THIS_FILE --strict`` fail on the very run that wrote the file.
    """
    entries: dict[str, dict[str, str]] = {}
    for result in report["results"]:
        counts_as = result.get("counts_as", result["status"])
        if result["status"] in ("error", "xfail") or counts_as in ("failure", "warning", "fail"):
            first = (result["detail"].strip().splitlines() or ["(no detail)"])[0]
            entries[result["scenario"]] = {"reason": f"TODO: explain. Observed: {first[:200]}"}
    header = (
        "# seamspec expected-failure manifest\n"
        f"# written {datetime.now(timezone.utc):%Y-%m-%d} from a run against "
        f"{report['implementation']['name']} {report['implementation']['version']}.\n"
        "# Replace each TODO with the real reason (and an issue link), then run with\n"
        "#   seamspec run --expect THIS_FILE --strict\n"
    )
    body = {"implementation": report["implementation"]["name"], "expected_failures": entries}
    return header + yaml.safe_dump(body, sort_keys=True, allow_unicode=True, width=100)
