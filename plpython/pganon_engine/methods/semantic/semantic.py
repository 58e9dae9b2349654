"""Semantic anonymization (Mubark, Elabd, Abdulkader, KST 2016, as used by spec
003-msa-comparative.md §2.3, §4.2-4.4, A10-A16, claim C8): an l-diverse generalized table can
still leak through the *meaning* of its sensitive values (a class whose every chest-pain value is
an angina reveals "heart disease").  The data owner states semantic rules (an SA predicate and
the category it reveals); a rule is *effective* on an equivalence class (EC) when enough of the
class's records satisfy it, and such a class is merged with its QID-nearest class until no class
has an effective rule.  SA values never change; only QI cells coarsen.

The engine reads the classes, not the rows: per class its record count, per QI its cell
(numeric (min, max), or the set of its categorical values) and per SA its value counts (what a
GROUP BY over the l-diverse release gives), and returns which input classes form each output
class, their new QI cells and the log of the checks and merges.  The database then relabels the
rows of merged classes (set-based: a join on the input class id).

  check       the semantic check (Table 3): per class its effective rules and their coverage
  anonymize   the merge loop (Table 4), a `Result`
  measures    QID-NCP%, DM and GLM of a list of classes (input or output), through
              `workload.ncp_percent`, `joint.discernibility` and `ir_metrics.glm`

Decisions (spec items in brackets):

- S1  Rules are plain data: ``{"id", "sa", "op", "category"}`` with ``"values": [...]`` for
      ``in``, ``"low"``/``"high"`` for ``between`` (inclusive), ``"value"`` for ``>``, ``>=``,
      ``<``, ``<=``, ``=`` (``"value"`` is accepted for ``in`` too, and ``"values"`` for every
      op: [low, high] or [value], the shape of the catalog's ``pganon.semantic_rule`` rows).
      Ids are unique text; every rule's SA must be an SA of the classes [A12].
- S2  A value satisfies a predicate by the stored value [A13]: numerically when both sides are
      numbers (ints, Decimals, finite floats read through their shortest repr, or text that
      reads as a number, so "150" equals 150 and 0.5 is 1/2 exactly); as text (``str``) when
      both are not numbers (so ISO dates order correctly); never when one side is a number and
      the other is not.  NULL (None) satisfies nothing.
- S3  Coverage of a rule on an EC = records whose value of the rule's SA satisfies it / the
      EC's records, exact (Fractions); effective iff coverage >= theta, default 1.0 [A11].
      theta is read exactly (a float through its repr: 0.9 is 9/10) and must lie in (0, 1].
- S4  The loop [A14]: take the first EC (in sort order) with an effective rule; merge it with
      the EC whose merge raises the table's NCP least; repeat until no EC has one.  The input
      order is the sort order (give the classes sorted by their generalized QIs); a merged EC
      takes the place of the earlier of the two.  Ties (within a relative 1e-9, the float
      rounding of the NCP sums) go to the nearest following EC, else the nearest preceding
      one: on Table 2, [30,40]/F costs the same with [20,30] and [40,50] and merges with
      [40,50], as the paper does.
- S5  Merged cells [A14, A16]: numeric QIs the union [min, max] of the members' (true, stored)
      bounds; categorical QIs keep a value all members share, else the LCA of their values when
      a hierarchy is given, else '*' (the paper's "Suppress Sex").  An EC never merged keeps its
      input cell (a value, its LCA, or its value set when there is no hierarchy).
- S6  NCP (for S4 and `measures`): numeric width / domain span (0 for a zero span); a
      categorical value 0, a hierarchy node |leaves(node)| / |leaves(root)| (a leaf 0, Xu et al.
      [A15]), a value set |set| / |domain|, '*' 1; weights 1.  QID-NCP% = 100 * sum over records
      of sum over QIs / (records * QIs), as `workload.ncp_percent` (W1) computes it; DM = sum
      of |EC|^2 (`joint.discernibility`); GLM = Iyengar's per-cell loss (`ir_metrics.glm`),
      averaged over records and QIs.  Domains: numeric ``lo``/``hi`` (or ``span``),
      categorical ``hierarchy``, ``values`` or ``size`` (a size-only domain is padded with
      placeholder categories for `measures`).
- S7  Refused before any merge: a rule whose coverage on the whole table is >= theta.  Every
      partition of the table then keeps an EC at >= theta (the table's coverage is the
      record-weighted mean of the ECs'), so the loop could only end as one EC with the rule
      still effective; the error names the rule and its coverage (`errors.unsatisfiable`).
- S8  Merging only unions SA multisets, so no EC loses a distinct SA value: distinct
      l-diversity (per SA) never drops [A14].  Entropy l-diversity over the whole SA tuple
      (A10) is not re-checked here: per-SA counts do not carry the tuples.
- S9  Persons (a class given with ``"persons": {sa: {frozenset of values: persons}}``, the
      value sets of its persons; every class or none).  A rule is judged over records and over
      persons, and its coverage is the larger share: records satisfying it, or persons holding
      at least one value that satisfies it.  So a class where every person holds an angina
      value reveals "heart disease" even if some of their records hold other values, and a
      class whose records mostly match stays flagged even if few persons own them.  Merged
      classes add their counters, which is exact because the caller keeps every person's
      records in one class (classes share no person); S7 reads the table's persons the same
      way.  `n` stays the class's records (merge costs and measures weigh records).
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from pganon_engine.core import errors
from pganon_engine.hierarchy.tree import Hierarchy
from pganon_engine.metrics import ir_metrics, joint, workload

__all__ = ["OPS", "Rule", "QI", "OutClass", "Result", "parse_rules", "check", "anonymize",
           "measures", "TIE_TOL"]

OPS = ("in", "between", ">", ">=", "<", "<=", "=")
TIE_TOL = 1e-9  # relative: NCP increases this close are a tie (S4)
STAR = workload.SUPPRESSED


# --------------------------------------------------------------------------------------------
# Values and rules (S1-S3)
# --------------------------------------------------------------------------------------------


def _num(x):
    """The exact number a value stands for, or None when it is not a number (S2)."""
    if x is None or isinstance(x, bool):
        return None
    if isinstance(x, numbers.Rational):
        return Fraction(int(x.numerator), int(x.denominator))
    if isinstance(x, (float, np.floating)):
        return Fraction(repr(float(x))) if math.isfinite(x) else None
    if isinstance(x, Decimal):
        return Fraction(x) if x.is_finite() else None
    if isinstance(x, str):
        try:
            return Fraction(x.strip())
        except (ValueError, ZeroDivisionError):
            return None
    return None


def _key(x):
    """(True, number) or (False, text): how a value compares (S2)."""
    n = _num(x)
    return (True, n) if n is not None else (False, str(x))


@dataclass(frozen=True)
class Rule:
    """A semantic rule: `op` on the value of SA `sa`; `value` is a tuple of values for 'in', a
    (low, high) pair for 'between', one value otherwise."""

    id: str
    sa: str
    op: str
    value: object
    category: object = None

    def matches(self, v):
        if v is None:
            return False
        k = _key(v)
        if self.op in ("in", "="):
            vals = self.value if self.op == "in" else (self.value,)
            return any(k == _key(w) for w in vals)
        if self.op == "between":
            lo, hi = _key(self.value[0]), _key(self.value[1])
            return k[0] == lo[0] and lo[1] <= k[1] <= hi[1]
        w = _key(self.value)
        if k[0] != w[0]:
            return False
        a, b = k[1], w[1]
        return {">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b}[self.op]


def parse_rules(rules):
    """Rules from plain mappings (S1) or `Rule` objects, validated."""
    out, seen = [], set()
    for pos, r in enumerate(rules):
        if isinstance(r, Rule):
            rule = r
        else:
            if not isinstance(r, Mapping):
                raise errors.invalid(f"rule {pos} is {type(r).__name__}, not a mapping",
                                     hint='write rules as {"id": ..., "sa": ..., "op": ..., ...}')
            rid, sa, op = r.get("id"), r.get("sa"), r.get("op")
            if op not in OPS:
                raise errors.invalid(f"rule {rid if rid is not None else pos}: unknown op {op!r}",
                                     hint=f"ops: {', '.join(OPS)}")
            vals = r.get("values")
            if op != "in" and vals is not None:  # the catalog's (predicate, vals text[]) shape
                if isinstance(vals, (str, bytes)) or not hasattr(vals, "__iter__"):
                    raise errors.invalid(f"rule {rid}: values must be a list, got {vals!r}")
                vals = list(vals)
                need = 2 if op == "between" else 1
                if len(vals) != need:
                    raise errors.invalid(f"rule {rid}: '{op}' needs {need} value(s), got {len(vals)}")
            if op == "between":
                if vals is not None:
                    value = (vals[0], vals[1])
                elif "low" in r and "high" in r:
                    value = (r["low"], r["high"])
                else:
                    raise errors.invalid(f"rule {rid}: 'between' needs low and high")
            elif op == "in":
                vals = r.get("values", r.get("value"))
                if isinstance(vals, (str, bytes)) or not hasattr(vals, "__iter__"):
                    raise errors.invalid(f"rule {rid}: 'in' needs a list of values, got {vals!r}")
                value = tuple(vals)
            else:
                value = vals[0] if vals is not None else r.get("value")
            rule = Rule(rid, sa, op, value, r.get("category"))
        _check_rule(rule, pos)
        if rule.id in seen:
            raise errors.invalid(f"two rules have the id {rule.id!r}", hint="give every rule its own id")
        seen.add(rule.id)
        out.append(rule)
    return out


def _check_rule(rule, pos):
    if not isinstance(rule.id, str) or not rule.id:
        raise errors.invalid(f"rule {pos} has no id (text)", hint='give it "id": "R1"')
    if not isinstance(rule.sa, str) or not rule.sa:
        raise errors.invalid(f"rule {rule.id}: no SA column", hint='name it with "sa": "<column>"')
    if rule.op not in OPS:
        raise errors.invalid(f"rule {rule.id}: unknown op {rule.op!r}", hint=f"ops: {', '.join(OPS)}")
    if rule.op == "in":
        if not rule.value or any(v is None for v in rule.value):
            raise errors.invalid(f"rule {rule.id}: 'in' needs a non-empty list of non-NULL values")
    elif rule.op == "between":
        lo, hi = rule.value
        if lo is None or hi is None:
            raise errors.invalid(f"rule {rule.id}: 'between' bounds must not be NULL")
        a, b = _key(lo), _key(hi)
        if a[0] != b[0]:
            raise errors.invalid(f"rule {rule.id}: bounds {lo!r} and {hi!r} are not both numbers or "
                                 "both text")
        if a[1] > b[1]:
            raise errors.invalid(f"rule {rule.id}: low {lo!r} is above high {hi!r}")
    elif rule.value is None:
        raise errors.invalid(f"rule {rule.id}: '{rule.op}' needs a value")


def _theta(theta):
    if isinstance(theta, bool):
        raise errors.invalid(f"theta must be a number in (0, 1], not {theta!r}")
    t = _num(theta)
    if t is None or not 0 < t <= 1:
        raise errors.invalid(f"theta must be a number in (0, 1], not {theta!r}",
                             hint="1.0 flags a class only when all its records match a rule")
    return t


# --------------------------------------------------------------------------------------------
# QI domains and classes
# --------------------------------------------------------------------------------------------


class _Pad:
    """A placeholder category: pads a size-only categorical domain for `workload` (S6)."""

    __slots__ = ()

    def __repr__(self):
        return "<pad>"


@dataclass(frozen=True)
class QI:
    """A QI's domain: numeric `lo`/`hi` (or only their span), categorical `hierarchy`, `values`
    or `size`."""

    name: str
    kind: str
    lo: object = None
    hi: object = None
    hierarchy: object = None
    values: tuple = None
    size: int = None
    span_only: bool = False

    @property
    def span(self):
        return float(self.hi) - float(self.lo)


def _qis(qis):
    out = []
    for pos, q in enumerate(qis):
        if isinstance(q, QI):
            out.append(q)
            continue
        if not isinstance(q, Mapping):
            raise errors.invalid(f"QI {pos} is {type(q).__name__}, not a mapping")
        name, kind = q.get("name"), q.get("kind")
        if not isinstance(name, str) or not name:
            raise errors.invalid(f"QI {pos} has no name")
        if kind == "numeric":
            span_only = "span" in q and "lo" not in q and "hi" not in q
            lo, hi = (0, q["span"]) if span_only else (q.get("lo"), q.get("hi"))
            if _num(lo) is None or _num(hi) is None or _num(lo) > _num(hi):
                raise errors.invalid(f"numeric QI {name!r} needs a domain lo <= hi (or a span >= 0), "
                                     f"got [{lo!r}, {hi!r}]")
            out.append(QI(name, "numeric", lo=lo, hi=hi, span_only=span_only))
        elif kind == "categorical":
            h, vals, size = q.get("hierarchy"), q.get("values"), q.get("size")
            if h is not None:
                if not isinstance(h, Hierarchy):
                    raise errors.invalid(f"categorical QI {name!r}: hierarchy must be a Hierarchy")
                out.append(QI(name, "categorical", hierarchy=h))
            elif vals is not None:
                vals = tuple(dict.fromkeys(vals))
                if not vals:
                    raise errors.invalid(f"categorical QI {name!r}: empty domain")
                out.append(QI(name, "categorical", values=vals, size=len(vals)))
            elif size is not None:
                if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                    raise errors.invalid(f"categorical QI {name!r}: size must be an integer >= 1")
                out.append(QI(name, "categorical", size=size))
            else:
                raise errors.invalid(f"categorical QI {name!r} needs a hierarchy, its values or its "
                                     "domain size")
        else:
            raise errors.invalid(f"QI {name!r}: kind must be 'numeric' or 'categorical', not {kind!r}")
    names = [q.name for q in out]
    if len(set(names)) != len(names):
        raise errors.invalid(f"duplicate QI names: {names}")
    return out


class _Class:
    """A parsed input class: n, per QI the raw cell (numeric (lo, hi) or frozenset of values),
    per SA a Counter."""

    __slots__ = ("n", "cells", "sa", "persons")


def _parse_classes(classes, qis):
    """Parsed classes and the SA names; with qis None the QI cells are not read."""
    out, sa_names = [], None
    for pos, c in enumerate(classes):
        persons = None
        if isinstance(c, Mapping):
            n, cells, sa, persons = c.get("n"), c.get("qi"), c.get("sa"), c.get("persons")
        else:
            try:
                n, cells, sa = c
            except (TypeError, ValueError):
                raise errors.invalid(f"class {pos} must be a mapping {{n, qi, sa}} or (n, qi, sa)") from None
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise errors.bad_data(f"class {pos} has {n!r} records; a class has an integer n >= 1")
        cells = list(cells) if qis is not None else []
        if qis is not None and len(cells) != len(qis):
            raise errors.invalid(f"class {pos} has {len(cells)} QI cells for {len(qis)} QIs")
        parsed = []
        for q, cell in zip(qis or (), cells):
            if q.kind == "numeric":
                if isinstance(cell, (tuple, list)) and len(cell) == 2:
                    lo, hi = cell
                else:
                    lo = hi = cell
                a, b = _num(lo), _num(hi)
                if a is None or b is None or a > b:
                    raise errors.bad_data(f"class {pos}: cell {cell!r} of numeric QI {q.name!r} is not "
                                          "a number or (min, max) with min <= max")
                if not q.span_only and (a < _num(q.lo) or b > _num(q.hi)):
                    raise errors.bad_data(f"class {pos}: cell [{lo}, {hi}] of {q.name!r} lies outside "
                                          f"its domain [{q.lo}, {q.hi}]", hint="widen the QI's domain")
                if q.span_only and b - a > _num(q.hi):
                    raise errors.bad_data(f"class {pos}: cell [{lo}, {hi}] of {q.name!r} is wider than "
                                          f"its domain's span {q.hi}", hint="give the QI's true span")
                parsed.append((lo, hi))
            else:
                many = isinstance(cell, (set, frozenset, list, tuple))
                vals = frozenset(cell) if many else frozenset((cell,))
                if not vals or None in vals:
                    raise errors.bad_data(f"class {pos}: categorical QI {q.name!r} needs non-NULL values")
                if q.hierarchy is not None:
                    q.hierarchy.leaf_ids(list(vals))  # refuses values that are not leaves
                elif q.values is not None:
                    bad = [v for v in vals if v not in set(q.values)]
                    if bad:
                        raise errors.bad_data(f"class {pos}: {bad[0]!r} is not in the domain of {q.name!r}",
                                              hint="list every value in the QI's values")
                parsed.append(vals)
        if not isinstance(sa, Mapping) or not sa:
            raise errors.invalid(f"class {pos} has no SA value counts",
                                 hint='give "sa": {column: {value: count}}')
        counts = {}
        for name, hist in sa.items():
            hist = Counter({v: int(k) for v, k in dict(hist).items() if k})
            if any(k < 0 for k in hist.values()) or sum(hist.values()) != n:
                raise errors.bad_data(f"class {pos}: the counts of SA {name!r} add up to "
                                      f"{sum(hist.values())}, not to the class's {n} records",
                                      hint="count every record once per SA (NULL as None)")
            counts[name] = hist
        if sa_names is None:
            sa_names = set(counts)
        elif set(counts) != sa_names:
            raise errors.invalid(f"class {pos} has SAs {sorted(counts)}, class 0 has {sorted(sa_names)}")
        k = _Class()
        k.n, k.cells, k.sa, k.persons = int(n), parsed, counts, _person_sets(persons, counts, n, pos)
        if out and (k.persons is None) != (out[0].persons is None):
            raise errors.invalid(f"class {pos} {'lacks' if k.persons is None else 'has'} the persons' value sets, "
                                 f"class 0 {'has them' if k.persons is None else 'does not'}",
                                 hint="give persons for every class or for none (S9)")
        out.append(k)
    return out, sa_names or set()


def _person_sets(persons, counts, n, pos):
    """S9: {sa: Counter(frozenset of values -> persons)} of one class, checked, or None."""
    if persons is None:
        return None
    if not isinstance(persons, Mapping) or set(persons) != set(counts):
        raise errors.invalid(f"class {pos}: persons must map each SA {sorted(map(str, counts))} to "
                             "{value set: persons}")
    out, total = {}, None
    for name, sets in persons.items():
        got = Counter()
        for vals, c in dict(sets).items():
            vs = frozenset(vals) if isinstance(vals, (set, frozenset, list, tuple)) else frozenset((vals,))
            if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1 or not vs:
                raise errors.bad_data(f"class {pos}: SA {name!r} has {c!r} persons for value set {vals!r}",
                                      hint="count every person once per SA, with the non-empty set of her values")
            if not vs <= set(counts[name]):
                raise errors.bad_data(f"class {pos}: a person of SA {name!r} holds values the class's counts lack")
            got[vs] += int(c)
        m = sum(got.values())
        if total is not None and m != total or m > n:
            raise errors.bad_data(f"class {pos}: its SAs count different persons ({total} and {m}) or more than "
                                  f"its {n} records", hint="count every person of the class once per SA")
        total = m
        out[name] = got
    return out


# --------------------------------------------------------------------------------------------
# The semantic check (S3)
# --------------------------------------------------------------------------------------------


class _Matcher:
    """Rule -> value -> satisfied?, cached per distinct value."""

    def __init__(self, rules):
        self.rules = rules
        self.cache = [dict() for _ in rules]

    def _ok(self, k, v):
        cache = self.cache[k]
        try:
            ok = cache.get(v)
        except TypeError:
            ok = None
        if ok is None:
            ok = self.rules[k].matches(v)
            try:
                cache[v] = ok
            except TypeError:
                pass
        return ok

    def matched(self, sa, k):
        """Records of the SA counters `sa` satisfying rule k."""
        return sum(c for v, c in sa[self.rules[k].sa].items() if self._ok(k, v))

    def matched_persons(self, persons, k):
        """Persons of the value-set counters `persons` holding a value that satisfies rule k (S9)."""
        return sum(c for vals, c in persons[self.rules[k].sa].items() if any(self._ok(k, v) for v in vals))

    def effective(self, sa, n, theta, persons=None):
        """[(rule index, coverage Fraction)] of the rules effective on a class: over its n
        records, and over its persons when their value sets are given (S9: the larger share)."""
        out = []
        n_p = None if persons is None else sum(next(iter(persons.values())).values())
        for k in range(len(self.rules)):
            cov = Fraction(self.matched(sa, k), n)
            if persons is not None:
                cov = max(cov, Fraction(self.matched_persons(persons, k), n_p))
            if cov >= theta:
                out.append((k, cov))
        return out


def _known_sas(rules, sa_names, cls):
    if cls:
        for r in rules:
            if r.sa not in sa_names:
                raise errors.invalid(f"rule {r.id} reads SA {r.sa!r}, which the classes do not have",
                                     hint=f"SAs: {', '.join(sorted(map(str, sa_names)))}")
    return rules


def _setup(classes, qis, rules):
    qis = _qis(qis)
    cls, sa_names = _parse_classes(classes, qis)
    return qis, cls, _known_sas(parse_rules(rules), sa_names, cls)


def _flag_entry(i, eff, rules):
    return {"ec": i, "rules": [rules[k].id for k, _ in eff],
            "coverage": {rules[k].id: float(c) for k, c in eff},
            "categories": list(dict.fromkeys(rules[k].category for k, _ in eff
                                             if rules[k].category is not None))}


def check(classes, rules, *, theta=1.0):
    """The semantic check of every class (Table 3): one entry per class with an effective rule,
    {"ec": class index, "rules": [ids], "coverage": {id: share}, "categories": [...]}.  Only
    the classes' n and SA counts are read."""
    theta = _theta(theta)
    cls, sa_names = _parse_classes(classes, None)
    rules = _known_sas(parse_rules(rules), sa_names, cls)
    m = _Matcher(rules)
    return [_flag_entry(i, eff, rules) for i, c in enumerate(cls)
            if (eff := m.effective(c.sa, c.n, theta, c.persons))]


