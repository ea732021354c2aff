"""An outsider's write-observer chain and write tools, written from the seamspec docs.

Outsider batch 2 (see ``__init__``), by someone other than batch 1's author, who had read
only the contract page and the driver's docstring. Kept as written (the original
``base.py`` had sha256 f1c36961a1a2d78f361488b9d316e31952ac18ee8a7214838b47d72435e62462);
only imports, typing and the adapter builder changed, so that it type-checks with the kit
and runs on either backend. It conforms to every scenario, and it is the control the
batch's variants (``batch2.py``) are judged against.

``ObserverChain`` times each leaf observer and lets a nested chain time its own leaves
under the limit it inherits; ``WriteTools`` resolve a path once (``check``) and hand the
hooks what it resolved (``_hook_path``). Each decision sits in one method, which is where
the variants put their one bug.
"""

from __future__ import annotations

import contextvars
import fnmatch
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._core.python_adapter import PythonAdapter

#: The per-hook limit a nested chain inherits from the chain it runs under.
_INHERITED_LIMIT: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "fresh_woc_inherited_limit", default=None
)


def _describe(observer: Any) -> str:
    return getattr(observer, "name", None) or type(observer).__name__


class ObserverChain:
    """An ordered list of write observers that is itself a write observer."""

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

    # -- the observer protocol -------------------------------------------------------

    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path)

    async def after_write(self, path: Path) -> str | None:
        notes = await self._run("after_write", path)
        return "\n\n".join(notes) if notes else None

    # -- internals -------------------------------------------------------------------

    def _effective_limit(self) -> float | None:
        if self.hook_time_limit is not None:
            return self.hook_time_limit
        return _INHERITED_LIMIT.get()

    async def _run(self, hook: str, path: Path) -> list[str]:
        limit = self._effective_limit()
        notes: list[str] = []
        for observer in self.observers:
            note = await self._one(observer, hook, path, limit)
            if isinstance(note, str) and note != "":
                notes.append(note)
        return notes

    async def _one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        if isinstance(observer, ObserverChain):
            # A nested chain is not timed as a whole: it times its own leaves, under its
            # own limit or else ours.
            token = _INHERITED_LIMIT.set(limit)
            try:
                return await getattr(observer, hook)(path)
            except Exception as error:  # a nested chain contains its own; belt and braces
                self._failed(observer, f"{hook} raised {error!r}")
                return None
            finally:
                _INHERITED_LIMIT.reset(token)
        return await self._leaf(observer, hook, path, limit)

    async def _leaf(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        try:
            if limit is None:
                return await getattr(observer, hook)(path)
            with anyio.move_on_after(limit) as scope:
                value = await getattr(observer, hook)(path)
            if scope.cancelled_caught:
                self._failed(observer, f"{hook} exceeded the {limit} s time limit")
                return None
            return value
        except Exception as error:  # cancellation is a BaseException: it propagates
            self._failed(observer, f"{hook} raised {error!r}")
            return None

    def _failed(self, observer: Any, message: str) -> None:
        key = id(observer)
        if key in self._warned:
            return
        self._warned.add(key)
        if self.on_failure is not None:
            self.on_failure(observer, f"observer {_describe(observer)} failed: {message}")


# --- write tools -------------------------------------------------------------------------


@dataclass
class ToolResult:
    ok: bool
    message: str
    annotation: str | None = None

    @property
    def text(self) -> str:
        if self.annotation is None or self.annotation == "":
            return self.message
        return f"{self.message}\n\n{self.annotation}"


class Refused(Exception):
    pass


class WriteTools:
    """write / edit / delete over a sandbox root, with the chain as their one seam."""

    def __init__(self, root: Path, observer: Any, *, deny: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.observer = observer
        self.deny = list(deny)

    # -- sandbox ---------------------------------------------------------------------

    def _resolve(self, rel: str) -> Path:
        return Path(os.path.realpath(self._candidate(rel)))

    def _candidate(self, rel: str) -> Path:
        raw = Path(rel)
        return raw if raw.is_absolute() else self.root / raw

    def _inside(self, resolved: Path) -> bool:
        return resolved != self.root and resolved.is_relative_to(self.root)

    def check(self, rel: str) -> Path:
        """The resolved path, or Refused with the reason."""
        resolved = self._resolve(rel)
        if not self._inside(resolved):
            raise Refused(f"refused: {rel} is outside the workspace")
        relative = resolved.relative_to(self.root)
        candidates = [relative.as_posix()] + [
            p.as_posix() for p in relative.parents if p.as_posix() != "."
        ]
        for pattern in self.deny:
            for candidate in candidates:
                if fnmatch.fnmatchcase(candidate, pattern):
                    raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")
        return resolved

    def _hook_path(self, rel: str, resolved: Path) -> Path:
        return resolved

    # -- hooks (the tools protect themselves even from a single bare observer) -------

    async def _before(self, path: Path) -> None:
        try:  # noqa: SIM105 (kept as the outsider wrote it)
            await self.observer.before_write(path)
        except Exception:
            pass

    async def _after(self, path: Path) -> str | None:
        try:
            value = await self.observer.after_write(path)
        except Exception:
            return None
        return value if isinstance(value, str) and value != "" else None

    # -- mutations -------------------------------------------------------------------

    def _write_bytes(self, target: Path, data: bytes) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)

    async def write(self, path: str, content: str) -> ToolResult:
        try:
            target = self.check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        hook_path = self._hook_path(path, target)
        data = content.encode("utf-8")
        await self._before(hook_path)
        try:
            self._write_bytes(target, data)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        message = f"wrote {len(data)} bytes to {path}"
        return ToolResult(True, message, await self._after(hook_path))

    def _replace(self, text: str, old: str, new: str) -> str:
        count = text.count(old) if old else 0
        if count != 1:
            raise ValueError(
                "old text not found" if count == 0 else f"old text found {count} times"
            )
        return text.replace(old, new, 1)

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            target = self.check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        try:
            text = target.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            return ToolResult(False, f"edit failed: {getattr(error, 'strerror', None) or error}")
        try:
            new_text = self._replace(text, old, new)
        except ValueError as error:
            return ToolResult(False, f"edit failed: {error}")
        hook_path = self._hook_path(path, target)
        await self._before(hook_path)
        try:
            self._write_bytes(target, new_text.encode("utf-8"))
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        return ToolResult(True, f"edited {path}", await self._after(hook_path))

    async def delete(self, path: str) -> ToolResult:
        try:
            target = self.check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        hook_path = self._hook_path(path, target)
        await self._before(hook_path)
        try:
            os.unlink(target)
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        return ToolResult(True, f"deleted {path}", await self._after(hook_path))


# --- the adapter -------------------------------------------------------------------------


class FreshImplementation:
    """The driver's view of this implementation; a variant swaps one of the two classes."""

    features: tuple[str, ...] = ("write-tools", "builtin-observers", "hook-time-limit")

    def __init__(
        self,
        chain_class: type[ObserverChain] = ObserverChain,
        tools_class: type[WriteTools] = WriteTools,
    ) -> None:
        self.chain_class = chain_class
        self.tools_class = tools_class

    def make_chain(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None,
        on_failure: Callable[[Any, str], None],
    ) -> ObserverChain:
        return self.chain_class(observers, hook_time_limit=hook_time_limit, on_failure=on_failure)

    def make_tools(self, root: Path, chain: Any, *, deny: Sequence[str]) -> WriteTools:
        return self.tools_class(root, chain, deny=deny)


def build(
    backend: str = "asyncio",
    *,
    chain_class: type[ObserverChain] = ObserverChain,
    tools_class: type[WriteTools] = WriteTools,
    name: str = "outsider-woc-base-2",
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[WriteObserverChainDriver(FreshImplementation(chain_class, tools_class))],
        backend=backend,
    )


def adapter() -> PythonAdapter:
    return build()


def adapter_trio() -> PythonAdapter:
    return build("trio")
