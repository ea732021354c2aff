"""An outsider's dispatch recorder: tool executor, turn loop and signed journal (batch 3).

Written from docs/contracts/dispatch-recorder.md alone (plus the public model types of
``seamspec.reference``, which the kit's driver hands over), without reading the reference,
the scenarios or the mutants. Kept as written (the original ``base.py``, with
``base_trio.py`` as its trio loader, had sha256
c6d861d8fdaf4b538d226f04b9b64ba8b93d8df64e4fdcd83a1da70840690a7f); only imports, typing and
the loader at the end were touched. It conforms to every DR scenario under
the strict profile, and it is the control the batch's variants (``batch3.py``) are judged
against.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
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
    OK,
    Allow,
    CommitFailed,
    ContextInjection,
    Deny,
    DispatchMutation,
    InjectContext,
    InputRewrite,
    Message,
    RecorderBase,
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


def denied(reason: str) -> str:
    return DENIED_PREFIX + reason


# --------------------------------------------------------------------------- executor


class Executor:
    """Runs one proposed call through policy, recorder and tool."""

    def __init__(
        self, tools: Any, policy: Any, recorder: Any, approver: Any, record_time_limit: float | None
    ) -> None:
        self.tools = tools
        self.policy = policy
        self.recorder = recorder
        self.approver = approver
        self.record_time_limit = record_time_limit

    # -- recording ---------------------------------------------------------------

    def _limit_scope(self) -> anyio.CancelScope:
        if self.record_time_limit is None:
            return anyio.CancelScope()
        return anyio.move_on_after(self.record_time_limit)

    async def _record(self, mutation: DispatchMutation) -> str | None:
        """None when recorded OK, else the reason it was not."""
        outcome: Any = None
        raised: BaseException | None = None
        with self._limit_scope() as scope:
            try:
                outcome = await self.recorder.record(mutation)
            except Exception as error:  # cancellation is a BaseException: passes
                raised = error
        # A cancellation of the turn wins over anything the recorder answered.
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            return f"timed out after {self.record_time_limit} s"
        if raised is not None:
            return repr(raised)
        if isinstance(outcome, RecordOk):
            return None
        if isinstance(outcome, RecordError):
            return str(outcome.reason)
        return f"unexpected answer {outcome!r}"

    # -- the tool ------------------------------------------------------------------

    async def _run_tool(self, call: ToolCall, args: str, context: tuple[str, ...]) -> str:
        try:
            return str(
                await self.tools.run(
                    ToolInvocation(call_id=call.id, name=call.name, args=args, context=context)
                )
            )
        except Exception as error:
            return f"[tool failed] {error!r}"

    # -- one call ------------------------------------------------------------------

    async def execute(self, call: ToolCall) -> list[Message]:
        decision = await self.policy.before_dispatch(call)
        pre = await self._pre_dispatch(call, decision)
        if isinstance(pre, Denied):
            return await self._denied(call, pre)
        args, context = pre
        output = await self._run_tool(call, args, context)
        released = await self._post_dispatch(call, output)
        messages = [Message(role="context", content=c, tool_call_id=call.id) for c in context]
        messages.append(Message(role="tool", content=released, tool_call_id=call.id))
        return messages

    async def _denied(self, call: ToolCall, denial: Denied) -> list[Message]:
        return [Message(role="tool", content=denied(denial.reason), tool_call_id=call.id)]

    async def _pre_dispatch(
        self, call: ToolCall, decision: Any
    ) -> Denied | tuple[str, tuple[str, ...]]:
        """What the call runs with (args, context), or why it is denied."""
        if isinstance(decision, Allow):
            return str(call.args), ()
        if isinstance(decision, Deny):
            return Denied(decision.reason, by_policy=True)
        if isinstance(decision, RequireApproval):
            return await self._approval(call, decision)
        if isinstance(decision, RewriteArgs):
            if self.recorder is None:
                return call.args, ()
            failure = await self._record(
                DispatchMutation(call.id, call.name, InputRewrite(call.args, decision.new_args))
            )
            if failure is not None:
                return Denied(f"the argument rewrite could not be recorded: {failure}")
            return decision.new_args, ()
        if isinstance(decision, InjectContext):
            if self.recorder is None:
                return call.args, ()
            failure = await self._record(
                DispatchMutation(call.id, call.name, ContextInjection(decision.context))
            )
            if failure is not None:
                return Denied(f"the context injection could not be recorded: {failure}")
            return call.args, (decision.context,)
        return Denied(f"unknown policy decision {decision!r}", by_policy=True)

    async def _approval(
        self, call: ToolCall, decision: RequireApproval
    ) -> Denied | tuple[str, tuple[str, ...]]:
        if self.approver is None:
            return Denied(f"approval required, and no approver: {decision.reason}", by_policy=True)
        if not await self.approver(call, decision.reason):
            return Denied(f"not approved: {decision.reason}", by_policy=True)
        return call.args, ()

    async def _post_dispatch(self, call: ToolCall, output: str) -> str:
        """What the model gets to see of the tool's output."""
        redacted = await self.policy.after_dispatch(call, output)
        if redacted is None or self.recorder is None:
            return output
        failure = await self._record(
            DispatchMutation(call.id, call.name, ResultRedaction(output, redacted))
        )
        return redacted if failure is None else WITHHELD


