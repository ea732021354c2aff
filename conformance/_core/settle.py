"""Waiting until every other task of a scenario is blocked, without anyio's 0.1 s naps.

Drivers call this after a step that wakes tasks (a gate opened, a hook entered), so the
next step sees the implementation settled: deterministic, with no sleep. On trio,
``anyio.wait_all_tasks_blocked`` is exact (trio knows when every task waits). On asyncio
anyio emulates it by looking at each task's pending future and sleeping **0.1 s** each
time some task is still runnable; a scenario with a dozen steps then spends about a
second napping, and the whole suite several. This helper makes the same check, but
yields to the loop (``sleep(0)``) a few times and then polls every millisecond, so it
returns as soon as the tasks have settled.
"""

from __future__ import annotations

import asyncio

import anyio

__all__ = ["all_tasks_blocked"]

#: Passes through the loop (``sleep(0)``) before polling on a clock: most wake-ups settle
#: within a few passes, since every runnable task runs once per pass.
_QUICK_PASSES = 8

#: How often to look again after the quick passes (a task waiting on a thread or a child
#: process may take a while to block again).
_POLL = 0.001


async def all_tasks_blocked() -> None:
    """Return once every other task of this event loop waits on something.

    Same meaning as ``anyio.wait_all_tasks_blocked`` (a task counts as blocked when it
    waits on a future that is not done yet), on either backend.
    """
    try:
        this = asyncio.current_task()
    except RuntimeError:  # no asyncio loop in this thread: trio, which knows exactly
        await anyio.wait_all_tasks_blocked()
        return
    await asyncio.sleep(0)
    passes = 0
    while not _settled(this):
        passes += 1
        await asyncio.sleep(0 if passes <= _QUICK_PASSES else _POLL)


def _settled(this: asyncio.Task[object] | None) -> bool:
    for task in asyncio.all_tasks():
        if task is this:
            continue
        # The same test anyio makes: a task is runnable unless it waits on a pending future.
        waiter = getattr(task, "_fut_waiter", None)
        if waiter is None or waiter.done():
            return False
    return True
