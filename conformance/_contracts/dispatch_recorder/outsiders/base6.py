"""An outsider's dispatch recorder: tool executor, turn loop and signed journal (batch 6).

Written from docs/contracts/dispatch-recorder.md and the driver's protocol (plus the public
model types of ``seamspec.reference``), without reading the reference, the scenarios or
the mutants. Kept as written (the original ``b6dr_base.py`` had sha256
78b075a222b698cecfbfd1b6959f83690aea36854bed962beb8df2ae1a0cc5e4); only imports, typing,
the layout (ruff format) and the adapter factories at the end (``make_adapter``,
``build``) were touched. It conforms to every DR scenario under both profiles (138 of 138
on main f94b013, on its first run), and it is the control the batch's variants
(``batch6.py``) are judged against. Its methods are small so that each variant overrides
exactly one.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import inspect
import json
import os
import re
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


# --------------------------------------------------------------------------------------
# canonical bytes
# --------------------------------------------------------------------------------------


def canonical(x: Any) -> bytes:
    return json.dumps(
        x, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def genesis(key: Ed25519PublicKey) -> str:
    return hashlib.sha256(DOMAIN + b"genesis" + raw_public(key)).hexdigest()


def mutation_dict(mutation: DispatchMutation) -> dict[str, Any]:
    kind = mutation.kind
    out: dict[str, Any] = {"tool_call_id": mutation.tool_call_id, "tool_name": mutation.tool_name}
    for f in dataclasses.fields(kind):
        out[f.name] = getattr(kind, f.name)
    return out


# --------------------------------------------------------------------------------------
# the executor and turn loop
# --------------------------------------------------------------------------------------


class _Failed(Exception):
    """Internal: a record that did not return OK (its reason)."""


class Harness:
    """One turn's worth of executor state; a new one per ``run_turn``."""

    def __init__(
        self, *, provider: Any, tools: Any, policy: Any, recorder: Any, approver: Any,
        record_time_limit: float | None, commit_time_limit: float | None,
    ) -> None:  # fmt: skip
        self.provider = provider
        self.tools = tools
        self.policy = policy
        self.recorder = recorder
        self.approver = approver
        self.record_time_limit = record_time_limit
        self.commit_time_limit = commit_time_limit

    # -- texts ---------------------------------------------------------------------

    def deny_text(self, reason: str) -> str:
        return DENIED + reason

    def approval_denied_text(self, reason: str) -> str:
        return DENIED + "approval required and not given: " + reason

    def rewrite_failed_text(self, new_args: str, reason: str) -> str:
        return DENIED + "the argument rewrite could not be recorded: " + reason

    def inject_failed_text(self, context: str, reason: str) -> str:
        return DENIED + "the context injection could not be recorded: " + reason

    # -- the recorder ---------------------------------------------------------------

    async def _bounded(self, limit: float | None, call: Any) -> Any:
        """Await ``call()`` under ``limit``; returns (timed_out, outcome or exception)."""
        if limit is None:
            try:
                return False, await call()
            except Exception as error:  # cancellation is a BaseException: it propagates
                return False, error
        with anyio.move_on_after(limit) as scope:
            try:
                outcome: Any = await call()
            except Exception as error:
                outcome = error
        if scope.cancel_called or scope.cancelled_caught:
            return True, None
        return False, outcome

    async def record(self, mutation: DispatchMutation) -> str | None:
        """None when recorded OK, else the reason it failed."""
        timed_out, outcome = await self._bounded(
            self.record_time_limit, lambda: self.recorder.record(mutation)
        )
        # A cancellation of the turn wins over the answer and over the limit.
        await anyio.lowlevel.checkpoint_if_cancelled()
        return self._judge(timed_out, outcome, self.record_time_limit, "record")

    async def record_redaction(self, mutation: DispatchMutation) -> str | None:
        return await self.record(mutation)

    @staticmethod
    def _judge(timed_out: bool, outcome: Any, limit: float | None, what: str) -> str | None:
        if timed_out:
            return f"{what} timed out after {limit} s"
        if isinstance(outcome, BaseException):
            return repr(outcome)
        if isinstance(outcome, RecordOk):
            return None
        if isinstance(outcome, RecordError):
            return outcome.reason
        return f"{what} returned {outcome!r}, not OK"

    def commit_limit(self, final: bool) -> float | None:
        return self.commit_time_limit

    async def commit(self, step: int, messages: tuple[Message, ...], final: bool) -> None:
        fn = getattr(self.recorder, "commit_accepted_step", None)
        if fn is None:  # duck-typed recorder without a commit: the default is OK
            return
        limit = self.commit_limit(final)
        timed_out, outcome = await self._bounded(limit, lambda: fn(messages))
        await anyio.lowlevel.checkpoint_if_cancelled()
        reason = self._judge(timed_out, outcome, limit, "commit")
        if reason is not None:
            raise CommitFailed(step, reason, messages)

    # -- one call -------------------------------------------------------------------

    async def ask_approver(self, call: Any, reason: str) -> bool:
        if self.approver is None:
            return False
        answer = self.approver(call, reason)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer is True

    async def run_tool(self, call: Any, args: str, context: tuple[str, ...]) -> str:
        try:
            result = await self.tools.run(ToolInvocation(call.id, call.name, args, context))
        except Exception as error:
            return "[tool failed] " + repr(error)
        return str(result)

    async def one_call(self, call: Any) -> list[Message]:
        """The messages this call adds to the transcript, in order."""
        decision = await self.policy.before_dispatch(call)
        args = call.args
        context: tuple[str, ...] = ()
        if isinstance(decision, Allow):
            pass
        elif isinstance(decision, Deny):
            return [Message("tool", self.deny_text(decision.reason), tool_call_id=call.id)]
        elif isinstance(decision, RequireApproval):
            if not await self.ask_approver(call, decision.reason):
                text = self.approval_denied_text(decision.reason)
                return [Message("tool", text, tool_call_id=call.id)]
        elif isinstance(decision, RewriteArgs):
            if self.recorder is not None:
                mutation = DispatchMutation(
                    call.id, call.name, InputRewrite(call.args, decision.new_args)
                )
                failed = await self.record(mutation)
                if failed is not None:
                    text = self.rewrite_failed_text(decision.new_args, failed)
                    return [Message("tool", text, tool_call_id=call.id)]
                args = decision.new_args
        elif isinstance(decision, InjectContext):
            if self.recorder is not None:
                mutation = DispatchMutation(call.id, call.name, ContextInjection(decision.context))
                failed = await self.record(mutation)
                if failed is not None:
                    text = self.inject_failed_text(decision.context, failed)
                    return [Message("tool", text, tool_call_id=call.id)]
                context = (decision.context,)
        else:  # a decision this executor does not know: fail closed
            return [Message("tool", self.deny_text(f"unknown decision {decision!r}"),
                            tool_call_id=call.id)]  # fmt: skip

        result = await self.run_tool(call, args, context)
        released = result
        redacted = await self.policy.after_dispatch(call, result)
        if redacted is not None and self.recorder is not None:
            mutation = DispatchMutation(call.id, call.name, ResultRedaction(result, redacted))
            failed = await self.record_redaction(mutation)
            released = WITHHELD if failed is not None else redacted
        out = [Message("context", c, tool_call_id=call.id) for c in context]
        out.append(Message("tool", released, tool_call_id=call.id))
        return out

    # -- the turn -------------------------------------------------------------------

    async def turn(self, prompt: str) -> list[Message]:
        transcript: list[Message] = [Message("user", prompt)]
        step = 0
        while True:
            answer = await self.provider.next_step(list(transcript))
            calls = tuple(answer.tool_calls or ())
            step_messages: list[Message] = [
                Message("assistant", answer.text or "", tool_calls=calls)
            ]
            for call in calls:
                step_messages.extend(await self.one_call(call))
            transcript.extend(step_messages)
            if self.recorder is not None:
                await self.commit(step, tuple(step_messages), final=not calls)
            if not calls:
                return transcript
            step += 1


