"""Unit tests for pganon_engine.models.predicates and the models beside it (aggregates, diversity,
distances) (issue 4, point 5: privacy models, check).

Fixtures: spec 001 §3.1-3.2 (Table 1 / T_ano), Li et al. 2007's salary example, and small
tables whose values are derived by hand in the comments.  Properties: agreement with pyCANON
1.3.6 (the acceptance reference) on random small tables for one and several SAs, gen=True
('attribute' scope) and gen=False ('joint'), and agreement of the 'standard' readings with
direct formulas written here independently of the engine."""

import math
import random
from collections import Counter
from decimal import Decimal
from fractions import Fraction

import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pycanon import anonymity as pyc

import pycanon_ref
from pganon_engine.models import predicates as M
from pganon_engine.models.aggregates import from_groups, from_rows
from pganon_engine.models.distances import beta_likeness, delta_disclosure, t_closeness
from pganon_engine.models.diversity import entropy_l, recursive_cl
from pganon_engine.core.errors import EngineError

pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")

INF = math.inf
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rows_of(cols, tuples):
    return [dict(zip(cols, t)) for t in tuples]


close = pycanon_ref.close


# --------------------------------------------------------------------------------------------
# Spec 001, Table 1: T_ano (4-anonymous) with classes (*, Lion) = {1,3,7,8}, (*, Mammal) =
# {2,4,5,6}; QI Race (generalized), SA Disease.
# --------------------------------------------------------------------------------------------

T_ANO = rows_of(["race", "disease"], [
    ("Lion", "Cold"), ("Mammal", "Bronchitis"), ("Lion", "Cold"), ("Mammal", "Conjunctivitis"),
    ("Mammal", "Broken paw"), ("Mammal", "Broken paw"), ("Lion", "Angina"), ("Lion", "Bronchitis")])


@pytest.fixture
def t_ano():
    return from_rows(T_ANO, ["race"], ["disease"])


def test_spec001_entropy_l_of_t_ano_is_two_sqrt_two(t_ano):
    # §3.1 derived example: both classes have l_div = e^1.0397 = 2*sqrt(2).
    r = M.check("entropy_l_diversity", {}, t_ano)
    assert r.value == pytest.approx(2 * math.sqrt(2), abs=1e-12)
    assert r.value == pytest.approx(2.828, abs=5e-4)


def test_spec001_entropy_l_of_the_single_class_table_is_4_757():
    # §3.1: l_div(T*) = 4.757 (global counts 2,2,1,2,1 out of 8).
    star = from_rows(T_ANO, [], ["disease"])
    assert M.check("entropy_l_diversity", {}, star).value == pytest.approx(4.757, abs=5e-4)


def test_spec001_l1_t_closeness_of_t_ano_is_0_75(t_ano):
    # §3.2 derived example: L1 = 0.75 in both classes (TV 0.375); t_clo(T*) = 0.
    r = M.check("t_closeness", {"distance": "l1"}, t_ano)
    assert r.value == 0.75
    assert M.check("t_closeness", {"distance": "equal"}, t_ano).value == 0.375
    star = from_rows(T_ANO, [], ["disease"])
    assert M.check("t_closeness", {"distance": "l1"}, star).value == 0.0
    assert M.check("t_closeness", {"distance": "l1", "t": 0.75}, t_ano).holds is True
    assert M.check("t_closeness", {"distance": "l1", "t": 0.7499}, t_ano).holds is False


def test_t_ano_other_models_by_hand(t_ano):
    # Lion {Cold 2, Angina 1, Bronchitis 1}, Mammal {Broken paw 2, Bronchitis 1, Conj. 1}
    # global {Cold 2, Bronchitis 2, Broken paw 2, Angina 1, Conjunctivitis 1} / 8.
    assert M.check("k_anonymity", {"k": 4}, t_ano).value == 4
    assert M.check("k_anonymity", {"k": 4}, t_ano).holds is True
    assert M.check("k_anonymity", {"k": 5}, t_ano).holds is False
    assert M.check("alpha_k_anonymity", {}, t_ano).value == (0.5, 4)
    assert M.check("l_diversity", {}, t_ano).value == 3
    # beta: (1/2 - 1/4) / (1/4) = 1 (Cold, Broken paw) = (1/4 - 1/8) / (1/8) (Angina, Conj.)
    assert M.check("basic_beta_likeness", {}, t_ano).value == 1.0
    # enhanced: every gain 1 <= -ln p (-ln 1/4 = 1.386, -ln 1/8 = 2.079): feasible, beta 1
    assert M.check("enhanced_beta_likeness", {}, t_ano).value == 1.0
    assert M.check("enhanced_beta_likeness", {"reading": "pycanon"}, t_ano).value == 1.0
    # delta: each class misses two values -> infinite; pyCANON skips them -> ln 2
    assert M.check("delta_disclosure", {}, t_ano).value == INF
    assert M.check("delta_disclosure", {"reading": "pycanon"}, t_ano).value == pytest.approx(math.log(2))
    # recursive: counts (2,1,1), l = 3: 2 < c * 1 -> c = 3; pyCANON sorts ascending
    # (1,1,2): 1 < c * 2 -> c = 1.
    assert M.check("recursive_cl_diversity", {}, t_ano).value == (3, 3)
    assert M.check("recursive_cl_diversity", {"reading": "pycanon"}, t_ano).value == (1, 3)


