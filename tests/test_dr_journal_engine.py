"""The journal engine's concurrency promises, made deterministic with gates, not sleeps.

- Entries sign in parallel and out of order, yet land in sequence order.
- A single writer (the default) takes everything queued behind a batch at once, and a
  signature failing in a batch fails it and what follows, never an entry before it.
- A signature that fails fails its entry and every entry chained behind it, never one
  before it; the chain then resumes from the last good entry.
- A caller cancelled while waiting gets no outcome, and the entry still lands and
  verifies (a journal may hold entries never acknowledged, never the reverse), even
  when its event loop has ended by the time the entry settles.
- The line written is exactly the canonical encoding of the entry.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from hypothesis import given
from hypothesis import strategies as st

from seamspec.reference import (
    DOMAIN,
    DispatchMutation,
    InputRewrite,
    JournalRecorder,
    KeySigner,
    generate_keypair,
    scan_journal,
)
from seamspec.reference._dispatch_recorder.journal_format import (
    canonical,
    encode_entry,
    genesis_hash,
    signed_bytes,
)
from seamspec.reference._dispatch_recorder.journal_writer import JournalWriter

#: A safety bound for waits on gates: reached only if the code under test is broken.
LIMIT = 10.0


class GatedSigner:
    """Holds the entries in ``hold`` until released; fails each of ``fail`` once."""

    def __init__(
        self,
        inner: KeySigner,
        hold: frozenset[int] = frozenset(),
        fail: frozenset[int] = frozenset(),
    ) -> None:
        self.inner = inner
        self.gates = {seq: threading.Event() for seq in hold}
        self.started = {seq: threading.Event() for seq in hold}
        self.fail = set(fail)

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.inner.public_key

    def sign(self, data: bytes) -> bytes:
        seq = json.loads(data[len(DOMAIN) :])["seq"]
        if seq in self.gates:
            self.started[seq].set()
            assert self.gates[seq].wait(LIMIT), f"entry {seq} was never released"
        if seq in self.fail:
            self.fail.discard(seq)
            raise RuntimeError(f"refusing entry {seq}")
        return self.inner.sign(data)


@pytest.fixture
def signer(tmp_path: Path) -> KeySigner:
    generate_keypair(tmp_path / "k", tmp_path / "k.pub")
    return KeySigner.from_file(tmp_path / "k")


def _mutation(name: str) -> dict[str, object]:
    return DispatchMutation(name, "shell", InputRewrite("{}", '{"n":1}')).to_json()


def _run_now(callback: object) -> None:
    callback()  # type: ignore[operator]


def test_a_failed_signature_fails_what_is_chained_behind_it(
    tmp_path: Path, signer: KeySigner
) -> None:
    path = tmp_path / "j"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    gated = GatedSigner(signer, hold=frozenset({0}), fail=frozenset({1}))
    writer = JournalWriter(
        fd, gated, seq=0, prev=genesis_hash(signer.public_key), size=0,
        fsync=os.fsync, workers=3,
    )  # fmt: skip
    done = {name: threading.Event() for name in ("c0", "c1", "c2", "c3")}
    first = writer.submit(_mutation("c0"), _run_now, done["c0"].set)
    assert gated.started[0].wait(LIMIT)
    failed = writer.submit(_mutation("c1"), _run_now, done["c1"].set)
    chained = writer.submit(_mutation("c2"), _run_now, done["c2"].set)
    assert done["c1"].wait(LIMIT)
    assert done["c2"].wait(LIMIT)
    assert failed.error is not None
    assert "refusing entry 1" in failed.error
    assert chained.error is not None
    assert "entry 1, which it was chained to" in chained.error
    assert not done["c0"].is_set(), "the entry before the failure is still being signed"
    assert writer.next_seq == 1, "the chain must roll back to the failed entry's place"
    gated.gates[0].set()
    assert done["c0"].wait(LIMIT)
    assert first.durable
    after = writer.submit(_mutation("c3"), _run_now, done["c3"].set)
    assert done["c3"].wait(LIMIT)
    assert after.durable
    assert after.seq == 1
    writer.close()
    os.close(fd)
    found = scan_journal(path.read_bytes(), signer.public_key)
    assert found.ok, found.reason
    assert [e.mutation["tool_call_id"] for e in found.entries] == ["c0", "c3"]


def test_entries_signed_out_of_order_land_in_order(tmp_path: Path, signer: KeySigner) -> None:
    """Entry 0 is held while 1 and 2 are signed: nothing may be written before 0."""
    path = tmp_path / "j"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    gated = GatedSigner(signer, hold=frozenset({0}))
    writer = JournalWriter(
        fd, gated, seq=0, prev=genesis_hash(signer.public_key), size=0,
        fsync=os.fsync, workers=3,
    )  # fmt: skip
    done = [threading.Event() for _ in range(3)]
    entries = [writer.submit(_mutation(f"c{i}"), _run_now, done[i].set) for i in range(3)]
    assert gated.started[0].wait(LIMIT)
    # Entries 1 and 2 have no gate: wait until both are signed (their line is set).
    deadline = time.monotonic() + LIMIT
    while not (entries[1].line and entries[2].line):
        assert time.monotonic() < deadline, "entries 1 and 2 were never signed"
        time.sleep(0.001)
    assert not done[1].is_set()
    assert not done[2].is_set()
    assert path.read_bytes() == b"", "written ahead of an unsigned entry"
    gated.gates[0].set()
    assert all(event.wait(LIMIT) for event in done)
    assert all(entry.durable for entry in entries)
    writer.close()
    os.close(fd)
    found = scan_journal(path.read_bytes(), signer.public_key)
    assert found.ok
    assert [e.seq for e in found.entries] == [0, 1, 2]


def _single_writer(path: Path, signer: GatedSigner, public: Ed25519PublicKey) -> JournalWriter:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    return JournalWriter(
        fd, signer, seq=0, prev=genesis_hash(public), size=0, fsync=os.fsync, workers=1
    )


def test_a_single_writer_syncs_what_queued_behind_a_batch_at_once(
    tmp_path: Path, signer: KeySigner
) -> None:
    """Entries submitted while the writer is busy go out together: one write, one fsync."""
    path = tmp_path / "j"
    gated = GatedSigner(signer, hold=frozenset({0}))
    writer = _single_writer(path, gated, signer.public_key)
    done = [threading.Event() for _ in range(6)]
    entries = [writer.submit(_mutation("c0"), _run_now, done[0].set)]
    assert gated.started[0].wait(LIMIT)
    entries += [writer.submit(_mutation(f"c{i}"), _run_now, done[i].set) for i in range(1, 6)]
    gated.gates[0].set()
    assert all(event.wait(LIMIT) for event in done)
    assert all(entry.durable for entry in entries)
    assert writer.fsyncs == 2, "entry 0 alone, then the five queued behind it in one batch"
    writer.close()
    os.close(writer.fd)
    found = scan_journal(path.read_bytes(), signer.public_key)
    assert found.ok, found.reason
    assert [e.seq for e in found.entries] == [0, 1, 2, 3, 4, 5]


def test_a_single_writer_fails_a_batch_from_the_failed_signature_on(
    tmp_path: Path, signer: KeySigner
) -> None:
    """In one batch, entries signed before a failing one land; it and its followers fail."""
    path = tmp_path / "j"
    gated = GatedSigner(signer, hold=frozenset({0}), fail=frozenset({2}))
    writer = _single_writer(path, gated, signer.public_key)
    done = [threading.Event() for _ in range(5)]
    entries = [writer.submit(_mutation("c0"), _run_now, done[0].set)]
    assert gated.started[0].wait(LIMIT)
    entries += [writer.submit(_mutation(f"c{i}"), _run_now, done[i].set) for i in (1, 2, 3)]
    gated.gates[0].set()
    assert all(event.wait(LIMIT) for event in done[:4])
    assert [entry.durable for entry in entries] == [True, True, False, False]
    assert entries[2].error is not None
    assert "refusing entry 2" in entries[2].error
    assert entries[3].error is not None
    assert "entry 2, which it was chained to" in entries[3].error
    assert writer.next_seq == 2, "the chain must roll back to the failed entry's place"
    after = writer.submit(_mutation("c4"), _run_now, done[4].set)
    assert done[4].wait(LIMIT)
    assert after.durable
    assert after.seq == 2
    writer.close()
    os.close(writer.fd)
    found = scan_journal(path.read_bytes(), signer.public_key)
    assert found.ok, found.reason
    assert [e.mutation["tool_call_id"] for e in found.entries] == ["c0", "c1", "c4"]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_cancelled_record_still_lands_after_its_loop_ended(
    tmp_path: Path, signer: KeySigner, backend: str
) -> None:
    path = tmp_path / "j"
    gated = GatedSigner(signer, hold=frozenset({0}))
    journal = JournalRecorder.open(path, gated)
    outcomes: list[object] = []

    async def go() -> None:
        with anyio.CancelScope() as scope:

            async def record() -> None:
                outcomes.append(await journal.record(DispatchMutation(
                    "c0", "shell", InputRewrite("{}", "{}"))))  # fmt: skip

            async with anyio.create_task_group() as group:
                group.start_soon(record)
                assert await anyio.to_thread.run_sync(gated.started[0].wait, LIMIT)
                scope.cancel()

    anyio.run(go, backend=backend)
    assert outcomes == [], "a cancelled record must not report an outcome"
    gated.gates[0].set()  # the entry settles now, with its event loop gone
    journal.close()
    found = scan_journal(path.read_bytes(), signer.public_key)
    assert found.ok
    assert [e.mutation["tool_call_id"] for e in found.entries] == ["c0"]


_text = st.text(st.characters(codec="utf-8"), max_size=40)


@given(
    mutation=st.dictionaries(_text, st.one_of(_text, st.integers(), st.none()), max_size=5),
    seq=st.integers(0, 10**9),
    signature=st.binary(min_size=64, max_size=64),
)
def test_the_spliced_line_is_the_canonical_entry(
    mutation: dict[str, object], seq: int, signature: bytes
) -> None:
    prev = "ab" * 32
    line = encode_entry(signed_bytes(seq, prev, mutation), signature)
    whole = {"mutation": mutation, "prev": prev, "seq": seq, "sig": signature.hex(), "v": 2}
    assert line == canonical(whole) + b"\n"
