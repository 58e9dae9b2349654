"""Release safety of the bucketization methods (issue 11): L_sl's min_group (finding 6: no group
publishes one row's whole sensitive vector) and the lsl_diversity check that derives each value's
l from the catalog, not from the release's own level table (finding 7). The group checks here
read only the release's GT and ST (through the layout), written independently of the engine and
of the verifier."""

import json
import random
from collections import Counter

import pytest

from helpers import checks, create_table1, declare_table1, publish

SIX = ["mbf", "msdcf", "mmdcf", "mbf_mslf", "msdcf_mslf", "mmdcf_mslf"]
DISEASE = {"flu": 0, "cold": 0, "ulcer": 1, "asthma": 1, "hiv": 2}   # value -> security level
JOBS = ["clerk", "nurse", "driver", "cook"]                          # all level 0


@pytest.fixture
def t1(conn, name):
    create_table1(conn, name)
    declare_table1(conn, name, name)
    return name


def clinic(conn, name, n=240, seed=1):
    """Finding 6's shape: two SAs, mostly level-0 values (l0 = 1), exact QIs."""
    rnd = random.Random(seed)
    conn.execute(f'CREATE TABLE "{name}" (id int PRIMARY KEY, age int, zip text, disease text, job text)')
    with conn.cursor().copy(f'COPY "{name}" FROM STDIN') as cp:
        for i in range(n):
            cp.write_row((i, rnd.randint(20, 80), f"4{rnd.randint(0, 9)}",
                          rnd.choices(list(DISEASE), weights=[40, 25, 15, 15, 5])[0], rnd.choice(JOBS)))
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, name))
    for col, role in [("age", "quasi"), ("zip", "quasi"), ("disease", "sensitive"), ("job", "sensitive")]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    for v, lv in DISEASE.items():
        conn.execute("SELECT pganon.set_security_level(%s, 'disease', %s, %s)", (name, v, lv))
    for v in JOBS:
        conn.execute("SELECT pganon.set_security_level(%s, 'job', %s, 0)", (name, v))


def published_groups(conn, rid):
    """From the release's GT and ST alone: {group: (GT rows, Counter of SA vectors)}."""
    lay = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    gt, st = lay["relations"]["gt"], lay["relations"]["st"]
    rows = dict(conn.execute(f"SELECT group_id, count(*) FROM {gt} GROUP BY 1").fetchall())
    vectors = {g: Counter() for g in rows}
    cols = ", ".join(f'"{sa}"::text' for sa in lay["sas"])
    for g, *vec, count in conn.execute(f"SELECT group_id, {cols}, count FROM {st}"):
        vectors[g][tuple(vec)] += count
    return {g: (rows[g], vectors[g]) for g in rows}


def worst_vector_share(groups):
    """The attacker's confidence in a target's whole SA vector, once its row is found by its
    exact QIs: the largest share one vector takes of its group."""
    return max(c / n for n, vecs in groups.values() for c in vecs.values())


def worst_level_share(groups, sa_index, levels):
    """The largest share a value of one of `levels` takes of its group (per attribute)."""
    shares = [0.0]
    for n, vecs in groups.values():
        per_value = Counter()
        for vec, c in vecs.items():
            per_value[vec[sa_index]] += c
        shares += [c / n for v, c in per_value.items() if DISEASE.get(v) in levels]
    return max(shares)


@pytest.mark.parametrize("method", SIX)
def test_default_params_publish_no_group_of_one_and_no_whole_vector(conn, name, method):
    """Finding 6: with l0 = 1, L_sl published 37-47 % of rows as groups of one (exact QIs and
    the full SA vector). With the default min_group = 2 no group of any method has one row or
    a sensitive vector above 1/2 of it, and values of level 1 and 2 keep within 1/2 and 1/3."""
    clinic(conn, name)
    rid = publish(conn, name, method)
    assert all(p for p, _ in checks(conn, rid).values())
    groups = published_groups(conn, rid)
    assert min(n for n, _ in groups.values()) >= 2
    assert worst_vector_share(groups) <= 0.5
    assert worst_level_share(groups, 0, {1}) <= 1 / 2 and worst_level_share(groups, 0, {2}) <= 1 / 3
    rec = conn.execute("SELECT params, layout, published_rows FROM pganon.release WHERE id = %s", (rid,)).fetchone()
    assert rec[0]["min_group"] == 2 and rec[1]["min_group"] == 2     # the promise is recorded
    if method.endswith("mslf"):
        assert rec[2] == 240                              # at no cost here: L_sl still suppresses nothing


