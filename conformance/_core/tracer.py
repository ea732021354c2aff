"""The ordered event log an adapter fills while it performs a scenario."""

from __future__ import annotations

import json
import threading
from typing import Any

__all__ = ["Tracer"]


class Tracer:
    """Append-only, thread-safe list of JSON-ready events, in the order they happened."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []

    def emit(self, type_: str, **fields: Any) -> None:
        with self._lock:
            self.events.append({"type": type_, **fields})

    def count(self, type_: str, **fields: Any) -> int:
        with self._lock:
            return sum(
                1
                for e in self.events
                if e["type"] == type_ and all(e.get(k) == v for k, v in fields.items())
            )

    def tail(self, n: int = 8) -> str:
        with self._lock:
            last = self.events[-n:]
        return "last events:\n" + "\n".join(f"  {json.dumps(e)}" for e in last)
