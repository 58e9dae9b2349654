"""Hostile names and values: quoted everywhere, never executed (as MADlib's install-check does)."""

from psycopg import sql

from helpers import checks, publish


def test_injection_names_of_schema_table_columns_dataset_and_values(conn):
    schema, table = "Sch ema;", 'TEST"; DROP TABLE x; --'
    cols = {"key": "ID2", "qi": "Âge ünïcode", "sa1": "a; select 1", "sa2": 'Dis"ease'}
    dataset = "a; select 1"
    conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    conn.execute(sql.SQL("CREATE TABLE {}.{} ({} int PRIMARY KEY, {} int, {} text, {} text)").format(
        sql.Identifier(schema), sql.Identifier(table), *[sql.Identifier(c) for c in cols.values()]))
    values = ["O'Brien", "Robert'); DROP TABLE students;--", "naïve", "$$x$$"]
    rows = [(i, 20 + i, values[i % 4], ["Flu", "HIV", "Cold"][i % 3]) for i in range(1, 25)]
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {}.{} VALUES (%s, %s, %s, %s)").format(
            sql.Identifier(schema), sql.Identifier(table)), rows)
    regclass = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table)).as_string(conn)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, %s)", (dataset, regclass, cols["key"]))
    conn.execute("SELECT pganon.set_attribute(%s, %s, 'quasi')", (dataset, cols["qi"]))
    conn.execute("SELECT pganon.set_attribute(%s, %s, 'sensitive')", (dataset, cols["sa1"]))
    conn.execute("SELECT pganon.set_attribute(%s, %s, 'sensitive')", (dataset, cols["sa2"]))
    for v in values:
        conn.execute("SELECT pganon.set_security_level(%s, %s, %s, 1)", (dataset, cols["sa1"], v))
    for v, lv in (("Flu", 0), ("HIV", 2), ("Cold", 1)):
        conn.execute("SELECT pganon.set_security_level(%s, %s, %s, %s)", (dataset, cols["sa2"], v, lv))
    for method in ("mbf_mslf", "mmdcf"):
        rid = publish(conn, dataset, method, promote=True, generalize=method == "mbf_mslf")
        assert all(p for p, _ in checks(conn, rid).values())
    st = conn.execute(sql.SQL("SELECT {}, count FROM pganon_release.{}").format(
        sql.Identifier(cols["sa1"]), sql.Identifier(dataset + "_st"))).fetchall()
    assert {v for v, _ in st} <= set(values) and sum(c for _, c in st) > 0
    assert conn.execute("SELECT to_regclass('x')").fetchone()[0] is None


def test_search_path_shadowing_does_not_redirect_pganon(conn, name):
    """A caller's schema with a hostile count() or a fake pganon table cannot change publish."""
    from helpers import create_table1, declare_table1
    create_table1(conn, name)
    declare_table1(conn, name, name)
    conn.execute("CREATE SCHEMA IF NOT EXISTS shadow")
    conn.execute("CREATE OR REPLACE FUNCTION shadow.lower(int4range) RETURNS int LANGUAGE sql AS 'SELECT 1/0'")
    conn.execute("CREATE OR REPLACE FUNCTION shadow.format(text, text) RETURNS text LANGUAGE sql AS $$SELECT 'x'$$")
    conn.execute("CREATE OR REPLACE FUNCTION shadow.quote_ident(text) RETURNS text LANGUAGE sql AS $$SELECT 'pg_class'$$")
    conn.execute("SET search_path = shadow, public")
    try:
        rid = publish(conn, name, "mbf_mslf", generalize=True)
        assert all(p for p, _ in checks(conn, rid).values())
    finally:
        conn.execute("RESET search_path")


def test_injection_names_in_anatomy_rating_semantic_and_compare(conn):
    """The comparative-study methods and the comparison quote every name too: hostile schema,
    table, columns, dataset, rule ids and values; the releases verify and compare reads them."""
    from pganon import catalog, compare
    schema, table = "Sch ema2;", 'T"ab; DROP TABLE y; --'
    cols = {"key": "ID2", "qi": "Âge ünïcode", "qi2": "zip'code", "sa1": "a; select 1", "sa2": 'Dis"ease'}
    dataset = 'd"s; select 2'
    conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    conn.execute(sql.SQL("CREATE TABLE {}.{} ({} int PRIMARY KEY, {} int, {} text, {} text, {} text)").format(
        sql.Identifier(schema), sql.Identifier(table), *[sql.Identifier(c) for c in cols.values()]))
    values = ["O'Brien", "Robert'); DROP TABLE students;--", "naïve", "$$x$$"]
    rows = [(i, 20 + i % 40, f"z{i % 7}'", values[i % 4], ["Flu", "HIV", "Cold"][i % 3]) for i in range(1, 121)]
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {}.{} VALUES (%s, %s, %s, %s, %s)").format(
            sql.Identifier(schema), sql.Identifier(table)), rows)
    regclass = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table)).as_string(conn)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, %s)", (dataset, regclass, cols["key"]))
    for role, c in (("quasi", cols["qi"]), ("quasi", cols["qi2"]), ("sensitive", cols["sa1"]), ("sensitive", cols["sa2"])):
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (dataset, c, role))
    catalog.set_semantic_rule(conn, dataset, "r'1; --", cols["sa1"], "in", [values[0], values[1]], 'cat"egory')
    for method, params in (("anatomy", {"l": 3}), ("rating", {"sc": 2}), ("semantic", {"k": 3, "l": 2})):
        rid = publish(conn, dataset, method, **params)
        assert all(p for p, _ in checks(conn, rid).values()), method
    res = compare.run(conn, dataset, compare.Settings(methods=["anatomy", "rating", "semantic"], ks=[3], ls=[2],
                                                      thetas=[0.3], fractions=[], sa_counts=[2], queries=20))
    assert not res["failures"] and all(r["measures"]["covers_all"] for r in res["runs"])
    assert conn.execute("SELECT to_regclass('y'), to_regclass('students')").fetchone() == (None, None)
