"""The write-path seam (WOC-SEAM-*): when WriteTools calls the hooks, and what it returns.

Each test records what the observer saw on disk at the moment of each hook, so ordering is
checked by content (pre-image vs final bytes), never by timing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from seamspec.reference import (
    ObserverFailureWarning,
    ToolResult,
    WriteObserver,
    WriteObserverChain,
    WriteTools,
)

pytestmark = pytest.mark.anyio

Event = tuple[str, Path, "bytes | None"]


@dataclass
class Recorder:
    """Notes each hook call with the bytes on disk at that moment (None: no file)."""

    annotation: str | None = None
    fail_in: str | None = None
    events: list[Event] = field(default_factory=list)

    def _note(self, hook: str, path: Path) -> None:
        self.events.append((hook, path, path.read_bytes() if path.is_file() else None))
        if self.fail_in == hook:
            raise RuntimeError(f"observer broke in {hook}")

    async def before_write(self, path: Path) -> None:
        self._note("before_write", path)

    async def after_write(self, path: Path) -> str | None:
        self._note("after_write", path)
        return self.annotation


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace.resolve()


def test_recorder_is_a_write_observer() -> None:
    assert isinstance(Recorder(), WriteObserver)


def test_tool_result_text_appends_with_one_blank_line() -> None:
    assert ToolResult(True, "edited a.txt", None).text == "edited a.txt"
    assert ToolResult(True, "edited a.txt", "").text == "edited a.txt"
    assert ToolResult(True, "edited a.txt", "diff").text == "edited a.txt\n\ndiff"


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="existing directory"):
        WriteTools(tmp_path / "nope")


@pytest.fixture
def sandbox(root: Path) -> Path:
    """A root with a secret, an escaping symlink and a link to the secret."""
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_bytes(b"outside\n")
    (root / ".env").write_bytes(b"SECRET=1\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "key.txt").write_bytes(b"key\n")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "innocent-name").symlink_to(root / ".env")
    (root / "loop").symlink_to(root / "loop")
    return root


REFUSED = [
    "/etc/hostname",
    "../outside/victim.txt",
    "sub/../../outside/victim.txt",
    "escape/victim.txt",
    "",
    ".",
    ".env",
    "./.env",
    "innocent-name",
    "secrets/key.txt",
    "keys/deep/id.pem",
    "loop/x.txt",
]


@pytest.mark.parametrize("op", ["write", "edit", "delete"])
@pytest.mark.parametrize("path", REFUSED)
async def test_refused_call_touches_nothing_and_calls_no_hook(
    sandbox: Path, path: str, op: str
) -> None:
    recorder = Recorder(annotation="must not appear")
    tools = WriteTools(sandbox, recorder, deny=[".env", "secrets", "*.pem"])
    before = {p: p.read_bytes() for p in sandbox.parent.rglob("*") if p.is_file()}
    calls: dict[str, Callable[[], Awaitable[ToolResult]]] = {
        "write": lambda: tools.write(path, "pwned\n"),
        "edit": lambda: tools.edit(path, "SECRET", "LEAKED"),
        "delete": lambda: tools.delete(path),
    }
    result = await calls[op]()
    assert result.ok is False
    assert result.message.startswith("refused:"), result.message
    assert result.annotation is None
    assert recorder.events == []
    after = {p: p.read_bytes() for p in sandbox.parent.rglob("*") if p.is_file()}
    assert after == before


async def test_write_new_file_before_sees_absence_after_sees_final_bytes(root: Path) -> None:
    recorder = Recorder()
    result = await WriteTools(root, recorder).write("sub/dir/a.txt", "hello")
    target = root / "sub" / "dir" / "a.txt"
    assert recorder.events == [("before_write", target, None), ("after_write", target, b"hello")]
    assert result == ToolResult(True, "wrote 5 bytes to sub/dir/a.txt", None)
    assert result.text == result.message


async def test_before_write_sees_the_pre_image(root: Path) -> None:
    (root / "a.txt").write_bytes(b"old\n")
    recorder = Recorder()
    result = await WriteTools(root, recorder).write("a.txt", b"new\n")
    path = root / "a.txt"
    assert recorder.events == [("before_write", path, b"old\n"), ("after_write", path, b"new\n")]
    assert result.ok
    assert path.read_bytes() == b"new\n"


@pytest.mark.parametrize(
    ("annotation", "expected"), [("note", "note"), ("", None), (" ", " "), (None, None)]
)
async def test_annotation_is_appended_and_empty_counts_as_none(
    root: Path, annotation: str | None, expected: str | None
) -> None:
    result = await WriteTools(root, Recorder(annotation=annotation)).write("a.txt", "x")
    assert result.annotation == expected
    suffix = "" if expected is None else "\n\n" + expected
    assert result.text == "wrote 1 bytes to a.txt" + suffix


async def test_failing_mutation_calls_before_only_and_reports_the_error(root: Path) -> None:
    (root / "blocker").write_bytes(b"i am a file\n")
    recorder = Recorder(annotation="must not appear")
    result = await WriteTools(root, recorder).write("blocker/a.txt", "x")
    assert result.ok is False
    assert result.message == "write failed: Not a directory"
    assert result.annotation is None
    assert recorder.events == [("before_write", root / "blocker" / "a.txt", None)]
    assert (root / "blocker").read_bytes() == b"i am a file\n"


async def test_unencodable_text_is_an_error_before_any_hook(root: Path) -> None:
    recorder = Recorder()
    result = await WriteTools(root, recorder).write("a.txt", "lone surrogate \udc80")
    assert (result.ok, result.message) == (
        False,
        "write failed: the content cannot be encoded as UTF-8",
    )
    assert recorder.events == []
    assert not (root / "a.txt").exists()


async def test_writing_over_a_directory_fails_after_before_write(root: Path) -> None:
    (root / "adir").mkdir()
    recorder = Recorder()
    result = await WriteTools(root, recorder).write("adir", "x")
    assert (result.ok, result.message) == (False, "write failed: Is a directory")
    assert [hook for hook, _, _ in recorder.events] == ["before_write"]


@pytest.mark.parametrize("hook", ["before_write", "after_write"])
async def test_a_raising_observer_never_fails_the_write(root: Path, hook: str) -> None:
    recorder = Recorder(annotation="note", fail_in=hook)
    with pytest.warns(ObserverFailureWarning, match=hook):
        result = await WriteTools(root, recorder).write("a.txt", "content")
    # A failed before_write still lets after_write annotate; a failed after_write adds nothing.
    expected = None if hook == "after_write" else "note"
    assert result == ToolResult(True, "wrote 7 bytes to a.txt", expected)
    assert (root / "a.txt").read_bytes() == b"content"
    assert [h for h, _, _ in recorder.events] == ["before_write", "after_write"]


async def test_a_raising_observer_in_a_chain_loses_only_its_own_annotation(root: Path) -> None:
    chain = WriteObserverChain([Recorder(fail_in="after_write"), Recorder(annotation="kept")])
    with pytest.warns(ObserverFailureWarning):
        result = await WriteTools(root, chain).write("a.txt", "x")
    assert (result.ok, result.annotation) == (True, "kept")


async def test_a_non_string_annotation_adds_nothing(root: Path) -> None:
    class Odd:
        async def before_write(self, path: Path) -> None:
            pass

        async def after_write(self, path: Path) -> Any:
            return 42

    result = await WriteTools(root, Odd()).write("a.txt", "x")
    assert (result.ok, result.annotation, result.text) == (True, None, result.message)


class Canceller:
    """Cancels the surrounding scope from inside one hook, as a caller's timeout would."""

    def __init__(self, hook: str) -> None:
        self.hook = hook
        self.scope: anyio.CancelScope | None = None
        self.calls: list[str] = []

    async def _maybe_cancel(self, hook: str) -> None:
        self.calls.append(hook)
        if hook == self.hook:
            assert self.scope is not None
            self.scope.cancel()
            await anyio.lowlevel.checkpoint()

    async def before_write(self, path: Path) -> None:
        await self._maybe_cancel("before_write")

    async def after_write(self, path: Path) -> str | None:
        await self._maybe_cancel("after_write")
        return "must not appear"


