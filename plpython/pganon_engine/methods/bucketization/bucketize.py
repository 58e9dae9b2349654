"""Bucketization planner for the six algorithms of Xiao & Li (2020): MBF, MSDCF, MMDCF and
their MSLF variants (spec 000-lsl-diversity.md, sections 1, 3, 6 and 8.A).

The planner works on bucket COUNTS only: bucket b is a composite SA vector with ``sizes[b]``
records, identified by its index (first-appearance order).  It returns a `Plan` in run-length
form that the SQL pipeline turns into a group id per row; records of a bucket are consumed in
FIFO rank order (spec A7), so the plan never names a row.

Algorithm: spec section 3.2 (unified pseudo-code), with these decisions:

- A1  a bucket's level is the max level of its d values (`blev`).
- A2  l_G = l of the max level over all non-empty buckets, taken at the start of each group.
- A3  shielding checks the final group size: bucket k is shielded iff for some dimension j
      ``cnt[j][k_j] + 1 > floor(l_G / l(k_j))``.  Level values with l = 1 never shield.
- A4  an incomplete group is rolled back (records back at the head of their buckets, sizes and
      capacities restored) and ends the grouping phase; no retry with a smaller l_G.
- A5  capacities count every remaining record (shielded buckets too), decrement on extraction.
- A6  ties on (level, score): ``tie='first'`` takes the smallest bucket index; ``tie='random'``
      draws uniformly with ``random.Random(seed)`` (one ``randrange(len(tied))`` per pick that
      has more than one tied bucket, tied buckets listed in index order).
- A7  records leave a bucket in FIFO order (rank 0, 1, 2, ...).
- A8  residual records are processed in bucket order, FIFO within a bucket.
- A9  first fit in group-creation order, test ``(cnt_G[j][r_j] + 1) * l(r_j) <= |G| + 1``.
- A10 one pass: a record that fits nowhere is suppressed (so are the rest of its bucket,
      which are identical: suppressed records are always a bucket's last ones).
- A11 AIL (Def 14) uses l of the max level in each group's FINAL contents (`metrics_from_plan`).
- A12 AIL = 0 when there are no groups.  A13: a level without an l is rejected.
- A15 baselines (``mslf=False``) give every value one uniform level whose l is ``baseline_l``
      (default: l of the highest level present among non-empty buckets).  A16: l must be
      non-decreasing in the level and >= 1.  A17: groups are numbered 0, 1, ... in creation
      order; residual additions keep the group id.
- A18 (not in the paper) ``min_group`` m (default 1, the paper): every group has at least m
      records and no SA vector (bucket) holds more than floor(|G| / m) of them, so a row found
      by its exact QIs never shows its whole vector with confidence above 1/m.  A bucket is
      shielded like a value (A3 with l = m: ``cnt_G[b] + 1 > floor(l_G / m)``), the residual
      test adds ``(cnt_G[b] + 1) * m <= |G| + 1``, and for MSLF l_G of top level k is the
      smallest s >= max(l_k, m) that the buckets of level <= k can fill: in every dimension
      sum over values of floor(s / l(v)) >= s, and (number of buckets) * floor(s / m) >= s
      (a binary SA with l = 2 on both values admits only even groups).  The baselines take
      l_G = l as in the paper (their l >= m already bounds every vector).

Two implementations of the grouping phase produce identical plans:

- `plan_reference`: literal step-by-step transcription of section 3.2 (O(n * B) time); the
  yardstick for the tests.
- `plan`: the same greedy, made fast for n around 10^6.  Batching identical rounds does not
  pay on Adult-like data (consecutive groups almost never repeat), so every pick is simulated,
  but the argmax is found by branch and bound in a trie of lazily refreshed upper bounds
  instead of a scan over all buckets (see `_TrieEngine`).  With ``tie='random'`` the trie also lists the tied buckets, in index order,
  so the random stream is consumed exactly as in the reference.  The residual phase works on
  numpy count arrays per group (`_residual_fast`).

All arithmetic is on Python ints (or int64 numpy arrays whose values stay far below 2**62).
"""

from __future__ import annotations

