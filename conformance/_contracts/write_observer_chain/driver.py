"""Performs write-observer-chain scenarios against any Python chain implementation.

This is the helper that makes a Python adapter a few dozen lines: the adapter author
supplies a :class:`WriteObserverImplementation` (how to build their chain, and optionally
their write tools) and this driver builds the scripted observers, runs the steps, and
records the trace. The trace vocabulary is documented in ``docs/contracts``.
"""

from __future__ import annotations

import contextvars
import os
import stat
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
from anyio.abc import TaskStatus

from seamspec.conformance._contracts.write_observer_chain.model import (
    TOOL_VERBS,
    behaviour_for,
    is_limited,
    step_verb,
)
from seamspec.conformance._core.adapter import Trace
from seamspec.conformance._core.errors import ImplementationError
from seamspec.conformance._core.patience import patient
from seamspec.conformance._core.settle import all_tasks_blocked
from seamspec.conformance._core.tracer import Tracer

__all__ = [
    "ScriptedObserver",
    "TracedObserver",
    "WriteObserverChainDriver",
    "WriteObserverImplementation",
    "WriteToolsLike",
]

#: The id of the step (call or tool) a hook runs for; scripted observers read it.
_CURRENT_CALL: contextvars.ContextVar[str] = contextvars.ContextVar(
    "seamspec_woc_call", default="?"
)

#: The folder next to the sandbox that ``given.outside`` fills: links may point into it,
#: and the oracle checks nothing in it ever changes (WOC-SEAM-DENIED).
OUTSIDE = "outside"

#: A scenario step that waits must give up at some point; this is far above any real need.
WAIT_LIMIT = 10.0

#: How long one chain call may take before the kit cancels it and records ``kit_timeout``.
#: Only a chain that ignores its own per-hook time limit (or a hang with no limit) gets
#: here; the oracle then reports WOC-SLOW instead of the whole run hanging.
CALL_LIMIT = 5.0


class WriteToolsLike(Protocol):
    async def write(self, path: str, content: str) -> Any: ...
    async def edit(self, path: str, old: str, new: str) -> Any: ...
    async def delete(self, path: str) -> Any: ...


@runtime_checkable
class WriteObserverImplementation(Protocol):
    """What an adapter author provides for a Python write-observer chain.

    ``make_chain`` builds the implementation's chain over the given observers.
    ``on_failure(observer, message)`` must be called for every warning the chain emits
    about a failing observer, so that WOC-FAIL-WARN can be judged. ``features`` lists the
    optional features supported: ``write-tools`` (then also provide ``make_tools``, whose
    results have ``ok``, ``message`` and ``text``), ``builtin-observers`` (the reference's
    real checkpoint/formatter/diagnostics observers, which work with any chain), and
    ``hook-time-limit``.
    """

    features: tuple[str, ...]

    def make_chain(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None,
        on_failure: Callable[[Any, str], None],
    ) -> Any: ...


class _ObserverBase:
    def __init__(self, name: str, tracer: Tracer, root: Path) -> None:
        self.name = name
        self._tracer = tracer
        self._root = root

    def __repr__(self) -> str:
        return f"<observer {self.name}>"

    async def before_write(self, path: Path) -> None:
        await self._traced("before_write", path)

    async def after_write(self, path: Path) -> str | None:
        return await self._traced("after_write", path)

    async def _traced(self, hook: str, path: Path) -> str | None:
        call = _CURRENT_CALL.get()
        began = time.monotonic()
        self._tracer.emit(
            "hook_enter",
            call=call,
            observer=self.name,
            hook=hook,
            path=_relative(self._root, path),
            sees=read_text(self._root, path),
        )
        try:
            value = await self._perform(hook, path)
        except anyio.get_cancelled_exc_class():
            self._tracer.emit(
                "hook_exit",
                call=call,
                observer=self.name,
                hook=hook,
                outcome="cancelled",
                elapsed=_since(began),
            )
            raise
        except Exception as error:
            self._tracer.emit(
                "hook_exit",
                call=call,
                observer=self.name,
                hook=hook,
                outcome="raised",
                error=repr(error),
            )
            raise
        self._tracer.emit(
            "hook_exit", call=call, observer=self.name, hook=hook, outcome="returned", value=value
        )
        return value

    async def _perform(self, hook: str, path: Path) -> str | None:
        raise NotImplementedError


