"""The query-error workload lets a cancel through and is bounded (issue 12, "Why" 6): under
`interrupts.ticking` every block of work calls the tick (the database's interrupt check); the
person-aware measurement (ir_metrics) does too; more than MAX_QUERIES queries are refused."""

import numpy as np
import pytest
from pganon_engine.core import interrupts
from pganon_engine.metrics import estimate, ir_metrics, querygen, workload as wl
from pganon_engine.core.errors import EngineError
from pganon_engine.metrics.workload import Domain


def _domains(n=5000, seed=1):
    rng = np.random.default_rng(seed)
    return [Domain.numeric("age", rng.integers(20, 80, n)),
            Domain.categorical("sex", ["F", "M"], rng.integers(0, 2, n))]


class _Ticks:
    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1


def test_every_stage_of_a_workload_ticks_under_ticking():
    doms = _domains()
    ticks = _Ticks()
    with interrupts.ticking(ticks):
        q = querygen.make_queries(doms, 0.1, n=400, seed=3, chunk_elems=1 << 14)
        drawn = ticks.n
        wl.true_counts(q, chunk_elems=1 << 14)
        counted = ticks.n
        cells = [((20 + i, 21 + i), "*") for i in range(0, 60, 2)]
        estimate.estimated_counts(q, cells, [10] * len(cells), chunk_elems=1 << 10)
    assert drawn > 1 and counted - drawn >= (5000 * 400) // (1 << 14) and ticks.n > counted
    before = ticks.n
    wl.true_counts(q)                                    # outside the block: no tick, same answer
    assert ticks.n == before


def test_a_tick_that_raises_stops_the_workload():
    """The database's tick raises when a cancel or statement_timeout is pending: the workload
    must not swallow it."""
    class Cancelled(Exception):
        pass

    def cancel():
        raise Cancelled

    with pytest.raises(Cancelled), interrupts.ticking(cancel):
        querygen.make_queries(_domains(), 0.1, n=50, seed=1)
    assert interrupts._tick is None                              # the block restores the previous tick


def test_person_measurement_ticks():
    persons = [(i, (20 + i % 50, "F" if i % 2 else "M"), ["a" if i % 3 else "b"] * (1 + i % 3)) for i in range(3000)]
    doms = (Domain.numeric("age", lo=20, hi=69), Domain.categorical("sex", ["F", "M"]),
            Domain.categorical("sa", ["a", "b"]))
    ticks = _Ticks()
    with interrupts.ticking(ticks):
        cols = ir_metrics.record_columns([(p[1], p[2]) for p in persons], doms)
        ir_metrics.table_loss([(3, ((20, 25), frozenset({"F", "M"})))] * 5000, doms[:2])
    assert len(cols["age"]) == sum(len(p[2]) for p in persons) and ticks.n >= 2


@pytest.mark.parametrize("n", [wl.MAX_QUERIES + 1, 1_000_000])
def test_more_queries_than_the_bound_are_refused(n):
    with pytest.raises(EngineError) as exc:
        wl.check_queries(n)
    assert exc.value.sqlstate == "PA002" and "100,000" in str(exc.value)
    with pytest.raises(EngineError):
        querygen.make_queries(_domains(50), 0.1, n=n, seed=1)
    wl.check_queries(wl.MAX_QUERIES)                     # the bound itself is allowed
