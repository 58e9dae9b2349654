"""GT/ST releases with bucket links of Khan et al. (spec 004): (c,k)-anonymization (one QI class
links to several fingerprint buckets) and the (p,k)-angelization baseline (one class = one batch).

The pipeline steps for this family:
  snapshot     as for bucketization (`core.snapshot`): one copy, NULL and key checks
  plan         (c,k) first refuses, from the delta value counts alone, a c_f or mode no release
               can reach (`ck.check_reach`, PA005); then `ck.ck_plan` / `pk.pk_plan` on the
               snapshot's rows: CreateFB and its refinement depend on record order and on each
               bucket's value sets, so this planner reads one row per record (the spec's
               algorithm demands it; docs/scaling.md says so).  A plan that exceeds c_f is
               refused unless c_f_excess = 'allow'; what a release relaxes (mode 'relax',
               c_f exceeded) is recorded in its params and layout as "relaxed"
  assign       (key, group_id, bucket_id) rows from three arrays, set-based
  materialize  GT: one row per record with the group's numeric ranges, categorical QIs kept
               where the group stays k-anonymous on them or '*' (A13 of `ck_cells`), and the row's
               bucket id; ST: one row per bucket with the sorted set of each SA's values; the
               ST in long form (bucket_id, sa, value); the category table of delta values
  measure      NCP% (spec 004 §4.1), the fcorr audit summary (`audit.run`), plan facts

Decisions:

- L1  Column names (issue 12): a QI or SA named group_id or bucket_id, or a key or identifier
      column named group_id, bucket_id, sa or value, is refused at publish with PA002
      (`params.refuse_reserved`): group_id and bucket_id are the GT's and ST's own columns, and
      the verifier's no_identifiers check compares a key's name with every published column
      (the long ST's sa and value included).  Any other name publishes (an SA named value too).
"""

import json

from pganon_engine.core import coltypes, params as P
from pganon_engine.core.errors import invalid
from pganon_engine.core.plpy_adapter import drop_temp
from pganon_engine.core.snapshot import SNAP, copy_source
from pganon_engine.hierarchy import store as hierarchy_store
from pganon_engine.metrics import utility
from pganon_engine.models import audit

from . import ck, ck_categories, ck_cells, pk

METHODS = {"ck_anonymization": "ck", "pk_angelization": "pk"}
COMMON = {"d", "sensitive", "seed", "limit"} | P.WORKLOAD_PARAMS
PROTECTS_PERSONS = False  # counts records: refused on a dataset with a person column
PARAMS = {"ck": COMMON | {"k", "c", "c_f", "mode", "c_f_excess"}, "pk": COMMON | {"k", "p"}}
# The release format's own columns (GT: group_id, QIs, bucket_id; ST: bucket_id, SAs; long ST:
# bucket_id, sa, value; the map: key, group_id, bucket_id): a QI or SA named group_id or
# bucket_id, or a key or identifier column named like any of them, is refused at publish
# (decision L1).
RESERVED = ("group_id", "bucket_id")
KEY_RESERVED = ("group_id", "bucket_id", "sa", "value")


def linking(db, ds, sas):
    """Weights, delta and zeta of the chosen SAs from the catalog (spec 004 §1.3)."""
    deps = {}
    for r in db.rows("SELECT column_name::text AS c, identified_by::text AS b FROM pganon.sa_dependency "
                     "WHERE dataset_id = $1 ORDER BY 1, 2", [ds.id], ["int4"]):
        if r["c"] in sas and r["b"] in sas:
            deps.setdefault(r["c"], []).append(r["b"])
    row = db.one("SELECT delta::text AS delta, zeta::text[] AS zeta, chi::text AS chi FROM pganon.sa_linking "
                 "WHERE dataset_id = $1", [ds.id], ["int4"]) or {}
    chi = {s: x for s, x in json.loads(row.get("chi") or "{}").items() if s in sas} or None
    delta, zeta = row.get("delta"), row.get("zeta")
    if delta is not None and delta not in sas:
        raise invalid(f'the declared delta "{delta}" is not among the sensitive attributes of this release {sas}',
                      hint="publish with it (parameter sensitive or d), or change it with pganon.set_delta")
    if zeta is not None:
        zeta = [z for z in zeta if z in sas and z != delta]
    try:
        return ck_categories.weights(sas, deps, chi=chi, delta=delta, zeta=zeta)
    except ValueError as exc:
        raise invalid(str(exc), hint="declare the dependencies with pganon.set_dependency(dataset, column, "
                      "identified_by), or break the tie with pganon.set_delta / pganon.set_external_factor")


