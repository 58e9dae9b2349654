"""Multi-record datasets loaded into a real PostgreSQL server: the German health registry
(rwm5yr, real) and the INFORMS-like synthetic table, with their catalog declarations.

The module makes its own database on the session's test server (conftest.py's make_db), with
pganon installed, dropped at the end of the session. Each test runs in its own schema (first on
search_path); UCI Adult, the synthetic table's source, is loaded once into schema multi_src.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pganon import datasets as ds
from pganon.datasets import DatasetError

pytestmark = pytest.mark.db

DATA = Path(ds.__file__).resolve().parents[1] / "data"
SRC = "multi_src.adult"
QIS = ["birth_month", *ds.INFORMS_ADULT_COLUMNS]
RWM_PERSON = list(ds.RWM5YR_PERSON_COLUMNS)


@pytest.fixture(scope="module")
def dbname(make_db):
    """A database of this module's own, with pganon installed (for the declarations)."""
    from pganon import install
    dsn = make_db("multi")
    install.install(dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE SCHEMA multi_src")
        ds.load_adult(c, table=SRC)
    return dsn


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


@pytest.fixture(scope="module")
def leaves() -> dict[str, str]:
    """Diagnosis leaf -> its chapter, read from the shipped taxonomy."""
    text = (DATA / "hierarchies" / "informs_synthetic" / "diagnosis.csv").read_text("utf-8")
    return {row.split(";")[0]: row.split(";")[2] for row in text.splitlines() if row}


def one(conn, query, *args):
    return conn.execute(query, args or None).fetchone()


def column_types(conn, table) -> list[tuple[str, str, bool]]:
    return [tuple(r) for r in conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull "
        "FROM pg_attribute a WHERE a.attrelid = %s::regclass AND a.attnum > 0 "
        "AND NOT a.attisdropped ORDER BY a.attnum", (table,))]


def primary_key(conn, table) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indisprimary AND i.indrelid = %s::regclass",
        (table,))]


def digest(conn, table) -> str:
    return one(conn, sql.SQL("SELECT md5(string_agg(t::text, '|' ORDER BY rid)) FROM {} t")
               .format(sql.Identifier(table)))[0]


def relations(conn) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'p')")}


def persons_with_changing(conn, table, columns) -> int:
    """How many persons have two different values of ``columns`` among their records."""
    cols = sql.SQL(", ").join(map(sql.Identifier, columns))
    return one(conn, sql.SQL(
        "SELECT count(*) FROM (SELECT person_id FROM {} GROUP BY person_id "
        "HAVING count(DISTINCT ({}, 0)) > 1) x").format(sql.Identifier(table), cols))[0]


# ---------------------------------------------------------------------------- rwm5yr


def test_load_rwm5yr_counts_keys_and_types(conn):
    assert ds.load_rwm5yr(conn) == 19609
    assert one(conn, "SELECT count(*), min(rid), max(rid), count(DISTINCT person_id) "
                     "FROM rwm5yr") == (19609, 1, 19609, 6127)
    assert column_types(conn, "rwm5yr") == [(c, t, True) for c, t in ds.RWM5YR_COLUMNS]
    assert primary_key(conn, "rwm5yr") == ["rid"]
    per_person = dict(conn.execute(
        "SELECT n, count(*) FROM (SELECT person_id, count(*) n FROM rwm5yr GROUP BY 1) x "
        "GROUP BY n").fetchall())
    assert per_person == {1: 1150, 2: 982, 3: 1085, 4: 1310, 5: 1600}
    assert one(conn, "SELECT count(*) FROM pg_stats WHERE schemaname = current_schema() "
                     "AND tablename = 'rwm5yr'")[0] == len(ds.RWM5YR_COLUMNS)
    assert "rwm5yr.csv (sha256 16ce4aabdfee" in one(
        conn, "SELECT obj_description('rwm5yr'::regclass)")[0]


def test_rwm5yr_table_equals_the_parsed_file_and_qis_are_constant_per_person(conn):
    ds.load_rwm5yr(conn)
    got = conn.execute(sql.SQL("SELECT {} FROM rwm5yr ORDER BY rid").format(
        sql.SQL(", ").join(sql.Identifier(c) for c, _ in ds.RWM5YR_COLUMNS))).fetchall()
    assert got == [tuple(r) for r in ds.rwm5yr_rows()]
    assert persons_with_changing(conn, "rwm5yr", RWM_PERSON) == 0
    # the year's own values do change within persons
    assert persons_with_changing(conn, "rwm5yr", ["docvis"]) > 4000
    assert one(conn, "SELECT count(*) FROM rwm5yr WHERE age <> year - birth_year")[0] == 0
    assert one(conn, "SELECT count(DISTINCT (person_id, docvis)) FROM rwm5yr")[0] == 13989


