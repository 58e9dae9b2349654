"""Anatomy in the database (spec 003 §2.8): QIT + ST with l-diverse groups of pairwise distinct
sensitive vectors, planned on bucket counts by `anatomize`, verified independently; the
eligibility error and its suppress option; tampering; random tables (hypothesis)."""

import random
from collections import Counter

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import checks, groups_of, publish
from pganon_engine.methods.anatomy import anatomize


def _table(conn, name, rows):
    conn.execute(f'CREATE TABLE "{name}" (id int PRIMARY KEY, age int, zip text, disease text, drug text)')
    with conn.cursor().copy(f'COPY "{name}" FROM STDIN') as cp:
        for r in rows:
            cp.write_row(r)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, name))
    for col, role in [("age", "quasi"), ("zip", "quasi"), ("disease", "sensitive"), ("drug", "sensitive")]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))


def _rows(n, seed, diseases=("flu", "hiv", "cancer", "cold", "ulcer"), drugs=("a", "b")):
    rnd = random.Random(seed)
    return [(i, rnd.randint(20, 70), f"4{rnd.randint(0, 9)}", rnd.choice(diseases), rnd.choice(drugs)) for i in range(n)]


def _state(conn):
    return (conn.execute("SELECT count(*) FROM pganon.release").fetchone()[0],
            conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'pganon_data'").fetchone()[0])


def test_groups_are_the_planners_and_the_release_verifies(conn, name):
    rows = _rows(300, 1)
    _table(conn, name, rows)
    rid = publish(conn, name, "anatomy", l=3, sensitive=["disease"])
    result = checks(conn, rid)
    assert all(p for p, _ in result.values()) and "anatomy" in result, result
    groups = groups_of(conn, rid, key="id")
    value = {r[0]: r[3] for r in rows}
    for g in groups:
        assert len(g) >= 3 and len({value[k] for k in g}) == len(g)  # distinct diseases in a group
    # the same groups as the planner's literal reference, on the buckets in first-appearance order
    order = list(dict.fromkeys(r[3] for r in rows))
    sizes = [sum(1 for r in rows if r[3] == v) for v in order]
    ref = anatomize.plan_reference(sizes, 3)
    assert sorted(len(g) for g in groups) == sorted(Counter(
        g for b, g0, c in ref.runs for g in range(g0, g0 + c)).values())
    m = conn.execute("SELECT metrics FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    # NCP% as for every bucketization release: what generalizing each group's QIs would cost
    assert m["groups"] == len(groups) and 0 < m["ncp_percent"] < 100 and m["sr"] == 0
    conn.execute("SELECT pganon.promote(%s)", (rid,))
    cols = [r[0] for r in conn.execute('SELECT column_name FROM information_schema.columns WHERE table_schema = '
                                       "'pganon_release' AND table_name = %s ORDER BY ordinal_position", (f"{name}_st",))]
    assert cols == ["group_id", "disease", "count"]


def test_several_sas_make_one_compound_vector(conn, name):
    rows = _rows(240, 2)
    _table(conn, name, rows)
    rid = publish(conn, name, "anatomy", l=4)
    assert all(p for p, _ in checks(conn, rid).values())
    vec = {r[0]: (r[3], r[4]) for r in rows}
    for g in groups_of(conn, rid, key="id"):
        assert len({vec[k] for k in g}) == len(g) >= 4


def test_an_ineligible_table_names_the_vector_or_suppresses(conn, name):
    rows = [(i, 30 + i % 40, "40", "flu" if i % 2 else "hiv", "a") for i in range(100)]
    rows += [(100 + i, 50, "41", "cold", "a") for i in range(10)]
    _table(conn, name, rows)
    before = _state(conn)
    with pytest.raises(psycopg.Error) as e:
        publish(conn, name, "anatomy", l=3, sensitive=["disease"])
    assert e.value.sqlstate == "PA005" and "disease=hiv" in str(e.value) and "n / l" in str(e.value)
    assert _state(conn) == before
    conn.execute("""SELECT pganon.set_policy(%s, '{"published_share": 0}')""", (name,))   # it keeps 30 of 110
    rid = publish(conn, name, "anatomy", l=3, sensitive=["disease"], eligibility="suppress")
    r = conn.execute("SELECT suppressed_rows, published_rows FROM pganon.release WHERE id = %s", (rid,)).fetchone()
    assert r[0] > 0 and r[0] + r[1] == 110
    assert all(p for p, _ in checks(conn, rid).values())


def test_a_repeated_vector_in_a_group_fails_verification(conn, name):
    _table(conn, name, _rows(120, 3))
    rid = publish(conn, name, "anatomy", l=3, sensitive=["disease"])
    st = f"pganon_data.r{rid}_st"
    g = conn.execute(f"SELECT group_id FROM {st} GROUP BY 1 ORDER BY 1 LIMIT 1").fetchone()[0]
    conn.execute(f"UPDATE {st} SET disease = (SELECT min(disease) FROM {st} WHERE group_id = {g}) WHERE group_id = {g}")
    result = checks(conn, rid)
    assert not result["anatomy"][0] and "repeated vector" in result["anatomy"][1]
    assert not result["st_matches_source"][0]


def test_seeded_runs_are_reproducible_and_recorded(conn, name):
    _table(conn, name, _rows(200, 4))
    a, b = (publish(conn, name, "anatomy", l=2, seed=9, sensitive=["disease"]) for _ in range(2))
    assert sorted(map(sorted, groups_of(conn, a, key="id"))) == sorted(map(sorted, groups_of(conn, b, key="id")))
    rec = conn.execute("SELECT params FROM pganon.release WHERE id = %s", (a,)).fetchone()[0]
    assert (rec["tie"], rec["residue"], rec["seed"], rec["l"]) == ("random", "random", 9, 2)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(4, 80), l=st.integers(2, 4), seed=st.integers(0, 10**6), k_vals=st.integers(2, 6),
       suppress=st.booleans())
def test_random_tables_verify_and_partition(conn, n, l, seed, k_vals, suppress):
    import uuid
    name = f"anat_{uuid.uuid4().hex[:8]}"
    rows = _rows(n, seed, diseases=tuple(f"d{i}" for i in range(k_vals)))
    _table(conn, name, rows)
    # any release must verify, however little it publishes (the policy's floor is tested elsewhere)
    conn.execute("""SELECT pganon.set_policy(%s, '{"published_share": 0}')""", (name,))
    before = _state(conn)
    distinct = len({r[3] for r in rows})
    try:
        rid = publish(conn, name, "anatomy", l=l, sensitive=["disease"],
                      **({"eligibility": "suppress"} if suppress else {}))
    except psycopg.Error as exc:
        # refused: ineligible without suppress, or too few distinct values to form any group
        assert exc.sqlstate == "PA005" and (not suppress or distinct < l), exc
        assert (f"the table has {distinct}" in str(exc)) == (distinct < l), exc
        assert _state(conn) == before
        return
    assert distinct >= l
    result = checks(conn, rid)
    assert all(p for p, _ in result.values()), result
    published = set().union(*groups_of(conn, rid, key="id")) if groups_of(conn, rid, key="id") else set()
    sup = conn.execute("SELECT suppressed_rows FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    assert len(published) + sup == n