import bisect
import operator
import random
from array import array
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = [
    "Plan",
    "plan",
    "plan_reference",
    "expand",
    "groups_of",
    "capacities",
    "selectivity",
    "metrics_from_plan",
    "blocked_dimension",
    "VARIANTS",
]

VARIANTS = ("mbf", "msdcf", "mmdcf")


# --------------------------------------------------------------------------------------------
# Plan
# --------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """A grouping plan in run-length form.

    Runs are stored as three parallel ``array('q')`` columns (24 bytes a run instead of a
    Python tuple per run); `runs` materialises them as ``(bucket, group_start, count)`` tuples.
    A run gives the next ``count`` records (FIFO) of ``bucket`` to groups ``group_start``,
    ``group_start + 1``, ... (one record each).  Runs of one bucket apply in list order.
    """

    n_groups: int
    group_l: list
    run_bucket: array
    run_group: array
    run_count: array
    suppressed: list
    main_picks: int
    residual_placed: int
    n_suppressed: int
    # Only with keep_order=True: bucket ids in main-phase pick order (groups are consecutive
    # blocks of group_l[g] picks) and the residual placements as (group, bucket) in order.
    main_order: object = None
    residual_order: object = None

    @property
    def runs(self):
        return list(zip(self.run_bucket, self.run_group, self.run_count))

    def run_lists(self):
        """The run columns as three plain lists (convenient for plpy array parameters)."""
        return self.run_bucket.tolist(), self.run_group.tolist(), self.run_count.tolist()


class _RunBuilder:
    """Collects picks (bucket -> group) and coalesces a bucket's picks into consecutive groups."""

    __slots__ = ("rb", "rg", "rc", "last")

    def __init__(self, B):
        self.rb = array("q")
        self.rg = array("q")
        self.rc = array("q")
        self.last = [-1] * B  # index of each bucket's last run

    def add(self, b, g, count=1):
        """Give `count` records of bucket b to group g (count > 1 only for g, g+1, ...)."""
        i = self.last[b]
        if i >= 0 and self.rg[i] + self.rc[i] == g:
            self.rc[i] += count
            return
        self.last[b] = len(self.rb)
        self.rb.append(b)
        self.rg.append(g)
        self.rc.append(count)

    @classmethod
    def from_picks(cls, order, group_l, B):
        """The builder after adding every main-phase pick in order (group g takes the next
        group_l[g] picks), built with numpy.  Also returns the picks' bucket and group arrays.

        A pick extends its bucket's last run iff the bucket's previous pick was in the group
        just before; runs are listed by their first pick, as `add` creates them."""
        self = cls(B)
        pb = np.array(order, dtype=np.int64)
        pg = np.repeat(np.arange(len(group_l), dtype=np.int64),
                       np.array(group_l, dtype=np.int64))
        n = len(pb)
        if n == 0:
            return self, pb, pg
        idx = np.argsort(pb, kind="stable")  # by bucket, then pick order
        sb = pb[idx]
        sg = pg[idx]
        new = np.ones(n, dtype=bool)
        new[1:] = (sb[1:] != sb[:-1]) | (sg[1:] != sg[:-1] + 1)
        st = np.flatnonzero(new)  # runs, by bucket then creation
        rbk, rg, rc = sb[st], sg[st], np.diff(np.append(st, n))
        perm = np.argsort(idx[st])  # creation order (first picks are distinct)
        self.rb = array("q", rbk[perm].tobytes())
        self.rg = array("q", rg[perm].tobytes())
        self.rc = array("q", rc[perm].astype(np.int64).tobytes())
        pos = np.empty(len(st), dtype=np.int64)
        pos[perm] = np.arange(len(st), dtype=np.int64)
        lastrun = np.append(rbk[1:] != rbk[:-1], True)  # each bucket's last run
        last = np.full(B, -1, dtype=np.int64)
        last[rbk[lastrun]] = pos[lastrun]
        self.last = last.tolist()
        return self, pb, pg


# --------------------------------------------------------------------------------------------
# Input validation
# --------------------------------------------------------------------------------------------


