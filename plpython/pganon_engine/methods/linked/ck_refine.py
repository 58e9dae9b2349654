"""CreateFB and RefineFB of (c,k)-anonymization (spec 004-ck-anonymization.md, section 2.6 steps
4-5): the records grouped into fingerprint buckets (FBs), then swaps and dissolves until every
linkable pair meets the target equation.  Apart from `ck` because it is the algorithm's core and
its cost: `ck.ck_plan` calls `create_fbs`, loads the FBs into a `ck_buckets.Fbs` and runs a
`Refiner` over them.

Decisions (numbered with those of `ck`; spec section 7 items in brackets):

- A6  CreateFB follows spec 2.6 step 4 [7.6]: records in T order (input order); the first
      remaining record r fixes delta value v and takes the first min(c_f, #) records with v;
      each further category is the one holding the first remaining record of an unused
      category, and gives the same number m of its records (balanced, fewer if it has fewer);
      then records are added in T order while the FB is smaller than k (skipping values already
      at c_f).  When fewer than c*k records remain, when fewer than c categories remain, or
      when the k guard runs dry, the remaining records form the remainder.
- A9  Refinement [7.7, 7.9]: the smallest violating pair (i < j) is handled first.  (a) Swap:
      for each shared delta value (first-appearance order), each record a of FB_i and b of FB_j
      with that value (T order), swap a <-> b; accept the first swap after which the pair
      reaches the target and no other pair touching FB_i or FB_j drops in status (the spec's
      "every other pair satisfies" would also reject swaps next to a pair that was already
      violating; "does not get worse" still makes every accepted swap reduce the number of
      violating pairs).  Same-delta swaps keep categories and c_f counts.  (b) Otherwise
      dissolve the smaller FB (tie: the one with the higher BID); each of its records, in T
      order, goes to the FB minimizing (c_f would be exceeded, does not hold the record's delta
      value, is not the other FB of the pair, BID).  Every step lowers (number of FBs, number of
      violating pairs), so refinement terminates; one FB has no linkable pair.

Refinement cost.  The number of linkable pairs grows with the square of the number of FBs, and
with few-valued SAs most of them violate eq. (4) and many are stuck (no swap, no dissolve within
c_f).  The implementation does exactly what A9/A10 say, with less work per pair: value sets are
bit masks, kept also as numpy rows per FB so that the statuses of one FB against all its
partners are one vector operation (listing a row of pairs, rechecking the pairs of FBs that
received records, checking that a swap lowers no other pair); swaps are evaluated on the masks
they would give (once per pair of distinct SA code vectors) instead of being carried out and
undone; only pairs whose status can have dropped are re-queued; a row of pairs (i, j > i) is
listed only when refinement reaches FB i; and whether a dissolve would exceed c_f is answered
from per-value free room.  The unit tests compare it with a literal reading.  Memory beyond
the records: per FB its masks (values / 64 words per SA), the heap of about one row of pairs,
and the stuck pairs (one bit per pair of FBs at most).
"""

from __future__ import annotations

from collections import Counter, deque
from heapq import heappop, heappush

import numpy as np

from .ck_buckets import STRICT

__all__ = ["create_fbs", "Refiner"]

_SPAN = 1 << 31  # pair keys: i * _SPAN + j (BIDs) orders like (i, j)
_LEVELS_KEPT = 4  # FBs whose partner statuses `Refiner._partner_levels` keeps


def create_fbs(order, dcode, cat, ncat, k, c, c_f):
    """CreateFB (A6).  Returns (list of FBs as record lists, remainder records)."""
    n = len(order)
    rank = [0] * n
    for p, r in enumerate(order):
        rank[r] = p
    removed = bytearray(n)
    by_val, by_cat = {}, [deque() for _ in range(ncat)]
    for r in order:
        by_val.setdefault(dcode[r], deque()).append(r)
        by_cat[cat[r]].append(r)

    def head(dq):
        while dq and removed[dq[0]]:
            dq.popleft()
        return dq[0] if dq else None

    def take(v, m):
        dq = by_val[v]
        head(dq)  # records of one value leave in T order, so the live ones are a suffix
        return [dq[i] for i in range(min(m, len(dq)))]

    fbs, left, ptr = [], n, 0
    while left:
        if left < c * k:
            break
        while removed[order[ptr]]:
            ptr += 1
        r = order[ptr]
        chosen = take(dcode[r], c_f)
        m = len(chosen)
        used = {cat[r]}
        ok = True
        for _ in range(c - 1):
            best = None
            for cc in range(ncat):
                if cc in used:
                    continue
                h = head(by_cat[cc])
                if h is not None and (best is None or rank[h] < rank[best]):
                    best = h
            if best is None:
                ok = False
                break
            used.add(cat[best])
            chosen += take(dcode[best], m)
        if ok and len(chosen) < k:
            cnt = Counter(dcode[x] for x in chosen)
            inset = set(chosen)
            for p in range(ptr, n):
                x = order[p]
                if removed[x] or x in inset or cnt[dcode[x]] >= c_f:
                    continue
                chosen.append(x)
                inset.add(x)
                cnt[dcode[x]] += 1
                if len(chosen) >= k:
                    break
            ok = len(chosen) >= k
        if not ok:
            break
        for x in chosen:
            removed[x] = 1
        left -= len(chosen)
        fbs.append(sorted(chosen, key=rank.__getitem__))
    return fbs, [r for r in order if not removed[r]]


