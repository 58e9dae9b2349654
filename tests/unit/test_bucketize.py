"""Unit tests for the bucketization planner, pganon_engine.methods.bucketization (spec 000-lsl-diversity.md, sections 3, 6 and 8.A)."""

import csv
import io
import random
from array import array
from collections import Counter
from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pganon_engine.methods.bucketization import bucketize as bz
from pganon_engine.methods.bucketization import inputs, reference, runs
from pganon_engine.methods.bucketization.residual import residual_fast

L3 = {0: 1, 1: 2, 2: 3}

TABLE1_CSV = """rid,SSN,Name,Age,Sex,Race,Zipcode,Physician,Disease
1,19200,Sam,21,M,White,11000,John,Flu
2,17720,Anne,60,F,Black,21000,John,Pneumonia
3,25000,Mike,56,M,White,11400,Mary,Cancer
4,14520,Lily,28,F,Black,65000,Bob,Flu
5,18010,Harry,60,M,White,41000,Bob,Pneumonia
6,23800,Mona,55,F,Black,41300,Anne,Gastritis
7,34000,Tony,43,M,White,39000,John,Gastritis
8,12000,Lucy,26,F,Black,15000,Sam,HIV
9,37080,Tim,37,M,White,19000,Mary,Flu
"""
# Spec 6.1: every Physician value is level 1; Flu 0, Pneumonia 1, Gastritis 1, HIV 2, Cancer 2.
DISEASE_LEVEL = {"Flu": 0, "Pneumonia": 1, "Gastritis": 1, "HIV": 2, "Cancer": 2}


def table1():
    """Bucket input built from Table 1: buckets in first-appearance order, codes dense per
    dimension (in first-appearance order too).  Returns (sizes, values, levels, members,
    names) where members[b] lists the record ids of bucket b in FIFO order."""
    rows = list(csv.DictReader(io.StringIO(TABLE1_CSV)))
    code = [{}, {}]
    bucket_of = {}
    sizes, values, levels, members = [], [], [], []
    for r in rows:
        key = (r["Physician"], r["Disease"])
        if key not in bucket_of:
            bucket_of[key] = len(sizes)
            sizes.append(0)
            members.append([])
            values += [code[0].setdefault(key[0], len(code[0])),
                       code[1].setdefault(key[1], len(code[1]))]
            levels += [1, DISEASE_LEVEL[key[1]]]
        b = bucket_of[key]
        sizes[b] += 1
        members[b].append(int(r["rid"]))
    names = [{c: v for v, c in code[j].items()} for j in range(2)]
    return sizes, values, levels, members, names


def record_groups(p, members):
    """Groups as lists of record ids (pick order when the plan kept it)."""
    return [[members[b][r] for b, r in G] for G in runs.expand(p)]


def partition(p, members):
    return frozenset(frozenset(G) for G in record_groups(p, members))


ALGOS = [(v, m) for m in (True, False) for v in inputs.VARIANTS]


# --------------------------------------------------------------------------------------------
# Independent model checks (not the module's code)
# --------------------------------------------------------------------------------------------


def is_lsl_diverse(vectors, lev, L):
    """Def 10/11: for every SA and every value v in G, count(v) * l[lev(v)] <= |G|.
    vectors: list of d-tuples of codes; lev(j, code) -> level; L: {level: l}."""
    n = len(vectors)
    if n == 0:
        return False
    d = len(vectors[0])
    for j in range(d):
        for v, c in Counter(t[j] for t in vectors).items():
            if c * L[lev(j, v)] > n:
                return False
    return True


