"""Generalized releases: k-anonymization by recoding the QIs, with GAA (spec 001, Mauger et al.)
and Mondrian (spec 003 §2.2, LeFevre et al.). One GT, no ST: every record keeps its SA values
and its QIs are replaced by its class's generalization.

The pipeline steps for this family:
  snapshot     as for bucketization (`lsl.snapshot`): one copy, NULL and key checks
  plan         gaa: `gaa.gaa` on the DISTINCT QI tuples with counts (and the strategy SA's
               histograms), i.e. a GROUP BY, never the rows; mondrian: `mondrian.partition`
               on integer code arrays (ranks, hierarchy leaf ids, SA codes), one array per
               column, which the kd-tree cut needs row by row
  assign       (key, class_id) rows, set-based: gaa joins the snapshot to the tuple -> class
               table on the QI values; mondrian pairs the key order with the partition array
  materialize  GT (class_id, QI cells, SAs): a hierarchy node label (gaa; mondrian taxonomy),
               the class's [min, max] as a range type (mondrian numeric) or the class's sorted
               distinct values (mondrian ordinal)
  measure      NCP% overall and per QI, DM, DM*, C_avg, query error; for gaa also the
               metric model's alteration, p_gen and p_root (`infoloss`)

Privacy beyond k (`privacy` param, mondrian): distinct / entropy l-diversity, (alpha, k) and
t-closeness with the equal-distance EMD or the paper's L1, each per published SA; the verifier
re-checks them in SQL from the GT alone.
"""

import json

import numpy as np

from . import gaa as gaa_engine
from . import hierarchy_store, infoloss, lsl, models, mondrian, utility
from . import params as P
from .errors import invalid, unsatisfiable

METHODS = {"gaa": "gaa", "mondrian": "mondrian"}
COMMON = {"k", "d", "sensitive", "seed", "limit"} | P.WORKLOAD_PARAMS
PARAMS = {"gaa": COMMON | {"metric", "strategy", "sa", "cost_mode", "privacy_scope", "distortion_mode"},
          "mondrian": COMMON | {"mode", "categorical", "privacy"}}
SNAP = lsl.SNAP
# Mondrian's extra privacy models: the verifier checks each of them in SQL (040-verify.sql)
PRIVACY = {"l_diversity": ("l",), "entropy_l_diversity": ("l",), "alpha_k_anonymity": ("alpha",),
           "t_closeness": ("t",)}
CLASSES = "pg_temp._pganon_classes"


def parse_params(method, params, ds):
    kind = METHODS[method]
    P.unknown_params(method, params, PARAMS[kind])
    k = P.integer(params, "k", 1)
    if k is None:
        raise invalid(f"{method} needs the parameter k (an integer >= 1)")
    p = {"method": method, "kind": kind, "sas": P.sensitive_columns(params, ds), "qis": P.quasi_columns(ds),
         "k": k, "seed": P.integer(params, "seed", 0), "limit": P.integer(params, "limit", 1),
         "workload": P.workload(params)}
    if kind == "gaa":
        p.update(metric=P.choice(params, "metric", infoloss.METRICS, "nllm"),
                 strategy=gaa_engine.strategy_name(params.get("strategy", "S1")),
                 cost_mode=P.choice(params, "cost_mode", gaa_engine.COST_MODES, "pairwise"),
                 privacy_scope=P.choice(params, "privacy_scope", gaa_engine.PRIVACY_SCOPES, "table"),
                 distortion_mode=P.choice(params, "distortion_mode", infoloss.DISTORTION_MODES, "literal"),
                 sa=params.get("sa", p["sas"][0]))
        if p["sa"] not in p["sas"]:
            raise invalid(f"parameter sa must be one of the published sensitive attributes {p['sas']}, "
                          f"not {p['sa']!r}")
    else:
        p.update(mode=P.choice(params, "mode", mondrian.MODES, "strict"),
                 categorical=P.choice(params, "categorical", ("auto", "taxonomy", "ordinal"), "auto"),
                 privacy=_privacy(params.get("privacy")))
    return p


