"""Anatomy (Xiao & Tao 2006; spec 003 §2.8, §6.2): a QI table with exact quasi-identifiers and a
sensitive table of l-diverse groups, one record per SA value in each group.

The pipeline is the bucketization family's (`lsl`), with Anatomy's planner in place of Xiao &
Li's: a bucket per distinct SA vector (first appearance), `anatomize.plan` on the bucket sizes,
the same FIFO assign, GT (group_id, QIs exact) and ST (group_id, SA vector, count).

Decisions:

- Y1  Several SAs form one compound value, the SA vector (spec 003 A10's reading): a group
      holds l records whose SA vectors are pairwise distinct.  That is Anatomy's guarantee on
      the vector, not per attribute; the per-attribute guarantee is `mbf`'s (Xiao & Li).
- Y2  Defaults: residue to the last-created group without the value (deterministic, spec §2.4),
      ties to the first bucket; `seed` switches both to seeded random choices.  An ineligible
      table (a vector in more than n / l records) is an error naming the vector unless
      `eligibility = 'suppress'`, which suppresses the least that makes it eligible.
- Y3  Metrics as for every bucketization release (`lsl.measure`): groups, SR, the group sizes,
      AIL (Def 14 with l per group), the NCP% a per-group generalization of the QIs would cost,
      and the query error as exact (the QIT answers QI-only queries exactly).
- Y4  Group ids in creation order by default (faithful; `order = 'compact'`, anatomize N7, keeps
      every group's values with fewer runs but pairs other rows).
- Y5  A request that would publish nothing is refused (PA005) before the plan: fewer distinct
      SA vectors than l (with eligibility 'suppress' it would suppress every row).
- Y6  Column names as for every bucketization release (`lsl` B1): a QI or SA named group_id or
      count, or a key named group_id, count or bucket, is refused at publish (PA002).
"""

from pganon_engine.core import params as P
from pganon_engine.core.errors import EngineError, unsatisfiable
from pganon_engine.core.snapshot import copy_source
from pganon_engine.methods.bucketization import family as lsl

from . import anatomize

METHODS = ("anatomy",)
PROTECTS_PERSONS = False  # counts records: refused on a dataset with a person column
PARAMS = {"l", "d", "sensitive", "tie", "seed", "residue", "eligibility", "order", "limit"} | P.WORKLOAD_PARAMS


def parse_params(method, params, ds):
    P.unknown_params(method, params, PARAMS)
    seed = P.integer(params, "seed", 0)
    sas, qis = P.sensitive_columns(params, ds), P.quasi_columns(ds)
    P.refuse_reserved(method, ds, [q["column"] for q in qis] + sas, lsl.RESERVED, lsl.KEY_RESERVED)  # Y6
    return {"method": method, "sas": sas, "qis": qis,
            "l": P.integer(params, "l", 2, default=2), "seed": seed,
            "tie": P.choice(params, "tie", anatomize.TIES, "random" if seed is not None else "first"),
            "residue": P.choice(params, "residue", anatomize.RESIDUES, "random" if seed is not None else "last"),
            "eligibility": P.choice(params, "eligibility", anatomize.ELIGIBILITY, "error"),
            "order": P.choice(params, "order", anatomize.ORDERS, "creation"),
            "limit": P.integer(params, "limit", 1), "qi_order": False, "generalize": False,
            "workload": {"theta": P.fraction(params, "theta", 0.1),
                         "queries": P.integer(params, "queries", 0, default=0), "seed": seed or 0}
            if "queries" in params else None}


def plan(db, ds, p, sizes):
    values = db.rows(f"SELECT {', '.join(db.ident(s) + '::text AS ' + db.ident(s) for s in p['sas'])} "
                     f"FROM {lsl.BUCKET} ORDER BY _pganon_bucket")
    try:
        return anatomize.plan(sizes, p["l"], tie=p["tie"], seed=p["seed"], residue=p["residue"],
                              eligibility=p["eligibility"], order=p["order"], tick=db.interruptible())
    except EngineError as exc:
        if exc.sqlstate != "PA005":
            raise
        # name the over-frequent SA vector by its values, not by its bucket index
        worst = max(range(len(sizes)), key=lambda b: sizes[b])
        vec = ", ".join(f"{s}={P.shown(values[worst][s], quote=False)}" for s in p["sas"])
        raise unsatisfiable(f"anatomy with l = {p['l']}: the sensitive vector ({vec}) occurs in {sizes[worst]} of "
                            f"{sum(sizes)} rows, more than n / l = {sum(sizes) / p['l']:.1f}",
                            hint="lower l, or publish with eligibility => 'suppress' to drop the excess") from None


def refuse_vacuous(p, sizes):
    """Y5: a group needs l distinct SA vectors, so with fewer in the table no group exists and
    the release would publish nothing (eligibility = 'suppress' would suppress every row):
    refused from the bucket counts, before the plan."""
    n, l = sum(sizes), p["l"]
    if len(sizes) < l:
        tail = (f"; eligibility suppress would leave 0 of {n} rows" if p["eligibility"] == "suppress"
                else f"; no group can be formed from its {n} rows")
        raise unsatisfiable(f"anatomy l = {l} needs {l} distinct sensitive vectors per group; the table has "
                            f"{len(sizes)}{tail}", hint=f"use l <= {len(sizes)}")


def build(db, ds, p, rel, phases):
    source_rows = phases.run("snapshot", copy_source, db, ds, p)
    sizes = phases.run("buckets", lsl.bucket_table, db, ds, p)
    p["buckets"] = len(sizes)
    refuse_vacuous(p, sizes)
    the_plan = phases.run("plan", plan, db, ds, p, sizes)
    if the_plan.n_groups == 0:   # refuse_vacuous should make this unreachable: never publish nothing
        raise unsatisfiable(f"anatomy l = {p['l']} formed no group: all {sum(sizes)} rows would be suppressed",
                            hint=f"lower l (the table has {len(sizes)} distinct sensitive vectors)")
    db.run("CREATE TEMP TABLE _pganon_bl ON COMMIT DROP AS SELECT b AS bucket, $1::int AS l "
           "FROM generate_series(0, $2 - 1) b", [p["l"], len(sizes)], ["int4", "int4"])
    phases.run("renumber", lsl.number_groups, db, p, the_plan, sizes)
    phases.run("assign", lsl.assign, db, ds, p, the_plan, rel, sizes)
    phases.run("materialize", lsl.materialize, db, ds, p, rel)
    return source_rows, the_plan.n_groups


def recorded_params(params, p):
    return dict(params, l=p["l"], tie=p["tie"], residue=p["residue"], seed=p["seed"], eligibility=p["eligibility"],
                order=p["order"])


def layout(ds, p, rel):
    return {"family": "bucketization", "model": "anatomy", "method": p["method"], "l": p["l"], "key": ds.key,
            "qis": [{"column": q["column"], "kind": q["kind"]} for q in p["qis"]], "sas": p["sas"],
            "generalized": False, "relations": {k: rel[k] for k in ("gt", "st", "map", "levels")}}


def measure(db, ds, p, rel, lay, source_rows):
    return lsl.measure(db, ds, p, rel, lay, source_rows)