def parse_params(method, params, ds):
    kind = METHODS[method]
    P.unknown_params(method, params, PARAMS[kind])
    sas = P.sensitive_columns(params, ds)
    if len(sas) < 2:
        raise invalid(f"{method} needs at least two sensitive attributes, not {sas}",
                      hint="give d >= 2 or a longer sensitive list")
    k = P.integer(params, "k", 2)
    if k is None:
        raise invalid(f"{method} needs the parameter k (an integer >= 2)")
    qis = P.quasi_columns(ds)
    P.refuse_reserved(method, ds, [q["column"] for q in qis] + sas, RESERVED, KEY_RESERVED)
    p = {"method": method, "kind": kind, "sas": sas, "qis": qis, "k": k,
         "seed": P.integer(params, "seed", 0), "limit": P.integer(params, "limit", 1),
         "workload": P.workload(params)}
    if kind == "ck":
        p.update(c=P.integer(params, "c", 1, default=2), c_f=P.integer(params, "c_f", 1, default=2),
                 mode=P.choice(params, "mode", ck.MODES, "strict"),
                 c_f_excess=P.choice(params, "c_f_excess", ck.C_F_EXCESS, "refuse"))
    else:
        p["p"] = P.integer(params, "p", 1, default=2)
    return p


def build(db, ds, p, rel, phases):
    """linking -> snapshot -> plan -> assign -> materialize; returns (source rows, groups)."""
    p["weights"] = linking(db, ds, p["sas"])
    source_rows = phases.run("snapshot", copy_source, db, ds, p)
    the_plan, keys = phases.run("plan", plan, db, ds, p)
    phases.run("assign", assign, db, ds, the_plan, keys, rel)
    phases.run("materialize", materialize, db, ds, p, the_plan, rel)
    return source_rows, the_plan.n_groups if p["kind"] == "ck" else the_plan.n_batches


def _kinds(p):
    return ["numeric" if q["kind"] in ("numeric", "date") else "categorical" for q in p["qis"]]


def plan(db, ds, p):
    """Rows in key order (the paper's T order) -> buckets and QI groups per record."""
    I = db.ident
    qis, sas = [q["column"] for q in p["qis"]], p["sas"]
    if p["kind"] == "ck":
        _check_reach(db, p)
    # the planner compares numbers: dates and timestamps reach it on their number line (coltypes T3)
    qsel = [f"{coltypes.number(I(q['column']), coltypes.of(q))} AS {I(q['column'])}" if q["kind"] == "date"
            else I(q["column"]) for q in p["qis"]]
    rows = db.rows(f"SELECT {I(ds.key)}::text AS _pganon_k, {', '.join(qsel + [I(s) for s in sas])} FROM {SNAP} "
                   f"ORDER BY {I(ds.key)}")
    keys = [r["_pganon_k"] for r in rows]
    records = [(i, tuple(r[q] for q in qis), tuple(r[s] for s in sas)) for i, r in enumerate(rows)]
    try:
        if p["kind"] == "ck":
            out = ck.ck_plan(records, qis, sas, p["k"], p["c"], p["c_f"], p["weights"], p["mode"],
                             kinds=_kinds(p), seed=p["seed"], tick=db.interruptible(),
                             c_f_excess=p["c_f_excess"])
        else:
            out = pk.pk_plan(records, qis, sas, p["p"], p["k"], p["weights"], kinds=_kinds(p), seed=p["seed"])
        gen = ck_cells.generalize([r[1] for r in records], out.group, p["k"], kinds=_kinds(p),
                            categorical="keep" if p["kind"] == "ck" else "suppress")
    except ValueError as exc:
        raise invalid(str(exc))
    p["generalized"] = gen
    # (p,k) suppresses every categorical QI, as the paper's Table 2 does; (c,k) generalizes
    p["lca"] = _lca_cells(db, ds, p, records, out.group, gen) if p["kind"] == "ck" else {}
    if p["kind"] == "ck":
        # bucket ids stay out of the facts: release.py renumbers them after build
        p["plan_facts"] = {"mode_achieved": out.mode_achieved, "relaxed": out.relaxed,
                           "categories": len(out.categories), "buckets": out.n_buckets}
    return out, keys


