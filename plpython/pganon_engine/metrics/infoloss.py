"""The unified information-loss model of Mauger, Le Mahec and Dequen (2023) (spec
001-metrics-strategies.md §1.4-1.7): a metric is a set of non-negative weights on the edges of
every QI hierarchy, and every cost is a path sum of those weights.

From the weights come D_j(v), the cost of lifting node v of hierarchy j to the root, and from D
everything else (derived identities of §1.4): the costs matrix M(v, v') = D(v) - D(LCA(v, v')),
the merge cost of two tuples (Def. 6) = the sum over attributes of weighted tree distances, the
table cost mu_T = sum over cells of D(original) - D(generalized), and the alteration
100 * mu_T(T_gen) / mu_T(T*).  GAA compares merge costs, and ties decide its choices, so all
values are exact: `fractions.Fraction`, and for vectorized scans integers after scaling by the
least common denominator of all D values (`Metric.scaled`).

Decisions (spec items in brackets):

- I1  The seven metrics of §1.6 with lvl(v) and the height h read as in A2 (see
      `pganon_engine.hierarchy.tree`, H2) and N_j = nl(root):
        distortion  w1 * [1 / (h - lvl(x'))] / Harm(h - 1)         (literal, the default)
                    w1 * sum over the levels L the edge rises through of [1 / (h - L)] / Harm
                    with distortion_mode='padded' [A2]; both agree on balanced trees
        ncp         (nl(x') - nl(x)) / N
        total       (lvl(x') - lvl(x)) / (h - 1)
        llm / wllm  (nl(x') - nl(x)) * w2 / * w1
        nllm / wnllm  ncp * w2 / ncp * w1
      and 'custom': user weights, one per edge (child label -> weight), as in Figure 2.
- I2  w1(Q_j) = 1 - (h_j - 1)^m / sum_i (h_i - 1)^m with m the number of QIs, literally
      (Def. 8); with m = 1 w1 is 1 instead of 0, and a QI set whose hierarchies are all flat
      (height 1) is refused for the w1 metrics [A3].  w2(Q_j) = h_max / h_j.
- I3  Custom weights are exact: ints, Fractions, Decimals and numeric strings as given; a float
      is read through its shortest repr (0.1 is 1/10).  Negative or missing weights are refused.
- I4  Alteration of a table whose all-root cost is 0 (every hierarchy flat) is 0.  p_gen counts
      the cells whose value was replaced (lvl(f) > lvl(e) is f != e, since f generalizes e),
      p_root the cells at the root; both are percentages of rows * QIs [Def. 9].  Tables are
      given as distinct original tuples with their row counts (counts default to 1 each).
- I5  NAUC = (1 / (b - a)) * integral over [a, b] of the curve of a criterion against k, by
      the trapezoid rule on the linear k axis through the computed points [A11]; a or b
      between two grid points are reached by linear interpolation.  l-diversity NAUCs are
      100 * NAUC / l_div(T*), t-closeness NAUCs 100 * NAUC (§1.7).
"""

import math
from fractions import Fraction

import numpy as np

from pganon_engine.core.errors import invalid
from pganon_engine.core.params import shown, shown_values
from pganon_engine.hierarchy.tree import Hierarchy

METRICS = ("distortion", "ncp", "total", "llm", "nllm", "wllm", "wnllm")
DISTORTION_MODES = ("literal", "padded")
W1_METRICS = ("distortion", "wllm", "wnllm")
# Largest integer a scan may reach and still be exact in int64.
_INT64_SAFE = 2 ** 62


# ------------------------------------------------------------------------------- weightings


def w1(heights):
    """w1(Q_j) = 1 - (h_j - 1)^m / sum_i (h_i - 1)^m, the 'wid' weighting (Def. 8, I2)."""
    heights = list(heights)
    m = len(heights)
    if m == 1:
        return [Fraction(1)]
    total = sum((h - 1) ** m for h in heights)
    if total == 0:
        raise invalid("every hierarchy of the QIs has height 1, so w1 is undefined",
                      hint="give at least one QI a hierarchy with an inner level, or use a "
                           "metric without w1 (ncp, total, llm, nllm)")
    return [1 - Fraction((h - 1) ** m, total) for h in heights]


def w2(heights):
    """w2(Q_j) = h_max / h_j (Def. 8)."""
    heights = list(heights)
    hmax = max(heights)
    return [Fraction(hmax, h) for h in heights]


def _harm(n):
    return sum((Fraction(1, i) for i in range(1, n + 1)), Fraction(0))


