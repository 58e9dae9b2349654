"""The input of the row-level privacy models, validated once: histograms, classes and
`Aggregates` (built by `from_groups` from the database's GROUP BY output, or by `from_rows` from
plain rows, the reference of what the SQL must compute), and the checks of option values
(`choice`, `integer`) that `diversity`, `distances` and `predicates` share.

Why apart: every model reads the same aggregates, and every one of them refuses a NULL, a
negative count or a histogram that does not sum to its class the same way, so that checking
lives here once, below the models.

Input model (plain data):

- histogram: mapping ``value -> count`` of one SA (counts are integers >= 0; zeros are
  dropped).  Values are compared by equality; NULL (None) and NaN are refused.
- class: ``(size, {SA: histogram})``; every histogram of a class sums to its size (for k alone
  the histograms may be omitted: ``(size, {})``).
- `Aggregates(sas, classes, global_hists, joint)`: ``classes`` grouped by the QIs;
  ``global_hists`` the table's histogram per SA; ``joint[s]`` (several SAs only) the classes
  grouped by the QIs and every SA other than ``s``, each ``(size, {s: histogram})``.  Build it
  with `from_groups` (SQL output) or `from_rows`.

Decisions M1-M10 are listed in `predicates`; M8 (the default global histogram) is applied here.
"""

import math
import numbers
from collections import Counter
from dataclasses import dataclass

from pganon_engine.core.errors import bad_data, invalid, unknown

READINGS = ("standard", "pycanon")
INF = math.inf


# --------------------------------------------------------------------------------------------
# Input: histograms, classes, aggregates
# --------------------------------------------------------------------------------------------


