"""Runs scenarios against one adapter and turns traces into verdicts.

A scenario's status is decided here and nowhere else:

- ``skip``: the implementation does not declare the contract or a required feature,
  or its adapter raised :class:`Unsupported`;
- ``error``: the implementation crashed, hung past the time limit, or returned
  something that is not a trace; no verdict on the rules was possible;
- ``fail``: the trace breaks the scenario's ``then`` or a universal rule (the oracle);
- ``pass``: otherwise.

A failure counts against conformance only at MUST level: SHOULD findings are warnings.
It counts only under a profile that includes it: under the default ``upstream`` profile,
a finding about one of seamspec's own decisions (a ``seamspec``-origin rule, or the
``then`` of a ``profile: strict`` scenario) is a *recommendation*: reported, not counted.
``--profile strict`` counts every finding at its level.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from seamspec.conformance._core.adapter import Adapter, ImplementationInfo, Trace
from seamspec.conformance._core.catalogue import PROFILES, Profile, catalogue
from seamspec.conformance._core.errors import ImplementationError, Unsupported
from seamspec.conformance._core.manifest import ExpectedFailure
from seamspec.conformance._core.registry import contract_caveats, contract_judges
from seamspec.conformance._core.scenario import Scenario
from seamspec.conformance._core.schedule import longest_first_side_by_side

__all__ = ["Finding", "RunResult", "Runner", "ScenarioResult", "Status"]

Status = Literal["pass", "fail", "error", "skip", "xfail", "xpass"]


@dataclass(frozen=True)
class Finding:
    """One way a trace is wrong: a broken universal rule (oracle) or an unmet ``then``."""

    source: Literal["oracle", "then"]
    rule: str | None
    level: Literal["MUST", "SHOULD"]
    message: str
    #: The least profile under which this finding counts (the rule's, or the scenario's).
    profile: Profile = "upstream"

    def counts_under(self, profile: Profile) -> bool:
        return profile == "strict" or self.profile == "upstream"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rule": self.rule,
            "level": self.level,
            "profile": self.profile,
            "message": self.message,
        }


@dataclass
class ScenarioResult:
    scenario: Scenario
    status: Status
    detail: str = ""
    findings: list[Finding] = field(default_factory=list)
    duration: float = 0.0
    trace: Trace | None = None
    expected_failure: ExpectedFailure | None = None
    #: The profile the run judged by; findings outside it are recommendations.
    profile: Profile = "upstream"
    #: For a failure: another implementation's trace of the same scenario (the
    #: reference's, when the runner was given one to compare with), for pictures.
    expected_trace: Trace | None = None
    #: (rule, why) for each rule judged on the implementation's word alone, such as a
    #: durability rule over the wire, where the kit cannot watch fsync: "by declaration".
    caveats: list[tuple[str, str]] = field(default_factory=list)

    @property
    def counted(self) -> list[Finding]:
        """The findings that count under this run's profile."""
        return [f for f in self.findings if f.counts_under(self.profile)]

    @property
    def level(self) -> Literal["MUST", "SHOULD"]:
        """The level at which this result counts: MUST if any counted MUST finding, else SHOULD."""
        if self.status == "fail":
            return "MUST" if any(f.level == "MUST" for f in self.counted) else "SHOULD"
        return "MUST" if self.scenario.level == "MUST" else "SHOULD"

    @property
    def is_failure(self) -> bool:
        """A conformance failure: a MUST-level fail under the run's profile."""
        return self.status == "fail" and self.level == "MUST"

    @property
    def is_warning(self) -> bool:
        """A SHOULD-level finding under the run's profile: reported, not counted."""
        return self.status == "fail" and self.level == "SHOULD" and bool(self.counted)

    @property
    def is_recommendation(self) -> bool:
        """Only seamspec's own decisions were missed, and the profile does not count them."""
        return self.status == "fail" and not self.counted

    @property
    def counts_as(self) -> str:
        """One word for reports: failure, warning, recommendation, or the status."""
        if self.is_failure:
            return "failure"
        if self.is_warning:
            return "warning"
        if self.is_recommendation:
            return "recommendation"
        return self.status

    @property
    def broken_rules(self) -> list[str]:
        """The rules this result counts against.

        The oracle names the exact rule it saw broken; when it saw nothing and only the
        scenario's own ``then`` failed, the failure counts against the rules the scenario
        cites, since that is all the kit knows.
        """
        pinned = {f.rule for f in self.findings if f.rule}
        if pinned:
            return sorted(pinned)
        return sorted(self.scenario.rules) if self.findings else []


