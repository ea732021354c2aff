"""An outsider's dispatch recorder: tool executor, turn loop and signed journal (batch 4).

Written from docs/contracts/dispatch-recorder.md and the driver's protocol (plus the public
model types of ``seamspec.reference``, found by introspection), without reading the
reference, the scenarios or the mutants. Kept as written (the original ``b4dr4_base.py``
had sha256 61395c97d611766349ed0996475857547afb7752c5f9b03f944bc72cfd401962); only
imports, typing and the adapter factories at the end (``make_adapter``, ``build``) were
touched. It conforms to every DR scenario under the strict profile, and it is the control
the batch's variants (``batch4.py``) are judged against.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from seamspec.conformance._contracts.dispatch_recorder.driver import DispatchRecorderDriver
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
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


class TurnCommitError(Exception):
    """A step's commit did not return OK: the turn stopped there."""

    def __init__(self, step: int, reason: str) -> None:
        super().__init__(f"step {step} could not be committed, so the turn stopped: {reason}")
        self.step = step
        self.reason = reason


# --------------------------------------------------------------------------------------
# the executor and turn loop
# --------------------------------------------------------------------------------------


class Executor:
    """Runs one turn: provider steps, policy decisions, records, tools, commits."""

    def __init__(
        self,
        *,
        provider: Any,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        record_time_limit: float | None,
        commit_time_limit: float | None,
    ) -> None:
        self.provider = provider
        self.tools = tools
        self.policy = policy
        self.recorder = recorder
        self.approver = approver
        self.record_time_limit = record_time_limit
        self.commit_time_limit = commit_time_limit

    # -- recorder calls ---------------------------------------------------------------

    def _failure_reason(self, error: BaseException) -> str:
        return f"{type(error).__name__}: {error}"

    async def _call_recorder(self, record: Any, limit: float | None) -> tuple[bool, str]:
        """Await ``record()`` under its own limit; (ok, reason). Cancellation propagates,
        and wins over whatever the recorder answered or the limit did."""
        ok, reason = False, ""
        deadline = float("inf") if limit is None else anyio.current_time() + limit
        with anyio.CancelScope(deadline=deadline) as scope:
            try:
                outcome = await record()
            except Exception as error:  # cancellation is a BaseException: it passes
                outcome = None
                reason = self._failure_reason(error)
            else:
                if isinstance(outcome, RecordOk):
                    ok = True
                elif isinstance(outcome, RecordError):
                    reason = outcome.reason
                else:
                    reason = f"the recorder answered {outcome!r}"
        # A cancellation of the turn wins over the answer and over our own limit.
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:  # the limit expired, whether or not the recorder noticed
            return False, f"timed out after {limit} s"
        return ok, reason

    async def record(self, mutation: DispatchMutation) -> tuple[bool, str]:
        recorder = self.recorder
        return await self._call_recorder(lambda: recorder.record(mutation), self.record_time_limit)

    async def commit(self, step: int, messages: list[Message]) -> None:
        recorder = self.recorder
        if recorder is None:
            return
        commit = getattr(recorder, "commit_accepted_step", None)
        if commit is None:  # duck-typed recorder without a barrier: default OK
            return
        ok, reason = await self._call_recorder(lambda: commit(messages), self.commit_time_limit)
        if not ok:
            raise TurnCommitError(step, reason)

    # -- one call ---------------------------------------------------------------------

    async def run_tool(
        self, call: ToolCall, args: str, context: tuple[str, ...]
    ) -> tuple[str, bool]:
        """The tool's result, and whether it raised (then the result is the failure text)."""
        try:
            result = await self.tools.run(
                ToolInvocation(call_id=call.id, name=call.name, args=args, context=context)
            )
        except Exception as error:
            return f"[tool failed] {error!r}", True
        return str(result), False

    async def release(self, call: ToolCall, result: str, tool_raised: bool) -> str:
        """What the model sees of a result once the post-dispatch policy has spoken."""
        redacted = await self.policy.after_dispatch(call, result)
        if redacted is None or self.recorder is None:
            return result  # nothing to redact, or no recorder: the redaction is dropped
        mutation = DispatchMutation(
            tool_call_id=call.id,
            tool_name=call.name,
            kind=ResultRedaction(original_result=result, redacted_result=redacted),
        )
        ok, _reason = await self.record(mutation)
        if ok:
            return str(redacted)
        return self.withheld(result, tool_raised)

    def withheld(self, result: str, tool_raised: bool) -> str:
        return WITHHELD

    async def approve(self, call: ToolCall, reason: str) -> bool:
        if self.approver is None:
            return False
        answer = self.approver(call, reason)
        if hasattr(answer, "__await__"):
            answer = await answer
        return answer is True

    async def dispatch(self, call: ToolCall) -> list[Message]:
        """One call: its messages for the transcript (a context, then the result)."""
        decision = await self.policy.before_dispatch(call)
        args = call.args
        context: tuple[str, ...] = ()
        if isinstance(decision, Deny):
            return [self.tool_message(call, DENIED_PREFIX + decision.reason)]
        if isinstance(decision, RequireApproval):
            if self.approver is None:
                return [
                    self.tool_message(
                        call, DENIED_PREFIX + f"no approver to approve it: {decision.reason}"
                    )
                ]
            if not await self.approve(call, decision.reason):
                return [self.tool_message(call, DENIED_PREFIX + f"not approved: {decision.reason}")]
        elif isinstance(decision, RewriteArgs) and self.recorder is not None:
            mutation = DispatchMutation(
                tool_call_id=call.id,
                tool_name=call.name,
                kind=InputRewrite(original_args=call.args, new_args=decision.new_args),
            )
            ok, reason = await self.record(mutation)
            if not ok:
                return [
                    self.tool_message(
                        call,
                        DENIED_PREFIX + f"the argument rewrite could not be recorded: {reason}",
                    )
                ]
            args = self.effective_args(call, decision.new_args)
        elif isinstance(decision, InjectContext) and self.recorder is not None:
            mutation = DispatchMutation(
                tool_call_id=call.id,
                tool_name=call.name,
                kind=ContextInjection(context=decision.context),
            )
            ok, reason = await self.record(mutation)
            if not ok:
                return [
                    self.tool_message(
                        call,
                        DENIED_PREFIX + f"the context injection could not be recorded: {reason}",
                    )
                ]
            context = (decision.context,)
        # Allow, an approved call, or a mutation dropped for want of a recorder: as proposed.
        result, tool_raised = await self.run_tool(call, args, context)
        released = await self.release(call, result, tool_raised)
        messages = [Message(role="context", content=c, tool_call_id=call.id) for c in context]
        messages.append(self.tool_message(call, released))
        return messages

    def effective_args(self, call: ToolCall, new_args: str) -> str:
        """The arguments a recorded rewrite runs with: ``new_args``, verbatim."""
        return new_args

    @staticmethod
    def tool_message(call: ToolCall, content: str) -> Message:
        return Message(role="tool", content=content, tool_call_id=call.id)

    # -- the turn ---------------------------------------------------------------------

    def new_step_list(self) -> list[Message]:
        return []

    async def run(self, prompt: str) -> list[Message]:
        transcript: list[Message] = [Message(role="user", content=prompt)]
        step = 0
        while True:
            response = await self.provider.next_step(list(transcript))
            calls = tuple(response.tool_calls)
            step_messages = self.new_step_list()
            step_messages.append(Message(role="assistant", content=response.text, tool_calls=calls))
            for call in calls:
                step_messages.extend(await self.dispatch(call))
            transcript.extend(step_messages)
            await self.commit(step, step_messages)
            if not calls:
                return transcript
            step += 1


