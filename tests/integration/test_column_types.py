"""Real column types (issue 13, item 5): quasi-identifiers of type smallint, integer, bigint,
numeric, real, double precision, date, timestamp and timestamptz publish in every method and the
independent verifier passes; sensitive attributes of those types too; a column whose type changed
after its declaration is refused with a PA error that names it, its declared kind or the type a
release was made from, its type now, and the fix.

The checks here are the test's own: the GT's cell types and, through the admin-only map, that
every record's value lies in its class's published cell (the value cast to the cell's subtype,
as an analyst would compare it)."""

import datetime
import decimal
import uuid

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from helpers import checks, publish, relation

I = sql.Identifier
TYPES = ["smallint", "integer", "bigint", "numeric", "real", "double precision", "date", "timestamp",
         "timestamptz"]
DATES = ("date", "timestamp", "timestamptz")
# the range a class's cell of each type is published as (docs/sql-api.md)
CELL = {"smallint": "int4range", "integer": "int4range", "bigint": "int8range", "numeric": "numrange",
        "real": "numrange", "double precision": "numrange", "date": "daterange", "timestamp": "tsrange",
        "timestamptz": "tstzrange"}
# what a value is cast to before @> with its cell: the cell's subtype (PostgreSQL has no
# int4range @> smallint); real and double precision cells hold their values cast to numeric
SUBTYPE = {"smallint": "integer", "real": "numeric", "double precision": "numeric"}
PERSON_METHODS = ("danonyir", "geneir", "one_m_generalization")
# method -> (params, person dataset, does it publish numeric QIs as range cells; the person
# methods publish date and timestamp QIs as value sets, gaa and geneir as hierarchy labels)
METHODS = {
    "mbf": ({"generalize": True}, False, True), "msdcf": ({}, False, False),
    "mmdcf": ({"generalize": True}, False, True), "mbf_mslf": ({}, False, False),
    "msdcf_mslf": ({"generalize": True}, False, True), "mmdcf_mslf": ({"generalize": True}, False, True),
    "anatomy": ({"l": 2}, False, False),
    "ck_anonymization": ({"k": 2, "c": 2, "c_f": 2}, False, True),
    "pk_angelization": ({"k": 2, "p": 2}, False, True),
    "mondrian": ({"k": 2, "privacy": {"model": "l_diversity", "l": 2}}, False, True),
    "gaa": ({"k": 2}, False, False), "semantic": ({"k": 2, "l": 2}, False, True),
    "rating": ({"sc": 2}, False, False),
    "danonyir": ({"model": "el", "l": 2}, True, True), "geneir": ({"model": "el", "l": 2}, True, False),
    "one_m_generalization": ({"k": 2, "l": 2}, True, True),
}
N = 48   # rows: 24 persons of 2 records each (person methods), SAs cycling so every method can publish


def sample(typ, i):
    """A deterministic value of `typ` for person i (8 distinct values, spread over the type)."""
    x = (i % 8) * 3 - 9
    return {"smallint": x * 1000, "integer": x * 10 ** 8, "bigint": x * 10 ** 17,
            "numeric": decimal.Decimal(x) / 7, "real": x / 3.0 + 0.1, "double precision": x * 1e15 + 0.1,
            "date": datetime.date(2000, 1, 1) + datetime.timedelta(days=4000 * x),
            "timestamp": datetime.datetime(2000, 1, 1, 12) + datetime.timedelta(hours=7777 * x, microseconds=3),
            "timestamptz": datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
            + datetime.timedelta(minutes=99999 * x)}[typ]