def _placement(st, rows, gone, partner, c_f, allow_excess):
    """Target FB per record of a dissolved FB (A9 (b)); None if a record would have to exceed
    c_f and that is not allowed.

    Each record goes to the live FB minimizing (c_f would be exceeded, does not hold the
    record's delta value, is not `partner`, BID).  Only the FBs holding the value (`holders`,
    plus those that received it from this FB already) can have a nonzero count, and of them
    only those in `open` (or among the receivers) are below c_f, so the minimum is found from
    these sets and from the first live FB outside them, without scanning every FB."""
    others = len(st.rows) - 1  # the live FBs but gone
    if partner is not None and (partner == gone or partner not in st.rows):
        partner = None
    d = st.d
    extra = {}  # (b, v) -> records of value v already sent to b
    got = {}  # v -> FBs that received v from this FB
    got_bits = {}  # v -> the same FBs as a bit set (to leave them out of st.open[v])
    out = []
    for r in rows:
        v = st.dc[r]
        held = st.holders.get(v, ())
        gv = got.get(v, ())
        # the FBs with room for v: open ones other than gone and the receivers, and the
        # receivers still below c_f; `best` is the partner if among them, else the smallest
        ob = st.open.get(v, 0) & ~(1 << gone) & ~got_bits.get(v, 0)
        room = [b for b in gv if st.cnt[b][d].get(v, 0) + extra[b, v] < c_f]
        if ob or room:  # (False, False, ...): holds v, below c_f
            if partner is not None and (ob >> partner & 1 or partner in room):
                best = partner
            else:
                best = min(room) if room else -1
                if ob:
                    low = (ob & -ob).bit_length() - 1
                    best = low if best < 0 else min(best, low)
        elif len(held) - (gone in held) + sum(1 for b in gv if b not in held) < others:
            # (False, True, ...): does not hold v
            if partner is not None and partner not in held and partner not in gv:
                best = partner
            else:
                best = st.first_without(v, {gone, *gv})
        else:  # (True, False, ...): every live FB holds v at c_f or above
            if not allow_excess:
                return None
            have = (set(held) | set(gv)) - {gone}
            best = partner if partner in have else min(have)
        out.append((r, best))
        extra[best, v] = extra.get((best, v), 0) + 1
        got.setdefault(v, set()).add(best)
        got_bits[v] = got_bits.get(v, 0) | 1 << best
    return out


def _fixable(ci, cj, mi, mj):
    """Whether some swap of one record of FB i with one of FB j can leave this SA, whose value
    sets (masks mi, mj, counts ci, cj) meet in exactly one value x, meeting in 0 or >= 2 values.
    After a swap of a record with value xa (of i) and one with xb (of j), xa != xb, i holds
    mi + {xb} - ({xa} if ci[xa] == 1) and j holds mj + {xa} - ({xb} if cj[xb] == 1).  A common
    value other than x is then xb kept by j (xb outside mi, cj[xb] >= 2) or xa kept by i (xa
    outside mj, ci[xa] >= 2); losing x needs ci[x] == 1 or cj[x] == 1.  With none of these every
    swap leaves {x}, so `try_swap` fails without trying its candidates (a necessary condition
    only: the candidates still decide)."""
    z = mi & mj
    x = z.bit_length() - 1
    if ci[x] == 1 or cj[x] == 1:
        return True
    for v, n in ci.items():
        if n > 1 and not mj >> v & 1:
            return True
    for v, n in cj.items():
        if n > 1 and not mi >> v & 1:
            return True
    return False


def _single(z):
    """Per uint64 word: exactly one bit set."""
    return (z != 0) & ((z & (z - np.uint64(1))) == 0)