class Implementation:
    """What ``DispatchRecorderDriver`` drives."""

    features: tuple[str, ...] = ("record-time-limit", "signed-journal")
    harness_class: type[Harness] = Harness

    async def run_turn(
        self, *, prompt: str, provider: Any, tools: Any, policy: Any, recorder: Any,
        approver: Any, record_time_limit: float | None, commit_time_limit: float | None,
    ) -> list[Message]:  # fmt: skip
        for limit in (record_time_limit, commit_time_limit):
            if limit is not None and limit <= 0:
                raise ValueError("time limits must be positive or None")
        harness = self.harness_class(
            provider=provider, tools=tools, policy=policy, recorder=recorder,
            approver=approver, record_time_limit=record_time_limit,
            commit_time_limit=commit_time_limit,
        )  # fmt: skip
        return await harness.turn(prompt)

    def open_journal(self, path: Any, signer: Any, *, fsync: Any = os.fsync) -> Journal:
        return self.journal_class.open(Path(path), signer, fsync=fsync, verifier=self.verifier())

    def verify_journal(
        self, path: Any, public_key: Ed25519PublicKey, *, expected_entries: int | None = None
    ) -> Verdict:
        return self.verifier().scan(Path(path).read_bytes(), public_key, expected_entries)

    def verifier(self) -> Verifier:
        return self.verifier_class()

    # set below, once the classes exist
    journal_class: type[Journal] = None  # type: ignore[assignment]
    verifier_class: type[Verifier] = None  # type: ignore[assignment]


