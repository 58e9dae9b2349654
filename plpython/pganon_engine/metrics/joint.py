"""The joint distribution an analyst can rebuild from a release, and the measures read off it
(issue 6): KL divergence to the original, the attacker's confidence in a record's sensitive
values, discernibility, class sizes, NCP and the shared COUNT workload.

Every release shape becomes one `Release` (`reconstruct.py` reads them from the database): a
list of classes, each with a weight (records, possibly fractional) and one cell per attribute
(the QIs, then the SAs).  A class's records are spread uniformly over each cell and
independently across attributes:

  exact value   every record of the class has it
  (lo, hi)      numeric: uniform over the attribute's observed values in [lo, hi]
  set           uniform over the set's observed values (a value set, a hierarchy node's leaves)
  {value: m}    a multiset: the value with probability m / total (an anatomy group, a Rating ID)
  '*'           suppressed: uniform over the attribute's observed values

Decisions:

- J1  P, the original distribution, is every source row the release was made from, published or
      suppressed; the release's suppressed rows are one class of '*' cells, so suppression costs
      utility here instead of vanishing from both sides.
- J2  Domains are the observed distinct values of each attribute (numbers as floats, dates as
      days since 1970-01-01), and a numeric range spreads its records over the observed values
      inside it: the uniform-within-generalization reading of Kifer & Gehrke (2006), which keeps
      KL finite for non-integer columns, where point masses of a continuous range would be 0.
- J3  KL(P || P*) = sum over the distinct original tuples x of P(x) ln(P(x) / P*(x)), natural
      log, over the QIs and the SAs jointly.  A tuple with P*(x) = 0 (a release that does not
      cover one of its records) makes it infinite: reported as None with covers_all False.
- J4  Confidence: an attacker who knows a target's QI values x_Q believes its value s of SA j
      with probability P*(x_Q, s) / P*(x_Q).  Reported per SA (and for the SA vector) as the
      mean over the original records of the belief in their own true value, and its maximum
      (1.0: some record's value is certain).  The baseline with no release at all is the
      value's frequency in the table.
- J5  Shared workload: the release's cells as `workload` reads them; a numeric set becomes its
      [min, max] (as `utility.covered_view` does for hierarchy labels) and a class with numeric
      multisets is split into one class per value combination (weights m / total), which is the
      same estimate since the estimator is linear in each attribute's fraction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import product

import numpy as np

from pganon_engine.core.errors import bad_data, invalid

from . import estimate, querygen, workload

SUPPRESSED = "*"
_RADIX_MAX = 1 << 62
_CHUNK = 1 << 22  # elements of one (classes x candidates) block


@dataclass
class Release:
    """What `reconstruct` reads: attribute names and kinds ('numeric' | 'categorical'), the
    number of QIs (the first `n_qis` attributes), classes as (cells tuple, weight), and the
    sizes of the release's own equivalence classes (for DM and the size distribution)."""

    names: list
    kinds: list
    n_qis: int
    cells: list = field(default_factory=list)
    weights: list = field(default_factory=list)
    group_sizes: list = field(default_factory=list)
    suppressed: int = 0

    def add(self, cells, weight):
        self.cells.append(tuple(cells))
        self.weights.append(float(weight))

    def finish(self):
        """Add the suppressed records as one class of '*' cells (J1)."""
        if self.suppressed:
            self.add([SUPPRESSED] * len(self.names), self.suppressed)
        return self


