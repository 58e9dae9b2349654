"""pganon.check in the database agrees with pyCANON on random tables (k, alpha, the l variants,
t, beta, delta; one SA and several, gen=True/False), and refuses bad input by name."""

import json
import math
import uuid

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pycanon_ref


@st.composite
def tables(draw):
    n = draw(st.integers(1, 14))
    qis = [f"q{i}" for i in range(draw(st.integers(1, 2)))]
    kinds = draw(st.lists(st.sampled_from(["text", "int"]), min_size=1, max_size=3))
    sas = [f"s{j}" for j in range(len(kinds))]
    rows = []
    for _ in range(n):
        r = {q: draw(st.integers(0, 2)) for q in qis}
        for s, kind in zip(sas, kinds):
            v = draw(st.integers(0, 3))
            r[s] = "abcd"[v] if kind == "text" else 10 * v
        rows.append(r)
    return rows, qis, sas, kinds


def _plain(x):
    """jsonb -> the Python values the engine's Check holds (tuples, infinity)."""
    if isinstance(x, list):
        return tuple(_plain(y) for y in x)
    return math.inf if x == "Infinity" else x


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(tables())
def test_check_in_the_database_agrees_with_pycanon(conn, tab):
    rows, qis, sas, kinds = tab
    name = f"chk_{uuid.uuid4().hex[:10]}"
    cols = [f"{q} int" for q in qis] + [f"{s} {k}" for s, k in zip(sas, kinds)]
    conn.execute(f"CREATE TABLE {name} ({', '.join(cols)})")
    try:
        with conn.cursor().copy(f"COPY {name} FROM STDIN") as cp:
            for r in rows:
                cp.write_row([r[c] for c in qis + sas])

        def value(model, params):
            out = conn.execute("SELECT pganon.check(%s::regclass, %s, %s, %s, %s::jsonb)",
                               (name, qis, sas, model, json.dumps(params))).fetchone()[0]
            return _plain(out["value"])
        pycanon_ref.assert_agrees(value, rows, qis, sas, {s: len({r[s] for r in rows}) for s in sas})
    finally:
        conn.execute(f"DROP TABLE {name}")


def test_check_reads_published_views_and_names_bad_input(conn, name):
    conn.execute(f"CREATE TABLE {name} AS SELECT i AS id, i % 3 AS q, (ARRAY['a','b'])[1 + i % 2] AS s, "
                 f"CASE WHEN i = 5 THEN NULL ELSE 'x' END AS n FROM generate_series(1, 12) i")
    r = conn.execute(f"SELECT pganon.check('{name}', '{{q}}', '{{s}}', 'l_diversity', '{{\"l\": 2}}')").fetchone()[0]
    assert r["value"] == 2 and r["holds"] is True and r["per_sa"] == {"s": 2}
    cases = [("'{q}', '{nope}', 'k_anonymity', '{}'", "PA001", "has no column(s) ['nope']"),
             ("'{q}', '{s}', 'kk', '{}'", "PA001", "unknown privacy model 'kk'"),
             ("'{q}', '{n}', 'l_diversity', '{}'", "PA004", 'sensitive column "n"'),
             ("'{q}', '{q}', 'l_diversity', '{}'", "PA004", "column(s) ['q'] are listed as QI and as SA"),
             ("'{q}', '{s}', 'l_diversity', '{\"l\": 0}'", "PA002", "")]
    for args, state, prefix in cases:
        with pytest.raises(psycopg.Error) as e:
            conn.execute(f"SELECT pganon.check('{name}', {args})")
        assert e.value.sqlstate == state and prefix in e.value.diag.message_primary, (args, e.value)


# --------------------------------------------------------------------------------------------
# identity-reserved models (spec 002): persons counted through params['person']
# --------------------------------------------------------------------------------------------

# spec 002 Table 3 (GeneIR output) and Table 4 (DAnonyIR output) as published GTs:
# (class cells gender, age, postcode), id_num, disease
T3 = [(("F", "[30,39]", "1007*"), i, d) for i, d in [(2, "Cancer"), (5, "HIV"), (6, "Leukaemia"), (6, "Heart"), (7, "Syphilis")]] + \
     [(("*", "[30,39]", "1008*"), i, d) for i, d in [(1, "Hypertension"), (1, "Heart"), (3, "Hypertension"),
                                                     (4, "Hypertension"), (4, "Diabetes")]]
T4 = [(("F", "[33,34]", "{10070,10073,10087}"), i, d) for i, d in [(4, "Hypertension"), (4, "Diabetes"), (6, "Leukaemia"),
                                                                   (6, "Heart"), (7, "Syphilis")]] + \
     [(("{M,F}", "[36,38]", "{10076,10077,10085,10086}"), i, d) for i, d in [(1, "Hypertension"), (1, "Heart"), (2, "Cancer"),
                                                                             (3, "Hypertension"), (5, "HIV")]]
