"""The generalization hierarchy of one attribute (spec 001-metrics-strategies.md §1.2, A2).

A hierarchy is a rooted tree whose leaves are the attribute's data values (as text) and whose
inner nodes are ever coarser generalizations; the root stands for "any value".  Generalizing a
value means replacing it by one of its ancestors, merging two classes means replacing their
values by the lowest common ancestor (LCA).  This module only knows the tree; the metrics that
weight its edges live in `pganon_engine.metrics.infoloss`, the algorithm that walks it in
`pganon_engine.methods.generalization.gaa`.

Decisions:

- H1  Node ids are 0 .. size-1 in breadth-first order: by depth (root 0 at depth 0), then by
      label (Python string order) within a depth.  The order depends only on the tree, never
      on the order of the input rows, so the same catalog rows always give the same ids; and a
      parent always has a smaller id than its children.
- H2  `depth` counts edges from the root (root 0).  `level` is the paper's lvl(v) read as in
      A2: the longest distance from v down to a leaf (leaves 0, the root height - 1), and
      `height` is the number of nodes on the longest leaf-to-root path (Gender {M, F} -> *
      has height 2).  A tree is balanced when all its leaves have the same depth; then an
      edge always rises exactly one level.  Unbalanced trees are allowed: an edge may then
      span several levels (Dog -> Mammal in the paper's Race tree rises from level 0 to 2),
      and the metrics say how such an edge is weighted (infoloss, A2).
- H3  `from_paths` reads ARX-style rows, one per leaf, leaf first and root last.  Consecutive
      repeats in a row are collapsed (ARX pads short branches that way: Dog;Mammal;Mammal is
      the edge Dog -> Mammal).  With balanced=True every collapsed row must have the same
      length.  A row that visits a node twice (not consecutively) is a cycle.
- H4  `from_edges` reads (node, parent) pairs, parent None for the root.  A parent that is
      never listed as a node is taken as a node of its own (usually the root).  Repeated
      identical pairs are fine.  The leaves are the nodes without children.
- H5  Refused, naming the node: an empty hierarchy, more than one root, a node with two
      different parents, a cycle, a label that is not a string, and (paths only) a value that
      starts one row as a leaf but is an inner node in another.
- H6  `missing(values)` lists the data values that are not leaves (unknown values and inner
      nodes alike), distinct and in first-appearance order; the caller turns a non-empty list
      into an error before any work is done.
"""

import numpy as np

from pganon_engine.core.errors import bad_data, invalid


