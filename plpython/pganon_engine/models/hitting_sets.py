"""Minimum hitting sets of the value sets S(p) of a class's persons (spec 002 §7): the exact
test behind EIR l-diversity (`ir_models`: min-HS >= l iff every reasoning set holds l values)
and behind the incremental EIR l state (`ir_states`).

Why apart: this is a combinatorial search (bit masks, bounds, bounded branching) with its own
cost and interrupt points, independent of how persons, classes and thresholds are read.  Sets
are any iterables of hashable values; nothing here knows a model, a class or a person.
Decision labels follow `ir_models` (I1-I9).

- I4  Minimum hitting set (spec §7): ξ is forced and the sets meeting ξ are dropped; a greedy
      hitting set (most frequent value, ties canonical) is the upper bound; the rest is
      searched exactly by bounded branching on the smallest unhit set (elements by falling
      frequency, then canonical order), an element that failed is excluded from the later
      branches, and a branch is cut when a greedy packing of pairwise disjoint unhit sets
      already needs more values than the budget.  The decision "min-HS >= l" takes |ξ| >= l
      and a greedy set below l as answers, and otherwise searches only for a hitting set of
      size <= l - 1, so its cost is bounded by max|S(p)|^(l-1) whatever the class size.
- I5  Canonical order of values: Python order when the values are mutually comparable, else
      (type name, repr).  It breaks every tie of BHS (paper's x1 pick), greedy and search.
- I6  `bhs` is the paper's Algorithm 3 read literally (spec §3.3), common-literal shortcut
      included: it returns a family that always holds a minimum hitting set but, as the spec
      shows, not always every minimal one.  `minimal_hitting_sets` (Berge) is the exact family.
      Neither is used by the decision functions.
"""

from __future__ import annotations

from collections import Counter

from pganon_engine.core.errors import invalid
from pganon_engine.core.interrupts import interrupt_point

__all__ = [
    "min_hitting_set",
    "min_hs_size",
    "min_hs_at_least",
    "minimal_hitting_sets",
    "bhs",
]


# --------------------------------------------------------------------------------------------
# Canonical order (I5)
# --------------------------------------------------------------------------------------------


def canonical(values):
    vals = list(values)
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=lambda v: (type(v).__name__, repr(v)))


# --------------------------------------------------------------------------------------------
# Minimum hitting set (I4)
# --------------------------------------------------------------------------------------------


def _family(sets):
    out = []
    for s in sets:
        if isinstance(s, (str, bytes)):
            raise invalid(f"a set of the family is the string {s!r}; give sets of values")
        fs = frozenset(s)
        if not fs:
            raise invalid("the family holds an empty set, which no set can hit",
                          hint="every person has at least one value")
        out.append(fs)
    return out


def _split(sets):
    """(ξ, the sets not meeting ξ) (Alg. 2, lines 2-8 and 20-24)."""
    forced = frozenset().union(*[s for s in sets if len(s) == 1]) if sets else frozenset()
    return forced, [s for s in sets if not s & forced]


class _Bits:
    """Values <-> bits in canonical order."""

    def __init__(self, sets):
        self.values = canonical(frozenset().union(*sets)) if sets else []
        self.bit = {v: 1 << i for i, v in enumerate(self.values)}

    def masks(self, sets):
        bit = self.bit
        out = set()
        for s in sets:
            m = 0
            for v in s:
                m |= bit[v]
            out.add(m)
        return sorted(out)

    def decode(self, mask):
        return frozenset(v for i, v in enumerate(self.values) if mask >> i & 1)


def _bits_of(mask):
    while mask:
        low = mask & -mask
        yield low
        mask ^= low


def _packing(masks, budget):
    """Greedy count of pairwise disjoint sets, stopping once it exceeds budget."""
    used = cnt = 0
    for m in sorted(masks, key=int.bit_count):
        if not m & used:
            used |= m
            cnt += 1
            if cnt > budget:
                break
    return cnt


def _search(masks, budget):
    """A hitting set (mask) of the masks with <= budget bits, or None (I4)."""
    interrupt_point()   # a big class's exact min-HS is exponential in the worst case
    if not masks:
        return 0
    if budget <= 0 or _packing(masks, budget) > budget:
        return None
    small = min(masks, key=int.bit_count)
    elems = sorted(_bits_of(small), key=lambda e: (-sum(1 for m in masks if m & e), e.bit_length()))
    for e in elems:
        rest = [m for m in masks if not m & e]
        h = _search(rest, budget - 1)
        if h is not None:
            return h | e
        masks = [m & ~e for m in masks]
        if not all(masks):
            return None
    return None


def _greedy(masks):
    """A hitting set by most frequent value (ties lowest bit)."""
    h = 0
    left = list(masks)
    while left:
        cnt = Counter()
        for m in left:
            for e in _bits_of(m):
                cnt[e] += 1
        best = max(cnt.items(), key=lambda kv: (kv[1], -kv[0].bit_length()))[0]
        h |= best
        left = [m for m in left if not m & best]
    return h


