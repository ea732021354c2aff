"""The journal's on-disk format: canonical bytes, signatures, the hash chain, verification.

One entry per line (UTF-8 JSON, keys sorted, no spaces, ending in ``\\n``)::

    {"mutation":{...},"prev":"<64 hex>","seq":N,"sig":"<128 hex>","v":1}

- The signature is Ed25519 over ``DOMAIN + canonical({"mutation","prev","seq","v"})``.
  ``DOMAIN`` keeps these signatures from ever being valid for another purpose.
- ``prev`` chains the entry to the previous one: the SHA-256 of the previous entry's
  signed bytes. The first entry's ``prev`` is the genesis hash, which binds the journal to
  its public key. The chain covers what is signed, not the signature, so entry N+1 can
  be signed while entry N's signature is still being computed: that is what lets
  concurrent records sign on several cores (a signature cannot be altered without failing
  verification, so leaving it out of the chain weakens nothing).
- A line must be *exactly* the canonical encoding of its fields, so no byte can change
  without changing a signed value, the signature itself, or the chain.

A final segment with no newline is a *torn tail*: an append interrupted by a crash. Since
``record`` returns OK only after the whole line is on stable storage, a torn tail is never
an acknowledged entry; it is reported and never counted. But a final segment that *may be
a complete entry* (it, or it without its last byte, is a JSON object: a whole line whose
newline was lost or replaced) is not called torn: it may be an acknowledged record, so it
is reported as damage, and :class:`JournalRecorder` sets it aside instead of cutting it.

The genesis hash is also the key's *journal fingerprint* (:func:`journal_fingerprint`):
entry 0 carries it, so a journal names the key it was signed with, and verification
against a wrong key says so ("signed by key X, expected Y"). Keep the fingerprint
somewhere else than the key file to pin the key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from seamspec.reference._dispatch_recorder.journal_keys import public_key_bytes

__all__ = [
    "DOMAIN",
    "JOURNAL_VERSION",
    "JournalEntry",
    "Verification",
    "canonical",
    "encode_entry",
    "entry_hash",
    "genesis_hash",
    "journal_fingerprint",
    "may_be_entry",
    "scan_journal",
    "signed_bytes",
]

#: Domain-separation prefix of every signed message (ends in NUL: never a JSON byte).
DOMAIN = b"seamspec/dispatch-recorder/journal-entry/v2\x00"
JOURNAL_VERSION = 2
_FIELDS = {"mutation", "prev", "seq", "sig", "v"}


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical(value: Any) -> bytes:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8, no NaN.

    (``json.dumps`` with these options, through one shared encoder: it runs per record.)
    """
    return _CANONICAL.encode(value).encode("utf-8")


def genesis_hash(public_key: Ed25519PublicKey) -> str:
    """The ``prev`` of entry 0: ties the chain to the key, so journals cannot be spliced."""
    return hashlib.sha256(DOMAIN + b"genesis" + public_key_bytes(public_key)).hexdigest()


def journal_fingerprint(public_key: Ed25519PublicKey) -> str:
    """The key's fingerprint as a journal records it: entry 0's ``prev`` (64 hex)."""
    return genesis_hash(public_key)


def may_be_entry(segment: bytes) -> bool:
    """Could a final segment without newline be a whole entry whose newline was lost?

    True if it, or it without its last byte, parses as a JSON object. A crash leaves a
    prefix of a line, which never does (unless only the newline is missing: then the
    record was not acknowledged, and setting it aside instead of cutting it costs nothing).
    """
    for candidate in (segment, segment[:-1]):
        try:
            if isinstance(json.loads(candidate.decode("utf-8")), dict):
                return True
        except (UnicodeDecodeError, ValueError):
            continue
    return False


def signed_bytes(seq: int, prev: str, mutation: dict[str, Any]) -> bytes:
    """Exactly the bytes the signature covers."""
    return DOMAIN + canonical(
        {"mutation": mutation, "prev": prev, "seq": seq, "v": JOURNAL_VERSION}
    )


_SIGNED_TAIL = b',"v":%d}' % JOURNAL_VERSION


def encode_entry(signed: bytes, signature: bytes) -> bytes:
    """The entry's line, newline included, from its signed bytes and signature.

    Equal to ``canonical`` of the whole entry: sorted keys put ``sig`` between ``seq``
    and ``v``, so the line is the signed JSON with ``"sig"`` spliced in before ``"v"``
    (a splice rather than a second ``json.dumps``: this runs once per record).
    """
    if not (signed.startswith(DOMAIN) and signed.endswith(_SIGNED_TAIL)):
        raise ValueError("not the output of signed_bytes()")
    head = signed[len(DOMAIN) : -len(_SIGNED_TAIL)]
    return b'%s,"sig":"%s"%s\n' % (head, signature.hex().encode("ascii"), _SIGNED_TAIL)


