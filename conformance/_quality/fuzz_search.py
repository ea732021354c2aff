"""The hypothesis side of ``seamspec fuzz``: one search for generated scenarios that fail.

Every example is run and judged by the :class:`Runner`, exactly as ``seamspec run`` would
run and judge a scenario file: the same skips, time limits, statuses and profile. What
the search hunts is a *kind* of result, the word :attr:`ScenarioResult.counts_as` gives:
``failure`` and ``error`` (what makes ``run`` exit 1), or, in a second search that only
happens when none of those turned up, ``warning`` and ``recommendation``. Each kind
raises its own exception class, so hypothesis keeps and shrinks one example per kind
found instead of letting one mask the other.

An implementation behind the wire protocol is restarted after every crash and hang; a
crash found is replayed many times while it is shrunk. When its restarts are used up
the search stops at once (a :class:`BaseException`, which hypothesis does not take for a
failure) with the smallest failing example seen so far: left to go on, every further
example would error with "not run" and be shrunk into a bogus reproducer.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from seamspec.conformance._core.runner import Runner, ScenarioResult
from seamspec.conformance._core.scenario import Scenario

__all__ = ["COUNTED", "LESSER", "Found", "SearchResult", "local_constants_off", "search"]

#: The kinds of result that make ``seamspec run`` exit 1, and those it only reports.
COUNTED = ("failure", "error")
LESSER = ("warning", "recommendation")


@runtime_checkable
class _Restarting(Protocol):
    """What an adapter that restarts its implementation (the wire client) exposes."""

    @property
    def restarts(self) -> int: ...

    max_restarts: int


class Found(Exception):
    """A generated scenario whose result is of the hunted ``kind``."""

    kind: ClassVar[str] = ""

    def __init__(self, document: dict[str, Any], result: ScenarioResult) -> None:
        super().__init__(result.detail.splitlines()[0] if result.detail else self.kind)
        self.document = document
        self.result = result


class _FoundFailure(Found):
    kind = "failure"


class _FoundError(Found):
    kind = "error"


class _FoundWarning(Found):
    kind = "warning"


class _FoundRecommendation(Found):
    kind = "recommendation"


_RAISED: dict[str, type[Found]] = {
    cls.kind: cls for cls in (_FoundFailure, _FoundError, _FoundWarning, _FoundRecommendation)
}


class _Stopped(BaseException):
    """The implementation's restarts are used up: no further example can be judged."""


@dataclass
class SearchResult:
    #: Examples judged (run and not skipped), shrinking included.
    judged: int = 0
    #: The shrunk example of each kind found, most serious first.
    found: list[Found] = field(default_factory=list)
    #: Why the search stopped before hypothesis was done, if it did.
    stopped: str = ""
    #: hypothesis saw an example fail, then pass when replayed.
    flaky: bool = False
    #: The first example of each kind seen but not hunted (for a second search).
    seen: dict[str, Found] = field(default_factory=dict)


def _leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions inside hypothesis's groups (several bugs, or a flaky one).

    Read by duck typing: on Python 3.10 the groups come from the ``exceptiongroup``
    backport, not the built-in ``BaseExceptionGroup``.
    """
    inner = getattr(error, "exceptions", None)
    if isinstance(inner, (tuple, list)):
        for each in inner:
            if isinstance(each, BaseException):
                yield from _leaves(each)
    else:
        yield error


@contextmanager
def local_constants_off() -> Iterator[bool]:
    """Hypothesis without the constants it reads from local modules; yields whether it
    could turn them off.

    Hypothesis (since 6.131) now and then draws a constant found in the source of the
    modules loaded at the time (not site-packages): the kit's and the implementation's
    code. A seed's examples then change with any edit to that code and differ between a
    run in process and one over the wire. Hypothesis has no setting for it, only its
    private ``providers._get_local_constants``, replaced here for the run by one that finds
    none (and the cache of permitted constants emptied before and after, so that nothing
    drawn before leaks in). Its own constants (boundaries, odd characters) stay, fixed for a
    hypothesis version. On a hypothesis without that function this is a no-op with a
    ``RuntimeWarning`` (seeded runs may then move with the code), not an error: fuzzing
    still works. ``tests/test_dr_fuzz.py`` fails if the installed hypothesis lacks it.
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants

        found = providers._get_local_constants
        cache = providers.CONSTANTS_CACHE.cache
        empty = Constants()
    except (ImportError, AttributeError):
        warnings.warn(
            "this hypothesis version has no providers._get_local_constants: seamspec fuzz "
            "cannot turn off the constants hypothesis reads from local modules, so a "
            "seed's examples may change with the code loaded",
            RuntimeWarning,
            stacklevel=3,
        )
        yield False
        return
    cache.clear()
    providers._get_local_constants = lambda: empty
    try:
        yield True
    finally:
        providers._get_local_constants = found
        cache.clear()