def _privacy(spec):
    """{"model": name, <its threshold>: value[, "distance": "equal" | "l1"]} or None."""
    if spec is None:
        return None
    if not isinstance(spec, dict) or spec.get("model") not in PRIVACY:
        raise invalid(f"parameter privacy must be an object with model one of {sorted(PRIVACY)}",
                      hint='e.g. {"model": "l_diversity", "l": 3}')
    model = spec["model"]
    rest = {x: v for x, v in spec.items() if x != "model"}
    allowed = set(PRIVACY[model]) | ({"distance"} if model == "t_closeness" else set())
    if set(rest) - allowed or not set(PRIVACY[model]) <= set(rest):
        raise invalid(f"privacy model {model} takes {sorted(allowed)}, not {sorted(rest)}")
    if model == "t_closeness":
        rest.setdefault("distance", "equal")
        if rest["distance"] not in ("equal", "l1"):
            raise invalid("mondrian enforces t-closeness with distance equal (EMD, total variation) or l1",
                          hint="check other distances after publishing with pganon.check")
    models._params(model, rest)  # the models module validates the thresholds
    return dict(rest, model=model)


# --------------------------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------------------------


def build(db, ds, p, rel, phases):
    """snapshot -> plan -> assign -> materialize; returns (source rows, classes)."""
    source_rows = phases.run("snapshot", lsl.snapshot, db, ds, p)
    if p["k"] > source_rows:
        raise invalid(f"k = {p['k']} is larger than the table ({source_rows} rows)", hint="lower k")
    p["hierarchies"] = _hierarchies(db, ds, p)
    if p["kind"] == "gaa":
        phases.run("plan", plan_gaa, db, ds, p)
        phases.run("assign", assign_gaa, db, ds, p, rel)
    else:
        phases.run("plan", plan_mondrian, db, ds, p)
        phases.run("assign", assign_mondrian, db, ds, p, rel)
    phases.run("materialize", materialize, db, ds, p, rel)
    return source_rows, p["n_classes"]


def _hierarchies(db, ds, p):
    """QI column -> Hierarchy: all QIs for gaa; mondrian's categorical QIs in taxonomy mode."""
    out = {}
    declared = {r["c"] for r in db.rows("SELECT column_name::text AS c FROM pganon.hierarchy WHERE dataset_id = $1",
                                        [ds.id], ["int4"])}
    for q in p["qis"]:
        c = q["column"]
        if p["kind"] == "gaa":
            out[c] = hierarchy_store.load(db, ds, c)
        elif q["kind"] == "categorical" and p["categorical"] != "ordinal":
            if c in declared:
                out[c] = hierarchy_store.load(db, ds, c)
            elif p["categorical"] == "taxonomy":
                hierarchy_store.load(db, ds, c)  # raises: no hierarchy, with the hint
    for c, h in out.items():
        missing = h.missing([r["v"] for r in db.rows(f"SELECT DISTINCT {db.ident(c)}::text AS v FROM {SNAP}")])
        if missing:
            raise invalid(f'{len(missing)} value(s) of "{c}" are not leaves of its hierarchy, e.g. {missing[0]!r}',
                          hint="declare the hierarchy again: pganon.set_hierarchy / pganon.build_hierarchy")
    return out


def _cell_form(p, q):
    """How a QI is published: 'node' (hierarchy label), 'range' or 'values' (value set)."""
    if p["kind"] == "gaa" or q["column"] in p["hierarchies"]:
        return "node"
    return "range" if q["kind"] in ("numeric", "date") else "values"


# ---- gaa ----------------------------------------------------------------------------------