# --------------------------------------------------------------------------------------------
# t-closeness distances
# --------------------------------------------------------------------------------------------

SALARY = {v: 1 for v in range(3, 12)}  # Li et al. 2007: salaries 3K..11K, one record each


def test_li_ordered_emd_salary_examples():
    # Li et al. 2007 §4: P1 = {3K,4K,5K}: 0.375; P2 = {6K,8K,11K}: 0.167.
    assert t_closeness([{3: 1, 4: 1, 5: 1}], SALARY, distance="ordered") == 0.375
    assert t_closeness([{6: 1, 8: 1, 11: 1}], SALARY, distance="ordered") == pytest.approx(1 / 6)


def test_li_table5_salary_is_one_sixth():
    # Classes {3,5,9}, {6,8,11}, {4,7,10}: cumulative differences (in 1/9) 2,1,3,2,1,0,2,1,0 ->
    # 12/9/8 = 1/6; -1,-2,-3,-1,-2,0,-1,-2,0 -> 1/6; -1,1,0,-1,1,0,-1,1,0 -> 1/12.
    agg = from_groups(["salary"], [(3, {"salary": {3: 1, 5: 1, 9: 1}}),
                                     (3, {"salary": {6: 1, 8: 1, 11: 1}}),
                                     (3, {"salary": {4: 1, 7: 1, 10: 1}})])
    r = M.check("t_closeness", {}, agg)        # 'auto' -> ordered for numbers
    assert r.value == float(Fraction(1, 6))
    assert M.check("t_closeness", {"t": 1 / 6}, agg).holds is True


DISEASE_TREE = {
    "flu": "respiratory infection", "pneumonia": "respiratory infection",
    "bronchitis": "respiratory infection", "pulmonary edema": "vascular lung",
    "pulmonary embolism": "vascular lung", "respiratory infection": "respiratory",
    "vascular lung": "respiratory", "gastric ulcer": "stomach", "gastritis": "stomach",
    "stomach cancer": "stomach", "colitis": "colon", "diarrhea": "colon", "colon cancer": "colon",
    "stomach": "digestive", "colon": "digestive", "respiratory": "diseases", "digestive": "diseases",
}
DISEASE_Q = {"gastric ulcer": 1, "gastritis": 2, "stomach cancer": 2, "flu": 1, "bronchitis": 2,
             "pneumonia": 1}


def test_hierarchical_emd_by_hand():
    # H = 3.  P = {gastric ulcer, gastritis, stomach cancer} against Q (in 1/9): extras +2,+1,+1
    # under 'stomach' and -1,-2,-1 under 'respiratory infection'; nothing cancels below the
    # root, where 4/9 moves at height 3: EMD = 3/3 * 4/9.
    t = t_closeness([{"gastric ulcer": 1, "gastritis": 1, "stomach cancer": 1}], DISEASE_Q,
                      distance="hierarchical", parents=DISEASE_TREE)
    assert t == float(Fraction(4, 9))
    # P = {gastritis, flu, bronchitis}: 'respiratory infection' cancels 1/9 at height 1, 'stomach'
    # 1/9 at height 1, the root 2/9 at height 3: (1 + 1 + 6) / 27.
    t = t_closeness([{"gastritis": 1, "flu": 1, "bronchitis": 1}], DISEASE_Q,
                      distance="hierarchical", parents=DISEASE_TREE)
    assert t == float(Fraction(8, 27))
    # a class equal to Q is at distance 0; a sibling swap costs 1/H per unit moved
    assert t_closeness([DISEASE_Q], DISEASE_Q, distance="hierarchical", parents=DISEASE_TREE) == 0.0
    t = t_closeness([{"gastritis": 1}], {"gastritis": 1, "gastric ulcer": 1},
                      distance="hierarchical", parents=DISEASE_TREE)
    assert t == float(Fraction(1, 2) / 3)


def test_ordered_distance_uses_the_given_order_for_text():
    order = ["low", "mid", "high"]
    g = {"low": 1, "mid": 1, "high": 1}
    # r = (+2/3, -1/3, -1/3) / ... class {low}: cumulative 2/3, 1/3 -> 1 / (m-1) = 1/2
    assert t_closeness([{"low": 1}], g, distance="ordered", order=order) == 0.5
    assert t_closeness([{"high": 1}], g, distance="ordered", order=order) == 0.5
    assert t_closeness([{"mid": 1}], g, distance="ordered", order=order) == pytest.approx(1 / 3)
    # listed values absent from the table are ignored (M5): same result
    assert t_closeness([{"low": 1}], g, distance="ordered",
                         order=["low", "unused", "mid", "high"]) == 0.5


