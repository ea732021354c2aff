"""The scripted participants of a dispatch-recorder scenario, and the traced recorders.

The provider, tools, policy and approver do exactly what ``given`` says and trace what
they are asked; the recorders do the same for ``record`` and ``commit_accepted_step``.
They are kept apart from the driver so that the driver reads as the list of steps.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.dispatch_recorder.model import (
    behaviour_for,
    policy_for,
    pre_kind,
)
from seamspec.conformance._core.tracer import Tracer
from seamspec.reference import (
    OK,
    Allow,
    Decision,
    Deny,
    DispatchMutation,
    InjectContext,
    Message,
    ProviderStep,
    RecorderBase,
    RecordError,
    RecordOutcome,
    RequireApproval,
    RewriteArgs,
    ToolCall,
    ToolInvocation,
)

__all__ = [
    "Gates",
    "Participants",
    "ScriptedFailure",
    "ScriptedRecordOnly",
    "ScriptedRecorder",
    "TracedJournal",
    "dump",
]


class ScriptedFailure(Exception):
    """The failure a scenario scripted for a participant (``raise: message``)."""


#: The built-in exception classes a scripted ``raise`` may also be (``exception: NAME``),
#: so that a harness which handles some classes differently (retrying a "transient"
#: OSError, say) meets them; each is still a :class:`ScriptedFailure`, named as the class.
RAISABLE: dict[str, type[ScriptedFailure]] = {
    base.__name__: type(base.__name__, (ScriptedFailure, base), {})
    for base in (ConnectionError, TimeoutError, OSError)
}


def scripted_failure(behaviour: Mapping[str, Any]) -> ScriptedFailure:
    """The exception a ``raise`` behaviour raises: of its ``exception`` class, if named."""
    return RAISABLE.get(str(behaviour.get("exception")), ScriptedFailure)(behaviour["raise"])


def dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [
        {"role": m.role, "content": m.content, "tool_call_id": m.tool_call_id} for m in messages
    ]


def proposed_calls(messages: Sequence[Message]) -> list[Any]:
    """Each message's ``tool_calls`` as (id, name, args) triples, copied: what a commit's
    assistant messages proposed, to compare at the turn's end (DR-COMMIT-STEP)."""
    return [[(c.id, c.name, c.args) for c in (m.tool_calls or ())] for m in messages]


class Participants:
    """The scripted provider, tools, policy and approver of one scenario.

    A tool with a ``gate`` blocks until the gate opens (it stays cancellable), so that a
    scenario can make a tool take longer than the record time limit without a sleep.
    """

    def __init__(self, given: Mapping[str, Any], tracer: Tracer, gates: Gates) -> None:
        self.given = given
        self.tracer = tracer
        self.gates = gates
        self.steps = 0

    async def next_step(self, messages: Sequence[Message]) -> ProviderStep:
        index = self.steps
        self.steps += 1
        self.tracer.emit("provider_call", step=index, messages=dump(messages))
        await anyio.lowlevel.checkpoint()
        script = self.given["provider"]
        if index >= len(script):
            return ProviderStep("")
        step = script[index]
        calls = tuple(ToolCall(c["id"], c["tool"], c["args"]) for c in step.get("calls", []))
        return ProviderStep(step.get("final", ""), calls)

    async def run(self, invocation: ToolInvocation) -> str:
        self.tracer.emit(
            "tool_run", call=invocation.call_id, tool=invocation.name, args=invocation.args,
            context=list(invocation.context),
        )  # fmt: skip
        await anyio.lowlevel.checkpoint()
        spec = self.given.get("tools", {}).get(invocation.name, {})
        if "gate" in spec:
            self.gates.entered.setdefault(spec["gate"], anyio.current_time())
            await self.gates[spec["gate"]].wait()
        if "raise" in spec:
            self.tracer.emit("tool_exit", call=invocation.call_id, raised=spec["raise"])
            raise ScriptedFailure(spec["raise"])
        result = spec.get("returns", f"{invocation.name} ran with {invocation.args}")
        self.tracer.emit("tool_exit", call=invocation.call_id, result=result)
        return str(result)

    async def before_dispatch(self, call: ToolCall) -> Decision:
        pre = policy_for(dict(self.given), call.id)["pre"]
        kind = pre_kind({"pre": pre})
        if kind == "deny":
            return Deny(pre["deny"])
        if kind == "approval":
            return RequireApproval(pre["approval"])
        if kind == "rewrite":
            return RewriteArgs(pre["rewrite"])
        if kind == "inject":
            return InjectContext(pre["inject"])
        return Allow()

    async def after_dispatch(self, call: ToolCall, result: str) -> str | None:
        redacted = policy_for(dict(self.given), call.id).get("redact")
        # The text the policy was asked about: for a tool that raised, the executor's own
        # failure text, which a redaction record must carry as its original (DR-ONE-RECORD).
        self.tracer.emit("redaction_asked", call=call.id, result=result)
        return None if redacted is None else str(redacted)

    async def approve(self, call: ToolCall, reason: str) -> bool:
        approved = bool(policy_for(dict(self.given), call.id).get("approve", False))
        self.tracer.emit("approval", call=call.id, approved=approved)
        return approved