def check_plan(p, sizes, values, levels, L, mslf, baseline_l=None):
    """Every group satisfies its model; groups + suppressed records partition the input."""
    B = len(sizes)
    d = len(values) // B if B else 0
    levmap = {(j, values[b * d + j]): levels[b * d + j] for b in range(B) for j in range(d)}
    if mslf:
        lev, LL = (lambda j, v: levmap[(j, v)]), L
    else:
        if baseline_l is None:
            present = [max(levels[b * d:(b + 1) * d]) for b in range(B) if sizes[b]]
            baseline_l = L[max(present)] if present else 1
        lev, LL = (lambda j, v: 0), {0: baseline_l}
    seen = Counter()
    for G in runs.expand(p):
        vecs = [tuple(values[b * d:(b + 1) * d]) for b, _ in G]
        assert is_lsl_diverse(vecs, lev, LL), (G, vecs)
        seen.update(G)
    for b in range(B):
        for r in range(sizes[b] - p.suppressed[b], sizes[b]):
            seen[(b, r)] += 1
    expected = Counter({(b, r): 1 for b in range(B) for r in range(sizes[b])})
    assert seen == expected
    assert p.n_suppressed == sum(p.suppressed)
    assert p.main_picks + p.residual_placed + p.n_suppressed == sum(sizes)
    assert p.main_picks == sum(p.group_l)
    assert len(p.group_l) == p.n_groups


# --------------------------------------------------------------------------------------------
# Spec 6.2: buckets, capacities, levels, selectivities of Table 1
# --------------------------------------------------------------------------------------------


def test_table1_buckets_and_capacities():
    sizes, values, levels, members, names = table1()
    assert sizes == [1] * 9
    assert [m[0] for m in members] == list(range(1, 10))  # b1..b9 hold t1..t9
    keys = [(names[0][values[2 * b]], names[1][values[2 * b + 1]]) for b in range(9)]
    assert keys == [("John", "Flu"), ("John", "Pneumonia"), ("Mary", "Cancer"), ("Bob", "Flu"),
                    ("Bob", "Pneumonia"), ("Anne", "Gastritis"), ("John", "Gastritis"),
                    ("Sam", "HIV"), ("Mary", "Flu")]
    caps = inputs.capacities(sizes, values)
    phys = {names[0][c]: n for c, n in caps[0].items()}
    dis = {names[1][c]: n for c, n in caps[1].items()}
    assert phys == {"John": 3, "Bob": 2, "Anne": 1, "Sam": 1, "Mary": 2}
    assert dis == {"Flu": 3, "Pneumonia": 2, "Gastritis": 2, "HIV": 1, "Cancer": 1}
    blev = [max(levels[2 * b:2 * b + 2]) for b in range(9)]
    assert blev == [1, 1, 2, 1, 1, 1, 1, 2, 1]


def test_table1_selectivities():
    sizes, values, *_ = table1()
    assert inputs.selectivity("mbf", sizes, values) == [1] * 9
    assert inputs.selectivity("msdcf", sizes, values) == [4, 4, 3, 4, 3, 3, 4, 2, 4]
    assert inputs.selectivity("mmdcf", sizes, values) == [7, 6, 4, 6, 5, 4, 6, 3, 6]


# --------------------------------------------------------------------------------------------
# Spec 6.3: deterministic outputs ('first' ties)
# --------------------------------------------------------------------------------------------

EXPECTED_63 = {
    ("mbf", True): [[3, 8, 1], [2, 4], [5, 6], [7, 9]],
    ("msdcf", True): [[3, 8, 1], [2, 4], [6, 5], [7, 9]],
    ("mmdcf", True): [[3, 8, 1], [2, 4], [6, 5], [7, 9]],
    ("mbf", False): [[1, 3, 5], [2, 4, 6], [7, 8, 9]],
    ("msdcf", False): [[1, 3, 5], [2, 4, 6], [7, 8, 9]],
    ("mmdcf", False): [[1, 5, 3], [7, 4, 8], [2, 6, 9]],
}


@pytest.mark.parametrize("variant,mslf", ALGOS)
@pytest.mark.parametrize("impl", [bz.plan, reference.plan_reference])
def test_table1_expected_outputs(impl, variant, mslf):
    sizes, values, levels, members, _ = table1()
    p = impl(sizes, values, levels, L3, variant, mslf=mslf, keep_order=True)
    assert record_groups(p, members) == EXPECTED_63[(variant, mslf)]  # pick order included
    assert p.group_l == ([3, 2, 2, 2] if mslf else [3, 3, 3])
    assert p.n_suppressed == 0 and p.suppressed == [0] * 9 and p.residual_placed == 0
    m = bz.metrics_from_plan(p, sizes, values, levels, L3, mslf=mslf)
    assert m == {"ail": 0, "sr": 0}
    check_plan(p, sizes, values, levels, L3, mslf)


