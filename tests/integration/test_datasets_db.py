"""Datasets loaded into a real PostgreSQL server.

The module makes its own database on the session's test server (conftest.py's make_db), dropped
at the end of the session. Each test runs in its own schema
(first on search_path), so unqualified table names land there.
"""

from __future__ import annotations

import math
import uuid
import psycopg
import pytest
from psycopg import sql

from helpers import checks, publish
from pganon import datasets as ds
from pganon.datasets import DatasetError

pytestmark = pytest.mark.db

@pytest.fixture(scope="module")
def dbname(make_db):
    """A database of this module's own on the session's test server (see conftest.py)."""
    return make_db("datasets")


@pytest.fixture(scope="module")
def adult_rows():
    return ds.adult_rows(ds.fetch_adult())


@pytest.fixture
def conn(dbname, request):
    """A plain (non-autocommit) connection whose search_path starts with a fresh schema."""
    schema = f"t_{request.node.name[:40]}_{uuid.uuid4().hex[:6]}".lower()
    schema = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in schema)
    with psycopg.connect(dbname) as c:
        c.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        c.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(schema)))
        c.commit()
        c.schema = schema
        yield c


def relations(conn) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'p')")}


def count(conn, *parts) -> int:
    q = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(*parts))
    return conn.execute(q).fetchone()[0]


def primary_key(conn, schema, table) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey) "
        "WHERE i.indisprimary AND n.nspname = %s AND c.relname = %s", (schema, table))]


def column_types(conn, schema, table) -> list[tuple[str, str, bool]]:
    return [tuple(r) for r in conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped "
        "ORDER BY a.attnum", (schema, table))]


ADULT_TYPES = [(c, "integer" if c in {"id", "age", "fnlwgt", "education_num", "capital_gain",
                                      "capital_loss", "hours_per_week"} else "text", True)
               for c in ds.ADULT_COLUMNS]


# ---------------------------------------------------------------------------- load_adult


def test_load_adult_full(conn, adult_rows):
    assert ds.load_adult(conn) == 30162
    s = conn.schema
    assert conn.execute("SELECT count(*), min(id), max(id), count(DISTINCT id) FROM adult"
                        ).fetchone() == (30162, 1, 30162, 30162)
    assert column_types(conn, s, "adult") == ADULT_TYPES
    assert primary_key(conn, s, "adult") == ["id"]
    # ANALYZEd: planner statistics exist for the new table.
    assert conn.execute("SELECT count(*) FROM pg_stats WHERE schemaname = %s "
                        "AND tablename = 'adult'", (s,)).fetchone()[0] == len(ds.ADULT_COLUMNS)
    got = conn.execute(sql.SQL("SELECT {} FROM adult ORDER BY id").format(
        sql.SQL(", ").join(map(sql.Identifier, ds.ADULT_COLUMNS)))).fetchall()
    assert got == [tuple(r) for r in adult_rows]
    occ = dict(conn.execute("SELECT occupation, count(*) FROM adult GROUP BY 1").fetchall())
    assert occ == {"Prof-specialty": 4038, "Craft-repair": 4030, "Exec-managerial": 3992,
                   "Adm-clerical": 3721, "Sales": 3584, "Other-service": 3212,
                   "Machine-op-inspct": 1966, "Transport-moving": 1572,
                   "Handlers-cleaners": 1350, "Farming-fishing": 989, "Tech-support": 912,
                   "Protective-serv": 644, "Priv-house-serv": 143, "Armed-Forces": 9}


def test_load_adult_first_rows(conn, adult_rows):
    assert ds.load_adult(conn, rows=250) == 250
    got = conn.execute("SELECT id, age, occupation FROM adult ORDER BY id").fetchall()
    assert got == [(r.id, r.age, r.occupation) for r in adult_rows[:250]]


def test_load_adult_commits_on_an_idle_connection(conn, dbname):
    ds.load_adult(conn, table="committed", rows=10)
    with psycopg.connect(dbname) as other:
        assert count(other, conn.schema, "committed") == 10


def test_load_on_an_autocommit_connection(dbname):
    with psycopg.connect(dbname, autocommit=True) as c:
        c.execute("DROP SCHEMA IF EXISTS autocommit_case CASCADE")
        c.execute("CREATE SCHEMA autocommit_case")
        try:
            assert ds.load_adult(c, table="autocommit_case.adult", rows=100) == 100
            assert ds.make_synthetic_adult(c, "autocommit_case.syn", 500,
                                           source="autocommit_case.adult") == 500
            with pytest.raises(DatasetError, match="already exists"):
                ds.load_adult(c, table="autocommit_case.adult", rows=100)
            assert count(c, "autocommit_case", "adult") == 100
            assert count(c, "autocommit_case", "syn") == 500
        finally:
            c.execute("DROP SCHEMA autocommit_case CASCADE")


