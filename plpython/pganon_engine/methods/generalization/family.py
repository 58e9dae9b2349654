"""Generalized releases: k-anonymization by recoding the QIs, with GAA (spec 001, Mauger et al.)
and Mondrian (spec 003 §2.2, LeFevre et al.). One GT, no ST: every record keeps its SA values
and its QIs are replaced by its class's generalization.

The pipeline steps for this family:
  snapshot     as for bucketization (`core.snapshot`): one copy, NULL and key checks; the
               person column is copied too when the dataset declares one (R1)
  plan         gaa: `gaa.gaa` on the DISTINCT QI tuples with counts (and the strategy SA's
               histograms), i.e. a GROUP BY, never the rows; mondrian: a work table of integer
               codes (ranks, hierarchy leaf ranks, SA codes; strict without persons: its
               distinct code vectors with counts), cut by `mondrian_sql`: GROUP BY frequency
               sets and UPDATEs above sql_threshold rows, `mondrian.partition` on one pulled
               partition at a time below
  assign       (key, class_id) rows, set-based: gaa joins the snapshot to the tuple -> class
               table on the QI values; mondrian reads the work table's classes, or joins the
               snapshot's codes to the code vectors' classes
  materialize  GT (class_id, QI cells, SAs): a hierarchy node label (gaa; mondrian taxonomy),
               the class's [min, max] as a range type (mondrian numeric) or the class's sorted
               distinct values (mondrian ordinal)
  measure      NCP% overall and per QI, DM, DM*, C_avg, query error; for gaa also the
               metric model's alteration, p_gen and p_root (`infoloss`)

Privacy beyond k (`privacy` param, mondrian): distinct / entropy l-diversity, (alpha, k) and
t-closeness with the equal-distance EMD or the paper's L1, each per published SA; the verifier
re-checks them in SQL from the GT alone.

Decisions (persons: DESIGN "Persons, not rows"):

- R1  When the dataset declares a person column, k counts persons: every published class (every
      distinct published QI vector) holds records of at least k distinct persons.  The cuts and
      merges still work on records (Mondrian's medians, GAA's tuples); only what a class must
      hold changes (mondrian D9, gaa G9).  A person's records may then sit in several classes:
      the GT publishes no person id, so an attacker who knows all of a target's QIs finds each
      class holding one of her records and, in each, at least k persons she cannot tell apart.
- R2  A privacy model beyond k (l, entropy l, (alpha, k), t) with a person column reads persons,
      and every person's records stay in one class (mondrian D10: no cut separates them).  Why
      whole: a sensitive value a person keeps on all her records (a chronic diagnosis, a blood
      group) would otherwise be narrowed by intersecting the value sets of the several classes
      an attacker finds her in, below what each class promises.  Per class: distinct l = at
      least l distinct values (each held by some person); a person counts once per value she
      holds, so entropy l and t-closeness read the distribution of (person, value) pairs (t
      against the table's pairs), and (alpha, k) bounds the attacker's confidence that the
      target holds v: persons holding v / persons <= alpha.  Mode relaxed is refused there: it
      splits the records of one median value by row order, which separates persons.  How:
      Mondrian cuts every record by its person's smallest code per QI, so a person is one point
      of the QI space and no strict cut can separate her records (D10 checks it); the published
      cells are then computed from each class's own records (ranges, value sets, the hierarchy
      node covering its leaves), so they cover every record, and two classes' cells may overlap
      (an attacker matching a target to several cells only gains candidates).
- R3  Impossible or vacuous requests are refused before planning, with the numbers: k above the
      rows (PA002) or the persons (PA005), l above the distinct values of an SA (PA005: no class
      can be more diverse than the table), t outside (0, 1] for the equal distance (total
      variation) or (0, 2] for l1 (twice it), alpha outside (0, 1] (PA002).
- R4  Without a person column nothing changes: the same plan and release as before persons.
- R5  Column names (issue 12): a QI, SA, key, person or identifier column named class_id (the
      GT's and the map's own column) is refused at publish with PA002 (`params.refuse_reserved`);
      any other name publishes.
"""

import json

import numpy as np

from pganon_engine.core import coltypes, params as P
from pganon_engine.core.errors import invalid, unsatisfiable
from pganon_engine.core.plpy_adapter import pg_array
from pganon_engine.core.snapshot import SNAP, copy_source
from pganon_engine.hierarchy import store as hierarchy_store
from pganon_engine.metrics import infoloss, utility
from pganon_engine.models import predicates as models

from . import gaa as gaa_engine, mondrian_cuts, mondrian_predicates, mondrian_schema, mondrian_sql
from .class_numbering import number_classes, vector_ranges

