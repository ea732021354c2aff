"""An outsider's dispatch recorder: its own turn loop, executor and signed journal (batch 14).

Written from the contract page alone (docs of main ecbade0), plus the driver protocol and
the public model types of ``seamspec.reference``; the reference's ``run_turn``,
``ToolExecutor`` and journal are not used. Kept as written (the original ``b14dr_base.py``
had sha256 872047e6038f39f2be228514f9c83c2451aadb18befcd20a52aa0bd1e34c2716); only imports
(the driver and ``PythonAdapter`` from their own modules), annotations, ``noqa`` comments
(two added; the unused ``BLE001`` ones dropped, their words kept), the layout (ruff
format) and one addition at the end (``build(backend)``, the factory the meta-test calls;
the original's ``make_adapter``, ``adapter`` and ``adapter_trio`` are kept) were touched.
Its own docstring: "an in-process dispatch-recorder turn loop written from the contract
page. Declares `record-time-limit` and `signed-journal` (format v2, written and verified
here)." By its author's run it conformed under both profiles and both backends (198
passed), and it is the control the batch's variants (``batch14.py``) are judged against.
The turn, journal and verifier are split into hook methods (``unrecorded_text``,
``release_redacted``, ``original_args``, ``read_journal``, ``sig_ok``, ``verify_journal``)
so that each variant overrides one. Only anyio's portable calls are used (no code path
of its own for trio), so the meta-test runs it as a control on asyncio only.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

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

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

PREFIX = "[tool call denied] "
WITHHELD = "[result withheld: its redaction could not be recorded]"


class CommitError(Exception):
    """The turn stopped on a failed commit; ``str()`` is the whole message."""


DOMAIN = b"seamspec/dispatch-recorder/journal-entry/v2\x00"
FIELDS = {"mutation", "prev", "seq", "sig", "v"}
HEX128 = re.compile("[0-9a-f]{128}")


def canonical(x: Any) -> bytes:
    return json.dumps(
        x, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def raw_key(public_key: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def genesis(public_key: Any) -> str:
    return hashlib.sha256(DOMAIN + b"genesis" + raw_key(public_key)).hexdigest()


def mutation_dict(mutation: DispatchMutation) -> dict[str, Any]:
    kind = mutation.kind
    out: dict[str, Any] = {
        "tool_call_id": mutation.tool_call_id,
        "tool_name": mutation.tool_name,
        "kind": kind.kind,
    }
    if isinstance(kind, InputRewrite):
        out["original_args"], out["new_args"] = kind.original_args, kind.new_args
    elif isinstance(kind, ContextInjection):
        out["context"] = kind.context
    elif isinstance(kind, ResultRedaction):
        out["original_result"], out["redacted_result"] = kind.original_result, kind.redacted_result
    return out


def may_be_entry(segment: bytes) -> bool:
    for candidate in (segment, segment[:-1]):
        try:
            if isinstance(json.loads(candidate), dict):
                return True
        except (ValueError, UnicodeDecodeError):
            pass
    return False


@dataclass
class Scan:
    mutations: list[dict[str, Any]] = field(default_factory=list)
    prev: str = ""
    good_end: int = 0  # byte offset just past the last good entry
    bad_index: int | None = None
    reason: str | None = None
    tail: bytes = b""
    torn_tail: bool = False


def sig_ok(sig: Any) -> bool:
    return isinstance(sig, str) and HEX128.fullmatch(sig) is not None


def scan(data: bytes, public_key: Any, check_sig: Any = sig_ok) -> Scan:
    """Reads the entries, then the tail; stops at the first bad complete entry."""
    found = Scan(prev=genesis(public_key))
    *lines, tail = data.split(b"\n")
    offset = 0
    for seq, line in enumerate(lines):
        try:
            entry = json.loads(line)
            problem = None
            if not isinstance(entry, dict) or set(entry) != FIELDS:
                problem = "has the wrong fields"
            elif canonical(entry) != line:
                problem = "is not canonical"
            elif type(entry["seq"]) is not int or entry["seq"] != seq:
                problem = "has the wrong seq"
            elif type(entry["v"]) is not int or entry["v"] != 2:
                problem = "has the wrong version"
            elif not isinstance(entry["mutation"], dict):
                problem = "has a mutation that is not an object"
            elif not check_sig(entry["sig"]):
                problem = "has a malformed signature"
            elif entry["prev"] != found.prev:
                problem = "does not chain"
            else:
                body = {k: entry[k] for k in ("mutation", "prev", "seq", "v")}
                signed = DOMAIN + canonical(body)
                public_key.verify(bytes.fromhex(entry["sig"]), signed)
        except Exception as error:  # any failure is damage here
            problem = f"does not read: {type(error).__name__}"
        if problem is not None:
            found.bad_index, found.reason = seq, f"entry {seq} {problem}"
            return found
        found.prev = hashlib.sha256(signed).hexdigest()
        found.mutations.append(entry["mutation"])
        offset += len(line) + 1
        found.good_end = offset
    if tail:
        found.tail = tail
        found.bad_index = len(lines)
        if may_be_entry(tail):
            found.reason = f"entry {len(lines)} may be a whole entry that lost its newline"
        else:
            found.torn_tail = True
            found.reason = f"entry {len(lines)} is a torn tail"
    return found


@dataclass
class Entry:
    mutation: dict[str, Any]


@dataclass
class Verdict:
    ok: bool
    bad_index: int | None
    reason: str | None
    torn_tail: bool
    entries: list[Entry]


def verdict_of(
    data: bytes, public_key: Any, expected_entries: int | None, check_sig: Any = sig_ok
) -> Verdict:
    found = scan(data, public_key, check_sig)
    entries = [Entry(m) for m in found.mutations]
    if found.bad_index is not None:
        return Verdict(False, found.bad_index, found.reason, found.torn_tail, entries)
    count = len(found.mutations)
    if expected_entries is not None and count != expected_entries:
        index = min(count, expected_entries)
        return Verdict(
            False, index, f"holds {count} entries, {expected_entries} expected", False, entries
        )
    return Verdict(True, None, None, False, entries)


class JournalRefused(Exception):
    pass


class Journal:
    """A signed, hash-chained journal; each record is written and fsync'd before OK."""

    def __init__(self, path: Any, signer: Any, fsync: Any) -> None:
        self.path = Path(path)
        self.signer = signer
        self.fsync = fsync
        self.broken: str | None = None
        self.fd: int | None = None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            data = b""
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                data += chunk
            found = scan(data, signer.public_key)
            if found.bad_index is not None and not found.tail:
                raise JournalRefused(found.reason)
            if found.bad_index is not None and found.bad_index != len(found.mutations):
                raise JournalRefused(found.reason)
            if found.tail:
                if not found.torn_tail:
                    self.quarantine(found.tail, found.good_end)
                os.ftruncate(fd, found.good_end)
                fsync(fd)
            os.lseek(fd, 0, os.SEEK_END)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        self.prev = found.prev
        self.seq = len(found.mutations)

    def quarantine(self, tail: bytes, offset: int) -> None:
        target = self.path.with_name(f"{self.path.name}.quarantine-{offset}")
        qfd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(tail)
            while view:
                view = view[os.write(qfd, view) :]
            os.fsync(qfd)
        finally:
            os.close(qfd)

    async def record(self, mutation: DispatchMutation) -> Any:
        if self.broken is not None:
            return RecordError(f"the journal is not writable: {self.broken}")
        if self.fd is None:
            return RecordError("the journal is closed")
        body = {"mutation": mutation_dict(mutation), "prev": self.prev, "seq": self.seq, "v": 2}
        signed = DOMAIN + canonical(body)
        try:
            sig = bytes(self.signer.sign(signed)).hex()
        except Exception as error:
            return RecordError(f"signing failed: {error!r}")
        line = canonical({**body, "sig": sig}) + b"\n"
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self.fd, view) :]
            self.fsync(self.fd)
        except Exception as error:  # the tail is in doubt from here on
            self.broken = repr(error)
            return RecordError(f"the entry could not be made durable: {error!r}")
        self.prev = hashlib.sha256(signed).hexdigest()
        self.seq += 1
        return RecordOk()

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            try:  # noqa: SIM105
                os.close(fd)
            except OSError:
                pass


