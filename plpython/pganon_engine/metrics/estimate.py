"""What a release answers: its cells parsed once (`prepare`), the uniform estimate of every
query's count from them (`estimated_counts`) and the relative error of those estimates against
the true counts (`query_error`: eq. 8 of spec 004 §4.2, the ARE of spec 003 §3.2).

Kept apart from `workload` and `querygen`, which read the original records: this module reads
only the published side.  `ncp` measures the same parsed cells.

Cells (one per attribute, in the order of the domains):
  numeric      a number (exact value); (lo, hi) a closed interval; '*' the whole domain
  categorical  a value (exact); a set/frozenset/list/tuple of values; '*' the whole domain
               (suppressed; the (p,k) GT's "Person" is '*'); a mapping value -> multiplicity
               (a multiset, e.g. an anatomy group's SA values with their counts)
  '*' always means suppression, even if '*' is also a value of the column.  None (NULL) is
  refused: a cell must say what it covers.

W2  Estimator (§4.2 proposal, "standard uniform estimator"): records are spread uniformly over
    their cell and independently across attributes, so
        est(Q) = sum over classes of count * prod_i |Q_i ∩ cell_i| / |cell_i|.
    Integer domains (integer dtype; dates as ordinal ints) count integers:
    |[a, b]| = floor(b) - ceil(a) + 1.  Continuous domains use lengths; a zero-width interval is
    a point, counted 1 if inside the query range and 0 otherwise.  Categorical cells use the
    covered-value fraction; a multiset uses the fraction of its multiplicity, which for a QIT+ST
    row is the anatomy estimate.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pganon_engine.core import errors
from pganon_engine.core.interrupts import interrupt_point

from .workload import CATEGORICAL, CHUNK_ELEMS, NUMERIC, SUPPRESSED, as_domains, check_workload, int_param

__all__ = ["prepare", "estimated_counts", "QueryError", "query_error"]


# --------------------------------------------------------------------------------------------
# Releases: cells -> arrays
# --------------------------------------------------------------------------------------------


class _Release:
    """Classes merged by identical cells.  Per numeric attribute: lo, hi arrays; per categorical
    attribute: uidx (class -> distinct cell) and the distinct cells as (codes, weights)."""

    def __init__(self, doms, cells, counts):
        self.domains = tuple(doms)
        cells = list(cells)
        C = len(cells)
        if counts is None:
            cnt = np.ones(C)
        else:
            cnt = np.asarray(counts, dtype=float)
            if cnt.shape != (C,):
                raise errors.invalid(f"{cnt.size} counts for {C} classes; give one count per class")
            if not np.isfinite(cnt).all() or (cnt < 0).any():
                raise errors.bad_data("class counts must be finite and >= 0")
        lookups = [{v: c for c, v in enumerate(d.categories)} if d.kind == CATEGORICAL else None for d in doms]
        index, keys, agg = {}, [], []
        for r, row in enumerate(cells):
            if not r & 1023:
                interrupt_point()
            row = tuple(row)
            if len(row) != len(doms):
                raise errors.invalid(f"class {r} has {len(row)} cells for {len(doms)} attributes; "
                                     "give one per attribute")
            key = tuple(_cell_key(d, lk, cell, r) for d, lk, cell in zip(doms, lookups, row))
            j = index.get(key)
            if j is None:
                index[key] = len(keys)
                keys.append(key)
                agg.append(cnt[r])
            else:
                agg[j] += cnt[r]
        self.counts = np.asarray(agg, dtype=float)
        self.attrs = []
        for i, d in enumerate(doms):
            col = [k[i] for k in keys]
            if d.kind == NUMERIC:
                self.attrs.append((np.array([c[0] for c in col], dtype=float),
                                   np.array([c[1] for c in col], dtype=float)))
            else:
                uniq, uidx, ucells = {}, np.empty(len(col), dtype=np.int64), []
                for r, c in enumerate(col):
                    u = uniq.get(c)
                    if u is None:
                        u = uniq[c] = len(ucells)
                        ucells.append(_cat_cell(c, d.size))
                    uidx[r] = u
                self.attrs.append((uidx, ucells))

    def __len__(self):
        return self.counts.size


def _is_star(cell):
    return isinstance(cell, str) and cell == SUPPRESSED


def _cell_key(d, lookup, cell, r):
    if cell is None:
        raise errors.bad_data(f"class {r}: the cell of {d.name!r} is NULL",
                              hint="give the exact value, an interval or value set, or '*'")
    if d.kind == NUMERIC:
        if _is_star(cell):
            return (d.lo, d.hi)
        if isinstance(cell, (tuple, list)) and len(cell) == 2:
            lo, hi = cell
        elif isinstance(cell, numbers.Real) and not isinstance(cell, bool):
            lo = hi = cell
        else:
            raise errors.bad_data(f"class {r}: cell {cell!r} of numeric {d.name!r} is not a number, (lo, hi) or '*'")
        try:
            lo, hi = float(lo), float(hi)
        except (TypeError, ValueError):
            raise errors.bad_data(f"class {r}: cell {cell!r} of numeric {d.name!r} has non-numeric bounds") from None
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise errors.bad_data(f"class {r}: cell [{lo}, {hi}] of {d.name!r} is not a finite interval with lo <= hi")
        if d.integer and math.floor(hi) < math.ceil(lo):
            raise errors.bad_data(f"class {r}: cell [{lo}, {hi}] of integer {d.name!r} holds no integer")
        return (lo, hi)
    if _is_star(cell):
        return SUPPRESSED
    if isinstance(cell, Mapping):
        items = {}
        for v, w in cell.items():
            if isinstance(w, bool) or not isinstance(w, numbers.Real) or not (w >= 0 and math.isfinite(w)):
                raise errors.bad_data(f"class {r}: multiplicity {w!r} of {v!r} in {d.name!r} must be a number >= 0")
            if w > 0:
                code = _code(d, lookup, v, r)
                items[code] = items.get(code, 0.0) + float(w)
        if not items:
            raise errors.bad_data(f"class {r}: the multiset cell of {d.name!r} is empty")
        if len(items) == 1:
            return next(iter(items))
        return ("multiset", tuple(sorted(items.items())))
    if isinstance(cell, (set, frozenset, list, tuple)):
        codes = frozenset(_code(d, lookup, v, r) for v in cell)
        if not codes:
            raise errors.bad_data(f"class {r}: the value set of {d.name!r} is empty")
        return next(iter(codes)) if len(codes) == 1 else codes
    return _code(d, lookup, cell, r)


def _code(d, lookup, v, r):
    try:
        code = lookup.get(v)
    except TypeError:
        code = None
    if code is None:
        raise errors.bad_data(f"class {r}: {v!r} is not a value of categorical {d.name!r}",
                              hint="cells must use the values of the original column (or '*')")
    return code


def _cat_cell(key, m):
    """(codes, weights) of a categorical cell key."""
    if key == SUPPRESSED:
        return np.arange(m), np.ones(m)
    if isinstance(key, frozenset):
        codes = np.array(sorted(key), dtype=np.int64)
        return codes, np.ones(codes.size)
    if isinstance(key, tuple):
        pairs = key[1]
        return np.array([c for c, _ in pairs], dtype=np.int64), np.array([w for _, w in pairs], dtype=float)
    return np.array([key], dtype=np.int64), np.ones(1)


# --------------------------------------------------------------------------------------------
# Estimation and error
# --------------------------------------------------------------------------------------------


def prepare(domains, cells, counts=None):
    """A release's cells parsed once, for `estimated_counts` of several workloads over the same
    domains (parsing the cells costs more than estimating one workload)."""
    return _Release(as_domains(domains), cells, counts)


def estimated_counts(queries, cells, counts=None, *, chunk_elems=CHUNK_ELEMS):
    """Uniform estimate of every query's count from a release (W2).

    cells   one sequence of cells per class, aligned with the workload's domains, or what
            `prepare` made of them for the same domains
    counts  records per class (default 1 each: one entry per record)
    """
    check_workload(queries)
    chunk_elems = int_param(chunk_elems, "chunk_elems", 1)
    doms = queries.domains
    if isinstance(cells, _Release):
        if cells.domains != tuple(doms):
            raise errors.invalid("the prepared release was made for other domains than the workload's")
        rel = cells
    else:
        rel = _Release(doms, cells, counts)
    n, C = len(queries), len(rel)
    est = np.zeros(n)
    if not C:
        return est
    active = [i for i in range(len(doms)) if queries.constrained[:, i].any()]
    # categorical: fraction of each distinct cell admitted by each query, n x (distinct cells)
    frac = {}
    for i in active:
        if doms[i].kind == CATEGORICAL:
            mask = queries.preds[i]
            _, ucells = rel.attrs[i]
            g = np.empty((n, len(ucells)))
            for u, (codes, w) in enumerate(ucells):
                if not u & 255:
                    interrupt_point()
                g[:, u] = mask[:, codes] @ (w / w.sum())
            frac[i] = g
    step = max(1, chunk_elems // max(n, 1))
    for s in range(0, C, step):
        interrupt_point()
        e = min(C, s + step)
        f = np.ones((n, e - s))
        for i in active:
            if doms[i].kind == NUMERIC:
                a, b = queries.preds[i]
                lo, hi = rel.attrs[i][0][s:e], rel.attrs[i][1][s:e]
                f *= _numeric_fraction(a[:, None], b[:, None], lo[None, :], hi[None, :], doms[i].integer)
            else:
                f *= frac[i][:, rel.attrs[i][0][s:e]]
        est += f @ rel.counts[s:e]
    return est


def _numeric_fraction(a, b, lo, hi, integer):
    """|[a, b] ∩ [lo, hi]| / |[lo, hi]| (W2), broadcast."""
    top, bottom = np.minimum(b, hi), np.maximum(a, lo)
    if integer:
        size = np.floor(hi) - np.ceil(lo) + 1
        over = np.maximum(np.floor(top) - np.ceil(bottom) + 1, 0)
        return over / size
    width = hi - lo
    point = width == 0
    over = np.maximum(top - bottom, 0) / np.where(point, 1.0, width)
    inside = (a <= lo) & (lo <= b)
    return np.where(point, inside.astype(float), over)


@dataclass(frozen=True)
class QueryError:
    """Relative error |est - true| / true over the queries with true > 0 (eq. 8)."""

    mean: float
    median: float
    max: float
    used: int
    skipped: int


def query_error(queries, true, estimated):
    """Mean (eq. 8's QueryError / 003's ARE), median and max relative error; queries with a
    true count of 0 are skipped (W5); with none left the statistics are NaN."""
    t = np.asarray(true, dtype=float)
    e = np.asarray(estimated, dtype=float)
    if t.ndim != 1 or t.shape != e.shape:
        raise errors.invalid(f"true and estimated counts must be two 1-D arrays of equal length, got {t.shape} and "
                             f"{e.shape}")
    if queries is not None and len(queries) != t.size:
        raise errors.invalid(f"{t.size} counts for {len(queries)} queries; give one count per query")
    if not (np.isfinite(t).all() and np.isfinite(e).all()):
        raise errors.bad_data("counts must be finite numbers")
    use = t > 0
    k = int(use.sum())
    if not k:
        nan = float("nan")
        return QueryError(mean=nan, median=nan, max=nan, used=0, skipped=int(t.size))
    rel = np.abs(e[use] - t[use]) / t[use]
    return QueryError(mean=float(rel.mean()), median=float(np.median(rel)), max=float(rel.max()), used=k,
                      skipped=int(t.size - k))
