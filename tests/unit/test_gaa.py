"""Unit tests for pganon_engine.methods.generalization.gaa and its modules gaa_run, gaa_strategies,
gaa_measures (spec 001-metrics-strategies.md §2-3, §7.1 items 3, 5, 7, 8).

Fixtures: the §2.4 trace on Table 1 (Figure 2 weights, first-id ties), the seven-metric
outcomes including the NCP/LLM snowball, the §3.1/3.2 privacy measures on T_ano, and hand-worked
S6 traces (worked out below in comments).  A literal re-implementation of the §2.2 pseudo-code
(`reference`, one dict per class, the table after each candidate merge rebuilt from scratch)
cross-checks the vectorized engine on random inputs for every strategy and option."""

import itertools
import math
import random
from collections import Counter
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pganon_engine.core.errors import EngineError
from pganon_engine.hierarchy.tree import Hierarchy
from pganon_engine.methods.generalization import gaa, gaa_measures, gaa_run, gaa_strategies
from pganon_engine.metrics import infoloss as il

GENDER = Hierarchy.from_paths("gender", [["M", "*"], ["F", "*"]])
RACE = Hierarchy.from_paths("race", [["Cat", "Felid", "Mammal"], ["Lion", "Felid", "Mammal"],
                                     ["Dog", "Mammal"]])
HS = [GENDER, RACE]
FIG2 = [{"M": 5, "F": 5}, {"Cat": 1, "Lion": 1, "Dog": 4, "Felid": 3}]

# Table 1 as distinct tuples in first-appearance order: A (1,3), B (2,4), C (5,6), D (7,8).
TUPLES = [("F", "Lion"), ("F", "Dog"), ("M", "Cat"), ("M", "Lion")]
COUNTS = [2, 2, 2, 2]
HISTS = [{"Cold": 2}, {"Bronchitis": 1, "Conjunctivitis": 1}, {"Broken paw": 2},
         {"Angina": 1, "Bronchitis": 1}]
GAA_RESULT = [("F", "Mammal"), ("M", "Felid")]


def fig2():
    return il.metric("custom", HS, weights=FIG2)


def trace_rows(res):
    return [(m.cs, m.partner, m.cost, m.new_tuple, m.into, m.fused) for m in res.trace]


# --------------------------------------------------------------------------------------------
# §2.4 / §7.1 items 3, 5: GAA on Table 1
# --------------------------------------------------------------------------------------------


def test_trace_table1_figure2_weights():
    res = gaa.gaa(TUPLES, COUNTS, HS, 4, metric=fig2(), trace=True)
    # Step 1: C_s = A; costs B 8, C 12, D 10 -> (F, Mammal), new id 4.
    # Step 2: C_s = C (tie with D, first wins); costs (F, Mammal) 14, D 2 -> (M, Felid), id 5.
    assert trace_rows(res) == [(0, 1, 8, ("F", "Mammal"), 4, False),
                               (2, 3, 2, ("M", "Felid"), 5, False)]
    assert res.steps == 2
    assert res.classes == GAA_RESULT and res.sizes == [4, 4]
    assert res.class_of == [1, 1, 2, 2]
    assert [res.tuple_of(i) for i in range(4)] == [("F", "Mammal"), ("F", "Mammal"), ("M", "Felid"), ("M", "Felid")]
    # mu_T = 20, alteration 20 / 72 = 27.78 %
    assert il.table_cost(fig2(), TUPLES, res.generalized, COUNTS) == 20
    assert il.alteration(fig2(), TUPLES, res.generalized, COUNTS) == F(2000, 72)
    assert res.options["tie_rule"] == "smallest creation id" and res.options["seed"] is None


SAME_AS_FIG2 = [("distortion", "literal"), ("distortion", "padded"), ("total", "literal"),
                ("nllm", "literal"), ("wllm", "literal"), ("wnllm", "literal")]


@pytest.mark.parametrize("name,mode", SAME_AS_FIG2)
def test_paper_metrics_give_the_figure2_result(name, mode):
    res = gaa.gaa(TUPLES, COUNTS, HS, 4, metric=name, distortion_mode=mode)
    assert res.classes == GAA_RESULT and res.class_of == [1, 1, 2, 2]


@pytest.mark.parametrize("name", ["ncp", "llm"])
def test_ncp_and_llm_snowball_to_the_root(name):
    res = gaa.gaa(TUPLES, COUNTS, HS, 4, metric=name, trace=True)
    assert res.classes == [("*", "Mammal")] and res.sizes == [8]
    rows = trace_rows(res)
    # (F,Lion)+(M,Lion) -> (*,Lion); then (F,Dog) joins (*,Lion) (11/6 < 7/3 under NCP); then
    # (M,Cat) joins the root class.
    assert [r[:2] for r in rows] == [(0, 3), (1, 4), (2, 5)]
    assert [r[3] for r in rows] == [("*", "Lion"), ("*", "Mammal"), ("*", "Mammal")]
    if name == "ncp":
        assert [r[2] for r in rows] == [1, F(11, 6), F(7, 6)]
    assert il.alteration(il.metric(name, HS), TUPLES, res.generalized, COUNTS) == 100


