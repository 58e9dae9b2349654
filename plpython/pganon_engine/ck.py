"""(c,k)-anonymization and the (p,k)-angelization baseline of Khan et al. (2020): planning
engine, no database access (spec 004-ck-anonymization.md, sections 1-4 and 8).

`ck_plan` gives every record a fingerprint bucket (FB, its BID in the sensitive table ST) and
a QI group (its equivalence class in GT), formed independently (one-to-many linking).
`pk_plan` gives every record a batch that is also its QI group (one-to-one).  `generalize`,
`sensitive_table`, `intersections` and `ncp` turn a plan into GT/ST cells, the linkable-pair
intersections of eq. (3) and the NCP of eq. (6).  Weights, delta, zeta and the category table
live in `pganon_engine.ck_categories` (decisions A1-A4 there) and are re-exported here.

Decisions (spec section 7 items in brackets):

- A5  c is the minimum number of distinct categories in an FB; c_f the maximum number of
      records with one delta value in an FB; k also the minimum FB size [7.5].
- A6  CreateFB follows spec 2.6 step 4 [7.6]: records in T order (input order); the first
      remaining record r fixes delta value v and takes the first min(c_f, #) records with v;
      each further category is the one holding the first remaining record of an unused
      category, and gives the same number m of its records (balanced, fewer if it has fewer);
      then records are added in T order while the FB is smaller than k (skipping values already
      at c_f).  When fewer than c*k records remain, when fewer than c categories remain, or
      when the k guard runs dry, the remaining records form the remainder.
- A7  The remainder is kept as the last FB if it has >= k records, >= c categories and no
      delta value above c_f; otherwise it is dissolved record by record with the placement of
      A9 (its records may exceed c_f only when no FB has room; reported).  With no other FB it
      stays as it is (the whole table is one FB).
- A8  eq. (4)/(5) are checked pairwise, for every pair of FBs that share a delta value, on the
      full value sets of the two FBs; an intersection of exactly one value is a violation,
      0 or >= 2 values are fine [7.8].  eq. (4) ignores delta, eq. (5) also zeta.  A pair's
      status is 2 (eq. 4 holds), 1 (only eq. 5) or 0.  No k-way hardening.
- A9  Refinement [7.7, 7.9]: the smallest violating pair (i < j) is handled first.  (a) Swap:
      for each shared delta value (first-appearance order), each record a of FB_i and b of FB_j
      with that value (T order), swap a <-> b; accept the first swap after which the pair
      reaches the target and no other pair touching FB_i or FB_j drops in status (the spec's
      "every other pair satisfies" would also reject swaps next to a pair that was already
      violating; "does not get worse" still makes every accepted swap reduce the number of
      violating pairs).  Same-delta swaps keep categories and c_f counts.  (b) Otherwise
      dissolve the smaller FB (tie: the one with the higher BID); each of its records, in T
      order, goes to the FB minimizing (c_f would be exceeded, does not hold the record's delta
      value, is not the other FB of the pair, BID).  Every step lowers (number of FBs, number of
      violating pairs), so refinement terminates; one FB has no linkable pair.
- A10 mode='strict': a first phase targets eq. (4) and dissolves only when no record has to
      exceed c_f; pairs it cannot clear fall back to eq. (5) in a second phase, which may
      exceed c_f (Rule 12: at least eq. 5).  mode='relax': the second phase only.  The plan
      reports the mode achieved ('strict' iff every final linkable pair meets eq. 4), whether
      the strict request fell back and why, and every (FB, delta value) above c_f.
- A11 BIDs and QI group ids are 1, 2, ... ; BIDs are renumbered after refinement in creation
      order of the surviving FBs (this gives Table 6's numbering).
- A12 QI grouping 'sort_cut' (Function 4, spec 2.6 step 6) [7.10]: sort by the numeric QIs,
      then the categorical ones (each in the given order), ties in T order; cut k consecutive
      records per group; when fewer than 2k remain they form the last group.  A callable can
      replace it (e.g. to inject Table 5's partition); its group ids are renumbered 1.. in order
      of first appearance and each group must have >= k records.
- A13 GT cells (spec 2.6 step 6) [7.10]: numeric QI -> (min, max) of the group; categorical
      QIs are kept, greedily in QI order, while every combination of kept values occurs >= k
      times in the group, otherwise '*'.  categorical='suppress' always gives '*' (the (p,k)
      GT's "Person").
- A14 NCP (eq. 6, spec 4.1) [7.14]: QI weights 1; numeric (hi - lo) / (max - min over T), 0
      for a zero-width domain; categorical kept -> 0, '*' -> 1, a value set -> |set| / |domain|
      (0 for a single value); NCP% = 100 * NCP / (rows * sum of weights).
- A15 (p,k) batches (spec 2.7 proposal): records sorted as in A12; a batch takes the next k
      records, then the first remaining record of a missing category until it has p
      categories; when fewer than 2k records remain they form the last batch; a last batch
      without p categories (or k records) joins the previous batch.  No c_f, no fcorr check;
      the QI group of a record is its batch (one-to-one).
- A16 Ties follow T order by default.  With ``seed`` (an int) T order is replaced by a
      permutation from ``random.Random(seed).shuffle``; that one permutation randomizes every
      T-order tie (category packing ties, CreateFB picks, swap order, QI sort ties), so the
      same seed gives the same plan.

Input size.  The category table needs only the delta value counts and the QI grouping only
the distinct QI vectors with counts, but CreateFB and refinement depend on the T order of the
records and on each FB's value sets, so this planner takes one row per record (ids, QI values,
SA values): memory grows with rows * (QIs + SAs), held as small ints per SA.
"""