GT_QIS = ["gender", "age", "postcode"]


def _gt(conn, name, rows):
    conn.execute(f'CREATE TABLE "{name}" (gender text, age text, postcode text, id_num int, disease text)')
    with conn.cursor().copy(f'COPY "{name}" FROM STDIN') as cp:
        for cells, i, d in rows:
            cp.write_row([*cells, i, d])


def _ir(conn, name, model, params, qis=GT_QIS, sas=("disease",)):
    return conn.execute("SELECT pganon.check(%s::regclass, %s, %s, %s, %s::jsonb)",
                        (f'"{name}"', list(qis), list(sas), model, json.dumps(params))).fetchone()[0]


KL, AB = {"person": "id_num", "k": 3, "l": 3}, {"person": "id_num", "alpha": 0.4, "beta": 0.6}


@pytest.mark.parametrize("model, params, value, holds", [
    ("ir_kl_anonymity", KL, {"k": 3, "l": 3}, True),
    ("eir_l_diversity", {"person": "id_num", "l": 3}, {"l": 1}, False),  # Q2: every person has Hypertension
    ("ir_alpha_beta", AB, {"alpha": 0.4, "beta": 0.6}, True),
    ("eir_alpha_beta", AB, {"alpha": 0.4, "beta": 1.0}, False),
])
def test_table3_q2_passes_ir_but_fails_eir(conn, name, model, params, value, holds):
    _gt(conn, name, T3)
    r = _ir(conn, name, model, params)
    assert r["value"] == pytest.approx(value) and r["holds"] is holds
    assert r["model"] == model and r["scope"] == "person" and r["classes"] == 2
    assert r["failing_classes"] == (0 if holds else 1) and r["split_persons"] == 0
    assert r["vulnerable"]["v"] == 0.5 and r["vulnerable"]["vulnerable"] == 1  # spec 002 §4.4: v(Table 3) = 1/2


@pytest.mark.parametrize("model, params, value", [
    ("ir_kl_anonymity", KL, {"k": 3, "l": 4}),
    ("eir_l_diversity", {"person": "id_num", "l": 3}, {"l": 3}),
    ("ir_alpha_beta", AB, {"alpha": 0.4, "beta": 0.4}),
    ("eir_alpha_beta", AB, {"alpha": 0.4, "beta": 0.5}),
])
def test_table4_passes_every_model_with_no_vulnerable_class(conn, name, model, params, value):
    _gt(conn, name, T4)
    r = _ir(conn, name, model, params)
    assert r["value"] == pytest.approx(value) and r["holds"] is True and r["vulnerable"]["v"] == 0


def test_ir_check_without_thresholds_reports_values_only(conn, name):
    _gt(conn, name, T3)
    r = _ir(conn, name, "eir_l_diversity", {"person": "id_num"})
    assert r["value"] == {"l": 1} and r["holds"] is None and "vulnerable" not in r


def test_ir_check_counts_a_person_split_over_classes(conn, name):
    _gt(conn, name, T3)
    conn.execute(f'UPDATE "{name}" SET gender = \'F\' WHERE id_num = 1 AND disease = \'Heart\'')  # Mike in two classes
    r = _ir(conn, name, "ir_kl_anonymity", KL)
    assert r["split_persons"] == 1 and r["classes"] == 3 and r["holds"] is False


def test_all_includes_the_ir_models_whose_params_are_given(conn, name):
    _gt(conn, name, T3)
    r = _ir(conn, name, "all", {"eir_l_diversity": {"person": "id_num", "l": 3}, "l_diversity": {"l": 2}})
    assert r["eir_l_diversity"]["holds"] is False and r["l_diversity"]["value"] == 3
    assert "ir_alpha_beta" not in r and "k_anonymity" in r