@dataclass
class RunResult:
    implementation: ImplementationInfo
    results: list[ScenarioResult]
    started: float
    duration: float
    strict: bool = False
    profile: Profile = "upstream"

    def summary(self) -> dict[str, int]:
        counts = {
            "passed": 0,
            "failed": 0,
            "skipped": 0,
            "errors": 0,
            "warnings": 0,
            "recommendations": 0,
            "xfailed": 0,
            "xpassed": 0,
        }
        for r in self.results:
            if r.status == "pass":
                counts["passed"] += 1
            elif r.is_failure:
                counts["failed"] += 1
            elif r.is_warning:
                counts["warnings"] += 1
            elif r.is_recommendation:
                counts["recommendations"] += 1
            elif r.status == "skip":
                counts["skipped"] += 1
            elif r.status == "error":
                counts["errors"] += 1
            elif r.status == "xfail":
                counts["xfailed"] += 1
            elif r.status == "xpass":
                counts["xpassed"] += 1
        return counts

    def unjudged_contracts(self) -> list[str]:
        """Contracts the implementation declares whose selected scenarios were all skipped.

        Declaring a contract and then skipping every scenario of it (no feature declared,
        or ``Unsupported`` everywhere) is not conformance: nothing was checked.
        """
        ran: dict[str, bool] = {}
        for r in self.results:
            if r.scenario.contract in self.implementation.contracts:
                ran[r.scenario.contract] = ran.get(r.scenario.contract, False) or (
                    r.status != "skip"
                )
        return [contract for contract, judged in ran.items() if not judged]

    def nothing_judged(self) -> str | None:
        """Why this run judged nothing, or None: no MUST scenario passed or failed."""
        judged = [r for r in self.results if r.scenario.level == "MUST" and r.status != "skip"]
        if judged:
            return None
        skipped = [r for r in self.results if r.status == "skip"]
        reasons = sorted({r.detail for r in skipped})
        why = "; ".join(reasons[:3]) + (
            f"; and {len(reasons) - 3} more" if len(reasons) > 3 else ""
        )
        return f"no MUST scenario was judged ({len(skipped)} skipped: {why or 'none selected'})"

    @property
    def ok(self) -> bool:
        """True when every MUST scenario passed or was expected to fail (exit code 0).

        With ``strict``, an unexpected pass also fails the run: the manifest is stale. A
        run that judged nothing, or a declared contract none of whose scenarios ran, is not
        a pass either.
        """
        s = self.summary()
        return (
            s["failed"] == 0
            and s["errors"] == 0
            and not (self.strict and s["xpassed"])
            and self.nothing_judged() is None
            and not self.unjudged_contracts()
        )


def summary_line(summary: dict[str, int]) -> str:
    line = f"{summary['passed']} passed, {summary['failed']} failed"
    for key, word in (
        ("skipped", "skipped"),
        ("errors", "errors"),
        ("recommendations", "strict-profile recommendations"),
        ("xfailed", "xfailed"),
        ("xpassed", "xpassed"),
    ):
        if summary.get(key):
            line += f", {summary[key]} {word}"
    return line


#: The most trace data (its JSON length) one Runner keeps in its results, for reports:
#: past it, results keep no trace, so that an implementation that answers with huge traces
#: cannot grow the kit's memory without end. The shipped suite's traces add up to ~13 MB.
TRACE_BUDGET = 32 * 1024 * 1024


def _validate_trace(trace: object) -> Trace:
    return _checked_trace(trace)[0]


def _checked_trace(trace: object) -> tuple[Trace, int]:
    """The trace, if it is one, and its size as JSON."""
    if not isinstance(trace, list):
        raise ImplementationError(
            f"the adapter returned a {type(trace).__name__}, not a list of events"
        )
    for index, event in enumerate(trace):
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise ImplementationError(
                f"trace event {index} is not an object with a string 'type': {event!r:.200}"
            )
    try:
        size = len(json.dumps(trace))
    except (TypeError, ValueError) as error:
        raise ImplementationError(f"the trace is not JSON data: {error}") from None
    return trace, size