def test_seven_metric_alterations_of_the_result():
    """§1.6 'alt(GAA result)' column, via GAA itself."""
    want = {"distortion": 11.86, "total": 37.50, "nllm": 35.29, "wllm": 25.00, "wnllm": 18.75}
    for name, alt in want.items():
        res = gaa.gaa(TUPLES, COUNTS, HS, 4, metric=name)
        assert round(float(il.alteration(il.metric(name, HS), TUPLES, res.generalized, COUNTS)), 2) == alt


def test_labels_or_leaf_ids_give_the_same_result():
    ids = [(GENDER.node(g), RACE.node(r)) for g, r in TUPLES]
    a = gaa.gaa(TUPLES, COUNTS, HS, 4, metric="nllm")
    b = gaa.gaa(ids, COUNTS, HS, 4, metric="nllm")
    assert (a.class_of, a.classes, a.steps) == (b.class_of, b.classes, b.steps)


def test_k_one_and_k_all_rows():
    res = gaa.gaa(TUPLES, COUNTS, HS, 1)
    assert res.steps == 0 and res.classes == TUPLES
    res = gaa.gaa(TUPLES, COUNTS, HS, 2)
    assert res.steps == 0
    res = gaa.gaa(TUPLES, COUNTS, HS, 8, metric=fig2())
    assert res.classes == [("*", "Mammal")] and res.sizes == [8] and res.steps == 3


def test_fusion_with_an_existing_class():
    """A6: the merged tuple equals a live class's tuple, which absorbs it and keeps its id.
    Weights Cat 1, Lion 0, Tiger 1, Puma 0: step 1 C_s = Cat, Lion and Puma tie at 1, Lion
    (id 1) wins -> Felid (id 5).  Step 2 C_s = Tiger: Felid (id 5) and Puma (id 3) tie at 1,
    Puma wins, LCA = Felid = class 5's tuple, so class 5 absorbs both."""
    h = Hierarchy.from_paths("cat", [["Cat", "Felid", "Mammal"], ["Lion", "Felid", "Mammal"],
                                     ["Tiger", "Felid", "Mammal"], ["Puma", "Felid", "Mammal"],
                                     ["Dog", "Mammal"]])
    met = il.metric("custom", [h], weights=[{"Cat": 1, "Lion": 0, "Tiger": 1, "Puma": 0,
                                             "Dog": 4, "Felid": 3}])
    res = gaa.gaa([("Cat",), ("Lion",), ("Tiger",), ("Puma",), ("Dog",)], [1, 1, 1, 2, 2], [h], 2,
                  metric=met, trace=True)
    assert trace_rows(res) == [(0, 1, 1, ("Felid",), 5, False), (2, 3, 1, ("Felid",), 5, True)]
    assert res.classes == [("Felid",), ("Dog",)] and res.sizes == [5, 2]
    assert res.class_of == [1, 1, 1, 1, 2]


# --------------------------------------------------------------------------------------------
# Strategies on Table 1 (S6 worked by hand; NLLM, Disease as the sensitive attribute)
# --------------------------------------------------------------------------------------------
# Global distribution: Cold 2, Bronchitis 2, Conjunctivitis 1, Broken paw 2, Angina 1 (N = 8).
# L1 of a class: A+B {Cold 2, Bron 1, Conj 1} = .75, A+C {Cold 2, Broken 2} = 1, A+D = .75,
# C {Broken 2} = 1.5, B = 1.25, D = 1.25.
#
# privacy_scope 'class': step 1 C_s = A, B and D tie at .75, cost 4/3 < 3/2 -> B: (F, Mammal).
# Step 2 C_s = C: with (F, Mammal) L1 = 5/12, with D .75 -> (*, Mammal); D joins it: all root.
#
# privacy_scope 'table' (max over the classes after the merge): step 1 A+B -> max(.75, C 1.5,
# D 1.25) = 1.5; A+C -> max(1, 1.25, 1.25) = 1.25; A+D -> 1.5: A+C -> (*, Felid).  Step 2
# C_s = B: with (*, Felid) max(5/12, D 1.25) = 1.25, with D max(1, 1) = 1 -> B+D: (*, Mammal).


def test_s6_class_scope_by_hand():
    res = gaa.gaa(TUPLES, COUNTS, HS, 4, metric="nllm", strategy="S6", histograms=HISTS,
                  privacy_scope="class", trace=True)
    assert [r[:2] for r in trace_rows(res)] == [(0, 1), (2, 4), (3, 5)]
    assert res.classes == [("*", "Mammal")]


