"""Persons, not rows, in the generalization engines (issue 11, finding 3): Mondrian judges parts
over persons (mondrian D9) and keeps them whole on request (D10), GAA's k counts persons (gaa
G9), semantic rules read persons (semantic S9), (alpha, k) bounds persons holding a value over
persons (models).  Each property is checked here by an independent count over the rows."""

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pganon_engine.methods.generalization import gaa as ga
from pganon_engine.models import predicates as models
from pganon_engine.methods.generalization import mondrian as mo
from pganon_engine.methods.generalization import mondrian_cuts as mc
from pganon_engine.methods.generalization import mondrian_predicates as mp
from pganon_engine.methods.generalization import mondrian_schema as ms
from pganon_engine.methods.semantic import semantic as sm
from pganon_engine.core.errors import EngineError
from pganon_engine.hierarchy.tree import Hierarchy


def _visits(seed, n_persons, n_values=4):
    """Persons with 1-6 rows each: age fixed per person, day and SA varying per row."""
    rng = np.random.default_rng(seed)
    per = np.repeat(np.arange(n_persons), rng.integers(1, 7, n_persons))
    age = rng.integers(0, 30, n_persons)[per]
    day = rng.integers(0, 50, per.size)
    sa = rng.integers(0, n_values, per.size)
    return per, age, day, sa


def _classes(partition, per):
    return [per[partition == c] for c in range(int(partition.max()) + 1)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n_persons=st.integers(6, 60), k=st.integers(1, 6),
       mode=st.sampled_from(["strict", "relaxed"]), whole=st.booleans())
def test_every_mondrian_class_holds_k_persons_and_whole_persons_stay_whole(seed, n_persons, k, mode, whole):
    per, age, day, sa = _visits(seed, n_persons)
    k = min(k, n_persons)
    res = mo.mondrian([age, day], [sa], kinds=["numeric", "numeric"], sizes=[30, 50], sa_sizes=[4], k=k,
                      persons=per, whole=whole, mode=mode)
    classes = _classes(res.partition, per)
    assert min(len(set(c.tolist())) for c in classes) >= k
    if whole:
        homes = Counter(p for c in classes for p in set(c.tolist()))
        assert max(homes.values()) == 1  # every person in exactly one class


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_persons=st.integers(8, 50), l=st.integers(1, 3))
def test_l_over_persons_counts_values_held_by_the_class_persons(seed, n_persons, l):
    per, age, day, sa = _visits(seed, n_persons)
    res = mo.mondrian([age, day], [sa], kinds=["numeric", "numeric"], sizes=[30, 50], sa_sizes=[4], k=2, l=l,
                      persons=per, whole=True)
    for c in range(res.n_partitions):
        rows = res.partition == c
        assert len(set(sa[rows].tolist())) >= l and len(set(per[rows].tolist())) >= 2


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 80), k=st.integers(1, 5),
       mode=st.sampled_from(["strict", "relaxed"]), whole=st.booleans())
def test_one_person_per_row_gives_the_record_release(seed, n, k, mode, whole):
    """D9 changes only what a part is judged on: with every row its own person nothing changes."""
    rng = np.random.default_rng(seed)
    age, day, sa = rng.integers(0, 9, n), rng.integers(0, 5, n), rng.integers(0, 3, n)
    k = min(k, n)
    kw = dict(kinds=["numeric", "ordinal"], sizes=[9, 5], sa_sizes=[3], k=k, l=1, mode=mode)
    plain = mo.mondrian([age, day], [sa], **kw)
    persons = mo.mondrian([age, day], [sa], persons=rng.permutation(n), whole=whole, **kw)
    assert np.array_equal(plain.partition, persons.partition)


