"""The journal half of the DR scenario generator: the file before and after the turn.

Split from :mod:`.strategies` because it reasons about the file, not the turn. Before the
turn, the file may already hold a journal of the scenario's key (:data:`STARTS`): whole
entries, whole entries and a torn tail, entries one of which was changed after it was
signed (which the recorder must refuse and leave alone), or entries the last of which
lost its newline (refused, or that entry moved whole beside the journal); during it, the
recorder may be closed and opened again while a tool is held. After it, the kit verifies the file,
untouched and/or after one tampering (:data:`RECIPES`): the framing damage (a flipped
byte, a deleted, swapped or duplicated entry, a cut tail) and the kit's forgeries (edits,
re-encodings, re-signed or spliced entries), each with the variants a loosened verifier
misses: a sequence number of the right value but the wrong JSON type (``true`` for 1,
``false`` for 0, ``2.0`` for 2), the same entry in escaped, re-spaced or upper-case
bytes, a forgery signed without the domain prefix, the last entry's newline replaced or
cut (a whole entry, so damage, not a torn tail); and on a journal that holds no entry
(a turn that mutates nothing, on a new or empty file), an entry appended, which only the
anchor of 0 shows.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from seamspec.conformance._contracts.dispatch_recorder.model import tamper_index

__all__ = [
    "FORGERIES",
    "GROUPS",
    "RECIPES",
    "STARTS",
    "TAMPER",
    "JournalPlan",
    "cover_plans",
    "existing_journal",
    "journal_checks",
    "journal_plans",
    "tampering_groups",
]

#: Tamperings whose verdict the generator states itself; ``swap`` needs two entries.
TAMPER = ("flip_byte", "delete", "swap", "duplicate", "truncate_bytes")
#: Tamperings that need the kit's key; what a verifier must then say is the kit's own
#: reading of the file (the oracle compares), so their ``then`` pins nothing.
FORGERIES = ("edit", "reencode", "forge", "splice", "append")
#: Every tampering the generator makes, drawn uniformly, one line per group of variants
#: that the same loosened verifiers miss (``kind:variant``; the plan's numbers choose
#: within a group). Drawn as one choice among the kinds, then one among each kind's
#: variants, the rare variants came up a few times in 500 examples or never (at seed 1
#: not one forgery signed without the domain prefix, not one newline cut). A forgery
#: signed without the domain prefix is listed twice: the seed-1 run over the wire of the
#: generator that first drew outsider batch 5's shapes drew none in 500 examples, and
#: the verifier that accepts one (``dr-journal-verify-accepts-undomained``) survived.
#: Count a run's own examples, not examples drawn without running them. Every run also
#: tries one cover example per group (:data:`GROUPS`), whatever the seed.
RECIPES = (
    "flip_byte:anywhere", "whole_last_entry", "truncate_bytes:torn",
    "delete", "swap", "duplicate",
    "edit:seq_same_value", "edit:value",
    "reencode:json", "reencode:uppercase_sig", "reencode:uppercase_prev",
    "forge:valid", "forge:no_domain", "forge:other_signer",
    "splice", "append",
    "forge:no_domain",
)  # fmt: skip
#: The tampering groups a run must reach, whatever its seed (each is drawn by a cover
#: example, :func:`cover_plans`): every group of :data:`RECIPES` once, and an entry
#: appended to a journal that holds none (``append:empty``, from the ``empty`` start).
GROUPS = (*dict.fromkeys(RECIPES), "append:empty")
#: Within a group: the fields an edit changes (the value "edited"), the re-encodings of
#: the same JSON, the wrong signers of a forgery.
EDITED = ("seq", "mutation.tool_name", "mutation.tool_call_id")
JSON_STYLES = ("escaped", "spaces", "reordered_keys")
OTHER_SIGNERS = ("other_domain", "other_key")
#: The tamperings that need the untouched end of the file (see :func:`journal_checks`).
AT_THE_END = ("whole_last_entry", "truncate_bytes:torn", "append")
#: What the file holds before the turn: nothing; ``existing`` whole entries of the
#: scenario's key; the same and a torn tail; entries one of which was changed after it
#: was signed (a journal that does not verify: refused, and left as it is); entries the
#: last of which lost its newline (``lost``: refused, or that entry moved whole beside
#: it); or nothing, or an empty file, for a turn that mutates nothing (``empty``: the
#: journal stays empty, anchored on 0 entries, for an appended entry).
STARTS = (
    "new", "new", "new", "new", "existing", "existing", "torn", "torn", "damaged",
    "lost", "empty",
)  # fmt: skip
#: The most tamperings after one turn, each verified at once (see :func:`journal_checks`).
ROUNDS = 4
#: How the kit verifies after the turn: untouched, tampered, or both.
MODES = ("tamper", "verify+tamper", "tamper", "verify+tamper", "verify")
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
    examples not one ``forge``); drawn first, they vary as much as any. The named choices
    (what the file holds first, whether the recorder is reopened, how it is verified, the
    tampering) are hypothesis's own draws, so that they vary and shrink independently;
    the numbers that depend on the turn (which entry, which byte) come from ``numbers``,
    each ``integers``/``booleans`` call taking the next one.
    """

    SIZE = 8

    def __init__(
        self,
        *,
        start: str,
        existing: int,
        reopen: bool,
        mode: str,
        recipes: list[str],
        numbers: list[int],
    ) -> None:
        self.start = start
        self.existing = existing if start not in ("new", "empty") else 0
        self.reopen = reopen
        self.mode = mode
        self.recipes = recipes
        self._numbers = numbers
        self._next = 0

    def _take(self) -> int:
        value = self._numbers[self._next % len(self._numbers)]
        self._next += 1
        return value

    def integers(self, low: int, high: int) -> int:
        return low + self._take() % (high - low + 1)

    def booleans(self) -> bool:
        return self._take() % 2 == 1


