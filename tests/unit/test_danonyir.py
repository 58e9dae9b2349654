"""Unit tests for pganon_engine.methods.person.danonyir and pganon_engine.methods.person.geneir (spec 002 §3.2-3.6, §6 items
12-17).

Fixtures: Table 2's seven patients; DAnonyIR with seeds Ella (Id_num 6) then Tim (3) reproduces
Table 4 for EIR l = 3, EIR (0.4, 0.6) and IR (0.4, 0.6); IR (3,3) passes through the
intermediate class {Mike, Lily, Tim} and Handle merges Tina into it; GeneIR with the
generalization order Age, Postcode, Age, Gender reproduces Table 3.  Properties: on random
small inputs the engine equals a literal, exact-fraction reading of Algorithm 1 + Handle written
here from the spec (not from the engine), every published class meets the model, and Handle
never breaks an alpha/beta class."""

from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pganon_engine.methods.person import danonyir as D
from pganon_engine.methods.person import geneir as G
from pganon_engine.metrics import ir_metrics as IM
from pganon_engine.models import hitting_sets as HS, ir_models as M, ir_states as IS
from pganon_engine.core.errors import EngineError
from pganon_engine.hierarchy.tree import Hierarchy

PROPS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Table 2, persons in first-appearance order (Id_num 1..7)
TABLE2 = [("Mike", ("M", 36, "10085"), ["Hypertension", "Heart"]),
          ("Lily", ("F", 37, "10076"), ["Cancer"]),
          ("Tim", ("M", 36, "10086"), ["Hypertension"]),
          ("Jane", ("F", 33, "10087"), ["Hypertension", "Diabetes"]),
          ("Tina", ("F", 38, "10077"), ["HIV"]),
          ("Ella", ("F", 34, "10070"), ["Leukaemia", "Heart"]),
          ("Lucy", ("F", 33, "10073"), ["Syphilis"])]
QIS = ["gender", "age", "postcode"]
AGE = {"age": (30, 39)}
SEEDS = ["Ella", "Tim"]
T4_CLASSES = [({"Jane", "Ella", "Lucy"}, (frozenset({"F"}), (33, 34), frozenset({"10070", "10073", "10087"}))),
              ({"Mike", "Lily", "Tim", "Tina"},
               (frozenset({"M", "F"}), (36, 38), frozenset({"10076", "10077", "10085", "10086"})))]
T3_LABELS = [({"Lily", "Tina", "Ella", "Lucy"}, ("F", "[30,39]", "1007*")),
             ({"Mike", "Tim", "Jane"}, ("*", "[30,39]", "1008*"))]
EL, KL, AB = {"l": 3}, {"k": 3, "l": 3}, {"alpha": 0.4, "beta": 0.6}


def taxonomies():
    age = {str(a): "[30,34]" if a < 35 else "[35,39]" for a in range(30, 40)}
    age.update({"[30,34]": "[30,39]", "[35,39]": "[30,39]"})
    pc = {c: "1007*" if c.startswith("1007") else "1008*" for _, (_, _, c), _ in TABLE2}
    pc.update({"1007*": "100**", "1008*": "100**"})
    return {"gender": {"M": "*", "F": "*"}, "age": age, "postcode": pc}


def assert_table4(r):
    assert [(set(c.persons), c.cells) for c in r.classes] == T4_CLASSES
    assert [c.n_records for c in r.classes] == [5, 5]
    assert r.suppressed == () and r.suppressed_records == 0
    assert r.loss == F(65, 6) and r.nloss == F(13, 36)
    assert dict(zip(r.ids, r.id_num)) == {"Mike": 1, "Lily": 2, "Tim": 3, "Jane": 4, "Tina": 5, "Ella": 6,
                                          "Lucy": 7}
    assert dict(zip(r.ids, r.ec)) == {"Mike": 2, "Lily": 2, "Tim": 2, "Jane": 1, "Tina": 2, "Ella": 1, "Lucy": 1}


def steps(r, kind):
    return [t[1:] for t in r.trace if t[0] == kind]


# --------------------------------------------------------------------------------------------
# Items 12-14: DAnonyIR on the running example
# --------------------------------------------------------------------------------------------


