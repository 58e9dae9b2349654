"""The models judged on each class alone, from its size and its SA histograms: k-anonymity,
the alpha of (alpha,k)-anonymity, and distinct, entropy and recursive (c,l)-diversity.

Why apart: none of them needs the table's distribution (unlike `distances`), and the exact
entropy test and the recursive (c,l) arithmetic are theirs alone.  `predicates` turns them into
per-class tests and into `check`'s achieved values; the functions here take one SA's class
histograms and return the achieved value.  Decision labels follow `predicates` (M1-M10).

- M3  Entropy l (spec 001 Def. 11): value exp(min_C H(C)), a real >= 1.  pyCANON reports the
      int() of its own double; for an exactly uniform class that can be one less (three equal
      counts give 2 there, 3.0 here).
- M4  Recursive (c,l), reading 'standard' (Machanavajjhala et al. 2007): counts sorted
      descending r1 >= ... >= rm; a class holds iff r1 < c (r_l + ... + r_m).  Achieved: l =
      the distinct l of the scope unless the parameter l is given; c = the smallest integer
      for which every class holds = max floor(r1 / tail) + 1, infinity when a class has fewer
      than l values.  l < 2: c undefined (None), as pyCANON.  Reading 'pycanon' reproduces
      pyCANON 1.3.6: counts sorted ascending (r1 is the least frequent count) and l = the
      distinct l of the attribute scope even in the joint scope; a class with fewer than l
      values gives c = infinity where pyCANON raises OverflowError.  The default is
      'standard' because pyCANON's c is 1 or 2 whatever the data, which would pass almost any
      requested c.
"""

import math
from fractions import Fraction

from pganon_engine.core.errors import invalid

from .aggregates import INF, READINGS, choice, class_hists, count, integer

_EPS_ENTROPY = 1e-9


# --------------------------------------------------------------------------------------------
# Per-class measures (one SA)
# --------------------------------------------------------------------------------------------


def _entropy(h):
    n = sum(h.values())
    return -math.fsum((c / n) * math.log(c / n) for c in h.values())


def entropy_at_least(h, l):
    """H(h) >= ln l, exactly (M2)."""
    d = _entropy(h) - math.log(l)
    if d > _EPS_ENTROPY:
        return True
    if d < -_EPS_ENTROPY:
        return False
    g = 0
    for c in h.values():
        g = math.gcd(g, c)
    cs = [c // g for c in h.values()]
    n = sum(cs)
    a, b = Fraction(l).as_integer_ratio()
    rhs = a ** n
    for c in cs:
        rhs *= c ** c
    return n ** n * b ** n >= rhs


def r1_and_tail(h, l, descending):
    r = sorted(h.values(), reverse=descending)
    return r[0], sum(r[l - 1:])


def recursive_c(h, l, reading):
    """Smallest integer c with r1 < c * tail (M4); infinity if the class has fewer than l values."""
    r1, tail = r1_and_tail(h, l, reading == "standard")
    return INF if tail == 0 else r1 // tail + 1


# --------------------------------------------------------------------------------------------
# One function per model (one SA, list of class histograms)
# --------------------------------------------------------------------------------------------


def k_anonymity(sizes):
    """The largest k: the smallest class size."""
    sizes = [count(n, "class size") for n in sizes]
    if not sizes or min(sizes) == 0:
        raise invalid("k-anonymity needs at least one non-empty class")
    return min(sizes)


def alpha(hists):
    """The alpha of (alpha,k)-anonymity for one SA: the largest share of one value in a class."""
    return float(max(Fraction(max(h.values()), sum(h.values())) for h in class_hists(hists)))


def distinct_l(hists):
    """The l of distinct l-diversity: the fewest distinct values in a class."""
    return min(len(h) for h in class_hists(hists))


def entropy_l(hists):
    """The l of entropy l-diversity: exp of the smallest class entropy (M3)."""
    return math.exp(min(_entropy(h) for h in class_hists(hists)))


def recursive_cl(hists, l=None, reading="standard"):
    """Recursive (c,l)-diversity as (c, l): l the distinct l unless given; c the smallest integer
    c for which every class holds (INF if some class has fewer than l values; None if l < 2)."""
    hists = class_hists(hists)
    choice(reading, READINGS, "reading")
    l = distinct_l(hists) if l is None else integer(l, "l", 1)
    if l < 2:
        return None, l
    return max(recursive_c(h, l, reading) for h in hists), l
