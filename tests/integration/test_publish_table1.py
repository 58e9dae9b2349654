"""Spec 000 §6.3/§6.4 fixtures through the database: the six methods on Table 1, exactly, with
the paper's setting min_group = 1 (l0 = 1: a level-0 value may fill its group)."""

import pytest

from helpers import checks, create_table1, declare_table1, groups_of, publish


@pytest.fixture
def t1(conn, name):
    create_table1(conn, name)
    declare_table1(conn, name, name)
    return name


EXPECTED = {  # spec 000 §6.3, tie = 'first'
    "mbf_mslf": [{3, 8, 1}, {2, 4}, {5, 6}, {7, 9}],
    "msdcf_mslf": [{3, 8, 1}, {2, 4}, {6, 5}, {7, 9}],
    "mmdcf_mslf": [{3, 8, 1}, {2, 4}, {6, 5}, {7, 9}],
    "mbf": [{1, 3, 5}, {2, 4, 6}, {7, 8, 9}],
    "msdcf": [{1, 3, 5}, {2, 4, 6}, {7, 8, 9}],
    "mmdcf": [{1, 5, 3}, {7, 4, 8}, {2, 6, 9}],
}


@pytest.mark.parametrize("method", sorted(EXPECTED))
def test_table1_groups_exactly_as_spec(conn, t1, method):
    rid = publish(conn, t1, method, min_group=1, numbering="creation")   # the paper's group order
    assert groups_of(conn, rid) == EXPECTED[method]
    rel = conn.execute("SELECT groups, suppressed_rows, metrics, params FROM pganon.releases WHERE id = %s", (rid,)).fetchone()
    assert rel[0] == len(EXPECTED[method]) and rel[1] == 0
    assert rel[2]["ail"] == 0 and rel[2]["sr"] == 0
    if not method.endswith("mslf"):
        assert rel[3]["l"] == 3  # the l of the highest level present (spec A15)
    assert rel[3]["min_group"] == 1
    assert all(passed for passed, _ in checks(conn, rid).values())


def test_table1_mbf_mslf_published_tables_as_spec_6_4(conn, t1):
    rid = publish(conn, t1, "mbf_mslf", min_group=1, numbering="creation")
    gt = conn.execute(f'SELECT group_id, age, sex, race, zipcode FROM pganon_data.r{rid}_gt').fetchall()
    st = conn.execute(f'SELECT group_id, physician, disease, count FROM pganon_data.r{rid}_st').fetchall()
    expected_gt = [(0, 56, "M", "White", 11400), (0, 26, "F", "Black", 15000), (0, 21, "M", "White", 11000),
                   (1, 60, "F", "Black", 21000), (1, 28, "F", "Black", 65000),
                   (2, 60, "M", "White", 41000), (2, 55, "F", "Black", 41300),
                   (3, 43, "M", "White", 39000), (3, 37, "M", "White", 19000)]
    expected_st = [(0, "Mary", "Cancer", 1), (0, "Sam", "HIV", 1), (0, "John", "Flu", 1),
                   (1, "John", "Pneumonia", 1), (1, "Bob", "Flu", 1),
                   (2, "Bob", "Pneumonia", 1), (2, "Anne", "Gastritis", 1),
                   (3, "John", "Gastritis", 1), (3, "Mary", "Flu", 1)]
    assert sorted(gt) == sorted(expected_gt)
    assert sorted(st) == sorted(expected_st)
    cols = [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 ORDER BY attnum",
        (f'pganon_data.r{rid}_gt',))]
    assert cols == ["group_id", "age", "sex", "race", "zipcode"]   # no ssn, no name, no key


def test_random_ties_are_reproducible_and_keep_the_invariants(conn, t1):
    seen = set()
    for seed in range(12):
        a = publish(conn, t1, "mmdcf_mslf", seed=seed, min_group=1, numbering="creation")
        b = publish(conn, t1, "mmdcf_mslf", seed=seed, min_group=1, numbering="creation")
        ga, gb = groups_of(conn, a), groups_of(conn, b)
        assert ga == gb
        assert len(ga) == 4          # MMDCF-MSLF always yields 4 groups on Table 1 (spec §6.3)
        seen.add(tuple(sorted(tuple(sorted(g)) for g in ga)))
        m = publish(conn, t1, "mbf_mslf", seed=seed, min_group=1)
        assert conn.execute("SELECT suppressed_rows FROM pganon.release WHERE id = %s", (m,)).fetchone()[0] == 0
    assert len(seen) <= 6


