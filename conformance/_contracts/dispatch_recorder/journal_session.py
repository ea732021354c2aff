"""The kit's side of a journal scenario: the key and file it hands out, its own check of
what the implementation wrote, the tampering, and the questions to the implementation's
verifier.

The same session serves both ways of running an implementation. In process, the DR driver
opens one around the implementation's turn and asks its ``verify_journal`` directly; over
the wire (protocol 2) the wire adapter opens one, sends the implementation the
``resources`` (journal path, private key file, public key) with a ``when`` that holds only
the implementation's own steps, and asks the verifier with ``query`` messages. Either way
the kit, not the implementation, reads the file (:mod:`.journal_audit`), tampers with it
(:mod:`.journal_steps`) and records the results as kit events, which the oracle judges:

- ``journal_check``: the kit's reading of the untouched journal (``fsync_evidence`` says
  whether the kit saw the fsyncs itself, ``observed``, or has only the implementation's
  word for them, ``declared``);
- ``journal_tampered``: a tampering done (or, with ``error``, impossible);
- ``journal_verify``: the implementation's verdict on the file as it then was, with the
  kit's own verdict on the same bytes under ``kit``.

An implementation's trace must not contain these kit events itself.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from seamspec.conformance._contracts.dispatch_recorder.journal_audit import audit_journal
from seamspec.conformance._contracts.dispatch_recorder.journal_forge import (
    KitKey,
    journal_bytes,
)
from seamspec.conformance._contracts.dispatch_recorder.journal_steps import (
    TamperError,
    tamper_bytes,
)
from seamspec.conformance._contracts.dispatch_recorder.model import step_verb
from seamspec.conformance._core.errors import ImplementationError

__all__ = [
    "KIT_EVENTS",
    "KIT_STEPS",
    "JournalSession",
    "Verifier",
    "verdict_fields",
    "wants_journal",
]

#: The steps of ``when`` that the kit performs itself, after the implementation's.
KIT_STEPS = ("tamper_journal", "verify_journal")
#: Trace events only the kit may record.
KIT_EVENTS = frozenset({"journal_check", "journal_tampered", "journal_verify"})
#: The largest journal the kit reads back (scenario journals hold a few entries).
MAX_JOURNAL_BYTES = 16 << 20

#: Asks the implementation's verifier: (journal path, public key hex, anchor) -> verdict.
Verifier = Callable[[Path, str, "int | None"], Mapping[str, Any]]
Evidence = Literal["observed", "declared"]


def wants_journal(request: Mapping[str, Any]) -> bool:
    """Does this scenario record through the implementation's signed journal?"""
    recorder = request.get("given", {}).get("recorder")
    return isinstance(recorder, Mapping) and bool(recorder.get("journal"))