def test_s6_table_scope_by_hand():
    res = gaa.gaa(TUPLES, COUNTS, HS, 4, metric="nllm", strategy="S6", histograms=HISTS,
                  trace=True)
    assert [r[:2] for r in trace_rows(res)] == [(0, 2), (1, 3)]
    assert res.classes == [("*", "Felid"), ("*", "Mammal")] and res.class_of == [1, 2, 1, 2]


CATS = Hierarchy.from_paths("cat", [["Cat", "Felid", "Mammal"], ["Lion", "Felid", "Mammal"],
                                    ["Tiger", "Felid", "Mammal"], ["Dog", "Mammal"]])


def test_entropy_ties_are_tolerant():
    """G6: merging {a} with {b} gives ln 2 exactly; with {a: 4, b: 5} ln 10 - ln 5, which is
    3e-16 above ln 2 in floating point.  Both are l_div = 2: a tie, so the smaller id wins."""
    res = gaa.gaa([("Cat",), ("Lion",), ("Dog",)], [1, 1, 9], [CATS], 2, strategy="l_div",
                  histograms=[{"a": 1}, {"b": 1}, {"a": 4, "b": 5}], privacy_scope="class",
                  trace=True)
    assert trace_rows(res)[0][:2] == (0, 1)
    assert res.classes == [("Felid",), ("Dog",)]