def test_auto_distance_is_ordered_for_numbers_and_equal_for_text():
    g = {1: 1, 2: 1, 3: 1}
    assert t_closeness([{1: 1}], g) == t_closeness([{1: 1}], g, distance="ordered") == 0.5
    g = {"a": 1, "b": 1, "c": 1}
    assert t_closeness([{"a": 1}], g) == t_closeness([{"a": 1}], g, distance="equal")
    assert t_closeness([{"a": 1}], g) == pytest.approx(2 / 3)
    # PostgreSQL numeric arrives as Decimal: still a number
    g = {Decimal("1.5"): 1, Decimal("2.5"): 1, Decimal("3.5"): 1}
    assert t_closeness([{Decimal("1.5"): 1}], g) == 0.5


def test_single_value_attribute_has_t_zero():
    # pyCANON divides by m - 1 = 0 here (ZeroDivisionError); we define 0.
    assert t_closeness([{5: 3}, {5: 2}], distance="ordered") == 0.0


def test_check_per_sa_distance_order_and_hierarchy():
    rows = rows_of(["q", "salary", "disease", "level"], [
        (1, 3, "gastric ulcer", "low"), (1, 4, "gastritis", "mid"), (1, 5, "stomach cancer", "low"),
        (2, 6, "gastritis", "high"), (2, 11, "flu", "mid"), (2, 8, "bronchitis", "high"),
        (3, 7, "bronchitis", "low"), (3, 9, "pneumonia", "mid"), (3, 10, "stomach cancer", "high")])
    agg = from_rows(rows, ["q"], ["salary", "disease", "level"])
    r = M.check("t_closeness", {"distance": {"disease": "hierarchical", "level": "ordered"},
                                "hierarchy": {"disease": DISEASE_TREE},
                                "order": {"level": ["low", "mid", "high"]}}, agg)
    assert r.per_sa["salary"] == 0.375          # class {3,4,5}, Li's P1
    assert r.per_sa["disease"] == float(Fraction(4, 9))
    # level: global low 3, mid 3, high 3; class {low 2, mid 1}: cum 1/3, 1/3 -> 2/3 / 2
    assert r.per_sa["level"] == pytest.approx(1 / 3)
    assert r.value == max(r.per_sa.values())


def tree_emd(hist, glob, parents):
    """EMD on the tree metric: sum over edges (h(parent) - h(child)) / (2H) * |mass moved|."""
    children = {}
    for c, p in parents.items():
        children.setdefault(p, []).append(c)
    nodes = set(parents) | set(parents.values())
    root = next(x for x in nodes if x not in parents)

    def height(x):
        return 1 + max((height(c) for c in children.get(x, [])), default=-1)

    H = height(root)
    n, N = sum(hist.values()), sum(glob.values())

    def below(x):
        if x not in children:
            return Fraction(hist.get(x, 0), n) - Fraction(glob.get(x, 0), N)
        return sum((below(c) for c in children[x]), Fraction(0))

    return sum(Fraction(height(p) - height(c), 2 * H) * abs(below(c)) for c, p in parents.items())


@st.composite
def trees(draw):
    """A random (possibly unbalanced) hierarchy, its leaves, a global histogram on some leaves
    and a class histogram inside it."""
    size = draw(st.integers(2, 12))
    parents = {f"n{i}": f"n{draw(st.integers(0, i - 1))}" for i in range(1, size)}
    inner = set(parents.values())
    leaves = sorted(x for x in parents if x not in inner)
    used = draw(st.lists(st.sampled_from(leaves), min_size=1, unique=True))
    glob = {v: draw(st.integers(1, 4)) for v in used}
    cls = {v: draw(st.integers(0, c)) for v, c in glob.items()}
    assume(sum(cls.values()) > 0)
    return parents, glob, cls


@PROPS
@given(trees())
def test_hierarchical_emd_equals_the_tree_metric_emd(case):
    parents, glob, cls = case
    got = t_closeness([cls], glob, distance="hierarchical", parents=parents)
    assert got == float(tree_emd(cls, glob, parents))


# --------------------------------------------------------------------------------------------
# Entropy, recursive (c,l), beta, delta: readings and exactness
# --------------------------------------------------------------------------------------------


