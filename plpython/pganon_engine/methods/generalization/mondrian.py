"""Mondrian multidimensional partitioning (LeFevre, DeWitt, Ramakrishnan, ICDE 2006) with a
pluggable admissible-cut predicate: k-anonymity, distinct l-diversity (per SA or over SA vectors)
or any test of a part's size and SA histograms (spec 003-msa-comparative.md §2.2, §3.2, A6-A8).

Why this shape: the split decision needs aggregates only, so the top (large) partitions can be
cut by SQL GROUP BYs and the same pure function, `mondrian_cuts.choose_cut`, decides there; the
rows of small partitions are then pulled as integer code arrays and `partition` finishes them in
memory.  The in-memory driver is level-synchronous and numpy-vectorized (every active partition
is one contiguous segment of a row permutation, one round splits them all), so there is no
Python recursion and the Python work per round does not grow with the rows.

The code, by responsibility: `mondrian_schema` (the schema and taxonomies, input checks),
`mondrian_predicates` (D7, and parts judged over rows, persons D9, whole persons D10),
`mondrian_cuts` (the cut rules both drivers share, D1-D4, and the cut from aggregates, D5, D8);
this module holds the in-memory driver `partition` and the one-call entry point `mondrian`.

Input: per QI one integer code array and a kind (`schema`):

- 'numeric'   codes are ranks of the sorted distinct values (0 .. size-1); optional `values`
              (value per code, strictly increasing) make widths use values instead of ranks.
- 'ordinal'   a categorical QI mapped to an order (codes 0 .. size-1), summarized as a code range.
- 'taxonomy'  a categorical QI with a hierarchy (`taxonomy`); codes are leaf codes.

and per SA "channel" one code array (0 .. sa_size-1).  A channel is whatever the predicate
judges: one SA, or the SA-vector code of `sa_vector_codes` (the fingerprint of spec §2.1).

Decisions (spec §7 items in brackets):

- D1  Dimension: the widest normalized range.  Numeric/ordinal: (hi - lo) / (global hi - global
      lo) over the partition's actual min and max (values when given, else codes).  Taxonomy:
      leaves(LCA) / leaves(root), leaves counted as leaf codes of the hierarchy (all of them,
      present in the data or not), LCA = the lowest node covering the partition's codes.  A
      dimension that cannot be cut (one value, or an LCA without children) has width 0 and is
      never tried.  Equal widths: lower QI index first (`Schema.priority`; a seed permutes it).
- D2  Median: the size//2-th smallest value, i.e. the first code whose cumulative count
      reaches size//2 in the frequency set.  Strict: lhs = codes <= median, rhs = codes >
      median; when the median is the maximum the rhs is empty and the dimension has no cut.
- D3  Relaxed: lhs = codes < median plus q = size//2 - #(codes < median) of the median rows,
      rhs = the rest, so lhs has size//2 rows and rhs the other ceil(size/2).  The q rows are
      shared out over the median rows' SA vectors in proportion to their counts (largest
      remainder; ties to the smaller SA vector in lexicographic code order) and within a vector
      the first rows in row order go left (row order = input order, a seeded random order with
      a seed).  This keeps relaxed cuts decidable from aggregates: the SA histograms of both
      sides follow from the frequency set.  Without SA channels it is the first q median rows.
- D4  Taxonomy split: one part per child of the LCA that holds rows, in the taxonomy's child
      order; children without rows make no partition and are not tested (A6).  Because the
      node is the LCA, at least two children hold rows.
- D5  A cut is allowable iff it has at least two non-empty parts and every part satisfies the
      predicate.  If the widest dimension has no allowable cut the next widest is tried; with
      none the partition is final (A8: no |P| < 2l pre-check).
- D6  Summaries: numeric/ordinal (min code, max code) of the partition; taxonomy the LCA's
      label.  Partitions are numbered 0.. in tree order (lhs before rhs, children in order,
      initial partitions by ascending id).
- D7  Predicates.  A plain callable gets ``(size, {sa_name: {code: count}})`` (nonzero counts;
      the shape `pganon_engine.models.predicates.predicate` takes).  An object with ``batch(sizes,
      hists) -> bool array`` (hists: per channel an int array parts x sa_size) is evaluated
      vectorized; with ``uses_sa = False`` no histograms are built ({} / ()).  The built-ins
      `k_anonymity`, `distinct_l_diversity` and `all_of` have both forms.
- D8  Frequency sets for `choose_cut` are GROUP BY (QI code, every SA channel) counts, not only
      code -> count: the SA histograms of a side are sums over its codes, which per-QI counts
      alone cannot give.  Without SA channels (k-anonymity) code -> count is enough.
- D9  Persons (`partition(..., persons=)`: a person code per row, when one person may own
      several rows).  The cuts are still chosen on rows (D1-D4); only the predicate's view of a
      part changes: its size is the number of distinct persons in it and its histogram of a
      channel counts, per code, the distinct persons holding that code in the part (a person
      counts once per value she holds).  So k_anonymity(k) means k persons, distinct l-
      diversity l values each held by some person, and a frequency model reads person-value
      pairs.  Distinct counts are not sums over codes, so `choose_cut` cannot judge persons
      from frequency sets; `cut_candidates` gives the cuts in the order D5 tries them and the
      caller counts persons per part (`mondrian_sql` does it in SQL).
- D10 Whole persons (`whole=True`, with persons): a cut is allowable only if every person's
      rows of the partition land in one part, so every class holds all the rows of each of
      its persons.  Initial partitions (`start`) must not share a person.
- D11 Weighted rows (`partition(..., weights=)`, strict mode without persons): an input row
      stands for `weights` equal rows (a distinct code vector with its count).  Sizes, medians
      (D2: the first code whose cumulative weight reaches size//2) and histograms count the
      weights, so the partitions are those of the expanded rows: strict cuts never separate
      rows with equal codes, and nothing else of a strict run reads the row order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pganon_engine.core.errors import invalid

from .mondrian_cuts import check_mode, dim_order, largest_remainder, sa_vector_codes, widths
from .mondrian_predicates import (all_of, check_predicate, distinct_l_diversity, k_anonymity,
                                  parts_ok, persons_whole)
from .mondrian_schema import (check_lengths, check_nodes, check_rows, code_array, positive, schema,
                              working)

__all__ = ["Result", "partition", "mondrian"]


# --------------------------------------------------------------------------------------------
# The in-memory driver
# --------------------------------------------------------------------------------------------


class Partitions:
    """What the in-memory `Result` and the SQL driver's `mondrian_sql.Plan` both answer from their
    `sizes`, `lo`, `hi` and `nodes`: how many partitions, and each one's cell."""

    @property
    def n_partitions(self):
        return int(self.sizes.size)

    def summary(self, p):
        """Partition p's summary: per QI (min code, max code) or the taxonomy node."""
        return tuple(self.nodes[j][p] if self.nodes[j] is not None
                     else (int(self.lo[j][p]), int(self.hi[j][p])) for j in range(len(self.lo)))

    def summaries(self):
        return [self.summary(p) for p in range(self.n_partitions)]


