"""The hostile-file corpus: mutated scenario files, each checked in a process of its own.

    python -m tests.scenario_corpus --files 1300 --seed 1 -j 2

Every file is made from a shipped scenario by one of ``tests/scenario_mutations.py``'s
mutators (byte flips, truncation, alias bombs, nesting, size, wrong types, YAML tags,
encodings, ...), then checked in a forked child, so that its time and memory are its own:

- ``seamspec validate FILE`` ends with exit 0 or 2, never a traceback, within 2 s of CPU
  (and 10 s of wall time, which only a hang breaks on a loaded machine) and 200 MB (how
  far validation raises the child's peak resident memory above what it inherited at the
  fork: a child forked from a large pytest worker starts with the worker's pages, which are
  not the file's doing); on exit 2 every problem line
  is ``FILE:LINE: message``;
- a file that validates is run on the reference, which must not end in ``error`` (the
  kit or the scenario broke, not the implementation) nor raise from the judges.

It prints the figures of docs/reliability.md (files and outcomes per mutator, the
slowest file, the largest peak) and exits 1 if any file breaks a promise, listing it
with the way to make it again (``--replay INDEX``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import multiprocessing
import random
import re
import resource
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from tests.scenario_mutations import MUTATORS, SEEDS, mutate

__all__ = ["Case", "Outcome", "cases", "check", "run_corpus"]

#: What one file may cost to validate (the issue's promise): CPU seconds, because on a
#: shared machine (load 12 on 2 cores while these figures were taken) wall time is the
#: scheduler's; and a wall-time bound far above it, which only a hang or a wait breaks.
MAX_SECONDS = 2.0
MAX_WALL_SECONDS = 10.0
MAX_MB = 200.0
#: The runner's limit for a valid file on the reference, and the parent's for a child.
RUN_TIMEOUT = 30.0
CHILD_LIMIT = RUN_TIMEOUT + 30.0
#: A guard, not a measurement: a runaway allocation stops here instead of at the machine's end.
ADDRESS_SPACE = 2 * 1024**3


@dataclass(frozen=True)
class Case:
    index: int
    seed: Path
    mutator: str
    rng_seed: int

    def data(self) -> bytes:
        return mutate(self.seed, self.mutator, random.Random(self.rng_seed))


@dataclass
class Outcome:
    case: Case
    exit: int | None = None
    seconds: float = 0.0
    cpu: float = 0.0  # CPU seconds: what the file costs, whatever else the machine does
    peak_mb: float = 0.0
    status: str | None = None  # the reference's, for a file that validated
    problems: list[str] = field(default_factory=list)
    violation: str | None = None


def cases(count: int, seed: int) -> Iterator[Case]:
    """``count`` cases, the mutators in turn, seed files and damage drawn from ``seed``."""
    names = sorted(MUTATORS)
    draw = random.Random(seed)
    for index in range(count):
        source = SEEDS[draw.randrange(len(SEEDS))]
        yield Case(index, source, names[index % len(names)], draw.randrange(2**32))


def _located(path: Path, err: str) -> str | None:
    """Why the problem lines of ``seamspec validate`` are not all ``FILE:LINE: ...``."""
    lines = [line for line in err.splitlines() if line]
    if not lines or not re.fullmatch(r"\d+ problem\(s\); \d+ valid scenario file\(s\)", lines[-1]):
        return f"no closing count line in: {err[-300:]!r}"
    located = re.compile(re.escape(str(path)) + r":\d+: \S")
    for line in lines[:-1]:
        if not located.match(line):
            return f"a problem without FILE:LINE: {line[:200]!r}"
    return None


def _status_kib(field: str) -> int:
    """One ``/proc/self/status`` figure in KiB (Linux; the corpus runs there)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak() -> int:
    """Reset the peak resident size to the current one and return it, in KiB.

    Why: ``ru_maxrss`` and ``VmHWM`` of a forked child start at the parent's resident
    size, so a child of a 240 MB pytest worker reported 240 MB for a file that used 2.
    Writing 5 to ``clear_refs`` resets the high-water mark to the current resident size.
    """
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kib("VmRSS")


def _child(path: Path, run: bool, answer: Connection) -> None:
    """In the forked child: validate, measure, then run on the reference if valid."""
    out: dict[str, Any] = {}
    inherited = _reset_peak()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, hard))
    err = io.StringIO()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        from seamspec._cli import main

        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            out["exit"] = main(["validate", str(path)])
    except BaseException:
        out["traceback"] = traceback.format_exc()
    out["seconds"] = time.perf_counter() - started
    out["cpu"] = time.process_time() - cpu
    out["peak_mb"] = max(_status_kib("VmHWM") - inherited, 0) / 1024
    out["err"] = err.getvalue()
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    if run and out.get("exit") == 0:
        try:
            from seamspec.conformance import Runner, load_adapter, load_scenarios

            (scenario,) = load_scenarios([path])
            adapter = load_adapter("reference")
            try:
                result = Runner(adapter, timeout=RUN_TIMEOUT).run_one(scenario)
            finally:
                adapter.close()
            out["status"], out["detail"] = result.status, result.detail[:2000]
        except BaseException:
            out["run_traceback"] = traceback.format_exc()
    answer.send(out)
    answer.close()


