"""Unit tests for the COUNT-query workload and NCP, pganon_engine.metrics.workload, querygen,
estimate and ncp (spec 004 §4.1-4.2, spec 003 §3.2 ARE).

Expected values come from the spec (Tables 1, 2 and 5 of §3 and the NCP% of §4.1) or from hand
computation written next to each case, never from the module's output.  Counts on the original
data are re-checked with a brute-force count in this file."""

import math
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pganon_engine.metrics import estimate, ncp, querygen
from pganon_engine.metrics import workload as wl
from pganon_engine.core.errors import EngineError
from pganon_engine.metrics.workload import Domain

# --------------------------------------------------------------------------------------------
# Spec 004 §3 fixtures: Table 1 (QIs only), Table 2 ((p,k) GT), Table 5 ((c,k) GT)
# --------------------------------------------------------------------------------------------

# pid: (gender, age, zipcode), spec 3.1
TABLE1 = {
    "p1": ("M", 34, 34548), "p2": ("F", 21, 34607), "p3": ("M", 26, 37506),
    "p4": ("M", 31, 34549), "p5": ("F", 35, 33753), "p6": ("M", 38, 43674),
    "p7": ("M", 27, 35064), "p8": ("F", 32, 44662), "p9": ("F", 22, 34548),
}
PIDS = sorted(TABLE1, key=lambda p: int(p[1:]))

# Table 2: one row per batch, gender "Person" (= '*'), with its number of records
TABLE2 = [  # (count, gender, age, zipcode)
    (2, "*", (22, 26), (34548, 37506)),  # batch 1 {p9, p3}
    (3, "*", (31, 38), (34549, 44662)),  # batch 2 {p4, p8, p6}
    (2, "*", (21, 34), (34548, 34607)),  # batch 3 {p2, p1}
    (2, "*", (27, 35), (33753, 35064)),  # batch 4 {p7, p5}
]

# Table 5: one row per record (gender, age, zipcode)
TABLE5 = [
    ("F", (21, 27), (34548, 37506)),  # p2
    ("F", (21, 27), (34548, 37506)),  # p9
    ("M", (21, 27), (34548, 37506)),  # p3
    ("M", (21, 27), (34548, 37506)),  # p7
    ("*", (32, 38), (43674, 44662)),  # p8
    ("*", (32, 38), (43674, 44662)),  # p6
    ("*", (31, 35), (33753, 34549)),  # p4
    ("*", (31, 35), (33753, 34549)),  # p1
    ("*", (31, 35), (33753, 34549)),  # p5
]


def table1_domains():
    return [
        Domain.categorical_from_values("gender", [TABLE1[p][0] for p in PIDS]),
        Domain.numeric("age", np.array([TABLE1[p][1] for p in PIDS])),
        Domain.numeric("zipcode", np.array([TABLE1[p][2] for p in PIDS])),
    ]


def brute_count(domains, query):
    """COUNT(*) of a described query ({name: (lo, hi) or set of values}) by plain numpy."""
    n = domains[0].n_records
    sel = np.ones(n, dtype=bool)
    for d in domains:
        if d.name not in query:
            continue
        p = query[d.name]
        if d.kind == "numeric":
            sel &= (d.values >= p[0]) & (d.values <= p[1])
        else:
            sel &= np.isin(np.asarray(d.categories, dtype=object)[d.values], list(p))
    return int(sel.sum())


# --------------------------------------------------------------------------------------------
# NCP (§4.1)
# --------------------------------------------------------------------------------------------


def test_ncp_table2_three_qis_is_62_04_percent():
    cells = [c[1:] for c in TABLE2]
    counts = [c[0] for c in TABLE2]
    assert ncp.ncp_percent(cells, counts, table1_domains()) == pytest.approx(62.04, abs=0.005)


def test_ncp_table5_three_qis_is_34_47_percent():
    assert ncp.ncp_percent(TABLE5, None, table1_domains()) == pytest.approx(34.47, abs=0.005)


def test_ncp_table2_age_zip_is_43_06_percent():
    doms = table1_domains()[1:]
    cells = [c[2:] for c in TABLE2]
    counts = [c[0] for c in TABLE2]
    assert ncp.ncp_percent(cells, counts, doms) == pytest.approx(43.06, abs=0.005)


