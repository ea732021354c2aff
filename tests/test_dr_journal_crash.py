"""Crash durability of the journal: SIGKILL at random moments, hundreds of times.

A child process records mutations as fast as it can (several concurrent records, so
group commit is exercised) and says ``ack <id>`` after every ``record`` that returned OK.
It is killed with SIGKILL at a random moment. After every kill, every acknowledged entry
must be in the journal and verify; the journal may also hold entries that were never
acknowledged (written, not yet fsync'd), and may end in a torn tail, which must be
reported and never counted. The next trial reopens the same journal, which must drop the
torn tail and append after the last good entry.

(SIGKILL loses no page-cache data, so this proves the write/ack ordering and recovery,
not the fsync itself; DR-JOURNAL-DURABLE's fsync-before-OK is checked by the scenarios,
which observe every fsync.)
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from seamspec.reference import generate_keypair, load_public_key, scan_journal
from seamspec.reference._dispatch_recorder.journal_format import may_be_entry

TRIALS = 200
#: Trials that reopen (and recover) the same journal before a fresh one is started.
REOPENS = 5
SERVER = Path(__file__).with_name("journal_crash_server.py")


def test_acknowledged_records_survive_sigkill(tmp_path: Path) -> None:
    key, pub = tmp_path / "j.key", tmp_path / "j.pub"
    generate_keypair(key, pub)
    public = load_public_key(pub)
    journal = tmp_path / "dispatch.journal"
    total = 0
    rng = random.Random(20261130)
    server = subprocess.Popen(
        [sys.executable, str(SERVER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    acked: list[str] = []
    torn_seen = recovered = 0
    try:
        for trial in range(TRIALS):
            if trial % REOPENS == 0:  # a fresh journal now and then keeps verification cheap
                journal, acked = tmp_path / f"dispatch-{trial}.journal", []
            server.stdin.write(f"trial {journal} {key} t{trial} {rng.choice((1, 4, 16))}\n")
            server.stdin.flush()
            pid_line = server.stdout.readline().split()
            assert pid_line[0] == "pid", pid_line
            early: list[str] = []
            if rng.random() < 0.8:  # most kills land while records flow; some during open
                early.append(server.stdout.readline())
            time.sleep(rng.uniform(0.0, 0.02))  # a random moment, not an ordering device
            os.kill(int(pid_line[1]), signal.SIGKILL)
            for line in itertools.chain(early, iter(server.stdout.readline, "")):
                word, _, rest = line.strip().partition(" ")
                if word == "done":
                    break
                if word == "ack":
                    acked.append(rest)
                    total += 1
                elif word == "recovered":
                    recovered += 1
                else:
                    raise AssertionError(f"the child reported {line!r}")
            data = journal.read_bytes() if journal.exists() else b""
            found = scan_journal(data, public)
            ids = [e.mutation["tool_call_id"] for e in found.entries]
            # A kill can also stop a batch's write just before a newline: the last line is
            # then whole but unterminated, which the format calls damage, not a torn tail
            # (it might be an acknowledged line whose newline was lost). It was never
            # acknowledged: the check below finds every acknowledged record among the
            # valid entries before it.
            lost_newline = (
                not found.ok
                and not found.torn_tail
                and found.bad_index == len(found.entries)
                and may_be_entry(data[found.valid_bytes :])
            )
            assert found.ok or found.torn_tail or lost_newline, f"trial {trial}: {found.reason}"
            missing = set(acked) - set(ids)
            assert not missing, f"trial {trial}: acknowledged but lost: {sorted(missing)[:5]}"
            if found.torn_tail:
                torn_seen += 1
                assert found.bad_index == len(found.entries)
                assert found.valid_bytes < len(data)
    finally:
        server.stdin.close()
        server.wait(timeout=10)
    print(
        f"{TRIALS} kills: {total} acknowledged records, {torn_seen} torn tails, {recovered} recoveries"
    )
    assert total > TRIALS, "the children hardly recorded anything: the test proves little"
    assert torn_seen > 0, "no kill ever tore an entry: the torn-tail path went untested"
    assert recovered > 0, "no reopen ever recovered a torn tail"
