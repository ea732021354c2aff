"""A bounded run of the power-loss simulation (``journal_power_loss.py``; the documented
10,000-trial run is ``nox -s power_loss``): no acknowledged record is ever lost, and the
simulation itself is sensitive: a journal that acknowledges before its fsync loses some."""

from __future__ import annotations

from seamspec.conformance._contracts.dispatch_recorder.mutants import MUTANTS
from tests.journal_power_loss import simulate

TRIALS = 300


def test_no_acknowledged_record_is_lost_to_a_power_cut() -> None:
    figures = simulate(TRIALS)
    assert figures.trials == TRIALS
    assert figures.acknowledged_checked > TRIALS  # most cuts come after some OKs
    assert figures.acknowledged_lost == 0, figures.failures[:5]
    assert not figures.failures, figures.failures[:5]
    assert figures.torn_tails_cut > 0  # cuts land mid-entry too
    assert all(figures.by_flavour.values())


def test_the_simulation_catches_an_ok_before_fsync() -> None:
    figures = simulate(100, journal=MUTANTS["dr-journal-ok-before-fsync"].journal)
    assert figures.acknowledged_lost > 0
