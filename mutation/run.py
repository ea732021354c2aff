"""Mutation testing of the reference with cosmic-ray, judged by the conformance suite alone.

For every module of ``mutation/modules.yaml``, cosmic-ray changes one thing at a time in
the module (a comparison, a boolean, a number, a decorator, an exception type...) and runs
that contract's scenarios against the changed reference (``seamspec run --contract C -q
-x``). A mutant the suite fails (or that hangs past the per-mutant limit) is killed; one
it passes survived, and is either a missing scenario or an equivalent mutant, listed
with its reason in ``mutation/equivalents.yaml``.

Why cosmic-ray and not mutmut: the source folders ``reference/`` and ``conformance/``
become ``seamspec.reference`` and ``seamspec.conformance`` only through setuptools'
package-dir mapping. mutmut 3 copies the folders it mutates into ``mutants/`` and names
their modules after the folders (``reference._dispatch_recorder...``), so the suite,
which imports ``seamspec.reference``, never runs its mutants; and it drives pytest in
process. cosmic-ray rewrites one file on disk and runs any command, so each module gets
a session of its own in a staged copy of the package (``<work>/<module>/stage/seamspec``,
put first on ``PYTHONPATH``), and two sessions run side by side without seeing each
other's mutants.

Usage::

    python mutation/run.py                         # every module, 2 at a time
    python mutation/run.py --module turn_loop.py   # one module
    python mutation/run.py --module executor.py --sample 8 --seed 1   # a fixed sample
    python mutation/run.py --update-doc docs/quality.md  # also rewrite the docs table
    python mutation/run.py --update-doc docs/quality.md --doc-only --carry-over
        # the docs table from the saved runs; modules without a fresh one keep their old row

Exit codes: 0 every module scored at least ``--fail-under``; 1 one did not, or a listed
equivalent was killed; 2 a usage error, a stale equivalents list, or a baseline that fails.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import cosmic_ray.plugins
import report
from cosmic_ray.mutating import mutate_code
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult
from selection import (
    Equivalent,
    ModuleSpec,
    Mutant,
    SelectionError,
    classify,
    load_equivalents,
    load_modules,
    sample,
)

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
#: The source folders the package is made of, and their names inside ``seamspec``.
_TREES = {"reference": "reference", "conformance": "conformance", "scenarios": "scenarios"}


class BaselineError(RuntimeError):
    """The suite fails on the unmutated staged copy, or imports the wrong copy."""


def _stage(spec: ModuleSpec, work: Path) -> Path:
    """A private copy of the package, so that concurrent sessions never share a file."""
    stage = work / "stage"
    if stage.exists():
        shutil.rmtree(stage)
    package = stage / "seamspec"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "seamspec", package, ignore=ignore)
    for source, name in _TREES.items():
        shutil.copytree(ROOT / source, package / name, ignore=ignore)
    # Byte-compile everything once so each test run starts fast; the mutated module gets
    # no cache (the test runs write none: cosmic-ray sets PYTHONDONTWRITEBYTECODE), so a
    # mutant of the same size written within the same second cannot hit a stale one.
    compileall.compile_dir(str(package), quiet=1, workers=1)
    target = package / Path(spec.path).relative_to(Path(spec.path).parts[0])
    for cached in (target.parent / "__pycache__").glob(f"{target.stem}.*.pyc"):
        cached.unlink()
    return stage


def _target(spec: ModuleSpec) -> str:
    """The mutated file, relative to the stage: ``seamspec/reference/_room/module.py``."""
    return str(
        Path("seamspec") / _TREES[Path(spec.path).parts[0]] / Path(*Path(spec.path).parts[1:])
    )


def _env(stage: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(stage), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _test_command(spec: ModuleSpec, scenario_timeout: float) -> list[str]:
    """The contract's scenarios, under the strict profile: the reference follows
    seamspec's own decisions too (SHOULD rules included), so breaking one is a regression
    of the reference that the suite reports; the upstream profile would only warn."""
    return [
        sys.executable, "-m", "seamspec", "run", "--contract", spec.contract,
        "--profile", "strict", "-q", "-x", "--timeout", str(scenario_timeout),
    ]  # fmt: skip


def _baseline(spec: ModuleSpec, stage: Path, command: list[str]) -> float:
    """Run the suite once on the unmutated copy; it must pass and import the copy."""
    probe = [sys.executable, "-c", "import seamspec.reference as r; print(r.__file__)"]
    where = subprocess.run(
        probe, cwd=stage, env=_env(stage), capture_output=True, text=True, check=False
    )
    expected = stage / "seamspec" / "reference" / "__init__.py"
    if where.returncode != 0 or Path(where.stdout.strip()) != expected:
        raise BaselineError(
            f"{spec.key}: the staged copy is not what Python imports "
            f"({where.stdout.strip() or where.stderr.strip()}, expected {expected})"
        )
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=stage, env=_env(stage), capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise BaselineError(
            f"{spec.key}: the suite fails on the unmutated reference (exit {done.returncode}):\n"
            + (done.stdout + done.stderr)[-2000:]
        )
    return seconds


def _write_config(path: Path, spec: ModuleSpec, command: list[str], timeout: float) -> None:
    path.write_text(
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(_target(spec))}\n"
        f"timeout = {timeout:.1f}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(shlex.join(command))}\n"
        "\n[cosmic-ray.distributor]\n"
        'name = "local"\n',
        encoding="utf-8",
    )


def _cosmic_ray(stage: Path, *args: str, log: Path) -> None:
    command = [sys.executable, "-m", "cosmic_ray.cli", *args]
    with log.open("a", encoding="utf-8") as out:
        done = subprocess.run(
            command, cwd=stage, env=_env(stage), stdout=out, stderr=out, check=False
        )
    if done.returncode != 0:
        raise RuntimeError(f"cosmic-ray {args[0]} failed (exit {done.returncode}); see {log}")


def _mutated_lines(
    source: str, proposals: list[tuple[str, str, int, Any, Any]]
) -> dict[str, str | None]:
    """Each job's mutated line (stripped), or None if its mutated module does not compile."""
    lines = source.splitlines()
    found: dict[str, str | None] = {}
    for job_id, operator_name, occurrence, start, _ in proposals:
        operator = cosmic_ray.plugins.get_operator(operator_name)()
        mutated = mutate_code(source, operator, occurrence)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)  # `x is 0`: still a mutant
                compile(mutated or source, "<mutant>", "exec", dont_inherit=True)
        except SyntaxError:
            found[job_id] = None
            continue
        after = (mutated or source).splitlines()
        found[job_id] = after[start[0] - 1].strip() if len(after) == len(lines) else "<removed>"
    return found