class Gates:
    def __init__(self) -> None:
        self.events: dict[str, anyio.Event] = {}
        self.entered: dict[str, float] = {}

    def __getitem__(self, name: str) -> anyio.Event:
        return self.events.setdefault(name, anyio.Event())


async def _perform(behaviour: dict[str, Any], gates: Gates) -> RecordOutcome:
    if behaviour.get("late"):
        # Deaf to the executor's time limit and to cancellation until released. It goes
        # deaf before its first checkpoint, so however loaded the machine, no limit or
        # cancellation can reach it between the call and the shield.
        gates.entered[behaviour["gate"]] = anyio.current_time()
        with anyio.CancelScope(shield=True):
            await gates[behaviour["gate"]].wait()
    else:
        await anyio.lowlevel.checkpoint()
    if "gate" in behaviour and not behaviour.get("late"):
        gates.entered[behaviour["gate"]] = anyio.current_time()
        await gates[behaviour["gate"]].wait()
    if behaviour.get("hang"):
        await anyio.sleep_forever()
    if "raise" in behaviour:
        raise scripted_failure(behaviour)
    if "error" in behaviour:
        return RecordError(behaviour["error"])
    return OK


class _Traced:
    """Shared tracing of ``record`` and ``commit_accepted_step`` calls."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.records = 0
        self.commits = 0

    async def traced(self, what: str, n: int, work: Callable[[], Any], **fields: Any) -> Any:
        self.tracer.emit(f"{what}_enter", n=n, **fields)
        try:
            outcome = await work()
        except anyio.get_cancelled_exc_class():
            self.tracer.emit(f"{what}_exit", n=n, outcome="cancelled")
            raise
        except Exception as error:
            self.tracer.emit(f"{what}_exit", n=n, outcome="raised", error=repr(error))
            raise
        extra = {"reason": outcome.reason} if isinstance(outcome, RecordError) else {}
        state = "error" if isinstance(outcome, RecordError) else "ok"
        self.tracer.emit(f"{what}_exit", n=n, outcome=state, **extra, **self.after(state))
        return outcome

    def after(self, state: str) -> dict[str, Any]:
        return {}

    def enter_record(self, mutation: DispatchMutation) -> tuple[int, dict[str, Any]]:
        n = self.records
        self.records += 1
        payload = mutation.to_json()
        fields = {"call": mutation.tool_call_id, "tool": mutation.tool_name}
        return n, {**fields, "kind": payload["kind"], "payload": payload}


class ScriptedRecordOnly(_Traced, RecorderBase):
    """A scripted recorder that does not override ``commit_accepted_step``."""

    def __init__(self, script: Mapping[str, Any], tracer: Tracer, gates: Gates) -> None:
        super().__init__(tracer)
        self.script = script
        self.gates = gates

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        n, fields = self.enter_record(mutation)
        behaviour = behaviour_for(self.script.get("record"), n)
        outcome: RecordOutcome = await self.traced(
            "record", n, lambda: _perform(behaviour, self.gates), **fields
        )
        return outcome


class ScriptedRecorder(ScriptedRecordOnly):
    """A scripted recorder with its own (traced, scripted) ``commit_accepted_step``.

    It keeps each list it was handed, as a recorder may (upstream hands it the step's
    ``Vec<Message>`` by value: the list is the recorder's from then on), so that
    :meth:`changed_commits` can tell whether the harness changed one afterwards.
    """

    def __init__(self, script: Mapping[str, Any], tracer: Tracer, gates: Gates) -> None:
        super().__init__(script, tracer, gates)
        self.kept: list[tuple[int, Sequence[Message], list[dict[str, Any]], list[Any]]] = []

    async def commit_accepted_step(self, messages: Sequence[Message]) -> RecordOutcome:
        n = self.commits
        self.commits += 1
        behaviour = behaviour_for(self.script.get("commit"), n)
        held = dump(messages)
        self.kept.append((n, messages, held, proposed_calls(messages)))
        outcome: RecordOutcome = await self.traced(
            "commit", n, lambda: _perform(behaviour, self.gates), messages=held
        )
        return outcome

    def changed_commits(self) -> list[tuple[int, list[dict[str, Any]], bool]]:
        """Each commit whose list no longer holds what it held when it was handed over,
        with what it holds now (read at the turn's end) and whether what changed is only
        an assistant message's ``tool_calls`` (which the trace's messages do not carry)."""
        changed = []
        for n, messages, held, calls in self.kept:
            try:
                now, calls_now = dump(messages), proposed_calls(messages)
            except Exception as error:  # a list the harness broke is still a change
                now = [{"role": "?", "content": f"unreadable: {error!r}", "tool_call_id": None}]
                calls_now = calls
            if now != held or calls_now != calls:
                changed.append((n, now, now == held))
        return changed


class TracedJournal(_Traced, RecorderBase):
    """The implementation's journal recorder, traced; commit is the protocol default.

    :meth:`fsync` is the hook the implementation must make its journal durable with.
    It is the kit's own view of durability: it checks that the descriptor is the journal
    (same device and inode as the file at ``path``), notes the size it covers (taken
    *before* the fsync, so bytes appended meanwhile are never counted) and a hash of
    those bytes, so that the oracle can require each OK'd entry to lie inside a completed
    fsync of the journal, and those bytes never to change afterwards.

    With ``fails_from`` (``given.recorder.fsync_fails.from_record``) the hook is also the
    kit's fault: once record ``fails_from`` (counted from 0, as the trace's ``n``) has
    begun, every fsync of the journal raises ``OSError(EIO)`` without syncing, as a disk
    that lost the written pages reports it, and is traced with ``failed: true`` and no
    ``durable_bytes``. Fsyncs of other files still work: only the journal's durability is
    in question. Counting begun records, not fsyncs, keeps the fault at the same record
    whether an implementation fsyncs once per record, shares fsyncs or fsyncs on opening.
    """

    def __init__(
        self, inner: Any, tracer: Tracer, path: Path, *, fails_from: int | None = None
    ) -> None:
        super().__init__(tracer)
        self.inner = inner
        self.path = path
        self.fails_from = fails_from

    def fsync(self, fd: int) -> None:
        status = os.fstat(fd)
        try:
            journal = os.stat(self.path)
        except OSError:
            journal = None
        is_journal = journal is not None and (status.st_dev, status.st_ino) == (
            journal.st_dev,
            journal.st_ino,
        )
        if is_journal and self._failing():
            self.tracer.emit("journal_fsync", journal=True, failed=True, error="EIO")
            raise OSError(errno.EIO, "fsync of the journal failed (the kit's fault: fsync_fails)")
        os.fsync(fd)
        if not is_journal:
            self.tracer.emit(
                "journal_fsync", journal=False, file=_describe_fd(fd), size=status.st_size
            )
            return
        with open(self.path, "rb") as file:
            prefix = file.read(status.st_size)
        self.tracer.emit(
            "journal_fsync", journal=True, durable_bytes=len(prefix),
            prefix_sha256=hashlib.sha256(prefix).hexdigest(),
        )  # fmt: skip

    def _failing(self) -> bool:
        """Has the record from which the kit fails the journal's fsyncs begun?"""
        return self.fails_from is not None and self.records > self.fails_from

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        n, fields = self.enter_record(mutation)
        outcome: RecordOutcome = await self.traced(
            "record", n, lambda: self.inner.record(mutation), **fields
        )
        return outcome


def _describe_fd(fd: int) -> str:
    """The file behind a descriptor, by name only (no folder: reports stay path-free)."""
    try:
        return os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return f"descriptor {fd}"