@pytest.mark.parametrize("method", ["mbf_mslf", "msdcf_mslf", "mmdcf_mslf"])
def test_min_group_1_is_the_papers_setting_and_exposes_whole_rows(conn, name, method):
    """The finding's shape is real on this table: asked for explicitly, min_group = 1 gives
    groups of one (exact QIs beside the full SA vector), and the release says so."""
    clinic(conn, name)
    rid = publish(conn, name, method, min_group=1)
    result = checks(conn, rid)
    assert all(p for p, _ in result.values()) and "paper" in result["min_group"][1]
    groups = published_groups(conn, rid)
    assert sum(n for n, _ in groups.values() if n == 1) > 0 and worst_vector_share(groups) == 1.0
    lay = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    assert lay["min_group"] == 1 and lay["level_l"] == {"0": 1, "1": 2, "2": 3}


def test_min_group_3_and_the_baselines_l(conn, name):
    clinic(conn, name)
    rid = publish(conn, name, "mmdcf_mslf", min_group=3)
    groups = published_groups(conn, rid)
    assert min(n for n, _ in groups.values()) >= 3 and worst_vector_share(groups) <= 1 / 3
    lay = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    assert lay["min_group"] == 3 and lay["level_l"] == {"0": 1, "1": 2, "2": 3}   # values keep their l
    b = publish(conn, name, "mbf", min_group=4)           # the baselines' derived l: max(l2 = 3, 4)
    assert conn.execute("SELECT params->'l' FROM pganon.release WHERE id = %s", (b,)).fetchone()[0] == 4
    assert worst_vector_share(published_groups(conn, b)) <= 1 / 4


def _rebuild_from_map(conn, rid, table):
    """Rewrite a Table 1 release's GT and ST from its (tampered) map and the source, so that
    every check that compares them with each other or with the source still passes."""
    lay = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    rel, sas = lay["relations"], ", ".join(lay["sas"])
    conn.execute(f"DELETE FROM {rel['gt']}")
    conn.execute(f'INSERT INTO {rel["gt"]} (group_id, age, sex, race, zipcode) SELECT m.group_id, s.age, s.sex, '
                 f's.race, s.zipcode FROM {rel["map"]} m JOIN "{table}" s USING (rid)')
    conn.execute(f"DELETE FROM {rel['st']}")
    conn.execute(f'INSERT INTO {rel["st"]} (group_id, {sas}, count) SELECT m.group_id, {sas}, count(*) '
                 f'FROM {rel["map"]} m JOIN "{table}" s USING (rid) GROUP BY m.group_id, {sas}')
    return rel


def _regroup(conn, rid, table, groups):
    """Move the release's records into `groups` (lists of Table 1 rids), keeping the rest of
    the release consistent with the map."""
    rel = conn.execute("SELECT layout->'relations' FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    new = {r: g for g, members in enumerate(groups) for r in members}
    conn.execute(f"UPDATE {rel['map']} SET group_id = (%s::jsonb->>rid::text)::int", (json.dumps(new),))
    _rebuild_from_map(conn, rid, table)
    return rel


@pytest.mark.parametrize("min_group", [1, 2])
def test_lsl_diversity_takes_l_from_the_catalog_not_the_release(conn, t1, min_group):
    """Finding 7: a release whose level table claims l = 1 while a group breaks the values'
    real l: {Mary/Cancer, Sam/HIV} holds two level-2 values (l = 3) in two rows. Groups keep
    two rows or more and distinct vectors, and map, GT, ST and source agree, so only
    lsl_diversity can catch it, and only if it reads the catalog."""
    rid = publish(conn, t1, "mbf_mslf", min_group=min_group)
    rel = _regroup(conn, rid, t1, [[3, 8], [1, 4, 9], [2, 6], [5, 7]])
    conn.execute(f"UPDATE {rel['levels']} SET l = 1")
    result = checks(conn, rid)
    assert {c for c, (p, _) in result.items() if not p} == {"lsl_diversity"}, result
    assert "2 violation(s)" in result["lsl_diversity"][1] and "l=3" in result["lsl_diversity"][1], result


def test_min_group_check_catches_a_group_that_exposes_a_whole_vector(conn, t1):
    """Publishing only disease, {John/Flu, Bob/Flu} is a group of two with one vector (Flu):
    L_sl-diverse under the paper's l0 = 1, so only the min_group check sees it."""
    rid = publish(conn, t1, "mbf_mslf", sensitive=["disease"])
    _regroup(conn, rid, t1, [[3, 8, 9], [1, 4], [2, 6], [5, 7]])
    result = checks(conn, rid)
    assert {c for c, (p, _) in result.items() if not p} == {"min_group"}, result
    assert "a sensitive vector on 2 of its 2 rows" in result["min_group"][1], result
