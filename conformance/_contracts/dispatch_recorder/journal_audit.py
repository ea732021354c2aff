"""The kit's own reading of the journal interchange format, written from the contract page.

The kit certifies a journal only by what it checked itself: after a journal scenario it
reads the file the implementation wrote, with the public key the kit handed out, and
checks every byte against the format documented in ``docs/contracts/dispatch-recorder.md``
("The journal"). This module is that check. It deliberately shares no code with the
reference (``seamspec.reference``, which an import-linter contract keeps out of it): a bug
in the reference's verifier must not be able to hide the same bug in the judge.

The format, in short (the page has the full text):

- one entry per line, ``\\n``-terminated, each line exactly ``canonical(entry)``: JSON with
  sorted keys, no whitespace, UTF-8 (no ASCII escaping), no NaN;
- an entry has exactly ``mutation`` (object), ``prev`` (64 lower-case hex), ``seq`` (the
  line's index from 0), ``sig`` (128 lower-case hex) and ``v`` (2);
- ``sig`` is Ed25519 over ``DOMAIN + canonical({mutation, prev, seq, v})``;
- ``prev`` is the SHA-256 of the previous entry's signed bytes; for entry 0 it is the
  genesis hash ``SHA-256(DOMAIN + b"genesis" + raw public key)``, which is also the key's
  *journal fingerprint* (what pins a journal to its key);
- a final segment without ``\\n`` is a torn tail (an interrupted append, never an entry),
  unless it may be a complete entry (it, or it without its last byte, is a JSON object):
  then it is damage, not a torn tail.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = [
    "DOMAIN",
    "VERSION",
    "AuditEntry",
    "AuditVerdict",
    "audit_journal",
    "canonical",
    "fingerprint",
    "signed_message",
]

#: The domain-separation prefix every journal signature covers (the format's, version 2).
DOMAIN = b"seamspec/dispatch-recorder/journal-entry/v2\x00"
VERSION = 2
_FIELDS = frozenset({"mutation", "prev", "seq", "sig", "v"})
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX128 = re.compile(r"[0-9a-f]{128}")


def canonical(value: Any) -> bytes:
    """The format's canonical JSON bytes (raises ValueError for NaN or infinities)."""
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def fingerprint(raw_public_key: bytes) -> str:
    """The key's journal fingerprint: the genesis hash, entry 0's ``prev``."""
    return hashlib.sha256(DOMAIN + b"genesis" + raw_public_key).hexdigest()


def signed_message(seq: int, prev: str, mutation: Any, version: int = VERSION) -> bytes:
    """The bytes entry ``seq``'s signature covers."""
    return DOMAIN + canonical({"mutation": mutation, "prev": prev, "seq": seq, "v": version})


@dataclass(frozen=True)
class AuditEntry:
    seq: int
    mutation: dict[str, Any]
    #: Byte offsets of the line in the file: ``start`` inclusive, ``end`` after its ``\n``.
    start: int
    end: int
    #: The chain hash (SHA-256 of the signed bytes) the next entry's ``prev`` must equal.
    hash: str


@dataclass
class AuditVerdict:
    """What the kit found: ``ok`` only if every byte is an entry and the anchor agrees."""

    entries: list[AuditEntry] = field(default_factory=list)
    bad_index: int | None = None
    reason: str | None = None
    torn_tail: bool = False

    @property
    def ok(self) -> bool:
        return self.bad_index is None

    def to_json(self) -> dict[str, Any]:
        """The verdict as the trace carries it (``journal_check`` and ``journal_verify``)."""
        return {
            "ok": self.ok,
            "bad_index": self.bad_index,
            "reason": self.reason,
            "torn_tail": self.torn_tail,
            "entries": len(self.entries),
            "mutations": [e.mutation for e in self.entries],
        }