def test_danonyir_el_reproduces_table4():
    r = D.danonyir(TABLE2, QIS, "el", EL, domains=AGE, seeds=SEEDS, trace=True)
    assert_table4(r)
    # §4.5: the distances of steps 1-5 and the class distances of steps 3-5
    adds = steps(r, "add")
    assert [a[0] for a in adds] == ["Lucy", "Jane", "Mike", "Lily", "Tina"]
    expected = [(F(5, 6), None), (F(25, 18), None), (F(1, 2), F(79, 9)), (F(95, 18), F(239, 18)),
                (F(17, 6), F(25, 2))]
    for (_, dp, dq), (ep, eq) in zip(adds, expected):
        assert dp == pytest.approx(float(ep), abs=1e-12)
        assert dq == (float("inf") if eq is None else pytest.approx(float(eq), abs=1e-12))
    assert steps(r, "seed") == [("Ella",), ("Tim",)]
    assert steps(r, "handle") == [] and steps(r, "merge") == []


@pytest.mark.parametrize("model", ["eab", "ab"])
def test_danonyir_alpha_beta_reproduce_table4(model):
    r = D.danonyir(TABLE2, QIS, model, AB, domains=AGE, seeds=SEEDS, trace=True)
    assert_table4(r)
    assert [a[0] for a in steps(r, "add")] == ["Lucy", "Jane", "Mike", "Lily", "Tina"]


def test_danonyir_kl_passes_the_vulnerable_class_and_handles_tina():
    r = D.danonyir(TABLE2, QIS, "kl", KL, domains=AGE, seeds=SEEDS + ["Tina"], trace=True)
    closes = steps(r, "close")
    assert [set(c[1]) for c in closes] == [{"Ella", "Lucy", "Jane"}, {"Tim", "Mike", "Lily"}]
    mid = {p: v for p, _, v in TABLE2 if p in closes[1][1]}
    assert M.ir_kl(mid, 3, 3) and HS.min_hs_size([set(v) for v in mid.values()]) == 2  # vulnerable
    (handle,) = steps(r, "handle")
    name, target, dist, cost = handle
    assert (name, target, cost) == ("Tina", 2, 3)
    assert dist == pytest.approx(17 / 6, abs=1e-12) and dist < cost
    assert_table4(r)


def test_handle_distances_of_tina():
    """Dist(5, {4,6,7}) = 37/9 > Dist(5, {1,2,3}) = 17/6 < 3 (suppression)."""
    r = D.danonyir(TABLE2, QIS, "kl", KL, domains=AGE, seeds=SEEDS)
    assert r.classes[1].persons == ("Tim", "Mike", "Lily", "Tina")  # Tina joined last


def test_danonyir_without_pinned_seeds_is_deterministic_and_valid():
    a = D.danonyir(TABLE2, QIS, "el", EL, domains=AGE)
    b = D.danonyir(TABLE2, QIS, "el", EL, domains=AGE)
    assert [c.persons for c in a.classes] == [c.persons for c in b.classes]
    assert a.classes[0].persons[0] == "Mike"  # first seed: the first person (D3)
    assert M.check("el", EL, a.sa_classes(TABLE2)).holds


def test_seeded_runs_are_reproducible():
    runs = [D.danonyir(TABLE2, QIS, "el", EL, domains=AGE, seed=s, trace=True) for s in (7, 7, 8)]
    assert runs[0].trace == runs[1].trace and runs[0].ec == runs[1].ec
    assert runs[0].seed == 7 and runs[0].release_info()["seed"] == 7
    assert any(t[0] == "seed" for t in runs[2].trace)


def test_release_info_records_what_a_release_needs():
    r = D.danonyir(TABLE2, QIS, "eab", AB, domains=AGE, seeds=SEEDS)
    info = r.release_info()
    assert info["method"] == "danonyir" and info["model"] == "eab"
    assert info["params"] == {"alpha": 0.4, "beta": 0.6} and info["seeds"] == SEEDS
    assert (info["persons"], info["records"], info["classes"], info["suppressed_persons"]) == (7, 10, 2, 0)
    assert info["nloss"] == pytest.approx(13 / 36) and info["tie_rule"].startswith("nearest person: first in input")


def test_table4_release_passes_the_check():
    r = D.danonyir(TABLE2, QIS, "el", EL, domains=AGE, seeds=SEEDS)
    cls = r.sa_classes(TABLE2)
    for model, params in (("kl", KL), ("el", EL), ("ab", AB), ("eab", AB)):
        assert M.check(model, params, cls).holds


