"""Hostile names and long values break nothing (issue 12, "Why" 9 and 10): names with braces,
columns named like pganon's release formats or its work columns, dataset names at the length
limit, sensitive values of many kilobytes, error messages that quote values, the session's
temp_buffers and a cancel inside a caught statement."""

import uuid

import psycopg
import pytest
from psycopg import sql

from helpers import checks, publish

I = sql.Identifier

# Per method: (params, person dataset, family). Per family: (names refused for a QI or SA, names
# refused for the key, person or an identifier column) -- the decisions of docs/sql-api.md.
METHODS = {
    "mbf_mslf": ({"generalize": True}, False, "bucketization"), "mmdcf": ({}, False, "bucketization"),
    "anatomy": ({"l": 2}, False, "bucketization"),
    "ck_anonymization": ({"k": 2, "c": 2, "c_f": 2}, False, "linked"),
    "pk_angelization": ({"k": 2, "p": 2}, False, "linked"),
    "mondrian": ({"k": 2, "privacy": {"model": "l_diversity", "l": 2}}, False, "generalized"),
    "gaa": ({"k": 2}, False, "generalized"), "semantic": ({"k": 2, "l": 2}, False, "generalized"),
    "rating": ({"sc": 2}, False, "rating"),
    "danonyir": ({"model": "el", "l": 2}, True, "person"), "geneir": ({"model": "el", "l": 2}, True, "person"),
    "one_m_generalization": ({"k": 2, "l": 2}, True, "person"),
}
REFUSED = {
    "bucketization": ({"group_id", "count"}, {"group_id", "count", "bucket"}),
    "linked": ({"group_id", "bucket_id"}, {"group_id", "bucket_id", "sa", "value"}),
    "generalized": ({"class_id"}, {"class_id"}),
    "person": ({"class_id", "id_num"}, {"class_id", "id_num"}),
    "rating": ({"tk"}, {"tk", "attribute", "group_id", "value", "count"}),
}
# The issue's list of format names, the other columns of the formats, aliases the engine's
# queries use next to a dataset's columns, and names that broke str.format over SQL.
FORMAT_NAMES = ("group_id", "count", "class_id", "bucket_id", "id_num", "tk", "attribute", "value", "sa", "bucket",
                "category", "level", "l")
ALIASES = ("_k", "n", "v", "k", "o", "b", "size", "rank", "nb", "t", "first", "rn", "part", "pc", "q0", "lo0", "hi0",
           "v0", "c0", "s0", "d0", "star0", "code", "r", "m", "s", "g", "u")
BRACES = ("a{b}", "{0}", "}{", "{}", "{{x}}")

N = 48


def _rows(person):
    """48 rows: a numeric QI, a categorical QI, two SAs (4 and 3 values); with a person column
    every person (2 records) keeps one QI vector."""
    out = []
    for i in range(N):
        u = i // 2 if person else i
        row = [i, 20 + (u % 8) * 3, f"x{u % 3}", f"v{i % 4}", f"w{(i // 4) % 3}"]
        out.append(row + [f"p{u}"] if person else row)
    return out


def make_dataset(conn, names, person=False):
    """A table and dataset with columns named by `names` {key, qa, qb, sa, sb} (qa numeric, qb
    categorical QIs; sa, sb SAs with levels) and the person column person0 when asked."""
    ds = f"nm_{uuid.uuid4().hex[:10]}"
    names = dict(names, **({"person": "person0"} if person else {}))
    types = {"key": "int", "qa": "int", "qb": "text", "sa": "text", "sb": "text", "person": "text"}
    conn.execute(sql.SQL("CREATE TABLE {} ({})").format(I(ds), sql.SQL(", ").join(
        sql.SQL("{} {}").format(I(names[r]), sql.SQL(t)) for r, t in types.items() if r in names)))
    with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(I(ds))) as cp:
        for r in _rows(person):
            cp.write_row(r)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, %s, %s)", (ds, ds, names["key"], names.get("person")))
    for r, role in (("qa", "quasi"), ("qb", "quasi"), ("sa", "sensitive"), ("sb", "sensitive")):
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (ds, names[r], role))
    for v in range(4):
        conn.execute("SELECT pganon.set_security_level(%s, %s, %s, 1)", (ds, names["sa"], f"v{v}"))
    for v in range(3):
        conn.execute("SELECT pganon.set_security_level(%s, %s, %s, %s)", (ds, names["sb"], f"w{v}", v % 2))
    return ds


