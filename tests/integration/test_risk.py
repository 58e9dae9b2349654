"""Risk from the analyst's seat (issue 11): figures computed from what a reader sees only,
identifiers that do not link releases (finding 2), relations stored in content order, and the
linkage measure's power when an identifier does link. Attacks here are written independently of
the engine: they read the release relations, and the admin-only maps only to score themselves."""

import random

import psycopg
import pytest
from psycopg import sql

from helpers import create_table1, declare_table1, publish, relation

DISEASES = ["Flu", "HIV", "Cold", "Cancer", "Asthma", "Ulcer", "Gout"]


def _risk(conn, rid):
    return {(m, s): (v, t, p) for m, s, v, t, p, _ in conn.execute("SELECT * FROM pganon.risk(%s)", (rid,))}


def _raw_risk(conn, rid):
    return conn.execute("SELECT measure, scope, value, promise FROM pganon.release_risk WHERE release_id = %s "
                        "AND measure NOT IN ('linkage', 'composed_prosecutor_risk') ORDER BY ord", (rid,)).fetchall()


@pytest.mark.parametrize("method, params", [("mondrian", {"k": 3}), ("mmdcf_mslf", {"min_group": 1}),
                                            ("rating", {"eligibility": "suppress"}), ("anatomy", {"l": 2})])
def test_risk_reads_only_what_a_reader_reads(conn, name, method, params):
    """Measured again after the source is emptied and the row-to-group map dropped, every figure
    is the same: none of them came from either."""
    create_table1(conn, name)
    declare_table1(conn, name, name)
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0}')", (name,))
    rid = publish(conn, name, method, **params)
    before = _raw_risk(conn, rid)
    assert len(before) > 5
    conn.execute(sql.SQL("DROP TABLE {}").format(sql.SQL(relation(conn, rid, "map"))))
    conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(name)))
    conn.execute("SELECT pganon.assess(%s)", (rid,))
    assert _raw_risk(conn, rid) == before


def test_published_relations_are_stored_in_content_order_with_fresh_seeds(conn, name):
    create_table1(conn, name)
    declare_table1(conn, name, name)
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0}')", (name,))
    a = publish(conn, name, "mmdcf_mslf", min_group=1, seed=3, tie="random")
    b = publish(conn, name, "mmdcf_mslf", min_group=1, seed=3, tie="random")
    for rid in (a, b):
        for which in ("gt", "st"):
            rel = sql.SQL(relation(conn, rid, which))
            stored = conn.execute(sql.SQL("SELECT * FROM {} ORDER BY ctid").format(rel)).fetchall()
            assert stored == sorted(stored)
    # every release draws its own numbering seed (recorded for the admin, never shown to readers)
    seeds = [conn.execute("SELECT params->>'numbering_seed' FROM pganon.release WHERE id = %s", (r,)).fetchone()[0]
             for r in (a, b)]
    assert seeds[0] != seeds[1] and all(seeds)


def _visits(conn, name, persons=90, seed=1):
    """Patients with 1-4 visits; QIs fixed per patient (the person methods require it)."""
    rnd = random.Random(seed)
    conn.execute(sql.SQL("CREATE TABLE {} (visit bigint PRIMARY KEY, \"patient id\" int, age smallint, "
                         "sex text, zip text, disease text)").format(sql.Identifier(name)))
    rows, v = [], 0
    for p in range(persons):
        age, sex, zip_ = rnd.randint(20, 80), rnd.choice("MF"), rnd.choice(["10001", "10002", "10003", "20001"])
        for d in rnd.sample(DISEASES, rnd.randint(1, 4)):
            rows.append((v, p, age, sex, zip_, d))
            v += 1
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s, %s, %s)").format(sql.Identifier(name)), rows)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'visit', person_column => 'patient id')",
                 (name, sql.Identifier(name).as_string(conn)))
    for col, role in (("age", "quasi"), ("sex", "quasi"), ("zip", "quasi"), ("disease", "sensitive")):
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    return rows


def _persons_by_id_num(conn, rid):
    return dict(conn.execute(sql.SQL('SELECT DISTINCT id_num, "patient id" FROM {}').format(
        sql.SQL(relation(conn, rid, "map")))).fetchall())