# --------------------------------------------------------------------------------------------
# Item 15: GeneIR reproduces Table 3
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model, params", [("kl", KL), ("ab", AB)])
@pytest.mark.parametrize("order", [["age", "postcode", "age", "gender"], ["age", "age", "postcode", "gender"],
                                   ["postcode", "age", "age", "gender"]])
def test_geneir_reproduces_table3(model, params, order):
    r = G.geneir(TABLE2, QIS, taxonomies(), model, params, order=order)
    assert [(set(c.persons), c.labels) for c in r.classes] == T3_LABELS
    assert r.classes[0].cells == (frozenset({"F"}), (30, 39), frozenset({"10070", "10073", "10076", "10077"}))
    assert r.classes[1].cells == (frozenset({"M", "F"}), (30, 39), frozenset({"10085", "10086", "10087"}))
    assert r.loss == F(115, 6) and r.nloss == F(23, 36)
    assert r.order == tuple(order) and r.suppressed == ()
    v = M.vulnerability(r.sa_classes(TABLE2), model, params)
    assert v.share == F(1, 2)  # Table 3's Q2 is vulnerable


def test_geneir_gender_first_shows_star_in_q1():
    r = G.geneir(TABLE2, QIS, taxonomies(), "kl", KL, order=["gender", "age", "postcode", "age"])
    assert r.classes[0].labels[0] == "*"


def test_geneir_accepts_hierarchy_objects_and_seeded_choice():
    tax = {k: Hierarchy.from_edges(k, v.items()) for k, v in taxonomies().items()}
    a = G.geneir(TABLE2, QIS, tax, "kl", KL, seed=3, trace=True)
    b = G.geneir(TABLE2, QIS, taxonomies(), "kl", KL, seed=3, trace=True)
    assert a.trace == b.trace and a.order == b.order
    assert M.check("kl", KL, a.sa_classes(TABLE2)).holds


def test_geneir_refuses_a_qi_pinned_past_its_root():
    with pytest.raises(EngineError, match="after it reached the root"):
        G.geneir(TABLE2, QIS, taxonomies(), "kl", {"k": 7, "l": 7},
                 order=["gender", "gender"])


def test_geneir_refuses_values_that_are_not_leaves():
    tax = taxonomies()
    del tax["postcode"]["10073"]
    with pytest.raises(EngineError) as e:
        G.geneir(TABLE2, QIS, tax, "kl", KL)
    assert e.value.sqlstate == "PA004" and "10073" in str(e.value)


def test_geneir_stops_when_d_fails_and_residuals_join_the_closest_class():
    """EIR l = 2, deterministic order gender, age, postcode: {Mike, Tim, Jane} all have
    Hypertension, so D fails l = 2 and the rounds stop (G3).  Mike joins {Lily, Tina} (*,
    [35,39], 1007*), which widens the postcode to 100**: 2 (1 + 4/9 + 1) + 2 (1 - 1/2) = 53/9;
    then Tim: 22/9; Jane joins {Ella, Lucy}: 44/9 + 3 (1/2) = 115/18."""
    r = G.geneir(TABLE2, QIS, taxonomies(), "el", {"l": 2}, trace=True)
    assert r.order == ("gender", "age", "postcode")
    res = steps(r, "residual")
    assert [(x[0], x[1]) for x in res] == [("Mike", 1), ("Tim", 1), ("Jane", 2)]
    for got, want in zip([x[2] for x in res], [F(53, 9), F(22, 9), F(115, 18)]):
        assert got == pytest.approx(float(want), abs=1e-12)
    assert [c.labels for c in r.classes] == [("*", "[35,39]", "100**"), ("*", "[30,34]", "100**")]
    assert r.suppressed == () and M.check("el", {"l": 2}, r.sa_classes(TABLE2)).holds


def test_geneir_residual_that_fits_no_class_is_suppressed():
    """EIR (0.5, 0.5): Jane's Hypertension would make 3 of 5 persons in the only class."""
    ab = {"alpha": 0.5, "beta": 0.5}
    r = G.geneir(TABLE2, QIS, taxonomies(), "eab", ab, trace=True)
    assert ("Jane", None, float("inf")) in steps(r, "residual")
    assert r.suppressed == ("Jane",) and M.check("eab", ab, r.sa_classes(TABLE2)).holds
    assert r.nloss == (r.loss / 30) and r.suppressed_records == 2