def plan_gaa(db, ds, p):
    I = db.ident
    qis = [q["column"] for q in p["qis"]]
    qsel = ", ".join(f"{I(c)}::text AS q{i}" for i, c in enumerate(qis))
    need_hist = p["strategy"] != "S1"
    sa = f", {I(p['sa'])}::text AS v" if need_hist else ""
    rows = db.rows(f"SELECT {qsel}{sa}, count(*) AS n, min({I(ds.key)}) AS first FROM {SNAP} "
                   f"GROUP BY {', '.join(str(i + 1) for i in range(len(qis) + need_hist))} ORDER BY first")
    index, tuples, counts, hists = {}, [], [], []
    for r in rows:
        t = tuple(r[f"q{i}"] for i in range(len(qis)))
        i = index.get(t)
        if i is None:
            i = index[t] = len(tuples)
            tuples.append(t)
            counts.append(0)
            hists.append({})
        counts[i] += int(r["n"])
        if need_hist:
            hists[i][r["v"]] = int(r["n"])
    res = gaa_engine.gaa(tuples, counts, [p["hierarchies"][c] for c in qis], p["k"], metric=p["metric"],
                         strategy=p["strategy"], histograms=hists if need_hist else None,
                         distortion_mode=p["distortion_mode"], cost_mode=p["cost_mode"],
                         privacy_scope=p["privacy_scope"], seed=p["seed"], tick=db.interruptible())
    p["plan"] = {"tuples": tuples, "counts": counts, "result": res}
    p["n_classes"] = len(res.classes)
    p["plan_facts"] = {"steps": res.steps, "distinct_tuples": len(tuples), **res.options}


def assign_gaa(db, ds, p, rel):
    I = db.ident
    qis = [q["column"] for q in p["qis"]]
    res, tuples = p["plan"]["result"], p["plan"]["tuples"]
    m = len(qis)
    cols = [[t[j] for t in tuples] for j in range(m)]
    db.run(f"CREATE TEMP TABLE _pganon_tclass ON COMMIT DROP AS SELECT * FROM unnest($1::int4[]"
           + "".join(f", ${j + 2}::text[]" for j in range(m)) + ") AS u(class_id"
           + "".join(f", q{j}" for j in range(m)) + ")", [res.class_of] + cols, ["int4[]"] + ["text[]"] * m)
    on = " AND ".join(f"s.{I(c)}::text = t.q{j}" for j, c in enumerate(qis))
    db.run(f"CREATE TABLE {rel['map']} AS SELECT s.{I(ds.key)}, t.class_id FROM {SNAP} s "
           f"JOIN pg_temp._pganon_tclass t ON {on}")
    _finish_map(db, ds, rel)
    _class_labels(db, p, res.class_nodes, qis)


def _class_labels(db, p, class_nodes, columns):
    """The class table (class_id, one hierarchy label per column) the GT joins to."""
    hs = [p["hierarchies"][c] for c in columns]
    labels = [[hs[j].labels[t[j]] for t in class_nodes] for j in range(len(columns))]
    db.run(f"CREATE TEMP TABLE _pganon_classes ON COMMIT DROP AS SELECT * FROM unnest($1::int4[]"
           + "".join(f", ${j + 2}::text[]" for j in range(len(columns))) + ") AS u(class_id"
           + "".join(f", n{j}" for j in range(len(columns))) + ")",
           [list(range(1, len(class_nodes) + 1))] + labels, ["int4[]"] + ["text[]"] * len(columns))


def _finish_map(db, ds, rel):
    db.run(f"ALTER TABLE {rel['map']} ADD PRIMARY KEY ({db.ident(ds.key)})")
    db.run(f"ANALYZE {rel['map']}")


# ---- mondrian -----------------------------------------------------------------------------


