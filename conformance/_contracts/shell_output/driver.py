"""Performs shell-output scenarios against any Python shell-output implementation.

Two ways in, declared as features: ``soo-process`` runs the kit's emitter program as a
real child process through the implementation's command runner; ``soo-session`` opens
an observation session and feeds it chunks directly, which makes races that depend on
exactly when a chunk is offered (after finish, after cancel) deterministic.

The driver labels threads with opaque names (``t1``, ``t2``...): the caller's thread,
every pipe-draining thread the implementation reports through ``thread_hook``, and the
thread of every callback. The oracle compares labels only. Scripted observers block on
gates that steps release; at the end every gate is released so no thread outlives the
scenario, and the driver waits for the implementation to go idle so the trace is whole.

What matters most is what the kit sees itself, not what the implementation says: the
invocation ID and the thread of every callback are what the scripted observer received
and ran on; before it releases an emitter's gate, the driver looks for the threads that
are reading that child's pipes (:func:`evidence.pipe_readers`) and labels them
``drain`` itself; after a time limit, it checks that no process of the command is left
(:func:`evidence.alive`); and it times every call and cancellation on its own clock.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
from anyio.abc import TaskGroup, TaskStatus

from seamspec.conformance._contracts.shell_output import evidence, own_stdin
from seamspec.conformance._contracts.shell_output.model import (
    FALSY_OBSERVER_FEATURE,
    behaviour_for,
    budget,
    cancel_target,
    cap,
    emitted_bytes,
    has_finish,
    script_gates,
    step_verb,
    time_limit,
)
from seamspec.conformance._core.adapter import Trace
from seamspec.conformance._core.errors import ImplementationError
from seamspec.conformance._core.patience import patient
from seamspec.conformance._core.tracer import Tracer
from seamspec.reference._shell_output import emitter as _emitter

__all__ = ["ShellOutputDriver", "ShellOutputImplementation", "emitter_command"]

#: The most a step waits for something the implementation must do on its own.
WAIT_LIMIT = 5.0
#: How long one `run` may take before the kit gives up and records ``kit_timeout``.
CALL_LIMIT = 5.0
#: A program that cannot exist, for scenarios where spawning must fail.
MISSING_PROGRAM = "/nonexistent/seamspec-missing-program"
#: How long after a timed-out call returned the kit waits for its processes to be gone.
GROUP_GRACE = 2.0
#: How long the driver looks for a child's pipe readers before it releases a gate.
PROBE_LIMIT = 0.2
#: How long the driver waits for a running child to reach a gate it is about to release.
REACH_LIMIT = 2.0


def emitter_command(script: Mapping[str, Any]) -> list[str]:
    """The command line that runs the kit's emitter with ``script`` (see ``emitter``).

    The emitter file is run by path, in isolated mode and without the site packages
    (``-I -S``): it needs only the standard library, and neither importing the seamspec
    package nor reading the environment's ``.pth`` files keeps each child's start quick.
    ``python -m seamspec.reference._shell_output.emitter SCRIPT`` is the same program.
    """
    return [sys.executable, "-I", "-S", _emitter.__file__, json.dumps(script)]


@runtime_checkable
class ShellOutputImplementation(Protocol):
    """What an adapter author provides for a Python shell-output implementation.

    ``make_shell`` builds a command runner for one scenario: ``output_cap`` and
    ``live_budget`` per stream, ``policy(argv)`` returning a refusal reason or None (call
    it before spawning), and ``thread_hook(role, invocation)``. A shell may have its own
    invocation counter or share a process-wide one: the kit judges IDs only relative to
    each other (a counter per shell, starting at 1, makes traces easy to read). The shell
    must offer ``async run(argv, *, observer, timeout, on_invocation)`` returning a result
    with ``exit_code``, ``stdout``, ``stderr``, ``stdout_truncated``, ``stderr_truncated``,
    ``timed_out`` (and raising an ``Exception`` subclass when refused or unable to spawn);
    the kit always passes ``timeout``: seconds (0 included, a limit like any other) or
    ``None`` for no limit, and ``observer``: ``None`` for an unobserved call, anything else
    an observer, whatever its truth value (the kit may hand over one whose ``__bool__`` is
    False: test ``is not None``, never ``if observer:``). ``stdout`` and ``stderr`` may be any bytes-like object (the
    kit reads them with ``bytes()``); ``exit_code`` is the child's exit status, and the
    kit judges it only for a child that exited by itself (a timed-out result's is
    ``None``: SOO-TIMEOUT-RESULT);
    ``observe(observer)`` returning a session with ``invocation``,
    ``offer(stream_name, chunk)``, ``finish()`` and ``cancel()``; and
    ``wait_idle(timeout) -> bool``: wait up to ``timeout`` seconds until no callback is
    running or queued in any of its sessions, and say whether that happened (the kit
    calls it once, after every call ended; a session left open may keep it false).
    Chunks handed to ``on_output`` are ``bytes``.

    ``on_invocation`` and ``thread_hook`` are optional instrumentation (the kit learns
    IDs from the callbacks and finds pipe readers itself), but when called they must tell
    the truth: ``on_invocation(id)`` as soon as the invocation has taken its ID (from
    any thread: the kit's callback only records it),
    ``thread_hook("drain", id)`` on each thread that reads a child's pipes (``id`` None
    for an unobserved call, or no call at all).
    """

    features: tuple[str, ...]

    def make_shell(
        self,
        *,
        output_cap: int,
        live_budget: int,
        policy: Callable[[Sequence[str]], str | None],
        thread_hook: Callable[[str, int | None], None],
    ) -> Any: ...


class _Threads:
    """Opaque, stable labels for thread objects (idents can be reused; objects are kept)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._labels: dict[threading.Thread, str] = {}

    def label(self, thread: threading.Thread | None = None) -> str:
        thread = thread or threading.current_thread()
        with self._lock:
            if thread not in self._labels:
                self._labels[thread] = f"t{len(self._labels) + 1}"
            return self._labels[thread]

    def by_native_id(self, native_id: int) -> str | None:
        """The label of this process's live thread with that system ID (None: not Python's)."""
        thread = next((t for t in threading.enumerate() if t.native_id == native_id), None)
        return None if thread is None else self.label(thread)