def test_ncp_table5_age_zip_is_23_93_percent():
    doms = table1_domains()[1:]
    assert ncp.ncp_percent([c[1:] for c in TABLE5], None, doms) == pytest.approx(23.93, abs=0.005)


def test_ncp_totals_match_spec_derived_values():
    # §4.1: NCP(T*) = 16.7510 (Table 2) and 9.3082 (Table 5) over 9 records x 3 QIs
    doms = table1_domains()
    p2 = ncp.ncp_percent([c[1:] for c in TABLE2], [c[0] for c in TABLE2], doms)
    p5 = ncp.ncp_percent(TABLE5, None, doms)
    assert p2 * 9 * 3 / 100 == pytest.approx(16.7510, abs=1e-4)
    assert p5 * 9 * 3 / 100 == pytest.approx(9.3082, abs=1e-4)


def test_ncp_table5_grouped_by_class_equals_record_level():
    grouped = [(2, "F", (21, 27), (34548, 37506)), (2, "M", (21, 27), (34548, 37506)),
               (2, "*", (32, 38), (43674, 44662)), (3, "*", (31, 35), (33753, 34549))]
    doms = table1_domains()
    assert ncp.ncp_percent([g[1:] for g in grouped], [g[0] for g in grouped], doms) == pytest.approx(
        ncp.ncp_percent(TABLE5, None, doms))


def test_ncp_exact_release_is_zero_and_full_suppression_is_100():
    doms = table1_domains()
    exact = [TABLE1[p] for p in PIDS]
    assert ncp.ncp_percent(exact, None, doms) == 0.0
    assert ncp.ncp_percent([("*", "*", "*")], [9], doms) == pytest.approx(100.0)


def test_ncp_categorical_conventions():
    # one value -> 0; a set -> |set| / |domain|; '*' -> 1; a one-value domain -> 0
    colour = Domain.categorical("colour", ["r", "g", "b", "y"])
    assert ncp.ncp_percent([("r",)], None, [colour]) == 0.0
    assert ncp.ncp_percent([({"r"},)], None, [colour]) == 0.0
    assert ncp.ncp_percent([({"r", "g", "b"},)], None, [colour]) == pytest.approx(75.0)
    assert ncp.ncp_percent([("*",)], None, [colour]) == pytest.approx(100.0)
    assert ncp.ncp_percent([("*",)], None, [Domain.categorical("one", ["x"])]) == 0.0


def test_ncp_zero_width_numeric_domain_is_zero():
    const = Domain.numeric("c", np.array([5, 5, 5]))
    assert ncp.ncp_percent([((5, 5),), ("*",)], [2, 1], [const]) == 0.0


def test_ncp_weights_scale_attributes():
    # age [21, 38] over domain 21..38 -> 1; zip exact -> 0; weights (1, 3) -> 100 * 1 / 4
    doms = table1_domains()[1:]
    assert ncp.ncp_percent([((21, 38), 34548)], [1], doms, weights=[1, 3]) == pytest.approx(25.0)


# --------------------------------------------------------------------------------------------
# Estimator (§4.2 proposal), hand-computed
# --------------------------------------------------------------------------------------------


def test_estimate_integer_interval_one_class():
    # 4 records in age [20, 29] (10 integers); the query [20, 24] covers 5 -> 4 * 5/10 = 2
    age = Domain.numeric("age", lo=0, hi=99)
    q = wl.queries_from_predicates([age], [{"age": (20, 24)}])
    assert estimate.estimated_counts(q, [((20, 29),)], [4]) == pytest.approx([2.0])


def test_estimate_continuous_interval_and_point():
    x = Domain.numeric("x", lo=0.0, hi=100.0)
    q = wl.queries_from_predicates([x], [{"x": (20.0, 25.0)}, {"x": (23.0, 25.0)}])
    # [20, 30] has length 10, the query covers 5 -> 4 * 0.5 = 2; the second covers 2 -> 0.8
    assert estimate.estimated_counts(q, [((20.0, 30.0),)], [4]) == pytest.approx([2.0, 0.8])
    # a zero-width cell is a point: 22.5 lies in the first range, not in the second
    assert estimate.estimated_counts(q, [((22.5, 22.5),)], [3]) == pytest.approx([3.0, 0.0])
    assert estimate.estimated_counts(q, [(22.5,)], [3]) == pytest.approx([3.0, 0.0])


