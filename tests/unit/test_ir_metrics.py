"""Unit tests for pganon_engine.metrics.ir_metrics (spec 002 §2.10-2.15, §6 items 8-11).

Fixtures: the toy domains Gender {M, F}, Age [30, 39], the 7 postcodes; the distances of the
running example (§4.5, §4.8), the losses of Tables 3 and 4 (§4.7) and the query estimates of
§4.10 (integer-count interval convention).  Every value is compared as an exact fraction."""

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pganon_engine.metrics import ir_metrics as M
from pganon_engine.metrics import estimate
from pganon_engine.metrics import workload as W
from pganon_engine.core.errors import EngineError
from pganon_engine.hierarchy.tree import Hierarchy

POSTCODES = ["10085", "10076", "10086", "10087", "10077", "10070", "10073"]
DOMS = M.domains_of(["gender", "age", "postcode"], ["categorical", "numeric", "categorical"],
                    [("M", 36, "10085"), ("F", 33, "10073")], {"age": (30, 39), "gender": ["M", "F"],
                                                              "postcode": POSTCODES})
PERSON = {1: ("M", 36, "10085"), 2: ("F", 37, "10076"), 3: ("M", 36, "10086"), 4: ("F", 33, "10087"),
          5: ("F", 38, "10077"), 6: ("F", 34, "10070"), 7: ("F", 33, "10073")}
RECORDS = {1: 2, 2: 1, 3: 1, 4: 2, 5: 1, 6: 2, 7: 1}
SA = {1: ["Hypertension", "Heart"], 2: ["Cancer"], 3: ["Hypertension"], 4: ["Hypertension", "Diabetes"],
      5: ["HIV"], 6: ["Leukaemia", "Heart"], 7: ["Syphilis"]}


def element(persons):
    """The identity element of a set of persons and its record count."""
    return M.identity([PERSON[p] for p in persons], DOMS), sum(RECORDS[p] for p in persons)


def dist_to(p, persons):
    q, n = element(persons)
    return M.dist(PERSON[p], RECORDS[p], q, n, DOMS)


def age_tax():
    t = {str(a): "[30,34]" if a < 35 else "[35,39]" for a in range(30, 40)}
    t.update({"[30,34]": "[30,39]", "[35,39]": "[30,39]"})
    return Hierarchy.from_edges("age", t.items())


def postcode_tax():
    t = {c: "1007*" if c.startswith("1007") else "1008*" for c in POSTCODES}
    t.update({"1007*": "100**", "1008*": "100**"})
    return Hierarchy.from_edges("postcode", t.items())


# --------------------------------------------------------------------------------------------
# Item 8: Eqs. 11-12 and the legacy metrics
# --------------------------------------------------------------------------------------------


def test_domains_of_the_toy_example():
    g, a, p = DOMS
    assert (g.size, a.lo, a.hi, p.size) == (2, 30, 39, 7)


def test_eq11_numeric_increment():
    age = DOMS[1]
    assert M.loss(33, (33, 34), age) == F(1, 9)
    assert M.loss((33, 34), (33, 36), age) == F(2, 9)  # ((36-33) - (34-33)) / 9
    assert M.loss(34, 34, age) == 0
    assert M.loss((33, 34), "*", age) == 1 - F(1, 9)


def test_eq12_categorical_increment():
    pc = DOMS[2]
    assert M.loss("10070", {"10070", "10073"}, pc) == F(1, 6)
    assert M.loss({"10070", "10073"}, {"10070", "10073", "10087"}, pc) == F(1, 6)
    assert M.loss("M", {"M", "F"}, DOMS[0]) == 1


def test_legacy_examples():
    """Age 32 -> [30,34]: 4/9 under NCP and GLM; 10073 -> 1007*: NCP 4/7, GLM 1/2."""
    age, pc = DOMS[1], DOMS[2]
    assert M.ncp((30, 34), age) == M.glm((30, 34), age) == M.loss(32, (30, 34), age) == F(4, 9)
    node = M.node_cell(postcode_tax(), "1007*", "categorical")
    assert node == {"10070", "10073", "10076", "10077"}
    assert M.ncp(node, pc) == F(4, 7)
    assert M.glm(node, pc) == M.loss("10073", node, pc) == F(1, 2)
    assert M.ncp("10073", pc) == 0


def test_node_cells_of_the_age_taxonomy():
    h = age_tax()
    assert M.node_cell(h, "[30,34]", "numeric") == (30, 34)
    assert M.node_cell(h, "[30,39]", "numeric") == (30, 39)
    assert M.node_cell(h, "36", "numeric") == (36, 36)


def test_record_loss_eq13():
    assert M.record_loss(PERSON[6], ({"F"}, (33, 34), {"10070", "10073", "10087"}), DOMS) == F(4, 9)
    assert M.record_loss(PERSON[1], ({"M", "F"}, (36, 38), {"10076", "10077", "10085", "10086"}), DOMS) == \
        F(31, 18)


