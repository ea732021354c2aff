"""Seven broken variants of ``base12``, each with exactly one bug (outsider batch 12, woc12).

Written by batch 12's outsider from the docs alone and hashed before any run (the original
``b12woc_variants.py`` had sha256
3be8fc3ecf64bd5938b9a99a42fac5e897b44296771ed91fb92b5f537b35c45e). Kept as written: only
imports changed, and the ``VARIANTS`` list with its ``_IMPLS`` map and ``_factory`` became
the catalogue at the end (same names, rules and statements; each variant's adapter is built
by ``make_adapter`` from the outsider's own ``Impl`` subclass as before, now with a
backend); labels changed after triage are in ``RELABELLED``, variants found not to be bugs
in ``REJECTED``, variants not caught yet in ``PENDING``.

First try, against main 83f2bad: none of seven killed; all seven survived
(``ansi-stripped``, ``pathlib-match-deny``, ``mkdir-as-given``, ``empty-write-error``,
``nfc-path``, ``backslash-after-check``, ``warn-per-failure-kind``). The contract page's
"Outsider mutants" section (batch 12) says what each one is, whether upstream demands the
behaviour, and what catches it now: all seven are registered.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from seamspec.conformance._contracts.write_observer_chain.outsiders.base12 import (
    Chain,
    Impl,
    Tools,
    make_adapter,
)
from seamspec.conformance._core.python_adapter import PythonAdapter

# --- 1. the chain "sanitises" annotations for the model by stripping ANSI colour codes --

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


class AnsiStrippingChain(Chain):
    def _clean(self, note: str) -> str:
        # linters colour their output when they think they talk to a terminal; the model
        # should not read escape sequences
        return _ANSI.sub("", note)


class AnsiStrippingImpl(Impl):
    chain_cls = AnsiStrippingChain


# --- 2. deny patterns matched with pathlib's PurePath.match (right-anchored, per part) --


class PathlibMatchTools(Tools):
    def _matches(self, candidate: str, pattern: str) -> bool:
        return PurePosixPath(candidate).match(pattern)


class PathlibMatchImpl(Impl):
    tools_cls = PathlibMatchTools


# --- 3. the write tool makes the missing folders along the path as the model gave it ---


class MkdirAsGivenTools(Tools):
    def _make_parents(self, raw: str, target: Path) -> None:
        os.makedirs(os.path.dirname(os.path.join(self.root, raw)), exist_ok=True)


class MkdirAsGivenImpl(Impl):
    tools_cls = MkdirAsGivenTools


# --- 4. a "short write" guard that takes 0 bytes written for a failure ------------------


class EmptyWriteErrorTools(Tools):
    def _put(self, target: Path, data: bytes) -> None:
        with open(target, "wb") as handle:
            if not handle.write(data):
                raise OSError(errno.EIO, "short write: nothing was written")


class EmptyWriteErrorImpl(Impl):
    tools_cls = EmptyWriteErrorTools


# --- 5. tool paths are Unicode-normalised (NFC) before anything else --------------------


class NfcPathTools(Tools):
    def _normalise(self, raw: str) -> str:
        # macOS hands out decomposed names; normalise so one file has one key
        return unicodedata.normalize("NFC", raw)


class NfcPathImpl(Impl):
    tools_cls = NfcPathTools


# --- 6. Windows separators are turned into "/" for the I/O, after the sandbox check -----


class BackslashAfterCheckTools(Tools):
    def _target(self, raw: str, checked: Path) -> Path:
        # models trained on Windows repos send "src\\app.py"; accept both separators
        return Path(os.path.realpath(os.path.join(self.root, raw.replace("\\", "/"))))


class BackslashAfterCheckImpl(Impl):
    tools_cls = BackslashAfterCheckTools


# --- 7. warn once per observer *and kind of failure* (raised vs timed out) --------------


class WarnPerKindChain(Chain):
    def _warn_key(self, observer: Any, kind: str) -> Any:
        return (id(observer), kind)


class WarnPerKindImpl(Impl):
    chain_cls = WarnPerKindChain


# ------------------------------------------------------------ registry


@dataclass(frozen=True)
class OutsiderMutant:
    name: str  # kebab-case, prefix out-woc12-, unique, says what the bug is
    rule: str  # the catalogue rule ID the bug breaks (see `seamspec rules`)
    statement: str  # one sentence: what this implementation does wrong
    build: Callable[[str], PythonAdapter]  # backend ("asyncio" or "trio") -> adapter


#: name, rule, statement, the outsider's Impl subclass (as the outsider wrote them)
_SPECS: Sequence[tuple[str, str, str, type[Impl]]] = [
    (
        "out-woc12-ansi-stripped",
        "WOC-JOIN",
        "The chain strips ANSI escape sequences (colour codes) out of every annotation "
        "before joining, so an annotation holding one no longer appears as written.",
        AnsiStrippingImpl,
    ),
    (
        "out-woc12-pathlib-match-deny",
        "WOC-SEAM-DENIED",
        "Deny patterns are matched with PurePath.match (right-anchored, `*` confined to "
        "one component) instead of fnmatchcase, so a pattern like `src/*.py` does not "
        "refuse `src/sub/a.py` and the write goes through.",
        PathlibMatchImpl,
    ),
    (
        "out-woc12-mkdir-as-given",
        "WOC-SEAM-DENIED",
        "The write tool creates missing parent folders along the path as the model gave "
        "it (os.makedirs(dirname(root/raw))) rather than the resolved path, so "
        "`../sandbox-x/../sandbox/a.txt` or `build/x/../../a.txt` (allowed, resolving "
        "to a.txt) leaves a folder beside the sandbox or in a denied place.",
        MkdirAsGivenImpl,
    ),
    (
        "out-woc12-empty-write-error",
        "WOC-SEAM-FAILED-WRITE",
        "The tools verify their write with `if not f.write(data)`, so writing empty "
        "content (or an edit that empties the file) truncates the file and then reports "
        "a failure.",
        EmptyWriteErrorImpl,
    ),
    (
        "out-woc12-nfc-path",
        "WOC-SEAM-FAILED-WRITE",
        "The tools NFC-normalise the tool path before resolving it, so a write to a "
        "decomposed name (`e` + U+0301) creates or changes a different file (the "
        "precomposed name) and reports success.",
        NfcPathImpl,
    ),
    (
        "out-woc12-backslash-after-check",
        "WOC-SEAM-DENIED",
        "The tools turn backslashes into `/` for the I/O path after the sandbox check "
        "ran on the raw path, so `..\\sandbox-x\\f.txt` (one harmless file name inside "
        "the root when checked) is written beside the sandbox.",
        BackslashAfterCheckImpl,
    ),
    (
        "out-woc12-warn-per-failure-kind",
        "WOC-FAIL-WARN",
        "The chain's warn-once set is keyed by (observer, kind of failure), so an "
        "observer that first raises and later runs past the time limit is warned about "
        "twice.",
        WarnPerKindImpl,
    ),
]


def _build(backend: str, *, name: str, impl_class: type[Impl]) -> PythonAdapter:
    return make_adapter(impl_class(), name=name, backend=backend)


#: Every variant the outsider wrote, by name.
VARIANTS: dict[str, OutsiderMutant] = {
    name: OutsiderMutant(
        name, rule, statement, functools.partial(_build, name=name, impl_class=impl)
    )
    for name, rule, statement, impl in _SPECS
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


def implementation(name: str) -> Impl:
    """Batch 12's outsider implementation with the named variant's bug."""
    _, _, _, impl = next(s for s in _SPECS if s[0] == name)
    return impl()


for _name, _, _, _impl in _SPECS:
    globals()["V_" + _name.replace("-", "_")] = functools.partial(
        _build, "asyncio", name=_name, impl_class=_impl
    )
del _name, _impl
