"""Persons, not rows, for the generalization methods (issue 11, finding 3): on a visits table with
a declared person column, mondrian (its in-memory and its SQL top-split paths), gaa and semantic
put at least k persons in every published class, read their privacy model over persons and keep
persons whole when they promise one; the verifier checks it independently (and catches a release
whose classes hold k records of fewer persons); impossible requests are refused before any work
and leave nothing behind.

Every class is counted here again from the admin-only map, the source and the GT's published QI
vectors, without the verifier."""

import random
import uuid
from collections import Counter

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from helpers import checks, publish

PERSON = 'patient "id"; select 1'  # a hostile person column name
DIAGNOSES = ["asthma", "diabetes", "hiv", "copd", "none", "flu", "cold"]
COLS = sql.SQL("visit bigint PRIMARY KEY, {} bigint, age smallint, seen date, weight numeric(5,1), sex text, "
               "diagnosis text, ward text, severity smallint").format(sql.Identifier(PERSON))
QIS = ("age", "seen", "weight", "sex")
SAS = ("diagnosis", "ward", "severity")


def _visits(n_persons, seed, visits=(1, 6)):
    """Finding 3's shape: persons with 1-6 visits; age (one birthday apart at most) and sex per
    person, visit date and weight per visit; a chronic diagnosis kept on most visits, ward and
    severity per visit.  Keys are not in person order."""
    rng = random.Random(seed)
    rows = []
    keys = iter(rng.sample(range(1, 40 * n_persons + 40), 7 * n_persons))
    for p in range(n_persons):
        age, sex, chronic = rng.randrange(18, 90), rng.choice("MF"), rng.choice(DIAGNOSES[:5])
        for _ in range(rng.randint(*visits)):
            rows.append((next(keys), 10_000 + p * 7, age + rng.randrange(2),
                         f"2021-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
                         round(rng.uniform(45, 120), 1), sex,
                         chronic if rng.random() < 0.7 else rng.choice(DIAGNOSES[5:]), rng.choice("ABCD"),
                         rng.randrange(1, 4)))
    return rows


def _table(conn, rows):
    table = f"visits_{uuid.uuid4().hex[:8]}"
    conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(table), COLS))
    with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(table))) as cp:
        for r in rows:
            cp.write_row(r)
    return table


def _declare(conn, table, *, person=True, qis=QIS, sas=SAS, gaa=False):
    name = f"{table}_{'p' if person else 'r'}{'g' if gaa else ''}"
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'visit', person_column => %s)",
                 (name, table, PERSON if person else None))
    for col in qis:
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'quasi')", (name, col))
    for col in sas:
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'sensitive')", (name, col))
    if gaa:
        conn.execute("""SELECT pganon.build_hierarchy(%s, 'age', 'intervals', '{"widths": [5, 10, 20, 40]}')""", (name,))
        conn.execute("SELECT pganon.build_hierarchy(%s, 'seen', 'dates')", (name,))
        conn.execute("SELECT pganon.set_hierarchy(%s, 'sex', %s)", (name, "M;*\nF;*\n"))
    return name


@pytest.fixture(scope="module")
def visits(db_dsn):
    """One visits table (400 persons, ~1,400 visits) declared with and without its person column."""
    with psycopg.connect(db_dsn, autocommit=True) as c:
        rows = _visits(400, 3)
        table = _table(c, rows)
        person = _declare(c, table)
        c.execute("SELECT pganon.set_semantic_rule(%s, 'R0', 'severity', '>=', '{3}', 'severe')", (person,))
        yield {"table": table, "rows": rows, "person": person, "record": _declare(c, table, person=False),
               "gaa": _declare(c, table, qis=("age", "seen", "sex"), gaa=True),
               "gaa_record": _declare(c, table, person=False, qis=("age", "seen", "sex"), gaa=True)}


def _layout(conn, rid):
    return conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]


