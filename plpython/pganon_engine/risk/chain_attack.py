"""The chain attack on a Rating release (issue 11, finding 1): what an analyst who knows the method
learns from the Attribute Table (AT: tk, one group id per attribute) and the ID Table (IDT:
attribute, group_id, value, count) alone.

Why: Rating's promise (spec 003 §2.4) is that a tuple links to its value of A_i with probability
at most 1/SC_i.  That holds only if nothing published says which of a group's tuples holds which
of its values.  The faithful algorithm deals each value's tuples first-in-first-out into the
groups in the order it makes them; if the tuple numbers follow the dealing order and the group
ids the creation order, every value's tuples meet its groups in order, and constraint
propagation pins most tuples to their exact value.

The attacker's hypothesis, per attribute and direction: for every value v, v's tuples sorted by
tk meet v's groups sorted by group id in the same order (direction 'same') or in the opposite
order ('opposite'); the other two of the four combinations are the same two constraints.  A
residue (the last tuple of a value once fewer than SC buckets are left) joins any group without
its value, so it breaks the order; every group holding a residue is larger than SC, and only
such groups are, so the attacker leaves out of the order the slots in groups larger than the
attribute's smallest group.  What remains is sound under the hypothesis.

Propagation, to a fixpoint, over candidate sets "slot (group, value) <- tuple of that group":
  chain   per value, consistency of `tuple(g_1) < tuple(g_2) < ...` (full arc consistency of the
          chain, vectorized over all chains: a few sweeps settle it or find a contradiction, and
          pointer jumping over the composed "next candidate above x" step functions bounds the
          rest to O(log length) steps)
  group   every group is a perfect matching of its tuples and its slots: all matchings of the
          group are enumerated for groups of at most `MAX_ENUM` tuples (generalized arc
          consistency), singleton rules for larger groups
A slot or a tuple left without candidates refutes the hypothesis: an attacker pins nothing with
a refuted hypothesis.  A tuple whose candidate slots all hold one value is pinned.

`chance`: the same attack on the same release with tuple numbers and group ids permuted at
random: what the attack pins when the numbers carry no information.  A release whose figure is
above chance leaks through its numbering.

Memory: O(tuples * M) for the candidate sets, M the largest group (<= 2 SC - 1); the chain and
group steps run in chunks of at most `CHUNK` cells.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

__all__ = ["attack_attribute", "attack", "assess", "DIRECTIONS"]

DIRECTIONS = ("same", "opposite")
MAX_ENUM = 5           # enumerate all matchings of groups up to this size (5! = 120)
CHUNK = 1 << 22        # cells per vectorized block (bounded temporary memory)
MAX_ROUNDS = 10_000    # safety stop of the fixpoint loop (each round removes a candidate)
SWEEPS = 32            # chain sweeps before pointer jumping (`_chain_min`)
NEG = -np.inf


class _Refuted(Exception):
    pass


def _dense(x):
    """Sorted distinct values of an int array and each entry's index among them: a lookup table
    when the values span little more than their count (published ids are dense numbers), else
    np.unique."""
    if x.size == 0:
        return x[:0], np.zeros(0, dtype=np.int64)
    mn, mx = int(x.min()), int(x.max())
    if mx - mn <= 4 * x.size + 16:
        present = np.zeros(mx - mn + 1, dtype=bool)
        present[x - mn] = True
        return np.flatnonzero(present) + mn, (np.cumsum(present) - 1)[x - mn]
    return np.unique(x, return_inverse=True)


def _find(ids, x):
    """Each entry of x's index in the sorted distinct `ids`, -1 where absent."""
    if ids.size == 0 or x.size == 0:
        return np.full(x.size, -1, dtype=np.int64)
    mn, mx = int(ids[0]), int(ids[-1])
    if mx - mn <= 4 * ids.size + 16:
        lut = np.full(mx - mn + 1, -1, dtype=np.int64)
        lut[ids - mn] = np.arange(ids.size)
        inside = (x >= mn) & (x <= mx)
        return np.where(inside, lut[np.clip(x - mn, 0, mx - mn)], -1)
    i = np.minimum(np.searchsorted(ids, x), ids.size - 1)
    return np.where(ids[i] == x, i, -1)


