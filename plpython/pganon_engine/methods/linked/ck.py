"""(c,k)-anonymization and the (p,k)-angelization baseline of Khan et al. (2020): planning
engine, no database access (spec 004-ck-anonymization.md, sections 1-4 and 8).

`ck_plan` gives every record a fingerprint bucket (FB, its BID in the sensitive table ST) and
a QI group (its equivalence class in GT), formed independently (one-to-many linking).
`pk_plan` gives every record a batch that is also its QI group (one-to-one).  `generalize`,
`sensitive_table`, `intersections` and `ncp` turn a plan into GT/ST cells, the linkable-pair
intersections of eq. (3) and the NCP of eq. (6).  Weights, delta, zeta and the category table
live in `pganon_engine.methods.linked.ck_categories` (decisions A1-A4 there) and are re-exported here.

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
      A9 (a record exceeds c_f only when no FB has room; A18 decides whether that is allowed).
      With no other FB it stays as it is (the whole table is one FB).
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
- A10 The target is eq. (4) for mode='strict' and eq. (5) for mode='relax' (spec 1.5 (a)/(b));
      strict never falls back to eq. (5).  A first phase clears the pairs below target with
      swaps and dissolves that keep every bucket within c_f; pairs it cannot clear (stuck) go
      to a second phase that may exceed c_f, so every linkable pair meets the target.  The
      plan reports the mode achieved ('strict' iff every final linkable pair meets eq. 4), how
      many pairs were stuck, and every (FB, delta value) above c_f.
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

- A17 Reach pre-check (before CreateFB, from aggregates only; refuses with PA005 unless
      c_f_excess='allow').  An FB holding x <= c_f records of delta value v has >= k records
      and >= c categories, so it holds >= max(k - c_f, c - 1) records of other values, >= c - 1
      of them from other categories, and FBs are disjoint: at most room(v) = min(N // k,
      (N - n_v) // max(k - c_f, c - 1), (N - n_cat(v)) // (c - 1)) FBs can hold v, and v needs
      ceil(n_v / c_f).  A value with more is out of reach; the message gives the smallest c_f
      that passes (the condition is monotone in c_f).  And when some SA the target counts
      (every non-delta SA for eq. 4, those outside zeta for eq. 5) has one value in every record
      while some delta value has more than c_f records, two FBs share that delta value and
      exactly that one value: the target is out of reach.  Both are necessary conditions only.
- A18 Refusal after planning: a plan with an (FB, delta value) above c_f is refused with PA005
      and its figures (pairs, buckets, delta values, records above c_f, the largest count, the
      stuck pairs with examples) unless c_f_excess='allow'; then `CkPlan.relaxed` states those
      figures for the release's promise.  Nothing is ever relaxed without being asked for.

Input size.  The category table needs only the delta value counts and the QI grouping only
the distinct QI vectors with counts, but CreateFB and refinement depend on the T order of the
records and on each FB's value sets, so this planner takes one row per record (ids, QI values,
SA values): memory grows with rows * (QIs + SAs), held as small ints per SA.

Refinement cost.  The number of linkable pairs grows with the square of the number of FBs, and
with few-valued SAs most of them violate eq. (4) and many are stuck (no swap, no dissolve within
c_f).  The implementation does exactly what A9/A10 say, with less work per pair: value sets are
bit masks, kept also as numpy rows per FB so that the statuses of one FB against all its
partners are one vector operation (listing a row of pairs, rechecking the pairs of FBs that
received records, checking that a swap lowers no other pair); swaps are evaluated on the masks
they would give (once per pair of distinct SA code vectors) instead of being carried out and
undone; only pairs whose status can have dropped are re-queued; a row of pairs (i, j > i) is
listed only when refinement reaches FB i; and whether a dissolve would exceed c_f is answered
from per-value free room.  The unit tests compare it with a literal reading.  Memory beyond
the records: per FB its masks (values / 64 words per SA), the heap of about one row of pairs,
and the stuck pairs (one bit per pair of FBs at most).
"""

from __future__ import annotations

import numbers
import operator
import random
from bisect import insort
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from heapq import heappop, heappush
from itertools import combinations

import numpy as np

from pganon_engine.core.errors import unsatisfiable

from .ck_categories import CategoryTable, Weights, category_table, weights