def test_s7_zero_products_fall_back_to_cost():
    """§3.3 P: merging Cat {a} with Dog {b} or with Lion {a, b, b} gives a class with the
    global distribution (t_clo 0, product 0); Lion is cheaper, so it wins over Dog's smaller id."""
    res = gaa.gaa([("Cat",), ("Dog",), ("Lion",), ("Tiger",)], [1, 1, 3, 3], [CATS], 2,
                  strategy="S7", histograms=[{"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 1}],
                  privacy_scope="class", trace=True)
    assert trace_rows(res)[0][:2] == (0, 2)


# --------------------------------------------------------------------------------------------
# §7.1 item 7: privacy measures (§3.1, §3.2)
# --------------------------------------------------------------------------------------------

T_ANO_CLASSES = [{"Cold": 2, "Angina": 1, "Bronchitis": 1},
                 {"Bronchitis": 1, "Conjunctivitis": 1, "Broken paw": 2}]
GLOBAL = {"Cold": 2, "Bronchitis": 2, "Conjunctivitis": 1, "Broken paw": 2, "Angina": 1}


def test_l_div_of_t_ano_and_t_star():
    for h in T_ANO_CLASSES:
        assert gaa_measures.l_div_class(h) == pytest.approx(2 * math.sqrt(2), rel=1e-12)
    assert gaa_measures.l_div_table(T_ANO_CLASSES) == pytest.approx(2.8284, abs=1e-4)
    assert gaa_measures.l_div_class(GLOBAL) == pytest.approx(4.7568, abs=1e-4)
    assert gaa_measures.l_div_class({"x": 5}) == 1


def test_t_clo_of_t_ano_and_t_star():
    for h in T_ANO_CLASSES:
        assert gaa_measures.t_clo_class(h, GLOBAL) == F(3, 4)
    assert gaa_measures.t_clo_table(T_ANO_CLASSES) == F(3, 4)
    assert gaa_measures.t_clo_table(T_ANO_CLASSES, tclo_scale="tv") == F(3, 8)
    assert gaa_measures.t_clo_table([GLOBAL]) == 0
    assert gaa_measures.t_clo_class({"Cold": 1}, GLOBAL) == 2 * (1 - F(2, 8))  # pure class: 2 (1 - p)


def test_l_div_adult_marital_status():
    """§3.1 derived check: the 30,162-row Adult marital-status counts give exp(H) = 3.5302."""
    counts = [14065, 9726, 4214, 939, 827, 370, 21]
    assert sum(counts) == 30162
    assert round(gaa_measures.l_div_class(counts), 4) == 3.5302


def test_measures_refuse_bad_input():
    with pytest.raises(EngineError):
        gaa_measures.l_div_class({})
    with pytest.raises(EngineError):
        gaa_measures.t_clo_class({"Flu": 1}, GLOBAL)
    with pytest.raises(EngineError):
        gaa_measures.t_clo_class(GLOBAL, GLOBAL, tclo_scale="emd")


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

BAD = [
    ("k above rows", lambda: gaa.gaa(TUPLES, COUNTS, HS, 9), "PA002", "larger than the number of rows"),
    ("k zero", lambda: gaa.gaa(TUPLES, COUNTS, HS, 0), "PA002", "k must be"),
    ("duplicate tuple", lambda: gaa.gaa(TUPLES + [("F", "Dog")], COUNTS + [1], HS, 2), "PA002",
     "tuples 2 and 5 are the same"),
    ("value not a leaf", lambda: gaa.gaa([("F", "Felid")], [3], HS, 2), "PA004", "'Felid'"),
    ("unknown value", lambda: gaa.gaa([("F", "Tiger")], [3], HS, 2), "PA004", "'Tiger'"),
    ("wrong arity", lambda: gaa.gaa([("F",)], [3], HS, 2), "PA002", "1 values for 2 QIs"),
    ("count zero", lambda: gaa.gaa(TUPLES, [2, 2, 0, 2], HS, 2), "PA002", "row count"),
    ("counts length", lambda: gaa.gaa(TUPLES, [2, 2], HS, 2), "PA002", "2 counts for 4 tuples"),
    ("unknown strategy", lambda: gaa.gaa(TUPLES, COUNTS, HS, 2, strategy="S8"), "PA002", "unknown strategy"),
    ("histograms missing", lambda: gaa.gaa(TUPLES, COUNTS, HS, 2, strategy="S2"), "PA002", "histogram"),
    ("histogram sum", lambda: gaa.gaa(TUPLES, COUNTS, HS, 2, strategy="S3",
                                      histograms=[{"x": 1}] + HISTS[1:]), "PA002", "holds 1 rows"),
    ("cost mode", lambda: gaa.gaa(TUPLES, COUNTS, HS, 2, cost_mode="sum"), "PA002", "cost_mode"),
    ("privacy scope", lambda: gaa.gaa(TUPLES, COUNTS, HS, 2, privacy_scope="row"), "PA002", "privacy_scope"),
    ("metric on other hierarchies",
     lambda: gaa.gaa(TUPLES, COUNTS, [GENDER, Hierarchy.from_paths("race", [["Cat", "Felid", "Mammal"],
                                                                           ["Lion", "Felid", "Mammal"],
                                                                           ["Dog", "Mammal"]])], 2,
                     metric=fig2()), "PA002", "other hierarchies"),
    ("seed type", lambda: gaa.gaa(TUPLES, COUNTS, HS, 2, seed="x"), "PA002", "seed"),
    ("no tuples", lambda: gaa.gaa([], [], HS, 1), "PA002", "at least one tuple"),
]


@pytest.mark.parametrize("case,call,sqlstate,fragment", BAD, ids=[b[0] for b in BAD])
def test_invalid_input_is_refused(case, call, sqlstate, fragment):
    with pytest.raises(EngineError) as e:
        call()
    assert e.value.sqlstate == sqlstate
    assert fragment in str(e.value)


def test_strategy_names():
    assert [gaa.strategy_name(x) for x in (1, "s2", "S7", "ldiv", "t-clo", "l_div")] == \
        ["S1", "S2", "S7", "l_div", "t_clo", "l_div"]


def test_tick_is_called_on_long_runs():
    h = Hierarchy.from_paths("n", [[str(i), f"g{i // 10}", "*"] for i in range(300)])
    calls = []
    res = gaa.gaa([(str(i),) for i in range(300)], [1] * 300, [h], 3, metric="ncp",
                  tick=lambda: calls.append(1))
    assert res.steps >= 64 and len(calls) == res.steps // 64
    assert min(res.sizes) >= 3


def test_seed_changes_ties_reproducibly():
    """All weights 0: every merge ties, so seeded runs differ from one another but each seed
    repeats itself exactly."""
    met = il.metric("custom", HS, weights=[{"M": 0, "F": 0}, {"Cat": 0, "Lion": 0, "Dog": 0, "Felid": 0}])
    outs = set()
    for seed in range(12):
        a = gaa.gaa(TUPLES, COUNTS, HS, 4, metric=met, seed=seed, trace=True)
        b = gaa.gaa(TUPLES, COUNTS, HS, 4, metric=met, seed=seed, trace=True)
        assert trace_rows(a) == trace_rows(b) and a.class_of == b.class_of
        assert a.options["tie_rule"] == "seeded random" and a.options["seed"] == seed
        outs.add(tuple(a.class_of))
    assert len(outs) > 1


# --------------------------------------------------------------------------------------------
# The literal §2.2 pseudo-code, for cross-checking
# --------------------------------------------------------------------------------------------


def _entropy(h):
    n = sum(h.values())
    return -sum(c / n * math.log(c / n) for c in h.values() if c)


def _tclo(h, g, n_all):
    n = sum(h.values())
    return sum(abs(F(h.get(v, 0), n) - F(c, n_all)) for v, c in g.items())


def reference(tuples, counts, hs, k, met, strategy="S1", hists=None, scope="table",
              cost_mode="pairwise", seed=None):
    """Spec §2.2 with the G2 tie rule: returns (per input tuple its class tuple and class key,
    the merge trace)."""
    rng = None if seed is None else random.Random(seed)
    classes = {}
    for i, (t, c) in enumerate(zip(tuples, counts)):
        h = Counter(hists[i]) if hists else Counter()
        classes[i] = {"tup": tuple(x.node(v) for x, v in zip(hs, t)), "n": c, "h": h, "rows": [i]}
    nxt = len(tuples)
    g = Counter()
    for c in classes.values():
        g.update(c["h"])
    n_all = sum(counts)

    def pick(ids):
        ids = sorted(ids)
        if len(ids) == 1 or rng is None:
            return ids[0]
        return ids[rng.randrange(len(ids))]

    def lca(a, b):
        return tuple(x.lca(u, v) for x, u, v in zip(hs, a, b))

    def after(cs, c):
        new = lca(classes[cs]["tup"], classes[c]["tup"])
        fused = [x for x in classes if x not in (cs, c) and classes[x]["tup"] == new]
        merged = classes[cs]["h"] + classes[c]["h"]
        for x in fused:
            merged = merged + classes[x]["h"]
        if scope == "class":
            return _entropy(merged), _tclo(merged, g, n_all)
        table = [merged] + [classes[x]["h"] for x in classes if x not in (cs, c, *fused)]
        return min(_entropy(h) for h in table), max(_tclo(h, g, n_all) for h in table)

    trace = []
    while True:
        viol = [x for x in classes if classes[x]["n"] < k]
        if not viol:
            break
        small = min(classes[x]["n"] for x in viol)
        cs = pick([x for x in viol if classes[x]["n"] == small])
        cands = [x for x in classes if x != cs]
        s = classes[cs]
        cost = {x: met.merge_cost(s["tup"], classes[x]["tup"],
                                  sizes=(s["n"], classes[x]["n"]) if cost_mode == "size_weighted" else None)
                for x in cands}
        priv = {}

        def pv(x):
            if x not in priv:
                priv[x] = after(cs, x)
            return priv[x]

        def argmin(xs, f):
            best = min(f(x) for x in xs)
            return [x for x in xs if f(x) == best]

        def argmax_l(xs):
            best = max(pv(x)[0] for x in xs)
            return [x for x in xs if pv(x)[0] >= best - gaa_strategies.ENTROPY_TOL]

        def by_cost(x):
            return cost[x]

        def by_t(x):
            return pv(x)[1]

        if strategy == "S1":
            d = argmin(cands, by_cost)
        elif strategy == "S2":
            d = argmin(cands, by_cost)
            d = argmax_l(d) if len(d) > 1 else d
        elif strategy == "S3":
            d = argmin(argmax_l(cands), by_cost)
        elif strategy == "S4":
            v = {x: float(cost[x]) / math.exp(pv(x)[0]) for x in cands}
            best = min(v.values())
            d = [x for x in cands if v[x] <= best * (1 + gaa_strategies.RATIO_TOL)]
        elif strategy == "S5":
            d = argmin(cands, by_cost)
            d = argmin(d, by_t) if len(d) > 1 else d
        elif strategy == "S6":
            d = argmin(argmin(cands, by_t), by_cost)
        elif strategy == "S7":
            d = argmin(argmin(cands, lambda x: cost[x] * pv(x)[1]), by_cost)
        elif strategy == "l_div":
            d = argmax_l(cands)
        else:
            d = argmin(cands, by_t)
        c = pick(d)
        new = lca(s["tup"], classes[c]["tup"])
        fused = [x for x in classes if x not in (cs, c) and classes[x]["tup"] == new]
        part = classes.pop(c)
        classes.pop(cs)
        if fused:
            into = fused[0]
            e = classes[into]
        else:
            into = nxt
            nxt += 1
            e = classes[into] = {"tup": new, "n": 0, "h": Counter(), "rows": []}
        for x in (s, part):
            e["n"] += x["n"]
            e["h"] = e["h"] + x["h"]
            e["rows"] += x["rows"]
        trace.append((cs, c, cost[c], tuple(x.labels[v] for x, v in zip(hs, new)), into, bool(fused)))
    out = [None] * len(tuples)
    for key, c in classes.items():
        for i in c["rows"]:
            out[i] = (tuple(x.labels[v] for x, v in zip(hs, c["tup"])), key)
    return out, trace


def test_reference_reproduces_the_section_2_4_trace():
    out, trace = reference(TUPLES, COUNTS, HS, 4, fig2())
    assert trace == [(0, 1, 8, ("F", "Mammal"), 4, False), (2, 3, 2, ("M", "Felid"), 5, False)]


# --------------------------------------------------------------------------------------------
# Properties on random inputs (§7.1 item 8)
# --------------------------------------------------------------------------------------------


@st.composite
def tree(draw, name):
    n = draw(st.integers(2, 9))
    parent = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    return Hierarchy.from_edges(name, [(f"{name}{i}", None if p is None else f"{name}{p}")
                                       for i, p in enumerate(parent)])


@st.composite
def instances(draw, max_tuples=10):
    m = draw(st.integers(1, 3))
    hs = [draw(tree(f"q{j}")) for j in range(m)]
    leaves = [[h.labels[v] for v in h.leaves] for h in hs]
    space = list(itertools.product(*leaves))
    n = min(draw(st.integers(1, max_tuples)), len(space))
    picked = draw(st.lists(st.integers(0, len(space) - 1), min_size=n, max_size=n, unique=True))
    tuples = [space[i] for i in picked]
    counts = [draw(st.integers(1, 3)) for _ in tuples]
    hists = [dict(Counter(draw(st.lists(st.sampled_from("abcd"), min_size=c, max_size=c))))
             for c in counts]
    # mostly a k that leaves something to merge and room for several classes
    total = sum(counts)
    lo = min(min(counts) + 1, total)
    k = draw(st.integers(lo, max(lo, total // 2)) | st.integers(1, total))
    name = draw(st.sampled_from(il.METRICS + ("custom",)))
    weights = None
    if name == "custom":  # small integer weights, zeros included: many exact ties
        weights = [{h.labels[v]: draw(st.integers(0, 3)) for v in range(1, len(h))} for h in hs]
    met = il.metric(name, hs, weights=weights)
    return hs, tuples, counts, hists, k, met


OPTIONS = st.fixed_dictionaries({
    "strategy": st.sampled_from(gaa.STRATEGIES),
    "privacy_scope": st.sampled_from(gaa.PRIVACY_SCOPES),
    "cost_mode": st.sampled_from(gaa.COST_MODES),
    "seed": st.one_of(st.none(), st.integers(0, 2 ** 31)),
})


def _check_output(res, hs, tuples, counts, k):
    assert sum(res.sizes) == sum(counts)
    assert min(res.sizes) >= k  # Φ = k-anonymity
    assert len(res.classes) <= sum(counts) // k
    assert res.steps <= len(tuples) - 1
    for g, (tup, ids) in enumerate(zip(res.classes, res.class_nodes), start=1):
        members = [i for i, c in enumerate(res.class_of) if c == g]
        assert members, "every class holds an input tuple"
        assert sum(counts[i] for i in members) == res.sizes[g - 1]
        assert tup == tuple(h.labels[v] for h, v in zip(hs, ids))
        for j, h in enumerate(hs):
            # the class tuple is a common ancestor of its members: exactly their LCA
            want = h.node(tuples[members[0]][j])
            for i in members[1:]:
                want = h.lca(want, tuples[i][j])
            assert ids[j] == want
    first = [res.class_of.index(g) for g in range(1, len(res.classes) + 1)]
    assert first == sorted(first)  # classes numbered by first input tuple


@given(instances(), OPTIONS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_engine_matches_reference_and_invariants(inst, opts):
    hs, tuples, counts, hists, k, met = inst
    res = gaa.gaa(tuples, counts, hs, k, metric=met, histograms=hists, trace=True, **opts)
    _check_output(res, hs, tuples, counts, k)
    out, trace = reference(tuples, counts, hs, k, met, opts["strategy"], hists,
                           opts["privacy_scope"], opts["cost_mode"], opts["seed"])
    assert trace_rows(res) == trace
    assert [res.tuple_of(i) for i in range(len(tuples))] == [o[0] for o in out]
    # same partition
    assert all((res.class_of[i] == res.class_of[j]) == (out[i][1] == out[j][1])
               for i in range(len(tuples)) for j in range(len(tuples)))


@given(instances(max_tuples=40), OPTIONS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_same_seed_same_result(inst, opts):
    hs, tuples, counts, hists, k, met = inst
    a = gaa.gaa(tuples, counts, hs, k, metric=met, histograms=hists, trace=True, **opts)
    b = gaa.gaa(tuples, counts, hs, k, metric=met, histograms=hists, trace=True, **opts)
    _check_output(a, hs, tuples, counts, k)
    assert (a.class_of, a.classes, a.sizes, a.steps, trace_rows(a)) == \
        (b.class_of, b.classes, b.sizes, b.steps, trace_rows(b))


def _random_instance(rnd):
    """A larger random instance than hypothesis likes to draw (deterministic per rnd)."""
    hs = []
    for j in range(rnd.randint(1, 3)):
        n = rnd.randint(3, 12)
        parent = [None] + [rnd.randrange(i) for i in range(1, n)]
        hs.append(Hierarchy.from_edges(f"q{j}", [(f"q{j}n{i}", None if p is None else f"q{j}n{p}")
                                                 for i, p in enumerate(parent)]))
    space = list(itertools.product(*[[h.labels[v] for v in h.leaves] for h in hs]))
    tuples = rnd.sample(space, min(len(space), rnd.randint(8, 25)))
    counts = [rnd.randint(1, 4) for _ in tuples]
    hists = [dict(Counter(rnd.choice("abcde") for _ in range(c))) for c in counts]
    k = rnd.randint(2, max(2, sum(counts) // 3))
    name = rnd.choice(il.METRICS + ("custom",))
    weights = None
    if name == "custom":
        weights = [{h.labels[v]: rnd.randint(0, 3) for v in range(1, len(h))} for h in hs]
    return hs, tuples, counts, hists, k, il.metric(name, hs, weights=weights)


@pytest.mark.parametrize("strategy", gaa.STRATEGIES)
def test_engine_matches_reference_on_larger_instances(strategy):
    merges = 0
    for i in range(12):
        rnd = random.Random(1000 * i + gaa.STRATEGIES.index(strategy))
        hs, tuples, counts, hists, k, met = _random_instance(rnd)
        opts = {"strategy": strategy, "privacy_scope": gaa.PRIVACY_SCOPES[i % 2],
                "cost_mode": gaa.COST_MODES[(i // 2) % 2], "seed": None if i % 3 else i}
        res = gaa.gaa(tuples, counts, hs, k, metric=met, histograms=hists, trace=True, **opts)
        _check_output(res, hs, tuples, counts, k)
        _, trace = reference(tuples, counts, hs, k, met, strategy, hists, opts["privacy_scope"],
                             opts["cost_mode"], opts["seed"])
        assert trace_rows(res) == trace
        merges += res.steps
    assert merges >= 40  # the instances do exercise the merge loop


def test_fallbacks_beyond_int64_match_reference(monkeypatch):
    """With the int64 bounds forced down, costs, t_clo numerators and tuple keys take the
    Python-int paths and entropies the direct log path; choices must not change."""
    monkeypatch.setattr(il, "_INT64_SAFE", 1)
    monkeypatch.setattr(gaa_run, "_SAFE", 1)
    monkeypatch.setattr(gaa_run, "_XLOGX_MAX", 0)
    res = gaa.gaa(TUPLES, COUNTS, HS, 4, metric=fig2(), trace=True)
    assert trace_rows(res)[0] == (0, 1, 8, ("F", "Mammal"), 4, False)
    assert fig2().scaled()[0].dtype == object
    for i, strategy in enumerate(gaa.STRATEGIES * 2):
        hs, tuples, counts, hists, k, met = _random_instance(random.Random(77 + i))
        opts = {"strategy": strategy, "privacy_scope": gaa.PRIVACY_SCOPES[i % 2],
                "cost_mode": gaa.COST_MODES[(i // 2) % 2], "seed": None if i % 3 else i}
        res = gaa.gaa(tuples, counts, hs, k, metric=met, histograms=hists, trace=True, **opts)
        _check_output(res, hs, tuples, counts, k)
        _, trace = reference(tuples, counts, hs, k, met, strategy, hists, opts["privacy_scope"],
                             opts["cost_mode"], opts["seed"])
        assert trace_rows(res) == trace


def test_huge_denominators_stay_exact():
    """Weights whose common denominator exceeds int64 still compare exactly."""
    w = [{"M": "1/1000000000000000003", "F": "1/1000000000000000003"},
         {"Cat": "1/999999999999999989", "Lion": "1/999999999999999989", "Dog": 4, "Felid": 3}]
    met = il.metric("custom", HS, weights=w)
    assert met.scaled(4)[0].dtype == object
    res = gaa.gaa(TUPLES, COUNTS, HS, 4, metric=met, trace=True)
    _, trace = reference(TUPLES, COUNTS, HS, 4, met)
    assert trace_rows(res) == trace


# --------------------------------------------------------------------------------------------
# Internal shortcuts (G8): the extreme-class pool, key lookups vs ancestor filters, the
# table-scope bound; none may change a choice
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", gaa.STRATEGIES)
def test_small_pools_and_vector_paths_match_reference(strategy, monkeypatch):
    """A pool of 4 extreme classes (refilled all the time) and the numpy paths for every
    candidate set (ancestor filters for fusion, vector untouched-extreme search)."""
    monkeypatch.setattr(gaa_strategies.Pool, "SIZE", 4)
    monkeypatch.setattr(gaa_strategies, "_FEW", 0)
    assert runs_match_reference(strategy) >= 40


def runs_match_reference(strategy, before_run=None):
    """12 random runs of `strategy` equal the literal reference; `before_run(i)` may set things first."""
    merges = 0
    for i in range(12):
        rnd = random.Random(1000 * i + gaa.STRATEGIES.index(strategy))
        hs, tuples, counts, hists, k, met = _random_instance(rnd)
        opts = {"strategy": strategy, "privacy_scope": gaa.PRIVACY_SCOPES[i % 2],
                "cost_mode": gaa.COST_MODES[(i // 2) % 2], "seed": None if i % 3 else i}
        if before_run:
            before_run(i)
        res = gaa.gaa(tuples, counts, hs, k, metric=met, histograms=hists, trace=True, **opts)
        _check_output(res, hs, tuples, counts, k)
        _, trace = reference(tuples, counts, hs, k, met, strategy, hists, opts["privacy_scope"],
                             opts["cost_mode"], opts["seed"])
        assert trace_rows(res) == trace
        merges += res.steps
    return merges


def test_t_clo_when_every_computed_candidate_is_worse():
    """Random(139), t_clo, table scope: at one step C_s is the farthest class from the
    global distribution and every candidate that must be computed (the farthest other class
    and those C_s could push beyond it) leaves a worse table than the candidates that only
    keep that class's t_clo, so those win (the bound shortcut's early exit)."""
    hs, tuples, counts, hists, k, met = _random_instance(random.Random(139))
    for strategy in ("t_clo", "S6", "S7"):
        res = gaa.gaa(tuples, counts, hs, k, metric=met, histograms=hists, strategy=strategy,
                      trace=True)
        _, trace = reference(tuples, counts, hs, k, met, strategy, hists)
        assert trace_rows(res) == trace and res.steps >= 2


def _big_instance(rnd, n_tuples):
    """Three QIs of 12 to 20 nodes, n_tuples distinct tuples, 8 sensitive values."""
    hs = []
    for j in range(3):
        n = rnd.randint(12, 20)
        parent = [None] + [rnd.randrange(i // 3, i) for i in range(1, n)]
        hs.append(Hierarchy.from_edges(f"q{j}", [(f"q{j}n{i}", None if p is None else f"q{j}n{p}")
                                                 for i, p in enumerate(parent)]))
    space = list(itertools.product(*[[h.labels[v] for v in h.leaves] for h in hs]))
    tuples = rnd.sample(space, min(len(space), n_tuples))
    counts = [rnd.choice([1, 1, 1, 2, 3, 5]) for _ in tuples]
    hists = [dict(Counter(rnd.choice("aabbcdefgh") for _ in range(c))) for c in counts]
    return hs, tuples, counts, hists


@pytest.mark.parametrize("scope", gaa.PRIVACY_SCOPES)
@pytest.mark.parametrize("strategy", gaa.STRATEGIES[1:])
def test_pool_size_and_thresholds_do_not_change_results(strategy, scope, monkeypatch):
    """On 250 tuples (too many for the reference): pools of 4, 32 and everything, numpy or
    Python loops for any candidate set, and the table-scope bound off (every candidate
    computed) give the same run."""
    rnd = random.Random(77 + gaa.STRATEGIES.index(strategy))
    hs, tuples, counts, hists = _big_instance(rnd, 250)
    runs = []
    for size, few, bound in ((4, 0, True), (32, 16, True), (10 ** 9, 10 ** 9, True),
                             (32, 16, False)):
        monkeypatch.setattr(gaa_strategies.Pool, "SIZE", size)
        monkeypatch.setattr(gaa_strategies, "_FEW", few)
        if not bound:
            monkeypatch.setattr(gaa_strategies.Strategies, "_exact_set", lambda self, s, x1: np.arange(s))
        res = gaa.gaa(tuples, counts, hs, 6, metric="nllm", strategy=strategy,
                      histograms=hists, privacy_scope=scope, trace=True)
        _check_output(res, hs, tuples, counts, 6)
        runs.append((res.class_of, res.classes, res.steps, trace_rows(res)))
    assert runs[0][2] >= 50
    assert all(r == runs[0] for r in runs[1:])


@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]), min_size=2, max_size=30),
       st.booleans(), st.data())
@settings(max_examples=100, deadline=None)
def test_pool_keeps_the_extreme_classes(values, largest, data):
    """_Pool against a sort of the live values, through the moves a run makes: a class's
    value changes, a slot is emptied and the last one moves in, two slots swap."""
    vals = np.array(values)
    live = len(vals)
    pool = gaa_strategies.Pool(vals, largest)
    pool.SIZE = 4
    for _ in range(30):
        op = data.draw(st.sampled_from(["best", "change", "remove", "swap"]))
        x = data.draw(st.integers(0, live - 1))
        if op == "best":
            got = pool.best(x, live)
            want = sorted((vals[y] for y in range(live) if y != x), reverse=largest)[:3]
            assert [vals[y] for y in got] == want
            assert len(set(got)) == len(got) and all(0 <= y < live and y != x for y in got)
        elif op == "change":
            vals[x] = data.draw(st.sampled_from([0.0, 0.25, 1.0, 2.5, 4.0]))
            pool.changed(x)
        elif op == "remove" and live > 2:
            pool.removed(x, live - 1)
            vals[x] = vals[live - 1]
            live -= 1
        elif op == "swap":
            y = data.draw(st.integers(0, live - 1))
            pool.swapped(x, y)
            vals[x], vals[y] = vals[y], vals[x]

