"""Unit tests for pganon_engine.methods.linked.ck_cells (spec 004-ck-anonymization.md): GT and ST
cells of Tables 2 and 3, the linkable-pair intersections of eq. (3) on Tables 3 and 6, and NCP.

Expected values are the paper's tables as transcribed in the spec (sections 1.3, 3, 4.1 and 8),
never outputs of the engine."""

from collections import Counter

import pytest
from hypothesis import given, settings

from pganon_engine.methods.linked import ck_cells, ck_grouping
from test_ck_plan import BY_PID, QIS, ROWS, SAS, TABLE2, TABLE3, TABLE5, TABLE6, ZETA, canon, small_tables, st_of


# --------------------------------------------------------------------------------------------
# GT/ST cells of the (p,k) tables and the fcorr intersections (claims 8.5, 8.6, 8.7, 8.9)
# --------------------------------------------------------------------------------------------


def test_table2_batches_give_table2_gt_and_table3_sbt():
    ids = [r["pid"] for r in ROWS]
    batch_of = {pid: b for b, (members, _, _) in TABLE2.items() for pid in members}
    bids = [batch_of[x] for x in ids]
    gen = ck_cells.generalize([[BY_PID[x][q] for q in QIS] for x in ids], bids, 2, categorical="suppress")
    for b, (members, age, zipcode) in TABLE2.items():
        assert gen.groups[b].cells == ("*", age, zipcode)  # "Person" per record, ranges
        assert gen.groups[b].n == len(members)
    sa_rows = [[canon(BY_PID[x][a]) for a in SAS] for x in ids]
    assert ck_cells.sensitive_table(sa_rows, SAS, bids) == TABLE3


def test_linkable_pairs_table3_three_table6_one():
    l3 = ck_cells.intersections(TABLE3, "physician")
    assert [(x.i, x.j, set(x.via)) for x in l3] == [(1, 3, {"alan"}), (2, 3, {"jack"}),
                                                    (2, 4, {"tom"})]
    l6 = ck_cells.intersections(TABLE6, "physician")
    assert [(x.i, x.j, set(x.via)) for x in l6] == [(2, 3, {"tom"})]


def test_fcorr_on_table3_succeeds():
    e = frozenset()
    want = {
        (1, 3): dict(cancer_type={"breast"}, cancer_treatment={"surgery"}, symptom={"back pain"},
                     diagnosis_method=e, diagnosis_date=e),
        (2, 3): dict(diagnosis_method={"chest x-ray"}, symptom={"back pain"}, cancer_type=e,
                     cancer_treatment=e, diagnosis_date=e),
        (2, 4): dict(cancer_type={"prostrate"}, symptom={"abdominal pain"},
                     diagnosis_method={"blood test", "ct scan"}, cancer_treatment=e,
                     diagnosis_date=e),
    }
    links = ck_cells.intersections(TABLE3, "physician")
    assert {(x.i, x.j): {a: set(v) for a, v in x.cells.items()} for x in links} == \
        {p: {a: set(v) for a, v in c.items()} for p, c in want.items()}
    singles = [(x.i, x.j, a) for x in links for a, v in x.cells.items() if len(v) == 1]
    assert len(singles) == 7
    non_zeta = {next(iter(x.cells[a])) for x in links for a in x.cells
                if a not in ZETA and len(x.cells[a]) == 1}
    assert non_zeta == {"breast", "surgery", "chest x-ray", "prostrate"}
    assert not any(all(len(v) == 1 for v in x.cells.values()) for x in links)  # no ffcorr


def test_fcorr_on_table6_fails():
    (link,) = ck_cells.intersections(TABLE6, "physician")
    assert (link.i, link.j) == (2, 3)
    assert {a: set(v) for a, v in link.cells.items()} == dict(
        cancer_type=set(), cancer_treatment=set(), diagnosis_method={"blood test", "ct scan"},
        symptom=set(), diagnosis_date=set())


