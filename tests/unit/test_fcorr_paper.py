"""Unit tests for pganon_engine.models.fcorr, the fingerprint-correlation auditor, on the paper's
tables (spec 004-ck-anonymization.md, sections 1.2-1.6, 2.8, 3, 4.3-4.4 and claims 1, 5-8 of
section 8): weights, linkability, the attack on Tables 3 and 6, PriRisk, the summary and bad
input.  The fixtures are in `fcorr_helpers`; the properties on random releases are in
test_fcorr_properties.py, the vectorized twin (`fcorr_fast`) in test_fcorr_fast.py.

Expected values are the spec's/paper's; where the spec marks a value "Derived" the test says so.
"""

import json
from collections import Counter
from fractions import Fraction as F

import pytest
from pganon_engine.models import fcorr as fc

from fcorr_helpers import (EC1, EC2, EC3, GT2, GT5, IDENTIFIED_BY, MODEL, SOURCE, ST3, ST6, ST_COLS, T1,
                           TABLE5, lines, members, rng)


def test_fixtures_agree_with_table1():
    # Spec 3.2/3.3: every ST cell is the distinct values of its derived members; Table 5's
    # parenthesised originals are Table 1's values and lie in their ranges.
    for st_, gt in ((ST3, GT2), (ST6, GT5)):
        mem = members(gt)
        assert set(mem) == set(st_)
        for b, pids in mem.items():
            for a in ST_COLS:
                assert st_[b][a] == {T1[p][a] for p in pids}, (b, a)
    assert {b: sorted(p) for b, p in members(GT5).items()} == {
        1: ["p1", "p2", "p8", "p9"], 2: ["p3", "p6"], 3: ["p4", "p5", "p7"]}
    for name, gender, age, zipc, _ in lines(TABLE5):
        pid = name.split()[0]
        a0 = int(age.split("(")[1].rstrip(")"))
        z0 = int(zipc.split("(")[1].rstrip(")"))
        assert (a0, z0) == (int(T1[pid]["age"]), int(T1[pid]["zipcode"]))
        lo, hi = rng(age.split()[0])
        assert lo <= a0 <= hi


# --------------------------------------------------------------------------------------------
# Weights, delta, zeta (claim 1)
# --------------------------------------------------------------------------------------------


def test_weights_xi_zeta_table11():
    assert MODEL.weights == {"cancer_type": 3, "cancer_treatment": 1, "physician": 3,
                             "diagnosis_date": 0, "symptom": 0, "diagnosis_method": 1}
    assert MODEL.xi == {"cancer_type", "physician"}
    assert MODEL.zeta == {"diagnosis_date", "symptom"}
    assert MODEL.identifying == ("cancer_type", "cancer_treatment", "diagnosis_method")


def test_zeta_empty_when_every_other_sa_is_minimum_weight():
    # Spec 2.6 step 2: with all weights equal, eq. (5) must not exempt every non-delta SA.
    m = fc.sa_model(["a", "b", "c"], "a")
    assert m.zeta == frozenset() and m.identifying == ("b", "c")
    m = fc.sa_model(["a", "b", "c"], "a", {"a": ["b"]})
    assert m.zeta == frozenset()


@pytest.mark.parametrize("args, fragment", [
    ((ST_COLS, "cancer_treatment", IDENTIFIED_BY), "choose delta among xi"),
    ((ST_COLS, "name", IDENTIFIED_BY), "is not one of the sensitive attributes"),
    ((["a", "a"], "a"), "more than once"),
    ((["a", "b"], "a", {"c": ["a"]}), "not a sensitive attribute"),
    ((["a", "b"], "a", {"a": ["a"]}), "does not identify itself"),
    ((["a", "b"], "a", None, ["a"]), "cannot be exempt"),
])
def test_sa_model_bad_input_raises(args, fragment):
    with pytest.raises(ValueError, match=fragment):
        fc.sa_model(*args)


# --------------------------------------------------------------------------------------------
# Linkability and the attack on Tables 3 and 6 (claims 5-7)
# --------------------------------------------------------------------------------------------


def test_linkable_pairs_table3_is_3():
    pairs = fc.linkable_pairs(ST3, MODEL)
    assert [(p.i, p.j, set(p.shared)) for p in pairs] == [
        (1, 3, {"Alan"}), (2, 3, {"Jack"}), (2, 4, {"Tom"})]