def plan_mondrian(db, ds, p):
    """Code arrays in key order: numeric QIs as ranks of their distinct values, hierarchy QIs as
    leaf ids, ordinal QIs as ranks of their text, SAs as ranks; then the kd-tree cut."""
    I = db.ident
    key = I(ds.key)
    kinds, codes, sizes, values, taxes = [], [], [], [], []
    exprs = []
    for q in p["qis"]:
        c = I(q["column"])
        if q["column"] in p["hierarchies"]:
            exprs.append(f"{c}::text")
        elif q["kind"] in ("numeric", "date"):
            exprs.append(f"dense_rank() OVER (ORDER BY {c}) - 1")
        else:
            exprs.append(f"dense_rank() OVER (ORDER BY {c}::text COLLATE \"C\") - 1")
    sa_exprs = [f"dense_rank() OVER (ORDER BY {I(s)}::text COLLATE \"C\") - 1" for s in p["sas"]]
    inner = ", ".join([f"{e} AS c{i}" for i, e in enumerate(exprs)] + [f"{e} AS s{i}" for i, e in enumerate(sa_exprs)])
    aggs = ", ".join([f"array_agg(c{i} ORDER BY _k) AS c{i}" for i in range(len(exprs))]
                     + [f"array_agg(s{i} ORDER BY _k) AS s{i}" for i in range(len(sa_exprs))])
    row = db.one(f"SELECT {aggs} FROM (SELECT {key} AS _k, {inner} FROM {SNAP}) x")
    for i, q in enumerate(p["qis"]):
        h = p["hierarchies"].get(q["column"])
        if h is not None:
            kinds.append("taxonomy")
            codes.append(np.asarray([h.index[v] for v in row[f"c{i}"]], dtype=np.int64))
            sizes.append(None)
            values.append(None)
            taxes.append(mondrian.taxonomy(children={v: list(h.children[v]) for v in range(len(h))}, root=0))
        else:
            kinds.append("numeric" if q["kind"] in ("numeric", "date") else "ordinal")
            arr = np.asarray(row[f"c{i}"], dtype=np.int64)
            codes.append(arr)
            sizes.append(int(arr.max()) + 1)
            values.append(_distinct_values(db, q) if q["kind"] == "numeric" else None)
            taxes.append(None)
    sa_codes = [np.asarray(row[f"s{i}"], dtype=np.int64) for i in range(len(p["sas"]))]
    pred = mondrian.k_anonymity(p["k"])
    priv = p["privacy"]
    if priv is not None:
        glob = {s: {int(v): int(n) for v, n in zip(*np.unique(sa_codes[j], return_counts=True))}
                for j, s in enumerate(p["sas"])}
        thresholds = {x: v for x, v in priv.items() if x != "model"}
        test = models.predicate(priv["model"], thresholds, glob)
        if not test(len(sa_codes[0]), glob):
            raise unsatisfiable(f"the whole table does not satisfy {priv['model']} {json.dumps(thresholds)} on "
                                f"{p['sas']}, so no partition can",
                                hint="lower the threshold, or publish fewer sensitive attributes (d / sensitive)")
        if priv["model"] == "l_diversity":  # the same test, vectorized
            test = mondrian.distinct_l_diversity(priv["l"], channels=list(range(len(sa_codes))))
        pred = mondrian.all_of(pred, test)
    if priv is None:
        sa_codes = []  # k alone never looks at the SAs (no histograms are built)
    sc = mondrian.schema(kinds, sizes, values=values, taxonomies=taxes,
                         sa_sizes=[int(a.max()) + 1 for a in sa_codes],
                         sa_names=list(p["sas"]) if sa_codes else None, seed=p["seed"])
    res = mondrian.partition(codes, sa_codes, sc, pred, mode=p["mode"])
    p["plan"] = res
    p["n_classes"] = res.n_partitions
    p["plan_facts"] = {"rounds": res.rounds, "kinds": kinds}


def _distinct_values(db, q):
    """The sorted distinct values of a numeric QI (value of each rank code): widths in D1 of
    `mondrian` are then measured on values, not ranks."""
    c = db.ident(q["column"])
    vals = db.one(f"SELECT array_agg(v ORDER BY v) AS a FROM (SELECT DISTINCT {c}::float8 AS v FROM {SNAP}) x")["a"]
    return np.asarray(vals, dtype=np.float64)


