"""Mondrian multidimensional partitioning (LeFevre, DeWitt, Ramakrishnan, ICDE 2006) with a
pluggable admissible-cut predicate: k-anonymity, distinct l-diversity (per SA or over SA vectors)
or any test of a part's size and SA histograms (spec 003-msa-comparative.md §2.2, §3.2, A6-A8).

Why this shape: the split decision needs aggregates only, so the top (large) partitions can be
cut by SQL GROUP BYs and the same pure function, `choose_cut`, decides there; the rows of small
partitions are then pulled as integer code arrays and `partition` finishes them in memory.  The
in-memory driver is level-synchronous and numpy-vectorized (every active partition is one
contiguous segment of a row permutation, one round splits them all), so there is no Python
recursion and the Python work per round does not grow with the rows.

Input: per QI one integer code array and a kind (`schema`):

- 'numeric'   codes are ranks of the sorted distinct values (0 .. size-1); optional `values`
              (value per code, strictly increasing) make widths use values instead of ranks.
- 'ordinal'   a categorical QI mapped to an order (codes 0 .. size-1), summarized as a code range.
- 'taxonomy'  a categorical QI with a hierarchy (`taxonomy`); codes are leaf codes.

and per SA "channel" one code array (0 .. sa_size-1).  A channel is whatever the predicate
judges: one SA, or the SA-vector code of `sa_vector_codes` (the fingerprint of spec §2.1).

Decisions (spec §7 items in brackets):

- D1  Dimension: the widest normalized range.  Numeric/ordinal: (hi - lo) / (global hi - global
      lo) over the partition's actual min and max (values when given, else codes).  Taxonomy:
      leaves(LCA) / leaves(root), leaves counted as leaf codes of the hierarchy (all of them,
      present in the data or not), LCA = the lowest node covering the partition's codes.  A
      dimension that cannot be cut (one value, or an LCA without children) has width 0 and is
      never tried.  Equal widths: lower QI index first (`Schema.priority`; a seed permutes it).
- D2  Median: the size//2-th smallest value, i.e. the first code whose cumulative count
      reaches size//2 in the frequency set.  Strict: lhs = codes <= median, rhs = codes >
      median; when the median is the maximum the rhs is empty and the dimension has no cut.
- D3  Relaxed: lhs = codes < median plus q = size//2 - #(codes < median) of the median rows,
      rhs = the rest, so lhs has size//2 rows and rhs the other ceil(size/2).  The q rows are
      shared out over the median rows' SA vectors in proportion to their counts (largest
      remainder; ties to the smaller SA vector in lexicographic code order) and within a vector
      the first rows in row order go left (row order = input order, a seeded random order with
      a seed).  This keeps relaxed cuts decidable from aggregates: the SA histograms of both
      sides follow from the frequency set.  Without SA channels it is the first q median rows.
- D4  Taxonomy split: one part per child of the LCA that holds rows, in the taxonomy's child
      order; children without rows make no partition and are not tested (A6).  Because the
      node is the LCA, at least two children hold rows.
- D5  A cut is allowable iff it has at least two non-empty parts and every part satisfies the
      predicate.  If the widest dimension has no allowable cut the next widest is tried; with
      none the partition is final (A8: no |P| < 2l pre-check).
- D6  Summaries: numeric/ordinal (min code, max code) of the partition; taxonomy the LCA's
      label.  Partitions are numbered 0.. in tree order (lhs before rhs, children in order,
      initial partitions by ascending id).
- D7  Predicates.  A plain callable gets ``(size, {sa_name: {code: count}})`` (nonzero counts;
      the shape `pganon_engine.models.predicates.predicate` takes).  An object with ``batch(sizes,
      hists) -> bool array`` (hists: per channel an int array parts x sa_size) is evaluated
      vectorized; with ``uses_sa = False`` no histograms are built ({} / ()).  The built-ins
      `k_anonymity`, `distinct_l_diversity` and `all_of` have both forms.
- D8  Frequency sets for `choose_cut` are GROUP BY (QI code, every SA channel) counts, not only
      code -> count: the SA histograms of a side are sums over its codes, which per-QI counts
      alone cannot give.  Without SA channels (k-anonymity) code -> count is enough.
- D9  Persons (`partition(..., persons=)`: a person code per row, when one person may own
      several rows).  The cuts are still chosen on rows (D1-D4); only the predicate's view of a
      part changes: its size is the number of distinct persons in it and its histogram of a
      channel counts, per code, the distinct persons holding that code in the part (a person
      counts once per value she holds).  So k_anonymity(k) means k persons, distinct l-
      diversity l values each held by some person, and a frequency model reads person-value
      pairs.  Distinct counts are not sums over codes, so `choose_cut` cannot judge persons
      from frequency sets; `cut_candidates` gives the cuts in the order D5 tries them and the
      caller counts persons per part (`mondrian_sql` does it in SQL).
- D10 Whole persons (`whole=True`, with persons): a cut is allowable only if every person's
      rows of the partition land in one part, so every class holds all the rows of each of
      its persons.  Initial partitions (`start`) must not share a person.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pganon_engine.core.errors import bad_data, invalid

__all__ = [
    "KINDS",
    "MODES",
    "Taxonomy",
    "taxonomy",
    "Schema",
    "schema",
    "k_anonymity",
    "distinct_l_diversity",
    "all_of",
    "sa_vector_codes",
    "FreqSet",
    "freq_set",
    "freq_sets",
    "Cut",
    "cut_candidates",
    "choose_cut",
    "parts_pass",
    "assign",
    "Result",
    "partition",
    "mondrian",
]

KINDS = ("numeric", "ordinal", "taxonomy")
MODES = ("strict", "relaxed")
_HIST_CELLS = 1 << 22  # histogram cells built at once when evaluating a batch predicate


# --------------------------------------------------------------------------------------------
# Taxonomies (plain data in, compiled to leaf-rank intervals)
# --------------------------------------------------------------------------------------------


class Taxonomy:
    """A compiled hierarchy of one categorical QI.

    Leaves are numbered by rank in depth-first order (children in the given order, codes of a
    leaf node ascending), so every node covers an interval ``first[u] .. last[u]`` of ranks and
    its children split that interval into consecutive pieces.  Internal node ids are 0.. in
    depth-first order (root 0); `labels` maps them back to the caller's node labels.
    """

    def __init__(self, labels, children, leaf_codes):
        n = len(labels)
        self.labels = tuple(labels)
        self.index = {x: i for i, x in enumerate(self.labels)}
        self.children = tuple(tuple(c) for c in children)
        first = np.zeros(n, np.int64)
        last = np.zeros(n, np.int64)
        depth = np.zeros(n, np.int64)
        child_pos = np.zeros(n, np.int64)
        parent = np.full(n, -1, np.int64)
        for u in range(n):
            for i, c in enumerate(self.children[u]):
                parent[c] = u
                depth[c] = depth[u] + 1  # ids are pre-order: a parent precedes its children
                child_pos[c] = i
        rank_code, leaf_node = [], []
        for u in range(n):  # pre-order id order = depth-first order
            first[u] = len(rank_code)
            if not self.children[u]:
                for code in leaf_codes[u]:
                    rank_code.append(code)
                    leaf_node.append(u)
        for u in range(n - 1, -1, -1):
            last[u] = (max(last[c] for c in self.children[u]) if self.children[u]
                       else first[u] + len(leaf_codes[u]) - 1)
        self.first, self.last, self.depth = first, last, depth
        self.parent, self.child_pos = parent, child_pos
        self.rank_code = np.asarray(rank_code, np.int64)
        self.n_leaves = len(rank_code)
        self.has_children = np.array([bool(c) for c in self.children])
        self.fanout = max(1, max(len(c) for c in self.children))
        code_rank = np.full(int(self.rank_code.max()) + 1, -1, np.int64)
        code_rank[self.rank_code] = np.arange(self.n_leaves)
        self.code_rank = code_rank
        dmax = int(depth.max())
        leaf_node = np.asarray(leaf_node, np.int64)
        anc = np.full((dmax + 2, self.n_leaves), -1, np.int64)  # one spare row: depth dmax+1
        node = leaf_node.copy()
        while True:
            live = node >= 0
            if not live.any():
                break
            anc[depth[node[live]], np.flatnonzero(live)] = node[live]
            node[live] = parent[node[live]]
        self.anc = anc

    def __repr__(self):
        return f"Taxonomy(root={self.labels[0]!r}, nodes={len(self.labels)}, leaves={self.n_leaves})"

    @property
    def root(self):
        return self.labels[0]

    def node_id(self, label):
        try:
            return self.index[label]
        except (KeyError, TypeError):
            raise invalid(f"taxonomy node {label!r} does not exist",
                          hint="give a node label of the QI's hierarchy") from None

    def leaves_of(self, label):
        """Leaf codes under a node (ascending rank order)."""
        u = self.node_id(label)
        return self.rank_code[self.first[u]:self.last[u] + 1].copy()

    def ranks(self, codes, what="codes"):
        """Leaf rank of every code; refuses codes that are not leaves of the hierarchy."""
        codes = np.asarray(codes, np.int64)
        bad = (codes < 0) | (codes >= self.code_rank.size)
        r = np.where(bad, -1, self.code_rank[np.where(bad, 0, codes)])
        if (r < 0).any():
            x = int(codes[np.flatnonzero(r < 0)[0]])
            raise bad_data(f"{what}: code {x} is not a leaf of the hierarchy rooted at {self.root!r}",
                           hint="add the value to the hierarchy, or fix the encoding")
        return r

    def lca(self, a, b):
        """Node ids of the lowest common ancestors of leaf ranks a and b (arrays, a <= b)."""
        out = np.zeros(np.shape(a), np.int64)
        for d in range(self.anc.shape[0]):
            x, y = self.anc[d][a], self.anc[d][b]
            same = (x == y) & (x >= 0)
            out = np.where(same, x, out)
        return out


def taxonomy(children=None, *, leaves=None, parent=None, root=None):
    """Compile a hierarchy given as plain data.

    children  mapping node -> [child nodes] (a node that is absent or maps to [] is a leaf node)
    leaves    optional mapping node -> leaf codes under it.  A leaf node's codes come from here,
              else the node label itself is its code (an int >= 0).  An entry for an inner node
              must equal the union of its children's codes (checked).
    parent    instead of children: a sequence where parent[i] is the parent of node i (-1 or
              None for the root), or a mapping node -> parent; children follow node order
    root      the root label (default: the one node that is nobody's child)
    """
    if (children is None) == (parent is None):
        raise invalid("give a taxonomy as children= or as parent=, not both or neither",
                      hint="children={node: [children]} or parent=[parent of node 0, ...]")
    if parent is not None:
        items = parent.items() if isinstance(parent, dict) else enumerate(parent)
        kids = {}
        for node, par in items:
            kids.setdefault(node, [])
            is_root = par is None or (isinstance(par, (int, np.integer)) and par == -1)
            if not is_root:
                kids.setdefault(par, []).append(node)
        children = kids
    if not isinstance(children, dict) or not children:
        raise invalid("taxonomy children must be a non-empty mapping node -> [children]")
    nodes, is_child = [], set()
    seen_nodes = set()
    for u, cs in children.items():
        for x in (u, *cs):
            if x not in seen_nodes:
                seen_nodes.add(x)
                nodes.append(x)
        for c in cs:
            if c in is_child:
                raise invalid(f"taxonomy node {c!r} has more than one parent",
                              hint="every node generalizes to exactly one parent")
            is_child.add(c)
    if root is None:
        roots = [x for x in nodes if x not in is_child]
        if len(roots) != 1:
            raise invalid(f"the taxonomy has {len(roots)} roots ({roots[:5]!r})",
                          hint="give root=, or connect every node to one root")
        root = roots[0]
    elif root not in seen_nodes or root in is_child:
        raise invalid(f"taxonomy root {root!r} is not a node without a parent")
    labels, kid_ids, codes = [], [], []
    ids = {}
    stack = [root]
    while stack:  # iterative pre-order
        u = stack.pop()
        if u in ids:
            raise invalid(f"taxonomy node {u!r} is reached twice (a cycle)")
        ids[u] = len(labels)
        labels.append(u)
        kid_ids.append(None)
        stack.extend(reversed(list(children.get(u, ()))))
    missing = [x for x in nodes if x not in ids]
    if missing:
        raise invalid(f"taxonomy node(s) {missing[:5]!r} are not under the root {root!r}")
    for u in labels:
        kid_ids[ids[u]] = [ids[c] for c in children.get(u, ())]
    all_codes = set()
    for u in labels:
        if kid_ids[ids[u]]:
            codes.append(())
            continue
        if leaves is not None and u in leaves:
            cs = tuple(_int_list(leaves[u], f"leaf codes of taxonomy node {u!r}"))
        elif isinstance(u, (int, np.integer)) and not isinstance(u, bool) and u >= 0:
            cs = (int(u),)
        else:
            raise invalid(f"taxonomy leaf node {u!r} has no leaf code",
                          hint="give leaves={node: [codes]}, or use the codes as leaf labels")
        if not cs:
            raise invalid(f"taxonomy leaf node {u!r} has no leaf codes")
        for c in cs:
            if c < 0 or c in all_codes:
                raise invalid(f"leaf code {c} of taxonomy node {u!r} is negative or under two leaves")
            all_codes.add(c)
        codes.append(tuple(sorted(cs)))
    tx = Taxonomy(labels, kid_ids, codes)
    if leaves is not None:
        for u, cs in leaves.items():
            if u not in ids:
                raise invalid(f"leaves names taxonomy node {u!r}, which is not in the tree")
            got = set(tx.leaves_of(u).tolist())
            want = set(_int_list(cs, f"leaf codes of taxonomy node {u!r}"))
            if got != want:
                raise invalid(f"taxonomy node {u!r}: leaves lists {sorted(want)[:8]} but its "
                              f"children cover {sorted(got)[:8]}",
                              hint="the leaf codes of a node are those of its children")
    return tx


def _int_list(xs, what):
    try:
        out = [int(x) for x in xs]
    except (TypeError, ValueError):
        raise invalid(f"{what} must be integers") from None
    if any(x != y for x, y in zip(out, xs)):
        raise invalid(f"{what} must be integers")
    return out


# --------------------------------------------------------------------------------------------
# Schema: what is global (domains, hierarchies, tie order) and shared by every partition
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Schema:
    """Per QI: kind, size (codes 0..size-1; taxonomy: its leaf count), values (numeric widths
    in values) and taxonomy; per SA channel its size and name; the dimension tie order."""

    kinds: tuple
    sizes: tuple
    values: tuple
    taxonomies: tuple
    sa_sizes: tuple
    sa_names: tuple
    priority: tuple
    seed: object = None

    @property
    def d(self):
        return len(self.kinds)

    def span(self, j):
        """The global normalizer of QI j's width (D1)."""
        if self.kinds[j] == "taxonomy":
            return float(self.taxonomies[j].n_leaves)
        if self.values[j] is not None:
            return float(self.values[j][-1] - self.values[j][0])
        return float(self.sizes[j] - 1)


def schema(kinds, sizes=None, *, values=None, taxonomies=None, sa_sizes=(), sa_names=None,
           seed=None):
    """The global facts of a run.

    kinds       per QI 'numeric', 'ordinal' or 'taxonomy'
    sizes       per QI the number of codes (numeric/ordinal; None for taxonomy QIs); may be
                omitted for a QI whose `values` are given
    values      per QI None or the value of every code (numeric, strictly increasing)
    taxonomies  per QI None or a `Taxonomy` (or the keyword arguments of `taxonomy` as a dict)
    sa_sizes    per SA channel the number of codes
    sa_names    per channel the key used in the histograms given to plain callables
                (default 0, 1, ...)
    seed        None: equal widths go to the lower QI index; an int: to a seeded random order
                of the QIs (drawn once), and relaxed cuts take median rows in a seeded random
                row order (D1, D3)
    """
    kinds = tuple(kinds)
    d = len(kinds)
    if d == 0:
        raise invalid("no QIs given", hint="give at least one quasi-identifier")
    for j, kd in enumerate(kinds):
        if kd not in KINDS:
            raise invalid(f"QI {j}: kind {kd!r} is not one of {', '.join(KINDS)}")
    values = _per_qi(values, d, "values")
    taxonomies = _per_qi(taxonomies, d, "taxonomies")
    sizes = _per_qi(sizes, d, "sizes")
    vs, txs, szs = [], [], []
    for j, kd in enumerate(kinds):
        v, tx, sz = values[j], taxonomies[j], sizes[j]
        if kd == "taxonomy":
            if tx is None:
                raise invalid(f"QI {j} is of kind 'taxonomy' but has no taxonomy",
                              hint="give taxonomies[j], or use kind 'ordinal'")
            if isinstance(tx, dict):
                tx = taxonomy(**tx)
            if not isinstance(tx, Taxonomy):
                raise invalid(f"QI {j}: taxonomy must be a Taxonomy or a dict of taxonomy() arguments")
            if v is not None:
                raise invalid(f"QI {j}: values are for numeric QIs only")
            vs.append(None)
            txs.append(tx)
            szs.append(tx.n_leaves)
            continue
        if tx is not None:
            raise invalid(f"QI {j} has a taxonomy but kind {kd!r}", hint="use kind 'taxonomy'")
        if v is not None:
            if kd != "numeric":
                raise invalid(f"QI {j}: values are for numeric QIs only")
            v = np.asarray(v, np.float64)
            if v.ndim != 1 or v.size == 0 or not np.isfinite(v).all() or (np.diff(v) <= 0).any():
                raise invalid(f"QI {j}: values must be finite and strictly increasing, one per code",
                              hint="values[c] is the value of code c (ranks of sorted distinct values)")
            if sz is not None and int(sz) != v.size:
                raise invalid(f"QI {j}: sizes says {sz} codes but values has {v.size}")
            sz = v.size
        if sz is None:
            raise invalid(f"QI {j}: the number of codes is not known", hint="give sizes[j]")
        sz = _int_list([sz], f"sizes[{j}]")[0]
        if sz < 1:
            raise invalid(f"QI {j}: sizes must be >= 1, not {sz}")
        vs.append(v)
        txs.append(None)
        szs.append(sz)
    sa_sizes = tuple(_int_list(sa_sizes, "sa_sizes"))
    if any(s < 1 for s in sa_sizes):
        raise invalid("sa_sizes must be >= 1")
    if sa_names is None:
        sa_names = tuple(range(len(sa_sizes)))
    sa_names = tuple(sa_names)
    if len(sa_names) != len(sa_sizes) or len(set(sa_names)) != len(sa_names):
        raise invalid(f"{len(sa_names)} sa_names for {len(sa_sizes)} SA channels",
                      hint="give distinct names, one per channel")
    if seed is None:
        priority = tuple(range(d))
    else:
        perm = np.random.default_rng(seed).permutation(d)
        pr = np.empty(d, np.int64)
        pr[perm] = np.arange(d)
        priority = tuple(int(x) for x in pr)
    return Schema(kinds=kinds, sizes=tuple(szs), values=tuple(vs), taxonomies=tuple(txs),
                  sa_sizes=sa_sizes, sa_names=sa_names, priority=priority, seed=seed)


def _per_qi(x, d, what):
    if x is None:
        return [None] * d
    x = list(x)
    if len(x) != d:
        raise invalid(f"{what} has {len(x)} entries for {d} QIs; give one per QI (None where unused)")
    return x


# --------------------------------------------------------------------------------------------
# Predicates (D7)
# --------------------------------------------------------------------------------------------


class _Predicate:
    """A named admissible-cut test with a scalar and a vectorized form."""

    def __init__(self, name, call, batch, uses_sa):
        self.name, self._call, self._batch, self.uses_sa = name, call, batch, uses_sa

    def __call__(self, size, sa_histograms):
        return bool(self._call(size, sa_histograms))

    def batch(self, sizes, hists):
        return np.asarray(self._batch(np.asarray(sizes), hists), bool)

    def __and__(self, other):
        return all_of(self, other)

    def __repr__(self):
        return self.name


def k_anonymity(k):
    """Every part has >= k rows."""
    k = _positive(k, "k")
    return _Predicate(f"k_anonymity({k})", lambda n, hs: n >= k, lambda n, hs: n >= k, False)


def distinct_l_diversity(l, channels=None):
    """Every part has >= l distinct codes in each SA channel (all channels, or the listed
    indices).  Over several SAs jointly: give the SA-vector code (`sa_vector_codes`) as a
    channel and name only that one."""
    l = _positive(l, "l")
    sel = None if channels is None else tuple(_int_list(channels, "channels"))

    def pick(hs):
        if not len(hs):
            raise invalid("distinct l-diversity needs at least one SA channel",
                          hint="give sa_codes (and sa_sizes) to the run")
        return list(hs) if sel is None else [hs[i] for i in sel]

    def call(n, hs):
        keys = list(hs)
        chosen = keys if sel is None else [keys[i] for i in sel]
        if not keys:
            pick(())
        return all(sum(1 for c in hs[x].values() if c > 0) >= l for x in chosen)

    def batch(n, hs):
        return np.logical_and.reduce([np.count_nonzero(h, axis=1) >= l for h in pick(hs)])

    return _Predicate(f"distinct_l_diversity({l}{'' if sel is None else f', {list(sel)}'})",
                      call, batch, True)


def all_of(*predicates):
    """Every given predicate holds.  Vectorized iff every part is."""
    preds = [p for p in predicates if p is not None]
    if not preds:
        raise invalid("all_of needs at least one predicate")
    for p in preds:
        if not callable(p):
            raise invalid(f"{p!r} is not a predicate",
                          hint="give callables predicate(size, sa_histograms)")
    uses = any(getattr(p, "uses_sa", True) for p in preds)
    vect = all(hasattr(p, "batch") for p in preds)

    def call(n, hs):
        return all(p(n, hs if getattr(p, "uses_sa", True) else {}) for p in preds)

    def batch(n, hs):
        return np.logical_and.reduce([np.asarray(p.batch(n, hs), bool) for p in preds])

    out = _Predicate(" & ".join(repr(p) for p in preds), call, batch, uses)
    if not vect:
        out.batch = None
    return out


def _positive(x, what):
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise invalid(f"{what} must be an integer, not {x!r}")
    if x < 1:
        raise invalid(f"{what} must be >= 1, not {x}")
    return int(x)


def _evaluate(pred, sizes, hists, names):
    """Predicate on m parts: sizes (m,), hists per channel (m, V) or () -> bool (m,)."""
    batch = getattr(pred, "batch", None)
    if batch is not None:
        out = np.asarray(batch(sizes, tuple(hists)), bool)
        if out.shape != sizes.shape:
            raise invalid(f"predicate {pred!r}: batch returned shape {out.shape} for "
                          f"{sizes.size} parts", hint="return one bool per part")
        return out
    out = np.zeros(sizes.size, bool)
    for i in range(sizes.size):
        hs = {}
        for name, h in zip(names, hists):
            nz = np.flatnonzero(h[i])
            hs[name] = dict(zip(nz.tolist(), h[i][nz].tolist()))
        out[i] = bool(pred(int(sizes[i]), hs))
    return out


def _parts_ok(pred, key, m, sa_rows, schema, persons=None):
    """Predicate per part for rows labelled key in 0..m-1 (every part non-empty); sa_rows per
    channel the SA codes of those rows.  Histograms are built in chunks of parts (D7).  With
    persons (a person code per row), the parts are judged over persons (D9)."""
    if persons is not None:
        return _person_parts_ok(pred, key, m, sa_rows, schema, persons)
    sizes = np.bincount(key, minlength=m)
    if not getattr(pred, "uses_sa", True) or not schema.sa_sizes:
        return _evaluate(pred, sizes, (), schema.sa_names)
    total_v = sum(schema.sa_sizes)
    step = max(1, _HIST_CELLS // total_v)
    if m <= step:
        hists = [np.bincount(key * v + s, minlength=m * v).reshape(m, v)
                 for s, v in zip(sa_rows, schema.sa_sizes)]
        return _evaluate(pred, sizes, hists, schema.sa_names)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    out = np.zeros(m, bool)
    for a in range(0, m, step):
        b = min(m, a + step)
        lo, hi = np.searchsorted(ks, [a, b])
        sub = order[lo:hi]
        kk = key[sub] - a
        hists = [np.bincount(kk * v + s[sub], minlength=(b - a) * v).reshape(b - a, v)
                 for s, v in zip(sa_rows, schema.sa_sizes)]
        out[a:b] = _evaluate(pred, sizes[a:b], hists, schema.sa_names)
    return out


def _distinct(*cols):
    """The distinct rows of equal-length int columns, sorted by the first column then the next."""
    o = np.lexsort(cols[::-1])
    sc = [c[o] for c in cols]
    new = np.ones(o.size, bool)
    if o.size > 1:
        new[1:] = np.logical_or.reduce([c[1:] != c[:-1] for c in sc])
    return [c[new] for c in sc]


def _person_parts_ok(pred, key, m, sa_rows, schema, persons):
    """D9: the predicate per part over persons: size = distinct persons of the part, histogram
    = per code the distinct persons of the part holding it.  Chunked by parts as `_parts_ok`."""
    sizes = np.bincount(_distinct(key, persons)[0], minlength=m)
    if not getattr(pred, "uses_sa", True) or not schema.sa_sizes:
        return _evaluate(pred, sizes, (), schema.sa_names)
    held = [_distinct(key, s, persons)[:2] for s in sa_rows]  # (part, code) per (part, code, person)
    step = max(1, _HIST_CELLS // sum(schema.sa_sizes))
    out = np.zeros(m, bool)
    for a in range(0, m, step):
        b = min(m, a + step)
        hists = []
        for (kc, sc), v in zip(held, schema.sa_sizes):
            lo, hi = np.searchsorted(kc, [a, b])
            hists.append(np.bincount((kc[lo:hi] - a) * v + sc[lo:hi], minlength=(b - a) * v).reshape(b - a, v))
        out[a:b] = _evaluate(pred, sizes[a:b], hists, schema.sa_names)
    return out


def _persons_whole(seg, key, persons, S):
    """D10, per segment 0..S-1: do the parts (key) of its rows hold each of its persons in one
    part, i.e. persons summed over its parts = its distinct persons?"""
    in_parts = np.bincount(_distinct(seg, key, persons)[0], minlength=S)
    return in_parts == np.bincount(_distinct(seg, persons)[0], minlength=S)


# --------------------------------------------------------------------------------------------
# Shared rules: widths and LCAs (D1), largest remainder (D3), SA vectors
# --------------------------------------------------------------------------------------------


def _widths(schema, lo, hi):
    """Per QI the normalized widths of partitions with working-code bounds lo[j], hi[j]
    (arrays), and for taxonomy QIs the LCA node ids.  Unsplittable dimensions get 0."""
    widths, lcas = [], []
    for j, kd in enumerate(schema.kinds):
        span = schema.span(j)
        if kd == "taxonomy":
            tx = schema.taxonomies[j]
            u = tx.lca(lo[j], hi[j])
            w = np.where(tx.has_children[u], (tx.last[u] - tx.first[u] + 1) / span, 0.0)
            lcas.append(u)
        else:
            lcas.append(None)
            if span <= 0:
                w = np.zeros(np.shape(lo[j]))
            elif schema.values[j] is not None:
                v = schema.values[j]
                w = (v[hi[j]] - v[lo[j]]) / span
            else:
                w = (hi[j] - lo[j]) / span
        widths.append(np.asarray(w, np.float64))
    return np.stack(widths, axis=-1), lcas


def _dim_order(schema, width):
    """Per row of width (A, d): QI indices by decreasing width, ties by schema.priority."""
    pr = np.broadcast_to(np.asarray(schema.priority), width.shape)
    return np.lexsort((pr, -width), axis=-1)


def _largest_remainder(gseg, cnt, q, tie):
    """Share q[s] rows over the groups of segment s (gseg sorted; cnt rows per group) in
    proportion to cnt: floor shares, then +1 by decreasing remainder, ties by tie (D3)."""
    S = q.size
    g = np.bincount(gseg, weights=cnt, minlength=S).astype(np.int64)
    prod = q[gseg] * cnt
    base = prod // g[gseg]
    rem = prod % g[gseg]
    left = q - np.bincount(gseg, weights=base, minlength=S).astype(np.int64)
    o = np.lexsort((tie, -rem, gseg))
    gs = gseg[o]
    rank = np.arange(o.size) - np.searchsorted(gs, gs)
    extra = np.zeros(o.size, np.int64)
    extra[o] = rank < left[gs]
    return base + extra


def sa_vector_codes(sa_codes):
    """The SA-vector (fingerprint) code of every row: ids 0.. in lexicographic order of the
    vectors of channel codes.  Returns (codes (n,), vectors (m, channels))."""
    cols = [np.asarray(c, np.int64) for c in sa_codes]
    if not cols:
        raise invalid("sa_vector_codes needs at least one SA code array")
    n = cols[0].size
    if any(c.size != n for c in cols):
        raise invalid("SA code arrays of different lengths; give one code per row for every SA")
    if n == 0:
        return np.zeros(0, np.int64), np.zeros((0, len(cols)), np.int64)
    o = np.lexsort(cols[::-1])
    mat = np.stack([c[o] for c in cols], axis=1)
    new = np.ones(n, bool)
    new[1:] = (mat[1:] != mat[:-1]).any(axis=1)
    ids = np.cumsum(new) - 1
    out = np.empty(n, np.int64)
    out[o] = ids
    return out, mat[new]


# --------------------------------------------------------------------------------------------
# Aggregates: frequency sets and the pure split decision
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FreqSet:
    """One QI's frequency set of a partition: rows of GROUP BY (QI code, SA channel codes),
    i.e. group g has counts[g] rows with QI code codes[g] and SA codes sa[c][g] (D8)."""

    codes: np.ndarray
    counts: np.ndarray
    sa: tuple = ()


def freq_set(codes, counts, sa=()):
    """A `FreqSet` from GROUP BY output (arrays or lists of equal length; counts >= 1)."""
    codes = _codes(codes, "frequency set codes")
    counts = _codes(counts, "frequency set counts")
    sa = tuple(_codes(s, f"frequency set SA channel {c}") for c, s in enumerate(sa))
    if counts.size != codes.size or any(s.size != codes.size for s in sa):
        raise invalid("frequency set arrays have different lengths; give one count per group row")
    if (counts < 1).any():
        raise invalid("frequency set counts must be >= 1", hint="drop empty groups")
    return FreqSet(codes=codes, counts=counts, sa=sa)


def freq_sets(qi_codes, sa_codes, schema):
    """The frequency sets of one partition from its rows (what the SQL GROUP BYs compute)."""
    qs, ss, n = _check_rows(qi_codes, sa_codes, schema)
    out = []
    for q in qs:
        cols = [q, *ss]
        o = np.lexsort(cols[::-1])
        mat = np.stack([c[o] for c in cols], axis=1)
        new = np.ones(n, bool)
        new[1:] = (mat[1:] != mat[:-1]).any(axis=1)
        starts = np.flatnonzero(new)
        cnt = np.diff(np.append(starts, n))
        keys = mat[starts]
        out.append(FreqSet(codes=keys[:, 0].copy(), counts=cnt.astype(np.int64),
                           sa=tuple(keys[:, 1 + c].copy() for c in range(len(ss)))))
    return out


@dataclass(frozen=True)
class Cut:
    """An allowable cut of one partition on QI `dim`.

    kind 'range' (numeric/ordinal): part 0 = codes <= value, part 1 = codes > value (strict);
    relaxed: part 0 = codes < value plus, of the rows with code == value, the first take[v] in
    row order of every SA vector v (a tuple of channel codes; () without channels), part 1 the
    rest.  kind 'taxonomy': `node` (the LCA) is split into `children` (labels of the children
    that hold rows), part i = codes under children[i].  sizes: rows per part."""

    dim: int
    kind: str
    sizes: tuple
    value: object = None
    relaxed: bool = False
    take: object = None
    node: object = None
    children: tuple = ()


def choose_cut(freqs, schema, predicate, *, mode="strict", nodes=None):
    """The cut Mondrian makes on a partition given only its aggregates, or None (final).

    freqs      per QI a `FreqSet` of the partition (all with the same total)
    predicate  admissible-cut test of a part (D7)
    mode       'strict' or 'relaxed'
    nodes      per QI None or the partition's current taxonomy node (a check: codes must lie
               under it; the cut uses the LCA of the codes, D1)
    """
    mode = _mode(mode)
    pred = _predicate(predicate)
    for cut, sizes, hists in cut_candidates(freqs, schema, mode=mode, nodes=nodes):
        if _evaluate_parts(pred, sizes, hists, schema).all():
            return cut
    return None


def parts_pass(predicate, sizes, hists, schema):
    """Does every non-empty part pass the predicate?  sizes (parts,), hists per SA channel
    (parts, sa_size): what `cut_candidates` gives, or the persons' view of it (D9)."""
    return bool(_evaluate_parts(_predicate(predicate), np.asarray(sizes, np.int64),
                                [np.asarray(h, np.int64) for h in hists], schema).all())


def cut_candidates(freqs, schema, *, mode="strict", nodes=None):
    """The cuts D5 tries on a partition, in its order, as (cut, part sizes, part SA histograms)
    over rows: D1's dimension order, the median / taxonomy cut of each (D2-D4), cuts with fewer
    than two non-empty parts left out.  The first whose parts pass the predicate is the cut
    (`choose_cut`); a caller judging persons (D9) counts them per part itself.  Arguments as
    `choose_cut`; the input is checked at the call, the cuts are made as they are read."""
    mode = _mode(mode)
    d = schema.d
    freqs = list(freqs)
    if len(freqs) != d:
        raise invalid(f"{len(freqs)} frequency sets for {d} QIs; give one per QI")
    nch = len(schema.sa_sizes)
    size = None
    work, lo, hi = [], [], []
    for j, fs in enumerate(freqs):
        if not isinstance(fs, FreqSet):
            raise invalid(f"QI {j}: frequency sets must be FreqSet objects",
                          hint="build them with freq_set()")
        if len(fs.sa) != nch:
            raise invalid(f"QI {j}: the frequency set has {len(fs.sa)} SA channels, the schema {nch}",
                          hint="group by the QI code and every SA channel (D8)")
        tot = int(fs.counts.sum())
        if size is None:
            size = tot
        elif tot != size:
            raise invalid(f"QI {j}: frequency set counts sum to {tot}, QI 0's to {size}",
                          hint="every frequency set describes the same partition")
        w = _working(fs.codes, schema, j, f"QI {j} frequency set")
        for c, s in enumerate(fs.sa):
            _in_range(s, schema.sa_sizes[c], f"SA channel {c} of QI {j}'s frequency set")
        work.append(w)
        lo.append(np.array([w.min()]) if w.size else np.array([0]))
        hi.append(np.array([w.max()]) if w.size else np.array([0]))
    if not size:
        raise invalid("the partition is empty", hint="a frequency set needs at least one row")
    _check_nodes(nodes, schema, lo, hi)
    return _candidates(freqs, work, lo, hi, size, schema, mode)


def _candidates(freqs, work, lo, hi, size, schema, mode):
    width, lcas = _widths(schema, lo, hi)
    order = _dim_order(schema, width)[0]
    for j in order:
        if width[0, j] <= 0:
            break
        fs, w = freqs[j], work[j]
        if schema.kinds[j] == "taxonomy":
            tx = schema.taxonomies[j]
            u = int(lcas[j][0])
            child = tx.anc[tx.depth[u] + 1][w]
            pos = tx.child_pos[child]
            kids = [c for c in tx.children[u] if (child == c).any()]
            part = np.searchsorted([tx.child_pos[c] for c in kids], pos)
            hists = [_hist_add(len(kids), v, part, s, fs.counts)
                     for s, v in zip(fs.sa, schema.sa_sizes)]
            sizes = np.bincount(part, weights=fs.counts, minlength=len(kids)).astype(np.int64)
            cut = Cut(dim=int(j), kind="taxonomy", sizes=tuple(int(x) for x in sizes),
                      node=tx.labels[u], children=tuple(tx.labels[c] for c in kids))
        else:
            cut, sizes, hists = _range_cut(j, fs, size, mode, schema)
            if cut is None:
                continue
        if (sizes > 0).sum() < 2:
            continue
        yield cut, sizes, hists


def _hist_add(m, v, part, sa, counts):
    h = np.zeros((m, v), np.int64)
    np.add.at(h, (part, sa), counts)
    return h


def _range_cut(j, fs, size, mode, schema):
    """The median cut on a numeric/ordinal QI from its frequency set (D2, D3)."""
    uc, inv = np.unique(fs.codes, return_inverse=True)
    inv = inv.reshape(-1)
    per = np.bincount(inv, weights=fs.counts).astype(np.int64)
    h = size // 2
    m = int(uc[np.searchsorted(np.cumsum(per), h)])
    chans = list(zip(fs.sa, schema.sa_sizes))
    if mode == "strict":
        if m == uc[-1]:
            return None, None, None
        part = (fs.codes > m).astype(np.int64)
        sizes = np.bincount(part, weights=fs.counts, minlength=2).astype(np.int64)
        hists = [_hist_add(2, v, part, s, fs.counts) for s, v in chans]
        return Cut(dim=int(j), kind="range", sizes=tuple(int(x) for x in sizes), value=m), sizes, hists
    lt = fs.codes < m
    eq = fs.codes == m
    q = h - int(fs.counts[lt].sum())
    hists = [_hist_add(2, v, np.zeros(int(lt.sum()), np.int64), s[lt], fs.counts[lt])
             for s, v in chans]
    if chans:
        vec, keys = sa_vector_codes([s[eq] for s in fs.sa])
        cnt = np.bincount(vec, weights=fs.counts[eq]).astype(np.int64)
    else:
        keys = np.zeros((1, 0), np.int64)
        cnt = np.array([int(fs.counts[eq].sum())], np.int64)
    qv = _largest_remainder(np.zeros(cnt.size, np.int64), cnt, np.array([q], np.int64),
                            np.arange(cnt.size))
    for c, (s, v) in enumerate(chans):
        np.add.at(hists[c][0], keys[:, c], qv)
        tot = np.zeros(v, np.int64)
        np.add.at(tot, s, fs.counts)
        hists[c][1] = tot - hists[c][0]
    sizes = np.array([h, size - h], np.int64)
    take = {tuple(int(x) for x in keys[i]): int(qv[i]) for i in range(cnt.size) if qv[i]}
    cut = Cut(dim=int(j), kind="range", sizes=(h, size - h), value=m, relaxed=True, take=take)
    return cut, sizes, hists


def _evaluate_parts(pred, sizes, hists, schema):
    nz = sizes > 0
    if not getattr(pred, "uses_sa", True) or not schema.sa_sizes:
        hs = ()
    else:
        hs = [h[nz] for h in hists]
    return _evaluate(pred, sizes[nz], hs, schema.sa_names)


def assign(cut, qi_codes, sa_codes, schema):
    """Part index (0..) of every row of the partition `cut` was chosen for; rows in row order
    (the order that decides which median rows a relaxed cut sends left, D3)."""
    qs, ss, n = _check_rows(qi_codes, sa_codes, schema)
    x = qs[cut.dim]
    if cut.kind == "taxonomy":
        tx = schema.taxonomies[cut.dim]
        r = tx.ranks(x, f"QI {cut.dim}")
        part = np.full(n, -1, np.int64)
        for i, c in enumerate(cut.children):
            u = tx.node_id(c)
            part[(r >= tx.first[u]) & (r <= tx.last[u])] = i
        if (part < 0).any():
            raise invalid(f"a row's code {int(x[np.flatnonzero(part < 0)[0]])} is under none of "
                          f"the cut's children", hint="assign the rows the cut was chosen for")
        return part
    part = (x > cut.value).astype(np.int64)
    if cut.relaxed:
        eq = np.flatnonzero(x == cut.value)
        if ss:
            vec = np.stack([s[eq] for s in ss], axis=1)
            keys = [tuple(row) for row in vec.tolist()]
        else:
            keys = [()] * eq.size
        seen = {}
        for i, key in zip(eq.tolist(), keys):
            t = seen.get(key, 0)
            seen[key] = t + 1
            part[i] = 0 if t < cut.take.get(key, 0) else 1
    return part


# --------------------------------------------------------------------------------------------
# The in-memory driver
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Result:
    """Partitions of a run, numbered 0.. in tree order (D6).

    partition  per row its partition id
    sizes      rows per partition
    lo, hi     per QI: (P,) min / max code of each partition (numeric/ordinal), None for
               taxonomy QIs
    nodes      per QI: the LCA label of each partition (taxonomy), None otherwise
    origin     per partition the id of the initial partition it comes from
    rounds     split rounds run (the tree depth)
    """

    partition: np.ndarray
    sizes: np.ndarray
    lo: tuple
    hi: tuple
    nodes: tuple
    origin: np.ndarray
    rounds: int

    @property
    def n_partitions(self):
        return int(self.sizes.size)

    def summary(self, p):
        """Partition p's summary: per QI (min code, max code) or the taxonomy node."""
        return tuple(self.nodes[j][p] if self.nodes[j] is not None
                     else (int(self.lo[j][p]), int(self.hi[j][p])) for j in range(len(self.lo)))

    def summaries(self):
        return [self.summary(p) for p in range(self.n_partitions)]


def partition(qi_codes, sa_codes, schema, predicate, *, mode="strict", start=None, nodes=None,
              persons=None, whole=False):
    """Mondrian on rows in memory: recursively cut every initial partition while an allowable
    cut exists (D1-D5), iteratively and vectorized.

    qi_codes   per QI an integer code array (one code per row)
    sa_codes   per SA channel an integer code array ([] when the predicate needs none)
    schema     a `Schema` (global domains, hierarchies, tie order)
    predicate  the admissible-cut test (D7)
    start      None (all rows one partition) or per row the id of its initial partition (ints,
               e.g. the partitions the SQL cut); initial partitions are taken in ascending id
    nodes      taxonomy nodes the initial partitions start from (a check, D1): per QI a node
               (one partition) or a mapping initial id -> per QI nodes
    persons    None, or per row a person code (int >= 0): the predicate judges persons (D9)
    whole      with persons: no cut separates the rows of a person (D10)
    """
    mode = _mode(mode)
    pred = _predicate(predicate)
    qs, ss, n = _check_rows(qi_codes, sa_codes, schema)
    if n == 0:
        raise invalid("the table is empty", hint="Mondrian needs at least one row")
    pers = _persons(persons, n, whole)
    d = schema.d
    W = [_working(q, schema, j, f"QI {j}") for j, q in enumerate(qs)]
    rng = None if schema.seed is None else np.random.default_rng([int(schema.seed), 1])
    tiebreak = None if rng is None else rng.permutation(n)
    if start is None:
        perm = np.arange(n) if tiebreak is None else tiebreak.copy()
        ids = np.array([0])
        a_len = np.array([n], np.int64)
        init_key = np.zeros(n, np.int64)
    else:
        st = _codes(start, "start", allow_negative=True)
        if st.size != n:
            raise invalid(f"start has {st.size} ids for {n} rows; give one initial partition id per row")
        perm = np.lexsort((np.arange(n) if tiebreak is None else tiebreak, st))
        ids, init_key, a_len = np.unique(st, return_inverse=True, return_counts=True)
        init_key = init_key.reshape(-1)
        a_len = a_len.astype(np.int64)
    a_start = np.cumsum(a_len) - a_len
    a_origin = np.arange(ids.size)
    ok = _parts_ok(pred, init_key, ids.size, ss, schema, pers)
    if whole and not _persons_whole(np.zeros(n, np.int64), init_key, pers, 1)[0]:
        raise invalid("a person has rows in several initial partitions, so her rows cannot stay whole",
                      hint="give every person's rows the same start id")
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        what = ("the table" if start is None
                else f"initial partition {ids.tolist()[bad]!r} ({int(a_len[bad])} rows)")
        raise invalid(f"{what} does not satisfy the predicate {pred!r}, so no partitioning can",
                      hint="lower k / l, or merge initial partitions")
    _check_start_nodes(nodes, schema, W, init_key, ids)
    vec = sa_vector_codes(ss)[0] if (mode == "relaxed" and ss) else None
    n_vec = int(vec.max()) + 1 if vec is not None else 1
    uses_sa = bool(ss) and getattr(pred, "uses_sa", True)

    # The active rows, in segment order: every active partition is a contiguous run, rows of a
    # partition in row order.  Finished partitions leave these arrays; their rows are written
    # to `final` at their tree-order position.
    ract = perm
    Wact = [w[perm] for w in W]
    Sact = [x[perm] for x in ss] if uses_sa else []
    vact = vec[perm] if vec is not None else None
    pact = None if pers is None else pers[perm]
    final = np.empty(n, np.int64)
    done = {"start": [], "len": [], "origin": [], "lo": [], "hi": [], "lca": []}
    rounds = 0
    while a_start.size:
        A = a_start.size
        offs = np.cumsum(a_len) - a_len
        seg = np.repeat(np.arange(A), a_len)
        lo = [np.minimum.reduceat(v, offs) for v in Wact]
        hi = [np.maximum.reduceat(v, offs) for v in Wact]
        width, lcas = _widths(schema, lo, hi)
        order = _dim_order(schema, width)
        wsorted = np.take_along_axis(width, order, axis=1)
        part = np.full(seg.size, -1, np.int64)
        fan = np.zeros(A, np.int64)
        pending = np.ones(A, bool)
        for t in range(d):
            cand = pending & (wsorted[:, t] > 0)
            if not cand.any():
                break
            for j in range(d):
                sel = cand & (order[:, t] == j)
                if not sel.any():
                    continue
                pid = np.flatnonzero(sel)
                sub = np.flatnonzero(sel[seg])
                lseg = (np.cumsum(sel) - 1)[seg[sub]]
                pidx, F = _cut_rows(schema, j, mode, Wact[j][sub], lseg, a_len[pid],
                                    None if lcas[j] is None else lcas[j][pid],
                                    None if vact is None else vact[sub], n_vec)
                allowed = _cuts_ok(pred, lseg * F + pidx, pid.size, F, [x[sub] for x in Sact], schema,
                                   None if pact is None else pact[sub], whole)
                acc = pid[allowed]
                pending[acc] = False
                fan[acc] = F
                keep = allowed[lseg]
                part[sub[keep]] = pidx[keep]
        split = fan > 0
        fin = ~split
        if fin.any():
            done["start"].append(a_start[fin])
            done["len"].append(a_len[fin])
            done["origin"].append(a_origin[fin])
            done["lo"].append(np.stack([x[fin] for x in lo], axis=1))
            done["hi"].append(np.stack([x[fin] for x in hi], axis=1))
            done["lca"].append(np.stack([np.zeros(int(fin.sum()), np.int64) if u is None else u[fin]
                                         for u in lcas], axis=1))
            fr = np.flatnonzero(fin[seg])
            final[np.repeat(a_start[fin] - offs[fin], a_len[fin]) + fr] = ract[fr]
        if not split.any():
            break
        rounds += 1
        sid = np.flatnonzero(split)
        sub = np.flatnonzero(split[seg])
        Fm = int(fan.max())
        key = (np.cumsum(split) - 1)[seg[sub]] * Fm + part[sub]
        idx = sub[np.argsort(key, kind="stable")]
        ract = ract[idx]
        Wact = [w[idx] for w in Wact]
        Sact = [x[idx] for x in Sact]
        vact = None if vact is None else vact[idx]
        pact = None if pact is None else pact[idx]
        psz = np.bincount(key, minlength=sid.size * Fm).reshape(sid.size, Fm)
        nz = psz > 0
        a_start = (a_start[sid][:, None] + np.cumsum(psz, axis=1) - psz)[nz]
        a_len = psz[nz]
        a_origin = np.broadcast_to(a_origin[sid][:, None], psz.shape)[nz]
    return _result(done, final, n, schema, ids, rounds)


def _cut_rows(schema, j, mode, v, lseg, sizes, lca, vec, n_vec):
    """Part index per row for the cut of every selected partition on QI j (rows grouped by
    lseg, row order within a partition), and the number of part slots."""
    S = sizes.size
    if schema.kinds[j] == "taxonomy":
        tx = schema.taxonomies[j]
        child = tx.anc[(tx.depth[lca] + 1)[lseg], v]
        return tx.child_pos[child], tx.fanout
    M = schema.sizes[j]
    soffs = np.cumsum(sizes) - sizes
    h = sizes // 2
    m = np.sort(lseg * M + v)[soffs + h - 1] - np.arange(S) * M
    mm = m[lseg]
    pidx = (v > mm).astype(np.int64)
    if mode == "strict":
        return pidx, 2
    q = h - np.bincount(lseg[v < mm], minlength=S)
    eq = np.flatnonzero(v == mm)
    eseg = lseg[eq]
    if vec is None:
        rank = np.arange(eq.size) - np.searchsorted(eseg, eseg)
        left = rank < q[eseg]
    else:
        gk = eseg * n_vec + vec[eq]
        ug, inv, cnt = np.unique(gk, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
        qv = _largest_remainder(ug // n_vec, cnt, q, ug % n_vec)
        o = np.argsort(inv, kind="stable")
        gstart = np.cumsum(cnt) - cnt
        rank = np.empty(eq.size, np.int64)
        rank[o] = np.arange(eq.size) - gstart[inv[o]]
        left = rank < qv[inv]
    pidx[eq[~left]] = 1
    return pidx, 2


def _cuts_ok(pred, key, S, F, sa_rows, schema, persons=None, whole=False):
    """Per partition: its cut has >= 2 non-empty parts and every non-empty part passes (D5);
    over persons (D9), keeping each person in one part with whole (D10)."""
    psz = np.bincount(key, minlength=S * F)
    nz = psz > 0
    comp = np.cumsum(nz) - 1
    good = np.ones(S * F, bool)
    good[nz] = _parts_ok(pred, comp[key], int(nz.sum()), sa_rows, schema, persons)
    ok = good.reshape(S, F).all(axis=1) & (nz.reshape(S, F).sum(axis=1) >= 2)
    if whole:
        ok &= _persons_whole(key // F, key, persons, S)
    return ok


def _persons(persons, n, whole):
    """The person code per row (D9), or None; whole needs persons (D10)."""
    if persons is None:
        if whole:
            raise invalid("whole=True needs persons", hint="give a person code per row")
        return None
    p = _codes(persons, "persons")
    if p.size != n:
        raise invalid(f"persons has {p.size} codes for {n} rows; give one person code per row")
    return p


def _result(done, perm, n, schema, ids, rounds):
    start = np.concatenate(done["start"])
    o = np.argsort(start)
    sizes = np.concatenate(done["len"])[o]
    lo = np.concatenate(done["lo"])[o]
    hi = np.concatenate(done["hi"])[o]
    lca = np.concatenate(done["lca"])[o]
    origin = ids[np.concatenate(done["origin"])[o]]
    pid = np.empty(n, np.int64)
    pid[perm] = np.repeat(np.arange(sizes.size), sizes)
    los, his, nodes = [], [], []
    for j, kd in enumerate(schema.kinds):
        if kd == "taxonomy":
            labels = schema.taxonomies[j].labels
            los.append(None)
            his.append(None)
            nodes.append([labels[u] for u in lca[:, j].tolist()])
        else:
            los.append(lo[:, j].copy())
            his.append(hi[:, j].copy())
            nodes.append(None)
    return Result(partition=pid, sizes=sizes, lo=tuple(los), hi=tuple(his), nodes=tuple(nodes),
                  origin=origin, rounds=rounds)


def mondrian(qi_codes, sa_codes=(), *, kinds, k=None, l=None, joint=False, predicate=None,
             mode="strict", sizes=None, values=None, taxonomies=None, sa_sizes=None,
             sa_names=None, start=None, nodes=None, seed=None, persons=None, whole=False):
    """Mondrian in one call: builds the schema (domains from the data unless given) and the
    predicate k-anonymity(k) & distinct l-diversity(l) & predicate, then runs `partition`.

    l        per SA channel; with joint=True over the SA vectors instead (the vector code is
             appended as the last channel, which a custom predicate then also sees)
    persons  per row a person code: k and l count persons (D9); whole keeps them whole (D10)
    others   as in `schema` and `partition`
    """
    qi_codes = [_codes(q, f"QI {j}") for j, q in enumerate(qi_codes)]
    sa_codes = [_codes(s, f"SA {c}") for c, s in enumerate(sa_codes)]
    kinds = tuple(kinds)
    if not qi_codes:
        raise invalid("no QI code arrays given", hint="give one code array per quasi-identifier")
    if len(kinds) != len(qi_codes):
        raise invalid(f"{len(kinds)} kinds for {len(qi_codes)} QI code arrays; give one kind per QI")
    _check_lengths(qi_codes, sa_codes)
    n = qi_codes[0].size
    if k is not None:
        k = _positive(k, "k")
        if k > n:
            raise invalid(f"k = {k} is larger than the table ({n} rows)",
                          hint="lower k, or publish a larger table")
        npers = None if persons is None else np.unique(np.asarray(persons)).size
        if npers is not None and k > npers:
            raise invalid(f"k = {k} is larger than the {npers} persons of the table ({n} rows)",
                          hint="lower k: k counts persons")
    if sizes is None:
        sizes = [None if kd == "taxonomy" or (values is not None and values[j] is not None)
                 else (int(qi_codes[j].max()) + 1 if qi_codes[j].size else 1)
                 for j, kd in enumerate(kinds)]
    if sa_sizes is None:
        sa_sizes = [int(s.max()) + 1 if s.size else 1 for s in sa_codes]
    sa_sizes = list(sa_sizes)
    if joint:
        if not sa_codes:
            raise invalid("joint l-diversity needs SA codes")
        vec, keys = sa_vector_codes(sa_codes)
        sa_codes = sa_codes + [vec]
        sa_sizes.append(max(1, len(keys)))
        if sa_names is not None:
            sa_names = list(sa_names) + ["sa_vector"]
    sc = schema(kinds, sizes, values=values, taxonomies=taxonomies, sa_sizes=sa_sizes,
                sa_names=sa_names, seed=seed)
    preds = []
    if k is not None:
        preds.append(k_anonymity(k))
    if l is not None:
        l = _positive(l, "l")
        if not sa_codes:
            raise invalid("l-diversity needs at least one SA", hint="give sa_codes")
        chans = [len(sa_codes) - 1] if joint else list(range(len(sa_codes)))
        for c in chans:
            have = np.unique(sa_codes[c]).size
            if have < l:
                what = "distinct SA vectors" if joint else f"distinct values of SA {c}"
                raise invalid(f"l = {l} but the table has only {have} {what}",
                              hint="lower l; no partition can be more diverse than the table")
        preds.append(distinct_l_diversity(l, channels=chans))
    if predicate is not None:
        preds.append(_predicate(predicate))
    if not preds:
        raise invalid("give k, l or a predicate", hint="e.g. k=10 for k-anonymity")
    pred = preds[0] if len(preds) == 1 else all_of(*preds)
    return partition(qi_codes, sa_codes, sc, pred, mode=mode, start=start, nodes=nodes,
                     persons=persons, whole=whole)


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


def _mode(mode):
    if mode not in MODES:
        raise invalid(f"mode {mode!r} is not one of {', '.join(MODES)}",
                      hint="'strict' (default) or 'relaxed' multidimensional partitioning")
    return mode


def _predicate(p):
    if not callable(p):
        raise invalid(f"predicate {p!r} is not callable",
                      hint="give predicate(size, sa_histograms) -> bool, e.g. k_anonymity(10)")
    return p


def _codes(x, what, allow_negative=False):
    a = np.asarray(x)
    if a.ndim != 1:
        raise invalid(f"{what} must be a one-dimensional array of codes")
    if a.size == 0:
        return a.astype(np.int64)
    if a.dtype.kind not in "iub":
        raise bad_data(f"{what} must be integer codes, not {a.dtype}",
                       hint="encode values as integer codes (ranks or leaf codes); "
                            "NULLs are not allowed")
    a = a.astype(np.int64)
    if not allow_negative and (a < 0).any():
        raise bad_data(f"{what} has a negative code ({int(a.min())})", hint="codes start at 0")
    return a


def _in_range(a, size, what):
    if a.size and a.max() >= size:
        raise bad_data(f"{what} has code {int(a.max())}, but the domain has {size} codes "
                       f"(0..{size - 1})",
                       hint="give the global domain size in the schema")


def _check_lengths(qs, ss):
    n = qs[0].size
    for j, q in enumerate(qs):
        if q.size != n:
            raise invalid(f"QI {j} has {q.size} codes but QI 0 has {n}",
                          hint="give one code per row for every QI and SA")
    for c, s in enumerate(ss):
        if s.size != n:
            raise invalid(f"SA {c} has {s.size} codes but QI 0 has {n}",
                          hint="give one code per row for every QI and SA")


def _check_rows(qi_codes, sa_codes, schema):
    qs = [_codes(q, f"QI {j}") for j, q in enumerate(qi_codes)]
    ss = [_codes(s, f"SA {c}") for c, s in enumerate(sa_codes)]
    if len(qs) != schema.d:
        raise invalid(f"{len(qs)} QI code arrays for a schema of {schema.d} QIs")
    if len(ss) != len(schema.sa_sizes):
        raise invalid(f"{len(ss)} SA code arrays for a schema of {len(schema.sa_sizes)} SA channels",
                      hint="give sa_sizes to schema() for every SA channel")
    _check_lengths(qs, ss)
    for j, q in enumerate(qs):
        if schema.kinds[j] != "taxonomy":
            _in_range(q, schema.sizes[j], f"QI {j}")
    for c, s in enumerate(ss):
        _in_range(s, schema.sa_sizes[c], f"SA {c}")
    return qs, ss, qs[0].size


def _working(codes, schema, j, what):
    """Working codes of QI j: the codes (numeric/ordinal) or the leaf ranks (taxonomy)."""
    codes = np.asarray(codes, np.int64)
    if schema.kinds[j] == "taxonomy":
        return schema.taxonomies[j].ranks(codes, what)
    _in_range(codes, schema.sizes[j], what)
    return codes


def _check_nodes(nodes, schema, lo, hi):
    if nodes is None:
        return
    nodes = _per_qi(nodes, schema.d, "nodes")
    for j, u in enumerate(nodes):
        if u is None:
            continue
        tx = schema.taxonomies[j]
        if tx is None:
            raise invalid(f"QI {j} is not a taxonomy QI, so it has no node")
        i = tx.node_id(u)
        if lo[j].min() < tx.first[i] or hi[j].max() > tx.last[i]:
            raise bad_data(f"QI {j}: the partition has codes outside taxonomy node {u!r}",
                           hint="give the node the partition was cut to, or none")


def _check_start_nodes(nodes, schema, W, init_key, ids):
    if nodes is None:
        return
    if not isinstance(nodes, dict):
        if ids.size != 1:
            raise invalid("nodes for several initial partitions must be a mapping id -> nodes")
        nodes = {ids[0]: nodes}
    pos = {x: i for i, x in enumerate(ids.tolist())}
    for key, ns in nodes.items():
        if key not in pos:
            raise invalid(f"nodes names initial partition {key!r}, which has no rows")
        m = init_key == pos[key]
        _check_nodes(ns, schema, [w[m] for w in W], [w[m] for w in W])