def edge_weights(h, metric, *, w1=Fraction(1), w2=Fraction(1), distortion_mode="literal"):
    """Per node id of hierarchy h, the weight of the edge to its parent (0 for the root) under
    one of the seven metrics (I1); w1/w2 are this attribute's multipliers."""
    if metric not in METRICS:
        raise invalid(f"unknown metric {metric!r}", hint=f"metrics: {', '.join(METRICS)}, custom")
    if distortion_mode not in DISTORTION_MODES:
        raise invalid(f"distortion_mode must be one of {DISTORTION_MODES}, not {distortion_mode!r}")
    ht, n_root = h.height, int(h.leaf_count[0])
    harm = _harm(ht - 1)
    out = [Fraction(0)] * len(h)
    for v in range(1, len(h)):
        p = int(h.parent[v])
        lo, hi = int(h.level[v]), int(h.level[p])
        lost = int(h.leaf_count[p] - h.leaf_count[v])
        if metric == "distortion":
            if distortion_mode == "literal":
                w = Fraction(1, ht - hi) / harm
            else:
                w = sum((Fraction(1, ht - lv) for lv in range(lo + 1, hi + 1)), Fraction(0)) / harm
            w *= w1
        elif metric == "total":
            w = Fraction(hi - lo, ht - 1)
        else:
            w = Fraction(lost)
            if metric in ("ncp", "nllm", "wnllm"):
                w /= n_root
            if metric in ("llm", "nllm"):
                w *= w2
            elif metric in ("wllm", "wnllm"):
                w *= w1
        out[v] = w
    return out


def _exact(x, where):
    if isinstance(x, bool):
        raise invalid(f"{where}: {x!r} is not a weight")
    if isinstance(x, float):
        if not math.isfinite(x):
            raise invalid(f"{where}: {x!r} is not a finite weight")
        x = repr(x)
    try:
        f = Fraction(x)
    except (TypeError, ValueError):
        raise invalid(f"{where}: {x!r} is not a number") from None
    if f < 0:
        raise invalid(f"{where}: weight {x!r} is negative", hint="edge weights are >= 0")
    return f


def custom_weights(h, weights):
    """Per node id, the user's weight of the edge node -> parent (I3).  weights maps a child
    label (or id) to the weight of its edge; every edge needs one."""
    out = [Fraction(0)] * len(h)
    given = {}
    for x, w in dict(weights).items():
        v = h.node(x)
        if v == 0:
            raise invalid(f"hierarchy {h.name!r}: the root {shown(h.labels[0])} has no edge to weight")
        given[v] = _exact(w, f"hierarchy {h.name!r}, edge {shown(h.labels[v])}")
    lacking = [h.labels[v] for v in range(1, len(h)) if v not in given]
    if lacking:
        raise invalid(f"hierarchy {h.name!r}: no weight for the edge(s) above {shown_values(lacking)}",
                      hint="give one weight per non-root node (the edge to its parent)")
    for v, w in given.items():
        out[v] = w
    return out


# ----------------------------------------------------------------------------------- metric


class Metric:
    """A metric on a QI set: per attribute the edge weights and D(v) = cost to the root, both
    lists of Fraction indexed by node id (Defs 3-4)."""

    def __init__(self, name, hierarchies, weights):
        self.name = name
        self.hierarchies = tuple(hierarchies)
        self.weights = tuple(tuple(w) for w in weights)
        ds = []
        for h, w in zip(self.hierarchies, self.weights):
            d = [Fraction(0)] * len(h)
            for v in range(1, len(h)):  # a parent's id is smaller than its child's
                d[v] = d[int(h.parent[v])] + w[v]
            ds.append(tuple(d))
        self.D = tuple(ds)
        scale = 1
        for d in self.D:
            for x in d:
                scale = scale * x.denominator // math.gcd(scale, x.denominator)
        self.scale = scale
        self.Dint = tuple(tuple(int(x * scale) for x in d) for d in self.D)

    def __repr__(self):
        return f"Metric({self.name!r}, {[h.name for h in self.hierarchies]})"

    @property
    def m(self):
        return len(self.hierarchies)

    def scaled(self, terms=1):
        """Per attribute, D * scale as an int64 array, or an object array of Python ints when
        a sum of `terms` such values could leave the exact int64 range."""
        top = max((max(d) for d in self.Dint), default=0)
        dtype = np.int64 if top * max(terms, 1) < _INT64_SAFE else object
        return [np.array(d, dtype=dtype) for d in self.Dint]

    def cost(self, j, v, a):
        """cost_Hj(v, a): the path sum from v up to a if a generalizes v, else 0 (Def. 4)."""
        h = self.hierarchies[j]
        v, a = h.node(v), h.node(a)
        return self.D[j][v] - self.D[j][a] if h.generalizes(a, v) else Fraction(0)

    def matrix(self, j):
        """The costs matrix M(v, v') = cost(v, LCA(v, v')) of attribute j, rows and columns
        in node id order (Def. 5; not symmetric)."""
        h, d = self.hierarchies[j], self.D[j]
        return [[d[v] - d[a] for a in h.lca_row(v).tolist()] for v in range(len(h))]

    def merge_cost(self, f, g, sizes=None):
        """mu-bar(F, G) (Def. 6): sum over attributes of M(f_j, g_j) + M(g_j, f_j).  With
        sizes=(|F|, |G|), the size-weighted increase of mu_T instead (A4, cost_mode
        'size_weighted'): |F| * cost(f_j -> a_j) + |G| * cost(g_j -> a_j), a = LCA."""
        self._check_len(f)
        self._check_len(g)
        nf, ng = (1, 1) if sizes is None else sizes
        out = Fraction(0)
        for j, (h, d) in enumerate(zip(self.hierarchies, self.D)):
            a, b = h.node(f[j]), h.node(g[j])
            c = h.lca(a, b)
            out += nf * (d[a] - d[c]) + ng * (d[b] - d[c])
        return out

    def _check_len(self, t):
        if len(t) != self.m:
            raise invalid(f"a tuple has {len(t)} values for {self.m} QIs",
                          hint="give one value per QI, in the order of the hierarchies")


