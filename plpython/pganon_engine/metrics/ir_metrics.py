"""Set generalization, information loss and distances of the identity-reserved methods
(spec 002 §2.10-2.13, Eqs. 11-18) and their query error (§2.15, Eq. 19).

DAnonyIR generalizes without taxonomies: a numeric QI becomes the interval [min, max] of the
class, a categorical QI the set of the class's values ("set generalization"), so 10076 and
10085 give {10076, 10085} rather than 100**.  The loss of a cell is the increment of GLM it
causes, normalized by the attribute's domain, and a distance is the total loss increment of
generalizing two operands (persons or classes) to their joint identity element, summed over
their records.  GeneIR's taxonomy nodes are read as the leaf set (categorical) or the leaf
interval (numeric) they cover, which makes Eqs. 11-12 equal GLM (§3.6).

Cells (one per QI, in QI order):
  numeric      a number (a point) or (lo, hi), a closed interval with lo <= hi
  categorical  a value (a point) or a set/frozenset of values
  '*'          suppressed (loss 1)
Domains are `workload.Domain` objects (numeric lo/hi, categorical categories), the same ones the
query workload uses, so one description of a release serves loss and query error.

Decisions:

- R1  Domains (§2.12, §3.8 item 5): the observed min/max and distinct values by default
      (`domains_of`), overridable per attribute ((lo, hi) or a list of values).  A zero-width
      numeric domain or a one-value categorical domain has loss 0.
- R2  Exact arithmetic: integer (and Fraction/Decimal) bounds give Fractions, so 65/6 and 13/36
      are exact; a float bound makes the result a float.
- R3  loss(before, after) = GLM(after) - GLM(before) (Eqs. 11-12 as increments); `after` must
      cover `before`.  A suppressed value costs 1 from an original value.
- R4  Table loss (Eqs. 14-15): every original value is a point, so a record's loss is the GLM
      of its published cells; a suppressed record costs |QI|; NLoss divides by
      (all original records) * |QI| (§3.8 item 7).
- R5  Query estimate (Eq. 19, §3.8 items 12-14): a class is its QI cells plus its SA values as a
      multiset with one entry per record, so `estimate.estimated_counts` gives
      sum_Q prod_j |pred_j ∩ cell_j| / |cell_j| * (records of Q whose SA satisfies the SA
      predicate) - Eq. 19 with num counted in records (COUNT(*)).  Integer domains count
      integers (|[a, b]| = b - a + 1), other numeric domains lengths (estimate W2).  The true
      counts come from the persons' records; queries with prec = 0 are skipped (querygen W5).
- R6  Workload (§2.15, §3.8 item 14): `query_error` draws `n` seeded COUNT queries with
      `querygen.make_queries`: every query constrains the SA and λ QIs drawn at random
      (qd = λ, always = the SA), at selectivity θ on the original records (scheme
      'selectivity', W3-W5: queries with prec = 0 are redrawn, never kept).  prec counts every
      original record, suppressed persons included (they are in D, not in D*); est sums over
      the published classes only.  The domains are the release's own (observed, overridden,
      or GeneIR's taxonomy), so a class cell and a predicate measure the same extent.
- R7  Interrupts: the loops over persons and classes call `core.interrupts.interrupt_point` (a
      no-op outside `ticking`), so a cancel or statement_timeout reaches them inside the
      database.
"""

from __future__ import annotations

import numbers
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from pganon_engine.core.errors import bad_data, invalid
from pganon_engine.core.interrupts import interrupt_point

from . import estimate, querygen, workload
from .workload import CATEGORICAL, NUMERIC, SUPPRESSED, Domain

__all__ = [
    "domains_of",
    "cell",
    "join",
    "identity",
    "glm",
    "ncp",
    "loss",
    "record_loss",
    "dist",
    "Loss",
    "table_loss",
    "node_cell",
    "query_cells",
    "record_columns",
    "estimates",
    "relative_errors",
    "workload_domains",
    "query_error",
]