# --------------------------------------------------------------------------------------------
# The merge loop (S4, S5, S7)
# --------------------------------------------------------------------------------------------


@dataclass
class OutClass:
    """An output class: the input classes it is made of, its records, its QI cells (S5) and
    its SA value counts."""

    members: tuple
    n: int
    cells: tuple
    sa: dict
    persons: dict = None


@dataclass
class Result:
    """classes: the output classes in sort order; class_of[i]: the output class of input class
    i; flagged: the semantic check of the input (Table 3); log: one entry per merge."""

    classes: list
    class_of: list
    flagged: list
    log: list


class _State:
    """The live classes in sort order, with numpy columns for the vectorized merge costs."""

    def __init__(self, qis, cls):
        self.qis = qis
        self.members = [(i,) for i in range(len(cls))]
        self.n = np.array([c.n for c in cls], dtype=np.float64)
        self.sa = [c.sa for c in cls]
        self.persons = [c.persons for c in cls]
        self.merged = [False] * len(cls)
        self.cols = []  # per QI: (kind, data)
        pen = np.zeros(len(cls))
        self.node_pen = {}
        for j, q in enumerate(qis):
            cells = [c.cells[j] for c in cls]
            if q.kind == "numeric":
                lo = np.array([float(c[0]) for c in cells])
                hi = np.array([float(c[1]) for c in cells])
                span = q.span
                self.cols.append(["num", lo, hi, [c[0] for c in cells], [c[1] for c in cells], span])
                pen += (hi - lo) / span if span > 0 else 0.0
            elif q.hierarchy is not None:
                h = q.hierarchy
                nodes = np.array([self._lca(h, h.leaf_ids(list(c))) for c in cells], dtype=np.int64)
                npen = np.where(h.is_leaf, 0.0, h.leaf_count / float(h.leaf_count[0]))
                self.cols.append(["tree", nodes, h, npen])
                pen += npen[nodes]
            else:
                # a value code, or -1 for several values; the value set as given (S5)
                index = {}
                code = np.array([index.setdefault(next(iter(c)), len(index)) if len(c) == 1 else -1
                                 for c in cells], dtype=np.int64)
                own = np.array([0.0 if len(c) == 1 else len(c) / q.size if q.size else 1.0
                                for c in cells])
                self.cols.append(["flat", code, list(cells), index, own])
                pen += own
        self.pen = pen  # sum over QIs of each class's NCP

    @staticmethod
    def _lca(h, ids):
        node = int(ids[0])
        for x in ids[1:]:
            node = h.lca(node, int(x))
        return node

    def merge_costs(self, i):
        """Increase of the table's NCP (sum over records and QIs) when class i merges with each
        class, and the merged classes' NCP sums."""
        merged = np.zeros(len(self.n))
        for col in self.cols:
            if col[0] == "num":
                _, lo, hi, _, _, span = col
                if span > 0:
                    merged += (np.maximum(hi, hi[i]) - np.minimum(lo, lo[i])) / span
            elif col[0] == "tree":
                _, nodes, h, npen = col
                merged += npen[h.lca_many(int(nodes[i]), nodes)]
            else:
                code = col[1]
                merged += np.where((code >= 0) & (code == code[i]), 0.0, 1.0)
        inc = (self.n + self.n[i]) * merged - self.n * self.pen - self.n[i] * self.pen[i]
        return inc, merged

    def partner(self, i):
        inc, merged = self.merge_costs(i)
        inc[i] = np.inf
        best = inc.min()
        tied = np.flatnonzero(inc <= best + TIE_TOL * max(1.0, abs(best)))
        after = tied[tied > i]
        c = int(after[0]) if after.size else int(tied[tied < i][-1])
        return c, float(inc[c]), float(merged[c])

    def cell(self, k, j):
        """The published cell of live class k for QI j (S5)."""
        col = self.cols[j]
        if col[0] == "num":
            return (col[3][k], col[4][k])
        if col[0] == "tree":
            return col[2].labels[int(col[1][k])]
        code, cells = col[1], col[2]
        if code[k] >= 0:
            return next(iter(cells[k]))
        return STAR if self.merged[k] else cells[k]

    def merge(self, i, c, merged_pen):
        """Merge classes i and c into the earlier position; returns it."""
        a, b = min(i, c), max(i, c)
        self.members[a] = tuple(sorted(self.members[a] + self.members[b]))
        self.sa[a] = {s: self.sa[a][s] + self.sa[b][s] for s in self.sa[a]}
        if self.persons[a] is not None:  # S9: classes share no person
            self.persons[a] = {s: self.persons[a][s] + self.persons[b][s] for s in self.persons[a]}
        self.merged[a] = True
        for col in self.cols:
            if col[0] == "num":
                _, lo, hi, lox, hix, _ = col
                lo[a], hi[a] = min(lo[a], lo[b]), max(hi[a], hi[b])
                lox[a] = lox[a] if _num(lox[a]) <= _num(lox[b]) else lox[b]
                hix[a] = hix[a] if _num(hix[a]) >= _num(hix[b]) else hix[b]
                del lox[b], hix[b]
                col[1], col[2] = np.delete(lo, b), np.delete(hi, b)
            elif col[0] == "tree":
                nodes, h = col[1], col[2]
                nodes[a] = h.lca(int(nodes[a]), int(nodes[b]))
                col[1] = np.delete(nodes, b)
            else:
                code, cells = col[1], col[2]
                if not (code[a] >= 0 and code[a] == code[b]):
                    code[a] = -1
                cells[a] = cells[a] | cells[b]
                del cells[b]
                col[1] = np.delete(code, b)
        self.n[a] += self.n[b]
        self.pen[a] = merged_pen
        self.n, self.pen = np.delete(self.n, b), np.delete(self.pen, b)
        del self.members[b], self.sa[b], self.merged[b], self.persons[b]
        return a