def test_linkable_pairs_table6_is_1():
    pairs = fc.linkable_pairs(ST6, MODEL)
    assert [(p.i, p.j, set(p.shared)) for p in pairs] == [(2, 3, {"Tom"})]


def test_fcorr_table3_intersections_claim6():
    cells = {(f.i, f.j): {a: set(s) for a, s in f.cells.items()} for f in fc.fcorr(ST3, MODEL)}
    assert cells == {
        (1, 3): {"cancer_type": {"Breast"}, "cancer_treatment": {"Surgery"}, "diagnosis_method": set(),
                 "symptom": {"Back pain"}, "diagnosis_date": set()},
        (2, 3): {"cancer_type": set(), "cancer_treatment": set(), "diagnosis_method": {"Chest X-ray"},
                 "symptom": {"Back pain"}, "diagnosis_date": set()},
        (2, 4): {"cancer_type": {"Prostrate"}, "cancer_treatment": set(),
                 "diagnosis_method": {"Blood test", "CT scan"}, "symptom": {"Abdominal pain"},
                 "diagnosis_date": set()},
    }


def test_fcorr_table3_breaches_every_pair_pfcorr_none_ffcorr():
    findings = fc.fcorr(ST3, MODEL)
    assert [f.kind for f in findings] == ["pfcorr"] * 3
    assert not any(f.eq4_ok or f.eq5_ok for f in findings)
    assert sum(len(f.singletons) for f in findings) == 7
    non_zeta = {x for f in findings for a, x in f.singletons.items() if a not in MODEL.zeta}
    assert non_zeta == {"Breast", "Surgery", "Chest X-ray", "Prostrate"}


def test_fcorr_table3_inferences_match_table4_core():
    # Claim 6: Jack -> Chest X-ray, Back pain; Tom -> Prostrate, Abdominal pain,
    # {CT scan, Blood test}; Alan -> Breast, Surgery.
    inferred = {}
    for f in fc.fcorr(ST3, MODEL):
        (v,) = f.shared
        inferred[v] = {a: set(s) for a, s in f.cells.items() if s}
    assert inferred == {
        "Jack": {"diagnosis_method": {"Chest X-ray"}, "symptom": {"Back pain"}},
        "Tom": {"cancer_type": {"Prostrate"}, "symptom": {"Abdominal pain"},
                "diagnosis_method": {"CT scan", "Blood test"}},
        "Alan": {"cancer_type": {"Breast"}, "cancer_treatment": {"Surgery"}, "symptom": {"Back pain"}},
    }
    disc = {(d.delta_value, d.sa, d.value) for d in fc.disclosures(fc.fcorr(ST3, MODEL), MODEL)}
    assert disc == {("Alan", "cancer_type", "Breast"), ("Alan", "cancer_treatment", "Surgery"),
                    ("Jack", "diagnosis_method", "Chest X-ray"), ("Tom", "cancer_type", "Prostrate")}


def test_fcorr_table6_no_breach_claim7():
    (f,) = fc.fcorr(ST6, MODEL)
    assert (f.i, f.j) == (2, 3)
    assert {a: set(s) for a, s in f.cells.items()} == {
        "cancer_type": set(), "cancer_treatment": set(), "diagnosis_method": {"Blood test", "CT scan"},
        "symptom": set(), "diagnosis_date": set()}
    assert f.eq4_ok and f.eq5_ok and f.kind is None and not f.singletons


def test_zeta_only_singleton_is_leakage_not_breach():
    # Spec 2.6 "why the alternatives fail": swapping p4 <-> p7 instead gives FB2 = {p3, p7},
    # FB3 = {p4, p5, p6}, which satisfies only the relaxed eq. (5): symptom {Abdominal pain}.
    mem = {1: ["p1", "p2", "p8", "p9"], 2: ["p3", "p7"], 3: ["p4", "p5", "p6"]}
    st_ = {b: {a: {T1[p][a] for p in pids} for a in ST_COLS} for b, pids in mem.items()}
    gt = [(p, "q", b) for b, pids in mem.items() for p in pids]
    a = fc.audit(gt, st_, MODEL, source=SOURCE)
    (f,) = a.pairs
    assert (f.i, f.j, set(f.shared), f.singletons) == (2, 3, {"Tom"}, {"symptom": "Abdominal pain"})
    assert (f.eq4_ok, f.eq5_ok, f.kind) == (False, True, None)
    assert (a.summary["strict_ok"], a.summary["relaxed_ok"], a.summary["n_breaches"]) == (False, True, 0)
    assert a.vulnerability.covered == frozenset()


