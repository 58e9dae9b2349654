"""Bad input gets a clear error with pganon's SQLSTATE and leaves catalog and release schema as they were."""

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


def test_sensitive_value_without_a_level(conn, t1):
    conn.execute(f"UPDATE \"{t1}\" SET disease = 'Malaria' WHERE rid = 2")
    e = _fails(conn, "PA003", "sensitive values without a security level", t1, "mbf_mslf", "{}")
    assert "'Malaria'" in e.diag.message_primary and "set_security_level" in e.diag.message_hint


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
