"""An outsider's write-observer chain and write tools (outsider batch 13, b13woc).

Written by a thirteenth outsider from the docs alone (the docs of main 79cf702). Kept as
written (the original ``b13woc_base.py`` had sha256
cff7bce20fc36651ba1b0939aa77d886ffa2051f1c614c161429816c8b3dfdc3); only the import of the
kit's adapter pieces changed (from ``seamspec.conformance`` to the modules that define
them), one annotation was added for mypy (``method`` in ``Chain._call_one``) and
``ruff format`` joined two wrapped lines. The outsider ran it on
asyncio and trio: it conforms to every scenario under both profiles, and it is the control
the batch's variants (``batch13.py``) are judged against.

``Chain`` runs the observers one at a time in list order, flattening nested chains of its
own class through ``_run(hook, path, inherited)``; each leaf runs under
``anyio.move_on_after`` with the limit in force (its own, else the inherited one), only
``Exception`` is contained, and the warn-once set is keyed by the observer's ``id``.
``Tools`` resolve component by component following links (``resolve_path``), test
containment on the text, match ``fnmatchcase`` on the root-relative path and each parent,
create missing folders along the resolved path and hand the hooks the resolved path; the
variants override ``_run``/``_call_one``, ``_store``, ``_remove``, ``_matches_deny``,
``_finish`` or ``delete``.

    seamspec run --impl seamspec.conformance._contracts.write_observer_chain.outsiders.base13:adapter

Original module docstring:

    b13woc base: an outsider's write-observer chain and write tools, from the docs alone.

    Exports ``adapter()`` (asyncio), ``adapter_trio()`` (trio) and ``make_adapter``.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._core.python_adapter import PythonAdapter

_MAX_LINK_HOPS = 40


# --------------------------------------------------------------------------- chain


class Chain:
    """An ordered chain of write observers that is itself an observer."""

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

    # the protocol ---------------------------------------------------------------
    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path, None)

    async def after_write(self, path: Path) -> str | None:
        notes = await self._run("after_write", path, None)
        return self._join(notes)

    # internals ------------------------------------------------------------------
    @staticmethod
    def _join(notes: list[str]) -> str | None:
        return "\n\n".join(notes) if notes else None

    def _limit_in_force(self, inherited: float | None) -> float | None:
        return self.hook_time_limit if self.hook_time_limit is not None else inherited

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit_in_force(inherited)
        notes: list[str] = []
        for observer in self.observers:
            # a pending cancellation of the caller stops the chain before the next one
            await anyio.lowlevel.checkpoint_if_cancelled()
            if isinstance(observer, Chain):
                notes.extend(await observer._run(hook, path, limit))
                continue
            value = await self._call_one(observer, hook, path, limit)
            if hook == "after_write" and isinstance(value, str) and value != "":
                notes.append(value)
        return notes

    async def _call_one(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> str | None:
        method: Callable[[Path], Awaitable[str | None]] = getattr(observer, hook)
        if limit is None:
            try:
                return await method(path)
            except Exception as error:  # cancellation is a BaseException: it passes
                self._failed(observer, f"{hook} raised {error!r}")
                return None
        try:
            with anyio.move_on_after(limit) as scope:
                value = await method(path)
        except Exception as error:
            self._failed(observer, f"{hook} raised {error!r}")
            return None
        if scope.cancelled_caught:
            self._failed(observer, f"{hook} exceeded the time limit of {limit} s")
            return None
        return value

    def _failed(self, observer: Any, message: str) -> None:
        key = id(observer)
        if key in self._warned:
            return
        self._warned.add(key)
        if self.on_failure is not None:
            self.on_failure(observer, message)


# --------------------------------------------------------------------------- sandbox


class Refused(Exception):
    pass


def _is_inside(path: str, root: str) -> bool:
    return path != root and path.startswith(root.rstrip("/") + "/")


def resolve_path(root: Path, rel: str) -> str:
    """Resolve ``rel`` under ``root`` component by component, following links.

    Components after the first missing one are resolved in the path's text.
    Raises Refused for absolute paths and link loops.
    """
    if rel.startswith("/"):
        raise Refused("absolute paths are not allowed")
    hops = [0]

    def walk(base: str, text: str) -> str:
        current = base
        if text.startswith("/"):
            current = "/"
        for part in text.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                current = os.path.dirname(current) if current != "/" else "/"
                continue
            candidate = os.path.join(current, part)
            if os.path.islink(candidate):
                hops[0] += 1
                if hops[0] > _MAX_LINK_HOPS:
                    raise Refused("too many levels of symbolic links")
                current = walk(current, os.readlink(candidate))
            else:
                current = candidate
        return current

    return walk(str(root), rel)


def deny_candidates(relative: str) -> list[str]:
    """The resolved path relative to the root, and each of its parent folders."""
    parts = relative.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


# --------------------------------------------------------------------------- tools


@dataclass
class ToolResult:
    ok: bool
    message: str
    annotation: str | None = None

    @property
    def text(self) -> str:
        if self.annotation is None or self.annotation == "":
            return self.message
        return self.message + "\n\n" + self.annotation


class Tools:
    """write / edit / delete with the one seam: before_write, mutation, after_write."""

    def __init__(self, root: Path, chain: Any, *, deny: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.chain = chain
        self.deny = list(deny)

    # sandbox ----------------------------------------------------------------------
    def _matches_deny(self, relative: str) -> str | None:
        for candidate in deny_candidates(relative):
            for pattern in self.deny:
                if fnmatch.fnmatchcase(candidate, pattern):
                    return pattern
        return None

    def check(self, rel: str) -> Path:
        resolved = resolve_path(self.root, rel)
        root = str(self.root)
        if not _is_inside(resolved, root):
            raise Refused(f"{rel} is outside the workspace")
        relative = resolved[len(root.rstrip("/")) + 1 :]
        pattern = self._matches_deny(relative)
        if pattern is not None:
            raise Refused(f"{rel} matches the deny rule {pattern!r}")
        return Path(resolved)

    def _checked(self, rel: str) -> Path | ToolResult:
        try:
            return self.check(rel)
        except Refused as why:
            return ToolResult(False, f"refused: {why}")
        except (OSError, ValueError) as error:
            return ToolResult(False, f"refused: {rel}: {error}")

    # mutations --------------------------------------------------------------------
    def _store(self, target: Path, data: bytes) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)

    def _remove(self, target: Path) -> None:
        os.unlink(target)

    async def _finish(self, target: Path, message: str) -> ToolResult:
        annotation = await self.chain.after_write(target)
        return ToolResult(True, message, annotation)

    # the tools ----------------------------------------------------------------------
    async def write(self, path: str, content: str) -> ToolResult:
        target = self._checked(path)
        if isinstance(target, ToolResult):
            return target
        await self.chain.before_write(target)
        try:
            data = content.encode("utf-8")
            self._store(target, data)
        except (OSError, ValueError) as error:
            return ToolResult(False, f"write failed: {error}")
        return await self._finish(target, f"wrote {len(data)} bytes to {path}")

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        target = self._checked(path)
        if isinstance(target, ToolResult):
            return target
        if old == "":
            return ToolResult(False, "edit failed: the old text is empty")
        try:
            text = target.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return ToolResult(False, f"edit failed: {path} does not exist")
        except (OSError, ValueError) as error:
            return ToolResult(False, f"edit failed: {error}")
        count = text.count(old)
        if count == 0:
            return ToolResult(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return ToolResult(False, f"edit failed: the old text occurs {count} times in {path}")
        updated = text.replace(old, new, 1)
        await self.chain.before_write(target)
        try:
            self._store(target, updated.encode("utf-8"))
        except (OSError, ValueError) as error:
            return ToolResult(False, f"edit failed: {error}")
        return await self._finish(target, f"edited {path}")

    async def delete(self, path: str) -> ToolResult:
        target = self._checked(path)
        if isinstance(target, ToolResult):
            return target
        await self.chain.before_write(target)
        try:
            self._remove(target)
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        return await self._finish(target, f"deleted {path}")


# --------------------------------------------------------------------------- adapter


class Implementation:
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
    impl: Any = None, *, name: str = "b13woc-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[WriteObserverChainDriver(impl if impl is not None else Implementation())],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(backend="trio", name="b13woc-base-trio")
