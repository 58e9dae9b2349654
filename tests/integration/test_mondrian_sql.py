"""Mondrian with its top splits in SQL (pganon_engine.methods.generalization.mondrian_sql): publishing with a small
sql_threshold, so that the large partitions are cut by GROUP BY + UPDATE and the small ones are
pulled one at a time, gives the release the plain in-memory run (sql_threshold 0) gives: the
same map row for row (same classes, same tree-order class ids), the same GT, and both verify.
Strict and relaxed, taxonomy and ordinal, numeric and date QIs, with and without SA predicates
and seeds, on random tables (hypothesis) and on a few larger fixed ones."""

import random
import uuid

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import checks, publish
from pganon_engine.methods.generalization import mondrian as mo
from pganon_engine.methods.generalization import mondrian_predicates as mp
from pganon_engine.methods.generalization import mondrian_schema as ms

SEX = "M;*\nF;*\n"
RACE = "Cat;Felid;Mammal\nLion;Felid;Mammal\nDog;Dog;Mammal\nCow;Bovid;Mammal\nYak;Bovid;Mammal\n"
COLS = "id int PRIMARY KEY, age int, zip text, seen date, sex text, race text, disease text, smoker text"


def _dataset(conn, rows, *, hierarchies, name=None, cols=COLS, key="id", quasi=("age", "zip", "seen", "sex", "race"),
             sensitive=("disease", "smoker")):
    name = name or f"msql_{uuid.uuid4().hex[:8]}"
    conn.execute(f'CREATE TABLE "{name}" ({cols})')
    with conn.cursor().copy(f'COPY "{name}" FROM STDIN') as cp:
        for r in rows:
            cp.write_row(r)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, %s)", (name, f'"{name}"', key))
    for col in quasi:
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'quasi')", (name, col))
    for col in sensitive:
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'sensitive')", (name, col))
    if hierarchies:
        conn.execute("SELECT pganon.set_hierarchy(%s, 'sex', %s)", (name, SEX))
        conn.execute("SELECT pganon.set_hierarchy(%s, 'race', %s)", (name, RACE))
        conn.execute("SELECT pganon.build_hierarchy(%s, 'zip', 'redaction')", (name,))
    return name


def _drop(conn, name):
    for (rid,) in conn.execute("SELECT r.id FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id "
                               "WHERE d.name = %s AND r.status <> 'dropped'", (name,)).fetchall():
        conn.execute("SELECT pganon.drop_release(%s)", (rid,))
    conn.execute("SELECT pganon.drop_dataset(%s)", (name,))
    conn.execute(f'DROP TABLE "{name}"')


def _rows(rng, n):
    """n rows with skew (repeated ages and zips) so medians fall on runs of equal codes."""
    out = []
    keys = rng.sample(range(1, 10 * n + 10), n)  # key order is not insertion order
    for i, key in enumerate(keys):
        out.append((key, rng.choice([20, 20, 20, 31, 35, 47, 47, 52, 66]) + rng.randrange(3),
                    rng.choice(["13053", "13068", "13068", "14850", "14853", "14853", "14853"]),
                    f"2020-0{rng.randrange(1, 4)}-1{rng.randrange(0, 3)}",
                    rng.choice("MMF"), rng.choice(["Cat", "Lion", "Dog", "Cow", "Yak", "Lion"]),
                    ["flu", "hiv"][i % 2] if i < 2 else rng.choice(["flu", "flu", "hiv", "cancer"]),
                    rng.choice(["y", "n", "n"])))
    return out


def _release(conn, rid, key="id"):
    """(map {key: class_id}, sorted GT rows, layout) of a release."""
    cls = dict(conn.execute(f'SELECT "{key}", class_id FROM pganon_data.r{rid}_map').fetchall())
    gt = sorted(conn.execute(f"SELECT g::text FROM pganon_data.r{rid}_gt g").fetchall())
    layout = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    return cls, gt, layout


def _same_release(conn, name, key="id", **params):
    """Publish with sql_threshold 0 and with params (a small sql_threshold); assert they agree."""
    # class ids compared as the engine made them (releases renumber them at random by default)
    rid_mem = publish(conn, name, "mondrian", queries=0, numbering="creation", **dict(params, sql_threshold=0))
    rid_sql = publish(conn, name, "mondrian", queries=0, numbering="creation", **params)
    a, b = _release(conn, rid_sql, key), _release(conn, rid_mem, key)
    assert a[0] == b[0], params  # same classes, numbered the same (tree order)
    assert a[1] == b[1], params  # same GT cells
    for rid in (rid_sql, rid_mem):
        result = checks(conn, rid)
        assert all(p for p, _ in result.values()), (params, result)
    assert b[2]["sql_levels"] == 0 and b[2]["largest_pull"] == len(a[0])
    assert (a[2]["rounds"], a[2]["kinds"]) == (b[2]["rounds"], b[2]["kinds"])
    return a


