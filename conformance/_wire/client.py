"""An adapter that judges an implementation in any language, over JSON lines on stdio.

The implementation runs as a child process and speaks the protocol of ``docs/protocol.md``.
Everything that can go wrong with a foreign process becomes an ``error`` status for one
scenario, with the offending line and the child's recent stderr quoted, and never a hang
or a leftover process: a crash or a timeout kills the child's whole process group and the
next scenario starts a fresh child, up to ``max_restarts`` times.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from seamspec import __version__
from seamspec.conformance._core.adapter import ImplementationInfo, LateError, Trace
from seamspec.conformance._core.errors import ImplementationError, Unsupported
from seamspec.conformance._wire.child import EOF, HandshakeError, StreamLimit, WireChild
from seamspec.conformance._wire.exchange import (
    Exchange,
    Ledger,
    Stale,
    Unplaced,
    stderr_context,
)
from seamspec.conformance._wire.kit_side import KitSides
from seamspec.conformance._wire.messages import (
    ANSWERS,
    PROTOCOL_VERSION,
    PROTOCOL_VERSIONS,
    ProtocolError,
    decode_line,
    info_from_started,
    quote,
    validate,
)

__all__ = ["HandshakeError", "WireAdapter"]


class _Refused(HandshakeError):
    """The implementation answered ``start`` with an ``error`` (perhaps: not this version)."""


class WireAdapter:
    """Implements the :class:`Adapter` protocol for a child process speaking the protocol.

    Args:
        argv: the command that starts the implementation.
        request_timeout: seconds one scenario may take; past it the child is killed and the
            scenario is an error. This is the primary limit: give the Runner a longer one.
        handshake_timeout: seconds a (re)started child has to answer ``start``.
        max_restarts: children started after the first; once used up, every remaining
            scenario errors at once instead of waiting on a broken implementation.
        strict: validate every message against its JSON Schema (the handshake always is).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        request_timeout: float = 60.0,
        handshake_timeout: float = 20.0,
        max_restarts: int = 3,
        strict: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if not argv:
            raise HandshakeError(
                "--impl-cmd is empty: give the command that starts the implementation"
            )
        self.argv = list(argv)
        self.request_timeout = request_timeout
        self.handshake_timeout = handshake_timeout
        self.max_restarts = max_restarts
        self.strict = strict
        self._env = env
        self._child: WireChild | None = None
        self._info: ImplementationInfo | None = None
        self._starts = 0
        self._seq = 0
        self._call_lock = threading.Lock()  # one run() at a time
        self._child_lock = threading.Lock()  # guards _child swaps against close()
        self._closed = False
        self._children: set[WireChild] = set()
        #: Exit code of the last child stopped by close() (None: it had to be killed).
        self.exit_code: int | None = None
        #: pids of every child started, so tests and ``smoke`` can check none is left.
        self.pids: list[int] = []
        #: The protocol version offered at the next handshake: the newest at first, then
        #: the one agreed (restarted children speak what the first one did).
        self._offer = PROTOCOL_VERSION
        #: The version agreed with the implementation (None before the handshake).
        self.protocol: int | None = None
        self._fallbacks = 0  # children started again only to offer an older version
        self._kit_sides = KitSides()
        #: What was asked of which child and answered: to place lines out of turn.
        self._ledger = Ledger()

    @property
    def restarts(self) -> int:
        return max(0, self._starts - 1 - self._fallbacks)

    def _spawn(self) -> tuple[WireChild, ImplementationInfo]:
        """Start a child and shake hands; ``close()`` can kill it at any point meanwhile."""
        child = WireChild(self.argv, self._env)
        with self._child_lock:
            self._starts += 1
            self.pids.append(child.pid)
            self._children.add(child)
            closed = self._closed
        try:
            if closed:
                raise ImplementationError(
                    "the adapter was closed while starting the implementation"
                )
            info = self._handshake(child)
        except _Refused:
            self._forget(child)
            if self._offer == 1 or self.protocol is not None:
                raise
            # It may speak only version 1, and refuse 2 as docs/protocol.md says it should:
            # offer 1 to a fresh child (not counted as a restart).
            self._offer, self._fallbacks = 1, self._fallbacks + 1
            return self._spawn()
        except BaseException:
            self._forget(child)
            raise
        return child, info

    def _forget(self, child: WireChild) -> None:
        child.kill()
        with self._child_lock:
            self._children.discard(child)
            if self._child is child:
                self._child = None
        self._ledger.forget(child)

    def _handshake(self, child: WireChild) -> ImplementationInfo:
        mark = child.stderr_mark()
        what = f"the implementation started by {' '.join(self.argv)!r}"
        deadline = time.monotonic() + self.handshake_timeout
        with contextlib.suppress(OSError):  # if it died already, the read below says how
            child.send(
                {
                    "type": "start",
                    "protocol": self._offer,
                    "kit": {"name": "seamspec", "version": __version__},
                },
                deadline,
            )
        try:
            line = child.receive(deadline)
        except StreamLimit as limit:
            child.kill()
            raise HandshakeError(
                f"{what} {limit}, before answering the start message"
                + "\n"
                + stderr_context(child, mark),
            ) from None
        if line is None:
            child.kill()
            raise HandshakeError(
                f"{what} did not answer the start message within {self.handshake_timeout:g} s"
                + "\n"
                + stderr_context(child, mark),
            )
        if line == EOF:
            code = child.exit_code_after_eof()
            how = "closed its stdout" if code is None else f"exited with code {code}"
            raise HandshakeError(
                f"{what} {how} before answering the start message"
                + "\n"
                + stderr_context(child, mark),
            )
        try:
            message = decode_line(line, expected=("started", "error"), strict=True)
        except ProtocolError as error:
            child.kill()
            raise HandshakeError(
                f"{what} answered the start message with an invalid line: {error}\n"
                f"  line: {quote(line)}" + "\n" + stderr_context(child, mark),
            ) from None
        if message["type"] == "error":
            child.kill()
            raise _Refused(
                f"{what} refused the handshake (protocol {self._offer} offered): "
                f"{message['message']}"
                + "\n"
                + stderr_context(child, mark, message.get("context", "")),
            )
        version = message["protocol"]
        if version not in PROTOCOL_VERSIONS or version > self._offer:
            child.kill()
            speaks = ", ".join(map(str, PROTOCOL_VERSIONS))
            raise HandshakeError(
                f"{what} speaks protocol version {version}; this kit offered {self._offer} "
                f"and speaks versions {speaks}\n  line: {quote(line)}"
                + "\n"
                + stderr_context(child, mark),
            )
        if self.protocol is None:
            self.protocol = self._offer = version
        elif version != self.protocol:
            child.kill()
            raise HandshakeError(
                f"the restarted implementation chose protocol {version}, the first one "
                f"{self.protocol}"
            )
        return info_from_started(message)

    def info(self) -> ImplementationInfo:
        """Start the child and do the handshake, once; raise :class:`HandshakeError`."""
        with self._call_lock:
            if self._info is None:
                child, self._info = self._spawn()
                with self._child_lock:
                    self._child = child
            return self._info

    def run(self, request: Mapping[str, Any]) -> Trace:
        if not self._call_lock.acquire(blocking=False):
            # The Runner gave up on a previous call that is still waiting: end it now.
            self._discard_child()
            self._call_lock.acquire()
        try:
            return self._run_locked(request)
        finally:
            self._call_lock.release()

    def _current_child(self, scenario: str) -> WireChild:
        """The live child, or a restarted one while restarts remain; else an error at once."""
        with self._child_lock:
            if self._closed:
                raise ImplementationError(f"scenario {scenario}: the adapter is closed")
            current = self._child
        if current is not None and current.process.poll() is None:
            return current
        if current is not None:
            self._forget(current)
        if self._info is not None and self.restarts >= self.max_restarts:
            raise ImplementationError(
                f"scenario {scenario} was not run: the implementation was already restarted "
                f"{self.restarts} time(s) after crashing, hanging or breaking the protocol "
                f"(--max-restarts {self.max_restarts}); see the first errors for why"
            )
        try:
            child, info = self._spawn()
        except HandshakeError as error:
            raise ImplementationError(f"restarting the implementation failed: {error}") from None
        if self._info is not None and (info.contracts, info.features) != (
            self._info.contracts,
            self._info.features,
        ):
            self._forget(child)
            raise ImplementationError(
                "the restarted implementation declared other contracts or features than "
                f"the first one: {info.to_json()}"
            )
        self._info = self._info or info
        with self._child_lock:
            self._child = child
        return child

    def _discard_child(self) -> None:
        with self._child_lock:
            child = self._child
        if child is not None:
            self._forget(child)

    def _run_locked(self, request: Mapping[str, Any]) -> Trace:
        """One scenario; once more on a fresh child if the first child's line was not
        about this scenario (a late answer to an earlier one) or may not have been."""
        scenario = str(request.get("id", "?"))
        try:
            return self._attempt(request, scenario)
        except Stale:
            return self._attempt(request, scenario)  # a fresh child knows no earlier seq
        except Unplaced as doubt:
            # A fresh child has answered no earlier scenario: if it answers this one
            # properly, the seq-less error was about the scenario answered before it.
            try:
                trace = self._attempt(request, scenario)
            except Unsupported:
                self._ledger.late(doubt.late_error())
                raise
            self._ledger.late(doubt.late_error())
            return trace

    def _attempt(self, request: Mapping[str, Any], scenario: str) -> Trace:
        child = self._current_child(scenario)
        with self._kit_sides.open(request, self.protocol or 1) as kit_side:
            trace = self._perform(child, kit_side.request if kit_side else request, scenario)
            if kit_side is None:
                return trace
            return kit_side.finish(trace, lambda name, body: self._ask(child, request, name, body))

    def _exchange(self, child: WireChild, scenario: str) -> Exchange:
        return Exchange(
            child,
            scenario,
            self._ledger,
            timeout=self.request_timeout,
            strict=self.strict,
            discard=self._discard_child,
        )

    def _perform(self, child: WireChild, request: Mapping[str, Any], scenario: str) -> Trace:
        exchange = self._exchange(child, scenario)
        exchange.expect_quiet()
        self._seq += 1
        fields = ("id", "contract", "given", "when", "resources")
        message = {
            "type": "run",
            "seq": self._seq,
            "request": {k: request[k] for k in fields if k in request},
        }
        if self.strict:
            validate(message, "run")
        answer = exchange.perform(self._seq, message)
        if answer["type"] == "skip":
            raise Unsupported(answer["reason"])
        if answer["type"] == "error":
            context = answer.get("context", "")
            raise ImplementationError(
                f"the implementation reported an error in scenario {scenario}: {answer['message']}",
                context=exchange.context(context if isinstance(context, str) else ""),
            )
        trace: Trace = answer["trace"]
        return trace

    def _ask(
        self, child: WireChild, request: Mapping[str, Any], name: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        """Send one ``query`` about the scenario just performed; return its ``answer``."""
        scenario = str(request.get("id", "?"))
        self._seq += 1
        message = {
            "type": "query", "seq": self._seq, "contract": request["contract"], "query": name,
            "body": body,
        }  # fmt: skip
        if self.strict:
            validate(message, "query")
        exchange = self._exchange(child, scenario)
        answer = exchange.perform(self._seq, message, expected=ANSWERS, what=f"the {name} query")
        if answer["type"] == "error":
            raise ImplementationError(
                f"the implementation could not answer the {name} query of scenario "
                f"{scenario}: {answer['message']}",
                context=exchange.context(),
            )
        result: dict[str, Any] = answer["answer"]
        return result

    def take_late_errors(self) -> list[LateError]:
        """Problems with scenarios already answered (each returned once): see LateError."""
        return self._ledger.take()

    def close(self) -> None:
        """Stop the child cleanly (``stop``, then its group is killed after a grace period).

        Safe from any thread and while a ``run`` is in flight (that run then errors): it
        does not wait for the call lock, so Ctrl-C never waits on a hung implementation.
        """
        with self._child_lock:
            self._closed = True
            child, self._child = self._child, None
            others = [c for c in self._children if c is not child]
            self._children.clear()
        for other in others:
            other.kill()
        if child is not None:
            previous = self._ledger.last(child)
            self.exit_code, stray = child.stop()
            self._ledger.forget(child)
            if stray and previous is not None:
                lines = "\n".join(f"  line: {text}" for text in stray)
                self._ledger.late(
                    LateError(
                        previous,
                        f"scenario {previous}: the implementation broke the protocol: after "
                        f"its answer to this scenario, it wrote more before it stopped:\n{lines}",
                    )
                )

    def __enter__(self) -> WireAdapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
