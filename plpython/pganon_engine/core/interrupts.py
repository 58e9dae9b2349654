"""Letting a cancel through long Python loops (issue 12).

PostgreSQL notices a cancel or statement_timeout only when the backend runs SQL; a loop of pure
Python (a hitting-set search, a query workload, a loss over persons) would run on regardless.
Under `ticking(tick)` every `interrupt_point()` calls `tick` — `Db.interruptible()`, which runs a
trivial statement at most every 0.2 s — so the loop stops within a fraction of a second. Outside
`ticking` an interrupt point does nothing, so plain unit tests and results are unaffected.
"""

import contextlib

_tick = None  # called at every interrupt point while `ticking` is active


@contextlib.contextmanager
def ticking(tick):
    """Make every interrupt point inside the block call `tick`."""
    global _tick
    before, _tick = _tick, tick
    try:
        yield
    finally:
        _tick = before


def interrupt_point():
    """Where a long loop lets a cancel through."""
    if _tick is not None:
        _tick()
