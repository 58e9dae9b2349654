"""Semantic anonymization in the database (spec 003 §2.3, C8): an l-diverse Mondrian release
whose classes are merged until no catalog rule is effective, verified by an independent SQL
check of every recorded rule; the costs before and after; bad input; random tables."""

import random
import uuid

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import checks, publish
from pganon import catalog

RULES = [("H1", "cp", "in", ["typical angina", "atypical angina"], "heart disease"),
         ("H2", "trestbps", "between", [150, 200], "high resting blood pressure"),
         ("H3", "fbs", ">", [120], "blood sugar disease"),
         ("H4", "thalach", "between", [170, 202], "heart disease"),
         ("H5", "restecg", ">", [0.5], "heart disease")]
CPS = ["typical angina", "atypical angina", "non-anginal pain", "asymptomatic"]


def _heart(conn, name, rows):
    conn.execute(f'CREATE TABLE "{name}" (id int PRIMARY KEY, age int, sex text, cp text, trestbps int, fbs int, '
                 f'thalach int, restecg int)')
    with conn.cursor().copy(f'COPY "{name}" FROM STDIN') as cp:
        for r in rows:
            cp.write_row(r)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, name))
    for col in ("age", "sex", "cp", "trestbps", "fbs", "thalach", "restecg"):
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, "quasi" if col in ("age", "sex") else "sensitive"))
    conn.execute("SELECT pganon.set_hierarchy(%s, 'sex', %s)", (name, "M;*\nF;*\n"))
    for r in RULES:
        catalog.set_semantic_rule(conn, name, *r)


def _rows(n, seed, heart_share=0.5):
    """Patients; a share of them 'heart' cases that satisfy every rule (older women, as the
    paper's [30,40]/F class), so that some Mondrian class is fully covered."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        if rnd.random() < heart_share:
            out.append((i, rnd.randint(30, 45), "F", rnd.choice(CPS[:2]), rnd.randint(150, 200), rnd.randint(121, 140),
                        rnd.randint(170, 200), 1))
        else:
            out.append((i, rnd.randint(20, 70), rnd.choice("MF"), rnd.choice(CPS), rnd.randint(100, 200),
                        rnd.randint(90, 140), rnd.randint(100, 200), rnd.randint(0, 1)))
    return out


def _metrics(conn, rid):
    return conn.execute("SELECT metrics FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]


def test_effective_rules_are_merged_away_and_verified(conn, name):
    _heart(conn, name, _rows(120, 1, heart_share=0.4))
    base = publish(conn, name, "mondrian", k=3, privacy={"model": "l_diversity", "l": 2})
    rid = publish(conn, name, "semantic", k=3, l=2)
    result = checks(conn, rid)
    assert all(p for p, _ in result.values()) and "no_effective_rule" in result, result
    sem = _metrics(conn, rid)["semantic"]
    assert sem["flagged"] and sem["merges"] >= 1 and sem["classes_after"] < sem["classes_before"]
    assert sem["classes_before"] == _metrics(conn, base)["classes"]  # the same Mondrian base
    assert sem["qid_ncp_after"] >= sem["qid_ncp_before"] and sem["dm_after"] > sem["dm_before"]
    # the Mondrian release of the same rows has classes a rule covers entirely: C8's premise
    gt = f"pganon_data.r{base}_gt"
    covered = conn.execute(f"SELECT count(*) FROM (SELECT class_id FROM {gt} GROUP BY 1 "
                           f"HAVING bool_and(restecg = 1) OR bool_and(fbs > 120) OR bool_and(trestbps BETWEEN 150 AND 200) "
                           f"OR bool_and(thalach BETWEEN 170 AND 202) "
                           f"OR bool_and(cp IN ('typical angina', 'atypical angina'))) x").fetchone()[0]
    assert covered == len(sem["flagged"]) > 0
    lay = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    assert [r["id"] for r in lay["semantic"]["rules"]] == ["H1", "H2", "H3", "H4", "H5"]


def test_a_class_put_back_together_fails_the_semantic_check(conn, name):
    _heart(conn, name, _rows(120, 2, heart_share=0.4))
    rid = publish(conn, name, "semantic", k=3, l=2)
    gt = f"pganon_data.r{rid}_gt"
    # move three records that satisfy H1 into a class of their own
    conn.execute(f"UPDATE {gt} SET class_id = -1 WHERE ctid IN (SELECT ctid FROM {gt} WHERE cp = 'typical angina' LIMIT 3)")
    result = checks(conn, rid)
    assert not result["no_effective_rule"][0] and "rule H1" in result["no_effective_rule"][1]


def test_no_rule_or_a_rule_covering_everything_is_refused(conn, name):
    _heart(conn, name, _rows(60, 3))
    catalog.set_semantic_rule(conn, name, "ALL", "restecg", "<", [5], "anything")
    with pytest.raises(psycopg.Error) as e:
        publish(conn, name, "semantic", k=3, l=2)
    assert e.value.sqlstate == "PA005" and "rule ALL covers 1 of the whole table" in str(e.value)
    for r in [x[0] for x in RULES] + ["ALL"]:
        catalog.drop_semantic_rule(conn, name, r)
    with pytest.raises(psycopg.Error) as e:
        publish(conn, name, "semantic", k=3, l=2)
    assert e.value.sqlstate == "PA003" and "no semantic rule" in str(e.value)
    with pytest.raises(psycopg.Error) as e:
        publish(conn, name, "semantic", k=3, coverage=1.5)
    assert e.value.sqlstate == "PA002"


def test_a_lower_coverage_merges_more(conn, name):
    _heart(conn, name, _rows(150, 4, heart_share=0.3))
    full = _metrics(conn, publish(conn, name, "semantic", k=3, l=2))["semantic"]
    part = _metrics(conn, publish(conn, name, "semantic", k=3, l=2, coverage=0.8))["semantic"]
    assert part["merges"] >= full["merges"] and part["classes_after"] <= full["classes_after"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(12, 80), seed=st.integers(0, 10**6), share=st.floats(0, 0.8), k=st.integers(2, 4),
       coverage=st.sampled_from([1.0, 0.8]))
def test_random_tables_have_no_effective_rule(conn, n, seed, share, k, coverage):
    name = f"sem_{uuid.uuid4().hex[:8]}"
    _heart(conn, name, _rows(n, seed, share))
    try:
        rid = publish(conn, name, "semantic", k=k, l=2, coverage=coverage)
    except psycopg.Error as exc:
        assert exc.sqlstate in ("PA005", "PA002"), str(exc)  # a rule covers the table / k too large
        return
    result = checks(conn, rid)
    assert all(p for p, _ in result.values()), result
