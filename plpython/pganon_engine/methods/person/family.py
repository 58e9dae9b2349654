"""Person-aware releases (issue 5): DAnonyIR and GeneIR under the identity-reserved models of
spec 002, and 1:M-generalization under (k,l)-diversity (spec 003 §2.1).

Why a family of its own: when one person owns several records, the unit that moves between
classes is the person, not the record, and the release must keep a person's records linked
through a pseudonym (Id_num) without publishing who the person is.  So every step here works
per person: a person's records share one class and one Id_num, and a suppressed person is
suppressed whole.

The pipeline steps for this family:
  snapshot     `core.snapshot` with the person column added to the copied columns (NULL and key
               checks included); then a GROUP BY person refuses persons whose QIs differ
               (PA004, up to 10 listed) and gives the engine one row per person: QI values and
               the SA values of her records (danonyir, geneir) or her distinct SA values (one_m)
  plan         `danonyir.danonyir`, `geneir.geneir` (taxonomies from `hierarchy_store.load`,
               one per QI) or `one_m.one_m_generalization` (SA taxonomy: the hierarchy declared
               on the SA column; categorical QIs with a hierarchy are cut by it)
  assign       the map (key, person, class_id, id_num) in one INSERT ... SELECT FROM unnest;
               admin-only like every pganon_data relation
  materialize  GT: danonyir/geneir one row per record (class_id, id_num, QI cells, SA);
               one_m one row per person (class_id, id_num, QI cells, generalized SA set text[]).
               Cells: numeric QIs the class's [min, max] as a range type, categorical QIs the
               class's sorted distinct values (text[]), hierarchy QIs the engine's node label
               (geneir: every QI; one_m: categorical QIs with a declared hierarchy)
  measure      danonyir/geneir: NLoss (Eq. 15), the vulnerable-class share v (spec 002 §2.16),
               classes, persons, and the relative error of query answering (§2.15, Eq. 19;
               `ir_metrics.query_error`: `queries` seeded COUNT queries on the SA and `lambda`
               random QIs at selectivity `theta`, stored as metrics.query_error like every
               family's query error; queries = 0 switches it off); one_m: QID-NCP% and SA-NCP%,
               classes, persons (Eq. 19 estimates from record cells; a 1:M GT publishes
               generalized SA sets per person, for which spec 003 gives no estimator)

Decisions:

- P1  Id_num: the published persons numbered 1..n in first-appearance order (smallest key of
      their records), renumbered in every release and dense (suppressed persons take no
      number); the mapping Id_num -> person lives only in the admin-only map.
- P2  Person ids reach the engine as text (the column cast to text), so `seeds` (pinned DAnonyIR
      seeds) are given as person ids and compared as text.
- P3  One SA: the first declared, or `sensitive` (a list of one column).
- P4  A date or timestamp QI is published as a value set (categorical); numeric QIs of an integer
      type reach the engine as integers, others as float8, except in geneir: there as the exact
      rational of their text (a Fraction), which is what its hierarchy's leaf labels stand for
      (a float8 0.1 is no leaf "0.1").
- P5  Ties and seeds are the engines' (danonyir D2/D3, geneir G2, one_m O10); `seed` switches
      to their seeded tie-breaking, reproducibly.
- P6  Column names (issue 12): a QI, SA, key, person or identifier column named class_id or
      id_num (the GT's and the map's own columns) is refused at publish with PA002
      (`params.refuse_reserved`); any other name publishes.
"""

import json
from fractions import Fraction

from pganon_engine.core import coltypes, params as P
from pganon_engine.core.errors import bad_data, incomplete, invalid, unsatisfiable
from pganon_engine.core.interrupts import ticking
from pganon_engine.core.plpy_adapter import drop_temp
from pganon_engine.core.snapshot import SNAP, copy_source
from pganon_engine.hierarchy import store as hierarchy_store
from pganon_engine.methods.generalization import family as generalized
from pganon_engine.metrics import ir_metrics
from pganon_engine.models import ir_models

from . import danonyir as danonyir_engine, geneir as geneir_engine, one_m as one_m_engine

METHODS = ("danonyir", "geneir", "one_m_generalization")
PROTECTS_PERSONS = True  # every step works per person: one class and one Id_num per person
MODEL_PARAMS = {"model", "k", "l", "alpha", "beta"}
WORKLOAD_PARAMS = P.WORKLOAD_PARAMS | {"lambda"}
PARAMS = {"danonyir": MODEL_PARAMS | WORKLOAD_PARAMS | {"seed", "seeds", "sensitive", "domains"},
          "geneir": MODEL_PARAMS | WORKLOAD_PARAMS | {"seed", "order", "sensitive", "domains"},
          "one_m_generalization": {"k", "l", "seed", "mode", "sensitive"}}
