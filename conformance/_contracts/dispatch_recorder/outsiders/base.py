"""An outsider's dispatch recorder harness: tool executor, turn loop and signed journal.

Written from docs/contracts/dispatch-recorder.md and the driver protocol only. It uses the
public model types of ``seamspec.reference`` (messages, decisions, mutations, outcomes),
as the driver's participants do, but none of the reference's behaviour.

Outsider batch 1 of the dispatch recorder (the original ``base.py`` had sha256
8e82665a0faa89901290967011eb6a3c4654df928522483e44d3bb8586e9c5ad). Kept as written except
for imports, formatting, typing, the loader at the end, and one bug the scenarios written
for this batch's survivors found in it: ``record`` and ``commit`` returned "timed out"
before looking for a cancellation, so a turn cancelled while a deaf recorder or commit ran
past its limit carried on (the original order is the mutant
``out-dr-timeout-hides-cancel``); and, when DR-JOURNAL-VERIFY was sharpened after the batch
was written (a final segment that may be a complete entry, its newline replaced or lost,
is damage rather than a torn tail), ``Verifier.scan`` was taught that (``_may_be_entry``).
Batch 6's scenarios found one more: the verifier compared the format version by value, so
an entry signed with ``"v":2.0`` verified (``journal-version-as-float-detected``); it now
checks that the version is the integer 2, and the bug as written is batch 6's
``out-dr6-verify-version-float``. Batch 9's scenarios found another:
``record`` and ``commit`` returned the failure of a recorder that *raised* without looking
for a cancellation, so a turn cancelled while a deaf redaction record ran, and which then
raised, carried on to its next call (``cancel-while-a-deaf-redaction-record-raises``);
both now look for it first, and the bug as written is the mutant
``out-dr-raise-hides-cancel``. Batch 11's scenarios found another: the verifier took a
``sig`` for hex if it was lower case and ``bytes.fromhex`` read it, and ``fromhex`` skips
whitespace, so an entry whose ``sig`` was the right digits followed by a newline verified
(``journal-newline-after-sig-detected``); it now checks for exactly 128 lower-case hex
digits, and the same bug, written another way, is batch 11's
``out-dr11-verify-sig-dollar``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

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
    ToolCall,
    ToolInvocation,
)

DENIED_PREFIX = "[tool call denied] "
WITHHELD = "[result withheld: its redaction could not be recorded]"
DOMAIN = b"seamspec/dispatch-recorder/journal-entry/v2\x00"
FORMAT_VERSION = 2


def denial(reason: str) -> str:
    return DENIED_PREFIX + reason


class TurnCommitFailed(Exception):
    """A step could not be committed: the turn stops."""

    def __init__(self, step: int, reason: str, messages: Sequence[Message]) -> None:
        super().__init__(f"step {step} could not be committed, so the turn stopped: {reason}")
        self.step = step
        self.reason = reason
        self.messages = list(messages)


# --------------------------------------------------------------------------------------
# Executor
# --------------------------------------------------------------------------------------


@dataclass
class Outcome:
    ok: bool
    reason: str = ""


class Executor:
    """Runs one tool call through the policy, recording every mutation first."""

    def __init__(
        self,
        *,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        record_time_limit: float | None,
    ) -> None:
        self.tools = tools
        self.policy = policy
        self.recorder = recorder
        self.approver = approver
        self.record_time_limit = record_time_limit

    # -- recording ---------------------------------------------------------------------

    async def _call_record(self, mutation: DispatchMutation) -> Any:
        return await self.recorder.record(mutation)

    async def record(self, mutation: DispatchMutation) -> Outcome:
        limit = self.record_time_limit
        try:
            with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
                answer = await self._call_record(mutation)
        except Exception as error:  # cancellation is a BaseException: it propagates
            # A deaf record that raised after the turn was cancelled: the cancellation
            # wins (added in batch 9's triage: see the module docstring).
            await anyio.lowlevel.checkpoint_if_cancelled()
            return Outcome(False, repr(error))
        # A turn cancelled while the record was deaf to it: apply nothing. (Moved above the
        # time-limit check when the batch was taken in: see the module docstring.)
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            # The limit expired: whatever the recorder answered afterwards does not count.
            return Outcome(False, f"the record timed out after {limit} s")
        return self._judge(answer)

    @staticmethod
    def _judge(answer: Any) -> Outcome:
        if isinstance(answer, RecordOk):
            return Outcome(True)
        if isinstance(answer, RecordError):
            return Outcome(False, str(answer.reason))
        return Outcome(False, f"the recorder answered {answer!r}, not OK")

    # -- the tool ----------------------------------------------------------------------

    async def run_tool(self, call: ToolCall, args: str, context: tuple[str, ...]) -> str:
        try:
            return str(await self.tools.run(ToolInvocation(call.id, call.name, args, context)))
        except Exception as error:
            return f"[tool failed] {error!r}"

    async def approve(self, call: ToolCall, reason: str) -> bool:
        if self.approver is None:
            return False
        try:
            return bool(await self.approver(call, reason))
        except Exception:
            return False

    # -- one call ----------------------------------------------------------------------

    async def execute(self, call: ToolCall) -> list[Message]:
        decision = await self.policy.before_dispatch(call)
        args = call.args
        context: tuple[str, ...] = ()
        if isinstance(decision, Deny):
            return [self.result(call, denial(decision.reason))]
        if isinstance(decision, RequireApproval):
            if not await self.approve(call, decision.reason):
                return [self.result(call, denial(decision.reason))]
        elif isinstance(decision, RewriteArgs):
            if self.recorder is not None:
                outcome = await self.record(
                    DispatchMutation(call.id, call.name, InputRewrite(call.args, decision.new_args))
                )
                if not outcome.ok:
                    return [
                        self.result(
                            call,
                            denial("the argument rewrite could not be recorded: " + outcome.reason),
                        )
                    ]
                args = decision.new_args
        elif isinstance(decision, InjectContext):
            if self.recorder is not None:
                outcome = await self.record(
                    DispatchMutation(call.id, call.name, ContextInjection(decision.context))
                )
                if not outcome.ok:
                    return [
                        self.result(
                            call,
                            denial(
                                "the context injection could not be recorded: " + outcome.reason
                            ),
                        )
                    ]
                context = (decision.context,)
        elif not isinstance(decision, Allow):
            return [self.result(call, denial(f"unknown policy decision {decision!r}"))]

        result = await self.run_tool(call, args, context)
        released = await self.post_dispatch(call, result)
        messages = [Message("context", c, tool_call_id=call.id) for c in context]
        messages.append(self.result(call, released))
        return messages

    async def post_dispatch(self, call: ToolCall, result: str) -> str:
        redacted = await self.policy.after_dispatch(call, result)
        if redacted is None:
            return result
        if self.recorder is None:
            return result  # upstream: no recorder, no mutation: the original is released
        outcome = await self.record(
            DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
        )
        return redacted if outcome.ok else WITHHELD

    @staticmethod
    def result(call: ToolCall, text: str) -> Message:
        return Message("tool", text, tool_call_id=call.id)


# --------------------------------------------------------------------------------------
# Turn loop
# --------------------------------------------------------------------------------------


class TurnLoop:
    executor_class = Executor

    def __init__(self, *, commit_time_limit: float | None) -> None:
        self.commit_time_limit = commit_time_limit

    async def _call_commit(self, recorder: Any, messages: list[Message]) -> Any:
        commit = getattr(recorder, "commit_accepted_step", None)
        if commit is None:
            return RecordOk()
        return await commit(messages)

    async def commit(self, recorder: Any, messages: list[Message]) -> Outcome:
        limit = self.commit_time_limit
        try:
            with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
                answer = await self._call_commit(recorder, messages)
        except Exception as error:
            await anyio.lowlevel.checkpoint_if_cancelled()  # as in Executor.record (batch 9)
            return Outcome(False, repr(error))
        await anyio.lowlevel.checkpoint_if_cancelled()  # moved above, as in Executor.record
        if scope.cancel_called:
            return Outcome(False, f"the commit timed out after {limit} s")
        return Executor._judge(answer)

    async def run(
        self,
        *,
        prompt: str,
        provider: Any,
        executor: Executor,
        recorder: Any,
    ) -> list[Message]:
        messages: list[Message] = [Message("user", prompt)]
        step = 0
        while True:
            response = await provider.next_step(list(messages))
            calls = tuple(response.tool_calls)
            step_messages: list[Message] = [Message("assistant", response.text, tool_calls=calls)]
            for call in calls:
                step_messages.extend(await executor.execute(call))
            messages.extend(step_messages)
            if recorder is not None:
                outcome = await self.commit(recorder, step_messages)
                if not outcome.ok:
                    raise TurnCommitFailed(step, outcome.reason, messages)
            if not calls:
                return messages
            step += 1


# --------------------------------------------------------------------------------------
# Signed journal
# --------------------------------------------------------------------------------------


def canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def raw_public_key(public_key: Any) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    if isinstance(public_key, (bytes, bytearray)):
        return bytes(public_key)
    return bytes(public_key.public_bytes(Encoding.Raw, PublicFormat.Raw))


def genesis(public_key: Any) -> str:
    return hashlib.sha256(DOMAIN + b"genesis" + raw_public_key(public_key)).hexdigest()


def mutation_json(mutation: DispatchMutation) -> dict[str, Any]:
    kind = mutation.kind
    data: dict[str, Any] = {
        "tool_call_id": mutation.tool_call_id,
        "tool_name": mutation.tool_name,
        "kind": kind.kind,
    }
    if isinstance(kind, InputRewrite):
        data["original_args"] = kind.original_args
        data["new_args"] = kind.new_args
    elif isinstance(kind, ContextInjection):
        data["context"] = kind.context
    elif isinstance(kind, ResultRedaction):
        data["original_result"] = kind.original_result
        data["redacted_result"] = kind.redacted_result
    return data


def signed_bytes(body: dict[str, Any]) -> bytes:
    return DOMAIN + canonical({k: body[k] for k in ("mutation", "prev", "seq", "v")})


@dataclass
class Entry:
    seq: int
    prev: str
    mutation: dict[str, Any]
    hash: str


@dataclass
class Scan:
    entries: list[Entry] = field(default_factory=list)
    bad_index: int | None = None
    reason: str | None = None
    torn_tail: bool = False
    valid_bytes: int = 0

    @property
    def ok(self) -> bool:
        return self.bad_index is None and not self.torn_tail


class JournalError(Exception):
    pass


def _may_be_entry(tail: bytes) -> bool:
    """A final segment that is (or, less its last byte, is) a JSON object: damage."""
    for candidate in (tail, tail[:-1]):
        try:
            if isinstance(json.loads(candidate), dict):
                return True
        except ValueError:
            continue
    return False


class Verifier:
    """Reads a journal back: framing, canonical form, seq, chain and signatures."""

    def signed_bytes(self, body: dict[str, Any]) -> bytes:
        return signed_bytes(body)

    def genesis(self, public_key: Any) -> str:
        return genesis(public_key)

    def scan(self, data: bytes, public_key: Any, expected_entries: int | None = None) -> Scan:
        found = Scan()
        prev = self.genesis(public_key)
        offset = 0
        index = 0
        while offset < len(data):
            end = data.find(b"\n", offset)
            if end < 0:
                found.bad_index = index
                if _may_be_entry(data[offset:]):  # added when the rule changed: see the docstring
                    found.reason = f"entry {index} may be complete but lost its line end"
                    return found
                found.torn_tail = True
                found.reason = f"torn tail: entry {index} has no line end"
                return found
            line = data[offset:end]
            problem = self.check_line(line, index, prev, public_key)
            if isinstance(problem, str):
                found.bad_index = index
                found.reason = f"entry {index}: {problem}"
                return found
            entry, prev = problem
            found.entries.append(entry)
            index += 1
            offset = end + 1
            found.valid_bytes = offset
        if expected_entries is not None and len(found.entries) != expected_entries:
            found.bad_index = min(len(found.entries), expected_entries)
            found.reason = f"expected {expected_entries} entries, found {len(found.entries)}"
        return found

    def check_line(self, line: bytes, index: int, prev: str, public_key: Any) -> Any:
        from cryptography.exceptions import InvalidSignature

        try:
            entry = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            return f"not a JSON line ({error})"
        if not isinstance(entry, dict) or set(entry) != {"mutation", "prev", "seq", "sig", "v"}:
            return "wrong fields"
        try:
            if canonical(entry) != line:
                return "not in canonical form"
        except ValueError:
            return "not in canonical form"
        if type(entry["v"]) is not int or entry["v"] != FORMAT_VERSION:  # fixed by the kit
            return f"unknown format version {entry['v']!r}"
        problem = self.check_position(entry, index, prev)
        if problem:
            return problem
        sig = entry["sig"]
        if not isinstance(sig, str) or sig != sig.lower():
            return "signature is not lower-case hex"
        if len(sig) != 128 or not set(sig) <= set("0123456789abcdef"):  # fixed by the kit
            return "signature is not 128 lower-case hex digits"
        try:
            signature = bytes.fromhex(sig)
        except ValueError:
            return "signature is not hex"
        if not isinstance(entry["mutation"], dict):
            return "mutation is not an object"
        signed = self.signed_bytes(entry)
        try:
            public_key.verify(signature, signed)
        except InvalidSignature:
            return "bad signature"
        digest = hashlib.sha256(signed).hexdigest()
        return Entry(index, prev, entry["mutation"], digest), digest

    def check_position(self, entry: dict[str, Any], index: int, prev: str) -> str | None:
        if entry["seq"] != index or isinstance(entry["seq"], bool):
            return f"seq is {entry['seq']!r}, expected {index}"
        if entry["prev"] != prev:
            return "prev does not chain to the previous entry"
        return None


class Journal:
    """An append-only file of signed, hash-chained entries; fsync'd before OK."""

    verifier_class: type[Verifier] = Verifier

    def __init__(self, path: Path, signer: Any, fsync: Callable[[int], None]) -> None:
        self.verifier = self.verifier_class()
        self.path = Path(path)
        self.signer = signer
        self.fsync = fsync
        self.lock = anyio.Lock()
        self.broken: str | None = None
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.fd)
            raise JournalError(f"{self.path} is locked by another writer") from None
        data = self.path.read_bytes()
        found = self.verifier.scan(data, signer.public_key)
        if found.bad_index is not None and not found.torn_tail:
            os.close(self.fd)
            raise JournalError(f"{self.path} does not verify: {found.reason}")
        if found.torn_tail:
            os.ftruncate(self.fd, found.valid_bytes)
        self.seq = len(found.entries)
        self.prev = (
            found.entries[-1].hash if found.entries else self.verifier.genesis(signer.public_key)
        )

    # The protocol's default commit.
    async def commit_accepted_step(self, messages: Sequence[Message]) -> Any:
        return RecordOk()

    def _entry(self, mutation: DispatchMutation) -> tuple[bytes, str]:
        body = {
            "mutation": mutation_json(mutation),
            "prev": self.prev,
            "seq": self.seq,
            "v": FORMAT_VERSION,
        }
        signed = self.verifier.signed_bytes(body)
        signature = self.signer.sign(signed)
        line = canonical({**body, "sig": bytes(signature).hex()}) + b"\n"
        return line, hashlib.sha256(signed).hexdigest()

    def _append(self, line: bytes) -> None:
        view = memoryview(line)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
        self.fsync(self.fd)

    async def record(self, mutation: DispatchMutation) -> Any:
        async with self.lock:
            if self.broken is not None:
                return RecordError(f"the journal is unusable until reopened: {self.broken}")
            try:
                line, digest = await anyio.to_thread.run_sync(self._entry, mutation)
            except Exception as error:
                return RecordError(f"signing failed: {error!r}")
            try:
                await anyio.to_thread.run_sync(self._append, line)
            except Exception as error:
                self.broken = repr(error)
                return RecordError(f"the journal could not be written: {error!r}")
            self.seq += 1
            self.prev = digest
            return RecordOk()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# --------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------