# --------------------------------------------------------------------------------------------
# Numbers and domains
# --------------------------------------------------------------------------------------------


def exact(x):
    """An int or Fraction when x is integral or rational (R2), else a float."""
    if isinstance(x, bool):
        raise invalid(f"{x!r} is not a number")
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, Fraction):
        return x
    if isinstance(x, Decimal):
        return Fraction(x)
    if isinstance(x, numbers.Real):
        x = float(x)
        return int(x) if x.is_integer() else x
    raise invalid(f"{x!r} is not a number")


def _span(d):
    return exact(d.hi) - exact(d.lo)


def domains_of(names, kinds, rows, overrides=None):
    """One Domain per QI from the data (R1).

    names      QI names
    kinds      per QI 'numeric' or 'categorical'
    rows       QI value tuples (one per person or record; only min/max and distinct values matter)
    overrides  {name: (lo, hi)} for a numeric QI, {name: [values]} for a categorical one
    """
    names, kinds = list(names), list(kinds)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise invalid(f"domains given for unknown QI(s) {unknown}", hint=f"QIs: {names}")
    cols = [[] for _ in names]
    for i, r in enumerate(rows):
        if not i & 4095:
            interrupt_point()
        for j, v in enumerate(r):
            cols[j].append(v)
    out = []
    for name, kind, col in zip(names, kinds, cols):
        ov = overrides.get(name)
        if kind == NUMERIC:
            vals = [exact(v) for v in col]
            if ov is not None:
                try:
                    lo, hi = (exact(x) for x in ov)
                except (TypeError, ValueError):
                    raise invalid(f"the domain of numeric QI {name!r} must be (lo, hi), not {ov!r}") from None
                if vals and (min(vals) < lo or max(vals) > hi):
                    raise bad_data(f"numeric QI {name!r} has values outside its domain [{lo}, {hi}]",
                                   hint="widen the domain or drop the override")
            elif vals:
                lo, hi = min(vals), max(vals)
            else:
                raise invalid(f"numeric QI {name!r} has no values and no domain")
            out.append(Domain.numeric(name, lo=lo, hi=hi))
        elif kind == CATEGORICAL:
            seen = list(dict.fromkeys(col))
            if ov is not None:
                if isinstance(ov, (str, bytes)) or not hasattr(ov, "__iter__"):
                    raise invalid(f"the domain of categorical QI {name!r} must list its values, not {ov!r}")
                cats = list(dict.fromkeys(ov))
                missing = [v for v in seen if v not in set(cats)]
                if missing:
                    raise bad_data(f"categorical QI {name!r} has values outside its domain: "
                                   + ", ".join(repr(v) for v in missing[:10]),
                                   hint="list every value in the domain or drop the override")
            else:
                cats = seen
            out.append(Domain.categorical(name, cats))
        else:
            raise invalid(f"kind of QI {name!r} must be 'numeric' or 'categorical', not {kind!r}")
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Cells and the identity element (§2.10)
# --------------------------------------------------------------------------------------------


def _star(c):
    return isinstance(c, str) and c == SUPPRESSED


def cell(value, domain):
    """The normalized cell of a value or generalized value: (lo, hi) or frozenset or '*'."""
    if _star(value):
        return SUPPRESSED
    if value is None:
        raise bad_data(f"a cell of {domain.name!r} is NULL", hint="remove or impute NULLs first")
    if domain.kind == NUMERIC:
        if isinstance(value, (tuple, list)) and len(value) == 2:
            lo, hi = exact(value[0]), exact(value[1])
        else:
            lo = hi = exact(value)
        if lo > hi:
            raise invalid(f"interval [{lo}, {hi}] of {domain.name!r} has lo > hi")
        return (lo, hi)
    if isinstance(value, (set, frozenset)):
        if not value:
            raise invalid(f"the value set of {domain.name!r} is empty")
        return frozenset(value)
    return frozenset((value,))