def test_entropy_uniform_class_meets_its_number_of_values_exactly():
    # pyCANON's int(exp(H)) reports 2 for three equal counts (float noise); the test H >= ln 3
    # is decided exactly here.
    agg = from_groups(["s"], [(3, {"s": {"a": 1, "b": 1, "c": 1}}),
                                (6, {"s": {"a": 2, "b": 2, "c": 2}})])
    assert M.check("entropy_l_diversity", {"l": 3}, agg).holds is True
    assert M.check("entropy_l_diversity", {"l": 3.0000001}, agg).holds is False
    assert M.check("entropy_l_diversity", {"l": 2.5}, agg).holds is True
    assert entropy_l([{"a": 1, "b": 1, "c": 1}]) == pytest.approx(3.0, abs=1e-12)
    df = pd.DataFrame({"q": [1, 1, 1], "s": ["a", "b", "c"]})
    assert pyc.entropy_l_diversity(df, ["q"], ["s"]) == 2   # documented pyCANON noise (M3)


def test_recursive_cl_standard_and_pycanon_by_hand():
    h = [{"a": 3, "b": 2, "c": 1}]
    # descending 3,2,1: l = 2 -> 3 < c (2 + 1) -> c = 2; l = 3 -> 3 < c * 1 -> c = 4
    assert recursive_cl(h) == (4, 3)
    assert recursive_cl(h, l=2) == (2, 2)
    # pyCANON: ascending 1,2,3; l = 3 -> 1 < c * 3 -> c = 1
    assert recursive_cl(h, reading="pycanon") == (1, 3)
    agg = from_groups(["s"], [(6, {"s": h[0]})])
    assert M.check("recursive_cl_diversity", {"c": 4}, agg).holds is True
    assert M.check("recursive_cl_diversity", {"c": 3}, agg).holds is False      # 3 < 3 fails
    assert M.check("recursive_cl_diversity", {"c": 3.5}, agg).holds is True     # real c
    assert M.check("recursive_cl_diversity", {"c": 2, "l": 2}, agg).holds is True
    assert M.check("recursive_cl_diversity", {"c": 1, "l": 2}, agg).holds is False
    # l larger than the number of values in a class: no c works
    assert recursive_cl(h, l=4) == (INF, 4)
    assert M.check("recursive_cl_diversity", {"c": 100, "l": 4}, agg).holds is False


def test_recursive_cl_undefined_for_l_one():
    agg = from_groups(["s"], [(2, {"s": {"a": 2}}), (2, {"s": {"a": 1, "b": 1}})])
    r = M.check("recursive_cl_diversity", {"c": 3}, agg)
    assert r.value == (None, 1)
    assert r.holds is False


def test_enhanced_beta_standard_is_infinite_when_a_gain_exceeds_minus_ln_p():
    # p(a) = 3/4: -ln p = 0.288; class {a: 2} has gain (1 - 3/4) / (3/4) = 1/3 > 0.288.
    hs = [{"a": 2}, {"a": 1, "b": 1}]
    assert beta_likeness(hs) == pytest.approx(1.0)           # b: (1/2 - 1/4) / (1/4)
    assert beta_likeness(hs, enhanced=True) == INF
    # pyCANON reading: min(basic, -ln p_min) = min(1, ln 4) = 1
    assert beta_likeness(hs, enhanced=True, reading="pycanon") == pytest.approx(1.0)
    agg = from_groups(["s"], [(2, {"s": hs[0]}), (2, {"s": hs[1]})])
    assert M.check("enhanced_beta_likeness", {"beta": 50}, agg).holds is False
    assert M.check("basic_beta_likeness", {"beta": 1}, agg).holds is True


def test_delta_is_strict_and_infinite_for_a_missing_value():
    hs = [{"a": 1, "b": 1}, {"a": 1, "b": 1}]
    assert delta_disclosure(hs) == 0.0
    agg = from_groups(["s"], [(2, {"s": h}) for h in hs])
    assert M.check("delta_disclosure", {"delta": 0.1}, agg).holds is True
    hs = [{"a": 2}, {"a": 1, "b": 1}]
    # global a 3/4, b 1/4; class 1: ln(1 / (3/4)) = ln(4/3), b missing -> infinity
    assert delta_disclosure(hs) == INF
    assert delta_disclosure(hs, reading="pycanon") == pytest.approx(math.log(2))  # b: 1/2 / 1/4
    agg = from_groups(["s"], [(2, {"s": h}) for h in hs])
    r = M.check("delta_disclosure", {"delta": math.log(2), "reading": "pycanon"}, agg)
    assert r.holds is False                                     # strict <
    assert M.check("delta_disclosure", {"delta": 0.7, "reading": "pycanon"}, agg).holds is True


