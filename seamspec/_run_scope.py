"""What one ``seamspec run`` started is gone when it ends, however it ends.

:func:`run_scope` surrounds a run. It makes the kit a child subreaper (see
``conformance/_core/processes.py``: orphans below the kit come back to it instead of
init), gives the run a temporary folder of its own (``TMPDIR`` and ``tempfile.tempdir``,
so that worker processes and implementations put their files there as well), and on the
way out, normal or not, kills every process born below the kit during the run (frozen,
then SIGKILL: ``setsid()`` grandchildren and double-forked orphans included) and deletes
that folder. Processes that existed before the run began are spared, so the scope is
safe in a test process too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from seamspec._signals import deferred
from seamspec.conformance._core import processes

__all__ = ["run_scope"]

#: Seconds between an interrupted run's two sweeps.
SECOND_SWEEP = 0.5


@contextlib.contextmanager
def run_scope() -> Iterator[Path]:
    """The run's folder for temporary files; processes and files are ended on exit."""
    before = {(p.pid, p.start) for p in processes.descendants(os.getpid())}
    was_subreaper = processes.is_subreaper()
    processes.become_subreaper()
    root = Path(tempfile.mkdtemp(prefix="seamspec-run-"))
    saved_env, saved_tempdir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = str(root)
    tempfile.tempdir = str(root)
    ended_normally = False
    try:
        yield root
        ended_normally = True
    finally:
        with deferred():
            # Zombies of adopted orphans are left to init, which reaps them once the kit
            # exits: reaping them here could steal the exit status a Popen waits for.
            processes.kill_tree(os.getpid(), include_root=False, spare=before)
            if not ended_normally:
                # Interrupted: a thread the kit abandoned (an implementation's blocking
                # call, cancelled from outside) may still be inside its spawn when the
                # first sweep runs, and its child is born after it. Sweep once more.
                time.sleep(SECOND_SWEEP)
                processes.kill_tree(os.getpid(), include_root=False, spare=before)
            if saved_env is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = saved_env
            tempfile.tempdir = saved_tempdir
            shutil.rmtree(root, ignore_errors=True)
            if not was_subreaper:
                processes.become_subreaper(False)
