"""The worked example of docs/usage.md is a real adapter for a real chain, and it conforms.

The example lives in ``docs/examples/other_chain_adapter.py`` and is quoted in full in
``docs/usage.md``. These tests keep the two identical, run the shipped scenarios against
the example on both anyio backends, and run the exact command the docs tell readers to
type, from the folder the docs tell them to type it in.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from seamspec.conformance import (
    PythonAdapter,
    Runner,
    RunResult,
    Scenario,
    WriteObserverChainDriver,
    load_scenarios,
)

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "docs" / "examples"
EXAMPLE_FILE = EXAMPLES / "other_chain_adapter.py"
USAGE = REPO / "docs" / "usage.md"


@pytest.fixture(scope="module")
def example() -> Iterator[ModuleType]:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(EXAMPLES))
        yield importlib.import_module("other_chain_adapter")


def _uses_time_limit(scenario: Scenario) -> bool:
    def entries(observers: list[Any]) -> Iterator[dict[str, Any]]:
        for entry in observers:
            yield entry
            yield from entries(entry.get("chain", []))

    given = scenario.given
    return "hook_time_limit" in given or any(
        "hook_time_limit" in e for e in entries(given.get("observers", []))
    )


def _run(adapter: PythonAdapter) -> RunResult:
    scenarios = [s for s in load_scenarios() if s.contract == "write-observer-chain"]
    assert scenarios, "the shipped suite has no write-observer-chain scenarios"
    try:
        return Runner(adapter, timeout=30).run(scenarios)
    finally:
        adapter.close()


def _check(result: RunResult) -> None:
    problems = [
        f"{r.scenario.id}: {r.status}\n{r.detail}"
        for r in result.results
        if r.status not in ("pass", "skip")
    ]
    assert not problems, "\n\n".join(problems)
    for r in result.results:
        seam = any(rule.startswith("WOC-SEAM-") for rule in r.scenario.rules)
        if r.scenario.requires or seam:
            # The example declares no features: it has no write tools, so every seam
            # scenario (and every builtin-observer or time-limit one) must be skipped.
            assert r.status == "skip", f"{r.scenario.id} should have been skipped"
        elif not _uses_time_limit(r.scenario):
            assert r.status == "pass", f"{r.scenario.id}: {r.status} ({r.detail})"
    assert any(r.status == "pass" for r in result.results)


def test_example_declares_no_features(example: ModuleType) -> None:
    adapter: PythonAdapter = example.adapter
    info = adapter.info()
    assert info.contracts == ("write-observer-chain",)
    assert info.features == ()


def test_example_conforms_on_asyncio(example: ModuleType) -> None:
    _check(_run(example.adapter))


def test_example_conforms_on_trio(example: ModuleType) -> None:
    pytest.importorskip("trio")
    adapter = PythonAdapter(
        name="observer-pipeline",
        version="1.0",
        drivers=[WriteObserverChainDriver(example.PipelineUnderTest())],
        backend="trio",
    )
    _check(_run(adapter))


def test_seamspec_run_from_the_examples_folder() -> None:
    """The command docs/usage.md gives, run by the console script as a reader would."""
    script = shutil.which("seamspec", path=str(Path(sys.executable).parent)) or shutil.which(
        "seamspec"
    )
    if script is None:
        pytest.skip("the seamspec console script is not installed")
    run = subprocess.run(
        [script, "run", "--impl", "other_chain_adapter:adapter", "-q"],
        cwd=EXAMPLES,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "CONFORMS" in run.stdout


def test_usage_doc_quotes_the_example_verbatim() -> None:
    source = EXAMPLE_FILE.read_text(encoding="utf-8")
    usage = USAGE.read_text(encoding="utf-8")
    assert f"```python\n{source}```" in usage, (
        "docs/usage.md must quote docs/examples/other_chain_adapter.py exactly; "
        "copy the file into the code block again"
    )
