"""Identity-reserved privacy models on one equivalence class (spec 002 §2.3-2.9, §3.3-3.4).

When one person owns several records, a published table keeps them linked through a pseudonym
(Id_num).  Counting over records (IR (k,l), IR (alpha,beta)) then overstates protection: an
attacker knows exactly one record per person "is" that person's record.  The enhanced models
(EIR l-diversity, EIR (alpha,beta)) apply the condition to every *reasoning set* (one record
per person).  Both have exact, cheap characterizations (spec §2.9, both theorems are iff):

- EIR l  <=>  the minimum hitting set of {S(p)} has >= l values;
- EIR (alpha,beta)  <=>  max |R(p)| / |Q| <= alpha  and  max_s |P(s)| / n_Q <= beta.

So no reasoning set is ever enumerated, except by the brute-force helpers kept here for tests.
This module reads persons and classes, parses the models' parameters and decides a class or a
release (`holds`, `check`, `vulnerability`); the hitting-set search lives in `hitting_sets` and
the per-person incremental states the planners grow classes with in `ir_states`.

Input model.  A class is a mapping person -> sequence of the SA values of that person's records
(one entry per record, so len() is |R(p)|).  Several classes: a mapping class key -> class (or a
list of classes).  SA values are compared by equality; NULL (None) and NaN are refused.

Decisions:

- I1  Model names: 'kl' = IR (k,l)-anonymity, 'ab' = IR (alpha,beta)-anonymity, 'el' = EIR
      l-diversity, 'eab' = EIR (alpha,beta)-anonymity.  Parameters: k, l integers >= 1 (for
      'kl' k defaults to l, the paper's k = l), alpha, beta numbers in (0, 1].
- I2  Ratios are compared as in `models` (M2): a / b (integers) rounded once to the nearest
      double, compared with the given number, so 3/5 <= 0.6 holds; a Fraction or Decimal
      parameter is compared exactly.
- I3  Records vs persons: IR beta counts records |R(s)| / |Q|, EIR beta counts persons
      |P(s)| / n_Q (a person whose records repeat a value counts once there), alpha always
      |R(p)| / |Q|.  S(p) is the set of a person's values; a person with |S(p)| = 1 is forced
      (its value is in every hitting set, the ξ of Alg. 2).
- I4-I6 (minimum hitting sets, canonical order, BHS) are stated in `hitting_sets`, I7
      (incremental states) in `ir_states`.
- I8  Vulnerable class (spec §2.16): meets the IR model but not its EIR counterpart with the
      same parameters ('kl'/'el': k (default l) and l; 'ab'/'eab': alpha, beta).  v is the
      vulnerable share of all classes.
- I9  Nothing is random; results do not depend on the order of persons or values.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from pganon_engine.core.errors import bad_data, invalid, unknown

from .hitting_sets import min_hs_at_least, min_over_classes

__all__ = [
    "MODELS",
    "parse_params",
    "ClassStats",
    "class_stats",
    "holds",
    "ir_kl",
    "ir_ab",
    "eir_l",
    "eir_ab",
    "reasoning_space",
    "brute_min_distinct",
    "brute_max_share",
    "Vulnerability",
    "vulnerability",
    "IrCheck",
    "check",
    "classes_from_records",
    "classes_from_persons",
]

MODELS = {"kl": ("k", "l"), "ab": ("alpha", "beta"), "el": ("l",), "eab": ("alpha", "beta")}
FAMILY = {"kl": ("kl", "el"), "el": ("kl", "el"), "ab": ("ab", "eab"), "eab": ("ab", "eab")}


# --------------------------------------------------------------------------------------------
# Parameters and input
# --------------------------------------------------------------------------------------------


def _model(model):
    if model not in MODELS:
        raise unknown(f"unknown identity-reserved model {model!r}",
                      hint="models: 'kl' (IR (k,l)), 'ab' (IR (alpha,beta)), 'el' (EIR l-diversity), "
                           "'eab' (EIR (alpha,beta))")
    return model


def _int(v, name):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            raise invalid(f"parameter {name} must be an integer, not {v!r}")
    v = int(v)
    if v < 1:
        raise invalid(f"parameter {name} = {v} is invalid; {name} must be >= 1")
    return v


def _ratio(v, name):
    if isinstance(v, Decimal):
        v = Fraction(v)
    ok = (not isinstance(v, bool) and isinstance(v, numbers.Real)
          and not (isinstance(v, float) and math.isnan(v)) and 0 < v <= 1)
    if not ok:
        raise invalid(f"parameter {name} must be a number in (0, 1], not {v!r}",
                      hint=f"e.g. {name} = 0.5")
    return v if isinstance(v, Fraction) else float(v)


def parse_params(model, params, required=True):
    """Validated parameters of `model` (I1): {'k', 'l'} | {'l'} | {'alpha', 'beta'}.  With
    required=False missing thresholds are allowed (then only achieved values are reported)."""
    model = _model(model)
    params = dict(params or {})
    names = MODELS[model]
    extra = sorted(set(params) - set(names))
    if extra:
        raise invalid(f"unknown parameter(s) {extra} for model {model!r}",
                      hint=f"parameters of {model!r}: {', '.join(names)}")
    p = {}
    for n in names:
        if n in params and params[n] is not None:
            p[n] = _int(params[n], n) if n in ("k", "l") else _ratio(params[n], n)
    if model == "kl" and "k" not in p and "l" in p:
        p["k"] = p["l"]
    missing = [n for n in names if n not in p]
    if required and missing:
        raise invalid(f"model {model!r} needs parameter(s) {missing}",
                      hint=f"e.g. {_example(model)}")
    return p


def _example(model):
    return {"kl": "{'k': 3, 'l': 3}", "el": "{'l': 3}"}.get(model, "{'alpha': 0.5, 'beta': 0.5}")


def le(a, b, x):
    """a / b <= x (I2); b > 0."""
    if isinstance(x, Fraction):
        return a * x.denominator <= x.numerator * b
    return a / b <= x


def _bad_value(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


def _person_values(person, values, where):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise bad_data(f"{where}: person {person!r} must map to the list of its records' SA values, "
                       f"not {values!r}", hint="one SA value per record, e.g. ['Flu', 'HIV']")
    vals = tuple(values)
    if not vals:
        raise bad_data(f"{where}: person {person!r} has no records",
                       hint="give each person at least one record's SA value")
    for v in vals:
        if _bad_value(v):
            raise bad_data(f"{where}: person {person!r} has a NULL sensitive value",
                           hint="remove or fill NULL SA values before checking")
    return vals


def _class(cls, where="class"):
    """[(person, values tuple)] of one class."""
    if isinstance(cls, Mapping):
        items = cls.items()
    else:
        try:
            items = list(enumerate(cls))
        except TypeError:
            raise invalid(f"{where} must map persons to their records' SA values") from None
    return [(p, _person_values(p, v, where)) for p, v in items]


def _classes(classes):
    if isinstance(classes, Mapping):
        return [(key, _class(c, f"class {key!r}")) for key, c in classes.items()]
    return [(i, _class(c, f"class {i}")) for i, c in enumerate(classes)]


def classes_from_records(rows):
    """{class key: {person: [SA values]}} from (class key, person, SA value) rows, one per
    record (a GROUP BY-free export of a release)."""
    out = {}
    for r in rows:
        try:
            key, person, value = r
        except (TypeError, ValueError):
            raise invalid(f"row {r!r} must be (class key, person, SA value)") from None
        out.setdefault(key, {}).setdefault(person, []).append(value)
    return out


def classes_from_persons(rows):
    """{class key: {person: [SA values]}} from (class key, person, SA values) rows, one per
    person and class (GROUP BY class, person with array_agg of the SA)."""
    out = {}
    for r in rows:
        try:
            key, person, values = r
        except (TypeError, ValueError):
            raise invalid(f"row {r!r} must be (class key, person, SA values)") from None
        out.setdefault(key, {}).setdefault(person, []).extend(_person_values(person, values, f"class {key!r}"))
    return out


# --------------------------------------------------------------------------------------------
# Per-class statistics and the four models
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassStats:
    """Counts of one class: |Q| records, n_Q persons, m_Q distinct values (Eqs. 1-2), the
    largest |R(p)|, the largest |R(s)| (records) and |P(s)| (persons), the forced values ξ,
    and |Q_rea| (Eq. 8)."""

    n_records: int
    n_persons: int
    m: int
    max_records: int
    max_value_records: int
    max_value_persons: int
    forced: frozenset
    space: int


def class_stats(cls):
    items = _class(cls)
    return _stats(items)


def _stats(items):
    recs, pers = Counter(), Counter()
    n_rec = max_rec = 0
    forced = set()
    space = 1
    for _, vals in items:
        n_rec += len(vals)
        max_rec = max(max_rec, len(vals))
        recs.update(vals)
        s = set(vals)
        pers.update(s)
        if len(s) == 1:
            forced |= s
        space *= len(vals)
    return ClassStats(n_records=n_rec, n_persons=len(items), m=len(recs), max_records=max_rec,
                      max_value_records=max(recs.values(), default=0),
                      max_value_persons=max(pers.values(), default=0), forced=frozenset(forced),
                      space=space)


def _sets(items):
    return [frozenset(v) for _, v in items]


def ir_kl(cls, k, l):
    """IR (k,l)-anonymity: n_Q >= k and m_Q >= l (Def. 2.3)."""
    s = class_stats(cls)
    return s.n_persons >= k and s.m >= l


def ir_ab(cls, alpha, beta):
    """IR (alpha,beta)-anonymity: max |R(p)|/|Q| <= alpha and max |R(s)|/|Q| <= beta."""
    s = class_stats(cls)
    return _ab_holds(s, alpha, beta, eir=False)


def eir_ab(cls, alpha, beta):
    """EIR (alpha,beta)-anonymity (Def. 3.4, Theorem 3.2 as iff): max |R(p)|/|Q| <= alpha and
    max |P(s)|/n_Q <= beta."""
    s = class_stats(cls)
    return _ab_holds(s, alpha, beta, eir=True)


def eir_l(cls, l):
    """EIR l-diversity (Def. 3.3, Theorem 3.1 as iff): min hitting set of {S(p)} >= l."""
    return min_hs_at_least(_sets(_class(cls)), l)


def _ab_holds(s, alpha, beta, eir):
    if not s.n_records:
        return True
    if eir:
        return le(s.max_records, s.n_records, alpha) and le(s.max_value_persons, s.n_persons, beta)
    return le(s.max_records, s.n_records, alpha) and le(s.max_value_records, s.n_records, beta)


def holds(model, params, cls):
    """Whether one class meets `model` with `params` (the dispatcher of the four models)."""
    model = _model(model)
    p = parse_params(model, params)
    return _holds_items(model, p, _class(cls))


def _holds_items(model, p, items):
    if model == "el":
        return min_hs_at_least(_sets(items), p["l"])
    s = _stats(items)
    if model == "kl":
        return s.n_persons >= p["k"] and s.m >= p["l"]
    return _ab_holds(s, p["alpha"], p["beta"], eir=(model == "eab"))


# --------------------------------------------------------------------------------------------
# Brute force over the reasoning space (tests only)
# --------------------------------------------------------------------------------------------


def reasoning_space(cls):
    """Every reasoning set (Def. 3.2): one record per person, as tuples aligned with the
    class's persons.  The class maps persons to lists of records (any values, e.g. record
    ids).  |result| = product of |R(p)| (Eq. 8).  Exponential: for tests."""
    items = _class(cls)
    return list(itertools.product(*[v for _, v in items]))


def brute_min_distinct(cls):
    """min over reasoning sets of the number of distinct values (= min-HS, spec §2.9)."""
    return min(len(set(rs)) for rs in reasoning_space(cls))


def brute_max_share(cls):
    """max over reasoning sets and values of (count of the value) / n_Q, as a Fraction."""
    n = len(_class(cls))
    return max(Fraction(max(Counter(rs).values()), n) for rs in reasoning_space(cls))


# --------------------------------------------------------------------------------------------
# Release checks and the vulnerable share (I8)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vulnerability:
    """Classes that meet the IR model but not the EIR one (spec §2.16): v = vulnerable / classes."""

    family: str
    n_classes: int
    n_vulnerable: int
    vulnerable: tuple

    @property
    def share(self):
        return Fraction(self.n_vulnerable, self.n_classes) if self.n_classes else Fraction(0)

    def as_json(self):
        return {"family": self.family, "classes": self.n_classes, "vulnerable": self.n_vulnerable,
                "v": float(self.share)}


def _family_params(model, params):
    """(IR model, EIR model, params for both) of a model's family (I8)."""
    ir, eir = FAMILY[_model(model)]
    raw = dict(params or {})
    if ir == "kl":
        p = parse_params("el", {"l": raw.get("l")})
        k = raw.get("k")
        p = {"l": p["l"], "k": p["l"] if k is None else _int(k, "k")}
        return ir, eir, p
    p = parse_params(eir, {n: raw.get(n) for n in ("alpha", "beta")})
    return ir, eir, p


