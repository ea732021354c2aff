"""Write a small signed journal with the reference, for the journal commands of the docs.

    python docs/examples/write_journal.py j.key dispatch.journal

Three mutations of one turn (a rewrite, an injection, a redaction), each recorded
through ``JournalRecorder`` with the private key from ``seamspec journal keygen``: the
same code path a harness using the reference takes, so ``seamspec journal verify`` has a
real journal to check. docs/contracts/dispatch-recorder.md runs it.
"""

from __future__ import annotations

import sys

import anyio

from seamspec.reference import (
    ContextInjection,
    DispatchMutation,
    InputRewrite,
    JournalRecorder,
    KeySigner,
    ResultRedaction,
)

MUTATIONS = [
    DispatchMutation("c1", "shell", InputRewrite('{"cmd":"rm -r build"}', '{"cmd":"ls build"}')),
    DispatchMutation("c2", "search", ContextInjection("only the docs/ folder is in scope")),
    DispatchMutation("c3", "read_file", ResultRedaction("token=hunter2", "token=[redacted]")),
]


async def write(key: str, path: str) -> None:
    async with JournalRecorder.open(path, KeySigner.from_file(key)) as journal:
        for mutation in MUTATIONS:
            outcome = await journal.record(mutation)
            print(f"{mutation.tool_call_id} {mutation.kind.kind}: {type(outcome).__name__}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python docs/examples/write_journal.py PRIVATE_KEY JOURNAL")
    anyio.run(write, sys.argv[1], sys.argv[2])