def search(
    runner: Runner,
    strategy: Any,
    make_scenario: Callable[[dict[str, Any]], Scenario],
    *,
    examples: int,
    seed: int,
    hunted: tuple[str, ...] = COUNTED,
    on_judged: Callable[[int], None] | None = None,
    shrink: bool = True,
    covers: Sequence[Any] = (),
) -> SearchResult:
    """Run up to ``examples`` generated scenarios; shrink one of each ``hunted`` kind found.

    With ``shrink=False`` the search stops at the first hunted example and keeps it as it
    was generated: for a caller that only needs to know the generator reaches a bug (the
    kit's own tests), at a fraction of the cost, on the same examples in the same order.

    ``covers`` are strategies each run for one example (its simplest, whatever the seed)
    after the random ones, unless those found something: shapes a run must reach that
    random examples reach only by luck. They are part of ``examples`` (all but one at
    most); a failure found by one is shrunk within that cover's strategy.
    """
    outcome = SearchResult()
    covers = list(covers)[: max(0, examples - 1)]
    with local_constants_off():
        plan = [(strategy, examples - len(covers)), *((cover, 1) for cover in covers)]
        for each, count in plan:
            if outcome.found or outcome.stopped:
                break
            _search(runner, each, make_scenario, outcome, examples=count, seed=seed,
                    hunted=hunted, on_judged=on_judged, shrink=shrink)  # fmt: skip
    return outcome


def _search(
    runner: Runner,
    strategy: Any,
    make_scenario: Callable[[dict[str, Any]], Scenario],
    outcome: SearchResult,
    *,
    examples: int,
    seed: int,
    hunted: tuple[str, ...],
    on_judged: Callable[[int], None] | None,
    shrink: bool,
) -> None:
    """One hypothesis run of up to ``examples`` of ``strategy``, counted into ``outcome``."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, reject, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis.errors import Flaky, Unsatisfiable

    #: The last (so the smallest yet) failing example of each kind, should the search stop.
    latest: dict[str, Found] = {}
    adapter = runner.adapter

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        # Not shrinking: hypothesis would otherwise go on generating after the first bug
        # (up to twice the examples it took) in search of more bugs to report.
        report_multiple_bugs=shrink,
        phases=tuple(Phase) if shrink else (Phase.explicit, Phase.reuse, Phase.generate),
    )
    @given(strategy)
    def check(document: dict[str, Any]) -> None:
        spent = isinstance(adapter, _Restarting) and adapter.restarts >= adapter.max_restarts
        result = runner.run_one(make_scenario(document))
        kind = result.counts_as
        if kind == "skip":
            reject()  # not judged, exactly as `run` skips it
        outcome.judged += 1
        if on_judged:
            on_judged(outcome.judged)
        if kind == "error" and spent:
            assert isinstance(adapter, _Restarting)
            raise _Stopped(
                f"the implementation's restarts are used up ({adapter.restarts}, "
                f"--max-restarts {adapter.max_restarts}): every further example would error "
                "without being run"
            )
        if kind in hunted:
            found = _RAISED[kind](document, result)
            latest[kind] = found
            raise found
        if kind in _RAISED and kind not in outcome.seen:
            outcome.seen[kind] = _RAISED[kind](document, result)

    try:
        hypothesis_seed(seed)(check)()
    except Unsatisfiable:
        pass  # every example was skipped: nothing judged, which the caller reports
    except _Stopped as stop:
        outcome.stopped = str(stop)
        outcome.found = [latest[k] for k in hunted if k in latest]
    except BaseException as raised:
        found = [leaf for leaf in _leaves(raised) if isinstance(leaf, Found)]
        if not found:
            raise
        outcome.flaky = isinstance(raised, Flaky)
        by_kind = {f.kind: f for f in found}
        outcome.found = [by_kind[k] for k in hunted if k in by_kind]