def test_load_declares_rwm5yr_and_every_value_is_a_leaf(conn):
    info = ds.load(conn, "rwm5yr")
    conn.commit()
    assert (info["table"], info["rows"], info["declared as"], info["attributes"]) == (
        f'"{conn.schema}"."rwm5yr"', 19609, "rwm5yr", 13)
    assert one(conn, "SELECT source::text, key_column, person_column FROM pganon.dataset "
                     "WHERE name = 'rwm5yr'") == ("rwm5yr", "rid", "person_id")
    roles = conn.execute("SELECT column_name, role FROM pganon.attributes "
                         "WHERE dataset = 'rwm5yr' ORDER BY position").fetchall()
    assert [c for c, r in roles if r == "quasi"] == ["birth_year", "female", "edlevel", "married"]
    assert [c for c, r in roles if r == "sensitive"] == ["docvis"]
    # set_hierarchy refuses a hierarchy that misses a value of the column, so these rows say
    # every value is a leaf
    assert conn.execute("SELECT column_name, height, leaves FROM pganon.hierarchies "
                        "WHERE dataset = 'rwm5yr' ORDER BY 1").fetchall() == [
        ("birth_year", 5, 44), ("docvis", 4, 122), ("edlevel", 3, 4), ("female", 2, 2),
        ("married", 2, 2)]


# ---------------------------------------------------------------------------- informs_synthetic


def test_informs_synthetic_50000_persons(conn, leaves):
    n = ds.make_informs_synthetic(conn, persons=50_000, source=SRC)
    assert 480_000 <= n <= 520_000
    assert one(conn, "SELECT count(*), min(rid), max(rid), count(DISTINCT person_id), "
                     "min(person_id), max(person_id) FROM informs_synthetic") == (
        n, 1, n, 50_000, 1, 50_000)
    assert column_types(conn, "informs_synthetic") == [(c, t, True) for c, t in ds.INFORMS_COLUMNS]
    assert primary_key(conn, "informs_synthetic") == ["rid"]
    # QIs constant per person; one record per (person, diagnosis)
    assert persons_with_changing(conn, "informs_synthetic", QIS) == 0
    assert one(conn, "SELECT count(DISTINCT (person_id, diagnosis)) FROM informs_synthetic")[0] \
        == n
    # rid runs through persons in order
    assert one(conn, "SELECT count(*) FROM (SELECT person_id, rid, lag(person_id) OVER "
                     "(ORDER BY rid) AS prev FROM informs_synthetic) x "
                     "WHERE prev > person_id")[0] == 0
    # every diagnosis is a leaf of the shipped taxonomy, and sex-specific codes stay so
    codes = dict(conn.execute("SELECT diagnosis, count(*) FROM informs_synthetic GROUP BY 1"))
    assert set(codes) <= set(leaves) and len(codes) == 577
    sex_only = {d.code: d.sex for d in ds.informs_diagnoses() if d.sex}
    wrong = one(conn, "SELECT count(*) FROM informs_synthetic s JOIN unnest(%s::text[], "
                      "%s::text[]) AS o(code, sex) ON o.code = s.diagnosis WHERE o.sex <> s.sex",
                list(sex_only), list(sex_only.values()))[0]
    assert wrong == 0
    assert one(conn, "SELECT count(*) FROM informs_synthetic WHERE sex = 'Female' AND "
                     "diagnosis LIKE '64_.%'")[0] > 100  # pregnancy codes do occur
    assert max(codes, key=codes.get) == "401.9"
    by_chapter = Counter()
    for code, k in codes.items():
        by_chapter[leaves[code]] += k
    assert len(by_chapter) == 18
    # records per person: 1 + geometric, mean about 10
    per = dict(conn.execute("SELECT k, count(*) FROM (SELECT count(*) k FROM informs_synthetic "
                            "GROUP BY person_id) x GROUP BY k"))
    assert min(per) == 1 and max(per) <= 90
    assert 0.085 < per[1] / 50_000 < 0.115 and per[1] > per[2] > per[5] > per[20]
    assert 9.8 < n / 50_000 < 10.2
    # the documented scheme: person p's target count is slot hash(p * 4096, seed) mod 2**16 of
    # informs_record_slots(); at seed 42 every person got all of them
    assert one(conn, "SELECT sum((%s::int[])[(hashint8extended(p::bigint * 4096, 42) & 65535) "
                     "+ 1]) FROM generate_series(1, 50000) p", ds.informs_record_slots())[0] == n
    targets = dict(conn.execute(
        "SELECT p, (%s::int[])[(hashint8extended(p::bigint * 4096, 42) & 65535) + 1] "
        "FROM generate_series(1, 20) p", (ds.informs_record_slots(),)))
    assert dict(conn.execute("SELECT person_id, count(*) FROM informs_synthetic "
                             "WHERE person_id <= 20 GROUP BY 1")) == targets
    # demographics are those of Adult rows, birth months spread over the year
    assert one(conn, sql.SQL(
        "SELECT count(*) FROM (SELECT DISTINCT {c} FROM informs_synthetic EXCEPT "
        "SELECT {c} FROM {src}) x").format(
            c=sql.SQL(", ").join(map(sql.Identifier, ds.INFORMS_ADULT_COLUMNS)),
            src=sql.Identifier("multi_src", "adult")))[0] == 0
    months = dict(conn.execute("SELECT birth_month, count(DISTINCT person_id) "
                               "FROM informs_synthetic GROUP BY 1"))
    assert sorted(months) == list(range(1, 13))
    assert all(3800 < k < 4550 for k in months.values())  # 50,000 / 12 = 4,167
    assert one(conn, "SELECT count(*) FROM pg_stats WHERE schemaname = current_schema() "
                     "AND tablename = 'informs_synthetic'")[0] == len(ds.INFORMS_COLUMNS)
    assert "50000 persons" in one(conn, "SELECT obj_description('informs_synthetic'::regclass)")[0]
    conn.execute("DROP TABLE informs_synthetic")  # dropped, its pages need not be written out
    conn.commit()


