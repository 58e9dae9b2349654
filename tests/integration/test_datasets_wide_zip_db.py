"""The ``wide_zip`` generator in a real PostgreSQL: types and key, the domains and distinct
counts it promises, seed stability (same seed same rows, first k rows of a larger table equal the
table of k rows), the declared hierarchies (13,000 ZIP leaves whatever the rows), a gaa release
on 3,000 rows that verifies, and the input it refuses."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from helpers import checks, publish
from pganon.datasets import DatasetError, registry
from pganon.datasets.wide_zip import WIDE_ZIP_DISEASES, make_wide_zip, wide_zip_codes

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def dbname(make_db):
    from pganon import install
    dsn = make_db("wide_zip")
    install.install(dsn)
    return dsn


@pytest.fixture
def conn(dbname):
    with psycopg.connect(dbname) as c:
        yield c


def rows_of(conn, table):
    return conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()


def test_table_types_key_and_domains(conn):
    assert make_wide_zip(conn, "wz_20k", rows=20_000) == 20_000
    types = conn.execute(
        "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
        "WHERE attrelid = 'wz_20k'::regclass AND attnum > 0 ORDER BY attnum").fetchall()
    assert types == [("id", "bigint", True), ("zip", "text", True), ("age", "smallint", True),
                     ("income", "integer", True), ("hours", "smallint", True),
                     ("fnlwgt", "integer", True), ("disease", "text", True)]
    assert conn.execute("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON "
                        "a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE "
                        "i.indrelid = 'wz_20k'::regclass AND i.indisprimary").fetchall() == [("id",)]
    (n, ids, ages, age_lo, age_hi, hours_lo, hours_hi, inc_lo, inc_hi, inc_odd,
     fw_lo, fw_hi) = conn.execute(
        "SELECT count(*), count(DISTINCT id), count(DISTINCT age), min(age), max(age), "
        "min(hours), max(hours), min(income), max(income), count(*) FILTER (WHERE income % 4 <> 0), "
        "min(fnlwgt), max(fnlwgt) FROM wz_20k").fetchone()
    assert (n, ids, ages, age_lo, age_hi) == (20_000, 20_000, 74, 17, 90)
    assert (hours_lo, hours_hi) == (1, 99)
    assert 0 <= inc_lo < 100 and 249_900 < inc_hi <= 250_000 and inc_odd == 0
    assert 10_000 <= fw_lo and fw_hi <= 10_000 + 10 * 129_999
    # 13,000 rows or more hold every ZIP code of the domain; 12 diseases
    assert {r[0] for r in conn.execute("SELECT DISTINCT zip FROM wz_20k")} == set(wide_zip_codes())
    assert {r[0] for r in conn.execute("SELECT DISTINCT disease FROM wz_20k")} == set(WIDE_ZIP_DISEASES)


def test_seeded_and_prefix_stable(conn):
    make_wide_zip(conn, "wz_a", rows=3_000, seed=7)
    make_wide_zip(conn, "wz_b", rows=3_000, seed=7)
    make_wide_zip(conn, "wz_small", rows=500, seed=7)
    make_wide_zip(conn, "wz_other", rows=3_000, seed=8)
    a = rows_of(conn, "wz_a")
    assert a == rows_of(conn, "wz_b")
    assert rows_of(conn, "wz_small") == a[:500]
    other = rows_of(conn, "wz_other")
    assert all(x != y for x, y in zip(a[:50], other[:50]))  # every column redrawn
    # fewer rows than codes: distinct codes, one per row
    assert conn.execute("SELECT count(DISTINCT zip) FROM wz_a").fetchone()[0] == 3_000


def test_default_load_declares_wide_hierarchies(conn):
    info = registry.load(conn, "wide_zip", table="wz_default")
    assert info["rows"] == 63_000 and info["attributes"] == 6
    zips, incomes, weights = conn.execute(
        "SELECT count(DISTINCT zip), count(DISTINCT income), count(DISTINCT fnlwgt) "
        "FROM wz_default").fetchone()
    assert zips == 13_000
    assert 38_000 <= incomes <= 42_000 and 48_000 <= weights <= 52_000
    # the 19,000-node hierarchies were ANALYZEd when stored (store.ANALYZE_NODES): the first
    # verification must not plan its leaf -> ancestor joins on an empty table's statistics
    assert conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'pganon.hierarchy_node'::regclass"
                        ).fetchone()[0] >= 13_000
    hs = {r[0]: r[1:] for r in conn.execute(
        "SELECT column_name::text, height, leaves FROM pganon.hierarchies WHERE dataset = 'wide_zip'")}
    assert hs["zip"] == (4, 13_000)
    assert hs["age"] == (5, 74) and hs["hours"] == (5, 99)
    assert hs["income"] == (5, incomes) and hs["fnlwgt"] == (5, weights)


def test_gaa_on_3000_rows_verifies(conn):
    registry.load(conn, "wide_zip", table="wz_3k", rows=3_000)
    hs = dict(conn.execute("SELECT column_name::text, leaves FROM pganon.hierarchies "
                           "WHERE dataset = 'wide_zip'").fetchall())
    assert hs["zip"] == 13_000  # the whole domain, not the 3,000 loaded codes
    rid = publish(conn, "wide_zip", "gaa", k=10)
    assert checks(conn, rid) and all(ok for ok, _ in checks(conn, rid).values())
    sizes = [n for (n,) in conn.execute(sql.SQL("SELECT count(*) FROM {} GROUP BY class_id").format(
        sql.Identifier("pganon_data", f"r{rid}_map")))]
    assert sum(sizes) == 3_000 and min(sizes) >= 10


@pytest.mark.parametrize("kwargs, fragment", [
    ({"rows": 0}, "rows must be a positive integer"),
    ({"seed": "x"}, "seed must be a 64-bit integer"),
])
def test_refuses_bad_input(conn, kwargs, fragment):
    with pytest.raises(DatasetError, match=fragment) as e:
        make_wide_zip(conn, "wz_bad", **kwargs)
    assert e.value.sqlstate == "PA002"
