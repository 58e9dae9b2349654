"""Unit tests for pganon_engine.models.fcorr, the fingerprint-correlation auditor (spec
004-ck-anonymization.md, sections 1.2-1.6, 2.8, 3, 4.3-4.4 and claims 1, 5-8 of section 8).

Tables 1, 2, 3, 5 and 6 are transcribed from spec section 3 as printed (typos included) and
canonicalised to Table 1's spelling (spec 3.1, 7.18) when the fixtures are built.  Expected
values are the spec's/paper's; where the spec marks a value "Derived" the test says so.
"""

import json
import random
import re
from collections import Counter
from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pganon_engine.models import fcorr as fc
from pganon_engine.models import fcorr_fast

# --------------------------------------------------------------------------------------------
# Paper fixtures (spec section 3)
# --------------------------------------------------------------------------------------------

# Table 1 (spec 3.1): pid | name | gender | age | zipcode | cancer type | cancer treatment |
# physician | diagnosis date | symptom | diagnosis method
TABLE1 = """\
p1 | Michael | M | 34 | 34548 | Rectal | Surgery | Jack | 7/8/19 | Back pain | Chest X-ray
p2 | Lisa | F | 21 | 34607 | Breast | Inhibitor therapy | Alan | 17/8/19 | Swelling | Ultrasound
p3 | Richard | M | 26 | 37506 | Colon | Surgery | Daisy | 22/11/19 | Back pain | Blood test
p4 | Dave | M | 31 | 34549 | Prostrate | Biologic therapy | Tom | 29/08/19 | Abdominal pain | Chest X-ray
p5 | Kate | F | 35 | 33753 | Prostrate | Radiation | Frank | 9/09/19 | Testis swelling | Blood test
p6 | William | M | 38 | 43674 | Liver | Ablation | Tom | 5/08/19 | Weight loss | CT scan
p7 | Robert | M | 27 | 35064 | Rectal | Medication | Tom | 12/08/19 | Abdominal pain | CT scan
p8 | Olivia | F | 32 | 44662 | Prostrate | Biologic therapy | Jack | 21/09/19 | Back pain | Blood test
p9 | Emily | F | 22 | 34548 | Breast | Biologic therapy | Alan | 13/09/19 | Skin imitation | MRI test
"""
T1_COLS = ["pid", "name", "gender", "age", "zipcode", "cancer_type", "cancer_treatment",
           "physician", "diagnosis_date", "symptom", "diagnosis_method"]

# Table 2 (spec 3.2): gender | age | zipcode | batch id | (derived members)
TABLE2 = """\
Person Person | 22–26 | 34548–37506 | 1 | p9, p3
Person Person Person | 31–38 | 34549–44662 | 2 | p4, p8, p6
Person Person | 21–34 | 34548–34607 | 3 | p2, p1
Person Person | 27–35 | 33753–35064 | 4 | p7, p5
"""

# Table 3 (spec 3.2), paper column order; the trailing comma in batch 3 is the paper's.
ST_COLS = ["physician", "cancer_type", "cancer_treatment", "diagnosis_method", "symptom",
           "diagnosis_date"]
TABLE3 = """\
Daisy, Alan | Colon, Breast | Surgery, Biologic therapy | Blood test, MRI test | Back pain, Skin irritation | 22/11/19, 13/09/19 | 1
Tom, Jack | Prostrate, Liver | Ablation, Biologic therapy | CT scan, Chest X-ray, Blood test | Weight loss, Abdominal pain, Back pain | 5/08/19, 21/09/19, 29/08/19 | 2
Alan, Jack | Rectal, Breast | Inhibitor therapy, Surgery | Chest X-ray, Ultrasound, | Back pain, Swelling | 7/8/19, 17/8/19 | 3
Tom, Frank | Prostrate, Rectal | Radiation, Medication | Blood test, CT scan | Testis swelling, Abdominal pain | 12/08/19, 9/09/19 | 4
"""