def test_estimate_categorical_set_star_and_multiset():
    c = Domain.categorical("c", ["a", "b", "c", "d"])
    q = wl.queries_from_predicates([c], [{"c": {"a"}}, {"c": {"a", "c"}}])
    assert estimate.estimated_counts(q, [({"a", "b"},)], [4]) == pytest.approx([2.0, 2.0])
    assert estimate.estimated_counts(q, [("*",)], [4]) == pytest.approx([1.0, 2.0])
    assert estimate.estimated_counts(q, [("b",)], [4]) == pytest.approx([0.0, 0.0])
    # QIT+ST style: a group's SA values with multiplicities {a: 2, b: 1} -> 2/3 for {a}
    assert estimate.estimated_counts(q, [({"a": 2, "b": 1},)], None) == pytest.approx([2 / 3, 2 / 3])


def test_estimate_is_product_over_attributes():
    # 4 records, age [20, 29] and gender '*' over {F, M}: age [20, 24] and F -> 4 * 1/2 * 1/2
    doms = [Domain.numeric("age", lo=0, hi=99), Domain.categorical("gender", ["F", "M"])]
    q = wl.queries_from_predicates(doms, [{"age": (20, 24), "gender": "F"}, {"gender": {"F"}}, {}])
    assert estimate.estimated_counts(q, [((20, 29), "*")], [4]) == pytest.approx([1.0, 2.0, 4.0])


def test_estimate_table5_by_hand():
    doms = table1_domains()
    q = wl.queries_from_predicates(doms, [
        {"gender": {"F"}, "age": (21, 27)},  # EC1: p2, p9 exactly F -> 2; EC2/EC3 ages miss -> 2
        {"age": (30, 35)},  # EC2 [32, 38]: 2 * 4/7; EC3 [31, 35]: 3 -> 3 + 8/7
        {"zipcode": (34548, 34549)},  # EC3: 3 * 2/797 (33753..34549); EC1: 4 * 2/2959
    ])
    est = estimate.estimated_counts(q, TABLE5)
    assert est == pytest.approx([2.0, 3 + 8 / 7, 3 * 2 / 797 + 4 * 2 / 2959])
    true = wl.true_counts(q, doms)
    assert list(true) == [2, 4, 3]  # {p2, p9}; {p1, p4, p5, p8}; {p1, p4, p9}
    err = estimate.query_error(q, true, est)
    rel3 = abs(3 * 2 / 797 + 4 * 2 / 2959 - 3) / 3
    assert err.used == 3
    assert err.mean == pytest.approx((0 + (8 / 7 - 1) / 4 + rel3) / 3)
    assert err.max == pytest.approx(rel3)
    assert err.median == pytest.approx((8 / 7 - 1) / 4)


def test_estimate_record_level_equals_grouped_classes():
    doms = table1_domains()
    grouped = [(2, "F", (21, 27), (34548, 37506)), (2, "M", (21, 27), (34548, 37506)),
               (2, "*", (32, 38), (43674, 44662)), (3, "*", (31, 35), (33753, 34549))]
    q = querygen.make_queries(doms, 0.3, n=40, seed=5)
    a = estimate.estimated_counts(q, TABLE5)
    b = estimate.estimated_counts(q, [g[1:] for g in grouped], [g[0] for g in grouped])
    assert a == pytest.approx(b)


def test_estimate_blocks_do_not_change_the_result():
    rng = np.random.default_rng(3)
    age = Domain.numeric("age", rng.integers(0, 100, 500))
    cells = [((lo, lo + w),) for lo, w in zip(rng.integers(0, 80, 60), rng.integers(0, 20, 60))]
    counts = rng.integers(1, 9, 60)
    q = querygen.make_queries([age], 0.1, n=25, seed=1)
    assert estimate.estimated_counts(q, cells, counts, chunk_elems=7) == pytest.approx(
        estimate.estimated_counts(q, cells, counts))