def test_alternative_refinements_of_spec_2_6():
    # p4 <-> p7 instead of p4 <-> p6: only eq. (5) holds (symptom {Abdominal pain}, a zeta SA).
    (link,) = ck_cells.intersections(st_of({2: ["p3", "p7"], 3: ["p4", "p5", "p6"]}), "physician")
    single = {a: set(v) for a, v in link.cells.items() if len(v) == 1}
    assert single == {"symptom": {"abdominal pain"}}
    # Unbalanced reading: FB2 = {p3,p4,p6}, FB3 = {p5,p7} violates via {Prostrate}.
    (link,) = ck_cells.intersections(st_of({2: ["p3", "p4", "p6"], 3: ["p5", "p7"]}), "physician")
    assert set(link.cells["cancer_type"]) == {"prostrate"}


# --------------------------------------------------------------------------------------------
# NCP (spec 4.1, claim 8.10)
# --------------------------------------------------------------------------------------------


def _ncp_of(partition, categorical, qis=QIS):
    ids = [r["pid"] for r in ROWS]
    gid = {pid: g for g, members in enumerate(partition, start=1) for pid in members}
    gen = ck_cells.generalize([[BY_PID[x][q] for q in qis] for x in ids], [gid[x] for x in ids], 2,
                        categorical=categorical)
    return ck_cells.ncp(gen.groups.values(), gen.domains)


def test_ncp_tables_2_and_5():
    t2 = [m for m, _, _ in TABLE2.values()]
    t5 = [m for m, *_ in TABLE5]
    pk, ckv = _ncp_of(t2, "suppress"), _ncp_of(t5, "keep")
    assert pk.total == pytest.approx(16.751, abs=5e-4)
    assert pk.percent == pytest.approx(62.04, abs=5e-3)
    assert ckv.total == pytest.approx(9.308, abs=5e-4)
    assert ckv.percent == pytest.approx(34.47, abs=5e-3)
    assert ckv.total < pk.total
    pk2, ck2 = _ncp_of(t2, "suppress", ["age", "zipcode"]), _ncp_of(t5, "keep", ["age", "zipcode"])
    assert pk2.total == pytest.approx(7.751, abs=5e-4) and pk2.percent == pytest.approx(43.06, abs=5e-3)
    assert ck2.total == pytest.approx(4.308, abs=5e-4) and ck2.percent == pytest.approx(23.93, abs=5e-3)


def test_ncp_per_group_values_of_spec_4_1():
    # (p,k) B1 (2 rows): 1 + 4/17 + 2958/10909; (c,k) EC1 (4 rows): 0 + 6/17 + 2958/10909.
    assert ck_cells.ncp([(2, ("*", (22, 26), (34548, 37506)))], [2, 17, 10909]).total == \
        pytest.approx(2 * (1 + 4 / 17 + 2958 / 10909))
    assert ck_cells.ncp([(4, (None, (21, 27), (34548, 37506)))], [2, 17, 10909]).total == \
        pytest.approx(4 * (6 / 17 + 2958 / 10909))
    # value-set convention: |covered| / |domain|, 0 for a single value.
    assert ck_cells.ncp([(3, (frozenset("ab"),)), (1, (frozenset("a"),))], [4]).total == pytest.approx(1.5)


def test_ncp_weights_length_mismatch_raises():
    with pytest.raises(ValueError, match="weights"):
        ck_cells.ncp([(1, ((0, 1),))], [1], weights=[1, 2])


@settings(max_examples=150, deadline=None)
@given(small_tables())
def test_generalize_cells_cover_their_records(t):
    rows, k, *_ = t
    qi_rows = [[r["age"], r["zip"], r["sex"]] for r in rows]
    g = ck_grouping.qi_groups(qi_rows, k)
    gen = ck_cells.generalize(qi_rows, g, k)
    kept = Counter()
    for r, cells, gid in zip(qi_rows, gen.rows, g):
        assert cells[0][0] <= r[0] <= cells[0][1] and cells[1][0] <= r[1] <= cells[1][1]
        assert cells[2] in (r[2], "*")
        kept[gid, cells[2]] += 1
    # a kept categorical value is k-anonymous inside its group
    assert all(n >= k for (gid, v), n in kept.items() if v != "*")
    res = ck_cells.ncp(gen.groups.values(), gen.domains)
    assert 0.0 <= res.percent <= 100.0