class Implementation:
    """The DispatchRecorderImplementation the kit's driver is given."""

    features: tuple[str, ...] = ("record-time-limit", "signed-journal")
    executor_class: type[Executor] = Executor

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
            provider=provider,
            tools=tools,
            policy=policy,
            recorder=recorder,
            approver=approver,
            record_time_limit=record_time_limit,
            commit_time_limit=commit_time_limit,
        )
        return await executor.run(prompt)

    # -- journal ----------------------------------------------------------------------

    journal_class: type[Journal]

    def open_journal(self, path: Path, signer: Any, *, fsync: Any = os.fsync) -> Journal:
        return self.journal_class.open(Path(path), signer, fsync=fsync)

    def verify_journal(
        self, path: Path, public_key: Any, *, expected_entries: int | None = None
    ) -> Scan:
        return scan(Path(path).read_bytes(), raw_public_key(public_key), expected_entries)


# --------------------------------------------------------------------------------------
# the signed journal
# --------------------------------------------------------------------------------------


def canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def raw_public_key(key: Any) -> bytes:
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    if isinstance(key, str):
        return bytes.fromhex(key)
    return bytes(key.public_bytes(Encoding.Raw, PublicFormat.Raw))


def genesis(raw_key: bytes) -> str:
    return hashlib.sha256(DOMAIN + b"genesis" + raw_key).hexdigest()


