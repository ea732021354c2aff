"""The oracle's checks of the write tools (the WOC-SEAM-* rules), on any trace.

Judged from what the kit sees: the tool's result, the file before and after the tool
(``content_before``, ``content_after``), the hooks it entered, and the files at the end,
inside the sandbox and in the folder next to it. The scenario's ``given`` says which paths
the sandbox refuses (:mod:`.sandbox`) and what every scripted observer returns, so the
oracle knows what a conforming tool must have written and reported.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from seamspec.conformance._contracts.write_observer_chain.joins import (
    SEP,
    carries_annotations,
    classify,
    exact_join,
    extra_text,
)
from seamspec.conformance._contracts.write_observer_chain.model import TOOL_VERBS, step_verb
from seamspec.conformance._contracts.write_observer_chain.oracle_trace import OracleBase
from seamspec.conformance._contracts.write_observer_chain.sandbox import (
    is_refused,
    parents,
    resolve,
)

__all__ = ["SeamChecks", "ambiguous_edit", "post_images", "unique_edit"]

#: A path part no sandbox has a reason to refuse on its own (POSIX's portable file names).
_PORTABLE = re.compile(r"[A-Za-z0-9._-]+")


def ambiguous_edit(verb: str, body: dict[str, Any], before: str | None) -> bool:
    """Whether ``verb`` is an edit whose old text occurs more than once (``str.count``)."""
    return verb == "edit" and before is not None and before.count(body["old"]) > 1


def unique_edit(verb: str, body: dict[str, Any], before: str | None) -> bool:
    """Whether ``verb`` is an edit whose (non-empty) old text occurs exactly once in the
    file, counted as ``str.count`` counts: without overlaps, so ``"aa"`` occurs once in
    ``"aaa"``."""
    old = body.get("old")
    return (
        verb == "edit"
        and before is not None
        and isinstance(old, str)
        and bool(old)
        and (before.count(old) == 1)
    )


def post_images(verb: str, body: dict[str, Any], before: str | None) -> tuple[str | None, ...]:
    """What the file may hold right after a successful ``verb``, before any observer runs.

    One image, except for an ambiguous edit: upstream does not say what an edit does then,
    so replacing the first occurrence or every one both agree with a report of success
    under upstream's rules; that it must not succeed at all is WOC-SEAM-EDIT-UNIQUE's.
    """
    if verb == "write":
        return (str(body["content"]),)
    if verb == "delete":
        return (None,)
    text, old, new = before or "", body["old"], body["new"]
    first = text.replace(old, new, 1)
    if ambiguous_edit(verb, body, before):
        return (first, text.replace(old, new))
    return (first,)


class SeamChecks(OracleBase):
    """WOC-SEAM-DENIED, -PRE, -POST, -APPEND, -FAILED-WRITE and -NO-ERROR."""

    def check_hook_run(
        self, call: str, hook: str, *, interrupted_at: int | None
    ) -> list[tuple[int, dict[str, Any]]]:
        raise NotImplementedError  # pragma: no cover (abstract: oracle.py provides it)

    @property
    def rewrites(self) -> bool:
        """Whether an observer may rewrite the file after the tool (a builtin formatter)."""
        return any(leaf.get("builtin") == "formatter" for leaf in self.leaves)

    def check_tool(self, verb: str, body: dict[str, Any]) -> None:
        call, path = body["id"], body["path"]
        result = self.t.tool_results.get(call)
        start = self.t.tool_starts.get(call, {})
        if call in self.t.cancels and self._check_cancelled_tool(call, verb, body, result):
            return
        if result is None:
            if call in self.t.kit_timeouts:
                for rule in ("WOC-SLOW-BOUNDED", "WOC-SLOW"):
                    self.flag(
                        rule,
                        f"{call}: the {verb} tool had not returned when the kit gave up waiting: "
                        "the per-hook time limit did not bound its hooks",
                    )
            return
        entered = self.t.enters.get(call, [])
        before, after = start.get("content_before"), result.get("content_after")
        if is_refused(path, self.given):
            self._check_refused(call, verb, path, result, entered, changed=after != before)
            return
        afters = [e for _, e in entered if e.get("hook") == "after_write"]
        if not result.get("ok"):
            # A tool that raised counts as one that reported an error (the driver says ok=false).
            said = result.get("raised") or result.get("message")
            if afters:
                # after_write ran, so the tool took its mutation for a success. If the file
                # had changed as asked when the first observer looked (a formatter may have
                # put it back since), an observer's doing turned that success into an error.
                took = after != before or afters[0].get("sees") in post_images(verb, body, before)
                rule = "WOC-SEAM-NO-ERROR" if took else "WOC-SEAM-FAILED-WRITE"
                self.flag(
                    rule, f"{call}: {verb} reported failure ({said!r}) yet after_write was called"
                )
            elif not entered and unique_edit(verb, body, before):
                # Refused before any hook: the tool judged the old text ambiguous or missing,
                # yet counted without overlaps it occurs exactly once in the file.
                self.flag(
                    "WOC-SEAM-EDIT-UNIQUE",
                    f"{call}: the old text {body['old']!r} occurs exactly once in the file "
                    f"(counted without overlaps, as str.count does), yet the edit failed "
                    f"({said!r}); an edit whose old text occurs once must be made",
                )
            elif not entered and verb == "write" and self._plainly_allowed(path):
                self.flag(
                    "WOC-SEAM-DENIED",
                    f"{call}: the write of {path!r} was refused ({said!r}), but the sandbox "
                    "allows it: it leads to a place inside the root, and no deny pattern "
                    "matches that place or one of its parent folders read from the root; the "
                    "check refuses what the sandbox names, not more",
                )
            elif after != before:
                # The mutation happened: blame an observer if one failed, else the tool's report.
                failed = any(
                    e.get("outcome") != "returned"
                    for (c, _o, _h), exits in self.t.exits.items()
                    if c == call
                    for _, e in exits
                )
                self.flag(
                    "WOC-SEAM-NO-ERROR" if failed else "WOC-SEAM-FAILED-WRITE",
                    f"{call}: the file changed but the {verb} tool reported an error: {said!r}",
                )
            return
        self.check_hook_run(call, "before_write", interrupted_at=None)
        after_entered = self.check_hook_run(call, "after_write", interrupted_at=None)
        if not afters and self.leaves:
            # A reported success is a write (even of the bytes the file held): it is observed.
            self.flag(
                "WOC-SEAM-POST",
                f"{call}: the {verb} tool reported success but never called after_write, so "
                "no observer saw the file it wrote and no annotation could reach the result",
            )
        for _, e in entered:
            if e.get("hook") == "before_write" and e.get("sees") != before:
                self.flag(
                    "WOC-SEAM-PRE",
                    f"{call}: {e['observer']}.before_write saw {e.get('sees')!r}; the pre-image was {before!r}",
                )
        self._check_hook_paths(call, path, entered)
        if ambiguous_edit(verb, body, before):
            self.flag(
                "WOC-SEAM-EDIT-UNIQUE",
                f"{call}: the old text {body['old']!r} occurs {(before or '').count(body['old'])} "
                "times in the file, yet the edit reported success; an ambiguous edit must fail "
                "and leave the file alone",
            )
        missing = verb == "edit" and before is not None and body["old"] not in before
        if missing:
            # Nothing to replace: no edit was made as asked, whatever the tool changed.
            self.flag(
                "WOC-SEAM-FAILED-WRITE",
                f"{call}: the old text {body['old']!r} does not occur in the file, yet the "
                "edit reported success; a text that is not there cannot be replaced (not by "
                "a near match either), so the tool must report the error",
            )
        posts = post_images(verb, body, before)
        if missing:
            self._check_text(call, result, after_entered)
            return
        if afters and afters[0].get("sees") not in posts:
            self.flag(
                "WOC-SEAM-POST",
                f"{call}: {afters[0]['observer']}.after_write saw {afters[0].get('sees')!r}; the mutation wrote {posts[0]!r}",
            )
        self._check_took_effect(call, verb, before, after, posts)
        self._check_text(call, result, after_entered)

    def _check_cancelled_tool(
        self, call: str, verb: str, body: dict[str, Any], result: dict[str, Any] | None
    ) -> bool:
        """A tool whose caller was cancelled: the cancellation propagates out of it at once.

        The tool's hooks get the caller's cancellation like a direct call's (WOC-CANCEL):
        the hooks entered before it ran in order, none starts after it, and the tool
        returns no result. Returns whether the call was judged here (it was cancelled
        before it ended).
        """
        cancel_i = self.t.cancels[call]
        ended = next(
            (
                i
                for i, e in enumerate(self.t.events)
                if e.get("call") == call and e.get("type") in ("tool_result", "tool_cancelled")
            ),
            None,
        )
        if ended is not None and ended < cancel_i:
            return False  # it had ended before the cancel: judged as any tool call
        # Up to the cancel, the hooks ran as in any call; after it, none may start.
        self.check_hook_run(call, "before_write", interrupted_at=cancel_i)
        self.check_hook_run(call, "after_write", interrupted_at=cancel_i)
        if result is not None:
            self.flag(
                "WOC-CANCEL",
                f"{call}: the {verb} tool's caller was cancelled, yet the tool went on and "
                f"returned ok={result.get('ok')}; the cancellation must propagate out of it",
            )
        self._check_cancelled_mutation(call, verb, body, cancel_i)
        return True

    def _check_cancelled_mutation(
        self, call: str, verb: str, body: dict[str, Any], cancel_i: int
    ) -> None:
        """A cancelled tool undoes nothing and mutates nothing after the cancel (decision 7).

        Cancelled in ``after_write``, the mutation had happened: the file must still hold
        what it wrote (a roll-back that then re-raises is still a roll-back). Cancelled
        inside ``before_write``, the mutation had not: the file must be as it was. Judged
        from the file the kit read when the cancellation came out of the tool; not judged
        when a builtin formatter may have rewritten the file.
        """
        gone = self.t.tool_cancels.get(call)
        start = self.t.tool_starts.get(call, {})
        if gone is None or "content_after" not in gone or "content_before" not in start:
            return
        if self.rewrites:
            return
        before, after = start["content_before"], gone["content_after"]
        entered = [(i, e) for i, e in self.t.enters.get(call, []) if i < cancel_i]
        if any(e.get("hook") == "after_write" for _, e in entered):
            posts = post_images(verb, body, before)
            if after not in posts:
                self.flag(
                    "WOC-CANCEL",
                    f"{call}: the {verb} tool's caller was cancelled after the mutation, in "
                    f"after_write, yet the file then held {after!r}, not {posts[0]!r}: a "
                    "cancelled tool undoes nothing it has done",
                )
            return
        inside = [
            (i, e)
            for i, e in entered
            if e.get("hook") == "before_write"
            and (
                (found := self.t.exit_after(call, str(e.get("observer")), "before_write", i))
                is None
                or found[0] > cancel_i
            )
        ]
        if inside and after != before:
            self.flag(
                "WOC-CANCEL",
                f"{call}: the {verb} tool's caller was cancelled inside before_write, yet the "
                f"file then held {after!r}, not {before!r}: a cancelled tool makes no mutation",
            )

    def _plainly_allowed(self, path: str) -> bool:
        """Whether nothing but the sandbox check could make a write of ``path`` fail.

        Only paths of portable names (letters, digits, ``.``, ``_``, ``-``; no ``.`` or
        ``..`` part) that the sandbox allows, with no given file in the way as a folder and
        no given folder in the way as the file. A path with a link on the way counts only
        when it leads to a given file, itself of portable names: the sandbox judges where a
        path leads, so a link that lies in a denied folder but leads to an allowed file is
        allowed (sweep 13). A tool may still refuse stranger names (a backslash, a control
        character) without this check's blame.
        """
        given_files = {str(f) for f in self.given.get("files", {})}
        where = resolve(path, self.given.get("symlinks", {}))
        if where is None or is_refused(path, self.given):
            return False
        if where != path and where not in given_files:
            return False
        for rel in {path, where}:
            if not all(_PORTABLE.fullmatch(p) and p not in (".", "..") for p in rel.split("/")):
                return False
        if where != path:
            return True  # an overwrite of a given file, through links
        taken = [*given_files, *map(str, self.given.get("symlinks", {}))]
        return not any(t in parents(path)[1:] or t.startswith(path + "/") for t in taken)

    def _check_hook_paths(
        self, call: str, path: str, entered: list[tuple[int, dict[str, Any]]]
    ) -> None:
        """Every hook of an allowed tool call is given the path the check resolved."""
        where = resolve(path, self.given.get("symlinks", {}))
        wrong = sorted(
            {str(e.get("path")) for _, e in entered if "path" in e and e.get("path") != where}
        )
        if wrong:
            self.flag(
                "WOC-SEAM-PRE",
                f"{call}: the hooks were given {wrong}, but {path!r} resolves to {where!r}; "
                "observers are given the resolved path, never a link's own",
            )

    def _check_refused(
        self,
        call: str,
        verb: str,
        path: str,
        result: dict[str, Any],
        entered: list[tuple[int, dict[str, Any]]],
        *,
        changed: bool,
    ) -> None:
        if entered:
            hooks = [f"{e['observer']}.{e['hook']}" for _, e in entered]
            self.flag("WOC-SEAM-DENIED", f"{call}: {verb} of refused path {path!r} called {hooks}")
        if result.get("ok"):
            self.flag(
                "WOC-SEAM-DENIED", f"{call}: {verb} of refused path {path!r} reported success"
            )
        if changed:
            self.flag("WOC-SEAM-DENIED", f"{call}: {verb} of refused path {path!r} changed it")

    def _check_took_effect(
        self,
        call: str,
        verb: str,
        before: str | None,
        after: str | None,
        posts: tuple[str | None, ...],
    ) -> None:
        """A reported success must be a mutation that happened (WOC-SEAM-FAILED-WRITE)."""
        if verb != "write" and before is None:
            self.flag(
                "WOC-SEAM-FAILED-WRITE",
                f"{call}: {verb} of a file that did not exist reported success; "
                "the mutation cannot have happened, so the tool must report the error",
            )
        elif not self.rewrites and after not in posts:
            self.flag(
                "WOC-SEAM-FAILED-WRITE",
                f"{call}: {verb} reported success, but right after it the file holds {after!r}, "
                f"not the {posts[0]!r} it was to write",
            )

    def _check_text(
        self, call: str, result: dict[str, Any], after_entered: list[tuple[int, dict[str, Any]]]
    ) -> None:
        """The annotation in the result text: the chain's rules, then POST, then APPEND."""
        parts, failed = self.annotation_parts(call, after_entered)
        expected = exact_join(parts)
        message, text = str(result.get("message", "")), result.get("text")
        want = message if expected is None else message + SEP + expected
        if text == want:
            return
        if isinstance(text, str) and expected is not None and text.startswith(message + SEP):
            got = text[len(message) + len(SEP) :]
            if self._chain_joined(parts):
                # The chain itself was seen to return exactly this join for these very
                # annotations (a direct call of after_write): the tool changed it.
                self.flag(
                    "WOC-SEAM-APPEND",
                    f"{call}: the result text carries {got!r} after the message, but the chain "
                    f"returns {expected!r} for these annotations; the tool must append it verbatim",
                )
                return
            # Appended the seamspec way: what is wrong is the chain's annotation itself.
            for rule in classify(parts, got, failed=failed):
                self.flag(
                    rule,
                    f"{call}: the annotation in the result text is {got!r}; "
                    f"expected {expected!r} from annotations {parts!r}",
                )
            return
        shown = text if isinstance(text, str) else ""
        rest = shown[len(message) :] if shown.startswith(message) else shown
        if failed and extra_text(parts, rest):
            rule = "WOC-FAIL-CONTAINED"
        elif carries_annotations(text, message, parts):
            rule = "WOC-SEAM-APPEND"
        else:
            rule = "WOC-SEAM-POST"
        self.flag(rule, f"{call}: tool result text {text!r}; expected {want!r}")
        if expected is None and rule != "WOC-SEAM-APPEND" and shown.startswith(message + SEP):
            # A paragraph appended the seamspec way although this call's chain had no
            # annotation (an earlier call's, kept on the tools, say): the text must be the
            # message alone. Upstream's side of it, nothing of this call's, is POST above.
            self.flag(
                "WOC-SEAM-APPEND",
                f"{call}: the chain had no annotation for this call, yet the result text "
                f"appends {shown[len(message) + len(SEP) :]!r} to the message",
            )

    def _chain_joined(self, parts: list[str]) -> bool:
        """Whether a direct ``after_write`` call of this scenario, whose observers gave the
        annotations ``parts``, returned exactly their join (so the chain joins them right)."""
        for step in self.when:
            verb = step_verb(step)
            if verb not in ("call", "start") or step[verb]["hook"] != "after_write":
                continue
            call = step[verb]["id"]
            end = self.t.ends.get(call)
            if end is None or end[1].get("outcome") != "returned":
                continue
            entered = [
                (i, e) for i, e in self.t.enters.get(call, []) if e.get("hook") == "after_write"
            ]
            got, failed = self.annotation_parts(call, entered)
            if not failed and got == parts and end[1].get("value") == exact_join(parts):
                return True
        return False

    def check_files(self) -> None:
        """The files at the end agree with every write reported as successful."""
        files = self.t.files
        if files is None:
            return
        self._check_outside(files)
        self._check_folders(files)
        if self.rewrites or any(step_verb(s) == "restore" for s in self.when):
            return
        links = self.given.get("symlinks", {})
        expected: dict[str, tuple[str, str, tuple[str | None, ...]]] = {}
        for step in self.when:
            verb = step_verb(step)
            if verb not in TOOL_VERBS:
                continue
            body = step[verb]
            result = self.t.tool_results.get(body["id"])
            where = resolve(body["path"], links)
            if result is None and where is not None and body["id"] in self.t.tool_cancels:
                expected.pop(where, None)  # cancelled: the file may or may not have changed
            if result is None or where is None or is_refused(body["path"], self.given):
                continue
            before = self.t.tool_starts.get(body["id"], {}).get("content_before")
            if result.get("ok") and (verb == "write" or before is not None):
                expected[where] = (body["id"], verb, post_images(verb, body, before))
            else:
                expected.pop(where, None)  # failed: judged by the tool's own checks
        final = files.get("files", {})
        for where, (call, verb, contents) in expected.items():
            if final.get(where) not in contents:
                self.flag(
                    "WOC-SEAM-FAILED-WRITE",
                    f"at the end {where} holds {final.get(where)!r}, but the last tool to change "
                    f"it ({verb} {call}) reported success with {contents[0]!r}",
                )

    def _check_outside(self, files: dict[str, Any]) -> None:
        """Nothing outside the sandbox ever changes, whatever links lead there."""
        given = self.given.get("outside")
        if given is None:
            return
        if not isinstance(files.get("outside"), dict):
            self.flag(
                "WOC-SEAM-DENIED",
                "the trace's files event has no `outside`: the kit cannot see whether a write "
                "left the sandbox (an adapter must report the folder next to the sandbox)",
            )
        elif files["outside"] != given:
            self.flag(
                "WOC-SEAM-DENIED",
                f"files outside the sandbox changed: {given!r} became {files['outside']!r}",
            )

    def _check_folders(self, files: dict[str, Any]) -> None:
        """No folder appears outside the sandbox or in a place the sandbox refuses.

        Judged on the ``folders``, ``outside_folders`` and ``beside`` of the files event
        (optional: an adapter that does not list them is not judged on them). The kit makes the
        parent folders of the given files, links and outside files; an allowed write may
        make the folders it needs, which are never refused places. Any other folder in a
        refused place, or outside, was made by a tool for a write it was to refuse, and so
        was a new folder in an allowed place on the way to a refused path (``sub/`` of a
        refused ``sub/x.lock``) that no allowed tool call needed; and the sandbox's parent
        folder holds nothing but the sandbox and ``outside`` (``beside``); and the root
        itself is still a folder (``root_exists``).
        """
        made = {
            p
            for rel in (*self.given.get("files", {}), *self.given.get("symlinks", {}))
            for p in parents(rel)[1:]
        }
        inside = files.get("folders")
        if isinstance(inside, list):
            fresh = [f for f in map(str, inside) if f not in made]
            new = sorted(f for f in fresh if is_refused(f, self.given))
            if new:
                self.flag(
                    "WOC-SEAM-DENIED",
                    f"folders appeared in places the sandbox refuses: {new}; a refused write "
                    "must not create anything, not even the folders it would have needed, and "
                    "an allowed one makes only the folders on the way to where its path leads",
                )
            on_the_way = self._refused_parents() - self._allowed_parents()
            new = sorted(f for f in fresh if f in on_the_way and f not in new)
            if new:
                self.flag(
                    "WOC-SEAM-DENIED",
                    f"folders appeared on the way to a refused path, needed by no allowed tool "
                    f"call: {new}; a refused write must not create anything, not even the "
                    "allowed folders it would have needed",
                )
        if files.get("root_exists") is False:
            # Optional like the lists above; the snapshots of a missing root are just empty.
            self.flag(
                "WOC-SEAM-DENIED",
                "the sandbox root itself is gone at the end: a tool removed it (pruning the "
                "folders a delete emptied up past the workspace, say); the root is not inside "
                "itself, so no tool call may remove or replace it",
            )
        beside = files.get("beside")
        if isinstance(beside, list) and beside:
            self.flag(
                "WOC-SEAM-DENIED",
                f"new entries appeared next to the sandbox: {sorted(map(str, beside))}; a write "
                "that leaves the root (into a sibling folder whose name merely starts with the "
                "root's, say) must be refused and create nothing",
            )
        outside = files.get("outside_folders")
        if isinstance(outside, list):
            kit = {p for rel in self.given.get("outside", {}) for p in parents(rel)[1:]}
            new = sorted(f for f in map(str, outside) if f not in kit)
            if new:
                self.flag(
                    "WOC-SEAM-DENIED",
                    f"folders appeared outside the sandbox: {new}; nothing new may appear "
                    "there, whatever links lead there",
                )

    def _tool_paths(self, *, refused: bool) -> list[str]:
        """The paths of the scenario's tool steps that the sandbox refuses (or allows)."""
        return [
            str(step[verb]["path"])
            for step in self.when
            if (verb := step_verb(step)) in TOOL_VERBS
            and is_refused(str(step[verb]["path"]), self.given) == refused
        ]

    def _allowed_parents(self) -> set[str]:
        """The folders an allowed tool call may make: those of where its path leads."""
        links = self.given.get("symlinks", {})
        wheres = (resolve(path, links) for path in self._tool_paths(refused=False))
        return {p for where in wheres if where for p in parents(where)[1:]}

    def _refused_parents(self) -> set[str]:
        """The folders on the way to a refused path, as written and as it resolves."""
        links = self.given.get("symlinks", {})
        out: set[str] = set()
        for path in self._tool_paths(refused=True):
            written = posixpath.normpath(path)
            if not written.startswith(("/", "..")):
                out.update(parents(written)[1:])
            where = resolve(path, links)
            if where:
                out.update(parents(where)[1:])
        return out