def test_thresholds_compare_the_exact_value_rounded_once():
    # alpha = 3/10 exactly: the double 0.3 holds; 0.1 + 0.2 (0.30000000000000004) too.
    agg = from_groups(["s"], [(10, {"s": {"a": 3, "b": 3, "c": 2, "d": 2}})])
    assert M.check("alpha_k_anonymity", {"alpha": 0.3}, agg).holds is True
    assert M.check("alpha_k_anonymity", {"alpha": 0.29999999999999}, agg).holds is False
    assert M.check("alpha_k_anonymity", {"alpha": Decimal("0.3")}, agg).holds is True   # numeric
    # equal-distance t of 3/10 (sum of |q - p| = 6/10) against the double 0.3
    agg = from_groups(["s"], [(10, {"s": {"a": 8, "b": 2}}), (10, {"s": {"a": 2, "b": 8}})])
    r = M.check("t_closeness", {"distance": "equal", "t": 0.3}, agg)
    assert r.value == 0.3 and r.holds is True


def test_alpha_k_checks_both_parts():
    agg = from_groups(["s"], [(2, {"s": {"a": 1, "b": 1}}), (3, {"s": {"a": 2, "b": 1}})])
    assert M.check("alpha_k_anonymity", {}, agg).value == (pytest.approx(2 / 3), 2)
    assert M.check("alpha_k_anonymity", {"alpha": 0.7, "k": 2}, agg).holds is True
    assert M.check("alpha_k_anonymity", {"alpha": 0.7, "k": 3}, agg).holds is False
    assert M.check("alpha_k_anonymity", {"alpha": 0.6}, agg).holds is False
    assert M.check("alpha_k_anonymity", {"k": 2}, agg).holds is True
    assert M.check("alpha_k_anonymity", {}, agg).holds is None


# --------------------------------------------------------------------------------------------
# Several SAs: attribute vs joint scope
# --------------------------------------------------------------------------------------------

TWO_SA = rows_of(["q", "s1", "s2"], [(1, "a", "x"), (1, "b", "x"), (1, "a", "y"), (1, "a", "y"),
                                     (2, "b", "x"), (2, "a", "y")])


def test_joint_scope_groups_by_the_other_sas():
    # attribute: class 1 s1 {a 3, b 1}, s2 {x 2, y 2}; class 2 {b, a}, {x, y}: l = 2, alpha 3/4.
    # joint s1 (by q, s2): (1,x) {a,b}, (1,y) {a,a}, (2,x) {b}, (2,y) {a}: l = 1, alpha 1.
    agg = from_rows(TWO_SA, ["q"], ["s1", "s2"])
    assert M.check("l_diversity", {}, agg).value == 2
    assert M.check("l_diversity", {"scope": "joint"}, agg).value == 1
    assert M.check("alpha_k_anonymity", {}, agg).value == (0.75, 2)
    assert M.check("alpha_k_anonymity", {"scope": "joint"}, agg).value == (1.0, 2)
    assert M.check("l_diversity", {"l": 2}, agg).holds is True
    assert M.check("l_diversity", {"l": 2, "scope": "joint"}, agg).holds is False
    assert sorted(n for n, _ in agg.joint["s1"]) == [1, 1, 2, 2]
    df = pd.DataFrame(TWO_SA)
    assert pyc.l_diversity(df, ["q"], ["s1", "s2"], gen=True) == 2
    assert pyc.l_diversity(df, ["q"], ["s1", "s2"], gen=False) == 1


def test_from_groups_equals_from_rows():
    # what the SQL GROUP BYs return, typed by hand
    classes = [(4, {"s1": {"a": 3, "b": 1}, "s2": {"x": 2, "y": 2}}),
               (2, {"s1": {"b": 1, "a": 1}, "s2": {"x": 1, "y": 1}})]
    joint = {"s1": [(2, {"s1": {"a": 1, "b": 1}}), (2, {"s1": {"a": 2}}), (1, {"s1": {"b": 1}}),
                    (1, {"s1": {"a": 1}})],
             "s2": [(3, {"s2": {"x": 1, "y": 2}}), (1, {"s2": {"x": 1}}), (1, {"s2": {"x": 1}}),
                    (1, {"s2": {"y": 1}})]}
    a = from_groups(["s1", "s2"], classes, joint=joint)
    b = from_rows(TWO_SA, ["q"], ["s1", "s2"])
    assert a.global_hists == b.global_hists == {"s1": {"a": 4, "b": 2}, "s2": {"x": 3, "y": 3}}
    for model in M.MODELS:
        for scope in M.SCOPES:
            params = {} if model == "k_anonymity" else {"scope": scope}
            assert M.check(model, params, a).value == M.check(model, params, b).value


def test_rows_as_sequences_with_columns():
    seq = [(r["q"], r["s1"], r["s2"]) for r in TWO_SA]
    a = from_rows(seq, ["q"], ["s1", "s2"], columns=["q", "s1", "s2"])
    b = from_rows(TWO_SA, ["q"], ["s1", "s2"])
    assert a == b


def test_k_anonymity_without_sensitive_attributes():
    agg = from_rows(TWO_SA, ["q", "s2"], [])
    assert M.check("k_anonymity", {"k": 1}, agg).value == 1


