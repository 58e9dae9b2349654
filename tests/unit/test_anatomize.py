"""Unit tests for pganon_engine.methods.anatomy.anatomize, the Anatomy-style bucketizer shared by Anatomy and
Rating (spec 003-msa-comparative.md §2.4, §2.8, §6.1 M8, A18, A19).

Hand-checked fixtures first, then the stretch planner against the literal per-round
transcription (`plan_reference`) on random inputs, the Anatomy properties, the plan's fit with
the set-based assign step, a 10^6-record plan that must stay small, and bad input.
"""

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pganon_engine.methods.anatomy import anatomize as an
from pganon_engine.methods.bucketization import runs
from pganon_engine.methods.bucketization import family as lsl
from pganon_engine.core.errors import EngineError


def groups(plan):
    """Per group id, the set of (bucket, FIFO rank) it receives."""
    return [frozenset(g) for g in runs.expand(plan)]


def compositions(plan):
    """The multiset of groups as bucket sets (ids and ranks ignored)."""
    return Counter(frozenset(b for b, _ in g) for g in runs.expand(plan))


def check_anatomy(plan, sizes, size):
    """The Anatomy guarantees, read off the runs alone: every group has >= size records, all of
    different buckets; each bucket's first (size - suppressed) records are placed exactly once;
    n_groups = floor(published / size)."""
    eff = [s - x for s, x in zip(sizes, plan.suppressed)]
    got = runs.expand(plan)
    assert len(got) == plan.n_groups
    for g in got:
        bs = [b for b, _ in g]
        assert len(bs) >= size
        assert len(set(bs)) == len(bs)
    placed = Counter(b for g in got for b, _ in g)
    ranks = {b: sorted(r for g in got for bb, r in g if bb == b) for b in placed}
    for b, s in enumerate(eff):
        assert placed.get(b, 0) == s
        assert ranks.get(b, []) == list(range(s))
    assert plan.n_groups == sum(eff) // size
    assert plan.main_picks == plan.n_groups * size
    assert plan.residual_placed == sum(eff) - plan.main_picks
    assert plan.n_suppressed == sum(plan.suppressed)


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


def test_cp_column_of_table5_in_creation_order():
    """Spec §4.7, cp with SC 2: buckets in first-appearance order Ty(t1), asy(t2, t8, t10),
    aty(t3, t4, t6, t9), non(t5, t7) = sizes [1, 3, 4, 2].  Largest two each round, ties to the
    earlier value: {aty, asy}, {aty, asy} (asy beats non at 2-2), {aty, non}, {Ty, asy} (all at
    1), {aty, non}; no residue.  FIFO ranks give the spec's G1..G5."""
    p = an.plan([1, 3, 4, 2], 2, order="creation")
    assert groups(p) == [{(1, 0), (2, 0)}, {(2, 1), (1, 1)}, {(3, 0), (2, 2)},
                         {(0, 0), (1, 2)}, {(3, 1), (2, 3)}]
    check_anatomy(p, [1, 3, 4, 2], 2)


def test_compact_order_keeps_the_groups_and_renumbers_them():
    """Same input, compact ids: the same five groups (as bucket sets and FIFO-free), the two
    {aty, non} groups now adjacent, so non needs one run instead of two."""
    c = an.plan([1, 3, 4, 2], 2)
    assert compositions(c) == compositions(an.plan([1, 3, 4, 2], 2, order="creation"))
    assert sum(1 for b in c.run_bucket if b == 3) == 1
    check_anatomy(c, [1, 3, 4, 2], 2)


def test_residue_goes_to_the_last_created_group_without_its_value():
    """Sizes [2, 2, 1], l = 2: {0, 1}, {0, 1}, then bucket 2 alone: its residue joins the last
    group (1), which lacks value 2."""
    p = an.plan([2, 2, 1], 2, order="creation")
    assert groups(p) == [{(0, 0), (1, 0)}, {(0, 1), (1, 1), (2, 0)}]


