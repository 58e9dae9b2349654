"""Rating releases (Liu, Luo & Huang 2011; spec 003 §2.4, A17-A19): every published attribute,
QIs and SAs alike, is bucketized on its own into groups of at least SC_i pairwise-distinct
values; the Attribute Table (AT) links a tuple to one group per attribute, the ID Table (IDT)
lists each group's values.  An adversary links a tuple to its value of A_i with probability at
most 1 / SC_i.

Relations (admin-only map; AT and IDT exposed as <dataset>_gt and <dataset>_st):
  map  (key, tk)                          the pseudonymous tuple number of each published row
  AT   (tk, one int column per attribute) the group of the tuple's value, per attribute
  IDT  (attribute, group_id, value, count) each group's values (a multiset, one row per value)

The pipeline steps:
  snapshot     the key, QIs and SAs (`core.snapshot`)
  plan         per attribute: the value counts in first-appearance order -> `anatomize.plan`
               with size SC_i (memory ~ values + runs, never rows)
  assign       per attribute, the runs deal each value's rows (in a seeded random order, or
               FIFO in key order with tie 'first', R2) to groups, set-based (`width_bucket` over
               run starts, as `lsl._assign_fifo` does)
  materialize  AT and IDT
  measure      groups per attribute, suppression, NCP% of the QI groups

Decisions:

- R1  SC: `sc` is one integer for every attribute or an object {column: SC} (others default
      to 2, the paper's fixture value); SC = 1 publishes the attribute ungrouped (groups of one).
- R2  Random by default (issue 11): `tie = 'random'` draws a seed when none is given and records
      it, so the release is reproducible; the seed makes ties and residues random
      (`rating.plan_attributes` seeds attribute i with "seed/i") and deals each value's rows to
      its groups in a seeded random order.  With FIFO dealing into groups numbered in creation
      order, a chain attack on AT + IDT alone pins most tuples to their exact value
      (`chain_attack`).  `tie = 'first'` is the paper's deterministic variant (spec §4.7: ties to
      the first-appearing value, residues to the last-created group without the value, rows
      FIFO by key), for the fixtures only; it takes no seed.
- R3  Eligibility (A19): a value in more than n / SC_i rows makes the attribute ineligible: an
      error naming attribute and value unless `eligibility = 'suppress'`.  A row suppressed for
      one attribute is suppressed whole, which changes the other attributes' counts, so the
      first ineligible attribute is capped (`anatomize.eligibility_cap`, its last rows leave)
      and every count is taken again, until all attributes are eligible.
- R4  Group order (anatomize N7): 'creation' (default, faithful: a value's rows, FIFO, meet the
      groups in the order the algorithm makes them, which is how §4.7 pairs the tuples) or
      'compact' (the same value sets per group, fewer runs on large tables, other tuple pairs).
- R5  The engine numbers tk as the published rows' rank in key order (1..n) and groups in plan
      order; release.py then renumbers both at random unless `numbering = 'creation'`.  Nothing
      after `assign` relies on tk following the key.
- R6  Column names (issue 12): an attribute (QI or SA) named tk, the AT's own column, is refused
      at publish with PA002 (`params.refuse_reserved`), and so is a key or identifier column
      named like a column of the AT, the IDT or the map (tk, attribute, group_id, value, count).
      The IDT holds attribute names as values, so an attribute may be called attribute, group_id,
      value or count.
"""

import secrets

import numpy as np

from pganon_engine.core import params as P
from pganon_engine.core.errors import EngineError, invalid, unsatisfiable
from pganon_engine.core.plpy_adapter import pg_array
from pganon_engine.core.snapshot import SNAP, copy_source
from pganon_engine.methods.anatomy import anatomize
from pganon_engine.methods.bucketization import family as lsl

from . import rating

METHODS = ("rating",)
PROTECTS_PERSONS = False  # counts records: refused on a dataset with a person column
PARAMS = {"sc", "d", "sensitive", "seed", "tie", "eligibility", "order", "limit"} | P.WORKLOAD_PARAMS
TIES = ("random", "first")
KEEP = "pg_temp._pganon_rkeep"
MAX_ROUNDS = 200
# The AT's own column (tk, one column per attribute; the map: key, tk): an attribute named so is
# refused at publish (R6), and so is a key or identifier column named like any column of the AT,
# the IDT (attribute, group_id, value, count) or the map.  The IDT holds attribute names as
# values, so an attribute may be called "value" or "count".
RESERVED = ("tk",)
KEY_RESERVED = ("tk", "attribute", "group_id", "value", "count")