def test_vulnerable_records_table3_covered_7_correct_4():
    v = fc.vulnerable_records(GT2, ST3, MODEL, source=SOURCE)
    assert v.covered == {"p1", "p2", "p4", "p6", "p7", "p8", "p9"}
    assert v.correct == {"p1", "p2", "p4", "p9"}
    assert (v.n_covered, v.n_correct) == (7, 4)
    assert {"p1", "p2", "p4"} <= v.correct  # Table 4's breached records


def test_vulnerable_records_table6_zero():
    v = fc.vulnerable_records(GT5, ST6, MODEL, source=SOURCE)
    assert v.covered == frozenset() and v.correct == frozenset() and v.disclosures == ()


def test_vulnerable_covered_count_from_st_counts_without_source():
    # A release that publishes per-value counts gives the covered count without the source.
    counted = {b: {a: dict(Counter(T1[p][a] for p in pids)) for a in ST_COLS}
               for b, pids in members(GT2).items()}
    v = fc.vulnerable_records(GT2, counted, MODEL)
    assert (v.covered, v.correct, v.n_covered, v.n_correct) == (None, None, 7, None)
    sets_only = fc.vulnerable_records(GT2, ST3, MODEL)
    assert (sets_only.n_covered, sets_only.n_correct) == (None, None)
    assert len(sets_only.disclosures) == 4


# --------------------------------------------------------------------------------------------
# PriRisk (claim 8)
# --------------------------------------------------------------------------------------------


def test_pririsk_table5_per_class():
    risk = fc.pririsk(GT5, ST6, MODEL).by_ec
    got = {ec: (g.r, g.n, round(g.risk, 3), g.bound) for ec, g in risk.items()}
    # Spec 7.12: the paper prints n = 42 for EC1; 4x4 + 4x2 + 4x3 = 36.
    assert got == {EC1: (4, 36, 0.111, F(1, 4)), EC2: (2, 12, 0.167, F(1, 2)), EC3: (3, 21, 0.143, F(1, 3))}
    assert all(g.within_bound for g in risk.values())
    assert {ec: set(g.buckets) for ec, g in risk.items()} == {EC1: {1, 2, 3}, EC2: {1, 2}, EC3: {1, 3}}


def test_pririsk_table5_subpattern_gender_kept():
    # Spec 1.6 caveat: Lisa (F) lands on FB1 (size 4) with certainty -> 2/(2x4); M rows -> FB2 + FB3.
    pats = fc.pririsk(GT5, ST6, MODEL).by_pattern
    f = pats[(EC1, ("F",) + EC1)]
    m = pats[(EC1, ("M",) + EC1)]
    assert (set(f.rows), set(f.buckets), f.ratio) == ({"p2", "p9"}, {1}, F(1, 4))
    assert (set(m.rows), set(m.buckets), m.ratio) == ({"p3", "p7"}, {2, 3}, F(1, 5))
    assert pats[(EC2, ("*",) + EC2)].ratio == F(2, 12)


def test_pririsk_worst_case_two_rows_one_bucket():
    # Spec 1.6: an EC of 2 linked to a single FB of 2 -> 2/4 = 0.5 <= 1/2.
    st_ = {1: {"a": {"x", "y"}, "b": {"u", "w"}}}
    m = fc.sa_model(["a", "b"], "a")
    (g,) = fc.pririsk([("r1", "q", 1), ("r2", "q", 1)], st_, m).by_ec.values()
    assert (g.r, g.n, g.risk, g.within_bound) == (2, 4, 0.5, True)


def test_pririsk_table2_one_to_one_is_one_over_group_size():
    risk = fc.pririsk(GT2, ST3, MODEL).by_ec
    assert sorted(g.ratio for g in risk.values()) == [F(1, 3), F(1, 2), F(1, 2), F(1, 2)]
    assert all(g.ratio == g.bound for g in risk.values())


