"""An outsider's dispatch recorder: its own turn loop, executor and signed journal (batch 10).

Written from docs/contracts/dispatch-recorder.md and the driver protocol only (plus the
public model types of ``seamspec.reference``). Kept as written (the original
``b10dr_base.py`` had sha256
ef6898737bd374eab98597b07d819a21cf20ded43a090045799df65be6dcf1a9); only imports, typing,
the layout (ruff format) and the adapter factories at the end (``make_adapter`` keeps its
backend argument, ``build`` replaces the module-level ``adapter``/``adapter_trio``, which
are now functions) were touched. It declares ``signed-journal`` and ``record-time-limit``
and conformed under both profiles and on trio on its first run (main 2439341: 166
passed), and it is the control the batch's variants (``batch10.py``) are judged against.
The executor and journal are split into small hook methods so that each variant changes
one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import inspect
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
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
    ToolInvocation,
)

DENIED = "[tool call denied] "
WITHHELD = "[result withheld: its redaction could not be recorded]"
DOMAIN = b"seamspec/dispatch-recorder/journal-entry/v2\x00"
FIELDS = {"mutation", "prev", "seq", "sig", "v"}
SIG_RE = re.compile("[0-9a-f]{128}")


class CommitFailed(Exception):
    """The turn stopped on a commit that failed."""


# ----------------------------------------------------------------------------- executor


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


@dataclass
class _Attempt:
    ok: bool
    reason: str = ""


class Executor:
    """Runs one turn: policy, records, tools, releases, commits."""

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
        for name, limit in (("record", record_time_limit), ("commit", commit_time_limit)):
            if limit is not None and not limit > 0:
                raise ValueError(f"{name}_time_limit must be positive or None")
        self.provider = provider
        self.tools = tools
        self.policy = policy
        self.recorder = recorder
        self.approver = approver
        self.record_time_limit = record_time_limit
        self.commit_time_limit = commit_time_limit

    # -- the recorder, bounded -------------------------------------------------------

    async def _bounded(self, limit: float | None, make: Any) -> tuple[str, Any]:
        """Run ``make()`` under ``limit``: ('ok', value), ('raised', exc) or ('timeout', None).

        A pending cancellation of the caller is looked for before the answer or the
        limit is acted on."""
        expired = False
        result: tuple[str, Any] = ("timeout", None)
        with anyio.move_on_after(limit if limit is not None else float("inf")) as scope:
            try:
                value = await make()
            except Exception as error:  # cancellation is a BaseException: it passes
                result = ("raised", error)
            else:
                result = ("ok", value)
        expired = scope.cancel_called
        await anyio.lowlevel.checkpoint_if_cancelled()
        if expired:
            return ("timeout", None)
        return result

    async def record(self, mutation: DispatchMutation) -> _Attempt:
        kind, value = await self._bounded(
            self.record_time_limit, lambda: self.recorder.record(mutation)
        )
        if kind == "timeout":
            return _Attempt(False, f"the record timed out after {self.record_time_limit} s")
        if kind == "raised":
            return _Attempt(False, f"record raised {value!r}")
        if isinstance(value, RecordOk):
            return _Attempt(True)
        if isinstance(value, RecordError):
            return _Attempt(False, value.reason)
        return _Attempt(False, f"record answered {value!r}")

    async def commit(self, index: int, messages: tuple[Message, ...]) -> None:
        method = getattr(self.recorder, "commit_accepted_step", None)
        if method is None:
            return
        kind, value = await self._bounded(self.commit_time_limit, lambda: method(messages))
        prefix = f"step {index} could not be committed, so the turn stopped: "
        if kind == "timeout":
            raise CommitFailed(prefix + f"the commit timed out after {self.commit_time_limit} s")
        if kind == "raised":
            raise CommitFailed(prefix + f"commit_accepted_step raised {value!r}")
        if isinstance(value, RecordOk):
            return
        if isinstance(value, RecordError):
            raise CommitFailed(prefix + value.reason)
        raise CommitFailed(prefix + f"commit_accepted_step answered {value!r}")

    # -- texts and messages ----------------------------------------------------------------

    def approval_denial(self, reason: str) -> str:
        return DENIED + "approval required and not given: " + reason

    def unrecorded_denial(self, what: str, payload: str, attempt: _Attempt) -> str:
        return DENIED + what + " could not be recorded: " + attempt.reason

    def redaction_mutation(
        self, call: Any, result: str, redacted: str, failure: Exception | None
    ) -> DispatchMutation:
        return DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))

    def response_messages(self, step: Any, calls: tuple[Any, ...]) -> list[Message]:
        return [Message("assistant", step.text, None, calls)]

    # -- one call ------------------------------------------------------------------------

    async def run_call(self, call: Any) -> list[Message]:
        """The messages this call adds to its step: an optional context, then its result."""
        decision = await self.policy.before_dispatch(call)
        args = call.args
        contexts: tuple[str, ...] = ()
        out: list[Message] = []
        if isinstance(decision, Deny):
            return [Message("tool", DENIED + decision.reason, call.id)]
        if isinstance(decision, RequireApproval):
            approved = False
            if self.approver is not None:
                approved = bool(await _maybe_await(self.approver(call, decision.reason)))
            if not approved:
                return [Message("tool", self.approval_denial(decision.reason), call.id)]
        elif isinstance(decision, RewriteArgs) and self.recorder is not None:
            mutation = DispatchMutation(
                call.id, call.name, InputRewrite(call.args, decision.new_args)
            )
            attempt = await self.record(mutation)
            if not attempt.ok:
                text = self.unrecorded_denial("the argument rewrite", decision.new_args, attempt)
                return [Message("tool", text, call.id)]
            args = decision.new_args
        elif isinstance(decision, InjectContext) and self.recorder is not None:
            mutation = DispatchMutation(call.id, call.name, ContextInjection(decision.context))
            attempt = await self.record(mutation)
            if not attempt.ok:
                text = self.unrecorded_denial("the context injection", decision.context, attempt)
                return [Message("tool", text, call.id)]
            contexts = (decision.context,)
            out.append(Message("context", decision.context, call.id))
        failure: Exception | None = None
        try:
            result = await self.tools.run(ToolInvocation(call.id, call.name, args, contexts))
        except Exception as error:
            failure = error
            result = f"[tool failed] {error!r}"
        redacted = await self.policy.after_dispatch(call, result)
        released = result
        if redacted is not None and self.recorder is not None:
            mutation = self.redaction_mutation(call, result, redacted, failure)
            attempt = await self.record(mutation)
            released = redacted if attempt.ok else WITHHELD
        out.append(Message("tool", released, call.id))
        return out

    # -- the turn --------------------------------------------------------------------------

    async def run_turn(self, prompt: str) -> list[Message]:
        transcript: list[Message] = [Message("user", prompt)]
        index = 0
        while True:
            step = await self.provider.next_step(tuple(transcript))
            calls = tuple(step.tool_calls)
            step_messages = self.response_messages(step, calls)
            for call in calls:
                step_messages.extend(await self.run_call(call))
            if self.recorder is not None and step_messages:
                await self.commit(index, tuple(step_messages))
            transcript.extend(step_messages)
            if not calls:
                return transcript
            index += 1


# ------------------------------------------------------------------------------ journal


def canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def raw_public_key(public_key: Any) -> bytes:
    raw: bytes = public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return raw


def genesis(public_key: Any) -> str:
    return hashlib.sha256(DOMAIN + b"genesis" + raw_public_key(public_key)).hexdigest()


def mutation_dict(mutation: DispatchMutation) -> dict[str, Any]:
    return {
        "tool_call_id": mutation.tool_call_id,
        "tool_name": mutation.tool_name,
        **dataclasses.asdict(mutation.kind),
    }


@dataclass
class Entry:
    mutation: dict[str, Any]


@dataclass
class Verdict:
    ok: bool
    bad_index: int | None = None
    reason: str | None = None
    torn_tail: bool = False
    entries: list[Entry] = field(default_factory=list)
    #: bytes of the file that are whole entries, all verified
    valid_bytes: int = 0
    head: str = ""


def _may_be_entry(segment: bytes) -> bool:
    for candidate in (segment, segment[:-1]):
        try:
            if isinstance(json.loads(candidate), dict):
                return True
        except ValueError:
            pass
    return False


def _check_entry(raw: bytes, seq: int, prev: str, public_key: Any) -> tuple[str | None, str]:
    """(reason or None, the entry's chain hash)."""
    try:
        entry = json.loads(raw)
    except ValueError:
        return "is not JSON", prev
    if not isinstance(entry, dict) or set(entry) != FIELDS:
        return "does not have exactly the five fields", prev
    try:
        if canonical(entry) != raw:
            return "is not in canonical form", prev
    except ValueError:
        return "is not canonical JSON", prev
    if type(entry["seq"]) is not int or entry["seq"] != seq:
        return f"has sequence number {entry['seq']!r}, expected {seq}", prev
    if type(entry["v"]) is not int or entry["v"] != 2:
        return "has a version that is not 2", prev
    if not isinstance(entry["mutation"], dict):
        return "has a mutation that is not an object", prev
    if not isinstance(entry["sig"], str) or not SIG_RE.fullmatch(entry["sig"]):
        return "has a signature that is not 128 lower-case hex digits", prev
    if entry["prev"] != prev:
        return "does not chain (or is signed by another key)", prev
    body = {k: entry[k] for k in ("mutation", "prev", "seq", "v")}
    signed = DOMAIN + canonical(body)
    try:
        public_key.verify(bytes.fromhex(entry["sig"]), signed)
    except Exception:
        return "has a signature that does not verify with this public key", prev
    return None, hashlib.sha256(signed).hexdigest()


def scan(
    data: bytes, public_key: Any, expected_entries: int | None = None, start: str | None = None
) -> Verdict:
    """Read a journal; ``start`` is the hash entry 0 must chain to (the key's genesis)."""
    *lines, tail = data.split(b"\n")
    prev = genesis(public_key) if start is None else start
    entries: list[Entry] = []
    offset = 0
    for seq, line in enumerate(lines):
        reason, prev_next = _check_entry(line, seq, prev, public_key)
        if reason is not None:
            return Verdict(False, seq, f"entry {seq} {reason}", False, entries, offset, prev)
        entries.append(Entry(json.loads(line)["mutation"]))
        prev = prev_next
        offset += len(line) + 1
    if tail:
        if _may_be_entry(tail):
            return Verdict(
                False, len(lines), f"entry {len(lines)} may be a whole entry that lost its newline",
                False, entries, offset, prev,
            )  # fmt: skip
        return Verdict(
            False, len(lines), f"entry {len(lines)}: a torn tail", True, entries, offset, prev
        )
    if expected_entries is not None and len(lines) != expected_entries:
        return Verdict(
            False, min(len(lines), expected_entries),
            f"holds {len(lines)} entries, expected {expected_entries}",
            False, entries, offset, prev,
        )  # fmt: skip
    return Verdict(True, None, None, False, entries, offset, prev)


def verify_journal(path: Any, public_key: Any, *, expected_entries: int | None = None) -> Verdict:
    data = Path(path).read_bytes()
    return scan(data, public_key, expected_entries)


class JournalCorrupt(Exception):
    pass


class Journal:
    """A signed, hash-chained, fsync'd journal recorder."""

    def __init__(self, path: Any, signer: Any, *, fsync: Any = os.fsync) -> None:
        self.path = Path(path)
        self.signer = signer
        self.fsync = fsync
        self.broken: str | None = None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        try:
            data = self._read_existing(fd)
            verdict = scan(data, signer.public_key)
            if not verdict.ok and not verdict.torn_tail:
                raise JournalCorrupt(f"{self.path}: {verdict.reason}")
            if verdict.torn_tail:
                os.ftruncate(fd, verdict.valid_bytes)
                self.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        self.fd: int | None = fd
        self.seq = len(verdict.entries)
        self.prev = verdict.head
        self.offset = verdict.valid_bytes

    @staticmethod
    def _read_existing(fd: int) -> bytes:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def _entry(self, mutation: DispatchMutation) -> tuple[bytes, str]:
        body = {"mutation": mutation_dict(mutation), "prev": self.prev, "seq": self.seq, "v": 2}
        signed = DOMAIN + canonical(body)
        sig = self.signer.sign(signed)
        line = canonical({**body, "sig": bytes(sig).hex()}) + b"\n"
        return line, hashlib.sha256(signed).hexdigest()

    async def record(self, mutation: DispatchMutation) -> Any:
        if self.fd is None:
            return RecordError("the journal is closed")
        if self.broken is not None:
            return RecordError(f"the journal refuses records until reopened: {self.broken}")
        try:
            line, head = self._entry(mutation)
        except Exception as error:
            return RecordError(f"signing failed: {error!r}")
        try:
            view = memoryview(line)
            while view:
                written = os.pwrite(self.fd, view, self.offset + len(line) - len(view))
                view = view[written:]
            self.fsync(self.fd)
        except Exception as error:
            self.broken = repr(error)
            return RecordError(f"the journal write failed: {error!r}")
        self.offset += len(line)
        self.seq += 1
        self.prev = head
        return RecordOk()

    def close(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            with contextlib.suppress(OSError):
                os.close(fd)


# ------------------------------------------------------------------------------ adapter


class Implementation:
    features: tuple[str, ...] = ("signed-journal", "record-time-limit")
    executor_class: type[Executor] = Executor
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
            provider=provider, tools=tools, policy=policy, recorder=recorder,
            approver=approver, record_time_limit=record_time_limit,
            commit_time_limit=commit_time_limit,
        )  # fmt: skip
        return await executor.run_turn(prompt)

    def open_journal(self, path: Any, signer: Any, *, fsync: Any = os.fsync) -> Journal:
        return self.journal_class(path, signer, fsync=fsync)

    def verify_journal(
        self, path: Any, public_key: Any, *, expected_entries: int | None = None
    ) -> Verdict:
        return verify_journal(path, public_key, expected_entries=expected_entries)


def make_adapter(
    implementation: Any, name: str = "b10dr-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[DispatchRecorderDriver(implementation)],
        backend=backend,
        concurrent=True,
    )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter (the original had module-level ``adapter`` and
    ``adapter_trio``): the control its variants are measured against."""
    return make_adapter(Implementation(), "b10dr-base", backend=backend)


def adapter() -> PythonAdapter:
    return build("asyncio")


def adapter_trio() -> PythonAdapter:
    return build("trio")