from __future__ import annotations

import numbers
import operator
import random
from bisect import insort
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from heapq import heapify, heappop, heappush
from itertools import combinations

from .ck_categories import CategoryTable, Weights, category_table, weights

__all__ = [
    "weights",
    "category_table",
    "Weights",
    "CategoryTable",
    "CkPlan",
    "ck_plan",
    "PkPlan",
    "pk_plan",
    "qi_groups",
    "QI_GROUPINGS",
    "GroupSummary",
    "Generalized",
    "generalize",
    "sensitive_table",
    "Link",
    "intersections",
    "Ncp",
    "ncp",
]

MODES = ("strict", "relax")
STRICT, RELAX = 2, 1  # pair status levels (A8)


# --------------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------------


def _int(x, what, minimum):
    if isinstance(x, bool):
        raise ValueError(f"{what} must be an integer, got {x!r}")
    try:
        x = operator.index(x)
    except TypeError:
        raise ValueError(f"{what} must be an integer, got {x!r}") from None
    if x < minimum:
        raise ValueError(f"{what} = {x} is invalid; {what} must be >= {minimum}")
    return x


def _columns(qis, sas):
    for name, cols, empty_ok in (("qis", qis, True), ("sas", sas, False)):
        if cols is None or isinstance(cols, str):
            raise ValueError(f"{name} must be a list of column names, not the string {cols!r}")
        if not empty_ok and not cols:
            raise ValueError(f"{name} must name at least one column")
        dup = sorted({c for c in cols if list(cols).count(c) > 1})
        if dup:
            raise ValueError(f"column(s) {dup} listed twice in {name}; list each once")
    both = sorted(set(qis) & set(sas))
    if both:
        raise ValueError(f"column(s) {both} are both quasi-identifier and sensitive; "
                         f"declare each column in one role")
    return list(qis), list(sas)


def _records(records, qis, sas, key):
    """(ids, qi_rows, sa_rows).  A record is a mapping with the QI and SA columns (its id is
    record[key], or its position when key is None) or a triple (id, QI values, SA values)."""
    ids, qrows, srows = [], [], []
    for i, r in enumerate(records):
        if isinstance(r, Mapping):
            try:
                rid = i if key is None else r[key]
                q = tuple(r[c] for c in qis)
                s = tuple(r[c] for c in sas)
            except KeyError as e:
                raise ValueError(f"record {i} has no column {e.args[0]!r}; every record needs "
                                 f"the key, QI and SA columns") from None
        else:
            try:
                rid, q, s = r
                q, s = tuple(q), tuple(s)
            except (TypeError, ValueError):
                raise ValueError(f"record {i} must be a mapping or a triple (id, QI values, "
                                 f"SA values), got {r!r}") from None
            if len(q) != len(qis) or len(s) != len(sas):
                raise ValueError(f"record {i} has {len(q)} QI and {len(s)} SA values; expected "
                                 f"{len(qis)} and {len(sas)} (in the order of qis and sas)")
        for cols, vals in ((qis, q), (sas, s)):
            for c, v in zip(cols, vals):
                if v is None:
                    raise ValueError(f"record {rid!r} has NULL in {c!r}; remove or impute NULLs "
                                     f"before planning")
        ids.append(rid)
        qrows.append(q)
        srows.append(s)
    if not ids:
        raise ValueError("no records to plan")
    if len(set(ids)) != len(ids):
        dup = next(x for x, n in Counter(ids).items() if n > 1)
        raise ValueError(f"record id {dup!r} occurs more than once; ids must be unique")
    return ids, qrows, srows


def _t_order(n, seed):
    """T order (A16): input order, or a seeded permutation of it."""
    order = list(range(n))
    if seed is not None:
        random.Random(_int(seed, "seed", -(2 ** 63))).shuffle(order)
    return order


def _kinds(qi_rows, d, kinds):
    if kinds is None:
        return ["numeric" if all(isinstance(r[i], numbers.Real) and not isinstance(r[i], bool)
                                 for r in qi_rows) else "categorical" for i in range(d)]
    kinds = list(kinds)
    if len(kinds) != d or any(x not in ("numeric", "categorical") for x in kinds):
        raise ValueError(f"kinds must list 'numeric' or 'categorical' for each of the {d} QIs, "
                         f"got {kinds!r}")
    return kinds


