"""``seamspec run``: the suite against one implementation, with reports and a CI verdict."""

from __future__ import annotations

import argparse
import fnmatch
import multiprocessing
import multiprocessing.util
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from rich.console import Console

from seamspec import __version__
from seamspec._output import MAX_JOBS, count, error, output_problems, seconds
from seamspec._run_output import NORMAL, QUIET, VERBOSE, ResultPrinter, print_problems
from seamspec._run_scope import run_scope
from seamspec._signals import blocked, deferred, worker_signals
from seamspec._wire_cli import (
    AdapterSpec,
    adapter_from_spec,
    adapter_spec,
    make_adapter,
    runner_timeout,
)
from seamspec._wire_cli import add_run_options as add_wire_run_options
from seamspec.conformance import (
    Adapter,
    ImplementationInfo,
    Runner,
    RunResult,
    Scenario,
    ScenarioResult,
    load_adapter,
    load_scenarios,
    summary_line,
    to_json_report,
    write_json_report,
    write_junit_xml,
)
from seamspec.conformance._core.catalogue import CONTRACTS, PROFILES, Profile
from seamspec.conformance._core.manifest import ExpectedFailure, load_manifest, manifest_text
from seamspec.conformance._core.schedule import longest_first
from seamspec.conformance._implementations import implementation_info

__all__ = ["add_run_parser", "cmd_run"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

#: Scenarios run at once, in threads, for an adapter that allows it (``concurrent_runs``).
#: Scenarios mostly wait (time limits, child programs, fsync), so more than the CPUs:
#: on 2 cores the whole suite took 2.6 s with 4, 2.4 s with 8, 2.5 s with 16 (see
#: docs/benchmarks.md); 8 leaves room for the few scenarios that wait longest.
SIDE_BY_SIDE = 8


def jobs_for(requested: int | None, concurrent: bool) -> int:
    """How many scenarios run at once: ``-j N`` as given (0: one per CPU), else the default."""
    if requested is None:
        return SIDE_BY_SIDE if concurrent else 1
    return requested or os.cpu_count() or 1


def add_run_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser("run", help="run the conformance suite against an implementation")
    impl = run.add_mutually_exclusive_group()
    impl.add_argument(
        "--impl",
        default="reference",
        metavar="X",
        help="reference (default), reference-trio, mutant:NAME, or package.module:attribute",
    )
    run.add_argument(
        "--contract", action="append", choices=CONTRACTS, help="only this contract (repeatable)"
    )
    run.add_argument(
        "-k",
        dest="pattern",
        metavar="PATTERN",
        help="only scenarios whose ID, title or tags contain PATTERN (a glob if it has * or ?)",
    )
    run.add_argument(
        "--scenarios",
        action="append",
        type=Path,
        metavar="PATH",
        help="scenario files or folders (default: the suite shipped with seamspec)",
    )
    run.add_argument("--report-json", type=Path, metavar="PATH", help="write the JSON report here")
    run.add_argument("--junit-xml", type=Path, metavar="PATH", help="write JUnit XML here")
    run.add_argument(
        "--expect", type=Path, metavar="MANIFEST", help="expected-failure manifest (YAML)"
    )
    run.add_argument(
        "--strict", action="store_true", help="an unexpected pass (xpass) fails the run"
    )
    run.add_argument(
        "--profile",
        choices=PROFILES,
        default="upstream",
        help="upstream (default): count what the upstream crates promise; strict: also "
        "count seamspec's own decisions (otherwise reported as recommendations)",
    )
    run.add_argument(
        "--write-manifest", type=Path, metavar="PATH", help="write today's failures as a manifest"
    )
    run.add_argument(
        "--timeout",
        type=seconds,
        default=60.0,
        metavar="SECONDS",
        help="time limit for one scenario (default 60)",
    )
    run.add_argument(
        "-x", "--fail-fast", action="store_true", help="stop at the first failure or error"
    )
    run.add_argument(
        "--max-fail", type=count(1), metavar="N", help="stop after N failures or errors"
    )
    run.add_argument(
        "-j",
        "--jobs",
        type=count(0, MAX_JOBS, zero="one per CPU"),
        default=None,
        metavar="N",
        help=f"scenarios at once (0: one per CPU). Default: {SIDE_BY_SIDE} side by side in "
        "threads for an implementation that allows it (the kit's own do), else 1; N for "
        "another implementation means N worker processes, each with its own copy",
    )
    talk = run.add_mutually_exclusive_group()
    talk.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only the problems, the verdict and the summary",
    )
    talk.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also list every skipped scenario with its reason (by default skips are "
        "counted, one line per reason)",
    )
    add_wire_run_options(run, impl)
    run.set_defaults(func=cmd_run)