# Table 5 (spec 3.3): name | gender | age | zipcode | bucket id
TABLE5 = """\
p2 (Lisa) | F | [21–27] (21) | [34548–37506] (34607) | 1
p9 (Emily) | F | [21–27] (22) | [34548–37506] (34548) | 1
p3 (Richard) | M | [21–27] (26) | [34548–37506] (37506) | 2
p7 (Robert) | M | [21–27] (27) | [34548–37506] (35064) | 3
p8 (Olivia) | * | [32–38] (32) | [43674–44662] (44662) | 1
p6 (William) | * | [32–38] (38) | [43674–44662] (43674) | 2
p4 (Dave) | * | [31–35] (31) | [33753–34549] (34549) | 3
p1 (Michael) | * | [31–35] (34) | [33753–34549] (34548) | 1
p5 (Kate) | * | [31–35] (35) | [33753–34549] (33753) | 3
"""

# Table 6 (spec 3.3), as printed (lower case and "prostate"/"skin imitation" included).
TABLE6 = """\
Jack, Alan | Rectal, breast, prostate | Surgery, inhibitor therapy, biologic therapy | Chest X-ray, ultrasound, blood test, MRI test | Back pain, swelling, skin imitation | 7/8/19, 17/8/19, 21/09/19, 13/09/19 | 1
Daisy, Tom | Colon, liver | Surgery, ablation | Blood test, CT scan | Back pain, weight loss | 22/11/19, 5/08/19 | 2
Tom, Frank | Prostrate, rectal | Biologic therapy, radiation, medication | Chest X-ray, blood test, CT scan | Abdominal pain, testis swelling | 29/08/19, 9/09/19, 12/08/19 | 3
"""

# Spec 3.1 configuration; Table 11.
IDENTIFIED_BY = {
    "cancer_type": {"cancer_treatment", "physician", "diagnosis_method"},
    "cancer_treatment": {"cancer_type"},
    "physician": {"cancer_type", "cancer_treatment", "diagnosis_method"},
    "diagnosis_date": set(),
    "symptom": set(),
    "diagnosis_method": {"cancer_type"},
}
MODEL = fc.sa_model(ST_COLS, "physician", IDENTIFIED_BY)


def _lines(text):
    return [[c.strip() for c in line.split("|")] for line in text.strip("\n").split("\n")]


def table1():
    """pid -> full Table 1 row (dict)."""
    return {r[0]: dict(zip(T1_COLS, r)) for r in _lines(TABLE1)}


T1 = table1()
SOURCE = {pid: {a: row[a] for a in ST_COLS} for pid, row in T1.items()}

# Spec 3.1 / 7.18: compare case-insensitively after canonicalising to Table 1's spelling.
CANON = {row[a].lower(): row[a] for row in T1.values() for a in ST_COLS}
CANON.update({"prostate": "Prostrate", "skin irritation": "Skin imitation", "ct-scan": "CT scan"})


def cell(text):
    """A published ST cell as a set of canonical values (empty items dropped)."""
    return {CANON[v.strip().lower()] for v in text.split(",") if v.strip()}


def st_of(text):
    return {int(r[-1]): {a: cell(c) for a, c in zip(ST_COLS, r[:-1])} for r in _lines(text)}


def rng(text):
    lo, hi = re.fullmatch(r"\[?(\d+)–(\d+)\]?", text).groups()
    return (int(lo), int(hi))


def gt2():
    """Table 2 expanded to one GT row per derived member (spec 3.4: equivalent)."""
    rows = []
    for gender, age, zipc, bid, members in _lines(TABLE2):
        for pid in members.split(", "):
            rows.append((pid, ("Person", rng(age), rng(zipc)), int(bid)))
    return rows


def gt5():
    """Table 5: record-level rows; the class is the (age, zip) range pair (spec 3.3 ECs)."""
    rows = []
    for name, gender, age, zipc, bid in _lines(TABLE5):
        pid = name.split()[0]
        a, z = rng(age.split()[0]), rng(zipc.split()[0])
        rows.append(fc.GTRow(pid, (gender, a, z), frozenset([int(bid)]), ec=(a, z)))
    return rows


