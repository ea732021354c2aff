""" "Did you mean ...?" for every name a person types: rule IDs, keys, hooks, contracts,
scenario IDs and command-line values.

A typo is the most common first-hour mistake, and a list of forty valid names is less
help than the one name the person almost typed. difflib's ratio is good enough for
identifiers of this size, and costs nothing to depend on.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["close_matches", "did_you_mean"]


def close_matches(word: str, candidates: Iterable[str], n: int = 2) -> list[str]:
    """The candidates closest to ``word``, best first; case is ignored when comparing."""
    pool = [str(c) for c in candidates]
    by_folded: dict[str, str] = {}
    for candidate in pool:
        by_folded.setdefault(candidate.lower(), candidate)
    folded = word.lower()
    found = difflib.get_close_matches(folded, list(by_folded), n=n, cutoff=0.6)
    if not found and len(folded) >= 2:
        # An abbreviation: 'woc' for write-observer-chain, 'write' for write-observer-chain.
        found = [
            f
            for f in by_folded
            if f.startswith(folded) or "".join(part[:1] for part in f.split("-")) == folded
        ][:n]
    if len(found) > 1:  # a second guess only when it is nearly as good as the first
        ratio = [difflib.SequenceMatcher(None, folded, f).ratio() for f in found]
        found = [f for f, r in zip(found, ratio, strict=True) if r >= ratio[0] - 0.1]
    return [by_folded[f] for f in found]


def did_you_mean(word: str, candidates: Iterable[str], n: int = 2) -> str:
    """``"did you mean 'x'?"`` (or ``'x' or 'y'``), or ``""`` when nothing is close."""
    found = close_matches(word, candidates, n)
    if not found:
        return ""
    return "did you mean " + " or ".join(repr(f) for f in found) + "?"