def prepare(conn, method, ds, names):
    """What each method needs besides the columns: hierarchies, a semantic rule, delta."""
    if method in ("gaa", "geneir"):
        conn.execute("""SELECT pganon.build_hierarchy(%s, %s, 'intervals', '{"widths": [6, 12, 24]}')""",
                     (ds, names["qa"]))
        conn.execute("SELECT pganon.build_hierarchy(%s, %s, 'redaction')", (ds, names["qb"]))
    if method == "one_m_generalization":
        conn.execute("SELECT pganon.build_hierarchy(%s, %s, 'redaction')", (ds, names["sa"]))
    if method == "semantic":
        conn.execute("SELECT pganon.set_semantic_rule(%s, 'r1', %s, 'in', ARRAY['v0', 'v1'], 'c')", (ds, names["sa"]))
    if method in ("ck_anonymization", "pk_angelization"):
        conn.execute("SELECT pganon.set_delta(%s, %s)", (ds, names["sa"]))


BASE = {"key": "id0", "qa": "age0", "qb": "zone0", "sa": "sens0", "sb": "sens1"}


def _releases(conn):
    return conn.execute("SELECT count(*) FROM pganon.release").fetchone()[0]


@pytest.mark.parametrize("method", list(METHODS))
def test_a_column_named_like_the_release_format_is_refused_up_front(conn, method):
    """Why 9: columns named like pganon's own broke 36 of 270 publishes. A QI or SA named like a
    column of the family's format, or a key like any column of its relations, is refused before
    any work (PA002, naming the column and the reserved names); nothing is published."""
    params, person, family = METHODS[method]
    published, keys = REFUSED[family]
    cases = [(slot, n) for n in sorted(published) for slot in ("qb", "sa")] + [("key", n) for n in sorted(keys)]
    for slot, name in cases:
        names = dict(BASE, **{slot: name})
        ds = make_dataset(conn, names, person)
        prepare(conn, method, ds, names)
        before = _releases(conn)
        with pytest.raises(psycopg.Error) as e:
            publish(conn, ds, method, **params)
        msg = e.value.diag.message_primary
        assert e.value.sqlstate == "PA002" and f'"{name}"' in msg, (slot, name, msg)
        assert sorted((published if slot != "key" else keys)) == sorted(msg.split("reserved")[1].split(": ")[1]
                                                                         .rstrip(")").split(", ")), msg
        assert "plpy" not in msg and "Traceback" not in str(e.value)
        assert _releases(conn) == before


def _rotations(family):
    """Datasets that give every name not reserved by the family a QI slot and an SA slot (two
    rotations of four names), and the key slot once."""
    published, keys = REFUSED[family]
    names = [n for n in FORMAT_NAMES + ALIASES + BRACES if n not in published | keys]
    names += [f"pad{i}" for i in range(-len(names) % 4)]
    groups = [names[i:i + 4] for i in range(0, len(names), 4)]
    out = []
    for g, four in enumerate(groups):
        key = groups[(g + 1) % len(groups)][0]
        out.append(dict(zip(("qa", "qb", "sa", "sb"), four), key=key))
        out.append(dict(zip(("sa", "sb", "qa", "qb"), four), key="id0"))
    return out