def _as_int(x, what):
    try:
        return operator.index(x)
    except TypeError:
        raise ValueError(f"{what} must be an integer, got {x!r}") from None


class _Input:
    """Validated input.  lval[b][j] is the l that applies to bucket b's value in dimension j
    (the uniform baseline l when mslf is False); blev[b] is the bucket level used by MSLF
    (all 0 for the baselines, so only the score ranks buckets)."""

    __slots__ = (
        "B", "d", "sizes", "codes", "levels", "lval", "blev", "L", "variant", "mslf",
        "baseline_l", "tie", "seed", "nv", "lvc", "lG", "min_group",
    )


def _prepare(sizes, values, levels, l_of_level, variant, mslf, baseline_l, tie, seed, min_group=1):
    inp = _Input()
    if isinstance(variant, str):
        variant = variant.lower()
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    if tie not in ("first", "random"):
        raise ValueError(f"unknown tie rule {tie!r}; expected 'first' or 'random'")
    if tie == "random":
        if seed is None:
            raise ValueError("tie='random' needs an integer seed (reproducibility, spec A6)")
        seed = _as_int(seed, "seed")
    sizes = [_as_int(s, "sizes[]") for s in sizes]
    values = [_as_int(v, "values[]") for v in values]
    levels = [_as_int(v, "levels[]") for v in levels]
    B = len(sizes)
    if any(s < 0 for s in sizes):
        raise ValueError("sizes must be >= 0")
    if B == 0:
        if values or levels:
            raise ValueError("values/levels must be empty when there are no buckets")
        d = 0
    else:
        if len(values) == 0 or len(values) % B:
            raise ValueError(
                f"length mismatch: len(values)={len(values)} is not a positive multiple of "
                f"the number of buckets {B}"
            )
        d = len(values) // B
        if len(levels) != len(values):
            raise ValueError(
                f"length mismatch: len(levels)={len(levels)} != len(values)={len(values)}"
            )
    if any(v < 0 for v in values):
        raise ValueError("value codes must be >= 0")
    if any(v < 0 for v in levels):
        raise ValueError("levels must be >= 0")

    # l per level: dict or sequence indexed by level.
    if isinstance(l_of_level, dict):
        items = [(_as_int(k, "level"), _as_int(v, "l")) for k, v in l_of_level.items()]
    else:
        items = [(i, _as_int(v, "l")) for i, v in enumerate(l_of_level)]
    L = {}
    for k, v in sorted(items):
        if k < 0:
            raise ValueError(f"level {k} in l_of_level must be >= 0")
        if v < 1:
            raise ValueError(f"l for level {k} is {v}; l must be >= 1")
        L[k] = v
    prev = None
    for k in sorted(L):
        if prev is not None and L[k] < L[prev]:
            raise ValueError(
                f"l must be non-decreasing in the level: l[{prev}]={L[prev]} > l[{k}]={L[k]}"
            )
        prev = k
    missing = sorted(set(levels) - set(L))
    if missing:
        raise ValueError(f"level(s) without an l in l_of_level: {missing}")

    # Same code in a dimension must mean the same value, hence the same level.  Internally
    # codes are renumbered densely per dimension (only equality of codes matters).
    levmap = [dict() for _ in range(d)]
    dense = [dict() for _ in range(d)]
    dvalues = [0] * len(values)
    for b in range(B):
        base = b * d
        for j in range(d):
            c = values[base + j]
            lv = levels[base + j]
            old = levmap[j].setdefault(c, lv)
            if old != lv:
                raise ValueError(
                    f"inconsistent levels: code {c} of dimension {j} has levels {old} and {lv}"
                )
            dvalues[base + j] = dense[j].setdefault(c, len(dense[j]))
    nv = [len(dense[j]) for j in range(d)]
    levmap = [{dense[j][c]: lv for c, lv in levmap[j].items()} for j in range(d)]
    values = dvalues

    if baseline_l is not None:
        baseline_l = _as_int(baseline_l, "baseline_l")
        if baseline_l < 1:
            raise ValueError(f"baseline_l is {baseline_l}; l must be >= 1")
    codes = [tuple(values[b * d:(b + 1) * d]) for b in range(B)]
    blevs = [max(levels[b * d:(b + 1) * d]) for b in range(B)] if d else [0] * B
    if not mslf:
        if baseline_l is None:
            present = [blevs[b] for b in range(B) if sizes[b] > 0]
            baseline_l = L[max(present)] if present else 1
        lvc = [[baseline_l] * nv[j] for j in range(d)]
        blev = [0] * B
    else:
        lvc = [[1] * nv[j] for j in range(d)]
        for j in range(d):
            for c, lv in levmap[j].items():
                lvc[j][c] = L[lv]
        blev = blevs
    inp.B, inp.d, inp.sizes, inp.codes, inp.levels = B, d, sizes, codes, levels
    inp.lvc, inp.blev, inp.L, inp.variant, inp.mslf = lvc, blev, L, variant, bool(mslf)
    inp.baseline_l, inp.tie, inp.seed, inp.nv = baseline_l, tie, seed, nv
    inp.lval = [tuple(lvc[j][codes[b][j]] for j in range(d)) for b in range(B)]
    inp.min_group = _as_int(min_group, "min_group")
    if inp.min_group < 1:
        raise ValueError(f"min_group is {inp.min_group}; it must be >= 1")
    if not mslf and inp.min_group > baseline_l:
        raise ValueError(f"min_group = {inp.min_group} is above the baselines' l = {baseline_l}; raise l")
    inp.lG = {top: _fitting_size(inp, top) if mslf and inp.min_group > 1 else L[top] for top in L}
    return inp