def _check_reach(db, p):
    """A17 of `ck` before any row is read: the delta value counts and each SA's number of
    distinct values, two aggregates over the snapshot.  Leaves the errors the planner names
    itself (k above the row count, c above the number of categories) to the planner."""
    I = db.ident
    delta = p["weights"].delta
    counts = [(r["v"], int(r["n"])) for r in db.rows(
        f"SELECT {I(delta)}::text AS v, count(*) AS n FROM {SNAP} GROUP BY 1 ORDER BY 1")]
    total = sum(n for _, n in counts)
    if not counts or p["k"] > total or p["c"] > len(ck_categories.category_table(counts, p["k"])):
        return
    nd = db.one("SELECT " + ", ".join(f"count(DISTINCT {I(a)}) AS d{i}" for i, a in enumerate(p["sas"]))
                + f" FROM {SNAP}")
    ck.check_reach(counts, p["k"], p["c"], p["c_f"], delta=delta, mode=p["mode"], c_f_excess=p["c_f_excess"],
                   distinct={a: int(nd[f"d{i}"]) for i, a in enumerate(p["sas"])}, zeta=p["weights"].zeta)


def _lca_cells(db, ds, p, records, group, gen):
    """Where a group publishes a categorical QI as '*' (A13) and the QI has a hierarchy, the
    lowest common ancestor of the group's values instead: {QI index: {group: label}}."""
    declared = {r["c"] for r in db.rows("SELECT column_name::text AS c FROM pganon.hierarchy WHERE dataset_id = $1",
                                        [ds.id], ["int4"])}
    out = {}
    for i, q in enumerate(p["qis"]):
        if q["kind"] in ("numeric", "date") or q["column"] not in declared:
            continue
        h = hierarchy_store.load(db, ds, q["column"])
        values = {}
        for r, g in zip(records, group):
            if gen.groups[g].cells[i] == "*":
                values.setdefault(g, set()).add(str(r[1][i]))
        lab = {}
        for g, vs in values.items():
            ids = h.leaf_ids(sorted(vs))
            node = int(ids[0])
            for v in ids[1:]:
                node = h.lca(node, int(v))
            lab[g] = h.labels[node]
        p.setdefault("hierarchies", {})[q["column"]] = h
        out[i] = lab
    return out


def assign(db, ds, the_plan, keys, rel):
    buckets = the_plan.fb if hasattr(the_plan, "fb") else the_plan.batch
    db.run(f"CREATE TABLE {rel['map']} AS SELECT s.{db.ident(ds.key)}, u.g AS group_id, u.b AS bucket_id "
           f"FROM unnest($1::text[], $2::int4[], $3::int4[]) AS u(k, g, b) "
           f"JOIN {SNAP} s ON s.{db.ident(ds.key)}::text = u.k",
           [keys, list(the_plan.group), list(buckets)], ["text[]", "int4[]", "int4[]"])
    db.run(f"ALTER TABLE {rel['map']} ADD PRIMARY KEY ({db.ident(ds.key)})")
    db.run(f"ANALYZE {rel['map']}")


