"""Seven broken variants of ``base14``, each with exactly one bug (outsider batch 14, b14woc).

Written by batch 14's outsider from the docs alone (the docs of main ecbade0) and hashed
before any run (the original ``b14woc_variants.py`` had sha256
95672490e9a2692bb32e92081b1459776273bbca43dd2722b5f1def75a32f347). Kept as written: only
imports and one ``noqa`` changed (and ``ruff format``'s line joins), and the outsider's ``VARIANTS`` list with its ``V_*``
factories became the catalogue at the end (same names, rules and statements; each
variant's adapter is built by ``make_adapter`` from the outsider's own ``_impl`` as before,
now with a backend); labels changed after triage are in ``RELABELLED``, variants found not
to be bugs in ``REJECTED``, variants not caught yet in ``PENDING``.

First try, judged against main ecbade0: 6 of 7 killed properly (``ansi-stripped``,
``repeat-suppressed``, ``warned-global-by-name``, ``timeout-warned-apart``,
``dot-parent-denied``, ``edit-old-gone-check``); ``link-followed-once`` (WOC-SEAM-DENIED)
was failed only by a scenario citing another rule
(woc-seam-pre-link-to-a-link-gets-final-target, WOC-SEAM-PRE). Triage added
woc-seam-denied-link-to-a-link-out-of-root-or-denied (WOC-SEAM-DENIED), which kills it
properly, so all seven are registered. The contract page's "Outsider mutants" section
(batch 14) says what each one is, whether upstream demands the behaviour, and what
catches it now.

Original module docstring:

    b14woc variants: the base with exactly one plausible harness bug each.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from seamspec.conformance._contracts.write_observer_chain.outsiders.base14 import (
    Chain,
    Implementation,
    Sandbox,
    Tools,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# -- 1. ANSI colour codes stripped from annotations ------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


class AnsiStrippingChain(Chain):
    """Linters colour their output; the model should not read escape codes, so the
    chain 'cleans' every annotation."""

    def _accept(self, observer: Any, path: Path, value: Any) -> Any:
        if isinstance(value, str):
            return _ANSI.sub("", value)
        return value


# -- 2. an observer's repeated annotation suppressed -----------------------------------------


class RepeatSuppressingChain(Chain):
    """Saves tokens: when an observer says exactly what it said last time for this
    path, the chain does not tell the model again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._last: dict[tuple[int, str], str] = {}

    def _accept(self, observer: Any, path: Path, value: Any) -> Any:
        if not isinstance(value, str) or value == "":
            return value
        key = (id(observer), str(path))
        previous = self._last.get(key)
        self._last[key] = value
        if previous == value:
            return None
        return value


# -- 3. warn-once memory shared by every chain, keyed by observer name -----------------------


class GlobalWarnedChain(Chain):
    """Warn-once bookkeeping kept at class level so that nested chains share it; keyed
    by the observer's name, since ids 'can be reused'."""

    _global_warned: set[str] = set()  # noqa: RUF012 (as written)

    def _failed(self, observer: Any, message: str, *, kind: str) -> None:
        key = str(getattr(observer, "name", repr(observer)))
        if key in GlobalWarnedChain._global_warned:
            return
        GlobalWarnedChain._global_warned.add(key)
        if self.on_failure is not None:
            self.on_failure(observer, message)


# -- 4. time-outs and raises remembered apart ------------------------------------------------