def parse_params(method, params, ds):
    P.unknown_params(method, params, PARAMS)
    qis, sas = P.quasi_columns(ds), P.sensitive_columns(params, ds)
    attrs = [q["column"] for q in qis] + sas
    P.refuse_reserved(method, ds, attrs, RESERVED, KEY_RESERVED)
    sc = params.get("sc", 2)
    if isinstance(sc, dict):
        bad = sorted(set(sc) - set(attrs))
        if bad:
            raise invalid(f"sc names {bad}, which rating does not publish", hint=f"published attributes: {attrs}")
        per = {a: P.integer({"sc": sc.get(a, 2)}, "sc", 1) for a in attrs}
    else:
        v = P.integer({"sc": sc}, "sc", 1)
        per = {a: v for a in attrs}
    tie = P.choice(params, "tie", TIES, "random")
    seed = P.integer(params, "seed", 0)
    if tie == "first" and seed is not None:
        raise invalid(f"rating: tie 'first' is the paper's deterministic order and takes no seed (seed {seed})",
                      hint="drop the seed, or drop tie => 'first' for the random order the seed drives")
    if tie == "random" and seed is None:
        seed = secrets.randbits(31)   # R2: drawn, and recorded with the release
    return {"method": method, "qis": qis, "sas": sas, "attrs": attrs, "sc": per, "seed": seed, "tie": tie,
            "eligibility": P.choice(params, "eligibility", anatomize.ELIGIBILITY, "error"),
            "order": P.choice(params, "order", anatomize.ORDERS, "creation"),
            "limit": P.integer(params, "limit", 1)}


def _counts(db, p, col):
    """(values in first-appearance order, their row counts) of one attribute over the kept rows."""
    I = db.ident
    rows = db.rows(f"SELECT s.{I(col)}::text AS v, count(*) AS n FROM {SNAP} s JOIN {KEEP} k USING (_pganon_k) "
                   f"GROUP BY 1 ORDER BY min(s._pganon_k)")
    return [r["v"] for r in rows], [int(r["n"]) for r in rows]


def plan(db, ds, p):
    """`rating.plan_attributes` on the value counts of the kept rows; with eligibility 'suppress'
    the first ineligible attribute's excess rows are suppressed whole and every count is taken
    again, until all attributes are eligible (R3)."""
    I = db.ident
    db.run(f"ALTER TABLE {SNAP} ADD COLUMN _pganon_k bigint")
    db.run(f"UPDATE {SNAP} s SET _pganon_k = x.r FROM (SELECT {I(ds.key)} AS key, row_number() OVER (ORDER BY "
           f"{I(ds.key)}) AS r FROM {SNAP}) x WHERE s.{I(ds.key)} = x.key")
    db.run(f"CREATE TEMP TABLE _pganon_rkeep ON COMMIT DROP AS SELECT _pganon_k FROM {SNAP}")
    tick = db.interruptible()
    for _ in range(MAX_ROUNDS):
        counts = {col: _counts(db, p, col) for col in p["attrs"]}
        over = None
        for col in p["attrs"]:
            values, sizes = counts[col]
            cap = anatomize.eligibility_cap(sizes, p["sc"][col])
            if max(sizes, default=0) > cap:
                over = (col, values, sizes, cap)
                break
        if over is None:
            try:
                attrs = rating.plan_attributes([counts[c][1] for c in p["attrs"]], [p["sc"][c] for c in p["attrs"]],
                                               names=p["attrs"], tie=p["tie"],
                                               residue="random" if p["tie"] == "random" else "last", seed=p["seed"],
                                               order=p["order"], tick=tick)
            except EngineError as exc:
                raise unsatisfiable(f"rating: {exc}", hint="lower the SC values") from None
            return {c: (counts[c][0], counts[c][1], a.plan) for c, a in zip(p["attrs"], attrs)}
        col, values, sizes, cap = over
        if p["eligibility"] == "error":
            worst = max(range(len(sizes)), key=lambda b: sizes[b])
            raise unsatisfiable(f"rating: {col} = {P.shown(values[worst])} occurs in {sizes[worst]} of {sum(sizes)} rows, "
                                f"more than n / SC = {sum(sizes) / p['sc'][col]:.1f} (SC = {p['sc'][col]})",
                                hint="lower its SC (sc => {\"" + col + "\": ...}), or publish with eligibility => "
                                     "'suppress'")
        # the rows of each over-frequent value past the cap (FIFO) leave, whole tuples
        over_values = [v for v, n in zip(values, sizes) if n > cap]
        db.run(f"DELETE FROM {KEEP} k USING (SELECT _pganon_k FROM (SELECT s._pganon_k, row_number() OVER "
               f"(PARTITION BY s.{I(col)} ORDER BY s._pganon_k) AS r FROM {SNAP} s JOIN {KEEP} USING (_pganon_k) "
               f"WHERE s.{I(col)}::text = ANY($1)) x WHERE x.r > $2) d WHERE k._pganon_k = d._pganon_k",
               [over_values, cap], ["text[]", "int8"])
        tick()
    raise unsatisfiable(f"rating: suppression did not settle in {MAX_ROUNDS} rounds", hint="lower the SC values")