def _delta_zeta(delta, zeta, sas):
    if isinstance(delta, Weights):
        if zeta is None:
            zeta = delta.zeta
        delta = delta.delta
    if delta not in sas:
        raise ValueError(f"delta {delta!r} is not one of the sensitive attributes {sas}; "
                         f"choose it with weights(...) or name an SA")
    zeta = () if zeta is None else zeta
    if isinstance(zeta, str):
        raise ValueError(f"zeta must be a list of SA names, not the string {zeta!r}")
    bad = sorted(set(zeta) - set(sas))
    if bad:
        raise ValueError(f"zeta names {bad}, which are not sensitive attributes {sas}")
    if delta in zeta:
        raise ValueError(f"zeta must not contain delta {delta!r}")
    return delta, frozenset(zeta)


def _categories(order, dvals, k):
    counts = {}
    for r in order:
        counts[dvals[r]] = counts.get(dvals[r], 0) + 1
    return category_table(list(counts.items()), k)


# --------------------------------------------------------------------------------------------
# QI grouping (Function 4), independent of the FBs
# --------------------------------------------------------------------------------------------


def _sort_key(qi_rows, kinds, order):
    cols = [i for i, x in enumerate(kinds) if x == "numeric"]
    cols += [i for i, x in enumerate(kinds) if x != "numeric"]
    pos = [0] * len(order)
    for p, r in enumerate(order):
        pos[r] = p
    try:
        return sorted(range(len(qi_rows)), key=lambda r: (tuple(qi_rows[r][i] for i in cols), pos[r]))
    except TypeError:
        raise ValueError("a QI column holds values of mixed types that cannot be ordered; "
                         "encode each QI with one type") from None


def _sort_cut(qi_rows, k, kinds, order):
    idx = _sort_key(qi_rows, kinds, order)
    n = len(idx)
    out = [0] * n
    g, start = 0, 0
    while start < n:
        g += 1
        end = n if n - start < 2 * k else start + k
        for r in idx[start:end]:
            out[r] = g
        start = end
    return out


QI_GROUPINGS = {"sort_cut": _sort_cut}


def qi_groups(qi_rows, k, method="sort_cut", kinds=None, seed=None):
    """k-anonymous QI groups, formed from the QI values alone (A12).

    qi_rows  one tuple of QI values per record
    method   a name in QI_GROUPINGS ('sort_cut', the paper's Function 4) or a callable
             ``f(qi_rows, k) -> group id per record``
    kinds    'numeric' / 'categorical' per QI (default: numeric when every value is a number)
    Returns a list with a group id (1..G) per record.  sort_cut needs only the distinct QI
    vectors with their counts; this list form is for the planner.
    """
    k = _int(k, "k", 2)
    qi_rows = [tuple(r) for r in qi_rows]
    n = len(qi_rows)
    if k > n:
        raise ValueError(f"k = {k} is larger than the number of records ({n}); lower k")
    d = len(qi_rows[0])
    if any(len(r) != d for r in qi_rows):
        raise ValueError("every QI row must have the same number of values")
    order = _t_order(n, seed)
    if callable(method):
        raw = list(method(qi_rows, k))
        if len(raw) != n:
            raise ValueError(f"the QI grouping returned {len(raw)} group ids for {n} records; "
                             f"it must return one per record")
        renum = {}
        for r in order:
            renum.setdefault(raw[r], len(renum) + 1)
        out = [renum[g] for g in raw]
    elif method in QI_GROUPINGS:
        out = QI_GROUPINGS[method](qi_rows, k, _kinds(qi_rows, d, kinds), order)
    else:
        raise ValueError(f"unknown QI grouping {method!r}; expected one of {sorted(QI_GROUPINGS)} "
                         f"or a callable")
    small = sorted(g for g, c in Counter(out).items() if c < k)
    if small:
        raise ValueError(f"QI group(s) {small} have fewer than k = {k} records; a QI grouping must "
                         f"give every group >= k records")
    return out


# --------------------------------------------------------------------------------------------
# Fingerprint buckets: state shared by CreateFB's remainder handling and RefineFB
# --------------------------------------------------------------------------------------------