def make(conn, qis, person=False, sa_type=None, values=None):
    """A table and dataset: the key id0, QI columns {name: type}, a categorical QI zone0, SAs
    sens0 (text, 4 values of level 1) and sens1 (3 values of levels 0 and 1; of `sa_type` when
    given), person0 when asked. values: {QI name: 24 values, one per person} (default `sample`)."""
    ds = f"ct_{uuid.uuid4().hex[:10]}"
    values = {c: (values or {}).get(c) or [sample(t, k) for k in range(24)] for c, t in qis.items()}
    s1 = sa_type or "text"
    cols = [sql.SQL("id0 int")] + [sql.SQL("{} {}").format(I(c), sql.SQL(t)) for c, t in qis.items()]
    cols += [sql.SQL("zone0 text, sens0 text, sens1 {}").format(sql.SQL(s1))]
    cols += [sql.SQL("person0 text")] if person else []
    conn.execute(sql.SQL("CREATE TABLE {} ({})").format(I(ds), sql.SQL(", ").join(cols)))
    s1_values = [sample(sa_type, j * 3) for j in range(3)] if sa_type else ["w0", "w1", "w2"]
    with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(I(ds))) as cp:
        for i in range(N):
            u = i // 2
            row = [i] + [values[c][u] for c in qis]
            row += [f"x{u % 3}", f"v{i % 4}", s1_values[(i // 4) % 3]]
            cp.write_row(row + ([f"p{u}"] if person else []))
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id0', %s)",
                 (ds, I(ds).as_string(conn), "person0" if person else None))
    conn.execute("""SELECT pganon.set_policy(%s, '{"published_share": 0}')""", (ds,))
    for c in list(qis) + ["zone0"]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'quasi')", (ds, c))
    for c in ("sens0", "sens1"):
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'sensitive')", (ds, c))
    for v in range(4):
        conn.execute("SELECT pganon.set_security_level(%s, 'sens0', %s, 1)", (ds, f"v{v}"))
    # a typed SA's levels are set on its values' text, as a DBA reads them from the table
    texts = [r[0] for r in conn.execute(sql.SQL("SELECT DISTINCT sens1::text FROM {} ORDER BY 1").format(I(ds)))]
    for j, v in enumerate(texts):
        conn.execute("SELECT pganon.set_security_level(%s, 'sens1', %s, %s)", (ds, v, j % 2))
    return ds


def prepare(conn, method, ds, qis):
    """Hierarchies (gaa, geneir: intervals for numbers, dates for dates and timestamps), the
    semantic rule, the delta of the linked methods."""
    if method in ("gaa", "geneir"):
        for c, t in qis.items():
            if t in DATES:
                conn.execute("SELECT pganon.build_hierarchy(%s, %s, 'dates')", (ds, c))
            else:
                conn.execute("""SELECT pganon.build_hierarchy(%s, %s, 'intervals', '{"widths": [1000, 1000000]}')""",
                             (ds, c))
        conn.execute("SELECT pganon.build_hierarchy(%s, 'zone0', 'redaction')", (ds,))
    if method == "one_m_generalization":
        conn.execute("SELECT pganon.build_hierarchy(%s, 'sens0', 'redaction')", (ds,))
    if method == "semantic":
        conn.execute("SELECT pganon.set_semantic_rule(%s, 'r1', 'sens0', 'in', ARRAY['v0', 'v1'], 'c')", (ds,))
    if method in ("ck_anonymization", "pk_angelization"):
        conn.execute("SELECT pganon.set_delta(%s, 'sens0')", (ds,))


def gt_types(conn, rid):
    gt = relation(conn, rid)
    return dict(conn.execute("SELECT attname::text, format_type(atttypid, NULL) FROM pg_attribute "
                             "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped", (gt,)).fetchall())


def uncovered(conn, ds, rid, column, typ):
    """Source records whose value of `column` (of type `typ`) lies outside their class's
    published range cell, joined through the admin-only map on the release's group column."""
    lay = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    group = lay.get("gt_group", "group_id")
    rels = lay["relations"]
    return conn.execute(sql.SQL(
        "SELECT count(*) FROM {map} m JOIN {src} s USING (id0) "
        "JOIN (SELECT DISTINCT ON ({g}) {g}, {c} FROM {gt} ORDER BY {g}) g USING ({g}) "
        "WHERE NOT (g.{c} @> s.{c}::{sub})").format(
            map=sql.SQL(rels["map"]), src=I(ds), g=I(group), c=I(column), gt=sql.SQL(rels["gt"]),
            sub=sql.SQL(SUBTYPE.get(typ, typ)))).fetchone()[0]


def assert_published(conn, ds, method, qis):
    """Publish with the method's parameters; every verifier check passes; where the method
    publishes ranges, each QI's cell is the range type of its column type and holds every record."""
    params, _, ranges = METHODS[method]
    rid = publish(conn, ds, method, **params)
    failed = {c: d for c, (ok, d) in checks(conn, rid).items() if not ok}
    assert not failed, (method, qis, failed)
    types = gt_types(conn, rid)
    for c, t in qis.items():
        if ranges and not (method in PERSON_METHODS and t in DATES):
            assert types[c] == CELL[t], (method, c, t, types[c])
            assert uncovered(conn, ds, rid, c, t) == 0, (method, c, t)
    return rid


# --------------------------------------------------------------------------------------------
# the issue's case and the whole matrix
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method, params", [("mondrian", {"k": 2}), ("semantic", {"k": 2, "l": 2}),
                                            ("mbf_mslf", {"generalize": True}), ("mmdcf", {"generalize": True})])
