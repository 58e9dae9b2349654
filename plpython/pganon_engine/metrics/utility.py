"""Query error of a published GT (spec 004 §4.2, eqs. 7-8), for any family: the database side
of `workload`. The original QI columns come from the snapshot (one array per column), the
release's classes from its GT (one row per distinct published QI vector, with its count), and
`workload` draws the seeded queries, counts and estimates.

Cells by GT column type: a range is the closed interval it covers (discrete ranges end one below
their exclusive upper bound), an array is a value set, '*' is the whole domain, anything else is
an exact value. Numbers, dates and timestamps are compared on `coltypes`' number line on both sides.

Publish measures it only when its params ask (`queries` > 0); `release_query_error`
(`pganon.query_error`) measures a kept release on demand with the same queries.
"""

import numpy as np

from pganon_engine.core import catalog, coltypes
from pganon_engine.core.errors import bad_data, invalid
from pganon_engine.core.plpy_adapter import drop_temp
from pganon_engine.hierarchy import store as hierarchy_store

from . import estimate, querygen, reconstruct, workload


def _column_types(db, relation):
    return {r["name"]: r["type"] for r in db.rows(
        "SELECT attname::text AS name, format_type(atttypid, NULL) AS type FROM pg_catalog.pg_attribute "
        "WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped", [relation], ["text"])}


def _domains(db, qis, snap):
    I = db.ident
    exprs = []
    for q in qis:
        c = I(q["column"])
        exprs.append(f"{c}::text" if q["kind"] == "categorical" else coltypes.number(c, coltypes.of(q)))
    row = db.one("SELECT " + ", ".join(f"array_agg({e}) AS c{i}" for i, e in enumerate(exprs)) + f" FROM {snap}")
    doms = []
    for i, q in enumerate(qis):
        vals = row[f"c{i}"]
        if q["kind"] == "categorical":
            doms.append(workload.Domain.categorical_from_values(q["column"], vals))
        else:
            arr = np.asarray(vals, dtype=np.float64)
            integral = coltypes.of(q).discrete or bool(np.all(arr == np.round(arr)))
            doms.append(workload.Domain.numeric(q["column"], arr.astype(np.int64) if integral else arr))
    return doms


def _classes(db, qis, gt):
    """(cells, counts) of the GT: one class per distinct published QI vector."""
    I, types = db.ident, _column_types(db, gt)
    sel, kinds = [], []
    for i, q in enumerate(qis):
        c, t = I(q["column"]), types[q["column"]]
        if t in coltypes.RANGES:
            ct = coltypes.RANGES[t]
            lo, hi = coltypes.bounds(c, ct)
            sel += [f"{coltypes.number(lo, ct)} AS lo{i}", f"{coltypes.number(hi, ct)} AS hi{i}"]
            kinds.append("range")
        elif t.endswith("[]"):
            sel.append(f"{c}::text[] AS v{i}")
            kinds.append("set")
        elif q["kind"] in ("numeric", "date"):
            sel.append(f"{coltypes.number(c, coltypes.of(q))} AS v{i}")
            kinds.append("value")
        else:
            sel.append(f"{c}::text AS v{i}")
            kinds.append("value")
    cols = ", ".join(sel)
    rows = db.rows(f"SELECT {cols}, count(*) AS n FROM {gt} GROUP BY {', '.join(str(j + 1) for j in range(len(sel)))}")
    cells, counts = [], []
    for r in rows:
        cell = []
        for i, k in enumerate(kinds):
            if k == "range":
                cell.append((r[f"lo{i}"], r[f"hi{i}"]))
            elif k == "set":
                cell.append(frozenset(r[f"v{i}"]))
            else:
                cell.append(r[f"v{i}"])
        cells.append(tuple(cell))
        counts.append(int(r["n"]))
    return cells, counts


def query_error(db, qis, snap, gt, theta=0.1, n=1000, seed=0):
    """Mean / median / max relative error of n seeded COUNT queries at selectivity theta."""
    doms = _domains(db, qis, snap)
    queries = querygen.make_queries(doms, theta, n=n, seed=seed)
    cells, counts = _classes(db, qis, gt)
    true = workload.true_counts(queries)
    est = estimate.estimated_counts(queries, cells, counts)
    err = estimate.query_error(queries, true, est)
    return {"theta": theta, "queries": int(err.used), "mean": float(err.mean), "median": float(err.median),
            "max": float(err.max), "seed": seed}


