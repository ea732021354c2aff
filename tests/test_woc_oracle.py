"""The WOC oracle on hand-written traces: the findings no in-process run can produce.

The Python driver always records ``elapsed``, the folder outside the sandbox and a
``call_end`` for every call, so these findings can only come from an adapter in another
language that leaves them out. They are checked here, on the smallest traces that show
them, and listed as such on the contract page ("Oracle coverage").
"""

from __future__ import annotations

from typing import Any

from seamspec.conformance._contracts.write_observer_chain import joins, oracle, sandbox


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