def test_ungeneralized_table1_has_zero_error():
    doms = table1_domains()
    q = querygen.make_queries(doms, 0.25, n=50, seed=2)
    est = estimate.estimated_counts(q, [TABLE1[p] for p in PIDS])
    err = estimate.query_error(q, wl.true_counts(q, doms), est)
    assert err.used == 50 and err.max == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(5, 300), seed=st.integers(0, 10_000), theta=st.floats(0.02, 0.9))
def test_ungeneralized_release_has_zero_error(n_rows, seed, theta):
    rng = np.random.default_rng(seed)
    ages = rng.integers(0, 30, n_rows)
    xs = np.round(rng.normal(0, 1, n_rows), 2)
    cats = rng.integers(0, 5, n_rows)
    doms = [Domain.numeric("age", ages), Domain.numeric("x", xs),
            Domain.categorical("c", ["v", "w", "x", "y", "z"], cats)]
    q = querygen.make_queries(doms, theta, n=20, seed=seed)
    cells = [(int(a), float(x), "vwxyz"[c]) for a, x, c in zip(ages, xs, cats)]
    err = estimate.query_error(q, wl.true_counts(q, doms), estimate.estimated_counts(q, cells))
    assert err.used == 20
    assert err.mean == pytest.approx(0.0, abs=1e-12) and err.max == pytest.approx(0.0, abs=1e-12)


@st.composite
def releases(draw):
    """A random release over age (integers 0..49), colour {a..e} and x (continuous [0, 1])."""
    classes = []
    for _ in range(draw(st.integers(1, 8))):
        count = draw(st.integers(1, 10))
        kind = draw(st.sampled_from(["exact", "range", "star"]))
        if kind == "exact":
            age = draw(st.integers(0, 49))
        elif kind == "range":
            lo = draw(st.integers(0, 49))
            age = (lo, draw(st.integers(lo, 49)))
        else:
            age = "*"
        kind = draw(st.sampled_from(["value", "set", "star", "multiset"]))
        if kind == "value":
            colour = draw(st.sampled_from("abcde"))
        elif kind == "set":
            colour = draw(st.sets(st.sampled_from("abcde"), min_size=1))
        elif kind == "star":
            colour = "*"
        else:
            colour = draw(st.dictionaries(st.sampled_from("abcde"), st.integers(1, 5), min_size=1))
        if draw(st.booleans()):
            lo = draw(st.floats(0, 0.9))
            x = (lo, draw(st.floats(lo + 0.01, 1.0)))
        else:
            x = "*"
        classes.append((count, (age, colour, x)))
    return classes


@settings(max_examples=150, deadline=None)
@given(rel=releases(), age_cuts=st.sets(st.integers(1, 49), max_size=6),
       colour_groups=st.lists(st.integers(0, 2), min_size=5, max_size=5),
       x_cuts=st.sets(st.floats(0.01, 0.99), max_size=4))
def test_estimates_over_a_partition_of_the_domain_sum_to_the_record_count(rel, age_cuts, colour_groups, x_cuts):
    doms = [Domain.numeric("age", lo=0, hi=49), Domain.categorical("colour", list("abcde")),
            Domain.numeric("x", lo=0.0, hi=1.0)]
    edges = [0] + sorted(age_cuts) + [50]
    age_parts = [(a, b - 1) for a, b in pairwise(edges)]
    groups = {}
    for v, g in zip("abcde", colour_groups):
        groups.setdefault(g, set()).add(v)
    xe = [0.0] + sorted(x_cuts) + [1.0]
    x_parts = [(a, b) for a, b in pairwise(xe)]
    preds = [{"age": a, "colour": c, "x": x} for a in age_parts for c in groups.values() for x in x_parts]
    q = wl.queries_from_predicates(doms, preds)
    est = estimate.estimated_counts(q, [c for _, c in rel], [n for n, _ in rel])
    assert est.sum() == pytest.approx(sum(n for n, _ in rel))


