"""Scenario files as a hostile user writes them: each one is refused with file:line, exit 2.

Every case here was reproduced on the kit before the loader was bounded (issue 14):
billion-laughs files ran for minutes, self-referencing aliases and deep nesting ended in
RecursionError, wrong types in TypeError, and files that validated crashed the kit or
failed the reference at run time. Each is now one located problem, never a traceback,
and a hostile file never hides the problems of the files next to it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from seamspec._cli import main
from seamspec.conformance import validate_files
from seamspec.conformance._contracts.shell_output.model import SCRIPT_LIMIT
from seamspec.conformance._core import yaml_composer
from seamspec.conformance._core.yaml_loader import LIMITS, SAFE_INTEGER

ROOT = Path(__file__).parents[1]
SUITE = ROOT / "scenarios"
LOCATED = re.compile(r"^(?P<file>[^:\n]+\.ya?ml):(?P<line>\d+): (?P<message>.+)$", re.MULTILINE)


def _laughs(levels: int) -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        name, previous = chr(ord("a") + level), chr(ord("a") + level - 1)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + "\n"


#: name -> (file bytes, a piece of the message, the line it must name)
HOSTILE: dict[str, tuple[bytes, str, int]] = {
    "laughs-5": (_laughs(5).encode(), "values once aliases are expanded", 4),
    "laughs-9": (_laughs(9).encode(), "values once aliases are expanded", 4),
    "self-alias-list": (b"x: &r [*r]\n", "refers to a list or mapping that contains it", 1),
    "self-alias-map": (b"x: &r\n  y: *r\n", "refers to a list or mapping that contains it", 2),
    "brackets-500": (b"[" * 500 + b"]" * 500 + b"\n", "nested more than 32 deep", 1),
    # PyYAML's scanner weighs every open bracket at every token: 3,000 took over a second
    "brackets-3000": (b"x: " + b"[" * 3000 + b"\n", "nested more than 32 deep", 1),
    "braces-3000": (b"x: " + b"{a: " * 3000 + b"\n", "nested more than 32 deep", 1),
    "mappings-300": (
        "".join("  " * i + f"k{i}:\n" for i in range(150)).encode() + b"  " * 300 + b"v\n",
        "nested more than 32 deep",
        33,
    ),
    "digits-5000": (b"id: x\ntimeout: " + b"9" * 5000 + b"\n", "an integer of 5,000 characters", 2),
    "integer-2-64": (b"id: x\nn: 18446744073709551616\n", "outside", 2),
    "nan": (b"id: x\nn: .nan\n", "not a finite number", 2),
    "infinity": (b"id: x\nn: -.inf\n", "not a finite number", 2),
    "overflowing-float": (b"id: x\nn: 1.0e+999\n", "not a finite number", 2),
    "huge-file": (b"description: '" + b"x" * (LIMITS.file_bytes + 10) + b"'\n", "larger than", 1),
    "huge-string": (
        b'id: x\ntitle: "' + b"y" * (LIMITS.string_chars + 1) + b'"\n',
        "a string of 65,537 characters",
        2,
    ),
    "many-values": (b"[" + b"1," * (LIMITS.values + 10) + b"1]\n", "more than 2,000 values", 1),
    "many-aliases": (
        b"a: &a x\nb: [" + b", ".join([b"*a"] * (LIMITS.aliases + 1)) + b"]\n",
        "more than 100 aliases",
        2,
    ),
    "invalid-utf8": (b"id: x\ntitle: caf\xc3\n", "not UTF-8 text", 2),
    "utf16": ("id: x\n".encode("utf-16"), "UTF-16", 1),
    "utf16-without-bom": ("id: x\n".encode("utf-16-le"), "looks like UTF-16", 1),
    "utf32": ("id: x\n".encode("utf-32"), "UTF-16 or UTF-32", 1),
    "control-character": (b"id: x\ntitle: a\x07b\n", "control character U+0007", 2),
    "nul-character": (b"id: x\n\ntitle: a\x00b\n", "control character U+0000", 3),
    "lone-surrogate": (b'id: x\ntitle: "a\\ud800b"\n', "lone surrogate", 2),
    "surrogate-pair-escapes": (b'id: x\ntitle: "\\ud83d\\ude00"\n', "lone surrogate", 2),
    "date": (b"id: x\ntitle: 2024-01-01\n", "as a date", 2),
    "explicit-bool": (b"id: x\nn: !!bool yes please\n", "cannot read 'yes please' as a bool", 2),
    "explicit-timestamp": (b"id: x\nn: !!timestamp soon\n", "as a timestamp", 2),
    "binary": (b"id: x\ntitle: !!binary aGVsbG8=\n", "binary data", 2),
    "python-tag": (b"id: !!python/object/apply:os.system ['true']\n", "unsupported YAML tag", 1),
    "local-tag": (b"id: x\ntitle: !mine 3\n", "unsupported YAML tag", 2),
    "set-tag": (b"id: x\ntags: !!set {a, b}\n", "unsupported YAML tag", 2),
    "empty": (b"", "the file is empty", 1),
    "a-list": (b"- 1\n- 2\n", "not a mapping of scenario fields", 1),
    "two-documents": (b"id: x\n---\nid: y\n", "several YAML documents", 2),
    "boolean-key": (b"id: x\nyes: 1\n", "is not a string", 2),
    "undefined-alias": (b"id: *nowhere\n", "undefined alias", 1),
}


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / f"{name}.yaml"
    path.write_bytes(data)
    return path


def _located(err: str) -> dict[str, list[tuple[int, str]]]:
    found: dict[str, list[tuple[int, str]]] = {}
    for match in LOCATED.finditer(err):
        found.setdefault(match["file"], []).append((int(match["line"]), match["message"]))
    return found


@pytest.fixture(params=["libyaml", "python"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both YAML parsers the loader can read events from: libyaml's, and PyYAML's own
    for an install without libyaml."""
    if request.param == "python":
        monkeypatch.setattr(yaml_composer, "_C_LOADER", None)
    elif yaml_composer._C_LOADER is None:
        pytest.skip("PyYAML is installed without libyaml")
    return str(request.param)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_is_one_located_problem_at_once(
    name: str, parser: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, message, line = HOSTILE[name]
    path = _write(tmp_path, name, data)
    started = time.process_time()  # CPU: wall time on a shared CI machine is noise
    assert main(["validate", str(path)]) == 2
    assert time.process_time() - started < 2.0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    problems = _located(err)[str(path)]
    assert any(at == line and message in text for at, text in problems), err


def test_one_hostile_file_never_hides_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, (data, _, _) in HOSTILE.items():
        _write(tmp_path, name, data)
    good = SUITE / "write-observer-chain" / "woc-join-two-annotations.yaml"
    (tmp_path / good.name).write_bytes(good.read_bytes())
    other = SUITE / "write-observer-chain" / "woc-after-write-same-order-not-reversed.yaml"
    typo = other.read_text(encoding="utf-8").replace("[WOC-ORDER-AFTER,", "[WOC-ORDER-AFTR,")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / other.name).write_text(typo, encoding="utf-8")
    assert main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    problems = _located(err)
    for name in HOSTILE:
        assert str(tmp_path / f"{name}.yaml") in problems, name
    typo_problems = problems[str(tmp_path / "sub" / other.name)]
    assert any("unknown rule ID 'WOC-ORDER-AFTR'" in m for _, m in typo_problems)
    assert err.rstrip().endswith("1 valid scenario file(s)")


