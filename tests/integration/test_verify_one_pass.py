"""The verifier's one-pass checks (issue 15): generalized and bucketization releases are checked in
one pass over the GT, the ST and the map with the source, and the exact statements run only to
describe a failure. These tamper releases where the one-pass form and the exact form could part:
cells equal in value but not in text, NULL values (which the exact form never matches), a value
on several ST rows of a group, and a failure whose detail must count records, not groups."""

import random

import pytest

from helpers import checks, publish

DISEASE = {"flu": 0, "cold": 0, "ulcer": 1, "asthma": 1, "hiv": 2}   # value -> security level


@pytest.fixture
def ages(conn, name):
    """A numeric QI published as numrange cells, a categorical one, one SA (nullable)."""
    rnd = random.Random(3)
    conn.execute(f'CREATE TABLE "{name}" (id int PRIMARY KEY, age numeric, sex text, disease text)')
    with conn.cursor().copy(f'COPY "{name}" FROM STDIN') as cp:
        for i in range(120):
            cp.write_row((i, rnd.randint(20, 70), "MF"[i % 2], rnd.choice(list(DISEASE))))
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, name))
    for col, role in [("age", "quasi"), ("sex", "quasi"), ("disease", "sensitive")]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    return name


def test_cells_equal_in_value_but_not_in_text_still_verify(conn, ages):
    """The one-pass form groups QI vectors by their text; '[20.00,31.00]' is the numrange
    '[20,31]', so a class whose rows spell its cell both ways is one vector, and passes."""
    rid = publish(conn, ages, "mondrian", k=5, queries=0)
    gt = f"pganon_data.r{rid}_gt"
    conn.execute(f"UPDATE {gt} SET age = numrange(lower(age)::numeric(12, 2), upper(age)::numeric(12, 2), "
                 f"CASE WHEN lower_inc(age) THEN '[' ELSE '(' END || CASE WHEN upper_inc(age) THEN ']' ELSE ')' END) "
                 f"WHERE ctid IN (SELECT ctid FROM {gt} WHERE class_id = (SELECT min(class_id) FROM {gt}) LIMIT 2)")
    assert conn.execute(f"SELECT count(DISTINCT age::text) > count(DISTINCT age) FROM {gt}").fetchone()[0]
    result = checks(conn, rid)
    assert all(p for p, _ in result.values()), result


def test_a_record_moved_out_of_its_cell_is_counted_in_records(conn, ages):
    rid = publish(conn, ages, "mondrian", k=5, queries=0)
    conn.execute(f'UPDATE "{ages}" SET age = 500 WHERE id = 7')
    result = checks(conn, rid)
    assert result["gt_matches_source"] == (
        False, "0 class(es) with several QI vectors, 1 record(s) not covered, 0 SA count mismatch(es)")
    assert result["partition"][0] and result["k_anonymity"][0]


def test_null_sensitive_values_on_both_sides_fail_as_the_exact_form_does(conn, ages):
    """A NULL SA value in the GT and in its source record hashes alike, but the exact form never
    matches NULLs: the release fails, as it did before the one-pass form."""
    rid = publish(conn, ages, "mondrian", k=5, queries=0)
    gt, cls = f"pganon_data.r{rid}_gt", conn.execute(
        f"SELECT class_id FROM pganon_data.r{rid}_map WHERE id = 7").fetchone()[0]
    disease = conn.execute(f'SELECT disease FROM "{ages}" WHERE id = 7').fetchone()[0]
    conn.execute(f'UPDATE "{ages}" SET disease = NULL WHERE id = 7')
    conn.execute(f"UPDATE {gt} SET disease = NULL WHERE ctid = (SELECT min(ctid) FROM {gt} "
                 f"WHERE class_id = %s AND disease = %s)", (cls, disease))
    passed, detail = checks(conn, rid)["gt_matches_source"]
    assert not passed and detail.endswith("SA count mismatch(es)") and not detail.endswith(" 0 SA count mismatch(es)")


@pytest.fixture
def clinic(conn, name):
    rnd = random.Random(5)
    conn.execute(f'CREATE TABLE "{name}" (id int PRIMARY KEY, age int, zip text, disease text, job text)')
    with conn.cursor().copy(f'COPY "{name}" FROM STDIN') as cp:
        for i in range(240):
            cp.write_row((i, rnd.randint(20, 80), f"4{rnd.randint(0, 9)}",
                          rnd.choices(list(DISEASE), weights=[30, 25, 15, 15, 15])[0], rnd.choice(["clerk", "nurse", "cook"])))
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, name))
    for col, role in [("age", "quasi"), ("zip", "quasi"), ("disease", "sensitive"), ("job", "sensitive")]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    for v, lv in DISEASE.items():
        conn.execute("SELECT pganon.set_security_level(%s, 'disease', %s, %s)", (name, v, lv))
    for v in ["clerk", "nurse", "cook"]:
        conn.execute("SELECT pganon.set_security_level(%s, 'job', %s, 0)", (name, v))
    for level, l in [(0, 1), (1, 2), (2, 3)]:
        conn.execute("SELECT pganon.set_level_l(%s, %s, %s)", (name, level, l))
    return name


def test_a_value_on_several_st_rows_is_summed_per_group(conn, clinic):
    """L_sl counts a value over all ST rows of its group: two rows of 'ulcer' (l = 2) in a group of
    2 or 3 records break it, though each row alone (1 x 2 <= n) would not; the detail names the
    (group, SA, value) as the exact statement does."""
    rid = publish(conn, clinic, "mmdcf_mslf", d=2, queries=0)
    assert all(p for p, _ in checks(conn, rid).values())
    st = f"pganon_data.r{rid}_st"
    group, n = conn.execute(f"SELECT group_id, sum(count) FROM {st} GROUP BY 1 "
                            f"HAVING sum(count) IN (2, 3) AND count(*) >= 2 AND max(count) = 1 "
                            f"AND bool_and(disease IS DISTINCT FROM 'ulcer') LIMIT 1").fetchone()
    conn.execute(f"UPDATE {st} SET disease = 'ulcer' WHERE ctid IN (SELECT ctid FROM {st} WHERE group_id = %s LIMIT 2)",
                 (group,))
    result = checks(conn, rid)
    assert result["lsl_diversity"] == (
        False, f"1 violation(s), e.g. group {group}: disease=ulcer occurs 2 times in {n} rows, l=2")
    assert not result["st_matches_source"][0]