def _show(cell):
    if isinstance(cell, tuple):
        return f"[{cell[0]}, {cell[1]}]"
    if isinstance(cell, frozenset):
        return "{" + ", ".join(sorted(map(str, cell))) + "}"
    return str(cell)


def anonymize(classes, qis, rules, *, theta=1.0):
    """Merge ECs until no EC has an effective rule (S4).

    classes  per input EC, in sort order: {"n": records, "qi": [cell per QI], "sa": {sa:
             {value: count}}} (or an (n, qi, sa) tuple); a numeric cell is (min, max) or a
             number, a categorical cell a value or a set of values
    qis      per QI its domain: {"name", "kind": "numeric", "lo", "hi"} (or "span"), or
             {"name", "kind": "categorical", "hierarchy" | "values" | "size"}
    rules    plain-data rules (S1)
    Returns a `Result`; raises `errors.unsatisfiable` when a rule covers the whole table (S7)."""
    theta = _theta(theta)
    qis, cls, rules = _setup(classes, qis, rules)
    m = _Matcher(rules)
    flags = [m.effective(c.sa, c.n, theta, c.persons) for c in cls]
    flagged = [_flag_entry(i, eff, rules) for i, eff in enumerate(flags) if eff]
    if cls:
        table = {s: sum((c.sa[s] for c in cls), Counter()) for s in cls[0].sa}
        tp = None if cls[0].persons is None else {s: sum((c.persons[s] for c in cls), Counter()) for s in table}
        cover = dict(m.effective(table, sum(c.n for c in cls), 0, tp))  # every rule's coverage of the table
        doomed = [(r, cover[k]) for k, r in enumerate(rules) if cover[k] >= theta]
        if doomed:
            r, cov = doomed[0]
            also = f" (so do {', '.join(x.id for x, _ in doomed[1:])})" if len(doomed) > 1 else ""
            top = max(c for _, c in doomed)
            raise errors.unsatisfiable(
                f"rule {r.id} covers {float(cov):.4g} of the whole table{also}, theta is "
                f"{float(theta):.4g}: some class keeps it effective however the classes are merged",
                hint=f"narrow or drop {', '.join(x.id for x, _ in doomed)}, or raise theta above "
                     f"{float(top):.4g}")
    st = _State(qis, cls)
    log = []
    while True:
        i = next((k for k, f in enumerate(flags) if f), None)
        if i is None:
            break
        if len(flags) == 1:  # cannot happen after S7; kept as a guard
            raise errors.unsatisfiable("the whole table is one class and a rule is still effective")
        c, inc, merged_pen = st.partner(i)
        before = [st.cell(i, j) for j in range(len(qis))]
        ec, other = st.members[i], st.members[c]
        a = st.merge(i, c, merged_pen)
        after = [st.cell(a, j) for j in range(len(qis))]
        eff = flags[i]
        entry = _flag_entry(i, eff, rules)
        entry.update({"step": len(log) + 1, "ec": ec, "action": "merge", "with": other,
                      "result": st.members[a], "ncp_increase": inc,
                      "changes": {q.name: f"{_show(x)} -> {_show(y)}"
                                  for q, x, y in zip(qis, before, after) if x != y}})
        log.append(entry)
        del flags[max(i, c)]
        flags[a] = m.effective(st.sa[a], int(st.n[a]), theta, st.persons[a])
    out = [OutClass(st.members[k], int(st.n[k]), tuple(st.cell(k, j) for j in range(len(qis))),
                    st.sa[k], st.persons[k]) for k in range(len(st.members))]
    class_of = [0] * len(cls)
    for k, oc in enumerate(out):
        for i in oc.members:
            class_of[i] = k
    return Result(out, class_of, flagged, log)