def test_load_adult_inside_callers_transaction_is_rolled_back_with_it(conn):
    conn.execute("SELECT 1")  # the caller opens a transaction
    ds.load_adult(conn, table="rolled_back", rows=10)
    assert count(conn, conn.schema, "rolled_back") == 10
    conn.rollback()
    assert "rolled_back" not in relations(conn)


def test_load_adult_existing_table_raises_with_name_and_fix(conn):
    ds.load_adult(conn, table="adult", rows=50)
    with pytest.raises(DatasetError) as e:
        ds.load_adult(conn, table="adult", rows=80)
    msg = str(e.value)
    assert f'table "{conn.schema}"."adult" already exists' in msg
    assert "replace=True" in e.value.hint and "--replace" in e.value.hint
    assert e.value.sqlstate == "PA002"
    # the failed load left the connection usable and idle (its transaction was rolled back)
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert count(conn, conn.schema, "adult") == 50


def test_load_adult_replace_reloads(conn):
    ds.load_adult(conn, table="adult", rows=50)
    assert ds.load_adult(conn, table="adult", rows=80, replace=True) == 80
    assert count(conn, conn.schema, "adult") == 80
    assert primary_key(conn, conn.schema, "adult") == ["id"]


def test_load_adult_replace_refuses_when_objects_depend_and_keeps_the_table(conn):
    ds.load_adult(conn, table="adult", rows=50)
    conn.execute("CREATE VIEW adult_view AS SELECT id, occupation FROM adult")
    conn.commit()
    with pytest.raises(DatasetError, match=r"other objects depend on it .*adult_view") as e:
        ds.load_adult(conn, table="adult", rows=80, replace=True)
    assert e.value.sqlstate == "PA008"
    assert count(conn, conn.schema, "adult") == 50
    assert count(conn, conn.schema, "adult_view") == 50


def test_load_adult_replace_refuses_to_drop_a_view(conn):
    conn.execute("CREATE VIEW adult AS SELECT 1 AS id")
    conn.commit()
    with pytest.raises(DatasetError, match="is a view, not a table"):
        ds.load_adult(conn, table="adult", rows=5, replace=True)
    with pytest.raises(DatasetError, match="view .* already exists"):
        ds.load_adult(conn, table="adult", rows=5)
    assert conn.execute("SELECT * FROM adult").fetchall() == [(1,)]


def test_load_adult_schema_qualified(conn, dbname):
    conn.execute("CREATE SCHEMA IF NOT EXISTS myschema")
    conn.commit()
    assert ds.load_adult(conn, table="myschema.adult", rows=20, replace=True) == 20
    assert count(conn, "myschema", "adult") == 20
    assert primary_key(conn, "myschema", "adult") == ["id"]
    assert "adult" not in relations(conn)


def test_load_adult_missing_schema_raises_and_creates_nothing(conn):
    with pytest.raises(DatasetError, match=r'schema "no_such_schema" does not exist') as e:
        ds.load_adult(conn, table="no_such_schema.adult", rows=5)
    assert e.value.sqlstate == "PA001"
    assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'no_such_schema'"
                        ).fetchone()[0] == 0


@pytest.mark.parametrize("bad", [0, -1, 30163])
def test_load_adult_bad_row_count_raises_before_touching_the_database(conn, bad):
    with pytest.raises(DatasetError):
        ds.load_adult(conn, rows=bad)
    assert relations(conn) == set()


# ---------------------------------------------------------------------------- load_nmes


NMES_TYPES = [(c, t, True) for c, t in ds.NMES_COLUMNS]