def test_run_refuses_a_hostile_folder_before_running_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("laughs-9", "self-alias-list", "brackets-3000", "digits-5000"):
        _write(tmp_path, name, HOSTILE[name][0])
    assert main(["run", "--scenarios", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert len(_located(captured.err)) == 4
    assert "nothing was run" in captured.err
    assert captured.out == ""


def test_a_problem_in_the_kit_is_reported_for_its_file_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last line of defence: a bug in a room's linter names the file, as a kit bug."""
    from seamspec.conformance._core import scenario as scenario_module

    def broken_lint(data: dict[str, object]) -> list[tuple[tuple[str | int, ...], str]]:
        raise KeyError("observers")

    monkeypatch.setattr(
        scenario_module, "contract_linters", lambda: {"write-observer-chain": broken_lint}
    )
    good = SUITE / "write-observer-chain" / "woc-join-two-annotations.yaml"
    (tmp_path / good.name).write_bytes(good.read_bytes())
    soo = next((SUITE / "shell-output").glob("*.yaml"))
    (tmp_path / soo.name).write_bytes(soo.read_bytes())
    scenarios, problems = validate_files([tmp_path])
    (problem,) = problems
    assert problem.file == str(tmp_path / good.name)
    assert problem.line == 1
    assert "bug in seamspec" in problem.message
    assert "KeyError" in problem.message
    assert [s.id for s in scenarios] == [soo.stem]


def test_wrong_types_at_the_top_level_are_schema_problems(tmp_path: Path) -> None:
    good = (SUITE / "write-observer-chain" / "woc-join-two-annotations.yaml").read_text("utf-8")
    for field, value in (("rules", "5"), ("rules", "{a: 1}"), ("contract", "[1]"), ("id", "7")):
        text = re.sub(rf"^{field}: .*$", f"{field}: {value}", good, count=1, flags=re.MULTILINE)
        path = tmp_path / "woc-join-two-annotations.yaml"
        path.write_text(text, encoding="utf-8")
        _, problems = validate_files([path])
        line = text.splitlines().index(f"{field}: {value}") + 1
        assert any(p.line == line and f"at {field}:" in p.message for p in problems), problems


def test_a_line_break_quoted_from_a_file_stays_on_its_line(tmp_path: Path) -> None:
    good = (SUITE / "write-observer-chain" / "woc-join-two-annotations.yaml").read_text("utf-8")
    path = tmp_path / "woc-join-two-annotations.yaml"
    path.write_text(good.replace("id: woc-join-two-annotations", 'id: "woc-join\\nx"'), "utf-8")
    _, problems = validate_files([path])
    assert problems
    for problem in problems:
        assert "\n" not in str(problem)
    assert any("woc-join\\nx.yaml" in str(p) for p in problems)


def test_a_fifo_is_refused_instead_of_blocking(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "woc-fifo.yaml")
    _, problems = validate_files([tmp_path])
    (problem,) = problems
    assert "not a regular file" in problem.message


def test_a_file_with_hundreds_of_problems_lists_twenty(tmp_path: Path) -> None:
    good = (SUITE / "write-observer-chain" / "woc-join-two-annotations.yaml").read_text("utf-8")
    steps = "".join(f"  - call: {{id: c{i}, hook: after_wrte, path: x.py}}\n" for i in range(150))
    text = good.split("when:")[0] + "when:\n" + steps + "then: {calls: []}\n"
    path = tmp_path / "woc-join-two-annotations.yaml"
    path.write_text(text, encoding="utf-8")
    _, problems = validate_files([path])
    assert len(problems) == 21
    assert problems[-1].message.startswith("... and 130 more problem(s)")


def test_a_quoted_value_in_a_message_is_cut_short(tmp_path: Path) -> None:
    good = (SUITE / "write-observer-chain" / "woc-join-two-annotations.yaml").read_text("utf-8")
    text = re.sub(r"^title: .*$", f"title: {'t' * 60000}", good, count=1, flags=re.MULTILINE)
    path = tmp_path / "woc-join-two-annotations.yaml"
    path.write_text(text, encoding="utf-8")
    _, problems = validate_files([path])
    (problem,) = problems
    assert "is too long" in problem.message
    assert len(problem.message) < 320


# -- files that validate today but cannot run correctly: refused at load time ----------


def _variant(tmp_path: Path, relative: str, old: str, new: str) -> tuple[Path, int]:
    """A shipped scenario with one edit, and the (1-based) line of the edit."""
    text = (SUITE / relative).read_text(encoding="utf-8")
    assert old in text, f"{relative} no longer contains {old!r}"
    edited = text.replace(old, new, 1)
    path = tmp_path / Path(relative).name
    path.write_text(edited, encoding="utf-8")
    return path, edited[: edited.index(new)].count("\n") + 1


@pytest.mark.parametrize(
    ("relative", "old", "new", "message"),
    [
        (
            "write-observer-chain/woc-builtin-formatter-hang-under-chain-limit.yaml",
            "hook_time_limit: 1.0",
            "hook_time_limit: .nan",
            "not a finite number",
        ),
        (
            "write-observer-chain/woc-builtin-formatter-hang-under-chain-limit.yaml",
            "hook_time_limit: 1.0",
            "hook_time_limit: 1.0e+300",
            "greater than the maximum of 4",
        ),
        (
            "dispatch-recorder/dr-inject-record-hangs-past-limit.yaml",
            "record_time_limit: 0.05",
            "record_time_limit: .inf",
            "not a finite number",
        ),
        (
            "dispatch-recorder/dr-inject-record-hangs-past-limit.yaml",
            "record_time_limit: 0.05",
            "record_time_limit: 100000",
            "greater than the maximum of 4",
        ),
        (
            "shell-output/soo-timeout-does-not-wait.yaml",
            "timeout: 2.0",
            "timeout: .nan",
            "not a finite number",
        ),
        (
            "write-observer-chain/woc-after-write-same-order-not-reversed.yaml",
            "path: app.py}",
            'path: "app\\0.py"}',
            "without a NUL byte",
        ),
        (
            "write-observer-chain/woc-join-two-annotations.yaml",
            '{return: "x.py:1:1: E1 bad"}',
            '{return: "x.py:1:1: \\ud800 bad"}',
            "lone surrogate",
        ),
        (
            "dispatch-recorder/dr-journal-flipped-byte-detected.yaml",
            "{flip_byte: {entry: 1, offset: 40}}",
            "{flip_byte: {entry: 3, offset: 40}}",
            "entry 3 does not exist: this turn journals at most 3 entries",
        ),
        (
            "dispatch-recorder/dr-journal-reordered-entries-detected.yaml",
            "tamper_journal: {swap: [0, 2]}",
            "tamper_journal: {swap: [0, 9]}",
            "entry 9 does not exist",
        ),
        (
            "dispatch-recorder/dr-journal-reordered-entries-detected.yaml",
            "tamper_journal: {swap: [0, 2]}",
            "tamper_journal: {swap: [2, 2]}",
            "names entry 2 twice",
        ),
        (
            "dispatch-recorder/dr-cancel-during-rewrite-record.yaml",
            "wait_record: {count: 1}",
            "wait_record: {count: 1000}",
            "waits for 1000 record calls, but the policy asks for only 1 mutation(s)",
        ),
        (
            "dispatch-recorder/dr-journal-deleted-entry-detected.yaml",
            "tamper_journal: {delete: 1}",
            "tamper_journal: {delete: 7}",
            "entry 7 does not exist",
        ),
    ],
    ids=lambda value: value if "/" not in str(value) else Path(str(value)).stem,
)
def test_a_file_that_cannot_run_correctly_is_refused_at_its_line(
    tmp_path: Path, relative: str, old: str, new: str, message: str
) -> None:
    path, line = _variant(tmp_path, relative, old, new)
    _, problems = validate_files([path])
    assert any(p.line == line and message in str(p) for p in problems), problems


def test_an_emitter_script_too_long_for_one_argument_is_refused(tmp_path: Path) -> None:
    """It used to fail the reference with "Argument list too long" (a false FAIL)."""
    chunk = "x" * 1000
    steps = "".join(f'    - {{out: "{chunk}"}}\n' for _ in range(SCRIPT_LIMIT // 1000 + 5))
    path, line = _variant(
        tmp_path,
        "shell-output/soo-timeout-unobserved.yaml",
        "    - {out: partial}\n",
        "    - {out: partial}\n" + steps,
    )
    _, problems = validate_files([path])
    (problem,) = problems
    assert "bytes as JSON; the limit is 100,000" in problem.message
    assert problem.line is not None
    assert problem.line <= line


def test_a_script_just_under_the_limit_still_runs_on_the_reference(tmp_path: Path) -> None:
    chunk = "x" * 1000
    steps = "".join(f'    - {{out: "{chunk}"}}\n' for _ in range(SCRIPT_LIMIT // 1000 - 5))
    path, _ = _variant(
        tmp_path,
        "shell-output/soo-timeout-unobserved.yaml",
        "    - {out: partial}\n",
        "    - {out: partial}\n" + steps,
    )
    # what the time-limited run returns depends on how much was written before the limit
    text = path.read_text(encoding="utf-8").replace("stdout: partial, ", "")
    path.write_text(text, encoding="utf-8")
    assert main(["run", "-q", "--scenarios", str(path)]) == 0


# -- the limits are documented where authors look ----------------------------------------


def test_docs_state_the_limits() -> None:
    text = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    for figure in (
        f"{LIMITS.file_bytes // 1024} KiB",
        f"{LIMITS.depth}",
        f"{LIMITS.aliases}",
        f"{LIMITS.values:,}",
        f"{LIMITS.string_chars // 1024} KiB",
        f"{LIMITS.text_chars // (1024 * 1024)} MiB",
        f"{SAFE_INTEGER:,}",
        f"{SCRIPT_LIMIT:,}",
    ):
        assert figure in text, f"docs/scenarios.md does not state the limit {figure}"


def test_both_parsers_read_the_shipped_suite_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    from seamspec.conformance._core.yaml_loader import load_yaml

    files = sorted(SUITE.rglob("*.yaml"))
    with_c = [load_yaml(f.read_text(encoding="utf-8")) for f in files]
    monkeypatch.setattr(yaml_composer, "_C_LOADER", None)
    for path, c in zip(files, with_c, strict=True):
        python = load_yaml(path.read_text(encoding="utf-8"))
        assert python.data == c.data, path
        assert python._lines == c._lines, path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("- cancel: {id: a, within: 0.5}\n", "", "a detached grandchild leaves the process group"),
        ("- {release: free}\n", "", "a later `release` step must release it"),
    ],
    ids=["not-cancelled", "gate-never-released"],
)
def test_a_detached_grandchild_only_where_upstream_is_clear(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    """No group kill ends it: only a cancelled or timed call, releasing its gate."""
    path, _ = _variant(
        tmp_path, "shell-output/soo-cancel-detached-grandchild-writes-after-kill.yaml", old, new
    )
    _, problems = validate_files([path])
    assert any(message in str(p) for p in problems), problems


def test_a_detached_grandchild_in_a_timed_call_is_allowed(tmp_path: Path) -> None:
    """A time limit bounds the call as a cancellation does (shell_tool.rs:918-925)."""
    path, _ = _variant(
        tmp_path,
        "shell-output/soo-cancel-detached-grandchild-writes-after-kill.yaml",
        "- cancel: {id: a, within: 0.5}\n",
        "",
    )
    text = path.read_text().replace(
        "    observer: pane\n", "    observer: pane\n    timeout: 1.0\n"
    )
    path.write_text(text)
    _, problems = validate_files([path])
    assert not problems, problems
