"""Where Mondrian cuts a partition: the rules both drivers share (normalized widths and LCAs,
D1; the largest-remainder share of the median rows, D3; SA-vector codes) and the cut decided
from aggregates alone (`freq_set`, `cut_candidates`, `choose_cut`; D2-D5, D8), with `assign`
to send the rows of a partition to the parts of its cut (see `mondrian` for the decisions).

Why a module of its own: `mondrian_sql` cuts the large partitions from GROUP BY frequency sets
without pulling their rows; this is that pure decision, which must agree cut for cut with the
vectorized in-memory driver (`mondrian.partition`) built on the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pganon_engine.core.errors import invalid

from .mondrian_predicates import check_predicate, evaluate
from .mondrian_schema import check_nodes, check_rows, code_array, in_range, working

__all__ = ["MODES", "sa_vector_codes", "FreqSet", "freq_set", "freq_sets", "Cut", "cut_candidates",
           "choose_cut", "parts_pass", "assign"]

MODES = ("strict", "relaxed")


def check_mode(mode):
    if mode not in MODES:
        raise invalid(f"mode {mode!r} is not one of {', '.join(MODES)}",
                      hint="'strict' (default) or 'relaxed' multidimensional partitioning")
    return mode


# --------------------------------------------------------------------------------------------
# Shared rules: widths and LCAs (D1), largest remainder (D3), SA vectors
# --------------------------------------------------------------------------------------------


def widths(schema, lo, hi):
    """Per QI the normalized widths of partitions with working-code bounds lo[j], hi[j]
    (arrays), and for taxonomy QIs the LCA node ids.  Unsplittable dimensions get 0."""
    widths, lcas = [], []
    for j, kd in enumerate(schema.kinds):
        span = schema.span(j)
        if kd == "taxonomy":
            tx = schema.taxonomies[j]
            u = tx.lca(lo[j], hi[j])
            w = np.where(tx.has_children[u], (tx.last[u] - tx.first[u] + 1) / span, 0.0)
            lcas.append(u)
        else:
            lcas.append(None)
            if span <= 0:
                w = np.zeros(np.shape(lo[j]))
            elif schema.values[j] is not None:
                v = schema.values[j]
                w = (v[hi[j]] - v[lo[j]]) / span
            else:
                w = (hi[j] - lo[j]) / span
        widths.append(np.asarray(w, np.float64))
    return np.stack(widths, axis=-1), lcas


def dim_order(schema, width):
    """Per row of width (A, d): QI indices by decreasing width, ties by schema.priority."""
    pr = np.broadcast_to(np.asarray(schema.priority), width.shape)
    return np.lexsort((pr, -width), axis=-1)


def largest_remainder(gseg, cnt, q, tie):
    """Share q[s] rows over the groups of segment s (gseg sorted; cnt rows per group) in
    proportion to cnt: floor shares, then +1 by decreasing remainder, ties by tie (D3)."""
    S = q.size
    g = np.bincount(gseg, weights=cnt, minlength=S).astype(np.int64)
    prod = q[gseg] * cnt
    base = prod // g[gseg]
    rem = prod % g[gseg]
    left = q - np.bincount(gseg, weights=base, minlength=S).astype(np.int64)
    o = np.lexsort((tie, -rem, gseg))
    gs = gseg[o]
    rank = np.arange(o.size) - np.searchsorted(gs, gs)
    extra = np.zeros(o.size, np.int64)
    extra[o] = rank < left[gs]
    return base + extra


def sa_vector_codes(sa_codes):
    """The SA-vector (fingerprint) code of every row: ids 0.. in lexicographic order of the
    vectors of channel codes.  Returns (codes (n,), vectors (m, channels))."""
    cols = [np.asarray(c, np.int64) for c in sa_codes]
    if not cols:
        raise invalid("sa_vector_codes needs at least one SA code array")
    n = cols[0].size
    if any(c.size != n for c in cols):
        raise invalid("SA code arrays of different lengths; give one code per row for every SA")
    if n == 0:
        return np.zeros(0, np.int64), np.zeros((0, len(cols)), np.int64)
    o = np.lexsort(cols[::-1])
    mat = np.stack([c[o] for c in cols], axis=1)
    new = np.ones(n, bool)
    new[1:] = (mat[1:] != mat[:-1]).any(axis=1)
    ids = np.cumsum(new) - 1
    out = np.empty(n, np.int64)
    out[o] = ids
    return out, mat[new]


# --------------------------------------------------------------------------------------------
# Aggregates: frequency sets and the pure split decision
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FreqSet:
    """One QI's frequency set of a partition: rows of GROUP BY (QI code, SA channel codes),
    i.e. group g has counts[g] rows with QI code codes[g] and SA codes sa[c][g] (D8)."""

    codes: np.ndarray
    counts: np.ndarray
    sa: tuple = ()


def freq_set(codes, counts, sa=()):
    """A `FreqSet` from GROUP BY output (arrays or lists of equal length; counts >= 1)."""
    codes = code_array(codes, "frequency set codes")
    counts = code_array(counts, "frequency set counts")
    sa = tuple(code_array(s, f"frequency set SA channel {c}") for c, s in enumerate(sa))
    if counts.size != codes.size or any(s.size != codes.size for s in sa):
        raise invalid("frequency set arrays have different lengths; give one count per group row")
    if (counts < 1).any():
        raise invalid("frequency set counts must be >= 1", hint="drop empty groups")
    return FreqSet(codes=codes, counts=counts, sa=sa)


def freq_sets(qi_codes, sa_codes, schema):
    """The frequency sets of one partition from its rows (what the SQL GROUP BYs compute)."""
    qs, ss, n = check_rows(qi_codes, sa_codes, schema)
    out = []
    for q in qs:
        cols = [q, *ss]
        o = np.lexsort(cols[::-1])
        mat = np.stack([c[o] for c in cols], axis=1)
        new = np.ones(n, bool)
        new[1:] = (mat[1:] != mat[:-1]).any(axis=1)
        starts = np.flatnonzero(new)
        cnt = np.diff(np.append(starts, n))
        keys = mat[starts]
        out.append(FreqSet(codes=keys[:, 0].copy(), counts=cnt.astype(np.int64),
                           sa=tuple(keys[:, 1 + c].copy() for c in range(len(ss)))))
    return out


@dataclass(frozen=True)
class Cut:
    """An allowable cut of one partition on QI `dim`.

    kind 'range' (numeric/ordinal): part 0 = codes <= value, part 1 = codes > value (strict);
    relaxed: part 0 = codes < value plus, of the rows with code == value, the first take[v] in
    row order of every SA vector v (a tuple of channel codes; () without channels), part 1 the
    rest.  kind 'taxonomy': `node` (the LCA) is split into `children` (labels of the children
    that hold rows), part i = codes under children[i].  sizes: rows per part."""

    dim: int
    kind: str
    sizes: tuple
    value: object = None
    relaxed: bool = False
    take: object = None
    node: object = None
    children: tuple = ()


def choose_cut(freqs, schema, predicate, *, mode="strict", nodes=None):
    """The cut Mondrian makes on a partition given only its aggregates, or None (final).

    freqs      per QI a `FreqSet` of the partition (all with the same total)
    predicate  admissible-cut test of a part (D7)
    mode       'strict' or 'relaxed'
    nodes      per QI None or the partition's current taxonomy node (a check: codes must lie
               under it; the cut uses the LCA of the codes, D1)
    """
    mode = check_mode(mode)
    pred = check_predicate(predicate)
    for cut, sizes, hists in cut_candidates(freqs, schema, mode=mode, nodes=nodes):
        if _evaluate_parts(pred, sizes, hists, schema).all():
            return cut
    return None


def parts_pass(predicate, sizes, hists, schema):
    """Does every non-empty part pass the predicate?  sizes (parts,), hists per SA channel
    (parts, sa_size): what `cut_candidates` gives, or the persons' view of it (D9)."""
    return bool(_evaluate_parts(check_predicate(predicate), np.asarray(sizes, np.int64),
                                [np.asarray(h, np.int64) for h in hists], schema).all())


