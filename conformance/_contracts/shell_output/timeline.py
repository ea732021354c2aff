"""How ``seamspec explain`` draws shell-output events: one line each (``render``) and
the thread each happened on (``lanes``): the caller, each pipe-draining thread, and each
presentation thread. SOO-THREAD is a statement about lanes, so the picture shows a
callback on the wrong thread as a callback in the wrong lane.
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._core.timeline import short

__all__ = ["lanes", "render"]


def _chunk(event: dict[str, Any]) -> str:
    try:
        return short(bytes.fromhex(str(event.get("hex", ""))), 40)
    except ValueError:
        return short(event.get("hex"), 40)


def render(event: dict[str, Any]) -> str | None:
    kind = event["type"]
    call = event.get("call")
    if kind == "thread":
        where = f" for #{event['invocation']}" if event.get("invocation") is not None else ""
        if event.get("seen_by") == "kit":
            where = f" reading {call}'s pipes (seen by the kit)"
        return f"{event.get('role')} thread {event.get('thread')}{where}"
    if kind == "run_start":
        return f"{call}: starts"
    if kind == "invocation":
        return f"{call}: invocation #{event.get('invocation')}"
    if kind == "offer":
        return f"{call}: offers {event.get('stream')} {_chunk(event)}"
    if kind in ("callback_enter", "callback_exit"):
        head = f"{event.get('observer')}.{event.get('hook')} #{event.get('invocation')}"
        if kind == "callback_exit":
            return f"  <- {head} {event.get('outcome')}"
        if event.get("hook") == "on_output":
            return f"  -> {head} {event.get('stream')} {_chunk(event)}"
        return f"  -> {head}"
    if kind == "run_end":
        result = event.get("result") or {}
        detail = (
            f"exit {result.get('exit_code')}" + (" timed out" if result.get("timed_out") else "")
            if event.get("outcome") == "returned"
            else str(event.get("error", ""))
        )
        took = event.get("elapsed")
        after = f" after {took:.2f} s" if isinstance(took, (int, float)) else ""
        return f"{call}: {event.get('outcome')} {detail}".rstrip() + after
    if kind == "finish_requested":
        return f"{call}: finish"
    if kind == "cancel_requested":
        return f"** cancel {call} **"
    if kind == "cancel_returned":
        took = event.get("elapsed")
        return f"{call}: cancel returned" + (
            f" after {took:.2f} s" if isinstance(took, (int, float)) else ""
        )
    if kind == "group_check":
        left = "still running" if event.get("alive") else "all gone"
        return f"{call}: processes after the time limit: {left}"
    if kind == "kit_timeout":
        return f"** kit gave up waiting ({event.get('waiting')}) **"
    if kind == "gate_released":
        return f"gate {event.get('gate')} released"
    if kind == "idle":
        return f"idle ok={event.get('ok')}"
    return None


def lanes(trace: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The lane of every event: ``caller``, ``drain N`` or ``presentation N``.

    Threads are numbered by role in order of appearance, not by their labels, which
    differ from run to run: two correct runs draw the same lanes. The caller's thread
    labels (``thread`` events with role ``caller``) name no event of their own: they get
    the empty lane, which the drawing leaves out. A callback on a caller or draining
    thread is drawn in that lane, where it does not belong.
    """
    callers = {
        e.get("thread") for e in trace if e["type"] == "thread" and e.get("role") == "caller"
    }
    drains = {e.get("thread") for e in trace if e["type"] == "thread" and e.get("role") == "drain"}
    named: dict[object, str] = {}
    drain_lanes: list[str] = []
    presentation_lanes: list[str] = []

    def lane_of(thread: object, group: list[str], role: str) -> str:
        if thread not in named:
            named[thread] = f"{role} {len(group) + 1}"
            group.append(named[thread])
        return named[thread]

    of_event = []
    for event in trace:
        kind, thread = event["type"], event.get("thread")
        if kind == "thread":
            is_drain = event.get("role") == "drain"
            lane = lane_of(thread, drain_lanes, "drain") if is_drain else ""
        elif kind in ("callback_enter", "callback_exit"):
            if thread in callers:
                lane = "caller"
            elif thread in drains:
                lane = lane_of(thread, drain_lanes, "drain")
            else:
                lane = lane_of(thread, presentation_lanes, "presentation")
        else:
            lane = "caller"
        of_event.append(lane)
    return ["caller", *drain_lanes, *presentation_lanes], of_event