def test_table1_mbf_mslf_runs():
    sizes, values, levels, _, _ = table1()
    p = bz.plan(sizes, values, levels, L3, "mbf")
    # every bucket holds one record, so every run has count 1
    assert sorted(p.runs) == sorted([(2, 0, 1), (7, 0, 1), (0, 0, 1), (1, 1, 1), (3, 1, 1),
                                     (4, 2, 1), (5, 2, 1), (6, 3, 1), (8, 3, 1)])


# --------------------------------------------------------------------------------------------
# Spec 6.3: invariants under random tie-breaking
# --------------------------------------------------------------------------------------------

RANDOM_TABLE = {  # (variant, mslf): (number of distinct partitions, possible (#G, AIL, SR))
    ("mbf", True): (68, {(4, F(0), F(0)), (3, F(2, 7), F(0)), (2, F(4, 5), F(0))}),
    ("msdcf", True): (28, {(4, F(0), F(0)), (3, F(2, 7), F(0))}),
    ("mmdcf", True): (6, {(4, F(0), F(0))}),
    ("mbf", False): (44, {(3, F(0), F(0)), (2, F(1, 6), F(2, 9)), (2, F(0), F(1, 3)),
                          (2, F(1, 3), F(1, 9)), (1, F(4, 3), F(2, 9)), (1, F(5, 3), F(1, 9)),
                          (1, F(1), F(1, 3))}),
    ("msdcf", False): (18, {(3, F(0), F(0)), (2, F(1, 6), F(2, 9))}),
    ("mmdcf", False): (4, {(3, F(0), F(0))}),
}


@pytest.mark.parametrize("variant,mslf", ALGOS)
def test_table1_random_tie_invariants(variant, mslf):
    sizes, values, levels, members, _ = table1()
    max_parts, triples = RANDOM_TABLE[(variant, mslf)]
    parts, seen = set(), set()
    for seed in range(200):
        p = bz.plan(sizes, values, levels, L3, variant, mslf=mslf, tie="random", seed=seed)
        check_plan(p, sizes, values, levels, L3, mslf)
        m = bz.metrics_from_plan(p, sizes, values, levels, L3, mslf=mslf)
        seen.add((p.n_groups, m["ail"], m["sr"]))
        parts.add(partition(p, members))
        if mslf:
            assert p.n_suppressed == 0
        if variant == "mmdcf":
            assert p.n_groups == (4 if mslf else 3)
        # same seed, same plan; and the reference consumes the random stream identically
        assert p == bz.plan(sizes, values, levels, L3, variant, mslf=mslf, tie="random",
                            seed=seed)
        if seed < 20:
            assert p == reference.plan_reference(sizes, values, levels, L3, variant, mslf=mslf,
                                          tie="random", seed=seed)
    assert seen <= triples
    assert len(parts) <= max_parts


# --------------------------------------------------------------------------------------------
# Spec 6.3 edge fixtures (a), (b), (c)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", inputs.VARIANTS)
def test_edge_a_all_level_0(variant):
    sizes, values, _, _, _ = table1()
    levels = [0] * len(values)
    p = bz.plan(sizes, values, levels, L3, variant)
    assert p.n_groups == 9 and p.group_l == [1] * 9
    assert sorted(len(G) for G in runs.expand(p)) == [1] * 9
    m = bz.metrics_from_plan(p, sizes, values, levels, L3)
    assert m == {"ail": 0, "sr": 0}
    assert p == reference.plan_reference(sizes, values, levels, L3, variant)


@pytest.mark.parametrize("variant,mslf", ALGOS)
def test_edge_b_rolled_back_group(variant, mslf):
    # <John, HIV>, <John, Cancer>: l_G = 3, the first group cannot be completed.
    sizes, values, levels = [1, 1], [0, 0, 0, 1], [1, 2, 1, 2]
    p = bz.plan(sizes, values, levels, L3, variant, mslf=mslf)
    assert p.n_groups == 0 and p.runs == [] and p.suppressed == [1, 1]
    assert p.main_picks == 0 and p.n_suppressed == 2
    assert bz.metrics_from_plan(p, sizes, values, levels, L3, mslf=mslf) == {"ail": 0, "sr": 1}
    assert p == reference.plan_reference(sizes, values, levels, L3, variant, mslf=mslf)