def test_coarser_generalization_has_no_lower_mean_error():
    # skewed ages: many young, few old; finer releases keep more of the skew
    rng = np.random.default_rng(11)
    ages = np.clip(rng.triangular(0, 0, 100, 4000).astype(int), 0, 99)
    dom = Domain.numeric("age", ages, lo=0, hi=99)

    def release(width):
        cells, counts = [], []
        for lo in range(0, 100, width):
            hi = min(lo + width - 1, 99)
            cells.append(((lo, hi),))
            counts.append(int(((ages >= lo) & (ages <= hi)).sum()))
        return cells, counts

    q = querygen.make_queries([dom], 0.05, n=300, seed=4)
    true = wl.true_counts(q, [dom])
    errs = []
    for width in (5, 25, 50, 100):
        cells, counts = release(width)
        errs.append(estimate.query_error(q, true, estimate.estimated_counts(q, cells, counts)).mean)
    star = estimate.query_error(q, true, estimate.estimated_counts(q, [("*",)], [len(ages)])).mean
    assert errs[0] <= errs[1] <= errs[2] <= errs[3]
    assert star == pytest.approx(errs[3])  # '*' is the whole domain [0, 99]
    assert errs[0] < errs[3]


# --------------------------------------------------------------------------------------------
# Workload generation (eq. 7)
# --------------------------------------------------------------------------------------------


def _random_domains(rng, n_rows, with_int, with_cat):
    doms = [Domain.numeric("x", rng.normal(0, 1, n_rows))]
    if with_int:
        doms.append(Domain.numeric("k", rng.integers(0, 10_000, n_rows)))
    if with_cat:
        m = int(rng.integers(2, 20))
        p = rng.dirichlet(np.ones(m))
        doms.append(Domain.categorical("c", [f"v{i}" for i in range(m)], rng.choice(m, n_rows, p=p)))
    return doms


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_rows=st.integers(30, 3000), theta=st.floats(0.01, 0.6), seed=st.integers(0, 10_000),
       with_int=st.booleans(), with_cat=st.booleans(), tolerance=st.sampled_from([0.0, 0.05, 0.1, 0.3]))
def test_realized_selectivity_is_within_tolerance_of_theta(n_rows, theta, seed, with_int, with_cat, tolerance):
    rng = np.random.default_rng(seed)
    doms = _random_domains(rng, n_rows, with_int, with_cat)
    q = querygen.make_queries(doms, theta, n=15, seed=seed, tolerance=tolerance)
    band = max(tolerance * theta * n_rows, 1.0)  # W4
    for j in range(len(q)):
        c = brute_count(doms, q.describe(j))
        assert c == q.counts[j]
        assert 0 < c and abs(c - theta * n_rows) <= band + 1e-9
    assert q.on_target.all()


def test_selectivity_with_sampling_is_checked_on_all_rows():
    rng = np.random.default_rng(8)
    n_rows = 30_000
    x = rng.normal(0, 1, n_rows)
    y = x + rng.normal(0, 0.3, n_rows)  # strongly correlated with x
    doms = [Domain.numeric("x", x), Domain.numeric("y", y)]
    q = querygen.make_queries(doms, 0.05, n=60, seed=1, sample=2000)
    counts = np.array([brute_count(doms, q.describe(j)) for j in range(len(q))])
    assert (np.abs(counts - 0.05 * n_rows) <= 0.1 * 0.05 * n_rows).all()


def test_correlated_attributes_still_hit_theta():
    # y == x: θ^(1/2) per attribute would select about sqrt(θ), not θ
    x = np.arange(1000, dtype=float)
    doms = [Domain.numeric("x", x), Domain.numeric("y", x.copy())]
    q = querygen.make_queries(doms, 0.04, n=30, seed=0)
    assert all(abs(brute_count(doms, q.describe(j)) - 40) <= 4 for j in range(30))


def test_on_target_reports_unreachable_selectivity():
    # one binary attribute with 90 % / 10 %: θ = 0.6 is unreachable (counts 10, 90 or 100);
    # the closest draw, {y} with 90, is kept
    codes = np.array([0] * 90 + [1] * 10)
    dom = Domain.categorical("b", ["y", "n"], codes)
    q = querygen.make_queries([dom], 0.6, n=5, seed=0, max_tries=20)
    assert not q.on_target.any()
    assert all(q.describe(j) == {"b": frozenset({"y"})} for j in range(5))
    assert list(q.counts) == [90] * 5