@pytest.mark.parametrize("method", list(METHODS))
def test_other_names_and_braces_publish_and_verify(conn, method):
    """Why 9: a QI or SA named like another family's format column, like an alias of the
    engine's queries, or with braces (which broke str.format over SQL in bucketization and
    anatomy) publishes a release that verifies, with its columns under their own names."""
    params, person, family = METHODS[method]
    for names in _rotations(family):
        ds = make_dataset(conn, names, person)
        prepare(conn, method, ds, names)
        try:
            rid = publish(conn, ds, method, **params)
        except psycopg.Error as exc:
            pytest.fail(f"{names}: {exc.sqlstate} {exc.diag.message_primary[:300]}")
        failed = {c: d for c, (ok, d) in checks(conn, rid).items() if not ok}
        assert not failed, (names, failed)
        gt = conn.execute("SELECT layout->'relations'->>'gt' FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
        cols = [r[0] for r in conn.execute("SELECT attname::text FROM pg_attribute WHERE attrelid = %s::regclass "
                                           "AND attnum > 0 AND NOT attisdropped", (gt,))]
        assert names["qb"] in cols and names["key"] not in cols, (names, cols)


@pytest.mark.parametrize("method", ["ck_anonymization", "one_m_generalization"])
def test_an_sa_named_x_publishes_and_verifies(conn, method):
    params, person, _ = METHODS[method]
    names = dict(BASE, sa="x")
    ds = make_dataset(conn, names, person)
    prepare(conn, method, ds, names)
    rid = publish(conn, ds, method, **params)
    assert all(ok for ok, _ in checks(conn, rid).values())


def test_work_prefix_is_refused_at_declaration_and_at_publish(conn):
    """Internal work columns are all named _pganon...: set_attribute and register_dataset
    refuse such a column, and publish refuses one declared before the check existed."""
    names = dict(BASE)
    ds = make_dataset(conn, names)
    conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN _pganon_bucket text").format(I(ds)))
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT pganon.set_attribute(%s, '_pganon_bucket', 'sensitive')", (ds,))
    assert e.value.sqlstate == "PA002" and '"_pganon_bucket" starts with "_pganon"' in e.value.diag.message_primary
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, '_pganon_bucket')", (ds + "k", ds))
    assert e.value.sqlstate == "PA002" and "_pganon" in e.value.diag.message_primary
    # a catalog from before the check: the QI zone0 renamed under the engine's feet
    conn.execute(sql.SQL("ALTER TABLE {} RENAME COLUMN zone0 TO _pganon_size").format(I(ds)))
    conn.execute("UPDATE pganon.attribute SET column_name = '_pganon_size' WHERE column_name = 'zone0' "
                 "AND dataset_id = (SELECT id FROM pganon.dataset WHERE name = %s)", (ds,))
    for method in ("mbf_mslf", "anatomy", "mondrian", "rating"):
        with pytest.raises(psycopg.Error) as e:
            publish(conn, ds, method, **METHODS[method][0])
        assert e.value.sqlstate == "PA002" and '"_pganon_size"' in e.value.diag.message_primary


def test_an_identifier_column_named_like_a_format_column_is_refused(conn):
    """The verifier's no_identifiers check reads names: an identifier column called class_id
    would fail every generalized release's verification; it is refused up front instead."""
    ds = make_dataset(conn, BASE)
    conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN class_id text").format(I(ds)))
    conn.execute("SELECT pganon.set_attribute(%s, 'class_id', 'identifier')", (ds,))
    with pytest.raises(psycopg.Error) as e:
        publish(conn, ds, "mondrian", k=2)
    assert e.value.sqlstate == "PA002" and 'identifier column "class_id"' in e.value.diag.message_primary
    assert publish(conn, ds, "mbf_mslf")   # no class_id in bucketization's format


# --- dataset names at the length limit -------------------------------------------------------

