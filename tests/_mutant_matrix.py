"""What the three mutant meta-test files share: running the controls and the mutants.

A control runs every scenario of its contract and must pass them all. A mutant runs only
the scenarios citing the rule it breaks (only those can count as catching it), and only
until one catches it: each file says what catching means (``catches``), and once a
scenario has, running the others would prove nothing more. The citing scenarios that
wait least run first. ``error`` never counts as caught: a mutant caught only by crashing
or hanging says nothing about the rule's scenarios.

Everything runs side by side in threads: most of a run is spent waiting (time limits,
child programs, gates), every scenario gets a fresh event loop and fresh objects, and a
verdict does not hinge on timing (bounds are gated and generous). The whole kill matrix,
every mutant against every scenario of its contract, is ``seamspec mutants`` (the
``mutants`` nox session); these files ask more of a catch than it does where the room's
oracle can give it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from seamspec.conformance import Runner, Scenario, ScenarioResult
from seamspec.conformance._core.schedule import expected_wait, side_by_side


class MutantLike(Protocol):
    @property
    def rule(self) -> str: ...
    @property
    def statement(self) -> str: ...


#: (mutant name, one result of a scenario citing its rule) -> caught for the right reason?
Catches = Callable[[str, ScenarioResult], bool]


def run_matrix(
    runners: Mapping[str, Runner],
    scenarios: list[Scenario],
    mutants: Mapping[str, MutantLike],
    *,
    parallel: int,
    catches: Catches | None = None,
) -> dict[str, list[ScenarioResult]]:
    """Each runner's results: every scenario for a control, the citing ones for a mutant.

    With ``catches``, a mutant's citing scenarios run only until one catches it, so its
    list ends with the catch (or holds every citing scenario, when none did).

    All of it shares one pool of ``parallel`` threads: each mutant's search is one job
    (its scenarios run in turn, since a catch ends it), and each control's scenario is a
    job of its own. Run one control after another, the matrix waited for each control's
    longest scenario while the other threads sat idle; in one pool those waits overlap
    (the matrices are waits, not work: a WOC matrix spent 27 s of CPU in 148 s). The
    mutants' searches start first, as the longest chains, then the controls' scenarios,
    longest wait first.
    """
    controls = [name for name in runners if name not in mutants]
    order = {s.id: i for i, s in enumerate(scenarios)}
    jobs: list[tuple[str, Scenario | None]] = [(name, None) for name in runners if name in mutants]
    pairs = sorted(
        ((name, s) for name in controls for s in scenarios),
        key=lambda pair: -expected_wait(pair[1]),
    )
    jobs += pairs

    def judge(name: str) -> list[ScenarioResult]:
        rule = mutants[name].rule
        citing = sorted((s for s in scenarios if rule in s.rules), key=expected_wait)
        seen: list[ScenarioResult] = []
        for scenario in citing:
            seen.append(runners[name].run_one(scenario))
            if catches is not None and catches(name, seen[-1]):
                break
        return seen

    def work(job: tuple[str, Scenario | None]) -> tuple[str, list[ScenarioResult]]:
        name, scenario = job
        return name, judge(name) if scenario is None else [runners[name].run_one(scenario)]

    done = side_by_side(work, jobs, parallel, on_done=lambda _: None, stop=lambda _: False)
    results: dict[str, list[ScenarioResult]] = {name: [] for name in runners}
    for name, found in done:
        results[name].extend(found)
    for name in controls:
        results[name].sort(key=lambda r: order[r.scenario.id])
        for late in runners[name].late_results():  # a wire control's late answer: untrusted
            results[name] = [
                late if r.scenario.id == late.scenario.id else r for r in results[name]
            ]
    return results


def describe(result: ScenarioResult) -> str:
    detail = result.detail.replace("\n", "\n      ")
    return f"  {result.status:5} {result.scenario.id} {list(result.scenario.rules)}\n      {detail}"


def assert_caught(
    name: str, mutant: MutantLike, citing: list[ScenarioResult]
) -> list[ScenarioResult]:
    """The scenarios citing the mutant's rule that failed it; an assertion error if none."""
    assert citing, f"no scenario cites {mutant.rule}, so nothing can catch {name}"
    caught_by = [r for r in citing if r.status == "fail"]
    assert caught_by, (
        f"{name} ({mutant.statement}) broke {mutant.rule}, yet no scenario citing "
        f"{mutant.rule} failed (errors do not count). Citing scenarios:\n"
        + "\n".join(map(describe, citing))
        + f"\nTo see what else catches it: seamspec run --impl mutant:{name}"
    )
    return caught_by