def test_load_nmes(conn):
    assert ds.load_nmes(conn) == ds.NMES_ROWS == 4406
    s = conn.schema
    assert conn.execute("SELECT count(*), min(id), max(id), min(age), max(age) FROM nmes"
                        ).fetchone() == (4406, 1, 4406, 66, 109)
    assert column_types(conn, s, "nmes") == NMES_TYPES
    assert [t for c, t, _ in NMES_TYPES if c in ("id", "age", "numchron", "faminc", "hlth")] == \
        ["integer", "integer", "integer", "numeric", "text"]
    assert primary_key(conn, s, "nmes") == ["id"]
    assert conn.execute("SELECT count(*) FROM pg_stats WHERE schemaname = %s "
                        "AND tablename = 'nmes'", (s,)).fetchone()[0] == len(ds.NMES_COLUMNS)
    got = conn.execute(sql.SQL("SELECT {} FROM nmes ORDER BY id").format(
        sql.SQL(", ").join(sql.Identifier(c) for c, _ in ds.NMES_COLUMNS))).fetchall()
    assert got == [tuple(r) for r in ds.nmes_rows(ds.fetch_nmes())]
    assert dict(conn.execute("SELECT hlth, count(*) FROM nmes GROUP BY 1").fetchall()) == \
        {"other": 3509, "poor": 554, "excellent": 343}


def test_load_nmes_existing_table_raises_then_replace_reloads(conn):
    assert ds.load_nmes(conn, table="ofp") == 4406
    with pytest.raises(DatasetError, match=r'table ".*"\."ofp" already exists') as e:
        ds.load_nmes(conn, table="ofp")
    assert e.value.sqlstate == "PA002" and "replace=True" in e.value.hint
    assert ds.load_nmes(conn, table="ofp", replace=True) == 4406
    assert count(conn, conn.schema, "ofp") == 4406
    with pytest.raises(DatasetError, match="fixed size"):
        ds.DATASETS["nmes"].load(conn, table="ofp2", rows=100)


# ---------------------------------------------------------------------------- hostile names


def test_injection_quoted_hostile_table_name(conn):
    conn.execute("CREATE TABLE drop (x int)")  # would be hit by a naive "... Adult; drop ..."
    conn.commit()
    assert ds.load_adult(conn, table='"Adult; drop"', rows=10) == 10
    assert relations(conn) == {"Adult; drop", "drop"}
    assert count(conn, conn.schema, "Adult; drop") == 10
    assert primary_key(conn, conn.schema, "Adult; drop") == ["id"]
    with pytest.raises(DatasetError, match="already exists"):
        ds.load_adult(conn, table='"Adult; drop"', rows=10)


def test_injection_tuple_names_are_taken_verbatim(conn):
    conn.execute("CREATE TABLE sentinel (x int)")
    conn.commit()
    evil = 'x"); DROP TABLE sentinel; --'
    assert ds.load_adult(conn, table=(conn.schema, evil), rows=3) == 3
    assert ds.load_table1(conn, table=(conn.schema, "Ädült ☃.tab")) == 9
    assert relations(conn) == {"sentinel", evil, "Ädült ☃.tab"}


def test_injection_hostile_schema_and_dotted_name_in_sql_syntax(conn):
    schema = 'we"ird sch.ema'
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    conn.commit()
    assert ds.load_table1(conn, table='"we""ird sch.ema"."a.b"') == 9
    assert count(conn, schema, "a.b") == 9
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
    conn.commit()


def test_unquoted_names_fold_to_lower_case_like_postgresql(conn):
    ds.load_table1(conn, table="Table_One")
    assert relations(conn) == {"table_one"}
    assert conn.execute("SELECT to_regclass('Table_One') IS NOT NULL").fetchone()[0]


@pytest.mark.parametrize("bad, message", [
    ("Adult; drop", "invalid table name"),
    ("a.b.c", "has 3 parts"),
    ("", "empty"),
    ("x" * 64, "63-byte"),
    (("s", "t", "u"), "has 3 parts"),
    (("",), "non-empty strings"),
])
def test_invalid_table_names_raise_and_create_nothing(conn, bad, message):
    with pytest.raises(DatasetError, match=message) as e:
        ds.load_table1(conn, table=bad)
    assert e.value.sqlstate == "PA002"
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert relations(conn) == set()


def test_63_byte_name_is_accepted(conn):
    name = "é" * 31 + "x"  # 63 bytes in UTF-8
    assert ds.load_table1(conn, table=(conn.schema, name)) == 9
    assert relations(conn) == {name}


# ---------------------------------------------------------------------------- load_table1