@pytest.mark.parametrize("variant", inputs.VARIANTS)
@pytest.mark.parametrize("level,tie", [(1, "first"), (2, "first"), (2, "random")])
def test_edge_c_uniform_levels_reproduce_baseline(variant, level, tie):
    rng = random.Random(level)
    B, d = 12, 3
    sizes = [rng.randint(1, 5) for _ in range(B)]
    values = [rng.randrange(3) for _ in range(B * d)]
    levels = [level] * (B * d)
    seed = 7 if tie == "random" else None
    a = bz.plan(sizes, values, levels, L3, variant, mslf=True, tie=tie, seed=seed)
    b = bz.plan(sizes, values, levels, L3, variant, mslf=False, baseline_l=L3[level], tie=tie,
                seed=seed)
    assert a == b
    # and the default baseline l is the l of the highest level present
    assert b == bz.plan(sizes, values, levels, L3, variant, mslf=False, tie=tie, seed=seed)


# --------------------------------------------------------------------------------------------
# Fast plan == reference, model invariants (hypothesis)
# --------------------------------------------------------------------------------------------


@st.composite
def bucket_tables(draw, max_b=12, max_size=6):
    B = draw(st.integers(1, max_b))
    d = draw(st.integers(1, 4))
    nvals = [draw(st.integers(1, 4)) for _ in range(d)]
    levmap = [[draw(st.integers(0, 2)) for _ in range(nv)] for nv in nvals]
    sizes = [draw(st.integers(0, max_size)) for _ in range(B)]
    values, levels = [], []
    for _ in range(B):
        for j in range(d):
            c = draw(st.integers(0, nvals[j] - 1))
            values.append(c)
            levels.append(levmap[j][c])
    l0 = draw(st.integers(1, 3))
    l1 = l0 + draw(st.integers(0, 2))
    l2 = l1 + draw(st.integers(0, 2))
    return sizes, values, levels, {0: l0, 1: l1, 2: l2}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bucket_tables(), st.integers(0, 2**31 - 1))
def test_property_fast_equals_reference_and_models_hold(table, seed):
    sizes, values, levels, L = table
    for variant, mslf in ALGOS:
        for tie in ("first", "random"):
            s = seed if tie == "random" else None
            fast = bz.plan(sizes, values, levels, L, variant, mslf=mslf, tie=tie, seed=s,
                           keep_order=True)
            ref = reference.plan_reference(sizes, values, levels, L, variant, mslf=mslf, tie=tie,
                                    seed=s, keep_order=True)
            assert fast == ref, (variant, mslf, tie)
            check_plan(fast, sizes, values, levels, L, mslf)
            # without keep_order the plan is the same apart from the order fields
            plain = bz.plan(sizes, values, levels, L, variant, mslf=mslf, tie=tie, seed=s)
            assert plain.runs == fast.runs and plain.suppressed == fast.suppressed


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bucket_tables(max_b=40, max_size=25))
def test_property_fast_equals_reference_larger(table):
    """Bigger buckets make the lazy heaps go stale many times per run."""
    sizes, values, levels, L = table
    for variant, mslf in ALGOS:
        fast = bz.plan(sizes, values, levels, L, variant, mslf=mslf, keep_order=True)
        ref = reference.plan_reference(sizes, values, levels, L, variant, mslf=mslf, keep_order=True)
        assert fast == ref, (variant, mslf)
        check_plan(fast, sizes, values, levels, L, mslf)


