"""Hypothesis strategies that generate valid shell-output scenarios.

Most generated scenarios use the session driver (``soo-session``: deterministic, fast).
They open one or two observation sessions, offer them random chunks (random bytes, split
UTF-8 sequences and invalid bytes included, empty offers too) on both streams under a
random per-stream budget (0 and small values included), give each observer a random
behaviour (normal, raise or block on a gate at its k-th ``on_output``, raise in
``on_finish``, a plain callable), end each session with a finish or a cancel (sometimes
twice), and offer more chunks after the end. A second session either runs alongside
with its own observer, or reuses the first observer once its ``on_finish`` has run.

Whenever a fact would depend on timing, the scenario synchronises first: every chunk
that must be presented is waited for (``wait_entered``) before the next is offered, so
chunks queue up only behind a gated callback, "the k-th call" is the k-th accepted chunk,
and a cancel drops exactly what is queued behind the gate. ``then`` therefore states only
what every conforming implementation shows: the exact bytes delivered per observer and
stream, how often ``on_finish`` came, and the invocation IDs; never the interleaving of
stdout and stderr. A saved failure fails the same way under ``seamspec run``.

A quarter of the scenarios run the kit's emitter as real processes (``soo-process``) to
reach what only a command has: the result envelope, time limits, refusals and spawn
errors. There, ``then`` pins outcomes, ``on_finish`` counts, IDs and, for a normal
completion, the delivered bytes per stream (how the pipes cut them into chunks is free).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

__all__ = ["scenarios", "soo_scenarios"]

STREAMS = ("stdout", "stderr")
#: Byte pieces chunks are made of: ASCII, whole and split UTF-8 sequences, invalid bytes.
_PIECES = [b"a", b"z", b"\n", b"\xc3", b"\xa9", b"\xc3\xa9", b"\xe2\x82", b"\xac", b"\xff", b"\x00"]
_SOME = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4).map(b"".join)
CHUNK = st.one_of(_SOME, _SOME, _SOME, st.just(b""))  # an empty offer now and then
EMIT = st.tuples(st.sampled_from(STREAMS), CHUNK)
#: What the observer does at its k-th on_output; a gate queues the chunks offered after it.
SPECIALS = (None, "raise", "gate", "gate", "gate+raise")


@dataclass
class _Session:
    """One session's steps, and what a conforming implementation delivers for it."""

    ident: str
    observer: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    delivered: dict[str, bytes] = field(default_factory=lambda: dict.fromkeys(STREAMS, b""))
    finishes: int = 0
    calls: int = 0  # on_output calls this session's observer has certainly entered


def _emit(ident: str, stream: str, chunk: bytes) -> dict[str, Any]:
    return {"emit": {"id": ident, "stream": stream, "hex": chunk.hex()}}


def _wait(observer: str, count: int, hook: str = "on_output") -> dict[str, Any]:
    body: dict[str, Any] = {"observer": observer, "count": count}
    if hook != "on_output":
        body["hook"] = hook
    return {"wait_entered": body}


@st.composite
def _session(
    draw: st.DrawFn,
    ident: str,
    entry: dict[str, Any],
    budget: int,
    *,
    special_allowed: bool,
    base_calls: int = 0,
    base_finishes: int = 0,
) -> _Session:
    """Steps for one session of ``entry``'s observer, simulated as the rules fix them.

    ``base_calls``/``base_finishes``: callbacks the observer already had (a reused observer).
    """
    name = entry["name"]
    gate = f"g-{ident}"
    has_finish = not entry.get("callable", False)
    special = draw(st.sampled_from(SPECIALS)) if special_allowed else None
    k = draw(st.integers(1, 3))
    if special is not None:
        behaviour: dict[str, Any] = {}
        if "gate" in special:
            behaviour["gate"] = gate
        if "raise" in special:
            behaviour["raise"] = "scripted failure"
        entry["on_output"] = [*([{}] * (k - 1)), behaviour, {}]
    chunks = draw(st.lists(EMIT, max_size=7))
    late = draw(st.lists(EMIT, max_size=2))
    ending = draw(st.sampled_from(["finish", "cancel"]))
    release_before_end = draw(st.booleans())
    wait_finish = draw(st.booleans())
    again = draw(st.sampled_from([None, "finish", "cancel"]))

    s = _Session(ident, name, calls=base_calls, finishes=base_finishes)
    s.steps.append({"open": {"id": ident, "observer": name}})
    used = dict.fromkeys(STREAMS, 0)
    accepted = 0  # accepted, non-empty chunks: each is one on_output in a conforming run
    dead = False  # the k-th call raised (or will, once released): nothing more is delivered
    blocked = False  # the k-th call waits on the gate, not yet released
    pending: list[tuple[str, bytes]] = []  # accepted, not yet certainly delivered

    def release() -> None:
        nonlocal blocked
        s.steps.append({"release": gate})
        blocked = False

    for stream, chunk in chunks:
        s.steps.append(_emit(ident, stream, chunk))
        part = chunk[: max(0, budget - used[stream])]
        used[stream] += len(part)
        if not part or dead:
            continue
        accepted += 1
        if blocked:  # queued behind the blocked call
            pending.append((stream, part))
            continue
        # Lockstep: wait until it is presented, so queues build up only behind a gate and
        # "the k-th call" is the k-th chunk accepted, whatever the timing.
        s.calls += 1
        s.delivered[stream] += part
        s.steps.append(_wait(name, s.calls))
        if special is not None and accepted == k:
            dead = "raise" in special
            blocked = "gate" in special
    if blocked and release_before_end:
        release()
        if not dead and pending:
            for stream, part in pending:
                s.delivered[stream] += part
            s.calls += len(pending)
            pending.clear()
            s.steps.append(_wait(name, s.calls))
    if ending == "finish":
        s.steps.append({"finish": ident})
        if not dead:
            for stream, part in pending:
                s.delivered[stream] += part
            s.calls += len(pending)
            if has_finish:
                s.finishes += 1
    else:  # what is still queued (behind the gate) is dropped
        s.steps.append({"cancel": ident})
    if again:  # a second end changes nothing (before the late chunks: see History.allowed)
        s.steps.append({again: ident})
    s.steps += [_emit(ident, stream, chunk) for stream, chunk in late]
    if blocked:
        release()
    if ending == "finish" and s.finishes > base_finishes and wait_finish:
        s.steps.append(_wait(name, s.finishes, "on_finish"))
    return s


