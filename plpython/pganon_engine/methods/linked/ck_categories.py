"""SA weights, the choice of delta and zeta, and the category table CtgT: the steps that
(c,k)-anonymization and the (p,k)-angelization baseline share (spec 004-ck-anonymization.md,
sections 1.3, 2.1, 2.2 and HLPN Rules 1-5).  Used by `ck` and `pk` of this package.

Decisions (numbered like the other engine modules; section 7 items of the spec in brackets):

- A1  weight(s) = number of distinct SAs in ``identified_by[s]`` (Function 1 read as in
      Table 11) [7.2].  The dependency map is admin input, never computed from data; an SA
      missing from the map has no identifying SAs (weight 0).  An SA in its own list, or a
      name that is not an SA, is rejected.
- A2  xi = the SAs of maximum weight.  chi (the external factor) is added to the members of
      xi only, as Algorithm 1 does (``w_j = w_j + chi(w_j)`` for w_j in xi); delta is the
      single maximum after that.  An explicit ``delta`` must be a member of xi (delta is by
      definition a maximum-weighted SA) and must agree with chi when both are given.  A tie
      that neither resolves is an error ("unresolvable tie for δ: give chi or delta") [7.3].
- A3  zeta = the SAs of minimum weight (weights before chi), without delta.  When that set
      would cover every SA except delta, zeta is empty, so that the relaxed condition eq. (5)
      still checks something (spec 2.6 step 2, degenerate case).  An explicit ``zeta`` must
      name SAs other than delta.
- A4  CtgT (spec 1.3 proposal) [7.4]: group the records by delta value, order the values by
      (frequency ascending, first appearance), pack consecutive values into one category until
      it holds >= k records; values left over join the last category.  Categories are numbered
      1..C; with C <= 4 they carry the paper's labels Top secret / Secret / Less secret /
      Nonsecret in that order, with more the paper gives none (label None).  Only the delta
      value counts are needed (aggregate input).
"""

from __future__ import annotations

import numbers
import operator
from dataclasses import dataclass

__all__ = ["Weights", "weights", "Category", "CategoryTable", "category_table", "categories", "LABELS"]

LABELS = ("Top secret", "Secret", "Less secret", "Nonsecret")


# --------------------------------------------------------------------------------------------
# Weights, delta, zeta (Function 1, Algorithm 1 lines 2-7, Rules 1-4)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Weights:
    """SA weights and the attributes derived from them.

    weights   SA -> |identified_by[SA]| (Table 11's "Weightage")
    adjusted  SA -> weight after chi (chi is added to the members of xi only)
    xi        the maximum-weighted SAs before chi, in `sas` order
    zeta      the minimum-weighted SAs that eq. (5) ignores (never delta), in `sas` order
    delta     the single maximum-weighted SA after chi
    rule      how delta was decided: 'unique' (one maximum), 'chi', or 'delta' (explicit)
    """

    weights: dict
    adjusted: dict
    xi: tuple
    zeta: tuple
    delta: str
    rule: str


def _names(sas):
    if isinstance(sas, str) or not sas:
        raise ValueError("sas must be a non-empty list of sensitive attribute names")
    sas = list(sas)
    if not all(isinstance(s, str) for s in sas):
        raise ValueError(f"sas must be attribute names (strings), got {sas!r}")
    dup = sorted({s for s in sas if sas.count(s) > 1})
    if dup:
        raise ValueError(f"sensitive attribute(s) {dup} listed twice in sas; list each once")
    return sas


