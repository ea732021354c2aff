"""The measurement the rooms' ``*_oracle_coverage.py`` scripts share.

Each script names its room, the oracle modules it measures and how to run every
implementation over the room's scenarios; this module parses the command line, runs that
under coverage.py (branch coverage, in memory) and prints the report. Written once so the
three scripts cannot drift apart in how they measure.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["measure"]

RunEverything = Callable[[int, list[str]], list[tuple[str, str]]]


def measure(
    argv: list[str] | None,
    *,
    description: str,
    room: Path,
    measured: Sequence[str],
    label: str,
    run_everything: RunEverything,
    jobs: int,
) -> int:
    """Exit 0 when every implementation ran, 1 if one could not, 2 without coverage.py."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("-j", "--jobs", type=int, default=jobs)
    parser.add_argument("names", nargs="*", help="only these implementations (default: all)")
    args = parser.parse_args(argv)
    try:  # not a dependency of the kit: only this measurement needs it
        coverage = importlib.import_module("coverage")
    except ModuleNotFoundError:
        print("this needs coverage.py: pip install coverage", file=sys.stderr)
        return 2
    cov = coverage.Coverage(
        data_file=None,  # in memory: nothing written to the work tree
        branch=True,
        include=[str(room / name) for name in measured]
        + [f"*/{room.name}/{name}" for name in measured],
    )
    cov.start()
    try:
        failed = run_everything(args.jobs, args.names)
    finally:
        cov.stop()
    total: float = cov.report(show_missing=True, skip_covered=False)
    print(f"branch coverage of the {label} oracle: {total:.1f}%")
    for name, error in failed:
        print(f"could not run {name}: {error}")
    return 1 if failed else 0
