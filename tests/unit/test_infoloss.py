"""Unit tests for pganon_engine.metrics.infoloss (spec 001-metrics-strategies.md §1.4-1.7, §7.1 items
1, 2, 4, 6 and 8).

Expected values are the paper's Example 1 and Figure 2, and the spec's derived §1.6 table
(weights and alterations of the seven metrics on the Table 1 hierarchies), never engine output."""

from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pganon_engine.metrics import infoloss as il
from pganon_engine.core.errors import EngineError
from pganon_engine.hierarchy.tree import Hierarchy

GENDER = Hierarchy.from_paths("gender", [["M", "*"], ["F", "*"]])
RACE = Hierarchy.from_paths("race", [["Cat", "Felid", "Mammal"], ["Lion", "Felid", "Mammal"],
                                     ["Dog", "Mammal"]])
HS = [GENDER, RACE]
FIG2 = [{"M": 5, "F": 5}, {"Cat": 1, "Lion": 1, "Dog": 4, "Felid": 3}]

# Table 1 (spec §1.1): (Gender, Race) of records 1..8, T_ano (Table 1b), GAA's k = 4 result
# (spec §2.4) and T* (everything at the root).
T = [("F", "Lion"), ("F", "Dog"), ("F", "Lion"), ("F", "Dog"),
     ("M", "Cat"), ("M", "Cat"), ("M", "Lion"), ("M", "Lion")]
T_ANO = [("*", "Lion") if r == "Lion" else ("*", "Mammal") for _, r in T]
T_GAA = [("F", "Mammal") if g == "F" else ("M", "Felid") for g, _ in T]
T_STAR = [("*", "Mammal")] * 8


def fig2():
    return il.metric("custom", HS, weights=FIG2)


# --------------------------------------------------------------------------------------------
# §7.1 items 1, 2: Example 1 and Figure 2
# --------------------------------------------------------------------------------------------

EXAMPLE1 = {  # rows/cols Cat, Lion, Dog, Felid, Mammal (spec §1.4)
    "Cat": [0, 1, 4, 1, 4],
    "Lion": [1, 0, 4, 1, 4],
    "Dog": [4, 4, 0, 4, 4],
    "Felid": [0, 0, 3, 0, 3],
    "Mammal": [0, 0, 0, 0, 0],
}


def test_example1_costs_matrix():
    m = fig2().matrix(1)
    order = ["Cat", "Lion", "Dog", "Felid", "Mammal"]
    got = {a: [m[RACE.node(a)][RACE.node(b)] for b in order] for a in order}
    assert got == EXAMPLE1


def test_example1_matrix_is_not_symmetric():
    met = fig2()
    m = met.matrix(1)
    v = RACE.node
    assert m[v("Felid")][v("Dog")] == 3 and m[v("Dog")][v("Felid")] == 4
    assert m[v("Felid")][v("Cat")] == 0 and m[v("Cat")][v("Felid")] == 1


def test_figure2_path_costs():
    met = fig2()
    assert met.cost(1, "Dog", "Mammal") == 4
    assert met.cost(0, "M", "*") == 5 and met.cost(0, "F", "*") == 5
    assert met.cost(1, "Cat", "Mammal") == 4
    assert met.cost(1, "Cat", "Cat") == 0
    assert met.cost(1, "Dog", "Felid") == 0  # not a generalization (Def. 4)


# --------------------------------------------------------------------------------------------
# §7.1 item 4: table costs and alteration under the Figure 2 metric
# --------------------------------------------------------------------------------------------


def test_table_costs_and_alteration_figure2():
    met = fig2()
    assert il.table_cost(met, T, T_ANO) == 56
    assert il.table_cost(met, T, T_STAR) == 72
    assert il.alteration(met, T, T_ANO) == F(5600, 72)
    assert round(float(il.alteration(met, T, T_ANO)), 2) == 77.78
    assert il.alteration(met, T, T) == 0
    assert il.alteration(met, T, T_STAR) == 100
    assert il.alteration(met, T, T_GAA) == F(2000, 72)  # 27.78 % (§2.4)


def test_counts_weight_distinct_tuples():
    met = fig2()
    distinct = [("F", "Lion"), ("F", "Dog"), ("M", "Cat"), ("M", "Lion")]
    ano = [("*", "Lion"), ("*", "Mammal"), ("*", "Mammal"), ("*", "Lion")]
    assert il.table_cost(met, distinct, ano, counts=[2, 2, 2, 2]) == 56
    assert il.alteration(met, distinct, ano, counts=[2, 2, 2, 2]) == F(5600, 72)