def select(
    scenarios: list[Scenario], contracts: Sequence[str] | None, pattern: str | None
) -> list[Scenario]:
    chosen = [s for s in scenarios if not contracts or s.contract in contracts]
    if pattern:
        needle = pattern.lower()
        is_glob = any(c in pattern for c in "*?[")

        def matches(s: Scenario) -> bool:
            hay = [s.id, s.title.lower(), *s.tags]
            if is_glob:
                return any(fnmatch.fnmatch(h, needle) for h in hay)
            return any(needle in h for h in hay)

        chosen = [s for s in chosen if matches(s)]
    return chosen


# -- parallel runs: a process pool, one adapter per worker process --------------------
_WORKER: Runner | None = None


def _init_worker(  # noqa: PLR0917 - ProcessPoolExecutor passes initargs by position
    spec: AdapterSpec,
    timeout: float,
    expected: dict[str, ExpectedFailure],
    strict: bool,
    profile: Profile,
    compare: bool,
    late_dir: str,
) -> None:
    global _WORKER  # noqa: PLW0603 - one runner per worker process, by design
    adapter = adapter_from_spec(spec)
    # Pool workers leave through multiprocessing's exit path, which runs these finalizers
    # (not atexit): the adapter's child implementation, if any, is stopped and reaped.
    multiprocessing.util.Finalize(adapter, adapter.close, exitpriority=10)
    reference = load_adapter("reference") if compare else None
    if reference is not None:
        multiprocessing.util.Finalize(reference, reference.close, exitpriority=10)

    def close_all() -> None:
        adapter.close()
        if reference is not None:
            reference.close()

    # Ctrl-C goes to the whole foreground process group, workers included: the main
    # process alone decides what it means, and ends workers with SIGTERM (_end_workers).
    worker_signals(close_all)
    _WORKER = Runner(
        adapter,
        timeout=timeout,
        expected_failures=expected,
        strict=strict,
        profile=profile,
        compare_with=reference,
    )
    # After the adapter is closed (lower priority: later), what closing it found out
    # about scenarios already returned goes to the main process through a file.
    multiprocessing.util.Finalize(
        _WORKER, _save_late_results, args=(_WORKER, late_dir), exitpriority=5
    )


def _run_in_worker(scenario: Scenario) -> tuple[ScenarioResult, list[ScenarioResult]]:
    """The scenario's result, and earlier ones of this worker found wrong since."""
    assert _WORKER is not None
    return _WORKER.run_one(scenario), _WORKER.late_results()


def _save_late_results(runner: Runner, late_dir: str) -> None:
    late = runner.late_results()
    if late:
        path = Path(late_dir) / f"late-{os.getpid()}.pickle"
        path.write_bytes(pickle.dumps(late))


def _load_late_results(late_dir: Path) -> list[ScenarioResult]:
    """What the workers saved (_save_late_results): files of this run's own folder."""
    late: list[ScenarioResult] = []
    for path in sorted(late_dir.glob("late-*.pickle")):
        late += pickle.loads(path.read_bytes())  # written by our own workers
    return late


