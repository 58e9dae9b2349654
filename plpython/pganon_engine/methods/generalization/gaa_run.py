"""The state of one GAA run and its bookkeeping: live classes in slots with their tuples, sizes,
creation ids and tuple keys, the per-node LCA and cost rows cached per attribute, the greedy
loop (G1, G2), merge costs (G4), merges and fusion into an existing class (G3), persons (G9),
and the classes numbered for the result.  See `gaa` for the decisions.

Why a module of its own: `gaa.gaa` checks the input and records the options; this is the loop
every strategy shares, and the per-slot arrays that must move together on every swap and
removal are kept in one place.  The partner a step merges with is `gaa_strategies`' choice.
"""

import random
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .gaa_strategies import Pool, Strategies

_SAFE = 2 ** 62
_XLOGX_MAX = 1 << 22
# Hierarchies with more nodes than this are "wide" (a 13,000-leaf ZIP, numbers with 50,000
# distinct values): their per-node rows are not kept for leaves (a leaf is C_s once or twice,
# and its rows are its parent's with one entry changed, G8), and at most _ROW_BUDGET entries
# of an inner node's rows are kept per attribute and kind, the oldest dropped first.
_WIDE = 4096
_ROW_BUDGET = 1 << 21


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


class Run(Strategies):
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
        self.wide = [len(h) > _WIDE for h in hs]
        self.cap = [max(8, _ROW_BUDGET // len(h)) if w else None for h, w in zip(hs, self.wide)]
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
                self.pool = Pool(self.ent, largest=False)
            if self.need_t:
                self.tn = self._tnum(self.hist, cnt)
                self.tf = self.tn.astype(np.float64) / cnt
                self.per_slot += [self.tn, self.tf]
                self.pool = Pool(self.tf, largest=True)
                if self.t64:
                    self.dev = self.hist * self.N - self.G[:, None] * cnt[None, :]
                    self.per_col.append(self.dev)

    # ---------------------------------------------------------------------------- helpers

    def _row(self, cache, j, a, make):
        """The row of node a of attribute j from `cache`, made by make() when missing: kept
        always for a narrow hierarchy, for a wide one only for inner nodes, within its cap."""
        c = cache[j]
        row = c.get(a)
        if row is None:
            row = make()
            cap = self.cap[j]
            if cap is None:
                c[a] = row
            elif not self.hs[j].is_leaf[a]:
                if len(c) >= cap:
                    del c[next(iter(c))]
                c[a] = row
        return row

    def _leaf_of_wide(self, j, a):
        """Is node a a leaf of a wide hierarchy (its rows derived from its parent's)?"""
        return self.wide[j] and self.hs[j].is_leaf[a]

    def _lca_row(self, j, a):
        return self._row(self.lca_cache, j, a, lambda: self._make_lca_row(j, a))

    def _make_lca_row(self, j, a):
        h = self.hs[j]
        if self._leaf_of_wide(j, a) and a != 0:
            row = self._lca_row(j, int(h.parent[a])).copy()  # LCA(a, v) = LCA(parent, v), v != a
            row[a] = a
            return row
        return h.lca_row(a)

    def _lca(self, j, a, b):
        """LCA(a, b) in attribute j."""
        row = self.lca_cache[j].get(a)
        if row is not None:
            return int(row[b])
        anc = self.hs[j].anc
        return int(anc[a, (anc[a] == anc[b]).sum() - 1])

    def _klca_row(self, j, a):
        """Per node v of attribute j: LCA(a, v) times the attribute's key radix."""
        return self._row(self.klca_cache, j, a, lambda: self._lca_row(j, a) * self.radix[j])

    def _lca_list(self, j, a):
        if self.wide[j]:  # read for a few candidates only (_FEW): not worth a list per node
            return self._lca_row(j, a)
        return self._row(self.list_cache, j, a, lambda: self._lca_row(j, a).tolist())

    def _anc_mask(self, j, a):
        """Per node v of attribute j: is v an ancestor of node a (or a itself)?"""
        return self._row(self.anc_cache, j, a,
                         lambda: self._lca_row(j, a) == np.arange(len(self.hs[j])))

    def _cost_rows(self, j, a):
        """For node a of attribute j, per node v: D(a) + D(v) - 2 D(lca) (pairwise) or the pair
        (D(a) - D(lca), D(v) - D(lca)) (size_weighted), scaled."""
        def make():
            d = self.D[j]
            dl = d[self._lca_row(j, a)]
            rows = (d[a] - dl, d - dl)
            return rows[0] + rows[1] if self.cost_mode == "pairwise" else rows
        return self._row(self.cost_cache, j, a, make)

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
        """Merge cost of C_s (in the last live slot s) with each candidate, slots 0 .. s-1.

        A leaf a of a wide hierarchy reads its parent p's rows: against every node but a
        itself, a costs what p costs plus D(a) - D(p) (its LCA with them is p's); the shift
        is added once, and the candidates that hold a get their exact 0 back (G8)."""
        a = self.T[:, s]
        pairwise = self.cost_mode == "pairwise"
        us = uc = None
        shift, fixes = 0, []
        for j in range(self.m):
            x, col = int(a[j]), self.T[j, :s]
            if self._leaf_of_wide(j, x) and x != 0:
                p = int(self.hs[j].parent[x])
                rows = self._cost_rows(j, p)
                d = self.D[j]
                delta = d[x] - d[p]
                shift = shift + delta
                hits = np.flatnonzero(col == x)
                if len(hits):
                    if pairwise:
                        fixes.append((hits, rows[x] + delta, 0))
                    else:
                        fixes.append((hits, rows[0][x] + delta, rows[1][x]))
            else:
                rows = self._cost_rows(j, x)
            if pairwise:
                g = rows[col]
                us = g if us is None else us + g
            else:
                ra, rv = rows
                us = ra[col] if us is None else us + ra[col]
                uc = rv[col] if uc is None else uc + rv[col]
        if fixes or shift:
            us = us + shift
            for hits, fs, fc in fixes:
                us[hits] -= fs
                if not pairwise:
                    uc[hits] -= fc
        if pairwise:
            return us
        sizes = self.size[:s] if self.int64 else self.size[:s].astype(object)
        return int(self.size[s]) * us + sizes * uc


    # ------------------------------------------------------------------------------ merge

    def _merge(self, s, c, cost):
        a, b = self.T[:, s], self.T[:, c]
        new = [self._lca(j, int(a[j]), int(b[j])) for j in range(self.m)]
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
