"""Property tests in the database: for random small tables, levels, seeds and min_group, every
release passes the independent verifier, every group is L_sl-diverse (or l-diverse), has at
least min_group rows and no sensitive vector above 1/min_group of them (on the map and on the
published GT/ST), and groups plus suppressed rows partition the input; a request that could
publish nothing is refused (PA005) and leaves nothing. The checks below are a third, test-only
implementation."""

import json
from collections import Counter
from fractions import Fraction

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from pganon_engine.methods.bucketization import bucketize

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
    min_group = draw(st.sampled_from([None, 1, 2, 3]))   # None: the default, 2
    return d, rows, levels, (l0, l1, l2), method, seed, min_group


def refusal_is_due(d, rows, levels, ls, method, seed, mg):
    """Why a request may be refused: some SA's values cannot fill a group (their shares 1/l
    add up to < 1), fewer distinct vectors than min_group, or the planner, on the same
    buckets, forms no group."""
    present = {lv for j in range(d) for v, lv in enumerate(levels[j]) if any(r[j] == v for r in rows)}
    base_l = max(ls[max(present)], mg)
    for j in range(d):
        vals = {r[j] for r in rows}
        l_of = [ls[levels[j][v]] if method.endswith("mslf") else base_l for v in vals]
        if sum(Fraction(1, x) for x in l_of) < 1:
            return True
    buckets = list(dict.fromkeys(rows))               # first appearance = min key
    if len(buckets) < mg:
        return True
    sizes = [rows.count(b) for b in buckets]
    values = [b[j] for b in buckets for j in range(d)]
    lev = [levels[j][b[j]] for b in buckets for j in range(d)]
    plan = bucketize.plan(sizes, values, lev, dict(enumerate(ls)), method.split("_")[0],
                          mslf=method.endswith("mslf"), baseline_l=base_l,
                          tie="first" if seed is None else "random", seed=seed, min_group=mg)
    return plan.n_groups == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_every_release_verifies_and_is_diverse(db_dsn, case):
    d, rows, levels, ls, method, seed, min_group = case
    mg = 2 if min_group is None else min_group
    with psycopg.connect(db_dsn) as conn:       # one transaction, rolled back: nothing accumulates
        conn.execute("CREATE TEMP TABLE src (id int PRIMARY KEY, q int, " +
                     ", ".join(f"s{j} text" for j in range(d)) + ")")
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO src VALUES (%s, %s{', %s' * d})",
                            [(i, i % 7, *[f"v{v}" for v in r]) for i, r in enumerate(rows)])
        conn.execute("SELECT pganon.register_dataset('prop', 'src'::regclass, 'id')")
        # any release must verify, however little it publishes (the policy's floor is tested elsewhere)
        conn.execute("""SELECT pganon.set_policy('prop', '{"published_share": 0}')""")
        for lv, l in enumerate(ls):
            conn.execute("SELECT pganon.set_level_l('prop', %s, %s)", (lv, l))
        conn.execute("SELECT pganon.set_attribute('prop', 'q', 'quasi')")
        for j in range(d):
            conn.execute("SELECT pganon.set_attribute('prop', %s, 'sensitive')", (f"s{j}",))
            for v, lv in enumerate(levels[j]):
                conn.execute("SELECT pganon.set_security_level('prop', %s, %s, %s, force => true)",
                             (f"s{j}", f"v{v}", lv))   # values hypothesis did not draw
        params = ({} if seed is None else {"seed": seed}) | ({} if min_group is None else {"min_group": min_group})
        state = "SELECT (SELECT count(*) FROM pganon.release), (SELECT count(*) FROM pg_tables WHERE schemaname = 'pganon_data')"
        before = conn.execute(state).fetchone()
        try:
            with conn.transaction():                  # a savepoint: a refusal rolls back to here
                rid = conn.execute("SELECT pganon.publish('prop', %s, %s::jsonb)",
                                   (method, json.dumps(params))).fetchone()[0]
        except psycopg.Error as exc:
            assert exc.sqlstate == "PA005", exc
            assert refusal_is_due(d, rows, levels, ls, method, seed, mg), exc
            assert conn.execute(state).fetchone() == before
            conn.rollback()
            return
        assert not refusal_is_due(d, rows, levels, ls, method, seed, mg)
        assert conn.execute("SELECT published_rows FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0] > 0
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
        base_l = max(ls[max(present)], mg)
        for members in groups.values():
            size = len(members)
            assert size >= mg
            for j in range(d):
                for v, c in Counter(sas[j] for _, sas in members).items():
                    l = ls[levels[j][int(v[1:])]] if method.endswith("mslf") else base_l
                    assert c * l <= size, (method, members)
            assert max(Counter(sas for _, sas in members).values()) * mg <= size, (method, mg, members)
        # the same from the analyst's seat: the published GT's group sizes and ST's counts
        rel = conn.execute("SELECT layout->'relations' FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
        sizes = dict(conn.execute(f"SELECT group_id, count(*) FROM {rel['gt']} GROUP BY 1").fetchall())
        assert sorted(sizes.values()) == sorted(len(m) for m in groups.values())
        vec = ", ".join(f"s{j}" for j in range(d))
        for g, c in conn.execute(f"SELECT group_id, max(c) FROM (SELECT group_id, sum(count) AS c FROM {rel['st']} "
                                 f"GROUP BY group_id, {vec}) x GROUP BY 1"):
            assert c * mg <= sizes[g], (method, mg, g)
        conn.rollback()