def assign(db, ds, p, plans, rel):
    """The map (key, tk) and one group per (tuple, attribute), set-based per attribute."""
    I = db.ident
    db.run(f"CREATE TABLE {rel['map']} AS SELECT s.{I(ds.key)}, (row_number() OVER (ORDER BY s._pganon_k))::int AS tk, "
           f"s._pganon_k FROM {SNAP} s JOIN {KEEP} USING (_pganon_k)")
    db.run(f"ALTER TABLE {rel['map']} ADD PRIMARY KEY ({I(ds.key)})")
    db.run("CREATE TEMP TABLE _pganon_rgroup (attr int, tk int, g int) ON COMMIT DROP")
    # R2: a value's rows meet its groups in a seeded random order (the key breaks hash ties), or FIFO
    order = (f"hashtext(s._pganon_k::text || ':' || {int(p['seed'])}), s._pganon_k" if p["tie"] == "random"
             else "s._pganon_k")
    for a, col in enumerate(p["attrs"]):
        values, sizes, pl = plans[col]
        if pl is None:  # SC = 1: every tuple is a group of its own
            db.run(f"INSERT INTO pg_temp._pganon_rgroup SELECT {a}, tk, tk - 1 FROM {rel['map']}")
            continue
        rb, rs, rg, rc = lsl.run_columns(pl)
        offsets = np.cumsum(np.asarray(sizes, dtype=np.int64)) - np.asarray(sizes, dtype=np.int64)
        start = offsets[rb] + rs
        o = np.argsort(start, kind="stable")
        db.run("INSERT INTO pg_temp._pganon_rgroup "
               "WITH r AS MATERIALIZED (SELECT $1::text::int4[] AS s, $2::text::int4[] AS g, $3::text::int4[] AS c), "
               "     v AS (SELECT * FROM unnest($4::text[]) WITH ORDINALITY AS u(v, b)), "
               f"    x AS (SELECT m.tk, (v.b - 1 + 0)::int AS b, (row_number() OVER (PARTITION BY v.b ORDER BY {order}) - 1)::int AS o "
               f"          FROM {rel['map']} m JOIN {SNAP} s USING (_pganon_k) JOIN v ON v.v = s.{I(col)}::text) "
               f"SELECT {a}, x.tk, (r.g[w.i] + (off.o + x.o - r.s[w.i]))::int "
               "FROM r, x JOIN (SELECT b - 1 AS b, o FROM unnest($5::text::int8[]) WITH ORDINALITY AS t(o, b)) off ON off.b = x.b, "
               "LATERAL (SELECT width_bucket((off.o + x.o)::int, r.s)) AS w(i) "
               "WHERE w.i > 0 AND off.o + x.o < r.s[w.i] + r.c[w.i]",
               [pg_array(start[o]), pg_array(rg[o]), pg_array(rc[o]), values, pg_array(offsets)],
               ["text", "text", "text", "text[]", "text"])
    db.run("ANALYZE pg_temp._pganon_rgroup")