CLASSES = "pg_temp._pganon_pclasses"
# The release format's own columns (GT: class_id, id_num, QI cells, SA; the map: key, person,
# class_id, id_num): a QI, SA, key, person or identifier column of such a name is refused at
# publish (P6).
RESERVED = ("class_id", "id_num")
_SHOWN = P.SHOWN_VALUES  # offending persons listed in an error


def parse_params(method, params, ds):
    P.unknown_params(method, params, PARAMS[method])
    if not ds.person:
        raise incomplete(f"dataset {ds.name} has no person column, which {method} needs",
                         hint="register it again with pganon.register_dataset(name, source, key_column, "
                              "person_column => 'your person id column')")
    sas = P.sensitive_columns(params, ds)
    if "sensitive" in params and len(sas) != 1:
        raise invalid(f"{method} publishes one sensitive attribute; parameter sensitive lists {sas}",
                      hint="give one column, e.g. sensitive => [\"disease\"]")
    qis = P.quasi_columns(ds)
    taken = {ds.key} | {q["column"] for q in qis} | {sas[0]}
    if ds.person in taken:
        raise invalid(f'the person column "{ds.person}" is also the key, a QI or the SA of dataset {ds.name}',
                      hint="the person column must be a column of its own")
    P.refuse_reserved(method, ds, [q["column"] for q in qis] + sas[:1], RESERVED, RESERVED)
    p = {"method": method, "sas": sas[:1], "sa": sas[0], "qis": qis, "seed": P.integer(params, "seed", 0),
         "limit": None}
    if method == "one_m_generalization":
        p.update(k=P.integer(params, "k", 1, default=10), l=P.integer(params, "l", 1, default=5),
                 mode=P.choice(params, "mode", ("strict", "relaxed"), "strict"))
        return p
    model = params.get("model")
    if model not in ir_models.MODELS:
        raise invalid(f"{method} needs the parameter model, one of {sorted(ir_models.MODELS)}, not {model!r}",
                      hint='e.g. {"model": "el", "l": 3} or {"model": "ab", "alpha": 0.5, "beta": 0.5}')
    given = {x: params[x] for x in ("k", "l", "alpha", "beta") if x in params}
    extra = sorted(set(given) - set(ir_models.MODELS[model]) - ({"k"} if model == "kl" else set()))
    if extra:
        raise invalid(f"model {model} does not take {extra}", hint=f"it takes {list(ir_models.MODELS[model])}")
    p.update(model=model, model_params=ir_models.parse_params(model, given),
             domains=_domains(params.get("domains"), qis), workload=P.workload(params),
             lam=P.integer(params, "lambda", 1, default=1))
    if p["lam"] > len(qis):
        raise invalid(f"parameter lambda = {p['lam']} is larger than the {len(qis)} QIs of dataset {ds.name}",
                      hint=f"lambda is the number of QIs a query constrains besides the SA: 1..{len(qis)}")
    if method == "danonyir":
        seeds = params.get("seeds", [])
        if not isinstance(seeds, list) or any(isinstance(s, (bool, dict, list)) or s is None for s in seeds):
            raise invalid("parameter seeds must be a list of person ids", hint='e.g. "seeds": ["Ella", "Tim"]')
        p["seeds"] = [str(s) for s in seeds]
    else:
        order = params.get("order", [])
        if not isinstance(order, list) or not all(isinstance(a, str) for a in order):
            raise invalid("parameter order must be a list of QI names", hint='e.g. "order": ["age", "postcode"]')
        p["order"] = order
    return p


def _domains(spec, qis):
    if spec is None:
        return None
    names = [q["column"] for q in qis]
    if not isinstance(spec, dict) or set(spec) - set(names):
        raise invalid(f"parameter domains must map QIs {names} to [lo, hi] or a list of values",
                      hint='e.g. {"age": [30, 39]}')
    return spec


# --------------------------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------------------------


def build(db, ds, p, rel, phases):
    """snapshot -> plan -> assign -> materialize; returns (source rows, classes)."""
    source_rows = phases.run("snapshot", snapshot, db, ds, p)
    persons = phases.run("group", group_persons, db, ds, p)
    phases.run("plan", plan, db, ds, p, persons)
    phases.run("assign", assign, db, ds, p, rel)
    phases.run("materialize", materialize, db, ds, p, rel)
    return source_rows, p["n_classes"]