class SplitWarnedChain(Chain):
    """Warns once per observer *per kind of failure*: a time-out and an exception are
    different problems, so each gets its own one-time warning."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._warned_kind: set[tuple[int, str]] = set()

    def _failed(self, observer: Any, message: str, *, kind: str) -> None:
        key = (id(observer), kind)
        if key in self._warned_kind:
            return
        self._warned_kind.add(key)
        if self.on_failure is not None:
            self.on_failure(observer, message)


# -- 5. deny patterns also matched against "." -----------------------------------------------


class DotParentSandbox(Sandbox):
    """Checks the path and each of its parents with PurePosixPath.parents, which for a
    relative path ends with PurePosixPath('.')."""

    def _candidates(self, inner: PurePosixPath) -> list[str]:
        return [str(inner), *(str(parent) for parent in inner.parents)]


class DotParentTools(Tools):
    def __init__(self, root: Path, observer: Any, *, deny: Any = ()) -> None:
        super().__init__(root, observer, deny=deny)
        self.sandbox = DotParentSandbox(root, deny)


# -- 6. a link's target resolved in its text, not followed further ----------------------------


class LinkOnceSandbox(Sandbox):
    """Follows a link by reading it and normalising the target's text (like
    os.path.normpath(join(dir, readlink(p)))): a link that leads to another link stops
    at that second link."""

    def _walk(self, parts: list[str], start: list[str], budget: list[int]) -> list[str]:
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
                target = os.readlink(candidate)
                lexical = [] if target.startswith("/") else list(cur)
                for piece in target.split("/"):
                    if piece in ("", "."):
                        continue
                    if piece == "..":
                        if lexical:
                            lexical.pop()
                        continue
                    lexical.append(piece)
                cur = lexical
            else:
                cur = cur + [part]
        return cur


class LinkOnceTools(Tools):
    def __init__(self, root: Path, observer: Any, *, deny: Any = ()) -> None:
        super().__init__(root, observer, deny=deny)
        self.sandbox = LinkOnceSandbox(root, deny)


# -- 7. edit verified by "the old text is gone" ----------------------------------------------


class OldGoneTools(Tools):
    """After an edit the tool verifies it by checking that the old text no longer
    occurs in the file."""

    def _edit_ok(self, text: str, result: str, old: str, new: str) -> bool:
        return old not in result


# -- wiring --------------------------------------------------------------------------------


def _impl(chain_class: type = Chain, tools_class: type = Tools) -> Implementation:
    impl = Implementation()
    impl.chain_class = chain_class
    impl.tools_class = tools_class
    return impl


_OUTSIDER_VARIANTS: list[tuple[str, str, str]] = [
    (
        "out-b14woc-ansi-stripped",
        "WOC-JOIN",
        "The chain strips ANSI escape sequences (terminal colours) from every annotation "
        "before joining, so an annotation holding ESC[...m no longer appears as written.",
    ),
    (
        "out-b14woc-repeat-suppressed",
        "WOC-JOIN",
        "The chain remembers each observer's last annotation per path and drops it when the "
        "next after_write for that path returns the same text, so a repeated non-empty "
        "annotation is missing from the later call's result.",
    ),
    (
        "out-b14woc-warned-global-by-name",
        "WOC-FAIL-WARN",
        "The warn-once memory is a class-level set keyed by observer name, shared by every "
        "chain ever built, so a failing observer in a new chain is never warned about if "
        "any earlier chain already warned about an observer of that name.",
    ),
    (
        "out-b14woc-timeout-warned-apart",
        "WOC-FAIL-WARN",
        "The chain warns once per observer per kind of failure (raised vs. timed out), so "
        "an observer that raises on one call and exceeds the time limit on another "
        "produces two warnings.",
    ),
    (
        "out-b14woc-dot-parent-denied",
        "WOC-SEAM-DENIED",
        "The deny check matches patterns against the path and PurePosixPath.parents, which "
        "ends with '.', so a pattern matching '.' (such as '.*' for hidden files) refuses "
        "every write in the sandbox.",
    ),
    (
        "out-b14woc-link-followed-once",
        "WOC-SEAM-DENIED",
        "The sandbox follows a symbolic link by normalising its target's text without "
        "following links inside it, so a link to a link that leads out of the root (or into "
        "a denied folder) is judged by the second link's own location and the write "
        "escapes through it.",
    ),
    (
        "out-b14woc-edit-old-gone-check",
        "WOC-SEAM-FAILED-WRITE",
        "The edit tool verifies its mutation by checking the old text no longer occurs, so "
        "an edit whose new text contains the old text is made on disk but reported as a "
        "failure (and after_write is skipped).",
    ),
]

#: Each variant's chain and tools classes (the outsider's ``V_*`` factories, by name).
_CLASSES: dict[str, tuple[type, type]] = {
    "out-b14woc-ansi-stripped": (AnsiStrippingChain, Tools),
    "out-b14woc-repeat-suppressed": (RepeatSuppressingChain, Tools),
    "out-b14woc-warned-global-by-name": (GlobalWarnedChain, Tools),
    "out-b14woc-timeout-warned-apart": (SplitWarnedChain, Tools),
    "out-b14woc-dot-parent-denied": (Chain, DotParentTools),
    "out-b14woc-link-followed-once": (Chain, LinkOnceTools),
    "out-b14woc-edit-old-gone-check": (Chain, OldGoneTools),
}


# ------------------------------------------------------------ registry


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-b14woc-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


def implementation(name: str) -> Implementation:
    """Batch 14's outsider implementation with the named variant's bug."""
    chain_class, tools_class = _CLASSES[name]
    return _impl(chain_class=chain_class, tools_class=tools_class)


def _build(backend: str, *, name: str) -> PythonAdapter:
    return make_adapter(implementation(name), name=name, backend=backend)


#: Every variant the outsider wrote, by name.
VARIANTS: dict[str, OutsiderMutant] = {
    name: OutsiderMutant(name, rule, statement, functools.partial(_build, name=name))
    for name, rule, statement in _OUTSIDER_VARIANTS
}

#: Labels changed after the batch was judged, with the label the outsider gave and why.
RELABELLED: dict[str, tuple[str, str]] = {}

#: Variants triage found not to be bugs, with the reason (kept here, never registered).
REJECTED: dict[str, str] = {}

#: Variants kept but not registered as mutants yet (no scenario catches them), with why.
PENDING: dict[str, str] = {}

#: The variants registered as mutants.
MUTANTS: dict[str, OutsiderMutant] = {
    name: v for name, v in VARIANTS.items() if name not in REJECTED and name not in PENDING
}

for _name, _, _ in _OUTSIDER_VARIANTS:
    globals()["V_" + _name.replace("-", "_")] = functools.partial(_build, "asyncio", name=_name)
del _name
