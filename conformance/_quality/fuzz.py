"""``seamspec fuzz``: property-based conformance, judged by the contract oracles.

Hypothesis generates valid scenarios, the implementation performs them, the oracle and
the derived expectations judge the trace. A failure is shrunk to a minimal scenario and
can be saved as a YAML file that fails the same way under ``seamspec run``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from seamspec.conformance._core.adapter import Adapter
from seamspec.conformance._core.catalogue import catalogue
from seamspec.conformance._core.errors import SeamspecError, Unsupported
from seamspec.conformance._core.registry import rooms
from seamspec.conformance._core.runner import judge
from seamspec.conformance._core.scenario import Scenario

__all__ = ["FuzzFailure", "fuzz", "scenario_from_document", "strategies"]


class FuzzUnavailable(SeamspecError, ImportError):
    """``seamspec fuzz`` needs hypothesis: ``pip install 'seamspec[fuzz]'``."""


def strategies() -> dict[str, Any]:
    """contract -> its hypothesis strategy of scenario documents (room ``strategies``)."""
    found = {}
    for room in rooms():
        try:
            module = room.optional_module("strategies")
        except ImportError as error:  # hypothesis is an optional extra
            raise FuzzUnavailable(
                f"seamspec fuzz needs hypothesis ({error}); pip install 'seamspec[fuzz]'"
            ) from None
        if module is not None:
            found[room.name] = module.scenarios()
    return found


class _PlainDumper(yaml.SafeDumper):
    """No anchors or aliases: a saved scenario should read like a hand-written one."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


@dataclass
class FuzzFailure:
    contract: str
    document: dict[str, Any]
    detail: str

    def yaml_text(self, scenario_id: str) -> str:
        body = {"id": scenario_id, **self.document}
        header = f"# Found by seamspec fuzz and shrunk by hypothesis.\n# {self.detail.splitlines()[0][:200]}\n"
        return header + yaml.dump(
            body, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=100
        )


def scenario_from_document(document: dict[str, Any]) -> Scenario:
    return Scenario(
        id=f"{catalogue().contracts[document['contract']].scenario_prefix}-fuzz",
        title=document["title"],
        contract=document["contract"],
        rules=tuple(document["rules"]),
        level=document["level"],
        tags=tuple(document["tags"]),
        requires=tuple(document.get("requires", ())),
        description=document["description"],
        given=document["given"],
        when=document["when"],
        then=document["then"],
        source="<fuzz>",
    )


def fuzz(
    adapter: Adapter,
    contract: str,
    *,
    examples: int,
    seed: int | None,
    on_example: Callable[[int], None] | None = None,
) -> FuzzFailure | None:
    """Run up to ``examples`` generated scenarios; return the shrunk failure, if any."""
    from hypothesis import HealthCheck, assume, given, settings
    from hypothesis import seed as hypothesis_seed

    strategy = strategies().get(contract)
    if strategy is None:
        raise Unsupported(f"seamspec fuzz has no scenario generator for {contract} yet")
    last: dict[str, Any] = {}
    count = [0]
    features = set(adapter.info().features)

    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(strategy)
    def check(document: dict[str, Any]) -> None:
        scenario = scenario_from_document(document)
        # Judge only what the implementation says it supports, exactly as `run` skips.
        assume(all(feature in features for feature in scenario.requires))
        count[0] += 1
        if on_example:
            on_example(count[0])
        try:
            trace = adapter.run(scenario.request())
        except Exception as error:  # a crash is a finding too, and is shrunk like one
            detail = f"the implementation raised: {error}"
        else:
            findings = judge(scenario, trace)
            if not findings:
                return
            detail = "\n".join(f"[{f.rule or 'then'}] {f.message}" for f in findings)
        last.update(document=document, detail=detail)
        raise AssertionError(detail)

    if seed is not None:
        check = hypothesis_seed(seed)(check)
    from hypothesis.errors import Flaky

    try:
        check()
    except AssertionError:
        return FuzzFailure(contract, last["document"], last["detail"])
    except Flaky:
        # It failed, then passed when replayed: a timing-dependent failure is still one.
        detail = "flaky: failed once, passed when replayed (timing-dependent?)\n" + last.get(
            "detail", ""
        )
        return FuzzFailure(contract, last["document"], detail)
    return None


def save_failure(failure: FuzzFailure, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    prefix = catalogue().contracts[failure.contract].scenario_prefix
    index = 1
    while (folder / f"{prefix}-fuzz-found-{index}.yaml").exists():
        index += 1
    scenario_id = f"{prefix}-fuzz-found-{index}"
    path = folder / f"{scenario_id}.yaml"
    path.write_text(failure.yaml_text(scenario_id), encoding="utf-8")
    return path