def snapshot(db, ds, p):
    """`core.snapshot` of key, QIs, SA and the person column (a pseudo-QI for the copy only)."""
    return copy_source(db, ds, {"qis": p["qis"] + [{"column": ds.person}], "sas": p["sas"], "limit": None})


def _kind(q):
    return "numeric" if q["kind"] == "numeric" else "categorical"


def _qi_select(db, q, j, exact):
    c = db.ident(q["column"])
    if q["kind"] == "numeric":
        if q["type"] in coltypes.INTEGERS:
            return f"min({c}) AS q{j}"
        # P4: geneir finds each value among its hierarchy's leaves, labelled with the column's text
        return f"min({c})::text AS q{j}" if exact else f"min({c})::float8 AS q{j}"
    return f"min({c}::text) AS q{j}"


def group_persons(db, ds, p):
    """One row per person in first-appearance order: (person id, QI values, SA values), after
    refusing persons whose records disagree on a QI."""
    I = db.ident
    per = I(ds.person)
    differ = " OR ".join(f"count(DISTINCT {I(q['column'])}) > 1" for q in p["qis"])
    bad = db.rows(f"SELECT {per}::text AS pid, count(*) OVER () AS n FROM {SNAP} GROUP BY {per} "
                  f"HAVING {differ} ORDER BY min({I(ds.key)}) LIMIT {_SHOWN}")
    if bad:
        shown = P.shown_values([r["pid"] for r in bad], bad[0]["n"])
        varying = [q["column"] for q in p["qis"]]
        raise bad_data(f"{bad[0]['n']} person(s) have records with different QI values {varying}: {shown}",
                       hint=f"{p['method']} needs one QI vector per person; fix the data, or publish from a "
                            "view that drops the QIs that vary")
    qsel = ", ".join(_qi_select(db, q, j, p["method"] == "geneir") for j, q in enumerate(p["qis"]))
    sa = I(p["sa"])
    agg = (f"array_agg(DISTINCT {sa}::text) AS sas" if p["method"] == "one_m_generalization"
           else f"array_agg({sa}::text ORDER BY {I(ds.key)}) AS sas")
    rows = db.rows(f"SELECT {per}::text AS pid, {qsel}, {agg} FROM {SNAP} GROUP BY {per} ORDER BY min({I(ds.key)})")
    m = len(p["qis"])
    exact = [j for j, q in enumerate(p["qis"]) if p["method"] == "geneir" and q["kind"] == "numeric"
             and q["type"] not in coltypes.INTEGERS]
    for r in rows:   # P4: the exact rational of the value's text
        for j in exact:
            r[f"q{j}"] = Fraction(r[f"q{j}"])
    return [(r["pid"], tuple(r[f"q{j}"] for j in range(m)), list(r["sas"])) for r in rows]


def plan(db, ds, p, persons):
    qis = [q["column"] for q in p["qis"]]
    kinds = [_kind(q) for q in p["qis"]]
    p["persons"] = persons
    if p["method"] == "one_m_generalization":
        _plan_one_m(db, ds, p, persons, qis, kinds)
        return
    tick = db.interruptible()
    if p["method"] == "danonyir":
        with ticking(tick):
            res = danonyir_engine.danonyir(persons, qis, p["model"], p["model_params"], kinds=kinds,
                                           domains=p["domains"], seed=p["seed"], seeds=p["seeds"], tick=tick)
    else:
        taxes = {c: hierarchy_store.load(db, ds, c) for c in qis}
        with ticking(tick):
            res = geneir_engine.geneir(persons, qis, taxes, p["model"], p["model_params"], kinds=kinds,
                                       domains=p["domains"], seed=p["seed"], order=p["order"], tick=tick)
    if not res.classes:
        raise unsatisfiable(f"{p['method']} could not form any class satisfying {p['model']} "
                            f"{json.dumps(_floats(p['model_params']))} on {len(persons)} persons",
                            hint="lower l (or k, or raise alpha/beta), or publish more persons")
    p["result"] = res
    p["n_classes"] = len(res.classes)
    cls = {c.ec: c for c in res.classes}
    published = [(pid, ec) for pid, ec in zip(res.ids, res.ec) if ec is not None]
    p["assign"] = ([pid for pid, _ in published], [ec for _, ec in published],
                   list(range(1, len(published) + 1)))
    if p["method"] == "geneir":
        p["labels"] = {c: [cls[g].labels[j] for g in sorted(cls)] for j, c in enumerate(qis)}


