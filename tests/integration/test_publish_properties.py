"""Property tests in the database: for random small tables, levels and seeds, every release passes
the independent verifier, every group is L_sl-diverse (or l-diverse), and groups plus suppressed
rows partition the input. The diversity check below is a third, test-only implementation."""

import json
from collections import Counter

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

METHODS = ["mbf", "msdcf", "mmdcf", "mbf_mslf", "msdcf_mslf", "mmdcf_mslf"]


@st.composite
def cases(draw):
    d = draw(st.integers(1, 3))
    domains = [draw(st.integers(1, 4)) for _ in range(d)]
    n = draw(st.integers(1, 25))
    rows = [tuple(draw(st.integers(0, domains[j] - 1)) for j in range(d)) for _ in range(n)]
    levels = [[draw(st.integers(0, 2)) for _ in range(domains[j])] for j in range(d)]
    l0 = draw(st.integers(1, 2))
    l1 = draw(st.integers(l0, 3))
    l2 = draw(st.integers(l1, 4))
    method = draw(st.sampled_from(METHODS))
    seed = draw(st.one_of(st.none(), st.integers(0, 1000)))
    return d, rows, levels, (l0, l1, l2), method, seed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_every_release_verifies_and_is_diverse(db_dsn, case):
    d, rows, levels, ls, method, seed = case
    with psycopg.connect(db_dsn) as conn:       # one transaction, rolled back: nothing accumulates
        conn.execute("CREATE TEMP TABLE src (id int PRIMARY KEY, q int, " +
                     ", ".join(f"s{j} text" for j in range(d)) + ")")
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO src VALUES (%s, %s{', %s' * d})",
                            [(i, i % 7, *[f"v{v}" for v in r]) for i, r in enumerate(rows)])
        conn.execute("SELECT pganon.register_dataset('prop', 'src'::regclass, 'id')")
        for lv, l in enumerate(ls):
            conn.execute("SELECT pganon.set_level_l('prop', %s, %s)", (lv, l))
        conn.execute("SELECT pganon.set_attribute('prop', 'q', 'quasi')")
        for j in range(d):
            conn.execute("SELECT pganon.set_attribute('prop', %s, 'sensitive')", (f"s{j}",))
            for v, lv in enumerate(levels[j]):
                conn.execute("SELECT pganon.set_security_level('prop', %s, %s, %s)", (f"s{j}", f"v{v}", lv))
        params = {} if seed is None else {"seed": seed}
        rid = conn.execute("SELECT pganon.publish('prop', %s, %s::jsonb)", (method, json.dumps(params))).fetchone()[0]
        assert all(p for _, p, _ in conn.execute("SELECT * FROM pganon.verify(%s)", (rid,)))
        groups = {}
        for gid, key, *sas in conn.execute(sql.SQL(
                "SELECT m.group_id, m.id, " + ", ".join(f"s.s{j}" for j in range(d)) +
                " FROM {} m JOIN src s USING (id)").format(sql.Identifier("pganon_data", f"r{rid}_map"))):
            groups.setdefault(gid, []).append((key, tuple(sas)))
        suppressed = conn.execute("SELECT suppressed_rows FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
        keys = [k for g in groups.values() for k, _ in g]
        assert len(keys) == len(set(keys)) and len(keys) + suppressed == len(rows)
        present = {lv for j in range(d) for v, lv in enumerate(levels[j]) if any(r[j] == v for r in rows)}
        base_l = ls[max(present)]
        for members in groups.values():
            size = len(members)
            for j in range(d):
                for v, c in Counter(sas[j] for _, sas in members).items():
                    l = ls[levels[j][int(v[1:])]] if method.endswith("mslf") else base_l
                    assert c * l <= size, (method, members)
        conn.rollback()
