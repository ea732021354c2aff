"""``seamspec fuzz`` for the dispatch recorder: generated scenarios judged by the oracle.

That the reference passes generated scenarios is the ``fuzz`` nox session's proof (100
per contract, seeded), not repeated here. Representative mutants (an executor
stage, a fail-open record, the commit barrier, the signed journal's fsync and verifier)
must be caught, and the saved failure must be an ordinary scenario that fails the mutant
and passes the reference under ``run``.

These tests ask whether the generator reaches each bug, so they search with the same
seed and budget but without shrinking (``shrink=False``): the search stops at the first
failing example, which is saved and replayed as it was generated. That is a fraction of
the time (shrinking a journal scenario judged hundreds more examples), and the test
still fails if the generator stops reaching the bug within the budget. Shrinking
itself, and replaying a shrunk dispatch-recorder finding, are tested by
``tests/test_fuzz_wire.py`` (dr-rewrite-fail-open, dr-cancel-swallowed) and
``tests/test_woc_properties.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from seamspec.conformance import Adapter, judge, load_adapter, validate_files
from seamspec.conformance._quality.fuzz import fuzz, save_failure

CONTRACT = "dispatch-recorder"


@pytest.fixture
def reference() -> Iterator[Adapter]:
    adapter = load_adapter("reference")
    try:
        yield adapter
    finally:
        adapter.close()


@pytest.mark.parametrize(
    "name", ["dr-raise-is-ok", "dr-redact-releases-original", "dr-commit-pipelined"]
)
def test_mutant_is_caught_and_the_saved_failure_replays(
    name: str, reference: Adapter, tmp_path: Path
) -> None:
    mutant = load_adapter(f"mutant:{name}")
    try:
        failure = fuzz(mutant, CONTRACT, examples=300, seed=1, shrink=False)
        assert failure is not None, f"{name} survived 300 generated scenarios"
        path = save_failure(failure, tmp_path)
        scenarios, problems = validate_files([path])
        assert not problems, problems
        (scenario,) = scenarios
        assert judge(scenario, mutant.run(scenario.request()))
        assert not judge(scenario, reference.run(scenario.request()))
    finally:
        mutant.close()


@pytest.mark.parametrize(
    "name",
    [
        "dr-journal-ok-before-fsync",
        "dr-journal-verify-ignores-chain",
        # Found only by its own forgery: a `seq` of the right value and the wrong type.
        # (tests/fuzz_mutants_wire.py runs every journal mutant, 500 examples over the wire.)
        "dr-journal-verify-loose-types",
        # Found only by a forgery signed without the domain prefix.
        "dr-journal-verify-accepts-undomained",
    ],
)
def test_journal_mutant_is_caught_by_a_journal_scenario(
    name: str, reference: Adapter, tmp_path: Path
) -> None:
    mutant = load_adapter(f"mutant:{name}")
    try:
        failure = fuzz(mutant, CONTRACT, examples=300, seed=1, shrink=False)
        assert failure is not None, f"{name} survived 300 generated scenarios"
        assert failure.document["requires"] == ["signed-journal"]
        # A journal scenario (unshrunk, it may also start on an existing journal).
        assert failure.document["given"]["recorder"]["journal"] is True
        path = save_failure(failure, tmp_path)
        scenarios, problems = validate_files([path])
        assert not problems, problems
        (scenario,) = scenarios
        assert judge(scenario, mutant.run(scenario.request()))
        assert not judge(scenario, reference.run(scenario.request()))
    finally:
        mutant.close()


@pytest.mark.parametrize(
    "name", ["dr-journal-reopen-cuts-away-damage", "dr-journal-reopen-restarts-the-chain"]
)
def test_reopen_mutant_is_caught_on_an_existing_or_reopened_journal(
    name: str, reference: Adapter, tmp_path: Path
) -> None:
    """The generator starts journals on files that already hold one (whole, torn or
    damaged) and reopens the recorder mid-turn: what DR-JOURNAL-REOPEN is about."""
    mutant = load_adapter(f"mutant:{name}")
    try:
        failure = fuzz(mutant, CONTRACT, examples=300, seed=1, shrink=False)
        assert failure is not None, f"{name} survived 300 generated scenarios"
        document = failure.document
        reopened = any("reopen_journal" in step for step in document["when"])
        assert reopened or "existing_journal" in document["given"]["recorder"]
        path = save_failure(failure, tmp_path)
        scenarios, problems = validate_files([path])
        assert not problems, problems
        (scenario,) = scenarios
        assert judge(scenario, mutant.run(scenario.request()))
        assert not judge(scenario, reference.run(scenario.request()))
    finally:
        mutant.close()


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        # A redaction to the very result the tool returned, recorded like any other.
        ("out-dr5-noop-redaction-unrecorded", "DR-REDACT-UNCHANGED"),
        # An existing journal whose last entry lost its newline: refused or moved, never cut.
        ("out-dr5-reopen-cuts-unterminated-entry", "lost_newline"),
        # An entry appended to a journal that holds none, verified anchored on 0 entries.
        ("out-dr5-anchor-zero-ignored", "append_on_empty"),
    ],
)
def test_outsider_batch_5_shapes_are_drawn(
    name: str, shape: str, reference: Adapter, tmp_path: Path
) -> None:
    """The generator draws outsider batch 5's shapes, and so finds the three variants that
    need them (the strict profile counts DR-REDACT-UNCHANGED, seamspec's rule)."""
    mutant = load_adapter(f"mutant:{name}")
    try:
        # A seed's examples move whenever the generator changes (a merge of new scenario
        # vocabulary once made seed 1's first 300 miss a shape its 500 held). Reach is
        # what this pins: three seeds of 300, stopping at the first that finds it.
        for seed in (1, 2, 3):
            failure = fuzz(
                mutant, CONTRACT, examples=300, seed=seed, shrink=False, profile="strict"
            )
            if failure is not None:
                break
        assert failure is not None, f"{name} survived 3 x 300 generated scenarios"
        document = failure.document
        recorder = document["given"]["recorder"] or {}
        if shape == "lost_newline":
            assert recorder["existing_journal"]["lost_newline"] is True
        elif shape == "append_on_empty":
            assert {"tamper_journal": {"append": {}}} in document["when"]
            assert document["then"]["records"] == []
        else:
            assert shape in document["rules"]
        path = save_failure(failure, tmp_path)
        scenarios, problems = validate_files([path])
        assert not problems, problems
        (scenario,) = scenarios
        assert judge(scenario, mutant.run(scenario.request()))
        assert not judge(scenario, reference.run(scenario.request()))
    finally:
        mutant.close()