def materialize(db, ds, p, the_plan, rel):
    """GT, ST, ST in long form, and the category table of delta values. With p["renumbered"]
    (numbering 'random') GT, ST and ST long are rewritten and analyzed in content order by the
    renumber step: built unordered here."""
    I = db.ident
    renumbered = p.get("renumbered", False)
    qis, sas, key = p["qis"], p["sas"], I(ds.key)
    gen = p["generalized"]
    cat_idx = [i for i, q in enumerate(qis) if q["kind"] not in ("numeric", "date")]
    coltypes.refuse_top(db, SNAP, [q for q in qis if q["kind"] in ("numeric", "date")])
    gids = sorted(gen.groups)
    # what each group publishes instead of a categorical QI it is not k-anonymous on (A13):
    # '*', or the LCA of its values where the QI has a hierarchy; NULL where values are kept
    lca = p["lca"]
    flags = [[(lca[i][g] if i in lca else "*") if gen.groups[g].cells[i] == "*" else None for g in gids]
             for i in cat_idx]
    drop_temp(db, "pg_temp._pganon_gflags")
    db.run("CREATE TEMP TABLE _pganon_gflags ON COMMIT DROP AS SELECT * FROM unnest($1::int4[]"
           + "".join(f", ${j + 2}::text[]" for j in range(len(cat_idx)))
           + ") AS u(group_id" + "".join(f", star{i}" for i in cat_idx) + ")",
           [gids] + flags, ["int4[]"] + ["text[]"] * len(cat_idx))
    aggs, cells = [], []
    for i, q in enumerate(qis):
        c = I(q["column"])
        if q["kind"] in ("numeric", "date"):
            aggs.append(f"min(s.{c}) AS lo{i}, max(s.{c}) AS hi{i}")
            cells.append(f"{coltypes.cell(f'r.lo{i}', f'r.hi{i}', coltypes.of(q))} AS {c}")
        else:
            cells.append(f"coalesce(f.star{i}, s.{c}::text) AS {c}")
    db.run(f"CREATE TEMP TABLE _pganon_granges ON COMMIT DROP AS SELECT m.group_id, {', '.join(aggs) or '1 AS one'} "
           f"FROM {rel['map']} m JOIN {SNAP} s USING ({key}) GROUP BY m.group_id")
    qcols = ", ".join(I(q["column"]) for q in qis)
    db.run(f"CREATE TABLE {rel['gt']} AS SELECT * FROM (SELECT m.group_id, {', '.join(cells)}, m.bucket_id "
           f"FROM {rel['map']} m JOIN {SNAP} s USING ({key}) JOIN pg_temp._pganon_granges r USING (group_id) "
           f"JOIN pg_temp._pganon_gflags f USING (group_id)) x"
           + ("" if renumbered else f" ORDER BY group_id, bucket_id, {qcols}"))
    sets = ", ".join(f"array_agg(DISTINCT s.{I(a)} ORDER BY s.{I(a)}) AS {I(a)}" for a in sas)
    db.run(f"CREATE TABLE {rel['st']} AS SELECT m.bucket_id, {sets} FROM {rel['map']} m "
           f"JOIN {SNAP} s USING ({key}) GROUP BY m.bucket_id" + ("" if renumbered else " ORDER BY m.bucket_id"))
    long = " UNION ALL ".join(f"SELECT t.bucket_id, {db.literal(a)}::text AS sa, u._pganon_v::text AS value "
                              f"FROM {rel['st']} t, unnest(t.{I(a)}) AS u(_pganon_v)" for a in sas)
    db.run(f"CREATE TABLE {rel['st_long']} AS SELECT * FROM ({long}) x"
           + ("" if renumbered else " ORDER BY bucket_id, sa, value"))
    cats = the_plan.categories.categories
    db.run(f"CREATE TABLE {rel['categories']} AS SELECT u.value, u.category FROM unnest($1::text[], $2::int4[]) "
           f"AS u(value, category) ORDER BY category, value",
           [[str(v) for c in cats for v in c.values], [c.id for c in cats for _ in c.values]], ["text[]", "int4[]"])
    for suffix in ("categories",) if renumbered else ("gt", "st", "st_long", "categories"):
        db.run(f"ANALYZE {rel[suffix]}")


def recorded_params(params, p):
    out = dict(params, k=p["k"], seed=p["seed"])
    if p["kind"] == "ck":
        # the relaxation a release asked for (mode, c_f_excess) is in its params, so that they
        # publish it again; what was relaxed, with the figures, is in the layout and the promise
        out.update(c=p["c"], c_f=p["c_f"], mode=p["mode"], c_f_excess=p["c_f_excess"])
    else:
        out["p"] = p["p"]
    return out


def layout(ds, p, rel):
    w = p["weights"]
    lay = {
        "family": "linked",
        "model": p["kind"],
        "key": ds.key,
        "qis": [{"column": q["column"], "kind": q["kind"], "hierarchy": i in p["lca"]} for i, q in enumerate(p["qis"])],
        "sas": p["sas"],
        "k": p["k"],
        "delta": w.delta, "zeta": list(w.zeta), "weights": w.weights,
        "generalized": True,
        "gt_group": "group_id", "gt_bucket": "bucket_id",
        "relations": {k: rel[k] for k in ("gt", "st", "map", "st_long", "categories")},
    }
    if p["kind"] == "ck":
        lay.update(c=p["c"], c_f=p["c_f"], mode=p["mode"], c_f_excess=p["c_f_excess"], **p["plan_facts"])
    else:
        lay["p"] = p["p"]
    return lay