def cut_candidates(freqs, schema, *, mode="strict", nodes=None):
    """The cuts D5 tries on a partition, in its order, as (cut, part sizes, part SA histograms)
    over rows: D1's dimension order, the median / taxonomy cut of each (D2-D4), cuts with fewer
    than two non-empty parts left out.  The first whose parts pass the predicate is the cut
    (`choose_cut`); a caller judging persons (D9) counts them per part itself.  Arguments as
    `choose_cut`; the input is checked at the call, the cuts are made as they are read."""
    mode = check_mode(mode)
    d = schema.d
    freqs = list(freqs)
    if len(freqs) != d:
        raise invalid(f"{len(freqs)} frequency sets for {d} QIs; give one per QI")
    nch = len(schema.sa_sizes)
    size = None
    work, lo, hi = [], [], []
    for j, fs in enumerate(freqs):
        if not isinstance(fs, FreqSet):
            raise invalid(f"QI {j}: frequency sets must be FreqSet objects",
                          hint="build them with freq_set()")
        if len(fs.sa) != nch:
            raise invalid(f"QI {j}: the frequency set has {len(fs.sa)} SA channels, the schema {nch}",
                          hint="group by the QI code and every SA channel (D8)")
        tot = int(fs.counts.sum())
        if size is None:
            size = tot
        elif tot != size:
            raise invalid(f"QI {j}: frequency set counts sum to {tot}, QI 0's to {size}",
                          hint="every frequency set describes the same partition")
        w = working(fs.codes, schema, j, f"QI {j} frequency set")
        for c, s in enumerate(fs.sa):
            in_range(s, schema.sa_sizes[c], f"SA channel {c} of QI {j}'s frequency set")
        work.append(w)
        lo.append(np.array([w.min()]) if w.size else np.array([0]))
        hi.append(np.array([w.max()]) if w.size else np.array([0]))
    if not size:
        raise invalid("the partition is empty", hint="a frequency set needs at least one row")
    check_nodes(nodes, schema, lo, hi)
    return _candidates(freqs, work, lo, hi, size, schema, mode)


