"""Unit tests for pganon_engine.models.ir_models, hitting_sets and ir_states (spec 002 §2.3-2.9,
§3.3-3.4, §6 items 1-7).

Fixtures: the paper's Table 2 patients grouped as Tables 3 and 4 (the §4.4 per-class table),
the BHS example of §4.9 and Def. 3.5's example.  Properties: the hitting-set and counting tests
equal brute-force enumeration of the reasoning space on random small classes, and the
incremental states equal the batch tests."""

from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pganon_engine.models import hitting_sets as HS, ir_models as M, ir_states as IS
from pganon_engine.core.errors import EngineError
from pganon_engine.core.interrupts import ticking

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Table 2: record -> (Id_num, Disease)
REC = {"r1": (1, "Hypertension"), "r2": (1, "Heart"), "r3": (2, "Cancer"), "r4": (3, "Hypertension"),
       "r5": (4, "Hypertension"), "r6": (4, "Diabetes"), "r7": (5, "HIV"), "r8": (6, "Leukaemia"),
       "r9": (6, "Heart"), "r10": (7, "Syphilis")}


def records_of(persons):
    """{person: [record ids]} of the given Id_nums, records in Table 2 order."""
    out = {}
    for r, (p, _) in REC.items():
        if p in persons:
            out.setdefault(p, []).append(r)
    return {p: out[p] for p in sorted(out)}


def values_of(persons):
    return {p: [REC[r][1] for r in rs] for p, rs in records_of(persons).items()}


T3Q1, T3Q2 = {2, 5, 6, 7}, {1, 3, 4}
T4Q1, T4Q2 = {4, 6, 7}, {1, 2, 3, 5}
MID = {1, 2, 3}
KL, EL, AB = {"k": 3, "l": 3}, {"l": 3}, {"alpha": 0.4, "beta": 0.6}

# §4.4: records, n_Q, m_Q, min-HS, |Q_rea|, MaxRec/|Q|, MaxSen, MaxSen/|Q|, MaxSen/n_Q,
#       IR(3,3), EIR 3-div, IR(.4,.6), EIR(.4,.6)
TABLE_4_4 = [
    (T3Q1, 5, 4, 5, 4, 2, Fraction(2, 5), 1, Fraction(1, 5), Fraction(1, 4), True, True, True, True),
    (T3Q2, 5, 3, 3, 1, 4, Fraction(2, 5), 3, Fraction(3, 5), Fraction(1), True, False, True, False),
    (T4Q1, 5, 3, 5, 3, 4, Fraction(2, 5), 1, Fraction(1, 5), Fraction(1, 3), True, True, True, True),
    (T4Q2, 5, 4, 4, 3, 2, Fraction(2, 5), 2, Fraction(2, 5), Fraction(2, 4), True, True, True, True),
    (MID, 4, 3, 3, 2, 2, Fraction(2, 4), 2, Fraction(2, 4), Fraction(2, 3), True, False, False, False),
]


# --------------------------------------------------------------------------------------------
# §6 items 1-3: the §4.4 table
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("row", TABLE_4_4, ids=["T3-Q1", "T3-Q2", "T4-Q1", "T4-Q2", "intermediate"])
def test_table_4_4_counts(row):
    persons, recs, n, m, mhs, space, maxrec, maxsen, sen_rec, sen_per = row[:10]
    cls = values_of(persons)
    s = M.class_stats(cls)
    assert (s.n_records, s.n_persons, s.m, s.space) == (recs, n, m, space)
    assert Fraction(s.max_records, s.n_records) == maxrec
    assert s.max_value_records == s.max_value_persons == maxsen
    assert Fraction(s.max_value_records, s.n_records) == sen_rec
    assert Fraction(s.max_value_persons, s.n_persons) == sen_per
    assert HS.min_hs_size([set(v) for v in cls.values()]) == mhs
    assert len(HS.min_hitting_set([set(v) for v in cls.values()])) == mhs