@pytest.mark.parametrize("hook", ["before_write", "after_write"])
async def test_cancellation_in_a_hook_propagates(root: Path, hook: str) -> None:
    observer = Canceller(hook)
    tools = WriteTools(root, observer)
    returned: list[ToolResult] = []
    with anyio.CancelScope() as scope:
        observer.scope = scope
        returned.append(await tools.write("a.txt", "x"))
    assert scope.cancelled_caught
    assert returned == []
    # Cancelled before the mutation: nothing written. After it: the write stands.
    assert (root / "a.txt").exists() is (hook == "after_write")
    assert observer.calls == (
        ["before_write"] if hook == "before_write" else ["before_write", "after_write"]
    )


async def test_delete_calls_both_hooks(root: Path) -> None:
    path = root / "a.txt"
    path.write_bytes(b"bye\n")
    recorder = Recorder(annotation="gone")
    result = await WriteTools(root, recorder).delete("a.txt")
    assert result == ToolResult(True, "deleted a.txt", "gone")
    assert recorder.events == [("before_write", path, b"bye\n"), ("after_write", path, None)]
    assert not path.exists()


async def test_deleting_a_missing_file_is_a_failed_mutation(root: Path) -> None:
    recorder = Recorder()
    result = await WriteTools(root, recorder).delete("nope.txt")
    assert (result.ok, result.annotation) == (False, None)
    assert result.message == "delete failed: No such file or directory"
    assert recorder.events == [("before_write", root / "nope.txt", None)]


