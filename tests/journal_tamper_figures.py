"""Tamper classes and detection counts for the journal (docs/reliability.md, "Journal").

A reference journal of 8 entries is written once (real JournalRecorder, real key); then
each tampering class of the scenario vocabulary is applied ``--per-class`` times at
random places, by the kit's own code with the kit's key. For each result the kit's own
checker (``journal_audit``, anchored with the 8 entries) and the reference verifier
(``scan_journal``) give their verdicts. Counted per class: how often the file was
detected as invalid, how often the tampering changed nothing (a swap of an entry with
itself), how often the file was still valid (those, and forgeries signed correctly and
chained, which only the key's custody can prevent), and how often the two verdicts (validity, first bad entry, torn tail, entries)
agreed. Run::

    python tests/journal_tamper_figures.py --per-class 1000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from seamspec.conformance._contracts.dispatch_recorder.journal_audit import audit_journal
from seamspec.conformance._contracts.dispatch_recorder.journal_forge import KitKey
from seamspec.conformance._contracts.dispatch_recorder.journal_steps import (
    OPERATIONS,
    TamperError,
    tamper_bytes,
)
from seamspec.reference import (
    ContextInjection,
    DispatchMutation,
    InputRewrite,
    JournalRecorder,
    KeySigner,
    MutationKind,
    ResultRedaction,
    scan_journal,
)

ENTRIES = 8


def _journal(key: KitKey) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        private, _ = key.write(Path(tmp))
        path = Path(tmp) / "dispatch.journal"
        kinds: list[MutationKind] = [
            InputRewrite('{"cmd":"ls"}', '{"cmd":"ls -1"}'),
            ContextInjection("no force pushes — ever"),
            ResultRedaction('{"token":"sk-1"}', '{"token":"[redacted]"}'),
        ]

        async def write() -> None:
            async with JournalRecorder.open(path, KeySigner.from_file(private)) as journal:
                for i in range(ENTRIES):
                    await journal.record(DispatchMutation(f"c{i}", "tool", kinds[i % 3]))

        anyio.run(write)
        return path.read_bytes()


def _op(rng: random.Random, kind: str, size: int) -> dict[str, Any]:
    entry = rng.randrange(ENTRIES)
    bodies: dict[str, Any] = {
        "flip_byte": {"entry": entry, "offset": rng.randrange(-400, 400), "mask": rng.randrange(1, 256)},
        "delete": entry,
        "swap": [entry, rng.randrange(ENTRIES)],
        "duplicate": entry,
        "truncate_bytes": rng.randrange(1, size + 1),
        "edit": {"entry": entry, "field": rng.choice(["seq", "prev", "v", "sig", "mutation.tool_name"]),
                 "value": rng.choice([1, True, 2.0, "x", None])},
        "reencode": {"entry": entry, "style": rng.choice(["spaces", "reordered_keys", "escaped"])},
        "forge": {"entry": entry, "rechain": rng.random() < 0.5,
                  "signature": rng.choice(["valid", "no_domain", "other_domain", "other_key"])},
        "splice": {"entry": entry, "from_entry": rng.randrange(ENTRIES)},
        "append": {},
    }  # fmt: skip
    return {kind: bodies[kind]}


def tamper_figures(per_class: int, seed: int = 20261201) -> dict[str, dict[str, int]]:
    rng = random.Random(seed)
    key = KitKey()
    original = _journal(key)
    figures: dict[str, dict[str, int]] = {}
    for kind in OPERATIONS:
        counts = {"trials": 0, "unchanged": 0, "detected": 0, "still_valid": 0, "verdicts_agree": 0}
        while counts["trials"] < per_class:
            try:
                data = tamper_bytes(original, _op(rng, kind, len(original)), key)
            except TamperError:
                continue
            counts["trials"] += 1
            counts["unchanged"] += data == original
            kit = audit_journal(data, key.raw_public, expected_entries=ENTRIES)
            ref = scan_journal(data, key.private.public_key(), expected_entries=ENTRIES)
            counts["detected" if not kit.ok else "still_valid"] += 1
            same = (kit.ok, kit.bad_index, kit.torn_tail, len(kit.entries)) == (
                ref.ok, ref.bad_index, ref.torn_tail, len(ref.entries)
            )  # fmt: skip
            counts["verdicts_agree"] += same
        figures[kind] = counts
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-class", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    figures = tamper_figures(args.per_class, args.seed)
    print(json.dumps(figures, indent=2))
    return 0 if all(c["verdicts_agree"] == c["trials"] for c in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
