"""Utility metrics shared by every release shape: NCP% (eq. 6) and the accuracy of random COUNT
queries (eqs. 7-8) of spec 004 §4.1-4.2, which is also the ARE of spec 003 §3.2.

One description of a release serves every method: a list of classes, each with a record count
and one cell per attribute.  A generalized table (Mondrian, (p,k) GT, (c,k) GT), a GT+ST release
(the SA cell is the bucket's value set) and a QIT+ST release (exact QI cells, the SA cell is the
group's value multiset) are all such lists, so `estimated_counts` and `ncp_percent` measure them
all.  Pure Python + numpy (1.24 API); no plpy, no pandas/scipy.

API
  Domain.numeric / Domain.categorical / Domain.categorical_from_values   an attribute's domain
  make_queries(domains, theta, n, seed, qis)        random COUNT workload of eq. (7) -> Workload
  queries_from_predicates(domains, predicates)      a hand-written workload
  true_counts(queries, data)                        counts on the original records
  prepare(domains, cells, counts)                   a release's cells parsed once
  estimated_counts(queries, cells, counts)          uniform estimate from a release (or prepared)
  query_error(queries, true, estimated)             eq. (8): mean / median / max, queries used
  ncp_percent(cells, counts, domains)               NCP% of eq. (6)

Cells (one per attribute, in the order of the domains):
  numeric      a number (exact value); (lo, hi) a closed interval; '*' the whole domain
  categorical  a value (exact); a set/frozenset/list/tuple of values; '*' the whole domain
               (suppressed; the (p,k) GT's "Person" is '*'); a mapping value -> multiplicity
               (a multiset, e.g. an anatomy group's SA values with their counts)
  '*' always means suppression, even if '*' is also a value of the column.  None (NULL) is
  refused: a cell must say what it covers.

Decisions for the gaps (spec 004 §7 items 14-15 and the §4.1/§4.2 proposals):

W1  NCP (§4.1 proposal): weights 1 (a `weights` argument overrides); numeric cell
    (hi - lo) / (domain max - domain min), 0 for a zero-width domain, an exact value 0, '*' 1;
    categorical cell 0 for one value, |values| / |domain| otherwise ('*' = |domain| / |domain|
    = 1; a multiset counts its distinct values).  NCP% = 100 * NCP(T*) / (records * sum of
    weights).  Domain extents come from the original column (Domain), never from the release.
W2  Estimator (§4.2 proposal, "standard uniform estimator"): records are spread uniformly over
    their cell and independently across attributes, so
        est(Q) = sum over classes of count * prod_i |Q_i ∩ cell_i| / |cell_i|.
    Integer domains (integer dtype; dates as ordinal ints) count integers:
    |[a, b]| = floor(b) - ceil(a) + 1.  Continuous domains use lengths; a zero-width interval is
    a point, counted 1 if inside the query range and 0 otherwise.  Categorical cells use the
    covered-value fraction; a multiset uses the fraction of its multiplicity, which for a QIT+ST
    row is the anatomy estimate.
W3  Workload (§4.2 eq. 7, "Draw random ranges per QI so that the realized original selectivity
    is within a tolerance of θ"): a query constrains the attributes in `always` plus `qd` random
    ones from the rest of `qis` (default: every attribute of `qis`), q in all.  The attributes
    are drawn once per query and kept through its redraws (W4), so retries do not favour
    attributes that hit θ easily.  Numeric predicates are closed ranges, categorical ones value
    sets.  scheme='selectivity' (default): each predicate covers a fraction f of the records,
    f = θ^(1/q) to start (exact under independence); a numeric range is a window of ranks at a
    random position, a categorical set a prefix of a random order of the values.  Both grow
    nested with f, so the joint selectivity is monotone in f and is tuned on log f (a few Newton
    steps, then bisection): first one common f (handles correlated attributes), then, if still
    off, only the f of the attribute with the finest granularity (smallest largest tie), the
    others held at the smallest common f found on or above target.  Tuning runs on a random
    sample of `sample` rows (all rows when fewer), aiming at half the tolerance band when
    sampled; the count of the chosen query is then taken on all rows.
W4  Tolerance: a query is on target iff |count - θN| <= max(tolerance * θN, 1), i.e. within
    `tolerance` relative (default 10 %) or one record.  A query off target is redrawn (new
    positions and orders) up to `max_tries` times; after that the closest draw is kept and
    `Workload.on_target` says so (heavily tied data, e.g. one binary attribute, cannot hit every
    θ).  With a tie-free numeric attribute among those constrained every query lands on target.
W5  Zero counts (§4.2 proposal): eq. 8 is undefined for count(original) = 0, so such queries are
    never kept: they are redrawn, and if `max_tries` draws all count 0 the call fails (raise θ
    or max_tries).  `query_error` still skips true = 0, for hand-made workloads.
W6  scheme='domain' is spec 003 §3.2's reading (Gong reference code / Xiao-Tao): per attribute a
    fraction f = θ^(1/q) of the *domain*, not of the records: b = ⌈|dom| * f⌉ random categorical
    values; for a numeric attribute a random contiguous range of ⌈f * (max - min + 1)⌉ integers
    (integer domain) or of length f * (max - min).  θ is then only the expected selectivity under
    uniformity; zero-count queries are redrawn as in W5.  With qd = 2 and always = (SA,) this is
    003's ARE workload (qd QIDs plus the SA, exponent 1/(qd + 1)).
W7  Reproducible: every random choice comes from numpy.random.default_rng(seed); the same domains,
    θ and parameters give the same workload.
W8  SA columns are not in 004's workload (§4.2); they join a workload only when the caller passes
    them as domains (003).  Set-valued SAs (003's 1:M fingerprints) are out of scope.

Interrupts and bounds.  Inside the database the loops of this module run pure Python and numpy,
where PostgreSQL notices neither a cancel nor statement_timeout: under `ticking(tick)` (the
engine passes `Db.interruptible()`) every block of counting, estimation and query drawing calls
`tick`, which runs a trivial statement at most every 0.2 s.  A workload holds at most
MAX_QUERIES queries (`check_queries`): the work grows with queries x rows.

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
from pganon_engine.core.interrupts import interrupt_point, ticking  # noqa: F401 (callers use workload.ticking)

__all__ = [
    "Domain",
    "Workload",
    "QueryError",
    "make_queries",
    "queries_from_predicates",
    "true_counts",
    "prepare",
    "estimated_counts",
    "query_error",
    "ncp_percent",
    "NUMERIC",
    "CATEGORICAL",
    "SUPPRESSED",
    "SCHEMES",
    "MAX_QUERIES",
    "check_queries",
    "ticking",
    "interrupt_point",
]

NUMERIC, CATEGORICAL = "numeric", "categorical"
SUPPRESSED = "*"
SCHEMES = ("selectivity", "domain")
CHUNK_ELEMS = 1 << 22  # elements of one block (queries x rows or queries x classes), ~32 MB float64
_STEPS = 64  # root-finding steps per stage (W3); the bracket test stops far earlier
_NEWTON_STEPS = 4  # the first steps are Newton steps on log count vs log f, then bisection
MAX_QUERIES = 100_000  # queries per workload: counting costs queries x rows


def check_queries(n):
    """Refuse a workload above MAX_QUERIES (before any work: a million queries over a big table
    ran for minutes)."""
    if isinstance(n, numbers.Integral) and not isinstance(n, bool) and n > MAX_QUERIES:
        raise errors.invalid(f"queries = {n} is above the limit of {MAX_QUERIES:,} queries per workload",
                             hint=f"ask for at most {MAX_QUERIES:,} queries (the default is 1,000)")


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


def _domains(domains):
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


def _index_of(doms, names, what):
    pos = {d.name: i for i, d in enumerate(doms)}
    if isinstance(names, str):
        names = [names]
    out = []
    for nm in names:
        if nm not in pos:
            raise errors.unknown(f"{what} names unknown attribute {nm!r}", hint=f"known: {sorted(pos)}")
        if pos[nm] in out:
            raise errors.invalid(f"{what} names {nm!r} twice")
        out.append(pos[nm])
    return out


def _int_param(x, what, minimum):
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


def _empty_preds(doms, n):
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
    doms = _domains(domains)
    predicates = list(predicates)
    n = len(predicates)
    preds = _empty_preds(doms, n)
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


def make_queries(domains, theta, n=1000, seed=0, qis=None, *, qd=None, always=(), scheme="selectivity",
                 tolerance=0.1, max_tries=20, sample=20000, chunk_elems=CHUNK_ELEMS):
    """n random COUNT queries of selectivity about θ on the original data (eq. 7; W3-W7).

    domains    Domains with their original columns (all of equal length)
    theta      target selectivity, 0 < θ <= 1
    qis        names of the attributes queries may constrain (default: every domain)
    qd         number of attributes drawn at random per query from qis minus `always`
               (default: all of them, i.e. every query constrains every attribute of qis)
    always     names constrained by every query (003's SA)
    scheme     'selectivity' (tuned to θ on the records, W3) or 'domain' (003's fraction of the
               domain, W6)
    tolerance  relative band around θN for 'selectivity' (W4)
    max_tries  draws per query before giving up on the band (W4) or on a non-zero count (W5)
    sample     rows used to tune the predicates ('selectivity')
    """
    doms = _domains(domains)
    if isinstance(theta, bool) or not isinstance(theta, numbers.Real) or not (0 < float(theta) <= 1):
        raise errors.invalid(f"theta = {theta!r} is invalid; the selectivity must be in (0, 1]")
    theta = float(theta)
    n = _int_param(n, "n", 1)
    check_queries(n)
    max_tries = _int_param(max_tries, "max_tries", 1)
    sample = _int_param(sample, "sample", 1)
    chunk_elems = _int_param(chunk_elems, "chunk_elems", 1)
    if scheme not in SCHEMES:
        raise errors.invalid(f"scheme must be one of {SCHEMES}, not {scheme!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real) or not tolerance >= 0:
        raise errors.invalid(f"tolerance = {tolerance!r} is invalid; give a relative tolerance >= 0")
    tolerance = float(tolerance)
    pool = _index_of(doms, qis, "qis") if qis is not None else list(range(len(doms)))
    if not pool:
        raise errors.invalid("qis is empty; name at least one attribute to query")
    fixed = _index_of(doms, always, "always")
    if not set(fixed) <= set(pool):
        raise errors.invalid("every attribute of `always` must also be in `qis`")
    free = [p for p in pool if p not in fixed]
    qd = len(free) if qd is None else _int_param(qd, "qd", 0)
    if qd > len(free):
        raise errors.invalid(f"qd = {qd} is larger than the {len(free)} attributes to choose from")
    if qd + len(fixed) < 1:
        raise errors.invalid("every query must constrain at least one attribute; raise qd or set always")
    cols = _columns(doms, pool, None)
    N = len(cols[pool[0]])
    rng = np.random.default_rng(seed)
    ctx = _GenContext(doms, pool, fixed, free, qd, theta, tolerance, chunk_elems)
    if scheme == "selectivity":
        ctx.sample = _Sample(rng, doms, pool, cols, N, sample)

    preds = _empty_preds(doms, n)
    con = ctx.choose(rng, n)  # a query keeps its attributes through its redraws
    counts = np.zeros(n, dtype=np.int64)
    best_err = np.full(n, np.inf)
    done = np.zeros(n, dtype=bool)
    target = theta * N
    band = max(tolerance * target, 1.0)
    for _ in range(max_tries):
        interrupt_point()
        todo = np.flatnonzero(~done)
        if not todo.size:
            break
        ccon = con[todo]
        cpreds = ctx.draw(rng, ccon, scheme)
        cnt = _counts(doms, cpreds, ccon, cols, N, chunk_elems)
        err = np.abs(cnt - target)
        ok = cnt > 0
        better = ok & (err < best_err[todo])
        rows = todo[better]
        for i, d in enumerate(doms):
            if d.kind == NUMERIC:
                preds[i][0][rows] = cpreds[i][0][better]
                preds[i][1][rows] = cpreds[i][1][better]
            else:
                preds[i][rows] = cpreds[i][better]
        counts[rows] = cnt[better]
        best_err[rows] = err[better]
        if scheme == "selectivity":
            done[todo[ok & (err <= band)]] = True
        else:
            done[todo[ok]] = True
    if (counts == 0).any():
        raise errors.bad_data(
            f"{int((counts == 0).sum())} of {n} queries found no record in {max_tries} draws (theta = {theta})",
            hint="raise theta or max_tries; eq. 8 is undefined for queries with no original record")
    on_target = np.abs(counts - target) <= band
    return Workload(domains=doms, preds=tuple(preds), constrained=con, theta=theta, counts=counts,
                    n_records=N, on_target=on_target, seed=seed, scheme=scheme, tolerance=tolerance)


class _Sample:
    """The tuning sample (W3): per pool attribute its sample column and what the predicate
    builders need (sorted values, value frequencies, granularity = size of the largest tie)."""

    def __init__(self, rng, doms, pool, cols, N, size):
        if N > size:
            idx = np.sort(rng.choice(N, size=size, replace=False))
        else:
            idx = None
        self.S = N if idx is None else size
        self.sampled = idx is not None
        self.col, self.sorted, self.freq, self.grain = {}, {}, {}, {}
        self.values, self.code = {}, {}  # numeric: distinct sample values, each row's code into them
        for p in pool:
            x = cols[p] if idx is None else cols[p][idx]
            self.col[p] = x
            if doms[p].kind == NUMERIC:
                s = np.sort(x)
                self.sorted[p] = s
                v, c = np.unique(s, return_counts=True)
                self.values[p], self.code[p] = v, np.searchsorted(v, x)
                self.grain[p] = int(c.max())
            else:
                f = np.bincount(x, minlength=doms[p].size)
                self.freq[p] = f
                self.grain[p] = int(f.max())
        # the sample's distinct code vectors with their multiplicities: counting works on these
        codes = np.stack([self.code[p] if doms[p].kind == NUMERIC else self.col[p] for p in pool], axis=1)
        uniq, self.weight = np.unique(codes, axis=0, return_counts=True)
        self.ucode = {p: uniq[:, j] for j, p in enumerate(pool)}
        # float32 sums of fewer than 2^24 unit counts are exact, and run as BLAS
        self.weight32 = self.weight.astype(np.float32 if self.S < 2 ** 24 else np.float64)


class _GenContext:
    def __init__(self, doms, pool, fixed, free, qd, theta, tolerance, chunk_elems):
        self.doms, self.pool, self.fixed, self.free, self.qd = doms, pool, fixed, free, qd
        self.theta, self.tolerance, self.chunk_elems = theta, tolerance, chunk_elems
        self.sample = None

    def choose(self, rng, m):
        con = np.zeros((m, len(self.doms)), dtype=bool)
        con[:, self.fixed] = True
        keys = rng.random((m, len(self.free)))
        if self.qd:
            picked = np.argsort(keys, axis=1)[:, :self.qd]
            free = np.asarray(self.free)
            con[np.arange(m)[:, None], free[picked]] = True
        return con

    def draw(self, rng, con_all, scheme):
        m = con_all.shape[0]
        preds = _empty_preds(self.doms, m)
        widest = max([self.doms[p].size for p in self.pool if self.doms[p].kind == CATEGORICAL] + [1])
        per = max(self.sample.S if self.sample else 1, widest)
        batch = max(1, min(256, self.chunk_elems // per))
        for b0 in range(0, m, batch):
            interrupt_point()
            b1 = min(m, b0 + batch)
            con = con_all[b0:b1]
            if scheme == "selectivity":
                part = self._draw_selectivity(rng, con)
            else:
                part = self._draw_domain(rng, con)
            for i, d in enumerate(self.doms):
                if d.kind == NUMERIC:
                    preds[i][0][b0:b1], preds[i][1][b0:b1] = part[i]
                else:
                    preds[i][b0:b1] = part[i]
        return preds

    # -- scheme 'domain' (W6) --------------------------------------------------------------------

    def _draw_domain(self, rng, con):
        m = con.shape[0]
        f = self.theta ** (1.0 / con.sum(axis=1))
        part = {}
        for i, d in enumerate(self.doms):
            if d.kind == NUMERIC:
                lo, hi = np.full(m, -np.inf), np.full(m, np.inf)
                u = rng.random(m) if i in self.pool else None
                if u is not None:
                    c = con[:, i]
                    if d.integer:
                        span = math.floor(d.hi) - math.ceil(d.lo) + 1
                        width = np.clip(np.ceil(f * span - 1e-9), 1, span)
                        start = math.ceil(d.lo) + np.floor(u * (span - width + 1))
                        lo[c], hi[c] = start[c], (start + width - 1)[c]
                    else:
                        w = f * (d.hi - d.lo)
                        start = d.lo + u * (d.hi - d.lo - w)
                        lo[c], hi[c] = start[c], np.minimum(start + w, d.hi)[c]
                part[i] = (lo, hi)
            else:
                mask = np.ones((m, d.size), dtype=bool)
                if i in self.pool:
                    rank = np.argsort(np.argsort(rng.random((m, d.size)), axis=1), axis=1)
                    b = np.clip(np.ceil(f * d.size - 1e-9), 1, d.size)
                    c = con[:, i]
                    mask[c] = rank[c] < b[c, None]
                part[i] = mask
        return part

    # -- scheme 'selectivity' (W3) ---------------------------------------------------------------

    def _draw_selectivity(self, rng, con):
        smp, doms = self.sample, self.doms
        S, m = smp.S, con.shape[0]
        # random positions (numeric) and value orders (categorical), drawn for every pool
        # attribute so the stream does not depend on which attributes a query picked
        u, rank, cum = {}, {}, {}
        for p in self.pool:
            if doms[p].kind == NUMERIC:
                u[p] = rng.random(m)
            else:
                order = np.argsort(rng.random((m, doms[p].size)), axis=1)
                rank[p] = np.argsort(order, axis=1)
                cum[p] = np.cumsum(smp.freq[p][order], axis=1)

        def num_bounds(p, rows, f):
            k = np.clip(np.rint(f * S), 1, S).astype(np.int64)
            start = np.clip(np.floor(u[p][rows] * (S - k + 1)).astype(np.int64), 0, S - k)
            sv = smp.sorted[p]
            return sv[start], sv[start + k - 1]

        def cat_len(p, rows, f):
            n_vals = doms[p].size
            return np.minimum((cum[p][rows] < (f * S)[:, None]).sum(axis=1) + 1, n_vals)

        def count(rows, fm):
            """Sample rows each query admits.  Membership is decided per distinct value first
            (queries x values, small), gathered by the codes of the sample's distinct code
            vectors and weighted by their multiplicities: one boolean gather and AND per
            attribute over queries x distinct vectors."""
            sel = np.ones((rows.size, smp.weight.size), dtype=bool)
            for p in self.pool:
                c = con[rows, p]
                if not c.any():
                    continue
                if doms[p].kind == NUMERIC:
                    lo, hi = num_bounds(p, rows, fm[:, p])
                    v = smp.values[p]
                    allowed = (v >= lo[:, None]) & (v <= hi[:, None])
                else:
                    allowed = rank[p][rows] < cat_len(p, rows, fm[:, p])[:, None]
                allowed[~c] = True
                sel &= allowed[:, smp.ucode[p]]
            return np.rint(sel.astype(smp.weight32.dtype) @ smp.weight32).astype(np.int64)

        target = self.theta * S
        # a sample tuned to the full band would miss it on all rows about half the time at its
        # edges; half the band leaves room for the sampling error
        band = max(self.tolerance * target * (0.5 if smp.sampled else 1.0), 1.0)
        t_min = math.log(1.0 / S)
        t_width = 0.25 / S  # below this a step of log f moves no window by a whole position
        d = len(doms)
        best_fm = np.ones((m, d))
        best_err = np.full(m, np.inf)

        def record(rows, fm, c):
            err = np.where(c > 0, np.abs(c - target), np.inf)  # a zero count is never kept (W5)
            better = err < best_err[rows]
            best_err[rows[better]] = err[better]
            best_fm[rows[better]] = fm[better]
            return err <= band

        def solve(rows, t, t_lo, t_hi, slope, fm_of):
            """Root of count(t) = target for each row: Newton steps on log count vs log f
            (slope = how many attributes move) for the first steps, then bisection; the bracket
            [t_lo, t_hi] (count below / on or above target) shrinks at every step.  Stops at a
            hit or when the bracket no longer changes a window by one position."""
            live = np.ones(rows.size, dtype=bool)
            for step in range(_STEPS):
                interrupt_point()
                sub = np.flatnonzero(live)
                if not sub.size:
                    break
                fm = fm_of(sub, t[sub])
                c = count(rows[sub], fm)
                hit = record(rows[sub], fm, c)
                below = c < target
                t_lo[sub[below]] = t[sub[below]]
                t_hi[sub[~below]] = t[sub[~below]]
                live[sub[hit]] = False
                newton = t[sub] + (math.log(target) - np.log(np.maximum(c, 0.5))) / slope[sub]
                mid = (t_lo[sub] + t_hi[sub]) / 2
                inside = (newton > t_lo[sub]) & (newton < t_hi[sub])
                t[sub] = np.where(inside & (step < _NEWTON_STEPS), newton, mid)
                live &= (t_hi - t_lo) > t_width

        # stage 1: one common f per query
        q = con.sum(axis=1)
        t_lo, t_hi = np.full(m, t_min), np.zeros(m)
        t = np.clip(math.log(self.theta) / q, t_min, 0.0)
        solve(np.arange(m), t, t_lo, t_hi, q.astype(float),
              lambda sub, ts: np.repeat(np.exp(ts)[:, None], d, axis=1))
        # stage 2: only the finest constrained attribute moves; the others stay at the smallest
        # common f found on or above target (t_hi), so the count runs from <= 1 up to >= target
        rows = np.flatnonzero(best_err > band)
        if rows.size:
            grain = np.array([smp.grain.get(p, np.iinfo(np.int64).max) for p in range(d)], dtype=np.int64)
            fine = np.argmin(np.where(con[rows], grain[None, :], np.iinfo(np.int64).max), axis=1)
            base = np.repeat(np.exp(t_hi[rows])[:, None], d, axis=1)

            def fine_fm(sub, ts):
                fm = base[sub].copy()
                fm[np.arange(sub.size), fine[sub]] = np.exp(ts)
                return fm

            hi2 = t_hi[rows].copy()
            solve(rows, hi2.copy(), np.full(rows.size, t_min), hi2, np.ones(rows.size), fine_fm)
        # predicates of the best f per query
        part = {}
        all_rows = np.arange(m)
        for i, dm in enumerate(doms):
            c = con[:, i]
            if dm.kind == NUMERIC:
                lo, hi = np.full(m, -np.inf), np.full(m, np.inf)
                if i in u:
                    vlo, vhi = num_bounds(i, all_rows, best_fm[:, i])
                    lo[c], hi[c] = vlo[c], vhi[c]
                part[i] = (lo, hi)
            else:
                mask = np.ones((m, dm.size), dtype=bool)
                if i in rank:
                    L = cat_len(i, all_rows, best_fm[:, i])
                    mask[c] = rank[i][c] < L[c, None]
                part[i] = mask
        return part


# --------------------------------------------------------------------------------------------
# Counts
# --------------------------------------------------------------------------------------------


def _columns(doms, needed, data):
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


def _counts(doms, preds, con, cols, N, chunk_elems):
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
    _check_workload(queries)
    doms = queries.domains
    needed = [i for i in range(len(doms)) if queries.constrained[:, i].any()]
    cols = _columns(doms, needed, data)
    if not needed:
        n_rec = _any_length(doms, data)
        return np.full(len(queries), n_rec, dtype=np.int64)
    N = len(cols[needed[0]])
    return _counts(doms, queries.preds, queries.constrained, cols, N, _int_param(chunk_elems, "chunk_elems", 1))


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


def _check_workload(queries):
    if not isinstance(queries, Workload):
        raise errors.invalid("queries must be a Workload (make_queries or queries_from_predicates)")


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
    return _Release(_domains(domains), cells, counts)


def estimated_counts(queries, cells, counts=None, *, chunk_elems=CHUNK_ELEMS):
    """Uniform estimate of every query's count from a release (W2).

    cells   one sequence of cells per class, aligned with the workload's domains, or what
            `prepare` made of them for the same domains
    counts  records per class (default 1 each: one entry per record)
    """
    _check_workload(queries)
    chunk_elems = _int_param(chunk_elems, "chunk_elems", 1)
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


# --------------------------------------------------------------------------------------------
# NCP (eq. 6)
# --------------------------------------------------------------------------------------------


def ncp_percent(cells, counts, domains, weights=None):
    """NCP% of a release (W1): 100 * sum over records of sum_i w_i NCP_i / (records * sum w_i).

    cells    one sequence of cells per class, aligned with domains
    counts   records per class, or None for one entry per record
    domains  the attributes' Domains (extents of the original columns; values not needed)
    """
    doms = _domains(domains)
    w = np.ones(len(doms)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(doms),) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise errors.invalid(f"weights must be {len(doms)} finite numbers >= 0 with a positive sum")
    rel = _Release(doms, cells, counts)
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