def _run_parallel(
    args: argparse.Namespace,
    *,
    runner: Runner,
    chosen: list[Scenario],
    expected: dict[str, ExpectedFailure],
    on_result: Callable[[ScenarioResult], None],
    stop: Callable[[ScenarioResult], bool],
) -> RunResult:
    """Scenarios in worker processes, for an implementation that cannot run several
    scenarios in one process at once: each worker keeps its own copy (for ``--impl-cmd``,
    its own child), with its own state and event loops. Longest waits are started first."""
    jobs = jobs_for(args.jobs, concurrent=False)
    started, t0 = time.time(), time.perf_counter()
    late_dir = Path(tempfile.mkdtemp(prefix="late-"))  # inside the run's own folder
    results: dict[str, ScenarioResult] = {}
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        initializer=_init_worker,
        initargs=(
            adapter_spec(args),
            runner_timeout(args),
            expected,
            args.strict,
            args.profile,
            runner.compare_with is not None,
            str(late_dir),
        ),
    )
    try:
        # Workers are forked while Ctrl-C is held back: each inherits that, and lets it
        # through only once it ignores it (worker_signals), so none dies mid-start.
        with blocked():
            futures = [pool.submit(_run_in_worker, chosen[i]) for i in longest_first(chosen)]
        for future in as_completed(futures):
            result, late = future.result()
            for each in (result, *late):
                results[each.scenario.id] = each
                on_result(each)
            if stop(result):
                for pending in futures:
                    pending.cancel()
                break
    except BaseException:
        with deferred():
            _end_workers(pool)
        raise
    pool.shutdown(wait=True)
    for each in _load_late_results(late_dir):
        results[each.scenario.id] = each
        on_result(each)
    ordered = [results[s.id] for s in chosen if s.id in results]
    return RunResult(
        runner.info, ordered, started, time.perf_counter() - t0, args.strict, args.profile
    )


#: How long interrupted workers get to close their adapters before they are killed.
WORKER_GRACE = 10.0


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Interrupted: no new scenario starts, and every worker ends what it was running.

    Not ``shutdown(wait=True)``, which would wait for every running scenario (a hung
    implementation: its whole time limit). SIGTERM makes a worker close its adapters
    (cancelling an in-process scenario, stopping a child implementation) and exit; a
    worker that does not within the grace period is killed, and the run's scope
    (``run_scope``) kills whatever is left below the kit.
    """
    pool.shutdown(wait=False, cancel_futures=True)
    workers = multiprocessing.active_children()
    for worker in workers:
        worker.terminate()
    deadline = time.monotonic() + WORKER_GRACE
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
    for worker in workers:
        if worker.is_alive():
            worker.kill()
            worker.join(1.0)


def _side_by_side_note(jobs: int, concurrent: bool) -> str:
    return f"; {jobs} at a time" + ("" if concurrent else " (worker processes)")


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    """Run the suite; the run's child processes and temporary files end with it."""
    with run_scope():
        return _cmd_run(args, console)


def _cmd_run(args: argparse.Namespace, console: Console) -> int:
    unwritable = output_problems(
        [
            ("--report-json", args.report_json),
            ("--junit-xml", args.junit_xml),
            ("--write-manifest", args.write_manifest),
        ]
    )
    for problem in unwritable:
        error(problem)
    if unwritable:
        return EXIT_USAGE
    scenarios = load_scenarios(args.scenarios)
    chosen = select(scenarios, args.contract, args.pattern)
    if not chosen:
        error("no scenario matches the selection (check --contract and -k)")
        return EXIT_USAGE
    expected = load_manifest(args.expect, [s.id for s in scenarios]) if args.expect else {}
    adapter = make_adapter(args)
    failures = 0
    limit = 1 if args.fail_fast else args.max_fail

    def stop(result: ScenarioResult) -> bool:
        nonlocal failures
        failures += result.is_failure or result.status == "error"
        return limit is not None and failures >= limit

    verbosity = QUIET if args.quiet else VERBOSE if args.verbose else NORMAL
    # Failures keep the reference's trace of the same scenario, drawn beside the failing
    # one in the HTML report. Not when judging the reference itself.
    judging_reference = getattr(args, "impl_cmd", None) is None and args.impl in (
        "reference",
        "reference-asyncio",
    )
    reference = None if judging_reference else load_adapter("reference")
    concurrent = bool(getattr(adapter, "concurrent_runs", False))
    jobs = jobs_for(args.jobs, concurrent)
    try:
        info = implementation_info(adapter, args.impl_cmd or f"--impl {args.impl}")
        if verbosity != QUIET:
            console.print(
                f"seamspec {__version__}: {len(chosen)} scenarios against {info.name} "
                f"{info.version} ({info.language}; contracts: "
                f"{', '.join(info.contracts) or 'none'}; profile {args.profile})"
                + (_side_by_side_note(jobs, concurrent) if jobs != 1 else ""),
                highlight=False,
            )
        printer = ResultPrinter(console, chosen, info, verbosity)
        runner = Runner(
            adapter,
            timeout=runner_timeout(args),
            on_result=printer,
            expected_failures=expected,
            strict=args.strict,
            profile=args.profile,
            compare_with=reference,
        )
        if jobs != 1 and not concurrent:
            result = _run_parallel(
                args, runner=runner, chosen=chosen, expected=expected, on_result=printer, stop=stop
            )
        else:
            result = runner.run(chosen, stop=stop, jobs=jobs)
        printer.finish()
    finally:
        with deferred():  # a Ctrl-C now waits until both are closed
            close_problem = _close(adapter)
            if reference is not None:
                reference.close()
    for late in runner.late_results():  # found while the implementation was stopped
        result.results[:] = [
            late if r.scenario.id == late.scenario.id else r for r in result.results
        ]
        printer(late)
    print_problems(console, result)
    try:
        _write_outputs(args, result, console, verbosity)
    except OSError as problem:
        error(f"cannot write {problem.filename}: {problem.strerror or problem}")
        return EXIT_USAGE
    _print_verdict(args, result, console, info, chosen)
    if close_problem:
        error(f"{close_problem}; the run fails (exit 1), its verdict on the scenarios stands")
        return EXIT_FAILED
    return EXIT_OK if result.ok else EXIT_FAILED