ST3, ST6 = st_of(TABLE3), st_of(TABLE6)
GT2, GT5 = gt2(), gt5()
EC1, EC2, EC3 = ((21, 27), (34548, 37506)), ((32, 38), (43674, 44662)), ((31, 35), (33753, 34549))


def members(gt):
    out = {}
    for r in gt:
        rid, b = (r.rid, next(iter(r.buckets))) if isinstance(r, fc.GTRow) else (r[0], r[2])
        out.setdefault(b, set()).add(rid)
    return out


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
    for name, gender, age, zipc, _ in _lines(TABLE5):
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


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

SAS = ["d", "s1", "s2", "s3"]
PLAIN = fc.sa_model(SAS, "d")  # no dependency map: zeta is empty (strict semantics)


@st.composite
def releases(draw, delta_private=False, counts=False):
    """A random record-level release: source records, buckets, classes, GT rows and ST."""
    n = draw(st.integers(2, 24))
    nb = draw(st.integers(1, min(n, 6)))
    bucket = draw(st.permutations([i % nb for i in range(n)]))
    ecs = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    src = {}
    for r in range(n):
        d = draw(st.integers(0, 4))
        src[f"r{r}"] = {"d": (bucket[r], d) if delta_private else d,
                        **{a: draw(st.integers(0, 3)) for a in SAS[1:]}}
    gender = draw(st.lists(st.sampled_from("FM*"), min_size=n, max_size=n))
    gt = [(f"r{r}", (gender[r], ecs[r]), bucket[r], ecs[r]) for r in range(n)]
    return gt, build_st(gt, src, counts), src


def build_st(gt, src, counts=False):
    out = {}
    for rid, _, b, *_ in gt:
        for a, v in src[rid].items():
            out.setdefault(b, {}).setdefault(a, Counter())[v] += 1
    return {b: {a: (dict(c) if counts else set(c)) for a, c in cells.items()} for b, cells in out.items()}


PROP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROP
@given(releases(delta_private=True))
def test_no_shared_delta_value_no_pair_no_breach(rel):
    gt, st_, src = rel
    a = fc.audit(gt, st_, PLAIN, source=src)
    assert a.pairs == ()
    assert (a.summary["n_breaches"], a.summary["n_vulnerable_covered"], a.summary["n_vulnerable_correct"]) == (0, 0, 0)
    assert a.summary["strict_ok"] and a.summary["relaxed_ok"]


@PROP
@given(st.integers(2, 5), st.integers(1, 4), st.data())
def test_copying_a_record_into_a_disjoint_bucket_makes_an_ffcorr_breach(nb, per, data):
    # Values are tagged with their bucket, so no two buckets share any value; then one record
    # of bucket i is copied into bucket j: every SA intersection of (i, j) becomes {its value}.
    src, gt = {}, []
    for b in range(nb):
        for k in range(per):
            rid = f"b{b}r{k}"
            src[rid] = {a: (b, data.draw(st.integers(0, 2))) for a in SAS}
            gt.append((rid, ("*",), b))
    assert fc.audit(gt, build_st(gt, src), PLAIN, source=src).summary["n_breaches"] == 0
    i, j = sorted(data.draw(st.lists(st.integers(0, nb - 1), min_size=2, max_size=2, unique=True)))
    copied = f"b{i}r{data.draw(st.integers(0, per - 1))}"
    src["new"] = dict(src[copied])
    gt.append(("new", ("*",), j))
    a = fc.audit(gt, build_st(gt, src), PLAIN, source=src)
    assert [(f.i, f.j, f.kind) for f in a.pairs] == [(i, j, "ffcorr")]
    assert a.pairs[0].singletons == {s: src[copied][s] for s in SAS[1:]}
    assert not a.pairs[0].eq4_ok and not a.pairs[0].eq5_ok
    same_delta = {r for r in src if r.startswith(f"b{i}r") and src[r]["d"] == src[copied]["d"]}
    # Covered: every record of bucket i or j with the copied delta value; correct: at least the
    # copy and its original, whose true values are exactly the disclosed ones.
    assert a.vulnerability.covered == same_delta | {"new"}
    assert {copied, "new"} <= a.vulnerability.correct <= a.vulnerability.covered


