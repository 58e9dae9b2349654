"""Anatomy-style bucketizer (Xiao & Tao 2006), shared by Anatomy and Rating (spec
003-msa-comparative.md §2.4, §2.8, §6.1 M8, A18, A19).

The planner works on bucket COUNTS only: bucket b holds the ``sizes[b]`` records of one value
(buckets in first-appearance order), and the result is a `runs.Plan` in run-length form that
the set-based assign step (`lsl._assign_fifo` over `lsl.run_columns`) turns into a group id per
row: a run gives the next ``count`` records (FIFO) of ``bucket`` to groups ``group_start``,
``group_start + 1``, ... one record each.  The plan never names a row.

The algorithm (Xiao & Tao; the Rating loop of spec §2.4 with SC_i := size):

  group creation   while at least `size` buckets are non-empty, a new group takes one record
                   from each of the `size` currently largest buckets;
  residue          each still non-empty bucket then holds exactly one record (Lemma 3, under
                   eligibility), which goes to a group that does not yet contain its value;
  eligibility      no value occurs in more than n / size records.

Decisions:

- N1  Ties between equal-sized buckets: ``tie='first'`` takes the smaller bucket index (first
      appearance, spec §2.4 determinism); ``tie='random'`` draws one priority order of all
      buckets with ``random.Random(seed).shuffle`` and breaks every tie by it (one seeded
      permutation instead of a draw per round, so the rounds keep their periodic structure,
      N6).  Records leave a bucket first-in, first-out (FIFO, spec §2.4): the paper's "random
      tuple" is left to the row order the database gives a bucket.
- N2  Residues are processed in bucket index order.  ``residue='last'``: the last-created group
      that does not contain the value (spec §2.4/§4.7 deterministic variant).
      ``residue='random'``: a uniformly drawn group among those that do not contain it (one
      ``randrange`` per residue on the same ``random.Random(seed)``, after the N1 shuffle;
      eligible groups counted in group id order).  Several residues may join one group.
- N3  Eligibility (A19), checked before any planning: a value with ``count * size > n`` is
      over-frequent.  ``eligibility='error'`` raises `errors.unsatisfiable` naming the most
      frequent such value (its index, count and n / size).  ``'suppress'`` caps every bucket
      at the largest t with ``size * t <= sum_b min(sizes[b], t)`` (the least suppression that
      makes the rest eligible: any eligible subset with largest count t fits under that cap);
      the excess records are a bucket's last ones (FIFO), reported in ``Plan.suppressed``.
      With fewer than `size` distinct values the cap is 0 and everything is suppressed.
- N4  ``size = 1`` is allowed (one record per group).  ``sizes`` are non-negative integers;
      empty buckets take no part.
- N5  Plan fields: ``group_l`` is a constant `Repeat(size, n_groups)` (every group promises the
      same l; a list would grow with the rows); ``main_picks = n_groups * size``;
      ``residual_placed`` the residues; ``suppressed``/``n_suppressed`` as N3.  The residue run of
      a bucket comes after its other runs, so FIFO gives it the bucket's last record.
- N6  Memory grows with buckets and runs, never with rows.  Rounds are planned in stretches:
      while the buckets above the tie level (taken every round) and the level's members stay
      the same, each round takes the next q records of one fixed sequence (the members still at
      the current level, then full passes over all members in priority order: the tie rule
      makes every level one pass in that order), so a stretch of any length is planned in
      closed form.  A stretch ends when a big bucket comes down to the level, a smaller bucket
      joins it, or the records run out: a few stretches per bucket.  The one round whose
      window would not follow the sequence (a member taken at both levels after a join
      mid-pass) is planned on its own.  Planning memory: one entry per window phase per
      stretch (at most buckets^2), plus the runs.
- N7  Group ids: ``order='creation'`` numbers groups in creation order (faithful; inside a
      rotating tie level a bucket is picked every few rounds, so runs approach n).
      ``order='compact'`` (default) gives every distinct group composition one block of
      consecutive ids (blocks sorted by the members' priorities, a block's rounds in creation
      order): a bucket then needs one run per block it is in, not one per pick, and the groups
      are the same as in creation order.  The residue rule 'last' always means the last
      *created* eligible group, whatever its id.

`plan_reference` is the literal transcription (sort all buckets every round, creation order):
the yardstick for `plan` in the tests.
"""

from __future__ import annotations

import bisect
import math
import operator
import random
from array import array
from collections.abc import Sequence

import numpy as np