METHODS = {"gaa": "gaa", "mondrian": "mondrian"}
PROTECTS_PERSONS = True  # R1, R2: with a person column k and the privacy model count persons
COMMON = {"k", "d", "sensitive", "seed", "limit"} | P.WORKLOAD_PARAMS
PARAMS = {"gaa": COMMON | {"metric", "weights", "strategy", "sa", "cost_mode", "privacy_scope", "distortion_mode"},
          "mondrian": COMMON | {"mode", "categorical", "privacy", "sql_threshold"}}
# Mondrian's extra privacy models: the verifier checks each of them in SQL (sql/40-verify/00-verify.sql)
PRIVACY = {"l_diversity": ("l",), "entropy_l_diversity": ("l",), "alpha_k_anonymity": ("alpha",),
           "t_closeness": ("t",)}
CLASSES = "pg_temp._pganon_classes"
# The release format's own column (GT: class_id, QI cells, SAs; the map: key, class_id): a QI,
# SA, key, person or identifier column of that name is refused at publish (R5).
RESERVED = ("class_id",)
# Mondrian cuts partitions above this many rows in SQL and finishes smaller ones in memory, one at
# a time (`mondrian_sql`); 0 = all in memory.  Internal parameter sql_threshold.
SQL_THRESHOLD = 100_000


def parse_params(method, params, ds):
    kind = METHODS[method]
    P.unknown_params(method, params, PARAMS[kind])
    k = P.integer(params, "k", 1)
    if k is None:
        raise invalid(f"{method} needs the parameter k (an integer >= 1)")
    p = {"method": method, "kind": kind, "sas": P.sensitive_columns(params, ds), "qis": P.quasi_columns(ds),
         "k": k, "seed": P.integer(params, "seed", 0), "limit": P.integer(params, "limit", 1),
         "workload": P.workload(params), "person": ds.person or None}
    P.refuse_reserved(method, ds, [q["column"] for q in p["qis"]] + p["sas"], RESERVED, RESERVED)
    if p["person"] and p["person"] in {ds.key} | {q["column"] for q in p["qis"]} | set(p["sas"]):
        raise invalid(f'the person column "{ds.person}" is also the key, a QI or a published SA of dataset {ds.name}',
                      hint="the person column must be a column of its own")
    if kind == "gaa":
        p.update(metric=P.choice(params, "metric", infoloss.METRICS + ("custom",), "nllm"),
                 weights=_weights(params.get("weights"), p["qis"]),
                 strategy=gaa_engine.strategy_name(params.get("strategy", "S1")),
                 cost_mode=P.choice(params, "cost_mode", gaa_engine.COST_MODES, "pairwise"),
                 privacy_scope=P.choice(params, "privacy_scope", gaa_engine.PRIVACY_SCOPES, "table"),
                 distortion_mode=P.choice(params, "distortion_mode", infoloss.DISTORTION_MODES, "literal"),
                 sa=params.get("sa", p["sas"][0]))
        if p["sa"] not in p["sas"]:
            raise invalid(f"parameter sa must be one of the published sensitive attributes {p['sas']}, "
                          f"not {p['sa']!r}")
    else:
        p.update(mode=P.choice(params, "mode", mondrian_cuts.MODES, "strict"),
                 categorical=P.choice(params, "categorical", ("auto", "taxonomy", "ordinal"), "auto"),
                 privacy=_privacy(params.get("privacy")),
                 sql_threshold=P.integer(params, "sql_threshold", 0, default=SQL_THRESHOLD))
    p["whole"] = bool(p["person"]) and p.get("privacy") is not None  # R2
    if p["whole"] and p["mode"] == "relaxed":
        raise invalid(f'mode relaxed cannot keep persons whole: dataset {ds.name} has the person column '
                      f'"{ds.person}" and the release promises {p["privacy"]["model"]}',
                      hint="use mode strict (the default): relaxed cuts split the records of one value by row order")
    return p


def _weights(spec, qis):
    """metric 'custom': {QI column: {child node: weight of its edge to the parent}}, in QI order."""
    if spec is None:
        return None
    names = [q["column"] for q in qis]
    if not isinstance(spec, dict) or set(spec) != set(names) or not all(isinstance(w, dict) for w in spec.values()):
        raise invalid(f"parameter weights must map every QI {names} to {{node: edge weight}}",
                      hint='e.g. {"race": {"Cat": 1, "Lion": 1, "Felid": 3, "Dog": 4}, "sex": {"M": 5, "F": 5}}')
    return [spec[c] for c in names]


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
    if model == "t_closeness":  # R3: beyond the largest distance every table passes
        top = 1 if rest["distance"] == "equal" else 2
        if not 0 < rest["t"] <= top:
            raise invalid(f"t = {rest['t']} is outside (0, {top}] for t-closeness with distance {rest['distance']}: "
                          f"{'no class can be that close' if rest['t'] <= 0 else 'every class is that close'}",
                          hint=f"give t in (0, {top}], e.g. 0.2 (the largest {rest['distance']} distance is {top})")
    return dict(rest, model=model)


