"""The oracle's view of one trace: events indexed by call, and what each hook exit means.

The oracle's checks (``oracle.py`` for the chain, ``oracle_seam.py`` for the write tools)
all ask the same questions of a trace: which hooks a call entered, how each ended, which
observer a warning was about, and whether a hook that was cancelled was cut off by the
chain's time limit *legitimately* (it was scripted to hang) or not. :class:`OracleBase`
answers them once, so the two halves of the oracle read the trace the same way.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

from seamspec.conformance._contracts.write_observer_chain.model import (
    behaviour_for,
    flatten,
    is_limited,
    observer_entries,
)

__all__ = ["Ending", "OracleBase", "TraceIndex", "Violation"]

Violation = tuple[str, str]

#: How one hook call ended, as the oracle judges it:
#: ``returned``; ``failed`` (raised, or cut off by the time limit while scripted to hang);
#: ``caller`` (cancelled after the caller's cancel); ``kit`` (cancelled after the kit gave
#: up waiting); ``cut`` (cancelled with no reason: it was scripted to return at once).
Ending = Literal["returned", "failed", "caller", "kit", "cut"]


class TraceIndex:
    """The trace's events, indexed the ways the oracle looks them up."""

    def __init__(self, trace: list[dict[str, Any]]) -> None:
        self.events = trace
        self.enters: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self.exits: dict[tuple[str, str, str], list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self.ends: dict[str, tuple[int, dict[str, Any]]] = {}
        self.cancels: dict[str, int] = {}
        self.kit_timeouts: dict[str, int] = {}
        self.tool_results: dict[str, dict[str, Any]] = {}
        self.tool_starts: dict[str, dict[str, Any]] = {}
        self.tool_cancels: dict[str, dict[str, Any]] = {}
        self.warnings: dict[str, int] = defaultdict(int)
        self.releases: dict[str, int] = {}
        self.files: dict[str, Any] | None = None
        #: for each hook_enter index: which call of that observer's hook it was (0-based)
        self.call_index: dict[int, int] = {}
        #: for each hook_exit index: the index of the hook_enter it ends
        self.entered_at: dict[int, int] = {}
        counters: dict[tuple[str, str], int] = defaultdict(int)
        open_enters: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for i, e in enumerate(trace):
            kind = e.get("type")
            key = (e.get("call", "?"), e.get("observer", "?"), e.get("hook", "?"))
            if kind == "hook_enter":
                self.enters[key[0]].append((i, e))
                self.call_index[i] = counters[key[1:]]
                counters[key[1:]] += 1
                open_enters[key].append(i)
            elif kind == "hook_exit":
                self.exits[key].append((i, e))
                if open_enters[key]:
                    self.entered_at[i] = open_enters[key].pop()
            elif kind == "call_end":
                self.ends[key[0]] = (i, e)
            elif kind == "cancel_requested":
                self.cancels[key[0]] = i
            elif kind == "kit_timeout":
                self.kit_timeouts[key[0]] = i
            elif kind == "tool_result":
                self.tool_results[key[0]] = e
            elif kind == "tool_start":
                self.tool_starts[key[0]] = e
            elif kind == "tool_cancelled":
                self.tool_cancels[key[0]] = e
            elif kind == "warning":
                self.warnings[e.get("observer", "?")] += 1
            elif kind == "gate_released":
                self.releases.setdefault(str(e.get("gate")), i)
            elif kind == "files":
                self.files = e

    def exit_after(
        self, call: str, observer: str, hook: str, index: int
    ) -> tuple[int, dict[str, Any]] | None:
        for j, e in self.exits[(call, observer, hook)]:
            if j > index:
                return j, e
        return None


class OracleBase:
    """What both halves of the oracle share: the scenario, the trace index, the findings."""

    def __init__(self, request: dict[str, Any], trace: list[dict[str, Any]]) -> None:
        self.given: dict[str, Any] = request["given"]
        self.when: list[dict[str, Any]] = request["when"]
        self.t = TraceIndex(trace)
        self.leaves = flatten(self.given["observers"])
        self.order = [leaf["name"] for leaf in self.leaves]
        self.by_name = {leaf["name"]: leaf for leaf in self.leaves}
        self.chains = {e["name"] for e in observer_entries(self.given["observers"]) if "chain" in e}
        self.nested = bool(self.chains)
        self.limited = is_limited(self.given)
        self.out: list[Violation] = []

    def flag(self, rule: str, message: str) -> None:
        self.out.append((rule, message))
        if self.nested and rule in ("WOC-ORDER-BEFORE", "WOC-ORDER-AFTER", "WOC-JOIN"):
            self.out.append(("WOC-NESTED", f"(nested chain) {message}"))

    def ending(self, call: str, index: int, exit_event: dict[str, Any]) -> Ending:
        """How the hook exit at ``index`` of ``call`` counts (see :data:`Ending`)."""
        outcome = exit_event.get("outcome")
        if outcome == "returned":
            return "returned"
        if outcome != "cancelled":
            return "failed"
        if self.t.cancels.get(call, len(self.t.events)) < index:
            return "caller"
        if self._kit_gave_up(call, index):
            return "kit"
        return "failed" if self._meant_to_block(index, exit_event) else "cut"

    def _kit_gave_up(self, call: str, index: int) -> bool:
        """Whether this cancelled exit is the kit's own call limit unwinding the call.

        The kit records ``kit_timeout`` once the cancellation has come out of the chain,
        so after the hook exits it caused, with no hook entered in between.
        """
        kit = self.t.kit_timeouts.get(call)
        if kit is None or kit < index:
            return False
        return not any(index < i < kit for i, _ in self.t.enters.get(call, []))

    def _meant_to_block(self, index: int, exit_event: dict[str, Any]) -> bool:
        """Whether the scenario made this hook wait: a hang, or a gate still closed."""
        leaf = self.by_name.get(exit_event.get("observer", ""))
        enter_i = self.t.entered_at.get(index)
        if leaf is None or enter_i is None:
            return True  # nothing to judge by: give the chain the benefit of the doubt
        if "builtin" in leaf:
            return bool(leaf.get("program") == "tidy-hang")
        behaviour = behaviour_for(leaf, exit_event.get("hook", ""), self.t.call_index[enter_i])
        if behaviour.get("hang"):
            return True
        gate = behaviour.get("gate")
        return gate is not None and self.t.releases.get(str(gate), len(self.t.events)) > index

    def annotation_parts(
        self, call: str, entered: list[tuple[int, dict[str, Any]]]
    ) -> tuple[list[str], bool]:
        """The string annotations of the observers that returned, and whether any failed.

        A scripted observer's value comes from its script (what it was told to return);
        a builtin's from its exit event (its output is the reference's, not scripted).
        """
        parts: list[str] = []
        failed = False
        for i, e in entered:
            found = self.t.exit_after(call, e["observer"], "after_write", i)
            if found is None:
                continue
            if found[1].get("outcome") != "returned":
                failed = failed or self.ending(call, found[0], found[1]) in ("failed", "cut")
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
        return parts, failed
