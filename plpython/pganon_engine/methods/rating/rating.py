"""Rating (Liu, Luo, Huang, ICDMW 2011; spec 003-msa-comparative.md §2.4, §4.5-4.7, A17-A19,
claim C16): every published attribute A_i gets a sensitivity coefficient SC_i, and its values
are grouped into groups A_iID_j of at least SC_i pairwise-distinct values, so an attribute value
links to its tuple with probability <= 1 / SC_i.  The release is an Attribute Table (AT: per
tuple, the group label of each attribute) and an ID Table (IDT: per attribute and group, the
multiset of its values).

Per attribute the grouping is exactly the Anatomy loop with l := SC_i, so the planning is
`anatomize.plan` on that attribute's value counts.  Two entry points:

  plan_attributes   the database path: per attribute the value counts (its bucket table, values
                    in first-appearance order) -> one `RatingAttribute` per attribute with the
                    `runs.Plan` the set-based assign step turns into AT group ids (a
                    value's records in a seeded random order, or FIFO in key order for the
                    paper's variant, R2); the IDT is then a GROUP BY on that map
  rating            the small-data path (tests, fixtures, cross-checks): per attribute the
                    values of every tuple -> AT rows and IDT groups in Python
  suppress_tuples   whole-tuple suppression that makes every attribute eligible (A19), on
                    numpy code arrays

Decisions:

- R1  Every published attribute, QIs included, needs an SC (A17); SC = 1 publishes the
      attribute ungrouped: no plan, the AT cell is the value itself, no IDT column groups.
- R2  Without a seed these functions are the paper's deterministic variant: ties to the value
      that appears first, FIFO records, residue to the last-created eligible group (spec §2.4,
      §4.7; anatomize N1, N2): the faithful reference the fixtures test.  The random rules are
      anatomize's; attribute i draws from ``random.Random(f"{seed}/{i}")``, so attributes are
      independent and the release is reproducible.  With a seed, `rating` also deals each
      value's tuples to its groups in a seeded random order (``f"{seed}/{i}/deal"``) instead of
      FIFO: FIFO dealing into groups numbered in creation order lets a chain attack on AT + IDT
      pin most tuples to their value (issue 11; `chain_attack`).  Releases (`rating_release`)
      draw a seed unless the paper's order is asked for.
- R3  Eligibility (A19) is checked per attribute before anything is planned: no value of A_i
      in more than n / SC_i tuples.  'error' raises `errors.unsatisfiable` naming the attribute
      and the value.  'suppress' (in `rating` / `suppress_tuples`) leaves out whole tuples, never
      single cells, since the AT has one row per tuple: for each attribute in turn, the
      anatomize cap (N3) is applied to the tuples still kept, a capped value losing its last
      tuples in tuple order; passes repeat until no attribute needs a cap (removing tuples for
      one attribute can make another ineligible, as n shrinks).  `plan_attributes` plans only
      eligible counts: a caller that suppresses removes the tuples first, then recounts.
- R4  Labels ``A{i}ID{j}``: i is the attribute's 1-based position, j the 1-based group id of
      the plan (creation order with ``order='creation'``, anatomize's compact order by
      default; the paper relabels its groups too, spec §4.7).
- R5  IDT: per attribute, the multiset of each group's values, listed in tuple order; `idt_rows`
      renders the paper's layout, "-" where an attribute has fewer groups (spec §2.4).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from pganon_engine.core import errors
from pganon_engine.methods.anatomy import anatomize
from pganon_engine.methods.bucketization import runs

__all__ = ["RatingAttribute", "RatingRelease", "plan_attributes", "rating", "suppress_tuples",
           "label", "idt_rows"]


def label(i, g):
    """The paper's label of group id g (0-based) of attribute i (1-based): ``A{i}ID{g+1}``."""
    return f"A{i}ID{g + 1}"


