"""An outsider's write-observer chain and file tools (outsider batch 4, woc4).

Written by a fourth outsider from docs/contracts/write-observer-chain.md (down to its
boundary checklist; they saw the page's tail sections once by accident and said so),
docs/usage.md, docs/adapters.md and the room's driver only. Kept as written (the original
``b4woc4_base.py`` had sha256
a20c206a476eb1fbc15e79f963401925815df1aaaa754c4ac926a8c7018ee90f); only imports and typing
changed, so that it type-checks with the kit. It conforms to every scenario under both
profiles and both backends, and it is the control the batch's variants (``batch4.py``)
are judged against.

``B4Chain._run`` returns a call's annotations as a local list and hands a nested chain the
limit it inherits; ``B4Tools`` resolve a path the way the kernel would and check the file
right after the mutation, before ``after_write``. Each decision sits in one method, which
is where the variants put their one bug.

    seamspec run --impl mutant:out-woc4-identical-write-skipped
"""

from __future__ import annotations

import fnmatch
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.write_observer_chain.driver import WriteObserverChainDriver
from seamspec.conformance._core.python_adapter import PythonAdapter

__all__ = [
    "B4Chain",
    "B4Implementation",
    "B4Tools",
    "HookTimedOut",
    "ObserverFailureWarning",
    "ToolResult",
    "adapter",
    "adapter_trio",
]

#: The separator between two annotations, and between a tool's message and the annotation.
BLANK_LINE = "\n\n"


class ObserverFailureWarning(UserWarning):
    """Issued (once per observer) when no ``on_failure`` callback was given."""


class HookTimedOut(Exception):
    """A hook ran past the chain's per-hook time limit and was cut off."""


def _name(observer: Any) -> str:
    return str(getattr(observer, "name", None) or type(observer).__name__)


def _default_on_failure(observer: Any, message: str) -> None:
    warnings.warn(message, ObserverFailureWarning, stacklevel=3)


# --------------------------------------------------------------------------- the chain


class B4Chain:
    """An ordered list of write observers that is itself a write observer.

    * Both hooks call every observer once, in list order, one after the other.
    * ``after_write`` keeps the non-empty annotations (``""`` and ``None`` say nothing;
      whitespace is kept) and joins them with exactly ``"\\n\\n"``; ``None`` when there
      are none.
    * An ``Exception`` from a hook is contained: the observer adds nothing to this call,
      the next one runs, and the first failure of each observer is reported once through
      ``on_failure``. The observer is not disabled.
    * Cancellation (a ``BaseException``) is never caught.
    * ``hook_time_limit`` bounds each leaf observer's hook. A nested ``B4Chain`` is not
      timed as a whole: it runs its own observers under its own limit, or else under the
      limit of the chain it is nested in.
    * No per-call state lives on the instance, so calls may overlap.
    """

    def __init__(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None = None,
        on_failure: Callable[[Any, str], None] | None = None,
    ) -> None:
        self._observers = tuple(observers)
        self.hook_time_limit = hook_time_limit
        self._on_failure = on_failure or _default_on_failure
        #: ids of observers that already produced their one warning (chain lifetime)
        self._warned: set[int] = set()

    def __repr__(self) -> str:
        return f"B4Chain({list(self._observers)!r}, hook_time_limit={self.hook_time_limit!r})"

    @property
    def observers(self) -> tuple[Any, ...]:
        return self._observers

    async def before_write(self, path: Path) -> None:
        await self._run("before_write", path, None)

    async def after_write(self, path: Path) -> str | None:
        return self._join(await self._run("after_write", path, None))

    @staticmethod
    def _join(notes: list[str]) -> str | None:
        return BLANK_LINE.join(notes) if notes else None

    def _limit(self, inherited: float | None) -> float | None:
        return self.hook_time_limit if self.hook_time_limit is not None else inherited

    async def _run(self, hook: str, path: Path, inherited: float | None) -> list[str]:
        """Every observer's ``hook`` in order; the non-empty annotations, in order."""
        limit = self._limit(inherited)
        notes: list[str] = []
        for observer in self._observers:
            if isinstance(observer, B4Chain):
                # Not timed as a whole: its own observers run under its limit or ours.
                try:
                    notes.extend(await observer._run(hook, path, limit))
                except Exception as error:  # a nested chain contains its own; belt and braces
                    self._failed(observer, hook, error)
                continue
            try:
                value = await self._call_leaf(observer, hook, path, limit)
            except Exception as error:
                self._failed(observer, hook, error)
                continue
            if hook == "after_write" and isinstance(value, str) and value != "":
                notes.append(value)
        return notes

    async def _call_leaf(
        self, observer: Any, hook: str, path: Path, limit: float | None
    ) -> str | None:
        method = getattr(observer, hook)
        if limit is None:
            result: str | None = await method(path)
            return result
        # Our own scope only: a cancellation from the caller passes through it.
        with anyio.move_on_after(limit):
            result = await method(path)
            return result
        raise HookTimedOut(f"{hook} did not return within {limit:g} s")

    def _failed(self, observer: Any, hook: str, error: BaseException) -> None:
        if id(observer) in self._warned:
            return
        self._warned.add(id(observer))
        self._on_failure(
            observer,
            f"write observer {_name(observer)!r} failed in {hook}: {error!r}; "
            "it is still called on later writes",
        )


