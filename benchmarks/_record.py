"""What every benchmark script shares: ``--quick``, ``--output``, and keeping what it printed.

A figure in ``docs/benchmarks.md`` must come from a script, not from a hand. So each
script writes everything it prints to ``benchmarks/results/<script>.txt`` (committed),
the page quotes that file (``tests/test_benchmarks.py`` checks the quote is exact), and
``--quick`` runs the same code on a tiny workload, so that a test can check in seconds
that the script still runs and still prints lines of the same shape.

    python benchmarks/suite_bench.py                # full run: writes results/suite_bench.txt
    python benchmarks/suite_bench.py --quick        # tiny run: prints only
    python benchmarks/suite_bench.py --output x.txt # writes x.txt instead

``--quick`` is a preset of the script's own options (fewer rounds, a smaller workload),
given to :func:`run` by each script, so a quick run exercises exactly the full code.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

__all__ = ["RESULTS", "add_options", "recorded", "run"]

RESULTS = Path(__file__).resolve().parent / "results"


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a tiny run, to check the script works (figures mean nothing; writes no file)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="PATH",
        help="write what is printed here (default: benchmarks/results/<script>.txt, "
        "except with --quick)",
    )


class _Tee(io.TextIOBase):
    def __init__(self, *streams: TextIO) -> None:
        self._streams = streams

    def write(self, text: str) -> int:
        for stream in self._streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self._streams:
            stream.flush()


@contextmanager
def recorded(args: argparse.Namespace, script: str) -> Iterator[None]:
    """Print as usual, and keep a copy; written out only if the run completes."""
    path: Path | None = args.output
    if path is None and not args.quick:
        path = RESULTS / f"{Path(script).stem}.txt"
    kept = io.StringIO()
    real = sys.stdout
    sys.stdout = _Tee(real, kept)
    try:
        yield
    finally:
        sys.stdout = real
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(kept.getvalue(), encoding="utf-8")
        print(f"(written to {path})", file=sys.stderr)


def run(main: Callable[[], object], script: str, quick: list[str]) -> int:
    """Run a script's ``main`` with ``--quick`` and ``--output`` taken off the command line.

    ``--quick`` puts ``quick`` (the script's own options for a tiny run) in front of the
    remaining arguments, so options given after it still win. What ``main`` prints is
    recorded (see :func:`recorded`); its return value is the exit code.
    """
    options = argparse.ArgumentParser(add_help=False)
    add_options(options)
    args, rest = options.parse_known_args()
    sys.argv = [sys.argv[0], *(quick if args.quick else []), *rest]
    with recorded(args, script):
        code = main()
    return code if isinstance(code, int) else 0
