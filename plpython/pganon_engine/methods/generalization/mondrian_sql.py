"""Mondrian's top splits in SQL, the rest in memory one partition at a time (DESIGN.md "Bounded
memory" and "Scale beyond one machine"; the decisions D1-D8 are `mondrian`'s).

Why: `mondrian.partition` needs every row's codes in one Python process (hundreds of MB at a
million rows).  The split decision needs aggregates only (D8), so a partition larger than
`threshold` rows is cut from GROUP BY frequency sets by the same `mondrian_cuts.choose_cut`, and the
cut is applied by a set-based UPDATE; a partition at or below the threshold is pulled alone and
finished by `mondrian.partition`.  Python then holds at most `threshold` rows, plus one summary
per class.  The result is the partitioning `mondrian.partition` gives on the whole table: the
same partitions, summaries and tree-order numbering.

The work table `WORK` (built by the caller, e.g. `generalized.plan_mondrian`) has per row

    _k     the row key (copied into the map)
    rn     int4 1..n, the row order (key order)
    c0..   int4 per QI its working code: numeric / ordinal codes, taxonomy leaf ranks
           (`Taxonomy.code_rank` of the leaf code), so every taxonomy node is a rank interval
    s0..   int4 per SA channel its code (only when the predicate reads SAs)
    ord    int4 (optional) the order relaxed cuts take median rows in, when not rn (seed)
    pc     int4 (persons only) the row's person code
    part   int4, 0 on every row: the SQL partition a row is in

Decisions:

- S1  A partition with more than `threshold` rows is cut in SQL, one with at most `threshold`
      rows is pulled and finished in memory.  threshold 0 never uses SQL: the whole table is
      pulled once (the plain in-memory run).
- S2  Level by level, all large partitions of a level at once.  Their frequency sets (per QI:
      GROUP BY part, QI code and every SA channel, D8) come from GROUPING SETS over the rows
      counted per distinct (part, codes, SAs) vector; `choose_cut` decides each partition; one
      UPDATE moves the rows of every cut by code intervals (a taxonomy child is the rank
      interval of its node), and for relaxed cuts a second UPDATE in the same statement sends
      the first `take[v]` median rows of every SA vector v (row_number over (part, SA vector)
      ordered by the order column) left, the others right (D3).  The UPDATEs RETURN the rows
      they moved, and the next level's frequency sets are grouped from those: one pass over
      the table per level.  The last level's range parts are applied while the table is
      written once more in (part, order) order with an index on part, for the pulls.
- S3  Numbering is tree order (D6): every partition carries its path of part indices (lhs 0,
      rhs 1; taxonomy children in order); SQL leaves are taken in path order, each gives its
      classes in the tree order of its in-memory run (or one class when no cut was allowed).
- S4  The row order inside a pulled partition is the order column, and the in-memory run gets
      the schema without its seed (the dimension priority it drew stays), so relaxed median
      rows go the same way as in a whole-table run with the seed, whose row order the caller
      put in `ord` (the inverse of `mondrian`'s seeded permutation: n integers computed in
      Python, the one array of the table's length, needed only by relaxed runs with a seed).
- S5  Class ids come back set-based: `BASE` (SQL leaf -> its first class, 0-based) and `LOCAL`
      (rn -> class within its pulled partition, only rows whose local class is not 0);
      `map_select` joins them to the work table.
- S6  Persons (`persons=True`, mondrian D9/D10): the cut candidates of every large partition
      come from the row frequency sets as before (`mondrian_cuts.cut_candidates`, D5's order); their
      parts are judged over persons counted in SQL, one statement per candidate rank for all
      the level's partitions still undecided: every row of a partition gets the part the
      candidate sends it to (range pieces by code interval, a relaxed cut's median rows by
      row_number over (part, SA vector) in row order, exactly as `_apply` moves them), then
      count(DISTINCT pc) per part, per (part, SA code) and per partition (for whole persons).
      Pulled partitions pass their person codes to `mondrian.partition`.  Same decisions as a
      whole-table in-memory run, so the same release.
- S7  Strict cuts without persons (the default) are thresholds on QI codes, so rows with equal
      codes never part, and nothing else of a strict run reads the row order.  The caller then
      builds `VEC` instead of `WORK`: the distinct (QI codes, SA codes) vectors with their rows
      n and an id vid (about 100k at a million Adult rows).  The levels cut the vectors (the
      frequency sets are the same sums, so the same cuts; one UPDATE of the vectors per level,
      not of the rows), the pulls read vectors with their counts and `mondrian.partition`
      weighs them (its D11), LOCAL maps vid -> local class, and `vector_classes` gives each
      distinct QI vector its class, which the caller joins its rows to once.  Relaxed cuts
      (median rows split by row order) and persons (distinct persons per part) read the rows
      of `WORK` as in S2 and S6.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from pganon_engine.core.errors import invalid

from . import mondrian, mondrian_cuts

__all__ = ["WORK", "VEC", "VCLASS", "BASE", "LOCAL", "TABLES", "Plan", "partition", "map_select", "vector_classes",
           "drop_leftovers"]

WORK = "pg_temp._pganon_mwork"
BASE = "pg_temp._pganon_mbase"
LOCAL = "pg_temp._pganon_mlocal"
VEC = "pg_temp._pganon_mvec"
VCLASS = "pg_temp._pganon_mvclass"
TABLES = ("_pganon_mwork", "_pganon_mbase", "_pganon_mlocal", "_pganon_mwork_sorted", "_pganon_mvec",
          "_pganon_mvclass")
_LO, _HI = -1, 2**31 - 1  # code bounds of the open ends of a range cut (codes are >= 0)


@dataclass(frozen=True, eq=False)
class Plan(mondrian.Partitions):
    """The partitions of a run, numbered 0.. in tree order, as `mondrian.Result` without the
    per-row array (the rows' classes stay in the database, S5).

    sizes       rows per partition
    lo, hi      per QI (min code, max code) per partition (numeric/ordinal), None for taxonomy
    nodes       per QI the LCA label per partition (taxonomy), None otherwise
    rounds      split rounds (the tree depth), as `mondrian.Result.rounds`
    levels      levels cut in SQL
    pulled      partitions finished in memory
    largest     rows of the largest pulled partition (the bound on Python's row memory)
    """

    sizes: np.ndarray
    lo: tuple
    hi: tuple
    nodes: tuple
    rounds: int
    levels: int
    pulled: int
    largest: int


def drop_leftovers(db, names=TABLES):
    """Drop this module's temp tables left by an earlier publish in the same transaction."""
    for t in db.rows("SELECT relname::text AS r FROM pg_catalog.pg_class "
                     "WHERE relnamespace = pg_catalog.pg_my_temp_schema() AND relname = ANY($1::text[])",
                     [list(names)], ["text[]"]):
        db.run(f"DROP TABLE pg_temp.{db.ident(t['r'])}")


def partition(db, schema, predicate, *, n, mode="strict", threshold=0, order="rn", tick=None,
              persons=False, whole=False, vectors=False):
    """Mondrian on the rows of `WORK` (n rows, all with part = 0): SQL cuts above `threshold`
    rows, in-memory runs below (S1-S4).  Fills `BASE` and `LOCAL` (S5) and returns the `Plan`.
    vectors: the caller built `VEC` instead of `WORK` (S7, strict without persons).

    schema     the run's `mondrian_schema.Schema` (global domains; taxonomy codes in WORK are ranks)
    predicate  the admissible-cut test (D7)
    order      the column that orders rows for relaxed cuts: 'rn', or 'ord' with a seed (S4)
    tick       called between statements and partitions (cancel / statement_timeout)
    persons    WORK has a person code pc and the predicate judges persons (S6, mondrian D9)
    whole      with persons: no cut separates a person's rows (mondrian D10)
    """
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
        raise invalid(f"sql_threshold must be an integer >= 0, not {threshold!r}",
                      hint="0 runs Mondrian in memory; e.g. 100000 cuts larger partitions in SQL")
    if order not in ("rn", "ord"):
        raise invalid(f"order must be 'rn' or 'ord', not {order!r}")
    if mode not in mondrian_cuts.MODES:
        raise invalid(f"mode {mode!r} is not one of {', '.join(mondrian_cuts.MODES)}")
    if vectors and (mode != "strict" or persons):
        raise invalid("code vectors need mode strict without persons (relaxed cuts and persons read rows)")
    tick = tick or (lambda: None)
    db.run(f"CREATE TEMP TABLE {LOCAL[8:]} (rn int4, local int4) ON COMMIT DROP")
    paths, sizes = {0: ()}, {0: n}
    leaves = []  # (path, part id, frequency sets of a final SQL partition or None = pull)
    active = [0] if threshold and n > threshold else []
    if not active:
        leaves.append(((), 0, None))
    levels, next_id, cuts = 0, 1, []
    src = VEC if vectors else WORK
    freqs = _freq_sets(db, active, schema, src) if active else {}
    extra = (["pc"] if persons else []) + (["ord"] if order == "ord" else [])
    while active:
        tick()
        cuts, deeper = [], []
        for pid in active:
            _check_size(pid, 0 if freqs[pid][0] is None else int(freqs[pid][0][1].sum()), sizes)
        chosen = _person_cuts(db, active, freqs, schema, predicate, mode, order, whole) if persons else None
        for pid in active:
            cut = chosen[pid] if persons else mondrian_cuts.choose_cut(
                [_as_codes(f, schema, j) for j, f in enumerate(freqs[pid])], schema, predicate, mode=mode)
            if cut is None:
                leaves.append((paths[pid], pid, freqs[pid]))
                continue
            kids = list(range(next_id, next_id + len(cut.sizes)))
            next_id += len(kids)
            for i, (kid, size) in enumerate(zip(kids, cut.sizes)):
                paths[kid], sizes[kid] = paths[pid] + (i,), size
                if size > threshold:
                    deeper.append(kid)
                else:
                    leaves.append((paths[kid], kid, None))
            cuts.append((pid, cut, kids))
        if cuts:
            tick()
            freqs = _apply(db, cuts, schema, order, deeper, extra, src)
            levels += 1
        active = deeper
    if levels and not cuts and not vectors:  # the last level cut nothing: compact what the levels left
        _compact(db, schema, order, [[]] * 5, _dim_of(schema, "w"), extra)
    if levels and vectors:  # each pull reads its partition's vectors only
        db.run(f"CREATE INDEX ON {VEC} (part)")
        db.run(f"ANALYZE {VEC}")
    return _finish(db, schema, predicate, mode, order, sorted(leaves, key=lambda x: x[0]), sizes, levels, tick,
                   persons, whole, vectors)


def map_select(key):
    """SELECT of (key AS `key`, class_id 1..) for every row of WORK (S5); key is a quoted name."""
    return (f"SELECT w._k AS {key}, (b.base + coalesce(l.local, 0) + 1)::int4 AS class_id "
            f"FROM {WORK} w JOIN {BASE} b USING (part) LEFT JOIN {LOCAL} l USING (rn)")


def vector_classes(db, schema):
    """S7: the table `VCLASS` (c0.., part, class_id 1..), one row per distinct QI code vector of
    `VEC` (its class depends on the QI codes alone: strict cuts), for the caller to join its
    rows' codes to.  A table with its statistics, not a subquery: joined in one statement with
    the rows' codes, the product of the per-code selectivities made the planner expect one row
    and loop over BASE and LOCAL."""
    cs = ", ".join(f"v.{c}" for c in _qi_cols(schema))
    db.run(f"CREATE TEMP TABLE {VCLASS[8:]} ON COMMIT DROP AS "
           f"SELECT {'DISTINCT ' if schema.sa_sizes else ''}{cs}, v.part, "
           f"(b.base + coalesce(l.local, 0) + 1)::int4 AS class_id "
           f"FROM {VEC} v JOIN {BASE} b USING (part) LEFT JOIN {LOCAL} l ON l.rn = v.vid")
    db.run(f"ANALYZE {VCLASS}")
    return VCLASS


# --------------------------------------------------------------------------------------------
# SQL levels
# --------------------------------------------------------------------------------------------


def _qi_cols(schema):
    return [f"c{j}" for j in range(schema.d)]


def _sa_cols(schema):
    return [f"s{c}" for c in range(len(schema.sa_sizes))]


def _freq_sql(schema, source, param, count="count(*)"):
    """The frequency sets of the partitions listed in array parameter `param`, from the rows of
    `source`, in one scan: GROUP BY part, the SA channels and GROUPING SETS of the QI codes
    (D8, S2); one row per (part, QI j) with the groups as arrays.  The rows are first counted
    per distinct (part, codes) vector, so each row is hashed once, not once per QI."""
    cs, ss = _qi_cols(schema), _sa_cols(schema)
    which = "CASE " + " ".join(f"WHEN GROUPING({c}) = 0 THEN {j}" for j, c in enumerate(cs)) + " END"
    code = cs[0] if len(cs) == 1 else f"COALESCE({', '.join(cs)})"
    sa_sel = "".join(f", {s}" for s in ss)
    tuples = (f"SELECT part, {', '.join(cs)}{sa_sel}, {count} AS n FROM {source} "
              f"WHERE part = ANY({param}::int4[]) GROUP BY part, {', '.join(cs)}{sa_sel}")
    inner = (f"SELECT part, {which} AS j, {code} AS code{sa_sel}, sum(n)::int8 AS n FROM ({tuples}) t "
             f"GROUP BY part{sa_sel}, GROUPING SETS ({', '.join(f'({c})' for c in cs)})")
    return ("SELECT part, j, array_agg(code) AS code, array_agg(n) AS n"
            + "".join(f", array_agg({s}) AS {s}" for s in ss) + f" FROM ({inner}) g GROUP BY part, j")


def _freq_sets(db, parts, schema, src=WORK):
    """{part: per QI (working codes, counts, SA channel codes)} of the given partitions."""
    return _read_freqs(db.rows(_freq_sql(schema, src, "$1", _count(src)), [list(parts)], ["int4[]"]), parts, schema)


def _count(src):
    """The rows a row of `src` stands for: one in WORK, n in VEC (S7)."""
    return "sum(n)" if src == VEC else "count(*)"


def _read_freqs(rows, parts, schema):
    ss = _sa_cols(schema)
    out = {pid: [None] * schema.d for pid in parts}
    for r in rows:
        out[r["part"]][r["j"]] = (np.asarray(r["code"], np.int64), np.asarray(r["n"], np.int64),
                                  tuple(np.asarray(r[s], np.int64) for s in ss))
    return out


def _as_codes(f, schema, j):
    """A `FreqSet` from working codes: taxonomy ranks back to leaf codes."""
    w, n, sa = f
    tx = schema.taxonomies[j]
    return mondrian_cuts.freq_set(w if tx is None else tx.rank_code[w], n, sa)


def _apply(db, cuts, schema, order, deeper, extra, src=WORK):
    """Apply the cuts of a level: one UPDATE moves the rows of every cut by code intervals, one
    more the median rows of relaxed cuts (S2).  Returns the frequency sets of the partitions in
    `deeper` (the new ones still above the threshold), read from the rows the UPDATEs moved.
    src VEC (S7): the UPDATE moves code vectors (strict cuts only, so no medians)."""
    piece = {x: [] for x in ("part", "dim", "lo", "hi", "new")}
    med = {x: [] for x in ("part", "dim", "value", "lhs", "rhs")}
    ss = _sa_cols(schema)
    take = {x: [] for x in ["part", *ss, "take"]}

    def add(d, **kw):
        for x, v in kw.items():
            d[x].append(int(v))

    for pid, cut, kids in cuts:
        j = cut.dim
        if cut.kind == "taxonomy":
            tx = schema.taxonomies[j]
            for kid, label in zip(kids, cut.children):
                u = tx.node_id(label)
                add(piece, part=pid, dim=j, lo=tx.first[u], hi=tx.last[u], new=kid)
            continue
        lhs, rhs = kids
        v = int(cut.value)
        add(piece, part=pid, dim=j, lo=_LO, hi=v if not cut.relaxed else v - 1, new=lhs)
        add(piece, part=pid, dim=j, lo=v + 1, hi=_HI, new=rhs)
        if cut.relaxed:
            add(med, part=pid, dim=j, value=v, lhs=lhs, rhs=rhs)
            for vec, t in cut.take.items():
                add(take, part=pid, take=t, **dict(zip(ss, vec)))
    cols = ["part", *_qi_cols(schema), *ss] + (["n"] if src == VEC else [])
    ret = f" RETURNING {', '.join('w.' + c for c in cols)}" if deeper else ""
    args = [piece[x] for x in ("part", "dim", "lo", "hi", "new")]
    ranges = (f"UPDATE {src} w SET part = c.new "
              f"FROM unnest($1::int4[], $2::int4[], $3::int4[], $4::int4[], $5::int4[]) AS c(part, dim, lo, hi, new) "
              f"WHERE w.part = c.part AND {_dim_of(schema, 'w')} BETWEEN c.lo AND c.hi{ret}")
    medians = None
    if med["part"]:
        tcols = ["part", *ss, "take"]
        targs = ", ".join(f"${6 + i}::int4[]" for i in range(len(tcols)))
        on_sa = "".join(f" AND t.{s} = x.{s}" for s in ss)
        medians = (f"UPDATE {WORK} w SET part = CASE WHEN x.r <= coalesce(t.take, 0) THEN x.lhs ELSE x.rhs END "
                   f"FROM (SELECT v.rn, v.part{''.join(f', v.{s}' for s in ss)}, c.lhs, c.rhs, row_number() OVER "
                   f"(PARTITION BY v.part{''.join(f', v.{s}' for s in ss)} ORDER BY v.{order}) AS r "
                   f"FROM {WORK} v JOIN unnest($1::int4[], $2::int4[], $3::int4[], $4::int4[], $5::int4[]) "
                   f"AS c(part, dim, value, lhs, rhs) ON v.part = c.part AND {_dim_of(schema, 'v')} = c.value) x "
                   f"LEFT JOIN unnest({targs}) AS t({', '.join(tcols)}) ON t.part = x.part{on_sa} "
                   f"WHERE w.rn = x.rn{ret}")
        margs = [med[x] for x in ("part", "dim", "value", "lhs", "rhs")] + [take[x] for x in tcols]
    if src == VEC and medians:
        raise RuntimeError("pganon bug: a relaxed Mondrian cut on the distinct code vectors")
    if not deeper:  # the last level: the compacted copy of the table applies the range parts
        if src == VEC:  # S7: the vectors are few, an UPDATE is cheaper than a copy
            db.run(ranges, args, ["int4[]"] * len(args))
            return {}
        if medians:
            db.run(medians, margs, ["int4[]"] * len(margs))
        _compact(db, schema, order, args, _dim_of(schema, "w"), extra)
        return {}
    # S2: the UPDATEs return the rows they moved, whose GROUP BYs are the next level's frequency
    # sets: one pass over the table per level
    if medians:
        sql = (f"WITH r AS ({ranges}), m AS ({_shift_params(medians, len(args))}), "
               f"u AS (SELECT * FROM r UNION ALL SELECT * FROM m) "
               + _freq_sql(schema, "u", f"${len(args) + len(margs) + 1}"))
        params = args + margs + [list(deeper)]
    else:
        sql = f"WITH u AS ({ranges}) " + _freq_sql(schema, "u", "$6", _count(src))
        params = args + [list(deeper)]
    return _read_freqs(db.rows(sql, params, ["int4[]"] * len(params)), deeper, schema)


def _person_cuts(db, active, freqs, schema, predicate, mode, order, whole):
    """S6: {partition: the cut D5 makes when parts are judged over persons, or None}.  The
    candidates of each partition are tried in D5's order; one statement judges the current
    candidate of every partition still undecided."""
    cands = {pid: mondrian_cuts.cut_candidates([_as_codes(f, schema, j) for j, f in enumerate(freqs[pid])],
                                               schema, mode=mode) for pid in active}
    chosen = {pid: None for pid in active}
    current = {pid: c[0] for pid in active if (c := next(cands[pid], None)) is not None}
    need_sa = bool(schema.sa_sizes) and getattr(predicate, "uses_sa", True)
    while current:
        stats = _person_stats(db, current, schema, order, need_sa)
        later = {}
        for pid, cut in current.items():
            sizes, hists, total = stats[pid]
            if (not whole or int(sizes.sum()) == total) and mondrian_cuts.parts_pass(predicate, sizes, hists, schema):
                chosen[pid] = cut
            elif (c := next(cands[pid], None)) is not None:
                later[pid] = c[0]
        current = later
    return chosen


def _person_stats(db, current, schema, order, need_sa):
    """S6: per partition of `current` ({part: cut}), the distinct persons of every part of its
    cut, per SA channel the (parts x codes) distinct persons holding each code (need_sa), and
    the partition's distinct persons."""
    ss = _sa_cols(schema)
    piece = {x: [] for x in ("part", "dim", "lo", "hi", "side")}
    med = {x: [] for x in ("part", "dim", "value")}
    take = {x: [] for x in ["part", *ss, "take"]}

    def add(d, **kw):
        for x, v in kw.items():
            d[x].append(int(v))

    for pid, cut in current.items():
        j = cut.dim
        if cut.kind == "taxonomy":
            tx = schema.taxonomies[j]
            for i, label in enumerate(cut.children):
                u = tx.node_id(label)
                add(piece, part=pid, dim=j, lo=tx.first[u], hi=tx.last[u], side=i)
            continue
        v = int(cut.value)
        add(piece, part=pid, dim=j, lo=_LO, hi=v if not cut.relaxed else v - 1, side=0)
        add(piece, part=pid, dim=j, lo=v + 1, hi=_HI, side=1)
        if cut.relaxed:  # the median rows `_apply` sends left: the first take[v] of each SA vector
            add(med, part=pid, dim=j, value=v)
            for vec, t in cut.take.items():
                add(take, part=pid, take=t, **dict(zip(ss, vec)))
    sa_sel = "".join(f", w.{s}" for s in ss)
    args = [piece[x] for x in ("part", "dim", "lo", "hi", "side")]
    rows = (f"SELECT c.part, c.side, w.pc{sa_sel} FROM {WORK} w "
            f"JOIN unnest($1::int4[], $2::int4[], $3::int4[], $4::int4[], $5::int4[]) AS c(part, dim, lo, hi, side) "
            f"ON w.part = c.part AND {_dim_of(schema, 'w')} BETWEEN c.lo AND c.hi")
    if med["part"]:
        tcols = ["part", *ss, "take"]
        targs = ", ".join(f"${9 + i}::int4[]" for i in range(len(tcols)))
        on_sa = "".join(f" AND t.{s} = x.{s}" for s in ss)
        rows += (f" UNION ALL SELECT x.part, CASE WHEN x.r <= coalesce(t.take, 0) THEN 0 ELSE 1 END, x.pc"
                 f"{''.join(f', x.{s}' for s in ss)} FROM (SELECT v.part, v.pc{''.join(f', v.{s}' for s in ss)}, "
                 f"row_number() OVER (PARTITION BY v.part{''.join(f', v.{s}' for s in ss)} ORDER BY v.{order}) AS r "
                 f"FROM {WORK} v JOIN unnest($6::int4[], $7::int4[], $8::int4[]) AS c(part, dim, value) "
                 f"ON v.part = c.part AND {_dim_of(schema, 'v')} = c.value) x "
                 f"LEFT JOIN unnest({targs}) AS t({', '.join(tcols)}) ON t.part = x.part{on_sa}")
        args += [med[x] for x in ("part", "dim", "value")] + [take[x] for x in tcols]
    groups = ["SELECT part, side, -1 AS ch, -1 AS code, count(DISTINCT pc) AS n FROM r GROUP BY part, side",
              "SELECT part, -1, -1, -1, count(DISTINCT pc) FROM r GROUP BY part"]
    if need_sa:
        groups += [f"SELECT part, side, {c}, {s}, count(DISTINCT pc) FROM r GROUP BY part, side, {s}"
                   for c, s in enumerate(ss)]
    out = {pid: (np.zeros(len(cut.sizes), np.int64),
                 [np.zeros((len(cut.sizes), v), np.int64) for v in schema.sa_sizes] if need_sa else [], 0)
           for pid, cut in current.items()}
    total = {}
    for x in db.rows(f"WITH r AS MATERIALIZED ({rows}) " + " UNION ALL ".join(groups), args, ["int4[]"] * len(args)):
        pid, side, ch, code, n = x["part"], x["side"], x["ch"], x["code"], int(x["n"])
        if side < 0:
            total[pid] = n
        elif ch < 0:
            out[pid][0][side] = n
        else:
            out[pid][1][ch][side, code] = n
    return {pid: (sizes, hists, total.get(pid, 0)) for pid, (sizes, hists, _) in out.items()}


def _dim_of(schema, alias):
    """The code of row `alias` on the QI a cut (alias c) is on."""
    return "CASE c.dim " + " ".join(f"WHEN {j} THEN {alias}.{c}" for j, c in enumerate(_qi_cols(schema))) + " END"


def _shift_params(query, by):
    """The query with its parameters $1.. renumbered from $(by + 1)."""
    return re.sub(r"\$(\d+)", lambda m: f"${int(m.group(1)) + by}", query)


def _compact(db, schema, order, pieces, dim, extra):
    """After the SQL levels: the work table written again with the last level's range parts
    applied (instead of an UPDATE), without dead row versions, in (part, order) order and
    indexed on part, so each pull reads its partition's pages only.  extra: the optional
    columns (pc, ord) kept."""
    cols = ["_k", "rn", *_qi_cols(schema), *_sa_cols(schema)] + list(extra)
    db.run(f"CREATE TEMP TABLE _pganon_mwork_sorted ON COMMIT DROP AS "
           f"SELECT {', '.join('w.' + c for c in cols)}, coalesce(c.new, w.part) AS part FROM {WORK} w "
           f"LEFT JOIN unnest($1::int4[], $2::int4[], $3::int4[], $4::int4[], $5::int4[]) AS c(part, dim, lo, hi, new) "
           f"ON w.part = c.part AND {dim} BETWEEN c.lo AND c.hi ORDER BY {len(cols) + 1}, w.{order}",
           pieces, ["int4[]"] * 5)
    db.run(f"DROP TABLE {WORK}")
    db.run(f"ALTER TABLE pg_temp._pganon_mwork_sorted RENAME TO {WORK[8:]}")
    db.run(f"CREATE INDEX ON {WORK} (part)")
    db.run(f"ANALYZE {WORK}")


# --------------------------------------------------------------------------------------------
# Leaves: final SQL partitions and pulled ones, in tree order
# --------------------------------------------------------------------------------------------


def _finish(db, schema, predicate, mode, order, leaves, expected, levels, tick, persons, whole, vectors=False):
    """Class summaries in tree order; BASE and LOCAL filled (S3, S5).  vectors (S7): the pulls
    read code vectors with their counts (the last column, the weights of `mondrian` D11), and
    LOCAL's rn holds the vector's vid."""
    local_schema = replace(schema, seed=None)  # S4: the row order is the pulled order
    d = schema.d
    cols = ["vid" if vectors else "rn", *_qi_cols(schema), *_sa_cols(schema)] + (["pc"] if persons else [])
    cols += ["n"] if vectors else []
    # one text of all the partition's codes, row after row (numpy parses it; plpy would build a
    # Python int per code)
    pull_sql = (f"SELECT array_to_string(array_agg(ARRAY[{', '.join(cols)}] ORDER BY {'vid' if vectors else order}), "
                f"',') AS a, count(*) AS m, {'sum(n)' if vectors else 'count(*)'} AS n "
                f"FROM {VEC if vectors else WORK} WHERE part = $1")
    sizes, lo, hi, lca = [], [[] for _ in range(d)], [[] for _ in range(d)], [[] for _ in range(d)]
    base_part, base = [], []
    rounds = pulled = largest = 0
    next_class = 0
    for path, pid, freqs in leaves:
        tick()
        base_part.append(pid)
        base.append(next_class)
        if freqs is not None:  # a large partition no cut was allowed on
            sizes.append(int(freqs[0][1].sum()))
            for j in range(d):
                w = freqs[j][0]
                bounds = np.array([w.min()]), np.array([w.max()])
                if schema.taxonomies[j] is None:
                    lo[j].append(bounds[0])
                    hi[j].append(bounds[1])
                else:
                    lca[j].append(schema.taxonomies[j].lca(*bounds).tolist())
            rounds = max(rounds, len(path))
            next_class += 1
            continue
        r = db.one(pull_sql, [pid], ["int4"])
        m = int(r["n"])
        _check_size(pid, m, expected)
        rows = np.fromstring(r["a"], dtype=np.int64, sep=",").reshape(int(r["m"]), len(cols))
        codes = [rows[:, 1 + j] for j in range(d)]
        codes = [c if schema.taxonomies[j] is None else schema.taxonomies[j].rank_code[c]
                 for j, c in enumerate(codes)]
        res = mondrian.partition(codes, [rows[:, 1 + d + c] for c in range(len(schema.sa_sizes))],
                                 local_schema, predicate, mode=mode,
                                 persons=rows[:, -1] if persons else None, whole=whole,
                                 weights=rows[:, -1] if vectors else None)
        keep = res.partition > 0
        if keep.any():
            db.run(f"INSERT INTO {LOCAL} SELECT * FROM unnest($1::text::int4[], $2::text::int4[])",
                   [_pg_array(rows[keep, 0]), _pg_array(res.partition[keep])], ["text", "text"])
        sizes.append(res.sizes)
        for j in range(d):
            if schema.taxonomies[j] is None:
                lo[j].append(res.lo[j])
                hi[j].append(res.hi[j])
            else:
                lca[j].append([schema.taxonomies[j].index[x] for x in res.nodes[j]])
        rounds = max(rounds, len(path) + res.rounds)
        pulled += 1
        largest = max(largest, m)
        next_class += res.n_partitions
        del rows, codes, res
    db.run(f"CREATE TEMP TABLE {BASE[8:]} ON COMMIT DROP AS "
           f"SELECT * FROM unnest($1::int4[], $2::int4[]) AS b(part, base)", [base_part, base], ["int4[]"] * 2)
    db.run(f"ANALYZE {BASE}")
    db.run(f"ANALYZE {LOCAL}")
    return _plan(schema, sizes, lo, hi, lca, rounds, levels, pulled, largest)


def _check_size(pid, got, expected):
    """A partition holds the rows its cut promised: a cut applied differently from how it was
    decided would otherwise go unnoticed (or cut the same rows forever)."""
    if got != expected[pid]:
        raise RuntimeError(f"pganon bug: Mondrian partition {pid} has {got} rows in the work table, "
                           f"its cut promised {expected[pid]}")


def _plan(schema, sizes, lo, hi, lca, rounds, levels, pulled, largest):
    los, his, nodes = [], [], []
    for j in range(schema.d):
        tx = schema.taxonomies[j]
        if tx is None:
            los.append(np.concatenate(lo[j]).astype(np.int64))
            his.append(np.concatenate(hi[j]).astype(np.int64))
            nodes.append(None)
        else:
            los.append(None)
            his.append(None)
            nodes.append([tx.labels[u] for ids in lca[j] for u in ids])
    return Plan(sizes=np.concatenate([np.atleast_1d(s) for s in sizes]).astype(np.int64), lo=tuple(los),
                hi=tuple(his), nodes=tuple(nodes), rounds=rounds, levels=levels, pulled=pulled,
                largest=largest)


def _pg_array(a):
    """An int array as one PostgreSQL array literal (the server parses it; plpy would convert
    element by element)."""
    return "{" + ",".join(map(str, a.tolist())) + "}"