def test_informs_synthetic_is_reproducible_seeded_and_prefix_stable(conn):
    ds.make_informs_synthetic(conn, "a", 2000, SRC, seed=42)
    ds.make_informs_synthetic(conn, "b", 2000, SRC, seed=42)
    ds.make_informs_synthetic(conn, "c", 2000, SRC, seed=7)
    ds.make_informs_synthetic(conn, "d", 500, SRC, seed=42)
    assert digest(conn, "a") == digest(conn, "b") != digest(conn, "c")
    # the first 500 persons of a larger table, rids included, are the table of 500 persons
    assert digest(conn, "d") == one(conn, "SELECT md5(string_agg(t::text, '|' ORDER BY rid)) "
                                          "FROM a t WHERE person_id <= 500")[0]
    # another seed draws other people and other diagnoses
    assert one(conn, "SELECT count(*) FROM a JOIN c USING (rid) WHERE a.diagnosis = c.diagnosis "
                     "AND a.age = c.age")[0] < 200


def test_informs_synthetic_mean_records(conn):
    n = ds.make_informs_synthetic(conn, persons=3000, source=SRC, mean_records=3)
    assert 2.8 < n / 3000 < 3.2
    assert one(conn, "SELECT max(k) FROM (SELECT count(*) k FROM informs_synthetic "
                     "GROUP BY person_id) x")[0] <= 27


