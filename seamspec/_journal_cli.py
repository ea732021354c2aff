"""``seamspec journal``: key generation, verification and display of a dispatch journal.

Exit codes, like the rest of the command line: 0 the journal is valid (or the action
succeeded); 1 the journal is invalid or tampered with; 2 a usage error or an input that
cannot be read (missing file, malformed key).
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import sys
from pathlib import Path
from typing import Any

from seamspec._output import count
from seamspec.reference import (
    KeyFileError,
    generate_keypair,
    journal_fingerprint,
    load_public_key,
    scan_journal,
)
from seamspec.reference._dispatch_recorder.journal_format import JournalEntry

__all__ = ["add_journal_parser", "cmd_journal"]

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def add_journal_parser(subparsers: Any) -> None:
    """Register ``journal keygen|verify|fingerprint|show`` on the main parser's subcommands."""
    journal = subparsers.add_parser(
        "journal", help="create keys for, verify or show a signed dispatch-recorder journal"
    )
    journal.set_defaults(func=lambda args, _console: cmd_journal(args))
    actions = journal.add_subparsers(dest="journal_command", required=True, metavar="ACTION")

    keygen = actions.add_parser("keygen", help="create an Ed25519 key pair for a journal")
    keygen.add_argument(
        "--private-key",
        type=Path,
        default=Path("dispatch-journal.key"),
        help="where to write the private key (only the signer reads it)",
    )
    keygen.add_argument(
        "--public-key",
        type=Path,
        default=Path("dispatch-journal.pub"),
        help="where to write the public key (for `journal verify`)",
    )

    verify = actions.add_parser("verify", help="check every signature and the hash chain")
    verify.add_argument("journal", type=Path, metavar="JOURNAL", help="the journal file")
    verify.add_argument(
        "--public-key",
        type=Path,
        required=True,
        metavar="KEY",
        help="the journal's public key (required)",
    )
    verify.add_argument(
        "--expect-entries",
        type=count(0),
        metavar="N",
        help="the number of entries an anchor kept elsewhere says there are "
        "(detects entries cut from the end)",
    )
    verify.add_argument(
        "--head", metavar="HASH", help="the last entry's hash, from an anchor kept elsewhere"
    )
    verify.add_argument(
        "--fingerprint",
        metavar="FP",
        help="the key's fingerprint, kept apart from the key file (`journal keygen` and "
        "`journal fingerprint` print it): pins the key, so that a replaced key file and a "
        "journal signed again with it are refused",
    )
    verify.add_argument("--json", action="store_true", help="print the result as JSON")

    fingerprint = actions.add_parser(
        "fingerprint", help="print a public key's journal fingerprint (entry 0's prev)"
    )
    fingerprint.add_argument(
        "--public-key", type=Path, required=True, metavar="KEY", help="the public key file"
    )

    show = actions.add_parser("show", help="print the entries (does not verify them)")
    show.add_argument("journal", type=Path, metavar="JOURNAL", help="the journal file")
    show.add_argument("--json", action="store_true", help="one JSON object per entry")


def cmd_journal(args: argparse.Namespace) -> int:
    try:
        if args.journal_command == "keygen":
            return _keygen(args)
        if args.journal_command == "verify":
            return _verify(args)
        if args.journal_command == "fingerprint":
            print(journal_fingerprint(load_public_key(args.public_key)))
            return EXIT_OK
        return _show(args)
    except KeyFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"error: cannot read {error.filename}: {error.strerror}", file=sys.stderr)
        return EXIT_USAGE


