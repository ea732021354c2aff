"""The kill matrix: every deliberately broken implementation against the suite.

A mutant is *killed* when a scenario that **cites the rule it breaks** fails it: status
``fail`` (an error or a hang is not a verdict) with a finding at MUST level that counts
under the rule's profile (a mutant of an upstream rule must fail the default profile).
Only a SHOULD rule that no MUST scenario cites (WOC-FAIL-WARN: a wrong warning count never
makes a chain non-conforming) is killed at SHOULD level. The meta-tests of each room
(``tests/test_*_mutants.py``) ask more where the room's oracle can give it: that the
oracle itself names the rule. A mutant that only other
scenarios fail is *caught elsewhere*: the suite catches it by accident, and the rule's own
scenarios are not sharp enough. One that nothing fails *survived*.

The matrix looks for the first kill, not for every one. Each mutant runs its contract's
scenarios only: those citing its rule first (shortest deliberate waits first), stopping
at the first that kills it; only when none does, the other scenarios of its contract, to
tell "caught elsewhere" from "survived". So ``killed_by`` lists the scenarios run before
the search stopped that failed the mutant, not every scenario that would. Mutants run
side by side in threads: each scenario gets a fresh event loop and fresh objects, and
most of a mutant's time is spent waiting.

Two things keep those waits short without changing a verdict:

- **Looking ahead.** Up to :data:`AHEAD` of a mutant's citing scenarios run at once,
  but their results are taken in order, so the search ends where one at a time would
  and names the same killer; the ones run ahead of it are cancelled and never counted.
- **Capped patience.** A mutant that never does what a step waits for used to hold the
  step for the driver's whole limit (5 or 10 s). Here each scenario runs with the
  kit's waits capped at :data:`PATIENCE` plus the time limits it runs out on purpose
  (``_core.patience``): a cap the reference meets with room to spare on every
  scenario (``tests/test_quality_commands.py``). A wait that ends sooner fails a
  mutant the way the full wait would; the rooms' meta-tests still judge every mutant
  with the drivers' full limits.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from seamspec.conformance._core.catalogue import catalogue
from seamspec.conformance._core.patience import capped
from seamspec.conformance._core.runner import Runner, ScenarioResult
from seamspec.conformance._core.scenario import Scenario
from seamspec.conformance._core.schedule import expected_wait, side_by_side
from seamspec.conformance._quality.mutants import all_mutants, mutant_adapter

__all__ = ["MutantOutcome", "kill_level", "kill_matrix", "kills", "mutant_names"]

#: Mutants judged at once by default: each mostly waits on its scenarios.
SIDE_BY_SIDE = 8

#: The kit's waits on a mutant are capped at this plus the time limits the scenario
#: runs out on purpose (``expected_wait``): see ``_core.patience``.
PATIENCE = 1.5


#: How many of a mutant's citing scenarios run at once, ahead of the one being looked at.
AHEAD = 4
#: Contracts whose mutants look no scenario ahead: a dispatch recorder deaf to
#: cancellation is what several of its scenarios are about, so cancelling one run
#: ahead (closing the adapter once the kill is found) waits out the adapter's whole
#: grace; its scenarios are quick anyway, except where the mutant itself holds on.
NOT_AHEAD = frozenset({"dispatch-recorder"})


def patience(scenario: Scenario) -> float:
    """How long the kit waits on a mutant at most, in one step of ``scenario``.

    Past the limits the scenario runs out on purpose and past every ``within`` bound it
    sets itself: a cap shorter than the scenario's own bound would judge a mutant by a
    stricter one (a mutant that doubles a time limit, 3 s where the scenario allows 4 s,
    would be failed by the cap, not by the scenario).
    """
    return PATIENCE + max(expected_wait(scenario), _longest_within(scenario.when))


def _longest_within(node: object) -> float:
    """The largest ``within`` bound anywhere in a scenario's steps (0 when none)."""
    if isinstance(node, dict):
        own = node.get("within")
        here = float(own) if isinstance(own, (int, float)) else 0.0
        return max([here, *(_longest_within(v) for v in node.values())])
    if isinstance(node, list):
        return max([0.0, *(_longest_within(v) for v in node)])
    return 0.0


@dataclass
class MutantOutcome:
    name: str
    rule: str
    statement: str
    contract: str
    killed_by: list[str] = field(default_factory=list)
    killed_by_citing: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: How many scenarios ran before the search stopped.
    scenarios_run: int = 0

    @property
    def verdict(self) -> str:
        if self.killed_by_citing:
            return "killed"
        if self.killed_by:
            return "caught-elsewhere"
        return "survived"

    def to_json(self) -> dict[str, Any]:
        return {
            "mutant": self.name,
            "rule": self.rule,
            "contract": self.contract,
            "statement": self.statement,
            "verdict": self.verdict,
            "killed_by": self.killed_by,
            "killed_by_citing": self.killed_by_citing,
            "errors": self.errors,
            "scenarios_run": self.scenarios_run,
        }