def _classes(conn, rid, rows):
    """{published QI vector: Counter(person -> records)}, read from the admin-only map, the GT
    and the source rows (not from the verifier)."""
    lay = _layout(conn, rid)
    qis = [q["column"] for q in lay["qis"]]
    vec = {cid: tuple(v) for cid, *v in conn.execute(sql.SQL("SELECT DISTINCT class_id, {} FROM {}").format(
        sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c in qis),
        sql.SQL(lay["relations"]["gt"])))}
    person = {r[0]: r[1] for r in rows}
    out = {}
    for key, cid in conn.execute(sql.SQL("SELECT visit, class_id FROM {}").format(sql.SQL(lay["relations"]["map"]))):
        out.setdefault(vec[cid], Counter())[person[key]] += 1
    return out


def _all_pass(conn, rid):
    result = checks(conn, rid)
    assert all(p for p, _ in result.values()), result
    return result


def _min_persons(classes):
    return min(len(c) for c in classes.values())


# --------------------------------------------------------------------------------------------
# finding 3, per method
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [0, 150], ids=["in_memory", "sql_top_splits"])
def test_mondrian_k_counts_persons_where_record_k_hid_fewer(conn, visits, threshold):
    rec = publish(conn, visits["record"], "mondrian", k=5, queries=0, sql_threshold=threshold)
    assert _min_persons(_classes(conn, rec, visits["rows"])) < 5  # the finding: k=5 records, fewer patients
    rid = publish(conn, visits["person"], "mondrian", k=5, queries=0, sql_threshold=threshold)
    classes = _classes(conn, rid, visits["rows"])
    assert _min_persons(classes) >= 5 and sum(sum(c.values()) for c in classes.values()) == len(visits["rows"])
    result = _all_pass(conn, rid)
    assert "fewest: " in result["k_anonymity_persons"][1] and "persons_whole" not in result
    lay = _layout(conn, rid)
    assert (lay["person"], lay["k_scope"], lay["persons_whole"]) == (PERSON, "persons", False)
    assert (lay["sql_levels"] >= 2) == bool(threshold) and lay["largest_pull"] <= (threshold or len(visits["rows"]))
    m = conn.execute("SELECT metrics FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    assert m["min_class_persons"] == _min_persons(classes) and m["persons"] == 400


@pytest.mark.parametrize("privacy", [None, {"model": "l_diversity", "l": 3}, {"model": "alpha_k_anonymity", "alpha": 0.8},
                                     {"model": "t_closeness", "t": 0.6}, {"model": "entropy_l_diversity", "l": 2}],
                         ids=lambda p: "k_only" if p is None else p["model"])
def test_mondrian_sql_top_splits_give_the_in_memory_person_release(conn, visits, privacy):
    """The SQL path counts persons per part in SQL; it must decide as the in-memory run does."""
    params = {"k": 4, "queries": 0, "numbering": "creation", "sensitive": ["diagnosis", "ward"]}
    if privacy:
        params["privacy"] = privacy
    mem = publish(conn, visits["person"], "mondrian", sql_threshold=0, **params)
    cut = publish(conn, visits["person"], "mondrian", sql_threshold=120, **params)
    maps = [dict(conn.execute(f"SELECT visit, class_id FROM pganon_data.r{r}_map").fetchall()) for r in (mem, cut)]
    assert maps[0] == maps[1] and len(set(maps[0].values())) > 5
    assert _layout(conn, cut)["sql_levels"] >= 2 and _layout(conn, mem)["sql_levels"] == 0
    _all_pass(conn, cut)


def test_a_privacy_model_reads_persons_and_keeps_them_whole(conn, visits):
    # a person holding several wards counts for each: over persons alpha is the share of the
    # class's patients who were in that ward
    rid = publish(conn, visits["person"], "mondrian", k=3, queries=0, sql_threshold=150, sensitive=["diagnosis", "ward"],
                  privacy={"model": "alpha_k_anonymity", "alpha": 0.8})
    classes = _classes(conn, rid, visits["rows"])
    homes = Counter(p for c in classes.values() for p in c)
    assert set(homes.values()) == {1} and len(homes) == 400  # every person in exactly one class
    assert _min_persons(classes) >= 3
    held = {}  # (class, SA) -> Counter(value -> persons holding it)
    vec_of = {}
    lay = _layout(conn, rid)
    for key, cid in conn.execute(f"SELECT visit, class_id FROM {lay['relations']['map']}"):
        vec_of[key] = cid
    for r in visits["rows"]:
        for s, v in zip(SAS[:2], r[6:8]):
            held.setdefault((vec_of[r[0]], s), {}).setdefault(v, set()).add(r[1])
    persons = {}
    for r in visits["rows"]:
        persons.setdefault(vec_of[r[0]], set()).add(r[1])
    worst = max(len(ps) / len(persons[cid]) for (cid, _), vals in held.items() for ps in vals.values())
    assert worst <= 0.8
    result = _all_pass(conn, rid)
    assert result["persons_whole"][0] and all(f"alpha_k_anonymity({s})" in result for s in SAS[:2])
    with pytest.raises(psycopg.Error, match="mode relaxed cannot keep persons whole") as e:
        publish(conn, visits["person"], "mondrian", k=3, mode="relaxed", privacy={"model": "l_diversity", "l": 2})
    assert e.value.sqlstate == "PA002"


def test_gaa_k_counts_persons_where_record_k_hid_fewer(conn, visits):
    rec = publish(conn, visits["gaa_record"], "gaa", k=4, queries=0)
    assert _min_persons(_classes(conn, rec, visits["rows"])) < 4
    rid = publish(conn, visits["gaa"], "gaa", k=4, queries=0)
    assert _min_persons(_classes(conn, rid, visits["rows"])) >= 4
    assert _all_pass(conn, rid)["k_anonymity_persons"][0]
    lay = _layout(conn, rid)
    assert (lay["k_scope"], lay["persons_whole"]) == ("persons", False)


def test_semantic_counts_persons_and_judges_rules_over_persons(conn, visits):
    name = visits["person"]
    conn.execute("SELECT pganon.set_semantic_rule(%s, 'C1', 'diagnosis', 'in', '{hiv,diabetes}', 'chronic')", (name,))
    try:
        rid = publish(conn, name, "semantic", k=3, l=2, coverage=0.8, queries=0)
        classes = _classes(conn, rid, visits["rows"])
        assert _min_persons(classes) >= 3 and set(Counter(p for c in classes.values() for p in c).values()) == {1}
        chronic = {r[1] for r in visits["rows"] if r[6] in ("hiv", "diabetes")}
        assert max(len(set(c) & chronic) / len(c) for c in classes.values()) < 0.8  # persons holding a match
        result = _all_pass(conn, rid)
        assert result["no_effective_rule_persons"][0] and result["no_effective_rule"][0]
        assert _layout(conn, rid)["persons_whole"] is True
    finally:
        conn.execute("SELECT pganon.drop_semantic_rule(%s, 'C1')", (name,))


# --------------------------------------------------------------------------------------------
# the verifier
# --------------------------------------------------------------------------------------------


def test_classes_of_k_records_but_fewer_persons_fail_exactly_the_person_check(conn):
    rows = _visits(60, 11)
    table = _table(conn, rows)
    name = _declare(conn, table)
    rid = publish(conn, name, "mondrian", k=3, queries=0)
    assert all(p for p, _ in checks(conn, rid).values())
    # the mutation: the persons of one class become one person (its records stay k or more)
    cid = conn.execute(f"SELECT class_id FROM pganon_data.r{rid}_map GROUP BY 1 ORDER BY count(*) DESC LIMIT 1").fetchone()[0]
    conn.execute(sql.SQL("UPDATE {t} SET {p} = 1 WHERE {p} IN (SELECT s.{p} FROM {t} s JOIN {m} m USING (visit) "
                         "WHERE m.class_id = %s)").format(t=sql.Identifier(table), p=sql.Identifier(PERSON),
                                                          m=sql.SQL(f"pganon_data.r{rid}_map")), (cid,))
    result = checks(conn, rid)
    assert [c for c, (p, _) in result.items() if not p] == ["k_anonymity_persons"], result
    assert "fewer than k = 3 persons" in result["k_anonymity_persons"][1]


# --------------------------------------------------------------------------------------------
# random person tables (hypothesis)
# --------------------------------------------------------------------------------------------


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_persons=st.integers(4, 40), seed=st.integers(0, 10**6), k=st.integers(1, 4),
       method=st.sampled_from(["mondrian", "mondrian_sql", "mondrian_l", "gaa"]))