def _keygen(args: argparse.Namespace) -> int:
    for path in (args.private_key, args.public_key):
        if path.exists():
            print(f"error: {path} exists; refusing to overwrite a key", file=sys.stderr)
            return EXIT_USAGE
    try:
        public = generate_keypair(args.private_key, args.public_key)
    except OSError as error:  # not a read: say which key file could not be written
        print(
            f"error: cannot write {error.filename or args.private_key}: {error.strerror or error}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print(f"private key: {args.private_key} (mode 600; keep it secret)")
    print(f"public key:  {args.public_key}")
    print(f"fingerprint: {journal_fingerprint(public)} (keep it apart from the key files)")
    return EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    key = load_public_key(args.public_key)
    pinned = str(args.fingerprint).strip().lower() if args.fingerprint else None
    if pinned is not None and not re.fullmatch(r"[0-9a-f]{64}", pinned):
        print(
            "error: --fingerprint takes 64 hex digits (`journal fingerprint` prints one)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    data = args.journal.read_bytes()
    found = scan_journal(data, key, expected_entries=args.expect_entries, expected_head=args.head)
    mismatch = None
    if pinned is not None and journal_fingerprint(key) != pinned:
        mismatch = (
            f"the public key {args.public_key} has fingerprint {journal_fingerprint(key)[:16]}…, "
            f"expected {pinned[:16]}… (--fingerprint): it is not the pinned key; a journal "
            "signed with it proves nothing"
        )
    quarantined = sorted(args.journal.parent.glob(f"{glob.escape(args.journal.name)}.quarantine-*"))
    ok = found.ok and mismatch is None and not quarantined
    if args.json:
        print(
            json.dumps(
                {
                    "ok": ok,
                    "entries": len(found.entries),
                    "bad_index": found.bad_index,
                    "reason": mismatch or found.reason,
                    "torn_tail": found.torn_tail,
                    "head": found.head,
                    "fingerprint": journal_fingerprint(key),
                    "quarantined": [str(path) for path in quarantined],
                }
            )
        )
    elif mismatch is not None:
        print(f"{args.journal}: INVALID: {mismatch}", file=sys.stderr)
    elif found.ok and quarantined:
        names = ", ".join(path.name for path in quarantined)
        print(
            f"{args.journal}: INVALID: its {len(found.entries)} entries verify, but "
            f"{len(quarantined)} quarantined tail(s) lie next to it ({names}): bytes that "
            "may be a complete, acknowledged entry were set aside when it was reopened; "
            "inspect them with `seamspec journal show`",
            file=sys.stderr,
        )
    elif found.ok:
        head = found.head or "(empty journal)"
        print(f"{args.journal}: valid, {len(found.entries)} entries; head {head}")
        if args.expect_entries is None and args.head is None:
            print(
                "note: without --expect-entries or --head, entries cut from the end "
                "cannot be detected"
            )
    else:
        print(
            f"{args.journal}: INVALID at entry {found.bad_index}: {found.reason} "
            f"({len(found.entries)} valid entries before it)",
            file=sys.stderr,
        )
    return EXIT_OK if ok else EXIT_INVALID


def _describe(entry: JournalEntry) -> str:
    m = entry.mutation
    kind = m.get("kind", "?")
    if kind == "input_rewrite":
        what = f"{m.get('original_args')} -> {m.get('new_args')}"
    elif kind == "context_injection":
        what = f"context {m.get('context')!r}"
    else:
        what = f"result {m.get('original_result')!r} -> {m.get('redacted_result')!r}"
    return f"#{entry.seq} {kind} {m.get('tool_call_id')} ({m.get('tool_name')}): {what}"


def _show(args: argparse.Namespace) -> int:
    """Print entries as they are framed, without a key: a quick look, not a verdict."""
    data = args.journal.read_bytes()
    pos, index = 0, 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end == -1:
            print(f"#{index} torn tail: {len(data) - pos} byte(s) of an interrupted append")
            break
        line = data[pos:end]
        try:
            raw = json.loads(line)
            entry = JournalEntry(raw["seq"], raw["prev"], raw["mutation"], "", pos, end - pos)
        except (ValueError, KeyError, TypeError):
            print(f"#{index} unreadable entry at byte {pos}")
        else:
            print(json.dumps(raw) if args.json else _describe(entry))
        pos, index = end + 1, index + 1
    if not args.json:
        sys.stdout.flush()  # the entries first, then the note, even when both are piped
        print(f"({index} entries, not verified: use `seamspec journal verify`)", file=sys.stderr)
    return EXIT_OK