def _canon(a):
    return (a.summary, a.pairs, a.vulnerability, a.risk)


@PROP
@given(releases(), st.randoms(use_true_random=False))
def test_results_independent_of_row_and_bucket_order(rel, rnd):
    gt, st_, src = rel
    base = fc.audit(gt, st_, PLAIN, source=src)
    gt2 = list(gt)
    rnd.shuffle(gt2)
    bids = list(st_)
    rnd.shuffle(bids)
    st2 = {b: {a: set(rnd.sample(sorted(st_[b][a]), len(st_[b][a]))) for a in reversed(SAS)} for b in bids}
    keys = list(src)
    rnd.shuffle(keys)
    src2 = {k: src[k] for k in keys}
    assert _canon(fc.audit(gt2, st2, PLAIN, source=src2)) == _canon(base)


@PROP
@given(releases(), st.sampled_from([PLAIN, fc.sa_model(SAS, "d", {"d": ["s1", "s2"], "s1": ["d"]})]))
def test_invariants_of_any_release(rel, model):
    gt, st_, src = rel
    a = fc.audit(gt, st_, model, source=src)
    v = a.vulnerability
    assert v.correct <= v.covered
    for f in a.pairs:
        assert f.i != f.j and f.shared
        assert st_[f.i]["d"] & st_[f.j]["d"] == f.shared
        assert (not f.eq4_ok) or f.eq5_ok  # strict implies relaxed
        if f.breach:
            assert not f.eq4_ok
    # Every vulnerable record carries a disclosed delta value in a breached pair's bucket.
    home = {rid: b for rid, _, b, _ in gt}
    for rid in v.covered:
        assert any(src[rid]["d"] == d.delta_value and home[rid] in (d.i, d.j) for d in v.disclosures)
    # Spec 1.6: record-level links never give PriRisk above 1/|E|; one-to-one gives equality.
    for g in a.risk.by_ec.values():
        assert g.within_bound
        if all(sum(1 for r in gt if r[2] == b) == sum(1 for r in gt if r[2] == b and r[3] == g.ec)
               for b in g.buckets):
            assert g.ratio == g.bound


@PROP
@given(releases(counts=True))
def test_covered_count_from_counts_equals_covered_from_source(rel):
    gt, st_, src = rel
    with_source = fc.vulnerable_records(gt, st_, PLAIN, source=src)
    counts_only = fc.vulnerable_records(gt, st_, PLAIN)
    assert counts_only.n_covered == len(with_source.covered)


@PROP
@given(releases(), st.randoms(use_true_random=False))
def test_relabelling_buckets_keeps_the_counts(rel, rnd):
    gt, st_, src = rel
    new = list(range(100, 100 + len(st_)))
    rnd.shuffle(new)
    ren = dict(zip(sorted(st_), new))
    gt2 = [(rid, qi, ren[b], ec) for rid, qi, b, ec in gt]
    st2 = {ren[b]: cells for b, cells in st_.items()}
    s1 = fc.audit(gt, st_, PLAIN, source=src).summary
    s2 = fc.audit(gt2, st2, PLAIN, source=src).summary
    assert s1 == s2


def test_hypothesis_generator_produces_breaches_sometimes():
    # Guard against vacuous properties: the generator must hit linkable pairs and breaches.
    rnd = random.Random(4)
    seen = Counter()
    for _ in range(200):
        n, nb = rnd.randint(4, 24), rnd.randint(2, 6)
        src = {f"r{r}": {a: rnd.randint(0, 3) for a in SAS} for r in range(n)}
        gt = [(f"r{r}", ("*",), r % nb, 0) for r in range(n)]
        s = fc.audit(gt, build_st(gt, src), PLAIN, source=src).summary
        seen["pairs"] += s["n_linkable_pairs"] > 0
        seen["breach"] += s["n_breaches"] > 0
    assert seen["pairs"] > 50 and seen["breach"] > 10