def test_loss_refuses_a_cell_that_does_not_cover():
    with pytest.raises(EngineError, match="does not cover"):
        M.loss((33, 34), (34, 35), DOMS[1])
    with pytest.raises(EngineError, match="does not cover"):
        M.loss("*", (30, 39), DOMS[1])


# --------------------------------------------------------------------------------------------
# Item 9: distances (Eqs. 16-18)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("person, cls, expected", [
    # step 1: Q = {6}
    (7, {6}, F(5, 6)), (1, {6}, F(50, 9)), (2, {6}, F(3, 2)), (3, {6}, F(25, 6)), (4, {6}, F(10, 9)),
    (5, {6}, F(11, 6)),
    # step 2: Q = {6, 7}
    (4, {6, 7}, F(25, 18)), (1, {6, 7}, F(15, 2)), (2, {6, 7}, F(41, 18)), (3, {6, 7}, F(35, 6)),
    (5, {6, 7}, F(49, 18)),
    # step 3: Q = {3}; steps 4-5 (derived)
    (1, {3}, F(1, 2)), (2, {3}, F(23, 9)), (5, {3}, F(25, 9)),
    (2, {3, 1}, F(95, 18)), (5, {3, 1}, F(103, 18)), (5, {3, 1, 2}, F(17, 6)),
    # Handle of DAnonyIR_kl: Tina to {4,6,7} and to {1,2,3}
    (5, {4, 6, 7}, F(37, 9)),
])
def test_person_to_class_distances(person, cls, expected):
    assert dist_to(person, cls) == expected


def test_person_to_person_distance_eq16():
    assert M.dist(PERSON[4], 2, PERSON[6], 2, DOMS) == F(10, 9)
    assert M.dist(PERSON[6], 2, PERSON[4], 2, DOMS) == F(10, 9)


@pytest.mark.parametrize("other, expected", [({3}, F(79, 9)), ({3, 1}, F(239, 18)), ({3, 1, 2}, F(25, 2))])
def test_class_to_class_distances_eq18(other, expected):
    q1, n1 = element({4, 6, 7})
    q, n = element(other)
    assert M.dist(q1, n1, q, n, DOMS) == expected


def test_paper_three_decimal_values():
    """§4.5's printed values (7.501 and 5.834 are rounding artefacts, §4.11)."""
    printed = {(7, frozenset({6})): 0.833, (1, frozenset({6})): 5.556, (2, frozenset({6})): 1.5,
               (3, frozenset({6})): 4.167, (4, frozenset({6})): 1.111, (5, frozenset({6})): 1.833,
               (4, frozenset({6, 7})): 1.389, (2, frozenset({6, 7})): 2.278, (5, frozenset({6, 7})): 2.722,
               (1, frozenset({3})): 0.5}
    for (p, cls), v in printed.items():
        assert round(float(dist_to(p, cls)), 3) == v
    assert dist_to(1, {6, 7}) == F(15, 2) and round(float(dist_to(3, {6, 7})), 4) == 5.8333


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(sorted(PERSON)), min_size=1, max_size=4, unique=True),
       st.lists(st.sampled_from(sorted(PERSON)), min_size=1, max_size=4, unique=True))
def test_distance_is_symmetric_and_the_joint_loss_increment(a, b):
    ea, na = element(a)
    eb, nb = element(b)
    d = M.dist(ea, na, eb, nb, DOMS)
    assert d == M.dist(eb, nb, ea, na, DOMS) and d >= 0
    joint = M.identity([ea, eb], DOMS)
    per_record = lambda e: sum(M.glm(c, dom) for c, dom in zip(e, DOMS))  # noqa: E731
    assert d == (na + nb) * per_record(joint) - na * per_record(ea) - nb * per_record(eb)


# --------------------------------------------------------------------------------------------
# Item 10: Loss and NLoss of Tables 4 and 3
# --------------------------------------------------------------------------------------------

T4 = [(5, ({"F"}, (33, 34), {"10070", "10073", "10087"})),
      (5, ({"M", "F"}, (36, 38), {"10076", "10077", "10085", "10086"}))]


def test_table4_loss_and_nloss():
    lo = M.table_loss(T4, DOMS)
    assert lo.total == F(65, 6) and lo.nloss == F(13, 36)
    assert (lo.records, lo.suppressed_records) == (10, 0)


def test_table3_loss_and_nloss_under_glm():
    g = Hierarchy.from_edges("gender", [("M", "*"), ("F", "*")])
    age, pc = age_tax(), postcode_tax()
    q1 = (M.node_cell(g, "F", "categorical"), M.node_cell(age, "[30,39]", "numeric"),
          M.node_cell(pc, "1007*", "categorical"))
    q2 = (M.node_cell(g, "*", "categorical"), M.node_cell(age, "[30,39]", "numeric"),
          M.node_cell(pc, "1008*", "categorical"))
    assert sum(M.glm(c, d) for c, d in zip(q1, DOMS)) == F(3, 2)
    assert sum(M.glm(c, d) for c, d in zip(q2, DOMS)) == F(7, 3)
    lo = M.table_loss([(5, q1), (5, q2)], DOMS)
    assert lo.total == F(115, 6) and lo.nloss == F(23, 36)
    assert lo.total / M.table_loss(T4, DOMS).total == F(115, 65)


