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
      and S5 score privacy only inside the min-cost set.  The others score every candidate
      without building merged histograms: a merged class's entropy is the candidate's sum of
      c ln c plus the terms of C_s's few values, its t_clo numerator a sum over per-class
      deviation columns.  In table scope the table's value is the merged class's against the
      extreme class E1 of the others (the three most extreme kept in a pool across steps,
      §2.3); entropy being concave and L1 distance convex, a merge of classes no more extreme
      than E1 leaves E1's value, so only the candidates that touch E1 or that the bound
      (n_c v_c + n_s v_s) / n does not clear are computed.  This is exact for t_clo (from
      2^17 rows on, where floats may misorder t_clo values, every candidate is computed); an
      entropy taken from E1 or summed incrementally differs from a direct sum by rounding
      only, far inside ENTROPY_TOL (G6).  Full UCI Adult_Mar (8 QIs, 16,290 tuples), NLLM,
      k = 10: S1 about 2.3 s of CPU with numpy 1.24, every other strategy within 2x.
- G9  Persons (`persons`: per input tuple the ids of the persons owning its rows, when one
      person may own several rows).  Φ counts persons: a class violates it when it holds
      fewer than k distinct persons, C_s is a class with the fewest persons, and k must not
      exceed the persons of the table.  A class's persons are the union of its members'
      (a person with rows of several tuples counts once per class), kept as a set per class.
      Costs and the strategies' privacy scores still read rows; only Φ changes, so without
      persons the run is the same as before.  A person's tuples may end in several classes
      (GAA recodes tuples globally; merging every tuple a person owns would chain persons
      together): the GT publishes no person id, so each class still hides its persons among k.