def test_residue_skips_the_last_group_when_it_holds_the_value():
    """[2, 2, 2, 2], l = 3: {0, 1, 2}, then bucket 3 (2 left) leads: {3, 0, 1}; buckets 2 and
    3 keep one record each.  Residue 2 joins the last group (no 2 in it); residue 3 cannot (it
    holds a 3) and joins group 0."""
    p = an.plan([2, 2, 2, 2], 3, order="creation")
    assert groups(p) == [{(0, 0), (1, 0), (2, 0), (3, 1)}, {(3, 0), (0, 1), (1, 1), (2, 1)}]


def test_ineligible_input_raises_naming_the_value():
    """[5, 1, 1] with l = 2: value 0 occurs 5 times of 7, more than 7/2."""
    with pytest.raises(EngineError) as e:
        an.plan([5, 1, 1], 2)
    assert e.value.sqlstate == "PA005"
    assert "value 0 occurs in 5 of 7 records" in str(e.value)
    assert "suppress" in e.value.hint


def test_suppress_leaves_out_the_fewest_records():
    """[5, 1, 1], l = 2: the largest cap t with 2t <= min(5, t) + 2 min(1, t) is t = 2 (4 <= 4;
    t = 3 gives 6 > 5), so 3 records of value 0 are left out (its last ones) and 4 form two
    groups."""
    assert an.eligibility_cap([5, 1, 1], 2) == 2
    p = an.plan([5, 1, 1], 2, eligibility="suppress")
    assert p.suppressed == [3, 0, 0] and p.n_suppressed == 3
    assert p.n_groups == 2
    check_anatomy(p, [5, 1, 1], 2)


def test_suppress_with_too_few_values_leaves_out_everything():
    p = an.plan([4, 4], 3, eligibility="suppress")
    assert p.suppressed == [4, 4] and p.n_groups == 0 and p.runs == []


def test_eligible_input_suppresses_nothing():
    assert an.eligibility_cap([3, 3, 3], 3) == 3
    p = an.plan([3, 3, 3], 3, eligibility="suppress")
    assert p.n_suppressed == 0 and p.n_groups == 3


def test_size_one_makes_one_group_per_record():
    p = an.plan([3, 0, 2], 1)
    check_anatomy(p, [3, 0, 2], 1)
    assert p.n_groups == 5


def test_empty_input_gives_an_empty_plan():
    for sizes in ([], [0, 0]):
        p = an.plan(sizes, 2)
        assert p.n_groups == 0 and p.runs == [] and p.n_suppressed == 0


def test_group_l_is_constant_without_a_list():
    p = an.plan([4, 4, 4], 3)
    assert isinstance(p.group_l, an.Repeat)
    assert len(p.group_l) == 4 and list(p.group_l) == [3, 3, 3, 3] and p.group_l == [3] * 4
    assert p.group_l[-1] == 3 and len(p.group_l[1:3]) == 2
    with pytest.raises(IndexError):
        p.group_l[4]


def test_runs_feed_the_set_based_assign_step():
    """lsl.run_columns (the assign step's input) must give every placed record of a bucket one
    slot: per bucket the runs' rank ranges tile 0 .. size - suppressed - 1."""
    sizes = [7, 5, 5, 3, 2, 1]
    p = an.plan(sizes, 3)
    rb, rs, rg, rc = lsl.run_columns(p)
    for b, s in enumerate(sizes):
        sel = rb == b
        spans = sorted(zip(rs[sel].tolist(), rc[sel].tolist()))
        pos = 0
        for start, count in spans:
            assert start == pos
            pos += count
        assert pos == s - p.suppressed[b]
    assert rg.min() >= 0 and (rg + rc - 1).max() < p.n_groups


# --------------------------------------------------------------------------------------------
# The stretch planner against the literal transcription
# --------------------------------------------------------------------------------------------

