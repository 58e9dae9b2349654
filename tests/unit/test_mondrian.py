"""Unit tests for pganon_engine.methods.generalization.mondrian and the modules it is built from
(mondrian_schema, mondrian_predicates, mondrian_cuts; spec 003-msa-comparative.md §2.2, §3.2, A6-A8).

Hand-checked fixtures first (each with the arithmetic in a comment), then hypothesis
properties, then bad input.  `reference` is the yardstick for the vectorized driver: the same
recursion written with nothing but the aggregate decision function (`freq_sets` ->
`choose_cut` -> `assign`), as the SQL side will run it on large partitions.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pganon_engine.methods.generalization import mondrian as mo
from pganon_engine.methods.generalization import mondrian_cuts as mc
from pganon_engine.methods.generalization import mondrian_predicates as mp
from pganon_engine.methods.generalization import mondrian_schema as ms
from pganon_engine.core.errors import EngineError

# * -> A {0, 1}, B {2, 3}, C {4}; leaf nodes are labelled by their codes.
TX_ABC = {"children": {"*": ["A", "B", "C"], "A": [0, 1], "B": [2, 3], "C": [4]}}
# A deeper, unbalanced one for the properties: 8 leaf codes, a leaf node with two codes (c2).
TX_DEEP = ms.taxonomy({"*": ["a", "b", "c"], "a": [0, 1, 2], "b": [3, 4], "c": ["c1", "c2"],
                       "c1": [5], "c2": []}, leaves={"c2": [6, 7]})


def groups(res):
    """Partitions as lists of row ids, in partition-id order."""
    return [np.flatnonzero(res.partition == p).tolist() for p in range(res.n_partitions)]


def reference(qs, ss, sc, pred, mode):
    """Mondrian from the aggregate decision alone, depth first, parts in order."""
    qs = [np.asarray(q) for q in qs]
    ss = [np.asarray(s) for s in ss]
    out, stack = [], [np.arange(qs[0].size)]
    while stack:
        rows = stack.pop()
        sub_q, sub_s = [q[rows] for q in qs], [s[rows] for s in ss]
        cut = mc.choose_cut(mc.freq_sets(sub_q, sub_s, sc), sc, pred, mode=mode)
        if cut is None:
            out.append(rows.tolist())
            continue
        part = mc.assign(cut, sub_q, sub_s, sc)
        assert tuple(np.bincount(part, minlength=len(cut.sizes))) == cut.sizes
        for i in reversed(range(len(cut.sizes))):
            stack.append(rows[part == i])
    return out


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


def test_strict_two_dimensions_hand_checked():
    # age codes 0..7 (span 7), zip codes 0..3 (span 3).  Root: widths 7/7 = 3/3 = 1, tie ->
    # lower QI (age); 4th smallest age = 3 -> {r0..r3} | {r4..r7}.  {r0..r3}: age 3/7 < zip
    # 3/3 -> zip; 2nd smallest zip = 1 -> {r0, r2} | {r1, r3}; same on the right.  Pairs
    # cannot be cut with k = 2.
    age = [0, 1, 2, 3, 4, 5, 6, 7]
    zipc = [0, 3, 1, 2, 0, 3, 1, 2]
    res = mo.mondrian([age, zipc], kinds=["numeric", "ordinal"], sizes=[8, 4], k=2)
    assert groups(res) == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert res.summaries() == [((0, 2), (0, 1)), ((1, 3), (2, 3)),
                               ((4, 6), (0, 1)), ((5, 7), (2, 3))]
    assert res.sizes.tolist() == [2, 2, 2, 2]
    assert res.rounds == 2


def test_strict_and_relaxed_differ_on_a_tiny_table():
    # x = [1, 0, 1, 2, 1, 1], k = 3.  Median = 3rd smallest of [0,1,1,1,1,2] = 1.
    # Strict: lhs = {x <= 1} has 5 rows, rhs 1 row < 3 -> no cut, one partition.
    # Relaxed: lhs = {x < 1} = {r1} plus the first 3 - 1 = 2 median rows in row order (r0, r2);
    # rhs = r4, r5 and r3: 3 rows each.
    x = [1, 0, 1, 2, 1, 1]
    strict = mo.mondrian([x], kinds=["numeric"], k=3)
    relaxed = mo.mondrian([x], kinds=["numeric"], k=3, mode="relaxed")
    assert groups(strict) == [[0, 1, 2, 3, 4, 5]]
    assert strict.summaries() == [((0, 2),)]
    assert groups(relaxed) == [[0, 1, 2], [3, 4, 5]]
    assert relaxed.summaries() == [((0, 1),), ((1, 2),)]  # relaxed ranges overlap at 1


def test_relaxed_median_rows_shared_by_sa_vector():
    # x = [1,1,0,1,1,1,2,1], sa = [0,0,0,0,1,0,1,1], k = 4.  Median = 4th smallest = 1, one row
    # below it, so q = 4 - 1 = 3 of the six median rows go left.  Median rows: sa 0 = r0, r1,
    # r3, r5 (4), sa 1 = r4, r7 (2).  Shares 3*4/6 = 2 and 3*2/6 = 1 -> r0, r1 and r4 (plain
    # row order would take r0, r1, r3, leaving sa 1 out of the lhs).
    x = np.array([1, 1, 0, 1, 1, 1, 2, 1])
    sa = np.array([0, 0, 0, 0, 1, 0, 1, 1])
    sc = ms.schema(["numeric"], [3], sa_sizes=[2])
    pred = mp.k_anonymity(4) & mp.distinct_l_diversity(2)
    cut = mc.choose_cut(mc.freq_sets([x], [sa], sc), sc, pred, mode="relaxed")
    assert cut == mc.Cut(dim=0, kind="range", sizes=(4, 4), value=1, relaxed=True,
                         take={(0,): 2, (1,): 1})
    assert mc.assign(cut, [x], [sa], sc).tolist() == [0, 0, 0, 1, 0, 1, 1, 1]
    res = mo.partition([x], [sa], sc, pred, mode="relaxed")
    assert groups(res) == [[0, 1, 2, 4], [3, 5, 6, 7]]


def test_relaxed_remainder_tie_goes_to_the_smaller_sa_vector():
    # x = [1, 1, 0, 2]: median = 2nd smallest = 1, q = 2 - 1 = 1 over the median rows r0
    # (sa 1) and r1 (sa 0): shares 1/2 each, equal remainders -> the smaller SA vector (0)
    # takes it, so r1 goes left although r0 comes first in row order.
    x = np.array([1, 1, 0, 2])
    sa = np.array([1, 0, 1, 1])
    sc = ms.schema(["numeric"], [3], sa_sizes=[2])
    cut = mc.choose_cut(mc.freq_sets([x], [sa], sc), sc, mp.k_anonymity(2), mode="relaxed")
    assert cut.take == {(0,): 1}
    assert mc.assign(cut, [x], [sa], sc).tolist() == [1, 0, 0, 1]


def test_taxonomy_split_one_part_per_child_with_rows():
    # codes [0,2,1,3,0,2] span A and B, so the LCA is '*'; C holds no row and makes no part.
    # k = 2: A = {r0, r2, r4}, B = {r1, r3, r5}.  In A the leaf 1 has one row (< 2), so A stays;
    # likewise B.  k = 1 goes down to the leaves.
    codes = [0, 2, 1, 3, 0, 2]
    sc = ms.schema(["taxonomy"], taxonomies=[TX_ABC])
    cut = mc.choose_cut(mc.freq_sets([codes], [], sc), sc, mp.k_anonymity(2))
    assert cut == mc.Cut(dim=0, kind="taxonomy", sizes=(3, 3), node="*", children=("A", "B"))
    res = mo.partition([codes], [], sc, mp.k_anonymity(2))
    assert groups(res) == [[0, 2, 4], [1, 3, 5]]
    assert [s[0] for s in res.summaries()] == ["A", "B"]
    res1 = mo.partition([codes], [], sc, mp.k_anonymity(1))
    assert groups(res1) == [[0, 4], [2], [1, 5], [3]]
    assert res1.nodes[0] == [0, 1, 2, 3]


def test_taxonomy_child_below_k_blocks_the_cut():
    # codes [0, 1, 4]: children A (2 rows) and C (1 row); with k = 2 C fails, no cut; the
    # summary is the LCA '*'.
    res = mo.mondrian([[0, 1, 4]], kinds=["taxonomy"], taxonomies=[TX_ABC], k=2)
    assert groups(res) == [[0, 1, 2]]
    assert res.summaries() == [("*",)]


def test_taxonomy_summary_is_the_lca():
    # All codes under A: the partition (k = 4, no cut) is summarized by A, not the root.
    res = mo.mondrian([[0, 1, 0, 1], [0, 1, 2, 3]], kinds=["taxonomy", "numeric"],
                      taxonomies=[TX_ABC, None], k=4)
    assert res.summaries() == [("A", (0, 3))]


def test_ordinal_mode_cuts_a_categorical_order():
    # education codes (an order, no hierarchy): [3,0,2,1,3,0], k = 3.  3rd smallest of
    # [0,0,1,2,3,3] = 1 -> {r1, r3, r5} (codes 0,1,0) | {r0, r2, r4} (3,2,3).
    res = mo.mondrian([[3, 0, 2, 1, 3, 0]], kinds=["ordinal"], sizes=[4], k=3)
    assert groups(res) == [[1, 3, 5], [0, 2, 4]]
    assert res.summaries() == [((0, 1),), ((2, 3),)]
    assert res.lo[0].tolist() == [0, 2] and res.hi[0].tolist() == [1, 3]


def test_numeric_widths_in_values_change_the_dimension():
    # QI 0: codes {1, 3} of 4 with values [0, 1, 2, 100]: ranks 2/3, values 99/100.
    # QI 1: ordinal codes 0..3 of 5: 3/4.  Ranks pick QI 1, values pick QI 0.
    q0 = [1, 1, 1, 3, 3, 3]
    q1 = [0, 3, 1, 2, 0, 3]
    by_rank = mo.mondrian([q0, q1], kinds=["numeric", "ordinal"], sizes=[4, 5], k=3)
    by_value = mo.mondrian([q0, q1], kinds=["numeric", "ordinal"], sizes=[None, 5],
                           values=[[0, 1, 2, 100], None], k=3)
    assert groups(by_rank) == [[0, 2, 4], [1, 3, 5]]
    assert groups(by_value) == [[0, 1, 2], [3, 4, 5]]


def test_l_diversity_blocks_a_cut_k_allows_and_joint_is_weaker():
    # q = [0,1,2,3], k = 2 cuts {r0, r1} | {r2, r3}.  sa1 = [0,0,1,1]: the lhs has one value,
    # so l = 2 per SA forbids the cut.  Over SA vectors (sa1, sa2) the lhs has (0,0), (0,1):
    # two fingerprints, so joint l = 2 allows it.
    q = [0, 1, 2, 3]
    sa1, sa2 = [0, 0, 1, 1], [0, 1, 0, 1]
    assert groups(mo.mondrian([q], [sa1, sa2], kinds=["numeric"], k=2)) == [[0, 1], [2, 3]]
    assert groups(mo.mondrian([q], [sa1, sa2], kinds=["numeric"], k=2, l=2)) == [[0, 1, 2, 3]]
    assert groups(mo.mondrian([q], [sa1, sa2], kinds=["numeric"], k=2, l=2,
                              joint=True)) == [[0, 1], [2, 3]]


def test_plain_callable_predicate_gets_named_histograms():
    seen = []

    def pred(size, hists):
        seen.append((size, hists))
        return size >= 2

    sc = ms.schema(["numeric"], [4], sa_sizes=[3], sa_names=["disease"])
    res = mo.partition([[0, 1, 2, 3]], [[2, 2, 0, 1]], sc, pred)
    assert groups(res) == [[0, 1], [2, 3]]
    assert seen[0] == (4, {"disease": {0: 1, 1: 1, 2: 2}})  # the whole table, checked first
    assert (2, {"disease": {2: 2}}) in seen and (2, {"disease": {0: 1, 1: 1}}) in seen


def test_models_module_predicate_plugs_in():
    models = pytest.importorskip("pganon_engine.models.predicates")
    pred = models.predicate("l_diversity", {"l": 2})
    sc = ms.schema(["numeric"], [4], sa_sizes=[2], sa_names=["disease"])
    q, sa = [0, 1, 2, 3], [0, 1, 0, 1]
    assert groups(mo.partition([q], [sa], sc, pred)) == [[0, 1], [2, 3]]
    assert groups(mo.partition([q], [[0, 0, 1, 1]], sc, pred)) == [[0, 1, 2, 3]]


def test_start_from_initial_partitions_and_origin():
    # Two initial partitions (ids 7 and 3, taken in ascending id): 3 = rows {1, 3, 5} is not
    # cut further with k = 1 on a single value; 7 = rows {0, 2, 4} is cut down to singletons.
    q = [0, 5, 1, 5, 2, 5]
    start = [7, 3, 7, 3, 7, 3]
    sc = ms.schema(["numeric"], [6])
    res = mo.partition([q], [], sc, mp.k_anonymity(1), start=start)
    assert groups(res) == [[1, 3, 5], [0], [2], [4]]
    assert res.origin.tolist() == [3, 7, 7, 7]


def test_start_nodes_are_checked():
    sc = ms.schema(["taxonomy"], taxonomies=[TX_ABC])
    res = mo.partition([[0, 1]], [], sc, mp.k_anonymity(1), nodes=["A"])
    assert groups(res) == [[0], [1]]
    with pytest.raises(EngineError, match="outside taxonomy node 'B'"):
        mo.partition([[0, 1]], [], sc, mp.k_anonymity(1), nodes=["B"])


def test_taxonomy_from_parent_array():
    # nodes 0..4: 0 root, 1 and 2 its children, leaves 3 (under 1) and 4 (under 2)
    tx = ms.taxonomy(parent=[-1, 0, 0, 1, 2])
    assert tx.root == 0 and tx.n_leaves == 2
    assert tx.leaves_of(1).tolist() == [3] and tx.leaves_of(0).tolist() == [3, 4]
    # the root splits into 1 and 2; each part holds one leaf, whose LCA is the leaf itself
    # (below the single-child nodes 1 and 2)
    res = mo.mondrian([[3, 4, 3, 4]], kinds=["taxonomy"], taxonomies=[tx], k=2)
    assert groups(res) == [[0, 2], [1, 3]]
    assert res.summaries() == [(3,), (4,)]


def test_seed_is_reproducible_and_breaks_dimension_ties():
    # q0 = [0,1,0,1], q1 = [0,0,1,1]: equal widths (1/1).  Without a seed QI 0 wins the tie:
    # {r0, r2} | {r1, r3}; with QI 1 first: {r0, r1} | {r2, r3}.
    q = [[0, 1, 0, 1], [0, 0, 1, 1]]
    plain = mo.mondrian(q, kinds=["numeric", "numeric"], k=2)
    assert groups(plain) == [[0, 2], [1, 3]]
    runs = {}
    for seed in range(8):
        a = mo.mondrian(q, kinds=["numeric", "numeric"], k=2, seed=seed)
        b = mo.mondrian(q, kinds=["numeric", "numeric"], k=2, seed=seed)
        assert groups(a) == groups(b)
        runs[ms.schema(["numeric"] * 2, [2, 2], seed=seed).priority] = groups(a)
    assert runs == {(0, 1): [[0, 2], [1, 3]], (1, 0): [[0, 1], [2, 3]]}


def test_relaxed_seed_orders_median_rows_reproducibly():
    x = [1] * 6 + [0, 2]
    a = mo.mondrian([x], kinds=["numeric"], k=2, mode="relaxed", seed=3)
    b = mo.mondrian([x], kinds=["numeric"], k=2, mode="relaxed", seed=3)
    assert groups(a) == groups(b)
    firsts = {tuple(groups(mo.mondrian([x], kinds=["numeric"], k=4, mode="relaxed",
                                       seed=s))[0]) for s in range(6)}
    assert len(firsts) > 1  # different seeds send different median rows left
    assert all(6 in f and 7 not in f for f in firsts)  # code 0 always left, code 2 right


def test_histograms_built_in_chunks_give_the_same_partitions(monkeypatch):
    rng = np.random.default_rng(7)
    qs = [rng.integers(0, 30, 400), rng.integers(0, 8, 400)]
    ss = [rng.integers(0, 5, 400), rng.integers(0, 3, 400)]
    sc = ms.schema(["numeric", "taxonomy"], [30, None], taxonomies=[None, TX_DEEP], sa_sizes=[5, 3])
    pred = mp.k_anonymity(3) & mp.distinct_l_diversity(2)
    whole = mo.partition(qs, ss, sc, pred, mode="relaxed")
    monkeypatch.setattr(mp, "_HIST_CELLS", 16)  # two parts of 8 cells per chunk
    chunked = mo.partition(qs, ss, sc, pred, mode="relaxed")
    assert whole.n_partitions > 20
    assert groups(chunked) == groups(whole)


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------


@st.composite
def tables(draw, max_rows=60):
    n = draw(st.integers(1, max_rows))
    d = draw(st.integers(1, 3))
    kinds, sizes, taxes, qs = [], [], [], []
    for _ in range(d):
        kd = draw(st.sampled_from(ms.KINDS))
        kinds.append(kd)
        if kd == "taxonomy":
            sizes.append(None)
            taxes.append(TX_DEEP)
            hi = 7
        else:
            m = draw(st.integers(1, 12))
            sizes.append(m)
            taxes.append(None)
            hi = m - 1
        qs.append(np.array(draw(st.lists(st.integers(0, hi), min_size=n, max_size=n))))
    c = draw(st.integers(0, 2))
    ss = [np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))) for _ in range(c)]
    sc = ms.schema(kinds, sizes, taxonomies=taxes, sa_sizes=[4] * c)
    return qs, ss, sc


@st.composite
def runs(draw):
    qs, ss, sc = draw(tables())
    n = qs[0].size
    k = draw(st.integers(1, max(1, min(6, n))))
    l = draw(st.integers(1, 3)) if ss else None
    joint = bool(ss) and draw(st.booleans())
    mode = draw(st.sampled_from(mc.MODES))
    return qs, ss, sc, k, l, joint, mode


def make_pred(ss, sc, k, l, joint):
    """(predicate, channels, schema): joint l appends the SA-vector channel."""
    if l is None:
        return mp.k_anonymity(k), ss, sc
    if joint:
        vec, keys = mc.sa_vector_codes(ss)
        ss = ss + [vec]
        sc = ms.schema(sc.kinds, sc.sizes, taxonomies=sc.taxonomies,
                       sa_sizes=list(sc.sa_sizes) + [len(keys)])
        return mp.k_anonymity(k) & mp.distinct_l_diversity(l, [len(ss) - 1]), ss, sc
    return mp.k_anonymity(k) & mp.distinct_l_diversity(l), ss, sc


def feasible(ss, pred, n):
    return pred(n, {c: dict(zip(*np.unique(s, return_counts=True))) for c, s in enumerate(ss)})


def box(res, sc, p, j):
    """Partition p's interval of working codes on QI j (leaf ranks for taxonomy QIs)."""
    if sc.kinds[j] == "taxonomy":
        tx = sc.taxonomies[j]
        u = tx.node_id(res.nodes[j][p])
        return int(tx.first[u]), int(tx.last[u])
    return int(res.lo[j][p]), int(res.hi[j][p])


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(runs())
def test_partitions_are_admissible_cover_all_rows_and_hold_their_rows(case):
    qs, ss, sc, k, l, joint, mode = case
    pred, chans, sc2 = make_pred(ss, sc, k, l, joint)
    n = qs[0].size
    if not feasible(chans, pred, n):
        with pytest.raises(EngineError, match="does not satisfy the predicate"):
            mo.partition(qs, chans, sc2, pred, mode=mode)
        return
    res = mo.partition(qs, chans, sc2, pred, mode=mode)
    pid = res.partition
    # disjoint and covering: one id per row, ids 0..P-1 all used, sizes agree
    assert pid.shape == (n,) and pid.min() == 0
    assert np.bincount(pid).tolist() == res.sizes.tolist()
    assert (res.sizes >= k).all()
    for p in range(res.n_partitions):
        rows = pid == p
        if l is not None:
            if joint:
                assert np.unique(chans[-1][rows]).size >= l
            else:
                assert all(np.unique(s[rows]).size >= l for s in ss)
        for j in range(sc.d):
            if sc.kinds[j] == "taxonomy":
                tx = sc.taxonomies[j]
                node = res.nodes[j][p]
                assert np.isin(qs[j][rows], tx.leaves_of(node)).all()
                r = tx.ranks(qs[j][rows])  # the node is the LCA: no child covers all rows
                u = tx.node_id(node)
                assert not any(tx.first[c] <= r.min() and r.max() <= tx.last[c]
                               for c in tx.children[u])
            else:
                assert (res.lo[j][p], res.hi[j][p]) == (qs[j][rows].min(), qs[j][rows].max())