@pytest.mark.parametrize("row", TABLE_4_4, ids=["T3-Q1", "T3-Q2", "T4-Q1", "T4-Q2", "intermediate"])
def test_table_4_4_models(row):
    persons = row[0]
    ir_kl, eir_l, ir_ab, eir_ab = row[10:]
    cls = values_of(persons)
    assert M.ir_kl(cls, 3, 3) is ir_kl
    assert M.eir_l(cls, 3) is eir_l
    assert M.ir_ab(cls, 0.4, 0.6) is ir_ab
    assert M.eir_ab(cls, 0.4, 0.6) is eir_ab
    assert [M.holds(m, p, cls) for m, p in (("kl", KL), ("el", EL), ("ab", AB), ("eab", AB))] == \
        [ir_kl, eir_l, ir_ab, eir_ab]


def test_table3_q2_is_ir_but_not_eir():
    """The paper's motivating claim: Q2 of Table 3 meets IR (3,3) and IR (0.4,0.6) but every
    person in it has Hypertension: min-HS = {Hypertension}, and 3/3 = 1 > 0.6."""
    cls = values_of(T3Q2)
    assert HS.min_hitting_set([set(v) for v in cls.values()]) == {"Hypertension"}
    assert M.ir_kl(cls, 3, 3) and M.ir_ab(cls, 0.4, 0.6)
    assert not M.eir_l(cls, 3) and not M.eir_ab(cls, 0.4, 0.6)
    assert M.eir_l(cls, 1) and not M.eir_l(cls, 2)


def test_ir_beta_counts_records_and_eir_beta_persons():
    """|R(s)|/|Q| (records) vs |P(s)|/n_Q (persons): T4-Q2 has Hyp twice in 5 records of 4
    persons: 2/5 <= 0.4 holds for IR, 2/4 > 0.4 fails for EIR."""
    cls = values_of(T4Q2)
    assert M.ir_ab(cls, 0.4, 0.4) and not M.eir_ab(cls, 0.4, 0.4)
    assert M.eir_ab(cls, 0.4, 0.5)
    assert not M.ir_ab(cls, 0.39, 0.6)  # alpha: Mike's 2 records of 5


def test_ratio_compares_like_models_m2():
    """3/5 <= 0.6 although the double 0.6 is below 3/5 (I2); exact with a Fraction."""
    cls = values_of(T3Q2)
    assert M.ir_ab(cls, 0.4, 0.6)
    assert M.ir_ab(cls, Fraction(2, 5), Fraction(3, 5))
    assert not M.ir_ab(cls, Fraction(2, 5), Fraction(3, 5) - Fraction(1, 10 ** 12))


def test_vulnerable_share_of_table3_is_half():
    t3 = {"Q1": values_of(T3Q1), "Q2": values_of(T3Q2)}
    for model, params in (("kl", KL), ("el", EL), ("ab", AB), ("eab", AB)):
        v = M.vulnerability(t3, model, params)
        assert v.share == Fraction(1, 2)
        assert v.vulnerable == ("Q2",)
    t4 = {"Q1": values_of(T4Q1), "Q2": values_of(T4Q2)}
    assert M.vulnerability(t4, "kl", KL).share == 0
    assert M.vulnerability(t4, "ab", AB).n_vulnerable == 0


def test_vulnerable_kl_family_uses_k_equal_l_by_default():
    """The intermediate EC {1,2,3} of DAnonyIR_kl is IR (3,3) but only min-HS 2."""
    v = M.vulnerability({"x": values_of(MID)}, "el", {"l": 3})
    assert (v.n_classes, v.n_vulnerable) == (1, 1)
    assert M.vulnerability({"x": values_of(MID)}, "kl", {"k": 4, "l": 3}).n_vulnerable == 0


# --------------------------------------------------------------------------------------------
# Item 4: reasoning spaces
# --------------------------------------------------------------------------------------------


def test_reasoning_space_of_table3_q2():
    space = M.reasoning_space(records_of(T3Q2))
    assert len(space) == 4
    assert {frozenset(rs) for rs in space} == {frozenset(s) for s in (
        {"r1", "r4", "r5"}, {"r1", "r4", "r6"}, {"r2", "r4", "r5"}, {"r2", "r4", "r6"})}


