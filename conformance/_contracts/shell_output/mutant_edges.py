"""Sweep 13's shell-output mutants: edges no scenario touched before, one mistake each.

Each class is the reference :class:`ShellRunner` or :class:`ObservationSession` with one
plausible bug an implementer reading only the contract page could write: a time limit
raised to upstream's one-second floor, a child's own exit status 127 taken for a spawn
failure, a pane's text "cleaned" (CRLF, NFC, bell and backspace, blank chunks), words of
the runner's own shown as output, a sibling's session stopped by a cancellation, a
result read in text mode, and (after batch 13) a result kept as upstream's lossy text. ``mutants.py`` names them and the rule each breaks; the
contract page's "Sweep 13" section says which scenario kills each.
"""

from __future__ import annotations

import contextvars
import unicodedata
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from seamspec.reference import ObservationSession, SessionPhase, ShellOutputStream, ShellRunner
from seamspec.reference._shell_output.runner import CommandFailed, ShellResult

# Names starting with an underscore: these classes are reached only through mutants.py.
__all__: list[str] = []


class _TimeoutFloorOneSecond(ShellRunner):
    """Runs every time limit as at least one second, as upstream's tool runs a requested 0."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        if kwargs.get("timeout") is not None:
            kwargs["timeout"] = max(float(kwargs["timeout"]), 1.0)
        return await super().run(argv, **kwargs)


#: The sessions a run completed, held back until it knows how the child exited.
_HELD: contextvars.ContextVar[list[ObservationSession] | None] = contextvars.ContextVar(
    "soo_sweep13_held", default=None
)


class _ExitStatus127IsSpawnFailure(ShellRunner):
    """Takes a child's own exit status 126 or 127 for a program that could not be spawned: an error, no on_finish."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        held: list[ObservationSession] = []
        token = _HELD.set(held)
        try:
            result = await super().run(argv, **kwargs)
        finally:
            _HELD.reset(token)
        if result.exit_code in (126, 127):
            for session in held:
                session.cancel()
            raise CommandFailed(f"cannot run {argv[0]!r} (exit status {result.exit_code})")
        for session in held:
            session.finish()
        return result

    def _complete(self, session: ObservationSession | None) -> None:
        held = _HELD.get()
        if held is None or session is None:
            super()._complete(session)
        else:
            held.append(session)


class _CrlfToLf(ObservationSession):
    """Turns CRLF line endings into LF before the pane sees them (a terminal's newline clean-up)."""

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes | None:
        accepted = super()._accept(stream, chunk)
        return None if accepted is None else accepted.replace(b"\r\n", b"\n")


class _NfcForPane(ObservationSession):
    """Normalises each chunk that is valid UTF-8 to NFC (composed accents); other bytes pass as read."""

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes | None:
        accepted = super()._accept(stream, chunk)
        if accepted is None:
            return None
        try:
            text = accepted.decode("utf-8")
        except UnicodeDecodeError:
            return accepted
        return unicodedata.normalize("NFC", text).encode("utf-8")


class _BellAndBackspaceStripped(ObservationSession):
    """Strips BEL and backspace bytes (0x07, 0x08) from chunks, so a pane never beeps or overwrites."""

    def _accept(self, stream: ShellOutputStream, chunk: bytes) -> bytes | None:
        accepted = super()._accept(stream, chunk)
        return None if accepted is None else accepted.translate(None, b"\x07\x08")


class _BlankChunksSkipped(ObservationSession):
    """Skips whitespace-only chunks (``if not chunk.strip()``), taking them for empty ones."""

    def offer(self, stream: ShellOutputStream | str, chunk: bytes) -> None:
        if bytes(chunk).strip():
            super().offer(stream, chunk)


class _CancelStopsEverySession(ShellRunner):
    """Cancelling (or timing out) one invocation stops every session of its runner still open."""

    def _stop(self, session: ObservationSession | None) -> None:
        with self._lock:
            open_sessions = list(self._sessions)
        for other in open_sessions:
            other.cancel()
        super()._stop(session)


class _SpawnErrorToldToPane(ShellRunner):
    """Tells the pane why a program could not be spawned (on stderr), then ends without on_finish."""

    def _on_spawn_error(self, session: ObservationSession | None) -> None:
        if session is None:
            return
        session.offer(ShellOutputStream.STDERR, b"cannot run the command\n")
        with session._cond:  # shown, then over: no on_finish (the queue is not dropped)
            if session._phase is SessionPhase.ACTIVE:
                session._phase = SessionPhase.FINISHED
                session._cond.notify()


class _TimeoutToldToPane(ShellRunner):
    """At the time limit, drops the queue but shows the pane a "[timed out]" line, then no on_finish."""

    def _on_timeout(self, session: ObservationSession | None) -> None:
        if session is None:
            return
        with session._cond:
            if session._phase is SessionPhase.ACTIVE:
                session._drop_queue()
                session._queue.append((ShellOutputStream.STDERR, b"\n[timed out]\n"))
                session._phase = SessionPhase.FINISHED
                session._cond.notify()


def _text_mode(data: bytes) -> bytes:
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return text.encode("utf-8")


class _ResultInTextMode(ShellRunner):
    """Builds the result's streams as text mode reads them: bad UTF-8 becomes U+FFFD, CRLF and CR become LF."""

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        result = await super().run(argv, **kwargs)
        return replace(result, stdout=_text_mode(result.stdout), stderr=_text_mode(result.stderr))


def _as_upstream_text(data: bytes, cap: int) -> bytes:
    text = data[:cap].decode("utf-8", "replace").encode("utf-8")
    end = min(len(text), cap)
    while end and end < len(text) and (text[end] & 0xC0) == 0x80:
        end -= 1
    return text[:end]


class _ResultAsUpstreamText(ShellRunner):
    """Keeps the result's streams as upstream's text: lossy-decoded, cut back to a character.

    Every valid byte (a CR included) stays, so SOO-ENVELOPE holds as upstream reads it;
    only seamspec's SOO-RESULT-BYTES (strict) is broken.
    """

    async def run(self, argv: Sequence[str], **kwargs: Any) -> ShellResult:
        result = await super().run(argv, **kwargs)
        cap = self.output_cap
        # upstream also flags a stream whose decoded text outgrew the cap (1010-1011)
        grown = {
            s: len(data.decode("utf-8", "replace").encode("utf-8")) > cap
            for s, data in (("out", result.stdout), ("err", result.stderr))
        }
        return replace(
            result,
            stdout=_as_upstream_text(result.stdout, cap),
            stderr=_as_upstream_text(result.stderr, cap),
            stdout_truncated=result.stdout_truncated or grown["out"],
            stderr_truncated=result.stderr_truncated or grown["err"],
        )
