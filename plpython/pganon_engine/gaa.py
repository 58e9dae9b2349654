"""GAA, the Greedy Anonymization Algorithm of Mauger, Le Mahec and Dequen (2023), with the
merge strategies S1-S7 and the pure l_div / t_clo baselines (spec 001-metrics-strategies.md
§2-3): a planning engine, no database access.

GAA starts from the equivalence classes of the table (identical QI tuples together) and, while a
class has fewer than k rows, merges a smallest such class C_s with the partner a strategy picks
among all other classes; merging replaces both tuples by their attribute-wise LCA.  Recoding is
global and multidimensional: identical tuples always share a class.  Per DESIGN.md the engine
reads the smallest input: the DISTINCT QI tuples with their row counts and (for strategies that
look at the sensitive attribute) their sensitive-value histograms, which the database computes
with GROUP BY.  It returns, per input tuple, its class and the class's generalized tuple; the
database assigns rows set-based.

Decisions (spec items in brackets):

- G1  Φ is k-anonymity: a class violates it when it has fewer than k rows.  k must not exceed
      the number of rows.  Each step merges two classes, so GAA stops after at most
      (#tuples - 1) steps with every class >= k rows [§2.2].  l-diversity or t-closeness as Φ
      (allowed by the paper, never run by it, A15) is not offered.
- G2  Class ids (the tie rule's order) are creation ids: the input tuples are 0 .. n-1 in input
      order (give them in a stable order, e.g. by their first row key); a merged class gets the
      next id.  Ties, both for C_s (among the smallest violators) and for the partner (inside
      the strategy's final set), go to the smallest id [A5].  With `seed`, every tie is drawn
      uniformly from the tied classes (sorted by id) with `random.Random(seed)`: the same seed
      gives the same result.
- G3  When the merged tuple equals the tuple of another live class E, E absorbs the merged
      classes and keeps its id (classes are defined by their tuple) [A6].  The privacy of a
      candidate merge is that of the class it creates, E included.
- G4  Merge cost: cost_mode 'pairwise' is Def. 6 on the two classes' current tuples, not
      weighted by class sizes (faithful; this is what snowballs NCP and LLM to the root on
      Table 1) [A4]; 'size_weighted' is the true increase of mu_T,
      |C_s| * cost(f_s -> a) + |C| * cost(f -> a).  Costs are exact integers (D scaled by the
      metric's least common denominator, `infoloss.Metric.scaled`); int64 when the bound
      allows, Python ints otherwise.
- G5  Strategies [Def. 17, §3.5]: S1 min cost; S2 max l_div among min cost; S3 min cost among
      max l_div; S4 min cost / l_div; S5 min t_clo among min cost; S6 min cost among min t_clo;
      S7 min cost * t_clo, then min cost [§3.3 P]; 'l_div' max l_div; 't_clo' min t_clo.
      privacy_scope 'table' (faithful, default) scores a candidate by the table after the
      merge: l_div = min over its classes, t_clo = max; 'class' by the merged class alone [A7].
- G6  Exactness of ties: costs and t_clo (L1; rational: sum |c_s N - n N_s| / (n N)) and the
      S7 product are compared exactly; l_div is exp(entropy) and not rational, so entropies
      within ENTROPY_TOL (absolute) are equal, and S4's cost / l_div values within a relative
      RATIO_TOL [§2.3].
- G7  The global sensitive distribution P(S, T) is the sum of the given histograms, fixed once
      [A18].  t_clo uses the L1 norm (0 .. 2); tclo_scale='tv' halves it (0 .. 1) in the
      measures [A9]; a constant factor never changes a choice.
- G8  Scale [§2.3]: a step is one vectorized scan over the live classes (per QI one gather from
      a cached row of costs to C_s's node), so a run is O(#tuples^2 * m) numpy work.  S1, S2
      and S5 score privacy only inside the min-cost set; S3, S4, S6, S7 and the baselines
      score every candidate, with a dense (values x classes) histogram matrix, and cost about
      ten times more.  Full UCI Adult (30,162 rows, 9 QIs, 19,502 distinct tuples), S1, k = 10:
      about 3 s of CPU with numpy 1.24.
"""

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from . import infoloss
from .errors import invalid
from .hierarchy import Hierarchy

