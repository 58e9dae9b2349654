"""The input of the semantic engine, validated: per QI its domain (`QI`: numeric lo/hi or span,
categorical hierarchy, values or size; S6 in `semantic`) and per equivalence class its record
count, its QI cells, its SA value counts and, when persons are given, the value sets of its
persons (S9).

Why apart: `semantic.check`, `semantic.anonymize` and `semantic.measures` read the same classes
(the GROUP BY over an l-diverse release) and refuse the same malformed input, so the parsing
and its errors live here once, apart from the rules and the merge loop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pganon_engine.core import errors
from pganon_engine.hierarchy.tree import Hierarchy

from .rules import num

__all__ = ["QI"]


# --------------------------------------------------------------------------------------------
# QI domains and classes
# --------------------------------------------------------------------------------------------


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


def parse_qis(qis):
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
            if num(lo) is None or num(hi) is None or num(lo) > num(hi):
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


def parse_classes(classes, qis):
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
                a, b = num(lo), num(hi)
                if a is None or b is None or a > b:
                    raise errors.bad_data(f"class {pos}: cell {cell!r} of numeric QI {q.name!r} is not "
                                          "a number or (min, max) with min <= max")
                if not q.span_only and (a < num(q.lo) or b > num(q.hi)):
                    raise errors.bad_data(f"class {pos}: cell [{lo}, {hi}] of {q.name!r} lies outside "
                                          f"its domain [{q.lo}, {q.hi}]", hint="widen the QI's domain")
                if q.span_only and b - a > num(q.hi):
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