def is_null(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


def count(c, what):
    if isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 0:
        raise invalid(f"{what}: a count must be an integer >= 0, not {c!r}")
    return int(c)


def hist(h, what):
    """A clean histogram: dict value -> positive int (zeros dropped)."""
    if not hasattr(h, "items"):
        raise invalid(f"{what} must be a mapping value -> count, not {type(h).__name__}")
    out = {}
    for v, c in h.items():
        if is_null(v):
            raise bad_data(f"{what} has a NULL value",
                           hint="filter or impute NULL sensitive values before checking")
        c = count(c, what)
        if c:
            out[v] = c
    return out


def _sas(sas):
    if isinstance(sas, str) or sas is None:
        raise invalid("sas must be a list of sensitive attribute names", hint="e.g. ['disease']")
    sas = tuple(sas)
    if len(set(sas)) != len(sas):
        raise invalid(f"sensitive attributes listed twice: {sorted({s for s in sas if sas.count(s) > 1})}")
    return sas


def _class(cls, sas, what, need_hists=True):
    try:
        size, hists = cls
    except (TypeError, ValueError):
        raise invalid(f"{what} must be a pair (size, {{SA: histogram}}), not {cls!r}") from None
    size = count(size, f"{what} size")
    if size == 0:
        raise invalid(f"{what} is empty (size 0)", hint="leave empty classes out")
    hists = hists or {}
    out = {}
    for s in sas:
        if s not in hists:
            if need_hists:
                raise invalid(f"{what} has no histogram for sensitive attribute {s!r}",
                              hint=f"give one per SA: {list(sas)}")
            continue
        h = hist(hists[s], f"{what}, SA {s!r}")
        if sum(h.values()) != size:
            raise invalid(f"{what}: the histogram of {s!r} counts {sum(h.values())} rows but the "
                          f"class has {size}", hint="every SA histogram of a class sums to its size")
        out[s] = h
    return size, out


@dataclass(frozen=True)
class Aggregates:
    """What every model needs (see the module docstring).  Build with `from_groups`/`from_rows`."""

    sas: tuple
    classes: tuple
    global_hists: dict
    joint: dict = None

    def scope_classes(self, sa, scope):
        """The histograms of ``sa`` in the classes of ``scope`` (M1)."""
        if scope == "joint" and len(self.sas) > 1:
            if self.joint is None:
                raise invalid("the joint scope needs the classes grouped by the QIs and the other SAs",
                              hint="give joint= to from_groups (GROUP BY qis + other SAs per SA)")
            return [h[sa] for _, h in self.joint[sa]]
        return [h[sa] for _, h in self.classes]


def from_groups(sas, classes, global_hists=None, joint=None):
    """Validate the GROUP BY output into `Aggregates`.

    sas           sensitive attribute names (order kept)
    classes       iterable of (size, {SA: {value: count}}) grouped by the QIs
    global_hists  {SA: {value: count}} of the table; default the sum of the classes (M8)
    joint         {SA: iterable of (size, {SA: {value: count}})} grouped by QIs + the other SAs
    """
    sas = _sas(sas)
    classes = tuple(_class(c, sas, f"class {i + 1}") for i, c in enumerate(classes))
    if not classes:
        raise invalid("no equivalence classes: the table is empty", hint="check a non-empty table")
    glob = {}
    for s in sas:
        if global_hists is None:
            total = Counter()
            for _, h in classes:
                total.update(h[s])
            glob[s] = dict(total)
            continue
        if s not in global_hists:
            raise invalid(f"global_hists has no histogram for sensitive attribute {s!r}")
        glob[s] = hist(global_hists[s], f"global histogram of {s!r}")
        for i, (_, h) in enumerate(classes):
            covered(h[s], glob[s], s, f"class {i + 1}")
    jt = None
    if joint is not None:
        jt = {}
        for s in sas:
            if s not in joint:
                raise invalid(f"joint has no classes for sensitive attribute {s!r}",
                              hint="one class list per SA, grouped by the QIs and the other SAs")
            jt[s] = tuple(_class(c, (s,), f"joint class {i + 1} of {s!r}") for i, c in enumerate(joint[s]))
            for i, (_, h) in enumerate(jt[s]):
                covered(h[s], glob[s], s, f"joint class {i + 1}")
            if sum(n for n, _ in jt[s]) != sum(n for n, _ in classes):
                raise invalid(f"the joint classes of {s!r} hold {sum(n for n, _ in jt[s])} rows, "
                              f"the QI classes {sum(n for n, _ in classes)}",
                              hint="both groupings must cover the same rows")
    return Aggregates(sas=sas, classes=classes, global_hists=glob, joint=jt)


def covered(h, g, sa, what):
    missing = [v for v in h if v not in g]
    if missing:
        raise invalid(f"{what} has value(s) {sorted(map(repr, missing))[:5]} of {sa!r} that the "
                      f"global histogram lacks", hint="the global histogram must cover the table")


def from_rows(rows, qis, sas, columns=None):
    """The aggregates of raw rows: classes = GROUP BY qis (first-appearance order), the global
    histograms, and for several SAs the joint classes (GROUP BY qis + the other SAs).  NULL QI
    values form their own group, as GROUP BY does.

    rows     iterable of mappings column -> value, or of sequences when ``columns`` names them
    """
    qis, sas = list(qis), _sas(sas)
    cols = None if columns is None else {c: i for i, c in enumerate(columns)}
    for c in qis + list(sas):
        if cols is not None and c not in cols:
            raise unknown(f"column {c!r} is not among the columns {list(columns)}")
    recs = []
    for r in rows:
        get = (lambda c, r=r: r[cols[c]]) if cols is not None else r.__getitem__
        try:
            recs.append((tuple(get(q) for q in qis), tuple(get(s) for s in sas)))
        except KeyError as e:
            raise unknown(f"a row has no column {e.args[0]!r}") from None

    def group(key):
        out = {}
        for q, s in recs:
            g = out.setdefault(key(q, s), [0, {a: Counter() for a in sas}])
            g[0] += 1
            for a, v in zip(sas, s):
                g[1][a][v] += 1
        return [(n, {a: dict(h) for a, h in hs.items()}) for n, hs in out.values()]

    classes = group(lambda q, s: q)
    joint = None
    if len(sas) > 1:
        joint = {}
        for i, a in enumerate(sas):
            joint[a] = [(n, {a: h[a]}) for n, h in
                        group(lambda q, s, i=i: q + s[:i] + s[i + 1:])]
    return from_groups(sas, classes, joint=joint)


def class_hists(hists, what="class"):
    out = [hist(h, f"{what} {i + 1}") for i, h in enumerate(hists)]
    if not out or any(not h for h in out):
        raise invalid("every class needs a non-empty histogram, and there must be a class")
    return out


# --------------------------------------------------------------------------------------------
# Option values (shared by the model functions and the parameter parser)
# --------------------------------------------------------------------------------------------


def choice(v, options, name):
    if v not in options:
        raise invalid(f"{name} must be one of {', '.join(map(repr, options))}, not {v!r}")
    return v


def integer(v, name, minimum):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
        raise invalid(f"parameter {name} must be an integer >= {minimum}, not {v!r}")
    return int(v)