def join(a, b, domain):
    """δ of two cells: [min a, max b] or the union (§2.10); '*' absorbs."""
    a, b = cell(a, domain), cell(b, domain)
    if _star(a) or _star(b):
        return SUPPRESSED
    if domain.kind == NUMERIC:
        return (min(a[0], b[0]), max(a[1], b[1]))
    return a | b


def identity(rows, domains):
    """The identity element δ(r_1, ..., r_ω) of rows of cells (§2.10)."""
    out = None
    for r in rows:
        r = tuple(r)
        if len(r) != len(domains):
            raise invalid(f"a row has {len(r)} cells for {len(domains)} QIs")
        out = tuple(cell(c, d) for c, d in zip(r, domains)) if out is None else \
            tuple(join(x, c, d) for x, c, d in zip(out, r, domains))
    if out is None:
        raise invalid("no rows to generalize")
    return out


def glm(c, domain):
    """GLM of a cell = its loss from an original point (Eq. 11 / Eq. 12 from a point; 1 for '*')."""
    c = cell(c, domain)
    if _star(c):
        return 1
    if domain.kind == NUMERIC:
        span, w = _span(domain), c[1] - c[0]
        if span == 0:
            return 0
        return w / span if isinstance(w, float) or isinstance(span, float) else Fraction(w) / span
    den = domain.size - 1
    return 0 if den <= 0 else Fraction(len(c) - 1, den)


def ncp(c, domain):
    """The legacy NCP of Eqs. 3-4: numeric (u - l)/(U - L); categorical 0 for one value, else
    |values| / |domain|; '*' 1."""
    c = cell(c, domain)
    if _star(c):
        return 1
    if domain.kind == NUMERIC:
        return glm(c, domain)
    return 0 if len(c) == 1 else Fraction(len(c), domain.size)


def _covers(after, before, domain):
    if _star(after):
        return True
    if _star(before):
        return False
    if domain.kind == NUMERIC:
        return after[0] <= before[0] and before[1] <= after[1]
    return before <= after


def loss(before, after, domain):
    """Eq. 11 / 12: the loss increment of generalizing `before` to `after` (R3)."""
    b, a = cell(before, domain), cell(after, domain)
    if not _covers(a, b, domain):
        raise invalid(f"{after!r} does not cover {before!r} on {domain.name!r}",
                      hint="a generalized value must contain the value it replaces")
    return glm(a, domain) - glm(b, domain)


def record_loss(before, after, domains):
    """Eq. 13: the sum over QIs of the loss increments."""
    before, after = tuple(before), tuple(after)
    if not (len(before) == len(after) == len(domains)):
        raise invalid(f"record loss needs {len(domains)} cells on both sides")
    return sum((loss(b, a, d) for b, a, d in zip(before, after, domains)), 0)


def dist(a, a_records, b, b_records, domains):
    """Eqs. 16-18: |A| Loss(a, δ(a, b)) + |B| Loss(b, δ(a, b)), where a and b are identity
    elements (of a person, with |R(p)| records, or of a class, with |Q| records)."""
    a, b = tuple(a), tuple(b)
    joint = tuple(join(x, y, d) for x, y, d in zip(a, b, domains))
    return a_records * record_loss(a, joint, domains) + b_records * record_loss(b, joint, domains)


@dataclass(frozen=True)
class Loss:
    """Loss(D, D*) of Eq. 14, NLoss of Eq. 15, the original records and the suppressed ones."""

    total: object
    nloss: object
    records: int
    suppressed_records: int