def covered_view(db, qis, snap, gt, hierarchies):
    """The GT with hierarchy labels replaced by what they cover, the form `query_error`
    estimates from: a numeric QI's label becomes the [min, max] of its leaves, a categorical
    one the set of its leaves that occur in the snapshot (the workload's domain; a leaf covers
    itself).  hierarchies: column -> Hierarchy for the columns published as labels; without
    any the GT itself is returned."""
    if not hierarchies:
        return gt
    I = db.ident
    cells, joins = [], []
    for i, q in enumerate(qis):
        c = I(q["column"])
        h = hierarchies.get(q["column"])
        if h is None:
            cells.append(f"g.{c}")
            continue
        leaf_sets = [[h.labels[v] for v in h.leaves if h.anc[v, h.depth[u]] == u] for u in range(len(h))]
        drop_temp(db, f"pg_temp._pganon_qv{i}")  # an earlier publish in this transaction
        if q["kind"] in ("numeric", "date"):
            # the leaves' [min, max] (ISO dates sort as text; numbers compare as numbers)
            num = q["kind"] == "numeric"
            lo = [min(ls, key=float if num else str) for ls in leaf_sets]
            hi = [max(ls, key=float if num else str) for ls in leaf_sets]
            db.run(f"CREATE TEMP TABLE _pganon_qv{i} ON COMMIT DROP AS SELECT * FROM "
                   f"unnest($1::text[], $2::text[], $3::text[]) AS u(node, lo, hi)", [list(h.labels), lo, hi],
                   ["text[]", "text[]", "text[]"])
            cells.append(f"{coltypes.cell(f'v{i}.lo', f'v{i}.hi', coltypes.of(q))} AS {c}")
        else:
            db.run(f"CREATE TEMP TABLE _pganon_qv{i} ON COMMIT DROP AS SELECT u.node, array_agg(u.leaf) AS leaves "
                   f"FROM unnest($1::text[], $2::text[]) AS u(node, leaf) "
                   f"WHERE u.leaf IN (SELECT DISTINCT {c}::text FROM {snap}) GROUP BY u.node",
                   [[h.labels[u] for u, ls in enumerate(leaf_sets) for _ in ls], [x for ls in leaf_sets for x in ls]],
                   ["text[]", "text[]"])
            cells.append(f"v{i}.leaves AS {c}")
        joins.append(f"JOIN pg_temp._pganon_qv{i} v{i} ON v{i}.node = g.{c}::text")
    drop_temp(db, "pg_temp._pganon_qview")
    db.run(f"CREATE TEMP TABLE _pganon_qview ON COMMIT DROP AS SELECT {', '.join(cells)} FROM {gt} g "
           + " ".join(joins))
    return "pg_temp._pganon_qview"


def release_query_error(db, release, queries=1000, theta=0.1, seed=None):
    """`pganon.query_error`: the query error of a kept release, measured now (issue 15: publish
    runs no workload unless asked). The figure publish stores with params queries, theta and
    seed (seed: the release's, else 0): the same queries on the release's GT and its source rows
    (the first `limit` by key when the release was limited), read now, so equal to the stored one
    while the source is unchanged.  A source that no longer has the release's row count is
    refused: its figure would be about other rows."""
    info = reconstruct.release_row(db, release)
    lay, params = info["layout"], info["params"]
    fam = lay.get("family")
    if fam not in ("generalized", "linked", "bucketization"):
        what = ("its query error counts persons' records on the SA and lambda QIs, from the method's own "
                "classes" if fam == "person" else "it publishes no QI cells this workload reads")
        raise invalid(f"release {release} ({info['method']}) has no on-demand query error: {what}",
                      hint="publish it again with params {\"queries\": 1000} to store the figure" if fam == "person"
                      else "compare it with pganon.compare, whose shared workload reads every release shape")
    if isinstance(queries, bool) or not isinstance(queries, int) or queries < 1:
        raise invalid(f"queries must be an integer >= 1, not {queries!r}")
    workload.check_queries(queries)
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not 0 < theta <= 1:
        raise invalid(f"theta must be a number in (0, 1], not {theta!r}")
    if seed is None:
        seed = params.get("seed") if isinstance(params.get("seed"), int) else 0
    elif isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise invalid(f"seed must be an integer >= 0, not {seed!r}", hint="NULL: the release's seed, else 0")
    ds = catalog.load(db, info["dataset"])
    att = {a["column"]: a for a in ds.attributes}
    gone = [q["column"] for q in lay["qis"] if q["column"] not in att]
    if gone:
        raise invalid(f"QI columns {gone} of release {release} are no longer declared in dataset {ds.name}",
                      hint="declare them again with pganon.set_attribute(dataset, column, 'quasi', kind)")
    qis = [{"column": q["column"], "kind": att[q["column"]]["kind"], "type": att[q["column"]]["type"]}
           for q in lay["qis"]]
    I = db.ident
    cols = ", ".join(I(q["column"]) for q in qis)
    limit = f" ORDER BY {I(ds.key)} LIMIT {int(params['limit'])}" if params.get("limit") else ""
    snap = f"(SELECT {cols} FROM {ds.source}{limit}) s"
    nulls = " OR ".join(f"{I(q['column'])} IS NULL" for q in qis)
    r = db.one(f"SELECT count(*) AS n, count(*) FILTER (WHERE {nulls}) AS nulls FROM {snap}")
    if r["n"] != info["source_rows"] or r["nulls"]:
        now = f"{r['n']} rows" + (f", {r['nulls']} with a NULL QI" if r["nulls"] else "")
        raise bad_data(f"the source {ds.source} of release {release} has {now} now; the release was made "
                       f"from {info['source_rows']} rows: its query error would be about other rows",
                       hint="publish a new release with params {\"queries\": 1000} to measure it on the rows "
                            "as they are")
    gt = lay["relations"]["gt"]
    labelled = reconstruct._labelled(lay)
    if labelled:
        gt = covered_view(db, qis, snap, gt, {c: hierarchy_store.load(db, ds, c) for c in labelled})
    out = query_error(db, qis, snap, gt, float(theta), queries, seed)
    out.update(release=int(release), source_rows=int(r["n"]))
    return out
