"""An outsider's write-observer chain and write tools (outsider batch 14, b14woc).

Written by a fourteenth outsider from the docs alone (the docs of main ecbade0). Kept as
written (the original ``b14woc_base.py`` had sha256
5d0c49b2c35f43532117540007efd764bf945318fe4b6359bc1b034684f4da7c); only the import of the
kit's adapter pieces changed (from ``seamspec.conformance`` to the modules that define
them), the quotes came off one annotation, one ``noqa`` was added and ``ruff format``
joined one wrapped line; mypy --strict needed no change. The outsider ran it on asyncio
and trio under both profiles: it conforms to every scenario (174 of 174), and it is the
control the batch's variants (``batch14.py``) are judged against (on asyncio only: it has
no trio-specific code, ``anyio`` throughout, and each control is a whole-suite run).

First try, judged against main ecbade0: 6 of the 7 variants killed properly;
``link-followed-once`` (WOC-SEAM-DENIED) was failed only by a scenario citing another rule
(woc-seam-pre-link-to-a-link-gets-final-target, WOC-SEAM-PRE).

``Chain`` runs the observers one at a time in list order, flattening nested chains of its
own class through ``_run(hook, path, limit)`` (a nested chain's own limit wins, else the
one handed down); each leaf runs under ``anyio.move_on_after``, only ``Exception`` is
contained, and the warn-once set is keyed by the observer's ``id``. ``Sandbox`` resolves
the path one component at a time following links (dangling ones too, at most 40), tests
containment with ``relative_to`` and matches ``fnmatchcase`` on the root-relative path and
each parent prefix; ``Tools`` read and write bytes and hand the hooks the resolved path.
The variants override ``Chain._accept``/``_failed``, ``Sandbox._candidates``/``_walk`` or
``Tools._edit_ok``.

    seamspec run --impl seamspec.conformance._contracts.write_observer_chain.outsiders.base14:adapter

Original module docstring:

    b14woc: an outsider's write-observer chain and write tools, written from the docs.
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

SEP = "\n\n"
MAX_LINKS = 40


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

    # -- public hooks ------------------------------------------------------------------
    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path, self.hook_time_limit)

    async def after_write(self, path: Path) -> str | None:
        notes = await self._run("after_write", path, self.hook_time_limit)
        return self._join(notes)

    # -- internals ---------------------------------------------------------------------
    def _join(self, notes: list[str]) -> str | None:
        return SEP.join(notes) if notes else None

    def _limit_for(self, child: Chain, limit: float | None) -> float | None:
        return child.hook_time_limit if child.hook_time_limit is not None else limit

    async def _run(self, hook: str, path: Path, limit: float | None) -> list[str]:
        notes: list[str] = []
        for observer in self.observers:
            if isinstance(observer, Chain):
                notes.extend(await observer._run(hook, path, self._limit_for(observer, limit)))
                continue
            ok, value = await self._call_one(observer, hook, path, limit)
            if ok and hook == "after_write":
                value = self._accept(observer, path, value)
                if isinstance(value, str) and value != "":
                    notes.append(value)
        return notes

    def _accept(self, observer: Any, path: Path, value: Any) -> Any:
        return value

    async def _invoke(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        if limit is None:
            return False, await getattr(observer, hook)(path)
        with anyio.move_on_after(limit) as scope:
            value = await getattr(observer, hook)(path)
        if scope.cancelled_caught:
            return True, None
        return False, value

    async def _call_one(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> tuple[bool, Any]:
        try:
            timed_out, value = await self._invoke(observer, hook, path, limit)
        except Exception as error:  # cancellation is a BaseException: it passes through
            self._failed(observer, f"observer {hook} failed: {error!r}", kind="raised")
            return False, None
        if timed_out:
            self._failed(observer, f"observer {hook} exceeded {limit} s", kind="timeout")
            return False, None
        return True, value

    def _failed(self, observer: Any, message: str, *, kind: str) -> None:
        key = id(observer)
        if key in self._warned:
            return
        self._warned.add(key)
        if self.on_failure is not None:
            self.on_failure(observer, message)


# -- the sandbox check -------------------------------------------------------------------


class Refused(Exception):
    pass


class Sandbox:
    def __init__(self, root: Path, deny: Sequence[str]) -> None:
        self.root = Path(os.path.realpath(root))
        self.deny = list(deny)

    def _walk(self, parts: list[str], start: list[str], budget: list[int]) -> list[str]:
        """Resolve ``parts`` from the absolute folder ``start`` (as a list of names)."""
        cur = list(start)
        for part in parts:
            if part in ("", "."):
                continue
            if part == "..":
                if cur:
                    cur.pop()
                continue
            candidate = "/" + "/".join(cur + [part])
            if os.path.islink(candidate):
                budget[0] -= 1
                if budget[0] < 0:
                    raise Refused("too many levels of symbolic links")
                target = os.readlink(candidate)
                base = [] if target.startswith("/") else cur
                cur = self._walk(target.split("/"), base, budget)
            else:
                cur = cur + [part]
        return cur

    def resolve(self, rel: str) -> Path:
        if rel.startswith("/"):
            raise Refused(f"refused: {rel} is an absolute path")
        root_parts = [p for p in str(self.root).split("/") if p]
        out = self._walk(rel.split("/"), root_parts, [MAX_LINKS])
        resolved = Path("/" + "/".join(out))
        try:
            inner = resolved.relative_to(self.root)
        except ValueError:
            raise Refused(f"refused: {rel} leads outside the workspace") from None
        if str(inner) in ("", "."):
            raise Refused(f"refused: {rel} is the workspace itself")
        self._check_deny(rel, PurePosixPath(inner.as_posix()))
        return resolved

    def _candidates(self, inner: PurePosixPath) -> list[str]:
        parts = inner.parts
        return ["/".join(parts[: i + 1]) for i in range(len(parts))]

    def _check_deny(self, rel: str, inner: PurePosixPath) -> None:
        for candidate in self._candidates(inner):
            for pattern in self.deny:
                if fnmatch.fnmatchcase(candidate, pattern):
                    raise Refused(f"refused: {rel} matches the deny rule {pattern!r}")


# -- the write tools -----------------------------------------------------------------------


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


class Tools:
    def __init__(self, root: Path, observer: Any, *, deny: Sequence[str] = ()) -> None:
        self.sandbox = Sandbox(root, deny)
        self.observer = observer

    async def _before(self, path: Path) -> None:
        try:  # noqa: SIM105 (as written)
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

    def _resolve(self, path: str) -> Path | Result:
        try:
            return self.sandbox.resolve(path)
        except Refused as refusal:
            return Result(False, str(refusal))
        except OSError as error:
            return Result(False, f"refused: {path}: {error.strerror or error}")

    def _put(self, target: Path, data: bytes) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)

    async def write(self, path: str, content: str) -> Result:
        target = self._resolve(path)
        if isinstance(target, Result):
            return target
        data = content.encode("utf-8")
        await self._before(target)
        try:
            self._put(target, data)
        except OSError as error:
            return Result(False, f"write failed: {error.strerror or error}")
        annotation = await self._after(target)
        return Result(True, f"wrote {len(data)} bytes to {path}", annotation)

    def _edited(self, text: str, old: str, new: str) -> str:
        return text.replace(old, new, 1)

    def _edit_ok(self, text: str, result: str, old: str, new: str) -> bool:
        return True

    async def edit(self, path: str, old: str, new: str) -> Result:
        target = self._resolve(path)
        if isinstance(target, Result):
            return target
        if not old:
            return Result(False, "edit failed: empty old text")
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
            return Result(False, f"edit failed: old text not found in {path}")
        if count > 1:
            return Result(False, f"edit failed: old text occurs {count} times in {path}")
        result = self._edited(text, old, new)
        await self._before(target)
        try:
            self._put(target, result.encode("utf-8"))
        except OSError as error:
            return Result(False, f"edit failed: {error.strerror or error}")
        if not self._edit_ok(text, result, old, new):
            return Result(False, f"edit failed: {path} was not changed as asked")
        annotation = await self._after(target)
        return Result(True, f"edited {path}", annotation)

    async def delete(self, path: str) -> Result:
        target = self._resolve(path)
        if isinstance(target, Result):
            return target
        await self._before(target)
        try:
            if target.is_dir() and not target.is_symlink():
                raise IsADirectoryError(21, "Is a directory")
            os.unlink(target)
        except OSError as error:
            return Result(False, f"delete failed: {error.strerror or error}")
        annotation = await self._after(target)
        return Result(True, f"deleted {path}", annotation)


# -- the adapter --------------------------------------------------------------------------


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
    impl: Any = None, *, name: str = "b14woc-base", backend: str = "asyncio"
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[WriteObserverChainDriver(impl if impl is not None else Implementation())],
        backend=backend,
    )


def adapter() -> PythonAdapter:
    return make_adapter()


def adapter_trio() -> PythonAdapter:
    return make_adapter(name="b14woc-base-trio", backend="trio")