def test_smallint_qi_publishes_where_it_failed_with_42883(conn, method, params):
    """Why: a smallint numeric QI made mondrian, semantic and bucketization with generalize fail
    with an internal 42883 (`smallint <@ int4range`). They publish int4range cells that hold
    every record, and verify."""
    ds = make(conn, {"age": "smallint"})
    prepare(conn, method, ds, {"age": "smallint"})
    rid = publish(conn, ds, method, **params)
    assert all(ok for ok, _ in checks(conn, rid).values()), checks(conn, rid)
    assert gt_types(conn, rid)["age"] == "int4range"
    assert uncovered(conn, ds, rid, "age", "smallint") == 0


@pytest.mark.parametrize("method", list(METHODS))
def test_every_type_in_every_method(conn, method):
    """One table with a QI of each of the nine types (and a typed SA): every method publishes and
    verifies, and each range cell is of its column's range type and covers its records."""
    qis = {f"q_{t.split()[0]}": t for t in TYPES}
    person = METHODS[method][1]
    ds = make(conn, qis, person=person, sa_type="numeric")
    prepare(conn, method, ds, qis)
    rid = assert_published(conn, ds, method, qis)
    assert conn.execute("SELECT count(*) FROM pganon.risk(%s)", (rid,)).fetchone()[0] > 0


# --------------------------------------------------------------------------------------------
# property: random tables over the types, hostile names
# --------------------------------------------------------------------------------------------

# hostile column names (upper case, SQL in a name, quotes, braces, unicode, 63 bytes)
NAMES = ["Age", "a; select 1", "it's", 'x"y', "a{b}", "ünïcødé", "n" * 63, "select"]
UTC = datetime.timezone.utc


def values_of(typ):
    """A strategy for one value of `typ` over (nearly) its whole domain: the largest integers
    are left out (T5, tested below); doubles stay within 1e150: risk's numbering check averages
    them in float8, whose running sum of squares overflows above about 1.3e154."""
    return {"smallint": st.integers(-32768, 32767), "integer": st.integers(-2 ** 31, 2 ** 31 - 2),
            "bigint": st.integers(-2 ** 63, 2 ** 63 - 2),
            "numeric": st.decimals(-10 ** 15, 10 ** 15, places=4, allow_nan=False, allow_infinity=False),
            "real": st.floats(-3.0000000054977558e+38, 3.0000000054977558e+38, width=32,
                              allow_nan=False).filter(lambda x: x == 0 or abs(x) > 1e-37),
            "double precision": st.floats(-1e150, 1e150, allow_nan=False),
            "date": st.dates(datetime.date(1, 1, 1), datetime.date(9999, 12, 31)),
            "timestamp": st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1)),
            "timestamptz": st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1),
                                        timezones=st.just(UTC))}[typ]


@st.composite
def tables(draw):
    """One or two typed QIs under hostile names, 24 values each (one per person; few distinct, so
    classes form), and the type of the second SA."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=2, unique=True))
    qis = {n: draw(st.sampled_from(TYPES)) for n in names}
    values = {}
    for n, t in qis.items():
        # 2-6 distinct values dealt out evenly: none on more than half the rows (rating refuses
        # that, rightly, at sc = 2)
        pool = draw(st.lists(values_of(t), min_size=2, max_size=6, unique=True))
        order = draw(st.permutations(range(24)))
        values[n] = [pool[order[u] % len(pool)] for u in range(24)]
    return qis, values, draw(st.sampled_from([None] + TYPES))


@pytest.mark.parametrize("method", list(METHODS))
@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=tables())
def test_random_typed_tables_publish_and_verify(db_dsn, method, case):
    qis, values, sa_type = case
    with psycopg.connect(db_dsn) as conn:       # one transaction, rolled back: nothing accumulates
        ds = make(conn, qis, person=METHODS[method][1], sa_type=sa_type, values=values)
        prepare(conn, method, ds, qis)
        assert_published(conn, ds, method, qis)
        conn.rollback()


# --------------------------------------------------------------------------------------------
# exactness and edges
# --------------------------------------------------------------------------------------------


def test_double_values_that_floats_cannot_tell_apart_from_their_decimals_are_covered(conn):
    """T2: real and double precision cells are numranges of the values cast to numeric; values
    such as 0.1 + 0.2 and 1e-300 are covered exactly in numeric by their class's cell."""
    vals = [0.1, 0.30000000000000004, 0.3, 1e-300, -1e-300, 123456789.12345679, 2.5, 1e15 + 0.5]
    reals = [0.1, 0.2, 0.3, 1e-30, -1e-30, 16777217.0, 2.5, 3.4e38]
    ds = make(conn, {"d": "double precision", "r": "real"},
              values={"d": [vals[u % 8] for u in range(24)], "r": [reals[(u + 3) % 8] for u in range(24)]})
    rid = assert_published(conn, ds, "mondrian", {"d": "double precision", "r": "real"})
    bad = conn.execute(sql.SQL("SELECT count(*) FROM {m} m JOIN {s} s USING (id0) JOIN {g} g USING (class_id) "
                               "WHERE NOT (s.d::numeric <@ g.d AND s.r::numeric <@ g.r)").format(
        m=sql.SQL(relation(conn, rid, "map")), s=I(ds), g=sql.SQL(relation(conn, rid)))).fetchone()[0]
    assert bad == 0


