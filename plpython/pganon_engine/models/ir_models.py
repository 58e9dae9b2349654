"""Identity-reserved privacy models on one equivalence class (spec 002 §2.3-2.9, §3.3-3.4).

When one person owns several records, a published table keeps them linked through a pseudonym
(Id_num).  Counting over records (IR (k,l), IR (alpha,beta)) then overstates protection: an
attacker knows exactly one record per person "is" that person's record.  The enhanced models
(EIR l-diversity, EIR (alpha,beta)) apply the condition to every *reasoning set* (one record
per person).  Both have exact, cheap characterizations (spec §2.9, both theorems are iff):

- EIR l  <=>  the minimum hitting set of {S(p)} has >= l values;
- EIR (alpha,beta)  <=>  max |R(p)| / |Q| <= alpha  and  max_s |P(s)| / n_Q <= beta.

So no reasoning set is ever enumerated, except by the brute-force helpers kept here for tests.

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
- I4  Minimum hitting set (spec §7): ξ is forced and the sets meeting ξ are dropped; a greedy
      hitting set (most frequent value, ties canonical) is the upper bound; the rest is
      searched exactly by bounded branching on the smallest unhit set (elements by falling
      frequency, then canonical order), an element that failed is excluded from the later
      branches, and a branch is cut when a greedy packing of pairwise disjoint unhit sets
      already needs more values than the budget.  The decision "min-HS >= l" takes |ξ| >= l
      and a greedy set below l as answers, and otherwise searches only for a hitting set of
      size <= l - 1, so its cost is bounded by max|S(p)|^(l-1) whatever the class size.
- I5  Canonical order of values: Python order when the values are mutually comparable, else
      (type name, repr).  It breaks every tie of BHS (paper's x1 pick), greedy and search.
- I6  `bhs` is the paper's Algorithm 3 read literally (spec §3.3), common-literal shortcut
      included: it returns a family that always holds a minimum hitting set but, as the spec
      shows, not always every minimal one.  `minimal_hitting_sets` (Berge) is the exact family.
      Neither is used by the decision functions.
- I7  Incremental states (Algs. 5, 6 and the kl/ab analogues) take one person's values per
      `add`.  The EIR l state keeps a witness hitting set of size < l: a new person it already
      hits changes nothing, otherwise witness + one of the new values is tried, and only when
      that reaches l is the bounded search run; once the class holds it holds for good
      (monotone).  `hitting_sets()` gives Alg. 5's family on demand (Berge).
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
from pganon_engine.core.interrupts import interrupt_point, ticking  # noqa: F401 (ticking: callers use ir_models.ticking)

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
    "min_hitting_set",
    "min_hs_size",
    "min_hs_at_least",
    "minimal_hitting_sets",
    "bhs",
    "reasoning_space",
    "brute_min_distinct",
    "brute_max_share",
    "make_state",
    "KlState",
    "AbState",
    "ElState",
    "Vulnerability",
    "vulnerability",
    "IrCheck",
    "check",
    "classes_from_records",
    "classes_from_persons",
    "ticking",
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


def _le(a, b, x):
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
# Canonical order (I5)
# --------------------------------------------------------------------------------------------


def _canonical(values):
    vals = list(values)
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=lambda v: (type(v).__name__, repr(v)))


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
        return _le(s.max_records, s.n_records, alpha) and _le(s.max_value_persons, s.n_persons, beta)
    return _le(s.max_records, s.n_records, alpha) and _le(s.max_value_records, s.n_records, beta)


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
# Minimum hitting set (I4)
# --------------------------------------------------------------------------------------------


def _family(sets):
    out = []
    for s in sets:
        if isinstance(s, (str, bytes)):
            raise invalid(f"a set of the family is the string {s!r}; give sets of values")
        fs = frozenset(s)
        if not fs:
            raise invalid("the family holds an empty set, which no set can hit",
                          hint="every person has at least one value")
        out.append(fs)
    return out


def _split(sets):
    """(ξ, the sets not meeting ξ) (Alg. 2, lines 2-8 and 20-24)."""
    forced = frozenset().union(*[s for s in sets if len(s) == 1]) if sets else frozenset()
    return forced, [s for s in sets if not s & forced]


class _Bits:
    """Values <-> bits in canonical order."""

    def __init__(self, sets):
        self.values = _canonical(frozenset().union(*sets)) if sets else []
        self.bit = {v: 1 << i for i, v in enumerate(self.values)}

    def masks(self, sets):
        bit = self.bit
        out = set()
        for s in sets:
            m = 0
            for v in s:
                m |= bit[v]
            out.add(m)
        return sorted(out)

    def decode(self, mask):
        return frozenset(v for i, v in enumerate(self.values) if mask >> i & 1)


def _bits_of(mask):
    while mask:
        low = mask & -mask
        yield low
        mask ^= low


def _packing(masks, budget):
    """Greedy count of pairwise disjoint sets, stopping once it exceeds budget."""
    used = cnt = 0
    for m in sorted(masks, key=int.bit_count):
        if not m & used:
            used |= m
            cnt += 1
            if cnt > budget:
                break
    return cnt


def _search(masks, budget):
    """A hitting set (mask) of the masks with <= budget bits, or None (I4)."""
    interrupt_point()   # a big class's exact min-HS is exponential in the worst case
    if not masks:
        return 0
    if budget <= 0 or _packing(masks, budget) > budget:
        return None
    small = min(masks, key=int.bit_count)
    elems = sorted(_bits_of(small), key=lambda e: (-sum(1 for m in masks if m & e), e.bit_length()))
    for e in elems:
        rest = [m for m in masks if not m & e]
        h = _search(rest, budget - 1)
        if h is not None:
            return h | e
        masks = [m & ~e for m in masks]
        if not all(masks):
            return None
    return None


def _greedy(masks):
    """A hitting set by most frequent value (ties lowest bit)."""
    h = 0
    left = list(masks)
    while left:
        cnt = Counter()
        for m in left:
            for e in _bits_of(m):
                cnt[e] += 1
        best = max(cnt.items(), key=lambda kv: (kv[1], -kv[0].bit_length()))[0]
        h |= best
        left = [m for m in left if not m & best]
    return h


def min_hitting_set(sets):
    """One minimum hitting set of the family (a frozenset), exact (I4); the empty family gives
    the empty set (BHS(∅) = {∅})."""
    sets = _family(sets)
    forced, rest = _split(sets)
    if not rest:
        return forced
    bits = _Bits(rest)
    masks = bits.masks(rest)
    ub = _greedy(masks)
    lb = _packing(masks, len(masks))
    for b in range(lb, ub.bit_count()):
        h = _search(masks, b)
        if h is not None:
            return forced | bits.decode(h)
    return forced | bits.decode(ub)


def min_hs_size(sets, cap=None):
    """|minimum hitting set|, exact; with cap: exact when < cap, else cap (searches never look
    for more than cap - 1 values, so the cost stays bounded)."""
    sets = _family(sets)
    forced, rest = _split(sets)
    f = len(forced)
    if cap is not None and f >= cap:
        return cap
    if not rest:
        return f
    bits = _Bits(rest)
    masks = bits.masks(rest)
    lb = _packing(masks, len(masks))
    top = _greedy(masks).bit_count()
    if cap is not None:
        top = min(top, cap - f)
    for b in range(lb, top):
        if _search(masks, b) is not None:
            return f + b
    return f + top


def _below(sets, l):
    """A hitting set with < l values, or None (the search of `min_hs_at_least`)."""
    forced, rest = _split(sets)
    if len(forced) >= l:
        return None
    if not rest:
        return forced
    bits = _Bits(rest)
    masks = bits.masks(rest)
    budget = l - 1 - len(forced)
    h = _greedy(masks)  # upper bound first: below l settles it without a search
    if h.bit_count() > budget:
        h = _search(masks, budget)
    return None if h is None else forced | bits.decode(h)


def min_hs_at_least(sets, l):
    """min-HS(sets) >= l: Theorem 3.1 as the exact EIR l test (cheap bounds first: |ξ| >= l,
    then a bounded search for a hitting set of size <= l - 1)."""
    return _below(_family(sets), l) is None


def minimal_hitting_sets(sets):
    """Every minimal hitting set (Berge's algorithm; Alg. 5's family ℋ), sorted by size then
    canonical order.  Exponential in general: for tests and explanations."""
    sets = _family(sets)
    fam = [frozenset()]
    for s in sets:
        new = []
        for h in fam:
            if h & s:
                new.append(h)
            else:
                new.extend(h | {v} for v in s)
        fam = _minimal(new)
    return _sorted_family(fam)


def _minimal(fam):
    out = []
    for h in sorted(set(fam), key=len):
        if not any(k <= h for k in out):
            out.append(h)
    return out


def _sorted_family(fam):
    vals = _canonical(frozenset().union(*fam)) if fam else []
    rank = {v: i for i, v in enumerate(vals)}
    return sorted(fam, key=lambda h: (len(h), sorted(rank[v] for v in h)))


def bhs(sets):
    """The paper's Algorithm 3 (BHS), literally (I6): a family of hitting sets that contains a
    minimum one; each set a frozenset."""
    sets = _family(sets)
    rank = {v: i for i, v in enumerate(_canonical(frozenset().union(*sets)))} if sets else {}
    return _sorted_family(_bhs(sets, rank))


def _bhs(terms, rank):
    if not terms:
        return [frozenset()]
    if len(terms) == 1:  # lines 2-3: one conjunctive term
        return [frozenset({x}) for x in terms[0]]
    terms = _minimal(terms)  # line 5: absorption A + AB = A
    common = frozenset.intersection(*terms)
    if common:  # lines 6-7: one literal in every term
        return [frozenset({min(common, key=rank.__getitem__)})]
    singles = frozenset(x for t in terms if len(t) == 1 for x in t)
    if singles:  # line 9: single-literal terms are in every hitting set
        rest = [t for t in terms if not t & singles]
        return _minimal([singles | h for h in _bhs(rest, rank)])
    freq = Counter(x for t in terms for x in t)  # line 14: split on the most frequent literal
    x = min(freq, key=lambda v: (-freq[v], rank[v]))
    with_x = [frozenset({x}) | h for h in _bhs([t for t in terms if x not in t], rank)]
    without = _bhs([t - {x} for t in terms], rank)
    return _minimal(with_x + without)


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
# Incremental decision states (I7)
# --------------------------------------------------------------------------------------------


class _State:
    """One growing class.  add(values) feeds one person (the SA values of its records) and
    returns whether the class now holds; merge(other) feeds every person of another state."""

    def __init__(self):
        self.n_persons = 0
        self.n_records = 0
        self.persons = []  # the value tuples fed, in order

    def _feed(self, vals):
        vals = tuple(vals)
        if not vals:
            raise bad_data("a person has no records", hint="give each person at least one SA value")
        self.n_persons += 1
        self.n_records += len(vals)
        self.persons.append(vals)
        return vals

    def merge(self, other):
        for vals in other.persons:
            self.add(vals)
        return self.holds()


class KlState(_State):
    """SatPriIRInc_kl: n_Q >= k and m_Q >= l."""

    def __init__(self, k, l):
        super().__init__()
        self.k, self.l = k, l
        self.values = set()

    def add(self, values):
        self.values.update(self._feed(values))
        return self.holds()

    def holds(self):
        return self.n_persons >= self.k and len(self.values) >= self.l

    def would_hold(self, values):
        return self.n_persons + 1 >= self.k and len(self.values | set(values)) >= self.l


class AbState(_State):
    """SatPriIRInc_ab (eir=False, beta over records) and SatPriIRInc_Eab (Alg. 6, eir=True,
    beta over persons)."""

    def __init__(self, alpha, beta, eir):
        super().__init__()
        self.alpha, self.beta, self.eir = alpha, beta, eir
        self.max_rec = 0
        self.cnt = Counter()
        self.max_cnt = 0

    def _counts(self, vals):
        return set(vals) if self.eir else vals

    def add(self, values):
        vals = self._feed(values)
        self.max_rec = max(self.max_rec, len(vals))
        cnt = self.cnt
        for s in self._counts(vals):
            cnt[s] += 1
            if cnt[s] > self.max_cnt:
                self.max_cnt = cnt[s]
        return self.holds()

    def _ok(self, n_rec, n_per, max_rec, max_cnt):
        return _le(max_rec, n_rec, self.alpha) and _le(max_cnt, n_per if self.eir else n_rec, self.beta)

    def holds(self):
        if not self.n_records:
            return True
        return self._ok(self.n_records, self.n_persons, self.max_rec, self.max_cnt)

    def would_hold(self, values):
        vals = tuple(values)
        mc = self.max_cnt
        for s, c in Counter(self._counts(vals)).items():
            mc = max(mc, self.cnt[s] + c)
        return self._ok(self.n_records + len(vals), self.n_persons + 1, max(self.max_rec, len(vals)), mc)


class ElState(_State):
    """SatPriIRInc_El: min-HS >= l, kept with a witness hitting set of size < l (I7)."""

    def __init__(self, l):
        super().__init__()
        self.l = l
        self.sets = []
        self._witness = frozenset() if l >= 1 else None

    def add(self, values):
        s = frozenset(self._feed(values))
        self.sets.append(s)
        w = self._witness
        if w is None:
            return True
        if w & s:
            return False
        if len(w) + 1 < self.l:
            self._witness = w | {_canonical(s)[0]}
            return False
        self._witness = _below(self.sets, self.l)
        return self._witness is None

    def holds(self):
        return self._witness is None

    def would_hold(self, values):
        if self._witness is None:
            return True
        s = frozenset(values)
        if self._witness & s or len(self._witness) + 1 < self.l:
            return False
        return _below(self.sets + [s], self.l) is None

    def hitting_sets(self):
        """Alg. 5's ℋ_Q: every minimal hitting set of the persons fed so far."""
        return minimal_hitting_sets(self.sets)

    def min_hs(self):
        return min_hs_size(self.sets)


def make_state(model, params):
    """A fresh incremental decision state for `model` (I7)."""
    model = _model(model)
    p = parse_params(model, params)
    if model == "kl":
        return KlState(p["k"], p["l"])
    if model == "el":
        return ElState(p["l"])
    return AbState(p["alpha"], p["beta"], eir=(model == "eab"))


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
        value = {"l": _min_over_classes([_sets(it) for _, it in items])}
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


def _min_over_classes(families):
    """min over classes of min-HS, exactly: the class with the smallest greedy bound first, then
    every other class only asked whether it goes below the running minimum."""
    if not families:
        return 0
    order = []
    for i, fam in enumerate(families):
        forced, rest = _split(fam)
        if rest:
            bits = _Bits(rest)
            ub = len(forced) + _greedy(bits.masks(rest)).bit_count()
        else:
            ub = len(forced)
        order.append((ub, i))
    order.sort()
    best = None
    for _, i in order:
        best = min_hs_size(families[i]) if best is None else min(best, min_hs_size(families[i], cap=best))
    return best
