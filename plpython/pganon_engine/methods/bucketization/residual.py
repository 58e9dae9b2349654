"""The fast residual phase of `bucketize.plan` (A8-A10, A18): records left after the grouping
phase go, first fit, to the groups that can take them, on numpy count arrays per group.

Kept apart from the grouping phase (`trie`): it shares nothing with it but the picks it
receives, and it has its own memory bounds (int16 counts widened on demand).
"""

from __future__ import annotations

import numpy as np

__all__ = ["residual_fast"]


# --------------------------------------------------------------------------------------------
# Fast residual phase
# --------------------------------------------------------------------------------------------


def residual_fast(inp, size, group_l, rb, keep_order, pb, pg):
    """First-fit residual phase (A8-A10) on dense per-group counts; pb, pg: bucket and group
    of every main-phase pick.

    Only counts of values that matter are kept: values with l >= 2 carried by some residual
    bucket (a value with l = 1 always passes the test).  Records of one bucket are identical,
    so the groups that rejected one record reject the next: a bucket's scan only moves forward,
    and the number of records a group can take at once has a closed form."""
    B, d, codes, lval = inp.B, inp.d, inp.codes, inp.lval
    G = len(group_l)
    suppressed = [0] * B
    placed = 0
    residual = [] if keep_order else None
    res_buckets = [b for b in range(B) if size[b] > 0]
    if not res_buckets:
        return suppressed, placed, residual
    if G == 0:
        for b in res_buckets:
            suppressed[b] = size[b]
        return suppressed, placed, residual
    m = inp.min_group
    rowid = {}
    for b in res_buckets:
        for j in range(d):
            if lval[b][j] >= 2:
                rowid.setdefault((j, codes[b][j]), len(rowid))
    R = len(rowid)
    if m >= 2:
        # A18: one more row, the count of the bucket being placed (bounded like a value with
        # l = m), filled from its main-phase picks when its turn comes and cleared after: a
        # bucket's count changes only through its own placements, and memory stays one row
        vrow = R
        R += 1
        porder = np.argsort(pb, kind="stable")
        pbs = pb[porder]
    gsz = list(group_l)  # group sizes (Python ints for the per-group work)
    # A constrained value (l >= 2) occurs at most |G|/2 times in a valid group, so int16
    # counts (and thresholds) are safe until a group reaches 65534 records; then they are
    # widened.
    wide = max(group_l) >= 32767
    dt = np.int32 if wide else np.int16
    cnt = np.zeros((max(R, 1), G), dtype=dt)
    if R:
        carr = np.array(codes, dtype=np.int64).reshape(B, d)
        cols = {}
        for (j, v), r in rowid.items():
            if j not in cols:
                cols[j] = carr[pb, j]
            cnt[r] = np.bincount(pg[cols[j] == v], minlength=G)
    # A record with a value of l >= 2 fits group g iff (c + 1) * l <= |G| + 1, i.e.
    # c <= thr[l][g] = (|G| + 1) // l - 1 (kept up to date as groups grow).
    gsa = np.array(group_l, dtype=np.int64)
    thr = {}
    for lv in {lv for b in res_buckets for lv in lval[b]} | ({m} if m >= 2 else set()):
        if lv >= 2:
            thr[lv] = ((gsa + 1) // lv - 1).astype(dt)
    del gsa

    def grow(gg, gs):
        """Group gg now has gs records: update its thresholds (widen first if needed)."""
        nonlocal cnt, wide
        if not wide and gs >= 65534:
            cnt = cnt.astype(np.int32)
            for lv, a in thr.items():
                thr[lv] = a.astype(np.int32)
            wide = True
        gsz[gg] = gs
        for lv, a in thr.items():
            a[gg] = (gs + 1) // lv - 1

    for b in res_buckets:
        rem = size[b]
        cons = [(rowid[(j, codes[b][j])], lval[b][j]) for j in range(d) if lval[b][j] >= 2]
        if m >= 2:
            lo, up = np.searchsorted(pbs, [b, b + 1])
            mine = pg[porder[lo:up]]
            np.add.at(cnt[vrow], mine, 1)
            took = []
            cons.append((vrow, m))
        if not cons:
            # every group accepts a record whose values all have l = 1: all go to group 0
            grow(0, gsz[0] + rem)
            placed += rem
            for _ in range(rem):
                rb.add(b, 0)
                if keep_order:
                    residual.append((0, b))
            continue
        g = 0
        chunk = 256
        while rem > 0 and g < G:
            hi = min(G, g + chunk)
            ok = None
            for r, lv in cons:
                t_ok = cnt[r, g:hi] <= thr[lv][g:hi]
                if ok is None:
                    ok = t_ok
                else:
                    ok &= t_ok
            # Groups in [g, hi) change only through this bucket's own placements, which move
            # forward, so the feasible ones can be used in order without re-testing (each
            # takes at least one record, so at most rem of them are needed).
            for off in np.flatnonzero(ok)[:rem].tolist():
                gg = g + off
                gs = gsz[gg]
                # records the group can take: (c + k) * l <= gs + k for every constraint
                k = rem
                for r, lv in cons:
                    k = min(k, (gs - cnt.item(r, gg) * lv) // (lv - 1))
                grow(gg, gs + k)
                for r, lv in cons:
                    cnt[r, gg] = cnt.item(r, gg) + k
                if m >= 2:
                    took.append(gg)
                rem -= k
                placed += k
                for _ in range(k):
                    rb.add(b, gg)
                    if keep_order:
                        residual.append((gg, b))
                if not rem:
                    break
            g = hi
            chunk *= 4
        if rem:
            suppressed[b] = rem
        if m >= 2:
            cnt[vrow, mine] = 0
            cnt[vrow, took] = 0
    return suppressed, placed, residual