def test_a_record_k_class_can_hide_fewer_persons_and_the_person_run_refuses_it():
    # four rows: persons 0, 0, 1, 1 at ages 0, 1, 2, 3.  Records k = 2 cuts at age 1 into
    # {0, 0} and {1, 1}: one person each.  Over persons no cut leaves 2 persons per part.
    age, per = np.array([0, 1, 2, 3]), np.array([0, 0, 1, 1])
    rec = mo.mondrian([age], kinds=["numeric"], k=2)
    assert rec.n_partitions == 2 and {len(set(c)) for c in _classes(rec.partition, per)} == {1}
    assert mo.mondrian([age], kinds=["numeric"], k=2, persons=per).n_partitions == 1


def test_whole_refuses_a_cut_through_a_person_that_plain_persons_allow():
    # person 0 has ages 0 and 3, persons 1, 2 have ages 1, 2.  Cut age <= 1 | > 1: parts
    # {p0, p1} and {p2, p0}: 2 persons each, but p0 is in both.
    age, per = np.array([0, 3, 1, 2]), np.array([0, 0, 1, 2])
    assert mo.mondrian([age], kinds=["numeric"], k=2, persons=per).n_partitions == 2
    assert mo.mondrian([age], kinds=["numeric"], k=2, persons=per, whole=True).n_partitions == 1


def test_k_above_the_persons_and_whole_without_persons_are_refused():
    with pytest.raises(EngineError, match=r"k = 3 is larger than the 2 persons of the table \(4 rows\)"):
        mo.mondrian([[0, 1, 2, 3]], kinds=["numeric"], k=3, persons=[0, 0, 1, 1])
    with pytest.raises(EngineError, match="whole=True needs persons"):
        mo.mondrian([[0, 1]], kinds=["numeric"], k=1, whole=True)
    with pytest.raises(EngineError, match="persons has 1 codes for 2 rows"):
        mo.mondrian([[0, 1]], kinds=["numeric"], k=1, persons=[0])


def test_cut_candidates_are_the_order_choose_cut_tries():
    per, age, day, sa = _visits(7, 40)
    sc = ms.schema(["numeric", "numeric"], [30, 50], sa_sizes=[4])
    pred = mp.all_of(mp.k_anonymity(5), mp.distinct_l_diversity(3))
    fs = mc.freq_sets([age, day], [sa], sc)
    cands = list(mc.cut_candidates(fs, sc))
    assert [c.dim for c, _, _ in cands] == [0, 1]  # age is wider (29/29 vs 49/49 tie -> QI 0 first)
    first = next(c for c, sizes, hists in cands if mc.parts_pass(pred, sizes, hists, sc))
    assert mc.choose_cut(fs, sc, pred) == first


def test_alpha_over_persons_is_persons_holding_a_value_over_persons():
    # person A: five flu records; persons B and C: one cancer record each.  Records: flu 5/7.
    # Persons (mondrian D9 hands the predicate 3 persons, flu held by 1, cancer by 2): 2/3.
    test = models.predicate("alpha_k_anonymity", {"alpha": 0.7})
    assert not test(7, {"d": {"flu": 5, "cancer": 2}})
    assert test(3, {"d": {"flu": 1, "cancer": 2}})
    assert not models.predicate("alpha_k_anonymity", {"alpha": 0.6})(3, {"d": {"flu": 1, "cancer": 2}})


AGE = Hierarchy.from_paths("age", [[str(a), f"{a // 5 * 5}s", f"{a // 15 * 15}+", "*"] for a in range(30)])
DAY = Hierarchy.from_paths("day", [[f"d{d}", f"w{d // 7}", f"m{d // 28}", "*"] for d in range(50)])


def _tuples(per, age, day):
    groups = {}
    for p, a, d in zip(per.tolist(), age.tolist(), day.tolist()):
        g = groups.setdefault((str(a), f"d{d}"), [0, set()])
        g[0] += 1
        g[1].add(p)
    tuples = list(groups)
    return tuples, [groups[t][0] for t in tuples], [groups[t][1] for t in tuples]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n_persons=st.integers(3, 40), k=st.integers(1, 6),
       strategy=st.sampled_from(["S1", "S3", "S6"]))