def measure(db, ds, p, rel, lay, source_rows):
    """NCP% of the GT (spec 004 §4.1) and the fcorr audit summary of the release."""
    I = db.ident
    terms, dom, joins, spans = ["0"], [], [], []
    for i, q in enumerate(p["qis"]):
        c = I(q["column"])
        if q["kind"] in ("numeric", "date"):
            # widths summed here, divided by the domain's span in Python (a float8 division in
            # SQL errors on underflow: a width of 1e-200 in a domain of 1e150)
            t = coltypes.of(q)
            dom.append(f"({coltypes.number(f'max({c})', t)} - {coltypes.number(f'min({c})', t)}) AS d{i}")
            spans.append(f", sum({coltypes.width(f'g.{c}', t)}) AS w{i}, max(d.d{i}) AS s{i}")
        elif i in p["lca"]:  # a kept leaf 0, an ancestor (leaves below - 1) / (all leaves - 1)
            n_leaves = p["hierarchies"][q["column"]].n_leaves
            joins.append(f"LEFT JOIN pganon.hierarchy_node h{i} ON h{i}.dataset_id = {int(ds.id)} "
                         f"AND h{i}.column_name = {db.literal(q['column'])} AND h{i}.node = g.{c}")
            terms.append("0" if n_leaves <= 1 else f"(h{i}.leaf_count - 1)::float8 / {n_leaves - 1}")
        else:
            terms.append(f"CASE WHEN g.{c} = '*' THEN 1 ELSE 0 END")
    d = f"SELECT {', '.join(dom)} FROM {SNAP}" if dom else "SELECT 1 AS one"
    r = db.one(f"WITH d AS ({d}) "
               f"SELECT sum({' + '.join(terms)}) AS total, count(*) AS n{''.join(spans)} "
               f"FROM {rel['gt']} g CROSS JOIN d {' '.join(joins)}")
    n = int(r["n"])
    total = float(r["total"] or 0) + sum(float(r[f"w{i}"]) / float(r[f"s{i}"]) for i in range(len(p["qis"]))
                                         if f"s{i}" in r and r[f"s{i}"] and r[f"s{i}"] > 0)
    ncp = 100.0 * total / (n * len(p["qis"])) if n else 0.0
    groups = db.one(f"SELECT count(DISTINCT group_id) AS g, count(DISTINCT bucket_id) AS b, "
                    f"min(c) AS min_size FROM (SELECT group_id, bucket_id, count(*) OVER (PARTITION BY group_id) AS c "
                    f"FROM {rel['gt']}) x")
    metrics = {
        "groups": int(groups["g"]), "buckets": int(groups["b"]), "min_group_size": groups["min_size"],
        "published_rows": n, "suppressed_rows": source_rows - n,
        "ncp_percent": ncp, "d": len(p["sas"]), "delta": lay["delta"],
        "audit": audit.run(db, lay, ds.source)["summary"],
    }
    w = p["workload"]
    if w["queries"]:
        gt = utility.covered_view(db, p["qis"], SNAP, rel["gt"], p.get("hierarchies") or {})
        metrics["query_error"] = utility.query_error(db, p["qis"], SNAP, gt, w["theta"], w["queries"], w["seed"])
    return metrics


def promised_confidence(lay):
    """Per SA, the highest confidence about a target's value that a release of this family lets
    an analyst reach, or None where its model promises nothing.  The analyst's seat: the
    target's GT row links to one bucket; the bucket's value counts per SA are the most the
    release tells (the ST lists value sets, the GT's rows per bucket its size), so the bound is
    the largest share one value may have of a bucket.

    (c,k) (spec 004 Def. 9, ck A5): a bucket holds at most c_f records of one delta value, at
    least k records, and records of at least c categories, i.e. at least c - 1 of other delta
    values.  A value with x <= c_f records therefore has at most x / max(k, x + c - 1) of its
    bucket, largest at x = c_f: c_f / max(k, c_f + c - 1) (Table 6: 2/3 with k = c = c_f = 2).
    A release that records c_f as relaxed is bounded by its recorded largest count instead.  No
    other SA is bounded: categories are made of delta values only, and eq. (4)/(5) constrain
    what two linked buckets share, not the shares inside one bucket (a bucket may hold one
    value of an SA).  A bound of 1 is no promise (None).
    (p,k) (Def. 8): a batch has at least k records of at least p categories and no cap on one
    value, so a delta value may hold all but p - 1 records of a batch of any size: no bound
    below 1 for any SA.
    """
    out = {a: None for a in lay["sas"]}
    if lay.get("model") == "ck":
        k, c = int(lay["k"]), int(lay["c"])
        x = max(int(lay["c_f"]), int((lay.get("relaxed") or {}).get("max_delta_count") or 0))
        bound = x / max(k, x + c - 1)
        out[lay["delta"]] = bound if bound < 1 else None
    return out