# --------------------------------------------------------------------------------------------
# Measures (S6)
# --------------------------------------------------------------------------------------------


def _workload_domains(qis, cells):
    doms = []
    for j, q in enumerate(qis):
        if q.kind == "numeric":
            doms.append(workload.Domain.numeric(q.name, lo=float(q.lo), hi=float(q.hi), integer=False))
        elif q.hierarchy is not None:
            h = q.hierarchy
            doms.append(workload.Domain.categorical(q.name, [h.labels[v] for v in h.leaves]))
        elif q.values is not None:
            doms.append(workload.Domain.categorical(q.name, q.values))
        else:
            seen = list(dict.fromkeys(v for c in cells for v in _values(c[j])))
            if len(seen) > q.size:
                raise errors.bad_data(f"categorical QI {q.name!r} shows {len(seen)} values, more than its "
                                      f"domain size {q.size}", hint="give the QI's true domain size")
            pad = [_Pad() for _ in range(q.size - len(seen))]
            doms.append(workload.Domain.categorical(q.name, seen + pad))
    return doms


def _values(cell):
    if isinstance(cell, frozenset):
        return cell
    if isinstance(cell, str) and cell == STAR:
        return ()
    return (cell,)


def _workload_cell(q, cell):
    """A published cell as `workload`/`ir_metrics` read it: a hierarchy node is its leaf set."""
    if q.kind == "categorical" and q.hierarchy is not None and not (isinstance(cell, str) and cell == STAR):
        h = q.hierarchy
        v = h.index[cell]
        if not h.is_leaf[v]:
            return frozenset(h.labels[x] for x in h.leaves if h.anc[x, h.depth[v]] == v)
    return cell


