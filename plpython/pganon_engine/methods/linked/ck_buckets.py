"""The live fingerprint buckets (FBs) of a (c,k) plan and the status of a linkable pair: the state
that CreateFB's remainder step (`ck.ck_plan`) and RefineFB (`ck_refine`) share.  Apart from the
refiner because it is where refinement's speed lives: each FB's value sets as counts, as bit
masks and as numpy rows, so that the status of one FB against all its partners is one vector
operation (see "Refinement cost" in `ck_refine`).

Decision (numbered with those of `ck`; spec section 7 items in brackets):

- A8  eq. (4)/(5) are checked pairwise, for every pair of FBs that share a delta value, on the
      full value sets of the two FBs; an intersection of exactly one value is a violation,
      0 or >= 2 values are fine [7.8].  eq. (4) ignores delta, eq. (5) also zeta.  A pair's
      status is 2 (eq. 4 holds), 1 (only eq. 5) or 0.  No k-way hardening.
"""

from __future__ import annotations

from bisect import insort

import numpy as np

__all__ = ["Fbs", "STRICT", "RELAX"]

STRICT, RELAX = 2, 1  # pair status levels (A8)
_WORD = (1 << 64) - 1
_SIG_SLACK = 1 << 14  # signatures of no live FB kept before `Fbs._compact`
_ONE = np.uint64(1)


