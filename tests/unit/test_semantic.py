"""Unit tests for pganon_engine.methods.semantic (semantic, rules, classes; spec
003-msa-comparative.md §2.3, §3.2, §4.2-4.4, A10-A16, claim C8).

The heart-disease fixture first (Table 2 -> Table 3's flagged class -> Table 4, with QID-NCP
16.67% -> 61.11% and DM 27 -> 45 under the §4.4 conventions), then rule semantics (A12, A13),
the merge loop's choices, hypothesis properties checked by a small independent coverage
reader, and bad input.
"""

from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pganon_engine.methods.semantic import rules as sr, semantic as sm
from pganon_engine.core.errors import EngineError
from pganon_engine.hierarchy.tree import Hierarchy

SAS = ["cp", "trestbps", "fbs", "thalach", "restecg"]
# Table 2 (spec §4.2): Age interval, Sex, then the five SAs; three ECs of three rows.
TABLE2 = [
    ((20, 30), "M", [("typical angina", 145, 108, 150, 0), ("asymptomatic", 130, 101, 162, 1),
                     ("atypical angina", 120, 110, 148, 0)]),
    ((30, 40), "F", [("atypical angina", 172, 130, 178, 1), ("typical angina", 160, 125, 187, 1),
                     ("atypical angina", 150, 130, 172, 1)]),
    ((40, 50), "M", [("non-anginal pain", 140, 105, 153, 0), ("asymptomatic", 120, 110, 114, 1),
                     ("atypical angina", 138, 110, 151, 1)]),
]
CLASSES = [{"n": len(rows), "qi": [age, {sex}],
            "sa": {s: Counter(r[i] for r in rows) for i, s in enumerate(SAS)}}
           for age, sex, rows in TABLE2]
# §4.4 conventions: Age domain [20, 50] (span 30), Sex leaf 0 / '*' 1.
QIS = [{"name": "age", "kind": "numeric", "lo": 20, "hi": 50},
       {"name": "sex", "kind": "categorical", "values": ["M", "F"]}]
# §2.3 formalized rules H1-H5 (A12: trestbps/thalach inclusive, fbs strict, restecg > .5)
RULES = [
    {"id": "H1", "sa": "cp", "op": "in", "values": ["typical angina", "atypical angina"],
     "category": "heart disease"},
    {"id": "H2", "sa": "trestbps", "op": "between", "low": 150, "high": 200,
     "category": "high resting blood pressure"},
    {"id": "H3", "sa": "fbs", "op": ">", "value": 120, "category": "blood sugar disease"},
    {"id": "H4", "sa": "thalach", "op": "between", "low": 170, "high": 202,
     "category": "heart disease"},
    {"id": "H5", "sa": "restecg", "op": ">", "value": 0.5, "category": "heart disease"},
]


# --------------------------------------------------------------------------------------------
# The fixture (C8)
# --------------------------------------------------------------------------------------------


def test_table3_flags_only_the_30_40_female_class():
    """Spec §4.3 coverage table: [30,40]/F is 3/3 on all five rules; [20,30] (cp 2/3) and
    [40,50] (restecg 2/3) are not flagged at theta 1."""
    assert sm.check(CLASSES, RULES) == [{
        "ec": 1, "rules": ["H1", "H2", "H3", "H4", "H5"],
        "coverage": {f"H{k}": 1.0 for k in range(1, 6)},
        "categories": ["heart disease", "high resting blood pressure", "blood sugar disease"]}]


def test_a_lower_theta_flags_the_two_thirds_classes():
    """theta 2/3 (exact): [20,30] by cp 2/3 and [40,50] by restecg 2/3 join (A11's threshold)."""
    got = sm.check(CLASSES, RULES, theta=Fraction(2, 3))
    assert [(f["ec"], f["rules"]) for f in got] == [
        (0, ["H1"]), (1, ["H1", "H2", "H3", "H4", "H5"]), (2, ["H5"])]
    assert got[0]["coverage"] == {"H1": pytest.approx(2 / 3)}


