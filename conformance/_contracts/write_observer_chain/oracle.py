"""The write-observer-chain oracle: every universal WOC rule, checked on any trace.

The oracle needs no expectations: from ``given`` (the scripted observers) and the trace
it derives what a conforming chain must have done. That is what lets generated scenarios
be judged, and what names the rule a failing implementation broke.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from seamspec.conformance._contracts.write_observer_chain.model import (
    TOOL_VERBS,
    behaviour_for,
    flatten,
    is_refused,
    step_verb,
)

__all__ = ["check", "classify_annotation_mismatch", "expected_annotation"]

SEP = "\n\n"
Violation = tuple[str, str]


def classify_annotation_mismatch(parts: list[str], expected: str | None, got: object) -> list[str]:
    """Which rule(s) a wrong annotation breaks, from the annotations that went in."""
    non_empty = [p for p in parts if p]
    if expected is None:
        return (
            ["WOC-NONE"]
            if got == ""
            else ["WOC-NONE", "WOC-EMPTY-DROPPED"]
            if got
            else ["WOC-NONE"]
        )
    rules: list[str] = []
    if isinstance(got, str):
        if any(p == "" for p in parts) and got == SEP.join(parts):
            rules.append("WOC-EMPTY-DROPPED")
        if any(p.strip() == "" for p in non_empty) and (
            got == SEP.join(p for p in non_empty if p.strip())
            or got == SEP.join(p.strip() for p in non_empty)
        ):
            rules.append("WOC-WHITESPACE-KEPT")
    if len(non_empty) == 1:
        rules.append("WOC-SINGLE")
    if not rules:
        rules.append("WOC-JOIN")
    return rules


def expected_annotation(parts: list[str | None]) -> str | None:
    kept = [p for p in parts if isinstance(p, str) and p]
    return SEP.join(kept) if kept else None


class _Trace:
    def __init__(self, trace: list[dict[str, Any]]) -> None:
        self.events = trace
        self.enters: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self.exits: dict[tuple[str, str, str], list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self.ends: dict[str, tuple[int, dict[str, Any]]] = {}
        self.cancels: dict[str, int] = {}
        self.kit_timeouts: dict[str, int] = {}
        self.tool_results: dict[str, dict[str, Any]] = {}
        self.tool_starts: dict[str, dict[str, Any]] = {}
        self.warnings: dict[str, int] = defaultdict(int)
        #: for each hook_enter index: which call of that observer's hook it was (0-based)
        self.call_index: dict[int, int] = {}
        counters: dict[tuple[str, str], int] = defaultdict(int)
        for i, e in enumerate(trace):
            kind = e.get("type")
            if kind == "hook_enter":
                self.enters[e.get("call", "?")].append((i, e))
                key = (e.get("observer", "?"), e.get("hook", "?"))
                self.call_index[i] = counters[key]
                counters[key] += 1
            elif kind == "hook_exit":
                self.exits[(e.get("call", "?"), e.get("observer", "?"), e.get("hook", "?"))].append(
                    (i, e)
                )
            elif kind == "call_end":
                self.ends[e.get("call", "?")] = (i, e)
            elif kind == "cancel_requested":
                self.cancels[e.get("call", "?")] = i
            elif kind == "kit_timeout":
                self.kit_timeouts[e.get("call", "?")] = i
            elif kind == "tool_result":
                self.tool_results[e.get("call", "?")] = e
            elif kind == "tool_start":
                self.tool_starts[e.get("call", "?")] = e
            elif kind == "warning":
                self.warnings[e.get("observer", "?")] += 1

    def exit_after(
        self, call: str, observer: str, hook: str, index: int
    ) -> tuple[int, dict[str, Any]] | None:
        for j, e in self.exits[(call, observer, hook)]:
            if j > index:
                return j, e
        return None


class _Oracle:
    def __init__(self, request: dict[str, Any], trace: list[dict[str, Any]]) -> None:
        self.given = request["given"]
        self.when = request["when"]
        self.t = _Trace(trace)
        self.leaves = flatten(self.given["observers"])
        self.order = [leaf["name"] for leaf in self.leaves]
        self.by_name = {leaf["name"]: leaf for leaf in self.leaves}
        self.nested = any("chain" in e for e in self.given["observers"])
        self.limited = "hook_time_limit" in self.given or any(
            "hook_time_limit" in e for e in self.given["observers"]
        )
        self.out: list[Violation] = []

    def flag(self, rule: str, message: str) -> None:
        self.out.append((rule, message))
        if self.nested and rule in ("WOC-ORDER-BEFORE", "WOC-ORDER-AFTER", "WOC-JOIN"):
            self.out.append(("WOC-NESTED", f"(nested chain) {message}"))

    def run(self) -> list[Violation]:
        for step in self.when:
            verb = step_verb(step)
            body = step[verb]
            if verb in ("call", "start"):
                self.check_call(body["id"], body["hook"])
            elif verb in TOOL_VERBS:
                self.check_tool(verb, body)
        self.check_warnings()
        return self.out

    def _annotation_parts(self, call: str, entered: list[tuple[int, dict[str, Any]]]) -> list[str]:
        parts: list[str] = []
        for i, e in entered:
            found = self.t.exit_after(call, e["observer"], "after_write", i)
            if found is None or found[1].get("outcome") != "returned":
                continue
            leaf = self.by_name.get(e["observer"], {})
            if "builtin" in leaf or e["observer"] not in self.by_name:
                value = found[1].get("value")
            else:
                behaviour = behaviour_for(leaf, "after_write", self.t.call_index[i])
                value = (
                    None
                    if ("raise" in behaviour or behaviour.get("hang"))
                    else behaviour.get("return")
                )
            if isinstance(value, str):
                parts.append(value)
        return parts

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
            if names == self.order[: len(names)]:
                last = names[-1] if names else None
                outcome = None
                if last is not None:
                    found = self.t.exit_after(call, last, hook, entered[-1][0])
                    outcome = found[1].get("outcome") if found else None
                cause = {"raised": "WOC-FAIL-CONTAINED", "cancelled": "WOC-SLOW"}.get(
                    outcome or "", "WOC-NO-SHORT-CIRCUIT"
                )
                self.flag(
                    cause,
                    f"{call}: {hook} stopped after {last!r} ({outcome}); {self.order[len(names) :]} never ran",
                )
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
            rule = "WOC-SLOW" if self.limited else "WOC-NO-SHORT-CIRCUIT"
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
            parts = self._annotation_parts(call, entered)
            expected = expected_annotation(list(parts))
            got = end[1].get("value")
            if got != expected:
                for rule in classify_annotation_mismatch(parts, expected, got):
                    self.flag(
                        rule,
                        f"{call}: after_write returned {got!r}; expected {expected!r} from annotations {parts!r}",
                    )

    def check_tool(self, verb: str, body: dict[str, Any]) -> None:
        call, path = body["id"], body["path"]
        result = self.t.tool_results.get(call)
        start = self.t.tool_starts.get(call, {})
        if result is None:
            if call in self.t.kit_timeouts:
                self.flag(
                    "WOC-SLOW",
                    f"{call}: the {verb} tool had not returned when the kit gave up waiting (a hook outlived the chain's time limit?)",
                )
            return
        entered = self.t.enters.get(call, [])
        if is_refused(path, list(self.given.get("deny", []))):
            if entered:
                self.flag(
                    "WOC-SEAM-DENIED",
                    f"{call}: {verb} of refused path {path!r} called {[e['observer'] + '.' + e['hook'] for _, e in entered]}",
                )
            if result.get("ok"):
                self.flag(
                    "WOC-SEAM-DENIED", f"{call}: {verb} of refused path {path!r} reported success"
                )
            return
        before, after = start.get("content_before"), result.get("content_after")
        afters = [e for _, e in entered if e.get("hook") == "after_write"]
        if result.get("raised"):
            self.flag("WOC-SEAM-NO-ERROR", f"{call}: the {verb} tool raised {result['raised']}")
        if not result.get("ok"):
            if afters:
                rule = "WOC-SEAM-NO-ERROR" if after != before else "WOC-SEAM-FAILED-WRITE"
                self.flag(
                    rule,
                    f"{call}: {verb} reported failure ({result.get('message')!r}) yet after_write was called",
                )
            elif after != before:
                self.flag(
                    "WOC-SEAM-NO-ERROR",
                    f"{call}: the file changed but the {verb} tool reported an error: {result.get('message')!r}",
                )
            return
        self.check_hook_run(call, "before_write", interrupted_at=None)
        after_entered = self.check_hook_run(call, "after_write", interrupted_at=None)
        for _, e in entered:
            if e.get("hook") == "before_write" and e.get("sees") != before:
                self.flag(
                    "WOC-SEAM-PRE",
                    f"{call}: {e['observer']}.before_write saw {e.get('sees')!r}; the pre-image was {before!r}",
                )
        if afters:
            post = (
                body["content"]
                if verb == "write"
                else None
                if verb == "delete"
                else (before or "").replace(body["old"], body["new"], 1)
            )
            if afters[0].get("sees") != post:
                self.flag(
                    "WOC-SEAM-POST",
                    f"{call}: {afters[0]['observer']}.after_write saw {afters[0].get('sees')!r}; the mutation wrote {post!r}",
                )
        parts = self._annotation_parts(call, after_entered)
        expected_ann = expected_annotation(list(parts))
        message = result.get("message", "")
        want = message if expected_ann is None else message + SEP + expected_ann
        if result.get("text") != want:
            self.flag(
                "WOC-SEAM-POST",
                f"{call}: tool result text {result.get('text')!r}; expected {want!r}",
            )

    def check_warnings(self) -> None:
        failing: set[str] = set()
        for (call, observer, _hook), exits in self.t.exits.items():
            for i, e in exits:
                interrupted = self.t.cancels.get(call, len(self.t.events) + 1) < i
                if e.get("outcome") == "raised" or (
                    e.get("outcome") == "cancelled" and not interrupted
                ):
                    failing.add(observer)
        for name in self.order:
            count = self.t.warnings.get(name, 0)
            want = 1 if name in failing else 0
            if count != want:
                self.flag(
                    "WOC-FAIL-WARN", f"observer {name!r} got {count} warning(s); expected {want}"
                )


def check(
    request: dict[str, Any], _then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[Violation]:
    """Every universal WOC rule this trace breaks, as (rule ID, explanation) pairs."""
    found = _Oracle(request, trace).run()
    unique: list[Violation] = []
    for item in found:
        if item not in unique:
            unique.append(item)
    return unique
