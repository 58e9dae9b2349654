"""Relative error of query answering on person-aware releases (spec 002 §2.15, Eq. 19, readings
§3.8 items 12-14, fixtures §4.10): `ir_metrics.query_error` on the releases DAnonyIR and GeneIR
make of Table 2 (Table 4 and Table 3), its workload (λ QIs plus the SA, seeded, prec > 0) and
properties: a release that generalizes nothing answers every query exactly, suppressed persons
count in prec only, the error does not depend on the tick."""

from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pganon_engine.methods.person import danonyir as D
from pganon_engine.methods.person import geneir as G
from pganon_engine.metrics import ir_metrics as IM
from pganon_engine.core.errors import EngineError
from test_danonyir import AGE, QIS, SEEDS, TABLE2, taxonomies

# §4.10: three COUNT(*) queries on Table 2, prec = 1 each
QUERIES = [{"gender": ["F"], "disease": ["Hypertension"]},
           {"age": (33, 35), "disease": ["Heart"]},
           {"postcode": ["10070", "10073"], "disease": ["Syphilis"]}]
T4_ERRORS = [1, 0, F(1, 3)]           # est 2, 1, 2/3
T3_ERRORS = [F(1, 2), F(2, 5), F(1, 2)]  # est 1.5, 0.6, 0.5


def table4():
    return D.danonyir(TABLE2, QIS, "el", {"l": 3}, domains=AGE, seeds=SEEDS)


def table3():
    return G.geneir(TABLE2, QIS, taxonomies(), "kl", {"k": 3, "l": 3}, order=["age", "postcode", "age", "gender"])


@pytest.mark.parametrize("release, errors", [(table4, T4_ERRORS), (table3, T3_ERRORS)], ids=["table4", "table3"])
def test_relative_error_of_the_4_10_queries(release, errors):
    r = IM.query_error(TABLE2, release(), "disease", predicates=QUERIES)
    assert r["queries"] == 3 and r["skipped"] == 0
    assert r["mean"] == pytest.approx(float(sum(errors)) / 3, abs=1e-12)
    assert r["max"] == pytest.approx(float(max(errors)), abs=1e-12)
    assert r["median"] == pytest.approx(float(sorted(errors)[1]), abs=1e-12)


def test_table3_answers_worse_than_table4_on_4_10():
    """§4.10: GeneIR's coarser cells give the larger error on every query but the third."""
    assert IM.query_error(TABLE2, table3(), "disease", predicates=QUERIES)["mean"] > \
        IM.query_error(TABLE2, table4(), "disease", predicates=QUERIES)["mean"]


def test_random_workload_is_seeded_and_records_its_parameters():
    rel = table4()
    a = IM.query_error(TABLE2, rel, "disease", lam=2, n=50, theta=0.2, seed=3)
    b = IM.query_error(TABLE2, rel, "disease", lam=2, n=50, theta=0.2, seed=3)
    c = IM.query_error(TABLE2, rel, "disease", lam=2, n=50, theta=0.2, seed=4)
    assert a == b and a != c
    assert (a["lambda"], a["theta"], a["seed"], a["queries"], a["estimator"]) == (2, 0.2, 3, 50, "eq19")
    assert 0 <= a["median"] <= a["max"] and a["skipped"] == 0


@pytest.mark.parametrize("lam", [0, 4, True, 1.5])
def test_lambda_outside_1_to_qis_is_refused(lam):
    with pytest.raises(EngineError) as e:
        IM.query_error(TABLE2, table4(), "disease", lam=lam, n=10)
    assert e.value.sqlstate == "PA002" and "lambda" in str(e.value)


def test_sa_named_like_a_qi_is_refused():
    with pytest.raises(EngineError, match="also a QI"):
        IM.query_error(TABLE2, table4(), "age", n=10)


def test_suppressed_persons_count_in_prec_only():
    """l = 10 cannot hold on Table 2 (7 distinct values): everyone is suppressed, est = 0 and
    every query has relative error 1."""
    rel = D.danonyir(TABLE2, QIS, "el", {"l": 10}, domains=AGE)
    assert rel.classes == [] and len(rel.suppressed) == 7
    r = IM.query_error(TABLE2, rel, "disease", predicates=QUERIES)
    assert r["mean"] == r["max"] == 1.0


def test_workload_domains_repeat_person_values_per_record():
    rel = table4()
    doms = IM.workload_domains(TABLE2, rel, "disease")
    assert [d.name for d in doms] == QIS + ["disease"]
    assert all(d.n_records == 10 for d in doms)
    assert doms[1].values.tolist() == [36, 36, 37, 36, 33, 33, 38, 34, 34, 33]
    assert (doms[1].lo, doms[1].hi, doms[1].integer) == (30, 39, True)  # the release's own domain
    assert doms[3].categories[doms[3].values[1]] == "Heart"


persons_st = st.lists(
    st.tuples(st.sampled_from(["M", "F"]), st.integers(20, 30), st.sampled_from(["a", "b", "c"]),
              st.lists(st.sampled_from(["x", "y", "z", "w"]), min_size=1, max_size=3, unique=True)),
    min_size=2, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=persons_st, lam=st.integers(1, 3), theta=st.sampled_from([0.1, 0.3, 0.6]), seed=st.integers(0, 9))
def test_a_release_of_single_persons_answers_every_query_exactly(rows, lam, theta, seed):
    """IR (1,1): every person is a class of her own with point cells, so Eq. 19 is exact."""
    persons = [(f"p{i}", (g, a, z), v) for i, (g, a, z, v) in enumerate(rows)]
    rel = D.danonyir(persons, QIS, "kl", {"k": 1, "l": 1})
    assert len(rel.classes) == len(persons)
    r = IM.query_error(persons, rel, "disease", lam=lam, n=20, theta=theta, seed=seed)
    assert r["queries"] == 20 and r["max"] == pytest.approx(0, abs=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=persons_st, seed=st.integers(0, 9))
def test_estimates_sum_to_the_published_records(rows, seed):
    """A query whose predicates cover the whole age domain and every SA value estimates exactly
    the published records (Eq. 19 loses no mass), so its error is the suppressed share."""
    persons = [(f"p{i}", (g, a, z), v) for i, (g, a, z, v) in enumerate(rows)]
    rel = D.danonyir(persons, QIS, "el", {"l": 2}, seed=seed)
    everything = [{"age": (20, 30), "disease": sorted({x for p in persons for x in p[2]})}]
    r = IM.query_error(persons, rel, "disease", predicates=everything)
    published = sum(c.n_records for c in rel.classes)
    total = sum(len(p[2]) for p in persons)
    assert r["mean"] == pytest.approx(abs(published - total) / total, abs=1e-12)


def test_tick_is_called_and_changes_nothing():
    calls = []
    a = D.danonyir(TABLE2, QIS, "el", {"l": 3}, domains=AGE, seed=2, tick=lambda: calls.append(1))
    b = D.danonyir(TABLE2, QIS, "el", {"l": 3}, domains=AGE, seed=2)
    assert calls and [c.persons for c in a.classes] == [c.persons for c in b.classes]
    calls.clear()
    g = G.geneir(TABLE2, QIS, taxonomies(), "kl", {"k": 3, "l": 3}, seed=1, tick=lambda: calls.append(1))
    h = G.geneir(TABLE2, QIS, taxonomies(), "kl", {"k": 3, "l": 3}, seed=1)
    assert calls and [c.persons for c in g.classes] == [c.persons for c in h.classes]
