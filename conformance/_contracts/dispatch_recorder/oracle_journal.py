"""The DR oracle's journal part: what the kit read in the file, durability, verification.

Separate from the call and commit checks because it reads other evidence: the kit's own
reading of the journal (``journal_check``), the fsyncs (``journal_fsync``: seen by the
kit's hook in process, declared by the implementation over the wire) and the verifier's
verdicts on the files the kit tampered with, each next to the kit's own verdict on the
same bytes (``journal_verify``). Nothing here takes the implementation's word for what
its journal holds.
"""

from __future__ import annotations

from typing import Any

__all__ = ["caveats", "check_journal"]

FORMAT, DURABLE, VERIFY = "DR-JOURNAL-FORMAT", "DR-JOURNAL-DURABLE", "DR-JOURNAL-VERIFY"
REOPEN = "DR-JOURNAL-REOPEN"


def check_journal(
    records: list[dict[str, Any]], events: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """DR-JOURNAL-FORMAT, -DURABLE, -VERIFY and -REOPEN findings for a journal scenario."""
    check = next((e for e in events if e["type"] == "journal_check"), None)
    if check is None:
        return [(FORMAT, "the kit has no reading of the journal (no journal_check event)")]
    if not check.get("exists"):
        return [(FORMAT, "the implementation wrote no journal at the path the kit gave it")]
    refused = next((e for e in events if e["type"] == "journal_refused"), None)
    damaged = check.get("existing_damaged")
    if damaged is not None:
        return _damaged(check, refused, int(damaged))
    if check.get("existing_lost") and refused is not None:
        return _lost_refused(check)
    out: list[tuple[str, str]] = []
    if refused is not None:
        what = (
            "whose only damage is a torn tail (to be cut off, however little precedes it)"
            if check.get("existing_torn")
            else "that verifies"
        )
        out.append((
            REOPEN, f"the recorder refused to open a journal {what}: {refused.get('error')}"
        ))  # fmt: skip
    if not check.get("ok"):
        out.append((
            FORMAT,
            "the journal does not verify by the documented format, read by the kit with "
            f"the key it gave: {check.get('reason')}",
        ))  # fmt: skip
    earlier = int(check.get("existing_entries") or 0)
    out.extend(_reopened(check, earlier))
    out.extend(_kept_across_reopens(check, events))
    if check.get("existing_lost") and not check.get("lost_kept_in"):
        out.append((
            REOPEN,
            f"the existing journal's last entry (entry {earlier}) had lost its newline: a "
            "whole entry, perhaps an acknowledged one, not a torn tail; the recorder went on "
            "without refusing the journal, and no file beside it holds that entry whole (cut "
            "off like a torn tail, or changed?)",
        ))  # fmt: skip
    entry_of, problems = _align(records, check.get("mutations", [])[earlier:])
    entry_of = {n: entry + earlier for n, entry in entry_of.items()}
    out.extend((FORMAT, p) for p in problems)
    out.extend(_durability(records, events, entry_of, check))
    out.extend(_verdicts(events))
    return out


def _damaged(
    check: dict[str, Any], refused: dict[str, Any] | None, entry: int
) -> list[tuple[str, str]]:
    """A journal that does not verify is refused and left exactly as it is (nothing
    appended after the damage, nothing cut away or moved)."""
    out: list[tuple[str, str]] = []
    damage = f"the existing journal does not verify (entry {entry} was changed after it was signed)"
    if refused is None:
        out.append((
            REOPEN,
            f"{damage}, yet the recorder opened it instead of refusing it",
        ))  # fmt: skip
    if not check.get("left_unchanged"):
        out.append((
            REOPEN,
            f"{damage}, and the recorder changed the file: appending to a damaged journal, "
            "or cutting the damage away, hides it",
        ))  # fmt: skip
    return out


def _lost_refused(check: dict[str, Any]) -> list[tuple[str, str]]:
    """A journal whose last entry lost its newline, refused: right, if left as it is."""
    if check.get("left_unchanged"):
        return []
    return [(
        REOPEN,
        "the existing journal's last entry had lost its newline; the recorder refused the "
        "journal, but changed the file: a refused journal is left as it is",
    )]  # fmt: skip


def _reopened(check: dict[str, Any], earlier: int) -> list[tuple[str, str]]:
    """A journal opened on an existing file, or closed and opened again, continues it."""
    if not earlier and not check.get("reopens"):
        return []
    out: list[tuple[str, str]] = []
    if earlier and not check.get("existing_kept"):
        out.append((
            REOPEN,
            f"the {earlier} entr{'y' if earlier == 1 else 'ies'} the journal held before the "
            "implementation opened it did not stay byte for byte at its start",
        ))  # fmt: skip
    if not check.get("ok"):
        how = (
            f"opened on a journal of {earlier} entr{'y' if earlier == 1 else 'ies'}"
            + (" and a torn tail" if check.get("existing_torn") else "")
            if earlier
            else "closed and opened again"
        )
        out.append((
            REOPEN,
            f"the recorder, {how}, left a journal that no longer verifies: "
            f"{check.get('reason')}",
        ))  # fmt: skip
    return out


def _kept_across_reopens(
    check: dict[str, Any], events: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """Bytes the journal had made durable before it was closed and opened again are still
    its first bytes: a reopened recorder continues the file it finds, whoever wrote it
    (the same recorder included). In process only, where each fsync carries a hash of
    the bytes it covered; a file that verifies after the reopen proves nothing of it,
    since a recorder that cut its own entries away writes a valid chain from genesis."""
    fsyncs = [i for i, e in enumerate(events) if e["type"] == "journal_fsync"]
    reopens = [i for i, e in enumerate(events) if e["type"] == "journal_reopen"]
    if not reopens:
        return []
    changed = [
        n
        for n in check.get("rewritten_after_fsync", [])
        if n < len(fsyncs) and fsyncs[n] < reopens[-1]
    ]
    if not changed:
        return []
    return [(
        REOPEN,
        f"bytes made durable by fsync {changed[0]} of the journal, before it was closed and "
        "opened again, were changed afterwards: the reopened recorder did not keep the "
        "entries the file already held (it cut them, or wrote over them)",
    )]  # fmt: skip


def _align(records: list[dict[str, Any]], mutations: list[Any]) -> tuple[dict[int, int], list[str]]:
    """Match journal entries to record calls, in call order: (record n -> entry, problems).

    Every OK'd record must have its entry, in order; a record that did not return OK may
    have one or not (written, then not made durable); no entry may come from nowhere.
    """
    entry_of: dict[int, int] = {}
    problems: list[str] = []
    position = 0
    for r in records:
        ok = bool(r["exit"]) and r["exit"].get("outcome") == "ok"
        if position < len(mutations) and mutations[position] == r["enter"].get("payload"):
            entry_of[r["enter"]["n"]] = position
            position += 1
        elif ok:
            problems.append(
                f"record {r['enter']['n']} (call {r['enter'].get('call')}) returned OK, but "
                f"entry {position} of the journal is not its mutation"
            )
    if position < len(mutations) and not problems:
        problems.append(
            f"the journal holds {len(mutations) - position} entr(y/ies) from entry {position} "
            "on that no record call carried"
        )
    return entry_of, problems


def _durability(
    records: list[dict[str, Any]],
    events: list[dict[str, Any]],
    entry_of: dict[int, int],
    check: dict[str, Any],
) -> list[tuple[str, str]]:
    """Each OK'd entry inside a completed fsync of the journal before its OK.

    A failed fsync (``failed: true``: the kit's fault, ``given.recorder.fsync_fails``)
    made nothing durable, whatever else the event says."""
    ends: list[int] = check.get("ends", [])
    out: list[tuple[str, str]] = []
    durable, elsewhere, synced, failed = 0, set(), False, False
    exits = {id(r["exit"]): r for r in records if r["exit"]}
    for event in events:
        if event["type"] == "journal_fsync":
            synced = True
            if event.get("journal", True) is False:
                elsewhere.add(str(event.get("file")))
            elif event.get("failed") is True:
                failed = True
            elif isinstance(event.get("durable_bytes"), int):
                durable = max(durable, event["durable_bytes"])
        elif event["type"] == "record_exit" and event.get("outcome") == "ok":
            record = exits.get(id(event))
            entry = entry_of.get(event.get("n", -1)) if record else None
            if entry is None or entry >= len(ends) or ends[entry] <= durable:
                continue
            where = (
                "; the kit made the journal's fsyncs fail, and a failed fsync makes nothing "
                "durable: that record had to fail closed"
                if failed
                else f"; the fsyncs were of another file ({', '.join(sorted(elsewhere))})"
                if elsewhere
                else ""
                if synced
                else "; no fsync at all was seen: make the journal durable through the fsync "
                "the kit hands over (open_journal's fsync argument), or report it over the wire"
            )
            out.append((
                DURABLE,
                f"record {event.get('n')} returned OK when the journal was durable up to "
                f"byte {durable} only; its entry (entry {entry}) ends at byte {ends[entry]}"
                + where,
            ))  # fmt: skip
    size = check.get("size", 0)
    beyond = [
        e["durable_bytes"]
        for e in events
        if e["type"] == "journal_fsync"
        and e.get("journal", True) is not False
        and e.get("failed") is not True
        and isinstance(e.get("durable_bytes"), int)
        and e["durable_bytes"] > size
    ]
    if beyond:
        out.append((
            DURABLE,
            f"an fsync of the journal covered {max(beyond)} bytes, but the closed journal "
            f"holds {size}: bytes once durable were cut off",
        ))  # fmt: skip
    for index in check.get("rewritten_after_fsync", []):
        out.append((
            DURABLE,
            f"bytes made durable by fsync {index} of the journal were changed afterwards: "
            "a journal only grows",
        ))  # fmt: skip
    return out


def _summary(found: dict[str, Any]) -> str:
    if found.get("ok"):
        return f"valid with {found.get('entries')} entries"
    torn = ", a torn tail" if found.get("torn_tail") else ""
    return f"invalid at entry {found.get('bad_index')}{torn} ({found.get('reason')})"


def _verdicts(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The implementation's verifier must read every file as the kit does."""
    out: list[tuple[str, str]] = []
    done: list[Any] = []
    for event in events:
        if event["type"] == "journal_tampered":
            done.append(event.get("op"))
            continue
        if event["type"] != "journal_verify":
            continue
        kit = event.get("kit") or {}
        keys = ("ok", "bad_index", "torn_tail") if not kit.get("ok") else ("ok", "mutations")
        if any(event.get(k) != kit.get(k) for k in keys):
            after = f"after {', '.join(map(str, done))}" if done else "on the untouched journal"
            other = event.get("ok") and kit.get("ok")
            out.append((
                VERIFY,
                f"{after}, the kit reads the journal as {_summary(kit)}; the implementation's "
                f"verifier says {_summary(event)}"
                + (" but with other mutations than the file holds" if other else ""),
            ))  # fmt: skip
    return out


def caveats(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Rules judged on the implementation's word alone (reported next to a pass)."""
    check = next((e for e in events if e["type"] == "journal_check"), None)
    if check is not None and check.get("fsync_evidence") == "declared":
        return [(
            DURABLE,
            "judged by declaration: over the wire the kit cannot watch fsync, so the "
            "journal_fsync events are the implementation's own word",
        )]  # fmt: skip
    return []
