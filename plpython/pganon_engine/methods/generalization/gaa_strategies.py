"""The partner choice of a GAA run: the strategies S1-S7 and the pure l_div / t_clo strategies
(G5), their exact tie rules (G6), and the privacy scores of the candidate merges computed
without building merged histograms, with the pool of extreme classes that lets table scope skip
most candidates (G8).  See `gaa` for the decisions.

Why a module of its own: the greedy loop (`gaa_run`) is the same for every strategy; only the
choice of C_s's partner differs, and it is where nearly all the work and all the shortcuts that
must never change a choice live.  `Strategies` is mixed into `gaa_run.Run` and reads its state.
"""

from collections import namedtuple

import numpy as np

ENTROPY_TOL = 1e-9
RATIO_TOL = 1e-9
_FEW = 16  # up to this many candidates, Python loops beat numpy calls
_NONE = np.zeros(0, dtype=np.int64)
_NONE.flags.writeable = False


# Privacy scores of the candidates (Run._privacy): ent, or tn and td, per position of `at`,
# every other position having the value of the class in slot `base`; or, base and at None,
# per position.
_Scores = namedtuple("_Scores", "base at ent tn td")


class Pool:
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


class Strategies:
    """The partner choice of a `gaa_run.Run`, whose state it reads: live slots 0 .. live-1,
    node ids T, sizes, creation ids, tuple keys, the histograms and per-class entropies or
    t_clo numerators, the extreme-class pool, and its cached LCA rows."""

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
                key = sum(int(r[v]) * x for r, v, x in zip(rows, col, self.radix))
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
