"""``seamspec fuzz``: generated scenarios against any implementation, judged as ``run`` judges.

The implementation is chosen exactly as for ``run``: ``--impl`` in process, or
``--impl-cmd`` over the wire protocol (with its time limit, restarts and clean stop). A
finding is printed as the shrunk scenario, optionally saved, with the ``run`` command
that judges the saved file the same way (same implementation, same profile).
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from rich.console import Console

from seamspec._output import count, error, output_problems, seconds
from seamspec._progress import Counter
from seamspec._wire_cli import add_run_options, make_adapter, runner_timeout
from seamspec.conformance import Adapter
from seamspec.conformance._core.catalogue import CONTRACTS, PROFILES, catalogue

__all__ = ["add_fuzz_parser", "cmd_fuzz"]

#: A generated scenario takes a second or two at most; a hang found is replayed while
#: it is shrunk, and each replay costs this long, so the default is shorter than run's.
DEFAULT_TIMEOUT = 20.0
#: Shrinking a crash replays it, and each replay restarts the implementation.
DEFAULT_RESTARTS = 100


def add_fuzz_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fuzz = sub.add_parser(
        "fuzz", help="generated scenarios judged by the oracles (needs hypothesis)"
    )
    impl = fuzz.add_mutually_exclusive_group()
    impl.add_argument(
        "--impl",
        default="reference",
        metavar="X",
        help="implementation to judge, as for run: reference (default), mutant:NAME, "
        "package.module:attribute",
    )
    fuzz.add_argument("--contract", action="append", choices=CONTRACTS, help="only this contract")
    fuzz.add_argument(
        "--examples",
        type=count(1, 1_000_000),
        default=200,
        metavar="N",
        help="examples per contract (200)",
    )
    fuzz.add_argument("--seed", type=int, metavar="S", help="fix hypothesis's seed to repeat a run")
    fuzz.add_argument(
        "--save-failures",
        type=Path,
        metavar="DIR",
        help="write each shrunk finding as a scenario YAML file",
    )
    fuzz.add_argument(
        "--profile",
        choices=PROFILES,
        default="upstream",
        help="count findings as run does under this profile: upstream (default) or strict",
    )
    fuzz.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"time limit for one generated scenario (default {DEFAULT_TIMEOUT:g}; a hang "
        "is replayed while it is shrunk)",
    )
    add_run_options(
        fuzz,
        impl,
        max_restarts=DEFAULT_RESTARTS,
        restarts_help="restarts in the whole run (shrinking a crash replays it, one restart "
        "each); once used up, fuzzing stops with the smallest failure seen",
    )
    fuzz.set_defaults(func=cmd_fuzz)


class _Terminated(BaseException):
    """SIGTERM while fuzzing.

    Not the ``SystemExit`` that ``run`` raises for it: hypothesis takes a ``SystemExit``
    for a failing example and goes on shrinking it, so the implementation would outlive a
    CI job's cancel. A bare ``BaseException`` is what hypothesis lets through at once.
    """


def _stop_on_sigterm() -> None:
    if threading.current_thread() is threading.main_thread():

        def stop(signum: int, _frame: object) -> None:
            raise _Terminated(128 + signum)

        signal.signal(signal.SIGTERM, stop)


def cmd_fuzz(args: argparse.Namespace, console: Console) -> int:
    """Exit 1 when a generated scenario fails or errors (after shrinking), or nothing was
    fuzzed; 0 when every fuzzed contract passed (warnings are reported, as run does).

    Inside the run scope, as ``run`` is: an implementation that crashes leaves its
    grandchildren to the kit (a child subreaper), and they end with the fuzzing.
    """
    from seamspec._run_scope import run_scope

    with run_scope():
        return _fuzz(args, console)


def _fuzz(args: argparse.Namespace, console: Console) -> int:
    from seamspec.conformance._implementations import implementation_info
    from seamspec.conformance._quality.fuzz import FuzzUnavailable, strategies

    for problem in output_problems([("--save-failures", args.save_failures)], folders=True):
        error(problem)
        return 2
    try:
        available = strategies()
    except FuzzUnavailable as problem:
        error(problem)
        return 2
    contracts = args.contract or list(available)
    adapter = make_adapter(args)
    _stop_on_sigterm()
    tally = _Tally()
    try:
        what = f"--impl-cmd {args.impl_cmd}" if args.impl_cmd is not None else f"--impl {args.impl}"
        info = implementation_info(adapter, what)
        for contract in contracts:
            if contract not in available:
                tally.skip(console, contract, "no scenario generator yet")
            elif contract not in info.contracts:
                tally.skip(console, contract, f"{info.name} does not declare it")
            else:
                _fuzz_one(args, console, adapter, contract, tally)
    except _Terminated as stop:
        error("terminated (SIGTERM): fuzzing stopped, and so did the implementation")
        code: int = stop.args[0]
        return code
    finally:
        adapter.close()
    if not tally.passed and not tally.failed:
        console.print("nothing was fuzzed: every contract was skipped", style="red")
    print(tally.line(), flush=True)
    return 1 if tally.failed or not tally.passed else 0


class _Tally:
    def __init__(self) -> None:
        self.passed = self.failed = 0
        self.skipped: list[str] = []
        self.reported: dict[str, int] = {}

    def skip(self, console: Console, contract: str, why: str) -> None:
        self.skipped.append(contract)
        console.print(f"{contract}: SKIPPED: {why}", style="yellow", highlight=False)

    def line(self) -> str:
        line = f"{self.passed} contract(s) passed, {self.failed} failed"
        if self.skipped:
            line += f", {len(self.skipped)} skipped ({', '.join(self.skipped)})"
        words = {
            "warning": "SHOULD-level warning",
            "recommendation": "strict-profile recommendation",
        }
        told = [f"{n} {words[kind]}(s)" for kind, n in self.reported.items()]
        return line + (f"; reported: {', '.join(told)}" if told else "")


def _fuzz_one(
    args: argparse.Namespace, console: Console, adapter: Adapter, contract: str, tally: _Tally
) -> None:
    from seamspec.conformance._quality.fuzz import fuzz_contract, save_failure

    info = adapter.info()
    seeded = f"seed {args.seed}" if args.seed is not None else "random seed"
    console.print(
        f"{contract}: up to {args.examples} generated scenarios against {info.name} "
        f"(profile {args.profile}, {seeded})",
        highlight=False,
    )
    judged = _ExampleCounter(console, contract, args.examples)
    outcome = fuzz_contract(
        adapter,
        contract,
        examples=args.examples,
        seed=args.seed,
        profile=args.profile,
        timeout=runner_timeout(args),
        on_example=judged,
    )
    if outcome.judged == 0 and not outcome.findings:
        tally.skip(
            console,
            contract,
            f"no generated example needs only the features {info.name} declares "
            f"({', '.join(info.features) or 'none'}), or it skipped every one; nothing was "
            "judged",
        )
        return
    if outcome.failed:
        tally.failed += 1
    else:
        tally.passed += 1
    if not outcome.findings:
        console.print(
            f"{contract}: every example passed ({outcome.judged} judged, "
            f"{judged.counter.elapsed()})",
            style="green",
            highlight=False,
        )
    if args.seed is None:
        console.print(f"  repeat this run with --seed {outcome.seed}", style="dim", highlight=False)
    if outcome.stopped:
        console.print(f"{contract}: fuzzing stopped early: {outcome.stopped}", style="red")
    prefix = catalogue().contracts[contract].scenario_prefix
    for finding in outcome.findings:
        shrunk = "shrunk" if finding.shrunk else "(not fully shrunk)"
        if finding.counts:
            what = (
                "FAILED"
                if finding.kind == "failure"
                else "ERROR (the implementation crashed, hung or broke the protocol)"
            )
            console.print(f"{contract}: {what} on this {shrunk} scenario:", style="red")
        else:
            tally.reported[finding.kind] = tally.reported.get(finding.kind, 0) + 1
            console.print(
                f"{contract}: no failure, but a {finding.kind} (reported, not counted, as run "
                f"does) on this {shrunk} scenario:",
                style="yellow",
                highlight=False,
            )
        console.print(finding.yaml_text(f"{prefix}-fuzz-found"), markup=False, highlight=False)
        console.print(finding.detail, markup=False, highlight=False, style="dim")
        if args.save_failures:

            def reproduce(saved: Path, kind: str = finding.kind) -> str:
                return _reproduce(args, saved, kind)

            path = save_failure(finding, args.save_failures, reproduce)
            console.print(f"saved as {path}; run it with `{reproduce(path)}`", highlight=False)


def _reproduce(args: argparse.Namespace, path: Path, kind: str) -> str:
    from seamspec.conformance._quality.fuzz import reproduce_command

    return reproduce_command(
        path,
        kind,
        impl=args.impl,
        impl_cmd=args.impl_cmd,
        request_timeout=args.request_timeout or args.timeout,
        profile=args.profile,
    )


class _ExampleCounter:
    """Counts the examples judged for one contract; prints a line at each tenth done.

    hypothesis calls back once per example judged (those it discards for lack of a
    feature are not counted), and again while it shrinks a failure: past ``examples``
    the lines stop, since the count no longer says how far the run has come.
    """

    def __init__(self, console: Console, contract: str, examples: int) -> None:
        self.console, self.contract, self.examples = console, contract, examples
        self.every = max(1, examples // 10)
        self.count = 0
        self.counter = Counter(examples)

    def __call__(self, count: int) -> None:
        self.count = count
        if count % self.every == 0 and count < self.examples:
            self.counter.done = count
            self.console.print(
                f"  {self.contract}: {count}/{self.examples} examples judged ({self.counter.eta()})",
                highlight=False,
                style="dim",
            )
