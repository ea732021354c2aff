"""The shell-output oracle: every universal SOO rule, checked on any trace.

From ``given``/``when`` (what each child writes, what each session is offered, the budget
and cap) and the trace alone, it derives what a conforming implementation may and must
have done, and names the rule each difference breaks. Thread identities are opaque
labels: only equality between them matters.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from seamspec.conformance._contracts.shell_output.history import STREAMS, Call, History
from seamspec.conformance._contracts.shell_output.model import (
    detached_grandchildren,
    ends_by_signal,
    expected_exit,
    expected_output,
    has_finish,
    has_grandchild,
    orphaned_output,
    time_limit,
)
from seamspec.conformance._contracts.shell_output.oracle_ids import check_ids
from seamspec.conformance._contracts.shell_output.oracle_result import (
    check_bounds,
    check_envelope,
)

__all__ = ["check"]

Violation = tuple[str, str]


class _Oracle(History):
    def __init__(self, request: dict[str, Any], trace: list[dict[str, Any]]) -> None:
        super().__init__(request, trace)
        self.out: list[Violation] = []

    def flag(self, rule: str, message: str) -> None:
        if (rule, message) not in self.out:
            self.out.append((rule, message))

    # -- the checks ---------------------------------------------------------------------
    def run(self) -> list[Violation]:
        for rule, message in check_ids(self):
            self.flag(rule, message)
        for call in self.calls.values():
            self.check_call(call)
            for rule, message in check_bounds(self, call):
                self.flag(rule, message)
        threads: dict[int, set[str]] = {}
        for invocation, events in self.by_invocation.items():
            threads[invocation] = {e.get("thread", "") for _, e in events}
        seen: dict[str, int] = {}
        for invocation, labels in sorted(threads.items()):
            for label in labels:
                if label in seen and seen[label] != invocation:
                    self.flag(
                        "SOO-ISOLATION",
                        f"invocations {seen[label]} and {invocation} "
                        f"were both presented on thread {label}",
                    )
                seen.setdefault(label, invocation)
        for i, e in self.waits:
            busy = self.in_flight(i)
            if busy:
                self.flag(
                    "SOO-ISOLATION",
                    f"{e.get('observer')} got no {e.get('hook')} call "
                    f"while invocation(s) {sorted(busy)} had a blocked callback",
                )
            else:
                self.flag(*self.missed_callback(i, e))
        return self.out

    def missed_callback(self, at: int, wait: dict[str, Any]) -> Violation:
        """The rule broken when the kit waited in vain for a callback, nothing else blocked.

        A callback that never comes after the same observer raised before is the raise
        not contained: in ``on_finish`` (SOO-FINISH-PANIC: it changes nothing, later
        invocations included), or in ``on_output`` of another invocation (SOO-PANIC: it
        ends that invocation's observation only). Otherwise a missing ``on_finish`` is
        SOO-FINISH, and a missing ``on_output`` is output held back (SOO-LIVE).
        """
        observer, hook = wait.get("observer"), wait.get("hook")
        raised: dict[str, set[int]] = {"on_output": set(), "on_finish": set()}
        for e in self.trace[:at]:
            if (
                e.get("type") == "callback_exit"
                and e.get("outcome") == "raised"
                and e.get("observer") == observer
                and e.get("hook") in raised
            ):
                raised[e["hook"]].add(int(e.get("invocation", -1)))
        if raised["on_finish"]:
            return (
                "SOO-FINISH-PANIC",
                f"{observer} got no {hook} call after its on_finish raised in invocation(s) "
                f"{sorted(raised['on_finish'])}: that exception must change nothing later",
            )
        if raised["on_output"]:
            return (
                "SOO-PANIC",
                f"{observer} got no {hook} call after its on_output raised in invocation(s) "
                f"{sorted(raised['on_output'])}: that ends the observation of those only",
            )
        if hook == "on_finish":
            return ("SOO-FINISH", f"{observer} was not called on_finish")
        return (
            "SOO-LIVE",
            f"{observer} was not called {hook} while its command was still running",
        )

    def check_call(self, call: Call) -> None:
        if call.body.get("refused"):
            self.check_refused(call)
            return
        if "observer" not in call.body:
            self.check_result(call, panicked=False, finish_raised=False)
            return
        entry = self.entries[call.body["observer"]]
        events = self.by_invocation.get(call.invocation, []) if call.invocation is not None else []
        outputs = [
            (i, e) for i, e in events if e["type"] == "callback_enter" and e["hook"] == "on_output"
        ]
        finishes = [
            (i, e) for i, e in events if e["type"] == "callback_enter" and e["hook"] == "on_finish"
        ]
        raised = [
            (i, e)
            for i, e in events
            if e["type"] == "callback_exit" and e.get("outcome") == "raised"
        ]
        panic_at = next((i for i, e in raised if e["hook"] == "on_output"), None)
        finish_raised = any(e["hook"] == "on_finish" for _, e in raised)
        name = f"{call.ident} (invocation {call.invocation})"
        self.check_threads(name, events)
        delivered = {
            s: b"".join(bytes.fromhex(e.get("hex", "")) for _, e in outputs if e.get("stream") == s)
            for s in STREAMS
        }
        allowed = self.allowed(call)
        for _, e in outputs:
            if not e.get("hex"):
                self.flag("SOO-NONEMPTY", f"{name}: on_output got an empty chunk")
            if e.get("chunk_type"):
                self.flag(
                    "SOO-RAW",
                    f"{name}: on_output got a {e['chunk_type']} chunk; the protocol promises bytes",
                )
        for s in STREAMS:
            self.check_stream(
                name,
                call,
                s,
                [bytes.fromhex(e.get("hex", "")) for _, e in outputs if e.get("stream") == s],
                allowed[s],
            )
        if panic_at is not None:
            later = [e["hook"] for i, e in events if i > panic_at and e["type"] == "callback_enter"]
            if later:
                self.flag("SOO-PANIC", f"{name}: {later} called after on_output raised")
        after_finish_panic = [
            e["hook"]
            for i, e in events
            if e["type"] == "callback_enter" and finishes and i > finishes[0][0]
        ]
        if after_finish_panic:
            self.flag("SOO-FINISH", f"{name}: {after_finish_panic} called after on_finish")
        stop = self.stop_point(call)
        if (
            stop is None
            and call.cancel_at is None
            and time_limit(self.given, call.body) is not None
            and not self.completed(call)
        ):
            # The kit gave up on a timed call that was never cancelled: whatever a detached
            # grandchild wrote once the child was gone came after the limit fired.
            self.check_orphaned(name, call, delivered, "SOO-TIMEOUT")
        if stop is not None:
            rule, at, why = stop
            if finishes:
                self.flag(rule, f"{name}: on_finish was called, yet the invocation ended by {why}")
                if rule == "SOO-TIMEOUT" and has_grandchild(call.body.get("script", [])):
                    self.flag(
                        "SOO-FINISH",
                        f"{name}: on_finish was called, but the invocation never completed: "
                        "a grandchild held the pipes open until the time limit ended it, and "
                        "completion is end of file on both pipes, not the child's exit",
                    )
            if rule in ("SOO-CANCEL", "SOO-TIMEOUT"):
                self.check_orphaned(name, call, delivered, rule)
            busy = self.in_flight(at + 1) & {call.invocation} if call.invocation else set()
            began = [e["hook"] for i, e in events if i > at and e["type"] == "callback_enter"]
            if len(began) > (0 if busy else 1):
                self.flag(rule, f"{name}: {began} began after {why}")
        elif self.completed(call) and panic_at is None:
            self.check_finish(
                name,
                call,
                entry=entry,
                outputs=outputs,
                finishes=finishes,
                delivered=delivered,
                allowed=allowed,
            )
        if call.verb != "open":
            self.check_result(
                call,
                panicked=panic_at is not None,
                finish_raised=finish_raised,
                shown=delivered,
            )
        self.check_waits(name, call)

    def check_orphaned(self, name: str, call: Call, delivered: dict[str, bytes], rule: str) -> None:
        """Output a detached grandchild wrote after the invocation ended must never be delivered.

        Its ``orphaned`` steps are written once the emitter is gone; in a script that never
        exits by itself, that is once the runner has killed it, which a runner does only
        after the caller cancelled or the time limit fired. By then chunks are no longer
        accepted (SOO-CANCEL, SOO-TIMEOUT: at once, before the runner ends or waits for the
        command's processes; upstream drops the output guard before anything is done about
        the child, shell_tool.rs:948-952).
        """
        script = call.body.get("script", [])
        if expected_exit(script) is not None:
            return
        late = orphaned_output(script)
        everything = expected_output(script)
        after = "the cancellation" if rule == "SOO-CANCEL" else "the time limit fired"
        for s in STREAMS:
            own = len(everything[s]) - len(late[s])
            if late[s] and len(delivered[s]) > own:
                self.flag(
                    rule,
                    f"{name}: {s} delivered {delivered[s][own:]!r}, which a detached grandchild "
                    f"wrote only after the child was killed, after {after}: chunks must stop "
                    "being accepted at once, before the runner ends the command's processes",
                )

    def check_result(
        self,
        call: Call,
        *,
        panicked: bool,
        finish_raised: bool,
        shown: dict[str, bytes] | None = None,
    ) -> None:
        for rule, message in check_envelope(
            self, call, panicked=panicked, finish_raised=finish_raised, shown=shown
        ):
            self.flag(rule, message)

    def check_refused(self, call: Call) -> None:
        if call.invocation is not None:
            self.flag(
                "SOO-DENIED-NO-ID",
                f"{call.ident}: a refused command took invocation ID {call.invocation}",
            )
            for _, e in self.by_invocation.get(call.invocation, []):
                if e["type"] == "callback_enter":
                    self.flag("SOO-DENIED", f"{call.ident}: a refused command got {e['hook']}")
        if call.end is not None and call.end.get("outcome") == "returned":
            self.flag("SOO-DENIED", f"{call.ident}: the refused command ran and returned a result")

    def check_threads(self, name: str, events: list[tuple[int, dict[str, Any]]]) -> None:
        labels = [e.get("thread", "") for _, e in events if e["type"] == "callback_enter"]
        for label in set(labels):
            if label in self.drains:
                self.flag("SOO-THREAD", f"{name}: a callback ran on pipe-draining thread {label}")
            if label in self.caller:
                self.flag("SOO-THREAD", f"{name}: a callback ran on the caller's thread {label}")
        if len(set(labels)) > 1:
            self.flag(
                "SOO-SERIAL", f"{name}: callbacks ran on several threads {sorted(set(labels))}"
            )
        depth = 0
        for _, e in events:
            depth += 1 if e["type"] == "callback_enter" else -1
            if depth > 1:
                self.flag("SOO-SERIAL", f"{name}: a callback started while another was running")

    def check_stream(
        self, name: str, call: Call, stream: str, chunks: list[bytes], allowed: bytes
    ) -> None:
        got = b"".join(chunks)
        if len(got) > self.budget:
            rule = "SOO-BUDGET-ZERO" if self.budget == 0 else "SOO-BUDGET"
            self.flag(
                rule, f"{name}: {len(got)} bytes of {stream} delivered; the budget is {self.budget}"
            )
        if allowed.startswith(got):
            return
        if call.verb == "open":
            everything = self.offers(call, stream)
        else:
            everything = expected_output(call.body.get("script", []))[stream]
        if everything.startswith(got):
            self.flag(
                "SOO-LATE",
                f"{name}: {stream} delivered {got!r}, including bytes offered after it ended",
            )
        elif Counter(got) == Counter(allowed[: len(got)]) and len(chunks) > 1:
            self.flag("SOO-PIPE-ORDER", f"{name}: {stream} chunks arrived out of order: {got!r}")
        else:
            self.flag("SOO-RAW", f"{name}: {stream} delivered {got!r}, not a prefix of {allowed!r}")

    def check_finish(
        self,
        name: str,
        call: Call,
        *,
        entry: dict[str, Any],
        outputs: list[tuple[int, dict[str, Any]]],
        finishes: list[tuple[int, dict[str, Any]]],
        delivered: dict[str, bytes],
        allowed: dict[str, bytes],
    ) -> None:
        zero = self.budget == 0
        for s in STREAMS:
            want = allowed[s][: self.budget]
            if (
                delivered[s] != want
                and len(delivered[s]) < len(want)
                and allowed[s].startswith(delivered[s])
            ):
                rule = "SOO-BUDGET" if len(allowed[s]) > self.budget else "SOO-FINISH"
                self.flag(
                    rule,
                    f"{name}: {s} delivered {len(delivered[s])} of the {len(want)} bytes accepted",
                )
                self.flag_prior_panic(name, call)
                if self.prior_finish_panic(call):
                    self.flag(
                        "SOO-FINISH-PANIC", f"{name}: an earlier on_finish failure changed delivery"
                    )
        if not self.idle:
            self.flag("SOO-FINISH", f"{name}: observation never went idle after completion")
        if not has_finish(entry):
            return
        if len(finishes) != 1:
            self.flag(
                "SOO-BUDGET-ZERO" if zero else "SOO-FINISH",
                f"{name}: on_finish called {len(finishes)} times; expected once",
            )
            if not finishes:
                self.flag_prior_panic(name, call)
                if ends_by_signal(call.body.get("script", [])):
                    self.flag(
                        "SOO-ERROR-NO-FINISH",
                        f"{name}: the child was killed by a signal the runner did not send, "
                        "which is a completion, not a failure, yet on_finish never came",
                    )
            if self.prior_finish_panic(call):
                self.flag(
                    "SOO-FINISH-PANIC", f"{name}: an earlier on_finish failure changed delivery"
                )
        if finishes:
            i, e = finishes[0]
            if any(j > i for j, _ in outputs):
                self.flag("SOO-FINISH", f"{name}: on_output came after on_finish")
            if {o.get("thread") for _, o in outputs} - {e.get("thread")}:
                self.flag("SOO-FINISH", f"{name}: on_finish ran on another thread than on_output")

    def flag_prior_panic(self, name: str, call: Call) -> None:
        """A completed invocation came up short after its observer raised in another one.

        An exception in ``on_output`` ends the observation of *that* invocation; a runner
        that goes on ignoring the observer elsewhere breaks SOO-PANIC, whatever else the
        short delivery breaks.
        """
        observer = call.body.get("observer")
        earlier = sorted(
            {
                int(e.get("invocation", -1))
                for e in self.trace
                if e.get("type") == "callback_exit"
                and e.get("hook") == "on_output"
                and e.get("outcome") == "raised"
                and e.get("observer") == observer
                and e.get("invocation") != call.invocation
            }
        )
        if earlier:
            self.flag(
                "SOO-PANIC",
                f"{name}: {observer} raised in invocation(s) {earlier}, and this invocation "
                "did not get all its output and on_finish: an exception ends the observation "
                "of its own invocation only",
            )

    def prior_finish_panic(self, call: Call) -> bool:
        observer = call.body.get("observer")
        return any(
            e.get("type") == "callback_exit"
            and e.get("hook") == "on_finish"
            and e.get("outcome") == "raised"
            and e.get("observer") == observer
            for e in self.trace
        )

    def check_waits(self, name: str, call: Call) -> None:
        for i in call.kit_timeouts:
            own = self.in_flight(i) & ({call.invocation} if call.invocation is not None else set())
            others = self.in_flight(i, exclude=call.invocation)
            if call.cancel_at is not None and call.cancel_at < i:
                self.flag("SOO-CANCEL", f"{name}: the cancelled invocation did not end")
            limited = time_limit(self.given, call.body) is not None
            script = call.body.get("script", [])
            if limited and detached_grandchildren(script):
                self.flag(
                    "SOO-TIMEOUT",
                    f"{name}: the time limit did not end the invocation, whose child left a "
                    "grandchild outside its process group holding the pipes",
                )
            elif limited and has_grandchild(script):
                self.flag(
                    "SOO-TIMEOUT-GROUP",
                    f"{name}: the time limit did not end the invocation, whose child "
                    "left a grandchild holding the pipes",
                )
            elif limited:
                self.flag("SOO-TIMEOUT", f"{name}: the time limit did not end the invocation")
            if own:
                self.flag("SOO-NO-WAIT", f"{name}: the invocation waited for its blocked observer")
                self.flag("SOO-NO-STALL", f"{name}: a blocked observer stalled the invocation")
            if others:
                self.flag(
                    "SOO-ISOLATION",
                    f"{name}: did not end while invocation(s) {sorted(others)} were blocked",
                )
            if not own and not others and call.cancel_at is None and not limited:
                self.flag(
                    "SOO-NO-STALL", f"{name}: the invocation did not end within the kit's limit"
                )


def check(
    request: dict[str, Any], _then: dict[str, Any], trace: list[dict[str, Any]]
) -> list[Violation]:
    """Every universal SOO rule this trace breaks, as (rule ID, explanation) pairs."""
    return _Oracle(request, trace).run()