PRIVACY = st.sampled_from([None, {"model": "l_diversity", "l": 2}, {"model": "l_diversity", "l": 2},
                           {"model": "entropy_l_diversity", "l": 1.5}, {"model": "t_closeness", "t": 0.6}])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(8, 90), seed=st.integers(0, 2**31 - 1), k=st.integers(1, 5), threshold=st.integers(3, 20),
       mode=st.sampled_from(["strict", "relaxed"]), categorical=st.sampled_from(["taxonomy", "ordinal"]),
       privacy=PRIVACY, run_seed=st.one_of(st.none(), st.integers(0, 10**6)), two_sas=st.booleans())
def test_random_tables_give_the_in_memory_release(conn, n, seed, k, threshold, mode, categorical, privacy,
                                                  run_seed, two_sas):
    name = _dataset(conn, _rows(random.Random(seed), n), hierarchies=categorical == "taxonomy")
    try:
        params = {"k": k, "mode": mode, "categorical": categorical, "sql_threshold": threshold,
                  "sensitive": ["disease", "smoker"] if two_sas else ["disease"]}
        if privacy is not None:
            params["privacy"] = privacy
        if run_seed is not None:
            params["seed"] = run_seed
        try:
            cls, _, layout = _same_release(conn, name, **params)
        except psycopg.Error as e:  # a privacy model the whole table fails: refused either way
            assert e.sqlstate == "PA005", e
            with pytest.raises(psycopg.Error) as again:  # (the in-memory run failed first)
                publish(conn, name, "mondrian", queries=0, **params)
            assert again.value.sqlstate == "PA005"
            return
        assert len(cls) == n
        if n > threshold:  # the root was cut in SQL (or kept whole: no cut allowed), never pulled
            assert layout["largest_pull"] <= threshold
            assert layout["sql_levels"] >= 1 or set(cls.values()) == {1}
        else:
            assert (layout["sql_levels"], layout["largest_pull"]) == (0, n)
    finally:
        _drop(conn, name)


@pytest.mark.parametrize("mode,categorical,privacy,seed,sas", [
    ("strict", "taxonomy", None, None, ["disease", "smoker"]),
    ("relaxed", "taxonomy", {"model": "l_diversity", "l": 2}, None, ["disease", "smoker"]),
    ("relaxed", "ordinal", None, 7, ["disease"]),
    ("relaxed", "taxonomy", {"model": "l_diversity", "l": 2}, 12345, ["disease", "smoker"]),
    ("strict", "ordinal", {"model": "l_diversity", "l": 3}, 3, ["disease"]),
    ("relaxed", "taxonomy", {"model": "t_closeness", "t": 0.3}, None, ["disease"]),
])
def test_a_larger_table_cut_over_several_sql_levels(conn, mode, categorical, privacy, seed, sas):
    n = 3000
    name = _dataset(conn, _rows(random.Random(n), n), hierarchies=categorical == "taxonomy")
    try:
        params = {"k": 4, "mode": mode, "categorical": categorical, "sql_threshold": 150, "sensitive": sas}
        if privacy:
            params["privacy"] = privacy
        if seed is not None:
            params["seed"] = seed
        cls, _, layout = _same_release(conn, name, **params)
        assert layout["sql_levels"] >= 3 and 0 < layout["largest_pull"] <= 150
        assert len(set(cls.values())) > 100
    finally:
        _drop(conn, name)


def test_a_partition_no_cut_is_allowed_on_stays_whole_above_the_threshold(conn):
    # every row has the same QIs: the root has no cut, so the SQL side keeps it as the one class
    rows = [(i, 30, "13053", "2020-01-10", "M", "Cat", ["flu", "hiv"][i % 2], "n") for i in range(1, 41)]
    name = _dataset(conn, rows, hierarchies=True)
    try:
        cls, gt, layout = _same_release(conn, name, k=2, sql_threshold=5, sensitive=["disease"],
                                       privacy={"model": "l_diversity", "l": 2})
        assert set(cls.values()) == {1} and layout["sql_levels"] == 0 and layout["largest_pull"] == 0
    finally:
        _drop(conn, name)


def test_hostile_names_in_the_sql_path(conn):
    cols = ('"Key ""x""" int PRIMARY KEY, "a; select 1" int, "ÄÖ zip" text, "Sex" text, "dis""ease" text')
    rng = random.Random(5)
    rows = [(i, rng.randrange(20, 60), rng.choice(["13053", "13068", "14850"]), rng.choice("MF"),
             rng.choice(["flu", "hiv", "cancer"])) for i in range(200)]
    name = _dataset(conn, rows, hierarchies=False, name="msql a; drop ä", cols=cols, key='Key "x"',
                    quasi=("a; select 1", "ÄÖ zip", "Sex"), sensitive=('dis"ease',))
    try:
        cls, _, layout = _same_release(conn, name, key='Key ""x""', k=3, mode="relaxed",
                                       privacy={"model": "l_diversity", "l": 2}, sql_threshold=20)
        assert len(cls) == 200 and layout["sql_levels"] >= 2
    finally:
        _drop(conn, name)


