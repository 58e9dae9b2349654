"""NCP% of a release (spec 004 §4.1 eq. 6): the share of each attribute's domain its published
cells cover, averaged over records.  Kept apart from the query metrics (`estimate`), whose
parsed cells it reads (`estimate.prepare`, cell formats there), because it measures the cells
alone, without a workload.

W1  NCP (§4.1 proposal): weights 1 (a `weights` argument overrides); numeric cell
    (hi - lo) / (domain max - domain min), 0 for a zero-width domain, an exact value 0, '*' 1;
    categorical cell 0 for one value, |values| / |domain| otherwise ('*' = |domain| / |domain|
    = 1; a multiset counts its distinct values).  NCP% = 100 * NCP(T*) / (records * sum of
    weights).  Domain extents come from the original column (Domain), never from the release.
"""

from __future__ import annotations

import numpy as np

from pganon_engine.core import errors

from .estimate import prepare
from .workload import NUMERIC, as_domains

__all__ = ["ncp_percent"]


# --------------------------------------------------------------------------------------------
# NCP (eq. 6)
# --------------------------------------------------------------------------------------------


def ncp_percent(cells, counts, domains, weights=None):
    """NCP% of a release (W1): 100 * sum over records of sum_i w_i NCP_i / (records * sum w_i).

    cells    one sequence of cells per class, aligned with domains
    counts   records per class, or None for one entry per record
    domains  the attributes' Domains (extents of the original columns; values not needed)
    """
    doms = as_domains(domains)
    w = np.ones(len(doms)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(doms),) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise errors.invalid(f"weights must be {len(doms)} finite numbers >= 0 with a positive sum")
    rel = prepare(doms, cells, counts)
    rows = rel.counts.sum()
    if rows <= 0:
        return 0.0
    pen = np.zeros(len(rel))
    for i, d in enumerate(doms):
        if d.kind == NUMERIC:
            lo, hi = rel.attrs[i]
            span = d.hi - d.lo
            p = (hi - lo) / span if span > 0 else np.zeros(len(rel))
        else:
            uidx, ucells = rel.attrs[i]
            per = np.array([0.0 if codes.size <= 1 else codes.size / d.size for codes, _ in ucells])
            p = per[uidx]
        pen += w[i] * p
    return float(100.0 * (pen @ rel.counts) / (rows * w.sum()))