STRATEGIES = ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "l_div", "t_clo")
COST_MODES = ("pairwise", "size_weighted")
PRIVACY_SCOPES = ("table", "class")
TCLO_SCALES = ("l1", "tv")
ENTROPY_TOL = 1e-9
RATIO_TOL = 1e-9
_SAFE = 2 ** 62
_XLOGX_MAX = 1 << 22


# ----------------------------------------------------------------------------------- measures


def _counts(hist):
    vals = list(hist.values()) if isinstance(hist, Mapping) else list(hist)
    for c in vals:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0:
            raise invalid(f"a histogram count is {c!r}, not a non-negative integer")
    return [int(c) for c in vals if c]


def _entropy(counts):
    n = sum(counts)
    if n == 0:
        raise invalid("an empty class has no sensitive distribution")
    return math.log(n) - sum(c * math.log(c) for c in counts) / n


def l_div_class(hist):
    """Entropy l-diversity of one class: exp(-sum p ln p) (Def. 11).  hist maps sensitive
    values to counts (or is a sequence of counts)."""
    return math.exp(_entropy(_counts(hist)))


def l_div_table(hists):
    """l_div(T) = the minimum over its classes (Def. 11; to be maximized)."""
    hists = list(hists)
    if not hists:
        raise invalid("a table without classes has no l-diversity")
    return min(l_div_class(h) for h in hists)


def _scale(tclo_scale):
    if tclo_scale not in TCLO_SCALES:
        raise invalid(f"tclo_scale must be one of {TCLO_SCALES}, not {tclo_scale!r}")
    return Fraction(1) if tclo_scale == "l1" else Fraction(1, 2)


def t_clo_class(hist, global_hist, tclo_scale="l1"):
    """t-closeness of one class: the L1 distance sum_s |p(s, C) - p(s, T)| between its
    distribution and the table's (Def. 14; a Fraction, G7).  Both are mappings value -> count."""
    if not isinstance(hist, Mapping) or not isinstance(global_hist, Mapping):
        raise invalid("t_clo needs histograms as mappings value -> count")
    n, big_n = sum(_counts(hist)), sum(_counts(global_hist))
    if n == 0 or big_n == 0:
        raise invalid("t_clo of an empty class or table is undefined")
    extra = set(hist) - {v for v, c in global_hist.items() if c}
    if any(hist[v] for v in extra):
        shown = ", ".join(sorted(map(repr, extra))[:5])
        raise invalid(f"the class holds sensitive values absent from the table: {shown}")
    d = sum(abs(Fraction(hist.get(v, 0), n) - Fraction(c, big_n)) for v, c in global_hist.items())
    return d * _scale(tclo_scale)


def t_clo_table(hists, global_hist=None, tclo_scale="l1"):
    """t_clo(T) = the maximum over its classes (Def. 14; to be minimized).  The global
    distribution defaults to the sum of the class histograms."""
    hists = list(hists)
    if not hists:
        raise invalid("a table without classes has no t-closeness")
    if global_hist is None:
        global_hist = {}
        for h in hists:
            for v, c in h.items():
                global_hist[v] = global_hist.get(v, 0) + c
    return max(t_clo_class(h, global_hist, tclo_scale) for h in hists)


# ---------------------------------------------------------------------------------- result


@dataclass
class Merge:
    """One GAA step: C_s and its partner (creation ids, G2), the merge cost (Fraction, in the
    run's cost_mode), the merged tuple (labels), the id of the class holding the result, and
    whether an existing class absorbed it (G3)."""

    cs: int
    partner: int
    cost: Fraction
    new_tuple: tuple
    into: int
    fused: bool


@dataclass
class GaaResult:
    """class_of[i]: the class (1 .. len(classes)) of input tuple i; classes numbered by the
    first input tuple they hold.  classes[g - 1]: the generalized tuple of class g (labels);
    class_nodes the same as node ids; sizes the row counts.  steps: merges made.  options:
    what the run used (record it with the release).  trace: the merges, when asked for."""

    class_of: list
    classes: list
    class_nodes: list
    sizes: list
    steps: int
    options: dict
    trace: list = field(default_factory=list)

    def tuple_of(self, i):
        """The generalized tuple (labels) published for input tuple i."""
        return self.classes[self.class_of[i] - 1]

    @property
    def generalized(self):
        """Per input tuple, the node ids of its class tuple (for infoloss.alteration etc.)."""
        return [self.class_nodes[g - 1] for g in self.class_of]


# ------------------------------------------------------------------------------------ GAA


