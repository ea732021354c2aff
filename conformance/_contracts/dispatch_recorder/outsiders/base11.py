"""An outsider's dispatch recorder: its own turn loop, executor and signed journal (batch 11).

Written from docs/contracts/dispatch-recorder.md and the driver protocol only (plus the
public model types of ``seamspec.reference``). Kept as written (the original
``b11dr_base.py`` had sha256
0ec2aa8ff83155864e0a4fd0f14a5aea9c1180206515a6f42f22a2ef6793c41e); only imports, typing,
the layout (ruff format) and the adapter factories at the end (``make_adapter`` takes a
backend argument, ``build`` replaces the module-level ``adapter``/``adapter_trio``, which
are now functions) were touched. It declares ``signed-journal`` and ``record-time-limit``
and conformed under both profiles and on trio on its first run (main e41a630: 175
passed), and it is the control the batch's variants (``batch11.py``) are judged against.
The harness, journal and verifier are split into small hook methods so that each variant
changes one.
"""

from __future__ import annotations

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
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

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
FIELDS = {"mutation", "prev", "seq", "sig", "v"}


class TurnStopped(Exception):
    """A commit failed: the turn stops, and this carries the recorder's reason."""


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


# --------------------------------------------------------------------------- executor


class Harness:
    """One turn's executor: policy, records, tools, commits."""

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
            if limit is not None and limit <= 0:
                raise ValueError(f"{name}_time_limit must be positive or None")
        self.provider = provider
        self.tools = tools
        self.policy = policy
        self.recorder = recorder
        self.approver = approver
        self.record_time_limit = record_time_limit
        self.commit_time_limit = commit_time_limit

    # -- the recorder's two calls ------------------------------------------------------

    async def record(self, mutation: DispatchMutation) -> str | None:
        """None when the mutation is recorded; otherwise why it is not."""
        limit = self.record_time_limit
        outcome: Any = None
        timed_out = False
        try:
            if limit is None:
                outcome = await self.recorder.record(mutation)
            else:
                with anyio.move_on_after(limit) as scope:
                    outcome = await self.recorder.record(mutation)
                timed_out = scope.cancel_called
        except Exception as error:
            await anyio.lowlevel.checkpoint_if_cancelled()
            return f"record raised {error!r}"
        await anyio.lowlevel.checkpoint_if_cancelled()
        if timed_out:
            return f"record did not answer within {limit} s"
        if isinstance(outcome, RecordOk):
            return None
        if isinstance(outcome, RecordError):
            return outcome.reason
        return f"record answered {outcome!r}"

    async def commit(self, n: int, messages: tuple[Message, ...]) -> None:
        commit = getattr(self.recorder, "commit_accepted_step", None)
        if commit is None:
            return  # no commit of its own: the default is OK
        limit = self.commit_time_limit
        outcome: Any = None
        timed_out = False
        prefix = f"step {n} could not be committed, so the turn stopped: "
        try:
            if limit is None:
                outcome = await commit(messages)
            else:
                with anyio.move_on_after(limit) as scope:
                    outcome = await commit(messages)
                timed_out = scope.cancel_called
        except Exception as error:
            await anyio.lowlevel.checkpoint_if_cancelled()
            raise TurnStopped(prefix + f"commit_accepted_step raised {error!r}") from error
        await anyio.lowlevel.checkpoint_if_cancelled()
        if timed_out:
            raise TurnStopped(prefix + f"commit_accepted_step did not answer within {limit} s")
        if isinstance(outcome, RecordOk):
            return
        if isinstance(outcome, RecordError):
            raise TurnStopped(prefix + outcome.reason)
        raise TurnStopped(prefix + f"commit_accepted_step answered {outcome!r}")

    # -- what the model reads ----------------------------------------------------------

    def approval_denial(self, reason: str) -> str:
        """The reason given after the denial prefix for a refused or unwired approval."""
        return "approval required and not given: " + reason

    def release_redaction(self, redacted: str) -> str:
        """The text released for a recorded redaction: the policy's, verbatim."""
        return redacted

    # -- one call ----------------------------------------------------------------------

    async def dispatch(self, call: Any) -> list[Message]:
        """The messages this call adds to the transcript: its context (if any), its result."""
        decision = await _maybe_await(self.policy.before_dispatch(call))
        args = call.args
        context: tuple[str, ...] = ()
        out: list[Message] = []

        def denied(reason: str) -> list[Message]:
            return [Message("tool", DENIED + reason, tool_call_id=call.id)]

        if isinstance(decision, Deny):
            return denied(decision.reason)
        if isinstance(decision, RequireApproval):
            approved = False
            if self.approver is not None:
                approved = bool(await _maybe_await(self.approver(call, decision.reason)))
            if not approved:
                return denied(self.approval_denial(decision.reason))
        elif isinstance(decision, RewriteArgs):
            if self.recorder is not None:
                failure = await self.record(
                    DispatchMutation(call.id, call.name, InputRewrite(call.args, decision.new_args))
                )
                if failure is not None:
                    return denied("the argument rewrite could not be recorded: " + failure)
                args = decision.new_args
        elif isinstance(decision, InjectContext):
            if self.recorder is not None:
                failure = await self.record(
                    DispatchMutation(call.id, call.name, ContextInjection(decision.context))
                )
                if failure is not None:
                    return denied("the context injection could not be recorded: " + failure)
                context = (decision.context,)
                out.append(Message("context", decision.context, tool_call_id=call.id))
        elif not isinstance(decision, Allow):
            return denied(f"unknown policy decision {decision!r}")

        try:
            result = await self.tools.run(ToolInvocation(call.id, call.name, args, context))
        except Exception as error:
            result = f"[tool failed] {error!r}"
        result = str(result)

        redacted = await _maybe_await(self.policy.after_dispatch(call, result))
        released = result
        if redacted is not None and self.recorder is not None:
            failure = await self.record(
                DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
            )
            released = self.release_redaction(redacted) if failure is None else WITHHELD
        out.append(Message("tool", released, tool_call_id=call.id))
        return out

    # -- the turn ----------------------------------------------------------------------

    async def turn(self, prompt: str) -> list[Message]:
        transcript: list[Message] = [Message("user", prompt)]
        n = 0
        while True:
            step = await self.provider.next_step(tuple(transcript))
            calls = tuple(step.tool_calls)
            messages: list[Message] = [Message("assistant", step.text, tool_calls=calls)]
            for call in calls:
                messages.extend(await self.dispatch(call))
            transcript.extend(messages)
            if self.recorder is not None:
                await self.commit(n, tuple(messages))
            n += 1
            if not calls:
                return transcript