def verdict_fields(found: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A verifier's answer as the trace carries it; ImplementationError if malformed."""
    ok, bad, reason = found.get("ok"), found.get("bad_index"), found.get("reason")
    torn, mutations = found.get("torn_tail"), found.get("mutations")
    problems = [
        name
        for name, good in (
            ("ok (a boolean)", isinstance(ok, bool)),
            ("bad_index (an integer or null)", bad is None or type(bad) is int),
            ("reason (a string or null)", reason is None or isinstance(reason, str)),
            ("torn_tail (a boolean)", isinstance(torn, bool)),
            (
                "mutations (a list of objects)",
                isinstance(mutations, list) and all(isinstance(m, dict) for m in mutations),
            ),
        )
        if not good
    ]
    if problems:
        raise ImplementationError(
            f"{where}: the journal verifier's answer needs {', '.join(problems)}; "
            f"got {dict(found)!r:.300}"
        )
    assert isinstance(mutations, list)
    return {
        "ok": ok, "bad_index": bad, "reason": reason, "torn_tail": torn,
        "entries": len(mutations), "mutations": mutations,
    }  # fmt: skip


def _earlier_context(n: int, chars: int | None) -> str:
    """The context of the existing journal's entry ``n``: a short sentence, or with
    ``chars`` that sentence filled out (or cut) to exactly ``chars`` characters."""
    text = f"recorded before this session ({n})"
    if chars is None:
        return text
    filler = " context an earlier session recorded"
    return (text + filler * (chars // len(filler) + 1))[:chars]


class JournalSession:
    """One journal scenario's kit side; create it in a folder the kit owns and removes."""

    def __init__(self, request: Mapping[str, Any], folder: Path) -> None:
        self.request = request
        self.key = KitKey()
        self.private_key, self.public_key_file = self.key.write(folder)
        self.path = folder / "dispatch.journal"
        when = list(request.get("when", []))
        self.kit_steps = [s for s in when if step_verb(s) in KIT_STEPS]
        self.own_steps = [s for s in when if step_verb(s) not in KIT_STEPS]
        self.reopens = sum(1 for s in self.own_steps if step_verb(s) == "reopen_journal")
        #: The complete entries the kit wrote before the implementation opened the file.
        self.existing = b""
        self.existing_entries = 0
        self.existing_torn = False
        #: The entry the kit damaged, if any; then the file must stay as the kit left it.
        self.existing_damaged: int | None = None
        #: The bytes of the existing journal's last entry, if the kit took its newline:
        #: a whole entry the recorder must keep (refusing the file, or moving it whole).
        self.existing_lost = b""
        self.left = b""
        existing = (request.get("given", {}).get("recorder") or {}).get("existing_journal")
        if isinstance(existing, Mapping):
            damaged = existing.get("damaged_entry")
            self._write_existing(
                int(existing["entries"]), bool(existing.get("torn_tail")),
                None if damaged is None else int(damaged),
                lost_newline=bool(existing.get("lost_newline")),
                newline_replaced_by=existing.get("newline_replaced_by"),
                context_chars=existing.get("context_chars"),
            )  # fmt: skip

    @property
    def resources(self) -> dict[str, Any]:
        """What the implementation is handed: write the journal here, sign with this key."""
        return {
            "journal": {
                "path": str(self.path),
                "private_key": str(self.private_key),
                "public_key": self.key.public_hex,
            }
        }

    def implementation_request(self) -> dict[str, Any]:
        """The request the implementation performs: its own steps, and the resources."""
        return {**self.request, "when": self.own_steps, "resources": self.resources}

    def finish(
        self, trace: list[dict[str, Any]], verify: Verifier, *, evidence: Evidence
    ) -> list[dict[str, Any]]:
        """The kit events to append to ``trace``, once the implementation closed its journal."""
        for index, event in enumerate(trace):
            if event.get("type") in KIT_EVENTS:
                raise ImplementationError(
                    f"trace event {index} is a {event['type']!r} event, which only the kit "
                    "records: leave tampering and verifying to the kit"
                )
        data = self._read()
        events = [self._check(data, trace, evidence)]
        ok_records = self.existing_entries + sum(
            1 for e in trace if e.get("type") == "record_exit" and e.get("outcome") == "ok"
        )
        for step in self.kit_steps:
            verb = step_verb(step)
            body = step[verb]
            if verb == "tamper_journal":
                try:
                    data = tamper_bytes(data or b"", body, self.key)
                except TamperError as error:
                    events.append({"type": "journal_tampered", "op": body, "error": str(error)})
                    break  # the journal is not what the scenario expects: nothing to verify
                self._write(data)
                events.append({"type": "journal_tampered", "op": body})
            else:
                anchor = ok_records if body.get("anchored") else None
                kit = audit_journal(data or b"", self.key.raw_public, expected_entries=anchor)
                answer = verify(self.path, self.key.public_hex, anchor)
                found = verdict_fields(answer, "verify_journal")
                events.append({"type": "journal_verify", **found, "kit": kit.to_json()})
        return events

    def _write_existing(
        self,
        entries: int,
        torn: bool,
        damaged: int | None,
        *,
        lost_newline: bool = False,
        newline_replaced_by: str | None = None,
        context_chars: int | None = None,
    ) -> None:
        """The journal an earlier session left: ``entries`` complete entries signed with
        the scenario's key; if ``torn``, the first half of one more (no newline); if
        ``damaged``, that entry's mutation changed after it was signed; if
        ``lost_newline``, the last entry without its newline (the entries before it are
        then the journal to continue); ``newline_replaced_by``, the same but that newline
        overwritten by another character instead of lost. With ``context_chars``, each entry's context is
        that long: a journal of a few MiB, with lines longer than any small buffer."""
        mutations = [
            {"kind": "context_injection", "tool_call_id": f"earlier-{n}",
             "tool_name": "earlier_session", "context": _earlier_context(n, context_chars)}
            for n in range(entries + 1)
        ]  # fmt: skip
        self.existing = journal_bytes(self.key, mutations[:entries])
        self.existing_entries = entries
        self.existing_torn = torn
        data = self.existing
        if torn:
            whole = journal_bytes(self.key, mutations)[len(self.existing) :]
            data += whole[: len(whole) // 2]
        if (lost_newline or newline_replaced_by is not None) and entries:
            self.existing = journal_bytes(self.key, mutations[: entries - 1])
            self.existing_entries = entries - 1
            self.existing_lost = data[len(self.existing) : -1]
            data = data[:-1] + (newline_replaced_by or "").encode("utf-8")
        if damaged is not None:
            edit = {"entry": damaged, "field": "mutation.context", "value": "changed later"}
            data = tamper_bytes(data, {"edit": edit}, self.key)
            self.existing = b""  # nothing of it is a journal to continue
            self.existing_damaged = damaged
        self.left = data
        self._write(data)

    def _read(self) -> bytes | None:
        """The journal's bytes, read without trusting what lies at its path: never through
        a symbolic link, never from a FIFO or device (which could block or never end)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise ImplementationError(
                f"the kit cannot open the journal (a symbolic link, or unreadable?): {error}"
            ) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ImplementationError("the journal's path is not a regular file")
            with os.fdopen(os.dup(fd), "rb") as file:
                data = file.read(MAX_JOURNAL_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) > MAX_JOURNAL_BYTES:
            raise ImplementationError(
                f"the journal is larger than {MAX_JOURNAL_BYTES} bytes; a scenario's journal "
                "holds a few entries"
            )
        return data

    def _write(self, data: bytes) -> None:
        """Replace the journal with the tampered bytes, in a new file: whatever the
        implementation left at the path (a link to somewhere else) is removed, not followed."""
        self.path.unlink(missing_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(data)

    def _check(
        self, data: bytes | None, trace: list[dict[str, Any]], evidence: Evidence
    ) -> dict[str, Any]:
        """The ``journal_check`` event: the kit's reading of the untouched journal."""
        if data is None:
            return {"type": "journal_check", "exists": False, "fsync_evidence": evidence}
        verdict = audit_journal(data, self.key.raw_public)
        rewritten = [
            index
            for index, e in enumerate(e for e in trace if e.get("type") == "journal_fsync")
            if isinstance(e.get("prefix_sha256"), str)
            and e.get("failed") is not True
            and isinstance(e.get("durable_bytes"), int)
            and hashlib.sha256(data[: e["durable_bytes"]]).hexdigest() != e["prefix_sha256"]
        ]
        return {
            "type": "journal_check",
            "exists": True,
            "fsync_evidence": evidence,
            "size": len(data),
            **verdict.to_json(),
            "ends": [e.end for e in verdict.entries],
            "rewritten_after_fsync": rewritten,
            "existing_entries": self.existing_entries,
            "existing_torn": self.existing_torn,
            "existing_kept": data.startswith(self.existing),
            "existing_damaged": self.existing_damaged,
            "left_unchanged": data == self.left,
            "reopens": self.reopens,
            **(
                {"existing_lost": True, "lost_kept_in": self._kept_elsewhere(self.existing_lost)}
                if self.existing_lost
                else {}
            ),
        }

    def _kept_elsewhere(self, entry: bytes) -> list[str]:
        """The files beside the journal (not the journal itself, no links, no folders)
        that hold ``entry`` whole: where a recorder moved a last entry that lost its
        newline, instead of destroying it."""
        found = []
        for other in sorted(self.path.parent.iterdir()):
            if other.name == self.path.name or other.is_symlink() or not other.is_file():
                continue
            if other.stat().st_size <= MAX_JOURNAL_BYTES and entry in other.read_bytes():
                found.append(other.name)
        return found
