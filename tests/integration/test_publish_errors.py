"""Bad input gets a clear error with pganon's SQLSTATE and leaves catalog and release schema as they were."""

import json

import psycopg
import pytest

from helpers import create_table1, declare_table1, publish


def _state(conn):
    return conn.execute(
        "SELECT (SELECT count(*) FROM pganon.release),"
        "       (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'pganon_data'),"
        "       (SELECT coalesce(string_agg(c.relname || ':' || pg_get_viewdef(c.oid), ',' ORDER BY c.relname), '') FROM pg_class c "
        "          JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'pganon_release'),"
        "       (SELECT count(*) FROM pganon.security_level), (SELECT count(*) FROM pganon.attribute)").fetchone()


@pytest.fixture
def t1(conn, name):
    create_table1(conn, name)
    declare_table1(conn, name, name)
    publish(conn, name, "mbf_mslf")           # an earlier release that must survive every failure
    return name


def _fails(conn, sqlstate, prefix, *args):
    before = _state(conn)
    with pytest.raises(psycopg.Error) as err:
        conn.execute("SELECT pganon.publish(%s, %s, %s::jsonb)", args)
    assert err.value.sqlstate == sqlstate, err.value
    assert err.value.diag.message_primary.startswith(prefix), err.value.diag.message_primary
    assert _state(conn) == before
    return err.value


def test_null_in_a_quasi_identifier(conn, t1):
    conn.execute(f'ALTER TABLE "{t1}" ALTER COLUMN age DROP NOT NULL')   # the loader declares NOT NULL
    conn.execute(f'UPDATE "{t1}" SET age = NULL WHERE rid = 4')
    e = _fails(conn, "PA004", "NULL values in", t1, "mbf_mslf", "{}")
    assert "age: 1 rows" in e.diag.message_primary


def test_null_in_a_sensitive_attribute(conn, t1):
    conn.execute(f'ALTER TABLE "{t1}" ALTER COLUMN disease DROP NOT NULL')
    conn.execute(f'UPDATE "{t1}" SET disease = NULL WHERE rid = 2')
    _fails(conn, "PA004", "NULL values in", t1, "mmdcf_mslf", "{}")


def test_empty_table(conn, t1):
    conn.execute(f'DELETE FROM "{t1}"')
    _fails(conn, "PA004", "the source table", t1, "mbf", "{}")


def test_a_sensitive_value_without_a_level_gets_the_highest(conn, t1):
    """Unlisted values take the attribute's default level, the highest declared one unless set
    (issue 13: a declaration no longer lists every value one by one)."""
    conn.execute(f"UPDATE \"{t1}\" SET disease = 'Malaria' WHERE rid = 2")
    top = conn.execute("SELECT max(level) FROM pganon.level_l l JOIN pganon.dataset d ON d.id = l.dataset_id "
                       "WHERE d.name = %s", (t1,)).fetchone()[0]
    rid = publish(conn, t1, "mbf_mslf")
    levels = conn.execute("SELECT layout->'relations'->>'levels' FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    level, l = conn.execute(f"SELECT level, l FROM {levels} WHERE sa = 'disease' AND value = 'Malaria'").fetchone()
    want_l = conn.execute("SELECT l FROM pganon.level_l l JOIN pganon.dataset d ON d.id = l.dataset_id "
                          "WHERE d.name = %s AND level = %s", (t1, top)).fetchone()[0]
    assert (level, l) == (top, want_l) and top > 0
    assert all(p for _, p, _ in conn.execute("SELECT * FROM pganon.verify(%s)", (rid,)))


def test_unknown_method_and_parameters(conn, t1):
    _fails(conn, "PA002", "unknown method 'mondrianish'", t1, "mondrianish", "{}")
    _fails(conn, "PA002", "unknown parameter(s) ['k']", t1, "mbf", '{"k": 3}')
    _fails(conn, "PA002", "d = 3 but dataset", t1, "mbf", '{"d": 3}')
    _fails(conn, "PA002", "parameter tie must be", t1, "mbf", '{"tie": "last"}')
    _fails(conn, "PA002", "['age'] are not sensitive attributes", t1, "mbf", '{"sensitive": ["age"]}')


def test_unknown_dataset(conn):
    _fails(conn, "PA001", 'dataset "nobody" is not registered', "nobody", "mbf", "{}")


def test_duplicate_keys(conn, name):
    conn.execute(f'CREATE TABLE "{name}" AS SELECT 1 AS id, 30 AS age, \'Flu\' AS disease UNION ALL SELECT 1, 31, \'HIV\'')
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, name))
    conn.execute("SELECT pganon.set_attribute(%s, 'age', 'quasi')", (name,))
    conn.execute("SELECT pganon.set_attribute(%s, 'disease', 'sensitive')", (name,))
    _fails(conn, "PA004", 'key column "id"', name, "mbf", "{}")