def test_random_person_tables_give_releases_that_verify_and_hold_k_persons(conn, n_persons, seed, k, method):
    rows = _visits(n_persons, seed)
    table = _table(conn, rows)
    gaa = method == "gaa"
    name = _declare(conn, table, qis=("age", "seen", "sex") if gaa else QIS, gaa=gaa)
    params = {"k": min(k, n_persons), "queries": 0}
    if method == "mondrian_sql":
        params["sql_threshold"] = 8
    if method == "mondrian_l":
        params["privacy"] = {"model": "l_diversity", "l": 2}
    try:
        rid = publish(conn, name, "gaa" if gaa else "mondrian", **params)
    except psycopg.Error as e:  # l = 2 on a table with one diagnosis
        assert method == "mondrian_l" and e.sqlstate == "PA005" and len({r[6] for r in rows}) < 2, e
        return
    _all_pass(conn, rid)
    classes = _classes(conn, rid, rows)
    assert _min_persons(classes) >= params["k"]
    if method == "mondrian_l":
        assert set(Counter(p for c in classes.values() for p in c).values()) == {1}


# --------------------------------------------------------------------------------------------
# impossible and vacuous requests
# --------------------------------------------------------------------------------------------


def _state(conn):
    return (conn.execute("SELECT count(*), coalesce(max(id), 0) FROM pganon.release").fetchone(),
            conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'pganon_data'").fetchone()[0])


@pytest.mark.parametrize("dataset,method,params,sqlstate,message", [
    ("person", "mondrian", {"k": 2, "privacy": {"model": "t_closeness", "t": 5}}, "PA002",
     r"t = 5 is outside \(0, 1\] for t-closeness with distance equal"),
    ("person", "mondrian", {"k": 2, "privacy": {"model": "t_closeness", "t": 0}}, "PA002", r"t = 0 is outside \(0, 1\]"),
    ("record", "mondrian", {"k": 2, "privacy": {"model": "t_closeness", "t": 1.5}}, "PA002", r"t = 1.5 is outside \(0, 1\]"),
    ("record", "mondrian", {"k": 2, "privacy": {"model": "t_closeness", "t": 2.5, "distance": "l1"}}, "PA002",
     r"t = 2.5 is outside \(0, 2\] for t-closeness with distance l1"),
    ("person", "mondrian", {"k": 2, "privacy": {"model": "alpha_k_anonymity", "alpha": 1.5}}, "PA002",
     "parameter alpha must be a number > 0 and <= 1, not 1.5"),
    ("record", "mondrian", {"k": 2, "privacy": {"model": "alpha_k_anonymity", "alpha": 0}}, "PA002",
     "parameter alpha must be a number > 0 and <= 1, not 0"),
    ("person", "mondrian", {"k": 2, "privacy": {"model": "l_diversity", "l": 8}}, "PA005",
     r"""the whole table does not satisfy l_diversity \{"l": 8\} .*: l = 8 but "diagnosis" has 7, "ward" has 4, "severity" has 3 distinct"""),
    ("record", "mondrian", {"k": 2, "privacy": {"model": "entropy_l_diversity", "l": 5}}, "PA005",
     r"""l = 5 but "ward" has 4, "severity" has 3 distinct value\(s\), so no class can"""),
    ("person", "semantic", {"k": 2, "l": 4}, "PA005", r"""l = 4 but "severity" has 3 distinct value\(s\)"""),
    ("record", "mondrian", {"k": 100000}, "PA002", r"k = 100000 is larger than the table \(\d+ rows\)"),
    ("person", "mondrian", {"k": 401}, "PA005", r"""k = 401 is larger than the 400 persons \("patient "id"; select 1"\)"""),
    ("gaa", "gaa", {"k": 401}, "PA005", r"k = 401 is larger than the 400 persons"),
])
def test_impossible_requests_are_refused_before_any_work_and_leave_nothing(conn, visits, dataset, method, params,
                                                                          sqlstate, message):
    before = _state(conn)
    with pytest.raises(psycopg.Error, match=message) as e:
        publish(conn, visits[dataset], method, queries=0, **params)
    assert e.value.sqlstate == sqlstate
    after = _state(conn)
    assert after[0][0] == before[0][0] and after[1] == before[1]  # no release row, no pganon_data table
    assert after[0][1] == before[0][1]


def test_a_valid_t_and_alpha_at_the_bound_are_accepted(conn, visits):
    rid = publish(conn, visits["record"], "mondrian", k=3, queries=0,
                  privacy={"model": "t_closeness", "t": 1, "distance": "equal"})
    assert _layout(conn, rid)["privacy"]["t"] == 1
    rid = publish(conn, visits["record"], "mondrian", k=3, queries=0, privacy={"model": "alpha_k_anonymity", "alpha": 1})
    assert _all_pass(conn, rid)["alpha_k_anonymity(diagnosis)"][0]


def test_the_person_methods_are_the_ones_release_names(conn, visits):
    """A family without the promise is refused by release.py; ours carry it and publish."""
    from pganon_engine.methods.generalization import family as generalized
    from pganon_engine.methods.person import family as person
    from pganon_engine.methods.semantic import family as semantic_release
    assert all(f.PROTECTS_PERSONS is True for f in (generalized, person, semantic_release))
    rid = publish(conn, visits["person"], "mondrian", k=2, queries=0)
    assert _layout(conn, rid)["k_scope"] == "persons"


def test_json_layout_of_a_record_release_is_unchanged(conn, visits):
    rid = publish(conn, visits["record"], "mondrian", k=2, queries=0)
    lay = _layout(conn, rid)
    assert not {"person", "k_scope", "persons_whole"} & set(lay)
    assert "k_anonymity_persons" not in checks(conn, rid)


def test_the_person_k_check_is_reusable_per_group(conn, visits):
    """Without QIs the check reads every group of the GT as a class (what a bucketization
    release would pass), and it names the failing count."""
    rid = publish(conn, visits["person"], "mondrian", k=3, queries=0)
    lay = _layout(conn, rid)
    args = (lay["relations"]["map"], visits["table"], PERSON, lay["relations"]["gt"])
    per_class = Counter()
    persons = {}
    person = {r[0]: r[1] for r in visits["rows"]}
    for key, cid in conn.execute(f"SELECT visit, class_id FROM {lay['relations']['map']}"):
        persons.setdefault(cid, set()).add(person[key])
    per_class.update(len(v) for v in persons.values())
    fewest = min(per_class)
    for k, ok in ((fewest, True), (fewest + 1, False)):
        check, passed, detail = conn.execute(
            "SELECT * FROM pganon._verify_person_k(%s::regclass, %s::regclass, 'visit', %s, %s::regclass, '{}', %s, "
            "'class_id')", (args[0], args[1], args[2], args[3], k)).fetchone()
        assert (check, passed) == ("k_anonymity_persons", ok), detail
        if not ok:
            assert detail.startswith(f"{per_class[fewest]} of {len(persons)} group(s) hold fewer than k = {k} persons")