@dataclass
class RatingAttribute:
    """One attribute's grouping: `plan` is None when SC = 1 (published ungrouped, R1)."""

    index: int
    name: str
    sc: int
    plan: object

    @property
    def n_groups(self):
        return 0 if self.plan is None else self.plan.n_groups

    def label(self, g):
        return label(self.index, g)


@dataclass
class RatingRelease:
    """The small-data release of `rating`.

    attributes  one RatingAttribute per attribute
    kept        indices of the published tuples (all of them unless suppressed, R3)
    suppressed  indices of the tuples left out
    group       per attribute, per published tuple (in `kept` order), its group id, or None
                for an SC = 1 attribute
    at          per published tuple, its AT row: the label per attribute (the value for SC = 1)
    idt         per attribute, per group id, the group's values in tuple order ([] for SC = 1)
    """

    attributes: list
    kept: list
    suppressed: list
    group: list
    at: list
    idt: list


def _sc_list(sc, d):
    sc = list(sc)
    if len(sc) != d:
        raise errors.invalid(f"{len(sc)} sensitivity coefficients for {d} attributes",
                             hint="give one SC per published attribute (SC = 1 publishes it ungrouped)")
    out = []
    for i, s in enumerate(sc, start=1):
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
            raise errors.invalid(f"SC of attribute A{i} is {s!r}; an SC is an integer >= 1")
        out.append(int(s))
    return out


def _names(names, d):
    if names is None:
        return [f"A{i}" for i in range(1, d + 1)]
    names = [str(x) for x in names]
    if len(names) != d:
        raise errors.invalid(f"{len(names)} names for {d} attributes")
    return names


def plan_attributes(bucket_sizes, sc, *, names=None, tie="first", seed=None, residue="last",
                    order="compact", tick=None):
    """Per attribute i: value counts ``bucket_sizes[i]`` (values in first-appearance order) and
    ``sc[i]`` -> a list of `RatingAttribute`, each with an `anatomize` plan (None for SC = 1).
    Every attribute must be eligible (R3); the error names the first one that is not."""
    bucket_sizes = [list(s) for s in bucket_sizes]
    d = len(bucket_sizes)
    sc = _sc_list(sc, d)
    names = _names(names, d)
    totals = {sum(s) for s in bucket_sizes}
    if len(totals) > 1:
        raise errors.invalid(f"the attributes count different numbers of tuples: {sorted(totals)}",
                             hint="every attribute's counts cover the same tuples (NULLs included)")
    out = []
    for i, (sizes, s, name) in enumerate(zip(bucket_sizes, sc, names), start=1):
        if s == 1:
            out.append(RatingAttribute(i, name, 1, None))
            continue
        try:
            p = anatomize.plan(sizes, s, tie=tie, residue=residue, order=order, tick=tick,
                               seed=None if seed is None else f"{seed}/{i}", eligibility="error")
        except errors.EngineError as e:
            if e.sqlstate != "PA005":
                raise
            raise errors.unsatisfiable(
                f"attribute {name} (A{i}, SC {s}): {e}",
                hint=f"lower SC of {name}, or suppress whole tuples first (rating(..., "
                     f"eligibility='suppress') / suppress_tuples)") from None
        out.append(RatingAttribute(i, name, s, p))
    return out


def _codes(column):
    """Dense codes of a column in first-appearance order, and the values by code."""
    index, values, codes = {}, [], np.empty(len(column), dtype=np.int64)
    for t, v in enumerate(column):
        c = index.get(v)
        if c is None:
            c = index[v] = len(values)
            values.append(v)
        codes[t] = c
    return codes, values


