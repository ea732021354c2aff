"""An outsider's write-observer chain and write tools (outsider batch 6, woc6).

Written by a sixth outsider from docs/contracts/write-observer-chain.md, docs/usage.md,
docs/adapters.md, docs/protocol.md, docs/scenarios.md, the README, the project's
CONTRACTS.md, the seed pages, the room's driver and python_adapter.py only. Kept as written (the original ``b6woc_base.py`` had sha256
4d8214b74fa69b610c1e28d0a8e944749b4bd3fbda779594a4a52105cd0602fb); only imports and typing
changed, and the module-level ``adapter`` object became a function (with ``adapter_trio``
and a ``backend`` argument to ``make_adapter``), so that each run gets its own adapter.
It conforms to every scenario under both profiles and both backends, and it is the
control the batch's variants (``batch6.py``) are judged against.

``Chain`` runs its observers one at a time, in list order, for both hooks; joins the
non-empty annotations with exactly "\\n\\n"; contains ``Exception`` (never cancellation);
warns once per failing observer; optionally bounds each leaf hook with a time limit that
reaches into nested chains of this same class.

``Tools`` are write / edit / delete on a sandbox root with a deny list, calling the chain
around each mutation.

    seamspec run --impl mutant:out-woc6-limit-floor
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._core.python_adapter import PythonAdapter

# --------------------------------------------------------------------------------------
# the chain
# --------------------------------------------------------------------------------------


class Chain:
    """An ordered chain of write observers; itself a write observer."""

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
        notes = await self._run("after_write", path, None)
        return self._join(notes)

    # internals
    @staticmethod
    def _join(notes: list[str]) -> str | None:
        return "\n\n".join(notes) if notes else None

    def _warn(self, observer: Any, error: BaseException) -> None:
        key = id(observer)
        if key in self._warned:
            return
        self._warned.add(key)
        if self.on_failure is not None:
            self.on_failure(observer, f"observer failed: {error!r}")

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        """Run ``hook`` of every observer in order; return the non-empty annotations.

        ``inherited`` is the limit in force from an enclosing chain; this chain's own
        limit, when it has one, wins.
        """
        limit = self.hook_time_limit if self.hook_time_limit is not None else inherited
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, Chain):
                # not timed as a whole: its leaves run under the limit in force
                inner = await observer._run(hook, path, limit)
                notes.extend(inner)
                continue
            note = await self._one(observer, hook, path, limit)
            if isinstance(note, str) and note != "":
                notes.append(note)
        return notes

    async def _one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        try:
            if limit is None:
                return await getattr(observer, hook)(path)
            with anyio.move_on_after(limit) as scope:
                return await getattr(observer, hook)(path)
            if scope.cancelled_caught:
                self._warn(observer, TimeoutError(f"{hook} exceeded {limit} s"))
            return None
        except Exception as error:  # cancellation is a BaseException: it passes through
            self._warn(observer, error)
            return None


# --------------------------------------------------------------------------------------
# the write tools
# --------------------------------------------------------------------------------------


class Result:
    def __init__(self, ok: bool, message: str, annotation: str | None = None) -> None:
        self.ok = ok
        self.message = message
        self.annotation = annotation

    @property
    def text(self) -> str:
        if self.annotation is None:
            return self.message
        return self.message + "\n\n" + self.annotation

    def __repr__(self) -> str:
        return f"Result(ok={self.ok!r}, text={self.text!r})"


class Refused(Exception):
    pass


class Tools:
    def __init__(self, root: Path, observer: Any, *, deny: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.observer = observer
        self.deny = list(deny)

    # ---- sandbox check -----------------------------------------------------------
    def _check(self, rel: str) -> Path:
        if os.path.isabs(rel):
            raise Refused(f"refused: {rel} is an absolute path")
        # realpath resolves left to right, following links (dangling ones too) and
        # taking ".." from where the path has led so far; it creates nothing.
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

    # ---- the seam ----------------------------------------------------------------
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

    # ---- tools -------------------------------------------------------------------
    async def write(self, path: str, content: str) -> Result:
        try:
            target = self._check(path)
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
        note = await self._after(target)
        return Result(True, f"wrote {len(data)} bytes to {path}", note)

    async def edit(self, path: str, old: str, new: str) -> Result:
        try:
            target = self._check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        if old == "":
            return Result(False, "edit failed: the old text is empty")
        try:
            raw = target.read_bytes()
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return Result(False, f"edit failed: {path} is not UTF-8 text")
        count = text.count(old)
        if count == 0:
            return Result(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return Result(
                False, f"edit failed: the old text occurs {count} times in {path}; be more specific"
            )
        updated = text.replace(old, new, 1).encode("utf-8")
        await self._before(target)
        try:
            with open(target, "wb") as handle:
                handle.write(updated)
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        note = await self._after(target)
        return Result(True, f"edited {path}", note)

    async def delete(self, path: str) -> Result:
        try:
            target = self._check(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        await self._before(target)
        try:
            os.unlink(target)
        except OSError as error:
            return Result(False, f"delete failed: {error.strerror or error}")
        note = await self._after(target)
        return Result(True, f"deleted {path}", note)


# --------------------------------------------------------------------------------------
# the adapter
# --------------------------------------------------------------------------------------


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
    implementation: Implementation, name: str = "b6woc-base", backend: str = "asyncio"
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
    return make_adapter(Implementation(), "b6woc-base-trio", backend="trio")
