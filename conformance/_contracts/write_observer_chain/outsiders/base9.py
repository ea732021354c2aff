"""An outsider's write-observer chain and write tools (outsider batch 9, woc9).

Written by a ninth outsider from the docs alone. Kept as written (the original
``b9woc_base.py`` had sha256
8ce9c6568df894af0ff0f69ea55e7120b5a9f649b51d9849ac9bc0166c81a31a); only imports and
typing changed, and the module-level ``adapter`` and ``adapter_trio`` objects became
functions, so that each run gets its own adapter. It conforms to every scenario under both
profiles and both backends, and it is the control the batch's variants (``batch9.py``) are
judged against.

``Chain`` flattens nested chains through an internal ``_run(hook, path, limit)``, runs each
leaf under ``anyio.move_on_after`` with the nested chain's own limit or else the one in
force above it, contains ``Exception`` only and warns once per observer (by ``id``).
``Sandbox`` resolves with ``os.path.realpath``, tests containment with ``relative_to`` and
matches ``fnmatchcase`` against the relative path and each parent; ``Tools`` work on bytes.

    seamspec run --impl mutant:out-woc9-edit-nfc
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
        self.on_failure = on_failure or (lambda observer, message: None)
        self._warned: set[int] = set()

    # the observer protocol
    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path, self.hook_time_limit)

    async def after_write(self, path: Path) -> str | None:
        notes = await self._run("after_write", path, self.hook_time_limit)
        return self._join(notes)

    # internals
    def _join(self, notes: list[str]) -> str | None:
        if not notes:
            return None
        return SEPARATOR.join(notes)

    def _limit_for_nested(self, inherited: float | None) -> float | None:
        return self.hook_time_limit if self.hook_time_limit is not None else inherited

    async def _run(self, hook: str, path: Path, limit: float | None) -> list[str]:
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, Chain):
                # not timed as a whole: its leaves run under its own limit, else ours
                notes.extend(await observer._run(hook, path, observer._limit_for_nested(limit)))
                continue
            note = await self._call_one(observer, hook, path, limit)
            if isinstance(note, str) and note != "":
                notes.append(note)
        return notes

    async def _call_one(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> str | None:
        try:
            if limit is None:
                result: str | None = await getattr(observer, hook)(path)
                return result
            with anyio.move_on_after(limit) as scope:
                value: str | None = await getattr(observer, hook)(path)
            if scope.cancelled_caught:
                self._failed(observer, f"{hook} exceeded the time limit of {limit} s")
                return None
            return value
        except Exception as error:  # cancellation is a BaseException: it passes through
            self._failed(observer, f"{hook} failed: {error!r}")
            return None

    def _failed(self, observer: Any, message: str) -> None:
        key = id(observer)
        if key in self._warned:
            return
        self._warned.add(key)
        self.on_failure(observer, message)


# --------------------------------------------------------------------------- sandbox


class Refused(Exception):
    pass


class Sandbox:
    def __init__(self, root: Path, deny: Sequence[str]) -> None:
        self.root = Path(os.path.realpath(root))
        self.deny = list(deny)

    def check(self, rel: str) -> Path:
        if not rel or os.path.isabs(rel):
            raise Refused(f"refused: {rel} is not a path relative to the workspace")
        resolved = Path(os.path.realpath(os.path.join(self.root, rel)))
        try:
            inside = resolved.relative_to(self.root)
        except ValueError:
            raise Refused(f"refused: {rel} leads out of the workspace") from None
        if inside == Path("."):
            raise Refused(f"refused: {rel} is the workspace itself")
        candidates = [inside.as_posix()] + [p.as_posix() for p in inside.parents if p != Path(".")]
        for pattern in self.deny:
            for candidate in candidates:
                if self.matches(candidate, pattern):
                    raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")
        return resolved

    def matches(self, candidate: str, pattern: str) -> bool:
        """A deny pattern: a case-sensitive fnmatch glob (``*`` crosses ``/``)."""
        return fnmatch.fnmatchcase(candidate, pattern)


# --------------------------------------------------------------------------- tools


@dataclass
class Result:
    ok: bool
    message: str
    annotation: str | None = None

    @property
    def text(self) -> str:
        if self.annotation is None:
            return self.message
        return self.message + SEPARATOR + self.annotation


class Tools:
    sandbox_class: type = Sandbox

    def __init__(self, root: Path, observer: Any, *, deny: Sequence[str] = ()) -> None:
        self.sandbox = self.sandbox_class(root, deny)
        self.observer = observer

    async def _finish(self, target: Path, message: str) -> Result:
        annotation = await self.observer.after_write(target)
        return Result(True, message, annotation)

    async def write(self, path: str, content: str) -> Result:
        try:
            target = self.sandbox.check(path)
        except Refused as refused:
            return Result(False, str(refused))
        data = content.encode("utf-8")
        await self.observer.before_write(target)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        except OSError as error:
            return Result(False, f"write failed: {error.strerror or error}")
        return await self._finish(target, f"wrote {len(data)} bytes to {path}")

    async def edit(self, path: str, old: str, new: str) -> Result:
        try:
            target = self.sandbox.check(path)
        except Refused as refused:
            return Result(False, str(refused))
        if old == "":
            return Result(False, "edit failed: the old text is empty")
        try:
            text = target.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return Result(False, f"edit failed: {path} does not exist")
        except (OSError, UnicodeDecodeError) as error:
            return Result(False, f"edit failed: {error}")
        found = text.count(old)
        if found == 0:
            return Result(False, f"edit failed: the old text does not occur in {path}")
        if found > 1:
            return Result(
                False, f"edit failed: the old text occurs {found} times in {path}; be specific"
            )
        start = text.index(old)
        edited = text[:start] + new + text[start + len(old) :]
        await self.observer.before_write(target)
        try:
            with open(target, "wb") as handle:
                handle.write(edited.encode("utf-8"))
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        return await self._finish(target, f"edited {path}")

    async def delete(self, path: str) -> Result:
        try:
            target = self.sandbox.check(path)
        except Refused as refused:
            return Result(False, str(refused))
        await self.observer.before_write(target)
        try:
            os.unlink(target)
        except OSError as error:
            return Result(False, f"delete failed: {error.strerror or error}")
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


def build(
    name: str = "b9woc-base",
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
    return build()


def adapter_trio() -> PythonAdapter:
    return build(name="b9woc-base-trio", backend="trio")