def metric(name, hierarchies, *, weights=None, distortion_mode="literal"):
    """The Metric `name` (one of METRICS, or 'custom' with `weights`: one mapping child label ->
    edge weight per hierarchy) on the QI set given by `hierarchies` (in QI order)."""
    hs = tuple(hierarchies)
    if not hs:
        raise invalid("no hierarchies: a metric needs at least one QI")
    for h in hs:
        if not isinstance(h, Hierarchy):
            raise invalid(f"{h!r} is not a Hierarchy", hint="build one with Hierarchy.from_paths")
    if name == "custom":
        if weights is None or len(weights) != len(hs):
            raise invalid("metric 'custom' needs weights: one mapping child -> weight per QI",
                          hint=f"give {len(hs)} mappings, in the order of the hierarchies")
        return Metric("custom", hs, [custom_weights(h, w) for h, w in zip(hs, weights)])
    if weights is not None:
        raise invalid(f"weights are only for metric 'custom', not {name!r}")
    if name not in METRICS:
        raise invalid(f"unknown metric {name!r}", hint=f"metrics: {', '.join(METRICS)}, custom")
    heights = [h.height for h in hs]
    m1 = w1(heights) if name in W1_METRICS else [Fraction(1)] * len(hs)
    m2 = w2(heights)
    return Metric(name, hs, [edge_weights(h, name, w1=a, w2=b, distortion_mode=distortion_mode)
                             for h, a, b in zip(hs, m1, m2)])


# ------------------------------------------------------------------------------ table measures


def as_ids(hierarchies, tuples, what="tuple"):
    """An (n, m) int64 array of node ids from tuples of labels or ids (one per QI)."""
    hs = list(hierarchies)
    if isinstance(tuples, np.ndarray) and tuples.dtype.kind in "iu":
        arr = tuples.astype(np.int64, copy=False).reshape(len(tuples), -1)
        if arr.shape[1] != len(hs):
            raise invalid(f"{what}s have {arr.shape[1]} values for {len(hs)} QIs")
        for j, h in enumerate(hs):
            if len(arr) and (arr[:, j].min() < 0 or arr[:, j].max() >= len(h)):
                raise invalid(f"{what}s hold ids outside hierarchy {h.name!r}")
        return arr
    rows = list(tuples)
    arr = np.empty((len(rows), len(hs)), dtype=np.int64)
    for i, t in enumerate(rows):
        if len(t) != len(hs):
            raise invalid(f"{what} {i + 1} has {len(t)} values for {len(hs)} QIs",
                          hint="give one value per QI, in the order of the hierarchies")
        for j, (h, x) in enumerate(zip(hs, t)):
            arr[i, j] = h.node(x)
    return arr


def _table(hierarchies, original, generalized, counts):
    hs = list(hierarchies)
    e = as_ids(hs, original, "original tuple")
    f = as_ids(hs, generalized, "generalized tuple")
    if len(e) != len(f):
        raise invalid(f"{len(f)} generalized tuples for {len(e)} original tuples")
    if counts is None:
        c = np.ones(len(e), dtype=np.int64)
    else:
        c = np.asarray(counts, dtype=np.int64)
        if len(c) != len(e) or (c < 0).any():
            raise invalid("counts must give one non-negative row count per tuple")
    for j, h in enumerate(hs):
        ok = h.anc[e[:, j], h.depth[f[:, j]]] == f[:, j]
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise invalid(f"tuple {i + 1}: {shown(h.labels[f[i, j]])} does not generalize "
                          f"{shown(h.labels[e[i, j]])} in hierarchy {h.name!r}",
                          hint="a generalized value must be an ancestor of the original (Def. 1)")
    return hs, e, f, c