@dataclass
class Denied:
    reason: str
    by_policy: bool = False  # the policy's own decision, not a failed record


# --------------------------------------------------------------------------- turn loop


async def commit(recorder: Any, messages: Sequence[Message], limit: float | None) -> str | None:
    method = getattr(recorder, "commit_accepted_step", None)
    if method is None:
        return None
    outcome: Any = None
    raised: BaseException | None = None
    scope = anyio.CancelScope() if limit is None else anyio.move_on_after(limit)
    with scope:
        try:
            outcome = await method(list(messages))
        except Exception as error:
            raised = error
    await anyio.lowlevel.checkpoint_if_cancelled()
    if scope.cancel_called:
        return f"timed out after {limit} s"
    if raised is not None:
        return repr(raised)
    if isinstance(outcome, RecordOk):
        return None
    if isinstance(outcome, RecordError):
        return str(outcome.reason)
    return f"unexpected answer {outcome!r}"


async def run_turn(
    prompt: str,
    provider: Any,
    executor: Executor,
    commit_time_limit: float | None,
    max_steps: int = 64,
) -> list[Message]:
    messages: list[Message] = [Message(role="user", content=prompt)]
    for step in range(max_steps):
        proposed = await provider.next_step(list(messages))
        calls = tuple(proposed.tool_calls)
        step_messages = [Message(role="assistant", content=proposed.text, tool_calls=calls)]
        for call in calls:
            step_messages.extend(await executor.execute(call))
        messages.extend(step_messages)
        if executor.recorder is not None:
            failure = await commit(executor.recorder, step_messages, commit_time_limit)
            if failure is not None:
                raise CommitFailed(step, failure, list(messages))
        if not calls:
            return messages
    raise RuntimeError(f"the turn did not end within {max_steps} steps")


# --------------------------------------------------------------------------- journal


