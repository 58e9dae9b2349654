"""The release pipeline (DESIGN.md's seven steps) behind `pganon.publish`.

Runs inside the caller's transaction: any error, including a failed verification, aborts the
whole publish, so a release either lands whole and verified or leaves no trace.
"""

import json

from . import __version__, catalog, lsl
from .errors import EngineError, invalid
from .plpy_adapter import Phases

FAMILIES = {name: lsl for name in lsl.METHODS}


def relations(release_id):
    base = f"pganon_data.r{int(release_id)}"
    return {"gt": f"{base}_gt", "st": f"{base}_st", "map": f"{base}_map", "levels": f"{base}_levels"}


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
    phases = Phases(db)
    db.run(f"LOCK TABLE {ds.source} IN SHARE MODE")
    rid = db.one("SELECT nextval('pganon.release_id_seq') AS id")["id"]
    rel = relations(rid)

    source_rows = phases.run("snapshot", family.snapshot, db, ds, p)
    sizes, values, levels = phases.run("buckets", family.build_buckets, db, ds, p)
    p["baseline_l"] = family.baseline_l(p, ds, levels)
    p["buckets"] = len(sizes)
    the_plan = phases.run("plan", family.plan, db, ds, p, sizes, values, levels)
    phases.run("assign", family.assign, db, ds, p, the_plan, rel, sizes)
    phases.run("materialize", family.materialize, db, ds, p, rel)
    lay = family.layout(ds, p, rel)

    recorded = dict(params, tie=p["tie"], seed=p["seed"])
    if not p["mslf"]:
        recorded["l"] = p["baseline_l"]
    published = db.one(f"SELECT count(*) AS n FROM {rel['map']}")["n"]
    db.run("INSERT INTO pganon.release (id, dataset_id, method, params, engine_version, layout, source_rows, "
           "published_rows, suppressed_rows, groups) VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7, $8, $9, $10)",
           [rid, ds.id, method, json.dumps(recorded), __version__, json.dumps(lay), source_rows, published,
            source_rows - published, the_plan.n_groups],
           ["int8", "int4", "text", "text", "text", "text", "int8", "int8", "int8", "int8"])

    failed = phases.run("verify", db.rows,
                        'SELECT "check", detail FROM pganon.verify($1) WHERE NOT passed', [rid], ["int8"])
    if failed:
        listing = "; ".join(f"{f['check']}: {f['detail']}" for f in failed)
        raise EngineError(f"release of {dataset} with {method} failed verification, nothing was published: {listing}",
                          "PA006", hint="this is a bug in pganon; please report it with the parameters")

    metrics = phases.run("measure", family.measure, db, ds, p, rel, lay, source_rows)
    phases.run("expose", expose, db, ds, rel)
    db.run("UPDATE pganon.release SET metrics = $2::jsonb, phase_seconds = $3::jsonb WHERE id = $1",
           [rid, json.dumps(metrics), json.dumps(phases.seconds)], ["int8", "text", "text"])
    return rid


def expose(db, ds, rel):
    """Point the stable views at this release's relations, refusing if other objects depend on them."""
    db.run("SELECT pganon._expose($1, $2, $3)", [ds.name, rel["gt"], rel["st"]], ["text", "text", "text"])
