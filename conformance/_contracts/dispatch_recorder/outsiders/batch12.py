"""Six broken variants of ``base12``, each with exactly one plausible bug.

Outsider batch 12 of the dispatch recorder (dr12), written before any of them was run
against the suite (the original ``b12dr_variants.py`` had sha256
edd6656d7de322409b0f5f0fc1ad7577d87355dc43ae6ec4615aa862a90e7cbb). Kept as written: only
imports, the layout (ruff format) and the catalogue at the end (``VARIANTS`` maps each
name to its harness instead of listing (name, rule, statement) triples, and the module's
``V_*`` adapters are gone: ``adapter(name)`` builds one) changed. Against the suite of
main 83f2bad (2026-12-03) none was killed properly: all six survived
(``out-dr12-context-log-by-call-id``, ``out-dr12-breaker-after-two-timeouts``,
``out-dr12-output-cap-30k``, ``out-dr12-deny-prefix-not-doubled``,
``out-dr12-reused-tool-calls-buffer``, ``out-dr12-payload-utf8-scrub``); the scenarios
named in ``docs/contracts/dispatch-recorder.md`` ("Outsider mutants", batch 12) were
written for them. Variants in ``PENDING`` are kept but not registered as mutants yet;
those in ``REJECTED`` are not bugs and never will be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seamspec.conformance._contracts.dispatch_recorder.outsiders.base12 import (
    Harness,
    _Turn,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import (
    ContextInjection,
    DispatchMutation,
    InputRewrite,
    Message,
    RecordError,
    RecordOk,
    ResultRedaction,
)

# -- 1. injected contexts looked up by call ID for the transcript ----------------------


class _ContextLogTurn(_Turn):
    """The transcript shows a call's context from the turn's injection log, keyed by call
    ID; a reused ID whose own injection failed shows the earlier call's context."""

    async def record(self, mutation: DispatchMutation) -> Any:
        outcome = await super().record(mutation)
        if isinstance(outcome, RecordOk) and isinstance(mutation.kind, ContextInjection):
            self.state.setdefault("injected", {})[mutation.tool_call_id] = mutation.kind.context
        return outcome

    async def dispatch(self, call: Any) -> list[Message]:
        messages = [m for m in await super().dispatch(call) if m.role != "context"]
        injected = self.state.get("injected", {})
        if call.id in injected:
            messages.insert(0, Message("context", injected[call.id], call.id, ()))
        return messages


class ContextLogHarness(Harness):
    turn_class = _ContextLogTurn


# -- 2. a circuit breaker after two record time-outs in a row ----------------------------


class _BreakerTurn(_Turn):
    """After two consecutive records timed out, the signer is taken to be down and later
    records of the turn fail at once, without calling the recorder."""

    TRIP_AFTER = 2

    async def record(self, mutation: DispatchMutation) -> Any:
        timeouts = self.state.get("timeouts", 0)
        if timeouts >= self.TRIP_AFTER:
            return RecordError(f"signer unavailable: {timeouts} records in a row timed out")
        outcome = await super().record(mutation)
        if isinstance(outcome, RecordError) and outcome.reason.startswith("record timed out"):
            self.state["timeouts"] = timeouts + 1
        else:
            self.state["timeouts"] = 0
        return outcome


class BreakerHarness(Harness):
    turn_class = _BreakerTurn


# -- 3. every released result capped at 30,000 characters -------------------------------


class OutputCapHarness(Harness):
    """Caps what a tool message shows the model, redacted results included."""

    CAP = 30_000

    def release_text(self, text: str) -> str:
        if len(text) > self.CAP:
            return text[: self.CAP] + "\n[... output truncated ...]"
        return text


# -- 4. the denial prefix is not added twice ---------------------------------------------


class NoDoublePrefixHarness(Harness):
    """A deny reason that already starts with the denial prefix is used as it stands."""

    def denial(self, reason: str) -> str:
        if reason.startswith("[tool call denied]"):
            return reason
        return super().denial(reason)


# -- 5. a reused buffer for the assistant message's tool calls ---------------------------


class _CallBufferTurn(_Turn):
    """The assistant message holds the turn's one tool-call buffer, refilled every step."""

    async def run(self, prompt: str) -> list[Message]:
        transcript = self.h.transcript_start(prompt)
        pending: list[Any] = []
        step_index = 0
        while True:
            step = await self.provider.next_step(tuple(transcript))
            pending.clear()
            pending.extend(step.tool_calls or ())
            assistant = Message("assistant", step.text, None, pending)  # type: ignore[arg-type]
            step_messages: list[Message] = [assistant]
            for call in list(pending):
                step_messages.extend(await self.dispatch(call))
            transcript.extend(step_messages)
            if self.recorder is not None:
                await self.commit(step_index, list(step_messages))
            if not pending:
                return transcript
            step_index += 1


class CallBufferHarness(Harness):
    turn_class = _CallBufferTurn