#: The plan, drawn first in a journal scenario.
journal_plans = st.builds(
    JournalPlan,
    start=st.sampled_from(STARTS),
    existing=st.integers(1, 4),
    reopen=st.integers(0, 2).map(lambda n: n == 2),  # one journal turn in three
    mode=st.sampled_from(MODES),
    # one list: hypothesis's mutator copies its items over each other, varying them too
    recipes=st.lists(st.sampled_from(RECIPES), min_size=1, max_size=ROUNDS),
    numbers=st.lists(st.integers(0, 2**16), min_size=JournalPlan.SIZE, max_size=JournalPlan.SIZE),
)


def cover_plans(group: str) -> Any:
    """Plans that start with the tampering ``group`` (one of :data:`GROUPS`) on an untouched
    journal the turn wrote whole into a new file (or, for ``append:empty``, left empty),
    verified after each tampering: its simplest example (the first one hypothesis tries)
    makes that tampering, and a ``forge:valid`` one is a journal that verifies with other
    mutations than the recorder wrote, which a verifier that remembers what it wrote
    misses. The other choices are drawn as in :data:`journal_plans`."""
    first = [] if group == "append:empty" else [group]
    return st.builds(
        JournalPlan,
        start=st.just("empty" if group == "append:empty" else "new"),
        existing=st.just(0),
        reopen=st.just(False),
        mode=st.just("tamper"),
        recipes=st.lists(st.sampled_from(RECIPES), max_size=ROUNDS - 1).map(
            lambda rest: [*first, *rest] or ["append"]
        ),
        numbers=st.lists(
            st.integers(0, 2**16), min_size=JournalPlan.SIZE, max_size=JournalPlan.SIZE
        ),
    )