def strategy_name(s):
    """The canonical name of a strategy: 'S1'..'S7', 'l_div', 't_clo' (1..7 and 's3' too)."""
    if isinstance(s, int) and not isinstance(s, bool) and 1 <= s <= 7:
        return f"S{s}"
    if isinstance(s, str):
        t = s.strip()
        if t.upper() in STRATEGIES[:7]:
            return t.upper()
        t = t.lower().replace("-", "_")
        if t in ("l_div", "ldiv"):
            return "l_div"
        if t in ("t_clo", "tclo"):
            return "t_clo"
    raise invalid(f"unknown strategy {s!r}", hint=f"strategies: {', '.join(STRATEGIES)}")


def gaa(tuples, counts, hierarchies, k, *, metric="nllm", strategy="S1", histograms=None,
        weights=None, distortion_mode="literal", cost_mode="pairwise", privacy_scope="table",
        seed=None, trace=False, tick=None):
    """k-anonymize by GAA (§2.2) and return a GaaResult.

    tuples        the distinct QI tuples, one value per QI (leaf label or leaf id), in a stable
                  order (their order is the default tie order, G2)
    counts        rows per tuple (>= 1)
    hierarchies   one Hierarchy per QI, in QI order
    k             the k of k-anonymity (1 .. total rows)
    metric        a name of infoloss.METRICS, 'custom' (with weights) or an infoloss.Metric
    strategy      'S1'..'S7', 'l_div', 't_clo' (G5); all but S1 need histograms
    histograms    per tuple a mapping sensitive value -> rows (summing to its count)
    distortion_mode, weights  passed to infoloss.metric
    cost_mode     'pairwise' (faithful) or 'size_weighted' (G4)
    privacy_scope 'table' (faithful) or 'class' (G5)
    seed          None for smallest-id ties, an int for seeded random ties (G2)
    trace         keep the list of merges in the result
    tick          called every few steps (lets the database cancel a long run)
    """
    hs = list(hierarchies)
    if not hs:
        raise invalid("GAA needs at least one QI hierarchy")
    for h in hs:
        if not isinstance(h, Hierarchy):
            raise invalid(f"{h!r} is not a Hierarchy", hint="build one with Hierarchy.from_paths")
    strategy = strategy_name(strategy)
    if cost_mode not in COST_MODES:
        raise invalid(f"cost_mode must be one of {COST_MODES}, not {cost_mode!r}")
    if privacy_scope not in PRIVACY_SCOPES:
        raise invalid(f"privacy_scope must be one of {PRIVACY_SCOPES}, not {privacy_scope!r}")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise invalid(f"seed must be an integer or None, not {seed!r}")
        seed = int(seed)
    if isinstance(metric, infoloss.Metric):
        met = metric
        if len(met.hierarchies) != len(hs) or any(a is not b for a, b in zip(met.hierarchies, hs)):
            raise invalid("the metric was built on other hierarchies than the ones given",
                          hint="build it with infoloss.metric(name, hierarchies)")
    else:
        met = infoloss.metric(metric, hs, weights=weights, distortion_mode=distortion_mode)
    tuples = list(tuples)
    if not tuples:
        raise invalid("GAA needs at least one tuple")
    for i, t in enumerate(tuples):
        if len(t) != len(hs):
            raise invalid(f"tuple {i + 1} has {len(t)} values for {len(hs)} QIs",
                          hint="give one value per QI, in the order of the hierarchies")
    leaf = np.stack([h.leaf_ids([t[j] for t in tuples]) for j, h in enumerate(hs)])
    cnt = _row_counts(counts, len(tuples))
    total = int(cnt.sum())
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise invalid(f"k must be an integer >= 1, not {k!r}")
    if k > total:
        raise invalid(f"k = {k} is larger than the number of rows ({total})", hint="lower k")
    seen = {}
    for i, row in enumerate(map(tuple, leaf.T.tolist())):
        if row in seen:
            raise invalid(f"tuples {seen[row] + 1} and {i + 1} are the same QI tuple "
                          f"{tuple(h.labels[v] for h, v in zip(hs, row))!r}",
                          hint="give each distinct tuple once with its row count (GROUP BY)")
        seen[row] = i
    hist = None
    if strategy != "S1":
        if histograms is None:
            raise invalid(f"strategy {strategy} needs the sensitive-value histogram of each tuple",
                          hint="pass histograms (per tuple a mapping value -> rows), or use S1")
        hist = _histograms(histograms, cnt)
    run = _Run(hs, met, leaf, cnt, hist, int(k), strategy, cost_mode, privacy_scope, seed,
               trace, tick)
    run.loop()
    options = {"k": int(k), "metric": met.name, "strategy": strategy, "cost_mode": cost_mode,
               "privacy_scope": privacy_scope, "distortion_mode": distortion_mode,
               "tie_rule": "smallest creation id" if seed is None else "seeded random",
               "seed": seed}
    return run.result(options)


