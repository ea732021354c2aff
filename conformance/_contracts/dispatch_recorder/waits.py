"""How long a dispatch-recorder scenario deliberately waits: the record and commit limits.

An estimate for the kit's ordering (the scenarios that wait longest start first), never
a verdict. The limits are short (``record_time_limit: 0.05``), so this only ranks the
scenarios that set one above those that set none.
"""

from __future__ import annotations

from typing import Any

__all__ = ["expected_wait"]


def expected_wait(given: dict[str, Any], when: list[dict[str, Any]]) -> float:
    """Seconds of the limits this scenario declares, each counted once."""
    limits = (given.get(key) for key in ("record_time_limit", "commit_time_limit"))
    return sum(float(limit) for limit in limits if isinstance(limit, (int, float)))