@pytest.mark.parametrize("name", ["n" * 55, "é" * 27 + "x", "ü" * 25 + "😀x"], ids=["ascii", "2-byte", "4-byte"])
def test_a_55_byte_dataset_name_gets_every_view_whole(conn, name):
    """Why 9: a 56-byte name had its _st_long view silently truncated. 55 bytes, in ASCII or
    UTF-8 letters of 2 and 4 bytes, give every view (gt, st, st_long, promise) its exact name."""
    assert len(name.encode()) == 55
    names = dict(BASE)
    table = f"t_{uuid.uuid4().hex[:8]}"
    conn.execute(sql.SQL("CREATE TABLE {} (id0 int, age0 int, zone0 text, sens0 text, sens1 text)").format(I(table)))
    with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(I(table))) as cp:
        for r in _rows(False):
            cp.write_row(r)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id0')", (name, table))
    for r, role in (("qa", "quasi"), ("qb", "quasi"), ("sa", "sensitive"), ("sb", "sensitive")):
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, names[r], role))
    conn.execute("SELECT pganon.set_delta(%s, 'sens0')", (name,))
    rid = publish(conn, name, "ck_anonymization", promote=True, k=2, c=2, c_f=2)   # the one with _st_long
    assert all(ok for ok, _ in checks(conn, rid).values())
    views = {r[0] for r in conn.execute("SELECT relname::text FROM pg_class c JOIN pg_namespace n "
                                        "ON n.oid = c.relnamespace WHERE n.nspname = 'pganon_release' "
                                        "AND relname::text LIKE %s", (name[:10] + "%",))}
    assert views == {f"{name}_{s}" for s in ("gt", "st", "st_long", "promise")}


@pytest.mark.parametrize("name", ["n" * 56, "é" * 28, "xx" + "😀" * 13 + "xx", "n" * 64], ids=["ascii", "2-byte", "4-byte", "64"])
def test_a_dataset_name_over_55_bytes_is_refused_with_the_limit(conn, name):
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT pganon.register_dataset(%s, 'pg_class', 'oid')", (name,))
    msg = e.value.diag.message_primary
    assert e.value.sqlstate == "PA002" and "55 bytes" in msg and f"{len(name.encode())} bytes long" in msg


# --- long sensitive values -------------------------------------------------------------------

def test_a_10_kb_sensitive_value_gets_a_level_and_is_published(conn):
    """Why 9: a sensitive value over ~2.7 kB could not get a security level (btree key
    overflow). A 10 kB value gets one, a bucketization release holds it and verifies, and
    its level can be changed (the md5 key finds it again)."""
    long_value = "".join(f"{i:05d}" for i in range(2048))   # 10,240 bytes, incompressible enough
    ds = make_dataset(conn, BASE)
    conn.execute(sql.SQL("UPDATE {} SET sens0 = %s WHERE sens0 = 'v3'").format(I(ds)), (long_value,))
    conn.execute("SELECT pganon.set_security_level(%s, 'sens0', %s, 2)", (ds, long_value))
    conn.execute("SELECT pganon.set_security_level(%s, 'sens0', %s, 1)", (ds, long_value))
    levels = conn.execute("SELECT level FROM pganon.security_level s JOIN pganon.dataset d ON d.id = s.dataset_id "
                          "WHERE d.name = %s AND s.value = %s", (ds, long_value)).fetchall()
    assert levels == [(1,)]
    rid = publish(conn, ds, "mbf_mslf", promote=True)
    assert all(ok for ok, _ in checks(conn, rid).values())
    st = conn.execute(sql.SQL("SELECT sum(count) FROM pganon_release.{} WHERE sens0 = %s").format(I(ds + "_st")),
                      (long_value,)).fetchone()[0]
    assert st == N // 4
    lv = conn.execute(sql.SQL("SELECT level FROM {} WHERE value = %s").format(
        sql.SQL(conn.execute("SELECT layout->'relations'->>'levels' FROM pganon.release WHERE id = %s",
                             (rid,)).fetchone()[0])), (long_value,)).fetchone()
    assert lv == (1,)


def test_a_hierarchy_label_too_long_for_its_index_is_refused_cleanly(conn):
    """Hierarchy nodes stay btree keys: a value over MAX_LABEL_BYTES is refused with the limit
    (PA002), not by the index's own error, and the message quotes it cut short."""
    ds = make_dataset(conn, BASE)
    conn.execute(sql.SQL("UPDATE {} SET zone0 = %s WHERE id0 = 0").format(I(ds)), ("z" * 3000,))
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT pganon.build_hierarchy(%s, 'zone0', 'redaction')", (ds,))
    msg = e.value.diag.message_primary
    assert e.value.sqlstate == "PA002" and "longer than 2000 bytes" in msg and len(msg) < 600