def _order2(major, minor):
    """argsort by (major, minor), both non-negative ints: one key when it fits in 62 bits (the
    pairs sorted here are distinct, or equal pairs are interchangeable: no stable sort needed)."""
    if major.size == 0:
        return np.zeros(0, dtype=np.int64)
    span = int(minor.max()) + 1
    if (int(major.max()) + 1) * span < (1 << 62):
        return np.argsort(major * span + minor)
    return np.lexsort((minor, major))


class _Attribute:
    """One attribute's release in dense arrays: groups 0..G-1 in group-id order, each group's
    tuples sorted by tk, slots (one per IDT value copy) sorted by group."""

    def __init__(self, tk, group, idt_group, vcode, values, idt_count):
        """vcode: the IDT rows' values as codes into `values` (`_code`)."""
        tk = np.asarray(tk, dtype=np.int64)
        group = np.asarray(group, dtype=np.int64)
        idt_group = np.asarray(idt_group, dtype=np.int64)
        idt_count = np.asarray(idt_count, dtype=np.int64)
        vcode = np.asarray(vcode, dtype=np.int64)
        if tk.shape != group.shape:
            raise ValueError("one group id per tuple")
        ids, g = _dense(group)
        self.n, self.G = tk.size, ids.size
        order = _order2(g, tk - tk.min()) if tk.size else np.zeros(0, dtype=np.int64)
        self.tk = tk[order]                 # tuples by (group, tk)
        self.order = order                  # position -> index in the input arrays
        self.size = np.bincount(g, minlength=self.G)
        self.start = np.cumsum(self.size) - self.size
        self.M = int(self.size.max()) if self.G else 0
        # IDT: slots expanded by count, matched to groups by id
        self.values = values
        gi = _find(ids, idt_group)
        self.consistent_input = bool((gi >= 0).all()) and bool((idt_count >= 1).all())
        if not self.consistent_input:
            return
        rep = np.repeat(np.arange(idt_group.size), idt_count)
        sg, sv = gi[rep], vcode[rep]
        dup = np.repeat(idt_count > 1, idt_count)
        o = _order2(sg, sv)
        self.slot_group, self.slot_value, self.slot_dup = sg[o], sv[o], dup[o]
        self.consistent_input = np.array_equal(np.bincount(self.slot_group, minlength=self.G), self.size)
        if not self.consistent_input:
            return
        # per slot, the tk of its group's tuples by position (padding +inf, never a candidate)
        cols = np.arange(self.M)
        idx = self.start[self.slot_group][:, None] + cols[None, :]
        valid = cols[None, :] < self.size[self.slot_group][:, None]
        self.slot_tk = np.where(valid, self.tk[np.minimum(idx, self.n - 1)].astype(np.float64), np.inf)
        self.valid = valid

    def chains(self):
        """prev/next slot in each value's chain (-1 at the ends); slots in groups larger than the
        smallest group (residues, module doc) and duplicated values take no part."""
        if getattr(self, "_chains", None) is None:
            self._chains = self._make_chains()
        return self._chains

    def _make_chains(self):
        n = self.n
        prev = np.full(n, -1, dtype=np.int64)
        nxt = np.full(n, -1, dtype=np.int64)
        sc = int(self.size.min()) if self.G else 0
        inchain = (self.size[self.slot_group] == sc) & ~self.slot_dup
        s = np.flatnonzero(inchain)
        s = s[_order2(self.slot_value[s], self.slot_group[s])]
        same = self.slot_value[s[1:]] == self.slot_value[s[:-1]]
        prev[s[1:][same]] = s[:-1][same]
        nxt[s[:-1][same]] = s[1:][same]
        return prev, nxt


