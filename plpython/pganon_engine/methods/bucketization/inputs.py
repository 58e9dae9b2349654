"""The planner's input, validated once, and the per-value capacities its scores are made of.

`prepare` checks and normalises the arguments of both planners and of the checks in
`bucketize` (levels and their l, A13 and A15-A16; min_group and the MSLF group sizes, A18;
bucket levels, A1), so every planner starts from the same `_Input`.  `capacities` and
`selectivity` are Def 13 and Eq. 1-2 on the raw input, for tests and cross-checks.
"""

from __future__ import annotations

import operator
from fractions import Fraction

__all__ = ["VARIANTS", "prepare", "group_l_of", "dense_caps", "capacities", "selectivity"]

VARIANTS = ("mbf", "msdcf", "mmdcf")


# --------------------------------------------------------------------------------------------
# Input validation
# --------------------------------------------------------------------------------------------


def _as_int(x, what):
    try:
        return operator.index(x)
    except TypeError:
        raise ValueError(f"{what} must be an integer, got {x!r}") from None


class _Input:
    """Validated input.  lval[b][j] is the l that applies to bucket b's value in dimension j
    (the uniform baseline l when mslf is False); blev[b] is the bucket level used by MSLF
    (all 0 for the baselines, so only the score ranks buckets)."""

    __slots__ = (
        "B", "d", "sizes", "codes", "levels", "lval", "blev", "L", "variant", "mslf",
        "baseline_l", "tie", "seed", "nv", "lvc", "lG", "min_group",
    )


def prepare(sizes, values, levels, l_of_level, variant, mslf, baseline_l, tie, seed, min_group=1):
    inp = _Input()
    if isinstance(variant, str):
        variant = variant.lower()
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    if tie not in ("first", "random"):
        raise ValueError(f"unknown tie rule {tie!r}; expected 'first' or 'random'")
    if tie == "random":
        if seed is None:
            raise ValueError("tie='random' needs an integer seed (reproducibility, spec A6)")
        seed = _as_int(seed, "seed")
    sizes = [_as_int(s, "sizes[]") for s in sizes]
    values = [_as_int(v, "values[]") for v in values]
    levels = [_as_int(v, "levels[]") for v in levels]
    B = len(sizes)
    if any(s < 0 for s in sizes):
        raise ValueError("sizes must be >= 0")
    if B == 0:
        if values or levels:
            raise ValueError("values/levels must be empty when there are no buckets")
        d = 0
    else:
        if len(values) == 0 or len(values) % B:
            raise ValueError(
                f"length mismatch: len(values)={len(values)} is not a positive multiple of "
                f"the number of buckets {B}"
            )
        d = len(values) // B
        if len(levels) != len(values):
            raise ValueError(
                f"length mismatch: len(levels)={len(levels)} != len(values)={len(values)}"
            )
    if any(v < 0 for v in values):
        raise ValueError("value codes must be >= 0")
    if any(v < 0 for v in levels):
        raise ValueError("levels must be >= 0")

    # l per level: dict or sequence indexed by level.
    if isinstance(l_of_level, dict):
        items = [(_as_int(k, "level"), _as_int(v, "l")) for k, v in l_of_level.items()]
    else:
        items = [(i, _as_int(v, "l")) for i, v in enumerate(l_of_level)]
    L = {}
    for k, v in sorted(items):
        if k < 0:
            raise ValueError(f"level {k} in l_of_level must be >= 0")
        if v < 1:
            raise ValueError(f"l for level {k} is {v}; l must be >= 1")
        L[k] = v
    prev = None
    for k in sorted(L):
        if prev is not None and L[k] < L[prev]:
            raise ValueError(
                f"l must be non-decreasing in the level: l[{prev}]={L[prev]} > l[{k}]={L[k]}"
            )
        prev = k
    missing = sorted(set(levels) - set(L))
    if missing:
        raise ValueError(f"level(s) without an l in l_of_level: {missing}")

    # Same code in a dimension must mean the same value, hence the same level.  Internally
    # codes are renumbered densely per dimension (only equality of codes matters).
    levmap = [dict() for _ in range(d)]
    dense = [dict() for _ in range(d)]
    dvalues = [0] * len(values)
    for b in range(B):
        base = b * d
        for j in range(d):
            c = values[base + j]
            lv = levels[base + j]
            old = levmap[j].setdefault(c, lv)
            if old != lv:
                raise ValueError(
                    f"inconsistent levels: code {c} of dimension {j} has levels {old} and {lv}"
                )
            dvalues[base + j] = dense[j].setdefault(c, len(dense[j]))
    nv = [len(dense[j]) for j in range(d)]
    levmap = [{dense[j][c]: lv for c, lv in levmap[j].items()} for j in range(d)]
    values = dvalues

    if baseline_l is not None:
        baseline_l = _as_int(baseline_l, "baseline_l")
        if baseline_l < 1:
            raise ValueError(f"baseline_l is {baseline_l}; l must be >= 1")
    codes = [tuple(values[b * d:(b + 1) * d]) for b in range(B)]
    blevs = [max(levels[b * d:(b + 1) * d]) for b in range(B)] if d else [0] * B
    if not mslf:
        if baseline_l is None:
            present = [blevs[b] for b in range(B) if sizes[b] > 0]
            baseline_l = L[max(present)] if present else 1
        lvc = [[baseline_l] * nv[j] for j in range(d)]
        blev = [0] * B
    else:
        lvc = [[1] * nv[j] for j in range(d)]
        for j in range(d):
            for c, lv in levmap[j].items():
                lvc[j][c] = L[lv]
        blev = blevs
    inp.B, inp.d, inp.sizes, inp.codes, inp.levels = B, d, sizes, codes, levels
    inp.lvc, inp.blev, inp.L, inp.variant, inp.mslf = lvc, blev, L, variant, bool(mslf)
    inp.baseline_l, inp.tie, inp.seed, inp.nv = baseline_l, tie, seed, nv
    inp.lval = [tuple(lvc[j][codes[b][j]] for j in range(d)) for b in range(B)]
    inp.min_group = _as_int(min_group, "min_group")
    if inp.min_group < 1:
        raise ValueError(f"min_group is {inp.min_group}; it must be >= 1")
    if not mslf and inp.min_group > baseline_l:
        raise ValueError(f"min_group = {inp.min_group} is above the baselines' l = {baseline_l}; raise l")
    inp.lG = {top: _fitting_size(inp, top) if mslf and inp.min_group > 1 else L[top] for top in L}
    return inp