def test_date_cells_verify_in_any_session_time_zone(conn):
    """The verifier compares date and timestamp cells as timestamptz in the session's time zone
    on both sides: a release published in UTC verifies in another zone."""
    qis = {"born": "date", "seen": "timestamptz"}
    ds = make(conn, qis)
    conn.execute("SET TimeZone = 'UTC'")
    rid = assert_published(conn, ds, "mondrian", qis)
    conn.execute("SET TimeZone = 'Asia/Kathmandu'")
    try:
        assert all(ok for ok, _ in checks(conn, rid).values())
    finally:
        conn.execute("RESET TimeZone")


@pytest.mark.parametrize("typ, top, cast", [("integer", 2 ** 31 - 1, "bigint"), ("bigint", 2 ** 63 - 1, "numeric")])
def test_a_qi_at_its_types_largest_value_is_refused_where_cells_are_ranges(conn, typ, top, cast):
    """T5: a closed int4range cannot end at 2147483647 (it is stored as [lo, 2147483648)). A range
    publish refuses the QI (PA004) naming the value and the cast; an exact publish goes through."""
    ds = make(conn, {"n": typ}, values={"n": [top if u == 5 else u for u in range(24)]})
    before = conn.execute("SELECT count(*) FROM pganon.release").fetchone()[0]
    with pytest.raises(psycopg.Error) as e:
        publish(conn, ds, "mondrian", k=2)
    assert e.value.sqlstate == "PA004"
    assert f'"n" holds {top}' in e.value.diag.message_primary and cast in e.value.diag.message_hint
    assert conn.execute("SELECT count(*) FROM pganon.release").fetchone()[0] == before
    assert all(ok for ok, _ in checks(conn, publish(conn, ds, "mbf_mslf")).values())


@pytest.mark.parametrize("method, typ, widen", [("mondrian", "timestamp", None), ("mbf_mslf", "real", None),
                                               ("mondrian", "smallint", "bigint"), ("mbf_mslf", "date", "timestamptz")])
def test_the_verifier_sees_a_cell_that_no_longer_covers_its_records(conn, method, typ, widen):
    """The verifier's own comparison, in the cell's range type or (after the column was widened)
    in its kind's common space: a cell narrowed to its lower bound fails gt_matches_source."""
    ds = make(conn, {"q": typ})
    rid = publish(conn, ds, method, **({"generalize": True} if method == "mbf_mslf" else {"k": 2}))
    if widen:
        conn.execute(sql.SQL("ALTER TABLE {} ALTER q TYPE {}").format(I(ds), sql.SQL(widen)))
        assert all(ok for ok, _ in checks(conn, rid).values()), checks(conn, rid)
    # the class of the table's smallest value gets the cell of its largest value
    group = "class_id" if method == "mondrian" else "group_id"
    sub = SUBTYPE.get(typ, typ)
    conn.execute(sql.SQL("UPDATE {gt} SET q = (SELECT {rng}(max(q)::{sub}, max(q)::{sub}, '[]') FROM {src}) "
                         "WHERE {g} IN (SELECT m.{g} FROM {map} m JOIN {src} s USING (id0) "
                         "              WHERE s.q = (SELECT min(q) FROM {src}))").format(
        gt=sql.SQL(relation(conn, rid)), rng=sql.SQL(CELL[typ]), sub=sql.SQL(sub), src=I(ds), g=I(group),
        map=sql.SQL(relation(conn, rid, "map"))))
    assert checks(conn, rid)["gt_matches_source"][0] is False


@pytest.mark.parametrize("typ", ["smallint", "bigint", "numeric", "date", "timestamp without time zone",
                                 "timestamp with time zone"])