@SETTINGS
@given(runs())
def test_driver_equals_the_aggregate_decision_recursion(case):
    qs, ss, sc, k, l, joint, mode = case
    pred, chans, sc2 = make_pred(ss, sc, k, l, joint)
    if not feasible(chans, pred, qs[0].size):
        return
    res = mo.partition(qs, chans, sc2, pred, mode=mode)
    assert groups(res) == reference(qs, chans, sc2, pred, mode)
    # and no final partition has an allowable cut left
    for rows in groups(res)[:10]:
        fs = mc.freq_sets([q[rows] for q in qs], [s[rows] for s in chans], sc2)
        assert mc.choose_cut(fs, sc2, pred, mode=mode) is None


@SETTINGS
@given(runs())
def test_strict_partitions_do_not_overlap(case):
    qs, ss, sc, k, l, joint, _ = case
    pred, chans, sc2 = make_pred(ss, sc, k, l, joint)
    if not feasible(chans, pred, qs[0].size):
        return
    res = mo.partition(qs, chans, sc2, pred, mode="strict")
    boxes = [[box(res, sc2, p, j) for j in range(sc.d)] for p in range(res.n_partitions)]
    for a in range(len(boxes)):
        for b in range(a + 1, len(boxes)):
            assert not all(x[0] <= y[1] and y[0] <= x[1] for x, y in zip(boxes[a], boxes[b]))


