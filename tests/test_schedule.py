"""Longest waits first, scenarios side by side: the order and the fan-out of a run."""

from __future__ import annotations

import os
import threading
import time
from functools import cache

import pytest

from seamspec._cmd_run import SIDE_BY_SIDE, jobs_for
from seamspec.conformance import Runner, load_scenarios
from seamspec.conformance._core.scenario import Scenario
from seamspec.conformance._core.schedule import expected_wait, longest_first, side_by_side
from seamspec.conformance._implementations import reference_adapter


@cache
def _suite() -> tuple[Scenario, ...]:
    return tuple(load_scenarios())


@pytest.mark.parametrize(
    ("scenario", "seconds"),
    [
        # two observers hang in both hooks under 0.5 s, in two calls: four limits
        ("woc-slow-bounded-two-hung-observers", 2.0),
        # only the nested chain is limited (1 s); black hangs in both calls
        ("woc-slow-nested-own-limit", 2.0),
        # a builtin's hanging program, cut by its chain's limit, not its own 10 s
        ("woc-builtin-formatter-hang-under-chain-limit", 1.0),
        # a gate opened before the call waits for nothing; the one never opened does
        ("woc-slow-bounded-gate-released-in-time", 1.0),
        # the caller cancels long before the 3 s limit
        ("woc-cancel-under-time-limit-propagates", 0.0),
        ("woc-join-two-annotations", 0.0),
        ("soo-timeout-unobserved", 2.0),
        ("soo-capped-echo", 0.0),
        ("dr-inject-record-completes-late", 0.05),
        ("dr-absent-inject-nothing-injected", 0.0),
    ],
)
def test_each_room_estimates_the_waits_its_scenarios_run_out(scenario: str, seconds: float) -> None:
    (found,) = [s for s in list(_suite()) if s.id == scenario]
    assert expected_wait(found) == pytest.approx(seconds)


def test_the_longest_waits_start_first_and_ties_keep_their_order() -> None:
    scenarios = list(_suite())
    order = longest_first(scenarios)
    assert sorted(order) == list(range(len(scenarios)))
    waits = [expected_wait(scenarios[i]) for i in order]
    assert waits == sorted(waits, reverse=True)
    assert waits[0] > 0
    ties = [i for i in order if expected_wait(scenarios[i]) == 0]
    assert ties == sorted(ties)


def test_side_by_side_runs_at_most_jobs_at_once_and_returns_every_result() -> None:
    running = peak = 0
    lock = threading.Lock()

    def work(n: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1
        return n * n

    seen: list[int] = []
    done = side_by_side(work, list(range(12)), 3, on_done=seen.append, stop=lambda _: False)
    assert sorted(done) == [n * n for n in range(12)]
    assert seen == done, "on_done sees each result as it arrives"
    assert 1 < peak <= 3


def test_after_stop_nothing_new_starts_and_later_results_are_dropped() -> None:
    started: list[int] = []

    def work(n: int) -> int:
        started.append(n)
        time.sleep(0.05 if n else 0.0)
        return n

    done = side_by_side(work, list(range(20)), 2, on_done=lambda _: None, stop=lambda n: n == 0)
    assert done == [0]
    assert len(started) <= 3, f"items started after the stop: {started}"


def test_an_exception_in_work_reaches_the_caller() -> None:
    def work(n: int) -> int:
        if n == 3:
            raise ValueError("boom")
        return n

    with pytest.raises(ValueError, match="boom"):
        side_by_side(work, list(range(6)), 2, on_done=lambda _: None, stop=lambda _: False)


def test_a_run_side_by_side_reports_in_scenario_order() -> None:
    scenarios = [s for s in list(_suite()) if s.contract == "write-observer-chain"][:30]
    seen: list[str] = []
    adapter = reference_adapter()
    result = Runner(adapter, on_result=lambda r: seen.append(r.scenario.id)).run(scenarios, jobs=4)
    assert [r.scenario.id for r in result.results] == [s.id for s in scenarios]
    assert sorted(seen) == sorted(s.id for s in scenarios)
    assert {r.status for r in result.results} == {"pass"}


def test_default_jobs_fit_the_implementation() -> None:
    assert jobs_for(None, concurrent=True) == SIDE_BY_SIDE
    assert jobs_for(None, concurrent=False) == 1
    assert jobs_for(3, concurrent=False) == 3
    assert jobs_for(0, concurrent=True) == (os.cpu_count() or 1)


def test_the_kit_s_own_implementations_allow_side_by_side_and_others_must_opt_in() -> None:
    from seamspec.conformance import PythonAdapter, load_adapter

    assert load_adapter("reference").concurrent_runs is True  # type: ignore[attr-defined]
    assert load_adapter("mutant:woc-join-newline").concurrent_runs is True  # type: ignore[attr-defined]
    assert PythonAdapter(name="x", version="1", drivers=[]).concurrent_runs is False