# --------------------------------------------------------------------------------------
# the verifier
# --------------------------------------------------------------------------------------


@dataclass
class Entry:
    seq: int
    mutation: dict[str, Any]
    hash: str
    end: int  # offset just past this entry's newline


@dataclass
class Verdict:
    ok: bool
    bad_index: int | None
    reason: str | None
    torn_tail: bool
    entries: list[Entry] = field(default_factory=list)
    # for the recorder: the entries read whole, and whether the tail may be a whole entry
    valid_bytes: int = 0
    head: str = ""
    lines: int = 0
    lost_newline: bool = False


class Verifier:
    SIG = re.compile("[0-9a-f]{128}")

    def sig_ok(self, sig: Any) -> bool:
        return isinstance(sig, str) and self.SIG.fullmatch(sig) is not None

    def line_problem(self, line: bytes, seq: int, prev: str, key: Ed25519PublicKey,
                     gen: str) -> tuple[str | None, Any, str]:  # fmt: skip
        """(problem or None, entry, this entry's hash)."""
        try:
            entry = json.loads(line)
        except ValueError:
            return "is not JSON", None, ""
        if not isinstance(entry, dict):
            return "is not a JSON object", None, ""
        if self.fields_problem(entry):
            return f"has fields {sorted(entry)}, expected {sorted(FIELDS)}", None, ""
        try:
            if canonical(entry) != line:
                return "is not in canonical form", None, ""
        except ValueError:
            return "is not in canonical form", None, ""
        s = entry["seq"]
        if type(s) is not int or s != seq:
            return f"has seq {s!r}, expected {seq}", None, ""
        if not self.version_ok(entry["v"]):
            return f"has version {entry['v']!r}, expected 2", None, ""
        if not isinstance(entry["mutation"], dict):
            return "has a mutation that is not an object", None, ""
        if not self.sig_ok(entry["sig"]):
            return "has a signature that is not 128 lower-case hex digits", None, ""
        if entry["prev"] != prev:
            if seq == 0 and isinstance(entry["prev"], str) and entry["prev"] != gen:
                return (
                    f"entry 0 is signed by key {entry['prev'][:8]}..., expected {gen[:8]}...",
                    None,
                    "",
                )
            return "does not chain to the entry before it", None, ""
        body = {k: entry[k] for k in ("mutation", "prev", "seq", "v")}
        signed = DOMAIN + canonical(body)
        try:
            key.verify(bytes.fromhex(entry["sig"]), signed)
        except (InvalidSignature, ValueError):
            return "has a signature that does not verify with this public key", None, ""
        return None, entry, hashlib.sha256(signed).hexdigest()

    @staticmethod
    def version_ok(v: Any) -> bool:
        return type(v) is int and v == 2

    def fields_problem(self, entry: dict[str, Any]) -> bool:
        return set(entry) != FIELDS

    @staticmethod
    def may_be_entry(segment: bytes) -> bool:
        for candidate in (segment, segment[:-1]):
            try:
                if isinstance(json.loads(candidate), dict):
                    return True
            except ValueError:
                pass
        return False

    def scan(self, data: bytes, key: Ed25519PublicKey, expected: int | None) -> Verdict:
        gen = genesis(key)
        prev = gen
        *lines, tail = data.split(b"\n")
        entries: list[Entry] = []
        offset = 0
        for seq, line in enumerate(lines):
            problem, entry, digest = self.line_problem(line, seq, prev, key, gen)
            if problem is not None:
                return Verdict(False, seq, f"entry {seq} {problem}", False, entries,
                               valid_bytes=offset, head=prev, lines=seq)  # fmt: skip
            offset += len(line) + 1
            entries.append(Entry(seq, entry["mutation"], digest, offset))
            prev = digest
        n = len(lines)
        if tail:
            if self.may_be_entry(tail):
                return Verdict(False, n, f"entry {n} may be a whole entry that lost its newline",
                               False, entries, valid_bytes=offset, head=prev, lines=n,
                               lost_newline=True)  # fmt: skip
            return Verdict(False, n, f"entry {n}: a torn tail (an interrupted append)", True,
                           entries, valid_bytes=offset, head=prev, lines=n)  # fmt: skip
        if expected is not None and n != expected:
            bad = min(n, expected)
            return Verdict(False, bad, f"holds {n} entries, expected {expected}", False,
                           entries, valid_bytes=offset, head=prev, lines=n)  # fmt: skip
        return Verdict(True, None, None, False, entries, valid_bytes=offset, head=prev, lines=n)


