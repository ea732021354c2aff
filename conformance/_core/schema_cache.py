"""Which scenario texts are already known to satisfy the schema, kept across runs.

Checking a file against the scenario schema is most of what loading the suite costs (about
0.3 s of CPU for the shipped suite, in every command that loads it), and the files rarely
change between two commands. So the kit remembers the SHA-256 digest of every file text it
found valid, in one file per schema: the schema's own digest (with the kit's and
jsonschema's versions) names the file, so a changed rule, room schema or validator starts
a new one. Only "valid" is remembered; a file with problems is checked, and its problems
reported, every time. Nothing but the schema check is skipped: catalogue and cross-
reference checks always run.

The cache lives in ``$SEAMSPEC_CACHE_DIR``, else ``$XDG_CACHE_HOME/seamspec``, else
``~/.cache/seamspec``; ``SEAMSPEC_CACHE_DIR=off`` turns it off. It is an optimisation
only: a cache that cannot be read or written is simply not used, and a line that is not
a digest is ignored. Whoever can write it could make the kit skip the schema check of a
file they choose, as they could edit the kit itself, which lives under the same account.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["SchemaVerdicts"]

_DIGEST = re.compile(r"^[0-9a-f]{64}$")
#: At most this many digests are read from one cache file (a file of a few MiB at most).
_MAX_ENTRIES = 50_000


def _cache_dir() -> Path | None:
    chosen = os.environ.get("SEAMSPEC_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "no") else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "seamspec"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


class SchemaVerdicts:
    """The digests of texts known valid against one schema: this process's and the cache's."""

    def __init__(self, schema: dict[str, Any]) -> None:
        identity = json.dumps(
            {"schema": schema, "kit": _version("seamspec"), "jsonschema": _version("jsonschema")},
            sort_keys=True,
        )
        self._name = f"schema-valid-{hashlib.sha256(identity.encode()).hexdigest()[:32]}.txt"
        self._known: set[str] | None = None
        self._new: set[str] = set()

    @staticmethod
    def digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def known_valid(self, digest: str) -> bool:
        if self._known is None:
            self._known = self._read()
        return digest in self._known or digest in self._new

    def add(self, digest: str) -> None:
        self._new.add(digest)

    def save(self) -> None:
        """Write the new digests out (merged with what is there now); never raises."""
        folder = _cache_dir()
        if folder is None or not self._new:
            return
        merged = self._read() | self._new
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", dir=folder, prefix=".tmp-", suffix=".txt", delete=False, encoding="ascii"
            ) as handle:
                handle.write("".join(f"{d}\n" for d in sorted(merged)[:_MAX_ENTRIES]))
            os.replace(handle.name, folder / self._name)
        except OSError:
            return  # an optimisation only: the next run checks the files again
        self._known = merged
        self._new = set()

    def _read(self) -> set[str]:
        folder = _cache_dir()
        if folder is None:
            return set()
        try:
            with (folder / self._name).open(encoding="ascii", errors="replace") as handle:
                lines = [line.strip() for line in itertools.islice(handle, _MAX_ENTRIES)]
        except OSError:
            return set()
        return {line for line in lines if _DIGEST.match(line)}