def assign_mondrian(db, ds, p, rel):
    I = db.ident
    res = p["plan"]
    db.run(f"CREATE TABLE {rel['map']} AS SELECT s._k AS {I(ds.key)}, u.class_id FROM "
           f"(SELECT {I(ds.key)} AS _k, row_number() OVER (ORDER BY {I(ds.key)}) AS rn FROM {SNAP}) s "
           f"JOIN unnest($1::text::int4[]) WITH ORDINALITY AS u(class_id, rn) USING (rn)",
           [lsl.pg_array(res.partition + 1)], ["text"])
    _finish_map(db, ds, rel)
    tax = [q["column"] for q in p["qis"] if q["column"] in p["hierarchies"]]
    if tax:
        idx = [j for j, q in enumerate(p["qis"]) if q["column"] in p["hierarchies"]]
        nodes = [tuple(int(res.nodes[j][c]) if not isinstance(res.nodes[j][c], str) else
                       p["hierarchies"][p["qis"][j]["column"]].index[res.nodes[j][c]] for j in idx)
                 for c in range(res.n_partitions)]
        _class_labels(db, p, nodes, tax)


# ---- GT -----------------------------------------------------------------------------------


def materialize(db, ds, p, rel):
    """GT: (class_id, QI cells, SAs), one row per record, ordered by class."""
    I = db.ident
    key = I(ds.key)
    node_cols = [q["column"] for q in p["qis"] if _cell_form(p, q) == "node"]
    aggs, cells = [], []
    for i, q in enumerate(p["qis"]):
        c = I(q["column"])
        form = _cell_form(p, q)
        if form == "node":
            cells.append(f"n.n{node_cols.index(q['column'])} AS {c}")
        elif form == "range":
            aggs.append(f"min(s.{c}) AS lo{i}, max(s.{c}) AS hi{i}")
            rng = lsl.NUMERIC_RANGES.get(q["type"], "numrange")
            cast = "::numeric" if rng == "numrange" else ""
            cells.append(f"{rng}(r.lo{i}{cast}, r.hi{i}{cast}, '[]') AS {c}")
        else:
            aggs.append(f"array_agg(DISTINCT s.{c}::text ORDER BY s.{c}::text) AS v{i}")
            cells.append(f"r.v{i} AS {c}")
    joins = ""
    if aggs:
        db.run(f"CREATE TEMP TABLE _pganon_granges ON COMMIT DROP AS SELECT m.class_id, {', '.join(aggs)} "
               f"FROM {rel['map']} m JOIN {SNAP} s USING ({key}) GROUP BY m.class_id")
        joins += " JOIN pg_temp._pganon_granges r USING (class_id)"
    if node_cols:
        joins += f" JOIN {CLASSES} n USING (class_id)"
    sas = ", ".join(f"s.{I(a)}" for a in p["sas"])
    db.run(f"CREATE TABLE {rel['gt']} AS SELECT m.class_id, {', '.join(cells)}, {sas} "
           f"FROM {rel['map']} m JOIN {SNAP} s USING ({key}){joins} ORDER BY m.class_id")
    db.run(f"ANALYZE {rel['gt']}")


# --------------------------------------------------------------------------------------------
# record, layout, measure
# --------------------------------------------------------------------------------------------


def recorded_params(params, p):
    out = dict(params, k=p["k"], seed=p["seed"])
    if p["kind"] == "gaa":
        out.update(metric=p["metric"], strategy=p["strategy"], sa=p["sa"], cost_mode=p["cost_mode"],
                   privacy_scope=p["privacy_scope"], distortion_mode=p["distortion_mode"])
    else:
        out.update(mode=p["mode"], categorical=p["categorical"])
    return out


def layout(ds, p, rel):
    return {
        "family": "generalized",
        "model": "k_anonymity",
        "method": p["kind"],
        "key": ds.key,
        "k": p["k"],
        "privacy": p.get("privacy"),
        "qis": [{"column": q["column"], "kind": q["kind"], "form": _cell_form(p, q)} for q in p["qis"]],
        "sas": p["sas"],
        "gt_group": "class_id",
        "relations": {x: rel[x] for x in ("gt", "map")},
        **p["plan_facts"],
    }


