"""How long the kit's drivers wait on an implementation, and how a caller shortens it.

Each driver waits on the implementation with limits of its own (``WAIT_LIMIT``,
``CALL_LIMIT``, ...): generous, since they judge any implementation on any machine, and
an implementation that never does what a step waits for costs the whole limit. The
kill matrix judges only the kit's own mutants, which are the reference with one thing
broken, and most of its time went into exactly those limits running out (a mutant that
never calls ``on_finish`` held each scenario for 5 or 10 s). So it may cap them, for
the calls it makes, with :func:`capped`; the drivers read every such limit through
:func:`patient`. Without a cap (every other run) the limits are the drivers' own.

Only waits whose running out the trace records for the oracle to judge (a
``kit_timeout``) are capped: the oracle then finds what it would after the full wait,
since the mutant never does what the step waits for. A wait whose running out makes
the scenario an error (the kit cannot judge it: a call that never ends even after
every gate was released) keeps the driver's full limit; capped, it would only turn a
mutant's verdict into an error.

A cap is a bound the reference meets with room to spare: the kill matrix caps a
scenario at a floor plus the time limits the scenario deliberately runs out
(``expected_wait``), and ``tests/test_quality_commands.py`` holds the reference to
every scenario under that cap. A cap only ever makes a wait end sooner, and the rooms'
meta-tests (``tests/test_*_mutants.py``) still judge every mutant with the full limits.

The cap lives in a context variable: set in the thread that calls ``Runner.run_one``,
it reaches the adapter's thread (the runner copies its context) and the scenario's
event loop, and no other run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["capped", "patient"]

_CAP: ContextVar[float | None] = ContextVar("seamspec_patience_cap", default=None)


def patient(limit: float) -> float:
    """``limit``, or the caller's cap when that is shorter."""
    cap = _CAP.get()
    return limit if cap is None else min(limit, cap)


@contextmanager
def capped(seconds: float) -> Iterator[None]:
    """Within the block, every driver limit read through :func:`patient` is at most
    ``seconds``."""
    if seconds <= 0:
        raise ValueError(f"a patience cap must be positive, not {seconds}")
    token = _CAP.set(seconds)
    try:
        yield
    finally:
        _CAP.reset(token)
