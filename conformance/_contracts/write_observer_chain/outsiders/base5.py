"""An outsider's write-observer chain and file tools (outsider batch 5, woc5).

Written by a fifth outsider from docs/contracts/write-observer-chain.md (down to its
scenario vocabulary; the boundary checklist and the outsider sections were cut from
their copy), docs/usage.md, docs/adapters.md and the room's driver only. Kept as written
(the original ``b5woc_base.py`` had sha256
5d129e2d982bd32d0ca2b0c0f0298325c12d111ed52fea41d8ea1101978f5140); only imports and typing
changed, and the module-level ``adapter`` object became a function (with ``adapter_trio``
and a ``backend`` argument to ``make_adapter``), so that each run gets its own adapter.
It conforms to every scenario under both profiles and both backends, and it is the
control the batch's variants (``batch5.py``) are judged against.

``ObserverChain._run`` hands a nested chain of its own class the limit in force
(``_effective_limit``); ``Sandbox`` resolves a path component by component like the
kernel; ``FileTools`` check before either hook and contain an observer's ``Exception``.

    seamspec run --impl mutant:out-woc5-edit-drops-bom
"""

from __future__ import annotations

import fnmatch
import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._core.python_adapter import PythonAdapter

# --------------------------------------------------------------------------------------
# The chain
# --------------------------------------------------------------------------------------