def test_ir_check_of_published_releases_agrees_with_verifier_and_metrics(conn, name):
    from test_person import GENDER, AGE, POSTCODE, TABLE2, _declare, _table
    from helpers import checks, publish
    _table(conn, name, TABLE2)
    _declare(conn, name)
    view = f'pganon_release."{name}_gt"'
    rid = publish(conn, name, "danonyir", model="el", l=3, seeds=["Ella", "Tim"], domains={"age": [30, 39]}, queries=0, promote=True)
    r = conn.execute("SELECT pganon.check(%s::regclass, %s, '{disease}', 'eir_l_diversity', '{\"person\": \"id_num\", \"l\": 3}')",
                     (view, GT_QIS)).fetchone()[0]
    assert r["holds"] is True and r["value"] == {"l": 3} and checks(conn, rid)["eir_l_diversity"][0]
    for col, csv in (("gender", GENDER), ("age", AGE), ("postcode", POSTCODE)):
        conn.execute("SELECT pganon.set_hierarchy(%s, %s, %s)", (name, col, csv))
    rid = publish(conn, name, "geneir", model="kl", k=3, l=3, order=["age", "postcode", "age", "gender"], queries=0, promote=True)
    r = conn.execute("SELECT pganon.check(%s::regclass, %s, '{disease}', 'ir_kl_anonymity', '{\"person\": \"id_num\", \"l\": 3}')",
                     (view, GT_QIS)).fetchone()[0]
    m = conn.execute("SELECT metrics FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    assert r["holds"] is True and r["vulnerable"]["v"] == m["v"] == 0.5
    assert checks(conn, rid)["vulnerable_share"][1].startswith("v = 0.5")


def test_ir_check_refuses_bad_input_by_name(conn, name):
    _gt(conn, name, T3)
    conn.execute(f'ALTER TABLE "{name}" ADD COLUMN other text')
    conn.execute(f'UPDATE "{name}" SET other = disease WHERE id_num <> 7')
    cases = [("ir_kl_anonymity", {"k": 3}, ["disease"], "PA003", "ir_kl_anonymity counts persons and needs the person column"),
             ("eir_l_diversity", {"person": "who", "l": 2}, ["disease"], "PA001", "has no column(s) ['who']"),
             ("eir_l_diversity", {"person": "id_num", "l": 2}, ["disease", "other"], "PA002", "eir_l_diversity assesses one sensitive attribute"),
             ("eir_l_diversity", {"person": "id_num", "l": 2}, ["other"], "PA004", 'column "other"'),
             ("eir_l_diversity", {"person": "disease", "l": 2}, ["disease"], "PA004", 'the person column "disease"'),
             ("eir_l_diversity", {"person": "id_num", "alpha": 0.5}, ["disease"], "PA002", "unknown parameter(s) ['alpha']"),
             ("eir_alpha_beta", {"person": "id_num", "beta": 2}, ["disease"], "PA002", "parameter beta must be a number in (0, 1]")]
    for model, params, sas, state, prefix in cases:
        with pytest.raises(psycopg.Error) as e:
            _ir(conn, name, model, params, sas=sas)
        assert e.value.sqlstate == state and prefix in e.value.diag.message_primary, (model, params, e.value)


@st.composite
def person_tables(draw):
    """(class, person, value) rows: up to 4 classes of up to 5 persons with 1-3 distinct values."""
    rows = []
    for c in range(draw(st.integers(1, 4))):
        for p in range(draw(st.integers(1, 5))):
            for v in draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=3, unique=True)):
                rows.append((c, f"{c}-{p}", v))
    return rows


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=person_tables(), l=st.integers(1, 4), alpha=st.sampled_from([0.3, 0.5, 1.0]), beta=st.sampled_from([0.3, 0.5, 1.0]))
def test_ir_check_agrees_with_reasoning_sets_and_the_verifier(conn, rows, l, alpha, beta):
    """The engine's decision functions behind pganon.check against Def. 3.3/3.4 read literally
    (every reasoning set) and against the verifier's independent EIR l search."""
    import itertools
    from collections import Counter
    name = f"irc_{uuid.uuid4().hex[:10]}"
    conn.execute(f"CREATE TABLE {name} (c int, p text, v text)")
    try:
        with conn.cursor().copy(f"COPY {name} FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
        classes = {}
        for c, p, v in rows:
            classes.setdefault(c, {}).setdefault(p, []).append(v)
        fewest = min(min(len(set(pick)) for pick in itertools.product(*cls.values())) for cls in classes.values())
        el = _ir(conn, name, "eir_l_diversity", {"person": "p", "l": l}, qis=["c"], sas=["v"])
        assert el["value"] == {"l": fewest} and el["holds"] == (fewest >= l)
        sql_el = conn.execute(f"SELECT bool_and(pganon._ir_min_hs_at_least(s, %s)) FROM (SELECT c, jsonb_agg(vs) AS s FROM "
                              f"(SELECT c, p, jsonb_agg(v) AS vs FROM {name} GROUP BY 1, 2) x GROUP BY 1) y", (l,)).fetchone()[0]
        assert sql_el == el["holds"]
        share = max(max(Counter(pick).values()) / len(cls) for cls in classes.values()
                    for pick in itertools.product(*cls.values()))
        rec = max(len(v) / sum(map(len, cls.values())) for cls in classes.values() for v in cls.values())
        eab = _ir(conn, name, "eir_alpha_beta", {"person": "p", "alpha": alpha, "beta": beta}, qis=["c"], sas=["v"])
        assert eab["value"] == pytest.approx({"alpha": rec, "beta": share})
        per_class = [(max(len(v) for v in cls.values()) / sum(map(len, cls.values())) <= alpha,
                      max(max(Counter(pick).values()) / len(cls) for pick in itertools.product(*cls.values())) <= beta)
                     for cls in classes.values()]
        assert eab["holds"] == all(a and b for a, b in per_class)
    finally:
        conn.execute(f"DROP TABLE {name}")