def vulnerability(classes, model, params):
    """The vulnerable classes of a release (I8) for the family of `model` ('kl' or 'el': IR
    (k,l) vs EIR l; 'ab' or 'eab': IR (alpha,beta) vs EIR (alpha,beta))."""
    return _vulnerability(_classes(classes), model, params)


def _vulnerability(items, model, params):
    ir, eir, p = _family_params(model, params)
    vul = []
    for key, it in items:
        if _holds_items(ir, p, it) and not _holds_items(eir, p, it):
            vul.append(key)
    return Vulnerability(family=f"{ir}/{eir}", n_classes=len(items), n_vulnerable=len(vul),
                         vulnerable=tuple(vul))


@dataclass(frozen=True)
class IrCheck:
    """A release assessed under one model: achieved values (worst class), whether the
    thresholds hold (None without thresholds), the failing class keys, persons found in more
    than one class, and the vulnerable share of the model's family when its params are known."""

    model: str
    params: dict
    value: dict
    holds: bool | None
    n_classes: int
    failing: tuple
    split_persons: int
    vulnerability: Vulnerability | None = field(default=None)

    def as_json(self):
        j = {"model": self.model, "params": {k: float(v) if isinstance(v, Fraction) else v
                                             for k, v in self.params.items()},
             "value": self.value, "holds": self.holds, "classes": self.n_classes,
             "failing": len(self.failing), "split_persons": self.split_persons}
        if self.vulnerability is not None:
            j["vulnerable"] = self.vulnerability.as_json()
        return j