from pganon_engine.core import errors
from pganon_engine.methods.bucketization.runs import Plan

__all__ = ["Repeat", "plan", "plan_reference", "eligibility_cap", "TIES", "RESIDUES",
           "ELIGIBILITY", "ORDERS"]

TIES = ("first", "random")
RESIDUES = ("last", "random")
ELIGIBILITY = ("error", "suppress")
ORDERS = ("compact", "creation")


class Repeat(Sequence):
    """`n` copies of `value` without storing them (an anatomy plan's ``group_l``, N5)."""

    __slots__ = ("value", "n")

    def __init__(self, value, n):
        self.value = value
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Repeat(self.value, len(range(*i.indices(self.n))))
        i = operator.index(i)
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("Repeat index out of range")
        return self.value

    def __eq__(self, other):
        if isinstance(other, Repeat):
            return self.n == other.n and (self.n == 0 or self.value == other.value)
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(other) == self.n and all(x == self.value for x in other)
        return NotImplemented

    def __repr__(self):
        return f"Repeat({self.value!r}, {self.n})"


class _Runs:
    """Collects (bucket -> group) picks as runs; a pick that continues its bucket's last run
    (next group id) extends it."""

    __slots__ = ("rb", "rg", "rc", "last")

    def __init__(self, B):
        self.rb = array("q")
        self.rg = array("q")
        self.rc = array("q")
        self.last = [-1] * B

    def add(self, b, g, count=1):
        i = self.last[b]
        if i >= 0 and self.rg[i] + self.rc[i] == g:
            self.rc[i] += count
            return
        self.last[b] = len(self.rb)
        self.rb.append(b)
        self.rg.append(g)
        self.rc.append(count)

    def intervals(self, b):
        """Bucket b's group ranges [start, start + count), sorted by start."""
        rb = np.frombuffer(self.rb, dtype=np.int64) if len(self.rb) else np.zeros(0, np.int64)
        idx = np.flatnonzero(rb == b)
        out = [(self.rg[i], self.rc[i]) for i in idx.tolist()]
        out.sort()
        return out


# --------------------------------------------------------------------------------------------
# Input checks and eligibility (N3, N4)
# --------------------------------------------------------------------------------------------


def _int(x, what):
    if isinstance(x, bool):
        raise errors.invalid(f"{what} must be an integer, got {x!r}")
    try:
        return operator.index(x)
    except TypeError:
        raise errors.invalid(f"{what} must be an integer, got {x!r}") from None


def _prepare(sizes, size, tie, seed, residue, eligibility, order):
    sizes = [_int(s, "sizes[]") for s in sizes]
    if any(s < 0 for s in sizes):
        b = next(b for b, s in enumerate(sizes) if s < 0)
        raise errors.invalid(f"bucket {b} has size {sizes[b]}; sizes must be >= 0")
    size = _int(size, "size")
    if size < 1:
        raise errors.invalid(f"size is {size}; the group size (l or SC) must be >= 1")
    for name, v, allowed in (("tie", tie, TIES), ("residue", residue, RESIDUES),
                             ("eligibility", eligibility, ELIGIBILITY), ("order", order, ORDERS)):
        if v not in allowed:
            raise errors.invalid(f"unknown {name} rule {v!r}", hint=f"use one of {', '.join(allowed)}")
    rng = None
    if tie == "random" or residue == "random":
        if seed is None or isinstance(seed, bool) or not isinstance(seed, (int, str)):
            raise errors.invalid(f"tie={tie!r}, residue={residue!r} need an integer (or text) seed, "
                                 f"got {seed!r}", hint="pass seed=<int> to make the draws reproducible")
        rng = random.Random(seed)
    B = len(sizes)
    prio = list(range(B))
    if tie == "random":
        rng.shuffle(prio)  # prio[b] = rank of bucket b among ties (N1)
    return sizes, size, prio, rng


