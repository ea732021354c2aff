"""Performs dispatch-recorder scenarios against any Python turn loop and executor.

The adapter author supplies a :class:`DispatchRecorderImplementation` (run one turn with
the participants it is given; optionally open and verify a signed journal). This driver
builds the scripted provider, tools, policy, approver and recorder from ``given``, runs the
``when`` steps, and records the trace the oracle judges. Participants use the reference's
public model types (``seamspec.reference``); an implementation with its own types converts
at its boundary.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
from anyio.abc import TaskGroup, TaskStatus
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seamspec.conformance._contracts.dispatch_recorder.journal_session import (
    JournalSession,
    verdict_fields,
    wants_journal,
)
from seamspec.conformance._contracts.dispatch_recorder.model import late_limit, step_verb
from seamspec.conformance._contracts.dispatch_recorder.scripted import (
    Gates,
    Participants,
    ScriptedFailure,
    ScriptedRecorder,
    ScriptedRecordOnly,
    TracedJournal,
    dump,
)
from seamspec.conformance._core.adapter import Trace
from seamspec.conformance._core.errors import ImplementationError, Unsupported
from seamspec.conformance._core.patience import patient
from seamspec.conformance._core.settle import all_tasks_blocked
from seamspec.conformance._core.tracer import Tracer
from seamspec.reference import DispatchRecorder, KeySigner, Message, Signer

__all__ = ["DispatchRecorderDriver", "DispatchRecorderImplementation", "ScriptedFailure"]

#: The feature this driver adds for a ``signed-journal`` implementation (see ``features``).
FSYNC_FAULT = "fsync-fault"
#: A step that waits gives up after this long; far above any real need.
WAIT_LIMIT = 10.0
#: How long a turn may run before the kit cancels it and records ``kit_timeout``.
TURN_LIMIT = 10.0
#: How long past the kit's turn limit a step still waits for a running turn to end. The
#: turn limit must come first: a turn that hangs is stopped by it and judged (a finding
#: such as DR-HANG), not taken for a step that gave up waiting. A step waiting from the
#: turn's start with a limit as long as the turn's raced it, and the same scenario
#: counted as a failure or an error by chance.
STOP_GRACE = 5.0


@runtime_checkable
class DispatchRecorderImplementation(Protocol):
    """What an adapter author provides for a Python dispatch-recorder implementation.

    ``run_turn`` runs one turn with these participants and returns the transcript, or
    raises when the turn stops on a failed commit. ``features`` may list
    ``signed-journal``: then also provide ``open_journal(path, signer, fsync=...)``
    (a recorder writing a signed journal, calling ``fsync(fd)`` to make it durable, with
    a ``close()``; opened on a file that holds a journal, it continues it) and
    ``verify_journal(path, public_key, expected_entries=...)`` (an object with ``ok``,
    ``bad_index``, ``reason``, ``torn_tail`` and ``entries``, each with a ``mutation``).
    Such an implementation also gets the feature ``fsync-fault`` from this driver: the
    kit owns the fsync hook, so it can make the journal's fsyncs fail itself
    (``given.recorder.fsync_fails``), with nothing for the implementation to provide.
    """

    features: tuple[str, ...]

    async def run_turn(
        self,
        *,
        prompt: str,
        provider: Any,
        tools: Any,
        policy: Any,
        recorder: DispatchRecorder | None,
        approver: Any,
        record_time_limit: float | None,
        commit_time_limit: float | None,
    ) -> Sequence[Message]: ...


class DispatchRecorderDriver:
    """Runs one dispatch-recorder scenario (``given`` + ``when``) and returns its trace."""

    contract = "dispatch-recorder"

    def __init__(self, implementation: DispatchRecorderImplementation) -> None:
        self.implementation = implementation

    @property
    def features(self) -> tuple[str, ...]:
        """The implementation's own features, and ``fsync-fault`` with ``signed-journal``:
        in process the fault is the kit's fsync hook raising, which any journal that
        syncs through the hook (as DR-JOURNAL-DURABLE asks) meets without opting in."""
        own = tuple(self.implementation.features)
        if "signed-journal" in own and FSYNC_FAULT not in own:
            return (*own, FSYNC_FAULT)
        return own

    async def perform(self, request: Mapping[str, Any]) -> Trace:
        """Perform ``request``; with a journal, also the kit's side of it (its own check,
        tampering, the verifier's verdicts), unless the request comes over the wire with
        ``resources``: then the kit on the other end does that part."""
        with tempfile.TemporaryDirectory(prefix="seamspec-dr-") as tmp:
            if "resources" in request or not wants_journal(request):
                return await _Run(self.implementation, request).perform()
            session = JournalSession(request, Path(tmp))
            trace = await _Run(self.implementation, session.implementation_request()).perform()
            return trace + session.finish(trace, self._verify, evidence="observed")

    def _verify(self, path: Path, public_key: str, anchor: int | None) -> Mapping[str, Any]:
        """The implementation's verifier, asked in process."""
        verify = getattr(self.implementation, "verify_journal", None)
        if not callable(verify):
            raise ImplementationError(
                "the implementation declares signed-journal but has no verify_journal"
            )
        found = verify(
            path, Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)),
            expected_entries=anchor,
        )  # fmt: skip
        return {
            "ok": bool(found.ok), "bad_index": found.bad_index, "reason": found.reason,
            "torn_tail": bool(found.torn_tail),
            "mutations": [dict(e.mutation) for e in found.entries],
        }  # fmt: skip

    async def query(self, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """A question the kit asks over the wire (protocol 2): ``verify_journal``."""
        if name != "verify_journal":
            raise Unsupported(f"the dispatch-recorder driver answers no query {name!r}")
        anchor = body.get("expected_entries")
        found = self._verify(Path(body["path"]), str(body["public_key"]), anchor)
        return verdict_fields(found, "verify_journal")


class _Refused(Exception):
    """The implementation would not open the journal it was given (a damaged file, say):
    no step is performed, and the trace says why."""


class _Unmet(Exception):
    """A ``wait_*`` step's event never happened, and the turn is over."""


class _Run:
    def __init__(self, impl: Any, request: Mapping[str, Any]) -> None:
        self.impl = impl
        self.given: dict[str, Any] = dict(request["given"])
        self.when: list[dict[str, Any]] = list(request["when"])
        self.resources: Mapping[str, Any] = request.get("resources") or {}
        self.tracer = Tracer()
        self.gates = Gates()
        self.scope: anyio.CancelScope | None = None
        self.done = anyio.Event()
        self.cancelled = False
        self.cancelled_at = 0.0
        self.journal: TracedJournal | None = None
        self.signer: Signer | None = None
        self.recorder: DispatchRecorder | None = None

    def _recorder(self) -> DispatchRecorder | None:
        script = self.given.get("recorder")
        if script is None:
            return None
        if script.get("journal"):
            given = self.resources.get("journal")
            if not isinstance(given, Mapping):
                raise ImplementationError("a journal scenario needs resources.journal from the kit")
            signer: Signer = KeySigner.from_file(given["private_key"])
            path = Path(given["path"])
            fails = script.get("fsync_fails")
            journal = TracedJournal(
                None, self.tracer, path,
                fails_from=int(fails["from_record"]) if isinstance(fails, Mapping) else None,
            )  # fmt: skip
            try:
                journal.inner = self.impl.open_journal(path, signer, fsync=journal.fsync)
            except Exception as error:  # the oracle judges whether refusing was right
                raise _Refused(f"{type(error).__name__}: {error}") from None
            self.signer = signer
            self.journal = journal
            return journal
        if script.get("commit_default"):
            return ScriptedRecordOnly(script, self.tracer, self.gates)
        return ScriptedRecorder(script, self.tracer, self.gates)

    async def perform(self) -> Trace:
        try:
            recorder = self.recorder = self._recorder()
        except _Refused as refused:
            self.tracer.emit("journal_refused", error=str(refused))
            return self.tracer.events
        try:
            async with anyio.create_task_group() as group:
                for index, step in enumerate(self.when):
                    try:
                        await self._step(index, step, recorder, group)
                    except _Unmet as unmet:
                        self.tracer.emit("wait_unmet", step=index, waited_for=str(unmet))
                        break
                if self.scope is not None:
                    with anyio.move_on_after(WAIT_LIMIT + TURN_LIMIT):
                        await self.done.wait()
        finally:
            close = getattr(self.journal.inner if self.journal else None, "close", None)
            if close is not None:
                close()
        return self.tracer.events

    def _reopen(self, index: int) -> None:
        """Close the implementation's journal recorder and open the same file again; the
        traced recorder the executor holds then records through the new one."""
        if self.journal is None or self.signer is None:
            raise ImplementationError(f"step {index}: reopen_journal needs the journal recorder")
        close = getattr(self.journal.inner, "close", None)
        if not callable(close):
            raise ImplementationError(
                f"step {index}: the journal recorder from open_journal has no close()"
            )
        close()
        self.tracer.emit("journal_reopen")
        self.journal.inner = self.impl.open_journal(
            self.journal.path, self.signer, fsync=self.journal.fsync
        )

    async def _turn(
        self,
        recorder: DispatchRecorder | None,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        parts = Participants(self.given, self.tracer, self.gates)
        self.tracer.emit("turn_start")
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + patient(TURN_LIMIT)) as scope:
                self.scope = scope
                task_status.started()
                try:
                    messages = await self.impl.run_turn(
                        prompt=str(self.given.get("prompt", "go")),
                        provider=parts, tools=parts, policy=parts, recorder=recorder,
                        approver=parts.approve if self.given.get("approver", True) else None,
                        record_time_limit=self.given.get("record_time_limit", 10.0),
                        commit_time_limit=self.given.get("commit_time_limit", 10.0),
                    )  # fmt: skip
                except anyio.get_cancelled_exc_class():
                    if not self.cancelled:
                        self.tracer.emit("kit_timeout", seconds=patient(TURN_LIMIT))
                    self._end("cancelled")
                    raise
                except Exception as error:
                    self._end("error", error=str(error))
                    return
                self._end("completed", messages=dump(messages))
        finally:
            self.done.set()

    def _end(self, outcome: str, **fields: Any) -> None:
        """``turn_end``; after a ``cancel`` step, with the seconds since it (DR-CANCEL).

        Before it, a ``commit_changed`` for each list handed to the scripted recorder's
        commit that the harness changed afterwards (DR-COMMIT-STEP: the list is the
        recorder's once handed over).
        """
        if isinstance(self.recorder, ScriptedRecorder):
            for n, now, only_calls in self.recorder.changed_commits():
                extra = {"tool_calls_changed": True} if only_calls else {}
                self.tracer.emit("commit_changed", n=n, messages=now, **extra)
        if self.cancelled:
            fields["since_cancel"] = anyio.current_time() - self.cancelled_at
        self.tracer.emit("turn_end", outcome=outcome, **fields)

    async def _wait(self, index: int, what: str, ready: Callable[[], bool]) -> None:
        """Wait until ``ready()``; :class:`_Unmet` if the turn ended without it happening.

        A turn that ended without the awaited record, commit or tool call has broken a
        rule (a mutation applied unrecorded, say), not crashed: the steps stop there and
        the trace is judged. Waiting on a turn that never gets there and is still running
        :data:`STOP_GRACE` after the kit's own turn limit stopped it (it ignores the
        cancellation) is a hang, an :class:`ImplementationError`.
        """
        started = anyio.current_time()
        deadline = started + WAIT_LIMIT  # an error when it runs out: never capped
        if self.scope is not None and not self.done.is_set():
            # A turn still running: give up only once the kit's own limit has stopped it
            # and it still has not ended (it ignores cancellation).
            deadline = max(deadline, self.scope.deadline + STOP_GRACE)
        with anyio.move_on_at(deadline) as waited:
            while not ready():
                if self.done.is_set():
                    raise _Unmet(what)
                await anyio.sleep(0.001)
        if waited.cancelled_caught:
            raise ImplementationError(
                f"step {index}: {what} did not happen within {deadline - started:.1f} s",
                context=self.tracer.tail(),
            )
        await all_tasks_blocked()

    async def _step(
        self, index: int, step: dict[str, Any], recorder: DispatchRecorder | None, group: TaskGroup
    ) -> None:
        verb = step_verb(step)
        body = step[verb]
        if verb == "turn":
            await self._turn(recorder)
        elif verb == "start_turn":
            await group.start(self._turn, recorder)
        elif verb in ("wait_record", "wait_commit", "wait_tool"):
            kind, wanted = verb.removeprefix("wait_"), int(body.get("count", 1))
            event = "tool_run" if kind == "tool" else f"{kind}_enter"
            await self._wait(
                index, f"{wanted} {kind} call(s)", lambda: self.tracer.count(event) >= wanted
            )
        elif verb == "release":
            self.tracer.emit("gate_released", gate=body)
            self.gates[body].set()
            await all_tasks_blocked()
        elif verb == "release_late":
            await self._wait(
                index, f"a call blocked on gate {body}", lambda: body in self.gates.entered
            )
            limit = float(self.given.get(late_limit(self.given, body), 0.0))
            # Not a sleep for ordering: the gate must open only once the limit has passed.
            await anyio.sleep(
                max(0.0, self.gates.entered[body] + limit - anyio.current_time()) + 0.02
            )
            self.tracer.emit("gate_released", gate=body, after_limit=limit)
            self.gates[body].set()
            await all_tasks_blocked()
        elif verb == "release_after":
            gate, seconds = str(body["gate"]), float(body["seconds"])
            await self._wait(
                index, f"a call blocked on gate {gate}", lambda: gate in self.gates.entered
            )
            # Not a sleep for ordering: what blocks on the gate must take this long.
            await anyio.sleep(max(0.0, self.gates.entered[gate] + seconds - anyio.current_time()))
            self.tracer.emit("gate_released", gate=gate, after=seconds)
            self.gates[gate].set()
            await all_tasks_blocked()
        elif verb == "cancel":
            self.tracer.emit("cancel_requested")
            self.cancelled, self.cancelled_at = True, anyio.current_time()
            assert self.scope is not None
            self.scope.cancel()
        elif verb == "join":
            with anyio.move_on_after(WAIT_LIMIT + TURN_LIMIT):
                await self.done.wait()
        elif verb == "reopen_journal":
            self._reopen(index)
        elif verb in ("verify_journal", "tamper_journal"):
            raise ImplementationError(
                f"step {index}: {verb} is the kit's own step; it never reaches the implementation"
            )
