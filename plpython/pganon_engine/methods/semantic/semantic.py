"""Semantic anonymization (Mubark, Elabd, Abdulkader, KST 2016, as used by spec
003-msa-comparative.md §2.3, §4.2-4.4, A10-A16, claim C8): an l-diverse generalized table can
still leak through the *meaning* of its sensitive values (a class whose every chest-pain value is
an angina reveals "heart disease").  The data owner states semantic rules (an SA predicate and
the category it reveals); a rule is *effective* on an equivalence class (EC) when enough of the
class's records satisfy it, and such a class is merged with its QID-nearest class until no class
has an effective rule.  SA values never change; only QI cells coarsen.

The engine reads the classes, not the rows: per class its record count, per QI its cell
(numeric (min, max), or the set of its categorical values) and per SA its value counts (what a
GROUP BY over the l-diverse release gives), and returns which input classes form each output
class, their new QI cells and the log of the checks and merges.  The database then relabels the
rows of merged classes (set-based: a join on the input class id).

  check       the semantic check (Table 3): per class its effective rules and their coverage
              (the rules and their coverage: `rules`; the classes read: `classes`)
  anonymize   the merge loop (Table 4), a `Result`
  measures    QID-NCP%, DM and GLM of a list of classes (input or output), through
              `ncp.ncp_percent`, `joint.discernibility` and `ir_metrics.glm`

Decisions (spec items in brackets):

- S1-S3 (rules, value semantics, coverage and theta) are stated in `rules`; the input classes
      and QI domains are parsed in `classes`.
- S4  The loop [A14]: take the first EC (in sort order) with an effective rule; merge it with
      the EC whose merge raises the table's NCP least; repeat until no EC has one.  The input
      order is the sort order (give the classes sorted by their generalized QIs); a merged EC
      takes the place of the earlier of the two.  Ties (within a relative 1e-9, the float
      rounding of the NCP sums) go to the nearest following EC, else the nearest preceding
      one: on Table 2, [30,40]/F costs the same with [20,30] and [40,50] and merges with
      [40,50], as the paper does.
- S5  Merged cells [A14, A16]: numeric QIs the union [min, max] of the members' (true, stored)
      bounds; categorical QIs keep a value all members share, else the LCA of their values when
      a hierarchy is given, else '*' (the paper's "Suppress Sex").  An EC never merged keeps its
      input cell (a value, its LCA, or its value set when there is no hierarchy).
- S6  NCP (for S4 and `measures`): numeric width / domain span (0 for a zero span); a
      categorical value 0, a hierarchy node |leaves(node)| / |leaves(root)| (a leaf 0, Xu et al.
      [A15]), a value set |set| / |domain|, '*' 1; weights 1.  QID-NCP% = 100 * sum over records
      of sum over QIs / (records * QIs), as `ncp.ncp_percent` (W1) computes it; DM = sum
      of |EC|^2 (`joint.discernibility`); GLM = Iyengar's per-cell loss (`ir_metrics.glm`),
      averaged over records and QIs.  Domains: numeric ``lo``/``hi`` (or ``span``),
      categorical ``hierarchy``, ``values`` or ``size`` (a size-only domain is padded with
      placeholder categories for `measures`).
- S7  Refused before any merge: a rule whose coverage on the whole table is >= theta.  Every
      partition of the table then keeps an EC at >= theta (the table's coverage is the
      record-weighted mean of the ECs'), so the loop could only end as one EC with the rule
      still effective; the error names the rule and its coverage (`errors.unsatisfiable`).
- S8  Merging only unions SA multisets, so no EC loses a distinct SA value: distinct
      l-diversity (per SA) never drops [A14].  Entropy l-diversity over the whole SA tuple
      (A10) is not re-checked here: per-SA counts do not carry the tuples.
- S9  Persons (a class given with ``"persons": {sa: {frozenset of values: persons}}``, the
      value sets of its persons; every class or none).  A rule is judged over records and over
      persons, and its coverage is the larger share: records satisfying it, or persons holding
      at least one value that satisfies it.  So a class where every person holds an angina
      value reveals "heart disease" even if some of their records hold other values, and a
      class whose records mostly match stays flagged even if few persons own them.  Merged
      classes add their counters, which is exact because the caller keeps every person's
      records in one class (classes share no person); S7 reads the table's persons the same
      way.  `n` stays the class's records (merge costs and measures weigh records).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from pganon_engine.core import errors
from pganon_engine.metrics import ir_metrics, joint, workload
from pganon_engine.metrics.ncp import ncp_percent

from .classes import parse_classes, parse_qis
from .rules import Matcher, flag_entry, known_sas, num, parse_rules, parse_theta

__all__ = ["OutClass", "Result", "check", "anonymize", "measures", "TIE_TOL"]

TIE_TOL = 1e-9  # relative: NCP increases this close are a tie (S4)
STAR = workload.SUPPRESSED


# --------------------------------------------------------------------------------------------
# The semantic check (S3)
# --------------------------------------------------------------------------------------------


def _setup(classes, qis, rules):
    qis = parse_qis(qis)
    cls, sa_names = parse_classes(classes, qis)
    return qis, cls, known_sas(parse_rules(rules), sa_names, cls)


def check(classes, rules, *, theta=1.0):
    """The semantic check of every class (Table 3): one entry per class with an effective rule,
    {"ec": class index, "rules": [ids], "coverage": {id: share}, "categories": [...]}.  Only
    the classes' n and SA counts are read."""
    theta = parse_theta(theta)
    cls, sa_names = parse_classes(classes, None)
    rules = known_sas(parse_rules(rules), sa_names, cls)
    m = Matcher(rules)
    return [flag_entry(i, eff, rules) for i, c in enumerate(cls)
            if (eff := m.effective(c.sa, c.n, theta, c.persons))]