def test_suppression_costs_one_per_qi_value():
    lo = M.table_loss([], DOMS, suppressed_records=10)
    assert lo.total == 30 and lo.nloss == 1
    lo = M.table_loss(T4[:1], DOMS, suppressed_records=5)
    assert lo.total == 5 * F(4, 9) + 15 and lo.nloss == (5 * F(4, 9) + 15) / 30


def test_float_domains_give_float_losses():
    d = M.domains_of(["x"], ["numeric"], [(0.5,), (1.75,)])
    assert M.glm((0.5, 1.0), d[0]) == pytest.approx(0.4)
    assert M.exact(2.0) == 2 and isinstance(M.exact(2.0), int)


# --------------------------------------------------------------------------------------------
# Item 11: query estimates (Eq. 19, §4.10)
# --------------------------------------------------------------------------------------------

DISEASES = ["Hypertension", "Heart", "Cancer", "Diabetes", "HIV", "Leukaemia", "Syphilis"]
QDOMS = DOMS + (W.Domain.categorical("disease", DISEASES),)


def release(classes):
    """(QI cells, SA values of the records) per class from person sets and their cells."""
    return [(cells, [v for p in sorted(persons) for v in SA[p]]) for persons, cells in classes]


T4_REL = release([({4, 6, 7}, T4[0][1]), ({1, 2, 3, 5}, T4[1][1])])
T3_REL = release([({2, 5, 6, 7}, ({"F"}, (30, 39), {"10070", "10073", "10076", "10077"})),
                  ({1, 3, 4}, ({"M", "F"}, (30, 39), {"10085", "10086", "10087"}))])
QUERIES = [{"gender": ["F"], "disease": ["Hypertension"]},
           {"age": (33, 35), "disease": ["Heart"]},
           {"postcode": ["10070", "10073"], "disease": ["Syphilis"]}]


def test_true_counts_on_table2():
    q = W.queries_from_predicates(QDOMS, QUERIES)
    data = M.record_columns([(PERSON[p], SA[p]) for p in sorted(PERSON)], QDOMS)
    assert W.true_counts(q, data).tolist() == [1, 1, 1]


@pytest.mark.parametrize("rel, est, rel_err", [
    (T4_REL, [2, 1, F(2, 3)], [1, 0, F(1, 3)]),
    (T3_REL, [F(3, 2), F(3, 5), F(1, 2)], [F(1, 2), F(2, 5), F(1, 2)]),
], ids=["table4", "table3"])
def test_query_estimates_of_4_10(rel, est, rel_err):
    q = W.queries_from_predicates(QDOMS, QUERIES)
    got = M.estimates(q, rel)
    assert got == pytest.approx([float(x) for x in est], abs=1e-12)
    assert M.relative_errors([1, 1, 1], got) == pytest.approx([float(x) for x in rel_err], abs=1e-12)
    err = estimate.query_error(q, np.ones(3), got)
    assert err.mean == pytest.approx(float(sum(rel_err)) / 3) and err.used == 3


def test_relative_error_is_undefined_for_a_zero_count():
    r = M.relative_errors([0, 2], [1.0, 1.0])
    assert np.isnan(r[0]) and r[1] == 0.5


def test_query_cells_count_records_per_class():
    cells, counts = M.query_cells(T4_REL)
    assert counts == [5, 5]
    assert cells[1][-1] == {"Hypertension": 2, "Heart": 1, "Cancer": 1, "HIV": 1}


# --------------------------------------------------------------------------------------------
# Domains: overrides and refusals
# --------------------------------------------------------------------------------------------


def test_observed_domains_by_default():
    d = M.domains_of(["age", "pc"], ["numeric", "categorical"], [(33, "a"), (38, "b"), (36, "a")])
    assert (d[0].lo, d[0].hi) == (33, 38) and d[1].categories == ("a", "b")


@pytest.mark.parametrize("overrides, text", [
    ({"age": (35, 39)}, "outside its domain"),
    ({"pc": ["a"]}, "outside its domain: 'b'"),
    ({"zip": (0, 1)}, "unknown QI(s) ['zip']"),
    ({"pc": "ab"}, "must list its values"),
])
def test_bad_domain_overrides(overrides, text):
    with pytest.raises(EngineError) as e:
        M.domains_of(["age", "pc"], ["numeric", "categorical"], [(33, "a"), (38, "b")], overrides)
    assert text in str(e.value)


def test_zero_width_domains_cost_nothing():
    d = M.domains_of(["age", "g"], ["numeric", "categorical"], [(33, "F"), (33, "F")])
    assert M.glm(33, d[0]) == 0 and M.glm("F", d[1]) == 0
    assert M.table_loss([(2, ((33, 33), {"F"}))], d).nloss == 0
