"""Ed25519 keys for the journal: generation, owner-only storage, loading, signing.

Upstream keeps the signing key in a control plane, outside the harness; the journal only
needs something that can ``sign(bytes)``. :class:`KeySigner` is the local stand-in, with
the key in a file only its owner can read. Anything with the same two members (a remote
signer, a hardware token) can replace it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Protocol, runtime_checkable

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "KeyFileError",
    "KeySigner",
    "Signer",
    "generate_keypair",
    "load_private_key",
    "load_public_key",
    "public_key_bytes",
]


class KeyFileError(ValueError):
    """A key file is missing, malformed, or readable by others than its owner."""


@runtime_checkable
class Signer(Protocol):
    """Signs the journal's canonical bytes; ``public_key`` lets readers verify."""

    @property
    def public_key(self) -> Ed25519PublicKey: ...

    def sign(self, data: bytes) -> bytes: ...


class KeySigner:
    """Signs with a local Ed25519 private key."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._key = private_key

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> KeySigner:
        return cls(load_private_key(path))

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self._key.public_key()

    def sign(self, data: bytes) -> bytes:
        return self._key.sign(data)


def public_key_bytes(key: Ed25519PublicKey) -> bytes:
    """The 32 raw bytes of a public key (what the journal's genesis hash binds to)."""
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with ``mode`` from the start (no window where it is world-readable)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # the umask may have removed bits; never added any
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def generate_keypair(
    private_path: str | os.PathLike[str], public_path: str | os.PathLike[str]
) -> Ed25519PublicKey:
    """Create a new key pair: private key PEM (mode 0600), public key as hex text (0644).

    Refuses to overwrite an existing file: losing a journal's key makes it unverifiable.
    """
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key()
    private_path, public_path = Path(private_path), Path(public_path)
    _write_new(private_path, pem, 0o600)
    try:
        _write_new(public_path, public_key_bytes(public).hex().encode() + b"\n", 0o644)
    except BaseException:
        private_path.unlink(missing_ok=True)
        raise
    return public


def load_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """Load a private key, refusing one that group or others could read."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        data = path.read_bytes()
    except OSError as error:
        raise KeyFileError(f"cannot read private key {path}: {error.strerror}") from error
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(
            f"private key {path} is accessible by others (mode {stat.S_IMODE(mode):o}); "
            "run `chmod 600` on it"
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise KeyFileError(f"{path} is not a PEM private key: {error}") from error
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    """Load a public key written by :func:`generate_keypair` (hex), or a PEM public key."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise KeyFileError(f"cannot read public key {path}: {error.strerror}") from error
    text = data.strip()
    try:
        if text.startswith(b"-----BEGIN"):
            key = serialization.load_pem_public_key(text)
            if not isinstance(key, Ed25519PublicKey):
                raise KeyFileError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
            return key
        raw = bytes.fromhex(text.decode("ascii"))
        return Ed25519PublicKey.from_public_bytes(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise KeyFileError(f"{path} is not an Ed25519 public key (hex or PEM): {error}") from error