# --------------------------------------------------------------------------------------------
# The merge loop (S4, S5, S7)
# --------------------------------------------------------------------------------------------


@dataclass
class OutClass:
    """An output class: the input classes it is made of, its records, its QI cells (S5) and
    its SA value counts."""

    members: tuple
    n: int
    cells: tuple
    sa: dict
    persons: dict = None


@dataclass
class Result:
    """classes: the output classes in sort order; class_of[i]: the output class of input class
    i; flagged: the semantic check of the input (Table 3); log: one entry per merge."""

    classes: list
    class_of: list
    flagged: list
    log: list


class _State:
    """The live classes in sort order, with numpy columns for the vectorized merge costs."""

    def __init__(self, qis, cls):
        self.qis = qis
        self.members = [(i,) for i in range(len(cls))]
        self.n = np.array([c.n for c in cls], dtype=np.float64)
        self.sa = [c.sa for c in cls]
        self.persons = [c.persons for c in cls]
        self.merged = [False] * len(cls)
        self.cols = []  # per QI: (kind, data)
        pen = np.zeros(len(cls))
        self.node_pen = {}
        for j, q in enumerate(qis):
            cells = [c.cells[j] for c in cls]
            if q.kind == "numeric":
                lo = np.array([float(c[0]) for c in cells])
                hi = np.array([float(c[1]) for c in cells])
                span = q.span
                self.cols.append(["num", lo, hi, [c[0] for c in cells], [c[1] for c in cells], span])
                pen += (hi - lo) / span if span > 0 else 0.0
            elif q.hierarchy is not None:
                h = q.hierarchy
                nodes = np.array([self._lca(h, h.leaf_ids(list(c))) for c in cells], dtype=np.int64)
                npen = np.where(h.is_leaf, 0.0, h.leaf_count / float(h.leaf_count[0]))
                self.cols.append(["tree", nodes, h, npen])
                pen += npen[nodes]
            else:
                # a value code, or -1 for several values; the value set as given (S5)
                index = {}
                code = np.array([index.setdefault(next(iter(c)), len(index)) if len(c) == 1 else -1
                                 for c in cells], dtype=np.int64)
                own = np.array([0.0 if len(c) == 1 else len(c) / q.size if q.size else 1.0
                                for c in cells])
                self.cols.append(["flat", code, list(cells), index, own])
                pen += own
        self.pen = pen  # sum over QIs of each class's NCP

    @staticmethod
    def _lca(h, ids):
        node = int(ids[0])
        for x in ids[1:]:
            node = h.lca(node, int(x))
        return node

    def merge_costs(self, i):
        """Increase of the table's NCP (sum over records and QIs) when class i merges with each
        class, and the merged classes' NCP sums."""
        merged = np.zeros(len(self.n))
        for col in self.cols:
            if col[0] == "num":
                _, lo, hi, _, _, span = col
                if span > 0:
                    merged += (np.maximum(hi, hi[i]) - np.minimum(lo, lo[i])) / span
            elif col[0] == "tree":
                _, nodes, h, npen = col
                merged += npen[h.lca_many(int(nodes[i]), nodes)]
            else:
                code = col[1]
                merged += np.where((code >= 0) & (code == code[i]), 0.0, 1.0)
        inc = (self.n + self.n[i]) * merged - self.n * self.pen - self.n[i] * self.pen[i]
        return inc, merged

    def partner(self, i):
        inc, merged = self.merge_costs(i)
        inc[i] = np.inf
        best = inc.min()
        tied = np.flatnonzero(inc <= best + TIE_TOL * max(1.0, abs(best)))
        after = tied[tied > i]
        c = int(after[0]) if after.size else int(tied[tied < i][-1])
        return c, float(inc[c]), float(merged[c])

    def cell(self, k, j):
        """The published cell of live class k for QI j (S5)."""
        col = self.cols[j]
        if col[0] == "num":
            return (col[3][k], col[4][k])
        if col[0] == "tree":
            return col[2].labels[int(col[1][k])]
        code, cells = col[1], col[2]
        if code[k] >= 0:
            return next(iter(cells[k]))
        return STAR if self.merged[k] else cells[k]

    def merge(self, i, c, merged_pen):
        """Merge classes i and c into the earlier position; returns it."""
        a, b = min(i, c), max(i, c)
        self.members[a] = tuple(sorted(self.members[a] + self.members[b]))
        self.sa[a] = {s: self.sa[a][s] + self.sa[b][s] for s in self.sa[a]}
        if self.persons[a] is not None:  # S9: classes share no person
            self.persons[a] = {s: self.persons[a][s] + self.persons[b][s] for s in self.persons[a]}
        self.merged[a] = True
        for col in self.cols:
            if col[0] == "num":
                _, lo, hi, lox, hix, _ = col
                lo[a], hi[a] = min(lo[a], lo[b]), max(hi[a], hi[b])
                lox[a] = lox[a] if num(lox[a]) <= num(lox[b]) else lox[b]
                hix[a] = hix[a] if num(hix[a]) >= num(hix[b]) else hix[b]
                del lox[b], hix[b]
                col[1], col[2] = np.delete(lo, b), np.delete(hi, b)
            elif col[0] == "tree":
                nodes, h = col[1], col[2]
                nodes[a] = h.lca(int(nodes[a]), int(nodes[b]))
                col[1] = np.delete(nodes, b)
            else:
                code, cells = col[1], col[2]
                if not (code[a] >= 0 and code[a] == code[b]):
                    code[a] = -1
                cells[a] = cells[a] | cells[b]
                del cells[b]
                col[1] = np.delete(code, b)
        self.n[a] += self.n[b]
        self.pen[a] = merged_pen
        self.n, self.pen = np.delete(self.n, b), np.delete(self.pen, b)
        del self.members[b], self.sa[b], self.merged[b], self.persons[b]
        return a


