"""Two readings of "join the annotations": upstream's (a blank line) and seamspec's (exactly).

Upstream says the chain joins the non-empty annotations, in order, "with a blank line"
(WOC-JOIN). seamspec adds that the blank line is exactly ``"\\n\\n"`` and that nothing is
trimmed (WOC-JOIN-EXACT). A result can satisfy the first and not the second, and the kit
must tell them apart: under the default profile only the first counts. This module holds
both readings, for the oracle (which names the rule a wrong result breaks) and for the
``joins`` and ``annotations`` expectations of ``then`` (which judge by upstream's reading).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "SEP",
    "blank_line_join",
    "carries_annotations",
    "classify",
    "exact_join",
    "extra_text",
]

#: The separator seamspec pins (WOC-JOIN-EXACT) for joins and for appending (WOC-SEAM-APPEND).
SEP = "\n\n"


def exact_join(parts: Sequence[str | None]) -> str | None:
    """seamspec's join: the non-empty strings, verbatim, separated by ``"\\n\\n"``; else None."""
    kept = [p for p in parts if isinstance(p, str) and p]
    return SEP.join(kept) if kept else None


def _cores(parts: Sequence[str]) -> list[str]:
    """What a reader sees of each annotation: its text without surrounding whitespace.

    Whitespace-only annotations have nothing to see; keeping them is WOC-WHITESPACE-KEPT,
    a seamspec decision, so upstream's reading lets them vanish.
    """
    return [p.strip() for p in parts if p and p.strip()]


def _placed(got: str, cores: list[str], at: int, *, first: bool) -> bool:
    """Whether ``cores`` occur in ``got`` from ``at`` on, separated by blank lines only.

    Before the first core and after the last one any whitespace is fine; between two cores
    the whitespace must hold a blank line. A core may occur more than once, so each
    occurrence is tried until the gap before it stops being whitespace.
    """
    if not cores:
        return got[at:].strip() == ""
    start = got.find(cores[0], at)
    while start != -1:
        gap = got[at:start]
        if gap.strip():
            return False
        if (first or gap.count("\n") >= 2) and _placed(
            got, cores[1:], start + len(cores[0]), first=False
        ):
            return True
        start = got.find(cores[0], start + 1)
    return False


def blank_line_join(parts: Sequence[str], got: object) -> bool:
    """Upstream's reading (WOC-JOIN): every visible annotation, in order, blank-line separated.

    Accepted: the annotations' visible text in observer order, each separated from the next
    by whitespace that holds a blank line (two or more newlines), with any whitespace
    before the first and after the last. No annotation with visible text: ``None`` or a
    whitespace-only string.
    """
    cores = _cores(parts)
    if not cores:
        return got is None or (isinstance(got, str) and got.strip() == "")
    return isinstance(got, str) and _placed(got, cores, 0, first=True)


def carries_annotations(text: object, message: str, parts: Sequence[str]) -> bool:
    """Upstream's reading of a tool result (WOC-SEAM-POST): the annotation is in the text.

    Besides the tool's message (at either end of the text, if it is there at all) the text
    must hold the annotations as :func:`blank_line_join` reads them; no annotation means
    nothing but whitespace besides the message. Where the annotation goes, with which
    separator, and whether the message is kept, is WOC-SEAM-APPEND.
    """
    if not isinstance(text, str):
        return False
    rest = text
    if message and text.startswith(message):
        rest = text[len(message) :]
    elif message and text.endswith(message):
        rest = text[: len(text) - len(message)]
    return blank_line_join(parts, rest)


def extra_text(parts: Sequence[str], got: str) -> bool:
    """Whether ``got`` holds every visible annotation in order *and* some text beyond them."""
    at, leftover = 0, []
    for core in _cores(parts):
        start = got.find(core, at)
        if start == -1:
            return False
        leftover.append(got[at:start])
        at = start + len(core)
    leftover.append(got[at:])
    return "".join(leftover).strip() != ""


def _blanks_left_out(parts: Sequence[str], most: int = 10) -> set[str]:
    """The exact joins of ``parts`` with one or more whitespace-only annotations left out.

    Only the whitespace-only parts are left out or kept, so there are 2**k - 1 joins for k
    of them; past ``most`` of them none is tried (no scenario holds that many).
    """
    blank = [i for i, p in enumerate(parts) if not p.strip()]
    if not blank or len(blank) > most:
        return set()
    out: set[str] = set()
    for mask in range(1, 2 ** len(blank)):
        gone = {i for bit, i in enumerate(blank) if mask >> bit & 1}
        out.add(SEP.join(p for i, p in enumerate(parts) if i not in gone))
    return out


def classify(parts: Sequence[str], got: object, *, failed: bool = False) -> list[str]:
    """The rule(s) a wrong ``after_write`` result breaks, from the annotations that went in.

    ``parts`` are the string annotations the observers returned, in order (empty ones
    included); ``failed`` says some observer of this call raised or was cut off. Call only
    when ``got`` differs from :func:`exact_join`.
    """
    non_empty = [p for p in parts if p]
    if not non_empty:
        return ["WOC-NONE"] if got is None or got == "" else ["WOC-NONE", "WOC-EMPTY-DROPPED"]
    specific: list[str] = []
    if any(p == "" for p in parts) and got == SEP.join(parts):
        specific.append("WOC-EMPTY-DROPPED")
    visible = [p for p in non_empty if p.strip()]
    dropped = [SEP.join(visible), SEP.join(p.strip() for p in non_empty)]
    if len(visible) < len(non_empty) and (got in dropped or (got is None and not visible)):
        specific.append("WOC-WHITESPACE-KEPT")
    if specific:
        return specific + (["WOC-SINGLE"] if len(non_empty) == 1 and got is not None else [])
    if got in _blanks_left_out(non_empty):
        # Some whitespace-only annotations left out, the rest joined exactly: that reads as
        # trimmed separators too, so the exact join's rule is named with it.
        return ["WOC-WHITESPACE-KEPT", "WOC-JOIN-EXACT"]
    if failed and isinstance(got, str) and extra_text(parts, got):
        return ["WOC-FAIL-CONTAINED"]
    if not blank_line_join(parts, got):
        return ["WOC-JOIN"]
    return ["WOC-SINGLE"] if len(non_empty) == 1 else ["WOC-JOIN-EXACT"]
