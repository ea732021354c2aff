"""What every test of the kit shares: xdist scheduling, a hypothesis profile, a disk folder.

Three things live here, each explained where it is defined: a hypothesis settings profile
(draw timing is not checked: the machines are shared), the ``disk_path`` fixture (a folder on
the disk for tests whose point is a real fsync, since the ``tests`` session puts TMPDIR on
tmpfs), and the scheduling below.

How pytest-xdist shares the kit's own tests out: the mutant meta-test files stay whole.

Each of ``tests/test_*_mutants.py`` computes its whole matrix (every control against every
scenario, every mutant against the scenarios citing its rule) once per process and caches
it (``functools.cache``); its tests only read it. xdist's default ``load`` scheduling hands
a file's tests to whichever worker is free, so with ``-n 2`` both workers computed the
shell-output matrix, 26 s of CPU each. Here one worker runs each of those files whole and
every other test is handed out one by one as before.

``--dist loadgroup`` with ``xdist_group`` marks would say this without a hook, but with
pytest 9 it groups nothing: pytest-xdist 3.8 tags the group onto ``item._nodeid``, which
pytest 9 no longer reads.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

#: Hypothesis times its own input generation and fails a test whose draws are slow; on a
#: shared 2-core machine a draw can wait over a second for the CPU (a full run under load
#: failed test_the_spliced_line_is_the_canonical_entry that way: 2 inputs in 1.43 s). How
#: long drawing takes says nothing about the code under test, so that check is off.
settings.register_profile("seamspec", suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("seamspec")

#: Files one worker runs whole: their tests share a matrix cached per process.
ONE_WORKER = frozenset({"test_woc_mutants.py", "test_soo_mutants.py", "test_dr_mutants.py"})

#: The longest single tests (``--durations`` on 2026-12-02), handed out first after the
#: whole files, so that none of them starts last and leaves one worker idle while it runs.
#: Only the order depends on this list: a test missing from it still runs.
LONGEST_FIRST = (
    "tests/test_doc_examples.py::test_console_examples_print_what_the_page_shows[docs/usage.md]",
    "tests/test_doc_examples.py::test_console_examples_print_what_the_page_shows[docs/quality.md]",
    "tests/test_doc_examples.py::test_console_examples_print_what_the_page_shows[docs/adapters.md]",
    "tests/test_fuzz_wire.py::",
    "tests/test_wire_verdicts.py::test_same_verdicts_in_process_and_over_the_wire",
    "tests/test_pytest_plugin.py::test_xdist",
    "tests/test_doc_examples.py::",
    "tests/test_benchmarks.py::",
)


def _rank(nodeid: str) -> int:
    return next(
        (i for i, prefix in enumerate(LONGEST_FIRST) if nodeid.startswith(prefix)),
        len(LONGEST_FIRST),
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``LONGEST_FIRST`` tests first (a stable sort: the rest keep their order)."""
    items.sort(key=lambda item: _rank(item.nodeid))


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file for ``ONE_WORKER``, else itself."""
    path = nodeid.split("::", 1)[0]
    return path if path.rsplit("/", 1)[-1] in ONE_WORKER else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Replace the default ``load`` scheduling only; an explicit ``--dist`` is left alone."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class KeepMatricesWhole(LoadScopeScheduling):  # type: ignore[misc]
        """``loadscope`` with ``scope_of`` as the scope: whole files first, biggest first."""

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return KeepMatricesWhole(config, log)


@pytest.fixture
def disk_path(tmp_path: Path) -> Iterator[Path]:
    """A fresh folder on the disk, for tests whose point is what a real fsync costs.

    The ``tests`` nox session points TMPDIR (and so ``tmp_path``) at tmpfs, where an fsync
    returns at once, and names the default temporary folder in ``SEAMSPEC_DISK_TMPDIR``.
    Group commit, for one, is only shown when records queue up behind an fsync that waits
    for the disk. Without that variable this is ``tmp_path``, wherever TMPDIR points.
    """
    disk = os.environ.get("SEAMSPEC_DISK_TMPDIR")
    if not disk:
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="seamspec-disk-", dir=disk))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