def existing_journal(plan: JournalPlan, records: int) -> dict[str, Any] | None:
    """The ``existing_journal`` the plan asks for, or None for a new file.

    A torn tail needs a record after it: the rule has the recorder cut it "before anything
    is appended", so a turn that appends nothing proves nothing about it.
    """
    if plan.start == "new" or (plan.start == "torn" and not records):
        return None
    if plan.start == "empty":  # a new file, or an empty one: a journal of no entries
        return {"entries": 0} if plan.booleans() else None
    existing: dict[str, Any] = {"entries": plan.existing}
    if plan.start == "torn":
        existing["torn_tail"] = True
    elif plan.start == "lost":
        existing["lost_newline"] = True
    elif plan.start == "damaged":
        existing["damaged_entry"] = plan.integers(0, plan.existing - 1)
    return existing


def _tampering(draw: JournalPlan, recipe: str, entries: int, below: int) -> dict[str, Any]:
    """One tampering of a journal of ``entries`` (at least one) entries that touches none
    from ``below`` on (``below == entries``: any)."""
    last, first_round = below - 1, below == entries
    kind, _, variant = recipe.partition(":")
    if kind == "swap" and below < 2:
        kind = "duplicate"  # nothing to swap with: damage of the same kind
    if kind == "whole_last_entry":  # its newline flipped or cut: damage, not a torn tail
        if draw.booleans():
            return {"flip_byte": {"entry": last, "offset": -1}}
        return {"truncate_bytes": 1}
    entry = draw.integers(0, last)
    if kind == "edit":
        if variant == "seq_same_value":
            return {kind: {"entry": entry, "field": "seq", "value": _same_value(entry)}}
        field = EDITED[draw.integers(0, len(EDITED) - 1)]
        return {kind: {"entry": entry, "field": field, "value": "edited"}}
    if kind == "reencode":
        if variant == "json":
            variant = JSON_STYLES[draw.integers(0, len(JSON_STYLES) - 1)]
        return {kind: {"entry": entry, "style": variant}}
    if kind == "forge":
        # A valid re-signed and re-chained journal is the only one that verifies with
        # other mutations than were recorded (a verifier that remembers shows it): often.
        # Re-chaining re-signs the entries after it, so only on an untouched journal.
        rechain = first_round and (variant == "valid" or draw.booleans())
        if variant == "other_signer":
            variant = OTHER_SIGNERS[draw.integers(0, len(OTHER_SIGNERS) - 1)]
        return {kind: {"entry": entry, "signature": variant, "rechain": rechain}}
    if kind == "splice":
        return {kind: {"entry": entry, "from_entry": draw.integers(0, entries - 1)}}
    if kind == "append":
        return {kind: {}}
    if kind == "flip_byte":  # the default mask 0x01 never turns a byte into an equivalent one
        # -1 is the entry's newline (on the last entry: a whole entry with no newline)
        offset = -1 if draw.booleans() else draw.integers(0, 300)
        return {kind: {"entry": entry, "offset": offset}}
    if kind == "swap":
        first = draw.integers(0, last - 1)
        return {kind: [first, draw.integers(first + 1, last)]}
    if kind == "truncate_bytes":  # more than the newline: a torn tail
        return {kind: draw.integers(2, MAX_CUT)}
    return {kind: entry}


