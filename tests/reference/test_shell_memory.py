"""A stuck observer costs about its budget in memory, however small the child's writes.

Each short line a child writes can come out of its pipe as a chunk of its own. Queued
one allocation each (a 1 MiB read buffer shrunk to the line, often a memory mapping of
its own), 150,000 lines to a blocked observer once cost the parent over 100 MiB and tens
of thousands of mappings, close to Linux's per-process limit (``vm.max_map_count``),
against a 1 MiB budget. The measurement runs in a fresh interpreter, so its peak resident
size (``VmHWM``) and its mappings are this command's alone. The bounds are generous: this
is a memory test, not a timing test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = r"""
import json, sys, threading
from pathlib import Path
import anyio
from seamspec.reference import ShellRunner

LINES = (
    "import os, time\n"
    "for i in range(150000):\n"
    "    os.write(1, b'line %06d\\n' % i)\n"
    "    end = time.perf_counter() + 5e-6\n"
    "    while time.perf_counter() < end:\n"
    "        pass\n"
)

def proc_self():
    status = Path("/proc/self/status").read_text().splitlines()
    values = {k: int(v.split()[0]) for k, _, v in (l.partition(":") for l in status)
              if k in ("VmRSS", "VmHWM")}
    values["maps"] = len(Path("/proc/self/maps").read_text().splitlines())
    return values

async def main():
    gate = threading.Event()
    chunks = []
    def stuck(invocation, stream, chunk):
        chunks.append(len(chunk))
        gate.wait()
    runner = ShellRunner()  # budget = cap = 1 MiB per stream
    before = proc_self()
    result = await runner.run([sys.executable, "-I", "-c", LINES], observer=stuck)
    during = proc_self()
    gate.set()
    assert runner.wait_idle(60)
    print(json.dumps({
        "before": before, "during": during, "delivered": sum(chunks),
        "stdout": len(result.stdout), "truncated": result.stdout_truncated,
    }))

anyio.run(main)
"""

MIB_KIB = 1024


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_stuck_observer_and_150000_short_lines_cost_about_the_budget() -> None:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True
    )
    data = json.loads(probe.stdout)
    before, during = data["before"], data["during"]
    # Everything the budget allowed was delivered once released, and the result is whole.
    assert data["delivered"] == 1024 * 1024
    assert data["stdout"] == 1024 * 1024
    assert data["truncated"]
    # 1 MiB queued + 1 MiB result + buffers: a few MiB. Bound: 16 MiB (it was > 30 MiB).
    grown_kib = during["VmHWM"] - before["VmRSS"]
    assert grown_kib < 16 * MIB_KIB, f"peak RSS grew {grown_kib} KiB"
    # A few dozen new mappings (thread stacks, buffers); it was thousands.
    assert during["maps"] - before["maps"] < 500, (before["maps"], during["maps"])
