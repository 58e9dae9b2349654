"""Mondrian on weighted rows (mondrian D11): a strict run on the distinct (QI, SA) code vectors
with their counts gives the partitions of the run on the rows, which is what lets
`mondrian_sql` cut and pull distinct code vectors instead of rows (its S7)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pganon_engine.core.errors import EngineError
from pganon_engine.methods.generalization import mondrian as mo
from pganon_engine.methods.generalization import mondrian_schema as ms

from test_mondrian import SETTINGS, feasible, make_pred, tables


def _vectors(qs, ss):
    """(distinct vectors as code arrays, their counts, per row its vector)."""
    rows = np.stack(list(qs) + list(ss), axis=1)
    uniq, inv, cnt = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    d = len(qs)
    return [uniq[:, j] for j in range(d)], [uniq[:, d + c] for c in range(len(ss))], cnt, inv.reshape(-1)


@SETTINGS
@given(tables(max_rows=80), st.integers(1, 6), st.integers(1, 3), st.booleans(), st.one_of(st.none(), st.integers(0, 99)))
def test_weighted_vectors_give_the_partitions_of_the_rows(table, k, l, use_l, seed):
    qs, ss, sc = table
    sc = ms.schema(sc.kinds, sc.sizes, taxonomies=sc.taxonomies, sa_sizes=sc.sa_sizes, seed=seed)
    pred, chans, sc2 = make_pred(ss, sc, min(k, qs[0].size), l if (use_l and ss) else None, False)
    if not feasible(chans, pred, qs[0].size):
        return
    rows = mo.partition(qs, chans, sc2, pred)
    vq, vs, cnt, inv = _vectors(qs, chans)
    vec = mo.partition(vq, vs, sc2, pred, weights=cnt)
    assert rows.partition.tolist() == vec.partition[inv].tolist()  # every row in its vector's partition
    assert rows.sizes.tolist() == vec.sizes.tolist() and rows.rounds == vec.rounds
    assert rows.summaries() == vec.summaries()


def test_weights_are_refused_where_rows_of_one_vector_can_part():
    qs = [np.array([0, 1, 1, 2])]
    sc = ms.schema(["numeric"], [3])
    with pytest.raises(EngineError, match="weights need mode strict"):
        mo.partition(qs, [], sc, mo.k_anonymity(1), mode="relaxed", weights=[1, 1, 1, 1])
    with pytest.raises(EngineError, match="weights must be 4 integers >= 1"):
        mo.partition(qs, [], sc, mo.k_anonymity(1), weights=[1, 0, 1, 1])
