"""The release pipeline (DESIGN.md's seven steps) behind `pganon.publish`.

Runs inside the caller's transaction: any error, including a failed verification, aborts the
whole publish, so a release either lands whole and verified or leaves no trace.
"""

import json

from . import __version__, anatomy, catalog, generalized, linked, lsl, person, rating_release, semantic_release
from .errors import EngineError, invalid
from .plpy_adapter import Phases

# method -> the family module that runs it. A family provides parse_params(method, params, ds),
# build(db, ds, p, rel, phases) -> (source rows, groups), layout, recorded_params and measure.
FAMILIES = {**{name: lsl for name in lsl.METHODS}, **{name: linked for name in linked.METHODS},
            **{name: generalized for name in generalized.METHODS}, **{name: person for name in person.METHODS},
            **{name: anatomy for name in anatomy.METHODS},
            **{name: rating_release for name in rating_release.METHODS},
            **{name: semantic_release for name in semantic_release.METHODS}}


def relations(release_id):
    base = f"pganon_data.r{int(release_id)}"
    return {"gt": f"{base}_gt", "st": f"{base}_st", "map": f"{base}_map", "levels": f"{base}_levels",
            "st_long": f"{base}_st_long", "categories": f"{base}_categories"}


def publish(db, dataset, method, params):
    if isinstance(params, str):
        params = json.loads(params)
    params = params or {}
    if not isinstance(params, dict):
        raise invalid("params must be a JSON object")
    family = FAMILIES.get(method)
    if family is None:
        raise invalid(f"unknown method {method!r}", hint=f"methods: {', '.join(sorted(FAMILIES))}")
    ds = catalog.load(db, dataset)
    p = family.parse_params(method, params, ds)
    drop_work_tables(db)
    phases = Phases(db)
    db.run(f"LOCK TABLE {ds.source} IN SHARE MODE")
    rid = db.one("SELECT nextval('pganon.release_id_seq') AS id")["id"]
    rel = relations(rid)

    source_rows, n_groups = family.build(db, ds, p, rel, phases)
    lay = family.layout(ds, p, rel)
    recorded = family.recorded_params(params, p)
    published = db.one(f"SELECT count(*) AS n FROM {rel['map']}")["n"]
    db.run("INSERT INTO pganon.release (id, dataset_id, method, params, engine_version, layout, source_rows, "
           "published_rows, suppressed_rows, groups) VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7, $8, $9, $10)",
           [rid, ds.id, method, json.dumps(recorded), __version__, json.dumps(lay), source_rows, published,
            source_rows - published, n_groups],
           ["int8", "int4", "text", "text", "text", "text", "int8", "int8", "int8", "int8"])

    failed = phases.run("verify", db.rows,
                        'SELECT "check", detail FROM pganon.verify($1) WHERE NOT passed', [rid], ["int8"])
    if failed:
        listing = "; ".join(f"{f['check']}: {f['detail']}" for f in failed)
        raise EngineError(f"release of {dataset} with {method} failed verification, nothing was published: {listing}",
                          "PA006", hint="this is a bug in pganon; please report it with the parameters")

    metrics = phases.run("measure", family.measure, db, ds, p, rel, lay, source_rows)
    phases.run("expose", expose, db, ds, lay)
    db.run("UPDATE pganon.release SET metrics = $2::jsonb, phase_seconds = $3::jsonb WHERE id = $1",
           [rid, json.dumps(metrics), json.dumps(phases.seconds)], ["int8", "text", "text"])
    return rid


def drop_work_tables(db):
    """Drop the temp work tables an earlier publish of this transaction left (they live until
    commit), so that several publishes can share one transaction (`pganon compare`)."""
    for t in db.rows("SELECT relname::text AS name FROM pg_catalog.pg_class "
                     "WHERE relnamespace = pg_catalog.pg_my_temp_schema() AND relkind = 'r' "
                     "AND relname LIKE '\\_pganon\\_%'"):
        db.run(f"DROP TABLE pg_temp.{db.ident(t['name'])}")


def expose(db, ds, lay):
    """Point the stable views at this release's relations, refusing if other objects depend on them."""
    db.run("SELECT pganon._expose($1, $2::jsonb)", [ds.name, json.dumps(lay["relations"])], ["text", "text"])
