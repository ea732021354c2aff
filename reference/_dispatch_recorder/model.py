"""The dispatch-recorder data model: mutations, record outcomes and the recorder protocol.

A *mutation* is any change a policy makes to what the model asked for or to what the model
will see: rewritten arguments, injected context, a redacted result. The recorder is the seam
through which each mutation is made durable (and, in a real deployment, signed by a control
plane) *before* it takes effect. Keeping these types in one small module lets the executor,
the turn loop, the journal and the conformance kit agree on them without importing each
other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "OK",
    "WITHHELD_NOTICE",
    "ContextInjection",
    "DispatchMutation",
    "DispatchRecorder",
    "InputRewrite",
    "Message",
    "MutationKind",
    "RecordError",
    "RecordOk",
    "RecordOutcome",
    "RecorderBase",
    "ResultRedaction",
    "ToolCall",
    "commit_step",
    "denial_text",
]

#: What the model sees instead of a result whose redaction could not be recorded
#: (DR-REDACT-FAIL). Fixed text, a seamspec decision: it says that something was withheld
#: and never hints at what, so nothing of the original leaks through the notice itself.
WITHHELD_NOTICE = "[result withheld: its redaction could not be recorded]"


def denial_text(reason: str) -> str:
    """The tool result of a denied call (a seamspec decision: upstream gives no text).

    One prefix for every denial, so a model (and a log reader) can tell a refused call
    from a tool that ran and failed; the reason follows verbatim.
    """
    return f"[tool call denied] {reason}"


@dataclass(frozen=True)
class InputRewrite:
    """The pre-dispatch policy replaced the call's arguments (both are JSON strings)."""

    original_args: str
    new_args: str
    kind: Literal["input_rewrite"] = "input_rewrite"


@dataclass(frozen=True)
class ContextInjection:
    """The pre-dispatch policy adds context that the call will run with."""

    context: str
    kind: Literal["context_injection"] = "context_injection"


@dataclass(frozen=True)
class ResultRedaction:
    """The post-dispatch policy replaces the tool's result before the model sees it."""

    original_result: str
    redacted_result: str
    kind: Literal["result_redaction"] = "result_redaction"


MutationKind = InputRewrite | ContextInjection | ResultRedaction


@dataclass(frozen=True)
class DispatchMutation:
    """One mutation of one tool call, exactly as it is handed to :meth:`record`."""

    tool_call_id: str
    tool_name: str
    kind: MutationKind

    def to_json(self) -> dict[str, Any]:
        """Plain data with the kind's fields inline; the journal signs this shape."""
        body: dict[str, Any] = {
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "kind": self.kind.kind,
        }
        for name, value in vars(self.kind).items():
            if name != "kind":
                body[name] = value
        return body

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DispatchMutation:
        kinds: dict[str, Any] = {
            "input_rewrite": InputRewrite,
            "context_injection": ContextInjection,
            "result_redaction": ResultRedaction,
        }
        fields = {k: v for k, v in data.items() if k not in ("tool_call_id", "tool_name", "kind")}
        return cls(str(data["tool_call_id"]), str(data["tool_name"]), kinds[data["kind"]](**fields))


@dataclass(frozen=True)
class RecordOk:
    """The mutation is durably recorded: applying it is now authorised."""


@dataclass(frozen=True)
class RecordError:
    """The mutation could not be recorded; the caller must not apply it (fail closed)."""

    reason: str


RecordOutcome = RecordOk | RecordError

#: The one ``RecordOk`` value; compare with ``isinstance(outcome, RecordOk)``.
OK = RecordOk()


@dataclass(frozen=True)
class ToolCall:
    """A tool call proposed by the model: its id, the tool's name and JSON arguments."""

    id: str
    name: str
    args: str


@dataclass(frozen=True)
class Message:
    """One entry of the transcript the model sees.

    ``role`` is ``user``, ``assistant`` (text and/or tool calls), ``context`` (injected
    context for the call ``tool_call_id``) or ``tool`` (the result of that call).
    """

    role: Literal["user", "assistant", "context", "tool"]
    content: str
    tool_call_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


@runtime_checkable
class DispatchRecorder(Protocol):
    """Makes each mutation durable before it may apply, and commits each accepted step.

    ``record`` returns :data:`OK` only once the mutation is durable; anything else (an
    error, an exception, running past the executor's time limit) means the mutation is
    not applied. ``commit_accepted_step`` is the turn's durability barrier: the loop makes
    no further provider or tool call until it returned :data:`OK`. Subclass
    :class:`RecorderBase` to get the default commit (``OK``).
    """

    async def record(self, mutation: DispatchMutation) -> RecordOutcome: ...

    async def commit_accepted_step(self, messages: Sequence[Message]) -> RecordOutcome: ...


class RecorderBase:
    """Base class providing the default ``commit_accepted_step``: always :data:`OK`.

    A recorder that only records mutations and has no step barrier of its own subclasses
    this and overrides ``record`` alone (DR-COMMIT-DEFAULT).
    """

    async def record(self, mutation: DispatchMutation) -> RecordOutcome:
        raise NotImplementedError

    async def commit_accepted_step(self, messages: Sequence[Message]) -> RecordOutcome:
        return OK


async def commit_step(recorder: object, messages: Sequence[Message]) -> RecordOutcome:
    """Call the recorder's ``commit_accepted_step``, or give :data:`OK` if it has none.

    Lets duck-typed recorders (only a ``record`` method, no base class) behave like the
    protocol's default.
    """
    commit = getattr(recorder, "commit_accepted_step", None)
    if commit is None:
        return OK
    outcome: RecordOutcome = await commit(messages)
    return outcome