def _stream_name(stream: object) -> str:
    return str(getattr(stream, "value", stream))


class _ScriptedObserver:
    """An observer that records every callback and does what the scenario scripted."""

    def __init__(self, entry: Mapping[str, Any], run: _Run) -> None:
        self.name = str(entry["name"])
        self._entry = dict(entry)
        self._run = run
        self._lock = threading.Lock()
        self._counts = {"on_output": 0, "on_finish": 0}

    def on_output(self, invocation: int, stream: object, chunk: bytes) -> None:
        fields: dict[str, Any] = {"stream": _stream_name(stream), "hex": bytes(chunk).hex()}
        if not isinstance(chunk, bytes):
            # The protocol promises bytes; an observer that decodes or hashes the chunk
            # breaks on a memoryview, and a bytearray or view may change after the call.
            fields["chunk_type"] = type(chunk).__name__
        self._call("on_output", invocation, **fields)

    def on_finish(self, invocation: int) -> None:
        self._call("on_finish", invocation)

    def _call(self, hook: str, invocation: int, **fields: Any) -> None:
        thread = self._run.threads.label()
        with self._lock:
            index = self._counts[hook]
            self._counts[hook] += 1
        behaviour = behaviour_for(self._entry, hook, index)
        tracer = self._run.tracer
        tracer.emit(
            "callback_enter",
            observer=self.name,
            hook=hook,
            invocation=invocation,
            thread=thread,
            **fields,
        )
        if "gate" in behaviour:
            self._run.observer_gate(behaviour["gate"]).wait()
        raises = "raise" in behaviour
        tracer.emit(
            "callback_exit",
            observer=self.name,
            hook=hook,
            invocation=invocation,
            thread=thread,
            outcome="raised" if raises else "returned",
        )
        if raises:
            raise _exception(behaviour)


