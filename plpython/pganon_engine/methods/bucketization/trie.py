"""The fast grouping phase of `bucketize.plan`: the greedy of spec section 3.2 with the argmax
found by branch and bound in tries of lazily refreshed upper bounds (`TrieEngine`).

Kept apart because it is the one piece tuned for speed (n around 10^6 records, B ~ 17,000
buckets): its invariants are stated here, next to the code that relies on them.
"""

from __future__ import annotations

import bisect
import random
from array import array

from .inputs import dense_caps, group_l_of

__all__ = ["TrieEngine"]


# --------------------------------------------------------------------------------------------
# Fast grouping phase: tries of lazily refreshed upper bounds
# --------------------------------------------------------------------------------------------


def _dim_order(inp, size, skip=None):
    """Order of dimensions in the trie: a performance heuristic only (any order gives the same
    plan).  Dimensions whose shieldable values (l >= 2) hold much of the data come first, so a
    whole shielded value class is skipped near the root; the others follow by concentration
    (sum of squared value shares), so the caps that change at almost every pick sit high up,
    where few trie entries depend on them."""
    d = inp.d
    n = sum(size) or 1
    caps = dense_caps(size, inp.codes, d, inp.nv)
    scored = []
    for j in range(d):
        if j == skip:
            continue
        conc = sum((c / n) ** 2 for c in caps[j])
        shield = sum((c / n) ** 2 for v, c in enumerate(caps[j]) if inp.lvc[j][v] >= 2)
        heavy = shield >= 0.1
        scored.append((not heavy, -(shield if heavy else conc), j))
    return [j for _, _, j in sorted(scored)]