# --------------------------------------------------------------------------- journal


def canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
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
        raise ValueError(f"unknown mutation kind {kind!r}")
    return out


@dataclass
class Entry:
    seq: int
    mutation: dict[str, Any]


@dataclass
class Scan:
    ok: bool
    bad_index: int | None
    reason: str
    torn_tail: bool
    entries: list[Entry] = field(default_factory=list)
    head: str = ""
    good_bytes: int = 0  # the length of the complete, verified entries from the start
    tail_may_be_entry: bool = False


def _may_be_entry(segment: bytes) -> bool:
    for candidate in (segment, segment[:-1]):
        try:
            if isinstance(json.loads(candidate), dict):
                return True
        except ValueError:
            pass
    return False


class Verifier:
    """Reads a journal file exactly as the contract page's hand check does."""

    def sig_format_ok(self, sig: Any) -> bool:
        return isinstance(sig, str) and re.fullmatch("[0-9a-f]{128}", sig) is not None

    def entry_problem(
        self, line: bytes, seq: int, prev: str, key: Ed25519PublicKey
    ) -> tuple[str | None, Any]:
        try:
            entry = json.loads(line)
        except ValueError:
            return "is not JSON", None
        if not isinstance(entry, dict):
            return "is not an object", None
        if set(entry) != FIELDS:
            return "does not have exactly the five fields", None
        try:
            if canonical(entry) != line:
                return "is not in canonical form", None
        except ValueError:
            return "is not in canonical form", None
        if type(entry["seq"]) is not int or entry["seq"] != seq:
            return "has the wrong sequence number", None
        if type(entry["v"]) is not int or entry["v"] != 2:
            return "has the wrong version", None
        if not isinstance(entry["mutation"], dict):
            return "has a mutation that is not an object", None
        if not self.sig_format_ok(entry["sig"]):
            return "has a malformed signature", None
        if not isinstance(entry["prev"], str) or entry["prev"] != prev:
            return "does not chain (or is signed by another key)", None
        body = {k: entry[k] for k in ("mutation", "prev", "seq", "v")}
        signed = DOMAIN + canonical(body)
        try:
            key.verify(bytes.fromhex(entry["sig"]), signed)
        except (InvalidSignature, ValueError):
            return "has a signature that does not verify with this public key", None
        return None, (entry, hashlib.sha256(signed).hexdigest())

    def scan(self, data: bytes, key: Ed25519PublicKey, expected: int | None = None) -> Scan:
        *lines, tail = data.split(b"\n")
        prev = genesis(key)
        entries: list[Entry] = []
        offset = 0
        for seq, line in enumerate(lines):
            problem, found = self.entry_problem(line, seq, prev, key)
            if problem is not None:
                return Scan(False, seq, f"entry {seq} {problem}", False, entries, prev, offset)
            entry, prev = found
            entries.append(Entry(seq, entry["mutation"]))
            offset += len(line) + 1
        count = len(lines)
        if tail:
            if _may_be_entry(tail):
                return Scan(
                    False, count, f"entry {count} may be a whole entry that lost its newline",
                    False, entries, prev, offset, tail_may_be_entry=True,
                )  # fmt: skip
            return Scan(False, count, f"entry {count}: a torn tail", True, entries, prev, offset)
        if expected is not None and count != expected:
            return Scan(
                False, min(count, expected), f"{count} entries where {expected} were due",
                False, entries, prev, offset,
            )  # fmt: skip
        return Scan(True, None, "", False, entries, prev, offset)

    def verify(
        self, path: Any, public_key: Ed25519PublicKey, *, expected_entries: int | None = None
    ) -> Scan:
        return self.scan(Path(path).read_bytes(), public_key, expected_entries)