def materialize(db, ds, p, rel):
    """The ID table (gt) and the attribute tables (st); unordered and not analyzed with
    p["renumbered"] (numbering 'random' rewrites and analyzes them in content order)."""
    I = db.ident
    renumbered = p.get("renumbered", False)
    cols = ", ".join(f"max(g) FILTER (WHERE attr = {a}) AS {I(c)}" for a, c in enumerate(p["attrs"]))
    db.run(f"CREATE TABLE {rel['gt']} AS SELECT tk, {cols} FROM pg_temp._pganon_rgroup GROUP BY tk"
           + ("" if renumbered else " ORDER BY tk"))
    parts = [f"SELECT {db.literal(c)}::text AS attribute, g.g AS group_id, s.{I(c)}::text AS value "
             f"FROM pg_temp._pganon_rgroup g JOIN {rel['map']} m USING (tk) JOIN {SNAP} s USING (_pganon_k) "
             f"WHERE g.attr = {a}" for a, c in enumerate(p["attrs"])]
    db.run(f"CREATE TABLE {rel['st']} AS SELECT attribute, group_id, value, count(*)::int AS count "
           f"FROM ({' UNION ALL '.join(parts)}) x GROUP BY 1, 2, 3" + ("" if renumbered else " ORDER BY 1, 2, 3"))
    db.run(f"ALTER TABLE {rel['map']} DROP COLUMN _pganon_k")
    for r in ("map",) if renumbered else ("gt", "st", "map"):
        db.run(f"ANALYZE {rel[r]}")


def build(db, ds, p, rel, phases):
    source_rows = phases.run("snapshot", copy_source, db, ds, p)
    plans = phases.run("plan", plan, db, ds, p)
    phases.run("assign", assign, db, ds, p, plans, rel)
    phases.run("materialize", materialize, db, ds, p, rel)
    published = db.one(f"SELECT count(*) AS n FROM {rel['map']}")["n"]
    p["groups_per_attribute"] = {c: plans[c][2].n_groups if plans[c][2] is not None else published for c in p["attrs"]}
    return source_rows, max(p["groups_per_attribute"].values())


def recorded_params(params, p):
    return dict(params, sc=p["sc"], seed=p["seed"], tie=p["tie"], eligibility=p["eligibility"], order=p["order"])


def layout(ds, p, rel):
    return {"family": "rating", "model": "rating", "method": p["method"], "key": ds.key,
            "qis": [{"column": q["column"], "kind": q["kind"]} for q in p["qis"]], "sas": p["sas"],
            "sc": p["sc"], "relations": {k: rel[k] for k in ("gt", "st", "map")}}


def measure(db, ds, p, rel, lay, source_rows):
    """Groups per attribute, suppression and NCP% of the QI groups (a numeric group's value span
    over the domain's, a categorical group's distinct values over the domain's; 0 for one value)."""
    I = db.ident
    published = db.one(f"SELECT count(*) AS n FROM {rel['map']}")["n"]
    terms = []
    for q in p["qis"]:
        c = q["column"]
        if q["kind"] in ("numeric",):
            dom = f"(SELECT max({I(c)}::float8) - min({I(c)}::float8) FROM {SNAP})"
            span = "(max(value::float8) - min(value::float8))"
        else:
            dom = f"(SELECT count(DISTINCT {I(c)}) FROM {SNAP})::float8"
            span = "CASE WHEN count(*) > 1 THEN count(*) ELSE 0 END"
        terms.append(f"SELECT sum(n * CASE WHEN d > 0 THEN s / d ELSE 0 END) AS t FROM (SELECT sum(count) AS n, "
                     f"{span}::float8 AS s, {dom} AS d FROM {rel['st']} WHERE attribute = {db.literal(c)} "
                     f"GROUP BY group_id) x")
    total = sum(float(db.one(t)["t"] or 0) for t in terms)
    ncp = 100.0 * total / (published * len(p["qis"])) if published and p["qis"] else 0.0
    return {"published_rows": published, "suppressed_rows": source_rows - published,
            "sr": (source_rows - published) / source_rows, "ncp_percent": ncp,
            "groups_per_attribute": p["groups_per_attribute"], "sc": p["sc"]}
