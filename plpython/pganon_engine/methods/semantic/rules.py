"""Semantic rules (spec 003 §2.3, A11-A13): the rules a data owner states (an SA predicate and
the category it reveals), how a stored value satisfies a predicate, the threshold theta, and
the coverage of each rule on a class (`Matcher`), which says whether a rule is *effective*.

Why apart: what a rule means is independent of how classes are merged; `semantic.check` (the
semantic check, Table 3) and `semantic.anonymize` (the merge loop, Table 4) both judge classes
with it, and the QI parsing in `classes` reads numbers the same way (`num`).  Decision labels
follow `semantic` (S1-S9); S9 (persons) is applied by `Matcher.effective`.

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
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from pganon_engine.core import errors

__all__ = ["OPS", "Rule", "parse_rules"]

OPS = ("in", "between", ">", ">=", "<", "<=", "=")


# --------------------------------------------------------------------------------------------
# Values and rules (S1-S3)
# --------------------------------------------------------------------------------------------


def num(x):
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
    n = num(x)
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


def parse_theta(theta):
    if isinstance(theta, bool):
        raise errors.invalid(f"theta must be a number in (0, 1], not {theta!r}")
    t = num(theta)
    if t is None or not 0 < t <= 1:
        raise errors.invalid(f"theta must be a number in (0, 1], not {theta!r}",
                             hint="1.0 flags a class only when all its records match a rule")
    return t


# --------------------------------------------------------------------------------------------
# Coverage: which rules are effective on a class (S3, S9)
# --------------------------------------------------------------------------------------------


class Matcher:
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


def known_sas(rules, sa_names, cls):
    if cls:
        for r in rules:
            if r.sa not in sa_names:
                raise errors.invalid(f"rule {r.id} reads SA {r.sa!r}, which the classes do not have",
                                     hint=f"SAs: {', '.join(sorted(map(str, sa_names)))}")
    return rules


def flag_entry(i, eff, rules):
    return {"ec": i, "rules": [rules[k].id for k, _ in eff],
            "coverage": {rules[k].id: float(c) for k, c in eff},
            "categories": list(dict.fromkeys(rules[k].category for k, _ in eff
                                             if rules[k].category is not None))}