@pytest.mark.parametrize("value", [-1, 1.5, "10", True])
def test_bad_sql_threshold_is_refused(conn, value):
    name = _dataset(conn, _rows(random.Random(1), 10), hierarchies=False)
    try:
        with pytest.raises(psycopg.Error, match="parameter sql_threshold must be an integer >= 0") as e:
            publish(conn, name, "mondrian", k=2, sql_threshold=value)
        assert e.value.sqlstate == "PA002"
    finally:
        _drop(conn, name)


def test_sql_threshold_is_recorded_with_the_release(conn):
    name = _dataset(conn, _rows(random.Random(2), 30), hierarchies=False)
    try:
        rid = publish(conn, name, "mondrian", k=3, queries=0, sql_threshold=10)
        params = conn.execute("SELECT params FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
        assert params["sql_threshold"] == 10
    finally:
        _drop(conn, name)


@pytest.mark.parametrize("mode,seed,threshold", [("relaxed", 99, 12), ("relaxed", None, 12), ("strict", 4, 0),
                                                 ("relaxed", 2024, 0)])
def test_release_equals_the_engine_run_on_the_whole_table(conn, mode, seed, threshold):
    # The yardstick is mondrian.partition itself on code arrays in key order (ranks of the
    # values, SA ranks), with the run's seed: the seeded row order the SQL side rebuilds in its
    # `ord` column must be the one the engine draws.
    rng = random.Random(11)
    rows = _rows(rng, 60)
    name = _dataset(conn, rows, hierarchies=False)
    try:
        params = {"k": 3, "mode": mode, "categorical": "ordinal", "sensitive": ["disease"],
                  "privacy": {"model": "l_diversity", "l": 2}, "sql_threshold": threshold}
        if seed is not None:
            params["seed"] = seed
        rid = publish(conn, name, "mondrian", queries=0, numbering="creation", **params)
        got, _, _ = _release(conn, rid)
    finally:
        _drop(conn, name)
    res = _reference(rows, 3, 2, seed, mode)
    assert got == {r[0]: int(res.partition[i]) + 1 for i, r in enumerate(rows)}


def _reference(rows, k, l, seed, mode="strict"):
    """mondrian.partition on code arrays in key order (dense ranks of the QI values; the SA's
    ranks when l is given), k-anonymity and distinct l-diversity; `rows` is sorted in place."""
    rows.sort()
    rank = lambda col: [sorted(set(col)).index(v) for v in col]  # noqa: E731 (dense rank - 1)
    cols = list(zip(*rows))
    qs = [np.asarray(rank(cols[i])) for i in (1, 2, 3, 4, 5)]
    sa = [np.asarray(rank(cols[6]))] if l is not None else []
    sc = ms.schema(["numeric", "ordinal", "numeric", "ordinal", "ordinal"], [int(q.max()) + 1 for q in qs],
                   values=[np.unique(cols[1]).astype(float), None, None, None, None],
                   sa_sizes=[int(sa[0].max()) + 1] if sa else [], sa_names=["disease"] if sa else None, seed=seed)
    pred = mp.k_anonymity(k) if l is None else mp.all_of(mp.k_anonymity(k), mp.distinct_l_diversity(l, channels=[0]))
    return mo.partition(qs, sa, sc, pred, mode=mode)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(8, 120), seed=st.integers(0, 2**31 - 1), k=st.integers(1, 6), threshold=st.integers(0, 30),
       l=st.sampled_from([None, 2]), run_seed=st.one_of(st.none(), st.integers(0, 10**6)))
def test_strict_code_vectors_give_the_row_partition(conn, n, seed, k, threshold, l, run_seed):
    # Strict runs without persons cut and pull distinct code vectors with counts (mondrian_sql
    # S7, mondrian D11); the yardstick is mondrian.partition on one code row per record.
    rows = _rows(random.Random(seed), n)
    name = _dataset(conn, rows, hierarchies=False)
    try:
        params = {"k": k, "categorical": "ordinal", "sensitive": ["disease"], "sql_threshold": threshold}
        if l is not None:
            params["privacy"] = {"model": "l_diversity", "l": l}
        if run_seed is not None:
            params["seed"] = run_seed
        rid = publish(conn, name, "mondrian", queries=0, numbering="creation", **params)
        got, _, layout = _release(conn, rid)
    finally:
        _drop(conn, name)
    res = _reference(rows, k, l, run_seed)
    assert got == {r[0]: int(res.partition[i]) + 1 for i, r in enumerate(rows)}
    assert layout["rounds"] == res.rounds
    if threshold and n > threshold and res.n_partitions > 1:  # the root was cut in SQL, on vectors
        assert layout["sql_levels"] >= 1 and layout["largest_pull"] <= threshold