@SETTINGS
@given(runs())
def test_plain_callable_gives_the_same_partitions_as_the_batch_form(case):
    qs, ss, sc, k, l, joint, mode = case
    pred, chans, sc2 = make_pred(ss, sc, k, l, joint)
    if not feasible(chans, pred, qs[0].size):
        return

    def plain(size, hists):
        return pred(size, hists)

    a = mo.partition(qs, chans, sc2, pred, mode=mode)
    b = mo.partition(qs, chans, sc2, plain, mode=mode)
    assert groups(a) == groups(b)
    assert a.summaries() == b.summaries()


@SETTINGS
@given(runs())
def test_starting_from_the_first_cut_gives_the_same_partitions(case):
    qs, ss, sc, k, l, joint, mode = case
    pred, chans, sc2 = make_pred(ss, sc, k, l, joint)
    if not feasible(chans, pred, qs[0].size):
        return
    whole = mo.partition(qs, chans, sc2, pred, mode=mode)
    cut = mc.choose_cut(mc.freq_sets(qs, chans, sc2), sc2, pred, mode=mode)
    if cut is None:
        assert whole.n_partitions == 1
        return
    start = mc.assign(cut, qs, chans, sc2)
    again = mo.partition(qs, chans, sc2, pred, mode=mode, start=start)
    assert groups(again) == groups(whole)
    assert again.summaries() == whole.summaries()


