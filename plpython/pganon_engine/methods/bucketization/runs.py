"""The plan a bucketization planner returns, in run-length form, and how one is built.

`bucketize.plan`, `reference.plan_reference` and the Anatomy bucketizer all return a `Plan`,
which the SQL pipeline turns into a group id per row; `expand` lists its groups record by
record for tests and cross-checks.  Kept apart so the plan's shape is defined once, whichever
algorithm filled it.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

__all__ = ["Plan", "RunBuilder", "expand", "groups_of"]


# --------------------------------------------------------------------------------------------
# Plan
# --------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """A grouping plan in run-length form.

    Runs are stored as three parallel ``array('q')`` columns (24 bytes a run instead of a
    Python tuple per run); `runs` materialises them as ``(bucket, group_start, count)`` tuples.
    A run gives the next ``count`` records (FIFO) of ``bucket`` to groups ``group_start``,
    ``group_start + 1``, ... (one record each).  Runs of one bucket apply in list order.
    """

    n_groups: int
    group_l: list
    run_bucket: array
    run_group: array
    run_count: array
    suppressed: list
    main_picks: int
    residual_placed: int
    n_suppressed: int
    # Only with keep_order=True: bucket ids in main-phase pick order (groups are consecutive
    # blocks of group_l[g] picks) and the residual placements as (group, bucket) in order.
    main_order: object = None
    residual_order: object = None

    @property
    def runs(self):
        return list(zip(self.run_bucket, self.run_group, self.run_count))

    def run_lists(self):
        """The run columns as three plain lists (convenient for plpy array parameters)."""
        return self.run_bucket.tolist(), self.run_group.tolist(), self.run_count.tolist()


class RunBuilder:
    """Collects picks (bucket -> group) and coalesces a bucket's picks into consecutive groups."""

    __slots__ = ("rb", "rg", "rc", "last")

    def __init__(self, B):
        self.rb = array("q")
        self.rg = array("q")
        self.rc = array("q")
        self.last = [-1] * B  # index of each bucket's last run

    def add(self, b, g, count=1):
        """Give `count` records of bucket b to group g (count > 1 only for g, g+1, ...)."""
        i = self.last[b]
        if i >= 0 and self.rg[i] + self.rc[i] == g:
            self.rc[i] += count
            return
        self.last[b] = len(self.rb)
        self.rb.append(b)
        self.rg.append(g)
        self.rc.append(count)

    @classmethod
    def from_picks(cls, order, group_l, B):
        """The builder after adding every main-phase pick in order (group g takes the next
        group_l[g] picks), built with numpy.  Also returns the picks' bucket and group arrays.

        A pick extends its bucket's last run iff the bucket's previous pick was in the group
        just before; runs are listed by their first pick, as `add` creates them."""
        self = cls(B)
        pb = np.array(order, dtype=np.int64)
        pg = np.repeat(np.arange(len(group_l), dtype=np.int64),
                       np.array(group_l, dtype=np.int64))
        n = len(pb)
        if n == 0:
            return self, pb, pg
        idx = np.argsort(pb, kind="stable")  # by bucket, then pick order
        sb = pb[idx]
        sg = pg[idx]
        new = np.ones(n, dtype=bool)
        new[1:] = (sb[1:] != sb[:-1]) | (sg[1:] != sg[:-1] + 1)
        st = np.flatnonzero(new)  # runs, by bucket then creation
        rbk, rg, rc = sb[st], sg[st], np.diff(np.append(st, n))
        perm = np.argsort(idx[st])  # creation order (first picks are distinct)
        self.rb = array("q", rbk[perm].tobytes())
        self.rg = array("q", rg[perm].tobytes())
        self.rc = array("q", rc[perm].astype(np.int64).tobytes())
        pos = np.empty(len(st), dtype=np.int64)
        pos[perm] = np.arange(len(st), dtype=np.int64)
        lastrun = np.append(rbk[1:] != rbk[:-1], True)  # each bucket's last run
        last = np.full(B, -1, dtype=np.int64)
        last[rbk[lastrun]] = pos[lastrun]
        self.last = last.tolist()
        return self, pb, pg


# --------------------------------------------------------------------------------------------
# Helpers for tests and cross-checks
# --------------------------------------------------------------------------------------------


def expand(plan):
    """Groups as lists of (bucket, rank) -- per record, for tests and small inputs only.

    With keep_order=True plans the order inside a group is the pick order (main phase, then
    residual additions); otherwise it follows the order of the runs."""
    G = plan.n_groups
    groups = [[] for _ in range(G)]
    if plan.main_order is not None:
        nxt = {}
        pos = 0
        for g, lg in enumerate(plan.group_l):
            for b in plan.main_order[pos:pos + lg]:
                r = nxt.get(b, 0)
                groups[g].append((b, r))
                nxt[b] = r + 1
            pos += lg
        for g, b in plan.residual_order:
            r = nxt.get(b, 0)
            groups[g].append((b, r))
            nxt[b] = r + 1
        return groups
    nxt = {}
    for b, g0, c in plan.runs:
        r = nxt.get(b, 0)
        for i in range(c):
            groups[g0 + i].append((b, r + i))
        nxt[b] = r + c
    return groups


groups_of = expand
