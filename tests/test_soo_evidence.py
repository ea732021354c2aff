"""The shell-output kit judges from what it sees itself, not from what it is told.

Each test builds an implementation that behaves in one way but *reports* (or omits)
something else, and checks that the verdict follows the behaviour: drain threads found
by the kit although none is reported, IDs taken from what the scripted observer
received although the report says otherwise or a counter never starts at 1, a silently
consumed ID found from the gap it leaves, a chunk handed over as a ``bytearray``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from seamspec import __version__
from seamspec.conformance import PythonAdapter, Runner, ScenarioResult, load_scenarios
from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver
from seamspec.conformance._contracts.shell_output.mutants import MUTANTS
from seamspec.conformance._contracts.shell_output.reference_adapter import ReferenceShellOutput
from seamspec.reference import (
    InvocationIds,
    ObservationSession,
    ShellOutputStream,
    ShellResult,
    ShellRunner,
)


class _Built(ReferenceShellOutput):
    """A reference-shaped implementation with a chosen runner class and hook wiring."""

    def __init__(
        self,
        runner: type[ShellRunner],
        *,
        report_threads: bool = True,
        ids: InvocationIds | None = None,
    ) -> None:
        super().__init__(runner)
        self.report_threads = report_threads
        self.ids = ids

    def make_shell(
        self,
        *,
        output_cap: int,
        live_budget: int,
        policy: Callable[[Sequence[str]], str | None],
        thread_hook: Callable[[str, int | None], None],
    ) -> ShellRunner:
        return self.runner(
            output_cap=output_cap,
            live_budget=live_budget,
            policy=policy,
            ids=self.ids or InvocationIds(),
            thread_hook=thread_hook if self.report_threads else None,
        )


def _run(implementation: ReferenceShellOutput, *ids: str) -> dict[str, ScenarioResult]:
    scenarios = [s for s in load_scenarios() if s.id in ids]
    assert len(scenarios) == len(ids), "a scenario named here no longer exists"
    adapter = PythonAdapter(
        name="evidence-fixture",
        version=__version__,
        drivers=[ShellOutputDriver(implementation)],
    )
    try:
        results = Runner(adapter, timeout=30, profile="strict").run(scenarios).results
    finally:
        adapter.close()
    return {r.scenario.id: r for r in results}


def _oracle_rules(result: ScenarioResult) -> set[str]:
    return {f.rule for f in result.findings if f.source == "oracle" and f.rule}


def test_a_drain_thread_is_found_although_the_runner_reports_none() -> None:
    """SOO-THREAD holds on the kit's own look at /proc, not on the thread hook."""
    deliver_on_drain = MUTANTS["soo-deliver-on-drain"].runner
    results = _run(
        _Built(deliver_on_drain, report_threads=False), "soo-callbacks-on-presentation-thread"
    )
    result = results["soo-callbacks-on-presentation-thread"]
    assert result.status == "fail"
    assert "SOO-THREAD" in _oracle_rules(result), result.detail
    assert result.trace is not None
    assert any(e.get("seen_by") == "kit" and e["role"] == "drain" for e in result.trace)


def test_the_reference_with_unreported_threads_still_passes() -> None:
    results = _run(
        _Built(ShellRunner, report_threads=False),
        "soo-callbacks-on-presentation-thread",
        "soo-flood-with-stuck-observer",
    )
    assert {r.status for r in results.values()} == {"pass"}, [r.detail for r in results.values()]


ID_SCENARIOS = (
    "soo-ids-only-observed",
    "soo-concurrent-distinct-ids",
    "soo-denied-no-callback-no-id",
    "soo-session-isolated-sessions",
    "soo-ids-with-spawn-failure-between",
)


def test_ids_are_judged_relative_to_each_other() -> None:
    """A counter shared by every scenario, far from 1, as upstream's process-wide one."""
    shared = InvocationIds(start=1000)
    results = _run(_Built(ShellRunner, ids=shared), *ID_SCENARIOS)
    bad = {k: r.detail for k, r in results.items() if r.status != "pass"}
    assert not bad, bad


class _ReportsAnotherId(ShellRunner):
    """Reports an ID one above the one its observer is called with."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        hook = kwargs.get("on_invocation")
        if hook is not None:
            kwargs["on_invocation"] = lambda i: hook(i + 1)
        return await super().run(argv, **kwargs)


def test_an_id_report_that_contradicts_the_callbacks_is_caught() -> None:
    result = _run(_Built(_ReportsAnotherId), "soo-ids-only-observed")["soo-ids-only-observed"]
    assert result.status == "fail"
    assert "SOO-IDS" in _oracle_rules(result), result.detail
    assert "but its observer was called with" in result.detail


class _TakesSilently(ShellRunner):
    """Takes an ID for every unobserved command and says nothing about it."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        if kwargs.get("observer") is None:
            self._ids.take()
        return await super().run(argv, **kwargs)


class _ReportsNothing(ShellRunner):
    """A runner that never calls on_invocation: the kit learns IDs from the callbacks."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        kwargs["on_invocation"] = None
        return await super().run(argv, **kwargs)


def test_an_id_consumed_silently_is_seen_from_the_gap() -> None:
    result = _run(_Built(_TakesSilently), "soo-ids-only-observed")["soo-ids-only-observed"]
    assert "SOO-IDS" in _oracle_rules(result), result.detail
    assert "unobserved call(s) ['c'] consumed an ID" in result.detail
    assert "took ID" not in result.detail  # nothing was reported: only the gap shows it


def test_ids_come_from_the_callbacks_when_nothing_is_reported() -> None:
    results = _run(_Built(_ReportsNothing), *ID_SCENARIOS)
    bad = {k: r.detail for k, r in results.items() if r.status != "pass"}
    assert not bad, bad


class _HandsBytearray(ObservationSession):
    """Delivers the right bytes, but as a ``bytearray``: the protocol promises ``bytes``."""

    def _deliver(self, stream: ShellOutputStream, chunk: bytes) -> None:
        wrong = bytearray(chunk)  # the fixture's point: the protocol (and mypy) say bytes
        self.observer.on_output(self.invocation, stream, wrong)  # type: ignore[arg-type]


class _BytearrayRunner(ShellRunner):
    session_class = _HandsBytearray


def test_a_chunk_that_is_not_bytes_is_caught_although_its_bytes_are_right() -> None:
    """SOO-RAW: the scripted observer records the chunk's type, not only its content."""
    result = _run(_Built(_BytearrayRunner), "soo-exit-code-and-streams")[
        "soo-exit-code-and-streams"
    ]
    assert result.status == "fail"
    assert _oracle_rules(result) == {"SOO-RAW"}, result.detail
    assert "on_output got a bytearray chunk; the protocol promises bytes" in result.detail


#: The fixtures above, for tests/soo_oracle_coverage.py (the oracle branches they reach).
FIXTURES: dict[str, Callable[[], ReferenceShellOutput]] = {
    "fixture:drain-unreported": lambda: _Built(
        MUTANTS["soo-deliver-on-drain"].runner, report_threads=False
    ),
    "fixture:reports-another-id": lambda: _Built(_ReportsAnotherId),
    "fixture:takes-silently": lambda: _Built(_TakesSilently),
    "fixture:reports-nothing": lambda: _Built(_ReportsNothing),
    "fixture:hands-bytearray": lambda: _Built(_BytearrayRunner),
}