# --------------------------------------------------------------------------------------------
# min_group (A18: groups of >= m records, no SA vector above 1/m) and the early refusal
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes,values,levels,L,mslf,baseline_l,min_group,blocked", [
    # baseline l = 9, one SA with 5 values: no group can be 9-diverse
    ([3] * 5, [0, 1, 2, 3, 4], [1] * 5, L3, False, 9, 1, (0, 5)),
    ([3] * 5, [0, 1, 2, 3, 4], [1] * 5, L3, False, 5, 2, None),
    # L_sl: two values of level 2 (l = 3) reach shares 2/3 < 1; a level-0 value (l = 1) fills any group
    ([4, 4], [0, 1], [2, 2], L3, True, None, 1, (0, 2)),
    ([4, 4, 1], [0, 1, 2], [2, 2, 0], L3, True, None, 2, None),
    # min_group = 2 needs two distinct SA vectors: a constant SA has one
    ([6], [0], [0], L3, True, None, 1, None),
    ([6], [0], [0], L3, True, None, 2, (None, 1)),
    ([6, 1], [0, 1], [0, 0], L3, True, None, 3, (None, 2)),
    # the second dimension blocks; empty buckets do not count
    ([2, 2, 0], [0, 0, 1, 1, 2, 2], [0, 2, 0, 2, 0, 2], L3, True, None, 1, (1, 2)),
])
def test_blocked_dimension(sizes, values, levels, L, mslf, baseline_l, min_group, blocked):
    got = bz.blocked_dimension(sizes, values, levels, L, mslf=mslf, baseline_l=baseline_l, min_group=min_group)
    assert (got if got is None else (got[0], len(got[1]))) == blocked


def test_min_group_above_the_baselines_l_is_refused():
    with pytest.raises(ValueError, match="min_group = 3 is above the baselines' l = 2"):
        bz.plan([2, 2], [0, 1], [1, 1], L3, "mbf", mslf=False, baseline_l=2, min_group=3)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bucket_tables(), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_property_min_group_bounds_every_vector_and_refusals_are_sound(table, min_group, seed):
    """Every group has at least min_group records and no bucket (SA vector) holds more than
    1/min_group of it, on top of L_sl; the fast planner equals the reference; and a request
    `blocked_dimension` refuses early is one the planner could not group at all."""
    sizes, values, levels, L = table
    B = len(sizes)
    d = len(values) // B
    top = max([max(levels[b * d:(b + 1) * d]) for b in range(B) if sizes[b]], default=0)
    for variant, mslf in ALGOS:
        base = None if mslf else max(L[top], min_group)       # what lsl passes (l raised to m)
        for tie in ("first", "random"):
            s = seed if tie == "random" else None
            p = bz.plan(sizes, values, levels, L, variant, mslf=mslf, baseline_l=base, tie=tie, seed=s,
                        min_group=min_group, keep_order=True)
            assert p == reference.plan_reference(sizes, values, levels, L, variant, mslf=mslf, baseline_l=base, tie=tie,
                                          seed=s, min_group=min_group, keep_order=True), (variant, mslf, tie)
            check_plan(p, sizes, values, levels, L, mslf, baseline_l=base)
            for G in runs.expand(p):
                assert len(G) >= min_group
                assert max(Counter(b for b, _ in G).values()) * min_group <= len(G)
            if bz.blocked_dimension(sizes, values, levels, L, mslf=mslf, baseline_l=base,
                                    min_group=min_group) is not None:
                assert p.n_groups == 0 and p.n_suppressed == sum(sizes), (variant, mslf)


@pytest.mark.parametrize("variant", inputs.VARIANTS)
def test_min_group_fits_the_group_size_where_the_papers_size_fits_none(variant):
    """A18: with min_group = 2 the level-0-only buckets (a, 0) and (b, 0) no longer form groups
    of one, and a binary SA with l = 2 on both values admits only even groups once a level-1
    value of it is present, so l_G = 3 for the level-2 group (hiv) would form nothing."""
    sizes = [10, 10, 2, 2, 6]               # (disease, adl): (a, 0), (b, 0), (hiv, 0), (hiv, 1), (c, 1)
    values = [0, 0, 1, 0, 2, 0, 2, 1, 3, 1]
    levels = [0, 0, 0, 0, 2, 0, 2, 1, 0, 1]
    paper = bz.plan(sizes, values, levels, L3, variant)
    assert 1 in paper.group_l                                  # groups of one: a whole row exposed
    L = {0: 2, 1: 2, 2: 3}                                     # the per-value reading (l0 raised)
    assert bz.plan(sizes, values, levels, L, variant).n_groups == 0
    fit = bz.plan(sizes, values, levels, L3, variant, min_group=2, keep_order=True)
    assert fit.n_groups > 0 and min(fit.group_l) >= 2 and fit.n_suppressed < sum(sizes)
    for G in runs.expand(fit):
        assert max(Counter(b for b, _ in G).values()) * 2 <= len(G)
    check_plan(fit, sizes, values, levels, L3, True)
    # min_group = 1 is the paper, exactly
    assert bz.plan(sizes, values, levels, L3, variant, min_group=1) == paper