def test_table4_merges_30_40_female_into_40_50():
    """Spec §4.4: {[30,40], F} + {[40,50], M} -> {[30,50], *} with all six SA tuples; the
    merged class (restecg 5/6, cp 4/6) has no effective rule, so one merge."""
    res = sm.anonymize(CLASSES, QIS, RULES)
    assert [(c.members, c.n, c.cells) for c in res.classes] == [
        ((0,), 3, ((20, 30), "M")), ((1, 2), 6, ((30, 50), "*"))]
    assert res.class_of == [0, 1, 1]
    assert res.classes[1].sa["restecg"] == Counter({1: 5, 0: 1})
    (entry,) = res.log
    assert entry["ec"] == (1,) and entry["with"] == (2,) and entry["action"] == "merge"
    assert entry["rules"] == ["H1", "H2", "H3", "H4", "H5"]
    assert entry["changes"] == {"age": "[30, 40] -> [30, 50]", "sex": "F -> *"}
    assert res.flagged == sm.check(CLASSES, RULES)
    assert sm.check([{"n": c.n, "qi": [], "sa": c.sa} for c in res.classes], RULES) == []


def test_table2_to_table4_information_loss():
    """§4.4: QID-NCP% 16.67 -> 61.11 (Age width / 30, Sex leaf 0, '*' 1), DM 27 -> 45, GLM
    1/6 -> 11/18; the loop's own cost (the NCP increase it logged, 8) is the same NCP."""
    before = sm.measures(CLASSES, QIS)
    res = sm.anonymize(CLASSES, QIS, RULES)
    after = sm.measures(res.classes, QIS)
    assert before["ncp_percent"] == pytest.approx(100 / 6)
    assert after["ncp_percent"] == pytest.approx(1100 / 18)
    assert (before["dm"], after["dm"]) == (27, 45)
    assert (before["glm"], after["glm"]) == (pytest.approx(1 / 6), pytest.approx(11 / 18))
    assert res.log[0]["ncp_increase"] == pytest.approx(
        (after["ncp_percent"] - before["ncp_percent"]) * 9 * 2 / 100)


def test_the_tie_goes_to_the_following_class():
    """[30,40]/F costs 8 with either neighbour ([20,40] or [30,50], both width 20 and '*');
    S4 takes the following one.  When the flagged class is last, the preceding one."""
    res = sm.anonymize(CLASSES, QIS, RULES)
    assert res.log[0]["with"] == (2,)
    flipped = [CLASSES[0], CLASSES[2], CLASSES[1]]
    flipped_qis = QIS
    res = sm.anonymize(flipped, flipped_qis, RULES)
    assert res.log[0]["ec"] == (2,) and res.log[0]["with"] == (1,)


def test_merges_repeat_until_no_rule_is_effective():
    """v >= 10 covers EC0 {10, 11} and EC1 {12, 13} but not EC2 {1, 2}.  EC0 merges with EC1
    (width 20 beats 30), the merged class is still all >= 10, so it merges with EC2: 2 steps."""
    cls = [{"n": 2, "qi": [(0, 10)], "sa": {"v": {10: 1, 11: 1}}},
           {"n": 2, "qi": [(10, 20)], "sa": {"v": {12: 1, 13: 1}}},
           {"n": 2, "qi": [(20, 30)], "sa": {"v": {1: 1, 2: 1}}}]
    res = sm.anonymize(cls, [{"name": "x", "kind": "numeric", "lo": 0, "hi": 30}],
                       [{"id": "R", "sa": "v", "op": ">=", "value": 10}])
    assert [e["ec"] for e in res.log] == [(0,), (0, 1)]
    assert [(c.members, c.cells) for c in res.classes] == [((0, 1, 2), ((0, 30),))]