def eligibility_cap(sizes, size):
    """The largest t with ``size * t <= sum_b min(sizes[b], t)`` (N3): capping every bucket at t
    leaves an eligible input with the fewest records left out.  When the input is eligible, t is
    the largest bucket size."""
    top = max(sizes, default=0)
    lo, hi = 0, top  # f(t) = sum min(s, t) - size * t is concave with f(0) = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(s, mid) for s in sizes) >= size * mid:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _eligible(sizes, size, eligibility):
    """Effective sizes and suppressed counts per bucket (N3)."""
    n = sum(sizes)
    over = [b for b, s in enumerate(sizes) if s * size > n]
    if not over:
        return list(sizes), [0] * len(sizes)
    if eligibility == "error":
        b = max(over, key=lambda x: (sizes[x], -x))
        c = sizes[b]
        t = eligibility_cap(sizes, size)
        excess = sum(max(0, s - t) for s in sizes)
        more = f" ({len(over) - 1} other value(s) too)" if len(over) > 1 else ""
        fit = n // c
        raise errors.unsatisfiable(
            f"value {b} occurs in {c} of {n} records, more than n/size = {n}/{size} = "
            f"{n / size:.6g}{more}: no grouping gives every group {size} distinct values",
            hint=(f"use a group size of at most {fit} (n / {c}), " if fit >= 1 else "")
            + f"or eligibility='suppress' to leave out {excess} record(s) of the over-frequent values")
    t = eligibility_cap(sizes, size)
    eff = [min(s, t) for s in sizes]
    return eff, [s - e for s, e in zip(sizes, eff)]


# --------------------------------------------------------------------------------------------
# Stretch engine (N6, N7)
# --------------------------------------------------------------------------------------------


