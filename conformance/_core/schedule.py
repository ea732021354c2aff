"""The order scenarios start in, and running several of them side by side in one process.

A conformance run mostly waits: on time limits a scenario lets run out on purpose, on
child programs, on fsync. Run one after another, the waits add up; run side by side,
they overlap, and the run costs about its longest scenario plus the CPU it needs. Two
things make that work:

- **Longest first.** Each room estimates how long a scenario deliberately waits (its
  ``waits.expected_wait``: the limits it runs out); the longest start first, so none of
  them is left to run alone at the end.
- **Threads, when the implementation allows it.** An adapter that sets
  ``concurrent_runs = True`` promises that ``run`` may be called from several threads at
  once (the kit's own Python adapters do: every scenario gets a fresh event loop and
  fresh objects). Threads cost nothing to start and share the loaded suite; the GIL is
  no obstacle to work that waits.

The results are handed back as they finish; callers put them back in scenario order.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from seamspec.conformance._core.registry import contract_waits
from seamspec.conformance._core.scenario import Scenario

__all__ = ["expected_wait", "longest_first", "longest_first_side_by_side", "side_by_side"]

T = TypeVar("T")
R = TypeVar("R")

#: How often the collecting thread wakes to let a Ctrl-C through while it waits.
_WAKE = 0.5


def expected_wait(scenario: Scenario) -> float:
    """Seconds a correct implementation deliberately waits in ``scenario`` (an estimate)."""
    estimate = contract_waits().get(scenario.contract)
    return estimate(scenario.given, scenario.when) if estimate else 0.0


def longest_first(scenarios: Sequence[Scenario]) -> list[int]:
    """The positions of ``scenarios`` in the order to start them: longest wait first.

    Ties keep the scenarios' own order, so the order is the same on every run.
    """
    waits = [expected_wait(s) for s in scenarios]
    return sorted(range(len(scenarios)), key=lambda i: -waits[i])


def longest_first_side_by_side(
    run_one: Callable[[Scenario], R],
    scenarios: Sequence[Scenario],
    jobs: int,
    *,
    on_done: Callable[[R], None],
    stop: Callable[[R], bool],
    interrupt: Callable[[], None] | None = None,
) -> list[R]:
    """``run_one`` over ``scenarios``, ``jobs`` at a time, longest waits first.

    ``on_done`` sees results as they finish; the list returned is in scenario order (a
    run that stopped early lacks the scenarios never started).
    """
    done = side_by_side(
        lambda i: (i, run_one(scenarios[i])),
        longest_first(scenarios),
        jobs,
        on_done=lambda pair: on_done(pair[1]),
        stop=lambda pair: stop(pair[1]),
        interrupt=interrupt,
    )
    return [result for _, result in sorted(done, key=lambda pair: pair[0])]


class _Finished:
    """A worker thread's last message: nothing is left for it to take."""


class _Failed:
    """A worker thread's message when ``work`` raised: handed to the caller, never lost."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _Done(Generic[R]):
    def __init__(self, result: R) -> None:
        self.result = result


def side_by_side(
    work: Callable[[T], R],
    items: Sequence[T],
    jobs: int,
    *,
    on_done: Callable[[R], None],
    stop: Callable[[R], bool],
    interrupt: Callable[[], None] | None = None,
) -> list[R]:
    """``work(item)`` for each item, up to ``jobs`` at once, started in the given order.

    ``on_done`` and ``stop`` are called in the calling thread as each result arrives, in
    the order they finish. Once ``stop`` returns true no further item is started, and the
    run ends there, as one at a time would: those already running are waited for (so
    that they clean up after themselves: child processes, temporary folders) but their
    results are dropped. Returns the results in finishing order. The worker threads are
    daemons: an interrupted run (Ctrl-C) does not wait for them, just as a scenario past
    its time limit is abandoned, not awaited; but with ``interrupt`` (which cancels the
    work in flight, e.g. the adapter's ``close``) they are cancelled and waited for
    first, so that none leaves a child process behind.
    """
    todo = collections.deque(items)  # popleft is atomic: no lock needed
    halt = threading.Event()
    inbox: queue.Queue[_Done[R] | _Failed | _Finished] = queue.Queue()

    def worker() -> None:
        try:
            while not halt.is_set():
                try:
                    item = todo.popleft()
                except IndexError:
                    return
                try:
                    inbox.put(_Done(work(item)))
                except BaseException as error:
                    inbox.put(_Failed(error))
                    return
        finally:
            inbox.put(_Finished())

    threads = [
        threading.Thread(target=worker, name=f"seamspec-job-{n}", daemon=True)
        for n in range(max(1, min(jobs, len(items))))
    ]
    for thread in threads:
        thread.start()
    results: list[R] = []
    running = len(threads)
    try:
        while running:
            try:
                message = inbox.get(timeout=_WAKE)
            except queue.Empty:
                continue
            if isinstance(message, _Finished):
                running -= 1
            elif isinstance(message, _Failed):
                halt.set()
                raise message.error
            elif not halt.is_set():
                results.append(message.result)
                on_done(message.result)
                if stop(message.result):
                    halt.set()
    except BaseException:
        halt.set()  # no item starts any more
        if interrupt is not None:
            _wind_down(threads, interrupt)
        raise
    return results


#: How long an interrupted run waits for its worker threads to unwind.
WIND_DOWN = 10.0


def _wind_down(threads: list[threading.Thread], interrupt: Callable[[], None]) -> None:
    """Interrupted: cancel what is in flight until every worker has stopped.

    Why more than one ``interrupt()``: a worker may have taken its item just before the
    halt and start it just after a cancellation, which then never sees it; its child
    processes would outlive the run (the run's scope sweeps the kit's descendants once,
    when the run ends). So cancel, wait a little, and cancel again, until the workers
    are gone or the time is up (a worker stuck in synchronous code is abandoned: the
    threads are daemons).
    """
    deadline = time.monotonic() + WIND_DOWN
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
        interrupt()
        for thread in threads:
            thread.join(max(0.0, min(0.2, deadline - time.monotonic())))