def test_hierarchy_gives_the_lca_instead_of_star():
    """With a Sex-like hierarchy M, F -> Person and zip codes 1301, 1302 -> 130* -> *, merged
    cells are LCAs; NCP of 130* is 2/4 of the zip leaves."""
    zips = Hierarchy.from_paths("zip", [["1301", "130*", "*"], ["1302", "130*", "*"],
                                        ["1401", "140*", "*"], ["1402", "140*", "*"]])
    cls = [{"n": 2, "qi": [{"1301"}], "sa": {"d": {"flu": 2}}},
           {"n": 2, "qi": [{"1302"}], "sa": {"d": {"cold": 2}}},
           {"n": 2, "qi": [{"1401", "1402"}], "sa": {"d": {"cold": 1, "flu": 1}}}]
    qis = [{"name": "zip", "kind": "categorical", "hierarchy": zips}]
    res = sm.anonymize(cls, qis, [{"id": "F", "sa": "d", "op": "=", "value": "flu"}])
    assert [(c.members, c.cells) for c in res.classes] == [((0, 1), ("130*",)), ((2,), ("140*",))]
    assert sm.measures(res.classes, qis)["ncp_percent"] == pytest.approx(50.0)


def test_a_rule_covering_the_whole_table_is_refused_before_merging():
    """restecg > .5 (and cp angina) cover 6 of 9 records: at theta 0.6 every partition keeps a
    class at >= 0.6, so the loop could only end as one class (S7)."""
    with pytest.raises(EngineError) as e:
        sm.anonymize(CLASSES, QIS, RULES[4:], theta=0.6)
    assert e.value.sqlstate == "PA005"
    assert str(e.value).startswith("rule H5 covers 0.6667 of the whole table, theta is 0.6")
    assert "H5" in e.value.hint
    with pytest.raises(EngineError) as e:
        sm.anonymize(CLASSES, QIS, RULES, theta=0.6)
    assert str(e.value).startswith("rule H1 covers 0.6667 of the whole table (so do H5)")


# --------------------------------------------------------------------------------------------
# Rule semantics (A12, A13)
# --------------------------------------------------------------------------------------------


def rule(**kw):
    return sr.parse_rules([dict(id="R", sa="s", **kw)])[0]


@pytest.mark.parametrize("r, value, expected", [
    (dict(op="between", low=150, high=200), 150, True),      # inclusive (A12)
    (dict(op="between", low=150, high=200), 200, True),
    (dict(op="between", low=150, high=200), 201, False),
    (dict(op=">", value=120), 120, False),                   # strict
    (dict(op=">", value=120), 121, True),
    (dict(op=">", value=0.5), 1, True),
    (dict(op=">", value=0.5), 0, False),
    (dict(op=">=", value=0.5), Fraction(1, 2), True),
    (dict(op="<", value="1.5"), 1.25, True),                 # text that reads as a number
    (dict(op="<=", value=10), "10", True),
    (dict(op="=", value=150), "150", True),
    (dict(op="=", value=0.1), "0.1", True),                  # a float read through its repr
    (dict(op="=", value="flu"), "flu", True),
    (dict(op="=", value="flu"), "Flu", False),
    (dict(op=">", value=120), "high", False),                # a number and a text never compare
    (dict(op="=", value=1), "one", False),
    (dict(op=">", value="2020-01-31"), "2020-02-01", True),  # text order: ISO dates
    (dict(op="in", values=["typical angina", "atypical angina"]), "atypical angina", True),
    (dict(op="in", values=[1, 2]), 2.0, True),
    (dict(op="in", values=[1, 2]), None, False),             # NULL satisfies nothing
])
def test_rule_predicates(r, value, expected):
    assert rule(**r).matches(value) is expected


def test_rules_in_the_catalog_shape():
    """pganon.semantic_rule rows hold (predicate, vals text[]): between {low, high}, one value
    for the comparisons; text bounds compare with numbers as numbers (S2)."""
    between = rule(op="between", values=["150", "200"])
    assert between.value == ("150", "200") and between.matches(150) and not between.matches(201)
    assert rule(op=">", values=["0.5"]).matches("1")
    with pytest.raises(EngineError) as e:
        rule(op="between", values=["150"])
    assert e.value.sqlstate == "PA002" and "'between' needs 2 value(s)" in str(e.value)


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

ZIP = Hierarchy.from_paths("z", [["a1", "A", "*"], ["a2", "A", "*"], ["b1", "B", "*"],
                                 ["b2", "B", "*"], ["c1", "*"]])