def _sum_cells(met, ids, counts):
    total = 0
    for j, d in enumerate(met.Dint):
        col = np.array(d, dtype=object)[ids[:, j]]
        total += int(np.dot(col, counts.astype(object)))
    return Fraction(total, met.scale)


def table_cost(met, original, generalized, counts=None):
    """mu_T(T_gen) = sum over rows and QIs of D(e) - D(f) (Def. 6, derived identity)."""
    _, e, f, c = _table(met.hierarchies, original, generalized, counts)
    return _sum_cells(met, e, c) - _sum_cells(met, f, c)


def alteration(met, original, generalized, counts=None):
    """alt = 100 * mu_T(T_gen) / mu_T(T*) as a Fraction percentage (Def. 7, I4)."""
    _, e, f, c = _table(met.hierarchies, original, generalized, counts)
    top = _sum_cells(met, e, c)
    if top == 0:
        return Fraction(0)
    return 100 * (top - _sum_cells(met, f, c)) / top


def mean_alteration(hierarchies, original, generalized, counts=None, *, metrics=METRICS,
                    distortion_mode="literal"):
    """The mean alteration over a set of metrics (Def. 9; all seven by default, A16)."""
    metrics = list(metrics)
    if not metrics:
        raise invalid("mean_alteration needs at least one metric")
    vals = [alteration(metric(mu, hierarchies, distortion_mode=distortion_mode),
                       original, generalized, counts) for mu in metrics]
    return sum(vals, Fraction(0)) / len(vals)


def p_gen(hierarchies, original, generalized, counts=None):
    """Percentage of cells whose value was generalized (Def. 9, I4)."""
    hs, e, f, c = _table(hierarchies, original, generalized, counts)
    return _share((e != f), c, len(hs))


def p_root(hierarchies, original, generalized, counts=None):
    """Percentage of cells generalized to the root (Def. 9)."""
    hs, e, f, c = _table(hierarchies, original, generalized, counts)
    return _share((f == 0), c, len(hs))


def _share(mask, counts, m):
    cells = int(counts.sum()) * m
    if cells == 0:
        return Fraction(0)
    return Fraction(100 * int((mask.sum(axis=1) * counts).sum()), cells)


# ------------------------------------------------------------------------------------- NAUC


def nauc(ks, values, lo=None, hi=None):
    """Mean of a criterion over k in [lo, hi] (default the whole grid): trapezoid rule on the
    linear k axis, divided by hi - lo (I5).  A Fraction if every input is an int or Fraction,
    else a float."""
    pts = sorted(zip(ks, values))
    if len(pts) < 2:
        raise invalid("NAUC needs at least two (k, value) points")
    xs = [p[0] for p in pts]
    if len(set(xs)) != len(xs):
        raise invalid("NAUC: a k appears twice", hint="give one value per k")
    lo = xs[0] if lo is None else lo
    hi = xs[-1] if hi is None else hi
    if not xs[0] <= lo < hi <= xs[-1]:
        raise invalid(f"NAUC range [{lo}, {hi}] must be non-empty and lie inside the k grid "
                      f"[{xs[0]}, {xs[-1]}]")
    exact = all(isinstance(x, (int, Fraction)) and not isinstance(x, bool)
                for p in pts for x in p) and _exactish(lo, hi)
    num = Fraction if exact else float
    pts = [(num(x), num(y)) for x, y in pts]
    lo, hi = num(lo), num(hi)
    area = num(0)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        a, b = max(x0, lo), min(x1, hi)
        if a < b:
            ya = y0 + (y1 - y0) * (a - x0) / (x1 - x0)
            yb = y0 + (y1 - y0) * (b - x0) / (x1 - x0)
            area += (ya + yb) * (b - a) / 2
    return area / (hi - lo)


def _exactish(*xs):
    return all(isinstance(x, (int, Fraction)) and not isinstance(x, bool) for x in xs)


def nauc_ldiv(ks, values, ldiv_max, lo=None, hi=None):
    """l-diversity NAUC in percent: 100 * NAUC / l_div(T*) (§1.7)."""
    return 100 * nauc(ks, values, lo, hi) / ldiv_max


def nauc_tclo(ks, values, lo=None, hi=None):
    """t-closeness NAUC in percent: 100 * NAUC (§1.7)."""
    return 100 * nauc(ks, values, lo, hi)
