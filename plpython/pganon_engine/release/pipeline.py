"""The release pipeline (DESIGN.md's seven steps) behind `pganon.publish`.

Runs inside the caller's transaction: any error, including a failed verification, aborts the
whole publish, so a release either lands whole and verified or leaves no trace. A publish makes
a *candidate* (verified, measured, risk-assessed, invisible to analysts); `lifecycle.promote`
makes it current, in the same transaction when the caller asks for it.

Concurrency (issue 12): a publish holds its dataset's lock (`lifecycle.lock_dataset`) until it
commits, so publishes, promotes and drop_release of one dataset run one at a time, and it waits
for any lock at most `pganon._lock_timeout_ms()` (10 s, or the session's lock_timeout when
lower). It takes no lock on the source beyond reading it, and everything after the snapshot
(plan to assess, verification included) reads the snapshot, never the live table: production
writes to the source never wait for a publish and cannot make it fail, and an admin with only
SELECT on the source can publish. The engine's Python loops run under `workload.ticking`, so a
cancel or statement_timeout reaches them within a fraction of a second.
"""

import copy
import json

from pganon_engine import __version__
from pganon_engine.core import catalog, numbering
from pganon_engine.core.errors import EngineError, incomplete, invalid, unsatisfiable
from pganon_engine.core.plpy_adapter import Phases
from pganon_engine.methods.anatomy import family as anatomy
from pganon_engine.methods.bucketization import family as lsl
from pganon_engine.methods.generalization import family as generalized
from pganon_engine.methods.linked import family as linked
from pganon_engine.methods.person import family as person
from pganon_engine.methods.rating import family as rating_release
from pganon_engine.methods.semantic import family as semantic_release
from pganon_engine.metrics import workload
from pganon_engine.risk import assess as risk

from . import lifecycle

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
            "st_long": f"{base}_st_long", "categories": f"{base}_categories", "promise": f"{base}_promise"}


def person_aware_methods():
    return sorted(m for m, f in FAMILIES.items() if getattr(f, "PROTECTS_PERSONS", False))


def publish(db, dataset, method, params, promote=False):
    if isinstance(params, str):
        params = json.loads(params)
    params = params or {}
    if not isinstance(params, dict):
        raise invalid("params must be a JSON object")
    family = FAMILIES.get(method)
    if family is None:
        raise invalid(f"unknown method {method!r}", hint=f"methods: {', '.join(sorted(FAMILIES))}")
    ds = catalog.load(db, dataset)
    catalog.check_types(ds)
    if ds.person and not getattr(family, "PROTECTS_PERSONS", False):
        raise incomplete(f'dataset {ds.name} declares the person column "{ds.person}", and {method} counts '
                         f"records, not persons: a person's several records would pass for several people",
                         hint=f"use a method that protects persons: {', '.join(person_aware_methods())}")
    mode, numbering_seed, params = numbering.parse(params)
    p = family.parse_params(method, params, ds)
    workload.check_queries(params.get("queries"))
    wait_ms = lifecycle.bound_lock_waits(db)
    lifecycle.lock_dataset(db, ds.id, f"publish of dataset {ds.name}")
    drop_work_tables(db)
    try:
        with workload.ticking(db.interruptible()):
            return _pipeline(db, ds, method, family, params, p, mode, numbering_seed, promote)
    except Exception as exc:
        if getattr(exc, "sqlstate", None) == "55P03":    # a lock wait beyond lock_timeout (no SQL runs here)
            raise EngineError(f"publish of dataset {ds.name} waited {wait_ms / 1000:g} s for a lock "
                              f"another session holds (on its source {ds.source}, or a release relation); "
                              "nothing was published", "PA011",
                              hint="a session running ALTER TABLE, TRUNCATE, VACUUM FULL or LOCK TABLE on the "
                                   "source blocks reading it; retry when it has committed") from None
        raise


def _pipeline(db, ds, method, family, params, p, mode, numbering_seed, promote):
    phases = Phases(db)
    rid = db.one("SELECT nextval('pganon.release_id_seq') AS id")["id"]
    rel = relations(rid)

    source_rows, n_groups = family.build(db, ds, p, rel, phases)
    # From here on the source is the snapshot (`lsl.snapshot`, one statement): what the release
    # was made from, whatever is written to the live table meanwhile.
    snap = copy.copy(ds)
    snap.source = lsl.SNAP
    lay = family.layout(ds, p, rel)
    types = {a["column"]: a["type"] for a in ds.attributes}
    for q in lay["qis"]:   # the type each QI was published from: verify names it if the column changes
        q.setdefault("type", types[q["column"]])
    published = db.one(f"SELECT count(*) AS n FROM {rel['map']}")["n"]
    check_published_share(ds, method, source_rows, published)
    if mode == "random":
        phases.run("renumber", numbering.apply, db, lay, numbering_seed)
    lay["relations"]["promise"] = rel["promise"]
    recorded = dict(family.recorded_params(params, p), numbering=mode)
    if numbering_seed is not None:
        recorded["numbering_seed"] = numbering_seed
    db.run("INSERT INTO pganon.release (id, dataset_id, method, params, engine_version, layout, source_rows, "
           "published_rows, suppressed_rows, groups) VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7, $8, $9, $10)",
           [rid, ds.id, method, json.dumps(recorded), __version__, json.dumps(lay), source_rows, published,
            source_rows - published, n_groups],
           ["int8", "int4", "text", "text", "text", "text", "int8", "int8", "int8", "int8"])

    failed = phases.run("verify", db.rows,
                        'SELECT "check", detail FROM pganon._verify_release($1, $2::regclass) WHERE NOT passed',
                        [rid, lsl.SNAP], ["int8", "text"])
    if failed:
        listing = "; ".join(f"{f['check']}: {f['detail']}" for f in failed)
        raise EngineError(f"release of {ds.name} with {method} failed verification, nothing was published: {listing}",
                          "PA006", hint="this is a bug in pganon; please report it with the parameters")

    metrics = phases.run("measure", family.measure, db, snap, p, rel, lay, source_rows)
    phases.run("assess", risk.assess, db, rid)
    lifecycle.write_promise(db, rid)
    db.run("UPDATE pganon.release SET metrics = $2::jsonb, phase_seconds = $3::jsonb WHERE id = $1",
           [rid, json.dumps(metrics), json.dumps(phases.seconds)], ["int8", "text", "text"])
    if promote:
        lifecycle.promote(db, rid)
    return rid


def check_published_share(ds, method, source_rows, published):
    """Refuse a release that would publish less than the dataset's policy asks (default: half
    the rows): an empty or near-empty release is not worth an analyst's trust or a DBA's review."""
    floor = (ds.policy or {}).get("published_share", risk.DEFAULT_PUBLISHED_SHARE)
    if floor is not None and source_rows and published < floor * source_rows:
        raise unsatisfiable(f"{method} would publish {published} of {source_rows} rows of dataset {ds.name} "
                            f"({published / source_rows:.1%}), below the policy's published share {floor:.0%}",
                            hint="ask for less (smaller k, l or SC), or lower published_share with "
                                 "pganon.set_policy(dataset, policy)")


def drop_work_tables(db):
    """Drop the temp work tables an earlier publish of this transaction left (they live until
    commit), so that several publishes can share one transaction (`pganon compare`)."""
    for t in db.rows("SELECT relname::text AS name FROM pg_catalog.pg_class "
                     "WHERE relnamespace = pg_catalog.pg_my_temp_schema() AND relkind = 'r' "
                     "AND relname LIKE '\\_pganon\\_%'"):
        db.run(f"DROP TABLE pg_temp.{db.ident(t['name'])}")
