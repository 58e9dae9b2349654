"""Bucketization planner for the six algorithms of Xiao & Li (2020): MBF, MSDCF, MMDCF and
their MSLF variants (spec 000-lsl-diversity.md, sections 1, 3, 6 and 8.A).

The planner works on bucket COUNTS only: bucket b is a composite SA vector with ``sizes[b]``
records, identified by its index (first-appearance order).  It returns a `Plan` in run-length
form that the SQL pipeline turns into a group id per row; records of a bucket are consumed in
FIFO rank order (spec A7), so the plan never names a row.

Algorithm: spec section 3.2 (unified pseudo-code), with these decisions:

- A1  a bucket's level is the max level of its d values (`blev`).
- A2  l_G = l of the max level over all non-empty buckets, taken at the start of each group.
- A3  shielding checks the final group size: bucket k is shielded iff for some dimension j
      ``cnt[j][k_j] + 1 > floor(l_G / l(k_j))``.  Level values with l = 1 never shield.
- A4  an incomplete group is rolled back (records back at the head of their buckets, sizes and
      capacities restored) and ends the grouping phase; no retry with a smaller l_G.
- A5  capacities count every remaining record (shielded buckets too), decrement on extraction.
- A6  ties on (level, score): ``tie='first'`` takes the smallest bucket index; ``tie='random'``
      draws uniformly with ``random.Random(seed)`` (one ``randrange(len(tied))`` per pick that
      has more than one tied bucket, tied buckets listed in index order).
- A7  records leave a bucket in FIFO order (rank 0, 1, 2, ...).
- A8  residual records are processed in bucket order, FIFO within a bucket.
- A9  first fit in group-creation order, test ``(cnt_G[j][r_j] + 1) * l(r_j) <= |G| + 1``.
- A10 one pass: a record that fits nowhere is suppressed (so are the rest of its bucket,
      which are identical: suppressed records are always a bucket's last ones).
- A11 AIL (Def 14) uses l of the max level in each group's FINAL contents (`metrics_from_plan`).
- A12 AIL = 0 when there are no groups.  A13: a level without an l is rejected.
- A15 baselines (``mslf=False``) give every value one uniform level whose l is ``baseline_l``
      (default: l of the highest level present among non-empty buckets).  A16: l must be
      non-decreasing in the level and >= 1.  A17: groups are numbered 0, 1, ... in creation
      order; residual additions keep the group id.
- A18 (not in the paper) ``min_group`` m (default 1, the paper): every group has at least m
      records and no SA vector (bucket) holds more than floor(|G| / m) of them, so a row found
      by its exact QIs never shows its whole vector with confidence above 1/m.  A bucket is
      shielded like a value (A3 with l = m: ``cnt_G[b] + 1 > floor(l_G / m)``), the residual
      test adds ``(cnt_G[b] + 1) * m <= |G| + 1``, and for MSLF l_G of top level k is the
      smallest s >= max(l_k, m) that the buckets of level <= k can fill: in every dimension
      sum over values of floor(s / l(v)) >= s, and (number of buckets) * floor(s / m) >= s
      (a binary SA with l = 2 on both values admits only even groups).  The baselines take
      l_G = l as in the paper (their l >= m already bounds every vector).

Two implementations of the grouping phase produce identical plans:

- `reference.plan_reference`: literal step-by-step transcription of section 3.2 (O(n * B)
  time); the yardstick for the tests.
- `plan`: the same greedy, made fast for n around 10^6.  Batching identical rounds does not
  pay on Adult-like data (consecutive groups almost never repeat), so every pick is simulated,
  but the argmax is found by branch and bound in a trie of lazily refreshed upper bounds
  instead of a scan over all buckets (see `trie.TrieEngine`).  With ``tie='random'`` the trie
  also lists the tied buckets, in index order, so the random stream is consumed exactly as in
  the reference.  The residual phase works on
  numpy count arrays per group (`residual.residual_fast`).

All arithmetic is on Python ints (or int64 numpy arrays whose values stay far below 2**62).

This module is the planner's public face: `plan`, the refusal check `blocked_dimension` and
the metrics `metrics_from_plan`.  The pieces live beside it: `inputs` (validation, A13-A18,
and Def 13 capacities), `runs` (the `Plan` and its run builder), `reference`, `trie` and
`residual`.
"""

from __future__ import annotations

from array import array
from fractions import Fraction

import numpy as np

from .inputs import prepare
from .residual import residual_fast
from .runs import Plan, RunBuilder
from .trie import TrieEngine

__all__ = [
    "plan",
    "metrics_from_plan",
    "blocked_dimension",
]


# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------


