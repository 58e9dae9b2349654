"""The catalog API: each bad call names the problem with pganon's SQLSTATE, and changes nothing."""

import psycopg
import pytest

from helpers import create_table1, declare_table1


@pytest.fixture
def ds(conn, name):
    create_table1(conn, name)
    declare_table1(conn, name, name)
    return name


def _snapshot(conn, ds):
    return conn.execute(
        "SELECT (SELECT json_agg(a ORDER BY position) FROM pganon.attributes a WHERE dataset = %s),"
        "       (SELECT json_agg(s ORDER BY column_name, value) FROM pganon.security_level s "
        "         WHERE dataset_id = pganon._dataset_id(%s)),"
        "       (SELECT json_agg(l ORDER BY level) FROM pganon.level_l l WHERE dataset_id = pganon._dataset_id(%s))",
        (ds, ds, ds)).fetchone()


ERRORS = [  # (call, args after the dataset, sqlstate, message prefix)
    ("set_attribute", ("nope", "quasi", None), "PA001", 'column "nope" does not exist'),
    ("set_attribute", ("age", "secret", None), "PA002", 'unknown role "secret"'),
    ("set_attribute", ("age", "quasi", "fuzzy"), "PA002", 'unknown kind "fuzzy"'),
    ("set_attribute", ("sex", "quasi", "numeric"), "PA002", 'column "sex" has type text, which cannot be numeric'),
    ("set_attribute", ("sex", "quasi", "date"), "PA002", 'column "sex" has type text, which cannot be a date'),
    ("set_attribute", ("rid", "quasi", None), "PA002", 'column "rid" is the key'),
    ("set_security_level", ("age", "30", 1), "PA001", 'column "age" is not a sensitive attribute'),
    ("set_security_level", ("disease", "Flu", 7), "PA003", "security level 7"),
    ("set_security_level", ("disease", "Flu", -1), "PA002", "security level must be a non-negative"),
    ("set_level_l", (1, 5), "PA002", "l must not decrease with the security level"),
    ("set_level_l", (0, 0), "PA002", "l must be an integer >= 1"),
]


@pytest.mark.parametrize("fn,args,sqlstate,prefix", ERRORS, ids=[f"{e[0]}-{e[3][:24]}" for e in ERRORS])
def test_catalog_error_names_problem_and_changes_nothing(conn, ds, fn, args, sqlstate, prefix):
    before = _snapshot(conn, ds)
    placeholders = ", ".join(["%s"] * (len(args) + 1))
    with pytest.raises(psycopg.Error) as err:
        conn.execute(f"SELECT pganon.{fn}({placeholders})", (ds, *args))
    assert err.value.sqlstate == sqlstate
    assert err.value.diag.message_primary.startswith(prefix)
    assert _snapshot(conn, ds) == before


def test_unknown_dataset_has_hint(conn):
    with pytest.raises(psycopg.Error) as err:
        conn.execute("SELECT pganon.set_level_l('no_such_dataset', 1, 2)")
    assert err.value.sqlstate == "PA001"
    assert "register_dataset" in err.value.diag.message_hint


def test_register_unknown_table_or_key(conn, name):
    with pytest.raises(psycopg.errors.UndefinedTable):
        conn.execute("SELECT pganon.register_dataset(%s, 'no_such_table'::regclass, 'id')", (name,))
    create_table1(conn, name)
    with pytest.raises(psycopg.Error) as err:
        conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'nokey')", (name, name))
    assert err.value.sqlstate == "PA001"
    assert conn.execute("SELECT count(*) FROM pganon.dataset WHERE name = %s", (name,)).fetchone()[0] == 0


def test_register_sets_default_levels_and_kinds_are_inferred(conn, name):
    create_table1(conn, name)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid')", (name, name))
    levels = conn.execute("SELECT level, l FROM pganon.level_l WHERE dataset_id = pganon._dataset_id(%s) ORDER BY 1",
                          (name,)).fetchall()
    assert levels == [(0, 1), (1, 2), (2, 3)]
    conn.execute("SELECT pganon.set_attribute(%s, 'age', 'quasi')", (name,))
    conn.execute("SELECT pganon.set_attribute(%s, 'race', 'quasi')", (name,))
    kinds = dict(conn.execute("SELECT column_name, kind FROM pganon.attributes WHERE dataset = %s", (name,)).fetchall())
    assert kinds == {"age": "numeric", "race": "categorical"}


def test_level_l_monotone_accepts_equal_and_new_levels(conn, ds):
    conn.execute("SELECT pganon.set_level_l(%s, 1, 3)", (ds,))      # l1 = l2 = 3 is allowed
    conn.execute("SELECT pganon.set_level_l(%s, 3, 4)", (ds,))      # a fourth level
    conn.execute("SELECT pganon.set_security_level(%s, 'disease', 'HIV', 3)", (ds,))
    assert conn.execute("SELECT level FROM pganon.security_level WHERE value = 'HIV' AND dataset_id = pganon._dataset_id(%s)",
                        (ds,)).fetchone()[0] == 3


def test_dataset_names_longer_than_views_allow_are_refused(conn, name):
    create_table1(conn, name)
    with pytest.raises(psycopg.Error) as err:
        conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid')", ("x" * 57, name))
    assert err.value.sqlstate == "PA002"
