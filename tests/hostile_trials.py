"""Trials of the kit against hostile implementations and Ctrl-C, with the figures they give.

Two kinds, each runnable on its own (the figures in docs/reliability.md come from here)::

    python tests/hostile_trials.py memory              # every hostile mode, peak kit memory
    python tests/hostile_trials.py sigint --trials 50  # Ctrl-C at random moments, leftovers

``memory`` runs ``seamspec run --impl-cmd`` against each hostile mode of
``tests/wire_fakes/fake_impl.py`` and reads the kit's peak resident memory (VmHWM,
polled every 10 ms until it exits). ``sigint`` starts ``seamspec run`` in a process
group of its own, as a terminal would, sends SIGINT to the whole group at a random
moment, and then looks for what is left: processes carrying the trial's marker in their
environment (every descendant inherits it, ``setsid()`` or not) and anything in the
private TMPDIR the trial gave the kit.

The test suite imports :func:`memory_trial` and :func:`sigint_trial` and runs a few.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKE = Path(__file__).resolve().parent / "wire_fakes" / "fake_impl.py"
KIT = [sys.executable, "-m", "seamspec"]
MIB = 1024 * 1024

#: The Ctrl-C trial modes: what ``seamspec run`` is asked to do when the signal comes.
SIGINT_MODES: dict[str, list[str]] = {
    "in-process": ["run", "-q", "--contract", "shell-output"],
    "jobs-2": ["run", "-q", "--contract", "shell-output", "-j", "2"],
    "wire": [
        "run", "-q", "--contract", "shell-output",
        "--impl-cmd", f"{sys.executable} -m seamspec serve-reference",
    ],
}  # fmt: skip

#: Hostile modes of the fake implementation, with the argument each takes.
MEMORY_MODES: dict[str, str] = {
    "huge-stdout-line": str(1024 * MIB),  # 1 GiB on stdout, no newline
    "huge-stderr-line": str(3 * 1024 * MIB),  # 3 GiB on stderr, no newline
    "stdout-flood": "",  # endless short lines after the answer
    "wide": str(30 * MIB),  # a valid line of 30 MiB made of tiny objects
    "deep": str(1_000_000),  # a line nested a million levels deep
    "duplicate": "",
    "duplicate-late": "",
    "seqless-error": "",
    "seqless-error-late": "",
    "seqless-answer": "",
    "chatty-stop": "",
    "setsid-grandchild": "",
}


@dataclass
class Outcome:
    exit_code: int | None
    output: str
    seconds: float
    peak_mb: float = 0.0
    leftovers: list[str] = field(default_factory=list)
    late_leftovers: list[str] = field(default_factory=list)
    temp_left: list[str] = field(default_factory=list)
    interrupted: bool = True

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.output


def _marked(marker: str) -> list[str]:
    """Live processes (zombies excluded) whose environment holds ``marker``."""
    found = []
    needle = f"SEAMSPEC_TRIAL_MARKER={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            found.append(f"{entry.name} {(entry / 'cmdline').read_bytes()[:120]!r}")
        except OSError:
            continue
    return found


def _kill_marked(marker: str) -> None:
    """Clean up after a trial that left processes (so the next trial starts clean)."""
    for line in _marked(marker):
        with contextlib.suppress(OSError):
            os.kill(int(line.split()[0]), signal.SIGKILL)


def _peak_rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _start(
    argv: list[str], marker: str, tmp: Path, entered: threading.Event | None = None
) -> tuple[subprocess.Popen[bytes], list[bytes]]:
    """Start the kit; with ``entered``, under ``-X importtime``, set once the command's
    entry point (seamspec._entry, which puts the Ctrl-C handling in place) is imported."""
    env = dict(os.environ, SEAMSPEC_TRIAL_MARKER=marker, TMPDIR=str(tmp))
    env.pop("PYTEST_XDIST_WORKER", None)
    if entered is not None:
        argv = [argv[0], "-X", "importtime", *argv[1:]]
    kit = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    chunks: list[bytes] = []
    assert kit.stdout is not None
    out = kit.stdout

    def read() -> None:
        kept = []
        for line in out:
            if line.startswith(b"import time:"):
                if entered is not None and line.rsplit(b"|", 1)[-1].strip() == b"seamspec._entry":
                    entered.set()
                continue
            kept.append(line)
        chunks.append(b"".join(kept))

    threading.Thread(target=read, daemon=True).start()
    return kit, chunks


def _finish(
    kit: subprocess.Popen[bytes], chunks: list[bytes], t0: float, limit: float
) -> tuple[int | None, float, str]:
    """Wait for the kit; the exit code (None: it hung and was killed) and its output."""
    peak = 0
    deadline = time.monotonic() + limit
    code: int | None = None
    while time.monotonic() < deadline:
        peak = max(peak, _peak_rss_kb(kit.pid))
        pid, status, _usage = os.wait4(kit.pid, os.WNOHANG)
        if pid:
            code = os.waitstatus_to_exitcode(status)
            kit.returncode = code
            # Not usage.ru_maxrss: it also counts what the process held before exec, a
            # copy of this (possibly large) process when the child was forked.
            break
        time.sleep(0.01)
    else:
        os.killpg(kit.pid, signal.SIGKILL)
        kit.wait()
    if kit.stdout is not None:
        for _ in range(200):
            if chunks:
                break
            time.sleep(0.01)
    output = b"".join(chunks).decode("utf-8", "replace")
    return code, peak / 1024, output


def memory_trial(
    mode: str, argument: str, *, pattern: str = "woc-c*", extra: list[str] | None = None
) -> Outcome:
    """``seamspec run --impl-cmd`` against one hostile mode; the kit's peak memory."""
    marker = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="seamspec-trial-") as tmp:
        command = f"{sys.executable} {FAKE} {mode} {argument}".strip()
        argv = [
            *KIT, "run", "--contract", "write-observer-chain", "-k", pattern,
            "--impl-cmd", command, "--request-timeout", "60", *(extra or []),
        ]  # fmt: skip
        t0 = time.monotonic()
        kit, chunks = _start(argv, marker, Path(tmp))
        code, peak, output = _finish(kit, chunks, t0, 300)
        outcome = Outcome(code, output, time.monotonic() - t0, peak)
        outcome.leftovers = _marked(marker)
        _kill_marked(marker)
        outcome.temp_left = sorted(os.listdir(tmp))
    return outcome