def _skip(db: WorkDB, mutants: list[Mutant], why: str) -> None:
    if mutants:
        db.set_multiple_results(
            [m.job_id for m in mutants],
            WorkResult(output=why, worker_outcome=WorkerOutcome.SKIPPED),
        )


def run_module(
    spec: ModuleSpec,
    equivalents: list[Equivalent],
    open_entries: list[Equivalent],
    work_root: Path,
    *,
    sample_size: int | None,
    seed: int,
    scenario_timeout: float,
) -> report.ModuleResult:
    started = time.perf_counter()
    work = _work_dir(work_root, spec)
    work.mkdir(parents=True, exist_ok=True)
    log = work / "cosmic-ray.log"
    log.write_text("", encoding="utf-8")
    stage = _stage(spec, work)
    command = _test_command(spec, scenario_timeout)
    result = report.ModuleResult(spec)
    result.baseline_seconds = _baseline(spec, stage, command)
    # A mutant gets five times the healthy suite's time (at least 30 s) before it counts
    # as hung; -x ends most runs at the first failing scenario long before that.
    config = stage / "cosmic-ray.toml"
    _write_config(config, spec, command, max(30.0, 5 * result.baseline_seconds))
    session = work / "session.sqlite"
    session.unlink(missing_ok=True)
    _cosmic_ray(stage, "init", str(config), str(session), log=log)
    source = (ROOT / spec.path).read_text(encoding="utf-8")
    with use_db(str(session), WorkDB.Mode.open) as db:
        proposals = []
        for item in db.work_items:
            (mutation,) = item.mutations
            proposals.append(
                (item.job_id, mutation.operator_name, mutation.occurrence,
                 tuple(mutation.start_pos), tuple(mutation.end_pos))
            )  # fmt: skip
        verdict = classify(
            spec,
            source,
            proposals,
            equivalents,
            open_entries=open_entries,
            mutated=_mutated_lines(source, proposals),
        )
        result.open = verdict.open
        result.proposed = len(proposals)
        result.annotations = len(verdict.annotations)
        result.out_of_scope = len(verdict.out_of_scope)
        result.equivalent = verdict.equivalent
        result.invalid = len(verdict.invalid)
        _skip(db, verdict.annotations, "not run: inside a type annotation")
        _skip(db, verdict.invalid, "not run: the mutated module is no valid Python")
        _skip(db, verdict.out_of_scope, "not run: outside the module's scope")
        for mutant, entry in verdict.equivalent:
            _skip(db, [mutant], f"equivalent: {entry.reason}")
        chosen = verdict.run
        if sample_size is not None:
            chosen = sample(verdict.run, sample_size, seed)
            left = [m for m in verdict.run if m not in chosen]
            result.not_sampled = len(left)
            _skip(db, left, f"not run: not in the sample (size {sample_size}, seed {seed})")
    _cosmic_ray(stage, "exec", str(config), str(session), log=log)
    by_job = {m.job_id: m for m in chosen}
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, outcome in db.completed_work_items:
            found = by_job.get(item.job_id)
            if found is None:
                continue
            mutant = found
            if outcome.worker_outcome != WorkerOutcome.NORMAL:
                result.broken.append((mutant, f"{outcome.worker_outcome}: {outcome.output}"))
            elif outcome.test_outcome == TestOutcome.SURVIVED:
                result.survived.append((mutant, outcome.diff or ""))
            elif outcome.test_outcome == TestOutcome.KILLED:
                result.killed.append(mutant)
                result.timeouts += outcome.output == "timeout"
            else:
                result.broken.append((mutant, f"{outcome.test_outcome}: {outcome.output}"))
    missing = len(chosen) - len(result.killed) - len(result.survived) - len(result.broken)
    if missing:
        raise RuntimeError(f"{spec.key}: {missing} mutants have no result; see {log}")
    result.survived.sort(key=lambda pair: (pair[0].line, pair[0].col))
    result.seconds = time.perf_counter() - started
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", default=[], help="a module (path, or its end)")
    parser.add_argument(
        "-j", "--jobs", type=int, default=2, help="sessions side by side (default 2)"
    )
    parser.add_argument("--sample", type=int, metavar="N", help="run only N mutants per module")
    parser.add_argument("--seed", type=int, default=20261201, help="seed of --sample")
    parser.add_argument("--fail-under", type=float, default=90.0, metavar="PERCENT")
    parser.add_argument("--scenario-timeout", type=float, default=10.0, metavar="SECONDS")
    parser.add_argument(
        "--work",
        type=Path,
        help="where sessions and saved runs go (default reports/mutation, or "
        "reports/mutation-sample with --sample, so a sample never replaces a whole run)",
    )
    parser.add_argument(
        "--update-doc",
        type=Path,
        metavar="MARKDOWN",
        help="write the docs section from every module's last saved whole run (refused if "
        "one is stale); with --doc-only, without running anything first",
    )
    parser.add_argument("--doc-only", action="store_true", help="with --update-doc: run nothing")
    parser.add_argument(
        "--carry-over",
        action="store_true",
        help="with --update-doc: a module with no fresh whole run keeps its row (and "
        "survivors) from the document, marked as not rerun with the date of its figures, "
        "instead of refusing the update",
    )
    args = parser.parse_args(argv)
    try:
        specs = load_modules(HERE / "modules.yaml", ROOT)
        equivalents = load_equivalents(HERE / "equivalents.yaml")
        open_entries = load_equivalents(HERE / "equivalents.yaml", key="open")
    except SelectionError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.module:
        wanted = [s for s in specs if any(s.path.endswith(m) for m in args.module)]
        unknown = [m for m in args.module if not any(s.path.endswith(m) for s in specs)]
        if unknown:
            print(f"error: no listed module ends with {', '.join(unknown)}", file=sys.stderr)
            return 2
        specs = wanted
    if args.update_doc and args.sample is not None:
        print("error: --update-doc needs whole runs, not --sample", file=sys.stderr)
        return 2
    if args.work is None:
        args.work = (
            ROOT / "reports" / ("mutation-sample" if args.sample is not None else "mutation")
        )
    args.work = args.work.resolve()
    # taken before the run: the tree may move on while a long run goes
    stamp = {"commit": _commit(), "date": time.strftime("%Y-%m-%d", time.gmtime())}
    prints = {spec.key: fingerprint(spec, equivalents, open_entries) for spec in specs}
    args.work.mkdir(parents=True, exist_ok=True)

    def one(spec: ModuleSpec) -> report.ModuleResult:
        result = run_module(
            spec, equivalents, open_entries, args.work,
            sample_size=args.sample, seed=args.seed, scenario_timeout=args.scenario_timeout,
        )  # fmt: skip
        print(report.progress_line(result), flush=True)
        return result

    if args.update_doc and args.doc_only:
        specs = []
    try:
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            results = list(pool.map(one, specs))
    except (SelectionError, BaselineError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    problems = report.problems(results, args.fail_under)
    if results:
        rows = report.as_json(results)
        for spec, row in zip(specs, rows, strict=True):
            row.update(stamp, fingerprint=prints[spec.key])
            (_work_dir(args.work, spec) / "result.json").write_text(
                json.dumps(row, indent=2) + "\n", encoding="utf-8"
            )
        print()
        print(report.markdown_table(rows))
        print(report.survivors_text(results))
    if args.update_doc:
        missing: list[tuple[str, str]] = []
        try:
            saved = _saved_rows(
                args.work, equivalents, open_entries, ROOT,
                missing=missing if args.carry_over else None,
            )  # fmt: skip
        except SelectionError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        carried = report.carried_modules(args.update_doc, missing, stamp["date"])
        report.update_doc(args.update_doc, saved, equivalents, carried)
        for module, why in missing:
            print(f"not rerun, carried over from the document: {module} ({why})")
        print(f"wrote the mutation section of {args.update_doc}")
    for problem in problems:
        print(f"FAIL: {problem}")
    return 1 if problems else 0


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], check=False, cwd=ROOT, capture_output=True, text=True
    )
    commit = done.stdout.strip() or "unknown"
    return commit + ("+changes" if dirty.stdout.strip() else "")