def test_load_table1(conn):
    assert ds.load_table1(conn) == 9
    s = conn.schema
    assert column_types(conn, s, "table1") == [
        ("rid", "integer", True), ("ssn", "integer", True), ("name", "text", True),
        ("age", "integer", True), ("sex", "text", True), ("race", "text", True),
        ("zipcode", "integer", True), ("physician", "text", True), ("disease", "text", True)]
    assert primary_key(conn, s, "table1") == ["rid"]
    rows = conn.execute("SELECT * FROM table1 ORDER BY rid").fetchall()
    assert rows == ds.table1_rows()
    assert rows[2] == (3, 25000, "Mike", 56, "M", "White", 11400, "Mary", "Cancer")
    with pytest.raises(DatasetError, match="already exists"):
        ds.load_table1(conn)
    assert ds.load_table1(conn, replace=True) == 9


# ---------------------------------------------------------------------------- synthetic


def test_make_synthetic_adult_one_million_rows(conn):
    ds.load_adult(conn)
    assert ds.make_synthetic_adult(conn, "adult_1m", 1_000_000) == 1_000_000
    s = conn.schema
    assert conn.execute("SELECT count(*), min(id), max(id) FROM adult_1m").fetchone() == \
        (1_000_000, 1, 1_000_000)
    assert primary_key(conn, s, "adult_1m") == ["id"]
    assert column_types(conn, s, "adult_1m") == ADULT_TYPES
    src = dict(conn.execute("SELECT occupation, count(*) FROM adult GROUP BY 1").fetchall())
    syn = dict(conn.execute("SELECT occupation, count(*) FROM adult_1m GROUP BY 1").fetchall())
    assert set(syn) == set(src)
    n_src, n_syn = sum(src.values()), sum(syn.values())
    for value, c in src.items():
        p = c / n_src
        q = syn[value] / n_syn
        # within 3 % of Adult's share (or 5 standard errors for the rarest values)
        tol = max(0.03 * p, 5 * math.sqrt(p * (1 - p) / n_syn))
        assert abs(q - p) <= tol, (value, p, q)
    # every synthetic row is a copy of some Adult row (all columns but id)
    cols = lambda t: sql.SQL(", ").join(sql.Identifier(t, c) for c in ds.ADULT_COLUMNS[1:])
    with conn.transaction():
        conn.execute("SET LOCAL enable_mergejoin = off")  # a hash anti join is 3x faster here
        conn.execute("SET LOCAL work_mem = '64MB'")
        assert conn.execute(sql.SQL(
            "SELECT count(*) FROM adult_1m s WHERE NOT EXISTS "
            "(SELECT FROM adult a WHERE ({a}) = ({s}))").format(a=cols("a"), s=cols("s"))
        ).fetchone()[0] == 0
    # ANALYZEd
    assert conn.execute("SELECT count(*) FROM pg_stats WHERE schemaname = %s "
                        "AND tablename = 'adult_1m'", (s,)).fetchone()[0] == len(ds.ADULT_COLUMNS)


def digest(conn, table) -> str:
    return conn.execute(sql.SQL("SELECT md5(string_agg(t::text, '|' ORDER BY id)) FROM {} t")
                        .format(sql.Identifier(table))).fetchone()[0]


def test_make_synthetic_adult_is_reproducible_and_seeded(conn):
    ds.load_adult(conn, rows=3000)
    ds.make_synthetic_adult(conn, "a", 5000, seed=42)
    ds.make_synthetic_adult(conn, "b", 5000, seed=42)
    ds.make_synthetic_adult(conn, "c", 5000, seed=7)
    ds.make_synthetic_adult(conn, "d", 1000, seed=42)
    assert digest(conn, "a") == digest(conn, "b")
    assert digest(conn, "a") != digest(conn, "c")
    assert digest(conn, "d") == conn.execute(
        "SELECT md5(string_agg(t::text, '|' ORDER BY id)) FROM a t WHERE id <= 1000").fetchone()[0]
    # sampling with replacement: 5000 draws from 3000 rows repeat some and miss others
    distinct = conn.execute("SELECT count(DISTINCT (age, workclass, fnlwgt, education, "
                            "marital_status, occupation, relationship, race, sex, capital_gain, "
                            "capital_loss, hours_per_week, native_country, income)) FROM a"
                            ).fetchone()[0]
    assert 1500 < distinct < 3000



def test_make_synthetic_adult_takes_every_64_bit_seed(conn):
    """The seed is a SQL literal: -2**63 must not parse as -(2**63::bigint), which overflows."""
    ds.load_adult(conn, rows=300)
    for seed in (-2**63, 2**63 - 1):
        assert ds.make_synthetic_adult(conn, "s", 50, seed=seed, replace=True) == 50

