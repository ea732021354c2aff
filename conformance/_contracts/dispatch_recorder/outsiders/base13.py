"""An outsider's dispatch recorder: its own turn loop, executor and signed journal (batch 13).

Written from the contract page alone (docs of main 79cf702), plus the driver protocol and
the public model types of ``seamspec.reference``; the reference's ``run_turn``,
``ToolExecutor`` and journal are not used. Kept as written (the original ``b13dr_base.py``
had sha256 78633537c52bb9c4b2f48a3981f72e0ebcbb4f272ae5cbc91c63d5d9a6550a3f); only imports
(the driver and ``PythonAdapter`` from their own modules), annotations, the layout (ruff
format), a ``noqa`` and one addition at the end (``build(backend)``, the factory the
meta-test calls; the original's ``make_adapter``, ``adapter`` and ``adapter_trio`` are
kept) were touched. It declares ``record-time-limit`` and ``signed-journal``; by its
author's run it conformed under both profiles and both backends (189 passed), and it is
the control the batch's variants (``batch13.py``) are judged against. The turn, journal
and verifier are split into hook methods (``Turn.ask_approval``, ``Turn.assemble``,
``Turn.run_tool``, ``Turn.on_step_abandoned``, ``Journal.read_existing``,
``Journal.encode_line``, the verifier's splitter) so that each variant changes one.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seamspec.conformance._contracts.dispatch_recorder.driver import DispatchRecorderDriver
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    Allow,
    ContextInjection,
    Deny,
    DispatchMutation,
    InjectContext,
    InputRewrite,
    Message,
    RecordError,
    RecordOk,
    RequireApproval,
    ResultRedaction,
    RewriteArgs,
    ToolInvocation,
)

DENIED = "[tool call denied] "
WITHHELD = "[result withheld: its redaction could not be recorded]"


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class CommitFailed(Exception):
    """The turn stopped because a step could not be committed."""


# --------------------------------------------------------------------------- turn


class Turn:
    """One turn: its transcript and participants. All state lives here, per turn."""

    def __init__(
        self,
        *,
        prompt: str,
        provider: Any,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        record_time_limit: float | None,
        commit_time_limit: float | None,
    ) -> None:
        self.prompt = prompt
        self.provider = provider
        self.tools = tools
        self.policy = policy
        self.recorder = recorder
        self.approver = approver
        self.record_time_limit = record_time_limit
        self.commit_time_limit = commit_time_limit
        self.transcript: list[Message] = [Message("user", prompt)]
        self.step_index = 0

    # -- the loop -----------------------------------------------------------------

    async def run(self) -> list[Message]:
        while True:
            step = await self.provider.next_step(tuple(self.transcript))
            calls = tuple(step.tool_calls or ())
            assistant = Message("assistant", step.text, None, calls)
            if not calls:
                self.transcript.append(assistant)
                await self.commit([assistant])
                return list(self.transcript)
            groups: list[tuple[str, list[Message]]] = []
            try:
                for call in calls:
                    groups.append((call.id, await self.execute(call)))
            except BaseException:
                await self.on_step_abandoned(assistant, groups)
                raise
            step_messages = self.assemble(assistant, groups)
            self.transcript.extend(step_messages)
            await self.commit(step_messages)
            self.step_index += 1

    async def on_step_abandoned(
        self, assistant: Message, groups: list[tuple[str, list[Message]]]
    ) -> None:
        """A step that did not finish (cancelled): nothing to do."""

    def assemble(
        self, assistant: Message, groups: list[tuple[str, list[Message]]]
    ) -> list[Message]:
        messages = [assistant]
        for _call_id, msgs in groups:
            messages.extend(msgs)
        return messages

    # -- commits ------------------------------------------------------------------

    async def commit(self, messages: list[Message]) -> None:
        recorder = self.recorder
        if recorder is None:
            return
        method = getattr(recorder, "commit_accepted_step", None)
        if method is None:
            return
        n = self.step_index
        handed = tuple(messages)  # the recorder's to keep
        limit = self.commit_time_limit
        outcome: Any = None
        raised: BaseException | None = None
        timed_out = False
        if limit is not None and limit <= 0:
            timed_out = True
        else:
            started = anyio.current_time()
            with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
                try:
                    outcome = await method(handed)
                except Exception as error:  # cancellation is not an Exception
                    raised = error
            await anyio.lowlevel.checkpoint_if_cancelled()
            if scope.cancel_called or (
                limit is not None and anyio.current_time() - started > limit
            ):
                timed_out = True
        if timed_out:
            raise CommitFailed(
                f"step {n} could not be committed, so the turn stopped: "
                f"commit_accepted_step timed out after {limit} s"
            )
        if raised is not None:
            raise CommitFailed(
                f"step {n} could not be committed, so the turn stopped: "
                f"commit_accepted_step raised {raised!r}"
            )
        if isinstance(outcome, RecordOk):
            return
        if isinstance(outcome, RecordError):
            reason = outcome.reason
        else:
            reason = f"commit_accepted_step answered {outcome!r}"
        raise CommitFailed(f"step {n} could not be committed, so the turn stopped: {reason}")

    # -- records ------------------------------------------------------------------

    async def record(self, mutation: DispatchMutation) -> str | None:
        """None when recorded OK, else the reason it was not."""
        limit = self.record_time_limit
        if limit is not None and limit <= 0:
            return "no record can be made within a time limit of 0"
        outcome: Any = None
        raised: BaseException | None = None
        started = anyio.current_time()
        with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
            try:
                outcome = await self.recorder.record(mutation)
            except Exception as error:
                raised = error
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called or (limit is not None and anyio.current_time() - started > limit):
            return f"record timed out after {limit} s"
        if raised is not None:
            return f"record raised {raised!r}"
        if isinstance(outcome, RecordOk):
            return None
        if isinstance(outcome, RecordError):
            return outcome.reason
        return f"record answered {outcome!r}"

    # -- one call -----------------------------------------------------------------

    def mutation(self, call: Any, kind: Any) -> DispatchMutation:
        return DispatchMutation(call.id, call.name, kind)

    async def ask_approval(self, call: Any, reason: str) -> bool:
        if self.approver is None:
            return False
        return bool(await _maybe_await(self.approver(call, reason)))

    async def run_tool(self, invocation: ToolInvocation) -> str:
        try:
            return str(await self.tools.run(invocation))
        except Exception as error:
            return f"[tool failed] {error!r}"

    def tool_message(self, call: Any, content: str) -> Message:
        return Message("tool", content, call.id)

    async def execute(self, call: Any) -> list[Message]:
        decision = await _maybe_await(self.policy.before_dispatch(call))
        args = call.args
        context: tuple[str, ...] = ()
        if isinstance(decision, Deny):
            return [self.tool_message(call, DENIED + decision.reason)]
        if isinstance(decision, RequireApproval):
            if not await self.ask_approval(call, decision.reason):
                return [
                    self.tool_message(
                        call, DENIED + "approval required and not given: " + decision.reason
                    )
                ]
        elif isinstance(decision, RewriteArgs):
            if self.recorder is not None:
                failed = await self.record(
                    self.mutation(call, InputRewrite(call.args, decision.new_args))
                )
                if failed is not None:
                    return [
                        self.tool_message(
                            call, DENIED + "the argument rewrite could not be recorded: " + failed
                        )
                    ]
                args = decision.new_args
        elif isinstance(decision, InjectContext):
            if self.recorder is not None:
                failed = await self.record(self.mutation(call, ContextInjection(decision.context)))
                if failed is not None:
                    return [
                        self.tool_message(
                            call, DENIED + "the context injection could not be recorded: " + failed
                        )
                    ]
                context = (decision.context,)
        elif not isinstance(decision, Allow):
            return [self.tool_message(call, DENIED + f"unknown policy decision {decision!r}")]

        result = await self.run_tool(ToolInvocation(call.id, call.name, args, context))
        released = result
        redacted = await _maybe_await(self.policy.after_dispatch(call, result))
        if redacted is not None and self.recorder is not None:
            failed = await self.record(self.mutation(call, ResultRedaction(result, redacted)))
            released = redacted if failed is None else WITHHELD
        messages: list[Message] = []
        if context:
            messages.append(Message("context", context[0], call.id))
        messages.append(self.tool_message(call, released))
        return messages


# ------------------------------------------------------------------------ journal

DOMAIN = b"seamspec/dispatch-recorder/journal-entry/v2\x00"
FIELDS = {"mutation", "prev", "seq", "sig", "v"}
_HEX128 = re.compile("[0-9a-f]{128}")


def canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def raw_public_key(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def genesis_hash(public_key: Ed25519PublicKey) -> str:
    return hashlib.sha256(DOMAIN + b"genesis" + raw_public_key(public_key)).hexdigest()


def mutation_json(mutation: DispatchMutation) -> dict[str, Any]:
    kind = mutation.kind
    body: dict[str, Any] = {"tool_call_id": mutation.tool_call_id, "tool_name": mutation.tool_name}
    if isinstance(kind, InputRewrite):
        body.update(kind="input_rewrite", original_args=kind.original_args, new_args=kind.new_args)
    elif isinstance(kind, ContextInjection):
        body.update(kind="context_injection", context=kind.context)
    elif isinstance(kind, ResultRedaction):
        body.update(
            kind="result_redaction",
            original_result=kind.original_result,
            redacted_result=kind.redacted_result,
        )
    else:
        raise TypeError(f"unknown mutation kind {kind!r}")
    return body


@dataclass
class Entry:
    seq: int
    mutation: dict[str, Any]


@dataclass
class Verdict:
    ok: bool = True
    bad_index: int | None = None
    reason: str | None = None
    torn_tail: bool = False
    entries: list[Entry] = field(default_factory=list)
    valid_bytes: int = 0
    head: str = ""


def may_be_entry(segment: bytes) -> bool:
    for candidate in (segment, segment[:-1]):
        try:
            if isinstance(json.loads(candidate), dict):
                return True
        except Exception:
            pass
    return False


def split_journal(data: bytes) -> tuple[list[bytes], bytes]:
    *lines, tail = data.split(b"\n")
    return lines, tail


def scan(
    data: bytes,
    public_key: Any,
    expected_entries: int | None = None,
    splitter: Callable[[bytes], tuple[list[bytes], bytes]] = split_journal,
) -> Verdict:
    verdict = Verdict()
    prev = genesis_hash(public_key)
    verdict.head = prev
    lines, tail = splitter(data)
    offset = 0

    def bad(index: int, reason: str, torn: bool = False) -> Verdict:
        verdict.ok = False
        verdict.bad_index = index
        verdict.reason = f"entry {index}: {reason}"
        verdict.torn_tail = torn
        return verdict

    for seq, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except Exception:
            return bad(seq, "is not JSON")
        if not isinstance(entry, dict):
            return bad(seq, "is not a JSON object")
        if set(entry) != FIELDS:
            return bad(seq, "does not have exactly the five fields")
        try:
            if canonical(entry) != line:
                return bad(seq, "is not in canonical form")
        except Exception:
            return bad(seq, "cannot be written canonically")
        if type(entry["seq"]) is not int or entry["seq"] != seq:
            return bad(seq, "has the wrong sequence number")
        if type(entry["v"]) is not int or entry["v"] != 2:
            return bad(seq, "has the wrong version")
        if not isinstance(entry["mutation"], dict):
            return bad(seq, "has a mutation that is not an object")
        sig = entry["sig"]
        if not isinstance(sig, str) or not _HEX128.fullmatch(sig):
            return bad(seq, "has a malformed signature")
        if not isinstance(entry["prev"], str) or entry["prev"] != prev:
            return bad(seq, "does not chain (or: signed by another key)")
        body = {k: entry[k] for k in ("mutation", "prev", "seq", "v")}
        signed = DOMAIN + canonical(body)
        try:
            public_key.verify(bytes.fromhex(sig), signed)
        except (InvalidSignature, ValueError):
            return bad(seq, "has a signature that does not verify with this public key")
        prev = hashlib.sha256(signed).hexdigest()
        verdict.entries.append(Entry(seq, entry["mutation"]))
        offset += len(line) + 1
        verdict.valid_bytes = offset
        verdict.head = prev
    count = len(lines)
    if tail:
        if may_be_entry(tail):
            return bad(count, "may be a whole entry that lost its newline")
        return bad(count, "a torn tail (an interrupted append)", torn=True)
    if expected_entries is not None and count != expected_entries:
        return bad(
            min(count, expected_entries),
            f"the journal holds {count} entries, {expected_entries} expected",
        )
    return verdict


class JournalRefused(Exception):
    """The journal file is damaged: it is refused and left as it is."""


class Journal:
    """A signed, hash-chained, fsync'd journal recorder."""

    def __init__(self, path: Path, signer: Any, fsync: Callable[[int], Any]) -> None:
        self.path = Path(path)
        self.signer = signer
        self.fsync = fsync
        self.fd: int | None = None
        self.broken = False
        data = self.read_existing()
        verdict = scan(data, signer.public_key)
        if not verdict.ok and not verdict.torn_tail:
            raise JournalRefused(f"{self.path}: {verdict.reason}")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if verdict.torn_tail:
                os.ftruncate(fd, verdict.valid_bytes)
                self.fsync(fd)
            os.lseek(fd, 0, os.SEEK_END)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        self.seq = len(verdict.entries)
        self.prev = verdict.head

    def read_existing(self) -> bytes:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return b""

    def encode_line(self, entry: dict[str, Any]) -> bytes:
        return canonical(entry) + b"\n"

    async def record(self, mutation: DispatchMutation) -> RecordOk | RecordError:
        if self.fd is None:
            return RecordError("the journal is closed")
        if self.broken:
            return RecordError("the journal is unusable after a failed write; reopen it")
        body = {"mutation": mutation_json(mutation), "prev": self.prev, "seq": self.seq, "v": 2}
        signed = DOMAIN + canonical(body)
        try:
            signature = self.signer.sign(signed)
        except Exception as error:
            return RecordError(f"the signer failed: {error!r}")
        line = self.encode_line({**body, "sig": bytes(signature).hex()})
        try:
            view = memoryview(line)
            while view:
                written = os.write(self.fd, view)
                view = view[written:]
            self.fsync(self.fd)
        except Exception as error:
            self.broken = True
            return RecordError(f"the journal entry could not be made durable: {error!r}")
        self.seq += 1
        self.prev = hashlib.sha256(signed).hexdigest()
        return RecordOk()

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            try:  # noqa: SIM105
                os.close(fd)
            except OSError:
                pass


