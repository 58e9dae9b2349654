"""The reference planner: spec section 3.2 transcribed step by step (O(n * B * d) time).

Kept apart from the fast planner (`bucketize.plan`) because it is its yardstick: the tests
check that both give identical plans, so this one stays literal and is never optimised.
"""

from __future__ import annotations

import random
from array import array

from .inputs import dense_caps, group_l_of, prepare
from .runs import Plan, RunBuilder

__all__ = ["plan_reference"]


# --------------------------------------------------------------------------------------------
# Reference implementation (spec section 3.2, step by step)
# --------------------------------------------------------------------------------------------


def plan_reference(sizes, values, levels, l_of_level, variant, mslf=True, baseline_l=None,
                   tie="first", seed=None, *, keep_order=False, min_group=1):
    """Literal transcription of spec section 3.2: scan every bucket at every pick.

    Slow (O(n * B * d)); it is the yardstick `plan` is tested against."""
    inp = prepare(sizes, values, levels, l_of_level, variant, mslf, baseline_l, tie, seed, min_group)
    B, d, codes, lval, blev = inp.B, inp.d, inp.codes, inp.lval, inp.blev
    m = inp.min_group
    size = list(inp.sizes)
    cap = dense_caps(size, codes, d, inp.nv)
    rng = random.Random(inp.seed) if tie == "random" else None

    def score(k):
        if inp.variant == "mbf":
            return size[k]
        cs = [cap[j][codes[k][j]] for j in range(d)]
        return (max(cs) if inp.variant == "msdcf" else sum(cs)) + size[k]

    groups, group_l = [], []
    while sum(size) > 0:
        lG = group_l_of(inp, max(blev[k] for k in range(B) if size[k] > 0))
        cnt = [dict() for _ in range(d)]
        G = []
        for _ in range(lG):
            cand = [
                k for k in range(B)
                if size[k] > 0 and G.count(k) + 1 <= lG // m and not any(
                    cnt[j].get(codes[k][j], 0) + 1 > lG // lval[k][j] for j in range(d))
            ]
            if not cand:
                break
            keys = {k: (blev[k], score(k)) for k in cand}
            best = max(keys.values())
            tied = [k for k in cand if keys[k] == best]
            k = tied[rng.randrange(len(tied))] if (rng and len(tied) > 1) else tied[0]
            G.append(k)
            size[k] -= 1
            for j in range(d):
                v = codes[k][j]
                cap[j][v] -= 1
                cnt[j][v] = cnt[j].get(v, 0) + 1
        if len(G) < lG:  # A4: roll back, end the grouping phase
            for k in G:
                size[k] += 1
                for j in range(d):
                    cap[j][codes[k][j]] += 1
            break
        groups.append(G)
        group_l.append(lG)

    # Residual phase (A8-A10): record by record, first fit.
    gcnt = []
    for G in groups:
        c = [dict() for _ in range(d)]
        for k in G:
            for j in range(d):
                c[j][codes[k][j]] = c[j].get(codes[k][j], 0) + 1
        gcnt.append(c)
    gsize = [len(G) for G in groups]
    residual = []  # (group, bucket) in placement order
    suppressed = [0] * B
    gb = [dict.fromkeys(G, 0) for G in groups]   # records of each bucket per group
    for g, G in enumerate(groups):
        for k in G:
            gb[g][k] += 1
    for k in range(B):
        while size[k] > 0:
            for g in range(len(groups)):
                if (gb[g].get(k, 0) + 1) * m <= gsize[g] + 1 and all(
                        (gcnt[g][j].get(codes[k][j], 0) + 1) * lval[k][j] <= gsize[g] + 1 for j in range(d)):
                    gb[g][k] = gb[g].get(k, 0) + 1
                    for j in range(d):
                        gcnt[g][j][codes[k][j]] = gcnt[g][j].get(codes[k][j], 0) + 1
                    gsize[g] += 1
                    size[k] -= 1
                    residual.append((g, k))
                    break
            else:
                suppressed[k] = size[k]
                size[k] = 0
    rb = RunBuilder(B)
    order = array("q")
    for g, G in enumerate(groups):
        for k in G:
            rb.add(k, g)
            order.append(k)
    for g, k in residual:
        rb.add(k, g)
    return Plan(
        n_groups=len(groups), group_l=group_l, run_bucket=rb.rb, run_group=rb.rg,
        run_count=rb.rc, suppressed=suppressed, main_picks=len(order),
        residual_placed=len(residual), n_suppressed=sum(suppressed),
        main_order=order if keep_order else None,
        residual_order=residual if keep_order else None,
    )
