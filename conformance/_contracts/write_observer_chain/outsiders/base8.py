"""An outsider's write-observer chain and write tools (outsider batch 8, woc8).

Written by an eighth outsider from the docs alone. Kept as written (the original
``b8woc_base.py`` had sha256
bd27b8877a0771de02fd665059013c4e95fb909825ad02db54abe189db8ee32a); only imports and
typing changed, and the module-level ``adapter`` object became a function (with
``adapter_trio`` and a ``backend`` argument to ``make_adapter``), so that each run gets
its own adapter. It conforms to every scenario under both profiles and both backends,
and it is the control the batch's variants (``batch8.py``) are judged against.

``Chain`` flattens nested chains through an internal ``_run(hook, path, inherited)``,
bounds each leaf with ``anyio.move_on_after`` under its own limit or the inherited one,
contains ``Exception`` only and warns once per leaf. ``Tools`` resolve with
``os.path.realpath``, test containment with ``relative_to`` and match ``fnmatchcase``
against the relative path and each parent; they work on bytes.

    seamspec run --impl mutant:out-woc8-edit-char-offset
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._core.python_adapter import PythonAdapter

SEP = "\n\n"


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
        self.on_failure = on_failure
        self._warned: set[int] = set()

    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path, None)

    async def after_write(self, path: Path) -> str | None:
        notes = await self._run("after_write", path, None)
        return self._join(notes)

    def _join(self, notes: list[str]) -> str | None:
        return SEP.join(notes) if notes else None

    def _limit(self, inherited: float | None) -> float | None:
        return self.hook_time_limit if self.hook_time_limit is not None else inherited

    def _fail(self, observer: Any, message: str) -> None:
        if id(observer) in self._warned:
            return
        self._warned.add(id(observer))
        if self.on_failure is not None:
            self.on_failure(observer, message)

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        limit = self._limit(inherited)
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, Chain):
                notes.extend(await observer._run(hook, path, limit))
                continue
            note = await self._one(observer, hook, path, limit)
            if hook == "after_write" and isinstance(note, str) and note != "":
                notes.append(note)
        return notes

    async def _one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        scope_cm = anyio.move_on_after(limit) if limit is not None else contextlib.nullcontext()
        done = False
        value = None
        try:
            with scope_cm as scope:
                value = await getattr(observer, hook)(path)
                done = True
        except Exception as error:  # cancellation is a BaseException: not caught
            self._fail(observer, f"{hook} failed: {error!r}")
            return None
        if not done and scope is not None and scope.cancelled_caught:
            self._fail(observer, f"{hook} exceeded the time limit of {limit} s")
            return None
        return value


@dataclass
class Result:
    ok: bool
    message: str
    annotation: str | None = None

    @property
    def text(self) -> str:
        if self.annotation is None:
            return self.message
        return self.message + SEP + self.annotation


class Refused(Exception):
    pass


class Tools:
    def __init__(self, root: Path, chain: Any, *, deny: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.chain = chain
        self.deny = list(deny)

    # --- sandbox check -------------------------------------------------------------
    def check(self, rel: str) -> Path:
        if os.path.isabs(rel):
            raise Refused(f"refused: {rel} is an absolute path")
        resolved = Path(os.path.realpath(os.path.join(self.root, rel)))
        try:
            inside = resolved.relative_to(self.root)
        except ValueError:
            raise Refused(f"refused: {rel} leads out of the workspace") from None
        if str(inside) in ("", "."):
            raise Refused(f"refused: {rel} is the workspace itself")
        parts = inside.as_posix().split("/")
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        for pattern in self.deny:
            for candidate in candidates:
                if fnmatch.fnmatchcase(candidate, pattern):
                    raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")
        return resolved

    async def _after(self, target: Path, message: str) -> Result:
        annotation = await self.chain.after_write(target)
        return Result(True, message, annotation)

    # --- tools ----------------------------------------------------------------------
    async def write(self, path: str, content: str) -> Result:
        try:
            target = self.check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        await self.chain.before_write(target)
        data = content.encode("utf-8")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        except OSError as error:
            return Result(False, f"write failed: {error.strerror or error}")
        return await self._after(target, f"wrote {len(data)} bytes to {path}")

    async def edit(self, path: str, old: str, new: str) -> Result:
        try:
            target = self.check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        if not old:
            return Result(False, "edit failed: empty old text")
        try:
            raw = target.read_bytes()
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return Result(False, "edit failed: file is not UTF-8")
        count = text.count(old)
        if count == 0:
            return Result(False, "edit failed: old text not found")
        if count > 1:
            return Result(False, f"edit failed: old text occurs {count} times")
        await self.chain.before_write(target)
        index = text.find(old)
        updated = text[:index] + new + text[index + len(old) :]
        try:
            with open(target, "wb") as handle:
                handle.write(updated.encode("utf-8"))
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        return await self._after(target, f"edited {path}")

    async def delete(self, path: str) -> Result:
        try:
            target = self.check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        await self.chain.before_write(target)
        try:
            if target.is_dir() and not target.is_symlink():
                raise IsADirectoryError(21, "Is a directory")
            os.unlink(target)
        except OSError as error:
            return Result(False, f"delete failed: {error.strerror or error}")
        return await self._after(target, f"deleted {path}")


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
    implementation: Any, name: str = "b8woc-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[WriteObserverChainDriver(implementation)],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return make_adapter(Implementation())


def adapter_trio() -> PythonAdapter:
    return make_adapter(Implementation(), "b8woc-base-trio", backend="trio")