def test_null_qi_values_form_one_group_like_group_by():
    rows = rows_of(["q", "s"], [(None, "a"), (None, "b"), (1, "a"), (1, "b")])
    assert M.check("k_anonymity", {}, from_rows(rows, ["q"], ["s"])).value == 2


def test_as_json_spells_infinity_for_postgres():
    agg = from_groups(["s"], [(2, {"s": {"a": 2}}), (2, {"s": {"a": 1, "b": 1}})])
    j = M.check("delta_disclosure", {"delta": 1}, agg).as_json()
    assert j == {"model": "delta_disclosure", "scope": "attribute", "value": "Infinity",
                 "per_sa": {"s": "Infinity"}, "holds": False, "params": {"delta": 1}}
    j = M.check("alpha_k_anonymity", {}, agg).as_json()
    assert j["value"] == [1.0, 2]


# --------------------------------------------------------------------------------------------
# predicate (Mondrian/GAA)
# --------------------------------------------------------------------------------------------


def test_predicate_is_the_per_class_test():
    glob = {"s": {"a": 4, "b": 4}}
    ok = M.predicate("t_closeness", {"t": 0.25, "distance": "equal"}, glob)
    assert ok(4, {"s": {"a": 2, "b": 2}}) is True
    assert ok(4, {"s": {"a": 3, "b": 1}}) is True            # TV 1/4
    assert ok(4, {"s": {"a": 4}}) is False                   # TV 1/2
    ok = M.predicate("l_diversity", {"l": 2}, None)
    assert ok(2, {"s": {"a": 1, "b": 1}}) and not ok(2, {"s": {"a": 2}})
    ok = M.predicate("k_anonymity", {"k": 3})
    assert ok(3, {}) and not ok(2, {})
    ok = M.predicate("recursive_cl_diversity", {"c": 2, "l": 2})
    assert ok(6, {"s": {"a": 3, "b": 2, "c": 1}}) and not ok(6, {"s": {"a": 4, "b": 1, "c": 1}})
    ok = M.predicate("entropy_l_diversity", {"l": 2})
    assert ok(2, {"s": {"a": 1, "b": 1}}) and not ok(3, {"s": {"a": 2, "b": 1}})


@st.composite
def tables(draw, min_sas=1, max_sas=3, min_rows=1, max_rows=14):
    """Small random tables: 1-2 integer QIs, 1-3 SAs, each text or integer."""
    n = draw(st.integers(min_rows, max_rows))
    nq = draw(st.integers(1, 2))
    kinds = draw(st.lists(st.sampled_from(["text", "int"]), min_size=min_sas, max_size=max_sas))
    qis, sas = [f"q{i}" for i in range(nq)], [f"s{j}" for j in range(len(kinds))]
    rows = []
    for _ in range(n):
        r = {q: draw(st.integers(0, 2)) for q in qis}
        for s, kind in zip(sas, kinds):
            v = draw(st.integers(0, 3))
            r[s] = "abcd"[v] if kind == "text" else 10 * v
        rows.append(r)
    return rows, qis, sas


@PROPS
@given(tables(), st.sampled_from(sorted(M.MODELS)), st.floats(0.05, 3.0), st.integers(1, 4))
def test_check_holds_agrees_with_predicate_and_with_the_value(tab, model, x, i):
    rows, qis, sas = tab
    agg = from_rows(rows, qis, sas)
    params = {"k_anonymity": {"k": i}, "alpha_k_anonymity": {"alpha": min(x, 1.0), "k": i},
              "l_diversity": {"l": i}, "entropy_l_diversity": {"l": 1 + x},
              "recursive_cl_diversity": {"c": x, "l": 1 + i},
              "t_closeness": {"t": x / 3}, "basic_beta_likeness": {"beta": x},
              "enhanced_beta_likeness": {"beta": x}, "delta_disclosure": {"delta": x}}[model]
    r = M.check(model, params, agg)
    ok = M.predicate(model, params, agg.global_hists)
    assert r.holds == all(ok(n, hs) for n, hs in agg.classes)
    v = r.value
    expect = {"k_anonymity": lambda: v >= i,
              "alpha_k_anonymity": lambda: v[0] <= min(x, 1.0) and v[1] >= i,
              "l_diversity": lambda: v >= i,
              "t_closeness": lambda: v <= x / 3, "basic_beta_likeness": lambda: v <= x,
              "enhanced_beta_likeness": lambda: v <= x, "delta_disclosure": lambda: v < x}
    if model in expect:
        assert r.holds == expect[model]()
    if model == "entropy_l_diversity" and abs(math.log(v) - math.log(1 + x)) > 1e-9:
        assert r.holds == (v >= 1 + x)