SIZES = st.lists(st.integers(0, 25), min_size=0, max_size=12)
OPTIONS = st.fixed_dictionaries({
    "tie": st.sampled_from(an.TIES), "residue": st.sampled_from(an.RESIDUES),
    "eligibility": st.sampled_from(an.ELIGIBILITY), "seed": st.integers(0, 10 ** 6)})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=SIZES, size=st.integers(1, 6), opt=OPTIONS)
def test_creation_order_equals_the_literal_rounds(sizes, size, opt):
    """Same groups, same ids, same FIFO ranks as sorting every bucket every round, for every
    tie, residue and eligibility rule (eligible or not)."""
    try:
        ref = an.plan_reference(sizes, size, **opt)
    except EngineError as e:
        assert e.sqlstate == "PA005" and opt["eligibility"] == "error"
        with pytest.raises(EngineError):
            an.plan(sizes, size, order="creation", **opt)
        return
    got = an.plan(sizes, size, order="creation", **opt)
    assert groups(got) == groups(ref)
    assert (got.n_groups, got.suppressed, got.residual_placed) == \
        (ref.n_groups, ref.suppressed, ref.residual_placed)
    check_anatomy(got, sizes, size)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(0, 60), min_size=1, max_size=25), size=st.integers(1, 8),
       tie=st.sampled_from(an.TIES), seed=st.integers(0, 99))
def test_compact_order_has_the_literal_groups(sizes, size, tie, seed):
    """Compact ids only renumber: the multiset of group compositions equals the literal run's
    (residue 'last' is defined on creation order in both).  (Fewer runs than creation order is
    what compact buys at scale, not on every tiny input: sizes [1, 2, 2] with size 2 need 4
    compact runs against 3; the run count at scale is tested below.)"""
    kw = dict(tie=tie, seed=seed, eligibility="suppress")
    got = an.plan(sizes, size, **kw)
    ref = an.plan_reference(sizes, size, **kw)
    assert compositions(got) == compositions(ref)
    assert got.n_groups == ref.n_groups and got.suppressed == ref.suppressed
    check_anatomy(got, sizes, size)


@settings(max_examples=100, deadline=None)
@given(sizes=SIZES, size=st.integers(1, 5), seed=st.integers(0, 99))
def test_random_rules_are_reproducible(sizes, size, seed):
    kw = dict(tie="random", residue="random", seed=seed, eligibility="suppress")
    a, b = an.plan(sizes, size, **kw), an.plan(sizes, size, **kw)
    assert a.runs == b.runs
    check_anatomy(a, sizes, size)


def test_random_residue_draws_among_eligible_groups():
    """Four equal buckets and one extra record, l = 2, over many seeds: the residue of value 4
    lands in every one of the groups (none holds value 4), never in two at once."""
    seen = set()
    for seed in range(60):
        p = an.plan([2, 2, 2, 2, 1], 2, residue="random", seed=seed)
        check_anatomy(p, [2, 2, 2, 2, 1], 2)
        (g,) = [i for i, grp in enumerate(runs.expand(p)) if any(b == 4 for b, _ in grp)]
        seen.add(g)
    assert seen == set(range(4))


def test_random_ties_follow_one_seeded_priority_order():
    """tie='random' breaks every tie by one shuffled order: on six equal buckets at l = 2 the
    first group is the two buckets that shuffle ranks first, the same for the same seed."""
    firsts = set()
    for seed in range(30):
        p = an.plan([1] * 6, 2, tie="random", seed=seed, order="creation")
        firsts.add(frozenset(b for b, _ in runs.expand(p)[0]))
    assert len(firsts) > 1


# --------------------------------------------------------------------------------------------
# Scale: the plan grows with buckets and runs, not rows
# --------------------------------------------------------------------------------------------


def zipf_sizes(n, B, s=1.0):
    w = 1.0 / np.arange(1, B + 1) ** s
    sizes = np.maximum(np.floor(w / w.sum() * n).astype(np.int64), 1)
    sizes[0] += n - int(sizes.sum())  # exactly n records
    return [int(x) for x in sizes]