# --------------------------------------------------------------------------------------------
# Items 16-17: Handle's validity check and the all-suppressed case
# --------------------------------------------------------------------------------------------


class _Fixed:
    def __init__(self, ok):
        self.ok = ok

    def would_hold(self, sa):
        return self.ok


def test_nearest_valid_skips_classes_that_would_break_alpha_beta():
    d = D.np.array([1.0, 2.0, 2.0, 0.5])
    states = [_Fixed(True), _Fixed(True), _Fixed(True), _Fixed(False)]
    assert D.nearest_valid(states, d, "ab", ["x"]) == (0, 1.0)
    states[0] = _Fixed(False)
    assert D.nearest_valid(states, d, "eab", ["x"]) == (1, 2.0)  # tie 2.0: the earliest
    assert D.nearest_valid([_Fixed(False)] * 4, d, "ab", ["x"]) == (-1, float("inf"))
    assert D.nearest_valid([_Fixed(False)] * 4, d, "kl", ["x"]) == (3, 0.5)  # monotone: no check


def test_handle_avoids_a_nearer_class_that_would_break_beta():
    """IR (0.5, 0.5) on one numeric QI (domain [0, 8]): classes {p0, p5} and {p1, p4} form, the
    last class {p2, p3} fails.  p2 is suppressed (distance 4 >= 1 QI x 1 record); p3 is nearer
    to {p1, p4} (3/4) but v would hold 3 of 5 records there, so it joins {p0, p5} (7/8 < 1)."""
    persons = [("p0", (0,), ["x", "u"]), ("p1", (5,), ["w", "v"]), ("p2", (8,), ["v"]), ("p3", (3,), ["v"]),
               ("p4", (4,), ["v", "w"]), ("p5", (2,), ["w", "v"])]
    ab = {"alpha": 0.5, "beta": 0.5}
    r = D.danonyir(persons, ["age"], "ab", ab, trace=True)
    assert [set(c[1]) for c in steps(r, "close")] == [{"p0", "p5"}, {"p1", "p4"}]
    (h2, h3) = steps(r, "handle")
    assert (h2[0], h2[1], h2[3]) == ("p2", None, 1) and h2[2] == pytest.approx(4.0)
    assert (h3[0], h3[1], h3[3]) == ("p3", 1, 1) and h3[2] == pytest.approx(7 / 8)
    doms = IM.domains_of(["age"], ["numeric"], [q for _, q, _ in persons])
    near = IM.identity([(5,), (4,)], doms)
    assert IM.dist((3,), 1, near, 4, doms) == F(3, 4)  # nearer, but:
    assert not M.ir_ab({"p1": ["w", "v"], "p4": ["v", "w"], "p3": ["v"]}, 0.5, 0.5)
    assert [set(c.persons) for c in r.classes] == [{"p0", "p5", "p3"}, {"p1", "p4"}]
    assert r.suppressed == ("p2",) and M.check("ab", ab, r.sa_classes(persons)).holds


@pytest.mark.parametrize("model, params", [("kl", {"k": 8, "l": 2}), ("el", {"l": 8}),
                                           ("eab", {"alpha": 0.9, "beta": 0.1})])
def test_everything_is_suppressed_when_no_class_can_hold(model, params):
    r = D.danonyir(TABLE2, QIS, model, params, domains=AGE)
    assert r.classes == [] and set(r.suppressed) == {p for p, _, _ in TABLE2}
    assert r.ec == [None] * 7 and r.nloss == 1 and r.loss == 30
    assert r.unsatisfiable is (model != "eab")


def test_strict_refuses_unsatisfiable_input_before_work():
    with pytest.raises(EngineError) as e:
        D.danonyir(TABLE2, QIS, "el", {"l": 8}, strict=True)
    assert e.value.sqlstate == "PA005" and "lower l" in e.value.hint


def test_geneir_suppresses_everything_when_d_fails():
    r = G.geneir(TABLE2, QIS, taxonomies(), "kl", {"k": 8, "l": 2})
    assert r.classes == [] and r.nloss == 1 and r.unsatisfiable


# --------------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------------


