"""(c,k)-anonymization of Khan et al. (2020): the planner's entry point, no database access
(spec 004-ck-anonymization.md, sections 1-4 and 8).

`ck_plan` gives every record a fingerprint bucket (FB, its BID in the sensitive table ST) and
a QI group (its equivalence class in GT), formed independently (one-to-many linking).
`check_reach` refuses, from aggregates alone, a request that no release can meet within c_f
(A17); `ck_plan` refuses a plan that exceeds c_f unless that is asked for (A18).

The linked family's planning code, one job per module (decisions A1-A18 are numbered across them):
  ck_input       the records and parameters the planners take, T order and its ties (A16)
  ck_categories  SA weights, delta and zeta, the category table CtgT (A1-A4)
  ck_grouping    QI groups from the QI values alone (A12)
  ck_buckets     the live FBs and the status of a linkable pair (A8)
  ck_refine      CreateFB and RefineFB (A6, A9)
  ck             this module: the (c,k) plan, what c_f can reach, refusals (A5, A7, A10, A11,
                 A17, A18)
  pk             the (p,k)-angelization baseline (A15)
  ck_cells       GT/ST cells, the linkable-pair intersections of eq. (3), NCP of eq. (6) (A13, A14)

Decisions (spec section 7 items in brackets):

- A5  c is the minimum number of distinct categories in an FB; c_f the maximum number of
      records with one delta value in an FB; k also the minimum FB size [7.5].
- A7  The remainder is kept as the last FB if it has >= k records, >= c categories and no
      delta value above c_f; otherwise it is dissolved record by record with the placement of
      A9 (a record exceeds c_f only when no FB has room; A18 decides whether that is allowed).
      With no other FB it stays as it is (the whole table is one FB).
- A10 The target is eq. (4) for mode='strict' and eq. (5) for mode='relax' (spec 1.5 (a)/(b));
      strict never falls back to eq. (5).  A first phase clears the pairs below target with
      swaps and dissolves that keep every bucket within c_f; pairs it cannot clear (stuck) go
      to a second phase that may exceed c_f, so every linkable pair meets the target.  The
      plan reports the mode achieved ('strict' iff every final linkable pair meets eq. 4), how
      many pairs were stuck, and every (FB, delta value) above c_f.
- A11 BIDs and QI group ids are 1, 2, ... ; BIDs are renumbered after refinement in creation
      order of the surviving FBs (this gives Table 6's numbering).
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
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pganon_engine.core.errors import unsatisfiable

from . import ck_input
from .ck_buckets import RELAX, STRICT, Fbs
from .ck_categories import CategoryTable, categories
from .ck_grouping import qi_groups
from .ck_refine import Refiner, create_fbs

__all__ = [
    "CkPlan",
    "ck_plan",
    "Shortfall",
    "c_f_shortfalls",
    "check_reach",
    "cf_figures",
]

MODES = ("strict", "relax")
C_F_EXCESS = ("refuse", "allow")  # may buckets exceed c_f where the refinement needs it (A18)


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
        return ck_input.members(self.ids, self.fb)

    def groups(self):
        """QI group id -> record ids (input order)."""
        return ck_input.members(self.ids, self.group)

    def initial_buckets(self):
        """BID -> record ids before refinement (input order)."""
        return ck_input.members(self.ids, self.initial_fb)


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
    qis, sas = ck_input.columns(qis, sas)
    k = ck_input.integer(k, "k", 2)
    c = ck_input.integer(c, "c", 1)
    c_f = ck_input.integer(c_f, "c_f", 1)
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected 'strict' or 'relax'")
    if c_f_excess not in C_F_EXCESS:
        raise ValueError(f"unknown c_f_excess {c_f_excess!r}; expected 'refuse' or 'allow'")
    delta, zeta = ck_input.delta_zeta(delta, zeta, sas)
    tick = tick or (lambda: None)   # every phase lets a cancel or statement_timeout through
    ids, qrows, srows = ck_input.records(records, qis, sas, key)
    n = len(ids)
    if k > n:
        raise ValueError(f"k = {k} is larger than the number of records ({n}); lower k")
    order = ck_input.t_order(n, seed)
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
    ctg = categories(order, dvals, k)
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
    fbs, rest = create_fbs(order, codes[d], cat, len(ctg), k, c, c_f)
    tick()
    st = Fbs(codes, d, rank, frozenset(sas.index(z) for z in zeta), c_f)
    for b, rows in enumerate(fbs, start=1):
        tick()
        st.add(b, rows)
    ref = Refiner(st, c_f, ids, tick)
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