def kill_level(rule_id: str, scenarios: Iterable[Scenario]) -> str:
    """The level a kill of a mutant of ``rule_id`` needs: MUST, unless the rule is a
    SHOULD rule that no MUST scenario cites (it has no MUST side to fail)."""
    rule = catalogue()[rule_id]
    if rule.level == "MUST":
        return "MUST"
    cited_at = {s.level for s in scenarios if rule_id in s.rules}
    return "MUST" if "MUST" in cited_at else "SHOULD"


def kills(result: ScenarioResult, rule_id: str, level: str) -> bool:
    """Whether ``result`` kills a mutant of ``rule_id`` for the right reason (module doc)."""
    if result.status != "fail" or rule_id not in result.scenario.rules:
        return False
    profile = catalogue()[rule_id].profile
    return any(f.level == level and f.counts_under(profile) for f in result.findings)


def _judge_one(name: str, scenarios: list[Scenario]) -> MutantOutcome:
    mutant = all_mutants()[name]
    contract = catalogue()[mutant.rule].contract
    outcome = MutantOutcome(name, mutant.rule, mutant.statement, contract)
    mine = [s for s in scenarios if s.contract == contract]
    level = kill_level(mutant.rule, mine)
    citing = sorted((s for s in mine if mutant.rule in s.rules), key=expected_wait)
    others = [s for s in mine if mutant.rule not in s.rules]
    adapter = mutant_adapter(name)
    try:
        runner = Runner(adapter, timeout=60.0)

        def run(scenario: Scenario) -> ScenarioResult:
            with capped(patience(scenario)):
                return runner.run_one(scenario)

        for result in _in_order(run, citing, 1 if contract in NOT_AHEAD else AHEAD):
            if _record(outcome, result, level):
                return outcome  # the adapter's close() below cancels those run ahead
        for scenario in others:
            _record(outcome, run(scenario), level)
    finally:
        adapter.close()
    return outcome


def _in_order(
    run: Callable[[Scenario], ScenarioResult], scenarios: list[Scenario], ahead: int
) -> Iterator[ScenarioResult]:
    """``run`` over ``scenarios``, handed back in their order, up to ``ahead`` running at once.

    The results are the ones running them one at a time would give (each scenario runs
    alone on fresh objects); only their waits overlap. Once the caller stops taking
    results (it found its kill), no further scenario starts; those already running are
    left to the caller to cancel (closing the adapter) and their results are never seen.
    """
    results: dict[int, ScenarioResult | BaseException] = {}
    ready = [threading.Event() for _ in scenarios]
    todo = iter(range(len(scenarios)))
    lock = threading.Lock()
    halt = threading.Event()

    def worker() -> None:
        while not halt.is_set():
            with lock:  # taken in order, so the scenarios start in order
                i = next(todo, None)
            if i is None:
                return
            try:
                results[i] = run(scenarios[i])
            except BaseException as error:  # handed to the caller, never lost
                results[i] = error
            ready[i].set()

    for n in range(min(ahead, len(scenarios))):
        context = contextvars.copy_context()  # one each: a context is entered by one thread
        threading.Thread(
            target=context.run, args=(worker,), name=f"seamspec-ahead-{n}", daemon=True
        ).start()
    try:
        for i in range(len(scenarios)):
            ready[i].wait()
            result = results[i]
            if isinstance(result, BaseException):
                raise result
            yield result
    finally:
        halt.set()


def _record(outcome: MutantOutcome, result: ScenarioResult, level: str) -> bool:
    """Note one result; True when it kills the mutant (the search can stop)."""
    outcome.scenarios_run += 1
    if result.status == "error":
        outcome.errors.append(result.scenario.id)
    elif result.status == "fail":
        outcome.killed_by.append(result.scenario.id)
        if kills(result, outcome.rule, level):
            outcome.killed_by_citing.append(result.scenario.id)
            return True
    return False


@cache
def _names() -> tuple[str, ...]:
    return tuple(sorted(all_mutants()))


def mutant_names(contracts: Iterable[str] | None = None) -> list[str]:
    """The mutants ``kill_matrix`` runs for ``contracts`` (all when None), in name order."""
    wanted = set(contracts) if contracts else None
    return [
        name
        for name in _names()
        if wanted is None or catalogue()[all_mutants()[name].rule].contract in wanted
    ]


def kill_matrix(
    scenarios: list[Scenario],
    *,
    contracts: Iterable[str] | None = None,
    names: Iterable[str] | None = None,
    jobs: int = SIDE_BY_SIDE,
    on_outcome: Callable[[MutantOutcome], None] | None = None,
) -> list[MutantOutcome]:
    """Each mutant's outcome, in name order; ``on_outcome`` sees them as they finish.

    ``names`` picks mutants by name (with ``contracts``, both must match).
    """
    chosen = mutant_names(contracts)
    if names is not None:
        wanted = set(names)
        unknown = wanted - set(all_mutants())
        if unknown:
            raise KeyError(f"no such mutant: {', '.join(sorted(unknown))}")
        chosen = [name for name in chosen if name in wanted]
    outcomes = side_by_side(
        lambda name: _judge_one(name, scenarios),
        chosen,
        max(1, jobs),
        on_done=on_outcome or (lambda _: None),
        stop=lambda _: False,
    )
    return sorted(outcomes, key=lambda o: chosen.index(o.name))
