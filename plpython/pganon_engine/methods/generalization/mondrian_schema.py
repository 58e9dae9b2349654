"""The global facts of a Mondrian run and the checks of codes against them: per QI its kind,
domain size, values and taxonomy (a hierarchy compiled to leaf-rank intervals with an ancestor
table), per SA channel its size and name, and the dimension tie order (`mondrian` D1, D3, D6).

Why a module of its own: both ways of cutting read these facts and check their input the same
way, the in-memory driver (`mondrian.partition`) and the cut decided from aggregates
(`mondrian_cuts`, which `mondrian_sql` calls), and the person-level 1:M method builds the same
taxonomies; none of that depends on how a cut is searched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pganon_engine.core.errors import bad_data, invalid

__all__ = ["KINDS", "Taxonomy", "taxonomy", "Schema", "schema"]

KINDS = ("numeric", "ordinal", "taxonomy")


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
            cs = tuple(int_list(leaves[u], f"leaf codes of taxonomy node {u!r}"))
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
            want = set(int_list(cs, f"leaf codes of taxonomy node {u!r}"))
            if got != want:
                raise invalid(f"taxonomy node {u!r}: leaves lists {sorted(want)[:8]} but its "
                              f"children cover {sorted(got)[:8]}",
                              hint="the leaf codes of a node are those of its children")
    return tx


def int_list(xs, what):
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
        sz = int_list([sz], f"sizes[{j}]")[0]
        if sz < 1:
            raise invalid(f"QI {j}: sizes must be >= 1, not {sz}")
        vs.append(v)
        txs.append(None)
        szs.append(sz)
    sa_sizes = tuple(int_list(sa_sizes, "sa_sizes"))
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
# Input checks
# --------------------------------------------------------------------------------------------


def positive(x, what):
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise invalid(f"{what} must be an integer, not {x!r}")
    if x < 1:
        raise invalid(f"{what} must be >= 1, not {x}")
    return int(x)


def code_array(x, what, allow_negative=False):
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


def in_range(a, size, what):
    if a.size and a.max() >= size:
        raise bad_data(f"{what} has code {int(a.max())}, but the domain has {size} codes "
                       f"(0..{size - 1})",
                       hint="give the global domain size in the schema")


def check_lengths(qs, ss):
    n = qs[0].size
    for j, q in enumerate(qs):
        if q.size != n:
            raise invalid(f"QI {j} has {q.size} codes but QI 0 has {n}",
                          hint="give one code per row for every QI and SA")
    for c, s in enumerate(ss):
        if s.size != n:
            raise invalid(f"SA {c} has {s.size} codes but QI 0 has {n}",
                          hint="give one code per row for every QI and SA")


def check_rows(qi_codes, sa_codes, schema):
    qs = [code_array(q, f"QI {j}") for j, q in enumerate(qi_codes)]
    ss = [code_array(s, f"SA {c}") for c, s in enumerate(sa_codes)]
    if len(qs) != schema.d:
        raise invalid(f"{len(qs)} QI code arrays for a schema of {schema.d} QIs")
    if len(ss) != len(schema.sa_sizes):
        raise invalid(f"{len(ss)} SA code arrays for a schema of {len(schema.sa_sizes)} SA channels",
                      hint="give sa_sizes to schema() for every SA channel")
    check_lengths(qs, ss)
    for j, q in enumerate(qs):
        if schema.kinds[j] != "taxonomy":
            in_range(q, schema.sizes[j], f"QI {j}")
    for c, s in enumerate(ss):
        in_range(s, schema.sa_sizes[c], f"SA {c}")
    return qs, ss, qs[0].size


def working(codes, schema, j, what):
    """Working codes of QI j: the codes (numeric/ordinal) or the leaf ranks (taxonomy)."""
    codes = np.asarray(codes, np.int64)
    if schema.kinds[j] == "taxonomy":
        return schema.taxonomies[j].ranks(codes, what)
    in_range(codes, schema.sizes[j], what)
    return codes


def check_nodes(nodes, schema, lo, hi):
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