def _close(adapter: Adapter) -> str | None:
    """Close the implementation; a ``close()`` that raises is its error, never a traceback.

    The run's results stand (they were judged before), but the run exits 1: an adapter
    that cannot shut down cleanly is an implementation problem the CI must see.
    """
    try:
        adapter.close()
    except Exception as problem:
        return f"the implementation's close() raised {type(problem).__name__}: {problem}"
    return None


def _write_outputs(
    args: argparse.Namespace, result: RunResult, console: Console, verbosity: int
) -> None:
    report = to_json_report(result)
    if args.report_json:
        write_json_report(result, args.report_json)
        if verbosity != QUIET:
            console.print(f"JSON report: {args.report_json}", highlight=False)
    if args.junit_xml:
        write_junit_xml(report, args.junit_xml)
        if verbosity != QUIET:
            console.print(f"JUnit XML: {args.junit_xml}", highlight=False)
    if args.write_manifest:
        args.write_manifest.parent.mkdir(parents=True, exist_ok=True)
        args.write_manifest.write_text(manifest_text(report), encoding="utf-8")
        if verbosity != QUIET:
            console.print(f"manifest of today's failures: {args.write_manifest}", highlight=False)


def _print_verdict(
    args: argparse.Namespace,
    result: RunResult,
    console: Console,
    info: ImplementationInfo,
    chosen: list[Scenario],
) -> None:
    summary = result.summary()
    if summary["warnings"]:
        console.print(
            f"{summary['warnings']} SHOULD-level warning(s): reported, not counted as failures",
            style="yellow",
        )
    if summary["recommendations"]:
        console.print(
            f"{summary['recommendations']} strict-profile recommendation(s): seamspec's own "
            "decisions this implementation does not follow; they count under --profile strict",
            style="cyan",
        )
    if summary["xpassed"]:
        note = (
            "these fail the run (--strict)"
            if args.strict
            else "update the manifest, or use --strict"
        )
        console.print(f"{summary['xpassed']} unexpected pass(es): {note}", style="red")
    if len(result.results) < len(chosen):
        console.print(
            f"stopped early: {len(chosen) - len(result.results)} scenario(s) not run",
            style="yellow",
        )
    unjudged = result.unjudged_contracts()
    for contract in unjudged:
        console.print(
            f"error: {info.name} declares the {contract} contract, but none of its "
            f"{sum(r.scenario.contract == contract for r in result.results)} selected "
            "scenario(s) ran: every one was skipped (declare the features it implements)",
            style="red",
        )
    nothing = result.nothing_judged()
    if nothing:
        console.print(f"nothing judged: {nothing}", style="red", highlight=False)
    verdict = "NOTHING JUDGED" if nothing else "CONFORMS" if result.ok else "DOES NOT CONFORM"
    console.print(
        f"verdict: {info.name} {verdict} ({result.duration:.1f} s)",
        style="green" if result.ok else "red",
        highlight=False,
    )
    # The closing line is plain text so that CI log readers can parse it.
    print(summary_line(summary), flush=True)
    sys.stdout.flush()