class JournalRefused(Exception):
    pass


class Journal:
    """A signed journal recorder: record() returns OK once the entry is fsync'd."""

    reader = Verifier()

    def __init__(self, path: Any, signer: Any, *, fsync: Any = os.fsync) -> None:
        self.path = Path(path)
        self.signer = signer
        self.fsync = fsync
        key = signer.public_key
        data = self.path.read_bytes() if self.path.exists() else b""
        scan = self.reader.scan(data, key)
        keep = len(data)
        if not scan.ok:
            tail = data[scan.good_bytes :]
            at_tail = scan.bad_index == len(scan.entries) and b"\n" not in tail and tail
            if not at_tail:
                raise JournalRefused(f"{self.path}: {scan.reason}")
            if self.tail_may_be_entry(tail):
                self.quarantine(tail, scan.good_bytes)
            keep = scan.good_bytes  # a torn tail is cut; a whole one was moved first
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        if keep != len(data):
            os.ftruncate(self.fd, keep)
            self.sync(self.fd)
        self.size = keep
        self.seq = len(scan.entries)
        self.prev = scan.head
        self.broken: str | None = None

    def tail_may_be_entry(self, tail: bytes) -> bool:
        """On reopening: could this unterminated last segment be a whole entry?"""
        return _may_be_entry(tail)

    def quarantine(self, tail: bytes, offset: int) -> None:
        """Move a tail that may be an acknowledged entry, whole, to a file of its own."""
        target = self.path.with_name(f"{self.path.name}.quarantine-{offset}")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(tail)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)

    def sync(self, fd: int) -> None:
        """Make what was written to the journal durable (the kit's hook in process)."""
        self.fsync(fd)

    async def record(self, mutation: DispatchMutation) -> RecordOk | RecordError:
        if self.broken is not None:
            return RecordError(f"the journal is unusable until reopened: {self.broken}")
        try:
            body = {"mutation": mutation_dict(mutation), "prev": self.prev, "seq": self.seq, "v": 2}
            signed = DOMAIN + canonical(body)
            sig = self.signer.sign(signed)
        except Exception as error:
            return RecordError(f"could not sign the entry: {error!r}")
        line = canonical({**body, "sig": bytes(sig).hex()}) + b"\n"
        try:
            written = os.pwrite(self.fd, line, self.size)
            if written != len(line):
                raise OSError(f"short write: {written} of {len(line)} bytes")
            self.sync(self.fd)
        except Exception as error:
            self.broken = repr(error)
            return RecordError(f"could not write the entry durably: {error!r}")
        self.size += len(line)
        self.seq += 1
        self.prev = hashlib.sha256(signed).hexdigest()
        return RecordOk()

    def close(self) -> None:
        if self.fd >= 0:
            try:  # noqa: SIM105 (kept as written)
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1


# --------------------------------------------------------------------------- adapter


class Implementation:
    features: tuple[str, ...] = ("signed-journal", "record-time-limit")
    harness_class: type = Harness
    journal_class: type = Journal
    verifier: Verifier = Verifier()

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
        harness = self.harness_class(
            provider=provider, tools=tools, policy=policy, recorder=recorder,
            approver=approver, record_time_limit=record_time_limit,
            commit_time_limit=commit_time_limit,
        )  # fmt: skip
        messages: Sequence[Message] = await harness.turn(prompt)
        return messages

    def open_journal(self, path: Any, signer: Any, *, fsync: Any = os.fsync) -> Any:
        return self.journal_class(path, signer, fsync=fsync)

    def verify_journal(
        self, path: Any, public_key: Ed25519PublicKey, *, expected_entries: int | None = None
    ) -> Scan:
        return self.verifier.verify(path, public_key, expected_entries=expected_entries)


def make_adapter(
    impl: Implementation, name: str = "outsider-b11dr-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[DispatchRecorderDriver(impl)],
        backend=backend,
        concurrent=True,
    )


def build(backend: str = "asyncio") -> PythonAdapter:
    """The batch's base as an adapter (the original had module-level ``adapter`` and
    ``adapter_trio``): the control its variants are measured against."""
    return make_adapter(Implementation(), "outsider-b11dr-base", backend=backend)


def adapter() -> PythonAdapter:
    return build("asyncio")


def adapter_trio() -> PythonAdapter:
    return build("trio")