def _scan_min(K, cand, prev):
    """Per slot, the least key it can take when every predecessor in its chain takes a smaller
    key (inf when none): the composition F_s o F_prev o ... applied to -inf, where F_s(x) is the
    least candidate key of s above x.  A composition is kept as thresholds: G(x) = min{K[s, j] :
    x < thr[s, j]}; composing with H (outer slot p) gives thr'[s, j] = max{thr_H[k] : K[p, k] <
    thr[s, j]}.  Pointer jumping: log2(longest chain) rounds."""
    thr = np.where(cand, K, NEG)
    ptr = prev.copy()
    n, M = K.shape
    rows = max(1, CHUNK // max(1, M * M))
    while True:
        act = np.flatnonzero(ptr >= 0)
        if act.size == 0:
            break
        new = thr.copy()
        for a in range(0, act.size, rows):
            s = act[a:a + rows]
            p = ptr[s]
            Kp, thp = K[p], thr[p]                      # outputs of H and their thresholds
            ok = (Kp[:, None, :] < thr[s][:, :, None]) & (thp[:, None, :] > NEG)
            new[s] = np.where(ok, thp[:, None, :], NEG).max(axis=2)
        thr = new
        ptr = np.where(ptr >= 0, ptr[np.maximum(ptr, 0)], -1)
    return np.where(thr > NEG, K, np.inf).min(axis=1)


def _chain_min(K, cand, prev, sweeps=None):
    """`_scan_min`'s result, first by sweeps: lo <- F_s(lo[prev]) for all slots at once, from
    lo = min candidate.  The sweeps rise monotonically to the exact bound from below, so they stop
    when nothing changes, and a slot that reaches inf is infeasible at once (a refuted
    hypothesis usually shows in a few sweeps; a true one settles in a few).  Past `SWEEPS`
    sweeps, pointer jumping finishes in O(log length) steps."""
    sweeps = SWEEPS if sweeps is None else sweeps
    lo = np.where(cand, K, np.inf).min(axis=1)
    has = prev >= 0
    src = np.maximum(prev, 0)
    for _ in range(sweeps):
        if np.isinf(lo).any():
            return lo
        x = np.where(has, lo[src], NEG)
        new = np.where(cand & (K > x[:, None]), K, np.inf).min(axis=1)
        if np.array_equal(new, lo):
            return lo
        lo = new
    if np.isinf(lo).any():
        return lo
    return _scan_min(K, cand, prev)


_PERMS = {k: np.array(list(itertools.permutations(range(k))), dtype=np.int64) for k in range(1, MAX_ENUM + 1)}


def _group_step(A, cand):
    """Generalized arc consistency of each group's perfect matching (all matchings enumerated up
    to MAX_ENUM tuples), singleton rules above.  Slots of a group are consecutive."""
    out = cand.copy()
    for k in np.unique(A.size).tolist():
        gs = np.flatnonzero(A.size == k)
        slots = A.start[gs][:, None] + np.arange(k)[None, :]          # (groups, k) slot indices
        if k <= MAX_ENUM:
            P = _PERMS[k]
            rows = max(1, CHUNK // (len(P) * k))
            onehot = np.zeros((len(P), k, k), dtype=np.int64)
            onehot[np.arange(len(P))[:, None], np.arange(k)[None, :], P] = 1
            onehot = onehot.reshape(len(P), k * k)
            for a in range(0, gs.size, rows):
                sl = slots[a:a + rows]
                C = cand[sl][:, :, :k]                                 # (g, k slots, k tuples)
                ok = C[:, np.arange(k)[None, :], P].all(axis=2)        # (g, perms)
                sup = (ok.astype(np.int64) @ onehot).reshape(-1, k, k) > 0
                out[sl, :k] = sup
        else:
            C = cand[slots][:, :, :k]
            for _ in range(k):
                single_slot = C.sum(axis=2) == 1                       # slot with one tuple
                taken = (C & single_slot[:, :, None]).any(axis=1)       # tuples those slots take
                C2 = C & ~(taken[:, None, :] & ~single_slot[:, :, None])
                single_tup = C2.sum(axis=1) == 1                       # tuple with one slot
                own = (C2 & single_tup[:, None, :]).any(axis=2)
                C2 = np.where(own[:, :, None], C2 & single_tup[:, None, :], C2)
                if np.array_equal(C2, C):
                    break
                C = C2
            out[slots, :k] = C
    return out


def _propagate(A, direction, tick=None):
    """Candidate sets at the fixpoint, or _Refuted."""
    sign = 1.0 if direction == "same" else -1.0
    prev, nxt = A.chains()
    K = sign * A.slot_tk
    K[~A.valid] = np.inf
    Kr = -sign * A.slot_tk
    Kr[~A.valid] = np.inf
    cand = A.valid.copy()
    for _ in range(MAX_ROUNDS):
        if tick:
            tick()
        lo = _chain_min(K, cand, prev)
        if np.isinf(lo).any():
            raise _Refuted
        hi = _chain_min(Kr, cand, nxt)                 # least of -key from the other end
        if np.isinf(hi).any():
            raise _Refuted
        c = cand & (K >= lo[:, None]) & (Kr >= hi[:, None])
        c = _group_step(A, c)
        if not c.any(axis=1).all():
            raise _Refuted
        rows, cols = np.nonzero(c)
        if np.bincount(A.start[A.slot_group[rows]] + cols, minlength=A.n).min() == 0:
            raise _Refuted
        if np.array_equal(c, cand):
            return c
        cand = c
    return cand


def _code(idt_value):
    """The IDT's values as text, coded: (codes, values by code)."""
    values, codes = np.unique(np.asarray(idt_value, dtype=object).astype(str), return_inverse=True)
    return codes, values


def attack_attribute(tk, group, idt_group, idt_value, idt_count, direction="same", tick=None):
    """One attribute, one direction.  tk, group: the AT (one entry per tuple); idt_*: the IDT
    rows of the attribute.  Returns {consistent, pinned, tuples, pins}: pins maps an index of the
    input arrays to the value the attack pins it to (empty when refuted)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}")
    return _run(_Attribute(tk, group, idt_group, *_code(idt_value), idt_count), direction, tick)


def _run(A, direction, tick):
    if not A.consistent_input:
        return {"consistent": False, "pinned": 0, "tuples": A.n, "pins": {}, "why": "AT and IDT disagree"}
    if A.n == 0:
        return {"consistent": True, "pinned": 0, "tuples": 0, "pins": {}}
    try:
        cand = _propagate(A, direction, tick)
    except _Refuted:
        return {"consistent": False, "pinned": 0, "tuples": A.n, "pins": {}}
    rows, cols = np.nonzero(cand)
    tpos = A.start[A.slot_group[rows]] + cols
    val = A.slot_value[rows]
    # a tuple is pinned when every candidate slot holds the same value
    lo = np.full(A.n, np.iinfo(np.int64).max)
    hi = np.full(A.n, -1)
    np.minimum.at(lo, tpos, val)
    np.maximum.at(hi, tpos, val)
    pinned = np.flatnonzero(lo == hi)
    pins = dict(zip(A.order[pinned].tolist(), A.values[lo[pinned]].tolist()))
    return {"consistent": True, "pinned": int(pinned.size), "tuples": A.n, "pins": pins}


def _best(results):
    """The attacker keeps the consistent hypothesis that pins most (refuted ones pin nothing)."""
    return max(results, key=lambda r: (r["consistent"], r["pinned"]))


def attack(at, idt, *, permutations=3, seed=0, tick=None):
    """The chain attack on a whole release.

    at: {"tk": array, attribute: group ids (one per tuple, aligned with tk), ...};
    idt: {attribute: (group ids, values, counts)}.  Returns per attribute the JSON-able figures:
    tuples, sc (smallest group), pinned, pinned_share (best consistent hypothesis), hypotheses
    (direction, consistent, pinned), chance_mean / chance_max (the same attack with tk and group
    ids permuted at random, `permutations` times), seconds, detail; and per attribute the pins
    of the best hypothesis under key "_pins" (indices into the AT arrays -> value)."""
    rng = np.random.default_rng(seed)
    tk = np.asarray(at["tk"], dtype=np.int64)
    out = {}
    for a, (ig, iv, ic) in idt.items():
        t0 = time.perf_counter()
        g = np.asarray(at[a], dtype=np.int64)
        ig = np.asarray(ig, dtype=np.int64)
        vcode, values = _code(iv)
        A = _Attribute(tk, g, ig, vcode, values, ic)
        hyps = [dict(_run(A, d, tick), direction=d) for d in DIRECTIONS]
        best = _best(hyps)
        chance = []
        ids, gd = _dense(g)
        igd = _find(ids, ig)               # an IDT group with no tuple stays unknown (-1)
        for _ in range(permutations):
            relabel = rng.permutation(ids.size)
            P = _Attribute(rng.permutation(tk), relabel[gd], np.where(igd >= 0, relabel[np.maximum(igd, 0)], -1),
                           vcode, values, ic)
            chance.append(_best([_run(P, d, tick) for d in DIRECTIONS])["pinned"])
        n = max(tk.size, 1)
        sc = int(A.size.min()) if A.G else 0
        share = best["pinned"] / n if best["consistent"] else 0.0
        cm = float(np.mean(chance)) / n if chance else 0.0
        cx = float(np.max(chance)) / n if chance else 0.0
        state = ", ".join(f"{h['direction']}: " + (f"consistent, {h['pinned']} pinned" if h["consistent"]
                                                    else h.get("why", "refuted")) for h in hyps)
        out[a] = {"tuples": int(tk.size), "sc": sc, "pinned": int(best["pinned"] if best["consistent"] else 0),
                  "pinned_share": share,
                  "hypotheses": [{"direction": h["direction"], "consistent": h["consistent"], "pinned": h["pinned"]}
                                 for h in hyps],
                  "chance_mean": cm, "chance_max": cx, "permutations": permutations,
                  "seconds": round(time.perf_counter() - t0, 3),
                  "detail": f"hypotheses {state}",
                  "_pins": best["pins"] if best["consistent"] else {}}
    return out


def assess(db, at_relation, idt_relation, attributes, *, permutations=3, seed=0):
    """Read the AT and the IDT (nothing else) and run `attack`: JSON-able figures per attribute
    (the pins themselves are left out).  at_relation / idt_relation: quoted relation names."""
    I = db.ident
    cols = ", ".join(f"array_agg({I(a)} ORDER BY tk) AS g{i}" for i, a in enumerate(attributes))
    r = db.one(f"SELECT array_agg(tk ORDER BY tk) AS tk{', ' + cols if cols else ''} FROM {at_relation}")
    at = {"tk": np.asarray(r["tk"] or [], dtype=np.int64)}
    idt = {}
    for i, a in enumerate(attributes):
        at[a] = np.asarray(r[f"g{i}"] or [], dtype=np.int64)
        x = db.one(f"SELECT array_agg(group_id) AS g, array_agg(value) AS v, array_agg(count) AS c FROM {idt_relation} "
                   f"WHERE attribute = $1", [a], ["text"])
        idt[a] = (np.asarray(x["g"] or [], dtype=np.int64), np.asarray(x["v"] or [], dtype=object),
                  np.asarray(x["c"] or [], dtype=np.int64))
    res = attack(at, idt, permutations=permutations, seed=seed, tick=db.interruptible())
    return {a: {k: v for k, v in f.items() if not k.startswith("_")} for a, f in res.items()}