@settings(max_examples=40, deadline=None)
@given(tables(max_rows=40), st.integers(0, 2**31 - 1))
def test_relaxed_halves_are_balanced(table, seed):
    # Every relaxed cut on a range QI gives size//2 and the rest; check the root cut.
    qs, ss, sc = table
    cut = mc.choose_cut(mc.freq_sets(qs, ss, sc), sc, mp.k_anonymity(1), mode="relaxed")
    n = qs[0].size
    if cut is not None and cut.kind == "range":
        assert cut.sizes == (n // 2, n - n // 2)
        assert sum(cut.take.values()) == n // 2 - int((qs[cut.dim] < cut.value).sum())


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------

SC1 = ms.schema(["numeric"], [4])

BAD = [
    (lambda: mo.mondrian([[0, 1, 2]], kinds=["numeric"], k=5),
     "PA002", "k = 5 is larger than the table (3 rows)"),
    (lambda: mo.mondrian([[0, 1, 2], [0, 1]], kinds=["numeric", "numeric"], k=1),
     "PA002", "QI 1 has 2 codes but QI 0 has 3"),
    (lambda: mo.mondrian([[0, 1, 2]], [[0, 1]], kinds=["numeric"], k=1),
     "PA002", "SA 0 has 2 codes but QI 0 has 3"),
    (lambda: mo.partition([[0, 1, 2]], [], SC1, mp.k_anonymity(4)),
     "PA002", "the table does not satisfy the predicate k_anonymity(4)"),
    (lambda: mo.mondrian([[0, 1, 2]], [[0, 0, 1]], kinds=["numeric"], l=3),
     "PA002", "l = 3 but the table has only 2 distinct values of SA 0"),
    (lambda: mo.mondrian([[0, 1]], kinds=["numeric", "ordinal"], k=1),
     "PA002", "2 kinds for 1 QI code arrays"),
    (lambda: mo.mondrian([[0, 1]], kinds=["interval"], k=1),
     "PA002", "QI 0: kind 'interval' is not one of"),
    (lambda: mo.mondrian([[0, 1]], kinds=["taxonomy"], k=1),
     "PA002", "QI 0 is of kind 'taxonomy' but has no taxonomy"),
    (lambda: mo.mondrian([[0, 9]], kinds=["taxonomy"], taxonomies=[TX_ABC], k=1),
     "PA004", "QI 0: code 9 is not a leaf of the hierarchy rooted at '*'"),
    (lambda: mo.mondrian([[0.5, 1.0]], kinds=["numeric"], k=1),
     "PA004", "QI 0 must be integer codes, not float64"),
    (lambda: mo.mondrian([[0, -1]], kinds=["numeric"], k=1),
     "PA004", "QI 0 has a negative code (-1)"),
    (lambda: mo.partition([[0, 7]], [], SC1, mp.k_anonymity(1)),
     "PA004", "QI 0 has code 7, but the domain has 4 codes"),
    (lambda: mo.mondrian([[0, 1]], kinds=["numeric"], k=1, mode="loose"),
     "PA002", "mode 'loose' is not one of strict, relaxed"),
    (lambda: mo.mondrian([[0, 1]], kinds=["numeric"]),
     "PA002", "give k, l or a predicate"),
    (lambda: mo.mondrian([[0, 1]], kinds=["numeric"], k=0),
     "PA002", "k must be >= 1, not 0"),
    (lambda: mo.partition([[0, 1]], [], SC1, 10),
     "PA002", "predicate 10 is not callable"),
    (lambda: mo.partition([[]], [], SC1, mp.k_anonymity(1)),
     "PA002", "the table is empty"),
    (lambda: mo.partition([[0, 1]], [], SC1, mp.k_anonymity(1), start=[0]),
     "PA002", "start has 1 ids for 2 rows"),
    (lambda: mo.partition([[0, 1, 2, 3]], [], SC1, mp.k_anonymity(2), start=[0, 1, 1, 1]),
     "PA002", "initial partition 0 (1 rows) does not satisfy"),
    (lambda: mo.partition([[0, 1]], [[0, 1]], SC1, mp.k_anonymity(1)),
     "PA002", "1 SA code arrays for a schema of 0 SA channels"),
    (lambda: mo.partition([[0, 1]], [], SC1, mp.distinct_l_diversity(2)),
     "PA002", "distinct l-diversity needs at least one SA channel"),
    (lambda: mc.choose_cut([mc.freq_set([0, 1], [1, 1]), mc.freq_set([0], [3])],
                           ms.schema(["numeric"] * 2, [4, 4]), mp.k_anonymity(1)),
     "PA002", "QI 1: frequency set counts sum to 3, QI 0's to 2"),
    (lambda: mc.choose_cut([mc.freq_set([0, 1], [1, 1])], ms.schema(["numeric"], [4], sa_sizes=[2]),
                           mp.k_anonymity(1)),
     "PA002", "QI 0: the frequency set has 0 SA channels, the schema 1"),
    (lambda: mc.freq_set([0, 1], [1, 0]), "PA002", "frequency set counts must be >= 1"),
    (lambda: ms.schema(["numeric"], values=[[0, 2, 1]]),
     "PA002", "QI 0: values must be finite and strictly increasing"),
    (lambda: ms.schema(["numeric"]), "PA002", "QI 0: the number of codes is not known"),
    (lambda: ms.taxonomy({"*": ["a", "b"], "a": [0], "b": [0]}),
     "PA002", "taxonomy node 0 has more than one parent"),
    (lambda: ms.taxonomy({"*": ["a"], "x": [1]}), "PA002", "the taxonomy has 2 roots"),
    (lambda: ms.taxonomy({"*": ["a"], "a": ["*"]}, root="*"),
     "PA002", "taxonomy root '*' is not a node without a parent"),
    (lambda: ms.taxonomy({"*": ["a", "b"]}), "PA002", "taxonomy leaf node 'a' has no leaf code"),
    (lambda: ms.taxonomy({"*": ["a", "b"], "a": [0], "b": [1]}, leaves={"*": [0, 1, 2]}),
     "PA002", "taxonomy node '*': leaves lists [0, 1, 2] but its children cover [0, 1]"),
    (lambda: ms.taxonomy(), "PA002", "give a taxonomy as children= or as parent="),
]


@pytest.mark.parametrize("call, sqlstate, prefix", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_input_raises_a_clear_error(call, sqlstate, prefix):
    with pytest.raises(EngineError) as e:
        call()
    assert e.value.sqlstate == sqlstate
    assert str(e.value).startswith(prefix), str(e.value)