def mutation_json(mutation: DispatchMutation) -> dict[str, Any]:
    kind = mutation.kind
    out: dict[str, Any] = {
        "tool_call_id": mutation.tool_call_id,
        "tool_name": mutation.tool_name,
    }
    if isinstance(kind, InputRewrite):
        out.update(kind="input_rewrite", original_args=kind.original_args, new_args=kind.new_args)
    elif isinstance(kind, ContextInjection):
        out.update(kind="context_injection", context=kind.context)
    elif isinstance(kind, ResultRedaction):
        out.update(
            kind="result_redaction",
            original_result=kind.original_result,
            redacted_result=kind.redacted_result,
        )
    else:
        raise TypeError(f"unknown mutation kind {kind!r}")
    return out


@dataclass
class ScanEntry:
    seq: int
    mutation: dict[str, Any]
    hash: str  # sha256 of the signed bytes: what the next entry's prev names
    end: int  # offset just past this entry's newline


@dataclass
class Scan:
    entries: list[ScanEntry] = field(default_factory=list)
    bad_index: int | None = None
    reason: str | None = None
    torn_tail: bool = False
    valid_bytes: int = 0

    @property
    def ok(self) -> bool:
        return self.bad_index is None and not self.torn_tail

    @property
    def head(self) -> str | None:
        return self.entries[-1].hash if self.entries else None