class Harness:
    """What the driver asks for: run a turn; open and verify a signed journal."""

    features: tuple[str, ...] = ("signed-journal", "record-time-limit")
    executor_class: type[Executor] = Executor
    loop_class: type[TurnLoop] = TurnLoop
    journal_class: type[Journal] = Journal

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
    ) -> Sequence[Message]:
        executor = self.executor_class(
            tools=tools,
            policy=policy,
            recorder=recorder,
            approver=approver,
            record_time_limit=record_time_limit,
        )
        loop = self.loop_class(commit_time_limit=commit_time_limit)
        return await loop.run(
            prompt=prompt, provider=provider, executor=executor, recorder=recorder
        )

    def open_journal(self, path: Any, signer: Any, fsync: Callable[[int], None] = os.fsync) -> Any:
        return self.journal_class(Path(path), signer, fsync)

    def verify_journal(
        self, path: Any, public_key: Any, expected_entries: int | None = None
    ) -> Any:
        verifier = self.journal_class.verifier_class()
        return verifier.scan(Path(path).read_bytes(), public_key, expected_entries)


def make_adapter(
    harness: Harness, name: str = "outsider-dr-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name, version="0.1", drivers=[DispatchRecorderDriver(harness)], backend=backend
    )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter: the control its variants are measured against."""
    return make_adapter(Harness(), backend=backend)