@dataclass(frozen=True, eq=False)
class Result(Partitions):
    """Partitions of a run, numbered 0.. in tree order (D6).

    partition  per row its partition id
    sizes      rows per partition
    lo, hi     per QI: (P,) min / max code of each partition (numeric/ordinal), None for
               taxonomy QIs
    nodes      per QI: the LCA label of each partition (taxonomy), None otherwise
    origin     per partition the id of the initial partition it comes from
    rounds     split rounds run (the tree depth)
    """

    partition: np.ndarray
    sizes: np.ndarray
    lo: tuple
    hi: tuple
    nodes: tuple
    origin: np.ndarray
    rounds: int



def partition(qi_codes, sa_codes, schema, predicate, *, mode="strict", start=None, nodes=None,
              persons=None, whole=False, weights=None):
    """Mondrian on rows in memory: recursively cut every initial partition while an allowable
    cut exists (D1-D5), iteratively and vectorized.

    qi_codes   per QI an integer code array (one code per row)
    sa_codes   per SA channel an integer code array ([] when the predicate needs none)
    schema     a `Schema` (global domains, hierarchies, tie order)
    predicate  the admissible-cut test (D7)
    start      None (all rows one partition) or per row the id of its initial partition (ints,
               e.g. the partitions the SQL cut); initial partitions are taken in ascending id
    nodes      taxonomy nodes the initial partitions start from (a check, D1): per QI a node
               (one partition) or a mapping initial id -> per QI nodes
    persons    None, or per row a person code (int >= 0): the predicate judges persons (D9)
    whole      with persons: no cut separates the rows of a person (D10)
    weights    None, or per row the rows it stands for (int >= 1, D11); `Result.sizes` count them
    """
    mode = check_mode(mode)
    pred = check_predicate(predicate)
    qs, ss, n = check_rows(qi_codes, sa_codes, schema)
    if n == 0:
        raise invalid("the table is empty", hint="Mondrian needs at least one row")
    pers = _persons(persons, n, whole)
    wts = _weights(weights, n, mode, pers)
    d = schema.d
    W = [working(q, schema, j, f"QI {j}") for j, q in enumerate(qs)]
    rng = None if schema.seed is None else np.random.default_rng([int(schema.seed), 1])
    tiebreak = None if rng is None else rng.permutation(n)
    if start is None:
        perm = np.arange(n) if tiebreak is None else tiebreak.copy()
        ids = np.array([0])
        a_len = np.array([n], np.int64)
        init_key = np.zeros(n, np.int64)
        a_size = a_len if wts is None else np.array([wts.sum()], np.int64)
    else:
        st = code_array(start, "start", allow_negative=True)
        if st.size != n:
            raise invalid(f"start has {st.size} ids for {n} rows; give one initial partition id per row")
        perm = np.lexsort((np.arange(n) if tiebreak is None else tiebreak, st))
        ids, init_key, a_len = np.unique(st, return_inverse=True, return_counts=True)
        init_key = init_key.reshape(-1)
        a_len = a_len.astype(np.int64)
        a_size = a_len if wts is None else _count(init_key, ids.size, wts)
    a_start = np.cumsum(a_len) - a_len
    a_origin = np.arange(ids.size)
    ok = parts_ok(pred, init_key, ids.size, ss, schema, pers, wts)
    if whole and not persons_whole(np.zeros(n, np.int64), init_key, pers, 1)[0]:
        raise invalid("a person has rows in several initial partitions, so her rows cannot stay whole",
                      hint="give every person's rows the same start id")
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        what = ("the table" if start is None
                else f"initial partition {ids.tolist()[bad]!r} ({int(a_size[bad])} rows)")
        raise invalid(f"{what} does not satisfy the predicate {pred!r}, so no partitioning can",
                      hint="lower k / l, or merge initial partitions")
    _check_start_nodes(nodes, schema, W, init_key, ids)
    vec = sa_vector_codes(ss)[0] if (mode == "relaxed" and ss) else None
    n_vec = int(vec.max()) + 1 if vec is not None else 1
    uses_sa = bool(ss) and getattr(pred, "uses_sa", True)

    # The active rows, in segment order: every active partition is a contiguous run, rows of a
    # partition in row order.  Finished partitions leave these arrays; their rows are written
    # to `final` at their tree-order position.
    ract = perm
    Wact = [w[perm] for w in W]
    Sact = [x[perm] for x in ss] if uses_sa else []
    vact = vec[perm] if vec is not None else None
    pact = None if pers is None else pers[perm]
    wact = None if wts is None else wts[perm]
    final = np.empty(n, np.int64)
    done = {"start": [], "len": [], "size": [], "origin": [], "lo": [], "hi": [], "lca": []}
    rounds = 0
    while a_start.size:
        A = a_start.size
        offs = np.cumsum(a_len) - a_len
        seg = np.repeat(np.arange(A), a_len)
        lo = [np.minimum.reduceat(v, offs) for v in Wact]
        hi = [np.maximum.reduceat(v, offs) for v in Wact]
        width, lcas = widths(schema, lo, hi)
        order = dim_order(schema, width)
        wsorted = np.take_along_axis(width, order, axis=1)
        part = np.full(seg.size, -1, np.int64)
        fan = np.zeros(A, np.int64)
        pending = np.ones(A, bool)
        for t in range(d):
            cand = pending & (wsorted[:, t] > 0)
            if not cand.any():
                break
            for j in range(d):
                sel = cand & (order[:, t] == j)
                if not sel.any():
                    continue
                pid = np.flatnonzero(sel)
                sub = np.flatnonzero(sel[seg])
                lseg = (np.cumsum(sel) - 1)[seg[sub]]
                wsub = None if wact is None else wact[sub]
                pidx, F = _cut_rows(schema, j, mode, Wact[j][sub], lseg, a_size[pid],
                                    None if lcas[j] is None else lcas[j][pid],
                                    None if vact is None else vact[sub], n_vec, wsub)
                allowed = _cuts_ok(pred, lseg * F + pidx, pid.size, F, [x[sub] for x in Sact], schema,
                                   None if pact is None else pact[sub], whole, wsub)
                acc = pid[allowed]
                pending[acc] = False
                fan[acc] = F
                keep = allowed[lseg]
                part[sub[keep]] = pidx[keep]
        split = fan > 0
        fin = ~split
        if fin.any():
            done["start"].append(a_start[fin])
            done["len"].append(a_len[fin])
            done["size"].append(a_size[fin])
            done["origin"].append(a_origin[fin])
            done["lo"].append(np.stack([x[fin] for x in lo], axis=1))
            done["hi"].append(np.stack([x[fin] for x in hi], axis=1))
            done["lca"].append(np.stack([np.zeros(int(fin.sum()), np.int64) if u is None else u[fin]
                                         for u in lcas], axis=1))
            fr = np.flatnonzero(fin[seg])
            final[np.repeat(a_start[fin] - offs[fin], a_len[fin]) + fr] = ract[fr]
        if not split.any():
            break
        rounds += 1
        sid = np.flatnonzero(split)
        sub = np.flatnonzero(split[seg])
        Fm = int(fan.max())
        key = (np.cumsum(split) - 1)[seg[sub]] * Fm + part[sub]
        idx = sub[np.argsort(key, kind="stable")]
        psz = np.bincount(key, minlength=sid.size * Fm).reshape(sid.size, Fm)
        pwt = psz if wact is None else _count(key, sid.size * Fm, wact[sub]).reshape(sid.size, Fm)
        ract = ract[idx]
        Wact = [w[idx] for w in Wact]
        Sact = [x[idx] for x in Sact]
        vact = None if vact is None else vact[idx]
        pact = None if pact is None else pact[idx]
        wact = None if wact is None else wact[idx]
        nz = psz > 0
        a_start = (a_start[sid][:, None] + np.cumsum(psz, axis=1) - psz)[nz]
        a_len = psz[nz]
        a_size = pwt[nz]
        a_origin = np.broadcast_to(a_origin[sid][:, None], psz.shape)[nz]
    return _result(done, final, n, schema, ids, rounds)