def _fitting_size(inp, top):
    """A18: the smallest s >= max(l_top, m) that the buckets of level <= top can fill (each
    value v at most floor(s / l(v)) times, each bucket at most floor(s / m) times); that
    lower bound when no s can (the shares 1/l of a dimension, or the buckets' 1/m, add up to
    < 1: the group fails as in the paper)."""
    m = inp.min_group
    dims = [dict() for _ in range(inp.d)]
    nb = 0
    for b in range(inp.B):
        if inp.sizes[b] > 0 and inp.blev[b] <= top:
            nb += 1
            for j in range(inp.d):
                dims[j][inp.codes[b][j]] = inp.lval[b][j]
    s = max(inp.L[top], m)
    if nb < m or any(sum(Fraction(1, x) for x in dim.values()) < 1 for dim in dims):
        return s
    while nb * (s // m) < s or any(sum(s // x for x in dim.values()) < s for dim in dims):
        s += 1   # ends by the lcm of the l's and m, where every sum is s * (its shares) >= s
    return s


def group_l_of(inp, top_level):
    return inp.lG[top_level] if inp.mslf else inp.baseline_l


# --------------------------------------------------------------------------------------------
# Capacities and selectivity (Def 13, Eq. 1 and 2)
# --------------------------------------------------------------------------------------------


def dense_caps(sizes, codes, d, nv):
    cap = [[0] * nv[j] for j in range(d)]
    for b, s in enumerate(sizes):
        if s:
            c = codes[b]
            for j in range(d):
                cap[j][c[j]] += s
    return cap


def capacities(sizes, values):
    """Dimension capacities (Def 13): list over dimensions of {code: remaining records}."""
    B = len(sizes)
    if B == 0:
        return []
    d = len(values) // B
    out = [dict() for _ in range(d)]
    for b in range(B):
        for j in range(d):
            c = values[b * d + j]
            out[j][c] = out[j].get(c, 0) + sizes[b]
    return out


def selectivity(variant, sizes, values):
    """Per-bucket score before any extraction: size (MBF), max_j Capa + size (MSDCF, Eq. 1),
    sum_j Capa + size (MMDCF, Eq. 2)."""
    variant = variant.lower()
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    caps = capacities(sizes, values)
    B = len(sizes)
    d = len(caps)
    out = []
    for b in range(B):
        cs = [caps[j][values[b * d + j]] for j in range(d)]
        if variant == "mbf":
            out.append(sizes[b])
        elif variant == "msdcf":
            out.append(max(cs) + sizes[b])
        else:
            out.append(sum(cs) + sizes[b])
    return out