def test_persons_from_records_groups_and_refuses_varying_qis():
    recs = [{"pid": "Mike", "age": 36, "dx": "Hypertension"}, {"pid": "Lily", "age": 37, "dx": "Cancer"},
            {"pid": "Mike", "age": 36, "dx": "Heart"}]
    assert D.persons_from_records(recs, "pid", ["age"], "dx") == [
        ("Mike", (36,), ["Hypertension", "Heart"]), ("Lily", (37,), ["Cancer"])]
    recs.append({"pid": "Lily", "age": 38, "dx": "Flu"})
    with pytest.raises(EngineError) as e:
        D.persons_from_records(recs, "pid", ["age"], "dx")
    assert e.value.sqlstate == "PA004" and "'Lily' has records with different QI values" in str(e.value)


@pytest.mark.parametrize("persons, kw, text", [
    (TABLE2 + [("Mike", ("M", 36, "10085"), ["Flu"])], {}, "person 'Mike' is listed twice"),
    ([("a", ("M", None, "1"), ["x"])], {}, "NULL in QI 'age'"),
    ([("a", ("M", 3), ["x"])], {}, "2 QI values for 3 QIs"),
    ([("a", ("M", 3, "1"), [])], {}, "has no records"),
    (TABLE2, {"seeds": ["Bob"]}, "pinned seed 'Bob' is not a person"),
    (TABLE2, {"seeds": ["Ella", "Lucy"]}, "pinned seed 'Lucy' is already in a class"),
    (TABLE2, {"seed": "x"}, "seed must be an integer"),
    (TABLE2, {"kinds": ["numeric", "numeric", "categorical"]}, "numeric QI 'gender' holds 'M'"),
    ([], {}, "no persons"),
])
def test_bad_input_is_refused(persons, kw, text):
    with pytest.raises(EngineError) as e:
        D.danonyir(persons, QIS, "el", EL, **kw)
    assert text in str(e.value)


# --------------------------------------------------------------------------------------------
# Properties: a literal reading of Algorithm 1 + Handle with exact fractions
# --------------------------------------------------------------------------------------------


def literal_danonyir(persons, qis, model, params, doms):
    """Algorithm 1 + Alg. 7 as the spec writes them (§3.2, §3.5, §3.8 items 2, 8, 9): seeds are
    the first remaining person, ties go to the smallest Id_num / earliest created class, adding
    wins ties against merging, Handle merges iff its distance < |R(p)| |QI|."""
    cells = {p: tuple(IM.cell(v, d) for v, d in zip(q, doms)) for p, q, _ in persons}
    sa = {p: v for p, _, v in persons}
    recs = {p: len(v) for p, _, v in persons}

    def elem(members):
        return IM.identity([cells[m] for m in members], doms), sum(recs[m] for m in members)

    def ok(members):
        return M.holds(model, params, {m: sa[m] for m in members})

    rest = [p for p, _, _ in persons]
    done, q, sat = [], None, True
    while rest:
        q = [rest.pop(0)]
        sat = ok(q)
        while not sat and rest:
            eq, nq = elem(q)
            dp, pi = min((IM.dist(cells[p], recs[p], eq, nq, doms), i) for i, p in enumerate(rest))
            dc = min(((IM.dist(*elem(c), eq, nq, doms), j) for j, c in enumerate(done)), default=None)
            if dc is None or dp <= dc[0]:
                q.append(rest.pop(pi))
            else:
                q.extend(done.pop(dc[1]))
            sat = ok(q)
        if sat:
            done.append(q)
    suppressed = []
    if not sat:
        for p in q:
            cands = [(IM.dist(cells[p], recs[p], *elem(c), doms), j) for j, c in enumerate(done)
                     if model in ("kl", "el") or ok(c + [p])]
            best = min(cands, default=None)
            if best is not None and best[0] < recs[p] * len(qis):
                done[best[1]].append(p)
            else:
                suppressed.append(p)
    return done, suppressed


PERSONS = st.lists(st.tuples(st.integers(0, 9), st.sampled_from("abc"),
                             st.lists(st.sampled_from("uvwxyz"), min_size=1, max_size=3, unique=True)),
                   min_size=1, max_size=9)
