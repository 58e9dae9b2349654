"""Bucketization releases of Xiao & Li (spec 000): L_sl-diversity (MSLF variants) and the
l-diversity baselines MBF, MSDCF, MMDCF.

The pipeline steps for this family, each set-based except `plan`:
  snapshot     source columns -> temp table; NULL / empty / duplicate-key checks (core.snapshot)
  buckets      one row per distinct SA vector (first-appearance order = min key), codes, levels
  plan         bucketize.plan() on bucket counts only (memory ~ buckets + plan runs, not rows)
  assign       runs -> (key, group_id) by matching each row's rank inside its bucket; the ST's
               (group, bucket, count) rows computed from the same runs (`st_counts`)
  materialize  GT (group_id, QIs exact or generalized per group; spec §4.2's QIT), ST
               (group_id, SA vector, count; from those rows, or with qi_order an aggregate
               over the map), and the level table (the l promised per value)
  measure      AIL, SR (Defs 14-15), NCP of the per-group generalized QIs (spec 004 §4.1)

min_group m (default 2; 1 is the paper's setting, needed to reproduce its fixtures and claims).
The paper lets a group whose values are all of level 0 (l0 = 1) hold one row, publishing that
row's exact QIs beside its whole SA vector. With min_group m every group has at least m rows and
no SA vector fills more than 1/m of its group (a floor on the size alone is not enough: two rows
with one vector expose it), so an attacker who finds the target's row by its exact QIs is never
more than 1/m sure of its whole vector. Values keep the l of their level: a value of level >= 1
stays within 1/l of its group, and a level-0 value may still fill its group (attacker
confidence 1.0 on that value, by declaration, whatever m). The per-value reading (every value
within 1/m) is the DBA's to ask for, by raising l0 with pganon.set_level_l; as the default it
suppressed 47-98 % of the rows of Adult (d >= 4) and NMES (d = 3), where one level-0 value
holds most rows; the vector bound suppressed none there. The planner takes m (bucketize
A18: buckets shielded like values with l = m, and the MSLF group size the smallest the buckets
can fill); the baselines' single l, when derived from the levels, is raised to m (an explicit l
below m is refused), which bounds every vector already. min_group is recorded in params and in
the layout (with the l per level: the promise), and the verifier checks it (check min_group)
and each value's l from the catalog, never from this module's level table.

Impossible requests are refused before the plan (`bucketize.blocked_dimension`): in a group every
value holds at most |G| / l of it, so the shares 1/l of one SA's values must add up to >= 1 (e.g.
l = 9 with 5 distinct values can never publish a row), and there must be m distinct SA vectors.
A plan with no group at all (the greedy found none) is refused too, before anything is assigned.
AIL keeps Def 14's l (that of the group's highest level), so the cost of min_group shows in it.

Decisions:

- B1  Column names (issue 12): a QI or SA named group_id or count, or a key or identifier column
      named group_id, count or bucket (the map's column), is refused at publish with PA002
      (`params.refuse_reserved`): the GT (group_id, QIs) and ST (group_id, SAs, count) are the
      format analysts query, and a second "group_id" or "count" could not be told apart.  Any
      other name publishes, braces included (no SQL here is built with str.format); the work
      tables' own columns are named _pganon..., a prefix no declared column may have.
"""

from fractions import Fraction

import numpy as np

from pganon_engine.core import coltypes, numbering, params as P
from pganon_engine.core.errors import EngineError, incomplete, invalid, unsatisfiable
from pganon_engine.core.plpy_adapter import drop_temp, pg_array
from pganon_engine.core.snapshot import SNAP, copy_source
from pganon_engine.metrics import utility

from . import bucketize

METHODS = {
    "mbf": ("mbf", False), "msdcf": ("msdcf", False), "mmdcf": ("mmdcf", False),
    "mbf_mslf": ("mbf", True), "msdcf_mslf": ("msdcf", True), "mmdcf_mslf": ("mmdcf", True),
}
PROTECTS_PERSONS = False  # counts records: refused on a dataset with a person column
PARAMS = {"d", "sensitive", "l", "min_group", "tie", "seed", "qi_order", "generalize", "limit"} | P.WORKLOAD_PARAMS

# The release format's own columns (GT: group_id, QIs; ST: group_id, SAs, count; the map: key,
# group_id, bucket): a QI or SA named like the first, or a key, person or identifier column named
# like any of them, is refused at publish (`params.refuse_reserved`, decision B1 above).
RESERVED = ("group_id", "count")
KEY_RESERVED = ("group_id", "count", "bucket")

BUCKET, ROW = "pg_temp._pganon_bucket", "pg_temp._pganon_row"
BUCKET_L = "pg_temp._pganon_bl"   # the l each bucket imposes on its group (A11: max over contents)