def test_the_python_number_line_is_the_sql_one(conn, typ):
    """Values the engine reads as text (rating's ID table, linkage) land where SQL puts them."""
    from pganon_engine.core import coltypes
    t = coltypes.TYPES[typ]
    for i in range(8):
        v = sample({"timestamp without time zone": "timestamp", "timestamp with time zone": "timestamptz"}.get(typ, typ), i)
        text, number = conn.execute(f"SELECT x::text, {coltypes.number('x', t)} FROM (SELECT %s::{typ} AS x) y",
                                    (v,)).fetchone()
        assert coltypes.number_of_text(text, t) == pytest.approx(number, rel=1e-15), (typ, text)


# --------------------------------------------------------------------------------------------
# a column's type changed after its declaration
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["mondrian", "mbf_mslf", "ck_anonymization", "danonyir", "rating"])
def test_type_changed_to_text_after_declaration_is_refused_at_publish_and_verify(conn, method):
    """Why: `ALTER TABLE ... TYPE text` on a declared numeric QI gave `operator does not exist:
    text <@ numrange`. Publish refuses (PA003) naming the column, its declared kind, its type now
    and set_attribute; verify of the earlier release refuses (PA003) naming the type the release
    was made from; pganon.check, which groups cells by equality, still answers."""
    qis = {"age": "integer"}
    ds = make(conn, qis, person=METHODS[method][1])
    prepare(conn, method, ds, qis)
    rid = publish(conn, ds, method, **METHODS[method][0])
    conn.execute(sql.SQL("ALTER TABLE {} ALTER age TYPE text").format(I(ds)))
    with pytest.raises(psycopg.Error) as e:
        publish(conn, ds, method, **METHODS[method][0])
    msg = e.value.diag.message_primary
    assert e.value.sqlstate == "PA003"
    assert '"age"' in msg and "declared numeric" in msg and "type text" in msg, msg
    assert "pganon.set_attribute(" in e.value.diag.message_hint and "Traceback" not in str(e.value)
    with pytest.raises(psycopg.Error) as e:
        checks(conn, rid)
    msg = e.value.diag.message_primary
    assert e.value.sqlstate == "PA003"
    assert '"age"' in msg and "type text now" in msg and "from integer values" in msg, msg
    assert "set_attribute" in e.value.diag.message_hint
    out = conn.execute("SELECT pganon.check(%s::regclass, '{age,zone0}', '{sens0}', 'l_diversity', '{\"l\": 2}')",
                       (I(ds).as_string(conn),)).fetchone()[0]
    assert out["value"] >= 1
    # declared again for its new type, it publishes (as a categorical QI) and verifies
    conn.execute("SELECT pganon.set_attribute(%s, 'age', 'quasi')", (ds,))
    assert conn.execute("SELECT kind FROM pganon.attributes WHERE dataset = %s AND column_name = 'age'",
                        (ds,)).fetchone()[0] == "categorical"
    if method != "mondrian":   # mondrian's l-diverse classes need a hierarchy or ordinal text here
        rid2 = publish(conn, ds, method, **METHODS[method][0])
        assert all(ok for ok, _ in checks(conn, rid2).values())


def test_type_widened_after_declaration_still_publishes_and_verifies(conn):
    """integer -> bigint keeps the kind: the old release still verifies against the widened
    column, and a new one publishes int8range cells."""
    ds = make(conn, {"age": "integer"})
    rid = publish(conn, ds, "mondrian", k=2)
    conn.execute(sql.SQL("ALTER TABLE {} ALTER age TYPE bigint").format(I(ds)))
    assert all(ok for ok, _ in checks(conn, rid).values())
    rid2 = publish(conn, ds, "mondrian", k=2)
    assert gt_types(conn, rid2)["age"] == "int8range"
    assert all(ok for ok, _ in checks(conn, rid2).values())


def test_an_sa_whose_type_changed_is_refused_at_publish_and_verify(conn):
    """A sensitive attribute declared numeric whose column became text: PA003 naming it, at
    publish and at the verification of a release made before."""
    ds = make(conn, {"age": "integer"}, sa_type="integer")
    assert conn.execute("SELECT kind FROM pganon.attributes WHERE dataset = %s AND column_name = 'sens1'",
                        (ds,)).fetchone()[0] == "numeric"
    rid = publish(conn, ds, "mbf_mslf")
    conn.execute(sql.SQL("ALTER TABLE {} ALTER sens1 TYPE text").format(I(ds)))
    for call in (lambda: publish(conn, ds, "mbf_mslf"), lambda: checks(conn, rid)):
        with pytest.raises(psycopg.Error) as e:
            call()
        msg = e.value.diag.message_primary
        assert e.value.sqlstate == "PA003" and 'sensitive attribute "sens1"' in msg and "text" in msg, msg
        assert "\n" not in msg and "Traceback" not in str(e.value)
