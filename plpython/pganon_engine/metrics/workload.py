"""COUNT-query workloads on the original data: the vocabulary every utility metric of spec 004
§4.1-4.2 (and the ARE of spec 003 §3.2) is written in, and the exact answers.  `Domain` is an
attribute's domain with its original column, `Workload` n COUNT queries over domains; here too
are hand-written workloads and the true counts on the original records.

One description of a release serves every method: a list of classes, each with a record count
and one cell per attribute.  A generalized table (Mondrian, (p,k) GT, (c,k) GT), a GT+ST release
(the SA cell is the bucket's value set) and a QIT+ST release (exact QI cells, the SA cell is the
group's value multiset) are all such lists, so `estimate.estimated_counts` and `ncp.ncp_percent`
measure them all.  Pure Python + numpy (1.24 API); no plpy, no pandas/scipy.

API, by module of pganon_engine.metrics
  workload  Domain.numeric / .categorical / .categorical_from_values   an attribute's domain
            queries_from_predicates(domains, predicates)   a hand-written workload
            true_counts(queries, data)                     counts on the original records
  querygen  make_queries(domains, theta, n, seed, qis)     random COUNT workload of eq. (7)
  estimate  prepare(domains, cells, counts)                a release's cells parsed once
            estimated_counts(queries, cells, counts)       uniform estimate from a release
            query_error(queries, true, estimated)          eq. (8): mean / median / max
  ncp       ncp_percent(cells, counts, domains)            NCP% of eq. (6)

Decisions for the gaps (spec 004 §7 items 14-15 and the §4.1/§4.2 proposals) stand beside the
code they shape: W1 (NCP) in `ncp`, W2 (the estimator) in `estimate`, W3-W7 (drawing a
workload) in `querygen`; and here:

W8  SA columns are not in 004's workload (§4.2); they join a workload only when the caller passes
    them as domains (003).  Set-valued SAs (003's 1:M fingerprints) are out of scope.

Interrupts and bounds.  Inside the database the loops of these modules run pure Python and numpy,
where PostgreSQL notices neither a cancel nor statement_timeout: under `ticking(tick)` (in
pganon_engine.core.interrupts; the engine passes `Db.interruptible()`) every block of counting,
estimation and query drawing calls `tick`, which runs a trivial statement at most every 0.2 s.
A workload holds at most MAX_QUERIES queries (`check_queries`): the work grows with queries x rows.

Memory.  Memory grows with the number of records only through the numpy arrays of the original
columns held by the Domains (one value or code per record and attribute).  The tuning sample is
capped at `sample` rows; counting works on blocks of rows and estimation on blocks of classes,
each block at most `chunk_elems` (queries x rows or queries x classes) elements; predicates take
queries x (2 per numeric, |domain| per categorical attribute).  `true_counts` is additive over
rows, so an adapter may also stream rows through it block by block.  Give `estimated_counts` and
`ncp_percent` one entry per class (GROUP BY the published cells) with its count; one entry per
record (counts=None) is accepted and identical cells are merged, but the input list itself then
grows with the records.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pganon_engine.core import errors
from pganon_engine.core.interrupts import interrupt_point

__all__ = [
    "Domain",
    "Workload",
    "queries_from_predicates",
    "true_counts",
    "NUMERIC",
    "CATEGORICAL",
    "SUPPRESSED",
    "MAX_QUERIES",
    "check_queries",
]

NUMERIC, CATEGORICAL = "numeric", "categorical"
SUPPRESSED = "*"
CHUNK_ELEMS = 1 << 22  # elements of one block (queries x rows or queries x classes), ~32 MB float64
MAX_QUERIES = 100_000  # queries per workload: counting costs queries x rows


def check_queries(n):
    """Refuse a workload above MAX_QUERIES (before any work: a million queries over a big table
    ran for minutes)."""
    if isinstance(n, numbers.Integral) and not isinstance(n, bool) and n > MAX_QUERIES:
        raise errors.invalid(f"queries = {n} is above the limit of {MAX_QUERIES:,} queries per workload",
                             hint=f"ask for at most {MAX_QUERIES:,} queries (pganon.query_error defaults to 1,000)")


# --------------------------------------------------------------------------------------------
# Domains
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Domain:
    """One attribute: its kind, its extent and (for workload generation and true counts) its
    original column.

    numeric      values: the original values (integers, floats, or dates as ordinal ints), or
                 None when only the extent is needed (NCP, estimation); lo/hi: the domain min/max
                 (default: from values); integer: count integers, not lengths (default: integer
                 dtype, or int lo/hi without values)
    categorical  categories: the distinct values; values: per record an int code into categories
    Build with Domain.numeric / Domain.categorical / Domain.categorical_from_values.
    """

    name: str
    kind: str
    values: np.ndarray | None = None
    categories: tuple = ()
    lo: float | None = None
    hi: float | None = None
    integer: bool | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise errors.invalid(f"a domain needs a non-empty name, got {self.name!r}")
        if self.kind == NUMERIC:
            self._init_numeric()
        elif self.kind == CATEGORICAL:
            self._init_categorical()
        else:
            raise errors.invalid(f"domain {self.name!r}: kind must be 'numeric' or 'categorical', not {self.kind!r}")

    def _init_numeric(self):
        set_ = object.__setattr__
        lo, hi, integer = self.lo, self.hi, self.integer
        if self.values is not None:
            v = np.asarray(self.values)
            if v.ndim != 1 or v.dtype.kind not in "iuf":
                raise errors.bad_data(
                    f"numeric QI {self.name!r} needs a 1-D array of numbers, got {v.dtype} with shape {v.shape}",
                    hint="convert dates to ordinal ints; declare text columns as categorical")
            if v.size == 0:
                raise errors.bad_data(f"numeric QI {self.name!r} has no values")
            if v.dtype.kind == "f" and not np.isfinite(v).all():
                raise errors.bad_data(f"numeric QI {self.name!r} has NULL/NaN or infinite values",
                                      hint="remove or impute them before measuring")
            set_(self, "values", v)
            lo = v.min() if lo is None else lo
            hi = v.max() if hi is None else hi
            if integer is None:
                integer = v.dtype.kind in "iu"
        elif lo is None or hi is None:
            raise errors.invalid(f"numeric QI {self.name!r} needs its values or both lo and hi")
        elif integer is None:
            integer = all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in (lo, hi))
        lo, hi = float(lo), float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise errors.invalid(f"numeric QI {self.name!r}: domain [{lo}, {hi}] is not a finite interval")
        set_(self, "lo", lo)
        set_(self, "hi", hi)
        set_(self, "integer", bool(integer))
        set_(self, "categories", ())

    def _init_categorical(self):
        cats = tuple(self.categories)
        if not cats:
            raise errors.bad_data(f"categorical QI {self.name!r} has no categories")
        try:
            distinct = len(set(cats))
        except TypeError:
            raise errors.bad_data(f"categorical QI {self.name!r}: categories must be hashable values") from None
        if distinct != len(cats):
            raise errors.bad_data(f"categorical QI {self.name!r} lists a category twice")
        object.__setattr__(self, "categories", cats)
        object.__setattr__(self, "lo", None)
        object.__setattr__(self, "hi", None)
        object.__setattr__(self, "integer", False)
        if self.values is not None:
            c = np.asarray(self.values)
            if c.ndim != 1 or c.dtype.kind not in "iu":
                raise errors.bad_data(f"categorical QI {self.name!r} needs int codes into its categories, got "
                                      f"{c.dtype} with shape {c.shape}",
                                      hint="use Domain.categorical_from_values for raw values")
            if c.size == 0:
                raise errors.bad_data(f"categorical QI {self.name!r} has no values")
            if c.min() < 0 or c.max() >= len(cats):
                raise errors.bad_data(f"categorical QI {self.name!r} has codes outside 0..{len(cats) - 1}")
            object.__setattr__(self, "values", c)

    @classmethod
    def numeric(cls, name, values=None, *, lo=None, hi=None, integer=None):
        return cls(name, NUMERIC, values=values, lo=lo, hi=hi, integer=integer)

    @classmethod
    def categorical(cls, name, categories, codes=None):
        return cls(name, CATEGORICAL, values=codes, categories=tuple(categories))

    @classmethod
    def categorical_from_values(cls, name, values):
        """Categories in first-appearance order, codes per record."""
        if isinstance(values, np.ndarray):
            values = values.tolist()
        index, codes = {}, []
        for i, v in enumerate(values):
            if not i & 65535:
                interrupt_point()
            if v is None:
                raise errors.bad_data(f"categorical QI {name!r} has NULL values", hint="remove or impute them")
            codes.append(index.setdefault(v, len(index)))
        return cls.categorical(name, list(index), np.asarray(codes, dtype=np.int64))

    @property
    def size(self):
        """Number of categories (categorical) or None."""
        return len(self.categories) if self.kind == CATEGORICAL else None

    @property
    def n_records(self):
        return None if self.values is None else int(self.values.shape[0])


def as_domains(domains):
    doms = tuple(domains)
    if not doms:
        raise errors.invalid("no domains given; pass one Domain per attribute")
    for d in doms:
        if not isinstance(d, Domain):
            raise errors.invalid(f"expected Domain objects, got {type(d).__name__}",
                                 hint="build them with Domain.numeric / Domain.categorical")
    names = [d.name for d in doms]
    if len(set(names)) != len(names):
        raise errors.invalid(f"duplicate attribute names in domains: {names}")
    return doms


def int_param(x, what, minimum):
    if isinstance(x, bool):
        raise errors.invalid(f"{what} must be an integer, got {x!r}")
    try:
        x = operator.index(x)
    except TypeError:
        raise errors.invalid(f"{what} must be an integer, got {x!r}") from None
    if x < minimum:
        raise errors.invalid(f"{what} = {x} is invalid; {what} must be >= {minimum}")
    return x


# --------------------------------------------------------------------------------------------
# Workloads
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Workload:
    """n COUNT queries over `domains` (eq. 7).

    preds        per domain: numeric -> (lo, hi), two float arrays of shape (n,), closed bounds,
                 -inf/+inf where unconstrained; categorical -> bool array (n, |domain|), the
                 admitted values (all True where unconstrained)
    constrained  bool (n, d): which attributes each query constrains
    counts       original counts at generation (make_queries) or None; n_records the rows
    on_target    per query: count within the tolerance band of θ (W4), or None
    """

    domains: tuple
    preds: tuple
    constrained: np.ndarray
    theta: float | None = None
    counts: np.ndarray | None = None
    n_records: int | None = None
    on_target: np.ndarray | None = None
    seed: object = None
    scheme: str | None = None
    tolerance: float | None = None

    def __len__(self):
        return int(self.constrained.shape[0])

    @property
    def selectivity(self):
        """Realized selectivity count / N of each query on the original data, or None."""
        if self.counts is None or not self.n_records:
            return None
        return self.counts / float(self.n_records)

    def describe(self, j):
        """Query j as {attribute: (lo, hi) or frozenset of values}, constrained attributes only."""
        out = {}
        for i, d in enumerate(self.domains):
            if not self.constrained[j, i]:
                continue
            p = self.preds[i]
            if d.kind == NUMERIC:
                lo, hi = float(p[0][j]), float(p[1][j])
                out[d.name] = (int(lo), int(hi)) if d.integer and lo.is_integer() and hi.is_integer() else (lo, hi)
            else:
                out[d.name] = frozenset(d.categories[c] for c in np.flatnonzero(p[j]))
        return out


def empty_preds(doms, n):
    preds = []
    for d in doms:
        if d.kind == NUMERIC:
            preds.append((np.full(n, -np.inf), np.full(n, np.inf)))
        else:
            preds.append(np.ones((n, d.size), dtype=bool))
    return preds


def queries_from_predicates(domains, predicates):
    """A workload from explicit predicates: one mapping per query, attribute name -> (lo, hi) or a
    number (numeric; closed bounds) or an iterable of values (categorical).  Attributes not named
    are unconstrained."""
    doms = as_domains(domains)
    predicates = list(predicates)
    n = len(predicates)
    preds = empty_preds(doms, n)
    con = np.zeros((n, len(doms)), dtype=bool)
    pos = {d.name: i for i, d in enumerate(doms)}
    for j, q in enumerate(predicates):
        if not isinstance(q, Mapping):
            raise errors.invalid(f"query {j} must be a mapping attribute -> predicate, got {type(q).__name__}")
        for name, p in q.items():
            if name not in pos:
                raise errors.unknown(f"query {j} names unknown attribute {name!r}", hint=f"known: {sorted(pos)}")
            i = pos[name]
            d = doms[i]
            con[j, i] = True
            if d.kind == NUMERIC:
                if isinstance(p, (tuple, list)) and len(p) == 2:
                    lo, hi = p
                elif isinstance(p, numbers.Real) and not isinstance(p, bool):
                    lo = hi = p
                else:
                    raise errors.invalid(f"query {j}: predicate on numeric {name!r} must be (lo, hi) or a number, "
                                         f"got {p!r}")
                lo, hi = float(lo), float(hi)
                if math.isnan(lo) or math.isnan(hi) or lo > hi:
                    raise errors.invalid(f"query {j}: range [{lo}, {hi}] on {name!r} is empty or NaN")
                preds[i][0][j], preds[i][1][j] = lo, hi
            else:
                lookup = {v: c for c, v in enumerate(d.categories)}
                vals = list(p) if isinstance(p, (set, frozenset, list, tuple)) else [p]
                preds[i][j, :] = False
                for v in vals:
                    if v not in lookup:
                        raise errors.bad_data(f"query {j}: {v!r} is not a value of {name!r}")
                    preds[i][j, lookup[v]] = True
    return Workload(domains=doms, preds=tuple(preds), constrained=con)


# --------------------------------------------------------------------------------------------
# Counts
# --------------------------------------------------------------------------------------------


def columns(doms, needed, data):
    """The original columns of the attributes in `needed`, from `data` (Domains or a mapping
    name -> array; categorical columns as codes) or from the domains themselves."""
    if data is None:
        source = {d.name: d.values for d in doms}
    elif isinstance(data, Mapping):
        source = dict(data)
    else:
        source = {}
        for d in data:
            if not isinstance(d, Domain):
                raise errors.invalid("data must be Domains or a mapping attribute -> column")
            source[d.name] = d.values
    cols, length = {}, None
    for i in needed:
        d = doms[i]
        x = source.get(d.name)
        if x is None:
            raise errors.incomplete(f"no original values for attribute {d.name!r}",
                                    hint="pass its column in data (or build its Domain with values)")
        x = np.asarray(x)
        if x.ndim != 1:
            raise errors.bad_data(f"the column of {d.name!r} must be 1-D")
        if d.kind == CATEGORICAL and (x.dtype.kind not in "iu" or (x.size and (x.min() < 0 or x.max() >= d.size))):
            raise errors.bad_data(f"the column of categorical {d.name!r} must hold codes 0..{d.size - 1}")
        if d.kind == NUMERIC and x.dtype.kind not in "iuf":
            raise errors.bad_data(f"the column of numeric {d.name!r} must hold numbers")
        if length is None:
            length = x.shape[0]
        elif x.shape[0] != length:
            raise errors.bad_data(f"columns differ in length ({length} vs {x.shape[0]} for {d.name!r})")
        cols[i] = x
    return cols


def count_matches(doms, preds, con, cols, N, chunk_elems):
    n = con.shape[0]
    active = [i for i in range(len(doms)) if con[:, i].any()]
    if not active:
        return np.full(n, N, dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    step = max(1, chunk_elems // max(n, 1))
    for s in range(0, N, step):
        interrupt_point()
        e = min(N, s + step)
        sel = np.ones((n, e - s), dtype=bool)
        for i in active:
            x = cols[i][s:e]
            if doms[i].kind == NUMERIC:
                lo, hi = preds[i]
                sel &= x >= lo[:, None]
                sel &= x <= hi[:, None]
            else:
                sel &= preds[i][:, x]
        out += sel.sum(axis=1)
    return out


def true_counts(queries, data=None, *, chunk_elems=CHUNK_ELEMS):
    """Exact COUNT(*) of every query on the original records.

    data  Domains with values, or a mapping attribute name -> column (categorical as codes into
          the domain's categories); default: the workload's own domains.  Counts are additive
          over rows, so an adapter may call this per block of rows and add the results.
    """
    check_workload(queries)
    doms = queries.domains
    needed = [i for i in range(len(doms)) if queries.constrained[:, i].any()]
    cols = columns(doms, needed, data)
    if not needed:
        n_rec = _any_length(doms, data)
        return np.full(len(queries), n_rec, dtype=np.int64)
    N = len(cols[needed[0]])
    return count_matches(doms, queries.preds, queries.constrained, cols, N, int_param(chunk_elems, "chunk_elems", 1))


def _any_length(doms, data):
    if data is None:
        data = doms
    if isinstance(data, Mapping):
        cols = list(data.values())
    else:
        cols = [d.values for d in data]
    for c in cols:
        if c is not None:
            return len(c)
    raise errors.incomplete("no original column given; cannot count records")


def check_workload(queries):
    if not isinstance(queries, Workload):
        raise errors.invalid("queries must be a Workload (make_queries or queries_from_predicates)")
