"""GAA on wide hierarchies (issue 15: a 13,000-leaf ZIP, numbers with 50,000 distinct values):
a leaf's LCA and cost rows are derived from its parent's and never kept, inner rows are kept
within a cap; none of it may change a choice, a cost or a trace (checked against test_gaa's
literal reference implementation)."""

import random

import numpy as np
import pytest
from test_gaa import runs_match_reference, trace_rows

from pganon_engine.hierarchy.tree import Hierarchy
from pganon_engine.methods.generalization import gaa, gaa_run, gaa_strategies
from pganon_engine.metrics import infoloss as il


@pytest.mark.parametrize("strategy", gaa.STRATEGIES)
def test_wide_hierarchy_paths_match_reference(strategy, monkeypatch):
    """Every hierarchy taken as wide (issue 15: a 13,000-leaf ZIP): a leaf's LCA and cost rows
    are its parent's with one entry changed, inner rows kept within a cap of 8 (evicted all
    the time); choices, costs and traces must stay the reference's."""
    monkeypatch.setattr(gaa_run, "_WIDE", 0)
    monkeypatch.setattr(gaa_run, "_ROW_BUDGET", 0)

    def every_fourth_without_few(i):   # the vector paths too, from the fourth instance on
        if i % 4 == 3:
            monkeypatch.setattr(gaa_strategies, "_FEW", 0)
    assert runs_match_reference(strategy, every_fourth_without_few) >= 40


def test_wide_hierarchy_keeps_no_leaf_rows(monkeypatch):
    """Memory (issue 15): a wide hierarchy's caches hold inner nodes only, at most its cap;
    a narrow one's keep every node it met."""
    monkeypatch.setattr(gaa_run, "_WIDE", 20)
    monkeypatch.setattr(gaa_run, "_ROW_BUDGET", 8 * 30)
    wide = Hierarchy.from_paths("zip", [[f"{a}{b}{c}", f"{a}{b}", f"{a}", "*"]
                                        for a in range(3) for b in range(3) for c in range(4)])
    narrow = Hierarchy.from_paths("g", [["M", "*"], ["F", "*"]])
    rnd = random.Random(5)
    space = [(wide.labels[v], g) for v in wide.leaves for g in "MF"]
    tuples = rnd.sample(space, 60)
    hs = [wide, narrow]
    met = il.metric("nllm", hs)
    leaf = np.stack([h.leaf_ids([t[j] for t in tuples]) for j, h in enumerate(hs)])
    run = gaa_run.Run(hs, met, leaf, np.ones(len(tuples), dtype=np.int64), None, 3, "S1",
                      "pairwise", "table", None, True, None)
    run.loop()
    assert run.wide == [True, False] and run.cap == [8, None]
    kept = [x for c in (run.lca_cache, run.cost_cache) for x in c[0]]
    assert kept and not any(wide.is_leaf[x] for x in kept)
    assert all(len(c[0]) <= 8 for c in (run.lca_cache, run.cost_cache, run.klca_cache, run.anc_cache))
    assert run.cost_cache[1]  # the narrow attribute keeps its rows
    res = run.result({})
    again = gaa.gaa(tuples, [1] * len(tuples), hs, 3, metric=met, trace=True)
    monkeypatch.setattr(gaa_run, "_WIDE", 10 ** 9)
    narrow_run = gaa.gaa(tuples, [1] * len(tuples), hs, 3, metric=met, trace=True)
    assert res.class_of == again.class_of == narrow_run.class_of
    assert trace_rows(again) == trace_rows(narrow_run)