class ScriptedFailure(Exception):
    """The failure a scenario scripted for an observer (``raise: message``)."""


class ScriptedObserver(_ObserverBase):
    """An observer whose every hook call does what the scenario's ``given`` says."""

    def __init__(
        self, entry: Mapping[str, Any], tracer: Tracer, root: Path, gates: Mapping[str, anyio.Event]
    ) -> None:
        super().__init__(entry["name"], tracer, root)
        self._entry = dict(entry)
        self._gates = gates
        self._calls = {"before_write": 0, "after_write": 0}

    async def _perform(self, hook: str, path: Path) -> str | None:
        behaviour = behaviour_for(self._entry, hook, self._calls[hook])
        self._calls[hook] += 1
        # A real await, so that a chain that runs observers concurrently shows it.
        await anyio.lowlevel.checkpoint()
        try:
            if "gate" in behaviour:
                await self._gates[behaviour["gate"]].wait()
            if behaviour.get("hang"):
                await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            if "unwind" in behaviour:  # slow to unwind: the chain must wait for it
                with anyio.CancelScope(shield=True):
                    await self._gates[behaviour["unwind"]].wait()
            raise
        if "raise" in behaviour:
            raise ScriptedFailure(behaviour["raise"])
        value = behaviour.get("return")
        return value if hook == "after_write" else None


class TracedObserver(_ObserverBase):
    """Wraps a real observer (one of the reference's builtins) so its calls are traced."""

    def __init__(self, name: str, inner: Any, tracer: Tracer, root: Path) -> None:
        super().__init__(name, tracer, root)
        self.inner = inner

    async def _perform(self, hook: str, path: Path) -> str | None:
        result: str | None = await getattr(self.inner, hook)(path)
        return result


def _since(began: float) -> float:
    """Seconds on the monotonic clock since ``began``, as the caller experienced them."""
    return round(time.monotonic() - began, 4)


def _relative(root: Path, path: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return str(path)


def read_text(root: Path, path: Path | str) -> str | None:
    """The file's content as text, or None when absent; never reads outside the sandbox."""
    target = (root / path) if not Path(path).is_absolute() else Path(path)
    try:
        resolved = target.resolve()
        resolved.relative_to(root.resolve())
    except (ValueError, OSError):
        return None
    try:
        return resolved.read_bytes().decode("utf-8", errors="replace")
    except IsADirectoryError:
        return "<directory>"
    except OSError:
        return None


def _snapshot(root: Path) -> dict[str, str]:
    """Every regular file under ``root``, path to text. Symbolic links are neither
    followed nor listed: each file appears once, under its real path."""
    files = {}
    for folder, _dirs, names in os.walk(root, followlinks=False):
        for name in names:
            path = Path(folder, name)
            if stat.S_ISREG(path.lstat().st_mode):
                files[path.relative_to(root).as_posix()] = path.read_bytes().decode(
                    "utf-8", errors="replace"
                )
    return dict(sorted(files.items()))


def _folders(root: Path) -> list[str]:
    """Every folder under ``root`` (not ``root`` itself), sorted. Symbolic links to folders
    are neither followed nor listed: a folder appears once, under its real path."""
    found = []
    for folder, dirs, _names in os.walk(root, followlinks=False):
        for name in dirs:
            path = Path(folder, name)
            if stat.S_ISDIR(path.lstat().st_mode):
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _is_folder(path: Path) -> bool:
    """Whether ``path`` is still a real folder (not gone, not a link): a tool that prunes
    emptied folders past the workspace removes the sandbox root itself."""
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except FileNotFoundError:
        return False


def _beside(root: Path) -> list[str]:
    """Everything in the sandbox's parent folder that is neither the sandbox nor the folder
    next to it (``outside``), files and folders, relative to that parent, sorted. The kit
    makes nothing else there, so anything listed was made by a tool that left the sandbox,
    for example into a sibling whose name starts with the sandbox's (``../sandbox-x``)."""
    parent = root.parent
    found: list[str] = []
    for folder, dirs, names in os.walk(parent, followlinks=False):
        if Path(folder) == parent:  # the kit's two folders are neither listed nor walked
            dirs[:] = [d for d in dirs if d not in (root.name, OUTSIDE)]
        found += (Path(folder, name).relative_to(parent).as_posix() for name in (*dirs, *names))
    return sorted(found)


def _make_link(link: Path, target: Path) -> None:
    """A relative symbolic link, as a user's repository would hold it."""
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(target, link.parent))