def _show(cell):
    if isinstance(cell, tuple):
        return f"[{cell[0]}, {cell[1]}]"
    if isinstance(cell, frozenset):
        return "{" + ", ".join(sorted(map(str, cell))) + "}"
    return str(cell)


def anonymize(classes, qis, rules, *, theta=1.0):
    """Merge ECs until no EC has an effective rule (S4).

    classes  per input EC, in sort order: {"n": records, "qi": [cell per QI], "sa": {sa:
             {value: count}}} (or an (n, qi, sa) tuple); a numeric cell is (min, max) or a
             number, a categorical cell a value or a set of values
    qis      per QI its domain: {"name", "kind": "numeric", "lo", "hi"} (or "span"), or
             {"name", "kind": "categorical", "hierarchy" | "values" | "size"}
    rules    plain-data rules (S1)
    Returns a `Result`; raises `errors.unsatisfiable` when a rule covers the whole table (S7)."""
    theta = parse_theta(theta)
    qis, cls, rules = _setup(classes, qis, rules)
    m = Matcher(rules)
    flags = [m.effective(c.sa, c.n, theta, c.persons) for c in cls]
    flagged = [flag_entry(i, eff, rules) for i, eff in enumerate(flags) if eff]
    if cls:
        table = {s: sum((c.sa[s] for c in cls), Counter()) for s in cls[0].sa}
        tp = None if cls[0].persons is None else {s: sum((c.persons[s] for c in cls), Counter()) for s in table}
        cover = dict(m.effective(table, sum(c.n for c in cls), 0, tp))  # every rule's coverage of the table
        doomed = [(r, cover[k]) for k, r in enumerate(rules) if cover[k] >= theta]
        if doomed:
            r, cov = doomed[0]
            also = f" (so do {', '.join(x.id for x, _ in doomed[1:])})" if len(doomed) > 1 else ""
            top = max(c for _, c in doomed)
            raise errors.unsatisfiable(
                f"rule {r.id} covers {float(cov):.4g} of the whole table{also}, theta is "
                f"{float(theta):.4g}: some class keeps it effective however the classes are merged",
                hint=f"narrow or drop {', '.join(x.id for x, _ in doomed)}, or raise theta above "
                     f"{float(top):.4g}")
    st = _State(qis, cls)
    log = []
    while True:
        i = next((k for k, f in enumerate(flags) if f), None)
        if i is None:
            break
        if len(flags) == 1:  # cannot happen after S7; kept as a guard
            raise errors.unsatisfiable("the whole table is one class and a rule is still effective")
        c, inc, merged_pen = st.partner(i)
        before = [st.cell(i, j) for j in range(len(qis))]
        ec, other = st.members[i], st.members[c]
        a = st.merge(i, c, merged_pen)
        after = [st.cell(a, j) for j in range(len(qis))]
        eff = flags[i]
        entry = flag_entry(i, eff, rules)
        entry.update({"step": len(log) + 1, "ec": ec, "action": "merge", "with": other,
                      "result": st.members[a], "ncp_increase": inc,
                      "changes": {q.name: f"{_show(x)} -> {_show(y)}"
                                  for q, x, y in zip(qis, before, after) if x != y}})
        log.append(entry)
        del flags[max(i, c)]
        flags[a] = m.effective(st.sa[a], int(st.n[a]), theta, st.persons[a])
    out = [OutClass(st.members[k], int(st.n[k]), tuple(st.cell(k, j) for j in range(len(qis))),
                    st.sa[k], st.persons[k]) for k in range(len(st.members))]
    class_of = [0] * len(cls)
    for k, oc in enumerate(out):
        for i in oc.members:
            class_of[i] = k
    return Result(out, class_of, flagged, log)


