"""An outsider's write-observer chain and write tools (outsider batch 11, woc11).

Written by an eleventh outsider from the docs alone (against main e41a630). Kept as written
(the original ``b11woc_base.py`` had sha256
0fb63557237d08600ed5517e21521f9a920116a7af063f4b196cca35a39bc60e); only the import of
the kit's adapter pieces changed and ``adapter``/``adapter_trio`` became functions (they
were module-level adapters). The outsider ran it on asyncio and trio: it conforms to every
scenario under both profiles, and it is the control the batch's variants
(``batch11.py``) are judged against.

``Chain`` flattens nested chains through ``_collect(hook, path, inherited)``, runs each
leaf under ``anyio.move_on_after`` with the limit in force (its own, else the inherited
one), checks ``checkpoint_if_cancelled`` after a cut-off, contains ``Exception`` only and
warns once per leaf (by ``id``). ``Tools`` resolve with ``os.path.realpath``, test
containment with ``relative_to``, match ``fnmatchcase`` on the path and each parent, hand
the hooks the resolved path (``_hook_path``), and ``edit`` counts with ``str.count``
before any hook.

    seamspec run --impl seamspec.conformance._contracts.write_observer_chain.outsiders.base11:adapter
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._core.python_adapter import PythonAdapter

JOIN = "\n\n"


# --------------------------------------------------------------------------- the chain


class Chain:
    """An ordered list of observers that is itself an observer."""

    def __init__(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None = None,
        on_failure: Callable[[Any, str], None] | None = None,
    ) -> None:
        self.observers = list(observers)
        self.hook_time_limit = hook_time_limit
        self.on_failure = on_failure or (lambda observer, message: None)
        self._warned: set[int] = set()

    # -- the observer protocol
    async def before_write(self, path: Path) -> None:
        await self._collect("before_write", path, None)

    async def after_write(self, path: Path) -> str | None:
        notes = await self._collect("after_write", path, None)
        return self._join(notes)

    # -- internals
    def _limit_in_force(self, inherited: float | None) -> float | None:
        return self.hook_time_limit if self.hook_time_limit is not None else inherited

    def _is_nested(self, observer: Any) -> bool:
        return isinstance(observer, Chain)

    async def _collect(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit_in_force(inherited)
        notes: list[str] = []
        for observer in self.observers:
            if self._is_nested(observer):
                notes.extend(await observer._collect(hook, path, limit))
                continue
            ok, value = await self._run_leaf(observer, hook, path, limit)
            if ok and self._keep(value):
                notes.append(value)
        return notes

    async def _run_leaf(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> tuple[bool, Any]:
        try:
            if limit is None:
                value = await getattr(observer, hook)(path)
            else:
                with anyio.move_on_after(limit) as scope:
                    value = await getattr(observer, hook)(path)
                if scope.cancelled_caught:
                    # the caller may have been cancelled too while the hook unwound
                    await anyio.lowlevel.checkpoint_if_cancelled()
                    self._failed(observer, f"{hook} exceeded the time limit of {limit} s")
                    return False, None
        except Exception as error:  # cancellation is a BaseException: it passes through
            self._failed(observer, f"{hook} raised {error!r}")
            return False, None
        return True, value

    def _keep(self, value: Any) -> bool:
        return isinstance(value, str) and value != ""

    def _join(self, notes: list[str]) -> str | None:
        return JOIN.join(notes) if notes else None

    def _failed(self, observer: Any, message: str) -> None:
        if id(observer) in self._warned:
            return
        self._warned.add(id(observer))
        self.on_failure(observer, f"observer {getattr(observer, 'name', observer)!r}: {message}")


# --------------------------------------------------------------------------- the tools


@dataclass
class ToolResult:
    ok: bool
    message: str
    annotation: str | None = None

    @property
    def text(self) -> str:
        if self.annotation is None:
            return self.message
        return self.message + JOIN + self.annotation


class Refused(Exception):
    pass


class Tools:
    """write / edit / delete with the seam: check, before_write, mutate, after_write."""

    def __init__(self, root: Path, chain: Any, *, deny: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.chain = chain
        self.deny = list(deny)

    # -- sandbox check
    def _resolve(self, rel: str) -> Path:
        if os.path.isabs(rel):
            raise Refused(f"refused: {rel} is an absolute path")
        resolved = Path(os.path.realpath(os.path.join(self.root, rel)))
        inside = self._relative(resolved)
        if inside is None:
            raise Refused(f"refused: {rel} lies outside the workspace")
        pattern = self._denied(inside)
        if pattern is not None:
            raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")
        return resolved

    def _relative(self, resolved: Path) -> str | None:
        try:
            inside = resolved.relative_to(self.root)
        except ValueError:
            return None
        if str(inside) in ("", "."):
            return None  # the root itself
        return inside.as_posix()

    def _candidates(self, inside: str) -> list[str]:
        parts = inside.split("/")
        return ["/".join(parts[: i + 1]) for i in range(len(parts))]

    def _denied(self, inside: str) -> str | None:
        for candidate in self._candidates(inside):
            for pattern in self.deny:
                if fnmatch.fnmatchcase(candidate, pattern):
                    return pattern
        return None

    def _hook_path(self, rel: str, resolved: Path) -> Path:
        """The path the observers are given: the resolved one."""
        return resolved

    # -- result helper
    async def _finish(self, hooked: Path, message: str) -> ToolResult:
        annotation = await self.chain.after_write(hooked)
        return ToolResult(True, message, annotation)

    # -- write
    async def write(self, path: str, content: str) -> ToolResult:
        try:
            resolved = self._resolve(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        hooked = self._hook_path(path, resolved)
        await self.chain.before_write(hooked)
        data = content.encode("utf-8")
        try:
            self._write_bytes(resolved, data)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        return await self._finish(hooked, f"wrote {len(data)} bytes to {path}")

    def _write_bytes(self, resolved: Path, data: bytes) -> None:
        resolved.parent.mkdir(parents=True, exist_ok=True)
        with open(resolved, "wb") as handle:
            handle.write(data)

    # -- edit
    def _count(self, text: str, old: str) -> int:
        return text.count(old)

    def _apply(self, text: str, old: str, new: str) -> str:
        return text.replace(old, new, 1)

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            resolved = self._resolve(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        try:
            raw = resolved.read_bytes()
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult(False, f"edit failed: {path} is not UTF-8 text")
        if old == "":
            return ToolResult(False, "edit failed: the old text is empty")
        found = self._count(text, old)
        if found == 0:
            return ToolResult(False, f"edit failed: the old text does not occur in {path}")
        if found > 1:
            return ToolResult(
                False, f"edit failed: the old text occurs {found} times in {path}; be specific"
            )
        hooked = self._hook_path(path, resolved)
        await self.chain.before_write(hooked)
        data = self._apply(text, old, new).encode("utf-8")
        try:
            with open(resolved, "wb") as handle:
                handle.write(data)
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        return await self._finish(hooked, f"edited {path}")

    # -- delete
    async def delete(self, path: str) -> ToolResult:
        try:
            resolved = self._resolve(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        hooked = self._hook_path(path, resolved)
        await self.chain.before_write(hooked)
        try:
            os.unlink(resolved)
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        return await self._finish(hooked, f"deleted {path}")


# --------------------------------------------------------------------------- the adapter


class Impl:
    features: tuple[str, ...] = ("write-tools", "builtin-observers", "hook-time-limit")
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
    impl: Any = None, *, name: str = "b11woc-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[WriteObserverChainDriver(impl if impl is not None else Impl())],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(name="b11woc-base-trio", backend="trio")
