"""What a (c,k) or (p,k) plan publishes, and the reference readings of a release: GT cells of a QI
grouping (`generalize`, which the family materializes), ST cells (`sensitive_table`), the
linkable-pair intersections of eq. (3) (`intersections`: a cell of exactly one value is what
eq. (4)/(5) forbid) and the NCP of eq. (6) (`ncp`).  Apart from the planners because it reads a
plan or a release, never builds one; the unit tests check the paper's tables with it, and the
database verifier (sql/40-verify/10-verify-linked.sql) re-checks the release independently.

Decisions (numbered with those of `ck`; spec section 7 items in brackets):

- A13 GT cells (spec 2.6 step 6) [7.10]: numeric QI -> (min, max) of the group; categorical
      QIs are kept, greedily in QI order, while every combination of kept values occurs >= k
      times in the group, otherwise '*'.  categorical='suppress' always gives '*' (the (p,k)
      GT's "Person").
- A14 NCP (eq. 6, spec 4.1) [7.14]: QI weights 1; numeric (hi - lo) / (max - min over T), 0
      for a zero-width domain; categorical kept -> 0, '*' -> 1, a value set -> |set| / |domain|
      (0 for a single value); NCP% = 100 * NCP / (rows * sum of weights).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import combinations

from . import ck_input

__all__ = ["GroupSummary", "Generalized", "generalize", "sensitive_table", "Link", "intersections",
           "Ncp", "ncp"]


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
    k = ck_input.integer(k, "k", 1)
    if categorical not in ("keep", "suppress"):
        raise ValueError(f"categorical must be 'keep' or 'suppress', not {categorical!r}")
    qi_rows = [tuple(r) for r in qi_rows]
    group_ids = list(group_ids)
    if len(group_ids) != len(qi_rows):
        raise ValueError(f"{len(group_ids)} group ids for {len(qi_rows)} QI rows; give one per row")
    if not qi_rows:
        raise ValueError("no QI rows to generalize")
    dq = len(qi_rows[0])
    kinds = ck_input.kinds(qi_rows, dq, kinds)
    members = ck_input.members(range(len(qi_rows)), group_ids)
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