# ------------------------------------------------------------------ the harness


class Harness:
    features: tuple[str, ...] = ("record-time-limit", "signed-journal")
    turn_class = Turn
    journal_class = Journal

    async def run_turn(
        self,
        *,
        prompt: str,
        provider: Any,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        record_time_limit: float | None,
        commit_time_limit: float | None,
    ) -> list[Message]:
        turn = self.turn_class(
            prompt=prompt,
            provider=provider,
            tools=tools,
            policy=policy,
            recorder=recorder,
            approver=approver,
            record_time_limit=record_time_limit,
            commit_time_limit=commit_time_limit,
        )
        return await turn.run()

    def open_journal(
        self, path: Any, signer: Any, *, fsync: Callable[[int], Any] = os.fsync
    ) -> Journal:
        return self.journal_class(Path(path), signer, fsync)

    def read_for_verify(self, path: Any) -> bytes:
        return Path(path).read_bytes()

    def verify_journal(
        self, path: Any, public_key: Any, *, expected_entries: int | None = None
    ) -> Verdict:
        return scan(self.read_for_verify(path), public_key, expected_entries)


def make_adapter(
    impl: Harness | None = None, *, name: str = "b13dr-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[DispatchRecorderDriver(impl if impl is not None else Harness())],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(name="b13dr-base-trio", backend="trio")


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter on ``backend`` (added on import; the original has
    ``adapter`` and ``adapter_trio``): the control its variants are measured against."""
    return make_adapter(name="outsider-b13dr-base", backend=backend)
