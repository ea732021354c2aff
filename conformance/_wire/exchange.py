"""One run message and its answer, read so that every line is blamed on the right scenario.

The protocol is strictly one answer per run, and each answer repeats its run's ``seq``.
A line that is not the answer in flight is a protocol break, but not necessarily the
in-flight scenario's: an implementation that answers scenario N twice, or writes more
after its answer, is seen only while N+1 runs (or when it is stopped). The
:class:`Ledger` remembers which scenario each recent ``seq`` asked, and which scenario
each child answered last, so that:

- output found before a run is sent, or an answer carrying an earlier ``seq``, makes
  *that* earlier scenario an error (a :class:`LateError`), and the scenario in flight is
  asked again of a fresh child (:class:`Stale`);
- an ``error`` without ``seq`` (an answer to no run: only a refused handshake has none)
  after an earlier answer is placed by asking the scenario in flight again of a fresh
  child (:class:`Unplaced`): answered properly there, the error was the earlier one's;
  the same again, and it is the in-flight scenario's own;
- a second line right behind an answer makes that answer's scenario an error at once.

In every case the child that broke the protocol is killed; a fresh one takes over.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from seamspec.conformance._core.adapter import LateError
from seamspec.conformance._core.errors import ImplementationError
from seamspec.conformance._wire.child import EOF, STDERR_LINE_LIMIT, StreamLimit, WireChild
from seamspec.conformance._wire.messages import RESPONSES, ProtocolError, decode_line, quote

__all__ = ["Exchange", "Ledger", "Stale", "Unplaced", "stderr_context"]

#: How many recent run messages are remembered to place a late answer by its seq.
ASKED_KEPT = 64


def stderr_context(child: WireChild, mark: int, extra: str = "") -> str:
    """The ``context`` for an error: what the implementation said, then its stderr."""
    lines = child.stderr_since(mark)
    parts = [extra] if extra else []
    if lines:
        parts.append("stderr of the implementation (last lines):")
        parts.extend(f"  {text}" for text in lines)
    else:
        parts.append("(the implementation wrote nothing to stderr)")
    return "\n".join(parts)


def _broke(scenario: str, what: str) -> str:
    return f"scenario {scenario}: the implementation broke the protocol: {what}"


class Stale(Exception):
    """The child's line was about an earlier scenario (recorded as a late error): the
    scenario in flight was not the child's to spoil, and is asked again of a fresh child."""


class Unplaced(Exception):
    """An error without seq arrived after the child had answered ``previous``: it is that
    scenario's, unless the scenario in flight gets the same from a fresh child."""

    def __init__(self, previous: str, scenario: str, line: bytes, context: str) -> None:
        super().__init__(previous)
        self.previous, self.scenario, self.line, self.context = previous, scenario, line, context

    def late_error(self) -> LateError:
        return LateError(
            self.previous,
            _broke(
                self.previous,
                "after its answer to this scenario it wrote an error without seq, which "
                f"answers no run (scenario {self.scenario}, asked again of a fresh child, "
                f"was answered properly)\n  line: {quote(self.line)}",
            ),
            self.context,
        )