class Original:
    """The distinct original tuples with their counts, encoded per attribute (J2)."""

    def __init__(self, names, kinds, rows, counts):
        self.names, self.kinds = list(names), list(kinds)
        a = len(self.names)
        if not rows:
            raise bad_data("the release's source has no rows to compare with")
        self.counts = np.asarray(counts, dtype=np.float64)
        self.n = float(self.counts.sum())
        self.values, self.index, cols = [], [], []
        for i in range(a):
            col = [r[i] for r in rows]
            if self.kinds[i] == "numeric":
                vals = np.unique(np.asarray(col, dtype=np.float64))
                codes = np.searchsorted(vals, np.asarray(col, dtype=np.float64))
                self.values.append(vals)
                self.index.append(None)
            else:
                vals = sorted(set(col))
                idx = {v: c for c, v in enumerate(vals)}
                codes = np.fromiter((idx[v] for v in col), dtype=np.int64, count=len(col))
                self.values.append(vals)
                self.index.append(idx)
            cols.append(codes)
        self.X = np.stack(cols, axis=1).astype(np.int64) if a else np.zeros((len(rows), 0), dtype=np.int64)
        self.sizes = [len(v) for v in self.values]
        # per attribute: tuples sorted by code, and where each code's tuples start (candidates)
        self.order, self.starts = [], []
        for i in range(a):
            o = np.argsort(self.X[:, i], kind="stable")
            self.order.append(o)
            self.starts.append(np.searchsorted(self.X[o, i], np.arange(self.sizes[i] + 1)))

    def code(self, i, v):
        """The code of value v of attribute i, or None when it was never observed."""
        if self.kinds[i] == "numeric":
            try:
                f = float(v)
            except (TypeError, ValueError):
                return None
            c = int(np.searchsorted(self.values[i], f))
            return c if c < self.sizes[i] and self.values[i][c] == f else None
        return self.index[i].get(v)


class _Cells:
    """Cells of one attribute turned into probability vectors over its codes, cached by cell."""

    def __init__(self, orig, i):
        self.orig, self.i = orig, i
        self.ids, self.vecs, self.support, self.exact = {}, [], [], []

    def id_of(self, cell):
        key = _key(cell)
        j = self.ids.get(key)
        if j is None:
            j = self.ids[key] = len(self.vecs)
            vec = self._vector(cell)
            self.vecs.append(vec)
            nz = np.flatnonzero(vec)
            self.support.append(nz)
            self.exact.append(int(nz[0]) if len(nz) == 1 and vec[nz[0]] == 1.0 else -1)
        return j

    def _vector(self, cell):
        o, i = self.orig, self.i
        D = o.sizes[i]
        vec = np.zeros(D)
        if isinstance(cell, str) and cell == SUPPRESSED:
            vec[:] = 1.0 / D
            return vec
        if isinstance(cell, Mapping):
            for v, m in cell.items():
                c = o.code(i, v)
                if c is not None and m > 0:
                    vec[c] += float(m)
        elif isinstance(cell, tuple) and o.kinds[i] == "numeric":
            lo, hi = float(cell[0]), float(cell[1])
            a, b = np.searchsorted(o.values[i], lo, "left"), np.searchsorted(o.values[i], hi, "right")
            vec[a:b] = 1.0
        elif isinstance(cell, (set, frozenset, list, tuple)):
            for v in cell:
                c = o.code(i, v)
                if c is not None:
                    vec[c] = 1.0
        else:
            c = o.code(i, cell)
            if c is not None:
                vec[c] = 1.0
        total = vec.sum()
        return vec / total if total > 0 else vec


def _key(cell):
    """A hashable key per distinct cell meaning: hashable cells are their own key (a range is a
    tuple of numbers, never tagged); a multiset is its sorted items tagged 'm'."""
    t = type(cell)
    if t is dict or (t is not str and isinstance(cell, Mapping)):
        return ("m", tuple(sorted(cell.items(), key=lambda kv: repr(kv[0]))))
    if t is set or t is list:
        return frozenset(cell)
    return cell


@dataclass
class Masses:
    """Per distinct original tuple: the release's weight on its full tuple, on its QI vector,
    and on its (QI vector, value of SA j) for every SA j (unnormalized: divide by the total
    weight for P*)."""

    full: np.ndarray
    qi: np.ndarray
    per_sa: list
    total: float


