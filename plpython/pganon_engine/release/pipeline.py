"""The release pipeline behind `pganon.publish`: the seven steps of one release, and nothing else.

  1-4  snapshot, plan, assign, materialize   the family's `build` (release/families.py)
       renumber                              random ids and content order (core/numbering.py)
  5    verify                                pganon._verify_release, SQL independent of the engine
  6    measure                               the family's `measure`
  7    assess risk                           risk/assess.py, from the analyst's seat
  8    promote (only when asked)             release/lifecycle.py

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
SELECT on the source can publish. The engine's Python loops run under `core.interrupts.ticking`, so a
cancel or statement_timeout reaches them within a fraction of a second.
"""

import copy
import json

from pganon_engine import __version__
from pganon_engine.core import catalog, numbering
from pganon_engine.core.errors import EngineError, incomplete, invalid
from pganon_engine.core.interrupts import ticking
from pganon_engine.core.plpy_adapter import Phases, drop_work_tables
from pganon_engine.core.snapshot import SNAP
from pganon_engine.metrics import workload
from pganon_engine.risk import assess as risk

from . import lifecycle
from .families import FAMILIES, person_aware_methods, relations


def publish(db, dataset, method, params, promote=False):
    """Check the request, take the dataset's lock and run the steps; returns the release id."""
    family, ds, params = _request(db, dataset, method, params)
    mode, numbering_seed, params = numbering.parse(params)
    p = family.parse_params(method, params, ds)
    workload.check_queries(params.get("queries"))
    wait_ms = lifecycle.bound_lock_waits(db)
    lifecycle.lock_dataset(db, ds.id, f"publish of dataset {ds.name}")
    drop_work_tables(db)
    try:
        with ticking(db.interruptible()):
            return _steps(db, ds, method, family, params, p, mode, numbering_seed, promote)
    except Exception as exc:
        if getattr(exc, "sqlstate", None) == "55P03":    # a lock wait beyond lock_timeout (no SQL runs here)
            raise EngineError(f"publish of dataset {ds.name} waited {wait_ms / 1000:g} s for a lock "
                              f"another session holds (on its source {ds.source}, or a release relation); "
                              "nothing was published", "PA011",
                              hint="a session running ALTER TABLE, TRUNCATE, VACUUM FULL or LOCK TABLE on the "
                                   "source blocks reading it; retry when it has committed") from None
        raise


def _request(db, dataset, method, params):
    """The family, the dataset's metadata and the parameters, refused before anything is locked."""
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
    if ds.person and not family.PROTECTS_PERSONS:
        raise incomplete(f'dataset {ds.name} declares the person column "{ds.person}", and {method} counts '
                         f"records, not persons: a person's several records would pass for several people",
                         hint=f"use a method that protects persons: {', '.join(person_aware_methods())}")
    return family, ds, params


def _steps(db, ds, method, family, params, p, mode, numbering_seed, promote):
    phases = Phases(db)
    rid = db.one("SELECT nextval('pganon.release_id_seq') AS id")["id"]
    rel = relations(rid)

    # numbering 'random' rewrites every renumbered relation in content order anyway, so the
    # family's materialize may leave out its ORDER BY (with 'creation' its order is published)
    p["renumbered"] = mode == "random"
    p["numbering_seed"] = numbering_seed
    source_rows, n_groups = family.build(db, ds, p, rel, phases)          # 1-4
    lay = _layout(ds, family, p, rel)
    published = db.one(f"SELECT count(*) AS n FROM {rel['map']}")["n"]
    lifecycle.check_published_share(ds, method, source_rows, published)
    if mode == "random" and not p.get("numbered"):   # "numbered": the family wrote the random ids itself
        phases.run("renumber", numbering.apply, db, lay, numbering_seed, p.get("numbering_ids"))
    lay["relations"]["promise"] = rel["promise"]
    _record(db, ds, rid, method, family.recorded_params(params, p), mode, numbering_seed, lay,
            source_rows, published, n_groups)
    phases.run("verify", _verify, db, ds, method, rid)                     # 5
    metrics = phases.run("measure", family.measure, db, _snapshot_of(ds), p, rel, lay, source_rows)   # 6
    phases.run("assess", risk.assess, db, rid)                            # 7
    lifecycle.write_promise(db, rid)
    db.run("UPDATE pganon.release SET metrics = $2::jsonb, phase_seconds = $3::jsonb WHERE id = $1",
           [rid, json.dumps(metrics), json.dumps(phases.seconds)], ["int8", "text", "text"])
    if promote:
        lifecycle.promote(db, rid)                                          # 8
    return rid


def _layout(ds, family, p, rel):
    """The family's layout, with the type each QI was published from (verify names it if the
    column's type changes later)."""
    lay = family.layout(ds, p, rel)
    types = {a["column"]: a["type"] for a in ds.attributes}
    for q in lay["qis"]:
        q.setdefault("type", types[q["column"]])
    return lay


def _snapshot_of(ds):
    """The dataset as measure sees it: its source is the snapshot (`core.snapshot`), what the
    release was made from, whatever is written to the live table meanwhile."""
    snap = copy.copy(ds)
    snap.source = SNAP
    return snap


def _record(db, ds, rid, method, recorded, mode, numbering_seed, lay, source_rows, published, n_groups):
    """The release row, status candidate: what was asked, how to reproduce it, what it holds."""
    recorded = dict(recorded, numbering=mode)
    if numbering_seed is not None:
        recorded["numbering_seed"] = numbering_seed
    db.run("INSERT INTO pganon.release (id, dataset_id, method, params, engine_version, layout, source_rows, "
           "published_rows, suppressed_rows, groups) VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7, $8, $9, $10)",
           [rid, ds.id, method, json.dumps(recorded), __version__, json.dumps(lay), source_rows, published,
            source_rows - published, n_groups],
           ["int8", "int4", "text", "text", "text", "text", "int8", "int8", "int8", "int8"])


def _verify(db, ds, method, rid):
    """Step 5: the independent SQL verifier over the release relations and the snapshot; any
    failed check aborts the transaction, so nothing is published."""
    failed = db.rows('SELECT "check", detail FROM pganon._verify_release($1, $2::regclass) WHERE NOT passed',
                     [rid, SNAP], ["int8", "text"])
    if failed:
        listing = "; ".join(f"{f['check']}: {f['detail']}" for f in failed)
        raise EngineError(f"release of {ds.name} with {method} failed verification, nothing was published: {listing}",
                          "PA006", hint="this is a bug in pganon; please report it with the parameters")