class Ledger:
    """What the adapter asked and was answered, to place lines that arrive out of turn."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asked: dict[int, tuple[WireChild, str]] = {}
        self._last: dict[WireChild, str] = {}
        self._late: list[LateError] = []

    def asked(self, seq: int, child: WireChild, scenario: str) -> None:
        with self._lock:
            self._asked[seq] = (child, scenario)
            while len(self._asked) > ASKED_KEPT:
                del self._asked[next(iter(self._asked))]

    def earlier(self, seq: object, child: WireChild, current: int) -> str | None:
        """The scenario an earlier run message to ``child`` with this ``seq`` asked."""
        if not isinstance(seq, int) or isinstance(seq, bool) or seq >= current:
            return None
        with self._lock:
            asked = self._asked.get(seq)
        return asked[1] if asked is not None and asked[0] is child else None

    def answered(self, child: WireChild, scenario: str) -> None:
        with self._lock:
            self._last[child] = scenario

    def last(self, child: WireChild) -> str | None:
        """The scenario ``child`` answered last: what it writes next is about that one."""
        with self._lock:
            return self._last.get(child)

    def forget(self, child: WireChild) -> None:
        with self._lock:
            self._last.pop(child, None)

    def late(self, error: LateError) -> None:
        with self._lock:
            self._late.append(error)

    def take(self) -> list[LateError]:
        with self._lock:
            late, self._late = self._late, []
        return late


class Exchange:
    """One attempt at one scenario with one child. ``discard`` kills the child (and
    makes the adapter start a fresh one next time)."""

    def __init__(
        self,
        child: WireChild,
        scenario: str,
        ledger: Ledger,
        *,
        timeout: float,
        strict: bool,
        discard: Callable[[], None],
    ) -> None:
        self.child, self.scenario, self.ledger = child, scenario, ledger
        self.timeout, self.strict, self._discard = timeout, strict, discard
        self.mark = child.stderr_mark()
        self._expected: tuple[str, ...] = RESPONSES
        self._what = ""

    def context(self, extra: str = "") -> str:
        return stderr_context(self.child, self.mark, extra)

    def expect_quiet(self) -> None:
        """Before a run: nothing may be waiting on stdout (nor a stderr line over its limit).

        What is there was written after the previous answer, so it is about the scenario
        answered last: that one becomes an error, and this one goes to a fresh child.
        """
        try:
            stray = self.child.ready_lines()
            if self.child.stderr_over_limit:
                raise StreamLimit("stderr", STDERR_LINE_LIMIT)
        except StreamLimit as limit:
            stray = [str(limit)]
        if not stray:
            return
        previous = self.ledger.last(self.child)
        self._discard()
        what = "\n".join(f"  line: {text}" for text in stray)
        if previous is None:
            raise ImplementationError(
                f"scenario {self.scenario} was not run: the implementation broke the "
                f"protocol: after its started message, before any request, it wrote:\n{what}",
                context=self.context(),
            )
        self.ledger.late(
            LateError(
                previous,
                _broke(previous, f"after its answer, before the next request, it wrote:\n{what}"),
                self.context(),
            )
        )
        raise Stale

    def perform(
        self,
        seq: int,
        message: dict[str, Any],
        *,
        expected: tuple[str, ...] = RESPONSES,
        what: str = "",
    ) -> dict[str, Any]:
        """Send ``message`` (a run, or a query: ``what`` names it in errors) and return its
        answer, one of the ``expected`` types, or raise (see the module's doc)."""
        self._expected, self._what = expected, what
        self.ledger.asked(seq, self.child, self.scenario)
        deadline = time.monotonic() + self.timeout
        sent = True
        with contextlib.suppress(OSError):  # it died: the read below reports the exit
            sent = self.child.send(message, deadline)
        while True:
            answer, line = self._next(sent, deadline)
            if answer.get("seq") == seq:
                break
            self._misplaced(seq, answer, line)
        self.ledger.answered(self.child, self.scenario)
        self._nothing_more()
        return answer

    def _next(self, sent: bool, deadline: float) -> tuple[dict[str, Any], bytes]:
        """The next line, read as an answer; every way that fails is this scenario's error."""
        scenario = self.scenario
        try:
            line = self.child.receive(deadline) if sent else None
        except StreamLimit as limit:
            self._discard()
            raise ImplementationError(
                f"scenario {scenario}: the implementation {limit}; it was killed and will "
                "be restarted for the next scenario",
                context=self.context(),
            ) from None
        if line is None:
            self._discard()
            of = f"{self._what} of scenario" if self._what else "scenario"
            raise ImplementationError(
                f"the implementation did not {'answer' if sent else 'read'} {of} "
                f"{scenario} within {self.timeout:g} s (--request-timeout); it was killed "
                "and will be restarted for the next scenario",
                context=self.context(),
            )
        if line == EOF:
            code = self.child.exit_code_after_eof()
            self._discard()
            how = (
                "closed its stdout"
                if code is None
                else f"was killed by signal {-code}"
                if code < 0
                else f"exited with code {code}"
            )
            raise ImplementationError(
                f"the implementation {how} while running scenario {scenario}; it will be "
                "restarted for the next scenario",
                context=self.context(),
            )
        try:
            return decode_line(line, expected=self._expected, strict=self.strict), line
        except ProtocolError as error:
            self._discard()
            answering = f"answering {self._what}: " if self._what else ""
            raise ImplementationError(
                _broke(scenario, f"{answering}{error}\n  line: {quote(line)}"),
                context=self.context(),
            ) from None

    def _misplaced(self, seq: int, answer: dict[str, Any], line: bytes) -> None:
        """An answer that is not to this run: whose it is decides whom it blames.

        Always raises, the child killed: :class:`Stale` (an earlier scenario's answer,
        that scenario now an error), :class:`Unplaced` (a seq-less error after an earlier
        answer: a retry decides), or this scenario's protocol error.
        """
        other = answer.get("seq")
        earlier = self.ledger.earlier(other, self.child, seq)
        previous = self.ledger.last(self.child)
        self._discard()
        if earlier is not None:
            self.ledger.late(
                LateError(
                    earlier,
                    _broke(
                        earlier,
                        f"it answered this scenario (seq {other}) a second time, while the "
                        f"kit was waiting for its answer to scenario {self.scenario} (seq "
                        f"{seq}); the first answer cannot be trusted\n  line: {quote(line)}",
                    ),
                    self.context(),
                )
            )
            raise Stale
        if other is None and previous is not None:
            raise Unplaced(previous, self.scenario, line, self.context())
        why = (
            "an error answer without seq: an answer repeats the seq of the run message it "
            f"answers ({seq}; only a refused handshake has none)"
            if other is None
            else f"the answer has seq {other}; the run message had {seq}"
        )
        raise ImplementationError(
            _broke(self.scenario, f"{why}\n  line: {quote(line)}"), context=self.context()
        )

    def _nothing_more(self) -> None:
        """Right after an answer: a second line already there makes this scenario an error."""
        try:
            more = self.child.ready_lines()
        except StreamLimit as limit:
            more = [str(limit)]
        if more:
            self._discard()
            lines = "\n".join(f"  line: {text}" for text in more)
            raise ImplementationError(
                _broke(
                    self.scenario,
                    f"it wrote more after its answer (one answer per run, nothing else):\n{lines}",
                ),
                context=self.context(),
            )
