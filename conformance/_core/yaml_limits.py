"""What one YAML file may cost, and the problem raised when it costs more.

Apart from the loader so that both of its halves (reading the text, composing the data)
share one definition, and so that docs and tests can name the figures.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LIMITS", "SAFE_INTEGER", "Limits", "YamlProblem"]


@dataclass(frozen=True)
class Limits:
    """What one YAML file may cost. Far above any real scenario (the largest shipped file
    is under 2 KiB, 9 levels deep, 150 values, with no alias), far below what would hurt
    the kit."""

    #: bytes in the file
    file_bytes: int = 128 * 1024
    #: lists and mappings inside each other, aliases expanded
    depth: int = 32
    #: alias uses (``*name``)
    aliases: int = 100
    #: values (every scalar, list, mapping and key), aliases expanded
    values: int = 2_000
    #: characters in one string
    string_chars: int = 64 * 1024
    #: characters in all strings together, aliases expanded
    text_chars: int = 1024 * 1024
    #: characters in one integer literal (checked before it is converted)
    integer_chars: int = 40


LIMITS = Limits()

#: The largest integer magnitude accepted: every JSON reader (JavaScript's included)
#: holds integers up to 2^53 - 1 exactly, and a scenario must mean the same everywhere.
SAFE_INTEGER = 2**53 - 1


class YamlProblem(Exception):
    """One thing wrong with a YAML file, with its 1-based line when it has one."""

    def __init__(self, message: str, line: int | None, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.hint = hint
