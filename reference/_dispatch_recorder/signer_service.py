"""The signing service behind ``SignerProcess``: run by file path, needs only ``cryptography``.

    python signer_service.py PRIVATE_KEY_PEM

It loads the key (refusing a file that group or others can read), then answers on its
standard streams, in binary frames (big-endian 32-bit lengths):

- on start: ``R`` + the 32-byte raw public key, or ``E`` + length + UTF-8 reason;
- per request ``size`` + ``count`` + ``count`` x (``length`` + message), where ``size``
  counts the bytes after itself (so a request is read in two reads, not two per
  message): ``K`` + ``count`` x 64-byte Ed25519 signatures, or ``E`` + length + reason.

It holds the private key so the harness process never does, as a control-plane signer
would, and it signs on its own core without sharing a GIL with the harness. It exits when
its standard input closes. Kept free of seamspec imports so that it starts fast and works
from any installed copy.
"""

from __future__ import annotations

import os
import stat
import struct
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

_LEN = struct.Struct(">I")


def _read_exactly(size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sys.stdin.buffer.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _error(reason: str) -> bytes:
    text = reason.encode("utf-8")
    return b"E" + _LEN.pack(len(text)) + text


def _load(path: str) -> Ed25519PrivateKey:
    mode = os.stat(path).st_mode
    if stat.S_IMODE(mode) & 0o077:
        raise PermissionError(
            f"{path} is readable by group or others (mode {stat.S_IMODE(mode):o}); chmod 600 it"
        )
    with open(path, "rb") as file:
        key = serialization.load_pem_private_key(file.read(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path} holds a {type(key).__name__}, not an Ed25519 private key")
    return key


def _messages(body: bytes) -> list[bytes]:
    (count,) = _LEN.unpack_from(body, 0)
    messages, at = [], 4
    for _ in range(count):
        (size,) = _LEN.unpack_from(body, at)
        messages.append(body[at + 4 : at + 4 + size])
        at += 4 + size
    if at != len(body):  # a length pointing past the end, or bytes after the last message
        raise ValueError(f"the lengths add up to {at} bytes, the request has {len(body)}")
    return messages


def main() -> int:
    out = sys.stdout.buffer
    try:
        key = _load(sys.argv[1])
    except (IndexError, OSError, ValueError, TypeError) as error:
        out.write(_error(f"cannot load the private key: {error}"))
        out.flush()
        return 2
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    out.write(b"R" + raw)
    out.flush()
    while (head := _read_exactly(4)) is not None:
        body = _read_exactly(_LEN.unpack(head)[0])
        if body is None:
            return 1  # the harness went away mid-request
        try:
            signatures = [key.sign(message) for message in _messages(body)]
        except (struct.error, ValueError) as error:
            out.write(_error(f"malformed request: {error}"))
        else:
            out.write(b"K" + b"".join(signatures))
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
