"""An outsider's write-observer chain and write tools, written from the seamspec docs.

Outsider batch 1 (see ``__init__``): kept as written; only imports and typing were touched
so that it type-checks with the kit. It conforms to every scenario of its time, and it is
the control the batch's variants (``batch1.py``) are judged against.

``Chain`` is an ordered list of observers that is itself an observer; ``Tools`` are the
file tools (write, edit, delete) with a sandbox root, deny globs and the two hook points.
Every decision lives in a small method so that ``variants.py`` can override one at a time.
"""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._core.python_adapter import PythonAdapter

SEPARATOR = "\n\n"

OnFailure = Callable[[Any, str], None]


class ObserverFailureWarning(UserWarning):
    """Issued (by default) the first time an observer fails."""


class HookTimeout(Exception):
    """A hook ran past the chain's per-hook time limit."""


def _default_on_failure(observer: Any, message: str) -> None:
    warnings.warn(message, ObserverFailureWarning, stacklevel=3)


def observer_name(observer: Any) -> str:
    return str(getattr(observer, "name", repr(observer)))


class Chain:
    """Calls its observers one at a time, in list order, for both hooks."""

    def __init__(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None = None,
        on_failure: OnFailure | None = None,
    ) -> None:
        self.observers: list[Any] = list(observers)
        self.hook_time_limit = hook_time_limit
        self.on_failure: OnFailure = on_failure or _default_on_failure
        self._warned: set[Any] = set()
        self.failures_in_last_call = 0

    # --- the observer protocol -------------------------------------------------------

    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path, None)

    async def after_write(self, path: Path) -> str | None:
        return self._join(await self._run("after_write", path, None))

    # --- called by an enclosing chain: the limit is inherited, not applied as a whole --

    async def nested_hook(self, hook: str, path: Path, inherited: float | None) -> str | None:
        values = await self._run(hook, path, inherited)
        return self._join(values) if hook == "after_write" else None

    # --- decisions ---------------------------------------------------------------------

    def _limit(self, inherited: float | None) -> float | None:
        return self.hook_time_limit if self.hook_time_limit is not None else inherited

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[Any]:
        self.failures_in_last_call = 0
        limit = self._limit(inherited)
        values: list[Any] = []
        for observer in self.observers:
            values.append(await self._call_one(observer, hook, path, limit))
        return values

    async def _call_one(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        if isinstance(observer, Chain):
            value = await observer.nested_hook(hook, path, limit)
            self.failures_in_last_call += observer.failures_in_last_call
            return value
        try:
            return await self._invoke(observer, hook, path, limit)
        except Exception as error:  # cancellation is a BaseException: it passes through
            self.failures_in_last_call += 1
            self._report(observer, hook, error)
            return self._value_after_failure(observer, hook, error)

    async def _invoke(self, observer: Any, hook: str, path: Path, limit: float | None) -> Any:
        method = getattr(observer, hook)
        if limit is None:
            return await method(path)
        try:
            with anyio.fail_after(limit):  # raises TimeoutError only for its own deadline
                return await method(path)
        except TimeoutError:
            raise HookTimeout(f"{hook} exceeded the per-hook time limit of {limit} s") from None

    def _value_after_failure(self, observer: Any, hook: str, error: Exception) -> Any:
        return None

    def _warn_key(self, observer: Any, hook: str) -> Any:
        return id(observer)

    def _report(self, observer: Any, hook: str, error: Exception) -> None:
        key = self._warn_key(observer, hook)
        if key in self._warned:
            return
        self._warned.add(key)
        self.on_failure(observer, f"observer {observer_name(observer)} failed in {hook}: {error!r}")

    def _keep(self, value: Any) -> bool:
        return isinstance(value, str) and value != ""

    def _join(self, values: list[Any]) -> str | None:
        notes = [value for value in values if self._keep(value)]
        if not notes:
            return None
        return SEPARATOR.join(notes)


# --- the write tools ---------------------------------------------------------------------


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    message: str
    annotation: str | None = None

    @property
    def text(self) -> str:
        if self.annotation is None:
            return self.message
        return self.message + SEPARATOR + self.annotation


class Refused(Exception):
    """The sandbox check refused a path."""


class Tools:
    """write / edit / delete confined to ``root``, refusing ``deny`` globs, around one observer."""

    def __init__(self, root: Path, observer: Any, *, deny: Sequence[str] = ()) -> None:
        self.root = Path(root).resolve()
        self.observer = observer
        self.deny = list(deny)

    # --- sandbox check -----------------------------------------------------------------

    def _matches(self, rel: str, pattern: str) -> bool:
        parts = PurePosixPath(rel).parts
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes)

    def _check(self, path: str) -> tuple[Path, str]:
        target = (self.root / path).resolve()
        try:
            rel = target.relative_to(self.root).as_posix()
        except ValueError:
            raise Refused(f"refused: {path} is outside the workspace") from None
        if rel == ".":
            raise Refused(f"refused: {path} is the workspace itself")
        for pattern in self.deny:
            if self._matches(rel, pattern):
                raise Refused(f"refused: {path} matches the deny rule {pattern!r}")
        return target, rel

    # --- the two hook points, contained even when the observer is not a chain ----------

    async def _before(self, target: Path) -> None:
        try:
            await self.observer.before_write(target)
        except Exception as error:
            warnings.warn(
                f"observer failed in before_write: {error!r}", ObserverFailureWarning, stacklevel=1
            )

    async def _after(self, target: Path) -> str | None:
        try:
            annotation = await self.observer.after_write(target)
        except Exception as error:
            warnings.warn(
                f"observer failed in after_write: {error!r}", ObserverFailureWarning, stacklevel=1
            )
            return None
        return annotation if isinstance(annotation, str) and annotation != "" else None

    def _finish(self, message: str, annotation: str | None) -> ToolResult:
        return ToolResult(True, message, annotation)

    # --- mutations -----------------------------------------------------------------------

    def _write_bytes(self, target: Path, content: str) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8", newline="") as handle:
            handle.write(content)

    def _unlink(self, target: Path) -> None:
        target.unlink()

    # --- the tools -----------------------------------------------------------------------

    async def write(self, path: str, content: str) -> ToolResult:
        try:
            target, _ = self._check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        await self._before(target)
        try:
            self._write_bytes(target, content)
        except OSError as error:
            return ToolResult(False, f"write failed: {error.strerror or error}")
        annotation = await self._after(target)
        size = len(content.encode("utf-8"))
        return self._finish(f"wrote {size} bytes to {path}", annotation)

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            target, _ = self._check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        try:
            text = target.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            return ToolResult(False, f"edit failed: {reason}")
        count = text.count(old) if old else 0
        if count != 1:
            return ToolResult(
                False, f"edit failed: the text to replace occurs {count} times in {path}, not once"
            )
        await self._before(target)
        try:
            self._write_bytes(target, text.replace(old, new, 1))
        except OSError as error:
            return ToolResult(False, f"edit failed: {error.strerror or error}")
        annotation = await self._after(target)
        return self._finish(f"edited {path}", annotation)

    async def delete(self, path: str) -> ToolResult:
        try:
            target, _ = self._check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        await self._before(target)
        try:
            self._unlink(target)
        except OSError as error:
            return ToolResult(False, f"delete failed: {error.strerror or error}")
        annotation = await self._after(target)
        return self._finish(f"deleted {path}", annotation)


# --- the adapter ---------------------------------------------------------------------------


class Implementation:
    """What the kit's driver asks for: how to build the chain and the tools."""

    features: tuple[str, ...] = ("write-tools", "hook-time-limit", "builtin-observers")

    def __init__(self, chain_cls: type[Chain] = Chain, tools_cls: type[Tools] = Tools) -> None:
        self.chain_cls = chain_cls
        self.tools_cls = tools_cls

    def make_chain(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None,
        on_failure: OnFailure,
    ) -> Chain:
        return self.chain_cls(observers, hook_time_limit=hook_time_limit, on_failure=on_failure)

    def make_tools(self, root: Path, chain: Any, *, deny: Sequence[str]) -> Tools:
        return self.tools_cls(root, chain, deny=deny)


def build(
    backend: str = "asyncio",
    *,
    chain_cls: type[Chain] = Chain,
    tools_cls: type[Tools] = Tools,
    name: str = "outsider-woc-base",
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="1.0",
        drivers=[WriteObserverChainDriver(Implementation(chain_cls, tools_cls))],
        backend=backend,
    )


def adapter() -> PythonAdapter:
    return build()


def adapter_trio() -> PythonAdapter:
    return build("trio")
