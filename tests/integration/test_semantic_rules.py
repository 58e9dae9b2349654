"""Semantic rules as catalog objects (spec 003 §2.3): set, replace, list, drop, from the apply
file, and the errors a DBA gets for a wrong rule (each names the rule and the fix; nothing
changes)."""

import psycopg
import pytest

from pganon import catalog
from pganon.errors import PganonError


@pytest.fixture
def heart(conn, name):
    conn.execute(f'CREATE TABLE "{name}" (id int PRIMARY KEY, age int, sex text, cp text, trestbps int)')
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, name))
    for col, role in [("age", "quasi"), ("sex", "quasi"), ("cp", "sensitive"), ("trestbps", "sensitive")]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    return name


def _rules(conn, ds):
    return [r[1:] for r in catalog.semantic_rules(conn, ds)]


def test_set_replace_list_and_drop(conn, heart):
    catalog.set_semantic_rule(conn, heart, "H1", "cp", "in", ["typical angina", "atypical angina"], "heart disease")
    catalog.set_semantic_rule(conn, heart, "H2", "trestbps", "between", [150, 200], "high blood pressure")
    assert _rules(conn, heart) == [("H1", "cp", "in", ["typical angina", "atypical angina"], "heart disease"),
                                   ("H2", "trestbps", "between", ["150", "200"], "high blood pressure")]
    catalog.set_semantic_rule(conn, heart, "H2", "trestbps", ">=", [160], "high blood pressure")
    assert _rules(conn, heart)[1] == ("H2", "trestbps", ">=", ["160"], "high blood pressure")
    catalog.drop_semantic_rule(conn, heart, "H1")
    assert [r[0] for r in _rules(conn, heart)] == ["H2"]
    conn.execute("SELECT pganon.set_attribute(%s, 'trestbps', 'insensitive')", (heart,))
    with pytest.raises(PganonError) as e:  # the column is no longer sensitive: the rule cannot be set
        catalog.set_semantic_rule(conn, heart, "H3", "trestbps", ">", [1], "x")
    assert e.value.sqlstate == "PA001"


@pytest.mark.parametrize("rule, sqlstate, message", [
    (("H1", "age", "in", ["1"], "c"), "PA001", 'column "age" is not a sensitive attribute'),
    (("H1", "cp", "like", ["1"], "c"), "PA002", "unknown predicate like"),
    (("H1", "cp", "between", ["1"], "c"), "PA002", "semantic rule H1 with predicate between needs two values"),
    (("H1", "cp", ">", ["1", "2"], "c"), "PA002", "semantic rule H1 with predicate > needs exactly one value"),
    (("H1", "cp", "in", [], "c"), "PA002", "semantic rule H1 with predicate in needs at least one value"),
    (("H1", "trestbps", ">", ["high"], "c"), "PA002", "semantic rule H1: > compares numbers"),
    (("H1", "trestbps", "between", ["200", "150"], "c"), "PA002", "semantic rule H1: between 200 and 150 is empty"),
    (("", "cp", "in", ["1"], "c"), "PA002", "a semantic rule needs a rule_id and a category"),
])
def test_bad_rules_are_refused_and_change_nothing(conn, heart, rule, sqlstate, message):
    with pytest.raises(PganonError) as e:
        catalog.set_semantic_rule(conn, heart, *rule)
    assert e.value.sqlstate == sqlstate and str(e.value).startswith(message)
    assert _rules(conn, heart) == []


def test_apply_file_declares_rules_and_reapplying_replaces_them(conn, name, tmp_path):
    conn.execute(f'CREATE TABLE "{name}" (id int PRIMARY KEY, age int, cp text, fbs int)')
    spec = tmp_path / "heart.yaml"
    spec.write_text(f"""dataset: {name}
source: {name}
key_column: id
attributes:
  - {{column: age, role: quasi, kind: numeric}}
  - {{column: cp, role: sensitive, kind: categorical}}
  - {{column: fbs, role: sensitive, kind: numeric}}
semantic_rules:
  - {{id: H1, column: cp, predicate: in, values: [typical angina, atypical angina], category: heart disease}}
  - {{id: H3, column: fbs, predicate: ">", values: 120, category: blood sugar disease}}
""")
    assert catalog.apply(conn, spec)["semantic_rules"] == 2
    assert [r[0] for r in _rules(conn, name)] == ["H1", "H3"]
    spec.write_text(spec.read_text().split("  - {id: H3")[0])
    assert catalog.apply(conn, spec)["semantic_rules"] == 1
    assert [r[0] for r in _rules(conn, name)] == ["H1"]


def test_drop_unknown_rule_names_it(conn, heart):
    with pytest.raises(PganonError) as e:
        catalog.drop_semantic_rule(conn, heart, "nope")
    assert e.value.sqlstate == "PA001" and "has no semantic rule nope" in str(e.value)


def test_reader_cannot_see_rules(conn, heart, db_dsn):
    catalog.set_semantic_rule(conn, heart, "H1", "cp", "in", ["a"], "c")
    conn.execute("DROP ROLE IF EXISTS sem_reader")
    conn.execute("CREATE ROLE sem_reader LOGIN PASSWORD 'sem_reader' IN ROLE pganon_reader")
    try:
        with psycopg.connect(db_dsn, user="sem_reader", password="sem_reader", autocommit=True) as r:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                r.execute("SELECT * FROM pganon.semantic_rules")
    finally:
        conn.execute("DROP ROLE sem_reader")