def table_loss(classes, domains, suppressed_records=0):
    """Eqs. 14-15 (R4).  classes: iterable of (records, published cells); suppressed_records:
    the original records not published (each costs |QI|)."""
    d = len(domains)
    if not d:
        raise invalid("no QIs: the loss is undefined")
    total, n = 0, 0
    for i, (recs, cells) in enumerate(classes):
        if not i & 1023:
            interrupt_point()
        cells = tuple(cells)
        if len(cells) != d:
            raise invalid(f"a class has {len(cells)} cells for {d} QIs")
        total += recs * sum((glm(c, dom) for c, dom in zip(cells, domains)), 0)
        n += recs
    total += suppressed_records * d
    n += suppressed_records
    return Loss(total=total, nloss=Fraction(0) if not n else
                (total / (n * d) if isinstance(total, float) else Fraction(total) / (n * d)),
                records=n, suppressed_records=suppressed_records)


# --------------------------------------------------------------------------------------------
# Taxonomy nodes (GeneIR, §3.6)
# --------------------------------------------------------------------------------------------


def _leaf_number(h, label):
    try:
        v = Fraction(label)
    except (ValueError, ZeroDivisionError):
        raise bad_data(f"leaf {label!r} of hierarchy {h.name!r} is not a number",
                       hint="a numeric QI's hierarchy has numeric leaves") from None
    return int(v) if v.denominator == 1 else v


def node_cell(h, node, kind):
    """The cell a taxonomy node stands for: the set of leaf labels under it (categorical) or
    the interval [min leaf, max leaf] (numeric, leaves parsed as numbers)."""
    v = h.node(node)
    under = h.leaves[h.anc[h.leaves, h.depth[v]] == v]
    labels = [h.labels[x] for x in under]
    if kind == NUMERIC:
        nums = [_leaf_number(h, x) for x in labels]
        return (min(nums), max(nums))
    return frozenset(labels)


# --------------------------------------------------------------------------------------------
# Query error (R5)
# --------------------------------------------------------------------------------------------


def query_cells(classes):
    """(cells, counts) for `estimate.estimated_counts`: classes are (QI cells, SA values of the
    class's records); the SA cell is the multiset of those values."""
    cells, counts = [], []
    for i, (qi_cells, sa_values) in enumerate(classes):
        if not i & 1023:
            interrupt_point()
        sa = Counter(sa_values)
        if not sa:
            raise invalid("a class without records has no place in a release")
        cells.append(tuple(qi_cells) + (dict(sa),))
        counts.append(sum(sa.values()))
    return cells, counts


def record_columns(persons, domains):
    """The original records as workload columns {name: array}: persons are (QI values, SA
    values); every SA value is one record with the person's QI values.  `domains` are the QI
    domains followed by the SA domain (categorical columns become codes)."""
    domains = tuple(domains)
    qi = domains[:-1]
    cols = [[] for _ in domains]
    for i, (q, vals) in enumerate(persons):
        if not i & 4095:
            interrupt_point()
        q = tuple(q)
        if len(q) != len(qi):
            raise invalid(f"a person has {len(q)} QI values for {len(qi)} QIs")
        for v in vals:
            for j, x in enumerate(q):
                cols[j].append(x)
            cols[-1].append(v)
    out = {}
    for d, col in zip(domains, cols):
        if d.kind == NUMERIC:
            out[d.name] = np.asarray([float(x) for x in col])
        else:
            lookup = {v: i for i, v in enumerate(d.categories)}
            try:
                out[d.name] = np.asarray([lookup[x] for x in col], dtype=np.int64)
            except KeyError as e:
                raise bad_data(f"{e.args[0]!r} is not a value of {d.name!r}") from None
    return out


def estimates(queries, classes):
    """Eq. 19 estimates of every query of a workload (QI domains then the SA domain) on a
    person-aware release given as (QI cells, SA values of the records) per class."""
    cells, counts = query_cells(classes)
    return estimate.estimated_counts(queries, cells, counts)


def relative_errors(true, estimated):
    """|est - prec| / prec per query, NaN where prec = 0 (undefined, §3.8 item 14)."""
    t = np.asarray(true, dtype=float)
    e = np.asarray(estimated, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, np.abs(e - t) / np.where(t > 0, t, 1.0), np.nan)



