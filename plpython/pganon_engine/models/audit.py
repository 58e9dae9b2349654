"""The fingerprint-correlation audit of a published GT/ST release (spec 004 §2.8, §1.6), read
from the release's own relations: the ST's value sets per bucket, and per published record its
class, its bucket and its published QI vector. `fcorr_fast` does the reasoning: the vectorized
twin of the reference `fcorr` (same summary, checked against it in the unit tests), which scans
millions of linkable bucket pairs in seconds and lets a cancel or statement_timeout through.

Releases of the `linked` family link GT rows to fingerprint buckets; bucketization releases
(GT and ST joined by group) are audited with each group as a bucket. The `correct` variant of
the vulnerable records needs the true values, so the audit reads the source (admin only).
"""

import json

from pganon_engine.core.errors import invalid, unknown

from . import fcorr, fcorr_fast

DETAIL_PAIRS = 50


def _release(db, release_id):
    r = db.one("SELECT r.layout::text AS layout, r.status, d.source::oid::regclass::text AS source, d.id AS dataset_id "
               "FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id WHERE r.id = $1",
               [release_id], ["int8"])
    if r is None or r["status"] == "dropped":
        raise unknown(f"release {release_id} does not exist or was dropped",
                      hint="list releases with SELECT * FROM pganon.releases")
    return json.loads(r["layout"]), r["source"], r["dataset_id"]


def _gather(db, lay, source):
    """(st, gt rows, true SA values per record) of a release, as fcorr's neutral input."""
    I = db.ident
    rel, key, sas = lay["relations"], I(lay["key"]), lay["sas"]
    sa_txt = ", ".join(f"s.{I(a)}::text AS sa{j}" for j, a in enumerate(sas))
    if lay["family"] == "linked":
        st = {}  # the published ST's value sets, what analysts read (not its long form)
        for r in db.rows(f"SELECT bucket_id, {', '.join(f'{I(a)}::text[] AS sa{j}' for j, a in enumerate(sas))} "
                         f"FROM {rel['st']}"):
            cell = st.setdefault(r["bucket_id"], {a: set() for a in sas})
            for j, a in enumerate(sas):
                cell[a].update(v for v in r[f"sa{j}"] or () if v is not None)
        cells = []
        for i, q in enumerate(lay["qis"]):
            c = I(q["column"])
            cells.append(f"g.{c}::text AS q{i}" if q["kind"] in ("numeric", "date")
                         else f"CASE WHEN g.{c} = '*' THEN '*' ELSE s.{c}::text END AS q{i}")
        rows = db.rows(f"SELECT m.{key}::text AS rid, m.group_id AS ec, m.bucket_id AS b, {', '.join(cells)}, {sa_txt} "
                       f"FROM {rel['map']} m JOIN {source} s USING ({key}) "
                       f"JOIN (SELECT DISTINCT ON (group_id) * FROM {rel['gt']} ORDER BY group_id) g USING (group_id)")
    elif lay["family"] == "bucketization":
        st = {}
        for r in db.rows(f"SELECT group_id, {', '.join(f'{I(a)}::text AS sa{j}' for j, a in enumerate(sas))}, count "
                         f"FROM {rel['st']}"):
            cell = st.setdefault(r["group_id"], {a: {} for a in sas})
            for j, a in enumerate(sas):
                cell[a][r[f"sa{j}"]] = cell[a].get(r[f"sa{j}"], 0) + r["count"]
        cells = [f"s.{I(q['column'])}::text AS q{i}" for i, q in enumerate(lay["qis"])]
        rows = db.rows(f"SELECT m.{key}::text AS rid, m.group_id AS ec, m.group_id AS b, {', '.join(cells)}, {sa_txt} "
                       f"FROM {rel['map']} m JOIN {source} s USING ({key})")
    else:
        raise invalid(f"releases of family {lay['family']!r} have no GT/ST to audit")
    nq = len(lay["qis"])
    gt = [fcorr.GTRow(r["rid"], tuple(r[f"q{i}"] for i in range(nq)), r["b"], ec=r["ec"], home=r["b"])
          for r in rows]
    truth = {r["rid"]: {a: r[f"sa{j}"] for j, a in enumerate(sas)} for r in rows}
    return st, gt, truth


def run(db, lay, source, delta=None):
    """Audit one release whose source relation is `source` (the catalog's regclass text)."""
    delta = delta or lay.get("delta")
    if delta is None:
        raise invalid("this release has no linking attribute delta; give one: pganon.audit(release, delta => 'column')")
    if delta not in lay["sas"]:
        raise invalid(f"delta {delta!r} is not a sensitive attribute of the release {lay['sas']}")
    try:
        model = fcorr.sa_model(lay["sas"], delta, None, zeta=lay.get("zeta"))
        st, gt, truth = _gather(db, lay, source)
        result = fcorr_fast.audit(gt, st, model, source=truth, detail=DETAIL_PAIRS,
                                  tick=db.interruptible())
    except ValueError as exc:
        raise invalid(f"cannot audit the release: {exc}")
    pairs = [{"buckets": [f.i, f.j], "via": sorted(map(str, f.shared)),
              "singletons": {a: str(v) for a, v in f.singletons.items()}, "kind": f.kind}
             for f in result.pairs][:DETAIL_PAIRS]
    return {"summary": result.summary, "pairs_with_singletons": pairs,
            "vulnerable_correct": sorted(result.vulnerability.correct or [])[:DETAIL_PAIRS]}


def audit_release(db, release, delta=None):
    lay, source, _ = _release(db, release)
    return run(db, lay, source=source, delta=delta)