def test_generalized_value_must_be_an_ancestor():
    with pytest.raises(EngineError) as e:
        il.table_cost(fig2(), [("F", "Dog")], [("F", "Felid")])
    assert "'Felid' does not generalize 'Dog'" in str(e.value)


# --------------------------------------------------------------------------------------------
# §7.1 item 6: the seven metrics on the Table 1 hierarchies (spec §1.6 table)
# --------------------------------------------------------------------------------------------

# metric, mode: (M->*, Cat->Felid, Felid->Mammal, Dog->Mammal), mu_T(T*), alt(T_ano), alt(GAA)
SEVEN = [
    ("distortion", "literal", (F(4, 5), F(1, 15), F(2, 15), F(2, 15)), F(118, 15), 89.83, 11.86),
    ("distortion", "padded", (F(4, 5), F(1, 15), F(2, 15), F(3, 15)), F(8), 90.00, 13.33),
    ("ncp", "literal", (F(1, 2), F(1, 3), F(1, 3), F(2, 3)), F(28, 3), 71.43, 42.86),
    ("total", "literal", (F(1), F(1, 2), F(1, 2), F(1)), F(16), 75.00, 37.50),
    ("llm", "literal", (F(3, 2), F(1), F(1), F(2)), F(28), 71.43, 42.86),
    ("nllm", "literal", (F(3, 4), F(1, 3), F(1, 3), F(2, 3)), F(34, 3), 76.47, 35.29),
    ("wllm", "literal", (F(4, 5), F(1, 5), F(1, 5), F(2, 5)), F(48, 5), 83.33, 25.00),
    ("wnllm", "literal", (F(2, 5), F(1, 15), F(1, 15), F(2, 15)), F(64, 15), 87.50, 18.75),
]


@pytest.mark.parametrize("name,mode,weights,top,alt_ano,alt_gaa", SEVEN,
                         ids=[f"{s[0]}-{s[1]}" for s in SEVEN])
def test_seven_metrics_on_table1(name, mode, weights, top, alt_ano, alt_gaa):
    met = il.metric(name, HS, distortion_mode=mode)
    w_g, w_r = met.weights
    got = (w_g[GENDER.node("M")], w_r[RACE.node("Cat")], w_r[RACE.node("Felid")], w_r[RACE.node("Dog")])
    assert got == weights
    assert w_g[GENDER.node("F")] == w_g[GENDER.node("M")]
    assert w_r[RACE.node("Lion")] == w_r[RACE.node("Cat")]
    assert il.table_cost(met, T, T_STAR) == top
    assert round(float(il.alteration(met, T, T_ANO)), 2) == alt_ano
    assert round(float(il.alteration(met, T, T_GAA)), 2) == alt_gaa


def test_weightings_w1_w2_of_table1():
    assert il.w1([2, 3]) == [F(4, 5), F(1, 5)]
    assert il.w2([2, 3]) == [F(3, 2), F(1)]


def test_w1_single_qi_is_one_and_flat_qi_set_refused():
    assert il.w1([4]) == [1]
    assert il.w1([3, 3]) == [F(1, 2), F(1, 2)]  # equal heights: 1 - 1/m
    with pytest.raises(EngineError) as e:
        il.w1([1, 1])
    assert "height 1" in str(e.value)
    flat = Hierarchy.from_paths("f", [["*"]])
    with pytest.raises(EngineError):
        il.metric("wnllm", [flat, Hierarchy.from_paths("g", [["a"]])])
    assert il.metric("ncp", [flat]).D == ((F(0),),)


def _chain(h):
    """A balanced binary tree of height h (2 leaves per node)."""
    rows = []
    for i in range(2 ** (h - 1)):
        bits = format(i, f"0{h - 1}b")
        rows.append([bits[:h - 1 - d] or "*" for d in range(h)])
    rows = [[r[0]] + [("n" + x if x != "*" else "*") for x in r[1:]] for r in rows]
    return Hierarchy.from_paths(f"h{h}", rows, balanced=True)