"""

import math
import random
from collections import namedtuple
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from pganon_engine.core.errors import invalid
from pganon_engine.hierarchy.tree import Hierarchy
from pganon_engine.metrics import infoloss

STRATEGIES = ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "l_div", "t_clo")
COST_MODES = ("pairwise", "size_weighted")
PRIVACY_SCOPES = ("table", "class")
TCLO_SCALES = ("l1", "tv")
ENTROPY_TOL = 1e-9
RATIO_TOL = 1e-9
_SAFE = 2 ** 62
_XLOGX_MAX = 1 << 22
_FEW = 16  # up to this many candidates, Python loops beat numpy calls
_NONE = np.zeros(0, dtype=np.int64)
_NONE.flags.writeable = False


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
        seed=None, trace=False, tick=None, persons=None):
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
    persons       None, or per tuple an iterable of the (hashable) ids of its persons: k
                  counts persons (G9)
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
    psets = _person_sets(persons, len(tuples))
    if psets is not None:
        n_persons = len(set().union(*psets))
        if k > n_persons:
            raise invalid(f"k = {k} is larger than the number of persons ({n_persons}, {total} rows)",
                          hint="lower k: k counts persons")
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
               trace, tick, psets)
    run.loop()
    options = {"k": int(k), "metric": met.name, "strategy": strategy, "cost_mode": cost_mode,
               "privacy_scope": privacy_scope, "distortion_mode": distortion_mode,
               "tie_rule": "smallest creation id" if seed is None else "seeded random",
               "seed": seed}
    if psets is not None:
        options["k_scope"] = "persons"
    return run.result(options)


def _person_sets(persons, n):
    """G9: one set of person ids per tuple, or None."""
    if persons is None:
        return None
    persons = list(persons)
    if len(persons) != n:
        raise invalid(f"{len(persons)} person lists for {n} tuples", hint="give the persons of every tuple")
    out = []
    for i, ps in enumerate(persons):
        if isinstance(ps, (str, bytes)) or not hasattr(ps, "__iter__"):
            raise invalid(f"tuple {i + 1}: its persons must be a collection of ids, not {ps!r}")
        ps = set(ps)
        if not ps:
            raise invalid(f"tuple {i + 1} has rows but no person", hint="every row belongs to a person")
        out.append(ps)
    return out


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


# Privacy scores of the candidates (_Run._privacy): ent, or tn and td, per position of `at`,
# every other position having the value of the class in slot `base`; or, base and at None,
# per position.
_Scores = namedtuple("_Scores", "base at ent tn td")


class _Pool:
    """The few live slots holding the lowest (largest=False) or highest values of a per-slot
    array, kept across steps.  Every live class outside the pool has a value no better than
    `thr`, so the best ones of the pool are the best of the table; the pool is refilled from
    the whole table when it runs low (G8).  SIZE must be at least 4: the three best other
    than C_s."""

    SIZE = 32

    def __init__(self, vals, largest):
        self.vals, self.largest = vals, largest
        self.slots, self.thr = set(), None

    def best(self, s, live, n=3):
        """The (up to) n live slots other than s with the best values, best first."""
        pool = [x for x in self.slots if x != s]
        if len(pool) < n and len(self.slots) < live:
            self._fill(live)
            pool = [x for x in self.slots if x != s]
        v = self.vals
        pool.sort(key=(lambda x: -v[x]) if self.largest else v.__getitem__)
        return pool[:n]

    def _fill(self, live):
        v = self.vals[:live]
        if live <= self.SIZE:
            idx = np.arange(live)
        elif self.largest:
            idx = np.argpartition(v, live - self.SIZE)[live - self.SIZE:]
        else:
            idx = np.argpartition(v, self.SIZE - 1)[:self.SIZE]
        self.slots = set(idx.tolist())
        self.thr = v[idx].min() if self.largest else v[idx].max()

    def changed(self, x):
        """The class in slot x has a new value."""
        self.slots.discard(x)
        if self.thr is not None:
            v = self.vals[x]
            if (v > self.thr) if self.largest else (v < self.thr):
                self.slots.add(x)

    def removed(self, x, last):
        """Slot x is emptied and the class in slot `last` moves into it."""
        self.slots.discard(x)
        if last != x and last in self.slots:
            self.slots.discard(last)
            self.slots.add(x)

    def swapped(self, x, y):
        if (x in self.slots) != (y in self.slots):
            self.slots.symmetric_difference_update((x, y))


class _Run:
    """The state of one GAA run: live classes in slots 0 .. live-1 (a removed slot is filled
    by the last one), per-attribute node ids T[j, slot], sizes, creation ids, tuple keys
    (mixed-radix numbers of the node ids) and, for the privacy strategies, the histograms as
    columns hist[:, slot] with what each class brings to a merge: its own entropy and the sum
    of c ln c over its counts (X), or its t_clo numerator and deviation column c_s N - n N_s
    (dev).  Each step first moves C_s into the last live slot, so the candidates are the
    slots 0 .. s-1 (slot order never decides anything: ties go by creation id)."""

    def __init__(self, hs, met, leaf, cnt, hist, k, strategy, cost_mode, scope, seed, trace,
                 tick, psets=None):
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
        self.keys64 = r < _SAFE  # tuple keys fit int64
        self.key = [sum(int(v) * x for v, x in zip(col, radix)) for col in leaf.T.tolist()]
        self.slot_of = {key: x for x, key in enumerate(self.key)}
        self.lca_cache = [dict() for _ in hs]
        self.cost_cache = [dict() for _ in hs]
        self.list_cache = [dict() for _ in hs]
        self.klca_cache = [dict() for _ in hs]
        self.anc_cache = [dict() for _ in hs]
        # Attribute order for the filters of _select: the most values first.
        self.order = sorted(range(self.m), key=lambda j: -len(hs[j]))
        self.hist = None
        self.need_l = strategy in ("S2", "S3", "S4", "l_div")
        self.need_t = strategy in ("S5", "S6", "S7", "t_clo")
        self.per_slot = []  # the 1-d per-slot arrays that move with their class
        self.per_col = []  # the (values x slots) matrices that do
        self.pool = None
        self.psets = psets  # G9: per slot the class's persons, and their count (what Φ reads)
        self.held = self.size
        if psets is not None:
            self.held = np.array([len(x) for x in psets], dtype=np.int64)
            self.per_slot.append(self.held)
        if hist is not None:
            self.hist = np.ascontiguousarray(hist.T)
            self.G = self.hist.sum(axis=1)
            self.N = total
            q = self.hist.shape[0]
            self.t64 = q * total * total < _SAFE and 2 * total ** 3 < _SAFE
            # Floats of tn / n order the classes' t_clo exactly (distinct ones differ by
            # 1 / (2 N^3) relatively at least): needed by the table-scope shortcut.
            self.tf_exact = self.t64 and 2 * total ** 3 < 2 ** 52
            self.xlogx = None
            if total <= _XLOGX_MAX:
                c = np.arange(total + 1, dtype=np.float64)
                self.xlogx = c * np.log(np.where(c > 0, c, 1.0))
            self.per_col.append(self.hist)
            if self.need_l:
                self.ent = self._entropy(self.hist, cnt)
                self.X = self._xl(self.hist).sum(axis=0)
                self.per_slot += [self.ent, self.X]
                self.pool = _Pool(self.ent, largest=False)
            if self.need_t:
                self.tn = self._tnum(self.hist, cnt)
                self.tf = self.tn.astype(np.float64) / cnt
                self.per_slot += [self.tn, self.tf]
                self.pool = _Pool(self.tf, largest=True)
                if self.t64:
                    self.dev = self.hist * self.N - self.G[:, None] * cnt[None, :]
                    self.per_col.append(self.dev)

    # ---------------------------------------------------------------------------- helpers

    def _lca_row(self, j, a):
        row = self.lca_cache[j].get(a)
        if row is None:
            row = self.hs[j].lca_row(a)
            self.lca_cache[j][a] = row
        return row

    def _klca_row(self, j, a):
        """Per node v of attribute j: LCA(a, v) times the attribute's key radix."""
        row = self.klca_cache[j].get(a)
        if row is None:
            row = self._lca_row(j, a) * self.radix[j]
            self.klca_cache[j][a] = row
        return row

    def _lca_list(self, j, a):
        row = self.list_cache[j].get(a)
        if row is None:
            row = self._lca_row(j, a).tolist()
            self.list_cache[j][a] = row
        return row

    def _anc_mask(self, j, a):
        """Per node v of attribute j: is v an ancestor of node a (or a itself)?"""
        row = self.anc_cache[j].get(a)
        if row is None:
            row = self._lca_row(j, a) == np.arange(len(self.hs[j]))
            self.anc_cache[j][a] = row
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

    def _xl(self, mat):
        """c ln c of each count (0 for 0)."""
        if self.xlogx is not None:
            return self.xlogx[mat]
        f = mat.astype(np.float64)
        return f * np.log(np.where(f > 0, f, 1.0))

    def _entropy(self, mat, n):
        """Entropy of each column of a (values x classes) count matrix."""
        nf = n.astype(np.float64)
        return np.log(nf) - self._xl(mat).sum(axis=0) / nf

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
            sz = self.held[:self.live]
            smallest = sz.min()
            if smallest >= k:
                break
            s = self._pick(np.flatnonzero(sz == smallest))
            if s != self.live - 1:
                self._swap(s, self.live - 1)
                s = self.live - 1
            c, cost = self._partner(s)
            self._merge(s, c, cost)
            self.steps += 1
            if self.tick is not None and self.steps % 64 == 0:
                self.tick()

    def _costs(self, s):
        """Merge cost of C_s (in the last live slot s) with each candidate, slots 0 .. s-1."""
        a = self.T[:, s]
        if self.cost_mode == "pairwise":
            cost = None
            for j in range(self.m):
                g = self._cost_rows(j, int(a[j]))[self.T[j, :s]]
                cost = g if cost is None else cost + g
            return cost
        us = uc = None
        for j in range(self.m):
            ra, rv = self._cost_rows(j, int(a[j]))
            col = self.T[j, :s]
            us = ra[col] if us is None else us + ra[col]
            uc = rv[col] if uc is None else uc + rv[col]
        sizes = self.size[:s] if self.int64 else self.size[:s].astype(object)
        return int(self.size[s]) * us + sizes * uc

    def _partner(self, s):
        cost = self._costs(s)
        st = self.strategy
        if st in ("S1", "S2", "S5"):
            pos = np.flatnonzero(cost == cost.min())
            if st != "S1" and len(pos) > 1:
                sc = self._privacy(s, pos)
                pos = pos[_argmax_tol(sc.ent)] if st == "S2" else pos[_argmin_frac(sc.tn, sc.td)]
        elif st in ("S4", "S7"):
            pos = self._by_product(s, cost)
        else:
            pos = self._by_privacy(s, cost)
        c = self._pick(pos)
        return c, cost[c]

    def _by_privacy(self, s, cost):
        """S3, S6, l_div, t_clo: the candidates with the best privacy value, then (S3, S6)
        the cheapest of them.  Positions are the candidate slots 0 .. s-1."""
        sc = self._privacy(s, None)
        sel, rest = self._best(sc, s)
        cheapest = self.strategy in ("S3", "S6")
        if rest:  # every position outside sc.at is in, with sc.at[sel]
            out = np.delete(sc.at, sel)
            if not cheapest:
                keep = np.ones(s, dtype=bool)
                keep[out] = False
                return np.flatnonzero(keep)
            c = cost.copy()
            c[out] = self.big
            return np.flatnonzero(c == c.min())
        pos = sel if sc.at is None else sc.at[sel]
        if not cheapest:
            return pos
        c = cost[pos]
        return pos[c == c.min()]

    def _best(self, sc, count):
        """The best privacy value (G6: max entropy within ENTROPY_TOL, exact min t_clo): the
        positions in sc.at (all positions for sc.base None) that have it, and whether the
        positions outside sc.at (sc.base's value) have it too."""
        bulk = sc.base is not None and len(sc.at) < count
        if self.need_l:
            top = sc.ent.max() if len(sc.ent) else -np.inf
            if bulk:
                top = max(top, self.ent[sc.base])
            sel = np.flatnonzero(sc.ent >= top - ENTROPY_TOL)
            return sel, bulk and self.ent[sc.base] >= top - ENTROPY_TOL
        sel = _argmin_frac(sc.tn, sc.td) if len(sc.tn) else _NONE
        if not bulk or not len(sel):
            return sel, bulk
        lhs = int(self.tn[sc.base]) * int(sc.td[sel[0]])
        rhs = int(sc.tn[sel[0]]) * int(self.size[sc.base])
        if lhs < rhs:
            return _NONE, True
        return sel, lhs == rhs

    def _by_product(self, s, cost):
        """S4 (min cost / l_div, within RATIO_TOL) and S7 (exact min cost * t_clo, then min
        cost) over the candidate slots 0 .. s-1."""
        sc = self._privacy(s, None)
        cf = cost.astype(np.float64)
        if self.need_l:
            if sc.base is None:
                v = cf * np.exp(-sc.ent)
            else:
                v = cf * np.exp(-self.ent[sc.base])
                v[sc.at] = cf[sc.at] * np.exp(-sc.ent)
            return np.flatnonzero(v <= v.min() * (1 + RATIO_TOL))
        ratio = sc.tn.astype(np.float64) / sc.td.astype(np.float64)
        if sc.base is None:
            approx = cf * ratio
        else:
            approx = cf * (float(self.tn[sc.base]) / float(self.size[sc.base]))
            approx[sc.at] = cf[sc.at] * ratio
        near = np.flatnonzero(approx <= approx.min() * (1 + RATIO_TOL))
        tn, td = self._tclo_at(sc, near)
        pos = near[_argmin_frac(cost[near].astype(object) * tn, td)]
        c = cost[pos]
        return pos[c == c.min()]

    def _tclo_at(self, sc, pos):
        """t_clo numerators and denominators (Python ints) of the given positions."""
        if sc.base is None:
            return sc.tn[pos].astype(object), sc.td[pos].astype(object)
        tn = np.full(len(pos), int(self.tn[sc.base]), dtype=object)
        td = np.full(len(pos), int(self.size[sc.base]), dtype=object)
        i = np.minimum(np.searchsorted(sc.at, pos), len(sc.at) - 1)
        hit = sc.at[i] == pos
        tn[hit] = sc.tn[i[hit]].astype(object)
        td[hit] = sc.td[i[hit]].astype(object)
        return tn, td

    # --------------------------------------------------------------------------- privacy

    def _privacy(self, s, pos):
        """For merging C_s with each candidate (the slots pos, or all of 0 .. s-1 for None):
        the entropy (log of l_div) or t_clo as the fraction tn / (td N) of the class it
        creates (G3), or of the table it leaves (G5), as a _Scores.

        Table scope: a table's value is its merged class's against the extreme E1 of the
        classes the merge leaves untouched.  Entropy is concave and the L1 distance convex,
        so merging classes no more extreme than E1 cannot beat E1: all such candidates get
        E1's value as it is (what a full computation gives, exactly for t_clo, up to
        rounding for entropies: G8), and only the others are computed (those touching E1,
        and, when C_s itself is more extreme than E1, those whose bound
        (n_c v_c + n_s v_s) / n does not clear E1)."""
        if self.scope == "class":
            val, n, _, _ = self._merged(s, slice(0, s) if pos is None else pos)
            if self.need_l:
                return _Scores(None, None, val, None, None)
            return _Scores(None, None, None, val, n if self.t64 else n.astype(object))
        ext = self.pool.best(s, self.live)
        if pos is None:
            base, at = ext[0], self._exact_set(s, ext[0])
            slots = at
        else:
            base, at, slots = None, None, pos
        val, n, fi, fe = self._merged(s, slots)
        other = _untouched(ext, slots, fi, fe)
        if self.need_l:
            ent = np.minimum(val, np.where(other >= 0, self.ent[other], np.inf))
            return _Scores(base, at, ent, None, None)
        un = np.where(other >= 0, self.tn[other], 0)
        ud = np.where(other >= 0, self.size[other], 1)
        if not self.t64:
            n = n.astype(object)
        worse = un * n > val * ud
        return _Scores(base, at, None, np.where(worse, un, val), np.where(worse, ud, n))

    def _exact_set(self, s, x1):
        """The candidate slots whose table value is not simply that of the extreme class x1
        (table scope, every candidate scored): x1 itself, the candidates whose merge x1
        would absorb (G3), and those whose bound does not clear x1's value."""
        size, ns = self.size, int(self.size[s])
        parts = [np.array([x1], dtype=np.int64)]
        if self.need_l:
            e1, es = self.ent[x1], self.ent[s]
            if es < e1:
                sz = size[:s]
                parts.append(np.flatnonzero((sz * self.ent[:s] + ns * es) / (sz + ns) < e1))
        elif not self.tf_exact:
            return np.arange(s)
        else:
            t1n, t1d, tns = int(self.tn[x1]), int(size[x1]), int(self.tn[s])
            if tns * t1d > t1n * ns:
                parts.append(np.flatnonzero((self.tn[:s] + tns) * t1d > t1n * (size[:s] + ns)))
        a, e = self.T[:, s].tolist(), self.T[:, x1].tolist()
        if all(self._anc_mask(j, a[j])[e[j]] for j in range(self.m)):
            parts.append(self._select([self._lca_row(j, a[j]) == e[j] for j in range(self.m)],
                                      slice(0, s)))
        parts = [p for p in parts if len(p)]
        return parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))

    def _merged(self, s, slots):
        """For merging C_s with each candidate slot (a slice 0 .. s-1 or an index array):
        the entropy or t_clo numerator and the size of the class it creates (G3: with the
        live class that absorbs it), and the positions absorbed with the absorbing slots.
        Only what C_s adds is computed: the terms of its sensitive values for the entropy,
        its deviation column for t_clo; absorbed ones are recomputed whole."""
        size, hist = self.size, self.hist
        n = size[slots] + size[s]
        if self.need_l:
            x = self.X[slots].copy()
            col = hist[:, s]
            for v in np.flatnonzero(col).tolist():
                row = hist[v, slots]
                x += self._xl(row + col[v]) - self._xl(row)
            nf = n.astype(np.float64)
            val = np.log(nf) - x / nf
        elif self.t64:
            val = np.abs(self.dev[:, slots] + self.dev[:, s:s + 1]).sum(axis=0)
        else:
            val = self._tnum(hist[:, slots] + hist[:, s:s + 1], n)
        fi, fe = self._fused(s, slots)
        if len(fi):
            at = fi if isinstance(slots, slice) else slots[fi]
            mat = hist[:, at] + hist[:, fe] + hist[:, s:s + 1]
            n[fi] += size[fe]
            val[fi] = self._entropy(mat, n[fi]) if self.need_l else self._tnum(mat, n[fi])
        return val, n, fi, fe

    def _fused(self, s, slots):
        """The candidates (positions in slots) whose merged tuple is the tuple of another
        live class E, and E's slot (G3).  A few are looked up by key; for many, the classes
        whose tuple is an ancestor of C_s's (the only possible E) are found first, then the
        candidates each absorbs: by one filter per ancestor, or for several by the keys of
        all merged tuples."""
        a = self.T[:, s].tolist()
        sliced = isinstance(slots, slice)
        if (s if sliced else len(slots)) <= _FEW:
            rows = [self._lca_list(j, a[j]) for j in range(self.m)]
            got = []
            for i, (c, col) in enumerate(zip(range(s) if sliced else slots.tolist(),
                                             self.T[:, slots].T.tolist())):
                key = sum(r[v] * x for r, v, x in zip(rows, col, self.radix))
                e = self.slot_of.get(key, -1)
                if e >= 0 and e != s and e != c:
                    got.append((i, e))
            return (np.array([i for i, _ in got], dtype=np.int64),
                    np.array([e for _, e in got], dtype=np.int64))
        anc = self._select([self._anc_mask(j, a[j]) for j in range(self.m)], slice(0, s))
        if len(anc) > 2 and self.keys64:  # one pass over merged-tuple keys beats a filter each
            keys = None
            for j in range(self.m):
                g = self._klca_row(j, a[j])[self.T[j, slots]]
                keys = g if keys is None else keys + g
            own = np.array([self.key[e] for e in anc.tolist()], dtype=np.int64)
            order = np.argsort(own)
            own, anc = own[order], anc[order]
            at = np.minimum(np.searchsorted(own, keys), len(own) - 1)
            fi = np.flatnonzero(own[at] == keys)
            fe = anc[at[fi]]
            keep = fe != (fi if sliced else slots[fi])
            return fi[keep], fe[keep]
        fi, fe = [], []
        for e in anc.tolist():
            hit = self._select([self._lca_row(j, a[j]) == self.T[j, e] for j in range(self.m)],
                               slots)
            hit = hit[(hit if sliced else slots[hit]) != e]
            fi.append(hit)
            fe.append(np.full(len(hit), e, dtype=np.int64))
        if not fi:
            return _NONE, _NONE
        fi, fe = np.concatenate(fi), np.concatenate(fe)
        order = np.argsort(fi, kind="stable")
        return fi[order], fe[order]

    def _select(self, masks, slots):
        """The positions in slots (a slice 0 .. s-1 or an index array) of the classes whose
        node passes masks[j] (a boolean per node) for every attribute j."""
        idx = None
        for j in self.order:
            if idx is None:
                idx = np.flatnonzero(masks[j][self.T[j, slots]])
            else:
                at = idx if isinstance(slots, slice) else slots[idx]
                idx = idx[masks[j][self.T[j, at]]]
            if len(idx) == 0:
                break
        return idx

    # ------------------------------------------------------------------------------ merge

    def _merge(self, s, c, cost):
        a, b = self.T[:, s], self.T[:, c]
        new = [int(self._lca_row(j, int(a[j]))[b[j]]) for j in range(self.m)]
        key = sum(v * x for v, x in zip(new, self.radix))
        e = self.slot_of.get(key, -1)
        cs, cc = int(self.cid[s]), int(self.cid[c])
        del self.slot_of[self.key[s]]
        del self.slot_of[self.key[c]]
        if e >= 0 and e not in (s, c):
            into = int(self.cid[e])
            self._join_persons(e, s, c)
            self.size[e] += self.size[s] + self.size[c]
            for mat in self.per_col:
                mat[:, e] += mat[:, s] + mat[:, c]
            self._refresh(e)
            fused = True
            for x in sorted((s, c), reverse=True):
                self._remove(x)
        else:
            into = self.next_cid
            self.next_cid += 1
            self.T[:, c] = new
            self.cid[c] = into
            self._join_persons(c, s)
            self.size[c] += self.size[s]
            self.key[c] = key
            self.slot_of[key] = c
            for mat in self.per_col:
                mat[:, c] += mat[:, s]
            self._refresh(c)
            self._remove(s)
            fused = False
        self.up[cs] = self.up[cc] = into
        if self.trace is not None:
            self.trace.append(Merge(cs, cc, Fraction(int(cost), self.met.scale),
                                    tuple(h.labels[v] for h, v in zip(self.hs, new)), into, fused))

    def _join_persons(self, into, *others):
        """G9: the persons of the merged classes go to slot `into`."""
        if self.psets is None:
            return
        big = max((into, *others), key=lambda x: len(self.psets[x]))
        acc = self.psets[big]
        for x in (into, *others):
            if x != big:
                acc |= self.psets[x]
        self.psets[into] = acc
        self.held[into] = len(acc)

    def _refresh(self, x):
        """Recompute the per-class values of slot x from its (changed) histogram."""
        if self.hist is None:
            return
        col, n = self.hist[:, x:x + 1], self.size[x:x + 1]
        if self.need_l:
            self.ent[x] = self._entropy(col, n)[0]
            self.X[x] = self._xl(col).sum()
        if self.need_t:
            self.tn[x] = np.abs(self.dev[:, x]).sum() if self.t64 else self._tnum(col, n)[0]
            self.tf[x] = float(self.tn[x]) / self.size[x]
        if self.pool is not None:
            self.pool.changed(x)

    def _swap(self, x, y):
        """Exchange the classes of slots x and y."""
        for arr in [self.size, self.cid] + self.per_slot:
            arr[x], arr[y] = arr[y], arr[x]
        for mat in [self.T] + self.per_col:
            keep = mat[:, x].copy()
            mat[:, x] = mat[:, y]
            mat[:, y] = keep
        kx, ky = self.key[y], self.key[x]
        self.key[x], self.key[y] = kx, ky
        if self.psets is not None:
            self.psets[x], self.psets[y] = self.psets[y], self.psets[x]
        self.slot_of[kx], self.slot_of[ky] = x, y
        if self.pool is not None:
            self.pool.swapped(x, y)

    def _remove(self, x):
        """Drop slot x (its key is already unregistered); the last live slot moves into it."""
        last = self.live - 1
        if self.pool is not None:
            self.pool.removed(x, last)
        if x != last:
            self.T[:, x] = self.T[:, last]
            self.size[x] = self.size[last]
            self.cid[x] = self.cid[last]
            key = self.key[x] = self.key[last]
            self.slot_of[key] = x
            for arr in self.per_slot:
                arr[x] = arr[last]
            for mat in self.per_col:
                mat[:, x] = mat[:, last]
            if self.psets is not None:
                self.psets[x] = self.psets[last]
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


def _untouched(ext, slots, fi, fe):
    """Per candidate slot, the first of the extreme classes ext that its merge leaves
    untouched (neither the candidate nor the class absorbing the merge, fi -> fe), or -1."""
    if len(slots) <= _FEW:
        into = dict(zip(fi.tolist(), fe.tolist()))
        return np.array([next((x for x in ext if x != c and x != into.get(i)), -1)
                         for i, c in enumerate(slots.tolist())], dtype=np.int64)
    fused = np.full(len(slots), -1, dtype=np.int64)
    fused[fi] = fe
    other = np.full(len(slots), -1, dtype=np.int64)
    left = np.ones(len(slots), dtype=bool)
    for x in ext:
        take = left & (slots != x) & (fused != x)
        other[take] = x
        left &= ~take
    return other


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
