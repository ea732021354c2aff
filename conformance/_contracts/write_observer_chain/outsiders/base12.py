"""An outsider's write-observer chain and write tools (outsider batch 12, woc12).

Written by a twelfth outsider from the docs alone (against main 83f2bad). Kept as written
(the original ``b12woc_base.py`` had sha256
00e58161bb3c7df993961841cc41bd7734a79a8213924a1722393c3a7a8b2be7); only the import of
the kit's adapter pieces changed (from ``seamspec.conformance`` to the modules that define
them) and ``ruff format`` rewrapped one line and spaced one slice. The outsider ran it on
asyncio and trio: it conforms to every scenario under both profiles, and it is the control
the batch's variants (``batch12.py``) are judged against.

``Chain`` runs the observers one at a time in list order, flattening nested chains of its
own class through ``_run(hook, path, inherited)``; each leaf runs in an ``anyio.CancelScope``
with the limit in force (its own, else the inherited one), only ``Exception`` is contained,
and the warn-once set is keyed by the observer's ``id`` (``_warn_key``). Annotations pass
through ``_clean`` (identity) and are joined with exactly ``"\\n\\n"``. ``Tools`` resolve
with ``os.path.realpath``, test containment with ``relative_to``, match ``fnmatchcase`` on
the path and each parent folder, create missing folders along the resolved path and hand
the hooks the resolved path; the variants override one of the small hooks (``_normalise``,
``_matches``, ``_target``, ``_make_parents``, ``_put``, ``_clean``, ``_warn_key``).

    seamspec run --impl seamspec.conformance._contracts.write_observer_chain.outsiders.base12:adapter

Original module docstring:

    An outsider's write-observer chain and write tools, written from the contract page.

    Chain: runs observers one at a time, in list order, for both hooks; contains
    ``Exception`` (never cancellation); warns once per failing observer for the chain's
    lifetime; joins non-empty annotations with exactly "\\n\\n"; returns None when there are
    none. Optional per-hook time limit that bounds each *leaf* observer; nested chains of
    this implementation run their leaves under their own limit, or else the one in force.

    Tools: write / edit / delete with a sandbox check (resolved path, component
    containment, fnmatchcase deny patterns against the path and each parent folder).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._core.python_adapter import PythonAdapter

__all__ = ["Chain", "Tools", "Impl", "ToolResult", "make_adapter", "adapter", "adapter_trio"]  # noqa: RUF022 (as written)


# --------------------------------------------------------------------------- chain


class Chain:
    """An ordered chain of write observers that is itself a write observer."""

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
        self._warned: set[Any] = set()

    # -- the observer protocol
    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path, None)

    async def after_write(self, path: Path) -> str | None:
        notes = await self._run("after_write", path, None)
        return self._join(notes)

    # -- internals (variants override these)
    def _limit_in_force(self, inherited: float | None) -> float | None:
        return self.hook_time_limit if self.hook_time_limit is not None else inherited

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit_in_force(inherited)
        notes: list[str] = []  # per call: overlapping calls never share it
        for observer in self.observers:
            if isinstance(observer, Chain):
                inner = await observer._run(hook, path, limit)
                if hook == "after_write":
                    joined = observer._join(inner)
                    if joined is not None and joined != "":
                        notes.append(joined)
                continue
            value = await self._one(observer, hook, path, limit)
            if hook == "after_write" and isinstance(value, str) and value != "":
                notes.append(self._clean(value))
        return notes

    async def _one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        try:
            if limit is None:
                return await getattr(observer, hook)(path)
            with anyio.CancelScope(deadline=anyio.current_time() + limit) as scope:
                value = await getattr(observer, hook)(path)
            if scope.cancelled_caught:
                self._fail(observer, "timeout", f"{hook} exceeded the {limit} s hook time limit")
                return None
            return value
        except Exception as error:  # cancellation is a BaseException: it passes through
            self._fail(observer, "error", f"{hook} failed: {error!r}")
            return None

    def _warn_key(self, observer: Any, kind: str) -> Any:
        return id(observer)

    def _fail(self, observer: Any, kind: str, message: str) -> None:
        key = self._warn_key(observer, kind)
        if key in self._warned:
            return
        self._warned.add(key)
        self.on_failure(observer, message)

    def _clean(self, note: str) -> str:
        return note

    def _join(self, notes: list[str]) -> str | None:
        return "\n\n".join(notes) if notes else None


# --------------------------------------------------------------------------- tools


@dataclass
class ToolResult:
    ok: bool
    message: str
    annotation: str | None = None

    @property
    def text(self) -> str:
        if self.annotation is None:
            return self.message
        return self.message + "\n\n" + self.annotation


class Tools:
    """write / edit / delete over a sandbox, each with exactly one observer (the chain)."""

    def __init__(self, root: Path, chain: Any, *, deny: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.chain = chain
        self.deny = list(deny)

    # -- path handling (variants override these)
    def _normalise(self, raw: str) -> str:
        return raw

    def _resolve(self, raw: str) -> Path:
        return Path(os.path.realpath(os.path.join(self.root, raw)))

    def _matches(self, candidate: str, pattern: str) -> bool:
        return fnmatch.fnmatchcase(candidate, pattern)

    def _check(self, raw: str) -> tuple[Path | None, str]:
        """The resolved path when allowed, else None and why."""
        resolved = self._resolve(self._normalise(raw))
        try:
            rel = resolved.relative_to(self.root)
        except ValueError:
            return None, "leads out of the workspace"
        rel_s = rel.as_posix()
        if rel_s in ("", "."):
            return None, "is the workspace itself"
        for pattern in self.deny:
            if self._denied_by(rel_s, pattern):
                return None, f"matches the deny rule {pattern!r}"
        return resolved, ""

    def _denied_by(self, rel: str, pattern: str) -> bool:
        candidates = [rel] + [
            p.as_posix() for p in PurePosixPath(rel).parents if p.as_posix() != "."
        ]
        return any(self._matches(c, pattern) for c in candidates)

    def _target(self, raw: str, checked: Path) -> Path:
        """Where the tool's I/O goes (the checked, resolved path)."""
        return checked

    def _make_parents(self, raw: str, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)

    def _put(self, target: Path, data: bytes) -> None:
        with open(target, "wb") as handle:
            handle.write(data)

    # -- the tools
    async def write(self, path: str, content: str) -> ToolResult:
        checked, why = self._check(path)
        if checked is None:
            return ToolResult(False, f"refused: {path} {why}")
        target = self._target(path, checked)
        data = content.encode("utf-8")
        await self.chain.before_write(target)
        try:
            self._make_parents(path, target)
            self._put(target, data)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        annotation = await self.chain.after_write(target)
        return ToolResult(True, f"wrote {len(data)} bytes to {path}", annotation)

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        checked, why = self._check(path)
        if checked is None:
            return ToolResult(False, f"refused: {path} {why}")
        target = self._target(path, checked)
        if old == "":
            return ToolResult(False, "edit failed: the old text is empty")
        try:
            data = target.read_bytes()
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult(False, f"edit failed: {path} is not UTF-8 text")
        count = text.count(old)
        if count == 0:
            return ToolResult(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return ToolResult(
                False, f"edit failed: the old text occurs {count} times in {path}; quote more"
            )
        await self.chain.before_write(target)
        start = text.index(old)
        new_text = text[:start] + new + text[start + len(old) :]
        try:
            self._put(target, new_text.encode("utf-8"))
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        annotation = await self.chain.after_write(target)
        return ToolResult(True, f"edited {path}", annotation)

    async def delete(self, path: str) -> ToolResult:
        checked, why = self._check(path)
        if checked is None:
            return ToolResult(False, f"refused: {path} {why}")
        target = self._target(path, checked)
        await self.chain.before_write(target)
        try:
            os.unlink(target)
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        annotation = await self.chain.after_write(target)
        return ToolResult(True, f"deleted {path}", annotation)


# --------------------------------------------------------------------------- adapter


class Impl:
    """The WriteObserverImplementation the kit's driver asks for."""

    features: tuple[str, ...] = ("write-tools", "builtin-observers", "hook-time-limit")
    chain_cls: type[Chain] = Chain
    tools_cls: type[Tools] = Tools

    def make_chain(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None,
        on_failure: Callable[[Any, str], None],
    ) -> Chain:
        return self.chain_cls(observers, hook_time_limit=hook_time_limit, on_failure=on_failure)

    def make_tools(self, root: Path, chain: Any, *, deny: Sequence[str]) -> Tools:
        return self.tools_cls(root, chain, deny=deny)


def make_adapter(
    impl: Any = None, *, name: str = "out-b12woc-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[WriteObserverChainDriver(impl if impl is not None else Impl())],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(name="out-b12woc-base-trio", backend="trio")
