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

__all__ = ["FORGERIES", "TAMPER", "JournalPlan", "journal_checks", "journal_plans"]

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


class JournalPlan:
    """Choices drawn at the start of a journal scenario, spent once the turn is known.

    Drawn late, after a long turn, hypothesis varied these choices badly (in 500
    examples not one ``forge``); drawn first, they vary as much as any. Each
    ``sampled_from``/``integers``/``booleans`` call takes the next drawn number.
    """

    SIZE = 12

    def __init__(self, numbers: list[int]) -> None:
        self._numbers = numbers
        self._next = 0

    def _take(self) -> int:
        value = self._numbers[self._next % len(self._numbers)]
        self._next += 1
        return value

    def sampled_from(self, options: Any) -> Any:
        options = tuple(options)
        return options[self._take() % len(options)]

    def integers(self, low: int, high: int) -> int:
        return low + self._take() % (high - low + 1)

    def booleans(self) -> bool:
        return self._take() % 2 == 1


#: The plan's numbers, drawn first in a journal scenario.
journal_plans = st.lists(
    st.integers(0, 2**16), min_size=JournalPlan.SIZE, max_size=JournalPlan.SIZE
).map(JournalPlan)


def _tampering(draw: JournalPlan, entries: int) -> dict[str, Any]:
    """One tampering of a journal of ``entries`` (at least one) entries."""
    last = entries - 1
    # The forgeries twice: each has variants that only one loosened verifier misses.
    framing = [k for k in TAMPER if k != "swap" or entries > 1]
    kind = draw.sampled_from([*framing, "flip_byte", *FORGERIES, *FORGERIES])
    entry = draw.integers(0, last)
    if kind == "edit":
        field = draw.sampled_from(("seq", "seq", "mutation.tool_name", "mutation.tool_call_id"))
        same = field == "seq" and draw.integers(0, 2) > 0
        value = _same_value(entry) if same else "edited"
        return {kind: {"entry": entry, "field": field, "value": value}}
    if kind == "reencode":
        style = draw.sampled_from(
            ("escaped", "spaces", "reordered_keys", "uppercase_sig", "uppercase_prev")
        )
        return {kind: {"entry": entry, "style": style}}
    if kind == "forge":
        # A valid re-signed and re-chained journal is the only one that verifies with
        # other mutations than were recorded (a verifier that remembers shows it): often.
        signature = draw.sampled_from(("valid", "valid", "no_domain", "other_domain", "other_key"))
        rechain = draw.integers(0, 3) > 0
        return {kind: {"entry": entry, "signature": signature, "rechain": rechain}}
    if kind == "splice":
        return {kind: {"entry": entry, "from_entry": draw.integers(0, last)}}
    if kind == "append":
        return {kind: {}}
    if kind == "flip_byte":  # the default mask 0x01 never turns a byte into an equivalent one
        # -1 is the entry's newline: on the last entry, a whole entry with no newline.
        if draw.booleans():  # the last entry's newline: a whole entry, not a torn tail
            return {kind: {"entry": last, "offset": -1}}
        offset = -1 if draw.booleans() else draw.integers(0, 300)
        return {kind: {"entry": entry, "offset": offset}}
    if kind == "swap":
        first = draw.integers(0, last - 1)
        return {kind: [first, draw.integers(first + 1, last)]}
    if kind == "truncate_bytes":
        # One byte cuts only the newline: a whole entry again, not a torn tail.
        return {kind: 1 if draw.booleans() else draw.integers(2, MAX_CUT)}
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


def journal_checks(
    draw: JournalPlan, entries: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The verification steps after the turn, and what each one must report."""
    when: list[dict[str, Any]] = []
    then: list[dict[str, Any]] = []
    modes = ("tamper", "verify+tamper", "tamper", "verify+tamper", "verify")
    mode = draw.sampled_from(modes) if entries else "verify"
    if mode != "tamper":
        when.append({"verify_journal": {"anchored": True} if draw.booleans() else {}})
        then.append({"ok": True, "entries": entries, "bad_index": None})
    if mode != "verify":
        op = _tampering(draw, entries)
        # Only the anchor (the number of OK'd records) reveals a whole last entry deleted.
        anchored = op.get("delete") == entries - 1 or draw.booleans()
        when.append({"tamper_journal": op})
        when.append({"verify_journal": {"anchored": True} if anchored else {}})
        then.append(_verdict(op, entries))
    return when, then