def _may_be_entry(segment: bytes) -> bool:
    """Could this newline-less tail be a whole entry whose ``\\n`` was lost or replaced?"""
    for candidate in (segment, segment[:-1]):
        try:
            if isinstance(json.loads(candidate.decode("utf-8")), dict):
                return True
        except (UnicodeDecodeError, ValueError):
            continue
    return False


def _check(line: bytes, index: int, prev: str, key: Ed25519PublicKey) -> tuple[Any, str] | str:
    """(the mutation, the chain hash) of a good entry ``index`` after ``prev``, or why not."""
    try:
        entry = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return "is not UTF-8"
    except ValueError as error:
        return f"is not JSON ({error})"
    if not isinstance(entry, dict) or set(entry) != _FIELDS:
        found = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
        return f"does not have exactly the fields mutation, prev, seq, sig, v (has {found})"
    try:
        if canonical(entry) != line:
            return "is not in canonical form (its bytes differ from the canonical encoding)"
    except ValueError:  # NaN or an infinity; a lone surrogate (UnicodeEncodeError)
        return "holds a value with no canonical encoding (NaN, infinity, lone surrogate)"
    seq, entry_prev, sig, version = entry["seq"], entry["prev"], entry["sig"], entry["v"]
    if type(version) is not int or version != VERSION:
        return f"has format version {version!r}, not {VERSION}"
    if type(seq) is not int or seq != index:
        return f"has sequence number {seq!r} where {index} was due"
    if not isinstance(entry["mutation"], dict):
        return "has a mutation that is not an object"
    if not isinstance(entry_prev, str) or not _HEX64.fullmatch(entry_prev):
        return "has a prev that is not 64 lower-case hex digits"
    if not isinstance(sig, str) or not _HEX128.fullmatch(sig):
        return "has a sig that is not 128 lower-case hex digits"
    if entry_prev != prev:
        if index == 0:
            return (
                f"is bound to key fingerprint {entry_prev[:16]}…, not to the given key's "
                f"{prev[:16]}… (signed by another key)"
            )
        return "does not chain to the previous entry (its prev is not that entry's hash)"
    message = signed_message(seq, entry_prev, entry["mutation"])
    try:
        key.verify(bytes.fromhex(sig), message)
    except InvalidSignature:
        return "has a signature that does not verify over the domain-prefixed entry"
    return entry["mutation"], hashlib.sha256(message).hexdigest()


def audit_journal(
    data: bytes, raw_public_key: bytes, *, expected_entries: int | None = None
) -> AuditVerdict:
    """Check a journal's bytes against the format; stop at the first entry that is wrong.

    ``expected_entries`` is an anchor kept outside the file (the number of OK'd records):
    the chain alone cannot show that whole entries were cut from the end.
    """
    key = Ed25519PublicKey.from_public_bytes(raw_public_key)
    verdict = AuditVerdict()
    prev, pos, index = fingerprint(raw_public_key), 0, 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end == -1:
            verdict.bad_index = index
            if _may_be_entry(data[pos:]):
                verdict.reason = (
                    "ends in what may be a complete entry whose newline was replaced or "
                    "lost: damage, not a torn tail"
                )
            else:
                verdict.torn_tail = True
                verdict.reason = f"torn tail: {len(data) - pos} byte(s) of an interrupted append"
            return verdict
        checked = _check(data[pos:end], index, prev, key)
        if isinstance(checked, str):
            verdict.bad_index, verdict.reason = index, f"entry {index} {checked}"
            return verdict
        mutation, prev = checked
        verdict.entries.append(AuditEntry(index, mutation, pos, end + 1, prev))
        pos, index = end + 1, index + 1
    count = len(verdict.entries)
    if expected_entries is not None and count != expected_entries:
        verdict.bad_index = min(count, expected_entries)
        verdict.reason = (
            f"the journal ends after {count} entries; the anchor says {expected_entries}"
            if count < expected_entries
            else f"entry {expected_entries} is beyond the anchor's {expected_entries} entries"
        )
    return verdict