def workload_domains(persons, release, sa="sa"):
    """The domains of a person-aware release's query workload (R6), with every original
    record's values: the release's QI domains (extents as the method used them), then the SA
    (its distinct values in first-appearance order).  persons are (person id, QI values, SA
    values of the person's records), as given to the method.  Memory: one code or number per
    record and attribute, in numpy arrays."""
    qis = list(release.qis)
    if sa in qis:
        raise invalid(f"the sensitive attribute {sa!r} is also a QI of the release",
                      hint="give the SA a name of its own")
    rows = [tuple(p[1]) for p in persons]
    reps = np.fromiter((len(p[2]) for p in persons), dtype=np.int64, count=len(persons))
    if not len(rows):
        raise invalid("no persons: the workload needs the original records")
    out = []
    for j, d in enumerate(release.domains):
        col = [r[j] for r in rows]
        if d.kind == NUMERIC:
            vals = np.asarray(col)
            if vals.dtype.kind not in "iuf":  # Fractions, Decimals
                vals = np.asarray([float(v) for v in col])
            out.append(Domain.numeric(d.name, np.repeat(vals, reps), lo=d.lo, hi=d.hi))
        else:
            look = {v: c for c, v in enumerate(d.categories)}
            try:
                codes = np.fromiter((look[v] for v in col), dtype=np.int64, count=len(col))
            except KeyError as e:
                raise bad_data(f"{e.args[0]!r} is not a value of the domain of {d.name!r}") from None
            out.append(Domain.categorical(d.name, d.categories, np.repeat(codes, reps)))
    look, codes = {}, []
    for i, p in enumerate(persons):
        if not i & 4095:
            interrupt_point()
        for v in p[2]:
            codes.append(look.setdefault(v, len(look)))
    out.append(Domain.categorical(sa, list(look), np.asarray(codes, dtype=np.int64)))
    return tuple(out)


def query_error(persons, release, sa="sa", *, lam=1, n=1000, theta=0.1, seed=0, predicates=None):
    """Relative error of query answering on a person-aware release (§2.15, Eq. 19; R5, R6):
    {mean, median, max, queries (used), skipped, lambda, theta, seed, on_target}.

    persons     (person id, QI values, SA values of the records), as given to the method
    release     the method's `IrRelease` (classes with cells, the QI domains)
    sa          the SA's name in the workload
    lam         λ, the number of QIs each query constrains (besides the SA), 1..|QI|
    n, theta    number of queries and their selectivity on the original records
    predicates  instead of a random workload, queries as {attribute: predicate} mappings
                (`workload.queries_from_predicates`); lam, n, theta and seed are then unused
    """
    doms = workload_domains(persons, release, sa)
    d = len(release.qis)
    if predicates is not None:
        queries = workload.queries_from_predicates(doms, predicates)
        true = workload.true_counts(queries)
    else:
        if isinstance(lam, bool) or not isinstance(lam, numbers.Integral) or not 1 <= lam <= d:
            raise invalid(f"the query dimension lambda = {lam!r} must be an integer in 1..{d} (the QIs "
                          "of the release)", hint=f"e.g. lambda = 1, or lambda = {d} for every QI")
        queries = querygen.make_queries(doms, theta, n=n, seed=seed, qd=int(lam), always=(sa,))
        true = queries.counts
    sa_of = {p[0]: p[2] for p in persons}
    classes = []
    for i, c in enumerate(release.classes):
        if not i & 1023:
            interrupt_point()
        classes.append((c.cells, [v for pid in c.persons for v in sa_of[pid]]))
    est = estimates(queries, classes) if classes else np.zeros(len(queries))
    err = estimate.query_error(queries, true, est)
    on = queries.on_target
    return {"mean": err.mean, "median": err.median, "max": err.max, "queries": err.used, "skipped": err.skipped,
            "lambda": None if predicates is not None else int(lam),
            "theta": None if predicates is not None else float(theta),
            "seed": None if predicates is not None else seed,
            "on_target": None if on is None else float(np.mean(on)), "estimator": "eq19"}