def test_reasoning_space_of_table4_q2():
    space = M.reasoning_space(records_of(T4Q2))
    assert {frozenset(rs) for rs in space} == {frozenset({"r1", "r3", "r4", "r7"}),
                                               frozenset({"r2", "r3", "r4", "r7"})}
    distinct = sorted(len({REC[r][1] for r in rs}) for rs in space)
    assert distinct == [3, 4]
    assert M.brute_min_distinct(values_of(T4Q2)) == 3


def test_brute_force_on_table3_q2():
    cls = values_of(T3Q2)
    assert M.brute_min_distinct(cls) == 1
    assert M.brute_max_share(cls) == 1


# --------------------------------------------------------------------------------------------
# Item 5: exactness against brute force (properties)
# --------------------------------------------------------------------------------------------

VALUES = st.integers(min_value=0, max_value=6)
CLASS = st.lists(st.lists(VALUES, min_size=1, max_size=4, unique=True), min_size=1, max_size=6)


@PROPS
@given(CLASS)
def test_min_hs_equals_min_distinct_over_reasoning_sets(persons):
    cls = dict(enumerate(persons))
    brute = M.brute_min_distinct(cls)
    fam = [set(v) for v in persons]
    assert HS.min_hs_size(fam) == brute
    h = HS.min_hitting_set(fam)
    assert len(h) == brute and all(h & s for s in fam)
    for l in range(1, 8):
        assert M.eir_l(cls, l) is (brute >= l)
        assert HS.min_hs_size(fam, cap=l) == min(brute, l)


@PROPS
@given(CLASS, st.integers(1, 10), st.integers(1, 10))
def test_eir_ab_equals_brute_force_over_reasoning_sets(persons, a, b):
    cls = dict(enumerate(persons))
    alpha, beta = Fraction(a, 10), Fraction(b, 10)
    n_rec = sum(len(v) for v in persons)
    brute = (all(Fraction(len(v), n_rec) <= alpha for v in persons)
             and M.brute_max_share(cls) <= beta)
    assert M.eir_ab(cls, alpha, beta) is brute
    assert M.class_stats(cls).max_value_persons == max(max(Counter(rs).values())
                                                       for rs in M.reasoning_space(cls))


@PROPS
@given(CLASS)
def test_bhs_and_berge_contain_a_minimum_hitting_set(persons):
    fam = [set(v) for v in persons]
    brute = M.brute_min_distinct(dict(enumerate(persons)))
    for family in (HS.bhs(fam), HS.minimal_hitting_sets(fam)):
        assert all(all(h & s for s in fam) for h in family)
        assert min(len(h) for h in family) == brute
    berge = HS.minimal_hitting_sets(fam)
    # BHS (the paper's Algorithm 3, literally) may return a non-minimal hitting set (hypothesis
    # found {1, 4, 6} for [[0,2,6],[0,1,2,6],[0,3,4,5],[1,2,3,4],[6,0,1]], where {4, 6} hits all):
    # what it promises is a family that contains a minimum one; its smallest sets are minimal
    bhs = HS.bhs(fam)
    assert all(any(b <= h for b in berge) for h in bhs)
    assert {h for h in bhs if len(h) == brute} <= set(berge)
    # Berge's family is every minimal hitting set: check against all subsets of the values
    universe = sorted(set().union(*fam))
    minimal = set()
    for mask in range(1 << len(universe)):
        h = frozenset(v for i, v in enumerate(universe) if mask >> i & 1)
        if all(h & s for s in fam) and not any(all((h - {x}) & s for s in fam) for x in h):
            minimal.add(h)
    assert set(berge) == minimal


@PROPS
@given(CLASS, st.integers(1, 6))
def test_incremental_el_equals_batch(persons, l):
    stt = IS.make_state("el", {"l": l})
    for i, v in enumerate(persons):
        before = stt.would_hold(v)
        got = stt.add(v)
        assert got is before
        assert got is M.eir_l(dict(enumerate(persons[:i + 1])), l)
    assert stt.holds() is M.eir_l(dict(enumerate(persons)), l)