@pytest.mark.parametrize("size", [3, 5])
def test_a_million_skewed_records_plan_in_few_runs(size):
    """10^6 records over 500 Zipf buckets: the tie level rotates (creation order would need a
    run for nearly every pick), but compact ids need far fewer runs than records, and the plan
    is still a valid Anatomy grouping (checked on the expanded picks with numpy)."""
    n, B = 10 ** 6, 500
    sizes = zipf_sizes(n, B)
    assert max(sizes) * size <= n  # eligible
    p = an.plan(sizes, size)
    runs = len(p.run_bucket)
    assert runs < n // 100
    rb = np.frombuffer(p.run_bucket, dtype=np.int64)
    rg = np.frombuffer(p.run_group, dtype=np.int64)
    rc = np.frombuffer(p.run_count, dtype=np.int64)
    assert int(rc.sum()) == n
    assert np.array_equal(np.bincount(rb, weights=rc, minlength=B).astype(np.int64), sizes)
    start = np.repeat(np.cumsum(rc) - rc, rc)
    pg = np.repeat(rg, rc) + (np.arange(n) - start)
    pb = np.repeat(rb, rc)
    assert p.n_groups == n // size
    per_group = np.bincount(pg, minlength=p.n_groups)
    assert per_group.min() >= size and per_group.sum() == n
    # no group holds a bucket twice
    assert np.unique(pg * B + pb).size == n


def test_identical_rounds_become_one_run_per_bucket():
    """Three buckets of 10^5 and l = 3: every round takes the same set, so three runs."""
    p = an.plan([10 ** 5] * 3, 3, order="creation")
    assert p.runs == [(0, 0, 10 ** 5), (1, 0, 10 ** 5), (2, 0, 10 ** 5)]


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, fragment", [
    (lambda: an.plan([1, -1], 2), "sizes must be >= 0"),
    (lambda: an.plan([1, 2], 0), "must be >= 1"),
    (lambda: an.plan([1, 2.5], 2), "must be an integer"),
    (lambda: an.plan([1, 2], True), "must be an integer"),
    (lambda: an.plan([1, 2], 2, tie="last"), "unknown tie rule"),
    (lambda: an.plan([1, 2], 2, residue="first"), "unknown residue rule"),
    (lambda: an.plan([1, 2], 2, eligibility="ignore"), "unknown eligibility rule"),
    (lambda: an.plan([1, 2], 2, order="random"), "unknown order rule"),
    (lambda: an.plan([1, 2], 2, tie="random"), "need an integer"),
    (lambda: an.plan([1, 2], 2, residue="random", seed=1.5), "need an integer"),
])
def test_bad_parameters_are_refused(call, fragment):
    with pytest.raises(EngineError) as e:
        call()
    assert e.value.sqlstate == "PA002"
    assert fragment in str(e.value)


@pytest.mark.parametrize("eligibility,tail", [
    ("suppress", "; eligibility suppress would leave 0 of 70 rows"),
    ("error", "; no group can be formed from its 70 rows"),
])
def test_anatomy_refuses_l_above_the_distinct_vectors_before_planning(eligibility, tail):
    """Issue 11 finding 5: l = 25 over 7 distinct vectors would publish nothing (with
    'suppress' the planner suppresses every record); anatomy refuses it from the counts."""
    from pganon_engine.methods.anatomy import family as anatomy
    assert an.plan([10] * 7, 25, eligibility="suppress").n_groups == 0    # what would have been published
    with pytest.raises(EngineError) as e:
        anatomy.refuse_vacuous({"l": 25, "eligibility": eligibility}, [10] * 7)
    assert e.value.sqlstate == "PA005"
    assert str(e.value) == "anatomy l = 25 needs 25 distinct sensitive vectors per group; the table has 7" + tail
    assert anatomy.refuse_vacuous({"l": 7, "eligibility": eligibility}, [10] * 7) is None