def _work_dir(work: Path, spec: ModuleSpec) -> Path:
    return work / spec.key.replace("/", "__")


def fingerprint(
    spec: ModuleSpec, equivalents: list[Equivalent], open_entries: list[Equivalent]
) -> str:
    """What a module's result depends on: its room's reference code, the contract's
    scenarios and kit room, the kit core, and the module's entries in equivalents.yaml.
    A saved result whose fingerprint differs from today's tree is stale."""
    room = Path(spec.path).parent
    kit_room = Path("conformance/_contracts") / spec.contract.replace("-", "_")
    folders = [room, kit_room, Path("conformance/_core"), Path("scenarios") / spec.contract]
    mine = sorted(
        repr(e) + (f" x{e.count}" if e.count != 1 else "")
        for e in equivalents + open_entries
        if e.module == spec.key
    )
    digest = hashlib.sha256(repr((spec, mine, _test_command(spec, 0)[1:])).encode())
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _saved_rows(
    work: Path,
    equivalents: list[Equivalent],
    open_entries: list[Equivalent],
    root: Path,
    *,
    missing: list[tuple[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """Every listed module's last whole run; refused if one is missing, sampled or stale.

    With ``missing`` given, such a module is appended to it as (module path, why)
    instead, for the caller to carry over its figures from the document, marked as old.
    """
    rows = []
    for spec in load_modules(HERE / "modules.yaml", root):
        saved = _work_dir(work, spec) / "result.json"
        row = json.loads(saved.read_text(encoding="utf-8")) if saved.is_file() else None
        if row is None:
            why = "no saved run"
            hint = f"{spec.key} has no saved run; run it with --module {spec.key}"
        elif row.get("not_sampled"):
            why = "only a sample was run"
            hint = f"{spec.key}: the saved run is a sample; run it whole"
        elif row.get("fingerprint") != fingerprint(spec, equivalents, open_entries):
            why = f"its run of {row.get('date')} is stale"
            hint = (
                f"{spec.key}: the saved run is stale (the code, the scenarios or the "
                f"equivalents changed since); run it again with --module {spec.key}"
            )
        else:
            rows.append(row)
            continue
        if missing is None:
            raise SelectionError(hint)
        missing.append((spec.path, why))
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
