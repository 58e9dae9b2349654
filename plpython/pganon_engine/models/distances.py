"""The models that compare each class with the table's distribution of an SA: t-closeness
(the L1 measure of spec 001 §3.2 and the EMD of Li et al. 2007 with equal, ordered or
hierarchical ground distance), basic and enhanced beta-likeness, and delta-disclosure privacy.

Why apart: they all need the global histogram, prepared once per SA (`Global`: its total, its
value order for the ordered distance, the pruned value hierarchy for the hierarchical one) and
then compared with every class in exact integer arithmetic (M2 in `predicates`).  The functions
here take one SA's class histograms and return the achieved value; `predicates` builds its
per-class tests and `check` on `Global`.  Decision labels follow `predicates` (M1-M10).

- M5  t-closeness: 'l1' = sum |q - p| (spec 001 §3.2, range [0, 2]); 'equal' = EMD with equal
      ground distance = L1 / 2 (total variation); 'ordered' = EMD with ordered distance
      |i - j| / (m - 1) over the m values of the global histogram in order (a numeric sort
      when every value is a number, Decimal included, else the caller's ``order``, which
      must list every value; listed values absent from the table are ignored; m = 1 gives 0);
      'hierarchical' = EMD with distance height(LCA) / H, computed bottom-up as
      sum height(N) * min(pos, neg) / H (Li et al. 2007, §4.2), height(N) = longest edge path
      from N down to a leaf, H = height(root); SA values must be leaves.  'auto' (default) =
      pyCANON's choice: 'ordered' for numeric values, else 'equal'.
- M6  beta-likeness: basic = max over classes and values of (q - p) / p (the max is >= 0, so
      restricting to q > p changes nothing).  Enhanced, 'standard' (Cao & Karras 2012): a
      class holds beta iff (q - p) / p <= min(beta, -ln p) for every value with q > p; the
      achieved beta is the basic one when every gain is <= -ln p, else infinity.  Enhanced,
      'pycanon': max over values of min(basic beta of the SA, -ln p) = min(basic, -ln p_min).
- M7  delta-disclosure, 'standard' (Brickell & Shmatikov 2008): |ln(q / p)| < delta for every
      value of the global histogram (strict); a class missing a value gives infinity.
      'pycanon': values absent from the class are skipped.
"""

import math
import numbers
from collections import Counter
from decimal import Decimal
from fractions import Fraction

from pganon_engine.core.errors import invalid, unknown

from .aggregates import INF, READINGS, choice, class_hists, covered, hist, is_null

DISTANCES = ("auto", "l1", "equal", "ordered", "hierarchical")


# --------------------------------------------------------------------------------------------
# The global distribution of one SA and the ground distances
# --------------------------------------------------------------------------------------------


class Global:
    """One SA's global histogram with what the distances need, prepared once."""

    def __init__(self, sa, hist, distance="equal", order=None, parents=None):
        self.sa = sa
        self.p = hist
        self.N = sum(hist.values())
        if not self.N:
            raise invalid(f"the global histogram of {sa!r} is empty")
        self.values = list(hist)
        self._bounds = {}
        if distance == "auto":
            distance = "ordered" if all(_numeric(v) for v in self.values) else "equal"
        self.distance = distance
        if distance == "ordered":
            self.values = _ordered(sa, self.values, order)
        elif distance == "hierarchical":
            self.tree = _Tree(sa, parents, self.values)

    def diffs(self, h, n):
        """Per global value, (c_v N - P_v n): q - p in units of 1 / (n N)."""
        return {v: h.get(v, 0) * self.N - pv * n for v, pv in self.p.items()}

    def t(self, h):
        """t of one class as an exact Fraction (M5)."""
        n = sum(h.values())
        if self.distance in ("l1", "equal"):
            # values absent from the class contribute P_v n each
            inside = sum(abs(c * self.N - self.p[v] * n) for v, c in h.items())
            absent = n * (self.N - sum(self.p[v] for v in h))
            return Fraction(inside + absent, (1 if self.distance == "l1" else 2) * n * self.N)
        d = self.diffs(h, n)
        if self.distance == "ordered":
            m = len(self.values)
            if m == 1:
                return Fraction(0)
            cum, tot = 0, 0
            for v in self.values:
                cum += d[v]
                tot += abs(cum)
            return Fraction(tot, n * self.N * (m - 1))
        return self.tree.emd(d, n * self.N)

    def beta(self, h):
        """max (q - p) / p of one class, exact.  Values absent from the class give -1, and some
        present value has q >= p, so the max over the present values is the max over all."""
        n = sum(h.values())
        return max(Fraction(c, self.p[v]) for v, c in h.items()) * Fraction(self.N, n) - 1

    def enhanced_ok(self, h, beta):
        """Enhanced beta-likeness of one class (M6, 'standard'); beta=INF tests feasibility."""
        n = sum(h.values())
        for v, c in h.items():
            pv = self.p[v]
            if c * self.N > pv * n:
                g = float(Fraction(c * self.N - pv * n, pv * n))
                if g > beta or g > self._bound(v):
                    return False
        return True

    def _bound(self, v):
        """-ln p of a value (the enhanced beta cap), cached."""
        b = self._bounds.get(v)
        if b is None:
            b = self._bounds[v] = -math.log(float(Fraction(self.p[v], self.N)))
        return b

    def delta(self, h, reading):
        """max |ln(q / p)| of one class (M7)."""
        if reading == "standard" and len(h) < len(self.p):
            return INF
        n = sum(h.values())
        return max(abs(math.log(Fraction(c * self.N, self.p[v] * n))) for v, c in h.items())

    def p_min(self):
        return Fraction(min(self.p.values()), self.N)