_HEX128 = re.compile(r"[0-9a-f]{128}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _maybe_whole_entry(segment: bytes) -> bool:
    """A final segment without a newline that may be a whole entry (its newline lost or
    replaced): it, or it without its last byte, parses as a JSON object."""
    for candidate in (segment, segment[:-1]):
        if not candidate:
            continue
        try:
            value = json.loads(candidate.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(value, dict):
            return True
    return False


def check_anchor(found: Scan, expected_entries: int | None) -> Scan:
    if expected_entries is None or not found.ok:
        return found
    count = len(found.entries)
    if count < expected_entries:
        found.bad_index = count
        found.reason = f"the journal holds {count} entries, expected {expected_entries}"
    elif count > expected_entries:
        found.bad_index = expected_entries
        found.reason = f"the journal holds {count} entries, expected {expected_entries}"
    return found


def scan(data: bytes, raw_key: bytes, expected_entries: int | None = None) -> Scan:
    """Read a journal as the contract page's checker does."""
    key = Ed25519PublicKey.from_public_bytes(raw_key)
    prev = genesis(raw_key)
    found = Scan()
    *lines, tail = data.split(b"\n")
    offset = 0
    for seq, line in enumerate(lines):
        problem = _check_line(line, seq, prev, key)
        if isinstance(problem, str):
            found.bad_index, found.reason = seq, problem
            found.valid_bytes = offset
            return found
        mutation, digest = problem
        offset += len(line) + 1
        found.entries.append(ScanEntry(seq=seq, mutation=mutation, hash=digest, end=offset))
        prev = digest
    found.valid_bytes = offset
    if tail:
        index = len(lines)
        if _maybe_whole_entry(tail):
            found.bad_index = index
            found.reason = f"entry {index} has lost its final newline (it may be a whole entry)"
        else:
            found.bad_index = index
            found.torn_tail = True
            found.reason = f"entry {index} is a torn tail (an interrupted append)"
        return found
    return check_anchor(found, expected_entries)


def _check_line(
    line: bytes, seq: int, prev: str, key: Ed25519PublicKey
) -> str | tuple[dict[str, Any], str]:
    try:
        entry = json.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        return f"entry {seq} is not JSON: {error}"
    if not isinstance(entry, dict):
        return f"entry {seq} is not an object"
    if set(entry) != {"mutation", "prev", "seq", "sig", "v"}:
        return f"entry {seq} has fields {sorted(entry)}"
    try:
        if canonical(entry) != line:
            return f"entry {seq} is not in canonical form"
    except (ValueError, TypeError) as error:
        return f"entry {seq} cannot be written canonically: {error}"
    if type(entry["seq"]) is not int or entry["seq"] != seq:
        return f"entry {seq} has seq {entry['seq']!r}"
    if type(entry["v"]) is not int or entry["v"] != 2:
        return f"entry {seq} has version {entry['v']!r}"
    sig = entry["sig"]
    if not isinstance(sig, str) or not _HEX128.fullmatch(sig):
        return f"entry {seq} has a malformed signature"
    if not isinstance(entry["prev"], str) or not _HEX64.fullmatch(entry["prev"]):
        return f"entry {seq} has a malformed prev"
    if entry["prev"] != prev:
        if seq == 0:
            return f"entry 0 is signed by key {entry['prev'][:8]}..., expected {prev[:8]}..."
        return f"entry {seq} does not chain to entry {seq - 1}"
    body = {k: entry[k] for k in ("mutation", "prev", "seq", "v")}
    signed = DOMAIN + canonical(body)
    try:
        key.verify(bytes.fromhex(sig), signed)
    except InvalidSignature:
        return f"entry {seq} has a signature that does not verify with this public key"
    mutation = entry["mutation"]
    return (mutation if isinstance(mutation, dict) else {"value": mutation}), hashlib.sha256(
        signed
    ).hexdigest()


class JournalCorrupt(Exception):
    pass


class Journal:
    """A recorder writing the signed, hash-chained, fsync'd journal."""

    def __init__(self, path: Path, signer: Any, fd: int, fsync: Any, scanned: Scan) -> None:
        self.path = path
        self.signer = signer
        self.fd = fd
        self.fsync = fsync
        self.raw_key = raw_public_key(signer.public_key)
        self.seq = len(scanned.entries)
        self.prev = scanned.head or genesis(self.raw_key)
        self.broken: str | None = None
        self.lock = anyio.Lock()
        self.closed = False

    @classmethod
    def open(cls, path: Path, signer: Any, *, fsync: Any = os.fsync) -> Journal:
        raw_key = raw_public_key(signer.public_key)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                raise JournalCorrupt(f"{path} is locked by another writer") from error
            data = b""
            while True:
                chunk = os.pread(fd, 1 << 20, len(data))
                if not chunk:
                    break
                data += chunk
            scanned = scan(data, raw_key)
            cls.check_existing(scanned, path)
            if scanned.torn_tail:
                os.ftruncate(fd, scanned.valid_bytes)
                fsync(fd)
            os.lseek(fd, 0, os.SEEK_END)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, signer, fd, fsync, scanned)

    @classmethod
    def check_existing(cls, scanned: Scan, path: Path) -> None:
        """Refuse a journal with any damage but a torn tail (which is cut off)."""
        if scanned.bad_index is not None and not scanned.torn_tail:
            raise JournalCorrupt(f"{path}: {scanned.reason}; refusing to append")

    def entry_bytes(self, mutation: DispatchMutation) -> tuple[bytes, str]:
        body = {"mutation": mutation_json(mutation), "prev": self.prev, "seq": self.seq, "v": 2}
        signed = DOMAIN + canonical(body)
        sig = self.signer.sign(signed)
        line = canonical({**body, "sig": bytes(sig).hex()}) + b"\n"
        return line, hashlib.sha256(signed).hexdigest()

    async def record(self, mutation: DispatchMutation) -> RecordOk | RecordError:
        async with self.lock:
            if self.closed:
                return RecordError("the journal is closed")
            if self.broken is not None:
                return RecordError(f"the journal refuses records until reopened: {self.broken}")
            try:
                line, digest = self.entry_bytes(mutation)
            except Exception as error:
                return RecordError(f"signing failed: {error!r}")
            try:
                written = 0
                while written < len(line):
                    written += os.write(self.fd, line[written:])
                self.fsync(self.fd)
            except Exception as error:
                self.broken = repr(error)
                return RecordError(f"the journal could not be written: {error!r}")
            self.seq += 1
            self.prev = digest
            return RecordOk()

    async def commit_accepted_step(self, messages: Sequence[Message]) -> RecordOk | RecordError:
        return RecordOk()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fd)  # closing releases the flock


Implementation.journal_class = Journal


def make_adapter(
    implementation: Implementation, name: str = "outsider-batch4-dr-base", backend: str = "asyncio"
) -> PythonAdapter:
    """An implementation as an adapter (the original had ``adapter()`` and ``adapter_trio()``)."""
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[DispatchRecorderDriver(implementation)],
        backend=backend,
        concurrent=True,
    )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter: the control its variants are measured against."""
    return make_adapter(Implementation(), backend=backend)