def test_make_queries_is_reproducible_by_seed():
    rng = np.random.default_rng(0)
    doms = _random_domains(rng, 2000, True, True)
    a = querygen.make_queries(doms, 0.1, n=50, seed=7)
    b = querygen.make_queries(doms, 0.1, n=50, seed=7)
    c = querygen.make_queries(doms, 0.1, n=50, seed=8)
    da = [a.describe(j) for j in range(50)]
    assert da == [b.describe(j) for j in range(50)]
    assert da != [c.describe(j) for j in range(50)]
    assert (a.counts == b.counts).all()
    d1 = querygen.make_queries(doms, 0.1, n=30, seed=3, scheme="domain", qd=2)
    d2 = querygen.make_queries(doms, 0.1, n=30, seed=3, scheme="domain", qd=2)
    assert [d1.describe(j) for j in range(30)] == [d2.describe(j) for j in range(30)]


def test_qd_and_always_choose_the_constrained_attributes():
    rng = np.random.default_rng(1)
    doms = _random_domains(rng, 1000, True, True)  # x, k, c
    q = querygen.make_queries(doms, 0.1, n=40, seed=0, qd=1)
    assert (q.constrained.sum(axis=1) == 1).all()
    q = querygen.make_queries(doms, 0.1, n=40, seed=0, qd=1, always=["c"])
    assert (q.constrained.sum(axis=1) == 2).all() and q.constrained[:, 2].all()
    q = querygen.make_queries(doms, 0.1, n=40, seed=0, qis=["x", "k"])
    assert not q.constrained[:, 2].any() and q.constrained[:, :2].all()
    assert all(set(q.describe(j)) == {"x", "k"} for j in range(40))


def test_domain_scheme_takes_a_fraction_of_the_domain():
    # spec 003 §3.2: b = ceil(|dom| * θ^(1/q)) values; θ = 0.25, q = 2 -> f = 0.5
    rng = np.random.default_rng(2)
    cat = Domain.categorical("c", [f"v{i}" for i in range(9)], rng.integers(0, 9, 3000))
    num = Domain.numeric("k", rng.integers(0, 100, 3000), lo=0, hi=99)  # 100 integers
    q = querygen.make_queries([cat, num], 0.25, n=50, seed=0, scheme="domain")
    for j in range(50):
        d = q.describe(j)
        assert len(d["c"]) == 5  # ceil(9 * 0.5)
        lo, hi = d["k"]
        assert hi - lo + 1 == 50 and 0 <= lo and hi <= 99
        assert q.counts[j] == brute_count([cat, num], d) > 0
    q1 = querygen.make_queries([cat, num], 0.25, n=20, seed=0, scheme="domain", qis=["c"])
    assert all(len(q1.describe(j)["c"]) == 3 for j in range(20))  # ceil(9 * 0.25)


def test_zero_count_queries_are_replaced():
    # 3 records spread over a wide integer domain: most 'domain' ranges hold nobody
    dom = Domain.numeric("k", np.array([0, 500, 999]))
    q = querygen.make_queries([dom], 0.01, n=20, seed=0, scheme="domain", max_tries=500)
    assert (q.counts > 0).all()
    assert all(brute_count([dom], q.describe(j)) > 0 for j in range(20))
    with pytest.raises(EngineError) as e:
        querygen.make_queries([dom], 0.001, n=20, seed=0, scheme="domain", max_tries=1)
    assert e.value.sqlstate == "PA004"


# --------------------------------------------------------------------------------------------
# Counts and error
# --------------------------------------------------------------------------------------------


def test_true_counts_by_hand_on_table1():
    doms = table1_domains()
    q = wl.queries_from_predicates(doms, [
        {"zipcode": (34548, 34549)},  # p1, p4, p9
        {"gender": "F", "age": (21, 27)},  # p2, p9
        {"gender": {"M"}, "age": (30, 40)},  # p1, p4, p6
        {},  # all 9
    ])
    assert list(wl.true_counts(q, doms)) == [3, 2, 3, 9]
    assert list(wl.true_counts(q, doms, chunk_elems=1)) == [3, 2, 3, 9]