def _numeric(v):
    """A number (PostgreSQL numeric arrives as Decimal); booleans are not."""
    return isinstance(v, (numbers.Real, Decimal)) and not isinstance(v, bool)


def _ordered(sa, values, order):
    if order is None:
        if not all(_numeric(v) for v in values):
            odd = [v for v in values if not _numeric(v)][:3]
            raise invalid(f"ordered distance for {sa!r} needs an order: values {odd!r} are not numbers",
                          hint=f"give order: {{{sa!r}: [v1, v2, ...]}} listing every value")
        return sorted(values)
    if isinstance(order, (str, bytes)) or not hasattr(order, "__iter__"):
        raise invalid(f"order of {sa!r} must be a list of values, not {order!r}")
    pos = {}
    for i, v in enumerate(order):
        if v in pos:
            raise invalid(f"order of {sa!r} lists {v!r} twice")
        pos[v] = i
    missing = [v for v in values if v not in pos]
    if missing:
        raise invalid(f"order of {sa!r} does not list value(s) {sorted(map(repr, missing))[:5]}",
                      hint="the order must list every value of the attribute")
    return sorted(values, key=pos.__getitem__)


class _Tree:
    """A value hierarchy as parent pointers ``node -> parent`` (root: parent None or not a key),
    pruned to the ancestors of the table's values (M5)."""

    def __init__(self, sa, parents, values):
        if not hasattr(parents, "items"):
            raise invalid(f"hierarchical distance for {sa!r} needs a hierarchy",
                          hint=f"give hierarchy: {{{sa!r}: {{node: parent, ...}}}}")
        parent = {}
        for node, par in parents.items():
            if is_null(node):
                raise invalid(f"the hierarchy of {sa!r} has a NULL node")
            parent[node] = None if is_null(par) else par
        for par in list(parent.values()):
            if par is not None and par not in parent:
                parent[par] = None
        roots = [x for x, par in parent.items() if par is None]
        if len(roots) != 1:
            raise invalid(f"the hierarchy of {sa!r} has {len(roots)} roots {roots[:5]!r}; it needs one",
                          hint="add a common root as the parent of the top nodes")
        children = {x: [] for x in parent}
        for x, par in parent.items():
            if par is not None:
                children[par].append(x)
        # heights bottom-up over a DFS from the root; nodes not reached lie on a cycle.
        order, stack = [], [roots[0]]
        while stack:
            x = stack.pop()
            order.append(x)
            stack.extend(children[x])
        if len(order) != len(parent):
            bad = [x for x in parent if x not in set(order)][:5]
            raise invalid(f"the hierarchy of {sa!r} has a cycle through {bad!r}")
        height = {}
        for x in reversed(order):
            height[x] = 1 + max((height[c] for c in children[x]), default=-1)
        self.H = height[roots[0]]
        for v in values:
            if v not in parent:
                raise unknown(f"value {v!r} of {sa!r} is not in its hierarchy",
                              hint="add it as a leaf of the hierarchy")
            if children[v]:
                raise invalid(f"value {v!r} of {sa!r} is an inner node of its hierarchy",
                              hint="sensitive values must be leaves")
        keep = set()
        for v in values:
            while v is not None and v not in keep:
                keep.add(v)
                v = parent[v]
        self.leaves = set(values)
        # inner nodes children-first, each with its kept children and its height
        self.inner = [(x, [c for c in children[x] if c in keep], height[x])
                      for x in reversed(order) if x in keep and x not in self.leaves]

    def emd(self, d, denom):
        if self.H == 0:
            return Fraction(0)
        extra = dict(d)
        cost = 0
        for x, kids, hx in self.inner:
            pos = sum(extra[c] for c in kids if extra[c] > 0)
            neg = -sum(extra[c] for c in kids if extra[c] < 0)
            cost += hx * min(pos, neg)
            extra[x] = pos - neg
        return Fraction(cost, denom * self.H)


# --------------------------------------------------------------------------------------------
# One function per model (one SA, list of class histograms)
# --------------------------------------------------------------------------------------------


def _global(sa, hists, global_hist, **kw):
    if global_hist is None:
        total = Counter()
        for h in hists:
            total.update(h)
        g = dict(total)
    else:
        g = hist(global_hist, "global histogram")
        for i, h in enumerate(hists):
            covered(h, g, sa, f"class {i + 1}")
    return Global(sa, g, **kw)


def t_closeness(hists, global_hist=None, distance="auto", order=None, parents=None, sa="SA"):
    """The t of t-closeness: the largest class distance to the global histogram (M5)."""
    choice(distance, DISTANCES, "distance")
    hists = class_hists(hists)
    g = _global(sa, hists, global_hist, distance=distance, order=order, parents=parents)
    return float(max(g.t(h) for h in hists))


def beta_likeness(hists, global_hist=None, enhanced=False, reading="standard", sa="SA"):
    """The beta of basic (or enhanced) beta-likeness (M6)."""
    choice(reading, READINGS, "reading")
    hists = class_hists(hists)
    g = _global(sa, hists, global_hist)
    return enhanced_beta(g, hists, reading) if enhanced else float(max(g.beta(h) for h in hists))


def enhanced_beta(g, hists, reading):
    basic = float(max(g.beta(h) for h in hists))
    if reading == "pycanon":
        return min(basic, -math.log(float(g.p_min())))
    return basic if all(g.enhanced_ok(h, INF) for h in hists) else INF


def delta_disclosure(hists, global_hist=None, reading="standard", sa="SA"):
    """The delta of delta-disclosure privacy: the largest |ln(q / p)| (M7)."""
    choice(reading, READINGS, "reading")
    hists = class_hists(hists)
    g = _global(sa, hists, global_hist)
    return max(g.delta(h, reading) for h in hists)