class _Stretch:
    """R rounds from creation round `first`: every round takes the always-taken buckets A and
    the next q records of the sequence S = U ++ E ++ E ++ ... (U: the members still at the
    current level, E: the level's members, both in priority order, N6).  A round planned on its
    own is a stretch with R = 1 and an explicit `window`."""

    __slots__ = ("first", "R", "A", "U", "E", "q", "window", "T", "r1")

    def __init__(self, first, R, A, U, E, q, window=None):
        self.first, self.R, self.A, self.U, self.E, self.q = first, R, A, U, E, q
        self.window = window
        e = len(E)
        self.T = e // math.gcd(e, q) if e else 1  # rounds per period of the window phases
        self.r1 = min(R, -(-len(U) // q))  # rounds whose window starts inside U

    def members(self, r):
        """The buckets of local round r."""
        if self.window is not None:
            return self.A + self.window
        U, E, q = self.U, self.E, self.q
        u, e = len(U), len(E)
        return self.A + tuple(U[P] if P < u else E[(P - u) % e] for P in range(r * q, r * q + q))

    def entries(self):
        """(members, rounds, first local round, step): the rounds inside U one by one, then one
        entry per window phase (rounds r0, r0 + T, ... have the same members)."""
        if self.window is not None:
            yield self.members(0), 1, 0, 1
            return
        R, T, r1 = self.R, self.T, self.r1
        for r in range(r1):
            yield self.members(r), 1, r, 1
        for r in range(r1, min(R, r1 + T)):
            yield self.members(r), (R - r + T - 1) // T, r, T

    def entry_index(self, r):
        """Index in `entries` of the entry holding local round r."""
        if self.window is not None or r < self.r1:
            return r
        return self.r1 + (r - self.r1) % self.T

    def emit_creation(self, runs):
        """Runs with group id = creation round (N7 'creation'): one add per pick."""
        first, R, q = self.first, self.R, self.q
        for b in self.A:
            runs.add(b, first, R)
        if self.window is not None:
            for b in self.window:
                runs.add(b, first)
            return
        U, E = self.U, self.E
        u, e, end = len(U), len(E), R * q
        for P in range(min(u, end)):
            runs.add(U[P], first + P // q)
        for x, b in enumerate(E):
            for P in range(u + x, end, e):
                runs.add(b, first + P // q)

    def last_without(self, v):
        """Largest local round whose group lacks bucket v, or -1.  Only the last e + r1 + 1
        rounds need a look: when q < e, any e consecutive windows on the cycle miss v once."""
        if v in self.A:
            return -1
        stop = max(-1, self.R - 2 - len(self.E) - self.r1)
        for r in range(self.R - 1, stop, -1):
            if v not in self.members(r):
                return r
        return -1


def _stretches(eff, size, prio, tick):
    """Plan group creation on effective sizes (N6).  Returns (stretches, rounds, sizes left)."""
    l = size
    nz = [b for b, s in enumerate(eff) if s > 0]
    left = list(eff)
    if len(nz) < l:
        return [], 0, left
    srt = sorted(nz, key=lambda b: (-eff[b], prio[b]))
    h = eff[srt[l - 1]]  # the tie level: size of the l-th largest bucket
    A = {b: eff[b] for b in srt if eff[b] > h}  # above the level: taken every round
    E = sorted((prio[b], b) for b in srt if eff[b] == h)  # the level's members (at h or h - 1)
    U = list(E)  # members still at h, priority order
    below = [b for b in srt if eff[b] < h]
    j = 0
    q = l - len(A)
    out = []
    rounds = 0
    while True:
        if tick is not None:
            tick()
        if not U:  # a pass is complete: the next one starts one level down
            h -= 1
            U = list(E)
        for b in [b for b, s in A.items() if s == h]:  # a big bucket came down to the level
            del A[b]
            bisect.insort(E, (prio[b], b))
            bisect.insort(U, (prio[b], b))
            q += 1
        while j < len(below) and eff[below[j]] >= h - 1:  # a smaller bucket joins the level
            x = (prio[below[j]], below[j])
            bisect.insort(E, x)
            if eff[below[j]] == h:  # a stretch stopped at the start of its pass
                bisect.insort(U, x)
            j += 1
        e, u = len(E), len(U)
        if h == 0 or (h == 1 and u < q):  # fewer than l non-empty buckets left
            break
        Ab = tuple(A)
        ur = u % q
        # The window that finishes U takes the first q - ur members at h - 1 in priority order:
        # E's first ones, unless one of them is still in U (then it is skipped this round).
        conflict = ur > 0 and not {x for x in E[:q - ur]}.isdisjoint(U[u - ur:])
        if conflict and u < q:
            taken = set(U)
            T = [x for x in E if x not in taken][:q - u]
            out.append(_Stretch(rounds, 1, Ab, (), (), q, tuple(b for _, b in U + T)))
            tset = set(T)
            U = [x for x in E if x not in tset]
            h -= 1
            for b in A:
                A[b] -= 1
            rounds += 1
            continue
        s_max = eff[below[j]] if j < len(below) else 0
        R = (u + (h - 1 - s_max) * e) // q  # stop before the pass a smaller bucket joins
        if conflict:
            R = min(R, u // q)
        if A:
            m = min(A.values())

            def gap(r):  # smallest big bucket minus the level at the start of round r
                P = r * q
                return m - r - (h if P < u else h - 1 - (P - u) // e)

            if gap(R) <= 0:
                lo, hi = 1, R
                while lo < hi:
                    mid = (lo + hi) // 2
                    if gap(mid) <= 0:
                        hi = mid
                    else:
                        lo = mid + 1
                R = lo
        out.append(_Stretch(rounds, R, Ab, tuple(b for _, b in U), tuple(b for _, b in E), q))
        for b in A:
            A[b] -= R
        P = R * q
        if P < u:
            U = U[P:]
        else:
            c, k = divmod(P - u, e)
            h -= 1 + c
            U = E[k:]
        rounds += R
    # what is left: A at their sizes, U at h, the other members at h - 1 (no smaller bucket
    # is left: at h = 1 every one has joined)
    left = [0] * len(eff)
    for b, s in A.items():
        left[b] = s
    uset = set(U)
    for x in E:
        left[x[1]] = h if x in uset else max(h - 1, 0)
    for b in below[j:]:
        left[b] = eff[b]
    return out, rounds, left


class _Layout:
    """Compact group ids (N7): one id block per distinct group composition, blocks ordered by
    the members' priorities, rounds of a block in creation order."""

    def __init__(self, stretches, prio):
        ids, keys, entries, self.start = {}, [], [], []
        for st in stretches:
            self.start.append(len(entries))
            for members, count, r0, step in st.entries():
                key = tuple(sorted(members, key=prio.__getitem__))
                c = ids.get(key)
                if c is None:
                    c = ids[key] = len(keys)
                    keys.append(key)
                entries.append((c, count, r0, step))
        total = [0] * len(keys)
        for c, count, _, _ in entries:
            total[c] += count
        self.order = sorted(range(len(keys)), key=lambda c: [prio[b] for b in keys[c]])
        base, nxt = [0] * len(keys), 0
        for c in self.order:
            base[c] = nxt
            nxt += total[c]
        seen = [0] * len(keys)
        self.off = []
        for c, count, _, _ in entries:
            self.off.append(base[c] + seen[c])
            seen[c] += count
        self.keys, self.base, self.total, self.entries = keys, base, total, entries
        self.stretches = stretches

    def gid(self, k, r):
        """Group id of local round r of stretch k."""
        i = self.start[k] + self.stretches[k].entry_index(r)
        _, _, r0, step = self.entries[i]
        return self.off[i] + (r - r0) // step

    def emit(self, runs):
        for c in self.order:
            for b in self.keys[c]:
                runs.add(b, self.base[c], self.total[c])


def _last_eligible(stretches, v, gid):
    for k in range(len(stretches) - 1, -1, -1):
        r = stretches[k].last_without(v)
        if r >= 0:
            return gid(k, r)
    return -1


def _kth_free(intervals, k):
    """The k-th (0-based) group id not covered by the sorted intervals [start, start + count)."""
    g = k
    for s, c in intervals:
        if s <= g:
            g += c
        else:
            break
    return g


def _residues(runs, left, eff, n_groups, residue, rng, find_last):
    placed = 0
    for v, s in enumerate(left):
        if s == 0:
            continue
        if s != 1:  # Lemma 3: cannot happen on an eligible input
            raise errors.EngineError(f"internal error: bucket {v} has {s} records left after group "
                                     f"creation (eligibility guarantees 1)", "XX000")
        if residue == "last":
            g = find_last(v)
        else:
            free = n_groups - (eff[v] - 1)
            g = _kth_free(runs.intervals(v), rng.randrange(free)) if free > 0 else -1
        if g < 0:
            raise errors.EngineError(f"internal error: no group without value {v} for its residue",
                                     "XX000")
        runs.add(v, g)
        placed += 1
    return placed


def _empty_plan(suppressed):
    return Plan(0, Repeat(0, 0), array("q"), array("q"), array("q"), suppressed, 0, 0,
                sum(suppressed))


def plan(sizes, size, *, tie="first", seed=None, residue="last", eligibility="error",
         order="compact", tick=None):
    """Plan Anatomy groups of `size` records with pairwise-distinct values on bucket counts.

    sizes[b]: records of value b (first-appearance order); size: l (Anatomy) or SC_i (Rating);
    tie: 'first' | 'random' (N1); residue: 'last' | 'random' (N2); eligibility: 'error' |
    'suppress' (N3); order: 'compact' | 'creation' group ids (N7); seed: int or text, needed by
    the random rules; tick: called once per stretch, so the database can notice a cancel.
    Returns a `runs.Plan` (N5); its groups equal `plan_reference`'s."""
    sizes, size, prio, rng = _prepare(sizes, size, tie, seed, residue, eligibility, order)
    B = len(sizes)
    eff, suppressed = _eligible(sizes, size, eligibility)
    if sum(eff) == 0:
        return _empty_plan(suppressed)
    stretches, G, left = _stretches(eff, size, prio, tick)
    runs = _Runs(B)
    if order == "compact":
        layout = _Layout(stretches, prio)
        layout.emit(runs)
        gid = layout.gid
    else:
        for st in stretches:
            st.emit_creation(runs)

        def gid(k, r):
            return stretches[k].first + r

    placed = _residues(runs, left, eff, G, residue, rng,
                       lambda v: _last_eligible(stretches, v, gid))
    return Plan(n_groups=G, group_l=Repeat(size, G), run_bucket=runs.rb, run_group=runs.rg,
                run_count=runs.rc, suppressed=suppressed, main_picks=G * size,
                residual_placed=placed, n_suppressed=sum(suppressed))


def plan_reference(sizes, size, *, tie="first", seed=None, residue="last", eligibility="error"):
    """Literal transcription: every round sorts all buckets by (size desc, tie priority) and
    takes the first `size`; groups in creation order.  O(n * B log B): small inputs only."""
    sizes, size, prio, rng = _prepare(sizes, size, tie, seed, residue, eligibility, "creation")
    B = len(sizes)
    eff, suppressed = _eligible(sizes, size, eligibility)
    cur = list(eff)
    groups = []
    while sum(1 for s in cur if s > 0) >= size:
        top = sorted((b for b in range(B) if cur[b] > 0), key=lambda b: (-cur[b], prio[b]))[:size]
        for b in top:
            cur[b] -= 1
        groups.append(set(top))
    runs = _Runs(B)
    for g, members in enumerate(groups):
        for b in sorted(members):
            runs.add(b, g)

    def last(v):
        return max((g for g, m in enumerate(groups) if v not in m), default=-1)

    placed = _residues(runs, cur, eff, len(groups), residue, rng, last)
    return Plan(n_groups=len(groups), group_l=Repeat(size, len(groups)), run_bucket=runs.rb,
                run_group=runs.rg, run_count=runs.rc, suppressed=suppressed,
                main_picks=len(groups) * size, residual_placed=placed,
                n_suppressed=sum(suppressed))
