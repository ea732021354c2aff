"""An outsider's dispatch recorder: tool executor, turn loop and signed journal (batch 5).

Written from docs/contracts/dispatch-recorder.md and the driver's protocol (plus the public
model types of ``seamspec.reference``), without reading the reference, the scenarios or
the mutants. Kept as written (the original ``b5dr_base.py`` had sha256
1495490bde6cd01f1384bc37c1f5ed07c57ba7d6d29753c75273d8780e5496ae); only imports, typing,
the layout (ruff format) and the adapter factories at the end (``make_adapter``,
``build``) were touched. It conforms to every DR scenario under both profiles (130 of 130
on main b859591; its first version failed ``dr-journal-torn-tail-reported``, calling a
journal with a torn tail valid), and it is the control the batch's variants
(``batch5.py``) are judged against.
"""

from __future__ import annotations

import hashlib
import inspect
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
DOMAIN = b"seamspec/dispatch-recorder/journal-entry/v2\x00"


async def _maybe(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class TurnStopped(Exception):
    """A step could not be committed: the turn stopped (DR-COMMIT-FAIL)."""

    def __init__(self, step: int, reason: str) -> None:
        super().__init__(f"step {step} could not be committed, so the turn stopped: {reason}")
        self.step = step
        self.reason = reason


# --------------------------------------------------------------------------- executor


class Harness:
    """One turn's executor and loop. Subclass hooks exist only to keep code readable."""

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
        for name, limit in (
            ("record_time_limit", record_time_limit),
            ("commit_time_limit", commit_time_limit),
        ):
            if limit is not None and limit <= 0:
                raise ValueError(f"{name} must be positive or None")
        self.provider = provider
        self.tools = tools
        self.policy = policy
        self.recorder = recorder
        self.approver = approver
        self.record_time_limit = record_time_limit
        self.commit_time_limit = commit_time_limit

    # -- recording ------------------------------------------------------------------

    async def record(self, mutation: DispatchMutation) -> str | None:
        """None when recorded OK; otherwise the reason it failed."""
        timed_out = False
        try:
            if self.record_time_limit is None:
                outcome = await self.recorder.record(mutation)
            else:
                with anyio.move_on_after(self.record_time_limit) as scope:
                    outcome = await self.recorder.record(mutation)
                timed_out = scope.cancel_called
        except Exception as error:  # a raising recorder is a failed record (DR-RAISE)
            await anyio.lowlevel.checkpoint_if_cancelled()
            return repr(error)
        # A cancellation of the turn wins over any answer and over the limit (DR-CANCEL).
        await anyio.lowlevel.checkpoint_if_cancelled()
        if timed_out:
            return f"the record did not answer within {self.record_time_limit} s"
        if isinstance(outcome, RecordOk):
            return None
        if isinstance(outcome, RecordError):
            return str(outcome.reason)
        return f"the recorder answered {outcome!r}, not OK"

    async def commit(self, index: int, messages: list[Message]) -> None:
        commit = getattr(self.recorder, "commit_accepted_step", None)
        if commit is None:  # DR-COMMIT-DEFAULT
            return
        timed_out = False
        try:
            if self.commit_time_limit is None:
                outcome = await commit(messages)
            else:
                with anyio.move_on_after(self.commit_time_limit) as scope:
                    outcome = await commit(messages)
                timed_out = scope.cancel_called
        except Exception as error:
            await anyio.lowlevel.checkpoint_if_cancelled()
            raise TurnStopped(index, repr(error)) from error
        await anyio.lowlevel.checkpoint_if_cancelled()
        if timed_out:
            raise TurnStopped(index, f"the commit did not answer within {self.commit_time_limit} s")
        if isinstance(outcome, RecordOk):
            return
        if isinstance(outcome, RecordError):
            raise TurnStopped(index, outcome.reason)
        raise TurnStopped(index, f"the recorder answered {outcome!r}, not OK")

    # -- one call ---------------------------------------------------------------------

    async def run_tool(self, call: Any, args: str, context: tuple[str, ...]) -> str:
        try:
            result = await _maybe(self.tools.run(ToolInvocation(call.id, call.name, args, context)))
        except Exception as error:
            return f"[tool failed] {error!r}"
        return str(result)

    def unrecorded(self, decision: Any, reason: str) -> str:
        """The denial for a pre-dispatch mutation whose record failed."""
        what = "argument rewrite" if isinstance(decision, RewriteArgs) else "context injection"
        return f"{DENIED}the {what} could not be recorded: {reason}"

    async def redact(self, call: Any, result: str, redacted: str) -> str:
        """Record a redaction; what the model is then given."""
        failed = await self.record(
            DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
        )
        return WITHHELD if failed is not None else redacted

    async def dispatch(self, call: Any) -> list[Message]:
        """The messages this call adds to the transcript (context, then result)."""
        decision = await _maybe(self.policy.before_dispatch(call))
        args = call.args
        context: tuple[str, ...] = ()
        if isinstance(decision, Deny):
            return [Message("tool", DENIED + decision.reason, tool_call_id=call.id)]
        if isinstance(decision, RequireApproval):
            approved = False
            if self.approver is not None:
                approved = bool(await _maybe(self.approver(call, decision.reason)))
            if not approved:
                return [
                    Message(
                        "tool",
                        DENIED + "approval required and not given: " + decision.reason,
                        tool_call_id=call.id,
                    )
                ]
        elif isinstance(decision, RewriteArgs):
            if self.recorder is not None:
                failed = await self.record(
                    DispatchMutation(call.id, call.name, InputRewrite(call.args, decision.new_args))
                )
                if failed is not None:
                    return [
                        Message("tool", self.unrecorded(decision, failed), tool_call_id=call.id)
                    ]
                args = decision.new_args
        elif isinstance(decision, InjectContext):
            if self.recorder is not None:
                failed = await self.record(
                    DispatchMutation(call.id, call.name, ContextInjection(decision.context))
                )
                if failed is not None:
                    return [
                        Message("tool", self.unrecorded(decision, failed), tool_call_id=call.id)
                    ]
                context = (decision.context,)
        elif not isinstance(decision, Allow):
            return [
                Message(
                    "tool", DENIED + f"unknown policy decision {decision!r}", tool_call_id=call.id
                )
            ]

        result = await self.run_tool(call, args, context)
        redacted = await _maybe(self.policy.after_dispatch(call, result))
        released = result
        if redacted is not None and self.recorder is not None:
            released = await self.redact(call, result, redacted)
        out = [Message("context", c, tool_call_id=call.id) for c in context]
        out.append(Message("tool", released, tool_call_id=call.id))
        return out

    # -- the turn -------------------------------------------------------------------

    async def run(self, prompt: str, max_steps: int = 64) -> list[Message]:
        transcript = [Message("user", prompt)]
        for index in range(max_steps):
            step = await _maybe(self.provider.next_step(list(transcript)))
            calls = tuple(step.tool_calls or ())
            messages = [Message("assistant", step.text, tool_calls=calls)]
            for call in calls:
                messages.extend(await self.dispatch(call))
            transcript.extend(messages)
            if self.recorder is not None:
                await self.commit(index, list(messages))
            if not calls:
                return transcript
        raise RuntimeError(f"the turn did not finish within {max_steps} steps")


# --------------------------------------------------------------------------- journal


def canonical(x: Any) -> bytes:
    return json.dumps(
        x, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def genesis(key: Ed25519PublicKey) -> str:
    return hashlib.sha256(DOMAIN + b"genesis" + raw_public(key)).hexdigest()


def mutation_dict(m: DispatchMutation) -> dict[str, Any]:
    k = m.kind
    out: dict[str, Any] = {"tool_call_id": m.tool_call_id, "tool_name": m.tool_name}
    if isinstance(k, InputRewrite):
        out.update(kind="input_rewrite", original_args=k.original_args, new_args=k.new_args)
    elif isinstance(k, ContextInjection):
        out.update(kind="context_injection", context=k.context)
    elif isinstance(k, ResultRedaction):
        out.update(
            kind="result_redaction",
            original_result=k.original_result,
            redacted_result=k.redacted_result,
        )
    else:
        raise TypeError(f"unknown mutation kind {k!r}")
    return out


@dataclass
class Entry:
    seq: int
    mutation: dict[str, Any]
    end: int  # byte offset just past this entry's newline


@dataclass
class Verdict:
    ok: bool = True
    bad_index: int | None = None
    reason: str | None = None
    torn_tail: bool = False
    entries: list[Entry] = field(default_factory=list)
    head: str = ""
    good_bytes: int = 0


_HEX128 = re.compile(r"[0-9a-f]{128}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _may_be_entry(segment: bytes) -> bool:
    for candidate in (segment, segment[:-1]):
        try:
            if isinstance(json.loads(candidate), dict):
                return True
        except (ValueError, UnicodeDecodeError):
            pass
    return False


def anchor_missed(count: int, expected_entries: int | None) -> bool:
    return expected_entries is not None and count != expected_entries


def scan(
    data: bytes,
    key: Ed25519PublicKey,
    expected_entries: int | None = None,
    *,
    missed: Callable[[int, int | None], bool] = anchor_missed,
) -> Verdict:
    v = Verdict()
    prev = genesis(key)
    v.head = prev
    *lines, tail = data.split(b"\n")
    offset = 0

    def bad(index: int, reason: str) -> Verdict:
        v.ok, v.bad_index, v.reason = False, index, reason
        return v

    for seq, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            return bad(seq, "is not JSON")
        if not isinstance(entry, dict) or set(entry) != {"mutation", "prev", "seq", "sig", "v"}:
            return bad(seq, "does not have exactly the fields of an entry")
        try:
            if canonical(entry) != line:
                return bad(seq, "is not in canonical form")
        except ValueError:
            return bad(seq, "is not in canonical form")
        if type(entry["seq"]) is not int or entry["seq"] != seq:
            return bad(seq, "has the wrong sequence number")
        if type(entry["v"]) is not int or entry["v"] != 2:
            return bad(seq, "has the wrong version")
        if not isinstance(entry["sig"], str) or not _HEX128.fullmatch(entry["sig"]):
            return bad(seq, "has a malformed signature")
        if not isinstance(entry["prev"], str) or not _HEX64.fullmatch(entry["prev"]):
            return bad(seq, "has a malformed prev")
        if entry["prev"] != prev:
            return bad(seq, "does not chain")
        body = {k: entry[k] for k in ("mutation", "prev", "seq", "v")}
        signed = DOMAIN + canonical(body)
        try:
            key.verify(bytes.fromhex(entry["sig"]), signed)
        except InvalidSignature:
            return bad(seq, "has a signature that does not verify")
        if not isinstance(entry["mutation"], dict):
            return bad(seq, "has a mutation that is not an object")
        prev = hashlib.sha256(signed).hexdigest()
        offset += len(line) + 1
        v.entries.append(Entry(seq, entry["mutation"], offset))
        v.head = prev
        v.good_bytes = offset
    if tail:
        if _may_be_entry(tail):
            return bad(len(lines), "ends in an entry without its newline")
        bad(len(lines), "ends in a torn tail (an interrupted append)")
        v.torn_tail = True
        return v
    if missed(len(v.entries), expected_entries):
        assert expected_entries is not None  # typing only: a miss needs an anchor
        return bad(min(len(v.entries), expected_entries), "does not hold the expected entries")
    return v


class JournalError(Exception):
    pass


class Journal:
    """Appends signed entries to a file; OK only after fsync (DR-JOURNAL-DURABLE)."""

    def __init__(self, path: Path, signer: Any, fsync: Callable[[int], None]) -> None:
        self.path = Path(path)
        self.signer = signer
        self.fsync = fsync
        key = signer.public_key
        data = self.path.read_bytes() if self.path.exists() else b""
        found = self.recover(data, key)
        self.seq = len(found.entries)
        self.prev = found.head
        flags = os.O_RDWR | os.O_CREAT
        self.fd: int | None = os.open(self.path, flags, 0o600)
        if found.torn_tail:
            os.ftruncate(self.fd, found.good_bytes)
            self.fsync(self.fd)
        os.lseek(self.fd, 0, os.SEEK_END)
        self.broken = False

    @staticmethod
    def recover(data: bytes, key: Ed25519PublicKey) -> Verdict:
        """What an existing file holds; a torn tail is to be cut, other damage refused."""
        found = scan(data, key)
        if not found.ok and not found.torn_tail:
            raise JournalError(f"the journal is damaged at entry {found.bad_index}: {found.reason}")
        return found

    async def record(self, mutation: DispatchMutation) -> RecordOk | RecordError:
        if self.fd is None or self.broken:
            return RecordError("the journal is closed or in doubt")
        body = {"mutation": mutation_dict(mutation), "prev": self.prev, "seq": self.seq, "v": 2}
        signed = DOMAIN + canonical(body)
        try:
            sig = self.signer.sign(signed)
        except Exception as error:
            return RecordError(f"the signer failed: {error!r}")
        line = canonical({**body, "sig": bytes(sig).hex()}) + b"\n"
        try:
            view = memoryview(line)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
            self.fsync(self.fd)
        except OSError as error:
            self.broken = True
            return RecordError(f"the journal could not be written: {error!r}")
        self.seq += 1
        self.prev = hashlib.sha256(signed).hexdigest()
        await anyio.lowlevel.checkpoint()
        return RecordOk()

    async def commit_accepted_step(self, messages: Sequence[Message]) -> RecordOk | RecordError:
        return RecordOk()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# --------------------------------------------------------------------------- adapter


class Implementation:
    features: tuple[str, ...] = ("record-time-limit", "signed-journal")
    harness: type[Harness] = Harness
    journal: type[Journal] = Journal

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
        h = self.harness(
            provider=provider,
            tools=tools,
            policy=policy,
            recorder=recorder,
            approver=approver,
            record_time_limit=record_time_limit,
            commit_time_limit=commit_time_limit,
        )
        return await h.run(prompt)

    def open_journal(self, path: Path, signer: Any, *, fsync: Callable[[int], None]) -> Journal:
        return self.journal(path, signer, fsync)

    def verify_journal(
        self, path: Path, public_key: Ed25519PublicKey, *, expected_entries: int | None = None
    ) -> Verdict:
        return scan(Path(path).read_bytes(), public_key, expected_entries)


def make_adapter(
    impl: Implementation, name: str = "outsider-batch5-dr-base", backend: str = "asyncio"
) -> PythonAdapter:
    """An implementation as an adapter (the original had ``make_adapter(impl, name)`` and a
    module-level ``adapter``; the backend is the kit's addition)."""
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[DispatchRecorderDriver(impl)],
        backend=backend,
        concurrent=True,
    )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter: the control its variants are measured against."""
    return make_adapter(Implementation(), backend=backend)