def _fitting_size(inp, top):
    """A18: the smallest s >= max(l_top, m) that the buckets of level <= top can fill (each
    value v at most floor(s / l(v)) times, each bucket at most floor(s / m) times); that
    lower bound when no s can (the shares 1/l of a dimension, or the buckets' 1/m, add up to
    < 1: the group fails as in the paper)."""
    m = inp.min_group
    dims = [dict() for _ in range(inp.d)]
    nb = 0
    for b in range(inp.B):
        if inp.sizes[b] > 0 and inp.blev[b] <= top:
            nb += 1
            for j in range(inp.d):
                dims[j][inp.codes[b][j]] = inp.lval[b][j]
    s = max(inp.L[top], m)
    if nb < m or any(sum(Fraction(1, x) for x in dim.values()) < 1 for dim in dims):
        return s
    while nb * (s // m) < s or any(sum(s // x for x in dim.values()) < s for dim in dims):
        s += 1   # ends by the lcm of the l's and m, where every sum is s * (its shares) >= s
    return s


def _group_l(inp, top_level):
    return inp.lG[top_level] if inp.mslf else inp.baseline_l


# --------------------------------------------------------------------------------------------
# Capacities and selectivity (Def 13, Eq. 1 and 2)
# --------------------------------------------------------------------------------------------


def _caps(sizes, codes, d, nv):
    cap = [[0] * nv[j] for j in range(d)]
    for b, s in enumerate(sizes):
        if s:
            c = codes[b]
            for j in range(d):
                cap[j][c[j]] += s
    return cap


def capacities(sizes, values):
    """Dimension capacities (Def 13): list over dimensions of {code: remaining records}."""
    B = len(sizes)
    if B == 0:
        return []
    d = len(values) // B
    out = [dict() for _ in range(d)]
    for b in range(B):
        for j in range(d):
            c = values[b * d + j]
            out[j][c] = out[j].get(c, 0) + sizes[b]
    return out


def selectivity(variant, sizes, values):
    """Per-bucket score before any extraction: size (MBF), max_j Capa + size (MSDCF, Eq. 1),
    sum_j Capa + size (MMDCF, Eq. 2)."""
    variant = variant.lower()
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    caps = capacities(sizes, values)
    B = len(sizes)
    d = len(caps)
    out = []
    for b in range(B):
        cs = [caps[j][values[b * d + j]] for j in range(d)]
        if variant == "mbf":
            out.append(sizes[b])
        elif variant == "msdcf":
            out.append(max(cs) + sizes[b])
        else:
            out.append(sum(cs) + sizes[b])
    return out


# --------------------------------------------------------------------------------------------
# Reference implementation (spec section 3.2, step by step)
# --------------------------------------------------------------------------------------------


def plan_reference(sizes, values, levels, l_of_level, variant, mslf=True, baseline_l=None,
                   tie="first", seed=None, *, keep_order=False, min_group=1):
    """Literal transcription of spec section 3.2: scan every bucket at every pick.

    Slow (O(n * B * d)); it is the yardstick `plan` is tested against."""
    inp = _prepare(sizes, values, levels, l_of_level, variant, mslf, baseline_l, tie, seed, min_group)
    B, d, codes, lval, blev = inp.B, inp.d, inp.codes, inp.lval, inp.blev
    m = inp.min_group
    size = list(inp.sizes)
    cap = _caps(size, codes, d, inp.nv)
    rng = random.Random(inp.seed) if tie == "random" else None

    def score(k):
        if inp.variant == "mbf":
            return size[k]
        cs = [cap[j][codes[k][j]] for j in range(d)]
        return (max(cs) if inp.variant == "msdcf" else sum(cs)) + size[k]

    groups, group_l = [], []
    while sum(size) > 0:
        lG = _group_l(inp, max(blev[k] for k in range(B) if size[k] > 0))
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
    rb = _RunBuilder(B)
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
    caps = _caps(size, inp.codes, d, inp.nv)
    scored = []
    for j in range(d):
        if j == skip:
            continue
        conc = sum((c / n) ** 2 for c in caps[j])
        shield = sum((c / n) ** 2 for v, c in enumerate(caps[j]) if inp.lvc[j][v] >= 2)
        heavy = shield >= 0.1
        scored.append((not heavy, -(shield if heavy else conc), j))
    return [j for _, _, j in sorted(scored)]


class _TrieEngine:
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
        cap = _caps(size, codes, d, inp.nv)
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
            lG = _group_l(inp, top)
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


# --------------------------------------------------------------------------------------------
# Fast residual phase
# --------------------------------------------------------------------------------------------


def _residual_fast(inp, size, group_l, rb, keep_order, pb, pg):
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


# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------


def plan(sizes, values, levels, l_of_level, variant, mslf=True, baseline_l=None, tie="first",
         seed=None, *, keep_order=False, tick=None, min_group=1):
    """Plan the groups for one of the six algorithms (spec section 3.2) on bucket counts.

    sizes[b]: records in bucket b (first-appearance order = 'first' tie order);
    values[b*d + j], levels[b*d + j]: code and security level of bucket b in dimension j;
    l_of_level: {level: l} (or a list indexed by level), non-decreasing, >= 1;
    variant: 'mbf' | 'msdcf' | 'mmdcf'; mslf=False gives the baseline with one uniform level
    whose l is baseline_l (default: l of the highest level present).
    keep_order=True also records the pick order (for tests; memory is one int per record).
    tick: called once per group, so the database can notice a cancel or statement_timeout.
    min_group: A18 (1, the default, is the paper).
    Returns a `Plan`; identical to `plan_reference` for the same arguments."""
    inp = _prepare(sizes, values, levels, l_of_level, variant, mslf, baseline_l, tie, seed, min_group)
    if inp.B == 0 or sum(inp.sizes) == 0:
        return Plan(0, [], array("q"), array("q"), array("q"), [0] * inp.B, 0, 0, 0,
                    array("q") if keep_order else None, [] if keep_order else None)
    size, group_l, order = _TrieEngine(inp, tick).run()
    rb, pb, pg = _RunBuilder.from_picks(order, group_l, inp.B)
    suppressed, placed, residual = _residual_fast(inp, size, group_l, rb, keep_order, pb, pg)
    return Plan(
        n_groups=len(group_l), group_l=group_l, run_bucket=rb.rb, run_group=rb.rg,
        run_count=rb.rc, suppressed=suppressed, main_picks=len(order),
        residual_placed=placed, n_suppressed=sum(suppressed),
        main_order=order if keep_order else None, residual_order=residual,
    )


# --------------------------------------------------------------------------------------------
# Helpers for tests and cross-checks
# --------------------------------------------------------------------------------------------


def expand(plan):
    """Groups as lists of (bucket, rank) -- per record, for tests and small inputs only.

    With keep_order=True plans the order inside a group is the pick order (main phase, then
    residual additions); otherwise it follows the order of the runs."""
    G = plan.n_groups
    groups = [[] for _ in range(G)]
    if plan.main_order is not None:
        nxt = {}
        pos = 0
        for g, lg in enumerate(plan.group_l):
            for b in plan.main_order[pos:pos + lg]:
                r = nxt.get(b, 0)
                groups[g].append((b, r))
                nxt[b] = r + 1
            pos += lg
        for g, b in plan.residual_order:
            r = nxt.get(b, 0)
            groups[g].append((b, r))
            nxt[b] = r + 1
        return groups
    nxt = {}
    for b, g0, c in plan.runs:
        r = nxt.get(b, 0)
        for i in range(c):
            groups[g0 + i].append((b, r + i))
        nxt[b] = r + c
    return groups


groups_of = expand


def blocked_dimension(sizes, values, levels, l_of_level, mslf=True, baseline_l=None, min_group=1):
    """What rules out every group, from the counts alone: (j, {code: l}) for the first
    dimension j whose values can fill no group, (None, {bucket: min_group}) when there are
    fewer SA vectors than min_group (A18), else None.

    In a valid group every value v holds at most |G| / l(v) records (every vector at most
    |G| / min_group), so the shares 1/l of the values present in one dimension must add up to
    at least 1 (for one uniform l: at least l distinct values).  Below that every record would
    be suppressed: callers refuse such a request before planning."""
    inp = _prepare(sizes, values, levels, l_of_level, "mbf", mslf, baseline_l, "first", None, min_group)
    for j in range(inp.d):
        l_of = {inp.codes[b][j]: inp.lval[b][j] for b in range(inp.B) if inp.sizes[b] > 0}
        if l_of and sum(Fraction(1, x) for x in l_of.values()) < 1:
            return j, l_of
    present = [b for b in range(inp.B) if inp.sizes[b] > 0]
    if present and len(present) < inp.min_group:
        return None, dict.fromkeys(present, inp.min_group)
    return None


def metrics_from_plan(plan, sizes, values, levels, l_of_level, mslf=True, baseline_l=None):
    """AIL (Def 14, with l_{G_i} from each group's final contents, A11; 0 without groups, A12)
    and SR (Def 15) as exact Fractions: {'ail': Fraction, 'sr': Fraction}."""
    inp = _prepare(sizes, values, levels, l_of_level, "mbf", mslf, baseline_l, "first", None)
    n = sum(inp.sizes)
    sr = Fraction(plan.n_suppressed, n) if n else Fraction(0)
    G = plan.n_groups
    if G == 0:
        return {"ail": Fraction(0), "sr": sr}
    B = inp.B
    rbk = np.array(plan.run_bucket, dtype=np.int64)
    rg = np.array(plan.run_group, dtype=np.int64)
    rc = np.array(plan.run_count, dtype=np.int64)
    tot = int(rc.sum())
    pb = np.repeat(rbk, rc)
    starts = np.repeat(np.cumsum(rc) - rc, rc)
    pg = np.repeat(rg, rc) + (np.arange(tot, dtype=np.int64) - starts)
    gsize = np.bincount(pg, minlength=G).astype(np.int64)
    if inp.mslf:
        lvls = sorted(inp.L)
        rank = {lv: i for i, lv in enumerate(lvls)}
        brank = np.array([rank[x] for x in inp.blev] if B else [], dtype=np.int64)
        gmax = np.full(G, -1, dtype=np.int64)
        np.maximum.at(gmax, pg, brank[pb])
        lof = np.array([inp.L[lv] for lv in lvls], dtype=np.int64)
        gl = lof[gmax]
    else:
        gl = np.full(G, inp.baseline_l, dtype=np.int64)
    den = int(gl.sum())
    num = int((gsize - gl).sum())
    return {"ail": Fraction(num, den), "sr": sr}