def test_the_level_lookup_uses_the_md5_key(conn):
    """Every join of a value to its level stays an index lookup: the planner can use the key
    on md5(value) for the engine's join (checked on its shape, with sequential scans off)."""
    ds = make_dataset(conn, BASE)
    did = conn.execute("SELECT id FROM pganon.dataset WHERE name = %s", (ds,)).fetchone()[0]
    with conn.transaction():
        for off in ("enable_seqscan", "enable_hashjoin", "enable_mergejoin"):
            conn.execute(f"SET LOCAL {off} = off")
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT s.level FROM unnest(ARRAY['v0', 'v1']) AS b(v) LEFT JOIN pganon.security_level s "
            "ON s.dataset_id = %s AND s.column_name = 'sens0' AND md5(s.value) = md5(b.v) AND s.value = b.v",
            (did,)).fetchall())
    assert "security_level_value_key" in plan, plan


# --- error messages that quote values --------------------------------------------------------

@pytest.mark.parametrize("method, params", [("rating", {"sc": 2}), ("anatomy", {"l": 2, "d": 1})])
def test_an_ineligible_value_is_named_cut_short(conn, method, params):
    """The eligibility errors of rating and anatomy name the over-frequent value: cut short."""
    huge = "H" * (1 << 20)
    ds = make_dataset(conn, BASE)
    conn.execute(sql.SQL("UPDATE {} SET sens0 = %s WHERE id0 < 40").format(I(ds)), (huge,))
    conn.execute("SELECT pganon.set_security_level(%s, 'sens0', %s, 1)", (ds, huge))
    with pytest.raises(psycopg.Error) as e:
        publish(conn, ds, method, **params)
    msg = e.value.diag.message_primary
    assert e.value.sqlstate == "PA005" and len(msg) < 400 and "HHHH..." in msg, msg[:400]


# --- temp_buffers and cancels (Why 10) -------------------------------------------------------

@pytest.mark.parametrize("setting, expected", [(None, "256MB"), ("64MB", "64MB"), ("1GB", "1GB")])
def test_publish_raises_only_a_default_temp_buffers_and_never_lowers_one(db_dsn, conn, setting, expected):
    """Why 10: publish set temp_buffers whatever the session had. It raises it (for its own
    transaction) only from the built-in default, and keeps a session's or DBA's setting."""
    ds = make_dataset(conn, BASE)
    with psycopg.connect(db_dsn) as c:   # a new session: no temp table used yet
        if setting:
            c.execute(f"SET temp_buffers = '{setting}'")
            c.commit()
        publish(c, ds, "mbf_mslf")
        inside = c.execute("SHOW temp_buffers").fetchone()[0]
        c.rollback()
        after = c.execute("SHOW temp_buffers").fetchone()[0]
    assert inside == expected and after == (setting or "8MB")


def test_try_run_never_swallows_a_cancel(conn):
    """Why 10: the helper that runs a statement the server may refuse caught every SPIError,
    so a statement_timeout inside it was lost and the publish went on. It catches only the
    SQLSTATEs it is given, and never a cancel (class 57)."""
    conn.execute("""
    CREATE OR REPLACE FUNCTION pg_temp.try_run(q text, codes text[]) RETURNS boolean LANGUAGE plpython3u AS $$
    plpy.execute("SELECT pganon._engine_boot()")
    from pganon_engine.core import plpy_adapter
    return plpy_adapter.Db(plpy).try_run(q, codes)
    $$""")
    refused = conn.execute("SELECT pg_temp.try_run('SET temp_buffers = ''many''', ARRAY['22023'])").fetchone()[0]
    assert refused is False
    with pytest.raises(psycopg.errors.SyntaxError):
        conn.execute("SELECT pg_temp.try_run('SELEC 1', ARRAY['22023'])")
    conn.execute("SET statement_timeout = '300ms'")
    try:
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute("SELECT pg_temp.try_run('SELECT pg_sleep(3)', ARRAY['22023', '57014'])")
    finally:
        conn.execute("RESET statement_timeout")
