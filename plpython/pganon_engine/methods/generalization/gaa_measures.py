"""The privacy measures of GAA's strategies on plain histograms (Defs 11 and 14 of Mauger et
al. 2023; spec 001 §3.1-3.2): entropy l-diversity of a class or a table, and t-closeness under
the L1 norm as an exact Fraction (G7).

Why a module of its own: the run (`gaa_strategies`) scores thousands of candidates with
vectorized, incremental forms of these measures; these plain functions state the definitions
once, exactly, so that a caller can score a published table and the tests hold the vectorized
scores to them.
"""

import math
from collections.abc import Mapping
from fractions import Fraction

import numpy as np

from pganon_engine.core.errors import invalid

TCLO_SCALES = ("l1", "tv")


# ----------------------------------------------------------------------------------- measures


def _counts(hist):
    vals = list(hist.values()) if isinstance(hist, Mapping) else list(hist)
    for c in vals:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0:
            raise invalid(f"a histogram count is {c!r}, not a non-negative integer")
    return [int(c) for c in vals if c]


def _entropy(counts):
    n = sum(counts)
    if n == 0:
        raise invalid("an empty class has no sensitive distribution")
    return math.log(n) - sum(c * math.log(c) for c in counts) / n


def l_div_class(hist):
    """Entropy l-diversity of one class: exp(-sum p ln p) (Def. 11).  hist maps sensitive
    values to counts (or is a sequence of counts)."""
    return math.exp(_entropy(_counts(hist)))


def l_div_table(hists):
    """l_div(T) = the minimum over its classes (Def. 11; to be maximized)."""
    hists = list(hists)
    if not hists:
        raise invalid("a table without classes has no l-diversity")
    return min(l_div_class(h) for h in hists)


def _scale(tclo_scale):
    if tclo_scale not in TCLO_SCALES:
        raise invalid(f"tclo_scale must be one of {TCLO_SCALES}, not {tclo_scale!r}")
    return Fraction(1) if tclo_scale == "l1" else Fraction(1, 2)


def t_clo_class(hist, global_hist, tclo_scale="l1"):
    """t-closeness of one class: the L1 distance sum_s |p(s, C) - p(s, T)| between its
    distribution and the table's (Def. 14; a Fraction, G7).  Both are mappings value -> count."""
    if not isinstance(hist, Mapping) or not isinstance(global_hist, Mapping):
        raise invalid("t_clo needs histograms as mappings value -> count")
    n, big_n = sum(_counts(hist)), sum(_counts(global_hist))
    if n == 0 or big_n == 0:
        raise invalid("t_clo of an empty class or table is undefined")
    extra = set(hist) - {v for v, c in global_hist.items() if c}
    if any(hist[v] for v in extra):
        shown = ", ".join(sorted(map(repr, extra))[:5])
        raise invalid(f"the class holds sensitive values absent from the table: {shown}")
    d = sum(abs(Fraction(hist.get(v, 0), n) - Fraction(c, big_n)) for v, c in global_hist.items())
    return d * _scale(tclo_scale)


def t_clo_table(hists, global_hist=None, tclo_scale="l1"):
    """t_clo(T) = the maximum over its classes (Def. 14; to be minimized).  The global
    distribution defaults to the sum of the class histograms."""
    hists = list(hists)
    if not hists:
        raise invalid("a table without classes has no t-closeness")
    if global_hist is None:
        global_hist = {}
        for h in hists:
            for v, c in h.items():
                global_hist[v] = global_hist.get(v, 0) + c
    return max(t_clo_class(h, global_hist, tclo_scale) for h in hists)