def _lowest(op: dict[str, Any], entries: int) -> int:
    """The first entry ``op`` changed (``entries``: none, it appended)."""
    kind, body = next(iter(op.items()))
    if kind == "append":
        return entries
    if kind == "truncate_bytes":
        return entries - 1
    if kind == "swap":
        return int(min(body))
    return int(body if isinstance(body, int) else body["entry"])


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
    """The verification steps after the turn, and what each one must report.

    Up to :data:`ROUNDS` tamperings, each verified at once, each on entries before every one the
    earlier ones changed: a verifier names the first bad entry, so each verdict is about
    the latest tampering alone, and one scenario tries as many verifier mistakes.
    (Hypothesis varies a scenario's first choices only between its fresh examples, about
    one in six: one tampering per scenario left most of the variants untried.) Those that
    need the file's end (cuts, appends, a last newline) or re-sign what follows (a forgery
    re-chained) come first or not at all.
    """
    when: list[dict[str, Any]] = []
    then: list[dict[str, Any]] = []
    mode = draw.mode
    if mode != "tamper":
        when.append({"verify_journal": {"anchored": True} if draw.booleans() else {}})
        then.append({"ok": True, "entries": entries, "bad_index": None})
    if mode == "verify":
        return when, then
    if not entries:
        # An empty journal: an entry appended (signed with the key, chained to genesis)
        # makes a valid journal of one entry, which only the anchor of 0 shows is one too
        # many (0 is an anchor like any other): invalid at entry 0.
        when.append({"tamper_journal": {"append": {}}})
        when.append({"verify_journal": {"anchored": True}})
        then.append({"ok": False, "bad_index": 0, "torn_tail": False})
        return when, then
    below = entries
    open_end = False  # the file no longer ends in a newline
    for recipe in draw.recipes:
        if below < 1:
            break
        if below < entries and recipe in AT_THE_END:
            continue  # the end of the file was changed already
        op = _tampering(draw, recipe, entries, below)
        flip = op.get("flip_byte")
        if open_end and flip is not None and flip["offset"] == -1:
            # With no newline at the end, a newline flipped joins this entry to the
            # unterminated rest: one torn tail or a damaged entry, as the verifier reads
            # it. Flip the entry's first byte instead: damage, never a torn tail.
            flip["offset"] = 0
        open_end = (
            open_end
            or "truncate_bytes" in op
            or (flip is not None and flip["offset"] == -1 and flip["entry"] == entries - 1)
        )
        # Only the anchor (the number of OK'd records) reveals a whole last entry deleted.
        anchored = op.get("delete") == entries - 1 or draw.booleans()
        when.append({"tamper_journal": op})
        when.append({"verify_journal": {"anchored": True} if anchored else {}})
        then.append(_verdict(op, entries))
        below = min(_lowest(op, entries), below)
        entries += {"delete": -1, "duplicate": 1, "append": 1}.get(next(iter(op)), 0)
    return when, then


def _group(op: dict[str, Any], entries: int, open_end: bool) -> str:
    """The group of :data:`GROUPS` that tampering ``op`` of a journal of ``entries`` entries
    belongs to (``open_end``: the file no longer ends in a newline)."""
    kind, body = next(iter(op.items()))
    if kind == "flip_byte":
        last_newline = body["entry"] == entries - 1 and body["offset"] == -1 and not open_end
        return "whole_last_entry" if last_newline else "flip_byte:anywhere"
    if kind == "truncate_bytes":
        return "whole_last_entry" if body == 1 else "truncate_bytes:torn"
    if kind == "append":
        return "append" if entries else "append:empty"
    if kind == "edit":
        return "edit:value" if body["value"] == "edited" else "edit:seq_same_value"
    if kind == "reencode":
        return "reencode:json" if body["style"] in JSON_STYLES else f"reencode:{body['style']}"
    if kind == "forge":
        signer = body["signature"]
        return f"forge:{signer}" if signer in ("valid", "no_domain") else "forge:other_signer"
    return str(kind)


def tampering_groups(document: dict[str, Any]) -> list[str]:
    """The groups of :data:`GROUPS` of the tamperings a generated scenario makes, in order
    (for counting what a run's examples reach; the file's entries are read from the
    scenario: those it held first and one per record)."""
    recorder = document["given"].get("recorder") or {}
    existing = recorder.get("existing_journal") or {}
    if not recorder.get("journal") or "damaged_entry" in existing:
        return []
    entries = int(existing.get("entries", 0)) + len(document["then"].get("records", []))
    groups: list[str] = []
    open_end = False
    for step in document["when"]:
        op = step.get("tamper_journal") if isinstance(step, dict) else None
        if op is None:
            continue
        groups.append(_group(op, entries, open_end))
        flip = op.get("flip_byte")
        open_end = (
            open_end
            or "truncate_bytes" in op
            or (flip is not None and flip["offset"] == -1 and flip["entry"] == entries - 1)
        )
        entries += {"delete": -1, "duplicate": 1, "append": 1}.get(next(iter(op)), 0)
    return groups