def masses(orig, rel):
    """The reconstruction's weights at every original tuple (J3, J4), one pass over the classes.

    Classes whose cells are all exact values (QIT+ST and GT+ST reconstructions, exact GT rows)
    are summed by key, vectorized.  The others are grouped by their QI cells: the group's
    candidates are the tuples that the QI attribute with the smallest support admits, its QI
    factor is computed once, and the SA factors of all its classes are gathered as one matrix
    (exact SA cells are matched by code)."""
    a, q = len(orig.names), rel.n_qis
    if list(rel.names) != orig.names:
        raise invalid(f"release attributes {rel.names} differ from the original's {orig.names}")
    m = orig.X.shape[0]
    full, qi = np.zeros(m), np.zeros(m)
    per_sa = [np.zeros(m) for _ in range(a - q)]
    total = float(sum(rel.weights))
    live = [(c, w) for c, w in zip(rel.cells, rel.weights) if w > 0]
    if not live:
        return Masses(full=full, qi=qi, per_sa=per_sa, total=total)
    tables = [_Cells(orig, i) for i in range(a)]
    ids = np.array([[t.id_of(c) for t, c in zip(tables, cells)] for cells, _ in live], dtype=np.int64).reshape(len(live), a)
    W = np.array([w for _, w in live])
    E = np.stack([np.asarray(tables[i].exact, dtype=np.int64)[ids[:, i]] for i in range(a)], axis=1) if a else ids
    exact = (E >= 0).all(axis=1)
    if exact.any():
        _exact_masses(orig, E[exact], W[exact], q, full, qi, per_sa)
    rest = np.flatnonzero(~exact)
    groups = {}
    for r in rest.tolist():
        groups.setdefault(tuple(ids[r, :q].tolist()), []).append(r)
    sa_radix = _radix([orig.sizes[i] for i in range(q, a)])
    sa_vecs = [np.stack(tables[i].vecs) for i in range(q, a)]
    X = orig.X
    for qkey, rows in groups.items():
        cand = _candidates(orig, tables, qkey)
        if cand is None or not len(cand):
            continue
        f = np.ones(len(cand))
        for i, cid in enumerate(qkey):
            f *= tables[i].vecs[cid][X[cand, i]]
        keep = f > 0
        if not keep.all():
            cand, f = cand[keep], f[keep]
            if not len(cand):
                continue
        rows = np.asarray(rows)
        w = W[rows]
        qi[cand] += f * w.sum()
        exact_sa = (E[rows, q:] >= 0).all(axis=1)
        if exact_sa.any():
            codes, ws = E[rows[exact_sa], q:], w[exact_sa]
            for j in range(a - q):
                wsum = np.bincount(codes[:, j], weights=ws, minlength=orig.sizes[q + j])
                per_sa[j][cand] += f * wsum[X[cand, q + j]]
            full[cand] += f * _match(codes, ws, X[cand, q:], sa_radix)
        other = rows[~exact_sa]
        step = max(1, _CHUNK // max(len(cand), 1))
        for s0 in range(0, len(other), step):
            part = other[s0:s0 + step]
            wp = W[part]
            prod = None
            for j in range(a - q):
                g = sa_vecs[j][ids[part, q + j]][:, X[cand, q + j]]
                per_sa[j][cand] += f * (wp @ g)
                prod = g if prod is None else prod * g
            full[cand] += f * (wp.sum() if prod is None else wp @ prod)
    return Masses(full=full, qi=qi, per_sa=per_sa, total=total)


def _exact_masses(orig, E, W, q, full, qi, per_sa):
    """Classes of exact cells: each attribute subset's weight sums, looked up per tuple."""
    X = orig.X
    full += _sum_at(E, W, X, orig.sizes)
    if q:
        qi += _sum_at(E[:, :q], W, X[:, :q], orig.sizes[:q])
    else:
        qi += W.sum()
    for j in range(len(per_sa)):
        cols = list(range(q)) + [q + j]
        per_sa[j] += _sum_at(E[:, cols], W, X[:, cols], [orig.sizes[c] for c in cols])


def _sum_at(codes, ws, tuples, sizes):
    """Per tuple: the summed weight of the classes with the same codes."""
    return _match(codes, ws, tuples, _radix(sizes))


def _radix(sizes):
    r, out = 1, []
    for s in sizes:
        out.append(r)
        r *= max(s, 1)
    return out if r < _RADIX_MAX else None


def _match(codes, ws, cand_codes, radix):
    """Per candidate: the summed weight of the exact classes whose SA codes equal its own."""
    if codes.shape[1] == 0:
        return np.full(len(cand_codes), ws.sum())
    if radix is not None:
        r = np.asarray(radix, dtype=np.int64)
        ck, tk = codes @ r, cand_codes @ r
    else:
        both = np.vstack([codes, cand_codes])
        _, inv = np.unique(both, axis=0, return_inverse=True)
        ck, tk = inv[:len(codes)], inv[len(codes):]
    keys, inv = np.unique(ck, return_inverse=True)
    sums = np.bincount(inv, weights=ws)
    pos = np.minimum(np.searchsorted(keys, tk), len(keys) - 1)
    return np.where(keys[pos] == tk, sums[pos], 0.0)


def _candidates(orig, tables, qkey):
    """Indices of the tuples admitted by the QI attribute whose cell admits the fewest."""
    if not qkey:
        return np.arange(orig.X.shape[0])
    best, best_n = None, None
    for i, cid in enumerate(qkey):
        sup = tables[i].support[cid]
        st = orig.starts[i]
        n = int((st[sup + 1] - st[sup]).sum())
        if best_n is None or n < best_n:
            best, best_n = i, n
    if not best_n:
        return None
    sup, st, o = tables[best].support[qkey[best]], orig.starts[best], orig.order[best]
    if len(sup) == 1 or (sup[-1] - sup[0] + 1 == len(sup)):
        return o[st[sup[0]]:st[sup[-1] + 1]]
    return np.concatenate([o[st[c]:st[c + 1]] for c in sup])


# ---------------------------------------------------------------------------------- measures


def kl_divergence(orig, ms):
    """KL(P || P*) in nats (J3); (value, covers_all)."""
    p = orig.counts / orig.n
    pstar = ms.full / ms.total if ms.total > 0 else ms.full
    if (pstar <= 0).any():
        return None, False
    return float(np.sum(p * np.log(p / pstar))), True


def confidence(orig, ms):
    """Mean and max belief of an attacker in each record's own SA values (J4), per SA and for
    the SA vector, next to the no-release baseline (the value's frequency)."""
    q = orig.X.shape[1] - len(ms.per_sa)
    w = orig.counts
    out = {}
    ok = ms.qi > 0
    names = orig.names[q:]
    for j, name in enumerate(names):
        c = np.where(ok, ms.per_sa[j] / np.where(ok, ms.qi, 1.0), 0.0)
        freq = np.bincount(orig.X[:, q + j], weights=w, minlength=orig.sizes[q + j]) / orig.n
        base = freq[orig.X[:, q + j]]
        out[name] = {"mean": float((c * w).sum() / orig.n), "max": float(c.max()) if len(c) else 0.0,
                     "baseline_mean": float((base * w).sum() / orig.n)}
    if len(names) > 1:
        c = np.where(ok, ms.full / np.where(ok, ms.qi, 1.0), 0.0)
        out["(all SAs)"] = {"mean": float((c * w).sum() / orig.n), "max": float(c.max()) if len(c) else 0.0}
    return out


def discernibility(group_sizes, suppressed, n):
    """DM = sum |E|^2 over the release's equivalence classes + suppressed * N (Bayardo & Agrawal)."""
    g = np.asarray(group_sizes, dtype=np.float64)
    return float((g * g).sum() + suppressed * n)


def size_distribution(group_sizes, bins=(1, 2, 3, 4, 5, 10, 20, 50, 100, 500, 1000)):
    """Records per class-size band: [(lo, hi, classes, records)] for the report's histogram."""
    g = np.asarray(group_sizes, dtype=np.int64)
    edges = list(bins) + [max(int(g.max()) + 1 if len(g) else 1, bins[-1] + 1)]
    out = []
    for lo, hi in zip(edges, edges[1:]):
        sel = (g >= lo) & (g < hi)
        if sel.any():
            out.append({"lo": int(lo), "hi": int(hi - 1), "classes": int(sel.sum()), "records": int(g[sel].sum())})
    return out


# ------------------------------------------------------------------------- shared workload


def workload_domains(orig, expand):
    """`workload.Domain`s of the original records (one value per record: the distinct tuples
    repeated by their counts, `expand`)."""
    doms = []
    for i, name in enumerate(orig.names):
        col = orig.X[expand, i]
        if orig.kinds[i] == "numeric":
            vals = orig.values[i][col]
            integral = bool(np.all(vals == np.round(vals)))
            doms.append(workload.Domain.numeric(name, vals.astype(np.int64) if integral else vals))
        else:
            doms.append(workload.Domain.categorical(name, orig.values[i], col))
    return doms


def workload_cells(orig, rel, split=True):
    """The release's classes as `workload` cells (J5): numeric sets -> [min, max]; classes with
    numeric multisets split per value combination (split=False: a numeric multiset is its
    [min, max] too, which is what NCP charges for it); categorical sets and multisets keep their
    observed values (a hierarchy node may cover leaves the table does not have).  A cell's
    conversion is computed once per distinct cell."""
    memo = [dict() for _ in orig.kinds]
    cells, weights = [], []
    for cs, w in zip(rel.cells, rel.weights):
        parts, single = [], True
        for i, c in enumerate(cs):
            key = _key(c)
            part = memo[i].get(key)
            if part is None:
                part = memo[i][key] = _workload_part(orig, i, c, split)
            parts.append(part)
            single = single and len(part) == 1
        if single:
            cells.append(tuple(p[0][0] for p in parts))
            weights.append(w)
            continue
        for combo in product(*parts):
            f = w
            for _, share in combo:
                f *= share
            cells.append(tuple(x for x, _ in combo))
            weights.append(f)
    return cells, weights


def _workload_part(orig, i, c, split):
    """[(workload cell, share)] of one published cell of attribute i (J5)."""
    kind = orig.kinds[i]
    if kind == "categorical" and isinstance(c, Mapping):
        return [({v: m for v, m in c.items() if v in orig.index[i]}, 1.0)]
    if kind == "categorical" and isinstance(c, (set, frozenset, list)):
        return [(frozenset(v for v in c if v in orig.index[i]), 1.0)]
    if kind == "numeric" and isinstance(c, Mapping) and split:
        tot = float(sum(c.values()))
        return [(float(v), m / tot) for v, m in c.items() if m > 0]
    if kind == "numeric" and isinstance(c, Mapping):
        vals = [float(v) for v, m in c.items() if m > 0]
        return [((min(vals), max(vals)), 1.0)]
    if kind == "numeric" and isinstance(c, (set, frozenset, list)):
        vals = [float(v) for v in c]
        return [((min(vals), max(vals)), 1.0)]
    return [(c, 1.0)]


def project(cells, weights, n_qis, j):
    """The classes as a workload on the QIs and SA j sees them: the other SAs' cells become '*'
    (never read: those queries do not constrain them) and classes that then coincide are merged,
    so estimating costs classes of (QI cells, SA j cell), not of every SA combination."""
    merged = {}
    for c, w in zip(cells, weights):
        key = tuple(_key(x) for x in c[:n_qis]) + (_key(c[n_qis + j]),)
        hit = merged.get(key)
        if hit is None:
            merged[key] = [c[:n_qis] + tuple(c[n_qis + jj] if jj == j else SUPPRESSED
                                              for jj in range(len(c) - n_qis)), w]
        else:
            hit[1] += w
    return [v[0] for v in merged.values()], [v[1] for v in merged.values()]


def shared_workload(doms, n_qis, theta, n, seed, qd=2):
    """Spec 003 §3.2's ARE workload, one per SA: qd random QIs plus the SA, each constrained to
    a fraction theta^(1/(qd+1)) of its domain (workload W6); n queries split over the SAs."""
    qis = [d.name for d in doms[:n_qis]]
    sas = [d.name for d in doms[n_qis:]]
    qd = min(qd, len(qis))
    out = []
    if not sas:
        return [(None, querygen.make_queries(doms, theta, n=n, seed=seed, qis=qis, qd=qd, scheme="domain"))]
    per = [n // len(sas) + (1 if j < n % len(sas) else 0) for j in range(len(sas))]
    for j, sa in enumerate(sas):
        if per[j]:
            out.append((j, querygen.make_queries(doms, theta, n=per[j], seed=seed + j, qis=qis + [sa], qd=qd,
                                                 always=(sa,), scheme="domain")))
    return out


def are(workloads, prepared):
    """Mean relative error over all queries of the workloads (eq. 8 / 003's ARE): `workloads`
    as `shared_workload` returns them, `prepared(j)` the release `estimate.prepare`d for SA j's
    queries (j None: the whole release)."""
    true, est = [], []
    for j, wl in workloads:
        true.append(wl.counts if wl.counts is not None else workload.true_counts(wl))
        est.append(estimate.estimated_counts(wl, prepared(j)))
    t, e = np.concatenate(true), np.concatenate(est)
    err = estimate.query_error(None, t, e)
    return None if math.isnan(err.mean) else float(err.mean)
