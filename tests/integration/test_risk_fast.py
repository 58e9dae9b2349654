"""The attribute-disclosure figures, computed set-based (issue 15: one pass per attribute, the
generalized GT counted once by class and every SA), equal the definitions recomputed here in Python
from the published ST and GT alone: per sensitive attribute the most a value holds of a group (or
class) and the mean confidence in a record's true value, the baseline with no release, the
whole-vector figure, and the share of records in classes below k. The releases have several
sensitive attributes, hostile attribute names ("n", "cls", "c", "s0", "s1": names the engine's
working columns could have taken) and suppressed rows. The order figure, read without a sort,
equals a self-join by ctid."""

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


@pytest.mark.parametrize("method, params", [("mondrian", {"k": 3}), ("gaa", {"k": 3})])
def test_class_figures_in_one_pass_over_the_gt(conn, name, method, params):
    """The generalized path counts the GT once by (class, every SA); sensitive attributes named
    like that table's columns (s0, s1) or the working ones (cls, c) and a numeric one still give
    every attribute its figures by the definitions."""
    rnd = random.Random(11)
    conn.execute(sql.SQL('CREATE TABLE {} (rid int PRIMARY KEY, age smallint, "c" text, "s1" text, '
                         '"cls" text, "s0" numeric(5,1))').format(sql.Identifier(name)))
    rows = [(i, rnd.randint(20, 59), rnd.choice(["a", "b", "c"]), rnd.choice(DISEASES[:3]),
             rnd.choice("xyz"), rnd.choice([1, 2.5, 7])) for i in range(300)]
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s, %s, %s)").format(sql.Identifier(name)), rows)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid')", (name, sql.Identifier(name).as_string(conn)))
    sas = ["s1", "cls", "s0"]
    for col in ("age", "c"):
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'quasi')", (name, col))
    for col in sas:
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'sensitive')", (name, col))
    conn.execute("""SELECT pganon.build_hierarchy(%s, 'age', 'intervals', '{"widths": [5, 20]}')""", (name,))
    conn.execute("SELECT pganon.build_hierarchy(%s, 'c', 'redaction')", (name,))
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0}')", (name,))
    rid = publish(conn, name, method, **params)
    gt = relation(conn, rid)
    data = conn.execute(sql.SQL('SELECT age::text, "c"::text, "s1", "cls", "s0" FROM {}')
                        .format(sql.SQL(gt))).fetchall()
    got = _figures(conn, rid)
    want = _expected([((a, q), dict(zip(sas, v)), 1) for a, q, *v in data], sas)
    assert len(want) == 9
    _close(got, want)


def test_order_counts_consecutive_rows_in_physical_order(conn, ds):
    """The order figure reads the rows as the scan returns them and counts a row smaller than its
    predecessor; rows moved to the heap's end (an UPDATE writes new versions there) are out of
    order. The figure equals a self-join of the rows numbered by ctid, with parallel scans
    allowed too (rows that come back interleaved are sorted by ctid first)."""
    rid = publish(conn, ds, "mondrian", k=4)
    gt = sql.SQL(relation(conn, rid))
    conn.execute(sql.SQL("UPDATE {} SET disease = disease WHERE ctid IN (SELECT ctid FROM {} WHERE disease = 'Gout')")
                 .format(gt, gt))
    want = conn.execute(sql.SQL(
        "WITH r AS (SELECT row_number() OVER (ORDER BY ctid) AS i, x AS v FROM {} x) "
        "SELECT count(*) FILTER (WHERE a.v > b.v), count(*) FROM r a JOIN r b ON b.i = a.i + 1").format(gt)).fetchone()
    assert want[0] >= 1
    for settings in ([], ["parallel_setup_cost = 0", "parallel_tuple_cost = 0", "min_parallel_table_scan_size = 0",
                          "max_parallel_workers_per_gather = 2",
                          "parallel_leader_participation = off"]):
        for s in settings:
            conn.execute("SET LOCAL " + s)
        conn.execute("SELECT pganon.assess(%s)", (rid,))
        assert _figures(conn, rid)[("order", "gt")] == pytest.approx(want[0] / want[1], rel=1e-12)