def _merge(draw: st.DrawFn, first: list[Any], second: list[Any]) -> list[Any]:
    """A random interleaving that keeps each list's own order."""
    out: list[Any] = []
    i = j = 0
    while i < len(first) or j < len(second):
        if j >= len(second) or (i < len(first) and draw(st.booleans())):
            out.append(first[i])
            i += 1
        else:
            out.append(second[j])
            j += 1
    return out


_RULES = [
    "SOO-NONEMPTY",
    "SOO-RAW",
    "SOO-PIPE-ORDER",
    "SOO-BUDGET",
    "SOO-BUDGET-ZERO",
    "SOO-THREAD",
    "SOO-SERIAL",
    "SOO-LIVE",
    "SOO-NO-STALL",
    "SOO-FINISH",
    "SOO-PANIC",
    "SOO-FINISH-PANIC",
    "SOO-IDS",
]
_DESCRIPTION = (
    "Generated by seamspec fuzz and shrunk by hypothesis. The oracle checks every universal "
    "rule; `then` pins only what every conforming implementation shows."
)


@st.composite
def _process_scenario(draw: st.DrawFn) -> dict[str, Any]:
    """One to three emitter runs, one after another, through the implementation's runner.

    Each run is normal (random raw writes, an exit code), hangs until a short time limit,
    is refused by the policy, or names a program that cannot start; observed or not. The
    child's pipes cut the bytes into chunks as they please, so ``then`` states only the
    per-stream concatenation of a normal completion, ``on_finish`` counts, outcomes and
    IDs; the oracle checks the result envelope against what the child wrote.
    """
    budget = draw(st.one_of(st.none(), st.integers(0, 6)))
    cap = draw(st.one_of(st.none(), st.integers(0, 8)))
    live = cap if budget is None else budget
    live = 1024 * 1024 if live is None else live
    given: dict[str, Any] = {}
    if cap is not None:
        given["cap"] = cap
    if budget is not None:
        given["budget"] = budget
    observers: list[dict[str, Any]] = []
    when: list[dict[str, Any]] = []
    outputs: dict[str, dict[str, str]] = {}
    finishes: dict[str, int] = {}
    results: dict[str, dict[str, Any]] = {}
    ids: dict[str, int | None] = {}
    taken: int | None = 0
    for n in range(1, draw(st.integers(1, 3)) + 1):
        ident = f"r{n}"
        kind = draw(st.sampled_from(["normal", "normal", "hang", "refused", "missing"]))
        writes = draw(st.lists(EMIT, max_size=3))
        script: list[dict[str, Any]] = [
            {"out_hex" if stream == "stdout" else "err_hex": chunk.hex()}
            for stream, chunk in writes
        ]
        code = draw(st.integers(0, 3))
        body: dict[str, Any] = {"id": ident, "script": script}
        if kind == "hang":
            script.append({"hang": True})
            body["timeout"] = 0.2
        elif code:
            script.append({"exit": code})
        if kind == "refused":
            body["refused"] = True
        elif kind == "missing":
            body["missing_program"] = True
        written = {stream: b"".join(c for s, c in writes if s == stream) for stream in STREAMS}
        observed = draw(st.booleans())
        gated = False
        if observed:
            name = f"p{n}"
            entry: dict[str, Any] = {"name": name}
            behaviour = draw(st.sampled_from([None, "callable", "finish-raises", "gate", "raise"]))
            if behaviour == "callable":
                entry["callable"] = True
            elif behaviour == "finish-raises":
                entry["on_finish"] = {"raise": "finish failed"}
            elif behaviour == "gate":  # the run must return while the observer is blocked
                entry["on_output"] = [{"gate": f"g-{ident}"}, {}]
                gated = True
            elif behaviour == "raise":
                entry["on_output"] = {"raise": "scripted failure"}
            observers.append(entry)
            body["observer"] = name
            panics = behaviour == "raise" and any(written[x][:live] for x in STREAMS)
            completes = kind == "normal"
            if kind != "hang" and behaviour != "raise":
                seen = {x: written[x][:live] if completes else b"" for x in STREAMS}
                outputs[name] = {f"{x}_hex": seen[x].hex() for x in STREAMS}
            finishes[name] = int(completes and not panics and behaviour != "callable")
        if taken is None:  # after a spawn failure, the next IDs are not pinned
            pass
        elif kind == "refused" or not observed:
            ids[ident] = None
        elif kind == "missing":  # it may or may not take an ID before spawning fails
            taken = None
        else:
            taken += 1
            ids[ident] = taken
        results[ident] = {"outcome": "raised" if kind in ("refused", "missing") else "returned"}
        if kind == "hang":  # what else a timed-out result holds is SOO-TIMEOUT-RESULT (strict)
            results[ident].update(timed_out=True)
        elif kind == "normal":
            results[ident].update(timed_out=False, exit_code=code)
        when.append({"run": body})
        if gated:
            when.append({"release": f"g-{ident}"})
    given["observers"] = observers
    then: dict[str, Any] = {"results": results, "finishes": finishes}
    if ids:
        then["ids"] = ids
    if outputs:
        then["outputs"] = outputs
    return {
        "title": "Generated: random emitter runs judged by the oracle",
        "contract": "shell-output",
        "rules": [*_RULES, "SOO-NO-WAIT", "SOO-TIMEOUT", "SOO-ENVELOPE", "SOO-DENIED"]
        + ["SOO-ERROR-NO-FINISH"],
        "level": "MUST",
        "tags": ["generated"],
        "requires": ["soo-process"]
        + (
            ["soo-live-budget"]
            if budget is not None and budget != (1024 * 1024 if cap is None else cap)
            else []
        ),
        "description": _DESCRIPTION,
        "given": given,
        "when": when,
        "then": then,
    }