def weights(sas, identified_by, chi=None, delta=None, zeta=None):
    """Per-SA weights (Function 1 / Table 11), delta and zeta.

    sas            sensitive attribute names; their order is the order of xi and zeta
    identified_by  mapping SA -> iterable of the other SAs that identify it (domain knowledge)
    chi            optional mapping SA -> number, the external factor that breaks a tie in xi
    delta          optional explicit delta (must be one of xi)
    zeta           optional explicit minimum-weight set for eq. (5) (default: A3)
    Returns a `Weights`.  Raises ValueError for unknown names, an SA that identifies itself,
    a non-maximal delta, and an unresolved tie for delta.
    """
    sas = _names(sas)
    known = set(sas)
    if identified_by is None:
        identified_by = {}
    if not hasattr(identified_by, "items"):
        raise ValueError("identified_by must be a mapping SA -> list of the SAs that identify it")
    deps = {s: set() for s in sas}
    for s, ids in identified_by.items():
        if s not in known:
            raise ValueError(f"identified_by names {s!r}, which is not a sensitive attribute; "
                             f"the sensitive attributes are {sas}")
        if isinstance(ids, str):
            raise ValueError(f"identified_by[{s!r}] must be a list of SA names, not the string {ids!r}")
        for t in ids:
            if t not in known:
                raise ValueError(f"identified_by[{s!r}] names {t!r}, which is not a sensitive "
                                 f"attribute; the sensitive attributes are {sas}")
            if t == s:
                raise ValueError(f"SA {s!r} is listed in its own identified_by list; "
                                 f"an attribute cannot identify itself, remove it")
            deps[s].add(t)
    w = {s: len(deps[s]) for s in sas}
    top = max(w.values())
    xi = tuple(s for s in sas if w[s] == top)

    adjusted = dict(w)
    if chi is not None:
        if not hasattr(chi, "items"):
            raise ValueError("chi must be a mapping SA -> number (the external factor)")
        for s, x in chi.items():
            if s not in known:
                raise ValueError(f"chi names {s!r}, which is not a sensitive attribute; "
                                 f"the sensitive attributes are {sas}")
            if isinstance(x, bool) or not isinstance(x, numbers.Real):
                raise ValueError(f"chi[{s!r}] must be a number, not {x!r}")
        for s in xi:
            adjusted[s] = w[s] + chi.get(s, 0)
    best = max(adjusted[s] for s in xi)
    winners = [s for s in xi if adjusted[s] == best]

    if delta is not None:
        if delta not in known:
            raise ValueError(f"delta {delta!r} is not a sensitive attribute; "
                             f"the sensitive attributes are {sas}")
        if delta not in xi:
            raise ValueError(f"delta {delta!r} has weight {w[delta]} but the maximum weight is "
                             f"{top} ({', '.join(xi)}); delta must be a maximum-weighted SA: "
                             f"pick one of them or fix identified_by")
        if chi is not None and len(winners) == 1 and winners[0] != delta:
            raise ValueError(f"chi picks {winners[0]!r} but delta is {delta!r}; give only one of them")
        rule = "delta"
    elif len(winners) == 1:
        delta = winners[0]
        rule = "unique" if len(xi) == 1 else "chi"
    else:
        raise ValueError(f"unresolvable tie for δ: give chi or delta "
                         f"({', '.join(winners)} all have weight {best})")

    if zeta is None:
        low = min(w.values())
        z = tuple(s for s in sas if w[s] == low and s != delta)
        if set(z) == known - {delta}:
            z = ()
    else:
        if isinstance(zeta, str):
            raise ValueError(f"zeta must be a list of SA names, not the string {zeta!r}")
        zs = set(zeta)
        bad = sorted(zs - known)
        if bad:
            raise ValueError(f"zeta names {bad}, which are not sensitive attributes; "
                             f"the sensitive attributes are {sas}")
        if delta in zs:
            raise ValueError(f"zeta must not contain delta {delta!r}; eq. (5) excludes delta anyway")
        z = tuple(s for s in sas if s in zs)
    return Weights(weights=w, adjusted=adjusted, xi=xi, zeta=z, delta=delta, rule=rule)


# --------------------------------------------------------------------------------------------
# Category table (Table 8, Rule 5)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Category:
    """One row of CtgT: id 1..C, the paper's sensitivity label (or None), the delta values it
    holds (in packing order) and its number of records."""

    id: int
    label: object
    values: tuple
    size: int


@dataclass(frozen=True)
class CategoryTable:
    """CtgT: `categories` in id order and `of_value`, delta value -> category id."""

    categories: tuple
    of_value: dict

    def __len__(self):
        return len(self.categories)


def category_table(delta_counts, k):
    """CtgT from the delta value counts (A4).

    delta_counts  sequence of (delta value, number of records) in first-appearance order
                  (this aggregate is all the step needs)
    k             the packing threshold: a category is closed once it holds >= k records
    """
    try:
        k = operator.index(k)
    except TypeError:
        raise ValueError(f"k must be an integer, got {k!r}") from None
    if k < 1:
        raise ValueError(f"k = {k} is invalid; k must be >= 1")
    items = list(delta_counts)
    if not items:
        raise ValueError("category_table needs at least one delta value")
    seen = set()
    for pair in items:
        if len(pair) != 2:
            raise ValueError(f"delta_counts must hold (value, count) pairs, got {pair!r}")
        v, cnt = pair
        if v in seen:
            raise ValueError(f"delta value {v!r} appears twice in delta_counts; give each value once")
        seen.add(v)
        if isinstance(cnt, bool) or not isinstance(cnt, int) or cnt < 1:
            raise ValueError(f"count of delta value {v!r} must be an integer >= 1, got {cnt!r}")
    order = sorted(range(len(items)), key=lambda i: (items[i][1], i))
    packs, cur, size = [], [], 0
    for i in order:
        cur.append(i)
        size += items[i][1]
        if size >= k:
            packs.append(cur)
            cur, size = [], 0
    if cur:
        if packs:
            packs[-1].extend(cur)
        else:
            packs.append(cur)
    labelled = len(packs) <= len(LABELS)
    cats, of_value = [], {}
    for cid, pack in enumerate(packs, start=1):
        vals = tuple(items[i][0] for i in pack)
        for v in vals:
            of_value[v] = cid
        cats.append(Category(id=cid, label=LABELS[cid - 1] if labelled else None, values=vals,
                             size=sum(items[i][1] for i in pack)))
    return CategoryTable(categories=tuple(cats), of_value=of_value)


def categories(order, dvals, k):
    """CtgT of the records: their delta values `dvals` counted in the order `order` (T order)."""
    counts = {}
    for r in order:
        counts[dvals[r]] = counts.get(dvals[r], 0) + 1
    return category_table(list(counts.items()), k)
