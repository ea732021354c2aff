"""The mutated-file corpus, in the test suite: a bounded, seeded part of it.

The whole corpus (1,300 files, each in its own process, valid ones run on the
reference) is ``python -m tests.scenario_corpus`` and its figures are in
docs/reliability.md. Here, two slices that run in well under a minute:

- hypothesis picks a shipped file, a mutator and the damage (``st.randoms``), in process:
  validation never raises, never blames the kit, and locates every problem; a failing
  example is shrunk and printed with what reproduces it;
- a fixed slice of the corpus through the real harness (forked children, peak memory,
  the reference run for files that still validate), so the harness itself is tested.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import random
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seamspec._cli import main
from seamspec.conformance import validate_files
from tests.scenario_corpus import MAX_SECONDS, Case, cases, check, figures
from tests.scenario_mutations import MUTATORS, SEEDS, mutate


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.sampled_from(SEEDS),
    mutator=st.sampled_from(sorted(MUTATORS)),
    rng=st.randoms(use_true_random=False),
)
def test_a_mutated_file_is_valid_or_located_problems(
    seed: Path, mutator: str, rng: random.Random
) -> None:
    data = mutate(seed, mutator, rng)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / seed.name
        path.write_bytes(data)
        started = time.process_time()  # CPU: wall time on a shared CI machine is noise
        scenarios, problems = validate_files([path])
        assert time.process_time() - started < MAX_SECONDS
        assert bool(scenarios) != bool(problems)
        for problem in problems:
            assert problem.file == str(path)
            assert problem.line is not None, problem
            assert "bug in seamspec" not in problem.message, problem
            assert "\n" not in str(problem)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["validate", str(path)])
        assert code == (2 if problems else 0)
        assert "Traceback" not in err.getvalue()


#: Fixed, so the slice is the same everywhere: every mutator four times.
SLICE = list(cases(52, seed=7))


def test_a_slice_of_the_corpus_keeps_every_promise(tmp_path: Path) -> None:
    outcomes = [check(case, tmp_path) for case in SLICE]
    broken = [(o.case.index, o.case.mutator, o.violation) for o in outcomes if o.violation]
    assert broken == [], figures(outcomes)
    assert {o.case.mutator for o in outcomes} == set(MUTATORS)
    assert {o.exit for o in outcomes} == {0, 2}  # the slice reaches the reference too
    assert any(o.status == "pass" for o in outcomes)
    assert all(o.peak_mb > 0 for o in outcomes)


def test_the_harness_reports_a_broken_promise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The corpus check can fail: a file whose problem has no line is a violation."""
    from seamspec.conformance._core import scenario

    real = scenario._check_file

    def unlocated(path: Path, seen: dict[str, str]) -> tuple[object, list[object]]:
        found, problems = real(path, seen)
        return found, [dataclasses.replace(p, line=None) for p in problems]

    monkeypatch.setattr(scenario, "_check_file", unlocated)  # the forked child inherits it
    case = Case(0, SEEDS[0], "truncate", 3)
    outcome = check(case, tmp_path, run=False)
    assert outcome.exit == 2
    assert outcome.violation is not None
    assert "without FILE:LINE" in outcome.violation