class Runner:
    """Runs scenarios against ``adapter``: one at a time, or several side by side (``jobs``).

    Each ``adapter.run`` happens in a daemon worker thread so that an implementation that
    hangs costs ``timeout`` seconds and an ``error`` status, not the whole run.
    """

    def __init__(
        self,
        adapter: Adapter,
        *,
        timeout: float = 60.0,
        on_result: Callable[[ScenarioResult], None] | None = None,
        expected_failures: dict[str, ExpectedFailure] | None = None,
        strict: bool = False,
        profile: Profile = "upstream",
        compare_with: Adapter | None = None,
    ) -> None:
        """``compare_with``: an implementation (in practice the reference) whose trace of
        each failing scenario is kept next to the failing one, so that reports can draw
        what was expected beside what was observed. It is never judged."""
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, not {profile!r}")
        self.adapter = adapter
        self.timeout = timeout
        self.on_result = on_result
        self.expected_failures = expected_failures or {}
        self.strict = strict
        self.profile = profile
        self.compare_with = compare_with
        self.info = adapter.info()
        #: Scenarios run so far, by ID: a late error names one of them (late_results).
        self._ran: dict[str, Scenario] = {}
        self._kept = 0  # trace bytes kept in results so far (TRACE_BUDGET)

    def run(
        self,
        scenarios: Iterable[Scenario],
        *,
        stop: Callable[[ScenarioResult], bool] | None = None,
        jobs: int = 1,
    ) -> RunResult:
        """Run ``scenarios`` and return their results in the order given.

        ``jobs`` above 1 runs that many side by side in threads, the longest waits first
        (:mod:`~seamspec.conformance._core.schedule`); only for an adapter whose ``run``
        may be called from several threads at once (``concurrent_runs``). ``on_result``
        then sees results in the order they finish. ``stop(result)`` true ends the run:
        no further scenario starts (with ``jobs``, those already running finish, unreported).
        """
        started = time.time()
        t0 = time.perf_counter()
        chosen = list(scenarios)
        results: list[ScenarioResult] = []
        if jobs > 1 and len(chosen) > 1:
            results = longest_first_side_by_side(
                self.run_one,
                chosen,
                jobs,
                on_done=self.on_result or (lambda _: None),
                stop=stop or (lambda _: False),
                interrupt=self.adapter.close,
            )
        else:
            for scenario in chosen:
                result = self.run_one(scenario)
                results.append(result)
                if self.on_result:
                    self.on_result(result)
                self._amend_late(results)
                if stop and stop(result):
                    break
        self._amend_late(results)
        return RunResult(
            self.info, results, started, time.perf_counter() - t0, self.strict, self.profile
        )

    def _skip_reason(self, scenario: Scenario) -> str | None:
        if scenario.contract not in self.info.contracts:
            return f"{self.info.name} does not declare the {scenario.contract} contract"
        missing = [f for f in scenario.requires if f not in self.info.features]
        if missing:
            return f"{self.info.name} does not declare the feature(s) {', '.join(missing)}"
        return None

    def _amend_late(self, results: list[ScenarioResult]) -> None:
        """Replace, in ``results``, each result a late error has made untrustworthy."""
        for late in self.late_results():
            results[:] = [late if r.scenario.id == late.scenario.id else r for r in results]
            if self.on_result:
                self.on_result(late)

    def late_results(self) -> list[ScenarioResult]:
        """Scenarios already run whose result the adapter has since found untrustworthy.

        A wire implementation that answers a scenario twice is found out only while the
        next one runs, or when it is stopped (``LateError``): the earlier scenario becomes
        an ``error`` here, and the caller replaces its result. Call after ``run_one`` and
        after closing the adapter.
        """
        take = getattr(self.adapter, "take_late_errors", None)
        if take is None:
            return []
        amended = []
        for late in take():
            scenario = self._ran.get(late.scenario)
            if scenario is None:  # named by the adapter, never run here: nothing to amend
                continue
            detail = f"{late.message}\n{late.context}" if late.context else late.message
            amended.append(self._apply_manifest(ScenarioResult(scenario, "error", detail)))
        return amended

    def run_one(self, scenario: Scenario) -> ScenarioResult:
        """Run and judge one scenario, then apply the expected-failure manifest."""
        self._ran[scenario.id] = scenario
        return self._apply_manifest(self._run_and_judge(scenario))

    def _apply_manifest(self, result: ScenarioResult) -> ScenarioResult:
        scenario = result.scenario
        result.profile = self.profile
        expected = self.expected_failures.get(scenario.id)
        if expected is None or result.status == "skip":
            return result
        result.expected_failure = expected
        if result.status == "error" or result.is_failure or result.is_warning:
            result.detail = f"expected failure: {expected.reason}\n{result.detail}"
            result.status = "xfail"
        elif result.status == "pass" or result.is_recommendation:
            result.detail = f"passed, but the manifest expects a failure: {expected.reason}"
            result.status = "xpass"
        return result

    def _run_and_judge(self, scenario: Scenario) -> ScenarioResult:
        reason = self._skip_reason(scenario)
        if reason:
            return ScenarioResult(scenario, "skip", reason)
        t0 = time.perf_counter()
        try:
            trace, size = _checked_trace(self._call_adapter(scenario))
        except Unsupported as error:
            return ScenarioResult(scenario, "skip", str(error), duration=time.perf_counter() - t0)
        except ImplementationError as error:
            return ScenarioResult(scenario, "error", str(error), duration=time.perf_counter() - t0)
        duration = time.perf_counter() - t0
        findings = judge(scenario, trace)
        caveats = caveats_of(scenario, trace)
        kept = self._keep(trace, size)
        if not findings:
            return ScenarioResult(scenario, "pass", "", [], duration, kept, caveats=caveats)
        detail = "\n".join(f"[{f.rule or 'then'}] {f.message}" for f in findings)
        result = ScenarioResult(scenario, "fail", detail, findings, duration, kept, caveats=caveats)
        result.expected_trace = self._comparison_trace(scenario)
        return result

    def _keep(self, trace: Trace, size: int) -> Trace | None:
        """The trace for the result, while the run's TRACE_BUDGET lasts; else None."""
        if self._kept + size > TRACE_BUDGET:
            return None
        self._kept += size
        return trace

    def _comparison_trace(self, scenario: Scenario) -> Trace | None:
        """The comparison implementation's trace, or None if it has none to give."""
        if self.compare_with is None:
            return None
        try:
            return _validate_trace(self._call_adapter(scenario, self.compare_with))
        except (Unsupported, ImplementationError):
            return None

    def _call_adapter(self, scenario: Scenario, adapter: Adapter | None = None) -> object:
        box: dict[str, Any] = {}
        chosen = adapter or self.adapter

        def target() -> None:
            try:
                box["trace"] = chosen.run(scenario.request())
            except BaseException as error:  # reported to the main thread, never lost
                box["error"] = error
                box["tb"] = traceback.format_exc()

        # the caller's context goes along: a patience cap (``_core.patience``) reaches the driver
        context = contextvars.copy_context()
        worker = threading.Thread(
            target=context.run, args=(target,), name=f"seamspec-{scenario.id}", daemon=True
        )
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            raise ImplementationError(
                f"the implementation did not finish scenario {scenario.id} "
                f"within {self.timeout:g} s",
                context="hint: a hook that never returns? "
                "raise --timeout if the implementation is just slow",
            )
        if "error" in box:
            error = box["error"]
            if isinstance(error, (Unsupported, ImplementationError)):
                raise error
            raise ImplementationError(
                f"the implementation raised {type(error).__name__}: {error}",
                context=box["tb"].rstrip(),
            )
        return box.get("trace")


def caveats_of(scenario: Scenario, trace: Trace) -> list[tuple[str, str]]:
    """The rules this scenario cites that it judged on the implementation's word alone."""
    found = contract_caveats().get(scenario.contract)
    if found is None:
        return []
    found_caveats = found(scenario.request(), scenario.then, trace)
    return [(rule, why) for rule, why in found_caveats if rule in scenario.rules]


def judge(scenario: Scenario, trace: Trace) -> list[Finding]:
    """Both judges on one trace: the contract's oracle, then the scenario's ``then``."""
    oracle, expect = contract_judges()[scenario.contract]
    rules = catalogue()
    request = scenario.request()
    findings = []
    for rule, message in oracle(request, scenario.then, trace):
        level = rules[rule].level if rule in rules else "MUST"
        profile = rules[rule].profile if rule in rules else "upstream"
        findings.append(Finding("oracle", rule, level, message, profile))
    level = "MUST" if scenario.level == "MUST" else "SHOULD"
    for _, message in expect(request, scenario.then, trace):
        findings.append(Finding("then", None, level, message, scenario.profile))
    return findings