# --------------------------------------------------------------------------------------
# the journal recorder
# --------------------------------------------------------------------------------------


class JournalRefused(Exception):
    pass


class Journal:
    """A signed journal: ``record`` returns OK only once its line is fsync'd."""

    def __init__(self, fd: int, signer: Any, fsync: Any, seq: int, prev: str) -> None:
        self.fd = fd
        self.signer = signer
        self.fsync = fsync
        self.seq = seq
        self.prev = prev
        self.broken: str | None = None

    # -- opening --------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, signer: Any, *, fsync: Any, verifier: Verifier) -> Journal:
        key = signer.public_key
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                raise JournalRefused(f"{path} is locked by another writer") from error
            data = cls.read_all(fd)
            seq, prev = cls.resume(fd, data, key, fsync, verifier)
            os.lseek(fd, 0, os.SEEK_END)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, signer, fsync, seq, prev)

    @staticmethod
    def read_all(fd: int) -> bytes:
        os.lseek(fd, 0, os.SEEK_SET)
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    @classmethod
    def resume(cls, fd: int, data: bytes, key: Any, fsync: Any,
               verifier: Verifier) -> tuple[int, str]:  # fmt: skip
        """Where the next entry goes: (seq, prev); cuts a torn tail; refuses damage."""
        verdict = verifier.scan(data, key, None)
        if verdict.ok:
            return verdict.lines, verdict.head
        if verdict.torn_tail and verdict.bad_index == verdict.lines:
            cls.cut(fd, verdict.valid_bytes, fsync)
            return verdict.lines, verdict.head
        raise JournalRefused(f"the journal does not verify: {verdict.reason}")

    @staticmethod
    def cut(fd: int, size: int, fsync: Any) -> None:
        os.ftruncate(fd, size)
        fsync(fd)

    # -- recording ------------------------------------------------------------------

    def entry_line(self, mutation: dict[str, Any]) -> tuple[bytes, str]:
        body = {"mutation": mutation, "prev": self.prev, "seq": self.seq, "v": 2}
        signed = DOMAIN + canonical(body)
        sig = bytes(self.signer.sign(signed)).hex()
        line = canonical({**body, "sig": sig}) + b"\n"
        return line, hashlib.sha256(signed).hexdigest()

    def append(self, line: bytes) -> None:
        view = memoryview(line)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
        self.fsync(self.fd)

    async def record(self, mutation: DispatchMutation) -> RecordOk | RecordError:
        if self.broken is not None:
            return RecordError(f"the journal refuses records until reopened: {self.broken}")
        try:
            line, digest = self.entry_line(mutation_dict(mutation))
        except Exception as error:  # the signer failed: nothing written
            return RecordError(f"signing failed: {error!r}")
        try:
            self.append(line)
        except Exception as error:  # the tail is in doubt
            self.broken = repr(error)
            return RecordError(f"the journal write failed: {error!r}")
        self.seq += 1
        self.prev = digest
        return OK

    async def commit_accepted_step(self, messages: Any) -> RecordOk | RecordError:
        return OK

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)  # also releases the flock


Implementation.journal_class = Journal
Implementation.verifier_class = Verifier


def make_adapter(
    impl: Implementation, name: str = "outsider-batch6-dr-base", backend: str = "asyncio"
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