def check(model, params, classes):
    """Assess a person-aware release (classes as in the module docstring) under `model`.
    Achieved values: 'kl' {k: min n_Q, l: min m_Q}; 'el' {l: min over classes of min-HS};
    'ab' {alpha: max |R(p)|/|Q|, beta: max |R(s)|/|Q|}; 'eab' {alpha, beta: max |P(s)|/n_Q}."""
    model = _model(model)
    p = parse_params(model, params, required=False)
    items = _classes(classes)
    complete = all(n in p for n in MODELS[model])
    seen, split = set(), set()
    keyed = isinstance(classes, Mapping) and all(isinstance(c, Mapping) for c in classes.values())
    for _, it in items if keyed else ():
        for person, _ in it:
            (split if person in seen else seen).add(person)
    stats = [_stats(it) for _, it in items]
    if model == "kl":
        value = {"k": min((s.n_persons for s in stats), default=0),
                 "l": min((s.m for s in stats), default=0)}
    elif model == "el":
        value = {"l": min_over_classes([_sets(it) for _, it in items])}
    else:
        def ratio(a, b):
            return a / b if b else 0.0
        value = {"alpha": max((ratio(s.max_records, s.n_records) for s in stats), default=0.0),
                 "beta": max((ratio(s.max_value_persons, s.n_persons) if model == "eab"
                              else ratio(s.max_value_records, s.n_records) for s in stats), default=0.0)}
    failing = tuple(key for key, it in items if not _holds_items(model, p, it)) if complete else ()
    vul = None
    fam_names = ("l",) if model in ("kl", "el") else ("alpha", "beta")
    if all(n in p for n in fam_names):
        vul = _vulnerability(items, model, p)
    return IrCheck(model=model, params=p, value=value, holds=(not failing) if complete else None,
                   n_classes=len(items), failing=failing, split_persons=len(split), vulnerability=vul)