def test_runs_are_coalesced():
    # Level-0 values only: l_G = 1, so every record is a group.  MBF takes the big bucket
    # until it is level with the small one, and once more on the tie ('first'): 41 picks
    # into groups 0..40 make one run; then the two alternate (runs of one).
    p = bz.plan([50, 10], [0, 1], [0, 0], L3, "mbf")
    assert p.n_groups == 60
    assert p.runs[0] == (0, 0, 41)
    assert p.runs[1:5] == [(1, 41, 1), (0, 42, 1), (1, 43, 1), (0, 44, 1)]
    assert p.run_lists()[2][0] == 41
    assert p == reference.plan_reference([50, 10], [0, 1], [0, 0], L3, "mbf")


def test_levels_need_not_be_contiguous_and_l_as_list():
    rng = random.Random(3)
    B, d = 15, 2
    sizes = [rng.randint(0, 4) for _ in range(B)]
    values = [rng.randrange(3) for _ in range(B * d)]
    lev_of = {(j, c): rng.choice([0, 5, 7]) for j in range(d) for c in range(3)}
    levels = [lev_of[(i % d, values[i])] for i in range(B * d)]
    L = {0: 1, 5: 2, 7: 3}
    for variant in inputs.VARIANTS:
        a = bz.plan(sizes, values, levels, L, variant)
        assert a == reference.plan_reference(sizes, values, levels, L, variant)
        check_plan(a, sizes, values, levels, L, True)
    # a list indexed by level works too
    lv = [0 if x == 0 else 1 for x in levels]
    assert bz.plan(sizes, values, lv, [1, 2], "mmdcf") == \
        bz.plan(sizes, values, lv, {0: 1, 1: 2}, "mmdcf")


def test_residual_phase_places_and_suppresses():
    # MMDCF-MSLF on a skewed table: residual records exist and are placed first fit.
    rng = random.Random(11)
    B, d = 30, 3
    sizes = [rng.choice([1, 1, 2, 3, 20]) for _ in range(B)]
    values = [rng.randrange(4) for _ in range(B * d)]
    lev_of = {(j, c): rng.randint(0, 2) for j in range(d) for c in range(4)}
    levels = [lev_of[(i % d, values[i])] for i in range(B * d)]
    found_residual = False
    for variant, mslf in ALGOS:
        p = bz.plan(sizes, values, levels, L3, variant, mslf=mslf)
        assert p == reference.plan_reference(sizes, values, levels, L3, variant, mslf=mslf)
        check_plan(p, sizes, values, levels, L3, mslf)
        found_residual |= p.residual_placed > 0
        m = bz.metrics_from_plan(p, sizes, values, levels, L3, mslf=mslf)
        assert m["sr"] == F(p.n_suppressed, sum(sizes))
    assert found_residual


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=30), st.data())
def test_run_builder_from_picks_equals_adding_one_by_one(group_l, data):
    """`RunBuilder.from_picks` (numpy) builds the same runs and per-bucket state as `add`."""
    B = 4
    order = [data.draw(st.integers(0, B - 1)) for _ in range(sum(group_l))]
    ref = runs.RunBuilder(B)
    pos = 0
    for g, lg in enumerate(group_l):
        for b in order[pos:pos + lg]:
            ref.add(b, g)
        pos += lg
    fast, pb, pg = runs.RunBuilder.from_picks(array("q", order), group_l, B)
    assert (fast.rb, fast.rg, fast.rc, fast.last) == (ref.rb, ref.rg, ref.rc, ref.last)
    assert pb.tolist() == order
    assert pg.tolist() == [g for g, lg in enumerate(group_l) for _ in range(lg)]
    # later additions (residual phase) extend the same runs
    for b, g in data.draw(st.lists(st.tuples(st.integers(0, B - 1),
                                             st.integers(0, max(len(group_l) - 1, 0))))):
        ref.add(b, g)
        fast.add(b, g)
    assert (fast.rb, fast.rg, fast.rc) == (ref.rb, ref.rg, ref.rc)


