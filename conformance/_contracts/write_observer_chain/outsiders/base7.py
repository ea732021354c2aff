"""An outsider's write-observer chain and write tools (outsider batch 7, woc7).

Written by a seventh outsider from docs/contracts/write-observer-chain.md, docs/usage.md,
docs/adapters.md, docs/protocol.md, docs/scenarios.md, the README, the project's
CONTRACTS.md, the seed pages, the room's driver and python_adapter.py only. Kept as
written (the original ``b7woc_base.py`` had sha256
35d056a49cf927d6a5c297159fa7881af6b27867b6e5a13f7ddd38104c159b25); only imports and
typing changed, and the module-level ``adapter`` object became a function (with
``adapter_trio`` and a ``backend`` argument to ``make_adapter``), so that each run gets
its own adapter. It conforms to every scenario under both profiles and both backends,
and it is the control the batch's variants (``batch7.py``) are judged against.

``Chain`` runs its observers one at a time, in list order, for both hooks; joins the
non-empty string annotations with exactly "\\n\\n"; contains ``Exception`` (never
cancellation); warns once per failing observer; optionally bounds each leaf hook with a
time limit, a nested chain's own limit winning over the one it inherits.

``Tools`` are write / edit / delete on a sandbox root with a deny list (``realpath``
containment, the root itself refused), calling the chain around each mutation.

    seamspec run --impl mutant:out-woc7-edit-regex-escapes
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

SEP = "\n\n"


# --------------------------------------------------------------------------- chain


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

    # the observer protocol
    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path, None)

    async def after_write(self, path: Path) -> str | None:
        return await self._run("after_write", path, None)

    # internals
    def _limit(self, inherited: float | None) -> float | None:
        return self.hook_time_limit if self.hook_time_limit is not None else inherited

    def _warn(self, observer: Any, message: str) -> None:
        key = id(observer)
        if key in self._warned:
            return
        self._warned.add(key)
        if self.on_failure is not None:
            self.on_failure(observer, message)

    async def _one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        """Call one observer's hook; return (ok, value)."""
        if isinstance(observer, Chain):
            # not timed as a whole: its leaves run under its own limit or ours
            value = await observer._run(hook, path, limit)
            return True, value
        try:
            if limit is None:
                value = await getattr(observer, hook)(path)
                return True, value
            with anyio.move_on_after(limit) as scope:
                value = await getattr(observer, hook)(path)
            if scope.cancelled_caught:
                self._warn(observer, f"{hook} exceeded the time limit of {limit} s")
                return False, None
            return True, value
        except Exception as error:  # cancellation is a BaseException: not caught
            self._warn(observer, f"{hook} failed: {error!r}")
            return False, None

    async def _run(self, hook: str, path: Path, inherited: float | None) -> str | None:
        limit = self._limit(inherited)
        notes: list[str] = []
        for observer in self.observers:
            ok, value = await self._one(observer, hook, path, limit)
            if ok and hook == "after_write" and isinstance(value, str) and value != "":
                notes.append(value)
        if hook == "before_write" or not notes:
            return None
        return SEP.join(notes)


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
        return self.message + SEP + self.annotation


class Refused(Exception):
    pass


class Tools:
    def __init__(self, root: Path, observer: Any, *, deny: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.observer = observer
        self.deny = list(deny)

    # sandbox check
    def check(self, rel: str) -> Path:
        if os.path.isabs(rel):
            raise Refused(f"refused: {rel} is an absolute path")
        resolved = Path(os.path.realpath(os.path.join(self.root, rel)))
        try:
            inside = resolved.relative_to(self.root)
        except ValueError:
            raise Refused(f"refused: {rel} leads out of the workspace") from None
        parts = inside.parts
        if not parts:
            raise Refused(f"refused: {rel} is the workspace itself")
        for n in range(len(parts), 0, -1):
            candidate = "/".join(parts[:n])
            for pattern in self.deny:
                if fnmatch.fnmatchcase(candidate, pattern):
                    raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")
        return resolved

    async def _before(self, path: Path) -> None:
        try:  # noqa: SIM105 (kept as written)
            await self.observer.before_write(path)
        except Exception:
            pass

    async def _after(self, path: Path) -> str | None:
        try:
            value = await self.observer.after_write(path)
        except Exception:
            return None
        if isinstance(value, str) and value != "":
            return value
        return None

    async def write(self, path: str, content: str) -> Result:
        try:
            target = self.check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        await self._before(target)
        data = content.encode("utf-8")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        except OSError as error:
            return Result(False, f"write failed: {error.strerror or error}")
        annotation = await self._after(target)
        return Result(True, f"wrote {len(data)} bytes to {path}", annotation)

    async def edit(self, path: str, old: str, new: str) -> Result:
        try:
            target = self.check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        if old == "":
            return Result(False, "edit failed: the old text is empty")
        try:
            text = target.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            return Result(False, f"edit failed: {getattr(error, 'strerror', None) or error}")
        count = text.count(old)
        if count == 0:
            return Result(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return Result(False, f"edit failed: the old text occurs {count} times in {path}")
        await self._before(target)
        try:
            text = target.read_bytes().decode("utf-8")
            if text.count(old) != 1:
                return Result(False, f"edit failed: {path} changed under the edit")
            with open(target, "wb") as handle:
                handle.write(text.replace(old, new, 1).encode("utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            return Result(False, f"edit failed: {getattr(error, 'strerror', None) or error}")
        annotation = await self._after(target)
        return Result(True, f"edited {path}", annotation)

    async def delete(self, path: str) -> Result:
        try:
            target = self.check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        await self._before(target)
        try:
            os.unlink(target)
        except OSError as error:
            return Result(False, f"delete failed: {error.strerror or error}")
        annotation = await self._after(target)
        return Result(True, f"deleted {path}", annotation)


# --------------------------------------------------------------------------- adapter


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


def make_adapter(impl: Any, name: str = "b7woc-base", backend: str = "asyncio") -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[WriteObserverChainDriver(impl)],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return make_adapter(Implementation())


def adapter_trio() -> PythonAdapter:
    return make_adapter(Implementation(), "b7woc-base-trio", backend="trio")