def parse_params(method, params, ds):
    """Validate the publish parameters against the dataset before any work is done."""
    P.unknown_params(method, params, PARAMS)
    variant, mslf = METHODS[method]
    sas = P.sensitive_columns(params, ds)
    tie = P.choice(params, "tie", ("first", "random"), "random" if "seed" in params else "first")
    seed = P.integer(params, "seed", 0)
    if tie == "random" and seed is None:
        seed = 0
    qis = P.quasi_columns(ds)
    P.refuse_reserved(method, ds, [q["column"] for q in qis] + sas, RESERVED, KEY_RESERVED)
    if not ds.level_l:
        raise incomplete(f"dataset {ds.name} has no l for any security level",
                         hint="set them with pganon.set_level_l(dataset, level, l)")
    min_group = P.integer(params, "min_group", 1, default=2)
    l = P.integer(params, "l", 1)
    if mslf and l is not None:
        raise invalid(f"parameter l is the baselines' single l; {method} takes the l of each security level",
                      hint="set them with pganon.set_level_l(dataset, level, l), or use "
                           f"{variant} for one l")
    if l is not None and l < min_group:
        share = "its whole group (one row's whole sensitive vector)" if l == 1 else f"1/{l} of its group"
        raise invalid(f"l = {l} is below min_group = {min_group}: a value could fill {share}",
                      hint=f"raise l to at least {min_group}, or pass min_group: {l} to accept it")
    return {
        "method": method, "variant": variant, "mslf": mslf, "sas": sas, "qis": qis,
        "l": l, "min_group": min_group, "tie": tie, "level_l": dict(ds.level_l),
        "seed": seed, "qi_order": P.boolean(params, "qi_order"), "generalize": P.boolean(params, "generalize"),
        "limit": P.integer(params, "limit", 1),
        # the query-error workload runs only when asked for (queries > 0; pganon.query_error
        # measures a release afterwards); exact QIs answer every QI query exactly
        "workload": P.workload(params) if P.boolean(params, "generalize") or "queries" in params else None,
    }


def bucket_table(db, ds, p, order_cols=()):
    """The bucket table: one row per distinct SA vector, numbered in first-appearance order (min
    key), with its size and its keys in `order_cols` then key order (the FIFO the assign step
    deals out). Returns the bucket sizes in bucket order."""
    I, sas = db.ident, p["sas"]
    sa_list = ", ".join(map(I, sas))
    order = list(order_cols) + [ds.key]
    db.run(f"CREATE TEMP TABLE _pganon_bucket ON COMMIT DROP AS "
           f"SELECT (row_number() OVER (ORDER BY min({I(ds.key)})) - 1)::int AS _pganon_bucket, "
           f"{sa_list}, count(*)::int AS _pganon_size, "
           f"array_agg({I(ds.key)} ORDER BY {', '.join(map(I, order))}) AS _pganon_keys "
           f"FROM {SNAP} GROUP BY {sa_list}")
    db.run(f"ANALYZE {BUCKET}")
    return [r["n"] for r in db.rows(f"SELECT _pganon_size AS n FROM {BUCKET} ORDER BY _pganon_bucket")]


def build_buckets(db, ds, p):
    """One row per distinct SA vector with its security levels; returns the planner's input arrays."""
    I, sas = db.ident, p["sas"]
    bucket_table(db, ds, p, [q["column"] for q in qi_sort_order(db, p)] if p["qi_order"] else [])
    sel, joins = [], []
    for j, sa in enumerate(sas):
        # each distinct value's level, from the one definition (pganon._effective_level: its own
        # level, else the attribute's default), looked up once per value
        sel.append(f"(dense_rank() OVER (ORDER BY b.{I(sa)}) - 1)::int AS c{j}, lv{j}.level AS v{j}")
        joins.append(f"LEFT JOIN (SELECT x.v, pganon._effective_level({int(ds.id)}, {db.literal(sa)}, x.v) AS level "
                     f"FROM (SELECT DISTINCT {I(sa)}::text AS v FROM {BUCKET}) x) lv{j} "
                     f"ON lv{j}.v = b.{I(sa)}::text")
    rows = db.rows(f"SELECT b._pganon_bucket AS b, b._pganon_size AS size, {', '.join(sel)} "
                   f"FROM {BUCKET} b {' '.join(joins)} ORDER BY b._pganon_bucket")
    missing = [sa for j, sa in enumerate(sas) if any(r[f"v{j}"] is None for r in rows)]
    if missing:   # only when the dataset has no level at all (the default is its highest level)
        raise incomplete(f"sensitive values without a security level in {', '.join(missing)}: dataset "
                         f"{ds.name} has no level with an l",
                         hint="set one with pganon.set_level_l(dataset, level, l)")
    d = len(sas)
    sizes = [r["size"] for r in rows]
    values = [r[f"c{j}"] for r in rows for j in range(d)]
    levels = [r[f"v{j}"] for r in rows for j in range(d)]
    unknown_levels = sorted(set(levels) - set(ds.level_l))
    if unknown_levels:
        raise incomplete(f"security level(s) {unknown_levels} have no l",
                         hint="set them with pganon.set_level_l(dataset, level, l)")
    return sizes, values, levels


