"""Fuzz every mutant over the wire protocol, and replay what was saved with ``seamspec run``.

For each mutant: ``seamspec fuzz --impl-cmd "seamspec serve-reference --impl mutant:NAME"``
on the mutant's contract, saving what it finds; then ``seamspec run`` over the wire on the
saved files, under the same profile, must count each file as fuzz did (failure, error,
warning or recommendation), and the reference must pass them. Exactly the commands a
harness author runs, so the check covers the command line and the protocol too.

    python tests/fuzz_mutants_wire.py --examples 500 --seed 1 -j 2     # every WOC and DR mutant
    python tests/fuzz_mutants_wire.py --contract shell-output woc-join-newline ...

Prints one line per mutant and exits 1 if any survived or replayed differently.
``tests/test_fuzz_wire.py`` runs it on representative mutants.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from seamspec.conformance._core.catalogue import catalogue
from seamspec.conformance._quality.mutants import all_mutants

#: The kind the fuzz command wrote in each saved file's first line.
_KIND = re.compile(r"^# Found by seamspec fuzz \((\w+);")


@dataclass
class MutantFuzz:
    name: str
    rule: str
    #: saved file name -> the kind fuzz found it as
    found: dict[str, str] = field(default_factory=dict)
    #: saved file name -> what run over the wire counted it as
    replayed: dict[str, str] = field(default_factory=dict)
    #: saved file name -> what run on the reference counted it as
    reference: dict[str, str] = field(default_factory=dict)
    problem: str = ""

    @property
    def ok(self) -> bool:
        return (
            bool(self.found)
            and not self.problem
            and self.replayed == self.found
            and all(v == "pass" for v in self.reference.values())
        )

    def line(self) -> str:
        if self.problem:
            return f"PROBLEM  {self.name} ({self.rule}): {self.problem}"
        if not self.found:
            return f"SURVIVED {self.name} ({self.rule})"
        kinds = ", ".join(sorted(set(self.found.values())))
        if self.ok:
            return f"found    {self.name} ({self.rule}): {kinds}; replayed the same over the wire"
        return (
            f"MISMATCH {self.name} ({self.rule}): fuzz found {self.found}, run over the wire "
            f"counted {self.replayed}, the reference {self.reference}"
        )


def _seamspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "seamspec", *args], capture_output=True, text=True, check=False
    )


def _counted(report: Path) -> dict[str, str]:
    data = json.loads(report.read_text(encoding="utf-8"))
    return {Path(r["file"]).name: r["counts_as"] for r in data["results"]}


def fuzz_mutant(name: str, *, examples: int, seed: int, profile: str, folder: Path) -> MutantFuzz:
    """Fuzz one mutant over the wire, then replay its saved findings with ``run``."""
    rule = all_mutants()[name].rule
    contract = catalogue()[rule].contract
    outcome = MutantFuzz(name, rule)
    served = shlex.join(
        [sys.executable, "-m", "seamspec", "serve-reference", "--impl", f"mutant:{name}"]
    )
    saved = folder / name
    fuzzed = _seamspec(
        "fuzz", "--impl-cmd", served, "--contract", contract, "--profile", profile,
        "--examples", str(examples), "--seed", str(seed), "--save-failures", str(saved),
    )  # fmt: skip
    if fuzzed.returncode not in (0, 1):
        outcome.problem = f"fuzz exited with {fuzzed.returncode}: {fuzzed.stderr.strip()[-500:]}"
        return outcome
    for path in sorted(saved.glob("*.yaml")):
        match = _KIND.match(path.read_text(encoding="utf-8"))
        outcome.found[path.name] = match.group(1) if match else "?"
    if not outcome.found:
        return outcome
    for where, args in (
        ("replayed", ["--impl-cmd", served]),
        ("reference", ["--impl", "reference"]),
    ):
        report = folder / f"{name}.{where}.json"
        ran = _seamspec(
            "run", *args, "--profile", profile, "--scenarios", str(saved), "-q",
            "--report-json", str(report),
        )  # fmt: skip
        if ran.returncode not in (0, 1):
            outcome.problem = f"run exited with {ran.returncode}: {ran.stderr.strip()[-500:]}"
            return outcome
        setattr(outcome, where, _counted(report))
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mutants", nargs="*", help="only these mutants (default: all chosen)")
    parser.add_argument(
        "--contract",
        action="append",
        help="mutants of this contract (default: write-observer-chain and dispatch-recorder)",
    )
    parser.add_argument("--examples", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", default="strict", choices=("upstream", "strict"))
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep the saved files and reports here")
    args = parser.parse_args(argv)
    contracts = args.contract or ["write-observer-chain", "dispatch-recorder"]
    names = args.mutants or sorted(
        n for n, m in all_mutants().items() if catalogue()[m.rule].contract in contracts
    )
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)

        def one(name: str) -> MutantFuzz:
            outcome = fuzz_mutant(
                name, examples=args.examples, seed=args.seed, profile=args.profile, folder=folder
            )
            print(outcome.line(), flush=True)
            return outcome

        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            outcomes = list(pool.map(one, names))
    bad = [o for o in outcomes if not o.ok]
    print(f"{len(outcomes) - len(bad)} of {len(outcomes)} mutants found and replayed", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