@pytest.mark.parametrize("h,fractions", [
    (3, [F(1, 3), F(2, 3)]),
    (4, [F(2, 11), F(3, 11), F(6, 11)]),
    (5, [F(12, 100), F(16, 100), F(24, 100), F(48, 100)]),
])
def test_distortion_per_level_fractions(h, fractions):
    """§1.6 closed forms: the edge into level L weighs 1/(h - L) / Harm(h - 1) (w1 = 1 for m = 1)."""
    tree = _chain(h)
    met = il.metric("distortion", [tree])
    leaf = int(tree.leaves[0])
    path = tree.ancestors(leaf)
    assert [met.weights[0][v] for v in path[:-1]] == fractions
    assert met.D[0][leaf] == 1  # leaf -> root = w1


def test_closed_forms_total_and_ncp_leaf_to_root():
    tree = _chain(4)
    leaf = int(tree.leaves[0])
    assert il.metric("total", [tree]).D[0][leaf] == 1
    assert il.metric("ncp", [tree]).D[0][leaf] == F(7, 8)  # (N - 1) / N


# --------------------------------------------------------------------------------------------
# Merge cost (Def. 6) and the size-weighted variant (A4)
# --------------------------------------------------------------------------------------------


def test_merge_cost_figure2_trace_values():
    met = fig2()
    # spec §2.4 step 1 and 2
    assert met.merge_cost(("F", "Lion"), ("F", "Dog")) == 8
    assert met.merge_cost(("F", "Lion"), ("M", "Cat")) == 12
    assert met.merge_cost(("F", "Lion"), ("M", "Lion")) == 10
    assert met.merge_cost(("M", "Cat"), ("F", "Mammal")) == 14
    assert met.merge_cost(("M", "Cat"), ("M", "Lion")) == 2


def test_ncp_snowball_costs():
    met = il.metric("ncp", HS)
    assert met.merge_cost(("F", "Lion"), ("M", "Lion")) == 1
    assert met.merge_cost(("F", "Dog"), ("*", "Lion")) == F(11, 6)
    assert met.merge_cost(("F", "Dog"), ("M", "Cat")) == F(7, 3)


def test_size_weighted_merge_cost():
    met = fig2()
    # |Cs| * cost(f_s -> a) + |C| * cost(f -> a); a = (*, Mammal)
    assert met.merge_cost(("M", "Cat"), ("F", "Mammal"), sizes=(2, 4)) == 2 * (5 + 4) + 4 * 5
    assert met.merge_cost(("M", "Cat"), ("F", "Mammal"), sizes=(1, 1)) == 14


def test_custom_weights_validation():
    with pytest.raises(EngineError) as e:
        il.metric("custom", HS, weights=[{"M": 5}, FIG2[1]])
    assert "'F'" in str(e.value)
    with pytest.raises(EngineError) as e:
        il.metric("custom", HS, weights=[{"M": -1, "F": 1}, FIG2[1]])
    assert "negative" in str(e.value)
    with pytest.raises(EngineError):
        il.metric("custom", HS, weights=[{"*": 1, "M": 1, "F": 1}, FIG2[1]])
    with pytest.raises(EngineError):
        il.metric("custom", HS)
    with pytest.raises(EngineError):
        il.metric("ncp", HS, weights=FIG2)
    with pytest.raises(EngineError) as e:
        il.metric("entropy", HS)
    assert e.value.sqlstate == "PA002" and "unknown metric" in str(e.value)
    met = il.metric("custom", HS, weights=[{"M": 0.1, "F": "1/3"}, FIG2[1]])
    assert met.weights[0][GENDER.node("M")] == F(1, 10)
    assert met.weights[0][GENDER.node("F")] == F(1, 3)


def test_scaled_integers_are_exact():
    met = il.metric("wnllm", HS)
    assert met.scale == 15
    for d, di, arr in zip(met.D, met.Dint, met.scaled(4)):
        assert [x * met.scale for x in d] == list(di) == arr.tolist()


# --------------------------------------------------------------------------------------------
# Def. 9: p_gen, p_root, mean alteration
# --------------------------------------------------------------------------------------------


def test_p_gen_p_root():
    assert il.p_gen(HS, T, T_ANO) == 75 and il.p_root(HS, T, T_ANO) == 75
    assert il.p_gen(HS, T, T_GAA) == 50 and il.p_root(HS, T, T_GAA) == 25
    assert il.p_gen(HS, T, T) == 0 and il.p_root(HS, T, T_STAR) == 100