class _Fbs:
    """Live FBs.  rows[b]: record indices in T order; cnt[b][a]: Counter of SA a's value codes
    (zero counts removed, so the keys are the FB's value set); holders[v]: FBs holding delta
    code v."""

    def __init__(self, codes, d, rank, zeta):
        self.codes, self.d, self.rank, self.zeta = codes, d, rank, zeta
        self.m = len(codes)
        self.rows, self.cnt, self.holders = {}, {}, {}

    def add(self, b, rows):
        self.rows[b] = sorted(rows, key=self.rank.__getitem__)
        self.cnt[b] = [Counter() for _ in range(self.m)]
        for r in rows:
            self._inc(b, r)

    def _inc(self, b, r):
        for a in range(self.m):
            self.cnt[b][a][self.codes[a][r]] += 1
        v = self.codes[self.d][r]
        self.holders.setdefault(v, set()).add(b)

    def _dec(self, b, r):
        for a in range(self.m):
            c = self.cnt[b][a]
            x = self.codes[a][r]
            c[x] -= 1
            if not c[x]:
                del c[x]
        v = self.codes[self.d][r]
        if v not in self.cnt[b][self.d]:
            self.holders[v].discard(b)

    def move(self, r, src, dst):
        self.rows[src].remove(r)
        self._dec(src, r)
        insort(self.rows[dst], r, key=self.rank.__getitem__)
        self._inc(dst, r)

    def drop(self, b):
        for v in self.cnt[b][self.d]:
            self.holders[v].discard(b)
        del self.rows[b], self.cnt[b]

    def dcount(self, b, v):
        return self.cnt[b][self.d].get(v, 0)

    def partners(self, b):
        out = set()
        for v in self.cnt[b][self.d]:
            out |= self.holders[v]
        out.discard(b)
        return out

    def pairs(self):
        out = set()
        for bs in self.holders.values():
            out.update(combinations(sorted(bs), 2))
        return sorted(out)

    def singletons(self, i, j):
        """[(SA index, value code)] for every non-delta SA whose value sets meet in one value."""
        out = []
        for a in range(self.m):
            if a == self.d:
                continue
            x, y = self.cnt[i][a], self.cnt[j][a]
            if len(x) > len(y):
                x, y = y, x
            hit = None
            for v in x:
                if v in y:
                    if hit is not None:
                        hit = None
                        break
                    hit = (v,)
            else:
                if hit is not None:
                    out.append((a, hit[0]))
        return out

    def level(self, i, j):
        lev = STRICT
        for a, _ in self.singletons(i, j):
            if a not in self.zeta:
                return 0
            lev = RELAX
        return lev


def _create_fbs(order, dcode, cat, ncat, k, c, c_f):
    """CreateFB (A6).  Returns (list of FBs as record lists, remainder records)."""
    n = len(order)
    rank = [0] * n
    for p, r in enumerate(order):
        rank[r] = p
    removed = bytearray(n)
    by_val, by_cat = {}, [deque() for _ in range(ncat)]
    for r in order:
        by_val.setdefault(dcode[r], deque()).append(r)
        by_cat[cat[r]].append(r)

    def head(dq):
        while dq and removed[dq[0]]:
            dq.popleft()
        return dq[0] if dq else None

    def take(v, m):
        dq = by_val[v]
        head(dq)  # records of one value leave in T order, so the live ones are a suffix
        return [dq[i] for i in range(min(m, len(dq)))]

    fbs, left, ptr = [], n, 0
    while left:
        if left < c * k:
            break
        while removed[order[ptr]]:
            ptr += 1
        r = order[ptr]
        chosen = take(dcode[r], c_f)
        m = len(chosen)
        used = {cat[r]}
        ok = True
        for _ in range(c - 1):
            best = None
            for cc in range(ncat):
                if cc in used:
                    continue
                h = head(by_cat[cc])
                if h is not None and (best is None or rank[h] < rank[best]):
                    best = h
            if best is None:
                ok = False
                break
            used.add(cat[best])
            chosen += take(dcode[best], m)
        if ok and len(chosen) < k:
            cnt = Counter(dcode[x] for x in chosen)
            inset = set(chosen)
            for p in range(ptr, n):
                x = order[p]
                if removed[x] or x in inset or cnt[dcode[x]] >= c_f:
                    continue
                chosen.append(x)
                inset.add(x)
                cnt[dcode[x]] += 1
                if len(chosen) >= k:
                    break
            ok = len(chosen) >= k
        if not ok:
            break
        for x in chosen:
            removed[x] = 1
        left -= len(chosen)
        fbs.append(sorted(chosen, key=rank.__getitem__))
    return fbs, [r for r in order if not removed[r]]


def _placement(st, rows, gone, partner, c_f, allow_excess):
    """Target FB per record of a dissolved FB (A9 (b)); None if a record would have to exceed
    c_f and that is not allowed."""
    live = [b for b in sorted(st.rows) if b != gone]
    extra = Counter()
    out = []
    for r in rows:
        v = st.codes[st.d][r]
        best, bkey = None, None
        for b in live:
            cv = st.dcount(b, v) + extra[b, v]
            key = (cv >= c_f, cv == 0, b != partner, b)
            if bkey is None or key < bkey:
                best, bkey = b, key
        if bkey[0] and not allow_excess:
            return None
        out.append((r, best))
        extra[best, v] += 1
    return out


