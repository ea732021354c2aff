"""``seamspec fuzz`` for shell-output: generated session scenarios, judged by the oracle.

That the reference passes generated scenarios is the ``fuzz`` nox session's proof (100 per
contract, seeded), not repeated here. Representative mutants must be caught,
and the shrunk failure, saved as a scenario file, must fail the mutant under
``seamspec run`` and pass the reference.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seamspec.conformance import judge, load_adapter
from seamspec.conformance._contracts.shell_output.mutants import mutant_adapter
from seamspec.conformance._core.scenario import validate_files
from seamspec.conformance._quality.fuzz import fuzz, save_failure

pytest.importorskip("hypothesis")


@pytest.mark.parametrize("name", ["soo-decoded", "soo-cancel-finishes", "soo-delivers-after-panic"])
def test_mutant_is_caught_and_the_saved_failure_replays(name: str, tmp_path: Path) -> None:
    adapter = mutant_adapter(name)
    try:
        failure = fuzz(adapter, "shell-output", examples=300, seed=1)
    finally:
        adapter.close()
    assert failure is not None, f"{name} survived 300 generated scenarios"
    path = save_failure(failure, tmp_path)
    assert path.name == "soo-fuzz-found-1.yaml"
    scenarios, problems = validate_files([path])
    assert not problems
    (scenario,) = scenarios
    for impl, fails in ((mutant_adapter(name), True), (load_adapter("reference"), False)):
        try:
            findings = judge(scenario, impl.run(scenario.request()))
        finally:
            impl.close()
        assert bool(findings) is fails, findings