@PROPS
@given(CLASS, st.integers(1, 10), st.integers(1, 10), st.sampled_from(["ab", "eab", "kl"]))
def test_incremental_counting_states_equal_batch(persons, a, b, model):
    params = {"alpha": Fraction(a, 10), "beta": Fraction(b, 10)} if model != "kl" else {"k": a % 5 + 1, "l": b % 6 + 1}
    stt = IS.make_state(model, params)
    for i, v in enumerate(persons):
        assert stt.would_hold(v) is M.holds(model, params, dict(enumerate(persons[:i + 1])))
        assert stt.add(v) is M.holds(model, params, dict(enumerate(persons[:i + 1])))


@PROPS
@given(CLASS, CLASS, st.sampled_from(["kl", "el", "ab", "eab"]))
def test_merge_equals_feeding_one_by_one(p1, p2, model):
    params = {"kl": KL, "el": EL}.get(model, AB)
    a, b = IS.make_state(model, params), IS.make_state(model, params)
    for v in p1:
        a.add(v)
    for v in p2:
        b.add(v)
    assert a.merge(b) is M.holds(model, params, dict(enumerate(p1 + p2)))


def test_class_with_repeated_values_counts_records_for_ir_and_persons_for_eir():
    """A person whose records repeat a value (not in the paper's data) counts once in P(s)."""
    cls = {"a": ["Flu", "Flu"], "b": ["Flu"], "c": ["HIV"], "d": ["Cold"]}
    s = M.class_stats(cls)
    assert (s.max_value_records, s.max_value_persons) == (3, 2)
    assert s.forced == {"Flu", "HIV", "Cold"}
    assert M.eir_ab(cls, 0.4, 0.5) and not M.ir_ab(cls, 0.4, 0.5)


# --------------------------------------------------------------------------------------------
# Item 6: BHS (§4.9) and Def. 3.5
# --------------------------------------------------------------------------------------------

PSI_49 = [{"x1", "x3"}, {"x1", "x3", "x5"}, {"x1", "x6"}, {"x3", "x5"}, {"x5", "x7"}, {"x4"},
          {"x4", "x5"}, {"x4", "x6"}]


def test_bhs_reproduces_the_papers_three_sets():
    assert HS.bhs(PSI_49) == [frozenset({"x1", "x4", "x5"}), frozenset({"x3", "x4", "x5", "x6"}),
                             frozenset({"x3", "x4", "x6", "x7"})]
    assert HS.min_hs_size(PSI_49) == 3
    assert HS.min_hitting_set(PSI_49) == {"x1", "x4", "x5"}


def test_every_minimal_hitting_set_of_4_9_includes_the_one_bhs_misses():
    assert HS.minimal_hitting_sets(PSI_49) == [
        frozenset({"x1", "x4", "x5"}), frozenset({"x1", "x3", "x4", "x7"}),
        frozenset({"x3", "x4", "x5", "x6"}), frozenset({"x3", "x4", "x6", "x7"})]


def test_bhs_common_literal_shortcut_drops_minimal_sets():
    """Spec §3.3 caveat: {{x3,x5},{x5,x7}} gives only {x5}; {x3,x7} is also minimal."""
    fam = [{"x3", "x5"}, {"x5", "x7"}]
    assert HS.bhs(fam) == [frozenset({"x5"})]
    assert HS.minimal_hitting_sets(fam) == [frozenset({"x5"}), frozenset({"x3", "x7"})]


def test_def_3_5_example():
    fam = [{"x2", "x3"}, {"x2", "x4"}, {"x1", "x2"}]
    assert HS.minimal_hitting_sets(fam) == [frozenset({"x2"}), frozenset({"x1", "x3", "x4"})]
    assert HS.min_hs_size(fam) == 1
    assert HS.bhs(fam) == [frozenset({"x2"})]


def test_empty_family_has_the_empty_hitting_set():
    assert HS.bhs([]) == [frozenset()]
    assert HS.min_hs_size([]) == 0 and HS.min_hitting_set([]) == frozenset()
    assert HS.min_hs_at_least([], 0) and not HS.min_hs_at_least([], 1)


def test_forced_values_alone_decide_without_search():
    """Theorem 3.1's corollary: |S(P^sin)| >= l holds at once."""
    fam = [{"a"}, {"b"}, {"c"}, {"a", "x"}, {"y", "z"}]
    assert HS.min_hs_at_least(fam, 3) and HS.min_hs_size(fam) == 4
    assert not HS.min_hs_at_least(fam, 5)