def test_true_counts_are_additive_over_row_blocks():
    rng = np.random.default_rng(4)
    x, c = rng.normal(0, 1, 1000), rng.integers(0, 3, 1000)
    doms = [Domain.numeric("x", x), Domain.categorical("c", ["a", "b", "z"], c)]
    q = querygen.make_queries(doms, 0.2, n=30, seed=0)
    parts = [wl.true_counts(q, {"x": x[s:s + 300], "c": c[s:s + 300]}) for s in range(0, 1000, 300)]
    assert (sum(parts) == q.counts).all()


def test_query_error_by_hand_skips_zero_true_counts():
    err = estimate.query_error(None, [10, 0, 4, 5], [12, 3, 4, 5])  # 0.2, (skipped), 0, 0
    assert (err.used, err.skipped) == (3, 1)
    assert err.mean == pytest.approx(0.2 / 3)
    assert err.median == 0.0 and err.max == pytest.approx(0.2)
    none = estimate.query_error(None, [0, 0], [1, 2])
    assert none.used == 0 and math.isnan(none.mean)


# --------------------------------------------------------------------------------------------
# Bad input: error codes (PA001 unknown, PA002 invalid, PA003 incomplete, PA004 bad data)
# --------------------------------------------------------------------------------------------

_DOMS = table1_domains()
_Q = wl.queries_from_predicates(_DOMS, [{"age": (20, 30)}])

BAD_CALLS = [
    ("theta_zero", lambda: querygen.make_queries(_DOMS, 0, n=3), "PA002"),
    ("theta_above_one", lambda: querygen.make_queries(_DOMS, 1.5, n=3), "PA002"),
    ("unknown_qi", lambda: querygen.make_queries(_DOMS, 0.1, n=3, qis=["nope"]), "PA001"),
    ("qd_too_large", lambda: querygen.make_queries(_DOMS, 0.1, n=3, qd=4), "PA002"),
    ("always_outside_qis", lambda: querygen.make_queries(_DOMS, 0.1, n=3, qis=["age"], always=["zipcode"]), "PA002"),
    ("bad_scheme", lambda: querygen.make_queries(_DOMS, 0.1, n=3, scheme="random"), "PA002"),
    ("unknown_category_in_cell", lambda: estimate.estimated_counts(_Q, [("X", 30, 34548)]), "PA004"),
    ("reversed_interval", lambda: estimate.estimated_counts(_Q, [("F", (35, 30), 34548)]), "PA004"),
    ("null_cell", lambda: ncp.ncp_percent([(None, 30, 34548)], None, _DOMS), "PA004"),
    ("integer_cell_without_integer", lambda: estimate.estimated_counts(_Q, [("F", (30.2, 30.7), 34548)]), "PA004"),
    ("too_few_cells", lambda: estimate.estimated_counts(_Q, [("F", 30)]), "PA002"),
    ("counts_length", lambda: estimate.estimated_counts(_Q, [("F", 30, 34548)], [1, 2]), "PA002"),
    ("nan_numeric_values", lambda: Domain.numeric("a", np.array([1.0, np.nan])), "PA004"),
    ("codes_out_of_range", lambda: Domain.categorical("g", ["F", "M"], np.array([0, 2])), "PA004"),
    ("missing_column", lambda: wl.true_counts(_Q, {"gender": np.array([0])}), "PA003"),
    ("unknown_attribute_in_predicate", lambda: wl.queries_from_predicates(_DOMS, [{"height": (1, 2)}]), "PA001"),
    ("error_lengths_differ", lambda: estimate.query_error(None, [1, 2], [1]), "PA002"),
]


@pytest.mark.parametrize("call,sqlstate", [(c, s) for _, c, s in BAD_CALLS], ids=[n for n, _, _ in BAD_CALLS])
def test_bad_input_raises_with_code(call, sqlstate):
    with pytest.raises(EngineError) as e:
        call()
    assert e.value.sqlstate == sqlstate