# --------------------------------------------------------------------------------------------
# Measures (S6)
# --------------------------------------------------------------------------------------------


class _Pad:
    """A placeholder category: pads a size-only categorical domain for `workload` (S6)."""

    __slots__ = ()

    def __repr__(self):
        return "<pad>"


def _workload_domains(qis, cells):
    doms = []
    for j, q in enumerate(qis):
        if q.kind == "numeric":
            doms.append(workload.Domain.numeric(q.name, lo=float(q.lo), hi=float(q.hi), integer=False))
        elif q.hierarchy is not None:
            h = q.hierarchy
            doms.append(workload.Domain.categorical(q.name, [h.labels[v] for v in h.leaves]))
        elif q.values is not None:
            doms.append(workload.Domain.categorical(q.name, q.values))
        else:
            seen = list(dict.fromkeys(v for c in cells for v in _values(c[j])))
            if len(seen) > q.size:
                raise errors.bad_data(f"categorical QI {q.name!r} shows {len(seen)} values, more than its "
                                      f"domain size {q.size}", hint="give the QI's true domain size")
            pad = [_Pad() for _ in range(q.size - len(seen))]
            doms.append(workload.Domain.categorical(q.name, seen + pad))
    return doms


def _values(cell):
    if isinstance(cell, frozenset):
        return cell
    if isinstance(cell, str) and cell == STAR:
        return ()
    return (cell,)


def _workload_cell(q, cell):
    """A published cell as `workload`/`ir_metrics` read it: a hierarchy node is its leaf set."""
    if q.kind == "categorical" and q.hierarchy is not None and not (isinstance(cell, str) and cell == STAR):
        h = q.hierarchy
        v = h.index[cell]
        if not h.is_leaf[v]:
            return frozenset(h.labels[x] for x in h.leaves if h.anc[x, h.depth[v]] == v)
    return cell


def measures(classes, qis):
    """QID-NCP% (`ncp.ncp_percent`), DM (`joint.discernibility`) and GLM (mean over records
    and QIs of `ir_metrics.glm`) of input classes or of `Result.classes` (S6)."""
    qis = parse_qis(qis)
    if classes and isinstance(classes[0], OutClass):
        rows = [(c.n, c.cells) for c in classes]
    else:
        parsed, _ = parse_classes(classes, qis)
        rows = []
        for c in parsed:
            cells = []
            for q, x in zip(qis, c.cells):
                if q.kind == "numeric":
                    cells.append(x)
                elif q.hierarchy is not None:
                    h = q.hierarchy
                    cells.append(h.labels[_State._lca(h, h.leaf_ids(list(x)))])
                else:
                    cells.append(next(iter(x)) if len(x) == 1 else x)
            rows.append((c.n, tuple(cells)))
    if not rows:
        return {"ncp_percent": 0.0, "dm": 0.0, "glm": 0.0}
    doms = _workload_domains(qis, [cells for _, cells in rows])
    cells = [tuple(_workload_cell(q, x) for q, x in zip(qis, cs)) for _, cs in rows]
    counts = [n for n, _ in rows]
    N = sum(counts)
    ncp = ncp_percent(cells, counts, doms)
    glm = sum(n * sum(float(ir_metrics.glm(x, d)) for x, d in zip(cs, doms)) for n, cs in zip(counts, cells))
    return {"ncp_percent": ncp, "dm": joint.discernibility(counts, 0, N), "glm": glm / (N * len(qis))}