def _composed_attack(conn, a, b):
    """Join two person releases on id_num and intersect the classes (the reviewer's attack):
    returns (share of joined id_nums that are one true person in both, smallest composed class)."""
    ga, gb = (sql.SQL(relation(conn, r)) for r in (a, b))
    pairs = conn.execute(sql.SQL("SELECT x.id_num, x.class_id, y.class_id FROM (SELECT DISTINCT id_num, class_id FROM {}) x "
                                 "JOIN (SELECT DISTINCT id_num, class_id FROM {}) y USING (id_num)").format(ga, gb)).fetchall()
    pa, pb = _persons_by_id_num(conn, a), _persons_by_id_num(conn, b)
    same = sum(pa[i] == pb[i] for i, _, _ in pairs) / len(pairs)
    composed = {}
    for _, ca, cb in pairs:
        composed[(ca, cb)] = composed.get((ca, cb), 0) + 1
    return same, min(composed.values())


def test_person_numbers_do_not_link_two_releases(conn, name):
    """Finding 2: two DAnonyIR releases of one dataset. Joined on id_num, the pairs are the same
    person no more often than chance, so the composed classes mean nothing to the attacker; the
    release's own linkage figure agrees and promote accepts it."""
    _visits(conn, name)
    a = publish(conn, name, "danonyir", model="kl", k=4, l=2, seed=7, promote=True)
    b = publish(conn, name, "danonyir", model="kl", k=4, l=2, seed=7)
    same, _ = _composed_attack(conn, a, b)
    persons = len(_persons_by_id_num(conn, a))
    assert same <= 5 / persons + 0.05, same            # chance is 1/persons
    r = _risk(conn, b)
    value, threshold, passed = r[("linkage", f"release {a} via id_num")]
    assert passed is True and value <= threshold
    assert r[("composed_prosecutor_risk", f"release {a}")][2] is None   # nothing to compose
    conn.execute("SELECT pganon.promote(%s)", (b,))


def test_a_reused_numbering_links_releases_and_promote_refuses_it(conn, name):
    """The same numbering seed twice (a DBA reproducing a release by hand): id_num now links the
    releases, the composition shrinks classes below k, and the risk figures say so."""
    _visits(conn, name)
    a = publish(conn, name, "danonyir", model="kl", k=4, l=2, seed=7, numbering_seed=11, promote=True)
    b = publish(conn, name, "danonyir", model="kl", k=3, l=2, seed=8, numbering_seed=11)
    same, smallest = _composed_attack(conn, a, b)
    assert same > 0.3                                   # the attack works on this pair
    r = _risk(conn, b)
    value, threshold, passed = r[("linkage", f"release {a} via id_num")]
    assert passed is False and value > threshold
    with pytest.raises(psycopg.Error) as exc:
        conn.execute("SELECT pganon.promote(%s)", (b,))
    assert exc.value.sqlstate == "PA009" and "linkage" in exc.value.diag.message_primary


def test_group_ids_of_two_releases_join_at_chance(conn, name):
    """Joined on group_id, two bucketization releases' groups are the same group no more often
    than chance (the attack scores itself through the maps)."""
    rnd = random.Random(5)
    conn.execute(sql.SQL("CREATE TABLE {} (rid int PRIMARY KEY, age int, zip text, disease text, drug text)")
                 .format(sql.Identifier(name)))
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s, %s)").format(sql.Identifier(name)),
                        [(i, rnd.randint(20, 70), rnd.choice("ABCD"), rnd.choice(DISEASES), rnd.choice("xyzw"))
                         for i in range(400)])
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid')", (name, name))
    for col, role in (("age", "quasi"), ("zip", "quasi"), ("disease", "sensitive"), ("drug", "sensitive")):
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    for col, vals in (("disease", DISEASES), ("drug", "xyzw")):
        for v in vals:
            conn.execute("SELECT pganon.set_security_level(%s, %s, %s, 1)", (name, col, v))
    a = publish(conn, name, "mmdcf_mslf", promote=True)
    b = publish(conn, name, "mmdcf_mslf")
    ma, mb = (dict(conn.execute(sql.SQL("SELECT rid, group_id FROM {}").format(sql.SQL(relation(conn, r, "map")))))
              for r in (a, b))
    groups = lambda m: {g: frozenset(k for k, x in m.items() if x == g) for g in set(m.values())}
    ga, gb = groups(ma), groups(mb)
    same = sum(ga[g] == gb.get(g) for g in ga) / len(ga)
    assert same <= 0.05      # the same groups (deterministic planner) but other numbers
    assert sorted(map(sorted, ga.values())) == sorted(map(sorted, gb.values()))
    assert _risk(conn, b)[("linkage", f"release {a} via group_id")][2] is True