@st.composite
def _session_scenario(draw: st.DrawFn) -> dict[str, Any]:
    budget: int | None = draw(st.one_of(st.integers(0, 4), st.integers(0, 24), st.none()))
    live = 1024 * 1024 if budget is None else budget
    given: dict[str, Any] = {} if budget is None else {"budget": budget}
    o1: dict[str, Any] = {"name": "o1"}
    if draw(st.integers(0, 5)) == 0:
        o1["callable"] = True
    elif draw(st.booleans()):
        o1["on_finish"] = {"raise": "finish failed"}
    mode = draw(st.sampled_from(["one", "two", "reuse"]))
    observers = [o1]
    if mode == "reuse" and o1.get("callable"):
        mode = "one"
    first = draw(_session("s1", o1, live, special_allowed=mode != "reuse"))
    sessions = [first]
    when = list(first.steps)
    if mode == "two":
        o2: dict[str, Any] = {"name": "o2"}
        if draw(st.booleans()):
            o2["on_finish"] = {"raise": "finish failed"}
        observers.append(o2)
        second = draw(_session("s2", o2, live, special_allowed=True))
        sessions.append(second)
        when = _merge(draw, first.steps, second.steps)
    elif mode == "reuse" and first.finishes:
        # The same observer again, once its first on_finish (which may raise) has run.
        when.append(_wait("o1", first.finishes, "on_finish"))
        second = draw(
            _session(
                "s2",
                o1,
                live,
                special_allowed=False,
                base_calls=first.calls,
                base_finishes=first.finishes,
            )
        )
        sessions.append(second)
        when += second.steps
    given["observers"] = observers

    outputs: dict[str, dict[str, str]] = {}
    finishes: dict[str, int] = {}
    for s in sessions:
        seen = outputs.setdefault(s.observer, {f"{x}_hex": "" for x in STREAMS})
        for x in STREAMS:
            seen[f"{x}_hex"] += s.delivered[x].hex()
        finishes[s.observer] = max(finishes.get(s.observer, 0), s.finishes)
    opened = [step["open"]["id"] for step in when if "open" in step]
    rules = [*_RULES, "SOO-LATE", "SOO-CANCEL"]
    if len(sessions) > 1:
        rules.append("SOO-ISOLATION")
    return {
        "title": "Generated: random sessions judged by the oracle",
        "contract": "shell-output",
        "rules": rules,
        "level": "MUST",
        "tags": ["generated"],
        "requires": ["soo-session"],
        "description": _DESCRIPTION,
        "given": given,
        "when": when,
        "then": {
            "outputs": outputs,
            "finishes": finishes,
            "ids": {ident: n for n, ident in enumerate(opened, start=1)},
        },
    }


def soo_scenarios() -> st.SearchStrategy[dict[str, Any]]:
    """One shell-output scenario document (without ``id``), valid against the schemas.

    Mostly observation sessions fed directly (deterministic and fast); a quarter are real
    emitter runs, which reach what only a process has (results, time limits, refusals).
    """
    return st.one_of(
        _session_scenario(), _session_scenario(), _session_scenario(), _process_scenario()
    )


#: The name the registry looks for (``seamspec fuzz``).
scenarios = soo_scenarios