def baseline_l(p, ds, levels):
    """Spec A15: the baselines' single l is the l of the highest level present, unless given;
    raised to min_group (module docstring)."""
    if p["l"] is not None:
        return p["l"]
    return max(p["level_l"][max(levels)], p["min_group"])


def plural(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")


def refuse_impossible(p, sizes, values, levels):
    """Refuse, from the bucket counts alone, a request under which no group can exist
    (`bucketize.blocked_dimension`: one SA's values cannot fill a group), with the numbers."""
    try:
        blocked = bucketize.blocked_dimension(sizes, values, levels, p["level_l"], mslf=p["mslf"],
                                              baseline_l=p["baseline_l"], min_group=p["min_group"])
    except ValueError as exc:
        raise invalid(str(exc))
    if blocked is None:
        return
    j, l_of = blocked
    n, mg, k = sum(sizes), p["min_group"], len(l_of)
    if j is None:
        raise unsatisfiable(f"min_group = {mg} needs {mg} distinct sensitive vectors per group; the table has {k}: "
                            f"all {n} rows would be suppressed",
                            hint=f"use min_group <= {k}, or publish more sensitive attributes")
    sa = p["sas"][j]
    if not p["mslf"]:
        l = p["baseline_l"]
        raised = p["l"] is None and l > p["level_l"][max(levels)]
        note = f" (the l of the highest level present, raised to min_group = {mg})" if raised else ""
        raise unsatisfiable(f"l = {l} but {sa} has only {plural(k, 'distinct value')}{note}: "
                            f"no group can be {l}-diverse and all {n} rows would be suppressed",
                            hint=f"use l <= {k}" + (" and min_group <= l" if raised else "")
                            + f", or leave {sa} out (parameter sensitive)")
    by_l = {}
    for x in l_of.values():
        by_l[x] = by_l.get(x, 0) + 1
    listing = ", ".join(f"{c} with l = {x}" for x, c in sorted(by_l.items()))
    share = sum(Fraction(c, x) for x, c in by_l.items())
    raise unsatisfiable(f"{sa} has only {plural(k, 'distinct value')} ({listing}): their shares 1/l add "
                        f"up to {share} < 1, so no group can be L_sl-diverse and all {n} rows would be suppressed",
                        hint=f"lower the l of their levels (pganon.set_level_l), or leave {sa} out "
                             "(parameter sensitive)")


def plan(db, ds, p, sizes, values, levels):
    # the l each bucket imposes on its group (A11: a group's l is the max over its contents)
    d = len(p["sas"])
    bucket_l = ([p["level_l"][max(levels[b * d:(b + 1) * d])] for b in range(len(sizes))] if p["mslf"]
                else [p["baseline_l"]] * len(sizes))
    db.run("CREATE TEMP TABLE _pganon_bl ON COMMIT DROP AS SELECT (o - 1)::int AS bucket, l "
           "FROM unnest($1::text::int4[]) WITH ORDINALITY AS x(l, o)", [pg_array(np.asarray(bucket_l))], ["text"])
    db.run(f"ANALYZE {BUCKET_L}")
    try:
        the_plan = bucketize.plan(sizes, values, levels, p["level_l"], p["variant"], mslf=p["mslf"],
                                  baseline_l=p["baseline_l"], tie=p["tie"], seed=p["seed"],
                                  tick=db.interruptible(), min_group=p["min_group"])
    except ValueError as exc:
        raise invalid(str(exc))
    if the_plan.n_groups == 0:
        refuse_no_group(p, sizes)
    return the_plan


def refuse_no_group(p, sizes):
    """A plan without a group would publish nothing: refuse it with the numbers."""
    model = "L_sl-diverse" if p["mslf"] else f"{p['baseline_l']}-diverse"
    raise unsatisfiable(f"{p['method']} found no {model} group (each value at most 1/l of its group, each "
                        f"sensitive vector at most 1/{p['min_group']} (min_group)) among the {len(sizes)} distinct "
                        f"sensitive vectors: all {sum(sizes)} rows would be suppressed",
                        hint="lower l (or the levels' l, or min_group), or publish fewer sensitive attributes")


QI_ORDER_PASSES = 3


def run_columns(the_plan):
    """The plan's runs as numpy columns (bucket, first rank in the bucket, first group, count):
    a bucket's runs consume its records in rank order, so a run starts where the bucket's
    previous runs ended (an exclusive cumulative sum per bucket)."""
    rb = np.frombuffer(the_plan.run_bucket, dtype=np.int64)
    rg = np.frombuffer(the_plan.run_group, dtype=np.int64)
    rc = np.frombuffer(the_plan.run_count, dtype=np.int64)
    order = np.argsort(rb, kind="stable")
    b, c = rb[order], rc[order]
    before = np.cumsum(c) - c
    first = np.ones(len(b), dtype=bool)
    first[1:] = b[1:] != b[:-1]
    start = before - np.maximum.accumulate(np.where(first, before, 0))
    rs = np.empty_like(start)
    rs[order] = start
    return rb, rs, rg, rc


def qi_sort_order(db, p):
    """QIs in the order rows are sorted by for qi_order: categorical QIs with the fewest distinct
    values first (a group that shares them loses nothing on them), then numeric and date QIs."""
    I = db.ident
    cat = [q for q in p["qis"] if q["kind"] == "categorical"]
    if cat:
        r = db.one("SELECT " + ", ".join(f"count(DISTINCT {I(q['column'])}) AS n{i}" for i, q in enumerate(cat))
                   + f" FROM {SNAP}")
        cat = [q for _, q in sorted(((r[f"n{i}"], i), q) for i, q in enumerate(cat))]
    return cat + [q for q in p["qis"] if q["kind"] != "categorical"]


def assign(db, ds, p, the_plan, rel, sizes):
    """Turn the plan's runs into (key, group_id, bucket) rows, set-based.

    Default (spec A7): a bucket's records go out in key order (FIFO), so the k-th record of a
    bucket fills the k-th slot the plan took from it. With qi_order (an extension, not in the
    paper) records are ranked by their QIs inside each bucket instead (see `_assign_qi_order`).
    """
    # with the permutation drawn (`number_groups`), the map holds the random ids at once
    gid = (lambda e: f"(SELECT array_agg(new ORDER BY old) FROM {PERM})[({e})::int + 1]") if p.get("numbered") else None
    if p["qi_order"]:
        _assign_qi_order(db, ds, p, the_plan, rel, gid)
    else:
        _assign_fifo(db, ds, the_plan, rel, sizes, gid)
        p["st_rows"] = st_counts(the_plan, sizes)   # the ST's rows, for materialize
    db.run(f"ALTER TABLE {rel['map']} ADD PRIMARY KEY ({db.ident(ds.key)})")
    db.run(f"ANALYZE {rel['map']}")
    if p.get("numbered"):
        n = db.one(f"SELECT count(*) AS n FROM {rel['map']}")["n"]
        if n != p["numbered"]:
            raise EngineError(f"the plan's runs cover {p['numbered']} rows but {n} were assigned", "PA007",
                              hint="this is a bug in pganon; please report it with the parameters")


PERM = "pg_temp._pganon_gperm"


def number_groups(db, p, the_plan, sizes):
    """numbering 'random': the groups' random ids drawn from the plan, before any row is assigned,
    so that the map, GT and ST are written once with them (in content order) instead of being
    rewritten by the renumber step. The plan's runs give every group the rows it gets; when
    they cover exactly the groups 0..n-1 (always, unless a planner changes), the permutation of
    0..n-1 is the one `numbering.apply` would draw from the GT. Sets p["numbered"] to the number
    of rows the runs assign (assign checks it), or leaves it unset (the renumber step then
    rewrites the relations)."""
    if not p.get("renumbered"):
        return
    rb, rs, rg, rc = run_columns(the_plan)
    n = int(the_plan.n_groups)
    size = np.asarray(sizes, dtype=np.int64)
    took = np.clip(np.minimum(rc, size[rb] - rs), 0, None)   # a run's slots with a row to fill
    if n == 0 or (rg < 0).any() or (rg + took > n).any():
        return
    cover = np.zeros(n + 1, dtype=np.int64)
    np.add.at(cover, rg, 1)
    np.add.at(cover, rg + took, -1)
    if (np.cumsum(cover)[:n] <= 0).any():
        return
    numbering.draw(db, PERM, "group_id", p["numbering_seed"], f"SELECT generate_series(0, {n - 1}) AS old")
    db.run(f"ANALYZE {PERM}")
    p["numbered"] = int(took.sum())


def _assign_fifo(db, ds, the_plan, rel, sizes, gid=None):
    """One statement, no row-sized work table: the runs are laid out on one global axis (bucket
    offset + rank inside the bucket), so the run holding a record is a binary search
    (`width_bucket`) over the runs' sorted global starts; records past a bucket's last run are
    the suppressed ones."""
    rb, rs, rg, rc = run_columns(the_plan)
    offsets = np.cumsum(np.asarray(sizes, dtype=np.int64)) - np.asarray(sizes, dtype=np.int64)
    start = offsets[rb] + rs
    order = np.argsort(start, kind="stable")
    group = "(r.g[w.i] + (b.off + u.o - 1 - r.s[w.i]))::int"
    if gid:
        group = gid("(r.g[w.i] + (b.off + u.o - 1 - r.s[w.i]))")
    db.run(f"CREATE TABLE {rel['map']} AS "
           "WITH r AS MATERIALIZED (SELECT $1::text::int4[] AS s, $2::text::int4[] AS g, $3::text::int4[] AS c) "
           f"SELECT u.k AS {db.ident(ds.key)}, {group} AS group_id, b.bucket "
           "FROM r, (SELECT _pganon_bucket AS bucket, _pganon_keys AS keys, "
           f"        (sum(_pganon_size) OVER (ORDER BY _pganon_bucket) - _pganon_size)::int AS off FROM {BUCKET}) b, "
           "LATERAL unnest(b.keys) WITH ORDINALITY AS u(k, o), "
           "LATERAL (SELECT width_bucket((b.off + u.o - 1)::int, r.s)) AS w(i) "
           "WHERE w.i > 0 AND b.off + u.o - 1 < r.s[w.i] + r.c[w.i]",
           [pg_array(start[order]), pg_array(rg[order]), pg_array(rc[order])], ["text", "text", "text"])


def st_counts(the_plan, sizes):
    """The ST's (group, bucket, count) rows computed from the plan, exactly as `_assign_fifo`
    deals the records out (position off + rank on the global axis, the last run starting at or
    before it, inside its count), so the ST needs no aggregate over the row-sized map. Groups
    are the plan's (before numbering); rows in (group, bucket) order."""
    rb, rs, rg, rc = run_columns(the_plan)
    size = np.asarray(sizes, dtype=np.int64)
    offsets = np.cumsum(size) - size
    start = offsets[rb] + rs
    order = np.argsort(start, kind="stable")
    s, g, c = start[order], rg[order], rc[order]
    pos = np.arange(int(size.sum()), dtype=np.int64)
    bucket = np.repeat(np.arange(len(size), dtype=np.int64), size)
    i = np.searchsorted(s, pos, side="right") - 1   # width_bucket: the last start <= pos
    ok = i >= 0
    ok[ok] = pos[ok] < s[i[ok]] + c[i[ok]]
    group = g[i[ok]] + (pos[ok] - s[i[ok]])
    pair, count = np.unique(group * len(size) + bucket[ok], return_counts=True)
    return pair // len(size), pair % len(size), count


def _assign_qi_order(db, ds, p, the_plan, rel, gid=None):
    """Records ranked by their QIs inside each bucket and matched to the bucket's slots ordered
    by a per-group position t: first t = group id, then t = the mean QI quantile of the group's
    records, re-matched QI_ORDER_PASSES times, so records of similar QI quantile in every bucket
    meet in the same group. The plan (which buckets feed which group) never changes."""
    I = db.ident
    db.run(f"CREATE TEMP TABLE _pganon_row ON COMMIT DROP AS SELECT u.k, b._pganon_bucket AS bucket, "
           f"(u.o - 1)::int AS rank, b._pganon_size AS nb "
           f"FROM {BUCKET} b, unnest(b._pganon_keys) WITH ORDINALITY AS u(k, o)")
    rb, rs, rg, rc = run_columns(the_plan)
    db.run("CREATE TEMP TABLE _pganon_slot ON COMMIT DROP AS "
           "SELECT u.b AS bucket, (u.g + i)::int AS group_id, (u.s + i)::int AS rank "
           "FROM unnest($1::text::int4[], $2::text::int4[], $3::text::int4[], $4::text::int4[]) AS u(b, s, g, c) "
           "CROSS JOIN LATERAL generate_series(0, u.c - 1) AS i",
           [pg_array(rb), pg_array(rs), pg_array(rg), pg_array(rc)], ["text", "text", "text", "text"])
    db.run("CREATE TEMP TABLE _pganon_t ON COMMIT DROP AS "
           "SELECT DISTINCT group_id, group_id::float8 AS t FROM pg_temp._pganon_slot")
    for i in range(QI_ORDER_PASSES):
        drop_temp(db, "pg_temp._pganon_slot2")
        db.run("CREATE TEMP TABLE _pganon_slot2 ON COMMIT DROP AS SELECT s.bucket, s.group_id, "
               "(row_number() OVER (PARTITION BY s.bucket ORDER BY t.t, s.group_id) - 1)::int AS rank "
               "FROM pg_temp._pganon_slot s JOIN pg_temp._pganon_t t USING (group_id)")
        if i + 1 < QI_ORDER_PASSES:
            db.run("TRUNCATE pg_temp._pganon_t")
            db.run(f"INSERT INTO pg_temp._pganon_t SELECT s.group_id, avg((r.rank + 0.5) / r.nb) "
                   f"FROM pg_temp._pganon_slot2 s JOIN {ROW} r USING (bucket, rank) GROUP BY s.group_id")
    group = gid("s.group_id") + " AS group_id" if gid else "s.group_id"
    db.run(f"CREATE TABLE {rel['map']} AS SELECT r.k AS {I(ds.key)}, {group}, s.bucket "
           f"FROM pg_temp._pganon_slot2 s JOIN {ROW} r USING (bucket, rank)")


GROUPS = "pg_temp._pganon_ggen"


def materialize(db, ds, p, rel):
    """GT, ST and the level table, plus a per-group QI summary (min/max, distinct counts, value
    sets) that feeds the generalized GT and the NCP metric. The exact GT is built first and
    summarized (one join of map and snapshot instead of two).

    Order: with numbering 'creation' GT and ST keep the engine's order. With 'random' they are
    published in content order (the order of all their columns): written so at once when the
    map already holds the random ids (p["numbered"]), else built unordered for the renumber
    step, which rewrites them in that order and draws its permutation from the summary."""
    I = db.ident
    qis, sas = p["qis"], p["sas"]
    numbered = bool(p.get("numbered"))
    unordered = p.get("renumbered", False) and not numbered
    aggs = []
    for i, q in enumerate(qis):
        c = I(q["column"])
        if q["kind"] in ("numeric", "date"):
            aggs += [f"min({c}) AS q{i}_min", f"max({c}) AS q{i}_max"]
        else:
            aggs.append(f"count(DISTINCT {c}) AS q{i}_n")
            if p["generalize"]:
                aggs.append(f"array_agg(DISTINCT {c}::text ORDER BY {c}::text) AS q{i}_set")

    def summary(source):   # concatenated, never str.format: a QI name may hold braces
        groups = f"SELECT group_id, count(*) AS n, {', '.join(aggs)} FROM {source} GROUP BY group_id"
        if numbered:   # in the engine's group order, as the NCP sums them without random ids
            return f"SELECT g.* FROM ({groups}) g JOIN {PERM} o ON o.new = g.group_id ORDER BY o.old"
        return groups

    def content_order(n):
        return f" ORDER BY {', '.join(str(i + 1) for i in range(n))}"
    if p["generalize"]:
        coltypes.refuse_top(db, SNAP, [q for q in qis if q["kind"] in ("numeric", "date")])
        db.run("CREATE TEMP TABLE _pganon_ggen ON COMMIT DROP AS " + summary(
            f"(SELECT m.group_id, s.* FROM {rel['map']} m JOIN {SNAP} s USING ({I(ds.key)})) x"))
        outs = []
        for i, q in enumerate(qis):
            if q["kind"] in ("numeric", "date"):
                outs.append(f"{coltypes.cell(f'g.q{i}_min', f'g.q{i}_max', coltypes.of(q))} AS {I(q['column'])}")
            else:
                outs.append(f"g.q{i}_set AS {I(q['column'])}")
        order = "" if unordered else content_order(len(qis) + 1) if numbered else " ORDER BY m.group_id"
        db.run(f"CREATE TABLE {rel['gt']} AS SELECT m.group_id, {', '.join(outs)} "
               f"FROM {rel['map']} m JOIN {GROUPS} g USING (group_id){order}")
    else:   # ordered by group, then every QI: content order
        order = "" if unordered else f" ORDER BY m.group_id{''.join(', s.' + I(q['column']) for q in qis)}"
        db.run(f"CREATE TABLE {rel['gt']} AS SELECT m.group_id, {', '.join('s.' + I(q['column']) for q in qis)} "
               f"FROM {rel['map']} m JOIN {SNAP} s USING ({I(ds.key)}){order}")
        db.run(f"ANALYZE {rel['gt']}")
        db.run("CREATE TEMP TABLE _pganon_ggen ON COMMIT DROP AS " + summary(rel["gt"]))
    db.run(f"ANALYZE {GROUPS}")
    p["numbering_ids"] = {"group_id": (GROUPS, "group_id")}   # one row per group of the GT
    sa_sel = ", ".join("b." + I(c) for c in sas)
    counts = f"(SELECT group_id, bucket, count(*)::int AS count FROM {rel['map']} GROUP BY 1, 2) x"
    st_rows = p.pop("st_rows", None)
    if st_rows is not None:
        _st_from_rows(db, p, rel, st_rows, sa_sel, numbered, unordered)
    elif unordered:
        db.run(f"CREATE TABLE {rel['st']} AS SELECT x.group_id, {sa_sel}, x.count "
               f"FROM {counts} JOIN {BUCKET} b ON b._pganon_bucket = x.bucket")
    else:
        # Rows within a group ordered by the SA vector's rank in value order (computed on the
        # small bucket table, so the big sort compares integers, not text), after the count
        # with 'creation'. A group holds each vector once, so (group, rank) is content order.
        db.run(f"CREATE TEMP TABLE _pganon_vrank ON COMMIT DROP AS SELECT b._pganon_bucket AS bucket, "
               f"(row_number() OVER (ORDER BY {sa_sel}))::int AS vrank FROM {BUCKET} b")
        db.run(f"CREATE TABLE {rel['st']} AS SELECT x.group_id, {sa_sel}, x.count "
               f"FROM {counts} JOIN pg_temp._pganon_vrank r USING (bucket) "
               f"JOIN {BUCKET} b ON b._pganon_bucket = x.bucket ORDER BY x.group_id, "
               + ("r.vrank" if numbered else "x.count DESC, r.vrank"))
    # The level table: what this release promised per value (the l of its level, or the
    # baselines' single l; anatomy's promise is per vector, in the layout). The verifier does
    # not read it: it derives each value's l from the catalog itself.
    # One row per sensitive value the release holds, with its effective level (its own, else the
    # attribute's default: pganon._effective_level).
    promised = "l.l" if p.get("mslf", True) else str(int(p["baseline_l"]))
    values = " UNION ALL ".join(f"SELECT DISTINCT {db.literal(sa)} AS sa, {I(sa)}::text AS value FROM {BUCKET}"
                                for sa in sas)
    db.run(f"CREATE TABLE {rel['levels']} AS SELECT s.sa, s.value, s.level, {promised} AS l "
           f"FROM (SELECT v.sa, v.value, pganon._effective_level($1, v.sa, v.value) AS level FROM ({values}) v) s "
           f"JOIN pganon.level_l l ON l.dataset_id = $1 AND l.level = s.level", [ds.id], ["int4"])
    analyzed = ("gt", "st", "levels") if p["generalize"] else ("st", "levels")
    for suffix in analyzed:
        if not (unordered and suffix in ("gt", "st")):   # renumber analyzes its copies
            db.run(f"ANALYZE {rel[suffix]}")


def _int_array(db, query):
    """One integer array column read as a single text value (no per-element conversion)."""
    text = db.one(f"SELECT ({query})::text AS a")["a"]
    return np.array(text[1:-1].split(",") if text and text != "{}" else [], dtype=np.int64)


def _st_from_rows(db, p, rel, st_rows, sa_sel, numbered, unordered):
    """The ST from the (group, bucket, count) rows `st_counts` derived from the plan: sorted here
    into the order the aggregate over the map gave (group, then count descending with
    'creation', then the vector's rank in value order; random ids: group, rank), so the server
    only joins the small bucket table and keeps that order."""
    g, b, c = st_rows
    if numbered:
        g = _int_array(db, f"SELECT array_agg(new ORDER BY old) FROM {PERM}")[g]
    order = ""
    if not unordered:
        db.run(f"CREATE TEMP TABLE _pganon_vrank ON COMMIT DROP AS SELECT b._pganon_bucket AS bucket, "
               f"(row_number() OVER (ORDER BY {sa_sel}))::int AS vrank FROM {BUCKET} b")
        vrank = _int_array(db, "SELECT array_agg(vrank ORDER BY bucket) FROM pg_temp._pganon_vrank")[b]
        keys = (vrank, g) if numbered else (vrank, -c, g)
        o = np.lexsort(keys)
        g, b, c = g[o], b[o], c[o]
        order = " ORDER BY u.o"
    # bucket and count packed in one int8 (both below 2^31): the server parses 2 arrays, not 3
    db.run(f"CREATE TABLE {rel['st']} AS SELECT u.g AS group_id, {sa_sel}, (u.v & 4294967295)::int AS count "
           "FROM unnest($1::text::int4[], $2::text::int8[]) WITH ORDINALITY AS u(g, v, o) "
           f"JOIN {BUCKET} b ON b._pganon_bucket = (u.v >> 32)::int{order}",
           [pg_array(g), pg_array((b << 32) | c)], ["text", "text"])


def build(db, ds, p, rel, phases):
    """snapshot -> buckets -> plan -> assign -> materialize; returns (source rows, groups)."""
    source_rows = phases.run("snapshot", copy_source, db, ds, p)
    sizes, values, levels = phases.run("buckets", build_buckets, db, ds, p)
    p["baseline_l"] = baseline_l(p, ds, levels)
    p["buckets"] = len(sizes)
    refuse_impossible(p, sizes, values, levels)
    the_plan = phases.run("plan", plan, db, ds, p, sizes, values, levels)
    phases.run("renumber", number_groups, db, p, the_plan, sizes)
    phases.run("assign", assign, db, ds, p, the_plan, rel, sizes)
    phases.run("materialize", materialize, db, ds, p, rel)
    return source_rows, the_plan.n_groups


def recorded_params(params, p):
    """What the release records: the given parameters plus the defaults that decided it."""
    recorded = dict(params, tie=p["tie"], seed=p["seed"], min_group=p["min_group"])
    if not p["mslf"]:
        recorded["l"] = p["baseline_l"]
    return recorded


def layout(ds, p, rel):
    return {
        "family": "bucketization",
        "model": "lsl" if p["mslf"] else "l_diversity",
        "l": None if p["mslf"] else p["baseline_l"],
        # the promise: groups of >= min_group rows, no SA vector above 1/min_group of its
        # group; L_sl: each value within 1/l of its level
        "min_group": p["min_group"],
        "level_l": {str(lv): x for lv, x in sorted(p["level_l"].items())} if p["mslf"] else None,
        "key": ds.key,
        "qis": [{"column": q["column"], "kind": q["kind"]} for q in p["qis"]],
        "sas": p["sas"],
        "generalized": p["generalize"],
        "relations": {k: rel[k] for k in ("gt", "st", "map", "levels")},
    }


def measure(db, ds, p, rel, lay, source_rows):
    """AIL (Def 14, l of each group from its final contents), SR (Def 15), NCP% (004 §4.1),
    all from the per-group summary of `materialize`."""
    r = db.one(f"SELECT count(*) AS groups, coalesce(sum(n), 0) AS published, sum(n - l) AS extra, "
               f"sum(l) AS base, min(n) AS min_size, max(n) AS max_size "
               f"FROM (SELECT m.group_id, count(*) AS n, max(b.l) AS l FROM {rel['map']} m "
               f"      JOIN {BUCKET_L} b USING (bucket) GROUP BY m.group_id) g")
    published = int(r["published"])
    ail = float(r["extra"]) / float(r["base"]) if r["groups"] else 0.0
    metrics = {
        "groups": int(r["groups"]), "published_rows": published,
        "suppressed_rows": source_rows - published,
        "ail": ail, "sr": (source_rows - published) / source_rows,
        "min_group_size": r["min_size"], "max_group_size": r["max_size"],
        "d": len(p["sas"]), "buckets": p["buckets"],
        "ncp_percent": ncp_percent(db, ds, p, rel),
    }
    w = p["workload"]
    if w is None:
        metrics["query_error"] = {"mean": 0.0, "exact": True}
    elif w["queries"]:
        metrics["query_error"] = utility.query_error(db, p["qis"], SNAP, rel["gt"], w["theta"], w["queries"], w["seed"])
    return metrics


def ncp_percent(db, ds, p, rel):
    """NCP% of the per-group generalized QIs (spec 004 §4.1): numeric span / domain span,
    categorical distinct-in-group / domain size (0 when the group has one value); weights 1.
    Spans are summed in SQL and divided by the domain's here: a float8 division in SQL errors
    on underflow (a span of 1e-200 in a domain of 1e150)."""
    I, qis = db.ident, p["qis"]
    terms, dom, spans = ["0"], [], []
    for i, q in enumerate(qis):
        c = I(q["column"])
        if q["kind"] in ("numeric", "date"):
            t = coltypes.of(q)
            dom.append(f"({coltypes.number(f'max({c})', t)} - {coltypes.number(f'min({c})', t)}) AS d{i}")
            spans.append(f"sum(g.n * ({coltypes.number(f'g.q{i}_max', t)} - {coltypes.number(f'g.q{i}_min', t)})) "
                         f"AS w{i}, max(d.d{i}) AS s{i}")
        else:
            dom.append(f"(SELECT count(*) FROM (SELECT DISTINCT {c} FROM {SNAP}) x)::float8 AS d{i}")
            terms.append(f"CASE WHEN g.q{i}_n > 1 THEN g.q{i}_n / d.d{i} ELSE 0 END")
    r = db.one(f"WITH d AS (SELECT {', '.join(dom)} FROM {SNAP}) "
               f"SELECT sum(g.n * ({' + '.join(terms)})) AS total, sum(g.n) AS n{''.join(', ' + x for x in spans)} "
               f"FROM {GROUPS} g CROSS JOIN d")
    if not r["n"]:
        return 0.0
    total = float(r["total"]) + sum(float(r[f"w{i}"]) / float(r[f"s{i}"]) for i in range(len(qis))
                                    if f"s{i}" in r and r[f"s{i}"] and r[f"s{i}"] > 0)
    return 100.0 * total / (float(r["n"]) * len(qis))