__all__ = [
    "weights",
    "category_table",
    "Weights",
    "CategoryTable",
    "CkPlan",
    "ck_plan",
    "Shortfall",
    "c_f_shortfalls",
    "check_reach",
    "cf_figures",
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
C_F_EXCESS = ("refuse", "allow")  # may buckets exceed c_f where the refinement needs it (A18)
STRICT, RELAX = 2, 1  # pair status levels (A8)
_SPAN = 1 << 31  # pair keys: i * _SPAN + j (BIDs) orders like (i, j)
_WORD = (1 << 64) - 1
_SIG_SLACK = 1 << 14  # signatures of no live FB kept before `_Fbs._compact`
_ONE = np.uint64(1)


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
    """Live FBs.  rows[b]: record indices in T order; cnt[b][a]: dict of SA a's value codes ->
    count (zero counts removed, so the keys are the FB's value set); mask[b][a]: the same value
    set as a bit mask (bit x set iff code x occurs); holders[v]: FBs holding delta code v;
    open[v]: those holding it fewer than c_f times; free[v]: sum over the holders of
    max(0, c_f - their count of v) (the room for v left in FBs that hold it).

    The same masks as numpy rows indexed by BID, for the status of one FB against many (A8):
    nm[b] the non-delta SAs' masks as uint64 words (SA a in words off[a] .. off[a] + width[a]),
    dm[b] the delta mask's words, live[b] whether b is a live FB.  A pair's status depends only
    on the two FBs' non-delta masks; `levels` computes it for one row of masks against a list of
    FBs at once (AND, then "exactly one bit" per SA), `partners` lists the FBs sharing a delta
    value from the delta words.  BIDs are small ints, so these arrays grow with the number of
    FBs times the mask words (values / 64 per SA), nothing per pair."""

    def __init__(self, codes, d, rank, zeta, c_f):
        self.codes, self.d, self.rank, self.zeta, self.c_f = codes, d, rank, zeta, c_f
        self.m = len(codes)
        self.dc = codes[d]
        self.vec = list(zip(*codes))  # per record: its SA codes
        nd = [a for a in range(self.m) if a != d]
        self.nd = tuple(nd)
        self.nd_hard = tuple(a for a in nd if a not in zeta)
        self.nd_soft = tuple(a for a in nd if a in zeta)
        self.rows, self.cnt, self.mask, self.holders, self.free = {}, {}, {}, {}, {}
        self.open, self._grp = {}, {}
        width = {a: max(1, (max(codes[a], default=0) + 64) // 64) for a in range(self.m)}
        self.width, self.off, pos = width, {}, 0
        for a in nd:
            self.off[a] = pos
            pos += width[a]
        self._nw, self._dw = pos, width[d]
        self._one_word = all(width[a] == 1 for a in nd)
        self._starts = np.array([self.off[a] for a in nd], dtype=np.intp)
        self._hard = np.array([p for p, a in enumerate(nd) if a not in zeta], dtype=np.intp)
        self._soft = np.array([p for p, a in enumerate(nd) if a in zeta], dtype=np.intp)
        self.nm = np.zeros((0, self._nw), dtype=np.uint64)
        self.dm = np.zeros((0, self._dw), dtype=np.uint64)
        self.live = np.zeros(0, dtype=bool)
        # signatures (the non-delta masks) interned: sid[b] numbers FB b's, sig_rows[x] holds
        # signature x's words; FBs with one signature have the same status against any FB
        self.sid = np.zeros(0, dtype=np.int64)
        self._sig_ids, self.sig_rows = {}, np.zeros((16, self._nw), dtype=np.uint64)

    # ---- the numpy rows ---------------------------------------------------------------------

    def words(self, mask):
        """The non-delta masks of a per-SA mask list as one row of uint64 words."""
        out = []
        for a in self.nd:
            x = mask[a]
            for _ in range(self.width[a]):
                out.append(x & _WORD)
                x >>= 64
        return np.array(out, dtype=np.uint64)

    def _sync(self, b):
        if b >= len(self.live):
            n = max(2 * len(self.live), b + 1)
            for name in ("nm", "dm"):
                old = getattr(self, name)
                new = np.zeros((n, old.shape[1]), dtype=np.uint64)
                new[:len(old)] = old
                setattr(self, name, new)
            live = np.zeros(n, dtype=bool)
            live[:len(self.live)] = self.live
            self.live = live
            sid = np.zeros(n, dtype=np.int64)
            sid[:len(self.sid)] = self.sid
            self.sid = sid
        mask = self.mask[b]
        key = tuple(mask[a] for a in self.nd)
        x = self._sig_ids.get(key)
        if x is None:
            if len(self._sig_ids) > _SIG_SLACK + 4 * len(self.rows):
                self._compact()
            x = self._sig_ids[key] = len(self._sig_ids)
            if x >= len(self.sig_rows):
                grown = np.zeros((2 * len(self.sig_rows), self._nw), dtype=np.uint64)
                grown[:x] = self.sig_rows[:x]
                self.sig_rows = grown
            self.sig_rows[x] = self.words(mask)
        self.sid[b] = x
        self.nm[b] = self.sig_rows[x]
        x = self.mask[b][self.d]
        for w in range(self._dw):
            self.dm[b, w] = x & _WORD
            x >>= 64
        self.live[b] = True

    def _compact(self):
        """Forget the signatures no live FB has (moves leave them behind); renumbers the rest."""
        keep = np.unique(self.sid[self.live])
        new = {int(x): n for n, x in enumerate(keep.tolist())}
        self._sig_ids = {t: new[x] for t, x in self._sig_ids.items() if x in new}
        self.sig_rows[:len(keep)] = self.sig_rows[keep]
        remap = np.zeros(max(len(self.sig_rows), 1), dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        self.sid[self.live] = remap[self.sid[self.live]]

    def signatures(self, gs):
        """The distinct signatures of the FBs `gs`, as rows of words."""
        seen = np.zeros(len(self._sig_ids), dtype=bool)
        seen[self.sid[gs]] = True
        return self.sig_rows[np.flatnonzero(seen)]

    def partners(self, b):
        """The live FBs other than b sharing a delta value with b, ascending (an int array)."""
        dm = self.dm
        if self._dw == 1:
            hit = (dm[:, 0] & dm[b, 0]) != 0
        else:
            hit = (dm & dm[b]).any(axis=1)
        hit &= self.live
        hit[b] = False
        return np.flatnonzero(hit)

    def levels(self, row, gs):
        """Status (A8) of an FB with non-delta mask words `row` against each FB of `gs`."""
        return self.row_levels(row, self.nm[gs])

    def row_levels(self, row, rows):
        """Status (A8) of an FB with non-delta mask words `row` against each row of words."""
        z = rows & row
        nz = z != 0
        pow2 = (z & (z - _ONE)) == 0
        if self._one_word:
            single = nz & pow2
        else:
            single = ((np.add.reduceat(nz, self._starts, axis=1, dtype=np.int32) == 1)
                      & np.logical_and.reduceat(pow2, self._starts, axis=1))
        out = np.full(len(rows), STRICT, dtype=np.int8)
        if len(self._soft):
            out[single[:, self._soft].any(axis=1)] = RELAX
        if len(self._hard):
            out[single[:, self._hard].any(axis=1)] = 0
        return out

    def first_without(self, v, skip):
        """The smallest live FB that does not hold delta code v and is not in `skip`."""
        w, bit = divmod(v, 64)
        ok = self.live & ((self.dm[:, w] >> np.uint64(bit)) & _ONE == 0)
        ok[list(skip)] = False
        return int(np.argmax(ok))  # the caller knows one exists

    def below(self, target):
        """Every linkable pair (i, j), i < j, below `target`, sorted."""
        out = []
        for i in sorted(self.rows):
            gs = self.partners(i)
            gs = gs[gs > i]
            if len(gs):
                out.extend((i, g) for g in gs[self.levels(self.nm[i], gs) < target].tolist())
        return out

    # ---- records in and out -----------------------------------------------------------------

    def add(self, b, rows):
        self.rows[b] = sorted(rows, key=self.rank.__getitem__)
        self.cnt[b] = [{} for _ in range(self.m)]
        self.mask[b] = [0] * self.m
        for r in rows:
            self._inc(b, r)
        self._sync(b)

    def _inc(self, b, r):
        cnt, mask = self.cnt[b], self.mask[b]
        for a, x in enumerate(self.vec[r]):
            c = cnt[a]
            n = c.get(x, 0)
            c[x] = n + 1
            if not n:
                mask[a] |= 1 << x
        v = self.dc[r]
        n = cnt[self.d][v]  # the count of v after
        if n == 1:
            if v not in self.holders:
                self.holders[v], self.open[v], self.free[v] = set(), set(), 0
            self.holders[v].add(b)
            self.free[v] += max(0, self.c_f - 1)
            if self.c_f > 1:
                self.open[v].add(b)
        elif n <= self.c_f:
            self.free[v] -= 1
            if n == self.c_f:
                self.open[v].discard(b)

    def _dec(self, b, r):
        cnt, mask = self.cnt[b], self.mask[b]
        for a, x in enumerate(self.vec[r]):
            c = cnt[a]
            n = c[x] - 1
            if n:
                c[x] = n
            else:
                del c[x]
                mask[a] &= ~(1 << x)
        v = self.dc[r]
        n = cnt[self.d].get(v, 0)  # the count of v after
        if not n:
            self.holders[v].discard(b)
            self.open[v].discard(b)
            self.free[v] -= max(0, self.c_f - 1)
        elif n < self.c_f:
            self.free[v] += 1
            self.open[v].add(b)

    def move(self, r, src, dst):
        self.rows[src].remove(r)
        self._dec(src, r)
        insort(self.rows[dst], r, key=self.rank.__getitem__)
        self._inc(dst, r)
        self._sync(src)
        self._sync(dst)
        self._grp.pop(src, None)
        self._grp.pop(dst, None)

    def drop(self, b):
        for v, n in self.cnt[b][self.d].items():
            self.holders[v].discard(b)
            self.open[v].discard(b)
            self.free[v] -= max(0, self.c_f - n)
        del self.rows[b], self.cnt[b], self.mask[b]
        self.live[b] = False
        self._grp.pop(b, None)

    def groups(self, b):
        """Delta code -> [(SA codes, first record with them)] of FB b, distinct SA codes in T
        order (cached until b changes)."""
        g = self._grp.get(b)
        if g is None:
            g, seen, vec, dc = {}, set(), self.vec, self.dc
            for r in self.rows[b]:
                t = vec[r]
                if t not in seen:
                    seen.add(t)
                    lst = g.get(dc[r])
                    if lst is None:
                        g[dc[r]] = [(t, r)]
                    else:
                        lst.append((t, r))
            self._grp[b] = g
        return g

    def dcount(self, b, v):
        return self.cnt[b][self.d].get(v, 0)

    def singletons(self, i, j):
        """[(SA index, value code)] for every non-delta SA whose value sets meet in one value."""
        out = []
        mi, mj = self.mask[i], self.mask[j]
        for a in self.nd:
            z = mi[a] & mj[a]
            if z and not z & (z - 1):
                out.append((a, z.bit_length() - 1))
        return out

    def level(self, i, j):
        """Status (A8) of the pair (i, j) from its masks."""
        mi, mj = self.mask[i], self.mask[j]
        for a in self.nd_hard:
            z = mi[a] & mj[a]
            if z and not z & (z - 1):
                return 0
        for a in self.nd_soft:
            z = mi[a] & mj[a]
            if z and not z & (z - 1):
                return RELAX
        return STRICT


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
    c_f and that is not allowed.

    Each record goes to the live FB minimizing (c_f would be exceeded, does not hold the
    record's delta value, is not `partner`, BID).  Only the FBs holding the value (`holders`,
    plus those that received it from this FB already) can have a nonzero count, and of them
    only those in `open` (or among the receivers) are below c_f, so the minimum is found from
    these sets and from the first live FB outside them, without scanning every FB."""
    others = len(st.rows) - 1  # the live FBs but gone
    if partner is not None and (partner == gone or partner not in st.rows):
        partner = None
    d = st.d
    extra = {}  # (b, v) -> records of value v already sent to b
    got = {}  # v -> FBs that received v from this FB
    out = []
    for r in rows:
        v = st.dc[r]
        held = st.holders.get(v, ())
        gv = got.get(v, ())
        room = [b for b in st.open.get(v, ()) if b != gone and b not in gv]
        room += [b for b in gv if st.cnt[b][d].get(v, 0) + extra[b, v] < c_f]
        if room:  # (False, False, ...): holds v, below c_f
            best = partner if partner in room else min(room)
        elif len(held) - (gone in held) + sum(1 for b in gv if b not in held) < others:
            # (False, True, ...): does not hold v
            if partner is not None and partner not in held and partner not in gv:
                best = partner
            else:
                best = st.first_without(v, {gone, *gv})
        else:  # (True, False, ...): every live FB holds v at c_f or above
            if not allow_excess:
                return None
            have = (set(held) | set(gv)) - {gone}
            best = partner if partner in have else min(have)
        out.append((r, best))
        extra[best, v] = extra.get((best, v), 0) + 1
        got.setdefault(v, set()).add(best)
    return out


class _Refiner:
    """RefineFB (A9, A10).  A pair (i, j), i < j, is keyed i * _SPAN + j in the work heap, so
    the heap orders pairs like tuples and holds plain ints."""

    def __init__(self, st, c_f, ids, tick=None):
        self.st, self.c_f, self.ids = st, c_f, ids
        self.events = []
        self.tick = tick or (lambda: None)

    def dissolve(self, gone, partner, allow_excess, why):
        st = self.st
        if not allow_excess and self._overflows(gone):
            return None
        rows = list(st.rows[gone])
        plan = _placement(st, rows, gone, partner, self.c_f, allow_excess)
        if plan is None:
            return None
        for r, b in plan:
            st.move(r, gone, b)
        st.drop(gone)
        self.events.append(("dissolve", why, tuple(self.ids[r] for r in rows)))
        return {b for _, b in plan}

    def _overflows(self, gone):
        """Whether dissolving `gone` has to exceed c_f (then `_placement` returns None when
        excess is not allowed).  A record of delta value v goes to an FB below c_f for v while
        one exists, whichever it is, so the records of v fit iff there are at most as many as
        the free places sum(max(0, c_f - count of v)) over the other live FBs; values do not
        interact.  This answers in O(values of `gone`) instead of a placement over all FBs."""
        st, c_f = self.st, self.c_f
        others = len(st.rows) - 1
        for v, m in st.cnt[gone][st.d].items():
            free = c_f * (others - (len(st.holders[v]) - 1))  # FBs without v (gone holds v)
            free += st.free[v] - max(0, c_f - m)  # FBs with v, but gone
            if m > free:
                return True
        return False

    def try_swap(self, i, j, target):
        """A9 (a).  Each candidate swap is evaluated on the value masks the two FBs would have
        after it (a same-delta swap changes no delta set, hence no partner set), without moving
        records; only the accepted swap is carried out.

        The outcome of a candidate depends only on the SA codes of its two records, so only the
        first record with each distinct code vector is tried, in T order (the first acceptable
        pair of code vectors, taken at their first records, is the first acceptable swap in the
        T-order double loop).  The pair reaches `target` iff no SA that counts for it (every
        non-delta SA for eq. (4), the non-zeta ones for eq. (5)) meets in one value; an SA that
        meets in one value now has to change, so a candidate whose records agree on it fails at
        once, and when both FBs hold only that one value no candidate can succeed."""
        st = self.st
        mi, mj = st.mask[i], st.mask[j]
        viol, rest = [], []
        for s in (st.nd if target == STRICT else st.nd_hard):
            z = mi[s] & mj[s]
            if z and not z & (z - 1):
                if mi[s] == z == mj[s]:
                    return None  # every record of i and j has this value
                viol.append(s)
            else:
                rest.append(s)
        check = viol + rest
        ci, cj = st.cnt[i], st.cnt[j]
        gi, gj = st.groups(i), st.groups(j)
        others = {}  # FB -> (its other partners' signatures, their statuses now), built when first needed
        for v in sorted(gi.keys() & gj.keys()):
            self.tick()
            lb = gj[v]
            for va, a in gi[v]:
                for vb, b in lb:
                    for s in viol:
                        if va[s] == vb[s]:
                            break  # this SA keeps its single common value
                    else:
                        for s in check:
                            xa, xb = va[s], vb[s]
                            if xa == xb:
                                z = mi[s] & mj[s]
                            else:
                                zi, zj = mi[s] | 1 << xb, mj[s] | 1 << xa
                                if ci[s][xa] == 1:
                                    zi ^= 1 << xa
                                if cj[s][xb] == 1:
                                    zj ^= 1 << xb
                                z = zi & zj
                            if z and not z & (z - 1):
                                break  # (i, j) would stay below target
                        else:
                            if self._harmless(i, j, va, vb, others):
                                st.move(a, i, j)
                                st.move(b, j, i)
                                self.events.append(("swap", self.ids[a], self.ids[b]))
                                return {i, j}
        return None

    def _harmless(self, i, j, va, vb, others):
        """Whether swapping a record with codes va of FB i and one with codes vb of FB j
        (same delta value) lowers the status of no other pair of i or j: the statuses of the
        FB's new masks against the distinct signatures of its other partners at once, compared
        with the current ones (computed once per `try_swap` call, in `others`)."""
        st = self.st
        ci, cj = st.cnt[i], st.cnt[j]
        ni, nj = list(st.mask[i]), list(st.mask[j])
        for s in st.nd:
            xa, xb = va[s], vb[s]
            if xa != xb:
                ni[s] |= 1 << xb
                nj[s] |= 1 << xa
                if ci[s][xa] == 1:
                    ni[s] ^= 1 << xa
                if cj[s][xb] == 1:
                    nj[s] ^= 1 << xb
        mask = st.mask
        for new, own, other in ((ni, i, j), (nj, j, i)):
            if all(new[s] == mask[own][s] for s in st.nd):
                continue  # this FB's value sets, hence its pairs, are unchanged
            got = others.get(own)
            if got is None:
                gs = st.partners(own)
                sigs = st.signatures(gs[gs != other])
                got = others[own] = (sigs, st.row_levels(st.nm[own], sigs))
            sigs, before = got
            if len(sigs) and (st.row_levels(st.words(new), sigs) < before).any():
                return False
        return True

    def run(self, target, allow_excess):
        """Clear every linkable pair below `target`, except those that no swap clears and
        whose dissolving would exceed c_f when that is not allowed (stuck pairs).

        Pairs are handled in increasing (i, j) order, each time the smallest live, unstuck pair
        below target.  The heap holds a cursor (i, 0) for every FB i whose pairs (i, j > i) are
        not listed yet; popping it lists those below target then (before that, the cursor
        stands for them).  Listed pairs are each queued once; a pair of a listed row enters the
        heap when it falls below target.  An accepted swap lowers no pair's status (A9 (a)), so
        it queues nothing; a dissolve changes only the pairs of the FBs receiving records, which
        are rechecked.  So the heap holds about one row of pairs, not all of them; stuck pairs
        are bits of one bytearray per row."""
        st = self.st
        partners, levels, rows = st.partners, st.levels, st.rows
        heap = [i * _SPAN for i in sorted(rows)]  # ascending, hence a heap
        listed = 0  # rows <= listed have been listed (cursors pop in increasing order)
        queued, stuck = set(), {}
        overflows = {}  # FB -> whether dissolving it exceeds c_f, while no FB changes
        width = (max(rows) >> 3) + 1  # BIDs are never created here
        why = "eq. (4)" if target == STRICT else "eq. (5)"
        while heap:
            self.tick()
            key = heappop(heap)
            i, j = divmod(key, _SPAN)
            if not j:  # the cursor of row i: list its pairs below target
                listed = i
                if i in rows:
                    gs = partners(i)
                    gs = gs[gs > i]
                    if len(gs):
                        for g in gs[levels(st.nm[i], gs) < target].tolist():
                            heappush(heap, key + g)
                            queued.add(key + g)
                continue
            queued.discard(key)
            if i not in rows or j not in rows:
                continue
            row = stuck.get(i)
            if row is not None and row[j >> 3] >> (j & 7) & 1:
                continue
            if st.level(i, j) >= target:
                continue
            if self.try_swap(i, j, target) is not None:
                overflows.clear()
                continue
            gone, partner = (i, j) if len(rows[i]) < len(rows[j]) else (j, i)
            if allow_excess:
                touched = self.dissolve(gone, partner, allow_excess, why)
            else:
                over = overflows.get(gone)
                if over is None:
                    over = overflows[gone] = self._overflows(gone)
                touched = None if over else self.dissolve(gone, partner, allow_excess, why)
            if touched is None:
                if row is None:
                    row = stuck[i] = bytearray(width)
                row[j >> 3] |= 1 << (j & 7)
                continue
            overflows.clear()
            for b in touched:
                self.tick()
                gs = partners(b)
                gs = gs[np.minimum(gs, b) <= listed]  # else its row's cursor stands for the pair
                if not len(gs):
                    continue
                for g in gs[levels(st.nm[b], gs) < target].tolist():
                    lo, hi = (b, g) if b < g else (g, b)
                    p = lo * _SPAN + hi
                    if p in queued:
                        continue
                    row = stuck.get(lo)
                    if row is not None and row[hi >> 3] >> (hi & 7) & 1:
                        continue
                    heappush(heap, p)
                    queued.add(p)


# --------------------------------------------------------------------------------------------
# What c_f and the target equation can reach (A17, A18)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shortfall:
    """A delta value that no set of valid FBs holds within c_f (A17): its `records` need at
    least `needed` = ceil(records / c_f) FBs, and at most `room` FBs can hold it."""

    value: object
    records: int
    needed: int
    room: int


def c_f_shortfalls(delta_counts, k, c, c_f, category_of=None):
    """The delta values whose records cannot be spread over valid FBs with at most c_f each
    (A17), from the delta value counts alone.

    delta_counts  (value, count) pairs
    category_of   value -> category id when the category table is known (a tighter bound);
                  without it the bound holds whatever the categories are
    """
    counts = [(v, int(n)) for v, n in delta_counts]
    total = sum(n for _, n in counts)
    per_cat = Counter()
    if category_of is not None:
        for v, n in counts:
            per_cat[category_of[v]] += n
    other = max(k - c_f, c - 1)
    out = []
    for v, n in counts:
        room = total // k
        if other > 0:
            room = min(room, (total - n) // other)
        if c > 1 and category_of is not None:
            room = min(room, (total - per_cat[category_of[v]]) // (c - 1))
        needed = -(-n // c_f)
        if needed > room:
            out.append(Shortfall(value=v, records=n, needed=needed, room=room))
    return out


def _least_c_f(delta_counts, k, c, c_f, category_of):
    """The smallest c_f >= the given one that passes `c_f_shortfalls`, or None (none does)."""
    hi = max(int(n) for _, n in delta_counts)
    if c_f_shortfalls(delta_counts, k, c, hi, category_of):
        return None
    lo = c_f
    while lo < hi:  # the shortfall condition is monotone in c_f
        mid = (lo + hi) // 2
        if c_f_shortfalls(delta_counts, k, c, mid, category_of):
            lo = mid + 1
        else:
            hi = mid
    return lo


_ALLOW = "or publish with c_f_excess: 'allow' (buckets may then hold more than c_f records of one value; " \
         "the release records it as relaxed)"


def check_reach(delta_counts, k, c, c_f, *, delta="delta", mode="strict", c_f_excess="refuse",
                distinct=None, zeta=(), category_of=None):
    """Refuse with PA005, before any planning, a (c,k) request that no release can meet without
    exceeding c_f (A17).  Needs aggregates only: the delta value counts and, per SA, its number
    of distinct values (`distinct`, optional).  Does nothing when c_f_excess='allow'."""
    if c_f_excess == "allow":
        return
    counts = [(v, int(n)) for v, n in delta_counts]
    short = c_f_shortfalls(counts, k, c, c_f, category_of)
    if short:
        worst = max(short, key=lambda x: (x.needed - x.room, x.records))
        least = _least_c_f(counts, k, c, c_f, category_of)
        raise unsatisfiable(
            f"c_f = {c_f} is out of reach: {len(short)} {delta} value(s) have more records than c_f times the "
            f"number of buckets that can hold them; {worst.value!r} has {worst.records} of {sum(n for _, n in counts)} "
            f"records, needs {worst.needed} buckets of at most {c_f}, and with k = {k}, c = {c} at most "
            f"{worst.room} buckets can hold it",
            hint=(f"raise c_f to at least {least}, " if least else "lower k or c, ") + _ALLOW,
            detail="; ".join(f"{x.value!r}: {x.records} records, {x.needed} buckets needed, {x.room} possible"
                             for x in sorted(short, key=lambda x: -x.records)[:10]))
    if distinct:
        eq = "eq. (4)" if mode == "strict" else "eq. (5)"
        constant = [a for a, nd in distinct.items()
                    if nd == 1 and a != delta and (mode == "strict" or a not in zeta)]
        spread = sorted(((n, v) for v, n in counts if n > c_f), key=lambda x: -x[0])
        if constant and spread:
            raise unsatisfiable(
                f"mode {mode!r} ({eq}) is out of reach within c_f = {c_f}: {constant[0]} has one value in every "
                f"record, so two buckets that share a {delta} value share exactly that value, and "
                f"{len(spread)} {delta} value(s) have more than c_f records and must span several buckets "
                f"(e.g. {spread[0][1]!r} with {spread[0][0]})",
                hint=f"raise c_f to at least {spread[0][0]}, leave {constant[0]} out of the sensitive attributes, "
                     + ("declare it zeta (pganon.set_zeta) and publish with mode: 'relax', " if mode == "strict" else "")
                     + _ALLOW)


def cf_figures(cf_exceeded, c_f):
    """The figures a release records when its buckets exceed c_f (A18), from the (FB, delta
    value, count) list; bucket ids play no part, so renumbering buckets keeps them true."""
    return {"c_f_exceeded": len(cf_exceeded),
            "buckets_over_c_f": len({b for b, _, _ in cf_exceeded}),
            "delta_values_over_c_f": len({v for _, v, _ in cf_exceeded}),
            "records_over_c_f": sum(n - c_f for _, _, n in cf_exceeded),
            "max_delta_count": max((n for _, _, n in cf_exceeded), default=0)}


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
    c_f, c_f_excess  the requested c_f and whether buckets may exceed it ('refuse' | 'allow')
    stuck_pairs    linkable pairs that no swap or c_f-keeping dissolve brought to the target
                   (cleared by exceeding c_f; only with c_f_excess='allow')
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
    c_f: int
    c_f_excess: str
    stuck_pairs: int
    cf_exceeded: list
    n_buckets: int
    n_groups: int
    events: list = field(default_factory=list)

    @property
    def relaxed(self):
        """What the plan relaxes of the paper's strict (c,k) promise (A18), for the release to
        record: {} when it keeps eq. (4) and c_f; 'mode': 'relax' when eq. (5) was asked for;
        the `cf_figures` when buckets exceed c_f (only ever with c_f_excess='allow')."""
        out = {}
        if self.mode == "relax":
            out["mode"] = "relax"
        if self.cf_exceeded:
            out.update(c_f_excess="allow", **cf_figures(self.cf_exceeded, self.c_f),
                       linkable_pairs_needing_excess=self.stuck_pairs)
        return out

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
            qi_grouping="sort_cut", kinds=None, seed=None, tick=None, c_f_excess="refuse"):
    """Plan a (c,k)-anonymized release (spec 2.6): FBs for ST, QI groups for GT.

    records      mappings with the QI and SA columns (id = record[key], or the position when
                 key is None) or triples (id, QI values, SA values)
    qis, sas     column names (with no QI every record is in QI group 1)
    k            minimum QI group size and minimum FB size (>= 2)
    c            minimum number of CtgT categories per FB (>= 1, <= number of categories)
    c_f          maximum number of records with one delta value per FB (>= 1)
    delta        the delta SA name, or a `Weights` (then zeta defaults to its zeta)
    mode         'strict' (every linkable pair meets eq. 4) or 'relax' (eq. 5, A10)
    c_f_excess   'refuse' (a plan that would exceed c_f raises PA005 with its figures) or
                 'allow' (buckets may exceed c_f where needed; `CkPlan.relaxed` says how far)
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
    if c_f_excess not in C_F_EXCESS:
        raise ValueError(f"unknown c_f_excess {c_f_excess!r}; expected 'refuse' or 'allow'")
    delta, zeta = _delta_zeta(delta, zeta, sas)
    tick = tick or (lambda: None)   # every phase lets a cancel or statement_timeout through
    ids, qrows, srows = _records(records, qis, sas, key)
    n = len(ids)
    if k > n:
        raise ValueError(f"k = {k} is larger than the number of records ({n}); lower k")
    order = _t_order(n, seed)
    rank = [0] * n
    for p, r in enumerate(order):
        rank[r] = p
    tick()

    # SA value codes in first-appearance (T) order: sorting delta codes = first appearance.
    m = len(sas)
    codes, decode = [[0] * n for _ in range(m)], [[] for _ in range(m)]
    enc = [{} for _ in range(m)]
    for r in order:
        tick()
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
    dcount = Counter(codes[d])
    check_reach([(decode[d][x], dcount[x]) for x in range(len(decode[d]))], k, c, c_f,
                delta=delta, mode=mode, c_f_excess=c_f_excess, zeta=zeta,
                distinct={s: len(decode[a]) for a, s in enumerate(sas)}, category_of=ctg.of_value)
    tick()
    group = qi_groups(qrows, k, qi_grouping, kinds, seed) if qis else [1] * n
    tick()

    # CreateFB and the remainder (A6, A7).
    fbs, rest = _create_fbs(order, codes[d], cat, len(ctg), k, c, c_f)
    tick()
    st = _Fbs(codes, d, rank, frozenset(sas.index(z) for z in zeta), c_f)
    for b, rows in enumerate(fbs, start=1):
        tick()
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

    # RefineFB (A9, A10): within c_f first, then past it for the stuck pairs (A18 decides).
    target = STRICT if mode == "strict" else RELAX
    ref.run(target, allow_excess=False)
    stuck = st.below(target)
    examples = [_pair_text(st, i, j, sas, decode, d) for i, j in stuck[:3]]
    if stuck:
        ref.run(target, allow_excess=True)

    fb = _bid_list(st, n)
    renum = {b: i for i, b in enumerate(sorted(st.rows), start=1)}
    cf_exceeded = []
    for b in sorted(st.rows):
        for v, cnt in sorted(st.cnt[b][d].items()):
            if cnt > c_f:
                cf_exceeded.append((renum[b], decode[d][v], cnt))
    if cf_exceeded and c_f_excess != "allow":
        f = cf_figures(cf_exceeded, c_f)
        eq = "eq. (4)" if mode == "strict" else "eq. (5)"
        why = (f"{len(stuck)} linkable bucket pair(s) still break {eq} after every swap and every dissolve "
               f"that keeps c_f (e.g. {'; '.join(examples)}), and " if stuck else
               "the records left after CreateFB fit in no bucket within c_f, and ")
        raise unsatisfiable(
            f"mode {mode!r} ({eq}) with c_f = {c_f} is out of reach: {why}meeting {eq} would put "
            f"{f['records_over_c_f']} record(s) above c_f: {f['c_f_exceeded']} (bucket, {delta} value) pair(s) "
            f"in {f['buckets_over_c_f']} of {len(st.rows)} bucket(s), {f['delta_values_over_c_f']} {delta} "
            f"value(s), up to {f['max_delta_count']} records of one value in a bucket",
            hint=("" if mode != "strict" else
                  f"publish with mode: 'relax' (eq. (5) ignores the zeta attributes {sorted(zeta)}), " if zeta else
                  "declare zeta (pganon.set_zeta, the SAs eq. (5) may leave linked) and publish with mode: 'relax', ")
            + "raise c_f, " + _ALLOW)
    achieved = "relax" if st.below(STRICT) else "strict"
    return CkPlan(
        ids=ids, fb=fb, group=group, category=[x + 1 for x in cat],
        initial_fb=initial, categories=ctg, delta=delta, zeta=tuple(s for s in sas if s in zeta),
        mode=mode, mode_achieved=achieved, c_f=c_f, c_f_excess=c_f_excess, stuck_pairs=len(stuck),
        cf_exceeded=cf_exceeded, n_buckets=len(st.rows), n_groups=len(set(group)), events=ref.events,
    )


def _pair_text(st, i, j, sas, decode, d):
    """A stuck pair in values, not bucket ids: 'buckets sharing v share only a=x, b=y'."""
    via = sorted(set(st.cnt[i][d]) & set(st.cnt[j][d]))
    cells = ", ".join(f"{sas[a]}={decode[a][v]!r}" for a, v in st.singletons(i, j))
    return f"two buckets sharing {sas[d]}={', '.join(repr(decode[d][v]) for v in via)} share one value of {cells}"


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
