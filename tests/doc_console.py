"""Run the console examples of the docs and compare what they print (Sybil evaluators).

Two kinds of fenced blocks hold commands in ``README.md`` and ``docs/**/*.md``:

- ``console`` blocks are sessions: each ``$ command`` line is run in a shell and the lines
  after it, up to the next ``$``, are what it must print (stdout and stderr together, as a
  terminal shows them). ``...`` stands for any text, within a line or across lines, and
  durations (``12 ms``, ``13.4 s``) are compared as placeholders, so a slower machine does
  not fail the docs. Every command must exit 0, pipelines included (they run with
  ``pipefail``), so an error cannot hide behind ``...``: a page shows a non-zero exit
  as ``cmd || echo "exit $?"`` followed by the line it prints. ``$ cd DIR`` changes the
  folder for the commands after it. All blocks of one page share one scratch folder in
  which the repository's ``docs``, ``examples``, ``scenarios`` and ``benchmarks`` folders
  appear as links, so a page can use files an earlier block wrote.
- ``shell`` blocks are commands to type that are not run here (installing, launching an
  editor, runs that take minutes). They may show no output (anything shown must be tested,
  so it belongs in a ``console`` block), and every ``seamspec`` command in them must be
  accepted by the real command-line parser, so a renamed option cannot linger in them.

Why Sybil: it finds the blocks (fences and ``<!-- invisible-code-block: console -->``
comments for setup a reader need not see), keeps one namespace per page and reports the
page and line of a failing block; this module only says what a block means.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser

REPO = Path(__file__).resolve().parents[1]
LINKED = ("docs", "examples", "scenarios", "benchmarks", "schemas")
COMMAND_TIME_LIMIT = 600.0
_DURATION = re.compile(r"\b\d+(?:\.\d+)? ?(?:ms|s)\b")
_ELLIPSIS = re.escape("...")


@dataclass
class Command:
    """One ``$`` line of a console block and the output the docs show for it."""

    text: str
    line: int
    expected: list[str] = field(default_factory=list)


def split_session(source: str, first_line: int) -> list[Command]:
    """Cut a console block into commands, each with the output lines that follow it."""
    commands: list[Command] = []
    for offset, raw in enumerate(source.splitlines()):
        if raw.startswith("$ "):
            commands.append(Command(raw[2:], first_line + offset))
        elif commands:
            commands[-1].expected.append(raw.rstrip())
        elif raw.strip():
            raise AssertionError(
                f"line {first_line + offset}: a console block starts with a '$ ' command; "
                "output shown without its command belongs after the command that prints it"
            )
    return commands


def _normalise(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return _DURATION.sub("<duration>", "\n".join(lines))


def output_matches(expected: list[str], actual: str) -> bool:
    """True when ``actual`` is ``expected`` with each ``...`` standing for any text."""
    pattern = re.escape(_normalise("\n".join(expected))).replace(_ELLIPSIS, ".*?")
    return re.fullmatch(pattern, _normalise(actual), re.DOTALL) is not None


def _scratch(namespace: dict[str, object]) -> Path:
    """The page's scratch folder: fresh per page, with the repository folders linked in."""
    folder = namespace.get("scratch")
    if isinstance(folder, Path):
        return folder
    made = Path(tempfile.mkdtemp(prefix="seamspec-docs-"))
    for name in LINKED:
        (made / name).symlink_to(REPO / name, target_is_directory=True)
    namespace["scratch"] = made
    namespace["cwd"] = made
    return made


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    # The commands of the docs are the installed ones of this interpreter's environment.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "100"
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


def run_console(example: Example) -> None:
    """Evaluate one ``console`` block (Sybil calls this with the page's namespace)."""
    namespace = example.namespace
    _scratch(namespace)
    source = example.parsed
    assert isinstance(source, str)
    for command in split_session(source, example.line + 1):
        where = f"{example.path}:{command.line}"
        cwd = namespace["cwd"]
        assert isinstance(cwd, Path)
        words = shlex.split(command.text, comments=True)
        if words[:1] == ["cd"]:
            target = (cwd / words[1]).resolve() if len(words) > 1 else namespace["scratch"]
            assert isinstance(target, Path)
            assert target.is_dir(), f"{where}: no folder {target}"
            namespace["cwd"] = target
            continue
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command.text],
            cwd=cwd,
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=COMMAND_TIME_LIMIT,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(
                f"{where}: `{command.text}` exited {done.returncode}. Every command on a page "
                "must exit 0 (pipelines included: they run with pipefail), so that an "
                'error cannot hide behind "..."; to show a non-zero exit, append '
                f'`|| echo "exit $?"` and show that line. It printed:\n{done.stdout}'
            )
        if command.expected and not output_matches(command.expected, done.stdout):
            shown = "\n".join(command.expected)
            raise AssertionError(
                f"{where}: `{command.text}` printed something other than the docs show.\n"
                f"--- the docs show:\n{shown}\n--- it printed:\n"
                f"{done.stdout}\nUpdate the block with the real output ('...' stands "
                "for any text) or fix the command."
            )


def check_shell(example: Example) -> None:
    """Evaluate one ``shell`` block: commands only, and the kit's own must parse."""
    from seamspec._cli import _parser

    source = example.parsed
    assert isinstance(source, str)
    for offset, raw in enumerate(source.splitlines()):
        where = f"{example.path}:{example.line + 1 + offset}"
        if not raw.strip():
            continue
        assert raw.startswith("$ "), (
            f"{where}: a shell block lists commands only; output shown must be tested, "
            "so show it in a console block"
        )
        words = shlex.split(raw[2:], comments=True)
        if words[:1] == ["seamspec"]:
            try:
                _parser().parse_args(words[1:])
            except SystemExit as exit_:
                raise AssertionError(
                    f"{where}: the command line parser refuses `{raw[2:]}` (exit {exit_.code})"
                ) from None


DOCS = Sybil(
    parsers=[
        CodeBlockParser(language="console", evaluator=run_console),
        CodeBlockParser(language="shell", evaluator=check_shell),
    ]
)


def pages() -> list[Path]:
    """Every page whose examples are tested: the README and everything under docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
