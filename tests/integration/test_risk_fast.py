"""The attribute-disclosure figures, computed set-based in one pass per attribute (issue 15), equal
the definitions recomputed here in Python from the published ST and GT alone: per sensitive
attribute the most a value holds of a group (or class) and the mean confidence in a record's true
value, the baseline with no release, the whole-vector figure, and the share of records in classes
below k. The releases have several sensitive attributes, a hostile attribute name ("n", the name
the engine's own working column could have taken) and suppressed rows."""

import random
from collections import Counter, defaultdict

import pytest
from psycopg import sql

from helpers import publish, relation

DISEASES = ["Flu", "HIV", "Cold", "Cancer", "Asthma", "Ulcer", "Gout"]


@pytest.fixture
def ds(conn, name):
    rnd = random.Random(5)
    conn.execute(sql.SQL('CREATE TABLE {} (rid int PRIMARY KEY, age smallint, zip text, disease text, "n" text)')
                 .format(sql.Identifier(name)))
    rows = [(i, rnd.randint(20, 69), rnd.choice(["10001", "10002", "20001"]),
             rnd.choice(DISEASES[:4]) if i % 9 else "Gout", rnd.choice("xxyzw")) for i in range(400)]
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s, %s)").format(sql.Identifier(name)), rows)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid')",
                 (name, sql.Identifier(name).as_string(conn)))
    for col, role in (("age", "quasi"), ("zip", "quasi"), ("disease", "sensitive"), ("n", "sensitive")):
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    for v in DISEASES[:4] + ["Gout"]:   # HIV on a level of its own: two rows per level for L_sl
        conn.execute("SELECT pganon.set_security_level(%s, 'disease', %s, %s)", (name, v, 2 if v == "HIV" else 1))
    for v in "xyzw":
        conn.execute("SELECT pganon.set_security_level(%s, 'n', %s, 1)", (name, v))
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0}')", (name,))
    return name


def _figures(conn, rid):
    return {(m, s): v for m, s, v in conn.execute(
        "SELECT measure, scope, value FROM pganon.release_risk WHERE release_id = %s", (rid,))}


def _expected(rows, sas):
    """rows: [(class, {sa: value}, count)] -> {(measure, scope): value} by the definitions."""
    size = Counter()
    for cls, _, k in rows:
        size[cls] += k
    total = sum(size.values())
    out = {}
    for sa in sas:
        c = Counter()
        for cls, vals, k in rows:
            c[(cls, vals[sa])] += k
        per_value = Counter()
        for (_, v), x in c.items():
            per_value[v] += x
        out[("attacker_confidence_max", sa)] = max(x / size[cls] for (cls, _), x in c.items())
        out[("attacker_confidence_mean", sa)] = sum(x * x / size[cls] for (cls, _), x in c.items()) / total
        out[("baseline_confidence", sa)] = max(per_value.values()) / total
    return out


def _close(got, want):
    assert set(want) <= set(got), set(want) - set(got)
    for key, w in want.items():
        assert got[key] == pytest.approx(w, rel=1e-9), key


@pytest.mark.parametrize("method, params", [("anatomy", {"l": 2, "eligibility": "suppress"}),
                                            ("mmdcf_mslf", {"min_group": 2})])
def test_bucketization_figures_equal_their_definitions(conn, ds, method, params):
    rid = publish(conn, ds, method, **params)
    st = relation(conn, rid, "st")
    data = conn.execute(sql.SQL('SELECT group_id, disease, "n", count FROM {}').format(sql.SQL(st))).fetchall()
    rows = [(g, {"disease": d, "n": x}, k) for g, d, x, k in data]
    got = _figures(conn, rid)
    want = _expected(rows, ["disease", "n"])
    _close(got, {k: v for k, v in want.items() if k[0] != "attacker_confidence_max"})
    for sa in ("disease", "n"):   # L_sl: one row per security level; their max is the attribute's
        levels = [v for (m, s), v in got.items() if m == "attacker_confidence_max" and s.split(" level ")[0] == sa]
        assert levels and max(levels) == pytest.approx(want[("attacker_confidence_max", sa)], rel=1e-9)
    # the whole vector: each group's vectors (disease, n) and their counts
    size, vec = Counter(), Counter()
    for g, d, x, k in data:
        size[g] += k
        vec[(g, d, x)] += k
    assert got[("attacker_confidence_max", "sensitive vector")] == pytest.approx(
        max(c / size[g] for (g, _, _), c in vec.items()), rel=1e-9)
    if method == "anatomy":
        suppressed = conn.execute("SELECT suppressed_rows FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
        assert got[("published_share", "release")] == pytest.approx((400 - suppressed) / 400)


def test_class_figures_and_records_below_k_equal_their_definitions(conn, ds):
    rid = publish(conn, ds, "mondrian", k=4)
    gt = relation(conn, rid)
    data = conn.execute(sql.SQL('SELECT age::text, zip::text, disease, "n" FROM {}').format(sql.SQL(gt))).fetchall()
    rows = [((a, z), {"disease": d, "n": x}, 1) for a, z, d, x in data]
    _close(_figures(conn, rid), _expected(rows, ["disease", "n"]))
    # a reader's own check of k, after the classes are thinned out: records_below_k counts them
    classes = defaultdict(int)
    for a, z, _, _ in data:
        classes[(a, z)] += 1
    smallest = min(classes, key=classes.get)
    conn.execute(sql.SQL("DELETE FROM {} WHERE ctid IN (SELECT ctid FROM {} WHERE age::text = %s AND zip::text = %s "
                         "LIMIT %s)").format(sql.SQL(gt), sql.SQL(gt)), (*smallest, classes[smallest] - 1))
    classes[smallest] = 1
    conn.execute("SELECT pganon.assess(%s)", (rid,))
    below = sum(n for n in classes.values() if n < 4)
    assert below >= 1
    assert _figures(conn, rid)[("records_below_k", "records")] == pytest.approx(below / sum(classes.values()))