def test_mean_alteration():
    assert il.mean_alteration(HS, T, T_STAR) == 100
    assert il.mean_alteration(HS, T, T) == 0
    want = sum(F(x) for x in (F(5300, 59), F(500, 7), F(75), F(500, 7), F(1300, 17), F(250, 3), F(175, 2))) / 7
    assert il.mean_alteration(HS, T, T_ANO) == want


# --------------------------------------------------------------------------------------------
# NAUC (§1.7, A11)
# --------------------------------------------------------------------------------------------


def test_nauc_trapezoid_on_linear_k():
    # (3, 0), (5, 10), (10, 20): area 10 + 75 = 85 over 7
    assert il.nauc([3, 5, 10], [0, 10, 20]) == F(85, 7)
    assert il.nauc([10, 3, 5], [20, 0, 10]) == F(85, 7)  # order of points does not matter
    # sub-range [4, 5]: from 5 to 10 linearly, mean 7.5
    assert il.nauc([3, 5, 10], [0, 10, 20], lo=4, hi=5) == F(15, 2)
    assert il.nauc([3, 5], [2.0, 2.0]) == pytest.approx(2.0)
    assert il.nauc_tclo([3, 5], [F(1, 4), F(1, 4)]) == 25
    assert il.nauc_ldiv([3, 5], [2, 2], ldiv_max=4) == 50


def test_nauc_refuses_bad_ranges():
    for call in (lambda: il.nauc([3], [1]),
                 lambda: il.nauc([3, 3], [1, 2]),
                 lambda: il.nauc([3, 5], [1, 2], lo=2),
                 lambda: il.nauc([3, 5], [1, 2], lo=4, hi=4)):
        with pytest.raises(EngineError):
            call()


# --------------------------------------------------------------------------------------------
# §7.1 item 8 invariants on random hierarchies and tables
# --------------------------------------------------------------------------------------------


@st.composite
def tree(draw, name):
    n = draw(st.integers(2, 9))
    parent = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    return Hierarchy.from_edges(name, [(f"{name}{i}", None if p is None else f"{name}{p}")
                                       for i, p in enumerate(parent)])


@st.composite
def setting(draw):
    m = draw(st.integers(1, 3))
    hs = [draw(tree(f"q{j}")) for j in range(m)]
    if all(h.height == 1 for h in hs):
        hs[0] = Hierarchy.from_paths("q0", [["a", "*"], ["b", "*"]])
    name = draw(st.sampled_from(il.METRICS + ("custom",)))
    weights = None
    if name == "custom":
        weights = [{h.labels[v]: draw(st.integers(0, 5)) for v in range(1, len(h))} for h in hs]
    met = il.metric(name, hs, weights=weights,
                    distortion_mode=draw(st.sampled_from(il.DISTORTION_MODES)))
    rows = draw(st.lists(st.tuples(*[st.sampled_from(h.leaves.tolist()) for h in hs]),
                         min_size=1, max_size=8))
    gen = [tuple(draw(st.sampled_from(h.ancestors(v))) for h, v in zip(hs, r)) for r in rows]
    return hs, met, rows, gen


@given(setting())
@settings(max_examples=200, deadline=None)
def test_invariants(case):
    hs, met, rows, gen = case
    alt = il.alteration(met, rows, gen)
    assert 0 <= alt <= 100
    assert il.alteration(met, rows, rows) == 0
    # Costs are monotone along every leaf -> root path, and cost(v, a) = D(v) - D(a).
    for j, h in enumerate(hs):
        for leaf in h.leaves.tolist():
            path = h.ancestors(leaf)
            costs = [met.cost(j, leaf, a) for a in path]
            assert costs == sorted(costs)
            assert costs[-1] == met.D[j][leaf]
    # mu-bar is symmetric and is the sum of weighted tree distances (path sums via the LCA).
    for f in gen:
        for g in rows:
            mc = met.merge_cost(f, g)
            assert mc == met.merge_cost(g, f)
            dist = 0
            for j, h in enumerate(hs):
                a, b = h.node(f[j]), h.node(g[j])
                c = h.lca(a, b)
                dist += met.cost(j, a, c) + met.cost(j, b, c)
                assert met.matrix(j)[a][b] == met.cost(j, a, c)
            assert mc == dist
    assert 0 <= il.p_gen(hs, rows, gen) <= 100
    assert il.p_root(hs, rows, gen) <= il.p_gen(hs, rows, gen)  # trees here have >= 2 nodes