def test_informs_synthetic_replace_and_errors(conn):
    with pytest.raises(DatasetError, match=r"source table 'adult' does not exist") as e:
        ds.make_informs_synthetic(conn, persons=10)
    assert e.value.sqlstate == "PA001" and "pganon dataset load adult" in e.value.hint
    ds.make_informs_synthetic(conn, "syn", 10, SRC)
    with pytest.raises(DatasetError, match=r'"syn" already exists .hint: pass replace=True'):
        ds.make_informs_synthetic(conn, "syn", 20, SRC)
    assert one(conn, "SELECT count(DISTINCT person_id) FROM syn")[0] == 10
    ds.make_informs_synthetic(conn, "syn", 20, SRC, replace=True)
    assert one(conn, "SELECT count(DISTINCT person_id) FROM syn")[0] == 20
    with pytest.raises(DatasetError, match="cannot replace its own source"):
        ds.make_informs_synthetic(conn, SRC, 10, SRC, replace=True)
    conn.execute("CREATE TABLE not_adult (id int, age int, sex text)")
    conn.execute(f"CREATE TABLE empty_adult AS SELECT * FROM {SRC} WHERE false")
    conn.execute(f"CREATE TABLE odd_adult AS SELECT * FROM {SRC} WHERE id <= 50")
    conn.execute("UPDATE odd_adult SET sex = 'M' WHERE id = 3")
    conn.execute(f"CREATE TABLE null_adult AS SELECT * FROM {SRC} WHERE id <= 50")
    conn.execute("ALTER TABLE null_adult ALTER race DROP NOT NULL, ALTER income DROP NOT NULL")
    conn.execute("UPDATE null_adult SET race = NULL, income = NULL WHERE id = 7")
    conn.commit()
    cases = [
        ("not_adult", DatasetError, "PA002",
         "lacks the Adult columns race, education, marital_status, income, native_country"),
        ("empty_adult", DatasetError, "PA004", "is empty"),
        ("odd_adult", DatasetError, "PA004", "has sex values other than Female and Male: 'M'"),
        ("null_adult", DatasetError, "PA004", "has NULLs in race, income"),
    ]
    for source, err, state, message in cases:
        with pytest.raises(err, match=message) as e:
            ds.make_informs_synthetic(conn, "syn2", 10, source)
        assert e.value.sqlstate == state
    with pytest.raises(DatasetError, match="sized in persons, not rows"):
        ds.DATASETS["informs_synthetic"].load(conn, table="syn2", rows=10, source=SRC)
    assert "syn2" not in relations(conn)
    for t in ("source", "code", "person"):
        assert one(conn, f"SELECT to_regclass('pg_temp._pganon_informs_{t}')") == (None,)


def test_informs_synthetic_inside_a_callers_transaction_is_a_savepoint(conn):
    with conn.transaction():
        conn.execute("CREATE TABLE keep_me (x int)")
        with pytest.raises(DatasetError, match="is empty"):
            conn.execute(f"CREATE TABLE empty_src AS SELECT * FROM {SRC} WHERE false")
            ds.make_informs_synthetic(conn, "syn", 10, "empty_src")
        assert ds.make_informs_synthetic(conn, "syn", 10, SRC) > 0
    assert {"keep_me", "syn", "empty_src"} <= relations(conn)


def test_load_declares_informs_synthetic_with_its_taxonomy(conn):
    info = ds.load(conn, "informs_synthetic", persons=3000, source=SRC)
    conn.commit()
    assert (info["table"], info["declared as"], info["attributes"]) == (
        f'"{conn.schema}"."informs_synthetic"', "informs_synthetic", 9)
    assert 25_000 < info["rows"] < 35_000
    assert one(conn, "SELECT key_column, person_column FROM pganon.dataset "
                     "WHERE name = 'informs_synthetic'") == ("rid", "person_id")
    roles = conn.execute("SELECT column_name, role FROM pganon.attributes "
                         "WHERE dataset = 'informs_synthetic' ORDER BY position").fetchall()
    assert [c for c, r in roles if r == "quasi"] == QIS
    assert [c for c, r in roles if r == "sensitive"] == ["diagnosis"]
    hier = {c: (h, n, m) for c, h, n, m in conn.execute(
        "SELECT column_name, height, leaves, nodes FROM pganon.hierarchies "
        "WHERE dataset = 'informs_synthetic'")}
    assert set(hier) == set(QIS) | {"diagnosis"}
    assert hier["diagnosis"] == (4, 577, 577 + 248 + 18 + 1)
    assert hier["birth_month"] == (4, 12, 12 + 4 + 2 + 1)
    # the stored taxonomy: a code's parent is its 3-digit category, whose parent is its chapter
    assert conn.execute(
        "SELECT n.node, n.parent, p.parent FROM pganon.hierarchy_node n "
        "JOIN pganon.hierarchy_node p ON p.dataset_id = n.dataset_id "
        "AND p.column_name = n.column_name AND p.node = n.parent "
        "WHERE n.dataset_id = pganon._dataset_id('informs_synthetic') "
        "AND n.column_name = 'diagnosis' AND n.node IN ('401.9', 'V70.0') ORDER BY 1"
    ).fetchall() == [("401.9", "401", "390-459"), ("V70.0", "V70", "V01-V91")]