def _rank_in_value(codes):
    """For each entry, how many earlier entries share its code (0, 1, ...)."""
    n = codes.size
    order = np.argsort(codes, kind="stable")
    s = codes[order]
    first = np.ones(n, dtype=bool)
    first[1:] = s[1:] != s[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - start
    return rank


def suppress_tuples(codes, sc):
    """Whole tuples to keep so that every attribute is eligible (R3).

    codes: per attribute an int array of value codes, one per tuple (tuple order = FIFO order);
    sc: one SC per attribute.  Returns a boolean numpy mask over the tuples."""
    codes = [np.asarray(c, dtype=np.int64) for c in codes]
    sc = _sc_list(sc, len(codes))
    n = codes[0].size if codes else 0
    if any(c.shape != (n,) for c in codes):
        raise errors.invalid("every attribute needs one code per tuple")
    keep = np.ones(n, dtype=bool)
    changed = True
    while changed:
        changed = False
        for c, s in zip(codes, sc):
            if s == 1:
                continue
            idx = np.flatnonzero(keep)
            if idx.size == 0:
                return keep
            kc = c[idx]
            counts = np.bincount(kc).tolist()
            t = anatomize.eligibility_cap(counts, s)
            if max(counts) > t:
                drop = idx[_rank_in_value(kc) >= t]
                keep[drop] = False
                changed = True
    return keep


def rating(columns, sc, *, names=None, eligibility="error", tie="first", seed=None,
           residue="last", order="compact"):
    """The whole release on small data: columns[i] holds attribute i's value for every tuple
    (same length; tuple order is the FIFO order, or a seeded random order when `seed` is given,
    R2).  Returns a `RatingRelease`."""
    columns = [list(c) for c in columns]
    d = len(columns)
    sc = _sc_list(sc, d)
    names = _names(names, d)
    n = len(columns[0]) if columns else 0
    if any(len(c) != n for c in columns):
        raise errors.invalid("every attribute needs one value per tuple")
    if eligibility not in anatomize.ELIGIBILITY:
        raise errors.invalid(f"unknown eligibility rule {eligibility!r}",
                             hint=f"use one of {', '.join(anatomize.ELIGIBILITY)}")
    enc = [_codes(c) for c in columns]
    keep = np.ones(n, dtype=bool)
    if eligibility == "suppress" and d:
        keep = suppress_tuples([c for c, _ in enc], sc)
    kept = np.flatnonzero(keep).tolist()
    suppressed = np.flatnonzero(~keep).tolist()
    sizes, members = [], []
    for codes, values in enc:
        kc = codes[keep]
        sizes.append(np.bincount(kc, minlength=len(values)).tolist())
        mem = [[] for _ in values]
        for pos, c in enumerate(kc.tolist()):  # positions in `kept`, FIFO per value
            mem[c].append(pos)
        if seed is not None:  # R2: a seeded release deals each value's tuples at random
            deal = random.Random(f"{seed}/{len(members) + 1}/deal")
            for m in mem:
                deal.shuffle(m)
        members.append(mem)
    attrs = plan_attributes(sizes, sc, names=names, tie=tie, seed=seed, residue=residue,
                            order=order)
    m = len(kept)
    group, idt = [], []
    for a, (codes, values), mem in zip(attrs, enc, members):
        if a.plan is None:
            group.append(None)
            idt.append([])
            continue
        g_of = [None] * m
        for g, picks in enumerate(runs.expand(a.plan)):
            for b, r in picks:
                g_of[mem[b][r]] = g
        group.append(g_of)
        col = [columns[a.index - 1][t] for t in kept]
        groups = [[] for _ in range(a.n_groups)]
        for pos in range(m):
            groups[g_of[pos]].append(col[pos])
        idt.append(groups)
    at = []
    for pos, t in enumerate(kept):
        at.append(tuple(columns[a.index - 1][t] if a.plan is None else a.label(group[a.index - 1][pos])
                        for a in attrs))
    return RatingRelease(attrs, kept, suppressed, group, at, idt)


def idt_rows(release):
    """The paper's IDT layout (Table 7): one row per j, (label "ID{j}", then per attribute the
    group's values or "-" when the attribute has fewer groups or is ungrouped)."""
    rows = max((a.n_groups for a in release.attributes), default=0)
    out = []
    for j in range(rows):
        cells = [f"ID{j + 1}"]
        for a, groups in zip(release.attributes, release.idt):
            cells.append(list(groups[j]) if j < len(groups) else "-")
        out.append(tuple(cells))
    return out

