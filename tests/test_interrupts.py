"""Ctrl-C at any moment: exit 130, no traceback, no process and no temporary file left.

A few trials per mode at seeded random moments (the 50-trial figures of
docs/reliability.md come from ``python tests/hostile_trials.py sigint``), and one at a
chosen moment: while a shell-output emitter waits on a gate the kit will never release,
which is what left processes polling forever before.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile_trials import SIGINT_MODES, Outcome, sigint_trial

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="counts leftovers through /proc"
)

TRIALS = 2
SLOW_GATE = """\
id: soo-slow-gate
title: An emitter waits on a gate while the kit waits for a callback that never comes
contract: shell-output
rules: [SOO-CANCEL]
level: MUST
tags: [cancel]
requires: [soo-process]
description: The kit waits (up to its limit) for a callback while the emitter waits on a gate.
given:
  observers:
  - name: pane
    on_output:
    - {}
when:
- start:
    id: a
    observer: pane
    script:
    - {wait: never}
    - {out: one}
- wait_entered: {observer: pane}
- {release: never}
- {join: a}
then:
  outputs:
    pane: {stdout: one}
"""


def _clean(outcome: Outcome) -> None:
    assert outcome.exit_code == 130, outcome.output[-3000:]
    assert not outcome.traceback, outcome.output[-3000:]
    assert outcome.leftovers == []
    assert outcome.temp_left == []


@pytest.mark.parametrize("mode", list(SIGINT_MODES))
def test_ctrl_c_at_random_moments(mode: str) -> None:
    rng = random.Random(f"{mode}-14")
    done = 0
    while done < TRIALS:
        outcome = sigint_trial(mode, rng.uniform(0.1, 3.0))
        if outcome.interrupted:
            _clean(outcome)
            done += 1


def test_ctrl_c_while_an_emitter_waits_on_a_gate(tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "soo-slow-gate.yaml").write_text(SLOW_GATE)
    marker = f"SEAMSPEC_TEST_MARKER={os.getpid()}-{time.monotonic_ns()}"
    temp = tmp_path / "tmp"
    temp.mkdir()
    kit = subprocess.Popen(
        [sys.executable, "-m", "seamspec", "run", "--scenarios", str(scenarios)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env=dict(os.environ, TMPDIR=str(temp), **dict([marker.split("=", 1)])),
    )  # fmt: skip
    assert kit.stdout is not None
    deadline = time.monotonic() + 60
    emitters: list[int] = []
    while not emitters:  # the emitter is up and waiting on its gate
        assert time.monotonic() < deadline
        assert kit.poll() is None, kit.communicate()[0]
        emitters = [
            int(entry.name)
            for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and _environ_has(entry, marker) and _is_emitter(entry)
        ]
        time.sleep(0.02)
    os.killpg(kit.pid, signal.SIGINT)
    out, _ = kit.communicate(timeout=30)
    assert kit.returncode == 130, out
    assert "Traceback" not in out
    assert not any(Path(f"/proc/{pid}").exists() and _running(pid) for pid in emitters)
    assert list(temp.iterdir()) == []


def _environ_has(entry: Path, marker: str) -> bool:
    try:
        return marker.encode() in (entry / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _is_emitter(entry: Path) -> bool:
    try:
        return b"_shell_output/emitter.py" in (entry / "cmdline").read_bytes()
    except OSError:
        return False


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_ctrl_c_while_the_kit_starts() -> None:
    """While the kit's modules load: one line, exit 130. ``-X importtime`` says when the
    entry point is in place, and when the heavy imports (rich) have begun."""
    kit = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "seamspec", "run", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    assert kit.stdout is not None
    seen = []
    for line in kit.stdout:
        seen.append(line)
        if line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == "rich":
            break
    os.killpg(kit.pid, signal.SIGINT)
    out = "".join(seen) + kit.communicate(timeout=60)[0]
    assert kit.returncode == 130, out[-3000:]
    assert seen[-1].rsplit("|", 1)[-1].strip() == "rich", "not interrupted while loading"
    assert "Traceback" not in out
    assert "error: interrupted" in out