class _FalsyObserver(_ScriptedObserver):
    """A scripted observer that is false in a truth test, like an empty pane that is a list.

    Being handed an observer is what makes a call observed (upstream's is an ``Option``,
    present or not); ``if observer:`` would run this one unobserved.
    """

    def __bool__(self) -> bool:
        return False

    def __len__(self) -> int:
        return 0


class _FalsyCallable:
    """A plain-callable observer (no ``on_output`` attribute) that is false in a truth test."""

    def __init__(self, scripted: _ScriptedObserver) -> None:
        self._scripted = scripted

    def __call__(self, invocation: int, stream: object, chunk: bytes) -> None:
        self._scripted.on_output(invocation, stream, chunk)

    def __bool__(self) -> bool:
        return False

    def __len__(self) -> int:
        return 0


def _exception(behaviour: Mapping[str, Any]) -> Exception:
    """What a scripted behaviour's ``raise`` raises: RuntimeError unless ``exception`` says."""
    message = str(behaviour["raise"])
    kind = behaviour.get("exception", "RuntimeError")
    if kind == "UnicodeDecodeError":
        return UnicodeDecodeError("utf-8", b"\xe2\x82", 0, 2, message)
    return RuntimeError(message)


class ShellOutputDriver:
    """Runs one shell-output scenario (``given`` + ``when``) and returns its trace."""

    contract = "shell-output"

    def __init__(self, implementation: ShellOutputImplementation) -> None:
        self.implementation = implementation

    @property
    def features(self) -> tuple[str, ...]:
        """The implementation's own features, and ``soo-falsy-observer``: the falsy
        observer is the kit's object, so any runner that takes observers can be handed one
        (whether it then treats it as an observer is what the scenarios judge)."""
        own = tuple(self.implementation.features)
        return own if FALSY_OBSERVER_FEATURE in own else (*own, FALSY_OBSERVER_FEATURE)

    async def perform(self, request: Mapping[str, Any]) -> Trace:
        probed = own_stdin.probes_stdin(request["when"])
        with (
            tempfile.TemporaryDirectory(prefix="seamspec-soo-") as tmp,
            own_stdin.distinct_stdin(probed),
        ):
            return await _Run(self.implementation, request, Path(tmp)).perform()