def canonical(x: Any) -> bytes:
    return json.dumps(
        x, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def raw_key(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def genesis(public_key: Ed25519PublicKey) -> str:
    return hashlib.sha256(DOMAIN + b"genesis" + raw_key(public_key)).hexdigest()


def mutation_dict(mutation: DispatchMutation) -> dict[str, str]:
    kind = mutation.kind
    out = {"tool_call_id": mutation.tool_call_id, "tool_name": mutation.tool_name}
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


def signed_bytes(body: dict[str, Any]) -> bytes:
    return DOMAIN + canonical({k: body[k] for k in ("mutation", "prev", "seq", "v")})


class Journal(RecorderBase):
    """Appends one signed, chained, fsync'd line per record."""

    def __init__(self, path: Path, signer: Any, fsync: Callable[[int], None]) -> None:
        super().__init__()
        self.path = Path(path)
        self.signer = signer
        self.fsync = fsync
        self.lock = anyio.Lock()
        self.broken: str | None = None
        found = verify_file(self.path, signer.public_key) if self.path.exists() else None
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if found is None or (found.ok and not found.entries):
            self.seq, self.prev = 0, genesis(signer.public_key)
        elif found.ok or found.torn_tail:
            os.ftruncate(self.fd, found.valid_bytes)
            self.fsync(self.fd)
            self.seq = len(found.entries)
            self.prev = found.head
        else:
            os.close(self.fd)
            raise ValueError(f"journal {path} is corrupt: {found.reason}")

    def _append(self, mutation: dict[str, str]) -> str:
        body = {"mutation": mutation, "prev": self.prev, "seq": self.seq, "v": 2}
        to_sign = signed_bytes(body)
        sig = self.signer.sign(to_sign)
        line = canonical({**body, "sig": bytes(sig).hex()}) + b"\n"
        written = 0
        while written < len(line):
            written += os.write(self.fd, line[written:])
        self.fsync(self.fd)
        self.prev = hashlib.sha256(to_sign).hexdigest()
        self.seq += 1
        return self.prev

    async def record(self, mutation: DispatchMutation) -> Any:
        async with self.lock:
            if self.broken is not None:
                return RecordError(f"journal unusable: {self.broken}")
            try:
                self._append(mutation_dict(mutation))
            except OSError as error:
                self.broken = repr(error)
                return RecordError(f"journal write failed: {error!r}")
            except Exception as error:
                return RecordError(f"signing failed: {error!r}")
        return OK

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass
class Entry:
    seq: int
    mutation: dict[str, Any]
    hash: str


@dataclass
class Verdict:
    entries: list[Entry] = field(default_factory=list)
    bad_index: int | None = None
    reason: str | None = None
    torn_tail: bool = False
    valid_bytes: int = 0
    head: str = ""

    @property
    def ok(self) -> bool:
        return self.bad_index is None and not self.torn_tail


HEX64 = re.compile(r"[0-9a-f]{64}")
HEX128 = re.compile(r"[0-9a-f]{128}")
KIND_FIELDS = {
    "input_rewrite": {"original_args", "new_args"},
    "context_injection": {"context"},
    "result_redaction": {"original_result", "redacted_result"},
}


def _mutation_problem(mutation: Any) -> str | None:
    if not isinstance(mutation, dict):
        return "mutation is not an object"
    kind = mutation.get("kind")
    if kind not in KIND_FIELDS:
        return f"unknown mutation kind {kind!r}"
    want = {"tool_call_id", "tool_name", "kind"} | KIND_FIELDS[kind]
    if set(mutation) != want:
        return f"mutation fields {sorted(mutation)} are not {sorted(want)}"
    if not all(isinstance(v, str) for v in mutation.values()):
        return "mutation fields must be strings"
    return None


def _parses_as_object(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data), dict)
    except (ValueError, UnicodeDecodeError):
        return False


def sig_format_ok(sig: Any) -> bool:
    return isinstance(sig, str) and HEX128.fullmatch(sig) is not None


def scan(
    data: bytes,
    public_key: Ed25519PublicKey,
    expected_entries: int | None = None,
    sig_ok: Callable[[Any], bool] = sig_format_ok,
) -> Verdict:
    verdict = Verdict()
    prev = genesis(public_key)
    verdict.head = prev
    *lines, tail = data.split(b"\n")
    offset = 0

    def bad(index: int, reason: str) -> Verdict:
        verdict.bad_index = index
        verdict.reason = reason
        return verdict

    for seq, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except (ValueError, UnicodeDecodeError) as error:
            return bad(seq, f"entry {seq} is not JSON: {error}")
        if not isinstance(entry, dict):
            return bad(seq, f"entry {seq} is not an object")
        if set(entry) != {"mutation", "prev", "seq", "sig", "v"}:
            return bad(seq, f"entry {seq} has fields {sorted(entry)}")
        try:
            if canonical(entry) != line:
                return bad(seq, f"entry {seq} is not in canonical form")
        except ValueError:
            return bad(seq, f"entry {seq} is not in canonical form")
        if type(entry["seq"]) is not int or entry["seq"] != seq:
            return bad(seq, f"entry {seq} has seq {entry['seq']!r}")
        if type(entry["v"]) is not int or entry["v"] != 2:
            return bad(seq, f"entry {seq} has version {entry['v']!r}")
        if not sig_ok(entry["sig"]):
            return bad(seq, f"entry {seq}: sig is not 128 hex digits")
        if not isinstance(entry["prev"], str) or not HEX64.fullmatch(entry["prev"]):
            return bad(seq, f"entry {seq}: prev is not 64 hex digits")
        problem = _mutation_problem(entry["mutation"])
        if problem is not None:
            return bad(seq, f"entry {seq}: {problem}")
        if entry["prev"] != prev:
            if seq == 0:
                return bad(0, f"entry 0 is signed by key {entry['prev']}, expected {prev}")
            return bad(seq, f"entry {seq} does not chain")
        to_sign = signed_bytes(entry)
        try:
            public_key.verify(bytes.fromhex(entry["sig"]), to_sign)
        except InvalidSignature:
            return bad(seq, f"entry {seq}: bad signature")
        prev = hashlib.sha256(to_sign).hexdigest()
        offset += len(line) + 1
        verdict.entries.append(Entry(seq, entry["mutation"], prev))
        verdict.valid_bytes = offset
        verdict.head = prev
    n = len(lines)
    if tail:
        if _parses_as_object(tail) or _parses_as_object(tail[:-1]):
            return bad(n, f"entry {n} is missing its newline (may be a complete entry)")
        verdict.torn_tail = True
        verdict.bad_index = n
        verdict.reason = f"entry {n} is a torn tail"
        if expected_entries is not None and n < expected_entries:
            verdict.reason += f"; expected {expected_entries} entries, found {n}"
        return verdict
    if expected_entries is not None and n != expected_entries:
        return bad(min(n, expected_entries), f"expected {expected_entries} entries, found {n}")
    return verdict


def verify_file(
    path: str | Path, public_key: Ed25519PublicKey, expected_entries: int | None = None
) -> Verdict:
    return scan(Path(path).read_bytes(), public_key, expected_entries)


# --------------------------------------------------------------------------- adapter


class Implementation:
    features: tuple[str, ...] = ("record-time-limit", "signed-journal")
    executor_class = Executor
    journal_class = Journal

    def make_executor(
        self, tools: Any, policy: Any, recorder: Any, approver: Any, record_time_limit: float | None
    ) -> Executor:
        return self.executor_class(tools, policy, recorder, approver, record_time_limit)

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
        executor = self.make_executor(tools, policy, recorder, approver, record_time_limit)
        return await self.turn_loop(prompt, provider, executor, commit_time_limit)

    async def turn_loop(
        self, prompt: str, provider: Any, executor: Executor, commit_time_limit: float | None
    ) -> list[Message]:
        return await run_turn(prompt, provider, executor, commit_time_limit)

    def open_journal(
        self, path: str | Path, signer: Any, *, fsync: Callable[[int], None] = os.fsync
    ) -> Journal:
        return self.journal_class(Path(path), signer, fsync)

    def verify_journal(
        self, path: str | Path, public_key: Ed25519PublicKey, *, expected_entries: int | None = None
    ) -> Verdict:
        return verify_file(path, public_key, expected_entries)


def make_adapter(
    impl: Implementation, name: str = "outsider-batch3-dr-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[DispatchRecorderDriver(impl)],
        backend=backend,
        concurrent=True,
    )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter: the control its variants are measured against."""
    return make_adapter(Implementation(), backend=backend)