class TrieEngine:
    """Grouping phase, identical to the reference but fast.

    Keys.  A bucket's rank is (blev, score, -index); score*B + (B-1-index) makes it one int.
    Buckets of one level live in one trie per level (MBF, MMDCF): depth t branches on the
    value of dimension seq[t]; the leaves are buckets.  A node is a list, sorted, with one
    entry per child, (-ub, gid, child node), where ub bounds the best key in the child's
    subtree, *relative* to the node: MMDCF adds cap[v]*B when going down to child v, so a
    capacity change touches only the entries of that value and never the keys stored below
    it.  Leaf-level entries are (-key, b, gid).  Keys only decrease while grouping (sizes and
    capacities only go down), so a stored ub stays an upper bound; an entry is refreshed (one
    level only) when a search reaches it.  Keys are unique (they end with the bucket's tie
    value) and gids are unique within a node, so tuple comparison never reaches the child.
    Nodes are small (one entry per value of one dimension, plus a sentinel), so a sorted list
    with bisect re-insertion is cheaper than a heap: a search can step over shielded entries
    instead of popping and pushing them back.  All per-value tables are flat lists indexed by
    gid (a global value id), shared by every depth.

    Search.  Branch and bound: visit entries by decreasing ub, skip values that are shielded
    (A3: a shielded value shields its whole subtree), recurse, keep the best exact leaf key
    found, stop when the next ub cannot beat it.  Each child has exactly one entry in its
    parent.  The leaves carry exact keys, so the result is the exact argmax.

    Ties.  'first' falls out of the key.  'random' takes the best score found that way, then
    lists every allowed bucket of that level with that score (`collect`, same pruning),
    sorts them by index and draws one, exactly like the reference.

    Cost: about 9 node visits per pick on Adult-like data (B ~ 17,000, d = 5); the bounds'
    staleness (capacities shared by many subtrees) and shielded values cause the visits
    beyond the d of one root-to-leaf path.  See benchmarks/plan_speed.py.

    MSDCF.  Score = max_j cap_j[v_j] + size = max over the bucket's values m of
    (cap[m] + size).  So each bucket is put in d "partition" tries (one per value m it has),
    keyed by size only (MBF tries over the other dimensions), under a per-level node whose
    children are the partitions, entered with cap[m]*B.  The best over partitions is the best
    true MSDCF key, and capacity changes again only touch one entry per value.
    """

    def __init__(self, inp, tick=None):
        self.inp = inp
        self.tick = tick or (lambda: None)

    def run(self):
        """Returns (size, group_l, order): sizes left for the residual phase, l_G of each
        group and the bucket of every pick in pick order (group g takes the next group_l[g])."""
        inp = self.inp
        B, d, codes, blev = inp.B, inp.d, inp.codes, inp.blev
        variant = inp.variant
        size = list(inp.sizes)
        lvc = inp.lvc
        insort = bisect.insort
        # own[b] = size[b] * B + (B - 1 - b): the bucket's own part of its key (size, then the
        # 'first' tie value); own[b] < B iff the bucket is empty.
        own = [s * B + B - 1 - b for b, s in enumerate(size)]
        # Values get global ids, gid = off[j] + code, so that the per-value state lives in flat
        # lists: capB (capacity * B), cnt (count in the current group), blocked (A3).
        off = [sum(inp.nv[:j]) for j in range(d)]
        gcodes = [tuple(o + v for o, v in zip(off, codes[b])) for b in range(B)]
        cap = dense_caps(size, codes, d, inp.nv)
        capB = [c * B for j in range(d) for c in cap[j]]
        lval = [lv for j in range(d) for lv in lvc[j]]
        V = len(capB)
        # contribution of a value inside the tries: its capacity for MMDCF, nothing for MBF
        # and for the MSDCF partition tries (the partition's own cap is added at the root)
        ctab = capB if variant == "mmdcf" else [0] * V
        cnt = [0] * V
        blocked = [False] * V
        # A18: a bucket (SA vector) is shielded once it holds floor(l_G / m) records of the group
        mg = inp.min_group
        bblk = [False] * B
        cntb = [0] * B
        found = [-1]  # bucket of the best key found so far by the running search
        # Every node ends with a sentinel whose ub, -BIG, is below every key and floor: a walk
        # stops on reaching it, so node[i + 1] exists while node[i] is a real entry, and a
        # child whose buckets are all used up gets ub c - BIG (never explored).
        BIG = 1 << 62
        SENTINEL = (BIG, -1, None)

        # ---- build -------------------------------------------------------------------------
        def build(members, seq):
            last = len(seq) - 1

            def rec(mem, t):
                j = seq[t]
                if t == last:
                    h = [(-(ctab[gcodes[b][j]] + own[b]), b, gcodes[b][j])
                         for b in mem]
                else:
                    parts = {}
                    for b in mem:
                        parts.setdefault(gcodes[b][j], []).append(b)
                    h = []
                    for v, sub in parts.items():
                        ch = rec(sub, t + 1)
                        h.append((-(ctab[v] - ch[0][0]), v, ch))
                h.sort()
                h.append(SENTINEL)
                return h

            return rec(members, 0)

        nonempty = {}
        bylev = {}
        for b in range(B):
            if size[b] > 0:
                bylev.setdefault(blev[b], []).append(b)
                nonempty[blev[b]] = nonempty.get(blev[b], 0) + 1
        levels_desc = sorted(bylev, reverse=True)

        # ---- search ------------------------------------------------------------------------
        # Node lists are sorted by negated key, so the searches work on negated keys too
        # (saves the negations): search(node, nf) returns -(best allowed key relative to the
        # node) if that key is greater than -nf, leaving its bucket in found[0], and returns
        # nf when there is none.  ("nf" is the negated floor: smaller is better.)  Any key a
        # search records beats everything found before it, so found[0] ends up holding the
        # argmax.
        #
        # A search walks a node from the front.  A stale entry is refreshed (stored ubs only
        # go down, so in the list an entry only moves back): in place if it still sorts before
        # the next entry, otherwise it is re-inserted further back (bisect) and the walk goes
        # on at the same index.  A shielded entry is stepped over and stays where it is, which
        # keeps the list sorted.  An explored entry that is not the last one explored leaves
        # the list (its new ub may still beat the floor, and it must not be walked again) and
        # is re-inserted at the end of the search; one closure serves one depth and is never
        # re-entered, so that stash list is reused.

        def leaf_search():
            def search(node, nf):
                i = 0
                while True:
                    negk, b, v = node[i]
                    if negk >= nf:
                        break
                    o = own[b]
                    if o < B:  # empty bucket: drop it
                        del node[i]
                        continue
                    nk = -(ctab[v] + o)
                    if nk != negk:
                        if nk >= node[i + 1][0]:
                            del node[i]
                            insort(node, (nk, b, v), i)
                            continue
                        node[i] = (nk, b, v)
                        if nk >= nf:
                            break
                    if blocked[v] or bblk[b]:
                        i += 1
                        continue
                    found[0] = b
                    return nk
                return nf

            return search

        def inner_search(sub, cb):
            stash = []
            spush = stash.append

            def search(node, nf):
                i = 0
                while True:
                    negub, v, ch = node[i]
                    if negub >= nf:
                        break
                    c = cb[v]
                    nk = ch[0][0] - c  # fresh -ub
                    if nk != negub:
                        if nk >= node[i + 1][0]:
                            del node[i]
                            insort(node, (nk, v, ch), i)
                            continue
                        node[i] = (nk, v, ch)
                        if nk >= nf:
                            break
                    if blocked[v]:
                        i += 1
                        continue
                    nf = sub(ch, nf + c) - c
                    nn = node[i + 1][0]  # best stored -ub among the entries after this one
                    if nn >= nf:  # none of them can beat the best found: done
                        nk2 = ch[0][0] - c
                        if nk2 != nk:
                            if nk2 < nn:
                                node[i] = (nk2, v, ch)
                            else:
                                del node[i]
                                insort(node, (nk2, v, ch), i)
                        break
                    del node[i]
                    spush((ch[0][0] - c, v, ch))
                if stash:
                    for e in stash:
                        insort(node, e)
                    stash.clear()
                return nf

            return search

        def twig_search():
            """`inner_search` for the nodes just above the leaf level, with `leaf_search`
            written inline: saves a call per leaf visit."""
            stash = []
            spush = stash.append

            def search(node, nf):
                i = 0
                while True:
                    negub, v, ch = node[i]
                    if negub >= nf:
                        break
                    c = ctab[v]
                    nk = ch[0][0] - c
                    if nk != negub:
                        if nk >= node[i + 1][0]:
                            del node[i]
                            insort(node, (nk, v, ch), i)
                            continue
                        node[i] = (nk, v, ch)
                        if nk >= nf:
                            break
                    if blocked[v]:
                        i += 1
                        continue
                    # ---- nf = leaf_search(ch, nf + c) - c, inline
                    lnf = nf + c
                    j = 0
                    while True:
                        negk, b, w = ch[j]
                        if negk >= lnf:
                            break
                        o = own[b]
                        if o < B:
                            del ch[j]
                            continue
                        lk = -(ctab[w] + o)
                        if lk != negk:
                            if lk >= ch[j + 1][0]:
                                del ch[j]
                                insort(ch, (lk, b, w), j)
                                continue
                            ch[j] = (lk, b, w)
                            if lk >= lnf:
                                break
                        if blocked[w] or bblk[b]:
                            j += 1
                            continue
                        found[0] = b
                        nf = lk - c
                        break
                    # ---- end of the leaf search
                    nn = node[i + 1][0]
                    if nn >= nf:
                        nk2 = ch[0][0] - c
                        if nk2 != nk:
                            if nk2 < nn:
                                node[i] = (nk2, v, ch)
                            else:
                                del node[i]
                                insort(node, (nk2, v, ch), i)
                        break
                    del node[i]
                    spush((ch[0][0] - c, v, ch))
                if stash:
                    for e in stash:
                        insort(node, e)
                    stash.clear()
                return nf

            return search

        # collect(node, floor, out, base) appends (base + key, b) for every allowed bucket of
        # the subtree whose key (relative to the node) is greater than floor.  Used by
        # tie='random' to list ties.  Same walk as the searches, with plain keys.
        def leaf_collect():
            def collect(node, floor, out, base):
                i = 0
                while True:
                    negk, b, v = node[i]
                    if -negk <= floor:
                        break
                    o = own[b]
                    if o < B:
                        del node[i]
                        continue
                    k = ctab[v] + o
                    if k != -negk:
                        if -k >= node[i + 1][0]:
                            del node[i]
                            insort(node, (-k, b, v), i)
                            continue
                        node[i] = (-k, b, v)
                        if k <= floor:
                            break
                    if not blocked[v] and not bblk[b]:
                        out.append((base + k, b))
                    i += 1

            return collect

        def inner_collect(sub, cb):
            def collect(node, floor, out, base):
                moved = []
                i = 0
                while True:
                    negub, v, ch = node[i]
                    if -negub <= floor:
                        break
                    c = cb[v]
                    k = c - ch[0][0]
                    if k != -negub:
                        if -k >= node[i + 1][0]:
                            del node[i]
                            insort(node, (-k, v, ch), i)
                            continue
                        node[i] = (-k, v, ch)
                        if k <= floor:
                            break
                    if not blocked[v]:
                        sub(ch, floor - c, out, base + c)
                        k2 = c - ch[0][0]
                        if k2 != k:  # lower now: out until the end (must not be walked again)
                            del node[i]
                            moved.append((-k2, v, ch))
                            continue
                    i += 1
                for e in moved:
                    insort(node, e)

            return collect

        def make(depth, leaf, inner, twig=None):
            """The search (or collect) function for the root of a trie of the given depth."""
            if twig is None or depth == 1:
                f = leaf()
            else:
                f = twig()
                depth -= 1
            for _ in range(depth - 1):
                f = inner(f, ctab)
            return f

        if variant != "msdcf":
            seq = _dim_order(inp, size)
            search = make(d, leaf_search, inner_search, twig_search)
            collect = make(d, leaf_collect, inner_collect)
            roots = {lam: build(mem, seq) for lam, mem in bylev.items()}
            finders = {lam: (search, roots[lam]) for lam in bylev}
        else:
            # partition id m = the value's gid; partition tries are MBF tries over the other
            # dimensions (for d == 1 a partition is a bare leaf-level node whose only
            # dimension is the partition's own, which is never blocked below the partition
            # level because blocked partitions are skipped first).
            mdim = [j for j in range(d) for _ in range(inp.nv[j])]
            seqs = [_dim_order(inp, size, skip=j) if d > 1 else [j] for j in range(d)]
            psearch = make(len(seqs[0]), leaf_search, inner_search, twig_search)
            pcollect = make(len(seqs[0]), leaf_collect, inner_collect)
            proots = {}
            for lam, mem in bylev.items():
                parts = {}
                for b in mem:
                    for j in range(d):
                        parts.setdefault(gcodes[b][j], []).append(b)
                h = []
                for m, sub in parts.items():
                    ch = build(sub, seqs[mdim[m]])
                    h.append((-(capB[m] - ch[0][0]), m, ch))
                h.sort()
                h.append(SENTINEL)
                proots[lam] = h

            # the level root is an inner node over partitions, entered with the partition's cap
            finders = {lam: (inner_search(psearch, capB), proots[lam]) for lam in bylev}
            collect = inner_collect(pcollect, capB)
            roots = proots

        def find_all(lam, floor):
            out = []
            collect(roots[lam], floor, out, 0)
            return out

        # ---- grouping loop -------------------------------------------------------------------
        rng = random.Random(inp.seed) if inp.tie == "random" else None
        order = array("q")
        group_l = []
        remaining = sum(size)
        # Per top level levels_desc[ti] (A2): l_G; thr[gid] = l_G // l, the count at which a
        # value becomes shielded (A3: cnt + 1 > l_G // l); the levels to try, best first.
        per_top = []
        for ti, top in enumerate(levels_desc):
            lG = group_l_of(inp, top)
            thr = [lG // l for l in lval]
            per_top.append((lG, thr, [(lam,) + finders[lam] for lam in levels_desc[ti:]]))
        ti = 0  # the top non-empty level only moves down
        tick = self.tick
        while remaining > 0:
            tick()
            while not nonempty[levels_desc[ti]]:
                ti += 1
            lG, thr, live = per_top[ti]
            # A level that is empty or has no allowed bucket stays so for the rest of the group
            # (sizes and capacities only go down and blocked flags are only set within a
            # group), so it is dropped from this group's copy of the list.
            live = live[:]
            picks = []
            for _ in range(lG):
                key = -1
                while live:
                    lam, fn, root = live[0]
                    if nonempty[lam]:
                        key = -fn(root, 1)  # -1 if none
                        if key >= 0:
                            break
                    del live[0]
                if key < 0:
                    break
                b = found[0]
                if rng is not None:
                    # all allowed buckets of this level with the best score, in index order
                    best = key // B
                    tied = sorted({x for k, x in find_all(lam, best * B - 1) if k // B == best})
                    if len(tied) > 1:
                        b = tied[rng.randrange(len(tied))]
                picks.append(b)
                o = own[b] - B
                own[b] = o
                if o < B:  # bucket now empty
                    nonempty[blev[b]] -= 1
                for v in gcodes[b]:
                    c = cnt[v] + 1
                    cnt[v] = c
                    if c >= thr[v]:
                        blocked[v] = True
                    capB[v] -= B  # (MBF never reads capB)
                if mg > 1:
                    c = cntb[b] + 1
                    cntb[b] = c
                    if c >= lG // mg:
                        bblk[b] = True
            for b in picks:
                for v in gcodes[b]:
                    cnt[v] = 0
                    blocked[v] = False
                cntb[b] = 0
                bblk[b] = False
            if len(picks) < lG:  # A4: roll back and stop grouping
                for b in picks:
                    if own[b] < B:
                        nonempty[blev[b]] += 1
                    own[b] += B
                    for v in gcodes[b]:
                        capB[v] += B
                break
            order.extend(picks)
            group_l.append(lG)
            remaining -= lG
        return [o // B for o in own], group_l, order