def _plan_one_m(db, ds, p, persons, qis, kinds):
    h = hierarchy_store.load(db, ds, p["sa"])
    declared = {r["c"] for r in db.rows("SELECT column_name::text AS c FROM pganon.hierarchy WHERE dataset_id = $1",
                                        [ds.id], ["int4"])}
    hier = {c: hierarchy_store.load(db, ds, c) for c, k in zip(qis, kinds) if k == "categorical" and c in declared}
    res = one_m_engine.one_m_generalization({c: [x[1][j] for x in persons] for j, c in enumerate(qis)},
                                            [x[2] for x in persons], h, k=p["k"], l=p["l"],
                                            kinds=dict(zip(qis, kinds)), hierarchies=hier, mode=p["mode"],
                                            seed=p["seed"])
    p["result"] = res
    p["n_classes"] = res.n_classes
    p["assign"] = ([x[0] for x in persons], [int(c) + 1 for c in res.class_id.tolist()],
                   list(range(1, len(persons) + 1)))
    p["labels"] = {c: [res.cells[g][j] for g in range(res.n_classes)] for j, c in enumerate(qis) if c in hier}
    p["fingerprints"] = res.fingerprint.tolist()
    p["gen_sets"] = [json.dumps(list(x)) for x in res.sets.labels]


def _floats(d):
    return {x: float(v) if not isinstance(v, int) else v for x, v in d.items()}


def _cell_form(p, q):
    """How a QI is published: 'node' (hierarchy label), 'range' or 'values' (value set)."""
    if p["method"] == "geneir" or q["column"] in p.get("labels", {}):
        return "node"
    return "range" if q["kind"] == "numeric" else "values"


def assign(db, ds, p, rel):
    """The map (key, person, class_id, id_num): every record of a published person."""
    I = db.ident
    pids, ecs, nums = p["assign"]
    db.run(f"CREATE TABLE {rel['map']} AS SELECT s.{I(ds.key)}, s.{I(ds.person)}, c.class_id, c.id_num "
           f"FROM {SNAP} s JOIN unnest($1::text[], $2::int4[], $3::int4[]) AS c(pid, class_id, id_num) "
           f"ON s.{I(ds.person)}::text = c.pid", [pids, ecs, nums], ["text[]", "int4[]", "int4[]"])
    db.run(f"ALTER TABLE {rel['map']} ADD PRIMARY KEY ({I(ds.key)})")
    db.run(f"ANALYZE {rel['map']}")
    labels = p.get("labels", {})
    if labels:
        cols = list(labels)
        drop_temp(db, "pg_temp._pganon_pclasses")
        db.run("CREATE TEMP TABLE _pganon_pclasses ON COMMIT DROP AS SELECT * FROM unnest($1::int4[]"
               + "".join(f", ${j + 2}::text[]" for j in range(len(cols))) + ") AS u(class_id"
               + "".join(f", n{j}" for j in range(len(cols))) + ")",
               [list(range(1, p["n_classes"] + 1))] + [[str(x) for x in labels[c]] for c in cols],
               ["int4[]"] + ["text[]"] * len(cols))