class BaseTurnLoop:
    features: tuple[str, ...] = ("record-time-limit", "signed-journal")

    def open_journal(self, path: Any, signer: Any, *, fsync: Any) -> Journal:
        return Journal(path, signer, fsync)

    def read_journal(self, path: Any) -> bytes:
        return Path(path).read_bytes()

    def sig_ok(self, sig: Any) -> bool:
        return sig_ok(sig)

    def verify_journal(
        self, path: Any, public_key: Any, *, expected_entries: int | None = None
    ) -> Verdict:
        return verdict_of(self.read_journal(path), public_key, expected_entries, self.sig_ok)

    # ---------------------------------------------------------------- helpers
    def deny_text(self, reason: str) -> str:
        return PREFIX + reason

    def approval_denied_text(self, reason: str) -> str:
        return PREFIX + "approval required and not given: " + reason

    def unrecorded_text(self, what: str, reason: str) -> str:
        return PREFIX + f"the {what} could not be recorded: " + reason

    def record_limit(self, limit: float | None) -> float:
        return math.inf if limit is None else float(limit)

    def commit_limit(self, limit: float | None) -> float:
        return math.inf if limit is None else float(limit)

    def release_redacted(self, text: str) -> str:
        return text

    def original_args(self, call: ToolCall, state: dict[tuple[str, str], str]) -> str:
        return call.args

    def mutations_apply(self, recorder: Any, decision: Any) -> bool:
        """Whether a decision is acted on; with no recorder only mutations are dropped."""
        return True

    async def record(
        self, recorder: Any, mutation: DispatchMutation, limit: float | None
    ) -> str | None:
        """One record under its own time limit: None when OK, else the failure reason.
        Cancellation propagates, also after a deaf record answered."""
        outcome: Any = None
        raised: BaseException | None = None
        with anyio.move_on_after(self.record_limit(limit)) as scope:
            try:
                outcome = await recorder.record(mutation)
            except Exception as error:  # a raise is a failed record
                raised = error
        await anyio.lowlevel.checkpoint_if_cancelled()
        if scope.cancel_called:
            return f"the record did not answer within {limit} s"
        if raised is not None:
            return f"record raised {raised!r}"
        if isinstance(outcome, RecordOk):
            return None
        if isinstance(outcome, RecordError):
            return outcome.reason
        return f"record gave an unexpected answer {outcome!r}"

    async def commit(
        self, recorder: Any, messages: list[Message], n: int, limit: float | None
    ) -> None:
        method = getattr(recorder, "commit_accepted_step", None)
        if method is None:
            return
        outcome: Any = None
        raised: BaseException | None = None
        with anyio.move_on_after(self.commit_limit(limit)) as scope:
            try:
                outcome = await method(tuple(messages))
            except Exception as error:
                raised = error
        await anyio.lowlevel.checkpoint_if_cancelled()
        head = f"step {n} could not be committed, so the turn stopped: "
        if scope.cancel_called:
            raise CommitError(head + f"the commit did not answer within {limit} s")
        if raised is not None:
            raise CommitError(head + f"commit_accepted_step raised {raised!r}")
        if isinstance(outcome, RecordOk):
            return
        if isinstance(outcome, RecordError):
            raise CommitError(head + outcome.reason)
        raise CommitError(head + f"unexpected answer {outcome!r}")

    # ---------------------------------------------------------------- one call
    async def dispatch(
        self,
        call: Any,
        *,
        tools: Any,
        policy: Any,
        recorder: Any,
        approver: Any,
        record_time_limit: float | None,
        state: dict[tuple[str, str], str],
    ) -> list[Message]:
        out: list[Message] = []
        decision = await policy.before_dispatch(call)
        args = call.args
        context: tuple[str, ...] = ()
        if not self.mutations_apply(recorder, decision):
            pass
        elif isinstance(decision, Deny):
            return [Message("tool", self.deny_text(decision.reason), call.id)]
        elif isinstance(decision, RequireApproval):
            approved = False
            if approver is not None:
                answer = approver(call, decision.reason)
                if inspect.isawaitable(answer):
                    answer = await answer
                approved = answer is True
            if not approved:
                return [Message("tool", self.approval_denied_text(decision.reason), call.id)]
        elif isinstance(decision, RewriteArgs):
            if recorder is not None:
                mutation = DispatchMutation(
                    call.id,
                    call.name,
                    InputRewrite(self.original_args(call, state), decision.new_args),
                )
                failed = await self.record(recorder, mutation, record_time_limit)
                if failed is not None:
                    return [
                        Message("tool", self.unrecorded_text("argument rewrite", failed), call.id)
                    ]
                args = decision.new_args
        elif isinstance(decision, InjectContext):  # noqa: SIM102
            if recorder is not None:
                out = await self.inject(call, decision, recorder, record_time_limit)
                if out and out[-1].role == "tool":
                    return out
                context = (decision.context,)
        try:
            result = await tools.run(ToolInvocation(call.id, call.name, args, context))
        except Exception as error:
            result = f"[tool failed] {error!r}"
        redacted = await policy.after_dispatch(call, result)
        if redacted is not None and recorder is not None:
            mutation = DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
            failed = await self.record(recorder, mutation, record_time_limit)
            result = WITHHELD if failed is not None else self.release_redacted(redacted)
            return self.finish_call(out, Message("tool", result, call.id), redacted=failed is None)
        return self.finish_call(out, Message("tool", result, call.id), redacted=False)

    def finish_call(self, out: list[Message], result: Message, *, redacted: bool) -> list[Message]:
        """The call's messages: any context it was injected with, then its result."""
        out.append(result)
        return out

    async def inject(
        self, call: Any, decision: Any, recorder: Any, limit: float | None
    ) -> list[Message]:
        """Record an injection: [context message] when OK, else [denial]."""
        mutation = DispatchMutation(call.id, call.name, ContextInjection(decision.context))
        failed = await self.record(recorder, mutation, limit)
        if failed is not None:
            return [Message("tool", self.unrecorded_text("context injection", failed), call.id)]
        return [Message("context", decision.context, call.id)]

    # ---------------------------------------------------------------- the turn
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
        transcript: list[Message] = [Message("user", prompt)]
        state: dict[tuple[str, str], str] = {}
        n = 0
        while True:
            step = await provider.next_step(tuple(transcript))
            calls = tuple(step.tool_calls or ())
            for call in calls:
                state.setdefault(("args", call.id), call.args)
            step_messages: list[Message] = [Message("assistant", step.text, None, calls)]
            for call in calls:
                step_messages.extend(
                    await self.dispatch(
                        call,
                        tools=tools,
                        policy=policy,
                        recorder=recorder,
                        approver=approver,
                        record_time_limit=record_time_limit,
                        state=state,
                    )
                )
            transcript.extend(step_messages)
            if recorder is not None:
                await self.commit(recorder, list(step_messages), n, commit_time_limit)
            if not calls:
                return transcript
            n += 1


def make_adapter(
    impl: Any = None, *, name: str = "b14dr-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[DispatchRecorderDriver(impl if impl is not None else BaseTurnLoop())],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(backend="trio", name="b14dr-base-trio")


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter on ``backend`` (added on import; the original has
    ``adapter`` and ``adapter_trio``): the control its variants are measured against."""
    return make_adapter(name="outsider-b14dr-base", backend=backend)