class ObserverChain:
    """An ordered list of write observers that is itself a write observer.

    * both hooks call every observer once, in list order, one after the other;
    * non-empty annotations are joined with exactly "\\n\\n"; nothing at all gives None;
    * an ``Exception`` from a hook is contained (no annotation), warned about once per
      observer for the chain's lifetime, and the observer is called again next time;
    * cancellation (a ``BaseException``) is never caught;
    * an optional per-hook time limit bounds each *leaf* observer; a nested chain is not
      timed as a whole but runs its own observers under its own limit, or else ours.
    """

    def __init__(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None = None,
        on_failure: Callable[[Any, str], None] | None = None,
    ) -> None:
        self.observers = list(observers)
        self.hook_time_limit = hook_time_limit
        self._on_failure = on_failure
        self._warned: set[int] = set()

    # the observer protocol -------------------------------------------------------
    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path, None)

    async def after_write(self, path: Path) -> str | None:
        return self._join(await self._run("after_write", path, None))

    # internals -------------------------------------------------------------------
    def _effective_limit(self, inherited: float | None) -> float | None:
        return self.hook_time_limit if self.hook_time_limit is not None else inherited

    @staticmethod
    def _join(notes: list[str]) -> str | None:
        return "\n\n".join(notes) if notes else None

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._effective_limit(inherited)
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, ObserverChain):
                # not timed as a whole: its leaves run under its limit or ours
                inner = await observer._run(hook, path, limit)
                if hook == "after_write":
                    joined = observer._join(inner)
                    if joined:
                        notes.append(joined)
                continue
            note = await self._call_one(observer, hook, path, limit)
            if hook == "after_write" and isinstance(note, str) and note != "":
                notes.append(note)
        return notes

    async def _call_one(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> str | None:
        try:
            if limit is None:
                direct: str | None = await getattr(observer, hook)(path)
                return direct
            value: str | None = None
            with anyio.move_on_after(limit) as scope:
                value = await getattr(observer, hook)(path)
            if scope.cancelled_caught:
                self._failed(observer, f"{hook} exceeded the time limit of {limit} s")
                return None
            return value
        except Exception as error:  # cancellation is a BaseException: it passes
            self._failed(observer, f"{hook} raised {error!r}")
            return None

    def _failed(self, observer: Any, message: str) -> None:
        key = id(observer)
        if key in self._warned:
            return
        self._warned.add(key)
        name = getattr(observer, "name", repr(observer))
        if self._on_failure is not None:
            self._on_failure(observer, f"observer {name} failed: {message}")


# --------------------------------------------------------------------------------------
# The file tools
# --------------------------------------------------------------------------------------


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


class Refused(Exception):
    pass


MAX_LINKS = 40


class Sandbox:
    """Resolves a tool path like the kernel does and judges where it leads."""

    def __init__(self, root: Path, deny: Sequence[str]) -> None:
        self.root = Path(os.path.realpath(root))
        self.deny = list(deny)

    def resolve(self, rel: str) -> Path:
        if not rel or os.path.isabs(rel):
            raise Refused(f"refused: {rel} is not a path relative to the workspace")
        pending = deque(p for p in PurePosixPath(rel).parts)
        current = self.root
        hops = 0
        while pending:
            part = pending.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                current = current.parent
                continue
            candidate = current / part
            if candidate.is_symlink():
                hops += 1
                if hops > MAX_LINKS:
                    raise Refused(f"refused: {rel} has too many levels of links")
                target = os.readlink(candidate)
                tparts = list(PurePosixPath(target).parts)
                if target.startswith("/"):
                    current = Path("/")
                    tparts = tparts[1:]
                pending.extendleft(reversed(tparts))
                continue
            current = candidate
        return current

    def check(self, rel: str) -> Path:
        resolved = self.resolve(rel)
        try:
            inside = resolved.relative_to(self.root)
        except ValueError:
            raise Refused(f"refused: {rel} leads outside the workspace") from None
        posix = inside.as_posix()
        if posix in ("", "."):
            raise Refused(f"refused: {rel} is the workspace itself")
        parts = posix.split("/")
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        for pattern in self.deny:
            for candidate in candidates:
                if fnmatch.fnmatchcase(candidate, pattern):
                    raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")
        return resolved


class FileTools:
    """write / edit / delete, each calling its one observer around its one mutation."""

    def __init__(self, root: Path, observer: Any, *, deny: Sequence[str] = ()) -> None:
        self.sandbox = Sandbox(root, deny)
        self.observer = observer

    async def _before(self, path: Path) -> None:
        try:  # noqa: SIM105 (kept as written)
            await self.observer.before_write(path)
        except Exception:
            pass

    async def _after(self, path: Path) -> str | None:
        try:
            note = await self.observer.after_write(path)
        except Exception:
            return None
        return note if isinstance(note, str) and note != "" else None

    async def write(self, path: str, content: str) -> ToolResult:
        try:
            target = self.sandbox.check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        data = content.encode("utf-8")
        await self._before(target)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        note = await self._after(target)
        return ToolResult(True, f"wrote {len(data)} bytes to {path}", note)

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            target = self.sandbox.check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        try:
            raw = target.read_bytes()
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult(False, f"edit failed: {path} is not UTF-8 text")
        count = text.count(old) if old else 0
        if count == 0:
            return ToolResult(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return ToolResult(
                False, f"edit failed: the old text occurs {count} times in {path}; be more specific"
            )
        updated = text.replace(old, new, 1).encode("utf-8")
        await self._before(target)
        try:
            with open(target, "wb") as handle:
                handle.write(updated)
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        note = await self._after(target)
        return ToolResult(True, f"edited {path}", note)

    async def delete(self, path: str) -> ToolResult:
        try:
            target = self.sandbox.check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        await self._before(target)
        try:
            os.unlink(target)
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        note = await self._after(target)
        return ToolResult(True, f"deleted {path}", note)


# --------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------


class BaseImplementation:
    """Tells the kit's driver how to build this chain and these tools."""

    features: tuple[str, ...] = ("write-tools", "builtin-observers", "hook-time-limit")
    chain_class: type = ObserverChain
    tools_class: type = FileTools

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
    implementation: Any, name: str = "b5woc-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[WriteObserverChainDriver(implementation)],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return make_adapter(BaseImplementation())


def adapter_trio() -> PythonAdapter:
    return make_adapter(BaseImplementation(), "b5woc-base-trio", backend="trio")