def test_interrupted_publish_leaves_no_trace(conn, name):
    conn.execute(f'CREATE TABLE "{name}" AS SELECT g AS id, 20 + g % 50 AS age, '
                 f"(ARRAY['Flu','HIV','Cancer','Cold','Gastritis'])[1 + g % 5] AS disease, "
                 f"(ARRAY['A','B','C','D'])[1 + (g / 7) % 4] AS doctor FROM generate_series(1, 60000) g")
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, name))
    conn.execute("SELECT pganon.set_attribute(%s, 'age', 'quasi')", (name,))
    for sa in ("disease", "doctor"):
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'sensitive')", (name, sa))
    for v in ("Flu", "HIV", "Cancer", "Cold", "Gastritis"):
        conn.execute("SELECT pganon.set_security_level(%s, 'disease', %s, 1)", (name, v))
    for v in "ABCD":
        conn.execute("SELECT pganon.set_security_level(%s, 'doctor', %s, 0)", (name, v))
    before = _state(conn)
    conn.execute("SET statement_timeout = '150ms'")
    with pytest.raises(psycopg.errors.QueryCanceled):
        conn.execute("SELECT pganon.publish(%s, 'mmdcf_mslf')", (name,))
    conn.execute("RESET statement_timeout")
    assert _state(conn) == before
    rid = publish(conn, name, "mmdcf_mslf")      # and it works without the timeout
    assert conn.execute("SELECT published_rows FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0] == 60000


def _clinic(conn, name, rows, levels):
    """A table (id, age, disease, drug) with both SAs declared and the given security levels."""
    conn.execute(f'CREATE TABLE "{name}" (id int PRIMARY KEY, age int, disease text, drug text)')
    with conn.cursor().copy(f'COPY "{name}" FROM STDIN') as cp:
        for i, (disease, drug) in enumerate(rows):
            cp.write_row((i, 20 + i % 50, disease, drug))
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, name))
    for col, role in [("age", "quasi"), ("disease", "sensitive"), ("drug", "sensitive")]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    for col, values in levels.items():
        for value, level in values.items():
            conn.execute("SELECT pganon.set_security_level(%s, %s, %s, %s)", (name, col, value, level))
    publish(conn, name, "mbf", min_group=1, l=1)   # an earlier release that every refusal must leave alone


FIVE = {"disease": {d: 1 for d in ("flu", "hiv", "cold", "ulcer", "gout")}, "drug": {"a": 0, "b": 0, "c": 0}}
FIVE_ROWS = [(d, "abc"[i % 3]) for i, d in enumerate(["flu", "hiv", "cold", "ulcer", "gout"] * 12)]
# no two of these vectors differ in both attributes once a third joins: no 3-diverse group
STAR = {"disease": {"a": 1, "b": 1, "c": 1}, "drug": {"x": 0, "y": 0, "z": 0}}
STAR_ROWS = [("a", "x"), ("a", "y"), ("a", "z"), ("b", "x"), ("c", "x")] * 6

REFUSALS = [  # (rows, levels, method, params, sqlstate, message prefix): finding 5, refused before the plan
    (FIVE_ROWS, FIVE, "mbf", {"l": 9}, "PA005", "l = 9 but disease has only 5 distinct values"),
    (FIVE_ROWS, FIVE, "mmdcf", {"l": 4, "sensitive": ["drug"]}, "PA005", "l = 4 but drug has only 3 distinct values"),
    # L_sl: two values of level 2 (l = 3) can fill at most 2/3 of any group
    ([("hiv", "a"), ("aids", "b")] * 15, {"disease": {"hiv": 2, "aids": 2}, "drug": {"a": 0, "b": 0}}, "mbf_mslf", {},
     "PA005", "disease has only 2 distinct values (2 with l = 3): their shares 1/l add up to 2/3 < 1"),
    (FIVE_ROWS, {**FIVE, "disease": {"flu": 2, "hiv": 2, "cold": 2, "ulcer": 2, "gout": 2}}, "msdcf_mslf",
     {"sensitive": ["disease", "drug"]}, "PA005", None),   # control: 5 values with l = 3 reach 5/3 >= 1
    # min_group: a group needs that many distinct sensitive vectors (finding 6)
    ([("flu", "a")] * 30, {"disease": {"flu": 0}, "drug": {"a": 0}}, "mmdcf_mslf", {}, "PA005",
     "min_group = 2 needs 2 distinct sensitive vectors per group; the table has 1"),
    (FIVE_ROWS, FIVE, "mbf_mslf", {"min_group": 16}, "PA005",
     "min_group = 16 needs 16 distinct sensitive vectors per group; the table has 15"),
    # found by the plan (each attribute has 3 values), refused before anything is assigned
    (STAR_ROWS, STAR, "mbf", {"l": 3}, "PA005", "mbf found no 3-diverse group"),
    (FIVE_ROWS, FIVE, "anatomy", {"l": 25, "eligibility": "suppress"}, "PA005",
     "anatomy l = 25 needs 25 distinct sensitive vectors per group; the table has 15; "
     "eligibility suppress would leave 0 of 60 rows"),
    (FIVE_ROWS, FIVE, "anatomy", {"l": 25}, "PA005", "anatomy l = 25 needs 25 distinct sensitive vectors"),
    # malformed or contradictory arguments
    (FIVE_ROWS, FIVE, "mbf", {"l": 1}, "PA002", "l = 1 is below min_group = 2"),
    (FIVE_ROWS, FIVE, "mbf_mslf", {"min_group": 0}, "PA002", "parameter min_group must be an integer >= 1"),
    (FIVE_ROWS, FIVE, "mbf_mslf", {"min_group": "2"}, "PA002", "parameter min_group must be an integer >= 1"),
    (FIVE_ROWS, FIVE, "mbf_mslf", {"l": 3}, "PA002", "parameter l is the baselines' single l"),
]


@pytest.mark.parametrize("rows,levels,method,params,sqlstate,prefix", REFUSALS,
                         ids=[f"{r[2]}-{'-'.join(map(str, r[3].values()))}" for r in REFUSALS])
def test_impossible_or_vacuous_requests_are_refused_and_leave_nothing(conn, name, rows, levels, method, params,
                                                                      sqlstate, prefix):
    _clinic(conn, name, rows, levels)
    if prefix is None:   # the control case: a satisfiable request under the same rule publishes
        rid = publish(conn, name, method, **params)
        assert conn.execute("SELECT published_rows FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0] > 0
        return
    e = _fails(conn, sqlstate, prefix, name, method, json.dumps(params))
    if not prefix.startswith("parameter min_group"):   # the generic integer check names the rule itself
        assert e.diag.message_hint, e.diag.message_primary