def test_every_gaa_class_holds_k_persons(seed, n_persons, k, strategy):
    per, age, day, sa = _visits(seed, n_persons)
    tuples, counts, persons = _tuples(per, age, day)
    k = min(k, n_persons)
    hists = [{"x": c} for c in counts]
    res = ga.gaa(tuples, counts, [AGE, DAY], k, strategy=strategy, histograms=hists, persons=persons)
    held = {}
    for i, g in enumerate(res.class_of):
        held.setdefault(g, set()).update(persons[i])
    assert min(len(h) for h in held.values()) >= k
    assert res.options["k_scope"] == "persons"


def test_gaa_with_one_person_per_row_is_the_record_run():
    per, age, day, sa = _visits(3, 30)
    tuples, counts, _ = _tuples(per, age, day)
    rows = iter(range(10**6))
    persons = [{next(rows) for _ in range(c)} for c in counts]
    a = ga.gaa(tuples, counts, [AGE, DAY], 4)
    b = ga.gaa(tuples, counts, [AGE, DAY], 4, persons=persons)
    assert (a.class_of, a.classes) == (b.class_of, b.classes)


def test_gaa_refuses_k_above_the_persons():
    with pytest.raises(EngineError, match=r"k = 3 is larger than the number of persons \(2, 4 rows\)"):
        ga.gaa([("1", "d1"), ("2", "d2")], [2, 2], [AGE, DAY], 3, persons=[{"a", "b"}, {"a"}])


RULE = [{"id": "H", "sa": "dx", "op": "in", "values": ["angina"], "category": "heart disease"}]
QI = [{"name": "age", "kind": "numeric", "lo": 0, "hi": 10}]


def test_a_rule_every_person_of_a_class_matches_is_effective_over_persons():
    # class 0: persons P1 {angina, flu} (2 records), P2 {angina} (1 record): records 2/3 match
    # (not effective at coverage 1), persons 2/2 hold an angina value (effective).  Class 1:
    # persons P3 {flu}, P4 {cold}.  The merge gives 2 of 4 persons: no rule is effective.
    cls = [{"n": 3, "qi": [(0, 4)], "sa": {"dx": {"angina": 2, "flu": 1}},
            "persons": {"dx": {frozenset({"angina", "flu"}): 1, frozenset({"angina"}): 1}}},
           {"n": 2, "qi": [(5, 9)], "sa": {"dx": {"flu": 1, "cold": 1}},
            "persons": {"dx": {frozenset({"flu"}): 1, frozenset({"cold"}): 1}}}]
    plain = [{x: v for x, v in c.items() if x != "persons"} for c in cls]
    assert sm.check(plain, RULE) == []
    assert [f["ec"] for f in sm.check(cls, RULE)] == [0]
    res = sm.anonymize(cls, QI, RULE)
    assert len(res.classes) == 1 and res.classes[0].persons["dx"] == Counter(
        {frozenset({"angina", "flu"}): 1, frozenset({"angina"}): 1, frozenset({"flu"}): 1, frozenset({"cold"}): 1})


def test_semantic_person_sets_must_be_given_for_every_class_and_add_up():
    one = {"n": 1, "qi": [(0, 0)], "sa": {"dx": {"flu": 1}}, "persons": {"dx": {frozenset({"flu"}): 1}}}
    with pytest.raises(EngineError, match="class 1 lacks the persons' value sets, class 0 has them"):
        sm.check([one, {"n": 1, "qi": [(1, 1)], "sa": {"dx": {"flu": 1}}}], RULE)
    with pytest.raises(EngineError, match="more than its 1 records"):
        sm.check([dict(one, persons={"dx": {frozenset({"flu"}): 2}})], RULE)
    with pytest.raises(EngineError, match="holds values the class's counts lack"):
        sm.check([dict(one, persons={"dx": {frozenset({"hiv"}): 1}})], RULE)


def test_the_families_promise_persons():
    from pganon_engine.methods.generalization import family as generalized
    from pganon_engine.methods.person import family as person
    from pganon_engine.methods.semantic import family as semantic_release
    assert generalized.PROTECTS_PERSONS and semantic_release.PROTECTS_PERSONS and person.PROTECTS_PERSONS