def test_make_synthetic_adult_source_with_gaps_in_ids(conn):
    ds.load_adult(conn, rows=1000)
    conn.execute("CREATE SCHEMA IF NOT EXISTS src_gaps")
    conn.execute("DROP TABLE IF EXISTS src_gaps.even")
    conn.execute("CREATE TABLE src_gaps.even AS SELECT * FROM adult WHERE id % 2 = 0")
    conn.commit()
    assert ds.make_synthetic_adult(conn, "from_even", 4000, source="src_gaps.even") == 4000
    rest = sql.SQL(", ").join(map(sql.Identifier, ds.ADULT_COLUMNS[1:]))
    used = conn.execute(sql.SQL("SELECT count(*) FROM (SELECT DISTINCT {c} FROM from_even) x")
                        .format(c=rest)).fetchone()[0]
    assert conn.execute(sql.SQL(
        "SELECT count(*) FROM (SELECT {c} FROM from_even EXCEPT SELECT {c} FROM src_gaps.even) x"
    ).format(c=rest)).fetchone()[0] == 0
    assert used > 450  # draws spread over (almost) all 500 source rows


def test_make_synthetic_adult_replace_and_errors(conn):
    with pytest.raises(DatasetError, match=r"source table 'adult' does not exist") as e:
        ds.make_synthetic_adult(conn, "syn", 100)
    assert e.value.sqlstate == "PA001" and "pganon dataset load adult" in e.value.hint
    ds.load_adult(conn, rows=100)
    ds.make_synthetic_adult(conn, "syn", 100)
    with pytest.raises(DatasetError, match=r'"syn" already exists .hint: pass replace=True'):
        ds.make_synthetic_adult(conn, "syn", 200)
    assert count(conn, conn.schema, "syn") == 100
    assert ds.make_synthetic_adult(conn, "syn", 200, replace=True) == 200
    assert count(conn, conn.schema, "syn") == 200
    with pytest.raises(DatasetError, match="cannot replace its own source"):
        ds.make_synthetic_adult(conn, "adult", 100, replace=True)
    conn.execute("CREATE TABLE not_adult (id int, occupation text)")
    conn.commit()
    with pytest.raises(DatasetError, match="lacks the Adult columns age, workclass"):
        ds.make_synthetic_adult(conn, "syn2", 100, source="not_adult")
    conn.execute("CREATE TABLE empty_adult AS SELECT * FROM adult WHERE false")
    conn.commit()
    with pytest.raises(DatasetError, match="is empty"):
        ds.make_synthetic_adult(conn, "syn2", 100, source="empty_adult")
    for bad in (0, -3, 2**31):
        with pytest.raises(DatasetError, match="rows must be"):
            ds.make_synthetic_adult(conn, "syn2", bad)
    assert "syn2" not in relations(conn)
    leftover = conn.execute("SELECT to_regclass('pg_temp._pganon_synthetic_source')").fetchone()
    assert leftover == (None,)


# ---------------------------------------------------------------------------- registry


def test_registry_loads_each_dataset(conn):
    assert ds.DATASETS["adult"].load(conn, rows=300) == 300
    assert ds.DATASETS["nmes"].load(conn) == 4406
    assert ds.DATASETS["table1"].load(conn) == 9
    assert ds.DATASETS["adult_synthetic"].load(conn, rows=2000, seed=1) == 2000
    assert relations(conn) == {"adult", "nmes", "table1", "adult_synthetic"}
    assert count(conn, conn.schema, "adult_synthetic") == 2000
    assert ds.DATASETS["adult"].load(conn, table="adult2", rows=5) == 5
    with pytest.raises(DatasetError, match="fixed size"):
        ds.DATASETS["table1"].load(conn, table="t1b", rows=5)


# ------------------------------------------------------------------ load(): load + declare


@pytest.fixture(scope="module")
def installed_db(make_db):
    """A second database of this module's, with pganon installed (for the catalog)."""
    from pganon import install
    dsn = make_db("datasets_inst")
    install.install(dsn)
    return dsn