def test_generalized_gt_has_ranges_and_sets_and_verifies(conn, t1):
    rid = publish(conn, t1, "mbf_mslf", generalize=True, numbering="creation")
    rows = conn.execute(f'SELECT group_id, age::text, sex FROM pganon_data.r{rid}_gt WHERE group_id = 0').fetchall()
    assert {r[1] for r in rows} == {"[21,57)"}        # ages 21, 26, 56 as one int4range
    assert {tuple(r[2]) for r in rows} == {("F", "M")}
    assert all(p for p, _ in checks(conn, rid).values())
    ncp = conn.execute("SELECT metrics->>'ncp_percent' FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    assert 0 < float(ncp) <= 100


def test_qi_order_changes_only_which_rows_not_the_bucket_plan(conn, t1):
    a = publish(conn, t1, "mmdcf_mslf")
    b = publish(conn, t1, "mmdcf_mslf", qi_order=True)
    ma = conn.execute("SELECT metrics FROM pganon.release WHERE id = %s", (a,)).fetchone()[0]
    mb = conn.execute("SELECT metrics FROM pganon.release WHERE id = %s", (b,)).fetchone()[0]
    assert (ma["groups"], ma["ail"], ma["sr"]) == (mb["groups"], mb["ail"], mb["sr"])
    assert all(p for p, _ in checks(conn, b).values())


def test_stable_views_follow_the_promoted_release_and_drop_removes_them(conn, t1):
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0}')", (t1,))
    a = publish(conn, t1, "mbf", min_group=1, promote=True)
    b = publish(conn, t1, "mbf_mslf", min_group=1, promote=True)
    n = lambda: conn.execute(f'SELECT count(DISTINCT group_id) FROM pganon_release."{t1}_st"').fetchone()[0]
    assert n() == 4
    conn.execute("SELECT pganon.promote(%s)", (a,))
    assert n() == 3
    conn.execute("SELECT pganon.drop_release(%s)", (b,))     # superseded: the views stay on a
    assert n() == 3
    assert conn.execute("SELECT to_regclass(%s)", (f"pganon_data.r{b}_gt",)).fetchone()[0] is None
    conn.execute("SELECT pganon.drop_release(%s)", (a,))
    assert conn.execute("SELECT to_regclass(%s)", (f'pganon_release."{t1}_gt"',)).fetchone()[0] is None


TAMPER = [  # (statement on release rid, the check that must fail)
    ("UPDATE pganon_data.r{rid}_gt SET age = age + 1 WHERE group_id = 1", "gt_matches_source"),
    ("UPDATE pganon_data.r{rid}_st SET disease = 'Flu' WHERE disease = 'HIV'", "st_matches_source"),
    ("UPDATE pganon_data.r{rid}_st SET physician = 'John' WHERE physician = 'Mary' AND group_id = 0", "lsl_diversity"),
    ("DELETE FROM pganon_data.r{rid}_map WHERE rid = 1", "partition"),
    ("UPDATE pganon_data.r{rid}_st SET count = 2 WHERE group_id = 3 AND disease = 'Flu'", "gt_st_agree"),
    ("ALTER TABLE pganon_data.r{rid}_gt ADD COLUMN name text", "no_identifiers"),
    # a right row in the wrong group: sizes unchanged, only the (group, values) pairs differ
    ("UPDATE pganon_data.r{rid}_gt g SET group_id = 1 - g.group_id FROM (SELECT DISTINCT ON (group_id) ctid "
     "FROM pganon_data.r{rid}_gt WHERE group_id IN (0, 1) ORDER BY group_id, age) x WHERE g.ctid = x.ctid",
     "gt_matches_source"),
    ("UPDATE pganon_data.r{rid}_st s SET group_id = 1 - s.group_id FROM (SELECT DISTINCT ON (group_id) ctid "
     "FROM pganon_data.r{rid}_st WHERE group_id IN (0, 1) AND count = 1 ORDER BY group_id, disease) x "
     "WHERE s.ctid = x.ctid", "st_matches_source"),
    # a row that counts nothing changes no sum; it is malformed all the same
    ("INSERT INTO pganon_data.r{rid}_st SELECT group_id, disease, physician, 0 FROM pganon_data.r{rid}_st LIMIT 1",
     "st_matches_source"),
    ("ALTER TABLE pganon_data.r{rid}_map DROP CONSTRAINT r{rid}_map_pkey; "
     "INSERT INTO pganon_data.r{rid}_map SELECT * FROM pganon_data.r{rid}_map LIMIT 1", "partition"),
]


@pytest.mark.parametrize("statement,check", TAMPER, ids=[t[1] for t in TAMPER])
def test_verify_catches_a_tampered_release(conn, t1, statement, check):
    rid = publish(conn, t1, "mbf_mslf", numbering="creation")   # the statements name groups 0 and 1
    conn.execute(statement.format(rid=rid))
    result = checks(conn, rid)
    assert result[check][0] is False, result