# --------------------------------------------------------------------------- the tools


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    message: str
    annotation: str | None = None

    @property
    def text(self) -> str:
        if self.annotation is None:
            return self.message
        return self.message + BLANK_LINE + self.annotation


class Refused(Exception):
    """The sandbox check refused a path."""


class B4Tools:
    """``write``, ``edit`` and ``delete`` inside ``root``, each with one observer.

    The sandbox check resolves the path the way the kernel would (links followed, a
    dangling one too; ``..`` taken after the links so far), refuses anything that lands
    outside the root or on the root itself, and refuses the resolved path when it, or any
    folder above it, matches a deny glob (``fnmatch``, case-sensitive, anchored at the
    root). The hooks get the resolved path; the mutation is done on it, so a link stays
    a link and its target changes.
    """

    def __init__(self, root: Path, observer: Any, *, deny: Sequence[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.observer = observer
        self.deny = tuple(deny)

    # -- the sandbox check

    def _resolve(self, raw: str) -> Path:
        return Path(os.path.realpath(self.root / raw))

    def _check(self, raw: str) -> Path:
        if "\x00" in raw:
            raise Refused(f"refused: {raw!r} is not a valid path")
        target = self._resolve(raw)
        if target == self.root or not target.is_relative_to(self.root):
            raise Refused(f"refused: {raw} is outside the workspace")
        relative = target.relative_to(self.root)
        candidates = [relative.as_posix()] + [
            p.as_posix() for p in relative.parents if p.as_posix() != "."
        ]
        for pattern in self.deny:
            for candidate in candidates:
                if fnmatch.fnmatchcase(candidate, pattern):
                    raise Refused(f"refused: {raw} matches the deny rule {pattern!r}")
        return target

    # -- the two points of the seam (a single observer that raises is contained too)

    async def _before(self, target: Path) -> None:
        try:  # noqa: SIM105 (kept as written)
            await self.observer.before_write(target)
        except Exception:
            pass

    async def _after(self, target: Path) -> str | None:
        try:
            annotation = await self.observer.after_write(target)
        except Exception:
            return None
        if not isinstance(annotation, str) or annotation == "":
            return None
        return annotation

    # -- file access

    @staticmethod
    def _read_text(target: Path) -> str:
        return target.read_bytes().decode("utf-8")

    @staticmethod
    def _write_text(target: Path, text: str) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(text.encode("utf-8"))

    @staticmethod
    def _error(verb: str, error: BaseException) -> str:
        if isinstance(error, OSError) and error.strerror:
            return f"{verb} failed: {error.strerror}"
        return f"{verb} failed: {error}"

    def _verify(self, verb: str, target: Path, expected: str | None) -> str | None:
        """Why the mutation did not take effect, or None when the file is as asked.

        ``expected`` is the text the file must hold now, or None for "must be gone".
        """
        try:
            if expected is None:
                if os.path.lexists(target):
                    return f"{verb} failed: the file is still there"
                return None
            if self._read_text(target) != expected:
                return f"{verb} failed: the file does not hold the new text"
        except (OSError, UnicodeDecodeError) as error:
            return self._error(verb, error)
        return None

    async def _perform(
        self,
        verb: str,
        target: Path,
        mutate: Callable[[], None],
        expected: str | None,
        message: str,
    ) -> ToolResult:
        """before_write, the mutation, and after_write only if the mutation took effect.

        The file is checked right after the mutation, before any observer can rewrite
        it: a success reported is a real one.
        """
        await self._before(target)
        try:
            mutate()
        except (OSError, ValueError) as error:
            return ToolResult(False, self._error(verb, error))
        problem = self._verify(verb, target, expected)
        if problem is not None:
            return ToolResult(False, problem)
        annotation = await self._after(target)
        return ToolResult(True, message, annotation)

    # -- the tools

    async def write(self, path: str, content: str) -> ToolResult:
        try:
            target = self._check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        size = len(content.encode("utf-8"))
        return await self._perform(
            "write",
            target,
            lambda: self._write_text(target, content),
            content,
            f"wrote {size} bytes to {path}",
        )

    async def edit(self, path: str, old: str, new: str) -> ToolResult:
        try:
            target = self._check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        # Failures found before the mutation is attempted call no hook at all.
        try:
            text = self._read_text(target)
        except (OSError, UnicodeDecodeError) as error:
            return ToolResult(False, self._error("edit", error))
        count = text.count(old)
        if count == 0:
            return ToolResult(False, f"edit failed: the old text does not occur in {path}")
        if count > 1:
            return ToolResult(
                False,
                f"edit failed: the old text occurs {count} times in {path}; "
                "quote more of the surrounding text so that it occurs once",
            )
        updated = text.replace(old, new, 1)
        return await self._perform(
            "edit", target, lambda: self._write_text(target, updated), updated, f"edited {path}"
        )

    async def delete(self, path: str) -> ToolResult:
        try:
            target = self._check(path)
        except Refused as refusal:
            return ToolResult(False, str(refusal))
        return await self._perform("delete", target, target.unlink, None, f"deleted {path}")


# --------------------------------------------------------------------------- the adapter


class B4Implementation:
    """How the kit builds this chain and these tools (WriteObserverImplementation)."""

    features: tuple[str, ...] = ("write-tools", "builtin-observers", "hook-time-limit")

    def __init__(self, chain_class: type[B4Chain] = B4Chain, tools_class: type[B4Tools] = B4Tools):
        self.chain_class = chain_class
        self.tools_class = tools_class

    def make_chain(
        self,
        observers: Sequence[Any],
        *,
        hook_time_limit: float | None,
        on_failure: Callable[[Any, str], None],
    ) -> B4Chain:
        return self.chain_class(observers, hook_time_limit=hook_time_limit, on_failure=on_failure)

    def make_tools(self, root: Path, chain: Any, *, deny: Sequence[str]) -> B4Tools:
        return self.tools_class(root, chain, deny=deny)


def build(
    name: str,
    *,
    chain_class: type[B4Chain] = B4Chain,
    tools_class: type[B4Tools] = B4Tools,
    backend: str = "asyncio",
) -> PythonAdapter:
    return PythonAdapter(
        name=name,
        version="0.1",
        drivers=[WriteObserverChainDriver(B4Implementation(chain_class, tools_class))],
        backend=backend,
        concurrent=True,
    )


def adapter() -> PythonAdapter:
    return build("b4woc4-base")


def adapter_trio() -> PythonAdapter:
    return build("b4woc4-base-trio", backend="trio")