class _Refiner:
    def __init__(self, st, c_f, ids, tick=None):
        self.st, self.c_f, self.ids = st, c_f, ids
        self.events = []
        self.tick = tick or (lambda: None)

    def dissolve(self, gone, partner, allow_excess, why):
        st = self.st
        rows = list(st.rows[gone])
        plan = _placement(st, rows, gone, partner, self.c_f, allow_excess)
        if plan is None:
            return None
        for r, b in plan:
            st.move(r, gone, b)
        st.drop(gone)
        self.events.append(("dissolve", why, tuple(self.ids[r] for r in rows)))
        return {b for _, b in plan}

    def try_swap(self, i, j, target):
        st = self.st
        d = st.d
        others = {}
        for b, o in ((i, j), (j, i)):
            for g in st.partners(b):
                if g != o:
                    p = (min(b, g), max(b, g))
                    others[p] = st.level(*p)
        shared = sorted(set(st.cnt[i][d]) & set(st.cnt[j][d]))
        for v in shared:
            ra = [r for r in st.rows[i] if st.codes[d][r] == v]
            rb = [r for r in st.rows[j] if st.codes[d][r] == v]
            for a in ra:
                for b in rb:
                    st.move(a, i, j)
                    st.move(b, j, i)
                    if st.level(i, j) >= target and all(st.level(*p) >= lv for p, lv in others.items()):
                        self.events.append(("swap", self.ids[a], self.ids[b]))
                        return {i, j}
                    st.move(b, i, j)
                    st.move(a, j, i)
        return None

    def run(self, target, allow_excess):
        """Clear every linkable pair below `target`; returns the pairs left below it (only
        when dissolving would exceed c_f and that is not allowed)."""
        st = self.st
        heap = [p for p in st.pairs() if st.level(*p) < target]
        heapify(heap)
        stuck = set()
        while heap:
            self.tick()
            i, j = heappop(heap)
            if i not in st.rows or j not in st.rows or (i, j) in stuck or st.level(i, j) >= target:
                continue
            touched = self.try_swap(i, j, target)
            if touched is None:
                gone, partner = (i, j) if len(st.rows[i]) < len(st.rows[j]) else (j, i)
                why = "eq. (4)" if target == STRICT else "eq. (5)"
                touched = self.dissolve(gone, partner, allow_excess, why)
            if touched is None:
                stuck.add((i, j))
                continue
            for b in touched:
                if b not in st.rows:
                    continue
                for g in st.partners(b):
                    p = (min(b, g), max(b, g))
                    if st.level(*p) < target:
                        heappush(heap, p)
        return {p for p in stuck if p[0] in st.rows and p[1] in st.rows and st.level(*p) < target}


# --------------------------------------------------------------------------------------------
# (c,k)-anonymization
# --------------------------------------------------------------------------------------------


@dataclass
class CkPlan:
    """A (c,k) plan.  Per-record lists are in input order.

    ids            record ids
    fb             BID of each record's fingerprint bucket (1..n_buckets)
    group          QI group (GT equivalence class) of each record (1..n_groups)
    category       CtgT category id of each record
    initial_fb     BID after CreateFB and the remainder step, before refinement
    categories     the CategoryTable
    delta, zeta    the SA linking FBs and the SAs eq. (5) ignores
    mode           requested mode; mode_achieved: 'strict' iff every linkable pair meets eq. (4)
    fallback       True when mode='strict' ended in 'relax'; fallback_reason says why
    cf_exceeded    (BID, delta value, count) for every delta value above c_f in an FB
    events         ('remainder', 'kept'|'dissolved', ids), ('swap', id_a, id_b),
                   ('dissolve', 'eq. (4)'|'eq. (5)', ids) in the order they happened
    """

    ids: list
    fb: list
    group: list
    category: list
    initial_fb: list
    categories: CategoryTable
    delta: str
    zeta: tuple
    mode: str
    mode_achieved: str
    fallback: bool
    fallback_reason: object
    cf_exceeded: list
    n_buckets: int
    n_groups: int
    events: list = field(default_factory=list)

    def buckets(self):
        """BID -> record ids (input order)."""
        return _members(self.ids, self.fb)

    def groups(self):
        """QI group id -> record ids (input order)."""
        return _members(self.ids, self.group)

    def initial_buckets(self):
        """BID -> record ids before refinement (input order)."""
        return _members(self.ids, self.initial_fb)


def _members(ids, labels):
    out = {}
    for rid, g in zip(ids, labels):
        out.setdefault(g, []).append(rid)
    return dict(sorted(out.items()))


