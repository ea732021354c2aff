"""The write-observer-chain oracle: every universal WOC rule, checked on any trace.

The oracle needs no expectations: from ``given`` (the scripted observers, the sandbox) and
the trace it derives what a conforming chain and conforming write tools must have done.
That is what lets generated scenarios be judged, and what names the rule a failing
implementation broke. This module judges the chain's own rules; ``oracle_seam`` judges the
write tools, and ``oracle_trace`` is how both read a trace.
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.write_observer_chain.joins import classify, exact_join
from seamspec.conformance._contracts.write_observer_chain.model import (
    TOOL_VERBS,
    leaf_limits,
    step_bounds,
    step_verb,
)
from seamspec.conformance._contracts.write_observer_chain.oracle_seam import SeamChecks
from seamspec.conformance._contracts.write_observer_chain.oracle_trace import Violation

__all__ = ["check"]


class _Oracle(SeamChecks):
    def run(self) -> list[Violation]:
        for step in self.when:
            verb = step_verb(step)
            body = step[verb]
            if verb in ("call", "start"):
                self.check_call(body["id"], body["hook"])
            elif verb in TOOL_VERBS:
                self.check_tool(verb, body)
        self.check_bounds()
        self.check_cuts()
        self.check_warnings()
        self.check_files()
        return self.out

    def check_hook_run(
        self, call: str, hook: str, *, interrupted_at: int | None
    ) -> list[tuple[int, dict[str, Any]]]:
        """Order, once-each, sequencing and short-circuit checks for one hook run of one call."""
        rule = "WOC-ORDER-BEFORE" if hook == "before_write" else "WOC-ORDER-AFTER"
        entered = [(i, e) for i, e in self.t.enters.get(call, []) if e.get("hook") == hook]
        names = [e.get("observer") for _, e in entered]
        if interrupted_at is not None:
            late = [e.get("observer") for i, e in entered if i > interrupted_at]
            if late:
                self.flag(
                    "WOC-CANCEL", f"{call}: {hook} started {late} after the caller was cancelled"
                )
            if names != self.order[: len(names)]:
                self.flag(rule, f"{call}: {hook} called {names}; expected a prefix of {self.order}")
        elif names != self.order:
            if (
                not self._skipped_after_cut(call, hook, entered)
                and names == self.order[: len(names)]
            ):
                self._stopped(call, hook, entered)
            self.flag(
                rule, f"{call}: {hook} called {names}; expected each of {self.order} once, in order"
            )
        for k in range(1, len(entered)):
            i, e = entered[k]
            prev_i, prev = entered[k - 1]
            found = self.t.exit_after(call, prev.get("observer", "?"), hook, prev_i)
            if found is None or found[0] > i:
                self.flag(
                    "WOC-SEQUENTIAL",
                    f"{call}: {e.get('observer')}.{hook} started before {prev.get('observer')}.{hook} returned",
                )
        return entered

    def _stopped(self, call: str, hook: str, entered: list[tuple[int, dict[str, Any]]]) -> None:
        """The chain stopped early: blame what the last observer it called did."""
        last = entered[-1][1].get("observer") if entered else None
        outcome = None
        if last is not None:
            found = self.t.exit_after(call, last, hook, entered[-1][0])
            outcome = found[1].get("outcome") if found else None
        cause = {"raised": "WOC-FAIL-CONTAINED", "cancelled": "WOC-SLOW"}.get(
            outcome or "", "WOC-NO-SHORT-CIRCUIT"
        )
        self.flag(
            cause,
            f"{call}: {hook} stopped after {last!r} ({outcome}); {self.order[len(entered) :]} never ran",
        )

    def _skipped_after_cut(
        self, call: str, hook: str, entered: list[tuple[int, dict[str, Any]]]
    ) -> bool:
        """Under a time limit: observers never called after one was cut off (WOC-SLOW)."""
        if not self.limited:
            return False
        names = [e.get("observer") for _, e in entered]
        cut: list[str] = []
        for i, e in entered:
            found = self.t.exit_after(call, e.get("observer", "?"), hook, i)
            cancelled = found is not None and found[1].get("outcome") == "cancelled"
            if found is not None and cancelled and self.ending(call, *found) in ("failed", "cut"):
                cut.append(str(e.get("observer")))
        skipped = [
            name
            for position, name in enumerate(self.order)
            if name not in names and any(self.order.index(c) < position for c in cut)
        ]
        for rule in ("WOC-SLOW", "WOC-SLOW-BOUNDED"):
            if skipped:
                self.flag(
                    rule,
                    f"{call}: {hook} never called {skipped} after {cut} ran into the time limit; "
                    "the limit bounds each observer, the rest still run",
                )
        return bool(skipped)

    def check_call(self, call: str, hook: str) -> None:
        end = self.t.ends.get(call)
        end_i = end[0] if end else len(self.t.events)
        cancel_i = self.t.cancels.get(call)
        kit_i = self.t.kit_timeouts.get(call)
        interrupted = next((i for i in (cancel_i, kit_i) if i is not None and i < end_i), None)
        entered = self.check_hook_run(call, hook, interrupted_at=interrupted)
        if end is None:
            return
        outcome = end[1].get("outcome")
        if kit_i is not None and kit_i < end_i:
            rules = ("WOC-SLOW-BOUNDED", "WOC-SLOW") if self.limited else ("WOC-NO-SHORT-CIRCUIT",)
            for rule in rules:
                self.flag(
                    rule,
                    f"{call}: {hook} had not ended when the kit gave up waiting (a hook outlived its time limit?)",
                )
            return
        if cancel_i is not None and cancel_i < end_i:
            if outcome != "cancelled":
                self.flag(
                    "WOC-CANCEL",
                    f"{call}: the caller was cancelled but the chain {outcome} instead of propagating it",
                )
            return
        if outcome == "raised":
            self.flag(
                "WOC-FAIL-CONTAINED",
                f"{call}: an exception escaped the chain: {end[1].get('error')}",
            )
        elif outcome == "cancelled":
            self.flag(
                "WOC-SLOW" if self.limited else "WOC-CANCEL",
                f"{call}: the chain raised a cancellation nobody asked for",
            )
        elif hook == "after_write":
            parts, failed = self.annotation_parts(call, entered)
            expected = exact_join(list(parts))
            got = end[1].get("value")
            if got != expected:
                for rule in classify(parts, got, failed=failed):
                    self.flag(
                        rule,
                        f"{call}: after_write returned {got!r}; expected {expected!r} from annotations {parts!r}",
                    )

    def check_bounds(self) -> None:
        """``within`` bounds the oracle can attribute (the rest are ``expect``'s)."""
        for call, bound in step_bounds(self.when).items():
            # The linter allows `within` only on a cancelled call or under a time limit:
            # a cancelled call must end at once; a limited one within the limit per hang.
            rule = "WOC-CANCEL" if call in self.t.cancels else "WOC-SLOW-BOUNDED"
            found = self.t.ends.get(call)
            end = found[1] if found else self.t.tool_results.get(call)
            end = end if end is not None else self.t.tool_cancels.get(call)
            if end is None:
                continue  # no end at all: the kit timed it out, judged elsewhere
            elapsed = end.get("elapsed")
            if not isinstance(elapsed, (int, float)):
                self.flag(rule, f"{call}: the trace reports no `elapsed` time to check `within`")
            elif elapsed > bound:
                self.flag(
                    rule,
                    f"{call}: returned to its caller after {elapsed:.2f} s, not within {bound:g} s",
                )

    def check_cuts(self) -> None:
        """Under a time limit, no hook is cut off before it has outlived its limit.

        One that was to return at once must never be cut off; one scripted to block may
        be, but not long before the limit it runs under (a nested chain's own, longer or
        shorter than the outer one): a cancelled ``hook_exit`` says how long the hook ran
        (``elapsed``), and a cut at under half the limit is no clock's jitter.
        """
        if not self.limited:
            return
        limits = leaf_limits(self.given)
        for (call, observer, hook), exits in self.t.exits.items():
            for i, e in exits:
                if e.get("outcome") != "cancelled":
                    continue
                ending = self.ending(call, i, e)
                if ending == "cut":
                    for rule in ("WOC-SLOW-BOUNDED", "WOC-SLOW"):
                        self.flag(
                            rule,
                            f"{call}: {observer}.{hook} was cancelled although it was to return "
                            "at once: only an observer that outlives the limit may be cut off",
                        )
                    continue
                ran, limit = e.get("elapsed"), limits.get(observer)
                early = isinstance(ran, (int, float)) and limit is not None and ran < limit / 2
                if ending == "failed" and early:
                    for rule in ("WOC-SLOW-BOUNDED", "WOC-SLOW"):
                        self.flag(
                            rule,
                            f"{call}: {observer}.{hook} was cut off after {ran:.2f} s, long "
                            f"before the {limit:g} s limit it runs under",
                        )

    def check_warnings(self) -> None:
        endings: dict[str, set[str]] = {}
        for (call, observer, _hook), exits in self.t.exits.items():
            for i, e in exits:
                endings.setdefault(observer, set()).add(self.ending(call, i, e))
        for name in self.order:
            seen = endings.get(name, set())
            if "kit" in seen:
                continue  # the kit cut it off, not the chain: no verdict on its warning
            count = self.t.warnings.get(name, 0)
            want = 1 if "failed" in seen else 0
            if count != want:
                self.flag(
                    "WOC-FAIL-WARN", f"observer {name!r} got {count} warning(s); expected {want}"
                )
            if count and self.limited and "cut" in seen and "failed" not in seen:
                self.flag(
                    "WOC-SLOW-BOUNDED",
                    f"observer {name!r} was warned about although it never outlived the limit",
                )
        for name, count in self.t.warnings.items():
            if name not in self.by_name:
                what = "a nested chain" if name in self.chains else "no observer of the scenario"
                self.flag(
                    "WOC-FAIL-WARN",
                    f"{count} warning(s) name {name!r}, which is {what}; warnings name the "
                    "observer that failed",
                )
                if self.limited and name in self.chains:
                    self.flag(
                        "WOC-SLOW",
                        f"the time limit blamed the nested chain {name!r} instead of the observer in it",
                    )


def check(
    request: dict[str, Any], _then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[Violation]:
    """Every universal WOC rule this trace breaks, as (rule ID, explanation) pairs."""
    return list(dict.fromkeys(_Oracle(request, trace).run()))