@st.composite
def tables(draw):
    """Random classes: a numeric QI (interval in [0, 100]), a categorical QI with or without a
    hierarchy, two SAs with small integer values; random rules."""
    hier = draw(st.booleans())
    k = draw(st.integers(1, 7))
    classes = []
    for _ in range(k):
        n = draw(st.integers(1, 5))
        lo = draw(st.integers(0, 100))
        hi = draw(st.integers(lo, 100))
        cat = draw(st.sets(st.sampled_from(["a1", "a2", "b1", "b2", "c1"]), min_size=1, max_size=2))
        sa = {s: Counter(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))) for s in ("x", "y")}
        classes.append({"n": n, "qi": [(lo, hi), cat], "sa": sa})
    qis = [{"name": "age", "kind": "numeric", "lo": 0, "hi": 100},
           {"name": "z", "kind": "categorical", "hierarchy": ZIP} if hier else
           {"name": "z", "kind": "categorical", "size": 5}]
    rules = []
    for i in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(sr.OPS))
        r = {"id": f"R{i}", "sa": draw(st.sampled_from(["x", "y"])), "op": op}
        if op == "in":
            r["values"] = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
        elif op == "between":
            a, b = sorted(draw(st.lists(st.integers(0, 5), min_size=2, max_size=2)))
            r["low"], r["high"] = a, b
        else:
            r["value"] = draw(st.integers(0, 5))
        rules.append(r)
    theta = draw(st.sampled_from([1, 0.75, Fraction(2, 3), 0.5]))
    return classes, qis, rules, theta


def coverage(sa, n, r):
    """Independent reading of a rule on integer SA values."""
    ops = {"in": lambda v: v in r.get("values", ()), "=": lambda v: v == r.get("value"),
           "between": lambda v: r.get("low", 0) <= v <= r.get("high", 0),
           ">": lambda v: v > r.get("value"), ">=": lambda v: v >= r.get("value"),
           "<": lambda v: v < r.get("value"), "<=": lambda v: v <= r.get("value")}
    return Fraction(sum(c for v, c in sa[r["sa"]].items() if ops[r["op"]](v)), n)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables())
def test_anonymize_properties(data):
    """Refused exactly when a rule covers the whole table; otherwise no output class has an
    effective rule, every input class is in exactly one output class (records kept), merges
    never lower a class's distinct values per SA, and output cells cover the members' cells."""
    classes, qis, rules, theta = data
    theta_f = Fraction(str(theta)) if isinstance(theta, float) else Fraction(theta)
    N = sum(c["n"] for c in classes)
    whole = {s: sum((c["sa"][s] for c in classes), Counter()) for s in ("x", "y")}
    doomed = any(coverage(whole, N, r) >= theta_f for r in rules)
    try:
        res = sm.anonymize(classes, qis, rules, theta=theta)
    except EngineError as e:
        assert e.sqlstate == "PA005" and doomed
        return
    assert not doomed
    members = sorted(i for c in res.classes for i in c.members)
    assert members == list(range(len(classes)))
    for k, c in enumerate(res.classes):
        assert all(res.class_of[i] == k for i in c.members)
        assert c.n == sum(classes[i]["n"] for i in c.members)
        for s in ("x", "y"):
            assert c.sa[s] == sum((classes[i]["sa"][s] for i in c.members), Counter())
            assert len(c.sa[s]) >= max(len(classes[i]["sa"][s]) for i in c.members)
        assert all(coverage(c.sa, c.n, r) < theta_f for r in rules)
        lo, hi = c.cells[0]
        assert all(lo <= classes[i]["qi"][0][0] and classes[i]["qi"][0][1] <= hi for i in c.members)
        vals = set().union(*(classes[i]["qi"][1] for i in c.members))
        cell = c.cells[1]
        if len(vals) == 1:
            assert cell == next(iter(vals))
        elif "hierarchy" in qis[1]:
            assert all(ZIP.generalizes(cell, v) for v in vals)
        elif len(c.members) > 1:
            assert cell == "*"
        else:
            assert cell == frozenset(vals)
    assert len(res.log) == len(classes) - len(res.classes)