@PROPS
@given(tables(min_sas=2), st.randoms(use_true_random=False))
def test_results_do_not_depend_on_row_order(tab, rnd):
    rows, qis, sas = tab
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    a, b = from_rows(rows, qis, sas), from_rows(shuffled, qis, sas)
    for model in M.MODELS:
        for scope in M.SCOPES:
            params = {} if model == "k_anonymity" else {"scope": scope}
            assert M.check(model, params, a).value == M.check(model, params, b).value


# --------------------------------------------------------------------------------------------
# Agreement with pyCANON 1.3.6 (gen=True <-> 'attribute', gen=False <-> 'joint')
# --------------------------------------------------------------------------------------------


def assert_agrees_with_pycanon(rows, qis, sas):
    agg = from_rows(rows, qis, sas)
    pycanon_ref.assert_agrees(lambda model, params: M.check(model, params, agg).value, rows, qis, sas,
                              global_sizes={s: len(agg.global_hists[s]) for s in sas})


@PROPS
@given(tables(max_sas=1))
def test_agrees_with_pycanon_one_sa(tab):
    assert_agrees_with_pycanon(*tab)


@PROPS
@given(tables(min_sas=2, max_sas=3))
def test_agrees_with_pycanon_several_sas_gen_true_and_false(tab):
    assert_agrees_with_pycanon(*tab)


def test_agrees_with_pycanon_on_a_fixed_larger_table():
    rnd = random.Random(7)
    rows = [{"q0": rnd.randint(0, 3), "q1": rnd.choice("xyz"), "s0": rnd.choice("abcdef"),
             "s1": rnd.randint(0, 6) * 5} for _ in range(200)]
    assert_agrees_with_pycanon(rows, ["q0", "q1"], ["s0", "s1"])


# --------------------------------------------------------------------------------------------
# 'standard' readings and the paper's L1 against direct formulas
# --------------------------------------------------------------------------------------------


def groups(rows, keys, sa):
    """Histograms of ``sa`` per group of ``keys`` (an independent GROUP BY)."""
    out = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), Counter())[r[sa]] += 1
    return list(out.values())


def scope_hists(rows, qis, sas, scope):
    if scope == "attribute":
        return {s: groups(rows, qis, s) for s in sas}
    return {s: groups(rows, qis + [o for o in sas if o != s], s) for s in sas}


def direct(rows, qis, sas, scope):
    hs = scope_hists(rows, qis, sas, scope)
    glob = {s: Counter(r[s] for r in rows) for s in sas}
    N = len(rows)

    def q_p(h, g):
        n = sum(h.values())
        return [(Fraction(h.get(v, 0), n), Fraction(c, N)) for v, c in g.items()]

    l1 = max(float(sum(abs(q - p) for q, p in q_p(h, glob[s]))) for s in sas for h in hs[s])
    delta = max(INF if q == 0 else abs(math.log(q / p)) for s in sas for h in hs[s]
                for q, p in q_p(h, glob[s]))
    gains = [(float((q - p) / p), -math.log(p)) for s in sas for h in hs[s]
             for q, p in q_p(h, glob[s]) if q > p]
    basic = max([0.0] + [g for g, _ in gains])
    enhanced = basic if all(g <= b for g, b in gains) else INF
    # recursive (c,l): l = fewest distinct values; c by search for the smallest integer
    l = min(len(h) for s in sas for h in hs[s])
    c = None
    if l >= 2:
        c = 1
        for s in sas:
            for h in hs[s]:
                r = sorted(h.values(), reverse=True)
                while not r[0] < c * sum(r[l - 1:]):
                    c += 1
    return {"l1": l1, "delta": delta, "enhanced": enhanced, "recursive": (c, l)}


@PROPS
@given(tables(max_sas=3))
def test_standard_readings_match_direct_formulas(tab):
    rows, qis, sas = tab
    agg = from_rows(rows, qis, sas)
    for scope in M.SCOPES:
        want = direct(rows, qis, sas, scope)
        p = {"scope": scope}
        assert M.check("t_closeness", dict(p, distance="l1"), agg).value == want["l1"]
        assert close(M.check("delta_disclosure", p, agg).value, want["delta"])
        assert close(M.check("enhanced_beta_likeness", p, agg).value, want["enhanced"])
        assert M.check("recursive_cl_diversity", p, agg).value == want["recursive"]


@PROPS
@given(st.lists(st.integers(1, 6), min_size=1, max_size=5), st.integers(1, 5))
def test_entropy_threshold_is_exact(counts, l):
    # H >= ln l  <=>  n^n >= l^n * prod c^c (integers, no gcd reduction)
    h = {i: c for i, c in enumerate(counts)}
    n = sum(counts)
    prod = 1
    for c in counts:
        prod *= c ** c
    agg = from_groups(["s"], [(n, {"s": h})])
    assert M.check("entropy_l_diversity", {"l": l}, agg).holds == (n ** n >= l ** n * prod)