def ck_plan(records, qis, sas, k, c, c_f, delta, mode="strict", zeta=None, *, key=None,
            qi_grouping="sort_cut", kinds=None, seed=None, tick=None):
    """Plan a (c,k)-anonymized release (spec 2.6): FBs for ST, QI groups for GT.

    records      mappings with the QI and SA columns (id = record[key], or the position when
                 key is None) or triples (id, QI values, SA values)
    qis, sas     column names (with no QI every record is in QI group 1)
    k            minimum QI group size and minimum FB size (>= 2)
    c            minimum number of CtgT categories per FB (>= 1, <= number of categories)
    c_f          maximum number of records with one delta value per FB (>= 1)
    delta        the delta SA name, or a `Weights` (then zeta defaults to its zeta)
    mode         'strict' (eq. 4, falling back to eq. 5 where needed) or 'relax' (eq. 5)
    zeta         SAs eq. (5) ignores (default: from a Weights delta, else none)
    qi_grouping  'sort_cut' or a callable, see `qi_groups`
    seed         None (T-order ties) or an int (seeded random ties, A16)
    tick         called often during refinement (which is superlinear in the number of FBs):
                 the database passes one that lets a cancel or statement_timeout through
    """
    qis, sas = _columns(qis, sas)
    k = _int(k, "k", 2)
    c = _int(c, "c", 1)
    c_f = _int(c_f, "c_f", 1)
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected 'strict' or 'relax'")
    delta, zeta = _delta_zeta(delta, zeta, sas)
    ids, qrows, srows = _records(records, qis, sas, key)
    n = len(ids)
    if k > n:
        raise ValueError(f"k = {k} is larger than the number of records ({n}); lower k")
    order = _t_order(n, seed)
    rank = [0] * n
    for p, r in enumerate(order):
        rank[r] = p

    # SA value codes in first-appearance (T) order: sorting delta codes = first appearance.
    m = len(sas)
    codes, decode = [[0] * n for _ in range(m)], [[] for _ in range(m)]
    enc = [{} for _ in range(m)]
    for r in order:
        for a in range(m):
            v = srows[r][a]
            x = enc[a].get(v)
            if x is None:
                x = enc[a][v] = len(decode[a])
                decode[a].append(v)
            codes[a][r] = x
    d = sas.index(delta)
    dvals = [s[d] for s in srows]
    ctg = _categories(order, dvals, k)
    if c > len(ctg):
        raise ValueError(f"c = {c} but the category table has only {len(ctg)} categories; "
                         f"lower c, or lower k (categories are packed until they hold k records)")
    cat = [ctg.of_value[v] - 1 for v in dvals]
    group = qi_groups(qrows, k, qi_grouping, kinds, seed) if qis else [1] * n

    # CreateFB and the remainder (A6, A7).
    fbs, rest = _create_fbs(order, codes[d], cat, len(ctg), k, c, c_f)
    st = _Fbs(codes, d, rank, frozenset(sas.index(z) for z in zeta))
    for b, rows in enumerate(fbs, start=1):
        st.add(b, rows)
    ref = _Refiner(st, c_f, ids, tick)
    if rest:
        ok = (len(rest) >= k and len({cat[r] for r in rest}) >= c
              and max(Counter(codes[d][r] for r in rest).values()) <= c_f)
        st.add(len(fbs) + 1, rest)
        if ok or len(st.rows) == 1:
            ref.events.append(("remainder", "kept", tuple(ids[r] for r in sorted(rest, key=rank.__getitem__))))
        else:
            ref.dissolve(len(fbs) + 1, None, True, "remainder")
            ref.events[-1] = ("remainder", "dissolved", ref.events[-1][2])
    initial = _bid_list(st, n)

    # RefineFB (A9, A10).
    if mode == "strict":
        ref.run(STRICT, allow_excess=False)
    ref.run(RELAX, allow_excess=True)

    fb = _bid_list(st, n)
    renum = {b: i for i, b in enumerate(sorted(st.rows), start=1)}
    below = [(i, j) for i, j in st.pairs() if st.level(i, j) < STRICT]
    reason = None
    if below and mode == "strict":
        parts = []
        for i, j in below[:5]:
            via = sorted(set(st.cnt[i][d]) & set(st.cnt[j][d]))
            cells = ", ".join(f"{sas[a]}={{{decode[a][v]!r}}}" for a, v in st.singletons(i, j))
            parts.append(f"FB{renum[i]}-FB{renum[j]} via {delta}="
                         f"{', '.join(repr(decode[d][v]) for v in via)} share one value: {cells}")
        more = f"; and {len(below) - 5} more" if len(below) > 5 else ""
        reason = (f"eq. (4) fails for {len(below)} linkable pair(s) that no same-delta swap clears "
                  f"and that dissolving cannot clear without exceeding c_f = {c_f}; they meet "
                  f"eq. (5) (only zeta attributes share a single value): " + "; ".join(parts) + more)
    cf_exceeded = []
    for b in sorted(st.rows):
        for v, cnt in sorted(st.cnt[b][d].items()):
            if cnt > c_f:
                cf_exceeded.append((renum[b], decode[d][v], cnt))
    achieved = "relax" if below else "strict"
    return CkPlan(
        ids=ids, fb=fb, group=group, category=[x + 1 for x in cat],
        initial_fb=initial, categories=ctg, delta=delta, zeta=tuple(s for s in sas if s in zeta),
        mode=mode, mode_achieved=achieved, fallback=(mode == "strict" and bool(below)),
        fallback_reason=reason, cf_exceeded=cf_exceeded,
        n_buckets=len(st.rows), n_groups=len(set(group)), events=ref.events,
    )