async def test_edit_replaces_one_occurrence_and_keeps_line_endings(root: Path) -> None:
    path = root / "a.txt"
    path.write_bytes(b"one two three\r\n")
    recorder = Recorder()
    result = await WriteTools(root, recorder).edit("a.txt", "two", "2")
    assert result == ToolResult(True, "edited a.txt", None)
    assert recorder.events == [
        ("before_write", path, b"one two three\r\n"),
        ("after_write", path, b"one 2 three\r\n"),
    ]


@pytest.mark.parametrize(
    ("content", "old", "reason"),
    [
        (None, "x", "does not exist"),
        (b"abc\n", "zzz", "does not occur"),
        (b"ab ab\n", "ab", "occurs 2 times"),
        (b"abc\n", "", "is empty"),
        (b"\xff\xfe\n", "x", "not UTF-8"),
    ],
)
async def test_edit_that_cannot_apply_calls_no_hook(
    root: Path, content: bytes | None, old: str, reason: str
) -> None:
    path = root / "a.txt"
    if content is not None:
        path.write_bytes(content)
    recorder = Recorder()
    result = await WriteTools(root, recorder).edit("a.txt", old, "new")
    assert result.ok is False
    assert result.message.startswith("edit failed:")
    assert reason in result.message
    assert recorder.events == []
    assert (path.read_bytes() if path.exists() else None) == content


async def test_hooks_get_the_resolved_file_behind_an_internal_symlink(root: Path) -> None:
    (root / "real.txt").write_bytes(b"v1")
    (root / "alias").symlink_to(root / "real.txt")
    recorder = Recorder()
    result = await WriteTools(root, recorder).write("alias", "v2")
    assert result.message == "wrote 2 bytes to real.txt"
    assert recorder.events == [
        ("before_write", root / "real.txt", b"v1"),
        ("after_write", root / "real.txt", b"v2"),
    ]


async def test_tools_work_without_an_observer(root: Path) -> None:
    tools = WriteTools(root)
    assert (await tools.write("a.txt", "abc")).ok
    assert (await tools.edit("a.txt", "b", "B")).ok
    assert (root / "a.txt").read_bytes() == b"aBc"
    assert (await tools.delete("a.txt")).ok
    assert not (root / "a.txt").exists()
