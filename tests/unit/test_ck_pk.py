"""Unit tests for pganon_engine.methods.linked.pk, the (p,k)-angelization baseline (spec
004-ck-anonymization.md, section 2.7): batches on Table 1, errors and properties."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pganon_engine.methods.linked import pk
from test_ck_plan import BY_PID, PSAS, QIS, ROWS, SAS, _n_categories, small_tables


# --------------------------------------------------------------------------------------------
# (p,k) baseline (claims 8.5, 8.7)
# --------------------------------------------------------------------------------------------


def test_pk_plan_table1_batches_are_p_k_and_one_to_one():
    p = pk.pk_plan(ROWS, QIS, SAS, 2, 2, "physician", key="pid")
    cat_of = dict(zip(p.ids, p.category))
    assert p.group == p.batch
    assert sorted(x for v in p.batches().values() for x in v) == sorted(BY_PID)
    for members in p.batches().values():
        assert len(members) >= 2 and len({cat_of[x] for x in members}) >= 2


@pytest.mark.parametrize("kwargs,match", [
    (dict(p=5), "only 4 categories"),
    (dict(p=0), "p must be >= 1"),
    (dict(k=1), "k must be >= 2"),
    (dict(k=10), "larger than the number of records"),
])
def test_pk_plan_errors(kwargs, match):
    args = dict(p=2, k=2, delta="physician", key="pid")
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        pk.pk_plan(ROWS, QIS, SAS, **args)


@settings(max_examples=200, deadline=None)
@given(small_tables(), st.integers(1, 3), st.one_of(st.none(), st.integers(0, 99)))
def test_pk_plan_properties(t, pp, seed):
    rows, k, _c, _cf, _mode = t
    if pp > _n_categories(rows, k):
        with pytest.raises(ValueError, match="categories"):
            pk.pk_plan(rows, ["age", "zip"], PSAS, pp, k, "d", key="id", seed=seed)
        return
    p = pk.pk_plan(rows, ["age", "zip"], PSAS, pp, k, "d", key="id", seed=seed)
    assert p.group == p.batch
    assert sorted(x for v in p.batches().values() for x in v) == list(range(len(rows)))
    for members in p.batches().values():
        assert len(members) >= k
        assert len({p.category[i] for i in members}) >= pp
    q = pk.pk_plan(rows, ["age", "zip"], PSAS, pp, k, "d", key="id", seed=seed)
    assert q.batch == p.batch