class WriteObserverChainDriver:
    """Runs one write-observer-chain scenario (``given`` + ``when``) and returns its trace."""

    contract = "write-observer-chain"

    def __init__(self, implementation: WriteObserverImplementation) -> None:
        self.implementation = implementation

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(self.implementation.features)

    async def perform(self, request: Mapping[str, Any]) -> Trace:
        with tempfile.TemporaryDirectory(prefix="seamspec-woc-") as tmp:
            root = Path(tmp, "sandbox")
            root.mkdir()
            Path(tmp, OUTSIDE).mkdir()
            return await _Run(self.implementation, request, root).perform()


class _Run:
    def __init__(
        self, implementation: WriteObserverImplementation, request: Mapping[str, Any], root: Path
    ) -> None:
        self.impl = implementation
        self.given: dict[str, Any] = dict(request["given"])
        self.when: list[dict[str, Any]] = list(request["when"])
        self.root = root.resolve()
        self.outside = self.root.parent / OUTSIDE
        self.tracer = Tracer()
        self.gates: dict[str, anyio.Event] = {}
        self.named: dict[str, Any] = {}
        self.scopes: dict[str, anyio.CancelScope] = {}
        self.done: dict[str, anyio.Event] = {}
        self.cancelled: set[str] = set()
        #: nested chains are the implementation's objects: their scenario names, by id
        self.chain_names: dict[int, str] = {}

    def _on_failure(self, observer: Any, message: str) -> None:
        """A warning about ``observer``, by its scenario name (nested chains included)."""
        name = self.chain_names.get(id(observer)) or getattr(observer, "name", repr(observer))
        self.tracer.emit("warning", observer=name, message=str(message))

    def _build(self, entries: list[dict[str, Any]]) -> list[Any]:
        from seamspec.reference import (
            CheckpointObserver,
            DiagnosticsObserver,
            FormatterObserver,
            stub_command,
        )

        built: list[Any] = []
        for entry in entries:
            name = entry["name"]
            if "chain" in entry:
                chain = self.impl.make_chain(
                    self._build(entry["chain"]),
                    hook_time_limit=entry.get("hook_time_limit"),
                    on_failure=self._on_failure,
                )
                self.chain_names[id(chain)] = name
                built.append(chain)
                continue
            if "builtin" in entry:
                kind = entry["builtin"]
                limit = float(entry.get("time_limit", 10.0))
                inner: Any
                if kind == "checkpoint":
                    inner = CheckpointObserver()
                elif kind == "formatter":
                    inner = FormatterObserver(
                        stub_command(entry["program"]), name=name, time_limit=limit
                    )
                else:
                    inner = DiagnosticsObserver(
                        stub_command(entry["program"]), name=name, time_limit=limit
                    )
                observer: Any = TracedObserver(name, inner, self.tracer, self.root)
            else:
                for hook in ("before_write", "after_write"):
                    script = entry.get(hook, [])
                    for behaviour in script if isinstance(script, list) else [script]:
                        for key in ("gate", "unwind"):
                            if key in behaviour:
                                self.gates.setdefault(behaviour[key], anyio.Event())
                observer = ScriptedObserver(entry, self.tracer, self.root, self.gates)
            self.named[name] = observer
            built.append(observer)
        return built

    def _inside(self, rel: str) -> Path:
        """A scenario's own paths (files, direct hook calls) never leave the sandbox.

        The schema already refuses absolute and ``..`` paths; this is the second lock,
        for requests that did not come through the loader.
        """
        target = (self.root / rel).resolve()
        if not target.is_relative_to(self.root.resolve()):
            raise ValueError(
                f"scenario path {rel!r} leaves the sandbox; only relative paths are allowed"
            )
        return target

    async def perform(self) -> Trace:
        for rel, text in self.given.get("files", {}).items():
            target = self._inside(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="")
        for rel, text in self.given.get("outside", {}).items():
            target = self.outside / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="")
        for rel, where in self.given.get("symlinks", {}).items():
            base = self.outside if "outside" in where else self.root
            _make_link(self.root / rel, base / where.get("outside", where.get("to", "")))
        chain = self.impl.make_chain(
            self._build(self.given["observers"]),
            hook_time_limit=self.given.get("hook_time_limit"),
            on_failure=self._on_failure,
        )
        tools = None
        if any(step_verb(s) in TOOL_VERBS for s in self.when):
            make_tools = getattr(self.impl, "make_tools", None)
            if make_tools is None:
                raise ImplementationError(
                    "the scenario uses write tools but the implementation has no make_tools"
                )
            tools = make_tools(self.root, chain, deny=list(self.given.get("deny", [])))
        async with anyio.create_task_group() as group:
            for index, step in enumerate(self.when):
                await self._step(index, step, chain, tools, group)
            for ident, event in self.done.items():
                with anyio.fail_after(WAIT_LIMIT):  # an error when it runs out: never capped
                    try:
                        await event.wait()
                    except TimeoutError:
                        raise ImplementationError(
                            f"background call {ident!r} never ended"
                        ) from None
        self.tracer.emit(
            "files",
            files=_snapshot(self.root),
            outside=_snapshot(self.outside),
            folders=_folders(self.root),
            outside_folders=_folders(self.outside),
            beside=_beside(self.root),
            # the snapshots of a missing root are just empty: say whether it is still there
            root_exists=_is_folder(self.root),
        )
        return self.tracer.events

    async def _call(
        self,
        ident: str,
        hook: str,
        path: str,
        chain: Any,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        _CURRENT_CALL.set(ident)
        done = self.done.setdefault(ident, anyio.Event())
        self.tracer.emit("call_start", call=ident, hook=hook, path=path)
        began = time.monotonic()
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + patient(CALL_LIMIT)) as scope:
                self.scopes[ident] = scope
                task_status.started()
                try:
                    value = await getattr(chain, hook)(self._inside(path))
                except anyio.get_cancelled_exc_class():
                    if anyio.current_time() >= scope.deadline and ident not in self.cancelled:
                        self.tracer.emit("kit_timeout", call=ident, seconds=patient(CALL_LIMIT))
                    self.tracer.emit(
                        "call_end", call=ident, outcome="cancelled", elapsed=_since(began)
                    )
                    if scope.cancel_called:
                        raise
                    # Nobody cancelled this call: the chain raised a cancellation of its own.
                    # That is a finding for the oracle, not a reason to tear the run down.
                    return
                except Exception as error:
                    self.tracer.emit(
                        "call_end",
                        call=ident,
                        outcome="raised",
                        error=repr(error),
                        elapsed=_since(began),
                    )
                    return
                self.tracer.emit(
                    "call_end", call=ident, outcome="returned", value=value, elapsed=_since(began)
                )
        finally:
            done.set()

    async def _step(
        self, index: int, step: dict[str, Any], chain: Any, tools: Any, group: Any
    ) -> None:
        verb = step_verb(step)
        body = step[verb]
        if verb == "call":
            await self._call(body["id"], body["hook"], body["path"], chain)
        elif verb == "start":
            await group.start(self._call, body["id"], body["hook"], body["path"], chain)
        elif verb == "wait_entered":
            wanted = int(body.get("count", 1))
            try:
                with anyio.fail_after(WAIT_LIMIT):  # an error when it runs out: never capped
                    while (
                        self.tracer.count(
                            "hook_enter", observer=body["observer"], hook=body["hook"]
                        )
                        < wanted
                    ):
                        await anyio.sleep(0.001)
            except TimeoutError:
                raise ImplementationError(
                    f"step {index} (wait_entered): {body['observer']}.{body['hook']} was not entered "
                    f"{wanted} time(s) within {WAIT_LIMIT} s",
                    context=self.tracer.tail(),
                ) from None
            await all_tasks_blocked()
        elif verb == "release":
            self.tracer.emit("gate_released", gate=body)
            self.gates[body].set()
            await all_tasks_blocked()
        elif verb == "cancel":
            self.tracer.emit("cancel_requested", call=body)
            self.cancelled.add(body)
            self.scopes[body].cancel()
        elif verb == "join":
            await self.done[body].wait()
        elif verb in TOOL_VERBS and body.get("background"):
            await group.start(self._background_tool, verb, body, tools)
        elif verb in TOOL_VERBS:
            await self._tool(verb, body, tools)
        elif verb == "restore":
            paths = await self.named[body].inner.restore()
            self.tracer.emit(
                "restored", observer=body, paths=sorted(_relative(self.root, p) for p in paths)
            )
        elif verb == "new_turn":
            self.named[body].inner.new_turn()

    async def _background_tool(
        self,
        verb: str,
        body: dict[str, Any],
        tools: WriteToolsLike,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """A tool step with ``background: true``: its caller may be cancelled (WOC-CANCEL)."""
        ident = body["id"]
        done = self.done.setdefault(ident, anyio.Event())
        began = time.monotonic()
        try:
            with anyio.CancelScope() as scope:
                self.scopes[ident] = scope
                task_status.started()
                try:
                    await self._tool(verb, body, tools)
                except anyio.get_cancelled_exc_class():
                    if ident in self.cancelled:
                        self.tracer.emit(
                            "tool_cancelled",
                            call=ident,
                            tool=verb,
                            path=body["path"],
                            content_after=read_text(self.root, body["path"]),
                            elapsed=_since(began),
                        )
                    raise
        finally:
            done.set()

    async def _tool(self, verb: str, body: dict[str, Any], tools: WriteToolsLike) -> None:
        ident, path = body["id"], body["path"]
        _CURRENT_CALL.set(ident)
        self.tracer.emit(
            "tool_start",
            call=ident,
            tool=verb,
            path=path,
            content_before=read_text(self.root, path),
        )
        args = (
            [body["content"]]
            if verb == "write"
            else [body["old"], body["new"]]
            if verb == "edit"
            else []
        )
        # With a per-hook time limit, a tool that outlives CALL_LIMIT means the chain ignored
        # that limit: a WOC-SLOW finding (kit_timeout), like a direct call, not a crash.
        limited = is_limited(self.given)
        began = time.monotonic()
        try:
            with anyio.move_on_after(
                patient(CALL_LIMIT) if limited else WAIT_LIMIT  # only a kit_timeout is capped
            ) as waited:
                result = await getattr(tools, verb)(path, *args)
        except anyio.get_cancelled_exc_class():
            if waited.cancel_called or ident in self.cancelled:
                raise
            # Nobody cancelled the tool: it raised a cancellation of its own (a finding).
            self.tracer.emit(
                "tool_result",
                call=ident,
                tool=verb,
                path=path,
                ok=False,
                raised="a cancellation nobody asked for",
                message="",
                text="",
                content_after=read_text(self.root, path),
                elapsed=_since(began),
            )
            return
        except Exception as error:
            self.tracer.emit(
                "tool_result",
                call=ident,
                tool=verb,
                path=path,
                ok=False,
                raised=repr(error),
                message="",
                text="",
                content_after=read_text(self.root, path),
                elapsed=_since(began),
            )
            return
        if waited.cancelled_caught:
            if limited:
                self.tracer.emit("kit_timeout", call=ident, seconds=patient(CALL_LIMIT))
                return
            raise ImplementationError(
                f"the {verb} tool ({ident}) did not return within {WAIT_LIMIT} s",
                context=self.tracer.tail(),
            )
        self.tracer.emit(
            "tool_result",
            call=ident,
            tool=verb,
            path=path,
            ok=bool(result.ok),
            message=str(result.message),
            text=str(result.text),
            content_after=read_text(self.root, path),
            elapsed=_since(began),
        )
