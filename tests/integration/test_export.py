"""`pganon export`: a release's published relations as CSV or Parquet, equal to the release's rows,
with real column types and a hostile dataset name; never the map or the source; refusals."""

import csv
import datetime
import decimal
import io
import json
import random
import subprocess
import sys
import uuid

import psycopg
import pytest
from psycopg import sql

from helpers import publish, relation
from pganon.install import ROOT
from test_cli import run

COLUMNS = ("rid bigint PRIMARY KEY, age smallint, income numeric(10,2), wealth numeric, born date, sex text, "
           "visits bigint, flag boolean, seen timestamp, score double precision, disease text")
QIS = ("age", "income", "wealth", "born", "sex")
SAS = ("visits", "flag", "seen", "score", "disease")


@pytest.fixture(scope="module")
def typed(db_dsn):
    """A dataset with a hostile name over a table of real types: an anatomy release (exact QIs in
    GT, SAs in ST) and a mondrian release (ranges and arrays in GT), both promoted in turn."""
    table = f"typed_{uuid.uuid4().hex[:8]}"
    dataset = f'x"; DROP TABLE {table}; --é {uuid.uuid4().hex[:4]}'
    rnd = random.Random(7)
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(table), sql.SQL(COLUMNS)))
        with c.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(table))) as cp:
            for i in range(60):
                cp.write_row((i, rnd.randint(20, 60), decimal.Decimal(rnd.randint(1000, 99999)) / 100,
                              decimal.Decimal(rnd.randint(-10**6, 10**6)) / 1000,
                              datetime.date(1960, 1, 1) + datetime.timedelta(days=rnd.randint(0, 9000)),
                              rnd.choice("MF"), rnd.randint(0, 5) * 10**10, rnd.random() < 0.5,
                              datetime.datetime(2020, 1, 1, 12) + datetime.timedelta(seconds=rnd.randint(0, 10**7)),
                              rnd.random(), rnd.choice(["Flu", "HIV", "Cancer", "Cold", "Ça va"])))
        c.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid')", (dataset, table))
        for col in QIS:
            c.execute("SELECT pganon.set_attribute(%s, %s, 'quasi')", (dataset, col))
        for col in SAS:
            c.execute("SELECT pganon.set_attribute(%s, %s, 'sensitive')", (dataset, col))
        anatomy = publish(c, dataset, "anatomy", promote=True, l=2)
        mondrian = publish(c, dataset, "mondrian", promote=True, k=3)
    return {"dataset": dataset, "table": table, "anatomy": anatomy, "mondrian": mondrian, "dsn": db_dsn}