# --------------------------------------------------------------------------------------------
# The vectorized audit (fcorr_fast) against the reference
# --------------------------------------------------------------------------------------------


def _same_as_reference(gt, st_, model, source=None, sizes=None, detail=50, block=fcorr_fast.BLOCK):
    """fcorr_fast.audit gives the reference's summary, listed pairs, vulnerable records and
    PriRisk; returns the reference audit."""
    ref = fc.audit(gt, st_, model, source=source, sizes=sizes)
    fast = fcorr_fast.audit(gt, st_, model, source=source, sizes=sizes, detail=detail, block=block)
    assert fast.summary == ref.summary
    assert fast.pairs == tuple(f for f in ref.pairs if f.singletons)[:detail]
    rv, fv = ref.vulnerability, fast.vulnerability
    assert (fv.covered, fv.correct, fv.n_covered, fv.n_correct) == (rv.covered, rv.correct, rv.n_covered, rv.n_correct)
    assert fast.risk == ref.risk
    return ref


@pytest.mark.parametrize("gt, st_, block", [(GT2, ST3, fcorr_fast.BLOCK), (GT2, ST3, 1),
                                            (GT5, ST6, fcorr_fast.BLOCK), (GT5, ST6, 3)])
def test_fast_audit_equals_reference_on_the_papers_tables(gt, st_, block):
    ref = _same_as_reference(gt, st_, MODEL, source=SOURCE, block=block)
    assert ref.summary["n_linkable_pairs"] in (1, 3)  # Table 6 and Table 3 (claim 5)
    _same_as_reference(gt, st_, MODEL, block=block)  # no source: counts unknown


def test_fast_audit_table3_lists_the_breaching_pairs_and_counts_disclosures():
    fast = fcorr_fast.audit(GT2, ST3, MODEL, source=SOURCE, detail=2)
    assert [(f.i, f.j) for f in fast.pairs] == [(1, 3), (2, 3)]   # (2, 4) is the third, not listed
    assert fast.summary["n_disclosures"] == 4 and fast.vulnerability.disclosures is None
    assert fast.vulnerability.correct == {"p1", "p2", "p4", "p9"}


def test_fast_audit_covered_count_from_st_counts_without_source():
    counted = {b: {a: dict(Counter(T1[p][a] for p in pids)) for a in ST_COLS}
               for b, pids in members(GT2).items()}
    ref = _same_as_reference(GT2, counted, MODEL)
    assert ref.vulnerability.n_covered == 7


WIDE = ["d", "s1", "s2", "s3"]


@st.composite
def wide_releases(draw):
    """Random releases for the fast path: up to 14 buckets, value domains from 2 to 150 values
    (several mask words), delta shared or private, one-to-one or one-to-many links, counts or sets."""
    n = draw(st.integers(1, 40))
    nb = draw(st.integers(1, min(n, 14)))
    bucket = draw(st.permutations([i % nb for i in range(n)]))
    dom = {a: draw(st.sampled_from([2, 3, 5, 70, 150])) for a in WIDE}
    private = draw(st.booleans())
    src = {}
    for r in range(n):
        # wide domains: mostly a few values far apart, so that two buckets share values that
        # land in different mask words
        vals = {a: draw(st.integers(0, dom[a] - 1) if dom[a] < 70 else
                        st.one_of(st.sampled_from([0, 1, 63, 64, 69, dom[a] - 1]), st.integers(0, dom[a] - 1)))
                for a in WIDE}
        if private:
            vals["d"] = (bucket[r], vals["d"])
        src[f"r{r}"] = vals
    if draw(st.booleans()):  # bucket 0 holds every value of each wide SA (several words in use)
        for x in range(max(dom.values())):
            vals = {a: x % dom[a] for a in WIDE}
            src[f"w{x}"] = {**vals, "d": (bucket[0], vals["d"])} if private else vals
            bucket.append(bucket[0])
    n = len(src)
    ecs = [draw(st.integers(0, 2)) for _ in range(n)]
    gt = [(rid, (ecs[r],), bucket[r], ecs[r], bucket[r]) for r, rid in enumerate(src)]
    if draw(st.booleans()):  # one-to-many: every row links to all buckets of its class, home given
        links = {}
        for r in range(n):
            links.setdefault(ecs[r], set()).add(bucket[r])
        gt = [(rid, qi, sorted(links[ec]), ec, b) for rid, qi, b, ec, _ in gt]
    st_ = build_st([(rid, qi, home) for rid, qi, _, _, home in gt], src, counts=draw(st.booleans()))
    return gt, st_, src