class _Run:
    def __init__(
        self, impl: ShellOutputImplementation, request: Mapping[str, Any], tmp: Path
    ) -> None:
        self.given: dict[str, Any] = dict(request["given"])
        self.when: list[dict[str, Any]] = list(request["when"])
        self.tracer = Tracer()
        self.threads = _Threads()
        self.gate_dir = tmp / "gates"
        self.gate_dir.mkdir()
        self.alive_dir = tmp / "alive"
        self.alive_dir.mkdir()
        self.tmp = tmp
        self.running: set[str] = set()
        self._readers: set[tuple[str, str]] = set()
        self._gates: dict[str, threading.Event] = {}
        self._gates_lock = threading.Lock()
        self.refused: set[tuple[str, ...]] = set()
        self.observers = {o["name"]: self._observer(o) for o in self.given.get("observers", [])}
        self.scopes: dict[str, anyio.CancelScope] = {}
        self.done: dict[str, anyio.Event] = {}
        self.sessions: dict[str, Any] = {}
        self.cancelled: set[str] = set()
        self.shell = impl.make_shell(
            output_cap=cap(self.given),
            live_budget=budget(self.given),
            policy=self._policy,
            thread_hook=self._thread_hook,
        )

    def _observer(self, entry: Mapping[str, Any]) -> Any:
        scripted = (_FalsyObserver if entry.get("falsy") else _ScriptedObserver)(entry, self)
        if has_finish(dict(entry)):
            return scripted
        if entry.get("falsy"):
            return _FalsyCallable(scripted)

        def plain(invocation: int, stream: object, chunk: bytes) -> None:
            scripted.on_output(invocation, stream, chunk)

        return plain

    def observer_gate(self, name: str) -> threading.Event:
        with self._gates_lock:
            return self._gates.setdefault(name, threading.Event())

    def _policy(self, argv: Sequence[str]) -> str | None:
        return "refused by the scenario's policy" if tuple(argv) in self.refused else None

    def _thread_hook(self, role: str, invocation: int | None) -> None:
        self.tracer.emit("thread", role=role, invocation=invocation, thread=self.threads.label())

    async def perform(self) -> Trace:
        self.tracer.emit("thread", role="caller", invocation=None, thread=self.threads.label())
        try:
            async with anyio.create_task_group() as group:
                for index, step in enumerate(self.when):
                    await self._step(index, step, group)
                await self._wait_calls(kit_timeout=True)
                self._release_all()
                await self._wait_calls(kit_timeout=False)
        finally:
            self._release_all()
            for left in self.alive_dir.iterdir():
                if left.is_file() and not left.name.endswith(".detached"):
                    evidence.kill_survivors(left)  # and its detached grandchildren
        idle = await anyio.to_thread.run_sync(self.shell.wait_idle, WAIT_LIMIT)
        self.tracer.emit("idle", ok=bool(idle))
        return self.tracer.events

    def _release_all(self) -> None:
        with self._gates_lock:
            for event in self._gates.values():
                event.set()
        for step in self.when:
            verb = step_verb(step)
            script = step[verb].get("script", []) if verb in ("run", "start") else []
            for gate in script_gates(script):
                (self.gate_dir / gate).touch()

    async def _wait_calls(self, *, kit_timeout: bool) -> None:
        for ident, event in self.done.items():
            # past the first wait a kit_timeout, which a cap may shorten; past the second an
            # error, which it must not (a mutant's verdict would become an error)
            with anyio.move_on_after(patient(WAIT_LIMIT) if kit_timeout else WAIT_LIMIT):
                await event.wait()
            if event.is_set():
                continue
            if kit_timeout:
                self.tracer.emit("kit_timeout", call=ident, waiting="end")
                self.scopes[ident].cancel()
            else:
                raise ImplementationError(
                    f"call {ident!r} did not end even after every gate was released and it "
                    f"was cancelled",
                    context=self.tracer.tail(),
                )

    def _not_executable(self) -> Path:
        """A program that exists but may not be executed: a script with no execute bit."""
        program = self.tmp / "not-executable"
        if not program.exists():
            program.write_text("#!/bin/sh\necho never\n")
            program.chmod(0o600)
        return program

    async def _sync(self, what: str, function: Callable[[], Any]) -> Any:
        """Call the implementation's synchronous API from a worker thread, with a limit.

        The worker counts as the caller's thread (callbacks must not run on it), and an
        API that blocks (waiting for an observer) costs a ``kit_timeout``, not a hang.
        """

        def call() -> Any:
            self.tracer.emit("thread", role="caller", invocation=None, thread=self.threads.label())
            return function()

        with anyio.move_on_after(patient(WAIT_LIMIT)):
            return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        self.tracer.emit("kit_timeout", call=what, waiting="api")
        return None

    async def _step(self, index: int, step: dict[str, Any], group: TaskGroup) -> None:
        verb = step_verb(step)
        body = step[verb]
        if verb == "run":
            await self._process(body)
        elif verb == "start":
            await group.start(self._process, body)
        elif verb == "open":
            await self._open(body)
        elif verb == "emit":
            chunk = emitted_bytes(body)
            session = self.sessions[body["id"]]
            # `repeat: N` offers the chunk N times, one offer each, as N reads would; the
            # offers go through one worker call, so a blocking offer stops the rest
            repeat = int(body.get("repeat", 1))
            for _ in range(repeat):
                self.tracer.emit("offer", call=body["id"], stream=body["stream"], hex=chunk.hex())
            await self._sync(
                body["id"],
                lambda: [session.offer(body["stream"], chunk) for _ in range(repeat)],
            )
        elif verb == "finish":
            self.tracer.emit("finish_requested", call=body)
            await self._sync(body, self.sessions[body].finish)
        elif verb == "cancel":
            await self._cancel(cancel_target(body))
        elif verb == "join":
            with anyio.move_on_after(patient(WAIT_LIMIT)):
                await self.done[body].wait()
            if not self.done[body].is_set():
                self.tracer.emit("kit_timeout", call=body, waiting="join")
        elif verb == "release":
            await self._probe_readers(body)
            self.tracer.emit("gate_released", gate=body)
            self.observer_gate(body).set()
            (self.gate_dir / body).touch()
        elif verb == "wait_entered":
            await self._wait_entered(index, body)

    async def _cancel(self, ident: str) -> None:
        """Cancel a session, or a started run and wait until it has ended, timing it.

        What the caller waits for is the cancellation as a whole: for a session its
        ``cancel()``, for a run until the cancelled call has ended (at most the kit's
        limit; past it, ``kit_timeout``).
        """
        self.tracer.emit("cancel_requested", call=ident)
        self.cancelled.add(ident)
        started = time.monotonic()
        if ident in self.sessions:
            await self._sync(ident, self.sessions[ident].cancel)
        else:
            self.scopes[ident].cancel()
            with anyio.move_on_after(patient(WAIT_LIMIT)):
                await self.done[ident].wait()
            if not self.done[ident].is_set():
                self.tracer.emit("kit_timeout", call=ident, waiting="cancel")
        self.tracer.emit("cancel_returned", call=ident, elapsed=time.monotonic() - started)

    async def _probe_readers(self, gate: str) -> None:
        """Before a child's gate opens: wait until the child is there, then find its readers.

        A running child whose script waits on the gate is first given up to
        :data:`REACH_LIMIT` to reach it (the emitter marks it), so everything it writes
        before the gate is in the pipes. Then whoever drains those pipes reads it and
        blocks reading again; the driver looks for such threads for at most
        :data:`PROBE_LIMIT`, until a reader of each stream is found, and labels them
        (see the module's docstring). Found readers also mean the output before the gate
        has been read and offered, which makes what follows the release deterministic
        for implementations that read on threads.
        """
        waiting = [
            body["id"]
            for step in self.when
            if step_verb(step) in ("run", "start")
            for body in [step[step_verb(step)]]
            if body["id"] in self.running and any(s.get("wait") == gate for s in body["script"])
        ]
        for ident in waiting:
            mark = self.alive_dir / f"{ident}.reached" / gate
            deadline = time.monotonic() + REACH_LIMIT
            while ident in self.running and not mark.exists() and time.monotonic() < deadline:
                await anyio.sleep(0.002)
            deadline = time.monotonic() + PROBE_LIMIT
            while True:
                found = evidence.pipe_readers(self.alive_dir / ident)
                for tids in found.values():
                    for tid in tids:
                        self._note_reader(ident, tid)
                if len(found) == 2 or time.monotonic() >= deadline:
                    break
                await anyio.sleep(0.005)

    def _note_reader(self, ident: str, native_id: int) -> None:
        label = self.threads.by_native_id(native_id) or f"native-{native_id}"
        if (ident, label) not in self._readers:
            self._readers.add((ident, label))
            self.tracer.emit("thread", role="drain", call=ident, thread=label, seen_by="kit")

    async def _check_group(self, ident: str) -> None:
        """After a time limit: is any process of the command still there? (SOO-TIMEOUT-GROUP)"""
        path = self.alive_dir / ident
        deadline = time.monotonic() + GROUP_GRACE
        while (left := evidence.alive(path)) and time.monotonic() < deadline:
            await anyio.sleep(0.01)
        if left is not None:
            self.tracer.emit("group_check", call=ident, alive=left)

    async def _wait_entered(self, index: int, body: dict[str, Any]) -> None:
        wanted = int(body.get("count", 1))
        hook = body.get("hook", "on_output")
        with anyio.move_on_after(patient(WAIT_LIMIT)):
            while (
                self.tracer.count("callback_enter", observer=body["observer"], hook=hook) < wanted
            ):
                await anyio.sleep(0.001)
            return
        self.tracer.emit(
            "kit_timeout", observer=body["observer"], hook=hook, waiting="entered", step=index
        )

    async def _open(self, body: dict[str, Any]) -> None:
        ident = body["id"]
        self.tracer.emit("run_start", call=ident)
        session = await self._sync(
            ident, lambda: self.shell.observe(self.observers[body["observer"]])
        )
        if session is None:
            raise ImplementationError(f"observe() did not return for {ident!r}")
        self.sessions[ident] = session
        self.tracer.emit("invocation", call=ident, invocation=int(session.invocation))

    async def _process(
        self, body: dict[str, Any], task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        ident = body["id"]
        done = self.done.setdefault(ident, anyio.Event())
        reached = self.alive_dir / f"{ident}.reached"
        reached.mkdir()
        script = {
            "call": ident,
            "gates": str(self.gate_dir),
            "reached": str(reached),
            "alive": str(self.alive_dir / ident),
            "steps": body.get("script", []),
        }
        argv = emitter_command(script)
        if body.get("missing_program"):
            argv[0] = MISSING_PROGRAM
        if body.get("not_executable"):
            argv[0] = str(self._not_executable())
        if body.get("refused"):
            self.refused.add(tuple(argv))
        observer = self.observers.get(body["observer"]) if "observer" in body else None
        timeout = time_limit(self.given, body)
        self.tracer.emit("run_start", call=ident)
        self.running.add(ident)
        started = time.monotonic()
        timed_out = False
        try:
            with anyio.CancelScope() as scope:
                self.scopes[ident] = scope
                scope.deadline = anyio.current_time() + patient(CALL_LIMIT)
                task_status.started()
                started = time.monotonic()
                try:
                    result = await self.shell.run(
                        argv,
                        observer=observer,
                        timeout=timeout,
                        on_invocation=lambda i: self.tracer.emit(
                            "invocation", call=ident, invocation=int(i)
                        ),
                    )
                except anyio.get_cancelled_exc_class():
                    elapsed = time.monotonic() - started
                    if ident not in self.cancelled:
                        self.tracer.emit("kit_timeout", call=ident, waiting="run")
                    self.tracer.emit("run_end", call=ident, outcome="cancelled", elapsed=elapsed)
                    raise
                except Exception as error:
                    self.tracer.emit(
                        "run_end",
                        call=ident,
                        outcome="raised",
                        error=repr(error),
                        elapsed=time.monotonic() - started,
                    )
                    return
                self.tracer.emit(
                    "run_end",
                    call=ident,
                    outcome="returned",
                    elapsed=time.monotonic() - started,
                    result={
                        "exit_code": result.exit_code,
                        "stdout_hex": bytes(result.stdout).hex(),
                        "stderr_hex": bytes(result.stderr).hex(),
                        "stdout_truncated": bool(result.stdout_truncated),
                        "stderr_truncated": bool(result.stderr_truncated),
                        "timed_out": bool(result.timed_out),
                    },
                )
                timed_out = bool(result.timed_out)
            if timed_out:  # outside the kit's own limit: this is the kit's time
                await self._check_group(ident)
        finally:
            self.running.discard(ident)
            done.set()