@settings(max_examples=100, deadline=None)
@given(data=tables())
def test_merge_cost_is_the_ncp_increase(data):
    """Each logged NCP increase equals the change of `measures`' QID-NCP (workload W1) over
    that step, so the loop minimizes the metric it reports."""
    classes, qis, rules, theta = data
    assume(len(classes) >= 2)
    try:
        res = sm.anonymize(classes, qis, rules, theta=theta)
    except EngineError:
        return
    before = sm.measures(classes, qis)["ncp_percent"]
    after = sm.measures(res.classes, qis)["ncp_percent"]
    N = sum(c["n"] for c in classes)
    assert sum(e["ncp_increase"] for e in res.log) == pytest.approx((after - before) * N * 2 / 100,
                                                                    abs=1e-9)


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------

ONE = [{"n": 2, "qi": [(20, 30), {"M"}], "sa": {"cp": {"a": 1, "b": 1}}}]


@pytest.mark.parametrize("call, sqlstate, fragment", [
    (lambda: sm.anonymize(ONE, QIS, [{"id": "R", "sa": "cp", "op": "~", "value": 1}]),
     "PA002", "unknown op '~'"),
    (lambda: sm.anonymize(ONE, QIS, [{"id": "R", "sa": "cp", "op": "between", "low": 5, "high": 1}]),
     "PA002", "low 5 is above high 1"),
    (lambda: sm.anonymize(ONE, QIS, [{"id": "R", "sa": "cp", "op": "between", "low": 1, "high": "z"}]),
     "PA002", "not both numbers or both text"),
    (lambda: sm.anonymize(ONE, QIS, [{"id": "R", "sa": "cp", "op": "in", "values": "ab"}]),
     "PA002", "'in' needs a list"),
    (lambda: sm.anonymize(ONE, QIS, [{"id": "R", "sa": "cp", "op": ">"}]),
     "PA002", "'>' needs a value"),
    (lambda: sm.anonymize(ONE, QIS, [{"id": "R", "sa": "cp", "op": "=", "value": 1}] * 2),
     "PA002", "two rules have the id 'R'"),
    (lambda: sm.anonymize(ONE, QIS, [{"id": "R", "sa": "fbs", "op": "=", "value": 1}]),
     "PA002", "rule R reads SA 'fbs'"),
    (lambda: sm.anonymize(ONE, QIS, [], theta=0), "PA002", "theta must be a number in (0, 1]"),
    (lambda: sm.anonymize(ONE, QIS, [], theta=1.5), "PA002", "theta must be a number in (0, 1]"),
    (lambda: sm.anonymize([{"n": 3, "qi": [(20, 30), {"M"}], "sa": {"cp": {"a": 1, "b": 1}}}], QIS, []),
     "PA004", "add up to 2, not to the class's 3 records"),
    (lambda: sm.anonymize([{"n": 2, "qi": [(10, 30), {"M"}], "sa": {"cp": {"a": 2}}}], QIS, []),
     "PA004", "lies outside its domain"),
    (lambda: sm.anonymize([{"n": 2, "qi": [(20, 30), {"X"}], "sa": {"cp": {"a": 2}}}], QIS, []),
     "PA004", "'X' is not in the domain of 'sex'"),
    (lambda: sm.anonymize(ONE, [QIS[0], {"name": "sex", "kind": "categorical"}], []),
     "PA002", "needs a hierarchy, its values or its domain size"),
    (lambda: sm.anonymize(ONE, QIS[:1], []), "PA002", "2 QI cells for 1 QIs"),
])
def test_bad_input_is_refused(call, sqlstate, fragment):
    with pytest.raises(EngineError) as e:
        call()
    assert e.value.sqlstate == sqlstate
    assert fragment in str(e.value)


def test_an_unknown_hierarchy_value_is_refused():
    with pytest.raises(EngineError) as e:
        sm.anonymize([{"n": 1, "qi": [{"zz"}], "sa": {"d": {"x": 1}}}],
                     [{"name": "z", "kind": "categorical", "hierarchy": ZIP}], [])
    assert e.value.sqlstate == "PA004" and "not leaves" in str(e.value)