class Refiner:
    """RefineFB (A9, A10).  A pair (i, j), i < j, is keyed i * _SPAN + j in the work heap, so
    the heap orders pairs like tuples and holds plain ints."""

    def __init__(self, st, c_f, ids, tick=None):
        self.st, self.c_f, self.ids = st, c_f, ids
        self.events = []
        self.tick = tick or (lambda: None)
        self._levels_cache, self._levels_version = {}, -1

    def dissolve(self, gone, partner, allow_excess, why):
        st = self.st
        if not allow_excess and self._overflows(gone):
            return None
        rows = list(st.rows[gone])
        plan = _placement(st, rows, gone, partner, self.c_f, allow_excess)
        if plan is None:
            return None
        for r, b in plan:
            st.move(r, gone, b)
        st.drop(gone)
        self.events.append(("dissolve", why, tuple(self.ids[r] for r in rows)))
        return {b for _, b in plan}

    def _overflows(self, gone):
        """Whether dissolving `gone` has to exceed c_f (then `_placement` returns None when
        excess is not allowed).  A record of delta value v goes to an FB below c_f for v while
        one exists, whichever it is, so the records of v fit iff there are at most as many as
        the free places sum(max(0, c_f - count of v)) over the other live FBs; values do not
        interact.  This answers in O(values of `gone`) instead of a placement over all FBs."""
        st, c_f = self.st, self.c_f
        others = len(st.rows) - 1
        for v, m in st.cnt[gone][st.d].items():
            free = c_f * (others - (len(st.holders[v]) - 1))  # FBs without v (gone holds v)
            free += st.free[v] - max(0, c_f - m)  # FBs with v, but gone
            if m > free:
                return True
        return False

    def try_swap(self, i, j, target):
        """A9 (a).  Each candidate swap is evaluated on the value masks the two FBs would have
        after it (a same-delta swap changes no delta set, hence no partner set), without moving
        records; only the accepted swap is carried out.

        The outcome of a candidate depends only on the SA codes of its two records, so only the
        first record with each distinct code vector is tried, in T order (the first acceptable
        pair of code vectors, taken at their first records, is the first acceptable swap in the
        T-order double loop).  The pair reaches `target` iff no SA that counts for it (every
        non-delta SA for eq. (4), the non-zeta ones for eq. (5)) meets in one value; an SA that
        meets in one value now has to change, so a candidate whose records agree on it fails at
        once, and when both FBs hold only that one value no candidate can succeed."""
        st = self.st
        mi, mj = st.mask[i], st.mask[j]
        viol, rest = [], []
        for s in (st.nd if target == STRICT else st.nd_hard):
            z = mi[s] & mj[s]
            if z and not z & (z - 1):
                if mi[s] == z == mj[s]:
                    return None  # every record of i and j has this value
                viol.append(s)
            else:
                rest.append(s)
        ci, cj = st.cnt[i], st.cnt[j]
        for s in viol:
            if not _fixable(ci[s], cj[s], mi[s], mj[s]):
                return None  # no same-delta swap changes this SA's one common value
        check = viol + rest
        gi, gj = st.groups(i), st.groups(j)
        for v in sorted(gi.keys() & gj.keys()):
            self.tick()
            lb = gj[v]
            for va, a in gi[v]:
                for vb, b in lb:
                    for s in viol:
                        if va[s] == vb[s]:
                            break  # this SA keeps its single common value
                    else:
                        for s in check:
                            xa, xb = va[s], vb[s]
                            if xa == xb:
                                z = mi[s] & mj[s]
                            else:
                                zi, zj = mi[s] | 1 << xb, mj[s] | 1 << xa
                                if ci[s][xa] == 1:
                                    zi ^= 1 << xa
                                if cj[s][xb] == 1:
                                    zj ^= 1 << xb
                                z = zi & zj
                            if z and not z & (z - 1):
                                break  # (i, j) would stay below target
                        else:
                            if self._harmless(i, j, va, vb):
                                st.move(a, i, j)
                                st.move(b, j, i)
                                self.events.append(("swap", self.ids[a], self.ids[b]))
                                return {i, j}
        return None

    def _harmless(self, i, j, va, vb):
        """Whether swapping a record with codes va of FB i and one with codes vb of FB j
        (same delta value) lowers the status of no other pair of i or j: the statuses of the
        FB's new masks against the distinct signatures of its partners at once, compared with
        the current ones.  Those (`_partner_levels`) are kept until an FB changes, so the many
        candidates and pairs tried between two changes compute them once per FB; the partner
        of the pair itself is left out by ignoring its signature when no other partner has it."""
        st = self.st
        ci, cj = st.cnt[i], st.cnt[j]
        ni, nj = list(st.mask[i]), list(st.mask[j])
        for s in st.nd:
            xa, xb = va[s], vb[s]
            if xa != xb:
                ni[s] |= 1 << xb
                nj[s] |= 1 << xa
                if ci[s][xa] == 1:
                    ni[s] ^= 1 << xa
                if cj[s][xb] == 1:
                    nj[s] ^= 1 << xb
        mask = st.mask
        for new, own, other in ((ni, i, j), (nj, j, i)):
            changed = [p for p, s in enumerate(st.nd) if new[s] != mask[own][s]]
            if not changed:
                continue  # this FB's value sets, hence its pairs, are unchanged
            ids, counts, rows, before = self._partner_levels(own)
            pos = None
            if st.one_word:
                # a status drops only where a changed SA now meets in one value and did not:
                # those partners first, on the changed SAs' words alone
                cols = rows[:, changed]
                z_new = cols & st.words(new)[changed]
                z_old = cols & st.nm[own][changed]
                newly = (_single(z_new) & ~_single(z_old)).any(axis=1)
                pos = np.flatnonzero(newly)
                if not len(pos):
                    continue
                drop = st.row_levels(st.words(new), rows[pos]) < before[pos]
            else:
                drop = st.row_levels(st.words(new), rows) < before
            x = np.searchsorted(ids, st.sid[other])
            if counts[x] == 1:  # the pair itself: its partner's signature, held by no other
                drop &= (pos if pos is not None else np.arange(len(ids))) != x
            if drop.any():
                return False
        return True

    def _partner_levels(self, own):
        """(signature ids, FB counts, rows, statuses of `own` now) over `own`'s partners,
        cached while no FB changes (`Fbs.version`).  Each entry holds a row per partner, so
        only the last few FBs are kept (the row being refined comes back pair after pair)."""
        st = self.st
        cache = self._levels_cache
        if self._levels_version != st.version:
            cache.clear()
            self._levels_version = st.version
        got = cache.get(own)
        if got is None:
            if len(cache) >= _LEVELS_KEPT:
                del cache[next(iter(cache))]  # the oldest entry
            ids, counts, rows = st.signature_counts(st.partners(own))
            got = cache[own] = (ids, counts, rows, st.row_levels(st.nm[own], rows))
        return got

    def run(self, target, allow_excess):
        """Clear every linkable pair below `target`, except those that no swap clears and
        whose dissolving would exceed c_f when that is not allowed (stuck pairs).

        Pairs are handled in increasing (i, j) order, each time the smallest live, unstuck pair
        below target.  The heap holds a cursor (i, 0) for every FB i whose pairs (i, j > i) are
        not listed yet; popping it lists those below target then (before that, the cursor
        stands for them).  Listed pairs are each queued once; a pair of a listed row enters the
        heap when it falls below target.  An accepted swap lowers no pair's status (A9 (a)), so
        it queues nothing; a dissolve changes only the pairs of the FBs receiving records, which
        are rechecked.  So the heap holds about one row of pairs, not all of them; stuck pairs
        are bits of one bytearray per row."""
        st = self.st
        partners, levels, rows = st.partners, st.levels, st.rows
        heap = [i * _SPAN for i in sorted(rows)]  # ascending, hence a heap
        listed = 0  # rows <= listed have been listed (cursors pop in increasing order)
        queued, stuck = set(), {}
        overflows = {}  # FB -> whether dissolving it exceeds c_f, until a dissolve
        width = (max(rows) >> 3) + 1  # BIDs are never created here
        why = "eq. (4)" if target == STRICT else "eq. (5)"
        while heap:
            self.tick()
            key = heappop(heap)
            i, j = divmod(key, _SPAN)
            if not j:  # the cursor of row i: list its pairs below target
                listed = i
                if i in rows:
                    gs = partners(i)
                    gs = gs[gs > i]
                    if len(gs):
                        for g in gs[levels(st.nm[i], gs) < target].tolist():
                            heappush(heap, key + g)
                            queued.add(key + g)
                continue
            queued.discard(key)
            if i not in rows or j not in rows:
                continue
            row = stuck.get(i)
            if row is not None and row[j >> 3] >> (j & 7) & 1:
                continue
            if st.level(i, j) >= target:
                continue
            if self.try_swap(i, j, target) is not None:
                continue  # a same-delta swap keeps every FB's delta counts: `overflows` holds
            gone, partner = (i, j) if len(rows[i]) < len(rows[j]) else (j, i)
            if allow_excess:
                touched = self.dissolve(gone, partner, allow_excess, why)
            else:
                over = overflows.get(gone)
                if over is None:
                    over = overflows[gone] = self._overflows(gone)
                touched = None if over else self.dissolve(gone, partner, allow_excess, why)
            if touched is None:
                if row is None:
                    row = stuck[i] = bytearray(width)
                row[j >> 3] |= 1 << (j & 7)
                continue
            overflows.clear()
            for b in touched:
                self.tick()
                gs = partners(b)
                gs = gs[np.minimum(gs, b) <= listed]  # else its row's cursor stands for the pair
                if not len(gs):
                    continue
                for g in gs[levels(st.nm[b], gs) < target].tolist():
                    lo, hi = (b, g) if b < g else (g, b)
                    p = lo * _SPAN + hi
                    if p in queued:
                        continue
                    row = stuck.get(lo)
                    if row is not None and row[hi >> 3] >> (hi & 7) & 1:
                        continue
                    heappush(heap, p)
                    queued.add(p)