def _bid_list(st, n):
    """Per record, the rank (1..) of its FB among the live FBs."""
    out = [0] * n
    for i, b in enumerate(sorted(st.rows), start=1):
        for r in st.rows[b]:
            out[r] = i
    return out


# --------------------------------------------------------------------------------------------
# (p,k)-angelization baseline (spec 2.7)
# --------------------------------------------------------------------------------------------


@dataclass
class PkPlan:
    """A (p,k) plan: per record (input order) its batch id, which is also its QI group id
    (one-to-one), and its CtgT category."""

    ids: list
    batch: list
    group: list
    category: list
    categories: CategoryTable
    delta: str
    n_batches: int

    def batches(self):
        """Batch id -> record ids (input order)."""
        return _members(self.ids, self.batch)


def pk_plan(records, qis, sas, p, k, delta, *, key=None, kinds=None, seed=None):
    """Plan a (p,k)-angelized release (A15): batches of >= k records covering >= p categories
    of CtgT (built as for (c,k), A4), grouped by QI locality; GT group = batch.

    records, qis, sas, key, kinds, seed  as for `ck_plan`; delta an SA name or a `Weights`
    p  minimum number of categories per batch (>= 1, <= number of categories)
    k  minimum batch size (>= 2)
    """
    qis, sas = _columns(qis, sas)
    p = _int(p, "p", 1)
    k = _int(k, "k", 2)
    delta, _ = _delta_zeta(delta, None, sas)
    ids, qrows, srows = _records(records, qis, sas, key)
    n = len(ids)
    if k > n:
        raise ValueError(f"k = {k} is larger than the number of records ({n}); lower k")
    order = _t_order(n, seed)
    d = sas.index(delta)
    dvals = [s[d] for s in srows]
    ctg = _categories(order, dvals, k)
    if p > len(ctg):
        raise ValueError(f"p = {p} but the category table has only {len(ctg)} categories; "
                         f"lower p, or lower k (categories are packed until they hold k records)")
    cat = [ctg.of_value[v] for v in dvals]
    idx = _sort_key(qrows, _kinds(qrows, len(qis), kinds), order) if qis else list(order)
    pos = [0] * n
    for i, r in enumerate(idx):
        pos[r] = i
    removed = bytearray(n)
    by_cat = {}
    for r in idx:
        by_cat.setdefault(cat[r], deque()).append(r)

    def head(dq):
        while dq and removed[dq[0]]:
            dq.popleft()
        return dq[0] if dq else None

    batches, left, ptr = [], n, 0
    while left:
        while removed[idx[ptr]]:
            ptr += 1
        alive = (r for r in idx[ptr:] if not removed[r])
        if left < 2 * k:
            b = list(alive)
        else:
            b = [next(alive) for _ in range(k)]
            cats = {cat[r] for r in b}
            while len(cats) < p:
                best = None
                for cc, dq in by_cat.items():
                    if cc not in cats:
                        h = head(dq)
                        if h is not None and (best is None or pos[h] < pos[best]):
                            best = h
                if best is None:
                    break
                b.append(best)
                cats.add(cat[best])
            if len(cats) < p:
                b = [r for r in idx[ptr:] if not removed[r]]
        if batches and (len(b) < k or len({cat[r] for r in b}) < p):
            batches[-1].extend(b)
        else:
            batches.append(b)
        for r in b:
            removed[r] = 1
        left -= len(b)
    batch = [0] * n
    for i, b in enumerate(batches, start=1):
        for r in b:
            batch[r] = i
    return PkPlan(ids=ids, batch=batch, group=list(batch), category=cat, categories=ctg,
                  delta=delta, n_batches=len(batches))


# --------------------------------------------------------------------------------------------
# GT and ST cells, linkable intersections (eq. 3)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupSummary:
    """One GT group: its size and one cell per QI: (lo, hi) for a numeric QI; for a categorical
    QI None (values kept), '*' (suppressed) or a set of covered values."""

    n: int
    cells: tuple


@dataclass(frozen=True)
class Generalized:
    """rows: per record the published QI cells ((lo, hi), the kept value, or '*');
    groups: group id -> GroupSummary; domains: per QI the numeric span max - min over all
    records, or the number of distinct categorical values (the NCP denominators)."""

    rows: list
    groups: dict
    domains: tuple