WIDE_MODELS = [fc.sa_model(WIDE, "d"), fc.sa_model(WIDE, "d", {"d": ["s1", "s2"], "s1": ["d"]}),
               fc.sa_model(WIDE, "d", zeta=["s1", "s2", "s3"]), fc.sa_model(["d"], "d")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wide_releases(), st.sampled_from(WIDE_MODELS), st.sampled_from([1, 5, 64, fcorr_fast.BLOCK]),
       st.sampled_from([0, 1, 3, 50]), st.booleans())
def test_fast_audit_equals_reference_on_random_releases(rel, model, block, detail, with_source):
    gt, st_, src = rel
    if model.sensitive == ("d",):
        st_ = {b: {"d": cells["d"]} for b, cells in st_.items()}
        src = {r: {"d": v["d"]} for r, v in src.items()}
    _same_as_reference(gt, st_, model, source=src if with_source else None, detail=detail, block=block)


def test_fast_audit_two_common_values_in_different_words_are_no_singleton():
    # s1 has 70 values (two mask words); bucket 2 shares two of them with bucket 1, one in each
    # word: not a singleton; bucket 3 shares one: a singleton.
    st_ = {1: {"d": {"v"}, "s1": set(range(70))}, 2: {"d": {"v"}, "s1": {0, 69}}, 3: {"d": {"v"}, "s1": {69}}}
    m = fc.sa_model(["d", "s1"], "d")
    ref = _same_as_reference([], st_, m)
    assert [(f.i, f.j) for f in ref.pairs if f.singletons] == [(1, 3), (2, 3)]
    assert fcorr_fast._words([1 | 1 << 69], 70).tolist() == [[1, 32]]


def test_fast_audit_random_releases_reach_breaches_and_several_words():
    # Guard against vacuous properties: multi-word domains with breaches and vulnerable records.
    rnd = random.Random(7)
    seen = Counter()
    for _ in range(60):
        n, nb = rnd.randint(20, 60), rnd.randint(3, 12)
        src = {f"r{r}": {"d": rnd.randint(0, 99), "s1": rnd.randint(0, 149), "s2": rnd.randint(0, 2),
                         "s3": rnd.randint(0, 69)} for r in range(n)}
        gt = [(f"r{r}", ("*",), r % nb, 0) for r in range(n)]
        s = _same_as_reference(gt, build_st(gt, src), fc.sa_model(WIDE, "d"), source=src, block=7).summary
        seen["pairs"] += s["n_linkable_pairs"] > 0
        seen["correct"] += s["n_vulnerable_correct"] > 0
    assert seen["pairs"] > 30 and seen["correct"] > 10


def test_fast_audit_calls_the_tick_once_per_block():
    ticks = []
    fcorr_fast.audit(GT2, ST3, MODEL, source=SOURCE, block=1, tick=lambda: ticks.append(1))
    assert len(ticks) >= 4  # one block per bucket at block=1, and more for the records


@pytest.mark.parametrize("source", [None, {}])
def test_fast_audit_of_an_empty_release(source):
    ref = _same_as_reference([], {}, fc.sa_model(["d", "s"], "d"), source=source)
    assert ref.summary["n_buckets"] == 0 and ref.summary["n_vulnerable_covered"] == 0