def test_search_cost_is_bounded_by_l_on_a_large_class():
    """400 disjoint pairs: min-HS = 400, but asking for l = 6 only searches depth 5."""
    fam = [{2 * i, 2 * i + 1} for i in range(400)]
    assert HS.min_hs_at_least(fam, 6)
    assert HS.min_hs_size(fam, cap=6) == 6


# --------------------------------------------------------------------------------------------
# Item 7: the running example's hitting-set evolution (Alg. 5)
# --------------------------------------------------------------------------------------------


def fs(*sets):
    return [frozenset(s) for s in sets]


def test_running_example_ec1_hitting_sets():
    stt = IS.make_state("el", EL)
    assert stt.add(["Leukaemia", "Heart"]) is False  # Ella
    assert stt.hitting_sets() == fs({"Heart"}, {"Leukaemia"})
    assert stt.add(["Syphilis"]) is False  # Lucy
    assert stt.hitting_sets() == fs({"Heart", "Syphilis"}, {"Leukaemia", "Syphilis"})
    assert stt.add(["Hypertension", "Diabetes"]) is True  # Jane
    got = stt.hitting_sets()
    assert len(got) == 4 and all(len(h) == 3 for h in got)
    assert set(got) == set(fs({"Leukaemia", "Syphilis", "Hypertension"}, {"Heart", "Syphilis", "Hypertension"},
                              {"Leukaemia", "Syphilis", "Diabetes"}, {"Heart", "Syphilis", "Diabetes"}))


def test_running_example_ec2_hitting_sets():
    stt = IS.make_state("el", EL)
    steps = [(["Hypertension"], {"Hypertension"}, False),  # Tim
             (["Hypertension", "Heart"], {"Hypertension"}, False),  # Mike
             (["Cancer"], {"Hypertension", "Cancer"}, False),  # Lily
             (["HIV"], {"Hypertension", "Cancer", "HIV"}, True)]  # Tina
    for values, hs, ok in steps:
        assert stt.add(values) is ok
        assert stt.hitting_sets() == fs(hs)
        assert stt.min_hs() == len(hs)


def test_incremental_kl_and_eab_on_the_running_example():
    kl = IS.make_state("kl", KL)
    assert [kl.add(v) for v in (["Hypertension"], ["Hypertension", "Heart"], ["Cancer"])] == [False, False, True]
    eab = IS.make_state("eab", AB)  # §4.6 trace: 2/2, 2/3, 2/5
    assert [eab.add(v) for v in (["Leukaemia", "Heart"], ["Syphilis"], ["Hypertension", "Diabetes"])] == \
        [False, False, True]


# --------------------------------------------------------------------------------------------
# Release check (verifier / pganon.check)
# --------------------------------------------------------------------------------------------


def test_check_table3_reports_achieved_values_and_the_failing_class():
    t3 = {"Q1": values_of(T3Q1), "Q2": values_of(T3Q2)}
    c = M.check("el", EL, t3)
    assert c.value == {"l": 1} and c.holds is False and c.failing == ("Q2",)
    assert c.vulnerability.share == Fraction(1, 2)
    c = M.check("kl", KL, t3)
    assert c.value == {"k": 3, "l": 3} and c.holds is True
    c = M.check("eab", AB, t3)
    assert c.value == {"alpha": 0.4, "beta": 1.0} and c.failing == ("Q2",)
    c = M.check("ab", AB, t3)
    assert c.value == {"alpha": 0.4, "beta": 0.6} and c.holds is True
    j = c.as_json()
    assert j["vulnerable"] == {"family": "ab/eab", "classes": 2, "vulnerable": 1, "v": 0.5}
    assert j["params"] == {"alpha": 0.4, "beta": 0.6}


def test_check_without_thresholds_reports_values_only():
    t4 = {"Q1": values_of(T4Q1), "Q2": values_of(T4Q2)}
    c = M.check("el", {}, t4)
    assert c.value == {"l": 3} and c.holds is None and c.vulnerability is None