class Hierarchy:
    """A rooted tree of string labels with integer node ids (H1).

    Arrays indexed by node id: `parent` (-1 for the root), `depth`, `level`, `leaf_count`
    (nl(v), 1 for a leaf), `is_leaf`; `anc[v, d]` is the ancestor of v at depth d for
    d <= depth(v) and v itself below that (the ancestor-by-depth table used for vectorized
    LCAs).  Build with `from_paths` or `from_edges`.
    """

    def __init__(self, name, labels, parent):
        self.name = name
        self.labels = tuple(labels)
        self.index = {label: i for i, label in enumerate(self.labels)}
        n = len(self.labels)
        self.parent = np.asarray(parent, dtype=np.int64)
        kids = [[] for _ in range(n)]
        for v in range(1, n):
            kids[self.parent[v]].append(v)
        self.children = tuple(tuple(c) for c in kids)
        self.is_leaf = np.array([not c for c in kids], dtype=bool)
        self.leaves = np.flatnonzero(self.is_leaf)
        depth = np.zeros(n, dtype=np.int64)
        for v in range(1, n):
            depth[v] = depth[self.parent[v]] + 1
        self.depth = depth
        level = np.zeros(n, dtype=np.int64)
        nl = self.is_leaf.astype(np.int64)
        for v in range(n - 1, 0, -1):  # children have larger ids than their parent (H1)
            p = self.parent[v]
            level[p] = max(level[p], level[v] + 1)
            nl[p] += nl[v]
        self.level = level
        self.leaf_count = nl
        self.height = int(level[0]) + 1
        leaf_depths = depth[self.is_leaf]
        self.is_balanced = bool(leaf_depths.min() == leaf_depths.max())
        dmax = int(depth.max())
        anc = np.repeat(np.arange(n, dtype=np.int64)[:, None], dmax + 1, axis=1)
        for v in range(1, n):
            d = depth[v]
            anc[v, :d] = anc[self.parent[v], :d]
        self.anc = anc

    # ---------------------------------------------------------------------------------- build

    @classmethod
    def from_paths(cls, name, rows, balanced=False):
        """A hierarchy from ARX-style rows: one per leaf, leaf first, root last (H3)."""
        parent_of, leaves, roots = {}, {}, {}
        lengths = {}
        for r, row in enumerate(rows, start=1):
            path = []
            for x in row:
                _check_label(name, x, f"row {r}")
                if not path or path[-1] != x:
                    path.append(x)
            if not path:
                raise invalid(f"hierarchy {name!r}: row {r} is empty",
                              hint="each row lists a leaf, its ancestors and the root")
            seen = set()
            for x in path:
                if x in seen:
                    raise invalid(f"hierarchy {name!r}: row {r} visits {x!r} twice (a cycle)",
                                  hint="a row goes from the leaf up to the root without repeats")
                seen.add(x)
            lengths.setdefault(len(path), (r, path[0]))
            leaves.setdefault(path[0], r)
            roots.setdefault(path[-1], r)
            for child, par in zip(path, path[1:]):
                old = parent_of.setdefault(child, par)
                if old != par:
                    raise invalid(f"hierarchy {name!r}: node {child!r} has two parents, "
                                  f"{old!r} and {par!r} (row {r})",
                                  hint="every node generalizes to exactly one parent")
        if not leaves:
            raise invalid(f"hierarchy {name!r} is empty", hint="give one row per leaf value")
        if len(roots) > 1:
            raise invalid(f"hierarchy {name!r} has more than one root: "
                          + ", ".join(repr(x) for x in roots),
                          hint="every row must end with the same root, e.g. '*'")
        if balanced and len(lengths) > 1:
            (l1, (r1, x1)), (l2, (r2, x2)) = sorted(lengths.items(), key=lambda kv: kv[1])[:2]
            raise invalid(f"hierarchy {name!r} is not balanced: row {r1} (leaf {x1!r}) has {l1} "
                          f"nodes, row {r2} (leaf {x2!r}) has {l2}",
                          hint="give every leaf a path of the same length")
        inner = set(parent_of.values())
        for leaf, r in leaves.items():
            if leaf in inner:
                raise invalid(f"hierarchy {name!r}: {leaf!r} is a leaf in row {r} and an inner "
                              f"node elsewhere",
                              hint="a data value must not also generalize other values")
        (root,) = roots
        parent_of[root] = None
        return cls._build(name, parent_of)

    @classmethod
    def from_edges(cls, name, pairs):
        """A hierarchy from (node, parent) pairs, parent None for the root (H4)."""
        parent_of = {}
        for pair in pairs:
            try:
                node, par = pair
            except (TypeError, ValueError):
                raise invalid(f"hierarchy {name!r}: {pair!r} is not a (node, parent) pair") from None
            _check_label(name, node, "a node")
            if par is not None:
                _check_label(name, par, f"the parent of {node!r}")
            if node in parent_of and parent_of[node] != par:
                raise invalid(f"hierarchy {name!r}: node {node!r} has two parents, "
                              f"{parent_of[node]!r} and {par!r}",
                              hint="every node generalizes to exactly one parent")
            parent_of[node] = par
        if not parent_of:
            raise invalid(f"hierarchy {name!r} is empty", hint="give at least the root (root, NULL)")
        for par in list(parent_of.values()):
            if par is not None and par not in parent_of:
                parent_of[par] = None
        return cls._build(name, parent_of)

    @classmethod
    def _build(cls, name, parent_of):
        roots = [x for x, p in parent_of.items() if p is None]
        if len(roots) > 1:
            raise invalid(f"hierarchy {name!r} has more than one root: "
                          + ", ".join(repr(x) for x in sorted(roots)),
                          hint="connect every node to one common root")
        depth = {}
        for x in roots:
            depth[x] = 0
        for start in parent_of:
            path, x = [], start
            on_path = set()
            while x not in depth:
                if x in on_path:
                    raise invalid(f"hierarchy {name!r} has a cycle through {x!r}",
                                  hint="follow the parents from any node to reach the root")
                on_path.add(x)
                path.append(x)
                x = parent_of[x]
            d = depth[x]
            for y in reversed(path):
                d += 1
                depth[y] = d
        if not roots:  # every node has a parent: only cycles (caught above unless empty)
            raise invalid(f"hierarchy {name!r} has no root", hint="give the root a NULL parent")
        order = sorted(parent_of, key=lambda x: (depth[x], x))
        ids = {x: i for i, x in enumerate(order)}
        parent = [-1 if parent_of[x] is None else ids[parent_of[x]] for x in order]
        return cls(name, order, parent)

    # -------------------------------------------------------------------------------- queries

    def __len__(self):
        return len(self.labels)

    def __repr__(self):
        return (f"Hierarchy({self.name!r}, {len(self)} nodes, {len(self.leaves)} leaves, "
                f"height {self.height})")

    @property
    def root(self):
        return 0

    @property
    def n_leaves(self):
        """nl(root): the number of leaves."""
        return len(self.leaves)

    def node(self, x):
        """The id of a node given by label (str) or id (int)."""
        if isinstance(x, str):
            try:
                return self.index[x]
            except KeyError:
                raise invalid(f"{x!r} is not a node of hierarchy {self.name!r}") from None
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool) and 0 <= x < len(self):
            return int(x)
        raise invalid(f"{x!r} is not a node of hierarchy {self.name!r}",
                      hint=f"give a label or an id in 0..{len(self) - 1}")

    def label(self, v):
        return self.labels[self.node(v)]

    def ancestors(self, v):
        """The ids from v up to the root, v included (v's generalizations, §1.2)."""
        v = self.node(v)
        out = [v]
        while self.parent[v] >= 0:
            v = int(self.parent[v])
            out.append(v)
        return out

    def generalizes(self, a, v):
        """True if a lies on the path from v to the root (a == v included)."""
        a, v = self.node(a), self.node(v)
        return bool(self.anc[v, self.depth[a]] == a)

    def lca(self, a, b):
        """The lowest common ancestor of two nodes."""
        a, b = self.node(a), self.node(b)
        return int(self.lca_many(a, np.array([b]))[0])

    def lca_many(self, a, bs):
        """LCA(a, b) for every id in the array bs, vectorized over the ancestor-by-depth table:
        ancestors at depth d agree for every d up to the LCA's depth and for no deeper d."""
        a = self.node(a)
        bs = np.asarray(bs, dtype=np.int64)
        same = (self.anc[bs] == self.anc[a]).sum(axis=1)
        return self.anc[a, same - 1]

    def lca_pairs(self, a, b):
        """Element-wise LCA of two equally long id arrays."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        same = (self.anc[a] == self.anc[b]).sum(axis=1)
        return self.anc[a, same - 1]

    def lca_row(self, a):
        """LCA(a, v) for every node v (an array indexed by node id): the root everywhere, then
        each ancestor u of a, shallowest first, written over its own subtree (LCA(a, v) is the
        deepest ancestor of a whose subtree holds v).  O(nodes) per row, not O(nodes x depth)
        as `lca_many` over every node: GAA takes one per distinct class node, and a ZIP
        hierarchy has 13,000 of them."""
        a = self.node(a)
        order, start, size = self._subtrees
        row = np.zeros(len(self), dtype=np.int64)
        for u in reversed(self.ancestors(a)[:-1]):
            row[order[start[u]:start[u] + size[u]]] = u
        return row

    @property
    def _subtrees(self):
        """(order, start, size): the node ids in depth-first preorder (children by id), and
        per node its position in that order and its subtree's node count, so that the subtree
        of u is order[start[u]:start[u] + size[u]].  Built on first use."""
        got = self.__dict__.get("_subtree_arrays")
        if got is None:
            n = len(self)
            order, stack = [], [0]
            while stack:
                v = stack.pop()
                order.append(v)
                stack.extend(reversed(self.children[v]))
            order = np.array(order, dtype=np.int64)
            start = np.empty(n, dtype=np.int64)
            start[order] = np.arange(n, dtype=np.int64)
            size = np.ones(n, dtype=np.int64)
            for v in range(n - 1, 0, -1):  # children have larger ids than their parent (H1)
                size[self.parent[v]] += size[v]
            got = self.__dict__["_subtree_arrays"] = (order, start, size)
        return got

    def missing(self, values):
        """The distinct data values that are not leaves, in first-appearance order (H6)."""
        out, seen = [], set()
        for x in values:
            key = (type(x).__name__, x) if x is None or isinstance(x, (str, int)) else repr(x)
            if key not in seen:
                seen.add(key)
                if self._leaf_id(x) < 0:
                    out.append(x)
        return out

    def leaf_ids(self, values):
        """An int64 array of the leaf ids of data values given as labels or ids; refuses (naming
        them) values that are not leaves."""
        ids = np.fromiter((self._leaf_id(x) for x in values), dtype=np.int64, count=len(values))
        if (ids < 0).any():
            bad = self.missing(values)
            raise bad_data(f"{len(bad)} value(s) of {self.name!r} are not leaves of its "
                           f"hierarchy: " + ", ".join(repr(y) for y in bad[:10])
                           + (" ..." if len(bad) > 10 else ""),
                           hint=f"add the values as leaves of hierarchy {self.name!r}")
        return ids

    def _leaf_id(self, x):
        if isinstance(x, str):
            v = self.index.get(x, -1)
        elif isinstance(x, (int, np.integer)) and not isinstance(x, bool) and 0 <= x < len(self):
            v = int(x)
        else:
            return -1
        return v if v >= 0 and self.is_leaf[v] else -1

    def edges(self):
        """Rows (node, parent, depth, leaf_count) in id order, parent None for the root: the
        form a catalog table stores."""
        return [(self.labels[v], None if v == 0 else self.labels[self.parent[v]],
                 int(self.depth[v]), int(self.leaf_count[v])) for v in range(len(self))]


def _check_label(name, x, where):
    if not isinstance(x, str):
        raise invalid(f"hierarchy {name!r}: {where} holds {x!r}, not a string",
                      hint="hierarchy nodes are labels (data values as text)")