def _candidates(freqs, work, lo, hi, size, schema, mode):
    width, lcas = widths(schema, lo, hi)
    order = dim_order(schema, width)[0]
    for j in order:
        if width[0, j] <= 0:
            break
        fs, w = freqs[j], work[j]
        if schema.kinds[j] == "taxonomy":
            tx = schema.taxonomies[j]
            u = int(lcas[j][0])
            child = tx.anc[tx.depth[u] + 1][w]
            pos = tx.child_pos[child]
            kids = [c for c in tx.children[u] if (child == c).any()]
            part = np.searchsorted([tx.child_pos[c] for c in kids], pos)
            hists = [_hist_add(len(kids), v, part, s, fs.counts)
                     for s, v in zip(fs.sa, schema.sa_sizes)]
            sizes = np.bincount(part, weights=fs.counts, minlength=len(kids)).astype(np.int64)
            cut = Cut(dim=int(j), kind="taxonomy", sizes=tuple(int(x) for x in sizes),
                      node=tx.labels[u], children=tuple(tx.labels[c] for c in kids))
        else:
            cut, sizes, hists = _range_cut(j, fs, size, mode, schema)
            if cut is None:
                continue
        if (sizes > 0).sum() < 2:
            continue
        yield cut, sizes, hists


def _hist_add(m, v, part, sa, counts):
    h = np.zeros((m, v), np.int64)
    np.add.at(h, (part, sa), counts)
    return h