# --------------------------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------------------------


def build(db, ds, p, rel, phases):
    """snapshot -> plan -> assign -> materialize; returns (source rows, classes)."""
    source_rows = phases.run("snapshot", snapshot, db, ds, p)
    if p["k"] > source_rows:
        raise invalid(f"k = {p['k']} is larger than the table ({source_rows} rows)", hint="lower k")
    _refuse_impossible(db, ds, p, source_rows)
    p["hierarchies"] = _hierarchies(db, ds, p)
    plan, assign = (plan_gaa, assign_gaa) if p["kind"] == "gaa" else (plan_mondrian, assign_mondrian)
    phases.run("plan", plan, db, ds, p)
    phases.run("renumber", number_classes, db, p)
    phases.run("assign", assign, db, ds, p, rel)
    phases.run("materialize", materialize, db, ds, p, rel)
    return source_rows, p["n_classes"]


def snapshot(db, ds, p):
    """`core.snapshot` of key, QIs and SAs, and of the person column when there is one (copied
    and NULL-checked like a QI, never published)."""
    if not p["person"]:
        return copy_source(db, ds, p)
    return copy_source(db, ds, dict(p, qis=p["qis"] + [{"column": p["person"]}]))


def _refuse_impossible(db, ds, p, source_rows):
    """R3: k above the persons of the snapshot."""
    if p["person"]:
        persons = int(db.one(f"SELECT count(DISTINCT {db.ident(p['person'])}) AS n FROM {SNAP}")["n"])
        p["n_persons"] = persons
        if p["k"] > persons:
            raise unsatisfiable(f'k = {p["k"]} is larger than the {persons} persons ("{p["person"]}") of dataset '
                                f"{ds.name} ({source_rows} rows): k counts persons, so no class can hold k",
                                hint=f"lower k to at most {persons}")