def _rows(conn, release, which, cast_text=False):
    """The relation's rows (as PostgreSQL's output functions write them, as COPY does, or as
    psycopg's Python values), sorted."""
    rel = relation(conn, release, which)
    cols = [r[0] for r in conn.execute("SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass "
                                       "AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (rel,))]
    one = sql.SQL("format('%s', {})") if cast_text else sql.SQL("{}")
    select = sql.SQL(", ").join(one.format(sql.Identifier(c)) for c in cols)
    rows = conn.execute(sql.SQL("SELECT {} FROM {}").format(select, sql.SQL(rel))).fetchall()
    return cols, sorted(rows, key=repr)


@pytest.mark.parametrize("release,which", [("anatomy", "gt"), ("anatomy", "st"), ("mondrian", "gt"),
                                           ("mondrian", "promise")])
def test_csv_equals_the_release_relation(typed, conn, release, which):
    rid = typed[release]
    r = _export(typed, rid, "--relation", which)
    cols, expected = _rows(conn, rid, which, cast_text=True)
    got = list(csv.reader(io.StringIO(r.stdout)))
    assert got[0] == cols
    assert sorted((tuple(x) for x in got[1:]), key=repr) == [tuple("" if v is None else v for v in row)
                                                              for row in expected]
    assert "rid" not in got[0]   # the key never leaves: GT and ST carry group ids, not keys


def _export(typed, *args):
    r = run("export", *map(str, args), dsn=typed["dsn"])
    assert r.returncode == 0, r.stderr
    return r


def test_parquet_keeps_the_column_types_and_equals_the_relation(typed, conn, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "gt.parquet"
    r = _export(typed, typed["anatomy"], "--format", "parquet", "--output", out)
    assert f"written to {out}" in r.stdout
    t = pq.read_table(out)
    types = {f.name: str(f.type) for f in t.schema}
    wealth = types.pop("wealth")   # unconstrained numeric: the precision its values need, their scale
    assert wealth.startswith("decimal128(") and wealth.endswith(", 3)")
    assert types == {"group_id": "int32", "age": "int16", "income": "decimal128(10, 2)", "born": "date32[day]",
                     "sex": "string"}
    assert t.schema.metadata[b"pganon.dataset"].decode() == typed["dataset"]
    cols, expected = _rows(conn, typed["anatomy"], "gt")
    assert t.column_names == cols
    assert sorted((tuple(d.values()) for d in t.to_pylist()), key=repr) == expected

    out = tmp_path / "st.parquet"
    _export(typed, typed["anatomy"], "--relation", "st", "--format", "parquet", "-o", out)
    t = pq.read_table(out)
    assert {f.name: str(f.type) for f in t.schema} == {
        "group_id": "int32", "visits": "int64", "flag": "bool", "seen": "timestamp[us]", "score": "double",
        "disease": "string", "count": "int32"}
    cols, expected = _rows(conn, typed["anatomy"], "st")
    assert sorted((tuple(d.values()) for d in t.to_pylist()), key=repr) == expected


def test_parquet_writes_ranges_as_text_and_arrays_as_lists(typed, conn, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "mondrian.parquet"
    _export(typed, typed["mondrian"], "--format", "parquet", "-o", out)
    t = pq.read_table(out)
    fields = {f.name: f for f in t.schema}
    assert str(fields["age"].type) == "string" and fields["age"].metadata[b"pganon.type"] == b"int4range"
    assert fields["wealth"].metadata[b"pganon.type"] == b"numrange"
    assert str(fields["sex"].type.value_type) == "string" and str(fields["visits"].type) == "int64"
    cols = t.column_names
    got = sorted((tuple(d.values()) for d in t.to_pylist()), key=repr)
    ranges = {"age", "income", "wealth", "born"}   # generalized QIs: their PostgreSQL text
    expected = sorted((tuple(txt if c in ranges else val for c, txt, val in zip(cols, rt, rv))
                       for rt, rv in zip(*_aligned(conn, typed["mondrian"], cols))), key=repr)
    assert got == expected and any(isinstance(row[cols.index("sex")], list) for row in got)


def test_parquet_promise_keeps_json_as_text_and_the_promotion_time_with_its_zone(typed, conn, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "promise.parquet"
    _export(typed, typed["mondrian"], "--relation", "promise", "--format", "parquet", "-o", out)
    t = pq.read_table(out)
    assert {f.name: str(f.type) for f in t.schema} == {
        "method": "string", "model": "string", "promise": "string", "risk": "string",
        "promoted_at": "timestamp[us, tz=UTC]"}
    (row,) = t.to_pylist()
    method, promise, promoted_at = conn.execute(
        f"SELECT method, promise, promoted_at FROM {relation(conn, typed['mondrian'], 'promise')}").fetchone()
    assert row["method"] == method == "mondrian" and json.loads(row["promise"]) == promise
    assert row["promoted_at"] == promoted_at


def _aligned(conn, release, cols):
    """The same rows twice, in one order: as text and as values."""
    rel = relation(conn, release, "gt")
    text = sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c in cols)
    vals = sql.SQL(", ").join(sql.Identifier(c) for c in cols)
    rows = conn.execute(sql.SQL("SELECT {}, {} FROM {}").format(text, vals, sql.SQL(rel))).fetchall()
    n = len(cols)
    return [r[:n] for r in rows], [r[n:] for r in rows]


def test_csv_to_a_file_equals_csv_to_stdout_and_the_dataset_name_picks_the_current_release(typed, conn, tmp_path):
    out = tmp_path / "current.csv"
    r = _export(typed, typed["dataset"], "-o", out)        # the hostile name: the current (mondrian) release
    assert r.stdout.startswith(f"release {typed['mondrian']}: 60 row(s) of gt written to")
    assert out.read_bytes().decode() == _export(typed, typed["mondrian"]).stdout
    assert out.read_text().splitlines()[0] == "class_id,age,income,wealth,born,sex,visits,flag,seen,score,disease"


def test_refuses_a_candidate_a_dropped_release_and_a_relation_it_lacks(typed, conn, tmp_path):
    candidate = publish(conn, typed["dataset"], "mondrian", k=4)
    out = tmp_path / "kept.csv"
    out.write_text("earlier\n")
    r = run("export", str(candidate), "-o", str(out), dsn=typed["dsn"])
    assert r.returncode == 2 and r.stderr.startswith(f"pganon: error: PA002: release {candidate} is a candidate")
    assert out.read_text() == "earlier\n" and list(tmp_path.iterdir()) == [out]   # no partial file
    conn.execute("SELECT pganon.drop_release(%s)", (candidate,))
    r = run("export", str(candidate), dsn=typed["dsn"])
    assert r.returncode == 2 and "PA001: release" in r.stderr and "dropped" in r.stderr
    r = run("export", str(typed["mondrian"]), "--relation", "st", dsn=typed["dsn"])
    assert r.returncode == 2 and r.stderr.splitlines() == [
        f"pganon: error: PA001: release {typed['mondrian']} has no st: it publishes gt, promise"]


def test_a_superseded_release_that_breaks_the_policy_today_is_refused_with_3(typed, conn):
    """Promoting the anatomy release again would be refused by a stricter policy: so is its export."""
    strict = json.dumps({"prosecutor_risk_max": 0.2})
    conn.execute("SELECT pganon.set_policy(%s, %s::jsonb)", (typed["dataset"], strict))
    try:
        r = run("export", str(typed["anatomy"]), dsn=typed["dsn"])
        assert r.returncode == 3 and "breaks the policy" in r.stderr and "prosecutor_risk_max" in r.stderr
        assert r.stdout == "" and "Traceback" not in r.stderr
        assert run("export", str(typed["mondrian"]), dsn=typed["dsn"]).returncode == 0   # current: what analysts read
    finally:
        conn.execute("SELECT pganon.set_policy(%s, '{}'::jsonb)", (typed["dataset"],))


def test_without_pyarrow_parquet_says_how_to_install_it(typed, conn, tmp_path):
    code = ("import sys; sys.modules['pyarrow'] = None; from pganon.cli import main; "
            f"sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, "export", str(typed["mondrian"]), "--format", "parquet",
                        "-o", str(tmp_path / "x.parquet"), "--dsn", typed["dsn"]],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and r.stderr.splitlines() == [
        "pganon: error: Parquet export needs pyarrow, which is not installed "
        "(hint: pip install 'pganon[parquet]')"]
    assert not (tmp_path / "x.parquet").exists()