def materialize(db, ds, p, rel):
    """The GT; unordered and not analyzed with p["renumbered"] (numbering 'random' rewrites and
    analyzes it in content order)."""
    I = db.ident
    key = I(ds.key)
    renumbered = p.get("renumbered", False)
    node_cols = list(p.get("labels", {}))
    coltypes.refuse_top(db, SNAP, [q for q in p["qis"] if _cell_form(p, q) == "range"])
    aggs, cells = generalized.cell_sql(db, p["qis"], [_cell_form(p, q) for q in p["qis"]], node_cols)
    drop_temp(db, "pg_temp._pganon_pranges")
    db.run(f"CREATE TEMP TABLE _pganon_pranges ON COMMIT DROP AS SELECT m.class_id{''.join(', ' + a for a in aggs)} "
           f"FROM {rel['map']} m JOIN {SNAP} s USING ({key}) GROUP BY m.class_id")
    db.run("ANALYZE pg_temp._pganon_pranges")  # row estimates for the joins below (hash, not nested loops)
    joins = " JOIN pg_temp._pganon_pranges r USING (class_id)"
    if node_cols:
        joins += f" JOIN {CLASSES} n USING (class_id)"
    if p["method"] == "one_m_generalization":
        sa = I(p["sa"])
        drop_temp(db, "pg_temp._pganon_psets")
        pids = p["assign"][0]
        db.run("CREATE TEMP TABLE _pganon_psets ON COMMIT DROP AS SELECT u.pid, "
               "ARRAY(SELECT jsonb_array_elements_text(g.s::jsonb)) AS gen "
               "FROM unnest($1::text[], $2::int4[]) AS u(pid, f) "
               "JOIN unnest($3::text[]) WITH ORDINALITY AS g(s, f1) ON g.f1 = u.f + 1",
               [pids, p["fingerprints"], p["gen_sets"]], ["text[]", "int4[]", "text[]"])
        db.run("ANALYZE pg_temp._pganon_psets")
        order = "" if renumbered else " ORDER BY m.class_id, m.id_num"
        db.run(f"CREATE TABLE {rel['gt']} AS SELECT m.class_id, m.id_num, {', '.join(cells)}, g.gen AS {sa} "
               f"FROM (SELECT DISTINCT class_id, id_num, {I(ds.person)}::text AS pid FROM {rel['map']}) m"
               f"{joins} JOIN pg_temp._pganon_psets g USING (pid){order}")
    else:
        order = "" if renumbered else f" ORDER BY m.class_id, m.id_num, m.{key}"
        db.run(f"CREATE TABLE {rel['gt']} AS SELECT m.class_id, m.id_num, {', '.join(cells)}, s.{I(p['sa'])} "
               f"FROM {rel['map']} m JOIN {SNAP} s USING ({key}){joins}{order}")
    if not renumbered:
        db.run(f"ANALYZE {rel['gt']}")


# --------------------------------------------------------------------------------------------
# record, layout, measure
# --------------------------------------------------------------------------------------------


def recorded_params(params, p):
    out = dict(params, seed=p["seed"])
    if p["method"] == "one_m_generalization":
        out.update(k=p["k"], l=p["l"], mode=p["mode"])
    else:
        out.update(model=p["model"], **_floats(p["model_params"]))
        # the seeds / order the engine used, as parameters its method takes (publishing again with
        # the recorded parameters gives the same release); the tie rule follows from the seed
        info = p["result"].release_info()
        out.update({"seeds": info["seeds"]} if p["method"] == "danonyir" else {"order": info["order"]})
    return out


def layout(ds, p, rel):
    lay = {
        "family": "person",
        "method": p["method"],
        "key": ds.key,
        "person": ds.person,
        "qis": [{"column": q["column"], "kind": q["kind"], "form": _cell_form(p, q)} for q in p["qis"]],
        "sas": p["sas"],
        "gt_group": "class_id",
        "gt_rows": "person" if p["method"] == "one_m_generalization" else "record",
        "relations": {x: rel[x] for x in ("gt", "map")},
    }
    if p["method"] == "one_m_generalization":
        lay.update(model="kl_diversity", k=p["k"], l=p["l"])
    else:
        lay.update(model=p["model"], **_floats(p["model_params"]))
    return lay


def measure(db, ds, p, rel, lay, source_rows):
    res = p["result"]
    n_pub = int(db.one(f"SELECT count(*) AS n FROM {rel['map']}")["n"])
    persons = len(p["assign"][0])
    out = {"classes": p["n_classes"], "persons": persons, "suppressed_persons": len(p["persons"]) - persons,
           "published_rows": n_pub, "suppressed_rows": source_rows - n_pub}
    if p["method"] == "one_m_generalization":
        out.update(qid_ncp_percent=res.qid_ncp, qid_ncp_by_attribute=res.qid_ncp_per_qi, sa_ncp_percent=res.sa_ncp,
                   min_class_persons=int(res.class_sizes.min()), sa_buckets=int(res.sets.bucket_sizes.size),
                   partition_splits=int(res.sets.splits))
        return out
    with ticking(db.interruptible()):
        vul = ir_models.vulnerability(res.sa_classes(p["persons"]), p["model"], p["model_params"])
    out.update(nloss=float(res.nloss), loss=float(res.loss), v=float(vul.share),
               vulnerable_classes=vul.n_vulnerable)
    w = p["workload"]
    if w["queries"]:
        out["query_error"] = ir_metrics.query_error(p["persons"], res, p["sa"], lam=p["lam"], n=w["queries"],
                                                    theta=w["theta"], seed=w["seed"])
    return out
