"""1:M-generalization under (k,l)-diversity (Gong et al. 2017, restated by Nasr, Sayed and Ead;
spec 003-msa-comparative.md §2.1, §3.2, §7 A1, A2, A8, A9, A15, A29): a planning engine, no
database access.

Why two partitionings: a person with several records (1:M data) is re-identified by the *set*
of her sensitive values as much as by her QIs.  So the sensitive part is anonymized first, by
He & Naughton's top-down Partition on the SA taxonomy, until every generalized SA set (the
person's "fingerprint") is shared by >= k persons; then the QIs are cut by Mondrian
(`pganon_engine.methods.generalization.mondrian`, reused as is) with distinct l-diversity over those fingerprints, so
every QI class holds >= l distinct generalized sets.  The release has one row per person:
generalized QIs, class id and generalized SA set (A2: never re-expanded to records).

Steps and entry points:
  `transform`             step 1: records (pid, QIs, one SA value) -> one person per pid with
                          her SA set (what `GROUP BY pid, array_agg(DISTINCT sa)` gives)
  `partition_sets`        step 2: Partition of the SA sets with k, and SA-NCP%
  `one_m_generalization`  steps 2-4: Partition, Mondrian-l, QID-NCP% and SA-NCP%

Decisions (spec items in brackets):

- O1  Partition follows the spec's §2.1.3 pseudo-code and the reference code [A29].  A bucket
      has members, a cut (an antichain of SA-taxonomy nodes that covers every item of every
      member), the set of nodes it has already expanded and a splittable flag.  The root
      bucket holds everyone with cut {root}.  Every member of a bucket has an item under every
      node of the cut (by construction), so a member's generalized set is exactly the cut of
      the bucket it ends in, and a bucket's members share one generalized set.
- O2  Node choice: among the cut's nodes with children that the bucket has not expanded, the
      one with the largest IG(B, n) = leaf_count(n) * (items of members under n) (§3.2,
      exact integers).  Ties: the node with the smaller hierarchy id (`Hierarchy` H1:
      shallower first, then label order).
- O3  Split: every member goes to the sub-bucket of the set of children of n* that hold her
      items under n*; its cut is the parent's cut with n* replaced by that set.  Sub-buckets
      start with nothing expanded (as the reference code's fresh buckets).  Sub-bucket order:
      by number of children, then by the children's positions (hierarchy child order), as
      the reference code enumerates the subsets.
- O4  Balance [A29]: sub-buckets with < k members are dissolved into the leftover.  If the
      leftover is non-empty and has < k members, it takes, one at a time, the member with the
      fewest items under n* (tIG) from the sub-buckets that have > k members; ties: earlier
      sub-bucket (O3 order), then person order.  If that runs dry the split fails: the
      sub-bucket with the smallest IG(X, n*) (ties: earlier sub-bucket) is dissolved into the
      leftover as a whole and the parent is no longer splittable.  A non-empty leftover stays
      in the parent (parent cut, n* now expanded) and is partitioned further; an empty one
      disappears.  Every final bucket therefore has >= k members (the root has n >= k).
- O5  Order: depth first, sub-buckets in O3 order, the leftover after them.  Final buckets
      are numbered 0.. in that order; fingerprint codes are numbered by first occurrence in
      bucket order (distinct buckets end with distinct cuts, so they coincide in practice).
      Generalized sets are listed as labels in string order.
- O6  Mondrian [A1, A8, A9]: `mondrian.mondrian` on the persons' QI codes with one SA channel,
      the fingerprint code, and `distinct_l_diversity(l)` as the only predicate (Partition
      already gives k; (k,l)-diversity asks no k of a QI class).  Strict median cuts by
      default (mode 'relaxed' on request); Mondrian's own tie rules D1-D6 apply and its class
      ids (tree order) are the release's class ids.  No |P| < 2l pre-check [A8].
- O7  QIs: 'numeric' (finite real numbers; codes are ranks of the distinct values, widths in
      values) or 'categorical' (text).  A categorical QI with a `Hierarchy` is cut by the
      taxonomy and published as the LCA's label; without one it is cut as an ordinal (values
      in string order) and published as the sorted distinct values of the class [A6].  The
      default kind of a column without a hierarchy is numeric iff all its values are real
      numbers.
- O8  QID-NCP% [§3.2, A15]: 100 * sum over classes |E| * sum_i NCP_i(E) / (n * d), with
      numeric (max - min) / (global max - global min) (0 for a one-value column), taxonomy
      0 for a leaf else leaves(node) / leaves(root) (all leaves of the hierarchy, Xu et al.,
      not the reference code's 1/|A| for a leaf), value set 0 for one value else
      |set| / |distinct values of the column| (as spec 004 A14).
- O9  SA-NCP% [§3.2]: 100 * sum over persons and items c(g(v)) / sum over persons |S|, with
      c = 0 when an item is published as itself (a leaf) and leaves(g) / leaves(root) else.
- O10 Seed: None gives the rules above.  An int draws, once, a random priority of the SA
      taxonomy's nodes (replaces the id order of O2) and a random person order (replaces
      input order in O4), from numpy's default_rng([seed, 3]); Mondrian gets the same seed
      (its seeded dimension order).  The same seed gives the same release.
- O11 Errors: k or l not an integer >= 1, bad kinds or hierarchies -> invalid (PA002); a
      NULL, an empty SA set, a value that is not a leaf of its hierarchy, a non-number in a
      numeric QI -> bad_data (PA004); k or l larger than the persons, or l larger than the
      number of distinct generalized sets Partition produced -> unsatisfiable (PA005), with
      the fix in the hint.

Input size: Partition decides per person (O4 moves single persons), so it takes every
person's SA set, as integer item arrays (CSR); memory grows with the number of (person, item)
pairs.  The Mondrian step is `mondrian.partition`'s vectorized driver on code arrays.  Work per
bucket split is numpy over the bucket's items, so a run is O(items * depth of the bucket tree).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pganon_engine.core.errors import bad_data, invalid, unsatisfiable
from pganon_engine.hierarchy.tree import Hierarchy
from pganon_engine.methods.generalization import mondrian, mondrian_cuts, mondrian_schema

__all__ = [
    "KINDS",
    "transform",
    "SetPartition",
    "partition_sets",
    "OneM",
    "one_m_generalization",
]

KINDS = ("numeric", "categorical")
_BITS = 52  # children per float64 word of a subset key (exact integer sums of powers of two)


# --------------------------------------------------------------------------------------------
# Step 1: records -> persons
# --------------------------------------------------------------------------------------------


def transform(pids, qis, sa):
    """Records to persons (step 1).

    pids  per record the person id (hashable, not NULL)
    qis   mapping QI column -> per record value (constant over a person's records)
    sa    per record its sensitive value

    Returns (person ids in first-appearance order, {column: per person value}, per person the
    tuple of her distinct SA values in string order).  Refuses a NULL id or SA value and a
    person whose QI values differ between her records.
    """
    pids = list(pids)
    sa = list(sa)
    cols = _mapping(qis, "qis")
    if len(sa) != len(pids):
        raise invalid(f"{len(pids)} person ids but {len(sa)} SA values",
                      hint="give one person id and one SA value per record")
    for c, vals in cols.items():
        if len(vals) != len(pids):
            raise invalid(f"QI {c!r} has {len(vals)} values for {len(pids)} records",
                          hint="give one value per record for every QI")
    where, order = {}, []
    for r, p in enumerate(pids):
        if p is None:
            raise bad_data(f"record {r} has a NULL person id", hint="give every record its person")
        if sa[r] is None:
            raise bad_data(f"record {r} (person {p!r}) has a NULL sensitive value",
                           hint="drop the record or map NULL to a value of the SA hierarchy")
        try:
            i = where.get(p)
        except TypeError:
            raise invalid(f"record {r}'s person id {p!r} is not hashable",
                          hint="give person ids as numbers or text") from None
        if i is None:
            where[p] = len(order)
            order.append(r)
            continue
        first = order[i]
        for c, vals in cols.items():
            if vals[r] != vals[first]:
                raise bad_data(f"person {p!r} has two values of QI {c!r}: {vals[first]!r} "
                               f"(record {first}) and {vals[r]!r} (record {r})",
                               hint="QIs must be constant per person in 1:M data; fix the source "
                                    "or make the column a sensitive value")
    sets = [set() for _ in order]
    for r, p in enumerate(pids):
        sets[where[p]].add(sa[r])
    out_qis = {c: [vals[r] for r in order] for c, vals in cols.items()}
    return ([pids[r] for r in order], out_qis,
            [tuple(sorted(s, key=lambda x: (str(x), repr(x)))) for s in sets])


# --------------------------------------------------------------------------------------------
# Step 2: Partition of the SA sets (He & Naughton), O1-O5, O9
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SetPartition:
    """Partition's result (O1-O5).

    bucket        per person her final bucket (0.. in O5 order)
    fingerprint   per person the code of her generalized SA set
    cuts          per fingerprint code the generalized set as hierarchy node ids (ascending)
    labels        per fingerprint code the generalized set as labels (string order)
    bucket_sizes  persons per bucket
    ptr, items    the persons' SA sets as leaf ids: person i's are items[ptr[i]:ptr[i + 1]]
    gen           per item its published node (an ancestor-or-self in the person's cut)
    sa_ncp        SA-NCP% (O9)
    splits        bucket splits tried (node expansions)
    """

    bucket: np.ndarray
    fingerprint: np.ndarray
    cuts: tuple
    labels: tuple
    bucket_sizes: np.ndarray
    ptr: np.ndarray
    items: np.ndarray
    gen: np.ndarray
    sa_ncp: float
    splits: int

    @property
    def n_buckets(self):
        return int(self.bucket_sizes.size)

    def gen_set(self, i):
        """Person i's generalized SA set (labels)."""
        return self.labels[int(self.fingerprint[i])]


def partition_sets(sa_sets, hierarchy, k, *, seed=None):
    """Partition (spec §2.1.3 step 2): generalize every person's SA set to a cut of the SA
    taxonomy so that every generalized set is shared by >= k persons.

    sa_sets    per person an iterable of SA values (leaf labels or leaf ids of `hierarchy`);
               duplicates are ignored
    hierarchy  the SA taxonomy, a `Hierarchy`
    k          persons per generalized set (1 .. number of persons)
    seed       None (O2/O4 tie rules) or an int (O10)
    """
    h = _hierarchy(hierarchy, "the SA taxonomy")
    k = _positive(k, "k")
    seed = _seed(seed)
    ptr, items = _csr(sa_sets, h)
    n = ptr.size - 1
    if n == 0:
        raise invalid("no persons given", hint="give one SA set per person")
    if k > n:
        raise unsatisfiable(f"k = {k} but there are only {n} persons, so no generalized SA set "
                            f"can be shared by k of them", hint="lower k, or publish more persons")
    return _partition(ptr, items, h, k, seed)


class _Bucket:
    __slots__ = ("members", "cut", "expanded", "splittable")

    def __init__(self, members, cut, expanded, splittable):
        self.members, self.cut, self.expanded, self.splittable = members, cut, expanded, splittable


def _partition(ptr, items, h, k, seed):
    n = ptr.size - 1
    H = len(h)
    fan = np.array([len(c) for c in h.children], np.int64)
    child_pos = np.zeros(H, np.int64)
    for kids in h.children:
        for i, c in enumerate(kids):
            child_pos[c] = i
    leaf_count = h.leaf_count
    lens = np.diff(ptr)
    if seed is None:
        prio = np.arange(H)
        order = np.arange(n)
    else:
        rng = np.random.default_rng([seed, 3])
        prio = rng.permutation(H)
        order = rng.permutation(n)
    prio = prio.tolist()
    gen = np.zeros(items.size, np.int64)  # every item starts at the root (node 0)
    stack = [_Bucket(order, (0,), frozenset(), True)]
    finals = []
    splits = 0
    while stack:
        b = stack.pop()
        cand = ([u for u in b.cut if fan[u] and u not in b.expanded] if b.splittable else [])
        if not cand:
            finals.append(b)
            continue
        splits += 1
        m = b.members.size
        mlen = lens[b.members]
        idx = _gather(ptr, b.members, mlen)
        own = np.repeat(np.arange(m), mlen)
        g = gen[idx]
        if len(cand) == 1:
            nstar = cand[0]
        else:  # O2: largest IG, ties by priority
            u, c = np.unique(g, return_counts=True)
            cnt = dict(zip(u.tolist(), c.tolist()))
            nstar = max(cand, key=lambda x: (int(leaf_count[x]) * cnt.get(x, 0), -prio[x]))
        under = g == nstar
        uidx = idx[under]
        uown = own[under]
        child = h.anc[items[uidx], h.depth[nstar] + 1]
        pos = child_pos[child]
        sid, subsets = _subset_keys(uown, pos, m, int(fan[nstar]))
        kids = h.children[nstar]
        sizes = np.bincount(sid, minlength=len(subsets))
        left = sizes[sid] < k  # O4: members of sub-buckets below k
        fail = False
        if left.any():
            need = k - int(left.sum())
            if need > 0:
                tig = np.bincount(uown, minlength=m)  # items under n* (tIG / leaf_count(n*))
                cap = np.maximum(sizes - k, 0)
                cands = np.flatnonzero(~left & (cap[sid] > 0))
                o = cands[np.lexsort((cands, sid[cands], tig[cands]))]
                so = sid[o]
                srt = np.argsort(so, kind="stable")  # rank of each candidate within its bucket
                within = np.empty(o.size, np.int64)
                starts = np.searchsorted(so[srt], so[srt])
                within[srt] = np.arange(o.size) - starts
                avail = o[within < cap[so]]
                left[avail[:need]] = True
                if avail.size < need:
                    fail = True
                    rest = ~left
                    if rest.any():
                        ig = np.bincount(sid[rest], weights=tig[rest], minlength=len(subsets))
                        alive = np.bincount(sid[rest], minlength=len(subsets)) > 0
                        ig[~alive] = np.inf
                        left |= sid == int(np.argmin(ig))
        keep = ~left[uown]
        gen[uidx[keep]] = child[keep]
        if left.any():
            stack.append(_Bucket(b.members[left], b.cut, b.expanded | {nstar}, not fail))
        if not left.all():
            base = [u for u in b.cut if u != nstar]
            rest = np.flatnonzero(~left)
            rest = rest[np.argsort(sid[rest], kind="stable")]
            rs = sid[rest]
            bounds = np.flatnonzero(np.diff(rs)) + 1
            subs = []
            for grp in np.split(rest, bounds):
                s = int(sid[grp[0]])
                cut = tuple(sorted(base + [kids[p] for p in subsets[s]]))
                subs.append(_Bucket(b.members[grp], cut, frozenset(), True))
            stack.extend(reversed(subs))
    bucket = np.empty(n, np.int64)
    fp = np.empty(n, np.int64)
    code_of, cuts, bsizes = {}, [], []
    for i, b in enumerate(finals):
        code = code_of.setdefault(b.cut, len(code_of))
        if code == len(cuts):
            cuts.append(b.cut)
        bucket[b.members] = i
        fp[b.members] = code
        bsizes.append(b.members.size)
    labels = tuple(tuple(sorted(h.labels[u] for u in cut)) for cut in cuts)
    cost = np.where(h.is_leaf[gen], 0.0, leaf_count[gen] / h.n_leaves)
    sa_ncp = 100.0 * float(cost.sum()) / items.size
    return SetPartition(bucket=bucket, fingerprint=fp, cuts=tuple(cuts), labels=labels,
                        bucket_sizes=np.asarray(bsizes, np.int64), ptr=ptr, items=items,
                        gen=gen, sa_ncp=sa_ncp, splits=splits)


def _gather(ptr, members, mlen):
    """The item indices of the members, member by member."""
    starts = ptr[members]
    total = int(mlen.sum())
    offs = np.cumsum(mlen) - mlen
    return np.repeat(starts - offs, mlen) + np.arange(total)


def _subset_keys(own, pos, m, fanout):
    """Per member (0..m-1) the id of her set of child positions, and per id the positions
    (ascending); ids in O3 order (set size, then positions).  Sets are exact bit keys in
    float64 words of _BITS children each."""
    pair = np.unique(own * fanout + pos)
    pm, pp = pair // fanout, pair % fanout
    W = (fanout + _BITS - 1) // _BITS
    key = np.bincount(pm * W + pp // _BITS, weights=np.exp2(pp % _BITS),
                      minlength=m * W).reshape(m, W)
    if W == 1:
        uk, inv = np.unique(key[:, 0], return_inverse=True)
        uk = uk[:, None]
    else:
        uk, inv = np.unique(key, axis=0, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    subsets = []
    for row in uk.tolist():
        ps = []
        for w, x in enumerate(row):
            x = int(x)
            while x:
                low = x & -x
                ps.append(w * _BITS + low.bit_length() - 1)
                x ^= low
        subsets.append(tuple(ps))
    rank = sorted(range(len(subsets)), key=lambda s: (len(subsets[s]), subsets[s]))
    new = np.empty(len(subsets), np.int64)
    new[rank] = np.arange(len(subsets))
    return new[inv], [subsets[s] for s in rank]


# --------------------------------------------------------------------------------------------
# Steps 2-4: the release
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class OneM:
    """A 1:M-generalization release plan: one row per person (A2).

    qis            QI column names, in the order of the cells
    kinds          per QI 'numeric', 'taxonomy' or 'set' (categorical without hierarchy)
    class_id       per person her QI class (Mondrian's tree order, O6)
    class_sizes    persons per class
    cells          per class a tuple of QI cells: (min, max) for numeric, the LCA label for
                   taxonomy, the tuple of the class's distinct values (string order) for set
    sets           Partition's result (fingerprints, buckets, SA-NCP), a `SetPartition`
    qid_ncp        QID-NCP% (O8)
    qid_ncp_per_qi per QI column its NCP% (100 * sum |E| NCP_i(E) / n)
    sa_ncp         SA-NCP% (O9)
    k, l, seed, mode   the parameters
    """

    qis: tuple
    kinds: tuple
    class_id: np.ndarray
    class_sizes: np.ndarray
    cells: tuple
    sets: SetPartition
    qid_ncp: float
    qid_ncp_per_qi: dict
    sa_ncp: float
    k: int
    l: int
    seed: object
    mode: str

    @property
    def n_persons(self):
        return int(self.class_id.size)

    @property
    def n_classes(self):
        return int(self.class_sizes.size)

    @property
    def fingerprint(self):
        """Per person the code of her generalized SA set."""
        return self.sets.fingerprint

    def gen_set(self, i):
        """Person i's generalized SA set (labels, string order)."""
        return self.sets.gen_set(i)

    def row(self, i):
        """Person i's published row: (class id, QI cells, generalized SA set)."""
        c = int(self.class_id[i])
        return c, self.cells[c], self.gen_set(i)

    def rows(self):
        return [self.row(i) for i in range(self.n_persons)]


def one_m_generalization(qis, sa_sets, sa_hierarchy, *, k=10, l=5, kinds=None,
                         hierarchies=None, mode="strict", seed=None):
    """1:M-generalization (spec §2.1.3 steps 2-4) under (k,l)-diversity: every generalized SA
    set is shared by >= k persons and every QI class has >= l distinct generalized SA sets.

    qis           mapping QI column -> per person value (one row per person, `transform`)
    sa_sets       per person her SA values (leaf labels or ids of sa_hierarchy), non-empty
    sa_hierarchy  the SA taxonomy (`Hierarchy`)
    k, l          the (k,l) of (k,l)-diversity (defaults: the paper's 10 and 5)
    kinds         optional mapping column -> 'numeric' | 'categorical' (O7)
    hierarchies   optional mapping column -> `Hierarchy` for categorical QIs (O7)
    mode          Mondrian's 'strict' (default) or 'relaxed' cuts
    seed          None (documented ties) or an int (seeded ties, O10)
    """
    h = _hierarchy(sa_hierarchy, "the SA taxonomy")
    k = _positive(k, "k")
    l = _positive(l, "l")
    seed = _seed(seed)
    if mode not in mondrian_cuts.MODES:
        raise invalid(f"mode {mode!r} is not one of {', '.join(mondrian_cuts.MODES)}",
                      hint="'strict' (default) or 'relaxed' Mondrian cuts")
    cols = _mapping(qis, "qis")
    if not cols:
        raise invalid("no QIs given", hint="give at least one quasi-identifier column")
    ptr, items = _csr(sa_sets, h)
    n = ptr.size - 1
    if n == 0:
        raise invalid("no persons given", hint="give one SA set per person")
    for c, vals in cols.items():
        if len(vals) != n:
            raise invalid(f"QI {c!r} has {len(vals)} values for {n} persons",
                          hint="give one value per person for every QI (see transform)")
    enc = _encode_qis(cols, kinds, hierarchies)
    for x, what in ((k, "k"), (l, "l")):
        if x > n:
            raise unsatisfiable(f"{what} = {x} but there are only {n} persons",
                                hint=f"lower {what}, or publish more persons")
    sets = _partition(ptr, items, h, k, seed)
    n_fp = len(sets.cuts)
    if n_fp < l:
        raise unsatisfiable(f"l = {l} but Partition with k = {k} leaves only {n_fp} distinct "
                            f"generalized SA set(s), so no QI class can hold {l}",
                            hint="lower l, or lower k (a smaller k keeps more distinct sets)")
    res = mondrian.mondrian([e.codes for e in enc], [sets.fingerprint],
                            kinds=[e.mkind for e in enc], l=l, mode=mode,
                            sizes=[e.size for e in enc], values=[e.values for e in enc],
                            taxonomies=[e.taxonomy for e in enc], sa_sizes=[n_fp],
                            sa_names=["gen_sa_set"], seed=seed)
    cells, ncp = _cells(enc, res)
    sizes = res.sizes.astype(np.float64)
    per_qi = {e.name: 100.0 * float((sizes * ncp[:, j]).sum()) / n for j, e in enumerate(enc)}
    qid = 100.0 * float((sizes * ncp.sum(axis=1)).sum()) / (n * len(enc))
    return OneM(qis=tuple(e.name for e in enc), kinds=tuple(e.kind for e in enc),
                class_id=res.partition, class_sizes=res.sizes, cells=cells, sets=sets,
                qid_ncp=qid, qid_ncp_per_qi=per_qi, sa_ncp=sets.sa_ncp, k=k, l=l, seed=seed,
                mode=mode)


@dataclass
class _Qi:
    name: str
    kind: str            # 'numeric' | 'taxonomy' | 'set'
    mkind: str           # mondrian kind
    codes: np.ndarray
    size: object = None
    values: object = None    # numeric: distinct values (float64, increasing)
    taxonomy: object = None  # mondrian_schema.Taxonomy
    hierarchy: object = None
    domain: tuple = ()       # numeric: distinct values as given; set: distinct values


def _encode_qis(cols, kinds, hierarchies):
    kinds = {} if kinds is None else _mapping(kinds, "kinds")
    hierarchies = {} if hierarchies is None else _mapping(hierarchies, "hierarchies")
    for what, m in (("kinds", kinds), ("hierarchies", hierarchies)):
        extra = [c for c in m if c not in cols]
        if extra:
            raise invalid(f"{what} names {extra[0]!r}, which is not a QI column",
                          hint=f"QI columns: {', '.join(map(repr, cols))}")
    out = []
    for c, vals in cols.items():
        for i, v in enumerate(vals):
            if v is None or (isinstance(v, float) and math.isnan(v)):
                raise bad_data(f"QI {c!r} is NULL for person {i}",
                               hint="QIs must not be NULL; fill or drop those persons")
        kind = kinds.get(c)
        if kind is not None and kind not in KINDS:
            raise invalid(f"QI {c!r}: kind {kind!r} is not one of {', '.join(KINDS)}")
        hier = hierarchies.get(c)
        if hier is not None:
            if kind == "numeric":
                raise invalid(f"QI {c!r} is numeric but has a hierarchy",
                              hint="drop the hierarchy, or declare the column categorical")
            hier = _hierarchy(hier, f"the hierarchy of QI {c!r}")
            codes = hier.leaf_ids(vals)
            tx = mondrian_schema.taxonomy(children={v: list(hier.children[v]) for v in range(len(hier))},
                                          root=0)
            out.append(_Qi(c, "taxonomy", "taxonomy", codes, taxonomy=tx, hierarchy=hier))
            continue
        if kind is None:
            kind = "numeric" if all(_is_number(v) for v in vals) else "categorical"
        if kind == "numeric":
            bad = next((v for v in vals if not _is_number(v)), None)
            if bad is not None:
                raise bad_data(f"QI {c!r} is numeric but holds {bad!r}",
                               hint="give numbers, or declare the column categorical")
            arr = np.asarray([float(v) for v in vals], np.float64)
            if not np.isfinite(arr).all():
                raise bad_data(f"QI {c!r} holds a non-finite number",
                               hint="numeric QIs must be finite")
            uniq, codes = np.unique(arr, return_inverse=True)
            as_int = all(isinstance(v, numbers.Integral) for v in vals)
            dom = tuple(int(x) if as_int else float(x) for x in uniq.tolist())
            out.append(_Qi(c, "numeric", "numeric", codes.reshape(-1).astype(np.int64),
                           values=uniq, domain=dom))
            continue
        bad = next((v for v in vals if not isinstance(v, str)), None)
        if bad is not None:
            raise bad_data(f"QI {c!r} is categorical but holds {bad!r}, not text",
                           hint="give categorical values as text (the labels of the data)")
        dom = tuple(sorted(set(vals)))
        where = {x: i for i, x in enumerate(dom)}
        codes = np.fromiter((where[v] for v in vals), np.int64, count=len(vals))
        out.append(_Qi(c, "set", "ordinal", codes, size=len(dom), domain=dom))
    return out


def _cells(enc, res):
    """Per class the QI cells, and the (classes x QIs) NCP matrix (O8)."""
    P = res.n_partitions
    ncp = np.zeros((P, len(enc)))
    per = []
    for j, e in enumerate(enc):
        if e.kind == "numeric":
            lo, hi = res.lo[j], res.hi[j]
            span = e.values[-1] - e.values[0]
            if span > 0:
                ncp[:, j] = (e.values[hi] - e.values[lo]) / span
            per.append([(e.domain[a], e.domain[b]) for a, b in zip(lo.tolist(), hi.tolist())])
        elif e.kind == "taxonomy":
            hr = e.hierarchy
            ids = np.asarray(res.nodes[j], np.int64)
            ncp[:, j] = np.where(hr.is_leaf[ids], 0.0, hr.leaf_count[ids] / hr.n_leaves)
            per.append([hr.labels[u] for u in ids.tolist()])
        else:
            key = np.unique(res.partition * e.size + e.codes)
            cls, code = key // e.size, key % e.size
            cnt = np.bincount(cls, minlength=P)
            ncp[:, j] = np.where(cnt > 1, cnt / len(e.domain), 0.0)
            bounds = np.cumsum(cnt)[:-1]
            per.append([tuple(e.domain[x] for x in grp.tolist())
                        for grp in np.split(code, bounds)])
    cells = tuple(tuple(col[p] for col in per) for p in range(P))
    return cells, ncp


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


def _csr(sa_sets, h):
    """Persons' SA sets as (ptr, leaf ids), each person's ids distinct and ascending."""
    if isinstance(sa_sets, (str, bytes)) or not hasattr(sa_sets, "__iter__"):
        raise invalid("sa_sets must be a list with one collection of SA values per person")
    flat, lens = [], []
    for i, s in enumerate(sa_sets):
        if isinstance(s, (str, bytes)) or not hasattr(s, "__iter__"):
            raise invalid(f"person {i}'s SA set is {s!r}, not a collection of values",
                          hint="give a list of SA values per person, e.g. ['flu'] not 'flu'")
        s = list(s)
        if not s:
            raise bad_data(f"person {i} has an empty SA set",
                           hint="every person has at least one record with a sensitive value")
        for v in s:
            if v is None:
                raise bad_data(f"person {i}'s SA set holds a NULL",
                               hint="drop NULL sensitive values before grouping by person")
        flat.extend(s)
        lens.append(len(s))
    try:  # look every distinct value up once; the type is part of the key (1 vs True vs 1.0)
        keys = [(v.__class__, v) for v in flat]
        distinct = list(dict.fromkeys(keys))
    except TypeError:
        bad = next(v for v in flat if getattr(v, "__hash__", None) is None)
        raise bad_data(f"SA value {bad!r} is not a label or a leaf id",
                       hint="give SA values as the labels (or leaf ids) of the SA taxonomy"
                       ) from None
    where = dict(zip(distinct, h.leaf_ids([v for _, v in distinct]).tolist()))
    ids = np.fromiter((where[x] for x in keys), np.int64, count=len(flat))
    owner = np.repeat(np.arange(len(lens)), lens)
    key = np.unique(owner * len(h) + ids)  # distinct (person, leaf), sorted
    own, items = key // len(h), key % len(h)
    ptr = np.zeros(len(lens) + 1, np.int64)
    ptr[1:] = np.cumsum(np.bincount(own, minlength=len(lens)))
    return ptr, items.astype(np.int64)


def _hierarchy(h, what):
    if not isinstance(h, Hierarchy):
        raise invalid(f"{what} is {h!r}, not a Hierarchy",
                      hint="build one with Hierarchy.from_paths or Hierarchy.from_edges")
    return h


def _positive(x, what):
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise invalid(f"{what} must be an integer, not {x!r}", hint=f"e.g. {what} = 5")
    if x < 1:
        raise invalid(f"{what} must be >= 1, not {x}", hint=f"e.g. {what} = 5")
    return int(x)


def _seed(seed):
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise invalid(f"seed must be a non-negative integer or None, not {seed!r}")
    return int(seed)


def _mapping(m, what):
    if not isinstance(m, Mapping):
        raise invalid(f"{what} must be a mapping column -> values, not {type(m).__name__}")
    out = {}
    for c, v in m.items():
        if not isinstance(c, str):
            raise invalid(f"{what}: column name {c!r} is not text")
        if what in ("qis",) and (isinstance(v, (str, bytes)) or not hasattr(v, "__len__")):
            raise invalid(f"{what}[{c!r}] must be a list of values, one per row")
        out[c] = list(v) if what == "qis" else v
    return out


def _is_number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)