def sigint_trial(mode: str, delay: float) -> Outcome:
    """One Ctrl-C, ``delay`` seconds after ``seamspec run`` started, and what it left."""
    marker = uuid.uuid4().hex
    tmp = Path(tempfile.mkdtemp(prefix="seamspec-trial-"))
    try:
        entered = threading.Event()
        kit, chunks = _start([*KIT, *SIGINT_MODES[mode]], marker, tmp, entered)
        # The clock starts once seamspec's entry point is in place: before it, the
        # interpreter itself is starting (site, the editable install's finder).
        entered.wait(30)
        t0 = time.monotonic()
        time.sleep(delay)
        interrupted = kit.poll() is None
        if interrupted:
            os.killpg(kit.pid, signal.SIGINT)
        code, _peak, output = _finish(kit, chunks, t0, 60)
        outcome = Outcome(code, output, time.monotonic() - t0, interrupted=interrupted)
        outcome.leftovers = _marked(marker)
        if outcome.leftovers:
            time.sleep(5)  # would they end on their own (an emitter seeing its gates gone)?
            outcome.late_leftovers = _marked(marker)
        _kill_marked(marker)
        outcome.temp_left = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return outcome


def _memory_main(_args: argparse.Namespace) -> int:
    worst = 0.0
    print("| hostile mode | argument | kit peak RSS | exit | what the kit said |")
    print("|---|---|---|---|---|")
    for mode, argument in MEMORY_MODES.items():
        outcome = memory_trial(mode, argument)
        worst = max(worst, outcome.peak_mb)
        said = next(
            (
                line.strip()
                for line in outcome.output.splitlines()
                if "the implementation" in line and "(--max-restarts" not in line
            ),
            outcome.output.strip().splitlines()[-1] if outcome.output.strip() else "",
        )
        print(
            f"| `{mode}` | {argument or '-'} | {outcome.peak_mb:.0f} MB | {outcome.exit_code} "
            f"| {said[:150]} |"
        )
        for problem in (
            ["traceback in the output"] * outcome.traceback
            + [f"left a process: {p}" for p in outcome.leftovers]
            + [f"left in TMPDIR: {p}" for p in outcome.temp_left]
        ):
            print(f"  PROBLEM {mode}: {problem}")
    print(f"worst peak: {worst:.0f} MB")
    return 0 if worst <= 256 else 1


def _sigint_main(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    bad = 0
    for mode in args.mode or list(SIGINT_MODES):
        counts = {"trials": 0, "finished first": 0, "exit 130": 0, "tracebacks": 0}
        leftovers = late = temp = hung = 0
        while counts["trials"] < args.trials:
            delay = rng.uniform(args.earliest, args.latest)
            outcome = sigint_trial(mode, delay)
            if not outcome.interrupted:
                counts["finished first"] += 1
                continue
            counts["trials"] += 1
            counts["exit 130"] += outcome.exit_code == 130
            counts["tracebacks"] += outcome.traceback
            hung += outcome.exit_code is None
            leftovers += bool(outcome.leftovers)
            late += bool(outcome.late_leftovers)
            temp += bool(outcome.temp_left)
            if (
                outcome.exit_code != 130
                or outcome.traceback
                or outcome.leftovers
                or outcome.temp_left
            ):
                bad += 1
                print(
                    f"  {mode} at {delay:.2f} s: exit {outcome.exit_code}; "
                    f"leftovers {outcome.leftovers}; temp {outcome.temp_left[:5]}"
                )
                if outcome.traceback or args.verbose:
                    print("    " + "\n    ".join(outcome.output.splitlines()[-15:]))
        print(
            f"{mode}: {counts['trials']} trials (SIGINT {args.earliest:g}-{args.latest:g} s after "
            f"the entry point; {counts['finished first']} runs finished first, not counted): "
            f"exit 130 in {counts['exit 130']}, tracebacks in {counts['tracebacks']}, "
            f"hung {hung}, leftover processes in {leftovers} ({late} still there 5 s later), "
            f"leftover temp files in {temp}"
        )
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    memory = sub.add_parser("memory", help="every hostile mode: the kit's peak memory")
    memory.set_defaults(func=_memory_main)
    sigint = sub.add_parser("sigint", help="Ctrl-C at random moments: exit codes, leftovers")
    sigint.add_argument("--trials", type=int, default=50, help="interrupted trials per mode")
    sigint.add_argument("--mode", action="append", choices=list(SIGINT_MODES))
    sigint.add_argument("--seed", type=int, default=14)
    sigint.add_argument(
        "--earliest", type=float, default=0.0, help="seconds after the entry point is in place"
    )
    sigint.add_argument("--latest", type=float, default=4.0, help="seconds, likewise")
    sigint.add_argument("-v", "--verbose", action="store_true")
    sigint.set_defaults(func=_sigint_main)
    args = parser.parse_args()
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