def measures(classes, qis):
    """QID-NCP% (`workload.ncp_percent`), DM (`joint.discernibility`) and GLM (mean over records
    and QIs of `ir_metrics.glm`) of input classes or of `Result.classes` (S6)."""
    qis = _qis(qis)
    if classes and isinstance(classes[0], OutClass):
        rows = [(c.n, c.cells) for c in classes]
    else:
        parsed, _ = _parse_classes(classes, qis)
        rows = []
        for c in parsed:
            cells = []
            for q, x in zip(qis, c.cells):
                if q.kind == "numeric":
                    cells.append(x)
                elif q.hierarchy is not None:
                    h = q.hierarchy
                    cells.append(h.labels[_State._lca(h, h.leaf_ids(list(x)))])
                else:
                    cells.append(next(iter(x)) if len(x) == 1 else x)
            rows.append((c.n, tuple(cells)))
    if not rows:
        return {"ncp_percent": 0.0, "dm": 0.0, "glm": 0.0}
    doms = _workload_domains(qis, [cells for _, cells in rows])
    cells = [tuple(_workload_cell(q, x) for q, x in zip(qis, cs)) for _, cs in rows]
    counts = [n for n, _ in rows]
    N = sum(counts)
    ncp = workload.ncp_percent(cells, counts, doms)
    glm = sum(n * sum(float(ir_metrics.glm(x, d)) for x, d in zip(cs, doms)) for n, cs in zip(counts, cells))
    return {"ncp_percent": ncp, "dm": joint.discernibility(counts, 0, N), "glm": glm / (N * len(qis))}
