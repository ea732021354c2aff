"""The journal half of the DR scenario generator: tamperings, and what a verifier must say.

Split from :mod:`.strategies` because it reasons about the file, not the turn. Besides
the framing damage (a flipped byte, a deleted, swapped or duplicated entry, a cut tail)
and the kit's forgeries (edits, re-encodings, re-signed or spliced entries), it forges
what a loosened verifier misses: a sequence number of the right value but the wrong JSON
type (``true`` for 1, ``false`` for 0, ``2.0`` for 2), the same entry in escaped or
re-spaced bytes, and the last entry's newline replaced (a whole entry, so damage, not a
torn tail).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from seamspec.conformance._contracts.dispatch_recorder.model import tamper_index

__all__ = ["FORGERIES", "TAMPER", "journal_checks"]

#: Tamperings whose verdict the generator states itself; ``swap`` needs two entries.
TAMPER = ("flip_byte", "delete", "swap", "duplicate", "truncate_bytes")
#: Tamperings that need the kit's key; what a verifier must then say is the kit's own
#: reading of the file (the oracle compares), so their ``then`` pins nothing.
FORGERIES = ("edit", "reencode", "forge", "splice", "append")
#: Fewer bytes than any entry's line (a signature alone is 128 hex digits): a cut is torn.
MAX_CUT = 150


def _same_value(index: int) -> Any:
    """A ``seq`` equal to ``index`` in Python but of another JSON type: a loose verifier's
    ``==`` lets it pass, a strict one names the entry."""
    if index in (0, 1):
        return bool(index)
    return float(index)


@st.composite
def _tampering(draw: st.DrawFn, entries: int) -> dict[str, Any]:
    """One tampering of a journal of ``entries`` (at least one) entries."""
    last = entries - 1
    # The forgeries twice: each has variants that only one loosened verifier misses.
    framing = [k for k in TAMPER if k != "swap" or entries > 1]
    kind = draw(st.sampled_from([*framing, *FORGERIES, *FORGERIES]))
    entry = draw(st.integers(0, last))
    if kind == "edit":
        field = draw(st.sampled_from(("seq", "seq", "mutation.tool_name", "mutation.tool_call_id")))
        same = field == "seq" and draw(st.integers(0, 2)) > 0
        value = _same_value(entry) if same else "edited"
        return {kind: {"entry": entry, "field": field, "value": value}}
    if kind == "reencode":
        style = draw(st.sampled_from(("escaped", "spaces", "reordered_keys")))
        return {kind: {"entry": entry, "style": style}}
    if kind == "forge":
        signature = draw(st.sampled_from(("valid", "no_domain", "other_domain", "other_key")))
        return {kind: {"entry": entry, "signature": signature, "rechain": draw(st.booleans())}}
    if kind == "splice":
        return {kind: {"entry": entry, "from_entry": draw(st.integers(0, last))}}
    if kind == "append":
        return {kind: {}}
    if kind == "flip_byte":  # the default mask 0x01 never turns a byte into an equivalent one
        # -1 is the entry's newline: on the last entry, a whole entry with no newline.
        offset = draw(st.one_of(st.just(-1), st.integers(0, 300)))
        return {kind: {"entry": draw(st.sampled_from((last, *range(last)))), "offset": offset}}
    if kind == "swap":
        first = draw(st.integers(0, last - 1))
        return {kind: [first, draw(st.integers(first + 1, last))]}
    if kind == "truncate_bytes":
        return {kind: draw(st.integers(1, MAX_CUT))}
    return {kind: entry}


def _verdict(op: dict[str, Any], entries: int) -> dict[str, Any]:
    """What any verifier must report after ``op``, where the generator can say it."""
    if next(iter(op)) not in TAMPER:
        return {}
    want: dict[str, Any] = {"ok": False, "bad_index": tamper_index(op, entries)}
    if "truncate_bytes" in op:
        # Cutting only the newline leaves a whole entry: damage, not a torn tail.
        want.update(torn_tail=op["truncate_bytes"] > 1, entries=entries - 1)
    elif "flip_byte" in op:
        # Flipping never makes a newline (canonical JSON holds no 0x0b), and a flipped
        # newline leaves a whole entry: never a torn tail.
        want.update(torn_tail=False, entries=op["flip_byte"]["entry"])
    return want


@st.composite
def journal_checks(
    draw: st.DrawFn, entries: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The verification steps after the turn, and what each one must report."""
    when: list[dict[str, Any]] = []
    then: list[dict[str, Any]] = []
    modes = ("tamper", "verify+tamper", "tamper", "verify+tamper", "verify")
    mode = draw(st.sampled_from(modes)) if entries else "verify"
    if mode != "tamper":
        when.append({"verify_journal": {"anchored": True} if draw(st.booleans()) else {}})
        then.append({"ok": True, "entries": entries, "bad_index": None})
    if mode != "verify":
        op = draw(_tampering(entries))
        # Only the anchor (the number of OK'd records) reveals a whole last entry deleted.
        anchored = op.get("delete") == entries - 1 or draw(st.booleans())
        when.append({"tamper_journal": op})
        when.append({"verify_journal": {"anchored": True} if anchored else {}})
        then.append(_verdict(op, entries))
    return when, then