# --------------------------------------------------------------------------------------------
# Errors: (call, SQLSTATE, a word the message must name)
# --------------------------------------------------------------------------------------------

AGG2 = from_groups(["s1", "s2"], [(2, {"s1": {"a": 1, "b": 1}, "s2": {"x": 2}})])
AGG1 = from_groups(["s"], [(2, {"s": {"a": 1, "b": 1}})])

ERRORS = [
    (lambda: M.check("k_anonimity", {}, AGG1), "PA001", "k_anonimity"),
    (lambda: M.check("k_anonymity", {"kk": 2}, AGG1), "PA002", "kk"),
    (lambda: M.check("l_diversity", {"scope": "both"}, AGG1), "PA002", "scope"),
    (lambda: M.check("l_diversity", {"l": 0}, AGG1), "PA002", "l"),
    (lambda: M.check("recursive_cl_diversity", {"c": 2, "l": 1}, AGG1), "PA002", "l"),
    (lambda: M.check("alpha_k_anonymity", {"alpha": 1.5}, AGG1), "PA002", "alpha"),
    (lambda: M.check("delta_disclosure", {"delta": 0}, AGG1), "PA002", "delta"),
    (lambda: M.check("t_closeness", {"distance": "emd"}, AGG1), "PA002", "distance"),
    (lambda: M.check("t_closeness", {"distance": "ordered"}, AGG1), "PA002", "order"),
    (lambda: M.check("t_closeness", {"distance": "ordered", "order": {"s": ["a"]}}, AGG1),
     "PA002", "'b'"),
    (lambda: M.check("t_closeness", {"distance": "hierarchical"}, AGG1), "PA002", "hierarchy"),
    (lambda: M.check("t_closeness", {"distance": "hierarchical",
                                     "hierarchy": {"s": {"a": "*"}}}, AGG1), "PA001", "'b'"),
    (lambda: M.check("t_closeness", {"distance": "hierarchical",
                                     "hierarchy": {"s": {"a": "b", "b": "*"}}}, AGG1),
     "PA002", "inner node"),
    (lambda: M.check("t_closeness", {"distance": "hierarchical",
                                     "hierarchy": {"s": {"a": "x", "b": "y"}}}, AGG1),
     "PA002", "2 roots"),
    (lambda: M.check("t_closeness", {"distance": "hierarchical",
                                     "hierarchy": {"s": {"a": "x", "b": "x", "x": "y", "y": "x",
                                                         "z": None}}}, AGG1),
     "PA002", "cycle"),
    (lambda: M.check("l_diversity", {"scope": "joint"}, AGG2), "PA002", "joint"),
    (lambda: M.check("l_diversity", {}, from_rows([{"q": 1, "s": "a"}], ["q"], [])),
     "PA002", "sensitive"),
    (lambda: from_rows([{"q": 1, "s": None}], ["q"], ["s"]), "PA004", "NULL"),
    (lambda: from_rows([{"q": 1, "s": float("nan")}], ["q"], ["s"]), "PA004", "NULL"),
    (lambda: from_rows([{"q": 1}], ["q"], ["s"]), "PA001", "'s'"),
    (lambda: from_rows([(1, "a")], ["q"], ["t"], columns=["q", "s"]), "PA001", "'t'"),
    (lambda: from_groups(["s"], [(3, {"s": {"a": 1, "b": 1}})]), "PA002", "3"),
    (lambda: from_groups(["s"], [(2, {"x": {"a": 2}})]), "PA002", "'s'"),
    (lambda: from_groups(["s"], [(2, {"s": {"a": -1, "b": 3}})]), "PA002", "-1"),
    (lambda: from_groups(["s"], [(2, {"s": {"a": 2}})], global_hists={"s": {"b": 1}}),
     "PA002", "'a'"),
    (lambda: from_groups(["s"], []), "PA002", "empty"),
    (lambda: from_groups(["s", "s"], []), "PA002", "twice"),
    (lambda: M.predicate("l_diversity", {"l": 2, "scope": "joint"}), "PA002", "attribute"),
    (lambda: M.predicate("t_closeness", {}, {"s": {"a": 1}}), "PA002", "threshold"),
    (lambda: M.predicate("t_closeness", {"t": 0.1}), "PA002", "global"),
    (lambda: M.predicate("recursive_cl_diversity", {"c": 2}), "PA002", "'l'"),
    (lambda: M.predicate("t_closeness", {"t": 0.1}, {"s": {"a": 1}})(1, {"u": {"a": 1}}),
     "PA002", "'u'"),
]


@pytest.mark.parametrize("call, sqlstate, word", ERRORS)
def test_bad_input_raises_with_code_and_names_the_problem(call, sqlstate, word):
    with pytest.raises(EngineError) as e:
        call()
    assert e.value.sqlstate == sqlstate
    assert word in str(e.value)
