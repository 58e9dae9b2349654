"""Random numbering after an unordered materialize (issue 15): with numbering 'random' a family
builds its relations without ORDER BY (p["renumbered"]) and `numbering.apply` draws the
permutation from the family's per-group table when it names one. The release must be the one
the ordered path gives: the same seed applied to the 'creation' release of the same parameters
(its relations built in the engine's order, its ids drawn by a DISTINCT over the relation) gives
the same relations, row for row in physical order, and every published relation is in the
order of its own columns."""

import json

import psycopg
import pytest
from psycopg import sql

import release_digests

SEED = 424242
CASES = [   # one per family and materialize path
    ("table", "mmdcf_mslf", {}), ("table", "mbf", {"generalize": True}), ("table", "anatomy", {"l": 2, "eligibility": "suppress"}),
    ("adult_model", "mmdcf_mslf", {"d": 5}), ("adult_model", "mmdcf_mslf", {"d": 3, "qi_order": True}),
    ("adult_model", "anatomy", {}), ("table", "mondrian", {"k": 3}), ("table", "gaa", {"k": 3}),
    ("table", "mondrian", {"k": 3, "categorical": "ordinal"}), ("table", "mondrian", {"k": 3, "mode": "relaxed"}),
    ("adult_model", "mondrian", {"k": 10}), ("adult_model", "gaa", {"k": 10}),
    ("table", "semantic", {"k": 3, "l": 2}), ("table", "rating", {"eligibility": "suppress", "seed": 5}),
    ("table", "ck_anonymization", {"k": 3, "c_f_excess": "allow"}), ("table", "pk_angelization", {"k": 3}),
    ("persons", "danonyir", {"model": "kl", "k": 3, "l": 2}), ("persons", "one_m_generalization", {"k": 3, "l": 2}),
]
DATASETS = {"table": release_digests.TABLE, "persons": release_digests.PERSON_TABLE, "adult_model": "adult_model"}


@pytest.fixture(scope="module")
def dsn(make_db):
    from pganon import install
    dsn = make_db("numbering_order")
    install.install(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        release_digests.setup(conn)
    return dsn


def _publish(conn, dataset, method, params):
    return conn.execute("SELECT pganon.publish(%s, %s, %s::jsonb)", (dataset, method, json.dumps(params))).fetchone()[0]


def _relations(conn, rid):
    lay = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
    return lay, {role: r for role, r in lay["relations"].items() if role != "promise"}


def _rows(conn, relation, order="ctid"):
    return conn.execute(sql.SQL("SELECT coalesce(array_agg(t::text ORDER BY {}), '{{}}') FROM {} t").format(
        sql.SQL(order), sql.SQL(relation))).fetchone()[0]


def _renumber_by_hand(conn, lay, seed):
    """numbering.apply as the engine had it before the family's hint: on the creation release's
    relations, with no per-group table named."""
    conn.execute("SELECT pganon._engine_boot()")
    conn.execute(sql.SQL("DO $pganon_test$\nimport json\nfrom pganon_engine.core import numbering, plpy_adapter\n"
                         "numbering.apply(plpy_adapter.Db(plpy), json.loads({}), {})\n$pganon_test$ "
                         "LANGUAGE plpython3u").format(sql.Literal(json.dumps(lay)), sql.Literal(seed)))


@pytest.mark.parametrize("dataset,method,params", CASES, ids=[f"{d}-{m}-{json.dumps(p)}" for d, m, p in CASES])
def test_random_release_is_the_creation_release_renumbered(dsn, dataset, method, params):
    with psycopg.connect(dsn, autocommit=True) as conn:
        ds = DATASETS[dataset]
        random_lay, random_rels = _relations(conn, _publish(conn, ds, method, dict(params, numbering_seed=SEED)))
        creation_lay, creation_rels = _relations(conn, _publish(conn, ds, method, dict(params, numbering="creation")))
        assert random_rels.keys() == creation_rels.keys()
        _renumber_by_hand(conn, creation_lay, SEED)
        published = {"gt", "st", "st_long"}
        for role in random_rels:
            order = "ctid" if role in published else "t::text"   # the map's order carries nothing
            got, want = _rows(conn, random_rels[role], order), _rows(conn, creation_rels[role], order)
            assert len(got) > 0 and got == want, f"{role} differs"
        # the published relations are in the order of their own columns (a reader sees no
        # engine order), and the ids were renumbered (not the creation release's)
        for role in published & random_rels.keys():
            cols = [r[0] for r in conn.execute("SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass "
                                               "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                                               (random_rels[role],)).fetchall()]
            row = sql.SQL("ROW({})").format(sql.SQL(", ").join(map(sql.Identifier, cols)))
            bad = conn.execute(sql.SQL("SELECT count(*) FILTER (WHERE prev > cur) FROM (SELECT {r} AS cur, "
                                       "lag({r}) OVER (ORDER BY ctid) AS prev FROM {t}) x").format(
                r=row, t=sql.SQL(random_rels[role]))).fetchone()[0]
            assert bad == 0, f"{role} is not in content order"


@pytest.mark.parametrize("dataset,method,params,numbered", [
    ("table", "mondrian", {"k": 3}, True), ("adult_model", "gaa", {"k": 10}, True),
    ("table", "mondrian", {"k": 3, "mode": "relaxed"}, False), ("table", "semantic", {"k": 3, "l": 2}, False)])
def test_generalized_family_writes_its_random_ids_once(dsn, dataset, method, params, numbered):
    """Mondrian's code vectors and gaa draw the class permutation from the plan and write the map
    and the GT once (the GT after the map); the row path and semantic (which relabels classes
    after the build) leave it to `numbering.apply`, which rewrites the GT first, then the map."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        _, rels = _relations(conn, _publish(conn, DATASETS[dataset], method, dict(params, numbering_seed=SEED)))
        gt, map_ = (conn.execute("SELECT %s::regclass::oid::int8", (rels[r],)).fetchone()[0] for r in ("gt", "map"))
        assert (map_ < gt) == numbered