ALL_METHODS = {
    "mbf": {}, "msdcf": {}, "mmdcf": {}, "mbf_mslf": {}, "msdcf_mslf": {}, "mmdcf_mslf": {},
    "anatomy": {"l": 2, "eligibility": "suppress"}, "ck_anonymization": {"k": 3}, "pk_angelization": {"k": 3},
    "gaa": {"k": 3}, "mondrian": {"k": 3}, "semantic": {"k": 3, "l": 2}, "rating": {"eligibility": "suppress"},
}
PERSON_METHODS = {"danonyir": {"model": "kl", "k": 3, "l": 2}, "geneir": {"model": "kl", "k": 3, "l": 2},
                  "one_m_generalization": {"k": 3, "l": 2}}


def _sixteen_table(conn, name, persons):
    rnd = random.Random(11)
    conn.execute(sql.SQL("CREATE TABLE {} (rid bigint PRIMARY KEY, pid int, age smallint, zip text, disease text, "
                         "drug text)").format(sql.Identifier(name)))
    rows, pid = [], 0
    while len(rows) < 240:
        age, zip_ = rnd.randint(20, 69), rnd.choice(["10001", "10002", "10003", "20001"])
        for d in rnd.sample(DISEASES, rnd.randint(1, 3) if persons else 1):
            rows.append((len(rows), pid, age, zip_, d, rnd.choice("xyzw")))
        pid += 1
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s, %s, %s)").format(sql.Identifier(name)), rows)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid', person_column => %s)",
                 (name, name, "pid" if persons else None))
    for col, role in (("age", "quasi"), ("zip", "quasi"), ("disease", "sensitive")) + \
            ((("drug", "sensitive"),) if not persons else ()):
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    for v in DISEASES:
        conn.execute("SELECT pganon.set_security_level(%s, 'disease', %s, %s)", (name, v, 2 if v == "HIV" else 1))
    if not persons:
        for v in "xyzw":
            conn.execute("SELECT pganon.set_security_level(%s, 'drug', %s, 1)", (name, v))
        conn.execute("SELECT pganon.set_dependency(%s, 'drug', ARRAY['disease'])", (name,))
        conn.execute("SELECT pganon.set_semantic_rule(%s, 'lungs', 'disease', 'in', ARRAY['Asthma', 'Cancer'], "
                     "'lung disease')", (name,))
    conn.execute("SELECT pganon.build_hierarchy(%s, 'age', 'intervals', '{\"widths\": [5, 10, 20]}')", (name,))
    conn.execute("SELECT pganon.build_hierarchy(%s, 'zip', 'redaction')", (name,))
    conn.execute("SELECT pganon.set_hierarchy(%s, 'disease', %s)", (name, "".join(f"{d};*\n" for d in DISEASES)))
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0}')", (name,))


@pytest.fixture(scope="module")
def sixteen(db_dsn):
    """Every method once: {method: release id} over one plain and one person table."""
    import uuid
    out = {}
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        for persons, methods in ((False, ALL_METHODS), (True, PERSON_METHODS)):
            name = f"sixteen_{uuid.uuid4().hex[:8]}"
            _sixteen_table(conn, name, persons)
            for method, params in methods.items():
                out[method] = (name, publish(conn, name, method, **params))
    return out