class Fbs:
    """Live FBs.  rows[b]: record indices in T order; cnt[b][a]: dict of SA a's value codes ->
    count (zero counts removed, so the keys are the FB's value set); mask[b][a]: the same value
    set as a bit mask (bit x set iff code x occurs); holders[v]: FBs holding delta code v;
    open[v]: those holding it fewer than c_f times, as a bit set over BIDs (an int: the smallest
    one outside a few excluded FBs is one AND and a lowest-bit, not a scan of every holder);
    free[v]: sum over the holders of
    max(0, c_f - their count of v) (the room for v left in FBs that hold it).

    The same masks as numpy rows indexed by BID, for the status of one FB against many (A8):
    nm[b] the non-delta SAs' masks as uint64 words (SA a in words off[a] .. off[a] + width[a]),
    dm[b] the delta mask's words, live[b] whether b is a live FB.  A pair's status depends only
    on the two FBs' non-delta masks; `levels` computes it for one row of masks against a list of
    FBs at once (AND, then "exactly one bit" per SA), `partners` lists the FBs sharing a delta
    value from the delta words.  BIDs are small ints, so these arrays grow with the number of
    FBs times the mask words (values / 64 per SA), nothing per pair."""

    def __init__(self, codes, d, rank, zeta, c_f):
        self.codes, self.d, self.rank, self.zeta, self.c_f = codes, d, rank, zeta, c_f
        self.m = len(codes)
        self.dc = codes[d]
        self.vec = list(zip(*codes))  # per record: its SA codes
        nd = [a for a in range(self.m) if a != d]
        self.nd = tuple(nd)
        self.nd_hard = tuple(a for a in nd if a not in zeta)
        self.nd_soft = tuple(a for a in nd if a in zeta)
        self.rows, self.cnt, self.mask, self.holders, self.free = {}, {}, {}, {}, {}
        self.open, self._grp = {}, {}
        width = {a: max(1, (max(codes[a], default=0) + 64) // 64) for a in range(self.m)}
        self.width, self.off, pos = width, {}, 0
        for a in nd:
            self.off[a] = pos
            pos += width[a]
        self._nw, self._dw = pos, width[d]
        self.one_word = all(width[a] == 1 for a in nd)  # then word p is the mask of SA nd[p]
        self._starts = np.array([self.off[a] for a in nd], dtype=np.intp)
        self._hard = np.array([p for p, a in enumerate(nd) if a not in zeta], dtype=np.intp)
        self._soft = np.array([p for p, a in enumerate(nd) if a in zeta], dtype=np.intp)
        self.nm = np.zeros((0, self._nw), dtype=np.uint64)
        self.dm = np.zeros((0, self._dw), dtype=np.uint64)
        self.live = np.zeros(0, dtype=bool)
        # signatures (the non-delta masks) interned: sid[b] numbers FB b's, sig_rows[x] holds
        # signature x's words; FBs with one signature have the same status against any FB
        self.sid = np.zeros(0, dtype=np.int64)
        self._sig_ids, self.sig_rows = {}, np.zeros((16, self._nw), dtype=np.uint64)
        self.version = 0  # bumped whenever an FB's value sets or the live FBs change

    # ---- the numpy rows ---------------------------------------------------------------------

    def words(self, mask):
        """The non-delta masks of a per-SA mask list as one row of uint64 words."""
        out = []
        for a in self.nd:
            x = mask[a]
            for _ in range(self.width[a]):
                out.append(x & _WORD)
                x >>= 64
        return np.array(out, dtype=np.uint64)

    def _sync(self, b):
        if b >= len(self.live):
            n = max(2 * len(self.live), b + 1)
            for name in ("nm", "dm"):
                old = getattr(self, name)
                new = np.zeros((n, old.shape[1]), dtype=np.uint64)
                new[:len(old)] = old
                setattr(self, name, new)
            live = np.zeros(n, dtype=bool)
            live[:len(self.live)] = self.live
            self.live = live
            sid = np.zeros(n, dtype=np.int64)
            sid[:len(self.sid)] = self.sid
            self.sid = sid
        mask = self.mask[b]
        key = tuple(mask[a] for a in self.nd)
        x = self._sig_ids.get(key)
        if x is None:
            if len(self._sig_ids) > _SIG_SLACK + 4 * len(self.rows):
                self._compact()
            x = self._sig_ids[key] = len(self._sig_ids)
            if x >= len(self.sig_rows):
                grown = np.zeros((2 * len(self.sig_rows), self._nw), dtype=np.uint64)
                grown[:x] = self.sig_rows[:x]
                self.sig_rows = grown
            self.sig_rows[x] = self.words(mask)
        self.sid[b] = x
        self.nm[b] = self.sig_rows[x]
        x = self.mask[b][self.d]
        for w in range(self._dw):
            self.dm[b, w] = x & _WORD
            x >>= 64
        self.live[b] = True
        self.version += 1

    def _compact(self):
        """Forget the signatures no live FB has (moves leave them behind); renumbers the rest."""
        keep = np.unique(self.sid[self.live])
        new = {int(x): n for n, x in enumerate(keep.tolist())}
        self._sig_ids = {t: new[x] for t, x in self._sig_ids.items() if x in new}
        self.sig_rows[:len(keep)] = self.sig_rows[keep]
        remap = np.zeros(max(len(self.sig_rows), 1), dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        self.sid[self.live] = remap[self.sid[self.live]]

    def signature_counts(self, gs):
        """The distinct signatures of the FBs `gs`: (their ids, how many FBs of `gs` have
        each, their rows of words), ids ascending."""
        counts = np.bincount(self.sid[gs], minlength=len(self._sig_ids))
        ids = np.flatnonzero(counts)
        return ids, counts[ids], self.sig_rows[ids]

    def partners(self, b):
        """The live FBs other than b sharing a delta value with b, ascending (an int array)."""
        dm = self.dm
        if self._dw == 1:
            hit = (dm[:, 0] & dm[b, 0]) != 0
        else:
            hit = (dm & dm[b]).any(axis=1)
        hit &= self.live
        hit[b] = False
        return np.flatnonzero(hit)

    def levels(self, row, gs):
        """Status (A8) of an FB with non-delta mask words `row` against each FB of `gs`."""
        return self.row_levels(row, self.nm[gs])

    def row_levels(self, row, rows):
        """Status (A8) of an FB with non-delta mask words `row` against each row of words."""
        z = rows & row
        nz = z != 0
        pow2 = (z & (z - _ONE)) == 0
        if self.one_word:
            single = nz & pow2
        else:
            single = ((np.add.reduceat(nz, self._starts, axis=1, dtype=np.int32) == 1)
                      & np.logical_and.reduceat(pow2, self._starts, axis=1))
        if not len(self._soft):  # every SA counts for eq. (4) and eq. (5): 0 or STRICT
            return np.where(single.any(axis=1), np.int8(0), np.int8(STRICT))
        out = np.full(len(rows), STRICT, dtype=np.int8)
        if len(self._soft):
            out[single[:, self._soft].any(axis=1)] = RELAX
        if len(self._hard):
            out[single[:, self._hard].any(axis=1)] = 0
        return out

    def first_without(self, v, skip):
        """The smallest live FB that does not hold delta code v and is not in `skip`."""
        w, bit = divmod(v, 64)
        ok = self.live & ((self.dm[:, w] >> np.uint64(bit)) & _ONE == 0)
        ok[list(skip)] = False
        return int(np.argmax(ok))  # the caller knows one exists

    def below(self, target):
        """Every linkable pair (i, j), i < j, below `target`, sorted."""
        out = []
        for i in sorted(self.rows):
            gs = self.partners(i)
            gs = gs[gs > i]
            if len(gs):
                out.extend((i, g) for g in gs[self.levels(self.nm[i], gs) < target].tolist())
        return out

    # ---- records in and out -----------------------------------------------------------------

    def add(self, b, rows):
        self.rows[b] = sorted(rows, key=self.rank.__getitem__)
        self.cnt[b] = [{} for _ in range(self.m)]
        self.mask[b] = [0] * self.m
        for r in rows:
            self._inc(b, r)
        self._sync(b)

    def _inc(self, b, r):
        cnt, mask = self.cnt[b], self.mask[b]
        for a, x in enumerate(self.vec[r]):
            c = cnt[a]
            n = c.get(x, 0)
            c[x] = n + 1
            if not n:
                mask[a] |= 1 << x
        v = self.dc[r]
        n = cnt[self.d][v]  # the count of v after
        if n == 1:
            if v not in self.holders:
                self.holders[v], self.open[v], self.free[v] = set(), 0, 0
            self.holders[v].add(b)
            self.free[v] += max(0, self.c_f - 1)
            if self.c_f > 1:
                self.open[v] |= 1 << b
        elif n <= self.c_f:
            self.free[v] -= 1
            if n == self.c_f:
                self.open[v] &= ~(1 << b)

    def _dec(self, b, r):
        cnt, mask = self.cnt[b], self.mask[b]
        for a, x in enumerate(self.vec[r]):
            c = cnt[a]
            n = c[x] - 1
            if n:
                c[x] = n
            else:
                del c[x]
                mask[a] &= ~(1 << x)
        v = self.dc[r]
        n = cnt[self.d].get(v, 0)  # the count of v after
        if not n:
            self.holders[v].discard(b)
            self.open[v] &= ~(1 << b)
            self.free[v] -= max(0, self.c_f - 1)
        elif n < self.c_f:
            self.free[v] += 1
            self.open[v] |= 1 << b

    def move(self, r, src, dst):
        self.rows[src].remove(r)
        self._dec(src, r)
        insort(self.rows[dst], r, key=self.rank.__getitem__)
        self._inc(dst, r)
        self._sync(src)
        self._sync(dst)
        self._grp.pop(src, None)
        self._grp.pop(dst, None)

    def drop(self, b):
        for v, n in self.cnt[b][self.d].items():
            self.holders[v].discard(b)
            self.open[v] &= ~(1 << b)
            self.free[v] -= max(0, self.c_f - n)
        del self.rows[b], self.cnt[b], self.mask[b]
        self.live[b] = False
        self.version += 1
        self._grp.pop(b, None)

    def groups(self, b):
        """Delta code -> [(SA codes, first record with them)] of FB b, distinct SA codes in T
        order (cached until b changes)."""
        g = self._grp.get(b)
        if g is None:
            g, seen, vec, dc = {}, set(), self.vec, self.dc
            for r in self.rows[b]:
                t = vec[r]
                if t not in seen:
                    seen.add(t)
                    lst = g.get(dc[r])
                    if lst is None:
                        g[dc[r]] = [(t, r)]
                    else:
                        lst.append((t, r))
            self._grp[b] = g
        return g

    def dcount(self, b, v):
        return self.cnt[b][self.d].get(v, 0)

    def singletons(self, i, j):
        """[(SA index, value code)] for every non-delta SA whose value sets meet in one value."""
        out = []
        mi, mj = self.mask[i], self.mask[j]
        for a in self.nd:
            z = mi[a] & mj[a]
            if z and not z & (z - 1):
                out.append((a, z.bit_length() - 1))
        return out

    def level(self, i, j):
        """Status (A8) of the pair (i, j) from its masks."""
        mi, mj = self.mask[i], self.mask[j]
        for a in self.nd_hard:
            z = mi[a] & mj[a]
            if z and not z & (z - 1):
                return 0
        for a in self.nd_soft:
            z = mi[a] & mj[a]
            if z and not z & (z - 1):
                return RELAX
        return STRICT