def _refuse_l(p, distinct):
    """R3: an l above the distinct values of an SA (distinct: per SA its count) fits no class."""
    priv = p["privacy"]
    if priv["model"] not in ("l_diversity", "entropy_l_diversity"):
        return
    low = [(s, d) for s, d in zip(p["sas"], distinct) if d < priv["l"]]
    if low:
        thresholds = {x: v for x, v in priv.items() if x != "model"}
        shown = ", ".join(f'"{s}" has {d}' for s, d in low)
        raise unsatisfiable(f"the whole table does not satisfy {priv['model']} {json.dumps(thresholds)} on {p['sas']}: "
                            f"l = {priv['l']} but {shown} distinct value(s), so no class can",
                            hint=f"lower l to at most {min(d for _, d in low)}, or publish other sensitive attributes "
                                 "(d / sensitive)")


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
            raise invalid(f'{len(missing)} value(s) of "{c}" are not leaves of its hierarchy: '
                          f'{P.shown_values(sorted(missing))}',
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
    src, pcs = SNAP, ""
    if p["person"]:  # R1: the persons of each tuple, as dense codes
        src = f"(SELECT *, dense_rank() OVER (ORDER BY {I(p['person'])}) AS _pganon_pc FROM {SNAP}) s"
        pcs = ", array_agg(DISTINCT _pganon_pc) AS ps"
    rows = db.rows(f"SELECT {qsel}{sa}, count(*) AS n, min({I(ds.key)}) AS first{pcs} FROM {src} "
                   f"GROUP BY {', '.join(str(i + 1) for i in range(len(qis) + need_hist))} ORDER BY first")
    index, tuples, counts, hists, persons = {}, [], [], [], []
    for r in rows:
        t = tuple(r[f"q{i}"] for i in range(len(qis)))
        i = index.get(t)
        if i is None:
            i = index[t] = len(tuples)
            tuples.append(t)
            counts.append(0)
            hists.append({})
            persons.append(set())
        counts[i] += int(r["n"])
        if need_hist:
            hists[i][r["v"]] = int(r["n"])
        if p["person"]:
            persons[i].update(r["ps"])
    res = gaa_engine.gaa(tuples, counts, [p["hierarchies"][c] for c in qis], p["k"], metric=p["metric"],
                         weights=p["weights"], strategy=p["strategy"], histograms=hists if need_hist else None,
                         distortion_mode=p["distortion_mode"], cost_mode=p["cost_mode"],
                         privacy_scope=p["privacy_scope"], seed=p["seed"], tick=db.interruptible(),
                         persons=persons if p["person"] else None)
    p["plan"] = {"tuples": tuples, "counts": counts, "result": res}
    p["n_classes"] = len(res.classes)
    p["plan_facts"] = {"steps": res.steps, "distinct_tuples": len(tuples), **res.options}


def assign_gaa(db, ds, p, rel):
    I = db.ident
    qis = [q["column"] for q in p["qis"]]
    res, tuples = p["plan"]["result"], p["plan"]["tuples"]
    m = len(qis)
    cols = [[t[j] for t in tuples] for j in range(m)]
    class_of = res.class_of
    if p.get("numbered"):   # the random ids (`number_classes`)
        class_of = np.asarray(p["class_ids"], dtype=np.int64)[np.asarray(class_of, dtype=np.int64) - 1].tolist()
    db.run("CREATE TEMP TABLE _pganon_tclass ON COMMIT DROP AS SELECT * FROM unnest($1::int4[]"
           + "".join(f", ${j + 2}::text[]" for j in range(m)) + ") AS u(class_id"
           + "".join(f", q{j}" for j in range(m)) + ")", [class_of] + cols, ["int4[]"] + ["text[]"] * m)
    on = " AND ".join(f"s.{I(c)}::text = t.q{j}" for j, c in enumerate(qis))
    db.run(f"CREATE TABLE {rel['map']} AS SELECT s.{I(ds.key)}, t.class_id FROM {SNAP} s "
           f"JOIN pg_temp._pganon_tclass t ON {on}")
    _finish_map(db, ds, rel)
    _class_labels(db, p, res.class_nodes, qis)


def _class_labels(db, p, class_nodes, columns):
    """The class table (class_id, one hierarchy label per column) the GT joins to."""
    hs = [p["hierarchies"][c] for c in columns]
    labels = [[hs[j].labels[t[j]] for t in class_nodes] for j in range(len(columns))]
    ids = p["class_ids"] if p.get("numbered") else list(range(1, len(class_nodes) + 1))
    db.run("CREATE TEMP TABLE _pganon_classes ON COMMIT DROP AS SELECT * FROM unnest($1::int4[]"
           + "".join(f", ${j + 2}::text[]" for j in range(len(columns))) + ") AS u(class_id"
           + "".join(f", n{j}" for j in range(len(columns))) + ")",
           [ids] + labels, ["int4[]"] + ["text[]"] * len(columns))


def _finish_map(db, ds, rel):
    db.run(f"ALTER TABLE {rel['map']} ADD PRIMARY KEY ({db.ident(ds.key)})")
    db.run(f"ANALYZE {rel['map']}")


# ---- mondrian -----------------------------------------------------------------------------


def plan_mondrian(db, ds, p):
    """The work table of codes (`mondrian_sql.WORK`: numeric QIs as ranks of their distinct
    values, hierarchy QIs as leaf ranks, ordinal QIs as ranks of their text, SAs as ranks of
    their text), then the kd-tree cut: in SQL above sql_threshold rows, in memory below."""
    tick = db.interruptible()
    mondrian_sql.drop_leftovers(db, mondrian_sql.TABLES + tuple(f"_pganon_mdom{j}" for j in range(len(p["qis"])))
                                + tuple(f"_pganon_msa{i}" for i in range(len(p["sas"]))))
    kinds, sizes, values, taxes, doms = _mondrian_domains(db, p)
    sa_doms = _sa_domains(db, p) if p["privacy"] is not None else []
    if sa_doms:
        _refuse_l(p, [len(counts) for _, counts in sa_doms])
    n = int(sum(sa_doms[0][1])) if sa_doms else int(db.one(f"SELECT count(*) AS n FROM {SNAP}")["n"])
    pred = mondrian_predicates.k_anonymity(p["k"])  # over persons with a person column (mondrian D9)
    priv = p["privacy"]
    if priv is not None:
        glob = {s: dict(zip(range(len(counts)), counts)) for s, (_, counts) in zip(p["sas"], sa_doms)}
        whole_n = n
        if p["person"]:  # R2: the table's (person, value) pairs, judged over its persons
            glob = {s: dict(enumerate(_person_counts(db, p, i))) for i, s in enumerate(p["sas"])}
            whole_n = p["n_persons"]
        thresholds = {x: v for x, v in priv.items() if x != "model"}
        test = models.predicate(priv["model"], thresholds, glob)
        if not test(whole_n, glob):
            raise unsatisfiable(f"the whole table does not satisfy {priv['model']} {json.dumps(thresholds)} on "
                                f"{p['sas']}, so no partition can",
                                hint="lower the threshold, or publish fewer sensitive attributes (d / sensitive)")
        if priv["model"] == "l_diversity":  # the same test, vectorized
            test = mondrian_predicates.distinct_l_diversity(priv["l"], channels=list(range(len(sa_doms))))
        pred = mondrian_predicates.all_of(pred, test)
    sc = mondrian_schema.schema(kinds, sizes, values=values, taxonomies=taxes,
                                sa_sizes=[len(counts) for _, counts in sa_doms],
                                sa_names=list(p["sas"]) if sa_doms else None, seed=p["seed"])
    order = "ord" if p["seed"] is not None and p["mode"] == "relaxed" else "rn"
    # mondrian_sql S7: strict cuts without persons never part rows of equal codes
    p["mondrian_doms"] = doms if p["mode"] == "strict" and not p["person"] else None
    if p["mondrian_doms"]:
        _mondrian_vectors(db, p, doms, [d for d, _ in sa_doms])
    else:
        _mondrian_work(db, ds, p, doms, [d for d, _ in sa_doms], n if order == "ord" else None)
    tick()
    res = mondrian_sql.partition(db, sc, pred, n=n, mode=p["mode"], threshold=p["sql_threshold"],
                                 order=order, tick=tick, persons=bool(p["person"]), whole=p["whole"],
                                 vectors=bool(p["mondrian_doms"]))
    p["mondrian_schema"] = sc
    p["plan"] = res
    p["n_classes"] = res.n_partitions
    p["mondrian_taxes"] = taxes
    p["plan_facts"] = {"rounds": res.rounds, "kinds": kinds, "sql_levels": res.levels,
                       "largest_pull": res.largest}


def _mondrian_domains(db, p):
    """Per QI its Mondrian kind, code count, values (numeric), taxonomy, and the temp table
    value -> code the work table joins to, with the cast of the column it joins on: dense_rank
    of the distinct values, or for a hierarchy QI its leaf labels with their ranks in
    `mondrian_schema.Taxonomy` order."""
    I = db.ident
    kinds, sizes, values, taxes, doms = [], [], [], [], []
    for j, q in enumerate(p["qis"]):
        c = I(q["column"])
        dom = f"pg_temp._pganon_mdom{j}"
        h = p["hierarchies"].get(q["column"])
        if h is not None:
            tx = mondrian_schema.taxonomy(children={v: list(h.children[v]) for v in range(len(h))}, root=0)
            db.run(f"CREATE TEMP TABLE _pganon_mdom{j} ON COMMIT DROP AS "
                   f"SELECT * FROM unnest($1::text[], $2::int4[]) AS u(v, code)",
                   [[h.labels[v] for v in h.leaves], tx.code_rank[h.leaves].tolist()], ["text[]", "int4[]"])
            db.run(f"ANALYZE {dom}")
            kinds.append("taxonomy")
            sizes.append(None)
            values.append(None)
            taxes.append(tx)
            doms.append((dom, "::text"))
            continue
        numeric = q["kind"] in ("numeric", "date")
        v = c if numeric else f'{c}::text COLLATE "C"'
        db.run(f"CREATE TEMP TABLE _pganon_mdom{j} ON COMMIT DROP AS SELECT v, (dense_rank() OVER (ORDER BY v) - 1)::int4 "
               f"AS code FROM (SELECT DISTINCT {v} AS v FROM {SNAP}) x")
        db.run(f"ANALYZE {dom}")
        kinds.append("numeric" if numeric else "ordinal")
        if q["kind"] == "numeric":
            vals = db.one(f"SELECT array_agg(v::float8 ORDER BY code) AS a FROM {dom}")["a"]
            values.append(np.asarray(vals, dtype=np.float64))
            sizes.append(len(vals))
        else:
            values.append(None)
            sizes.append(int(db.one(f"SELECT count(*) AS n FROM {dom}")["n"]))
        taxes.append(None)
        doms.append((dom, "" if numeric else '::text COLLATE "C"'))
    return kinds, sizes, values, taxes, doms


def _sa_domains(db, p):
    """Per SA its value -> code temp table (dense_rank of the text) and the count of each code
    (the global histogram the privacy pre-check reads)."""
    out = []
    for i, s in enumerate(p["sas"]):
        db.run(f"CREATE TEMP TABLE _pganon_msa{i} ON COMMIT DROP AS SELECT v, (dense_rank() OVER (ORDER BY v) - 1)::int4 "
               f"AS code, n FROM (SELECT {db.ident(s)}::text COLLATE \"C\" AS v, count(*) AS n FROM {SNAP} GROUP BY 1) x")
        db.run(f"ANALYZE pg_temp._pganon_msa{i}")
        counts = db.one(f"SELECT array_agg(n ORDER BY code) AS a FROM pg_temp._pganon_msa{i}")["a"]
        out.append((f"pg_temp._pganon_msa{i}", [int(x) for x in counts]))
    return out


def _person_counts(db, p, i):
    """Per code of SA i (`_sa_domains` order) the distinct persons holding it in the table."""
    return [int(r["n"]) for r in db.rows(
        f"SELECT count(DISTINCT s.{db.ident(p['person'])}) AS n FROM {SNAP} s JOIN pg_temp._pganon_msa{i} d "
        f"ON d.v = s.{db.ident(p['sas'][i])}::text COLLATE \"C\" GROUP BY d.code ORDER BY d.code")]


def _mondrian_work(db, ds, p, doms, sa_doms, n_seeded):
    """CREATE the work table: key, rn (key order), one code per QI and SA, part 0; with
    n_seeded, the column ord: each row's place in `mondrian`'s seeded row order (S4); with a
    person column, pc: the person's code (dense rank)."""
    I = db.ident
    sel = [f"s.{I(ds.key)} AS _k", f"(row_number() OVER (ORDER BY s.{I(ds.key)}))::int4 AS rn"]
    if p["person"]:
        sel.append(f"(dense_rank() OVER (ORDER BY s.{I(p['person'])}) - 1)::int4 AS pc")
    joins = []
    for j, (dom, cast) in enumerate(doms):
        # R2: whole persons are cut by their smallest code (every record of a person alike)
        sel.append(f"min(d{j}.code) OVER (PARTITION BY s.{I(p['person'])}) AS c{j}" if p["whole"]
                   else f"d{j}.code AS c{j}")
        joins.append(f"JOIN {dom} d{j} ON d{j}.v = s.{I(p['qis'][j]['column'])}{cast}")
    for i, dom in enumerate(sa_doms):
        sel.append(f"e{i}.code AS s{i}")
        joins.append(f'JOIN {dom} e{i} ON e{i}.v = s.{I(p["sas"][i])}::text COLLATE "C"')
    body = f"SELECT {', '.join(sel)}, 0::int4 AS part FROM {SNAP} s {' '.join(joins)}"
    if n_seeded is None:
        db.run(f"CREATE TEMP TABLE {mondrian_sql.WORK[8:]} ON COMMIT DROP AS {body}")
    else:  # the same permutation `mondrian.partition` draws for a seeded run of n rows
        perm = np.random.default_rng([int(p["seed"]), 1]).permutation(n_seeded)
        place = np.empty(n_seeded, np.int64)
        place[perm] = np.arange(n_seeded)
        db.run(f"CREATE TEMP TABLE {mondrian_sql.WORK[8:]} ON COMMIT DROP AS SELECT x.*, o.ord::int4 AS ord "
               f"FROM ({body}) x JOIN unnest($1::text::int4[]) WITH ORDINALITY AS o(ord, rn) ON o.rn = x.rn",
               [pg_array(place)], ["text"])
    db.run(f"ANALYZE {mondrian_sql.WORK}")


def _code_joins(db, p, doms):
    """The joins of the snapshot `s` to the QI domain tables (d0..): each row's QI codes."""
    return " ".join(f"JOIN {dom} d{j} ON d{j}.v = s.{db.ident(p['qis'][j]['column'])}{cast}"
                    for j, (dom, cast) in enumerate(doms))


def _mondrian_vectors(db, p, doms, sa_doms):
    """CREATE `mondrian_sql.VEC`: the snapshot's distinct (QI codes, SA codes) vectors with their
    rows n, part 0 and an id vid (mondrian_sql S7)."""
    cs = [f"d{j}.code" for j in range(len(doms))] + [f"e{i}.code" for i in range(len(sa_doms))]
    names = [f"c{j}" for j in range(len(doms))] + [f"s{i}" for i in range(len(sa_doms))]
    sa = "".join(f' JOIN {dom} e{i} ON e{i}.v = s.{db.ident(p["sas"][i])}::text COLLATE "C"'
                 for i, dom in enumerate(sa_doms))
    db.run(f"CREATE TEMP TABLE {mondrian_sql.VEC[8:]} ON COMMIT DROP AS "
           f"SELECT x.*, 0::int4 AS part, (row_number() OVER ())::int4 AS vid FROM ("
           f"SELECT {', '.join(f'{c} AS {a}' for c, a in zip(cs, names))}, count(*)::int8 AS n "
           f"FROM {SNAP} s {_code_joins(db, p, doms)}{sa} GROUP BY {', '.join(cs)}) x")
    db.run(f"ANALYZE {mondrian_sql.VEC}")


def assign_mondrian(db, ds, p, rel):
    I = db.ident
    res = p["plan"]
    if p["mondrian_doms"]:  # every row takes its code vector's class (mondrian_sql S7)
        doms = p["mondrian_doms"]
        on = " AND ".join(f"x.c{j} = r.c{j}" for j in range(len(doms)))
        # numbering 'creation' keeps the map in the order the row path wrote it: (SQL part, key)
        order = "" if p.get("renumbered") else " ORDER BY x.part, r._k"
        # OFFSET 0: the rows get their codes first; joined to the code vectors earlier, the
        # product of the per-code selectivities made the planner expect one row and loop
        rows = (f"SELECT s.{I(ds.key)} AS _k, {', '.join(f'd{j}.code AS c{j}' for j in range(len(doms)))} "
                f"FROM {SNAP} s {_code_joins(db, p, doms)} OFFSET 0")
        vc = p.get("mondrian_vclass") or mondrian_sql.vector_classes(db, p["mondrian_schema"])
        db.run(f"CREATE TABLE {rel['map']} AS SELECT r._k AS {I(ds.key)}, x.class_id FROM ({rows}) r "
               f"JOIN {vc} x ON {on}{order}")
    else:
        db.run(f"CREATE TABLE {rel['map']} AS {mondrian_sql.map_select(I(ds.key))}")
    _finish_map(db, ds, rel)
    tax = [q["column"] for q in p["qis"] if q["column"] in p["hierarchies"]]
    if tax:
        idx = [j for j, q in enumerate(p["qis"]) if q["column"] in p["hierarchies"]]
        if p["whole"]:  # R2: the node covering the class's own leaves, not its persons' smallest
            cols = [_covering_nodes(db, ds, p, rel, j, res.n_partitions) for j in idx]
            nodes = list(zip(*cols))
        else:
            nodes = [tuple(int(res.nodes[j][c]) for j in idx) for c in range(res.n_partitions)]
        _class_labels(db, p, nodes, tax)


def _covering_nodes(db, ds, p, rel, j, n_classes):
    """Per class 1..n_classes, the hierarchy node id of taxonomy QI j that covers every leaf its
    records hold: the LCA of its smallest and largest leaf rank (`mondrian_schema.Taxonomy` ranks)."""
    tx = p["mondrian_taxes"][j]
    col = db.ident(p["qis"][j]["column"])
    r = db.rows(f"SELECT m.class_id, min(d.code) AS lo, max(d.code) AS hi FROM {rel['map']} m JOIN {SNAP} s "
                f"USING ({db.ident(ds.key)}) JOIN pg_temp._pganon_mdom{j} d ON d.v = s.{col}::text GROUP BY 1 ORDER BY 1")
    if len(r) != n_classes:
        raise RuntimeError(f"pganon bug: {len(r)} of {n_classes} Mondrian classes have records")
    u = tx.lca(np.array([x["lo"] for x in r], np.int64), np.array([x["hi"] for x in r], np.int64))
    return [int(tx.labels[v]) for v in u.tolist()]


# ---- GT -----------------------------------------------------------------------------------


def cell_sql(db, qis, forms, node_cols):
    """The SQL of the published QI cells of a class (shared by every family whose GT has one QI
    vector per class): per QI its aggregate over the class's rows `s` (alias r) and its cell
    expression. forms: per QI 'node' (the label from the class table n, column n<i> for the i-th
    of node_cols), 'range' (the class's [min, max] as a range type) or 'values' (its sorted
    value set)."""
    I = db.ident
    aggs, cells = [], []
    for i, (q, form) in enumerate(zip(qis, forms)):
        c = I(q["column"])
        if form == "node":
            cells.append(f"n.n{node_cols.index(q['column'])} AS {c}")
        elif form == "range":
            aggs.append(f"min(s.{c}) AS lo{i}, max(s.{c}) AS hi{i}")
            cells.append(f"{coltypes.cell(f'r.lo{i}', f'r.hi{i}', coltypes.of(q))} AS {c}")
        else:
            aggs.append(f"array_agg(DISTINCT s.{c}::text ORDER BY s.{c}::text) AS v{i}")
            cells.append(f"r.v{i} AS {c}")
    return aggs, cells


def materialize(db, ds, p, rel):
    """GT: (class_id, QI cells, SAs), one row per record, ordered by class."""
    I = db.ident
    key = I(ds.key)
    node_cols = [q["column"] for q in p["qis"] if _cell_form(p, q) == "node"]
    coltypes.refuse_top(db, SNAP, [q for q in p["qis"] if _cell_form(p, q) == "range"])
    forms = [_cell_form(p, q) for q in p["qis"]]
    aggs, cells = cell_sql(db, p["qis"], forms, node_cols)
    joins = ""
    if aggs:
        db.run("CREATE TEMP TABLE _pganon_granges ON COMMIT DROP AS " + (vector_ranges(db, p, forms) or (
            f"SELECT m.class_id, {', '.join(aggs)} FROM {rel['map']} m JOIN {SNAP} s USING ({key}) GROUP BY m.class_id")))
        joins += " JOIN pg_temp._pganon_granges r USING (class_id)"
        p["numbering_ids"] = {"class_id": ("pg_temp._pganon_granges", "class_id")}   # one row per class of the GT
    if node_cols:
        joins += f" JOIN {CLASSES} n USING (class_id)"
        if p.get("numbered"):   # else the planner hashes the rows, not the classes ('creation': as before)
            db.run(f"ANALYZE {CLASSES}")
    sas = ", ".join(f"s.{I(a)}" for a in p["sas"])
    # numbering 'random': with the random ids in the map (p["numbered"]) the GT is written once in
    # content order (as `numbering.apply` rewrites it: by every column; the QI cells are the
    # class's, so class_id and the SAs order alike), else unordered for the renumber step to
    # rewrite (p["renumbered"]); 'creation' keeps the engine's class order
    numbered = bool(p.get("numbered"))
    if numbered:
        order = f" ORDER BY m.class_id{''.join(f', s.{I(a)}' for a in p['sas'])}"
    else:
        order = "" if p.get("renumbered") else " ORDER BY m.class_id"
    db.run(f"CREATE TABLE {rel['gt']} AS SELECT m.class_id, {', '.join(cells)}, {sas} "
           f"FROM {rel['map']} m JOIN {SNAP} s USING ({key}){joins}{order}")
    if numbered or not p.get("renumbered"):   # numbering.apply analyzes the copy it makes
        db.run(f"ANALYZE {rel['gt']}")


# --------------------------------------------------------------------------------------------
# record, layout, measure
# --------------------------------------------------------------------------------------------


def recorded_params(params, p):
    out = dict(params, k=p["k"], seed=p["seed"])
    if p["kind"] == "gaa":
        out.update(metric=p["metric"], weights=p["weights"], strategy=p["strategy"], sa=p["sa"], cost_mode=p["cost_mode"],
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
        # R1, R2: what the release promises about persons, re-checked by the verifier
        **({"person": p["person"], "k_scope": "persons", "persons_whole": p["whole"]} if p["person"] else {}),
    }


def measure(db, ds, p, rel, lay, source_rows):
    I = db.ident
    terms, dom, spans = [], [], {}
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
            t = coltypes.of(q)
            dom.append(f"({coltypes.number(f'max({c})', t)} - {coltypes.number(f'min({c})', t)}) AS d{i}")
            terms.append(coltypes.width(f"g.{c}", t))   # divided by the domain's span below
            spans[i] = f"max(d.d{i})"
        else:
            dom.append(f"count(DISTINCT {c}) AS d{i}")
            terms.append(f"(CASE WHEN d.d{i} > 1 THEN (cardinality(g.{c}) - 1)::float8 / (d.d{i} - 1) ELSE 0 END)")
    # a range QI's widths are summed in SQL and divided by its domain's span here (a float8
    # division in SQL errors on underflow: a width of 1e-200 in a domain of 1e150)
    sums = ", ".join([f"sum({t}) AS a{i}" for i, t in enumerate(terms)] + [f"{x} AS s{i}" for i, x in spans.items()])
    d = f"SELECT {', '.join(dom)} FROM {SNAP}" if dom else "SELECT 1 AS one"
    r = db.one(f"WITH d AS ({d}) "
               f"SELECT count(*) AS n, {sums} FROM {rel['gt']} g CROSS JOIN d {' '.join(lc_joins)}")
    n = int(r["n"])
    def share(i):
        a = float(r[f"a{i}"] or 0)
        if i in spans:
            a = a / float(r[f"s{i}"]) if r[f"s{i}"] and r[f"s{i}"] > 0 else 0.0
        return 100.0 * a / n
    per = {q["column"]: share(i) for i, q in enumerate(p["qis"])}
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
    if p["person"]:
        per = [int(x["c"]) for x in db.rows(
            f"SELECT count(DISTINCT s.{I(p['person'])}) AS c FROM {rel['map']} m JOIN {SNAP} s USING ({I(ds.key)}) "
            f"JOIN (SELECT DISTINCT class_id, {', '.join(I(q['column']) for q in p['qis'])} FROM {rel['gt']}) g "
            f"USING (class_id) GROUP BY {', '.join('g.' + I(q['column']) for q in p['qis'])}")]
        metrics.update(persons=p["n_persons"], min_class_persons=min(per))
    if p["kind"] == "gaa":
        metrics.update(_metric_model(p))
    w = p["workload"]
    if w["queries"]:
        nodes = {q["column"]: p["hierarchies"][q["column"]] for q in p["qis"] if _cell_form(p, q) == "node"}
        metrics["query_error"] = utility.query_error(db, p["qis"], SNAP, utility.covered_view(db, p["qis"], SNAP, rel["gt"], nodes),
                                                     w["theta"], w["queries"], w["seed"])
    return metrics


def _metric_model(p):
    """Alteration (spec 001 Def. 9) under the run's metric and averaged over the seven metrics,
    and the share of generalized and root cells, from the plan (input tuples with counts and
    their class tuples)."""
    res, tuples, counts = p["plan"]["result"], p["plan"]["tuples"], p["plan"]["counts"]
    hs = [p["hierarchies"][q["column"]] for q in p["qis"]]
    original = infoloss.as_ids(hs, tuples)
    gen = res.generalized
    met = infoloss.metric(p["metric"], hs, weights=p["weights"], distortion_mode=p["distortion_mode"])
    return {"alteration": float(infoloss.alteration(met, original, gen, counts)),
            "mean_alteration": float(infoloss.mean_alteration(hs, original, gen, counts,
                                                              distortion_mode=p["distortion_mode"])),
            "p_gen": float(infoloss.p_gen(hs, original, gen, counts)),
            "p_root": float(infoloss.p_root(hs, original, gen, counts))}
