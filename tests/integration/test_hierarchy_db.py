"""Hierarchies in the catalog: declared from CSV or a builder, checked against the data, stored
node by node, exported again; bad input refused with pganon's SQLSTATEs and nothing stored."""

import psycopg
import pytest

from helpers import create_table1, declare_table1

SEX = "M;*\nF;*\n"


@pytest.fixture
def t1(conn, name):
    create_table1(conn, name)
    declare_table1(conn, name, name)
    return name


def _nodes(conn, ds, col):
    return conn.execute("SELECT node, parent, depth, leaf_count FROM pganon.hierarchy_node n "
                        "JOIN pganon.dataset d ON d.id = n.dataset_id WHERE d.name = %s AND n.column_name = %s "
                        "ORDER BY ord", (ds, col)).fetchall()


def test_set_hierarchy_from_csv_stores_the_tree_and_exports_it(conn, t1):
    shape = conn.execute("SELECT pganon.set_hierarchy(%s, 'sex', %s)", (t1, SEX)).fetchone()[0]
    assert shape == {"column": "sex", "origin": "csv", "height": 2, "leaves": 2, "nodes": 3}
    assert _nodes(conn, t1, "sex") == [("*", None, 0, 2), ("F", "*", 1, 1), ("M", "*", 1, 1)]
    assert conn.execute("SELECT pganon.hierarchy_csv(%s, 'sex')", (t1,)).fetchone()[0] == "F;*\nM;*\n"
    row = conn.execute("SELECT column_name, origin, height, leaves, nodes FROM pganon.hierarchies "
                       "WHERE dataset = %s", (t1,)).fetchone()
    assert row == ("sex", "csv", 2, 2, 3)


def test_unbalanced_hierarchy_round_trips_through_csv(conn, t1):
    csv = "M;M;*\nF;Female;*\n"  # ARX pads the short branch by repeating its leaf
    conn.execute("SELECT pganon.set_hierarchy(%s, 'sex', %s)", (t1, csv))
    out = conn.execute("SELECT pganon.hierarchy_csv(%s, 'sex')", (t1,)).fetchone()[0]
    assert out == csv
    conn.execute("SELECT pganon.set_hierarchy(%s, 'sex', %s)", (t1, out))
    assert _nodes(conn, t1, "sex") == [("*", None, 0, 2), ("Female", "*", 1, 1), ("M", "*", 1, 1),
                                       ("F", "Female", 2, 1)]


def test_build_intervals_covers_every_value(conn, t1):
    shape = conn.execute("""SELECT pganon.build_hierarchy(%s, 'age', 'intervals', '{"widths": [10, 20]}')""",
                         (t1,)).fetchone()[0]
    assert shape["height"] == 4
    ages = {r[0] for r in conn.execute(f'SELECT age::text FROM "{t1}"')}
    leaves = {r[0] for r in _nodes(conn, t1, "age") if r[3] == 1 and r[1] is not None and r[2] == 3}
    assert leaves == ages
    # every leaf's parent interval contains it
    for node, parent, depth, _ in _nodes(conn, t1, "age"):
        if depth == 3:
            lo, hi = parent.strip("[)").split(",")
            assert int(lo) <= int(node) < int(hi)


def test_build_redaction_of_zip_codes(conn, t1):
    conn.execute("SELECT pganon.build_hierarchy(%s, 'zipcode', 'redaction')", (t1,))
    nodes = _nodes(conn, t1, "zipcode")
    assert nodes[0][0] == "*****" and all(n[3] >= 1 for n in nodes)


ERRORS = [  # (function, args after the dataset, sqlstate, message prefix)
    ("set_hierarchy", ("sex", "M;*\n"), "PA004", '1 value(s) of column "sex" are not leaves'),
    ("set_hierarchy", ("sex", "M;*\nF;X\n"), "PA002", "hierarchy 'sex'"),
    ("set_hierarchy", ("nope", SEX), "PA001", 'column "nope" is not a declared attribute'),
    ("build_hierarchy", ("sex", "intervals"), "PA002", "the intervals builder needs a numeric column"),
    ("build_hierarchy", ("age", "fractal"), "PA002", "unknown hierarchy builder 'fractal'"),
    ("build_hierarchy", ("age", "intervals"), "PA002", "the builder needs parameter 'widths'"),
    ("drop_hierarchy", ("race",), "PA001", 'column "race" of dataset'),
]


@pytest.mark.parametrize("fn,args,sqlstate,prefix", ERRORS)
def test_bad_hierarchy_input_is_refused_and_nothing_is_stored(conn, t1, fn, args, sqlstate, prefix):
    marks = ", ".join(["%s"] * (len(args) + 1))
    with pytest.raises(psycopg.Error) as e:
        conn.execute(f"SELECT pganon.{fn}({marks})", (t1, *args))
    assert e.value.sqlstate == sqlstate and e.value.diag.message_primary.startswith(prefix), e.value
    assert conn.execute("SELECT count(*) FROM pganon.hierarchies WHERE dataset = %s", (t1,)).fetchone()[0] == 0


def test_drop_hierarchy_and_dropping_the_dataset_remove_the_nodes(conn, t1):
    conn.execute("SELECT pganon.set_hierarchy(%s, 'sex', %s)", (t1, SEX))
    conn.execute("SELECT pganon.drop_hierarchy(%s, 'sex')", (t1,))
    assert _nodes(conn, t1, "sex") == []
    conn.execute("SELECT pganon.set_hierarchy(%s, 'sex', %s)", (t1, SEX))
    did = conn.execute("SELECT id FROM pganon.dataset WHERE name = %s", (t1,)).fetchone()[0]
    conn.execute("SELECT pganon.drop_dataset(%s)", (t1,))
    assert conn.execute("SELECT count(*) FROM pganon.hierarchy_node WHERE dataset_id = %s", (did,)).fetchone()[0] == 0


def test_adult_attribute_file_declares_its_hierarchies(fresh_dsn):
    from pganon import datasets
    with psycopg.connect(fresh_dsn, autocommit=True) as c:
        datasets.load(c, "adult", rows=300)
        rows = dict(c.execute("SELECT column_name, height FROM pganon.hierarchies WHERE dataset = 'adult'").fetchall())
    assert rows == {"age": 5, "sex": 2, "native_country": 3, "income": 2, "occupation": 3, "education": 4,
                    "marital_status": 3, "workclass": 3, "race": 2, "education_num": 4}