def test_load_declares_adult_from_its_attribute_file(installed_db):
    with psycopg.connect(installed_db, autocommit=True) as c:
        info = ds.load(c, "adult", rows=2000)
        assert {k: info[k] for k in ("dataset", "table", "rows", "declared as", "attributes",
                                     "security levels")} == {
            "dataset": "adult", "table": '"public"."adult"', "rows": 2000, "declared as": "adult",
            "attributes": 15, "security levels": 14 + 16 + 7 + 7 + 5}
        attrs = c.execute("SELECT column_name, role, kind FROM pganon.attributes "
                          "WHERE dataset = 'adult' ORDER BY position").fetchall()
        assert [a[0] for a in attrs if a[1] == "sensitive"] == [
            "occupation", "education", "marital_status", "workclass", "race"]
        assert c.execute("SELECT d.source::text FROM pganon.dataset d WHERE name = 'adult'"
                         ).fetchone() == ("adult",)
        assert c.execute(
            "SELECT s.level FROM pganon.security_level s JOIN pganon.dataset d "
            "ON d.id = s.dataset_id WHERE d.name = 'adult' AND s.column_name = 'occupation' "
            "AND s.value = 'Other-service'").fetchone() == (0,)  # reading R2


def test_load_declares_synthetic_on_the_table_given(installed_db):
    with psycopg.connect(installed_db, autocommit=True) as c:
        c.execute("CREATE SCHEMA IF NOT EXISTS bench")
        ds.load(c, "adult", table="bench.src", rows=500, replace=True, declare=False)
        info = ds.load(c, "adult_synthetic", table="bench.syn", rows=3000, source="bench.src",
                       replace=True)
        assert (info["table"], info["rows"], info["declared as"]) == \
            ('"bench"."syn"', 3000, "adult_synthetic")
        assert c.execute("SELECT d.source::text FROM pganon.dataset d "
                         "WHERE name = 'adult_synthetic'").fetchone() == ("bench.syn",)


def test_load_without_pganon_installed_changes_nothing(conn):
    with pytest.raises(DatasetError, match="pganon is not installed") as e:
        ds.load(conn, "table1")
    assert e.value.sqlstate == "PA001" and "--no-apply" in e.value.hint
    assert relations(conn) == set()  # the loaded table was rolled back with the declaration
    info = ds.load(conn, "table1", declare=False)
    assert (info["table"], info["rows"]) == (f'"{conn.schema}"."table1"', 9)
    assert "declared as" not in info
    assert relations(conn) == {"table1"}


def test_load_unknown_dataset_names_the_known_ones(conn):
    with pytest.raises(DatasetError, match="unknown dataset 'adults'") as e:
        ds.load(conn, "adults")
    assert e.value.hint == "known datasets: adult, adult_model, adult_synthetic, ck_table1, informs_synthetic, nmes, rwm5yr, table1, wide_zip"


def test_load_declares_nmes_and_an_mmdcf_mslf_release_at_d3_verifies(fresh_dsn):
    with psycopg.connect(fresh_dsn, autocommit=True) as c:
        info = ds.load(c, "nmes")
        assert {k: info[k] for k in ("dataset", "table", "rows", "declared as", "attributes",
                                     "security levels")} == {
            "dataset": "nmes", "table": '"public"."nmes"', "rows": 4406, "declared as": "nmes",
            "attributes": 19, "security levels": 3 + 9 + 2 + 2 + 2 + 9 + 11}
        attrs = c.execute("SELECT column_name, role, kind FROM pganon.attributes "
                          "WHERE dataset = 'nmes' ORDER BY position").fetchall()
        assert [a[0] for a in attrs if a[1] == "quasi"] == ["age", "sex", "region", "black",
                                                            "maried"]
        assert [a[0] for a in attrs if a[1] == "sensitive"] == [
            "hlth", "numchron", "adldiff", "medicaid", "privins", "hosp", "emr"]
        assert c.execute(
            "SELECT s.level FROM pganon.security_level s JOIN pganon.dataset d "
            "ON d.id = s.dataset_id WHERE d.name = 'nmes' AND s.column_name = 'hlth' "
            "AND s.value = 'poor'").fetchone() == (2,)

        rid = publish(c, "nmes", "mmdcf_mslf", d=3)
        assert all(passed for passed, _ in checks(c, rid).values()), checks(c, rid)
        groups, suppressed, m = c.execute(
            "SELECT groups, suppressed_rows, metrics FROM pganon.releases WHERE id = %s",
            (rid,)).fetchone()
        assert groups > 0 and suppressed == 0 and m["sr"] == 0
        c.execute("SELECT pganon.promote(%s)", (rid,))
        st_cols = [r[0] for r in c.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'pganon_release.nmes_st'::regclass "
            "AND attnum > 0 ORDER BY attnum")]
        assert st_cols == ["group_id", "hlth", "numchron", "adldiff", "count"]
        assert c.execute("SELECT sum(count) FROM pganon_release.nmes_st").fetchone() == (4406,)