def _cut_rows(schema, j, mode, v, lseg, sizes, lca, vec, n_vec, w=None):
    """Part index per row for the cut of every selected partition on QI j (rows grouped by
    lseg, row order within a partition), and the number of part slots.  sizes: the partitions'
    rows (weights summed with w, D11)."""
    S = sizes.size
    if schema.kinds[j] == "taxonomy":
        tx = schema.taxonomies[j]
        child = tx.anc[(tx.depth[lca] + 1)[lseg], v]
        return tx.child_pos[child], tx.fanout
    M = schema.sizes[j]
    soffs = np.cumsum(sizes) - sizes
    h = sizes // 2
    if w is None:
        m = np.sort(lseg * M + v)[soffs + h - 1] - np.arange(S) * M
    else:  # D11: the first code whose cumulative weight reaches h
        sk = lseg * M + v
        o = np.argsort(sk, kind="stable")
        m = sk[o][np.searchsorted(np.cumsum(w[o]), soffs + h, side="left")] - np.arange(S) * M
    mm = m[lseg]
    pidx = (v > mm).astype(np.int64)
    if mode == "strict":
        return pidx, 2
    q = h - np.bincount(lseg[v < mm], minlength=S)
    eq = np.flatnonzero(v == mm)
    eseg = lseg[eq]
    if vec is None:
        rank = np.arange(eq.size) - np.searchsorted(eseg, eseg)
        left = rank < q[eseg]
    else:
        gk = eseg * n_vec + vec[eq]
        ug, inv, cnt = np.unique(gk, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
        qv = largest_remainder(ug // n_vec, cnt, q, ug % n_vec)
        o = np.argsort(inv, kind="stable")
        gstart = np.cumsum(cnt) - cnt
        rank = np.empty(eq.size, np.int64)
        rank[o] = np.arange(eq.size) - gstart[inv[o]]
        left = rank < qv[inv]
    pidx[eq[~left]] = 1
    return pidx, 2


def _cuts_ok(pred, key, S, F, sa_rows, schema, persons=None, whole=False, weights=None):
    """Per partition: its cut has >= 2 non-empty parts and every non-empty part passes (D5);
    over persons (D9), keeping each person in one part with whole (D10); rows weighted (D11)."""
    psz = np.bincount(key, minlength=S * F)
    nz = psz > 0
    comp = np.cumsum(nz) - 1
    good = np.ones(S * F, bool)
    good[nz] = parts_ok(pred, comp[key], int(nz.sum()), sa_rows, schema, persons, weights)
    ok = good.reshape(S, F).all(axis=1) & (nz.reshape(S, F).sum(axis=1) >= 2)
    if whole:
        ok &= persons_whole(key // F, key, persons, S)
    return ok


def _weights(weights, n, mode, persons):
    """The weight per row (D11), or None."""
    if weights is None:
        return None
    if mode != "strict" or persons is not None:
        raise invalid("weights need mode strict without persons: relaxed cuts split equal rows by row order, "
                      "and persons are counted distinct", hint="give one row per record instead")
    w = code_array(weights, "weights")
    if w.size != n or (w.size and w.min() < 1):
        raise invalid(f"weights must be {n} integers >= 1, one per row")
    return w


def _count(key, m, weights):
    """Per label 0..m-1 the sum of the weights of its rows (exact integers)."""
    return np.bincount(key, weights=weights, minlength=m).astype(np.int64)


def _persons(persons, n, whole):
    """The person code per row (D9), or None; whole needs persons (D10)."""
    if persons is None:
        if whole:
            raise invalid("whole=True needs persons", hint="give a person code per row")
        return None
    p = code_array(persons, "persons")
    if p.size != n:
        raise invalid(f"persons has {p.size} codes for {n} rows; give one person code per row")
    return p


def _result(done, perm, n, schema, ids, rounds):
    start = np.concatenate(done["start"])
    o = np.argsort(start)
    sizes = np.concatenate(done["len"])[o]
    weighted = np.concatenate(done["size"])[o]
    lo = np.concatenate(done["lo"])[o]
    hi = np.concatenate(done["hi"])[o]
    lca = np.concatenate(done["lca"])[o]
    origin = ids[np.concatenate(done["origin"])[o]]
    pid = np.empty(n, np.int64)
    pid[perm] = np.repeat(np.arange(sizes.size), sizes)
    los, his, nodes = [], [], []
    for j, kd in enumerate(schema.kinds):
        if kd == "taxonomy":
            labels = schema.taxonomies[j].labels
            los.append(None)
            his.append(None)
            nodes.append([labels[u] for u in lca[:, j].tolist()])
        else:
            los.append(lo[:, j].copy())
            his.append(hi[:, j].copy())
            nodes.append(None)
    return Result(partition=pid, sizes=weighted.astype(np.int64), lo=tuple(los), hi=tuple(his), nodes=tuple(nodes),
                  origin=origin, rounds=rounds)


def mondrian(qi_codes, sa_codes=(), *, kinds, k=None, l=None, joint=False, predicate=None,
             mode="strict", sizes=None, values=None, taxonomies=None, sa_sizes=None,
             sa_names=None, start=None, nodes=None, seed=None, persons=None, whole=False):
    """Mondrian in one call: builds the schema (domains from the data unless given) and the
    predicate k-anonymity(k) & distinct l-diversity(l) & predicate, then runs `partition`.

    l        per SA channel; with joint=True over the SA vectors instead (the vector code is
             appended as the last channel, which a custom predicate then also sees)
    persons  per row a person code: k and l count persons (D9); whole keeps them whole (D10)
    others   as in `schema` and `partition`
    """
    qi_codes = [code_array(q, f"QI {j}") for j, q in enumerate(qi_codes)]
    sa_codes = [code_array(s, f"SA {c}") for c, s in enumerate(sa_codes)]
    kinds = tuple(kinds)
    if not qi_codes:
        raise invalid("no QI code arrays given", hint="give one code array per quasi-identifier")
    if len(kinds) != len(qi_codes):
        raise invalid(f"{len(kinds)} kinds for {len(qi_codes)} QI code arrays; give one kind per QI")
    check_lengths(qi_codes, sa_codes)
    n = qi_codes[0].size
    if k is not None:
        k = positive(k, "k")
        if k > n:
            raise invalid(f"k = {k} is larger than the table ({n} rows)",
                          hint="lower k, or publish a larger table")
        npers = None if persons is None else np.unique(np.asarray(persons)).size
        if npers is not None and k > npers:
            raise invalid(f"k = {k} is larger than the {npers} persons of the table ({n} rows)",
                          hint="lower k: k counts persons")
    if sizes is None:
        sizes = [None if kd == "taxonomy" or (values is not None and values[j] is not None)
                 else (int(qi_codes[j].max()) + 1 if qi_codes[j].size else 1)
                 for j, kd in enumerate(kinds)]
    if sa_sizes is None:
        sa_sizes = [int(s.max()) + 1 if s.size else 1 for s in sa_codes]
    sa_sizes = list(sa_sizes)
    if joint:
        if not sa_codes:
            raise invalid("joint l-diversity needs SA codes")
        vec, keys = sa_vector_codes(sa_codes)
        sa_codes = sa_codes + [vec]
        sa_sizes.append(max(1, len(keys)))
        if sa_names is not None:
            sa_names = list(sa_names) + ["sa_vector"]
    sc = schema(kinds, sizes, values=values, taxonomies=taxonomies, sa_sizes=sa_sizes,
                sa_names=sa_names, seed=seed)
    preds = []
    if k is not None:
        preds.append(k_anonymity(k))
    if l is not None:
        l = positive(l, "l")
        if not sa_codes:
            raise invalid("l-diversity needs at least one SA", hint="give sa_codes")
        chans = [len(sa_codes) - 1] if joint else list(range(len(sa_codes)))
        for c in chans:
            have = np.unique(sa_codes[c]).size
            if have < l:
                what = "distinct SA vectors" if joint else f"distinct values of SA {c}"
                raise invalid(f"l = {l} but the table has only {have} {what}",
                              hint="lower l; no partition can be more diverse than the table")
        preds.append(distinct_l_diversity(l, channels=chans))
    if predicate is not None:
        preds.append(check_predicate(predicate))
    if not preds:
        raise invalid("give k, l or a predicate", hint="e.g. k=10 for k-anonymity")
    pred = preds[0] if len(preds) == 1 else all_of(*preds)
    return partition(qi_codes, sa_codes, sc, pred, mode=mode, start=start, nodes=nodes,
                     persons=persons, whole=whole)


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


def _check_start_nodes(nodes, schema, W, init_key, ids):
    if nodes is None:
        return
    if not isinstance(nodes, dict):
        if ids.size != 1:
            raise invalid("nodes for several initial partitions must be a mapping id -> nodes")
        nodes = {ids[0]: nodes}
    pos = {x: i for i, x in enumerate(ids.tolist())}
    for key, ns in nodes.items():
        if key not in pos:
            raise invalid(f"nodes names initial partition {key!r}, which has no rows")
        m = init_key == pos[key]
        check_nodes(ns, schema, [w[m] for w in W], [w[m] for w in W])
