"""What ``seamspec run`` prints while it runs: quiet where nothing happened.

Three levels. The default prints one line per scenario that was judged and folds the
skipped ones into one line per reason at the end ("84 scenarios skipped: contract
shell-output not declared"): an adapter that declares one contract should not scroll
past a hundred lines about the others. ``-v`` lists every skip with its reason; ``-q``
prints no per-scenario line at all, only the problems, the verdict and the summary.

With ``-j``, results arrive in the order workers finish; they are held back and printed
in scenario order, so two runs of the same suite print the same lines in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from seamspec.conformance import ImplementationInfo, RunResult, Scenario, ScenarioResult

__all__ = ["QUIET", "VERBOSE", "ResultPrinter", "print_problems", "skip_reason_group"]

QUIET, NORMAL, VERBOSE = -1, 0, 1

_STYLE = {
    "pass": "green",
    "fail": "red",
    "error": "magenta",
    "skip": "yellow",
    "xfail": "cyan",
    "xpass": "red",
}


def skip_reason_group(result: ScenarioResult, info: ImplementationInfo) -> str:
    """Why a scenario was skipped, in words shared by every scenario skipped for it."""
    scenario = result.scenario
    if scenario.contract not in info.contracts:
        return f"contract {scenario.contract} not declared"
    missing = [f for f in scenario.requires if f not in info.features]
    if missing:
        return f"feature{'s' if len(missing) > 1 else ''} {', '.join(missing)} not declared"
    first = (result.detail.strip().splitlines() or ["no reason given"])[0]
    return f"the implementation does not support it ({first})"


class ResultPrinter:
    """Prints results in scenario order with a [done/total] counter; folds the skips."""

    def __init__(
        self,
        console: Console,
        scenarios: Sequence[Scenario],
        info: ImplementationInfo,
        verbosity: int = NORMAL,
    ) -> None:
        self.console, self.info, self.verbosity = console, info, verbosity
        self.total = len(scenarios)
        self._position = {s.id: i for i, s in enumerate(scenarios)}
        self._held: dict[int, ScenarioResult] = {}
        self._next = 0
        self.done = 0
        self.skips: dict[str, int] = {}
        #: rule -> how many passes took it on the implementation's word ("by declaration").
        self.declared: dict[str, int] = {}

    def __call__(self, result: ScenarioResult) -> None:
        """Take one result, in any order; print every result now due, in scenario order.

        A result for a scenario already printed replaces it (a late error: the
        implementation answered it twice) and is printed at once, marked as such.
        """
        position = self._position[result.scenario.id]
        if position < self._next:
            if self.verbosity != QUIET:
                self.console.print(
                    f"[dim]{escape('[late]'):>{2 * len(str(self.total)) + 4}}[/] "
                    f"[{_STYLE.get(result.status, 'white')}]{result.status.upper():5}[/] "
                    f"{result.scenario.id}  "
                    "[dim](its earlier result no longer holds: see problems)[/]",
                    highlight=False,
                )
            return
        self._held[position] = result
        while self._next in self._held:
            self._emit(self._held.pop(self._next))
            self._next += 1

    def finish(self) -> None:
        """Print what is still held (a run stopped early leaves gaps), then the skip lines."""
        for index in sorted(self._held):
            self._emit(self._held.pop(index))
        if self.verbosity == QUIET:
            return
        for rule, count in self.declared.items():
            self.console.print(
                f"{count} pass{'es' if count != 1 else ''} judged {rule} by declaration: the "
                "kit could not observe that evidence itself (docs/protocol.md, fsync)",
                style="yellow",
                highlight=False,
                markup=False,
            )
        for reason, count in self.skips.items():
            self.console.print(
                f"{count} scenario{'s' if count != 1 else ''} skipped: {reason}",
                style="yellow",
                highlight=False,
                markup=False,
            )

    def _emit(self, result: ScenarioResult) -> None:
        self.done += 1
        if result.status == "skip":
            reason = skip_reason_group(result, self.info)
            self.skips[reason] = self.skips.get(reason, 0) + 1
            if self.verbosity < VERBOSE:
                return
        for rule, _why in result.caveats:
            self.declared[rule] = self.declared.get(rule, 0) + 1
        if self.verbosity == QUIET:
            return
        if result.is_warning:
            status, style = "WARN", "yellow"
        elif result.is_recommendation:
            status, style = "RECO", "cyan"
        else:
            status, style = result.status.upper(), _STYLE.get(result.status, "white")
        width = len(str(self.total))
        tail = (
            f"  [dim]{escape(result.detail.splitlines()[0]) if result.detail else ''}[/]"
            if result.status == "skip"
            else f"  [dim]{result.duration * 1000:.0f} ms[/]"
        )
        if result.caveats and result.status == "pass":
            rules = ", ".join(rule for rule, _ in result.caveats)
            tail += f"  [yellow]({escape(rules)} by declaration)[/]"
        self.console.print(
            f"[dim][{self.done:>{width}}/{self.total}][/] [{style}]{status:5}[/] "
            f"{result.scenario.id}{tail}",
            highlight=False,
        )


def print_problems(console: Console, result: RunResult) -> None:
    """Every failure, error and unexpected pass again, with its rules, file and findings."""
    bad = [r for r in result.results if r.status in ("fail", "error", "xpass")]
    if not bad:
        return
    console.rule("problems")
    for r in bad:
        label = (
            "warning (SHOULD)"
            if r.is_warning
            else "recommendation (counts under --profile strict)"
            if r.is_recommendation
            else r.status
        )
        console.print(
            f"[bold]{r.scenario.id}[/] ({label}) rules {', '.join(r.scenario.rules)}",
            highlight=False,
        )
        console.print(f"  {r.scenario.source}", highlight=False, markup=False, style="dim")
        for line in r.detail.splitlines() or ["(no detail)"]:
            console.print(f"  {line}", highlight=False, markup=False)