def test_residual_counts_widen_past_int16():
    """The residual phase keeps per-group value counts in int16 until a group reaches 65534
    records.  Here group 0 doubles with each residual bucket (each has a new l=2 value) up to
    131072 records; checked against a plain first-fit on dict counts."""
    K = 17
    sizes = [1, 1] + [2 ** (k - 1) for k in range(2, K + 1)]
    B = len(sizes)
    values = list(range(B))
    levels = [1] * B
    inp = inputs.prepare(sizes, values, levels, {0: 1, 1: 2}, "mbf", True, None, "first", None)
    size = [0, 0] + sizes[2:]  # buckets 0 and 1 formed group 0 in the main phase
    rb, pb, pg = runs.RunBuilder.from_picks(array("q", [0, 1]), [2], B)
    suppressed, placed, residual = residual_fast(inp, list(size), [2], rb, True, pb, pg)
    # plain first fit, record by record (A9), on the single group
    cnt, gsize, expect = Counter({0: 1, 1: 1}), 2, []
    for b in range(B):
        for _ in range(size[b]):
            if (cnt[b] + 1) * 2 <= gsize + 1:
                cnt[b] += 1
                gsize += 1
                expect.append((0, b))
    assert residual == expect
    assert placed == len(expect) == sum(sizes) - 2 and gsize == 2 ** K
    assert suppressed == [0] * B


def test_empty_inputs():
    p = bz.plan([], [], [], L3, "mbf")
    assert p.n_groups == 0 and p.runs == [] and p.suppressed == []
    p = bz.plan([0, 0], [0, 1], [0, 1], L3, "mmdcf")
    assert p.n_groups == 0 and p.suppressed == [0, 0]
    assert bz.metrics_from_plan(p, [0, 0], [0, 1], [0, 1], L3) == {"ail": 0, "sr": 0}


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,match", [
    (dict(l_of_level={0: 2, 1: 1, 2: 3}), "non-decreasing"),
    (dict(l_of_level={0: 0, 1: 2, 2: 3}), "l must be >= 1"),
    (dict(l_of_level={0: 1, 1: 2}), "level.*without an l"),
    (dict(values=[0, 0, 1]), "length mismatch"),
    (dict(levels=[1, 2, 1]), "length mismatch"),
    (dict(variant="xyz"), "unknown variant"),
    (dict(tie="last"), "unknown tie"),
    (dict(tie="random"), "seed"),
    (dict(levels=[1, 2, 2, 2]), "inconsistent levels"),
    (dict(sizes=[1, -1]), "sizes"),
    (dict(baseline_l=0, mslf=False), "baseline_l"),
    (dict(values=[0, 0.5, 0, 1]), "integer"),
])
def test_errors(kwargs, match):
    args = dict(sizes=[1, 1], values=[0, 0, 0, 1], levels=[1, 2, 1, 2], l_of_level=L3,
                variant="mbf")
    args.update(kwargs)
    for impl in (bz.plan, reference.plan_reference):
        with pytest.raises(ValueError, match=match):
            impl(**args)


class _Cancelled(Exception):
    pass


@pytest.mark.parametrize("variant", ["mbf", "msdcf", "mmdcf"])
def test_plan_calls_tick_once_per_group_so_a_cancel_stops_it(variant):
    sizes, values, levels, _, _ = table1()
    calls = []
    bz.plan(sizes, values, levels, L3, variant, tick=lambda: calls.append(1))
    assert len(calls) == 4  # Table 1 forms four groups, one tick each

    def cancel():
        raise _Cancelled
    with pytest.raises(_Cancelled):
        bz.plan(sizes, values, levels, L3, variant, tick=cancel)
