"""The query-error workload on demand (issue 15): publish runs no workload unless its params ask
(`queries` > 0, stored and recorded as before), and `pganon.query_error(release)` measures a kept
release later with the same queries, so a release published with the defaults and then measured
gives the figure its twin published with `queries` stored. Hostile table and column names."""

import json
import random
import subprocess
import sys

import psycopg
import pytest
from psycopg import sql

from helpers import publish

# a quote, a semicolon, capitals and unicode in the names the workload's SQL quotes
TABLE, AGE, ZIP, SEX = 'Pe"ople; select 1', 'A"ge', "zïp code", "Sex"
DISEASES, DRUGS = ["flu", "hiv", "cancer", "cold", "asthma", "ulcer"], ["a", "b", "c", "d"]
# one release per shape the function reads: ranges, hierarchy labels, linked LCA labels, a
# generalized bucketization GT, an exact QIT
TWINS = [("mondrian", {"k": 4}), ("gaa", {"k": 4}),
         ("ck_anonymization", {"k": 4, "c": 2, "c_f": 2, "c_f_excess": "allow"}),
         ("mmdcf_mslf", {"generalize": True}), ("anatomy", {"l": 3}), ("mondrian", {"k": 4, "limit": 500})]


@pytest.fixture
def people(conn, name):
    """500+ random people under hostile names, with hierarchies for gaa."""
    table = f"{TABLE} {name}"
    rnd = random.Random(5)
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, {} int, {} text, {} text, disease text, drug text)").format(
        *map(sql.Identifier, (table, AGE, ZIP, SEX))))
    with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(table))) as cp:
        for i in range(600):
            cp.write_row((i, rnd.randint(18, 80), f"1{rnd.randint(0, 9)}{rnd.randint(0, 3)}", rnd.choice("MF"),
                          rnd.choice(DISEASES), rnd.choice(DRUGS)))
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, sql.Identifier(table).as_string(conn)))
    for col, role in [(AGE, "quasi"), (ZIP, "quasi"), (SEX, "quasi"), ("disease", "sensitive"), ("drug", "sensitive")]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    for col, values in (("disease", DISEASES), ("drug", DRUGS)):
        for v in values:
            conn.execute("SELECT pganon.set_security_level(%s, %s, %s, 1)", (name, col, v))
    conn.execute("SELECT pganon.set_delta(%s, 'disease')", (name,))
    conn.execute("""SELECT pganon.build_hierarchy(%s, %s, 'intervals', '{"widths": [5, 10, 20]}')""", (name, AGE))
    conn.execute("SELECT pganon.build_hierarchy(%s, %s, 'redaction')", (name, ZIP))
    conn.execute("SELECT pganon.set_hierarchy(%s, %s, %s)", (name, SEX, "M;*\nF;*\n"))
    return name, table


def _metrics(conn, rid):
    return conn.execute("SELECT metrics FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]


def _on_demand(conn, rid, *args):
    return conn.execute(f"SELECT pganon.query_error(%s{', %s' * len(args)})", (rid, *args)).fetchone()[0]


@pytest.mark.parametrize("method, params", TWINS, ids=lambda x: x if isinstance(x, str) else json.dumps(x))
def test_a_default_publish_runs_no_workload_and_query_error_measures_it_as_publish_would(conn, people, method, params):
    name, _ = people
    asked = publish(conn, name, method, queries=1000, **params)
    default = publish(conn, name, method, **params)
    stored = _metrics(conn, asked)["query_error"]
    assert stored["queries"] > 0 and stored["theta"] == 0.1 and stored["seed"] == 0
    assert conn.execute("SELECT params->'queries' FROM pganon.release WHERE id = %s", (asked,)).fetchone()[0] == 1000
    # the default stores none (an exact-QI release keeps its exact 0), and records no queries
    none = _metrics(conn, default).get("query_error")
    assert none is None or none == {"mean": 0.0, "exact": True}, none
    assert conn.execute("SELECT params ? 'queries' FROM pganon.release WHERE id = %s", (default,)).fetchone()[0] is False
    for rid in (asked, default):
        got = _on_demand(conn, rid)
        assert {k: got[k] for k in stored} == pytest.approx(stored), (method, got, stored)
        assert got["release"] == rid and got["source_rows"] == (500 if "limit" in params else 600)
    # other queries and selectivity, and the release's own seed (seed NULL): what publish stores
    third = publish(conn, name, method, queries=150, theta=0.3, seed=9, **params)
    stored = _metrics(conn, third)["query_error"]
    got = _on_demand(conn, third, 150, 0.3)
    assert stored["seed"] == 9 and {k: got[k] for k in stored} == pytest.approx(stored)
    assert got["mean"] == 0 if method == "anatomy" else _on_demand(conn, third, 150, 0.3, 8)["mean"] != got["mean"]


def test_release_metrics_shows_null_for_a_release_that_stored_no_query_error(conn, people):
    name, _ = people
    asked, default = publish(conn, name, "mondrian", k=4, queries=100), publish(conn, name, "mondrian", k=4)
    got = dict(conn.execute("SELECT release, query_error FROM pganon.release_metrics WHERE release IN (%s, %s)",
                            (asked, default)).fetchall())
    assert got[default] is None and got[asked] == pytest.approx(_metrics(conn, asked)["query_error"]["mean"])


def test_query_error_refuses_a_changed_source_and_what_it_cannot_measure(conn, people):
    name, table = people
    rid = publish(conn, name, "mondrian", k=4)
    rating = publish(conn, name, "rating", sc=2, eligibility="suppress")
    cases = [((rid, 0), "PA002", "queries must be an integer >= 1"),
             ((rid, 10 ** 9), "PA002", "above the limit"),
             ((rid, 10, 0.0), "PA002", r"theta must be a number in (0, 1]"),
             ((rating,), "PA002", "has no on-demand query error: it publishes no QI cells"),
             ((10 ** 12,), "PA001", "does not exist")]
    for args, code, message in cases:
        with pytest.raises(psycopg.Error) as e:
            _on_demand(conn, *args)
        assert (e.value.sqlstate, message in e.value.diag.message_primary) == (code, True), (args, e.value)
    # it reads the source: admins only, never readers
    assert conn.execute("SELECT has_function_privilege(r, 'pganon.query_error(bigint,integer,float8,bigint)', "
                        "'EXECUTE') FROM unnest('{pganon_admin,pganon_reader}'::text[]) r").fetchall() == [(True,), (False,)]
    conn.execute(sql.SQL("DELETE FROM {} WHERE id < 3").format(sql.Identifier(table)))
    with pytest.raises(psycopg.Error) as e:
        _on_demand(conn, rid)
    assert e.value.sqlstate == "PA004" and "has 597 rows now; the release was made from 600 rows" in str(e.value)


def test_cli_publish_says_the_query_error_was_not_measured_and_how_to_measure_it(db_dsn, people):
    name, _ = people
    run = lambda *a: subprocess.run([sys.executable, "-m", "pganon.cli", *a, "--dsn", db_dsn], capture_output=True,
                                    text=True, timeout=600)
    r = run("publish", name, "mondrian", "-p", "k=4", "--quiet")
    rid = int(r.stdout.splitlines()[2].split("|")[0])
    assert r.returncode == 0 and "query error not measured" in r.stdout and \
        f"SELECT pganon.query_error({rid}) measures it now" in r.stdout, r.stdout + r.stderr
    r = run("publish", name, "mondrian", "-p", "k=4", "-p", "queries=100", "--quiet")
    assert r.returncode == 0 and "not measured" not in r.stdout, r.stdout
