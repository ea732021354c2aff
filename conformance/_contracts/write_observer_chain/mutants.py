"""Deliberately broken write-observer chains ("mutants"), one broken rule each.

A conformance suite is only as good as the bugs it catches. Each mutant here is a
conforming implementation with exactly one plausible mistake, labelled with the catalogue
rule it breaks; ``tests/test_woc_mutants.py`` runs the shipped scenarios against every
mutant and demands a MUST-level ``fail`` from a scenario that cites that rule, with the
oracle naming the rule. A mutant that survives points at a rule whose scenarios are not
sharp enough (WPT calls these meta-tests that must fail).

Mutants are also ordinary adapters, so anyone can watch the kit catch one::

    seamspec run --impl mutant:woc-after-reversed

Three families, one module each:

- ``mutant_chains``: the reference chain with one decision changed (:class:`SteppedChain`);
- ``mutant_tools``: the reference write tools calling the chain at the wrong moment;
- ``mutant_sweep13``: edges found by sweep 13 before any outsider wrote them (chain and
  tools alike);
- ``outsiders``: bugs written by people who saw only the docs, against their own
  implementation (names start with ``out-woc-``, batch 4's ``out-woc4-``, batch 5's ``out-woc5-``, batch 6's ``out-woc6-``, batch 7's ``out-woc7-``, batch 8's ``out-woc8-``, batch 9's ``out-woc9-``, batch 10's ``out-woc10-``, batch 11's ``out-woc11-``, batch 12's ``out-woc12-``); each batch is kept as it was written.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seamspec import __version__
from seamspec.conformance._contracts.write_observer_chain.driver import (
    WriteObserverChainDriver,
    WriteObserverImplementation,
)
from seamspec.conformance._contracts.write_observer_chain.mutant_chains import (
    CHAIN_MUTANTS,
    SteppedChain,
)
from seamspec.conformance._contracts.write_observer_chain.mutant_sweep13 import SWEEP13_MUTANTS
from seamspec.conformance._contracts.write_observer_chain.mutant_tools import TOOL_MUTANTS
from seamspec.conformance._contracts.write_observer_chain.outsiders import (
    batch1,
    batch2,
    batch3,
    batch4,
    batch5,
    batch6,
    batch7,
    batch8,
    batch9,
    batch10,
    batch11,
    batch12,
    batch13,
    batch14,
)
from seamspec.conformance._contracts.write_observer_chain.reference_adapter import (
    ReferenceWriteObservers,
)
from seamspec.conformance._core.python_adapter import PythonAdapter
from seamspec.reference import ObserverFailure, WriteObserver, WriteObserverChain, WriteTools

__all__ = ["MUTANTS", "Mutant", "MutantImplementation", "SteppedChain", "mutant_adapter"]


class MutantImplementation(ReferenceWriteObservers):
    """A :class:`WriteObserverImplementation` built from a chain class and a tools class.

    With the defaults it is the reference itself; a mutant swaps exactly one of the two.
    """

    def __init__(
        self,
        chain: type[WriteObserverChain] = WriteObserverChain,
        tools: type[WriteTools] = WriteTools,
    ) -> None:
        self.chain = chain
        self.tools = tools

    def make_chain(
        self,
        observers: Sequence[WriteObserver],
        *,
        hook_time_limit: float | None,
        on_failure: Callable[[Any, str], None],
    ) -> WriteObserverChain:
        def report(failure: ObserverFailure) -> None:
            on_failure(failure.observer, failure.describe())

        return self.chain(observers, hook_time_limit=hook_time_limit, on_failure=report)

    def make_tools(self, root: Path, observer: WriteObserver, *, deny: Sequence[str]) -> WriteTools:
        return self.tools(root, observer, deny=deny)


@dataclass(frozen=True)
class Mutant:
    """One named bug: the rule it breaks, what it does wrong, and how to build it."""

    name: str
    rule: str
    statement: str
    chain: type[WriteObserverChain] = WriteObserverChain
    tools: type[WriteTools] = WriteTools
    #: Who wrote it: ``kit`` (against the reference) or ``outsider batch N`` (from the docs).
    origin: str = "kit"
    #: An outsider mutant is their own implementation with the bug, not the reference's.
    outsider: Callable[[], WriteObserverImplementation] | None = None

    def implementation(self) -> WriteObserverImplementation:
        if self.outsider is not None:
            return self.outsider()
        return MutantImplementation(self.chain, self.tools)


def _all() -> list[Mutant]:
    found = [Mutant(n, r, s, chain=c) for n, r, s, c in CHAIN_MUTANTS]
    found += [Mutant(n, r, s, chain=c, tools=t) for n, r, s, t, c in TOOL_MUTANTS]
    found += [Mutant(n, r, s, chain=c, tools=t) for n, r, s, t, c in SWEEP13_MUTANTS]
    batches = (
        (batch1, "outsider batch 1"),
        (batch2, "outsider batch 2"),
        (batch3, "outsider batch 3 (re-created)"),
        (batch4, "outsider batch 4"),
        (batch5, "outsider batch 5"),
        (batch6, "outsider batch 6"),
        (batch7, "outsider batch 7"),
        (batch8, "outsider batch 8"),
        (batch9, "outsider batch 9"),
        (batch10, "outsider batch 10"),
        (batch11, "outsider batch 11"),
        (batch12, "outsider batch 12"),
        (batch13, "outsider batch 13"),
        (batch14, "outsider batch 14"),
    )
    for batch, origin in batches:
        found += [
            Mutant(
                m.name,
                m.rule,
                m.statement,
                origin=origin,
                outsider=functools.partial(batch.implementation, m.name),
            )
            for m in batch.MUTANTS.values()
        ]
    return found


#: Every mutant by name: the kit's own first, then each outsider batch.
MUTANTS: dict[str, Mutant] = {mutant.name: mutant for mutant in _all()}


def mutant_adapter(name: str, backend: str = "asyncio") -> PythonAdapter:
    """The named mutant as an adapter, exactly like :func:`reference_adapter` builds one."""
    mutant = MUTANTS[name]
    return PythonAdapter(
        name=f"seamspec-mutant-{name}",
        version=__version__,
        drivers=[WriteObserverChainDriver(mutant.implementation())],
        backend=backend,
        details={"mutant": name, "breaks": mutant.rule, "origin": mutant.origin},
    )
