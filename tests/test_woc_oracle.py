"""The WOC oracle on hand-written traces: the findings no in-process run can produce.

The Python driver always records ``elapsed``, the folder outside the sandbox, the
folders of both and a ``call_end`` for every call, so these findings can only come from
an adapter in another language that leaves them out (or, for folders, from a tool that
makes one where it must not). They are checked here, on the smallest traces that show
them, and listed as such on the contract page ("Oracle coverage").
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.write_observer_chain import joins, model, oracle, sandbox


def _request(given: dict[str, Any], when: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "woc-x", "contract": "write-observer-chain", "given": given, "when": when}


def test_a_bounded_call_without_elapsed_is_a_finding_under_its_rule() -> None:
    request = _request(
        {"hook_time_limit": 1.0, "observers": []},
        [{"call": {"id": "c1", "hook": "after_write", "path": "a.py", "within": 2.0}}],
    )
    trace: list[dict[str, Any]] = [
        {"type": "call_start", "call": "c1", "hook": "after_write", "path": "a.py"},
        {"type": "call_end", "call": "c1", "outcome": "returned", "value": None},
    ]
    found = oracle.check(request, {}, trace)
    assert [rule for rule, _ in found] == ["WOC-SLOW-BOUNDED"]
    assert "elapsed" in found[0][1]
    trace[-1]["elapsed"] = 2.5
    assert [rule for rule, _ in oracle.check(request, {}, trace)] == ["WOC-SLOW-BOUNDED"]
    trace[-1]["elapsed"] = 1.5
    assert oracle.check(request, {}, trace) == []


def test_a_trace_without_the_outside_folder_cannot_be_cleared() -> None:
    request = _request({"outside": {"secret.txt": "s\n"}, "observers": []}, [])
    found = oracle.check(request, {}, [{"type": "files", "files": {}}])
    assert [rule for rule, _ in found] == ["WOC-SEAM-DENIED"]
    changed = [{"type": "files", "files": {}, "outside": {"secret.txt": "leaked\n"}}]
    assert [rule for rule, _ in oracle.check(request, {}, changed)] == ["WOC-SEAM-DENIED"]
    same = [{"type": "files", "files": {}, "outside": {"secret.txt": "s\n"}}]
    assert oracle.check(request, {}, same) == []


def test_sandbox_resolution_follows_links_like_the_kernel() -> None:
    links = {"d": {"to": "deep/dir"}, "loop": {"to": "loop"}, "out": {"outside": "x"}}
    assert sandbox.resolve("d/../f.txt", links) == "deep/f.txt"  # `..` after the link
    assert sandbox.resolve("./a//b/./c", links) == "a/b/c"
    assert sandbox.resolve("loop/x", links) is None
    assert sandbox.resolve("out/x", links) is None
    assert sandbox.resolve("/etc/passwd", links) is None
    assert sandbox.resolve("a/../..", links) is None
    given = {"deny": [".git", "*/node_modules"], "symlinks": links}
    assert sandbox.is_refused(".git/hooks/x", given)
    assert not sandbox.is_refused(".gitignore", given)
    assert sandbox.is_refused("a/node_modules/b", given)
    assert not sandbox.is_refused("node_modules/b", given)
    assert sandbox.is_refused(".", given)


def test_upstream_join_reading_versus_the_exact_one() -> None:
    assert joins.blank_line_join(["a\n", "b"], "a\n\nb")
    assert joins.blank_line_join(["a", "b"], "a\n \n\nb")
    assert not joins.blank_line_join(["a", "b"], "a\nb")
    assert not joins.blank_line_join(["a", "b"], "b\n\na")
    assert not joins.blank_line_join(["a", "b"], "a\n\nx\n\nb")
    assert joins.blank_line_join(["a", "a"], "a\n\na")
    assert not joins.blank_line_join(["a", "a"], "a")
    assert joins.classify(["a\n", "b"], "a\n\nb") == ["WOC-JOIN-EXACT"]
    assert joins.classify(["a", "b"], "a\nb") == ["WOC-JOIN"]
    assert joins.classify(["a", "b"], "a\n\nboom\n\nb", failed=True) == ["WOC-FAIL-CONTAINED"]
    assert joins.classify(["a", "b"], "a\n\nboom\n\nb") == ["WOC-JOIN"]


def _edit_trace(after: str, *, ok: bool = True, hook_path: str = "s.py") -> list[dict[str, Any]]:
    """An edit of ``s.py`` (old text twice) through one silent observer."""
    before = "A\nA\n"
    enter = {"type": "hook_enter", "call": "e1", "observer": "o", "path": hook_path}
    hooks: list[dict[str, Any]] = [] if not ok else [
        {**enter, "hook": "before_write", "sees": before},
        {"type": "hook_exit", "call": "e1", "observer": "o", "hook": "before_write",
         "outcome": "returned", "value": None},
        {**enter, "hook": "after_write", "sees": after},
        {"type": "hook_exit", "call": "e1", "observer": "o", "hook": "after_write",
         "outcome": "returned", "value": None},
    ]  # fmt: skip
    message = "edited s.py" if ok else "edit failed: ambiguous"
    return [
        {"type": "tool_start", "call": "e1", "tool": "edit", "path": "s.py",
         "content_before": before},
        *hooks,
        {"type": "tool_result", "call": "e1", "tool": "edit", "path": "s.py", "ok": ok,
         "message": message, "text": message, "content_after": after, "elapsed": 0.01},
        {"type": "files", "files": {"s.py": after}},
    ]  # fmt: skip


def test_an_ambiguous_edit_is_only_seamspecs_rule() -> None:
    """Upstream is silent on an old text found twice: a success that replaced the first
    occurrence or every one breaks WOC-SEAM-EDIT-UNIQUE (strict) and nothing upstream;
    any other result of a reported success is a failed write; a refusal is clean."""
    request = _request(
        {"files": {"s.py": "A\nA\n"}, "observers": [{"name": "o"}]},
        [{"edit": {"id": "e1", "path": "s.py", "old": "A", "new": "B"}}],
    )
    for after in ("B\nA\n", "B\nB\n"):
        found = oracle.check(request, {}, _edit_trace(after))
        assert [rule for rule, _ in found] == ["WOC-SEAM-EDIT-UNIQUE"], after
    rules = {rule for rule, _ in oracle.check(request, {}, _edit_trace("A\nB\n"))}
    assert rules == {"WOC-SEAM-EDIT-UNIQUE", "WOC-SEAM-POST", "WOC-SEAM-FAILED-WRITE"}
    assert oracle.check(request, {}, _edit_trace("A\nA\n", ok=False)) == []


def test_the_hooks_of_a_tool_get_the_resolved_path() -> None:
    request = _request(
        {"files": {"s.py": "A\nA\n"}, "symlinks": {"l.py": {"to": "s.py"}},
         "observers": [{"name": "o"}]},
        [{"edit": {"id": "e1", "path": "l.py", "old": "A\nA", "new": "B\nB"}}],
    )  # fmt: skip
    trace = _edit_trace("B\nB\n")
    for event in trace:  # the tool is called with the link, and so are the hooks
        if event.get("path") == "s.py":
            event["path"] = "l.py"
    found = oracle.check(request, {}, trace)
    assert [rule for rule, _ in found] == ["WOC-SEAM-PRE"]
    assert "'l.py'" in found[0][1]
    assert "'s.py'" in found[0][1]
    for event in trace:
        if event["type"] == "hook_enter":
            event["path"] = "s.py"
    assert oracle.check(request, {}, trace) == []


def test_folders_are_judged_only_when_the_trace_lists_them() -> None:
    """A new folder outside, or in a refused place, is a finding; folders the kit made,
    or an allowed write made, are not; a trace without the lists is not judged on them."""
    request = _request(
        {
            "deny": [".git"],
            "files": {".git/config": "c\n"},
            "outside": {"shared/a.txt": "a\n"},
            "observers": [],
        },
        [],
    )
    files: dict[str, Any] = {"type": "files", "files": {}, "outside": {"shared/a.txt": "a\n"}}
    assert oracle.check(request, {}, [files]) == []
    clean = {**files, "folders": [".git", "src", "src/pkg"], "outside_folders": ["shared"]}
    assert oracle.check(request, {}, [clean]) == []
    dirty = {**files, "folders": [".git", ".git/newdir"], "outside_folders": ["shared", "x"]}
    found = oracle.check(request, {}, [dirty])
    assert [rule for rule, _ in found] == ["WOC-SEAM-DENIED", "WOC-SEAM-DENIED"]
    assert ".git/newdir" in found[0][1]
    assert "'x'" in found[1][1]


def test_anything_beside_the_sandbox_is_a_finding() -> None:
    """The sandbox's parent holds only the sandbox and `outside`: a sibling made by a tool
    (`../sandbox-x`, which a string-prefix containment check lets through) is a finding;
    an empty or missing `beside` is not."""
    request = _request({"observers": []}, [])
    files: dict[str, Any] = {"type": "files", "files": {}, "outside": {}}
    assert oracle.check(request, {}, [files]) == []
    assert oracle.check(request, {}, [{**files, "beside": []}]) == []
    found = oracle.check(request, {}, [{**files, "beside": ["sandbox-x", "sandbox-x/f.txt"]}])
    assert [rule for rule, _ in found] == ["WOC-SEAM-DENIED"]
    assert "sandbox-x/f.txt" in found[0][1]


def test_the_linter_keeps_healthy_hooks_out_of_short_limits() -> None:
    """A hook that returns at once races a limit below 1 s on a loaded machine (a flake);
    the hooks that hang may sit under one, in a nested chain that holds only them."""
    short: dict[str, Any] = {
        "name": "stuck",
        "hook_time_limit": 0.25,
        "chain": [{"name": "fmt", "after_write": {"hang": True}}],
    }
    diag = {"name": "diag", "after_write": {"return": "diag: clean"}}
    call = [{"call": {"id": "c1", "hook": "after_write", "path": "a.py"}}]

    def problems(observers: list[dict[str, Any]], when: list[dict[str, Any]]) -> list[str]:
        data = {"given": {"observers": observers}, "when": when, "then": {}, "requires": []}
        return [message for _, message in model.lint(data)]

    assert problems([short, diag], call) == []
    inside = {**short, "chain": [*short["chain"], diag]}
    assert problems([inside], call) == [
        "diag.after_write returns on its own under a 0.25 s per-hook limit, and would race "
        "it on a loaded machine: give its chain a limit of 1 s or more, or move it out of "
        "the chain with the short limit"
    ]
    assert problems([{**inside, "hook_time_limit": 1.0}], call) == []
    # A write calls both hooks: fmt's before_write returns at once under the short limit.
    write = [{"write": {"id": "w1", "path": "a.py", "content": "x\n"}}]
    found = problems([short, diag], write)
    assert [m.split(" ")[0] for m in found if "per-hook limit" in m] == ["fmt.before_write"]