def measure(db, ds, p, rel, lay, source_rows):
    I = db.ident
    terms, dom = [], []
    leaves = {c: h.n_leaves for c, h in p["hierarchies"].items()}
    lc_joins = []
    for i, q in enumerate(p["qis"]):
        c = I(q["column"])
        form = _cell_form(p, q)
        if form == "node":
            n = leaves[q["column"]]
            lc_joins.append(f"LEFT JOIN pganon.hierarchy_node h{i} ON h{i}.dataset_id = {int(ds.id)} "
                            f"AND h{i}.column_name = {db.literal(q['column'])} AND h{i}.node = g.{c}")
            terms.append(f"({'0' if n <= 1 else f'(h{i}.leaf_count - 1)::float8 / {n - 1}'})")
        elif form == "range":
            dom.append(f"(max({c}) - min({c}))::float8 AS d{i}")
            width = (f"(upper(g.{c}) - lower(g.{c}) - 1)" if q["kind"] == "date" or
                     lsl.NUMERIC_RANGES.get(q["type"], "numrange") != "numrange"
                     else f"(upper(g.{c}) - lower(g.{c}))")
            terms.append(f"(CASE WHEN d.d{i} > 0 THEN {width}::float8 / d.d{i} ELSE 0 END)")
        else:
            dom.append(f"count(DISTINCT {c}) AS d{i}")
            terms.append(f"(CASE WHEN d.d{i} > 1 THEN (cardinality(g.{c}) - 1)::float8 / (d.d{i} - 1) ELSE 0 END)")
    sums = ", ".join(f"sum({t}) AS a{i}" for i, t in enumerate(terms))
    d = f"SELECT {', '.join(dom)} FROM {SNAP}" if dom else "SELECT 1 AS one"
    r = db.one(f"WITH d AS ({d}) "
               f"SELECT count(*) AS n, {sums} FROM {rel['gt']} g CROSS JOIN d {' '.join(lc_joins)}")
    n = int(r["n"])
    per = {q["column"]: 100.0 * float(r[f"a{i}"] or 0) / n for i, q in enumerate(p["qis"])}
    sizes = [int(x["c"]) for x in db.rows(
        f"SELECT count(*) AS c FROM {rel['gt']} GROUP BY {', '.join(I(q['column']) for q in p['qis'])}")]
    metrics = {
        "classes": len(sizes), "min_class_size": min(sizes), "published_rows": n,
        "suppressed_rows": source_rows - n,
        "ncp_percent": sum(per.values()) / len(per), "ncp_by_attribute": per,
        "dm": sum(s * s for s in sizes),
        "dm_star": sum(s * s for s in sizes) / float(n * n),
        "c_avg": (n / len(sizes)) / p["k"],
    }
    if p["kind"] == "gaa":
        metrics.update(_metric_model(p))
    w = p["workload"]
    if w["queries"]:
        nodes = {q["column"]: p["hierarchies"][q["column"]] for q in p["qis"] if _cell_form(p, q) == "node"}
        metrics["query_error"] = utility.query_error(db, p["qis"], SNAP, utility.covered_view(db, p["qis"], SNAP, rel["gt"], nodes),
                                                     w["theta"], w["queries"], w["seed"])
    return metrics


def _metric_model(p):
    """Alteration (spec 001 Def. 9) under the run's metric, and the share of generalized and
    root cells, from the plan (input tuples with counts and their class tuples)."""
    res, tuples, counts = p["plan"]["result"], p["plan"]["tuples"], p["plan"]["counts"]
    hs = [p["hierarchies"][q["column"]] for q in p["qis"]]
    original = infoloss.as_ids(hs, tuples)
    gen = res.generalized
    met = infoloss.metric(p["metric"], hs, distortion_mode=p["distortion_mode"])
    return {"alteration": float(infoloss.alteration(met, original, gen, counts)),
            "p_gen": float(infoloss.p_gen(hs, original, gen, counts)),
            "p_root": float(infoloss.p_root(hs, original, gen, counts))}
