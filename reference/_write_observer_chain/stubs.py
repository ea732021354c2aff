"""The kit's own child programs: a tiny formatter, a tiny checker and their failure modes.

Formatter and diagnostics observers exist to run external programs, so the kit must run
real ones; but a scenario that could name any command line would depend on what is
installed and could do anything. Scenarios therefore name only these programs, which ship
with the kit, behave identically everywhere and are small enough to read in a minute.

Run as ``python -m seamspec.reference._write_observer_chain.stubs PROGRAM [ARGS]``; see :data:`STUB_PROGRAMS`.
The package ``__init__`` imports this module lazily, so running it with ``-m`` prints no
``RuntimeWarning`` to stderr (stderr is part of what ``tidy-fail`` is tested on).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["STUB_PROGRAMS", "lint_text", "main", "stub_command", "tidy_text"]

MAX_LINE_LENGTH = 79


def tidy_text(text: str) -> str:
    """The ``tidy`` formatting rules, as a pure function so tests can state them directly.

    Trailing spaces and tabs go; tabs in the leading indentation become four spaces; a run
    of three or more blank lines becomes one (runs of one or two are kept); the text ends
    with exactly one newline. Text with no content at all (empty or only blank lines)
    becomes empty, since a lone newline would be a file of one blank line.
    """
    lines = text.split("\n")
    out: list[str] = []
    blanks = 0
    for raw in lines:
        line = raw.rstrip(" \t")
        body = line.lstrip(" \t")
        line = line[: len(line) - len(body)].replace("\t", "    ") + body
        if line:
            out.extend([""] if blanks >= 3 else [""] * blanks)
            blanks = 0
            out.append(line)
        else:
            blanks += 1
    if not out:
        return ""
    # Blank lines before the first content line are kept under the same collapsing rule;
    # blank lines at the end are dropped by not flushing ``blanks``.
    return "\n".join(out) + "\n"


def lint_text(label: str, text: str) -> list[str]:
    """The ``lint`` findings for ``text``, one ``LABEL:LINE:COL: CODE message`` each.

    Columns are 1-based and point at the offending character, so the same finding is found
    at the same place by anyone re-implementing the checker.
    """
    findings: list[tuple[int, int, str]] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    for number, raw in enumerate(lines, start=1):
        line = raw.removesuffix("\r")
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent:
            findings.append((number, indent.index("\t") + 1, "W191 tab indentation"))
        stripped = line.rstrip(" \t")
        if stripped != line:
            findings.append((number, len(stripped) + 1, "W291 trailing whitespace"))
        if len(line) > MAX_LINE_LENGTH:
            message = f"E501 line too long ({len(line)} > {MAX_LINE_LENGTH})"
            findings.append((number, MAX_LINE_LENGTH + 1, message))
        if "TODO" in line:
            findings.append((number, line.index("TODO") + 1, "T001 TODO left in code"))
    findings.sort()
    return [f"{label}:{line}:{col}: {message}" for line, col, message in findings]


def _read_stdin() -> str:
    # surrogateescape keeps arbitrary bytes intact through the round trip to stdout.
    return sys.stdin.buffer.read().decode("utf-8", errors="surrogateescape")


def _tidy(args: Sequence[str]) -> int:
    if args:
        return _usage("tidy takes no arguments; it reads stdin")
    formatted = tidy_text(_read_stdin())
    sys.stdout.buffer.write(formatted.encode("utf-8", errors="surrogateescape"))
    sys.stdout.flush()
    return 0


def _tidy_fail(args: Sequence[str]) -> int:
    if args:
        return _usage("tidy-fail takes no arguments; it reads stdin")
    _read_stdin()  # drained, so the writer never sees a broken pipe
    print("tidy-fail: cannot parse input", file=sys.stderr)
    return 1


def _tidy_hang(args: Sequence[str]) -> int:
    # Arguments are ignored so that it can stand in for any program, checkers included.
    while True:
        time.sleep(3600)


def _lint(args: Sequence[str]) -> int:
    if len(args) != 1:
        return _usage("lint takes exactly one argument: PATH")
    label = args[0]
    try:
        with open(label, "rb") as handle:
            text = handle.read().decode("utf-8", errors="replace")
    except OSError as error:
        print(f"lint: {label}: {error.strerror or error}", file=sys.stderr)
        return 2
    findings = lint_text(label, text)
    for finding in findings:
        print(finding)
    return 1 if findings else 0


_PROGRAMS: dict[str, Callable[[Sequence[str]], int]] = {
    "tidy": _tidy,
    "tidy-fail": _tidy_fail,
    "tidy-hang": _tidy_hang,
    "lint": _lint,
}

#: The only program names a scenario may use.
STUB_PROGRAMS: frozenset[str] = frozenset(_PROGRAMS)


def stub_command(program: str, *args: str) -> list[str]:
    """The argv that runs a stub with this interpreter, so no PATH lookup is involved.

    The stub is run by its file path, not with ``-m``: ``-m`` puts the current folder
    first on ``sys.path``, and from a seamspec source checkout that shadows the
    installed package. This file imports only the standard library, so it runs anywhere.
    """
    if program not in STUB_PROGRAMS:
        known = ", ".join(sorted(STUB_PROGRAMS))
        raise ValueError(f"unknown stub program {program!r}; the kit's programs are: {known}")
    return [sys.executable, str(Path(__file__).resolve()), program, *args]


def _usage(problem: str) -> int:
    print(f"seamspec stubs: {problem}", file=sys.stderr)
    print(
        f"usage: python -m seamspec.reference._write_observer_chain.stubs {{{','.join(sorted(_PROGRAMS))}}} [ARGS]",
        file=sys.stderr,
    )
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a program; returns its exit status (2 for usage errors)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        return _usage("no program named")
    program, rest = args[0], args[1:]
    if program not in _PROGRAMS:
        return _usage(f"unknown program {program!r}")
    return _PROGRAMS[program](rest)


if __name__ == "__main__":
    raise SystemExit(main())