def _range_cut(j, fs, size, mode, schema):
    """The median cut on a numeric/ordinal QI from its frequency set (D2, D3)."""
    uc, inv = np.unique(fs.codes, return_inverse=True)
    inv = inv.reshape(-1)
    per = np.bincount(inv, weights=fs.counts).astype(np.int64)
    h = size // 2
    m = int(uc[np.searchsorted(np.cumsum(per), h)])
    chans = list(zip(fs.sa, schema.sa_sizes))
    if mode == "strict":
        if m == uc[-1]:
            return None, None, None
        part = (fs.codes > m).astype(np.int64)
        sizes = np.bincount(part, weights=fs.counts, minlength=2).astype(np.int64)
        hists = [_hist_add(2, v, part, s, fs.counts) for s, v in chans]
        return Cut(dim=int(j), kind="range", sizes=tuple(int(x) for x in sizes), value=m), sizes, hists
    lt = fs.codes < m
    eq = fs.codes == m
    q = h - int(fs.counts[lt].sum())
    hists = [_hist_add(2, v, np.zeros(int(lt.sum()), np.int64), s[lt], fs.counts[lt])
             for s, v in chans]
    if chans:
        vec, keys = sa_vector_codes([s[eq] for s in fs.sa])
        cnt = np.bincount(vec, weights=fs.counts[eq]).astype(np.int64)
    else:
        keys = np.zeros((1, 0), np.int64)
        cnt = np.array([int(fs.counts[eq].sum())], np.int64)
    qv = largest_remainder(np.zeros(cnt.size, np.int64), cnt, np.array([q], np.int64),
                            np.arange(cnt.size))
    for c, (s, v) in enumerate(chans):
        np.add.at(hists[c][0], keys[:, c], qv)
        tot = np.zeros(v, np.int64)
        np.add.at(tot, s, fs.counts)
        hists[c][1] = tot - hists[c][0]
    sizes = np.array([h, size - h], np.int64)
    take = {tuple(int(x) for x in keys[i]): int(qv[i]) for i in range(cnt.size) if qv[i]}
    cut = Cut(dim=int(j), kind="range", sizes=(h, size - h), value=m, relaxed=True, take=take)
    return cut, sizes, hists


def _evaluate_parts(pred, sizes, hists, schema):
    nz = sizes > 0
    if not getattr(pred, "uses_sa", True) or not schema.sa_sizes:
        hs = ()
    else:
        hs = [h[nz] for h in hists]
    return evaluate(pred, sizes[nz], hs, schema.sa_names)


def assign(cut, qi_codes, sa_codes, schema):
    """Part index (0..) of every row of the partition `cut` was chosen for; rows in row order
    (the order that decides which median rows a relaxed cut sends left, D3)."""
    qs, ss, n = check_rows(qi_codes, sa_codes, schema)
    x = qs[cut.dim]
    if cut.kind == "taxonomy":
        tx = schema.taxonomies[cut.dim]
        r = tx.ranks(x, f"QI {cut.dim}")
        part = np.full(n, -1, np.int64)
        for i, c in enumerate(cut.children):
            u = tx.node_id(c)
            part[(r >= tx.first[u]) & (r <= tx.last[u])] = i
        if (part < 0).any():
            raise invalid(f"a row's code {int(x[np.flatnonzero(part < 0)[0]])} is under none of "
                          f"the cut's children", hint="assign the rows the cut was chosen for")
        return part
    part = (x > cut.value).astype(np.int64)
    if cut.relaxed:
        eq = np.flatnonzero(x == cut.value)
        if ss:
            vec = np.stack([s[eq] for s in ss], axis=1)
            keys = [tuple(row) for row in vec.tolist()]
        else:
            keys = [()] * eq.size
        seen = {}
        for i, key in zip(eq.tolist(), keys):
            t = seen.get(key, 0)
            seen[key] = t + 1
            part[i] = 0 if t < cut.take.get(key, 0) else 1
    return part