# -- 6. mutation payloads made UTF-8-safe before they are recorded -----------------------


def _utf8_safe(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


class _Utf8PayloadTurn(_Turn):
    """The journal is UTF-8, so the payload's strings are made encodable before record."""

    async def record(self, mutation: DispatchMutation) -> Any:
        kind = mutation.kind
        if isinstance(kind, InputRewrite):
            kind = InputRewrite(_utf8_safe(kind.original_args), _utf8_safe(kind.new_args))
        elif isinstance(kind, ContextInjection):
            kind = ContextInjection(_utf8_safe(kind.context))
        elif isinstance(kind, ResultRedaction):
            kind = ResultRedaction(
                _utf8_safe(kind.original_result), _utf8_safe(kind.redacted_result)
            )
        return await super().record(
            DispatchMutation(mutation.tool_call_id, mutation.tool_name, kind)
        )


class Utf8PayloadHarness(Harness):
    turn_class = _Utf8PayloadTurn


_WRITTEN: tuple[tuple[str, str, str, type[Harness]], ...] = (
    (
        "out-dr12-context-log-by-call-id",
        "DR-INJECT-FAIL",
        "The transcript takes a call's context message from a turn-wide log of recorded injections keyed by call ID, so a reused ID whose own injection record failed still shows the earlier call's context to the model.",
        ContextLogHarness,
    ),
    (
        "out-dr12-breaker-after-two-timeouts",
        "DR-HANG",
        "After two consecutive records time out, a circuit breaker fails every later record of the turn at once without calling the recorder, so a healthy signer's next record is failed because earlier ones hung.",
        BreakerHarness,
    ),
    (
        "out-dr12-output-cap-30k",
        "DR-REDACT",
        "Every tool message is capped at 30,000 characters plus a truncation marker, so a recorded redaction longer than that is not released verbatim.",
        OutputCapHarness,
    ),
    (
        "out-dr12-deny-prefix-not-doubled",
        "DR-OUTCOME-TEXT",
        "A deny reason that already begins with '[tool call denied]' is used without the prefix being added, so the result is not the prefix followed by the reason.",
        NoDoublePrefixHarness,
    ),
    (
        "out-dr12-reused-tool-calls-buffer",
        "DR-COMMIT-STEP",
        "The assistant message holds the turn's single tool-call list, cleared and refilled each step, so a committed step's assistant message changes afterwards (step 0's tool calls become the next step's, or none).",
        CallBufferHarness,
    ),
    (
        "out-dr12-payload-utf8-scrub",
        "DR-ONE-RECORD",
        "Mutation payloads are passed through encode('utf-8', 'replace') before record, so a lone surrogate in args, context or a result is recorded as '?' instead of verbatim.",
        Utf8PayloadHarness,
    ),
)

#: Rules changed from what the outsider wrote, with why (none).
RELABELLED: dict[str, str] = {}


@dataclass(frozen=True)
class Variant:
    """One of the batch's bugs: the rule it breaks, what it does, and its harness."""

    name: str
    rule: str
    statement: str
    implementation: Harness


#: Every variant of the batch by its own name (``out-dr12-...``), as written.
VARIANTS: dict[str, Variant] = {
    name: Variant(name, RELABELLED.get(name, rule), statement, cls())
    for name, rule, statement, cls in _WRITTEN
}

#: Variants kept but not yet registered as mutants (no scenario kills them yet), with why
#: (none left: the triage's scenarios kill five, and one is rejected).
PENDING: dict[str, str] = {}

#: Variants that are not bugs (upstream and seamspec allow what they do), with why; kept
#: here, never registered as mutants.
REJECTED: dict[str, str] = {
    "out-dr12-payload-utf8-scrub": (
        "an equivalent mutant in the contract's domain: encode('utf-8', 'replace') changes "
        "only lone surrogates, and no payload can hold one. Upstream's mutation fields are "
        "Rust Strings, valid UTF-8 by type, and its tools decode output lossily before any "
        "policy sees it (agent-bridle-tool-shell/src/brush_shell.rs:282-283, "
        "shell_tool.rs:1956); the kit's data is valid Unicode text sent as UTF-8 JSON, and "
        "its loader refuses a lone surrogate (conformance/_core/yaml_composer.py:337-343, "
        "docs/scenarios.md). For every string an implementation can be given, the scrub is "
        "the identity, so the record is the mutation applied."
    ),
}


def implementation(name: str) -> Harness:
    """The harness of variant ``name``, as the DR driver wants one."""
    return VARIANTS[name].implementation


def adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    return make_adapter(VARIANTS[name].implementation, name=name, backend=backend)


#: The variants registered as mutants (under their own names): all but pending and rejected.
MUTANTS = {n: v for n, v in VARIANTS.items() if n not in PENDING and n not in REJECTED}

__all__ = [
    "MUTANTS",
    "PENDING",
    "REJECTED",
    "RELABELLED",
    "VARIANTS",
    "Variant",
    "adapter",
    "implementation",
]