def min_hitting_set(sets):
    """One minimum hitting set of the family (a frozenset), exact (I4); the empty family gives
    the empty set (BHS(∅) = {∅})."""
    sets = _family(sets)
    forced, rest = _split(sets)
    if not rest:
        return forced
    bits = _Bits(rest)
    masks = bits.masks(rest)
    ub = _greedy(masks)
    lb = _packing(masks, len(masks))
    for b in range(lb, ub.bit_count()):
        h = _search(masks, b)
        if h is not None:
            return forced | bits.decode(h)
    return forced | bits.decode(ub)


def min_hs_size(sets, cap=None):
    """|minimum hitting set|, exact; with cap: exact when < cap, else cap (searches never look
    for more than cap - 1 values, so the cost stays bounded)."""
    sets = _family(sets)
    forced, rest = _split(sets)
    f = len(forced)
    if cap is not None and f >= cap:
        return cap
    if not rest:
        return f
    bits = _Bits(rest)
    masks = bits.masks(rest)
    lb = _packing(masks, len(masks))
    top = _greedy(masks).bit_count()
    if cap is not None:
        top = min(top, cap - f)
    for b in range(lb, top):
        if _search(masks, b) is not None:
            return f + b
    return f + top


def below(sets, l):
    """A hitting set with < l values, or None (the search of `min_hs_at_least`)."""
    forced, rest = _split(sets)
    if len(forced) >= l:
        return None
    if not rest:
        return forced
    bits = _Bits(rest)
    masks = bits.masks(rest)
    budget = l - 1 - len(forced)
    h = _greedy(masks)  # upper bound first: below l settles it without a search
    if h.bit_count() > budget:
        h = _search(masks, budget)
    return None if h is None else forced | bits.decode(h)


def min_hs_at_least(sets, l):
    """min-HS(sets) >= l: Theorem 3.1 as the exact EIR l test (cheap bounds first: |ξ| >= l,
    then a bounded search for a hitting set of size <= l - 1)."""
    return below(_family(sets), l) is None


def minimal_hitting_sets(sets):
    """Every minimal hitting set (Berge's algorithm; Alg. 5's family ℋ), sorted by size then
    canonical order.  Exponential in general: for tests and explanations."""
    sets = _family(sets)
    fam = [frozenset()]
    for s in sets:
        new = []
        for h in fam:
            if h & s:
                new.append(h)
            else:
                new.extend(h | {v} for v in s)
        fam = _minimal(new)
    return _sorted_family(fam)


def _minimal(fam):
    out = []
    for h in sorted(set(fam), key=len):
        if not any(k <= h for k in out):
            out.append(h)
    return out


def _sorted_family(fam):
    vals = canonical(frozenset().union(*fam)) if fam else []
    rank = {v: i for i, v in enumerate(vals)}
    return sorted(fam, key=lambda h: (len(h), sorted(rank[v] for v in h)))


def bhs(sets):
    """The paper's Algorithm 3 (BHS), literally (I6): a family of hitting sets that contains a
    minimum one; each set a frozenset."""
    sets = _family(sets)
    rank = {v: i for i, v in enumerate(canonical(frozenset().union(*sets)))} if sets else {}
    return _sorted_family(_bhs(sets, rank))


def _bhs(terms, rank):
    if not terms:
        return [frozenset()]
    if len(terms) == 1:  # lines 2-3: one conjunctive term
        return [frozenset({x}) for x in terms[0]]
    terms = _minimal(terms)  # line 5: absorption A + AB = A
    common = frozenset.intersection(*terms)
    if common:  # lines 6-7: one literal in every term
        return [frozenset({min(common, key=rank.__getitem__)})]
    singles = frozenset(x for t in terms if len(t) == 1 for x in t)
    if singles:  # line 9: single-literal terms are in every hitting set
        rest = [t for t in terms if not t & singles]
        return _minimal([singles | h for h in _bhs(rest, rank)])
    freq = Counter(x for t in terms for x in t)  # line 14: split on the most frequent literal
    x = min(freq, key=lambda v: (-freq[v], rank[v]))
    with_x = [frozenset({x}) | h for h in _bhs([t for t in terms if x not in t], rank)]
    without = _bhs([t - {x} for t in terms], rank)
    return _minimal(with_x + without)


# --------------------------------------------------------------------------------------------
# The smallest minimum over the classes of a release
# --------------------------------------------------------------------------------------------


def min_over_classes(families):
    """min over classes of min-HS, exactly: the class with the smallest greedy bound first, then
    every other class only asked whether it goes below the running minimum."""
    if not families:
        return 0
    order = []
    for i, fam in enumerate(families):
        forced, rest = _split(fam)
        if rest:
            bits = _Bits(rest)
            ub = len(forced) + _greedy(bits.masks(rest)).bit_count()
        else:
            ub = len(forced)
        order.append((ub, i))
    order.sort()
    best = None
    for _, i in order:
        best = min_hs_size(families[i]) if best is None else min(best, min_hs_size(families[i], cap=best))
    return best
