"""An outsider's write-observer chain and write tools (outsider batch 10, woc10).

Written by a tenth outsider from the docs alone. Kept as written (the original
``b10woc_base.py`` had sha256
743b5436abbcfd40764dcc4ba723ff5e8e8a598d29ecb59f506317b6b29aa9e6); only imports changed,
``make_adapter`` took a ``backend`` argument and ``adapter_trio`` was added (the outsider
ran asyncio only). It conforms to every scenario under both profiles and both backends,
and it is the control the batch's variants (``batch10.py``) are judged against.

``Chain`` flattens nested chains through an internal ``_run(hook, path, inherited)``, runs
each leaf under ``anyio.move_on_after`` with the limit in force (its own, else the one
inherited), contains ``Exception`` only and warns once per leaf (by ``id``). ``Tools``
resolve with ``os.path.realpath``, test containment with ``relative_to``, match
``fnmatchcase`` against the relative path and each parent, work on bytes, and ``edit``
counts with ``str.count`` before ``before_write``.

    seamspec run --impl mutant:out-woc10-edit-counts-matching-lines
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._core.python_adapter import PythonAdapter

SEPARATOR = "\n\n"


class HookTimedOut(Exception):
    """A hook ran past the chain's per-hook time limit."""


class Chain:
    """An ordered chain of write observers; itself an observer."""

    def __init__(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None = None,
        on_failure: Callable[[Any, str], None] | None = None,
    ) -> None:
        self.observers = list(observers)
        self.hook_time_limit = hook_time_limit
        self.on_failure = on_failure
        self._warned: set[int] = set()

    # -- the observer protocol ------------------------------------------------------
    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path, None)

    async def after_write(self, path: Path) -> str | None:
        notes = await self._run("after_write", path, None)
        return self._join(notes)

    # -- internals --------------------------------------------------------------------
    def _join(self, notes: list[str]) -> str | None:
        return SEPARATOR.join(notes) if notes else None

    def _limit_in_force(self, inherited: float | None) -> float | None:
        return self.hook_time_limit if self.hook_time_limit is not None else inherited

    def _keep(self, value: Any) -> bool:
        return isinstance(value, str) and value != ""

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit_in_force(inherited)
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, Chain):
                notes.extend(await observer._run(hook, path, limit))
                continue
            try:
                value = await self._call_one(observer, hook, path, limit)
            except Exception as error:  # cancellation is a BaseException: not caught
                self._failed(observer, error)
                continue
            if hook == "after_write" and self._keep(value):
                notes.append(value)
        return notes

    async def _call_one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        method = getattr(observer, hook)
        if limit is None:
            return await method(path)
        with anyio.move_on_after(limit) as scope:
            return await method(path)
        if scope.cancelled_caught:
            raise HookTimedOut(f"{hook} exceeded the time limit of {limit} s")
        return None  # pragma: no cover

    def _failed(self, observer: Any, error: BaseException) -> None:
        key = id(observer)
        if key in self._warned:
            return
        self._warned.add(key)
        if self.on_failure is not None:
            self.on_failure(observer, f"observer failed: {error!r}")


# ---------------------------------------------------------------------------------------
# File tools


@dataclass
class ToolResult:
    ok: bool
    message: str
    annotation: str | None = None

    @property
    def text(self) -> str:
        if self.annotation is None or self.annotation == "":
            return self.message
        return self.message + SEPARATOR + self.annotation


class Refused(Exception):
    pass


class Tools:
    """write / edit / delete with one observer called around each mutation."""

    def __init__(self, root: Path, observer: Any, *, deny: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.observer = observer
        self.deny = list(deny)

    # -- sandbox ------------------------------------------------------------------------
    def _resolve(self, rel: str) -> Path:
        if os.path.isabs(rel):
            raise Refused(f"refused: {rel} is an absolute path")
        resolved = Path(os.path.realpath(os.path.join(self.root, rel)))
        try:
            inside = resolved.relative_to(self.root)
        except ValueError:
            raise Refused(f"refused: {rel} leads out of the workspace") from None
        if not inside.parts:
            raise Refused(f"refused: {rel} is the workspace itself")
        self._check_deny(rel, inside)
        return resolved

    def _check_deny(self, rel: str, inside: Path) -> None:
        parts = inside.parts
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        for pattern in self.deny:
            for candidate in candidates:
                if fnmatch.fnmatchcase(candidate, pattern):
                    raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")

    # -- hooks ----------------------------------------------------------------------------
    async def _before(self, path: Path) -> None:
        try:  # noqa: SIM105 (kept as written)
            await self.observer.before_write(path)
        except Exception:
            pass

    async def _after(self, path: Path) -> str | None:
        try:
            annotation: str | None = await self.observer.after_write(path)
            return annotation
        except Exception:
            return None

    async def _succeeded(self, path: Path, message: str) -> ToolResult:
        annotation = await self._after(path)
        return ToolResult(True, message, annotation)

    # -- mutations ------------------------------------------------------------------------
    def _put(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)

    def _replace(self, text: str, old: str, new: str) -> str:
        return text.replace(old, new, 1)

    def _occurrences(self, text: str, old: str) -> int:
        return text.count(old)

    # -- the tools ------------------------------------------------------------------------
    async def write(self, path: str, content: str) -> ToolResult:
        try:
            resolved = self._resolve(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        data = content.encode("utf-8")
        await self._before(resolved)
        try:
            self._put(resolved, data)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        return await self._succeeded(resolved, f"wrote {len(data)} bytes to {path}")

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            resolved = self._resolve(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        if old == "":
            return ToolResult(False, "edit failed: the old text is empty")
        try:
            raw = resolved.read_bytes()
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult(False, f"edit failed: {path} is not UTF-8 text")
        count = self._occurrences(text, old)
        if count == 0:
            return ToolResult(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return ToolResult(
                False, f"edit failed: the old text occurs {count} times in {path}; be more specific"
            )
        updated = self._replace(text, old, new)
        await self._before(resolved)
        try:
            self._put(resolved, updated.encode("utf-8"))
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        return await self._succeeded(resolved, f"edited {path}")

    async def delete(self, path: str) -> ToolResult:
        try:
            resolved = self._resolve(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        await self._before(resolved)
        try:
            os.unlink(resolved)
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        return await self._succeeded(resolved, f"deleted {path}")


# ---------------------------------------------------------------------------------------
# The adapter


class Implementation:
    features: tuple[str, ...] = ("write-tools", "hook-time-limit", "builtin-observers")
    chain_class: type = Chain
    tools_class: type = Tools

    def make_chain(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None,
        on_failure: Callable[[Any, str], None],
    ) -> Any:
        return self.chain_class(observers, hook_time_limit=hook_time_limit, on_failure=on_failure)

    def make_tools(self, root: Path, chain: Any, *, deny: Sequence[str]) -> Any:
        return self.tools_class(root, chain, deny=deny)


def make_adapter(
    name: str = "b10woc-base",
    chain_class: type = Chain,
    tools_class: type = Tools,
    backend: str = "asyncio",
) -> PythonAdapter:
    impl = Implementation()
    impl.chain_class = chain_class
    impl.tools_class = tools_class
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[WriteObserverChainDriver(impl)],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(name="b10woc-base-trio", backend="trio")