def entry_hash(signed: bytes) -> str:
    """The chain hash of an entry: SHA-256 of its signed bytes (see the module docstring)."""
    return hashlib.sha256(signed).hexdigest()


@dataclass(frozen=True)
class JournalEntry:
    seq: int
    prev: str
    mutation: dict[str, Any]
    hash: str
    offset: int
    length: int


@dataclass
class Verification:
    """What reading a journal found. ``ok`` only if every byte is accounted for.

    ``bad_index`` names the first entry that is wrong (0-based; for a torn tail, the index
    the interrupted entry would have had). ``valid_bytes`` is where the good prefix ends.
    """

    entries: list[JournalEntry] = field(default_factory=list)
    bad_index: int | None = None
    reason: str | None = None
    torn_tail: bool = False
    valid_bytes: int = 0

    @property
    def ok(self) -> bool:
        return self.bad_index is None

    @property
    def head(self) -> str | None:
        return self.entries[-1].hash if self.entries else None


def _check_line(
    line: bytes, index: int, prev: str, key: Ed25519PublicKey
) -> tuple[dict[str, Any], bytes] | str:
    """The parsed entry and its signed bytes, or why it is not entry ``index`` after ``prev``."""
    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        return f"not a JSON entry ({error})"
    if not isinstance(data, dict) or set(data) != _FIELDS:
        return "not an entry object with exactly the fields mutation, prev, seq, sig, v"
    try:
        if canonical(data) != line:
            return "not in canonical form (the bytes were edited)"
    except ValueError:
        return "holds a value JSON cannot encode canonically"
    # Identity of type as well as value: in Python True == 1 and 2.0 == 2, but the line
    # would then say `true` or `2.0` where the signature covers `1` or `2`.
    if type(data["v"]) is not int or data["v"] != JOURNAL_VERSION:
        return f"unknown format version {data['v']!r}"
    if type(data["seq"]) is not int or data["seq"] != index:
        return f"has sequence number {data['seq']!r} where {index} was due (deleted, reordered or duplicated?)"
    if data["prev"] != prev:
        if index == 0:
            return (
                f"is signed by key {str(data['prev'])[:16]}…, expected {prev[:16]}… "
                "(fingerprints: the journal was signed with another key than this one)"
            )
        return "does not chain to the previous entry (deleted, reordered or duplicated?)"
    if not isinstance(data["mutation"], dict) or not isinstance(data["sig"], str):
        return "has a malformed mutation or signature"
    try:
        signature = bytes.fromhex(data["sig"])
        if signature.hex() != data["sig"]:  # hex is canonical too: lower case only
            raise ValueError("signature not in canonical hex")
        signed = signed_bytes(index, prev, data["mutation"])
        key.verify(signature, signed)
    except (InvalidSignature, ValueError):
        return "has a signature that does not verify with this public key"
    return data, signed


def scan_journal(
    data: bytes,
    public_key: Ed25519PublicKey,
    *,
    expected_entries: int | None = None,
    expected_head: str | None = None,
) -> Verification:
    """Check every entry of a journal's bytes; stop at the first problem.

    Chaining proves the journal is an unmodified *prefix* of what was written; only an
    anchor kept elsewhere (the number of entries, or the head hash) can prove that whole
    entries were not cut from the end. Pass one when you have it.
    """
    result = Verification()
    prev, pos, index = genesis_hash(public_key), 0, 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end == -1:
            result.bad_index = index
            if may_be_entry(data[pos:]):
                result.reason = (
                    f"the last {len(data) - pos} byte(s) may be a complete entry whose "
                    "newline was replaced or lost: damage, not a torn tail"
                )
            else:
                result.torn_tail = True
                result.reason = (
                    f"torn tail: {len(data) - pos} byte(s) of an interrupted append, no entry"
                )
            break
        line = data[pos:end]
        checked = _check_line(line, index, prev, public_key)
        if isinstance(checked, str):
            result.bad_index, result.reason = index, checked
            break
        entry, signed = checked
        prev = entry_hash(signed)
        result.entries.append(
            JournalEntry(index, entry["prev"], entry["mutation"], prev, pos, end + 1 - pos)
        )
        pos, index = end + 1, index + 1
        result.valid_bytes = pos
    if not result.ok:
        return result
    count = len(result.entries)
    if expected_entries is not None and count != expected_entries:
        result.bad_index = min(count, expected_entries)
        result.reason = (
            f"missing: the journal ends after {count} entries; the anchor says {expected_entries}"
            if count < expected_entries
            else f"unexpected entry beyond the anchor's {expected_entries} entries"
        )
    elif expected_head is not None and result.head != expected_head:
        found = next((e.seq for e in result.entries if e.hash == expected_head), None)
        if found is None:
            result.bad_index = count
            result.reason = (
                "missing: no entry has the anchored head hash (entries cut from the end?)"
            )
        else:
            result.bad_index = found + 1
            result.reason = "unexpected entry after the anchored head"
    return result