@pytest.mark.parametrize("method", list(ALL_METHODS) + list(PERSON_METHODS))
def test_risk_works_for_every_method(conn, sixteen, method):
    name, rid = sixteen[method]
    rows = conn.execute("SELECT measure, scope, value, threshold, passed FROM pganon.risk(%s)", (rid,)).fetchall()
    measures = {m for m, *_ in rows}
    assert {"published_share", "prosecutor_risk_max", "attacker_confidence_max", "order", "numbering"} <= measures
    assert all(v is None or 0 <= v <= 1 for m, _, v, _, _ in rows if m not in ("records_per_class_min",
                                                                              "persons_per_class_min", "group_size_min"))
    order = [v for m, _, v, _, _ in rows if m == "order"]
    assert order and all(v == 0 for v in order)            # content order, always
    promised = {m for m, _, _, t, _ in rows if t is not None}
    lay = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    if lay["family"] in ("generalized", "linked", "person"):
        assert "prosecutor_risk_max" in promised and "records_below_k" in promised
    else:   # exact QIs: the promise is about the sensitive values
        assert "prosecutor_risk_max" not in promised
        assert any(m == "attacker_confidence_max" and t is not None for m, _, _, t, _ in rows)
    if method == "rating":
        assert {s for m, s, *_ in rows if m == "chain_attack"} == {"age", "zip", "disease", "drug"}


def test_releases_of_different_methods_do_not_link_through_any_identifier(conn, name):
    """A reader may join any published number to any other: Mondrian's class ids against a
    bucketization's group ids, in both releases of one table; every pairing is at chance."""
    conn.execute(sql.SQL("CREATE TABLE {} (rid int PRIMARY KEY, age int, zip text, disease text, drug text)")
                 .format(sql.Identifier(name)))
    rnd = random.Random(9)
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s, %s)").format(sql.Identifier(name)),
                        [(i, rnd.randint(20, 70), rnd.choice("ABCD"), rnd.choice(DISEASES), rnd.choice("xyzw"))
                         for i in range(300)])
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid')", (name, name))
    for col, role in (("age", "quasi"), ("zip", "quasi"), ("disease", "sensitive"), ("drug", "sensitive")):
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    for col, vals in (("disease", DISEASES), ("drug", "xyzw")):
        for v in vals:
            conn.execute("SELECT pganon.set_security_level(%s, %s, %s, 1)", (name, col, v))
    a = publish(conn, name, "mondrian", k=4, promote=True)
    b = publish(conn, name, "mmdcf_mslf", generalize=True)
    rows = {s: (v, t, p) for m, s, v, t, p, _ in conn.execute("SELECT * FROM pganon.risk(%s)", (b,)) if m == "linkage"}
    assert set(rows) == {f"release {a} via group_id = class_id"}   # this release's column first
    assert all(p is True for _, _, p in rows.values()), rows
    # the independent attack: a class and a group with one number share records at chance only
    ma = dict(conn.execute(sql.SQL("SELECT rid, class_id FROM {}").format(sql.SQL(relation(conn, a, "map")))))
    mb = dict(conn.execute(sql.SQL("SELECT rid, group_id FROM {}").format(sql.SQL(relation(conn, b, "map")))))
    same = sum(ma[k] == mb[k] for k in mb) / len(mb)
    assert same <= 0.1


@pytest.mark.parametrize("method", list(ALL_METHODS) + list(PERSON_METHODS))
def test_the_recorded_parameters_reproduce_the_release(conn, sixteen, method):
    """Random dealing and numbering are drawn once and recorded: the same parameters give the
    same release, identifiers and order included (admin-only: the seeds never reach readers)."""
    name, rid = sixteen[method]
    params = conn.execute("SELECT params FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    again = publish(conn, name, method, **params)
    for which in ("gt", "st"):
        rel = relation(conn, rid, which)
        if rel is None:
            continue
        rows = lambda r: conn.execute(sql.SQL("SELECT * FROM {} ORDER BY ctid").format(
            sql.SQL(relation(conn, r, which)))).fetchall()
        assert rows(again) == rows(rid)
    promise = conn.execute(sql.SQL("SELECT promise FROM {}").format(sql.SQL(relation(conn, rid, "promise")))).fetchone()[0]
    assert not any("seed" in k for k in promise)
