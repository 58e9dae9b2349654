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
