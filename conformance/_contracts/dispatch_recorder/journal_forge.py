"""The kit's own journal key and signer: what it hands out, and what it forges with.

For a journal scenario the kit generates a fresh Ed25519 key pair, gives the private key
to the implementation (a PEM file only its owner can read, as ``journal keygen`` writes
it) and reads the journal back with the public key. Holding the private key also lets
the kit *forge*: sign entries the implementation never wrote, sign them without the
domain prefix or with another key, or write a second journal with the same key to
splice from. A verifier is then judged on what it really binds, not on whether it
remembers what it wrote. Like :mod:`.journal_audit`, this module uses only the format as
documented, never the reference's code.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from seamspec.conformance._contracts.dispatch_recorder.journal_audit import (
    DOMAIN,
    VERSION,
    canonical,
    fingerprint,
)

__all__ = ["OTHER_DOMAIN", "KitKey", "Signature", "entry_line", "journal_bytes"]

#: A domain prefix that is not the journal's (a signature under it must not verify).
OTHER_DOMAIN = b"seamspec/dispatch-recorder/journal-entry/v1\x00"

#: How a forged entry is signed: correctly, without the domain prefix, under another
#: domain prefix, or with a key that is not the journal's.
Signature = Literal["valid", "no_domain", "other_domain", "other_key"]


class KitKey:
    """An Ed25519 key pair made by the kit for one scenario."""

    def __init__(self, private: Ed25519PrivateKey | None = None) -> None:
        self.private = private or Ed25519PrivateKey.generate()
        self.raw_public = self.private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    @property
    def public_hex(self) -> str:
        return self.raw_public.hex()

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.raw_public)

    def write(self, folder: Path) -> tuple[Path, Path]:
        """The private key as PKCS #8 PEM (mode 0600) and the public key as hex."""
        private, public = folder / "journal.key", folder / "journal.pub"
        pem = self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, pem)
        finally:
            os.close(fd)
        public.write_text(self.public_hex + "\n", encoding="ascii")
        return private, public


def entry_line(
    key: KitKey,
    seq: Any,
    prev: str,
    mutation: Any,
    *,
    signature: Signature = "valid",
    version: Any = VERSION,
) -> tuple[bytes, str]:
    """One canonical entry line (with its ``\\n``) and the chain hash it defines.

    The chain hash is the format's (SHA-256 of the domain-prefixed signed bytes), whatever
    ``signature`` says: a wrongly signed entry still chains, so that only the signature
    is wrong.
    """
    body = canonical({"mutation": mutation, "prev": prev, "seq": seq, "v": version})
    message = DOMAIN + body
    if signature == "no_domain":
        sig = key.private.sign(body)
    elif signature == "other_domain":
        sig = key.private.sign(OTHER_DOMAIN + body)
    elif signature == "other_key":
        sig = Ed25519PrivateKey.generate().sign(message)
    else:
        sig = key.private.sign(message)
    entry = {"mutation": mutation, "prev": prev, "seq": seq, "sig": sig.hex(), "v": version}
    return canonical(entry) + b"\n", hashlib.sha256(message).hexdigest()


def journal_bytes(key: KitKey, mutations: list[dict[str, Any]]) -> bytes:
    """A whole, valid journal of ``mutations`` signed with ``key``."""
    lines, prev = [], key.fingerprint
    for seq, mutation in enumerate(mutations):
        line, prev = entry_line(key, seq, prev, mutation)
        lines.append(line)
    return b"".join(lines)