def plan(sizes, values, levels, l_of_level, variant, mslf=True, baseline_l=None, tie="first",
         seed=None, *, keep_order=False, tick=None, min_group=1):
    """Plan the groups for one of the six algorithms (spec section 3.2) on bucket counts.

    sizes[b]: records in bucket b (first-appearance order = 'first' tie order);
    values[b*d + j], levels[b*d + j]: code and security level of bucket b in dimension j;
    l_of_level: {level: l} (or a list indexed by level), non-decreasing, >= 1;
    variant: 'mbf' | 'msdcf' | 'mmdcf'; mslf=False gives the baseline with one uniform level
    whose l is baseline_l (default: l of the highest level present).
    keep_order=True also records the pick order (for tests; memory is one int per record).
    tick: called once per group, so the database can notice a cancel or statement_timeout.
    min_group: A18 (1, the default, is the paper).
    Returns a `Plan`; identical to `reference.plan_reference` for the same arguments."""
    inp = prepare(sizes, values, levels, l_of_level, variant, mslf, baseline_l, tie, seed, min_group)
    if inp.B == 0 or sum(inp.sizes) == 0:
        return Plan(0, [], array("q"), array("q"), array("q"), [0] * inp.B, 0, 0, 0,
                    array("q") if keep_order else None, [] if keep_order else None)
    size, group_l, order = TrieEngine(inp, tick).run()
    rb, pb, pg = RunBuilder.from_picks(order, group_l, inp.B)
    suppressed, placed, residual = residual_fast(inp, size, group_l, rb, keep_order, pb, pg)
    return Plan(
        n_groups=len(group_l), group_l=group_l, run_bucket=rb.rb, run_group=rb.rg,
        run_count=rb.rc, suppressed=suppressed, main_picks=len(order),
        residual_placed=placed, n_suppressed=sum(suppressed),
        main_order=order if keep_order else None, residual_order=residual,
    )


# --------------------------------------------------------------------------------------------
# Checks and metrics on the counts
# --------------------------------------------------------------------------------------------


def blocked_dimension(sizes, values, levels, l_of_level, mslf=True, baseline_l=None, min_group=1):
    """What rules out every group, from the counts alone: (j, {code: l}) for the first
    dimension j whose values can fill no group, (None, {bucket: min_group}) when there are
    fewer SA vectors than min_group (A18), else None.

    In a valid group every value v holds at most |G| / l(v) records (every vector at most
    |G| / min_group), so the shares 1/l of the values present in one dimension must add up to
    at least 1 (for one uniform l: at least l distinct values).  Below that every record would
    be suppressed: callers refuse such a request before planning."""
    inp = prepare(sizes, values, levels, l_of_level, "mbf", mslf, baseline_l, "first", None, min_group)
    for j in range(inp.d):
        l_of = {inp.codes[b][j]: inp.lval[b][j] for b in range(inp.B) if inp.sizes[b] > 0}
        if l_of and sum(Fraction(1, x) for x in l_of.values()) < 1:
            return j, l_of
    present = [b for b in range(inp.B) if inp.sizes[b] > 0]
    if present and len(present) < inp.min_group:
        return None, dict.fromkeys(present, inp.min_group)
    return None


def metrics_from_plan(plan, sizes, values, levels, l_of_level, mslf=True, baseline_l=None):
    """AIL (Def 14, with l_{G_i} from each group's final contents, A11; 0 without groups, A12)
    and SR (Def 15) as exact Fractions: {'ail': Fraction, 'sr': Fraction}."""
    inp = prepare(sizes, values, levels, l_of_level, "mbf", mslf, baseline_l, "first", None)
    n = sum(inp.sizes)
    sr = Fraction(plan.n_suppressed, n) if n else Fraction(0)
    G = plan.n_groups
    if G == 0:
        return {"ail": Fraction(0), "sr": sr}
    B = inp.B
    rbk = np.array(plan.run_bucket, dtype=np.int64)
    rg = np.array(plan.run_group, dtype=np.int64)
    rc = np.array(plan.run_count, dtype=np.int64)
    tot = int(rc.sum())
    pb = np.repeat(rbk, rc)
    starts = np.repeat(np.cumsum(rc) - rc, rc)
    pg = np.repeat(rg, rc) + (np.arange(tot, dtype=np.int64) - starts)
    gsize = np.bincount(pg, minlength=G).astype(np.int64)
    if inp.mslf:
        lvls = sorted(inp.L)
        rank = {lv: i for i, lv in enumerate(lvls)}
        brank = np.array([rank[x] for x in inp.blev] if B else [], dtype=np.int64)
        gmax = np.full(G, -1, dtype=np.int64)
        np.maximum.at(gmax, pg, brank[pb])
        lof = np.array([inp.L[lv] for lv in lvls], dtype=np.int64)
        gl = lof[gmax]
    else:
        gl = np.full(G, inp.baseline_l, dtype=np.int64)
    den = int(gl.sum())
    num = int((gsize - gl).sum())
    return {"ail": Fraction(num, den), "sr": sr}