def test_one_to_many_rows_with_source_homes_match_record_level():
    # Each Table 5 row links to every bucket of its class; the source places each record.
    by_ec = {}
    for r in GT5:
        by_ec.setdefault(r.ec, set()).update(r.buckets)
    multi = [(r.rid, r.qi, sorted(by_ec[r.ec]), r.ec) for r in GT5]
    a = fc.audit(multi, ST6, MODEL, source=SOURCE)
    assert {ec: g.ratio for ec, g in a.risk.by_ec.items()} == {EC1: F(4, 36), EC2: F(2, 12), EC3: F(3, 21)}
    with pytest.raises(ValueError, match="pass sizes= or give home"):
        fc.pririsk(multi, ST6, MODEL)
    sized = fc.pririsk(multi, ST6, MODEL, sizes={1: 4, 2: 2, 3: 3})
    assert sized.by_ec[EC1].ratio == F(4, 36)


# --------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------


def test_summary_table2_3():
    s = fc.audit(GT2, ST3, MODEL, source=SOURCE).summary
    assert {k: s[k] for k in ("n_linkable_pairs", "n_breaches", "n_pfcorr", "n_ffcorr",
                              "n_singleton_cells", "n_identifying_singleton_cells", "strict_ok",
                              "relaxed_ok", "n_vulnerable_covered", "n_vulnerable_correct")} == {
        "n_linkable_pairs": 3, "n_breaches": 3, "n_pfcorr": 3, "n_ffcorr": 0, "n_singleton_cells": 7,
        "n_identifying_singleton_cells": 4, "strict_ok": False, "relaxed_ok": False,
        "n_vulnerable_covered": 7, "n_vulnerable_correct": 4}
    assert s["pririsk_max"] == 0.5 and s["zeta"] == ["diagnosis_date", "symptom"]


def test_summary_table5_6():
    s = fc.audit(GT5, ST6, MODEL, source=SOURCE).summary
    assert (s["n_linkable_pairs"], s["n_breaches"], s["strict_ok"], s["relaxed_ok"]) == (1, 0, True, True)
    assert (s["n_vulnerable_covered"], s["n_vulnerable_correct"]) == (0, 0)
    assert round(s["pririsk_max"], 3) == 0.167
    assert s["pririsk_mean"] == pytest.approx((4 / 36 + 2 / 12 + 3 / 21) / 3)
    assert s["pririsk_pattern_max"] == 0.25 and s["n_classes_over_bound"] == 0
    assert json.loads(json.dumps(s)) == s


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


def _swap_physician(src):
    out = {p: dict(v) for p, v in src.items()}
    out["p4"]["physician"], out["p2"]["physician"] = out["p2"]["physician"], out["p4"]["physician"]
    return out


@pytest.mark.parametrize("call, fragment", [
    (lambda: fc.audit([("p1", "q", 9)], ST3, MODEL), "that ST does not have"),
    (lambda: fc.audit([("p1", "q", 1), ("p1", "q", 1)], ST3, MODEL), "more than one GT row"),
    (lambda: fc.audit([], {1: {a: {"x"} for a in ST_COLS[1:]}}, MODEL), "has no values for SA 'physician'"),
    (lambda: fc.audit([], {1: {**{a: {"x"} for a in ST_COLS}, "age": {1}}}, MODEL), "does not declare"),
    (lambda: fc.audit([], {1: {**{a: {"x"} for a in ST_COLS}, "symptom": set()}}, MODEL), "empty value set"),
    (lambda: fc.audit([], {1: {**{a: {"x": 2} for a in ST_COLS}, "symptom": {"x": 1}}}, MODEL), "add up to"),
    (lambda: fc.audit(GT2, ST3, MODEL, source=_swap_physician(SOURCE)), "the release and the source disagree"),
    (lambda: fc.audit(GT2[1:], ST3, MODEL, source=SOURCE), "the release and the source disagree"),
    (lambda: fc.audit(GT2, ST3, MODEL, source={**SOURCE, "p1": {}}), "has no value for SA"),
    (lambda: fc.audit([("p1", "q", 3, None, 1)], ST3, MODEL), "is not one of its links"),
    (lambda: fc.audit([("r", "q", [1, 2])], {b: {a: {"x"} for a in ST_COLS} for b in (1, 2)}, MODEL,
                      source={"r": {a: "x" for a in ST_COLS}}), "fits several linked buckets"),
    (lambda: fc.audit([("p1", "q", [1, 2])], ST3, MODEL, source=SOURCE), "fit none of its linked buckets"),
])
def test_bad_input_raises_naming_the_problem(call, fragment):
    with pytest.raises(ValueError, match=fragment):
        call()