def generalize(qi_rows, group_ids, k, kinds=None, categorical="keep"):
    """GT cells of a QI grouping (A13).  Needs per group only min/max of the numeric QIs and the
    counts of the categorical value combinations (SQL aggregates).

    categorical  'keep' ((c,k), Table 5) or 'suppress' (every categorical QI '*', Table 2)
    """
    k = _int(k, "k", 1)
    if categorical not in ("keep", "suppress"):
        raise ValueError(f"categorical must be 'keep' or 'suppress', not {categorical!r}")
    qi_rows = [tuple(r) for r in qi_rows]
    group_ids = list(group_ids)
    if len(group_ids) != len(qi_rows):
        raise ValueError(f"{len(group_ids)} group ids for {len(qi_rows)} QI rows; give one per row")
    if not qi_rows:
        raise ValueError("no QI rows to generalize")
    dq = len(qi_rows[0])
    kinds = _kinds(qi_rows, dq, kinds)
    members = _members(range(len(qi_rows)), group_ids)
    rows = [None] * len(qi_rows)
    groups = {}
    for g, rs in members.items():
        cells = [None] * dq
        kept = []
        for i in range(dq):
            vals = [qi_rows[r][i] for r in rs]
            if kinds[i] == "numeric":
                cells[i] = (min(vals), max(vals))
            elif categorical == "keep" and min(
                    Counter(tuple(qi_rows[r][x] for x in kept + [i]) for r in rs).values()) >= k:
                kept.append(i)
            else:
                cells[i] = "*"
        groups[g] = GroupSummary(n=len(rs), cells=tuple(cells))
        for r in rs:
            rows[r] = tuple(qi_rows[r][i] if i in kept else cells[i] for i in range(dq))
    domains = []
    for i in range(dq):
        vals = [r[i] for r in qi_rows]
        domains.append(max(vals) - min(vals) if kinds[i] == "numeric" else len(set(vals)))
    return Generalized(rows=rows, groups=groups, domains=tuple(domains))


def sensitive_table(sa_rows, sas, bucket_ids):
    """ST / SBT cells: bucket id -> {SA: frozenset of the distinct values of its records}
    (spec 2.6 step 7; no multiplicities).  A GROUP BY bucket with array_agg(DISTINCT) in SQL."""
    sas = list(sas)
    sa_rows = [tuple(r) for r in sa_rows]
    bucket_ids = list(bucket_ids)
    if len(bucket_ids) != len(sa_rows):
        raise ValueError(f"{len(bucket_ids)} bucket ids for {len(sa_rows)} SA rows; give one per row")
    sets = {}
    for row, b in zip(sa_rows, bucket_ids):
        if len(row) != len(sas):
            raise ValueError(f"an SA row has {len(row)} values for {len(sas)} SAs")
        cell = sets.setdefault(b, {a: set() for a in sas})
        for a, v in zip(sas, row):
            cell[a].add(v)
    return {b: {a: frozenset(s) for a, s in cell.items()} for b, cell in sorted(sets.items())}


@dataclass(frozen=True)
class Link:
    """A linkable pair of buckets (i < j), the delta values they share, and per non-delta SA the
    intersection of their value sets (eq. 3)."""

    i: object
    j: object
    via: frozenset
    cells: dict


def intersections(st, delta):
    """Every linkable pair of an ST (buckets sharing a delta value) with its eq. (3) cells,
    ordered by (i, j).  A cell with exactly one value is what eq. (4)/(5) forbid."""
    out = []
    for i, j in combinations(sorted(st), 2):
        if delta not in st[i]:
            raise ValueError(f"delta {delta!r} is not a column of the sensitive table")
        via = st[i][delta] & st[j][delta]
        if via:
            cells = {a: st[i][a] & st[j][a] for a in st[i] if a != delta}
            out.append(Link(i=i, j=j, via=via, cells=cells))
    return out


# --------------------------------------------------------------------------------------------
# NCP (eq. 6)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ncp:
    """NCP(T*) of eq. (6) and NCP% = 100 * NCP / (rows * sum of QI weights)."""

    total: float
    percent: float


def ncp(groups, domains, weights=None):
    """NCP of a generalized release from group summaries (A14).

    groups   iterable of GroupSummary (or (n, cells) pairs, cells as in GroupSummary)
    domains  per QI: the numeric span max - min over the original T, or the categorical domain
             size (`Generalized.domains`)
    weights  per-QI weights w_i (default 1 each)
    """
    domains = list(domains)
    w = [1] * len(domains) if weights is None else list(weights)
    if len(w) != len(domains):
        raise ValueError(f"{len(w)} weights for {len(domains)} QIs; give one per QI")
    total, rows = 0.0, 0
    for g in groups:
        n, cells = (g.n, g.cells) if isinstance(g, GroupSummary) else g
        if len(cells) != len(domains):
            raise ValueError(f"a group has {len(cells)} cells for {len(domains)} QIs")
        per = 0.0
        for wi, cell, dom in zip(w, cells, domains):
            if cell is None:
                pen = 0.0
            elif isinstance(cell, tuple):
                lo, hi = cell
                pen = 0.0 if not dom else (hi - lo) / dom
            elif isinstance(cell, str) and cell == "*":
                pen = 1.0
            else:
                size = len(cell)
                pen = 0.0 if size <= 1 or not dom else size / dom
            per += wi * pen
        total += n * per
        rows += n
    denom = rows * sum(w)
    return Ncp(total=total, percent=100.0 * total / denom if denom else 0.0)