def test_check_counts_persons_split_over_classes():
    c = M.check("kl", KL, {"a": {"p": ["x"], "q": ["y"]}, "b": {"p": ["z"]}})
    assert c.split_persons == 1
    assert c.value == {"k": 1, "l": 1}


def test_classes_from_rows():
    rows = [("Q2", 1, "Hypertension"), ("Q2", 1, "Heart"), ("Q2", 3, "Hypertension")]
    assert M.classes_from_records(rows) == {"Q2": {1: ["Hypertension", "Heart"], 3: ["Hypertension"]}}
    assert M.classes_from_persons([("Q2", 1, ["Hypertension", "Heart"]), ("Q2", 3, ["Hypertension"])]) == \
        M.classes_from_records(rows)


def test_min_over_classes_equals_the_per_class_minimum():
    fams = [values_of(T3Q1), values_of(T4Q2), values_of(MID)]
    c = M.check("el", {"l": 2}, dict(enumerate(fams)))
    assert c.value == {"l": 2} and c.holds is True


# --------------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model, params, sqlstate, text", [
    ("eir", {"l": 3}, "PA001", "unknown identity-reserved model"),
    ("el", {"l": 0}, "PA002", "l = 0 is invalid"),
    ("el", {"l": 2.5}, "PA002", "must be an integer"),
    ("el", {"k": 3, "l": 3}, "PA002", "unknown parameter(s) ['k']"),
    ("el", {}, "PA002", "needs parameter(s) ['l']"),
    ("ab", {"alpha": 0, "beta": 0.5}, "PA002", "alpha must be a number in (0, 1]"),
    ("eab", {"alpha": 0.5, "beta": 1.5}, "PA002", "beta must be a number in (0, 1]"),
    ("ab", {"alpha": 0.5}, "PA002", "needs parameter(s) ['beta']"),
])
def test_bad_parameters_are_refused(model, params, sqlstate, text):
    with pytest.raises(EngineError) as e:
        M.holds(model, params, {"a": ["x"]})
    assert e.value.sqlstate == sqlstate and text in str(e.value)


@pytest.mark.parametrize("cls, text", [
    ({"Mike": "Hypertension"}, "must map to the list of its records' SA values"),
    ({"Mike": []}, "has no records"),
    ({"Mike": ["Flu", None]}, "NULL sensitive value"),
    ({"Mike": [float("nan")]}, "NULL sensitive value"),
])
def test_bad_classes_are_refused(cls, text):
    with pytest.raises(EngineError) as e:
        M.class_stats(cls)
    assert e.value.sqlstate == "PA004" and text in str(e.value)


def test_kl_k_defaults_to_l():
    assert M.parse_params("kl", {"l": 4}) == {"k": 4, "l": 4}


def test_decimal_and_fraction_parameters_compare_exactly():
    from decimal import Decimal
    assert M.parse_params("ab", {"alpha": Decimal("0.4"), "beta": 0.6}) == {"alpha": Fraction(2, 5), "beta": 0.6}


def test_ticking_calls_back_during_searches_and_changes_nothing():
    """`ticking` lets the database interrupt a long hitting-set search; results are the same."""
    fam = [{"a", "b"}, {"c", "d"}, {"e", "f"}, {"a", "c"}, {"b", "e"}]
    calls = []
    with ticking(lambda: calls.append(1)):
        inside = (HS.min_hs_size(fam), HS.min_hs_at_least(fam, 4), M.check("el", {"l": 3}, [dict(enumerate(fam))]).value)
    outside = (HS.min_hs_size(fam), HS.min_hs_at_least(fam, 4), M.check("el", {"l": 3}, [dict(enumerate(fam))]).value)
    assert calls and inside == outside == (3, False, {"l": 3})
    n = len(calls)
    HS.min_hs_size(fam)
    assert len(calls) == n  # restored on exit


def test_ticking_propagates_an_interrupt():
    def stop():
        raise KeyboardInterrupt("cancel")
    with pytest.raises(KeyboardInterrupt), ticking(stop):
        HS.min_hs_at_least([{"a", "b"}, {"c", "d"}, {"e", "f"}, {"a", "c"}, {"b", "e"}], 3)
