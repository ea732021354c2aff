"""The runner turns every kind of misbehaviour into a clear status, never a crash or a hang."""

from __future__ import annotations

import time

import pytest

from seamspec.conformance import Runner, load_scenarios

from . import fakes


@pytest.fixture(scope="module")
def scenarios() -> list:  # type: ignore[type-arg]
    # The fakes declare only some contracts: put their scenarios first (``scenarios[:2]``).
    return sorted(load_scenarios(), key=lambda s: s.contract not in fakes.CONTRACTS)


# That the reference passes every scenario outright, side by side, with the results back
# in scenario order, is checked on the conformance session's reports of both backends
# (tests/reference_report.py), not by one more whole run here.


@pytest.mark.parametrize(
    ("adapter", "needle"),
    [
        (fakes.Crashing(), "raised RuntimeError: segfault-ish"),
        (fakes.Garbage(), "not a list of events"),
        (fakes.NotJson(), "not JSON data"),
    ],
    ids=["crash", "garbage", "not-json"],
)
def test_broken_implementations_are_errors(adapter: object, needle: str, scenarios: list) -> None:  # type: ignore[type-arg]
    result = Runner(adapter).run(scenarios[:2])  # type: ignore[arg-type]
    assert [r.status for r in result.results] == ["error", "error"]
    assert needle in result.results[0].detail
    assert not result.ok


def test_hanging_implementation_costs_only_the_time_limit(scenarios: list) -> None:  # type: ignore[type-arg]
    started = time.monotonic()
    result = Runner(fakes.Hanging(), timeout=0.5).run(scenarios[:2])
    assert [r.status for r in result.results] == ["error", "error"]
    assert "did not finish" in result.results[0].detail
    assert time.monotonic() - started < 30


def test_unsupported_and_undeclared_are_skips(scenarios: list) -> None:  # type: ignore[type-arg]
    declining = Runner(fakes.Declining()).run(scenarios[:1]).results[0]
    assert declining.status == "skip"
    assert "implements nothing" in declining.detail
    undeclared = Runner(fakes.NoContracts()).run(scenarios[:1]).results[0]
    assert undeclared.status == "skip"
    assert "does not declare" in undeclared.detail


def test_empty_trace_fails_every_scenario(scenarios: list) -> None:  # type: ignore[type-arg]
    result = Runner(fakes.Silent()).run([s for s in scenarios if s.contract in fakes.CONTRACTS])
    assert {r.status for r in result.results} == {"fail"}
    assert result.summary()["failed"] >= 1