def _row_counts(counts, n):
    counts = list(counts)
    if len(counts) != n:
        raise invalid(f"{len(counts)} counts for {n} tuples", hint="give one row count per tuple")
    for c in counts:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
            raise invalid(f"a tuple's row count is {c!r}, not an integer >= 1")
    return np.array(counts, dtype=np.int64)


def _histograms(histograms, cnt):
    histograms = list(histograms)
    if len(histograms) != len(cnt):
        raise invalid(f"{len(histograms)} histograms for {len(cnt)} tuples")
    col = {}
    for h in histograms:
        if not isinstance(h, Mapping):
            raise invalid(f"a histogram is {h!r}, not a mapping value -> rows")
        for v in h:
            col.setdefault(v, len(col))
    mat = np.zeros((len(cnt), len(col)), dtype=np.int64)
    for i, h in enumerate(histograms):
        for v, c in h.items():
            if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0:
                raise invalid(f"tuple {i + 1}: the count of {v!r} is {c!r}")
            mat[i, col[v]] = c
        if mat[i].sum() != cnt[i]:
            raise invalid(f"tuple {i + 1}: its histogram holds {int(mat[i].sum())} rows, its "
                          f"count is {int(cnt[i])}", hint="histograms must count the same rows")
    return mat


class _Run:
    """The state of one GAA run: live classes in slots 0 .. live-1 (a removed slot is filled
    by the last one), per-attribute node ids T[j, slot], sizes, creation ids, tuple keys
    (mixed-radix numbers of the node ids) and, for the privacy strategies, the histograms as
    columns hist[:, slot] with each class's entropy and t_clo numerator."""

    def __init__(self, hs, met, leaf, cnt, hist, k, strategy, cost_mode, scope, seed, trace,
                 tick):
        self.hs, self.met, self.k = hs, met, k
        self.m = len(hs)
        n = leaf.shape[1]
        self.n0 = n
        self.strategy, self.cost_mode, self.scope = strategy, cost_mode, scope
        self.rng = None if seed is None else random.Random(seed)
        self.tick = tick
        self.trace = [] if trace else None
        total = int(cnt.sum())
        terms = 2 * self.m * (total if cost_mode == "size_weighted" else 1)
        self.D = met.scaled(terms)
        self.int64 = all(d.dtype == np.int64 for d in self.D)
        self.big = (1 << 63) - 1 if self.int64 else 1 << 4096
        self.T = leaf.copy()
        self.size = cnt.copy()
        self.cid = np.arange(n, dtype=np.int64)
        self.up = np.arange(2 * n, dtype=np.int64)  # union-find over creation ids
        self.next_cid = n
        self.live = n
        self.steps = 0
        radix, r = [], 1
        for h in hs:
            radix.append(r)
            r *= len(h)
        self.radix = radix
        self.key = [sum(int(v) * x for v, x in zip(col, radix)) for col in leaf.T.tolist()]
        self.slot_of = {key: x for x, key in enumerate(self.key)}
        self.lca_cache = [dict() for _ in hs]
        self.cost_cache = [dict() for _ in hs]
        self.klca_cache = [dict() for _ in hs]
        self.hist = None
        self.sorted = False
        self.need_l = strategy in ("S2", "S3", "S4", "l_div")
        self.need_t = strategy in ("S5", "S6", "S7", "t_clo")
        if hist is not None:
            self.hist = np.ascontiguousarray(hist.T)
            self.G = self.hist.sum(axis=1)
            self.N = total
            q = self.hist.shape[0]
            self.t64 = q * total * total < _SAFE and 2 * total ** 3 < _SAFE
            self.xlogx = None
            if total <= _XLOGX_MAX:
                c = np.arange(total + 1, dtype=np.float64)
                self.xlogx = c * np.log(np.where(c > 0, c, 1.0))
            self.ent = self._entropy(self.hist, cnt)
            self.tn = self._tnum(self.hist, cnt)
            # Sorted tuple keys for vectorized fusion lookups (G3), when keys fit in int64.
            self.sorted = r < _SAFE
            if self.sorted:
                keys = np.array(self.key, dtype=np.int64)
                order = np.argsort(keys, kind="stable")
                self.sk, self.ss = keys[order], order

    # ---------------------------------------------------------------------------- helpers

    def _lca_row(self, j, a):
        row = self.lca_cache[j].get(a)
        if row is None:
            row = self.hs[j].lca_row(a)
            self.lca_cache[j][a] = row
        return row

    def _klca_row(self, j, a):
        row = self.klca_cache[j].get(a)
        if row is None:
            row = self._lca_row(j, a) * self.radix[j]
            self.klca_cache[j][a] = row
        return row

    def _cost_rows(self, j, a):
        """For node a of attribute j, per node v: D(a) + D(v) - 2 D(lca) (pairwise) or the pair
        (D(a) - D(lca), D(v) - D(lca)) (size_weighted), scaled."""
        rows = self.cost_cache[j].get(a)
        if rows is None:
            d = self.D[j]
            dl = d[self._lca_row(j, a)]
            rows = (d[a] - dl, d - dl)
            if self.cost_mode == "pairwise":
                rows = rows[0] + rows[1]
            self.cost_cache[j][a] = rows
        return rows

    def _entropy(self, mat, n):
        """Entropy of each column of a (values x classes) count matrix."""
        if self.xlogx is not None:
            s = self.xlogx[mat].sum(axis=0)
        else:
            f = mat.astype(np.float64)
            s = (f * np.log(np.where(f > 0, f, 1.0))).sum(axis=0)
        nf = n.astype(np.float64)
        return np.log(nf) - s / nf

    def _tnum(self, mat, n):
        """Per column, sum_s |c_s N - n N_s|: t_clo (L1) times n N, an exact integer."""
        if self.t64:
            return np.abs(mat * self.N - self.G[:, None] * n[None, :]).sum(axis=0)
        m, g = mat.astype(object), self.G.astype(object)
        return np.abs(m * self.N - g[:, None] * n.astype(object)[None, :]).sum(axis=0)

    def _pick(self, pos):
        if len(pos) == 1:
            return int(pos[0])
        if self.rng is None:
            return int(pos[np.argmin(self.cid[pos])])
        ordered = pos[np.argsort(self.cid[pos], kind="stable")]
        return int(ordered[self.rng.randrange(len(ordered))])

    # ------------------------------------------------------------------------------- loop

    def loop(self):
        k = self.k
        while True:
            sz = self.size[:self.live]
            smallest = sz.min()
            if smallest >= k:
                break
            s = self._pick(np.flatnonzero(sz == smallest))
            c, cost = self._partner(s)
            self._merge(s, c, cost)
            self.steps += 1
            if self.tick is not None and self.steps % 64 == 0:
                self.tick()

    def _costs(self, s):
        """Merge cost of C_s with every live class (slot s itself gets `big`)."""
        live = self.live
        a = self.T[:, s]
        if self.cost_mode == "pairwise":
            cost = None
            for j in range(self.m):
                g = self._cost_rows(j, int(a[j]))[self.T[j, :live]]
                cost = g if cost is None else cost + g
        else:
            us = uc = None
            for j in range(self.m):
                ra, rv = self._cost_rows(j, int(a[j]))
                col = self.T[j, :live]
                us = ra[col] if us is None else us + ra[col]
                uc = rv[col] if uc is None else uc + rv[col]
            sizes = self.size[:live] if self.int64 else self.size[:live].astype(object)
            cost = int(self.size[s]) * us + sizes * uc
        cost[s] = self.big
        return cost

    def _partner(self, s):
        cost = self._costs(s)
        st = self.strategy
        if st in ("S1", "S2", "S5"):
            pos = np.flatnonzero(cost == cost.min())
            if st != "S1" and len(pos) > 1:
                ent, tn, td = self._privacy(s, pos)
                pos = pos[_argmax_tol(ent)] if st == "S2" else pos[_argmin_frac(tn, td)]
        else:
            pos = np.delete(np.arange(self.live), s)
            ent, tn, td = self._privacy(s, pos)
            c = cost[pos]
            if st in ("S3", "S6"):
                sel = _argmax_tol(ent) if st == "S3" else _argmin_frac(tn, td)
                pos, c = pos[sel], c[sel]
                pos = pos[c == c.min()]
            elif st == "S4":
                v = c.astype(np.float64) * np.exp(-ent)
                pos = pos[v <= v.min() * (1 + RATIO_TOL)]
            elif st == "S7":
                approx = c.astype(np.float64) * (tn.astype(np.float64) / td.astype(np.float64))
                near = np.flatnonzero(approx <= approx.min() * (1 + RATIO_TOL))
                exact = c[near].astype(object) * tn[near].astype(object)
                sel = near[_argmin_frac(exact, td[near].astype(object))]
                pos, c = pos[sel], c[sel]
                pos = pos[c == c.min()]
            elif st == "l_div":
                pos = pos[_argmax_tol(ent)]
            else:  # t_clo
                pos = pos[_argmin_frac(tn, td)]
        c = self._pick(pos)
        return c, cost[c]

    def _privacy(self, s, pos):
        """For merging C_s with each class at pos: the entropy (log of l_div) and t_clo as the
        fraction tn / (td N) of the resulting class (G3), or of the resulting table (G5)."""
        fused = self._fusion(s, pos)
        hist, size = self.hist, self.size
        mat = hist[:, pos] + hist[:, s:s + 1]
        n = size[pos] + size[s]
        has = np.flatnonzero(fused >= 0)
        if len(has):
            mat[:, has] += hist[:, fused[has]]
            n[has] += size[fused[has]]
        ent = self._entropy(mat, n) if self.need_l else None
        tn = self._tnum(mat, n) if self.need_t else None
        td = n if self.t64 else n.astype(object)
        if self.scope == "table":
            ent, tn, td = self._table_scope(s, pos, fused, ent, tn, td)
        return ent, tn, td

    def _fusion(self, s, pos):
        """Per candidate, the slot of the live class whose tuple equals the merged tuple, if it
        is neither C_s nor the candidate (G3); else -1."""
        a = self.T[:, s]
        if self.sorted:
            mk = None
            for j in range(self.m):
                g = self._klca_row(j, int(a[j]))[self.T[j, pos]]
                mk = g if mk is None else mk + g
            at = np.minimum(np.searchsorted(self.sk, mk), len(self.sk) - 1)
            fused = np.where(self.sk[at] == mk, self.ss[at], -1)
        else:
            cols = [self._lca_row(j, int(a[j]))[self.T[j, pos]].tolist() for j in range(self.m)]
            fused = np.array([self.slot_of.get(sum(v * x for v, x in zip(row, self.radix)), -1)
                              for row in zip(*cols)], dtype=np.int64)
        fused[(fused == s) | (fused == pos)] = -1
        return fused

    def _table_scope(self, s, pos, fused, ent, tn, td):
        """Table-level l_div (min) and t_clo (max) after each candidate merge: the merged class
        against the extreme among the classes that stay untouched."""
        live = self.live
        # At most three classes leave the table (C_s, the candidate, the absorbing class), so
        # the four lowest entropies or the four highest t_clo among the live classes suffice.
        few = min(4, live)
        if ent is not None:
            e_all = self.ent[:live]
            low = np.argpartition(e_all, few - 1)[:few] if live > few else np.arange(live)
            low = low[np.argsort(e_all[low], kind="stable")]
            ue = np.full(len(pos), np.inf)
            left = np.ones(len(pos), dtype=bool)
            for x in low:
                if x != s:
                    take = left & (pos != x) & (fused != x)
                    ue[take] = e_all[x]
                    left &= ~take
            ent = np.minimum(ent, ue)
        if tn is not None:
            t_all = self.tn[:live].astype(np.float64) / self.size[:live]
            high = np.argpartition(-t_all, few - 1)[:few] if live > few else np.arange(live)
            high = high[np.argsort(-t_all[high], kind="stable")]
            un = np.zeros(len(pos), dtype=tn.dtype)
            ud = np.ones(len(pos), dtype=td.dtype)
            left = np.ones(len(pos), dtype=bool)
            for x in high:
                if x != s:
                    take = left & (pos != x) & (fused != x)
                    un[take] = self.tn[x]
                    ud[take] = self.size[x]
                    left &= ~take
            worse = un * td > tn * ud
            tn, td = np.where(worse, un, tn), np.where(worse, ud, td)
        return ent, tn, td

    # ------------------------------------------------------------------------------ merge

    def _merge(self, s, c, cost):
        a, b = self.T[:, s], self.T[:, c]
        new = [int(self._lca_row(j, int(a[j]))[b[j]]) for j in range(self.m)]
        key = sum(v * x for v, x in zip(new, self.radix))
        e = self.slot_of.get(key, -1)
        cs, cc = int(self.cid[s]), int(self.cid[c])
        self._unkey(s)
        self._unkey(c)
        if e >= 0 and e not in (s, c):
            into = int(self.cid[e])
            self.size[e] += self.size[s] + self.size[c]
            if self.hist is not None:
                self.hist[:, e] += self.hist[:, s] + self.hist[:, c]
                self._refresh(e)
            fused = True
            for x in sorted((s, c), reverse=True):
                self._remove(x)
        else:
            into = self.next_cid
            self.next_cid += 1
            self.T[:, c] = new
            self.cid[c] = into
            self.size[c] += self.size[s]
            self.key[c] = key
            self.slot_of[key] = c
            if self.sorted:
                i = np.searchsorted(self.sk, key)
                self.sk = np.insert(self.sk, i, key)
                self.ss = np.insert(self.ss, i, c)
            if self.hist is not None:
                self.hist[:, c] += self.hist[:, s]
                self._refresh(c)
            self._remove(s)
            fused = False
        self.up[cs] = self.up[cc] = into
        if self.trace is not None:
            self.trace.append(Merge(cs, cc, Fraction(int(cost), self.met.scale),
                                    tuple(h.labels[v] for h, v in zip(self.hs, new)), into, fused))

    def _unkey(self, x):
        key = self.key[x]
        del self.slot_of[key]
        if self.sorted:
            i = np.searchsorted(self.sk, key)
            self.sk = np.delete(self.sk, i)
            self.ss = np.delete(self.ss, i)

    def _refresh(self, x):
        col, n = self.hist[:, x:x + 1], self.size[x:x + 1]
        self.ent[x] = self._entropy(col, n)[0]
        self.tn[x] = self._tnum(col, n)[0]

    def _remove(self, x):
        """Drop slot x (its key is already unregistered); the last live slot moves into it."""
        last = self.live - 1
        if x != last:
            self.T[:, x] = self.T[:, last]
            self.size[x] = self.size[last]
            self.cid[x] = self.cid[last]
            key = self.key[x] = self.key[last]
            self.slot_of[key] = x
            if self.sorted:
                self.ss[np.searchsorted(self.sk, key)] = x
            if self.hist is not None:
                self.hist[:, x] = self.hist[:, last]
                self.ent[x] = self.ent[last]
                self.tn[x] = self.tn[last]
        self.live = last

    # ----------------------------------------------------------------------------- result

    def _find(self, x):
        root = x
        while self.up[root] != root:
            root = self.up[root]
        while self.up[x] != root:
            self.up[x], x = root, self.up[x]
        return int(root)

    def result(self, options):
        slot_of_cid = {int(self.cid[x]): x for x in range(self.live)}
        number, class_of, classes, nodes, sizes = {}, [], [], [], []
        for i in range(self.n0):
            root = self._find(i)
            g = number.get(root)
            if g is None:
                g = number[root] = len(number) + 1
                x = slot_of_cid[root]
                ids = tuple(int(v) for v in self.T[:, x])
                nodes.append(ids)
                classes.append(tuple(h.labels[v] for h, v in zip(self.hs, ids)))
                sizes.append(int(self.size[x]))
            class_of.append(g)
        return GaaResult(class_of=class_of, classes=classes, class_nodes=nodes, sizes=sizes,
                         steps=self.steps, options=options, trace=self.trace or [])


def _argmax_tol(ent):
    """Positions whose entropy is within ENTROPY_TOL of the maximum (G6)."""
    return np.flatnonzero(ent >= ent.max() - ENTROPY_TOL)


def _argmin_frac(num, den):
    """Positions of the exact minimum of num / den (den > 0; int64 or object arrays)."""
    approx = num.astype(np.float64) / den.astype(np.float64)
    lo = approx.min()
    near = np.flatnonzero(approx <= lo * (1 + RATIO_TOL))
    if len(near) == 1 or lo == 0:
        return near
    n, d = num[near], den[near]
    best = int(np.argmin(approx[near]))
    while True:
        lhs, rhs = n * d[best], n[best] * d
        less = np.flatnonzero(lhs < rhs)
        if not len(less):
            return near[lhs == rhs]
        best = int(less[np.argmin(approx[near][less])])