MODEL = st.sampled_from([("kl", {"k": 2, "l": 2}), ("kl", {"k": 3, "l": 3}), ("el", {"l": 2}), ("el", {"l": 3}),
                         ("ab", {"alpha": 0.5, "beta": 0.5}), ("ab", {"alpha": 0.6, "beta": 0.4}),
                         ("eab", {"alpha": 0.5, "beta": 0.5}), ("eab", {"alpha": 0.6, "beta": 0.7})])


def as_persons(rows):
    return [(f"p{i}", (age, c), sa) for i, (age, c, sa) in enumerate(rows)]


@PROPS
@given(PERSONS, MODEL)
def test_engine_equals_the_literal_algorithm(rows, model_params):
    model, params = model_params
    persons = as_persons(rows)
    r = D.danonyir(persons, ["age", "c"], model, params)
    doms = IM.domains_of(["age", "c"], ["numeric", "categorical"], [q for _, q, _ in persons])
    done, suppressed = literal_danonyir(persons, ["age", "c"], model, params, doms)
    assert [list(c.persons) for c in r.classes] == done
    assert list(r.suppressed) == sorted(suppressed, key=lambda p: int(p[1:]))
    table = [(sum(len(v) for p, _, v in persons if p in c), IM.identity(
        [q for p, q, _ in persons if p in c], doms)) for c in done]
    supp = sum(len(v) for p, _, v in persons if p in suppressed)
    assert r.loss == IM.table_loss(table, doms, supp).total


@PROPS
@given(PERSONS, MODEL, st.integers(0, 3))
def test_every_published_class_meets_the_model(rows, model_params, seed):
    model, params = model_params
    persons = as_persons(rows)
    for r in (D.danonyir(persons, ["age", "c"], model, params, seed=seed),
              G.geneir(persons, ["age", "c"], {"age": {str(a): "lo" if a < 5 else "hi" for a in range(10)}
                                                | {"lo": "*", "hi": "*"},
                                                "c": {"a": "*", "b": "*", "c": "*"}},
                       model, params, seed=seed)):
        cls = r.sa_classes(persons)
        assert M.check(model, params, cls).holds is True
        published = [p for c in r.classes for p in c.persons]
        assert sorted(published + list(r.suppressed)) == sorted(p for p, _, _ in persons)
        assert len(set(published)) == len(published)
        assert 0 <= r.nloss <= 1


# --------------------------------------------------------------------------------------------
# the column-major scan of the remaining persons equals the row-sum scan it replaced
# --------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 60), dn=st.integers(0, 3), dc=st.integers(0, 7), seed=st.integers(0, 10**6))
def test_nearest_scan_is_bit_identical_to_the_row_sum_scan(n, dn, dc, seed):
    """`_Remaining.nearest` sums per attribute (one contiguous pass each); the earlier version
    reduced n rows of d values.  Same order of additions, so the same floats and the same
    nearest person, ties included."""
    import numpy as np
    if dn + dc == 0:
        dn = 1
    rng = np.random.default_rng(seed)
    qrows = [tuple([int(x) for x in rng.integers(0, 20, dn)] + [f"v{int(x)}" for x in rng.integers(0, 6, dc)])
             for _ in range(n)]
    qis = [f"q{j}" for j in range(dn + dc)]
    kinds = ["numeric"] * dn + ["categorical"] * dc
    sas = [["a"] * int(rng.integers(1, 4)) for _ in range(n)]
    sp = D._Space(IM.domains_of(qis, kinds, qrows), qrows, sas)
    rem = D._Remaining(sp, list(rng.permutation(n)))
    q = D._Class(sp, IS.make_state("kl", {"k": 99, "l": 1}))
    for i in rng.choice(n, size=min(n, 3), replace=False):
        q.add(int(i), sas[int(i)])
    for i in rng.choice(n, size=n // 3, replace=False):
        rem.remove(int(i))
    # the row-sum scan, as before the change
    XN, CO = sp.XN[rem.idx], sp.CO[rem.idx]
    g = (np.abs(XN - np.clip(XN, q.lo, q.hi))).sum(axis=1) if dn else np.zeros(len(rem.idx))
    if dc:
        g = g + q.lk[CO].sum(axis=1)
    d = rem.R * (q.K + g) + q.nrec * g + rem.pen
    t, v = D._first_min(d)
    assert rem.nearest(q) == ((-1, float("inf")) if t < 0 else (int(rem.idx[t]), v))