def check(case: Case, folder: Path, *, run: bool = True) -> Outcome:
    """Write ``case``'s file into ``folder`` and check it in a forked child."""
    workdir = folder / f"case-{case.index:05d}"
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / case.seed.name
    path.write_bytes(case.data())
    outcome = Outcome(case)
    receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_child, args=(path, run, send))
    child.start()
    send.close()
    got: dict[str, Any] | None = None
    if receive.poll(CHILD_LIMIT):
        with contextlib.suppress(EOFError):
            got = receive.recv()
    child.join(5)
    if child.is_alive():
        child.kill()
        child.join()
    if got is None:
        outcome.violation = (
            f"the child gave no answer within {CHILD_LIMIT:g} s (exit {child.exitcode})"
        )
        return outcome
    outcome.exit = got.get("exit")
    outcome.seconds, outcome.cpu, outcome.peak_mb = got["seconds"], got["cpu"], got["peak_mb"]
    outcome.status = got.get("status")
    err = got["err"]
    outcome.problems = [line for line in err.splitlines() if line][:-1]
    if "traceback" in got or "Traceback (most recent call last)" in err:
        outcome.violation = "a traceback: " + (got.get("traceback") or err)[-1500:]
    elif outcome.exit not in (0, 2):
        outcome.violation = f"exit {outcome.exit}, not 0 or 2"
    elif outcome.exit == 2 and (why := _located(path, err)):
        outcome.violation = why
    elif outcome.exit == 0 and err.strip():
        outcome.violation = f"exit 0 with a message: {err[:300]!r}"
    elif any("bug in seamspec" in line for line in outcome.problems):
        outcome.violation = "the kit failed while checking: " + outcome.problems[0][:500]
    elif outcome.cpu > MAX_SECONDS:
        outcome.violation = f"validation took {outcome.cpu:.2f} s of CPU (limit {MAX_SECONDS:g})"
    elif outcome.seconds > MAX_WALL_SECONDS:
        outcome.violation = f"validation took {outcome.seconds:.2f} s (limit {MAX_WALL_SECONDS:g})"
    elif outcome.peak_mb > MAX_MB:
        outcome.violation = f"peak memory {outcome.peak_mb:.0f} MB (limit {MAX_MB:g})"
    elif "run_traceback" in got:
        outcome.violation = "running it on the reference raised: " + got["run_traceback"][-1500:]
    elif outcome.status == "error":
        outcome.violation = "the reference ended in error: " + got.get("detail", "")[:1500]
    shutil.rmtree(workdir, ignore_errors=True)
    return outcome


def run_corpus(
    count: int, seed: int, *, jobs: int = 1, run: bool = True, only: int | None = None
) -> list[Outcome]:
    """Check ``count`` cases, ``jobs`` children at a time (threads only wait on children)."""
    from concurrent.futures import ThreadPoolExecutor

    chosen = [c for c in cases(count, seed) if only is None or c.index == only]
    for warm in ("seamspec._cli", "seamspec.conformance._implementations"):
        importlib.import_module(warm)  # once here, so that every forked child starts warm

    with tempfile.TemporaryDirectory(prefix="seamspec-corpus-") as folder:
        if jobs == 1:
            return [check(c, Path(folder), run=run) for c in chosen]
        with ThreadPoolExecutor(jobs) as pool:
            return list(pool.map(lambda c: check(c, Path(folder), run=run), chosen))


def figures(outcomes: list[Outcome]) -> str:
    """The table of docs/reliability.md, as Markdown."""
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        row = rows[o.case.mutator]
        row["files"] += 1
        row[f"exit {o.exit}"] += 1
        if o.status:
            row[o.status] += 1
        row["violations"] += o.violation is not None
    lines = [
        "| mutator | files | exit 2 | exit 0 | of those on the reference: pass / fail / skip | broken promises |",
        "|---|---|---|---|---|---|",
    ]
    total: Counter[str] = Counter()
    for name in sorted(rows):
        row = rows[name]
        total.update(row)
        lines.append(
            f"| {name} | {row['files']} | {row['exit 2']} | {row['exit 0']} | "
            f"{row['pass']} / {row['fail']} / {row['skip']} | {row['violations']} |"
        )
    lines.append(
        f"| **all** | **{total['files']}** | {total['exit 2']} | {total['exit 0']} | "
        f"{total['pass']} / {total['fail']} / {total['skip']} | **{total['violations']}** |"
    )
    slowest = max(outcomes, key=lambda o: o.seconds)
    busiest = max(outcomes, key=lambda o: o.cpu)
    largest = max(outcomes, key=lambda o: o.peak_mb)
    lines += [
        "",
        f"slowest validation: {slowest.seconds:.2f} s wall (case {slowest.case.index}, "
        f"{slowest.case.mutator}), {busiest.cpu:.2f} s CPU (case {busiest.case.index}, "
        f"{busiest.case.mutator}); largest peak memory: {largest.peak_mb:.0f} MB "
        f"(case {largest.case.index}, {largest.case.mutator}); limits {MAX_SECONDS:g} s of CPU, "
        f"{MAX_WALL_SECONDS:g} s wall, {MAX_MB:g} MB",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=1300, help="how many mutated files")
    parser.add_argument("--seed", type=int, default=1, help="the corpus's random seed")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="children at a time")
    parser.add_argument("--no-run", action="store_true", help="validate only, skip the runs")
    parser.add_argument("--replay", type=int, metavar="INDEX", help="check only this case")
    parser.add_argument("--write", type=Path, metavar="DIR", help="also write each file here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    outcomes = run_corpus(
        args.files, args.seed, jobs=args.jobs, run=not args.no_run, only=args.replay
    )
    if args.write:
        for o in outcomes:
            target = args.write / f"case-{o.case.index:05d}" / o.case.seed.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(o.case.data())
    print(figures(outcomes))
    print(f"\n{len(outcomes)} files in {time.perf_counter() - started:.0f} s (seed {args.seed})")
    broken = [o for o in outcomes if o.violation]
    for o in broken:
        print(
            f"\ncase {o.case.index} ({o.case.mutator} of {o.case.seed.name}; replay with "
            f"--seed {args.seed} --files {args.files} --replay {o.case.index}):\n  {o.violation}",
            file=sys.stderr,
        )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
