"""Seeded random COUNT workloads (spec 004 §4.2 eq. 7; spec 003 §3.2's ARE workload):
`make_queries` draws n queries, tunes their predicates to a selectivity θ on a sample of the
original records and counts each on all of them.

Kept apart from `workload` (the `Domain` and `Workload` vocabulary and the exact counts, which
this module uses) because drawing and tuning is the one intricate step of a workload, with its
own decisions:

W3  Workload (§4.2 eq. 7, "Draw random ranges per QI so that the realized original selectivity
    is within a tolerance of θ"): a query constrains the attributes in `always` plus `qd` random
    ones from the rest of `qis` (default: every attribute of `qis`), q in all.  The attributes
    are drawn once per query and kept through its redraws (W4), so retries do not favour
    attributes that hit θ easily.  Numeric predicates are closed ranges, categorical ones value
    sets.  scheme='selectivity' (default): each predicate covers a fraction f of the records,
    f = θ^(1/q) to start (exact under independence); a numeric range is a window of ranks at a
    random position, a categorical set a prefix of a random order of the values.  Both grow
    nested with f, so the joint selectivity is monotone in f and is tuned on log f (a few Newton
    steps, then bisection): first one common f (handles correlated attributes), then, if still
    off, only the f of the attribute with the finest granularity (smallest largest tie), the
    others held at the smallest common f found on or above target.  Tuning runs on a random
    sample of `sample` rows (all rows when fewer), aiming at half the tolerance band when
    sampled; the count of the chosen query is then taken on all rows.
W4  Tolerance: a query is on target iff |count - θN| <= max(tolerance * θN, 1), i.e. within
    `tolerance` relative (default 10 %) or one record.  A query off target is redrawn (new
    positions and orders) up to `max_tries` times; after that the closest draw is kept and
    `Workload.on_target` says so (heavily tied data, e.g. one binary attribute, cannot hit every
    θ).  With a tie-free numeric attribute among those constrained every query lands on target.
W5  Zero counts (§4.2 proposal): eq. 8 is undefined for count(original) = 0, so such queries are
    never kept: they are redrawn, and if `max_tries` draws all count 0 the call fails (raise θ
    or max_tries).  `estimate.query_error` still skips true = 0, for hand-made workloads.
W6  scheme='domain' is spec 003 §3.2's reading (Gong reference code / Xiao-Tao): per attribute a
    fraction f = θ^(1/q) of the *domain*, not of the records: b = ⌈|dom| * f⌉ random categorical
    values; for a numeric attribute a random contiguous range of ⌈f * (max - min + 1)⌉ integers
    (integer domain) or of length f * (max - min).  θ is then only the expected selectivity under
    uniformity; zero-count queries are redrawn as in W5.  With qd = 2 and always = (SA,) this is
    003's ARE workload (qd QIDs plus the SA, exponent 1/(qd + 1)).
W7  Reproducible: every random choice comes from numpy.random.default_rng(seed); the same domains,
    θ and parameters give the same workload.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from pganon_engine.core import errors
from pganon_engine.core.interrupts import interrupt_point

from .workload import (
    CATEGORICAL,
    CHUNK_ELEMS,
    NUMERIC,
    Workload,
    as_domains,
    check_queries,
    columns,
    count_matches,
    empty_preds,
    int_param,
)

__all__ = ["make_queries", "SCHEMES"]

SCHEMES = ("selectivity", "domain")
_STEPS = 64  # root-finding steps per stage (W3); the bracket test stops far earlier
_NEWTON_STEPS = 4  # the first steps are Newton steps on log count vs log f, then bisection


def make_queries(domains, theta, n=1000, seed=0, qis=None, *, qd=None, always=(), scheme="selectivity",
                 tolerance=0.1, max_tries=20, sample=20000, chunk_elems=CHUNK_ELEMS):
    """n random COUNT queries of selectivity about θ on the original data (eq. 7; W3-W7).

    domains    Domains with their original columns (all of equal length)
    theta      target selectivity, 0 < θ <= 1
    qis        names of the attributes queries may constrain (default: every domain)
    qd         number of attributes drawn at random per query from qis minus `always`
               (default: all of them, i.e. every query constrains every attribute of qis)
    always     names constrained by every query (003's SA)
    scheme     'selectivity' (tuned to θ on the records, W3) or 'domain' (003's fraction of the
               domain, W6)
    tolerance  relative band around θN for 'selectivity' (W4)
    max_tries  draws per query before giving up on the band (W4) or on a non-zero count (W5)
    sample     rows used to tune the predicates ('selectivity')
    """
    doms = as_domains(domains)
    if isinstance(theta, bool) or not isinstance(theta, numbers.Real) or not (0 < float(theta) <= 1):
        raise errors.invalid(f"theta = {theta!r} is invalid; the selectivity must be in (0, 1]")
    theta = float(theta)
    n = int_param(n, "n", 1)
    check_queries(n)
    max_tries = int_param(max_tries, "max_tries", 1)
    sample = int_param(sample, "sample", 1)
    chunk_elems = int_param(chunk_elems, "chunk_elems", 1)
    if scheme not in SCHEMES:
        raise errors.invalid(f"scheme must be one of {SCHEMES}, not {scheme!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real) or not tolerance >= 0:
        raise errors.invalid(f"tolerance = {tolerance!r} is invalid; give a relative tolerance >= 0")
    tolerance = float(tolerance)
    pool = _index_of(doms, qis, "qis") if qis is not None else list(range(len(doms)))
    if not pool:
        raise errors.invalid("qis is empty; name at least one attribute to query")
    fixed = _index_of(doms, always, "always")
    if not set(fixed) <= set(pool):
        raise errors.invalid("every attribute of `always` must also be in `qis`")
    free = [p for p in pool if p not in fixed]
    qd = len(free) if qd is None else int_param(qd, "qd", 0)
    if qd > len(free):
        raise errors.invalid(f"qd = {qd} is larger than the {len(free)} attributes to choose from")
    if qd + len(fixed) < 1:
        raise errors.invalid("every query must constrain at least one attribute; raise qd or set always")
    cols = columns(doms, pool, None)
    N = len(cols[pool[0]])
    rng = np.random.default_rng(seed)
    ctx = _GenContext(doms, pool, fixed, free, qd, theta, tolerance, chunk_elems)
    if scheme == "selectivity":
        ctx.sample = _Sample(rng, doms, pool, cols, N, sample)

    preds = empty_preds(doms, n)
    con = ctx.choose(rng, n)  # a query keeps its attributes through its redraws
    counts = np.zeros(n, dtype=np.int64)
    best_err = np.full(n, np.inf)
    done = np.zeros(n, dtype=bool)
    target = theta * N
    band = max(tolerance * target, 1.0)
    for _ in range(max_tries):
        interrupt_point()
        todo = np.flatnonzero(~done)
        if not todo.size:
            break
        ccon = con[todo]
        cpreds = ctx.draw(rng, ccon, scheme)
        cnt = count_matches(doms, cpreds, ccon, cols, N, chunk_elems)
        err = np.abs(cnt - target)
        ok = cnt > 0
        better = ok & (err < best_err[todo])
        rows = todo[better]
        for i, d in enumerate(doms):
            if d.kind == NUMERIC:
                preds[i][0][rows] = cpreds[i][0][better]
                preds[i][1][rows] = cpreds[i][1][better]
            else:
                preds[i][rows] = cpreds[i][better]
        counts[rows] = cnt[better]
        best_err[rows] = err[better]
        if scheme == "selectivity":
            done[todo[ok & (err <= band)]] = True
        else:
            done[todo[ok]] = True
    if (counts == 0).any():
        raise errors.bad_data(
            f"{int((counts == 0).sum())} of {n} queries found no record in {max_tries} draws (theta = {theta})",
            hint="raise theta or max_tries; eq. 8 is undefined for queries with no original record")
    on_target = np.abs(counts - target) <= band
    return Workload(domains=doms, preds=tuple(preds), constrained=con, theta=theta, counts=counts,
                    n_records=N, on_target=on_target, seed=seed, scheme=scheme, tolerance=tolerance)


class _Sample:
    """The tuning sample (W3): per pool attribute its sample column and what the predicate
    builders need (sorted values, value frequencies, granularity = size of the largest tie)."""

    def __init__(self, rng, doms, pool, cols, N, size):
        if N > size:
            idx = np.sort(rng.choice(N, size=size, replace=False))
        else:
            idx = None
        self.S = N if idx is None else size
        self.sampled = idx is not None
        self.col, self.sorted, self.freq, self.grain = {}, {}, {}, {}
        self.values, self.code = {}, {}  # numeric: distinct sample values, each row's code into them
        for p in pool:
            x = cols[p] if idx is None else cols[p][idx]
            self.col[p] = x
            if doms[p].kind == NUMERIC:
                s = np.sort(x)
                self.sorted[p] = s
                v, c = np.unique(s, return_counts=True)
                self.values[p], self.code[p] = v, np.searchsorted(v, x)
                self.grain[p] = int(c.max())
            else:
                f = np.bincount(x, minlength=doms[p].size)
                self.freq[p] = f
                self.grain[p] = int(f.max())
        # the sample's distinct code vectors with their multiplicities: counting works on these
        codes = np.stack([self.code[p] if doms[p].kind == NUMERIC else self.col[p] for p in pool], axis=1)
        uniq, self.weight = np.unique(codes, axis=0, return_counts=True)
        self.ucode = {p: uniq[:, j] for j, p in enumerate(pool)}
        # float32 sums of fewer than 2^24 unit counts are exact, and run as BLAS
        self.weight32 = self.weight.astype(np.float32 if self.S < 2 ** 24 else np.float64)


class _GenContext:
    def __init__(self, doms, pool, fixed, free, qd, theta, tolerance, chunk_elems):
        self.doms, self.pool, self.fixed, self.free, self.qd = doms, pool, fixed, free, qd
        self.theta, self.tolerance, self.chunk_elems = theta, tolerance, chunk_elems
        self.sample = None

    def choose(self, rng, m):
        con = np.zeros((m, len(self.doms)), dtype=bool)
        con[:, self.fixed] = True
        keys = rng.random((m, len(self.free)))
        if self.qd:
            picked = np.argsort(keys, axis=1)[:, :self.qd]
            free = np.asarray(self.free)
            con[np.arange(m)[:, None], free[picked]] = True
        return con

    def draw(self, rng, con_all, scheme):
        m = con_all.shape[0]
        preds = empty_preds(self.doms, m)
        widest = max([self.doms[p].size for p in self.pool if self.doms[p].kind == CATEGORICAL] + [1])
        per = max(self.sample.S if self.sample else 1, widest)
        batch = max(1, min(256, self.chunk_elems // per))
        for b0 in range(0, m, batch):
            interrupt_point()
            b1 = min(m, b0 + batch)
            con = con_all[b0:b1]
            if scheme == "selectivity":
                part = self._draw_selectivity(rng, con)
            else:
                part = self._draw_domain(rng, con)
            for i, d in enumerate(self.doms):
                if d.kind == NUMERIC:
                    preds[i][0][b0:b1], preds[i][1][b0:b1] = part[i]
                else:
                    preds[i][b0:b1] = part[i]
        return preds

    # -- scheme 'domain' (W6) --------------------------------------------------------------------

    def _draw_domain(self, rng, con):
        m = con.shape[0]
        f = self.theta ** (1.0 / con.sum(axis=1))
        part = {}
        for i, d in enumerate(self.doms):
            if d.kind == NUMERIC:
                lo, hi = np.full(m, -np.inf), np.full(m, np.inf)
                u = rng.random(m) if i in self.pool else None
                if u is not None:
                    c = con[:, i]
                    if d.integer:
                        span = math.floor(d.hi) - math.ceil(d.lo) + 1
                        width = np.clip(np.ceil(f * span - 1e-9), 1, span)
                        start = math.ceil(d.lo) + np.floor(u * (span - width + 1))
                        lo[c], hi[c] = start[c], (start + width - 1)[c]
                    else:
                        w = f * (d.hi - d.lo)
                        start = d.lo + u * (d.hi - d.lo - w)
                        lo[c], hi[c] = start[c], np.minimum(start + w, d.hi)[c]
                part[i] = (lo, hi)
            else:
                mask = np.ones((m, d.size), dtype=bool)
                if i in self.pool:
                    rank = np.argsort(np.argsort(rng.random((m, d.size)), axis=1), axis=1)
                    b = np.clip(np.ceil(f * d.size - 1e-9), 1, d.size)
                    c = con[:, i]
                    mask[c] = rank[c] < b[c, None]
                part[i] = mask
        return part

    # -- scheme 'selectivity' (W3) ---------------------------------------------------------------

    def _draw_selectivity(self, rng, con):
        smp, doms = self.sample, self.doms
        S, m = smp.S, con.shape[0]
        # random positions (numeric) and value orders (categorical), drawn for every pool
        # attribute so the stream does not depend on which attributes a query picked
        u, rank, cum = {}, {}, {}
        for p in self.pool:
            if doms[p].kind == NUMERIC:
                u[p] = rng.random(m)
            else:
                order = np.argsort(rng.random((m, doms[p].size)), axis=1)
                rank[p] = np.argsort(order, axis=1)
                cum[p] = np.cumsum(smp.freq[p][order], axis=1)

        def num_bounds(p, rows, f):
            k = np.clip(np.rint(f * S), 1, S).astype(np.int64)
            start = np.clip(np.floor(u[p][rows] * (S - k + 1)).astype(np.int64), 0, S - k)
            sv = smp.sorted[p]
            return sv[start], sv[start + k - 1]

        def cat_len(p, rows, f):
            n_vals = doms[p].size
            return np.minimum((cum[p][rows] < (f * S)[:, None]).sum(axis=1) + 1, n_vals)

        def count(rows, fm):
            """Sample rows each query admits.  Membership is decided per distinct value first
            (queries x values, small), gathered by the codes of the sample's distinct code
            vectors and weighted by their multiplicities: one boolean gather and AND per
            attribute over queries x distinct vectors."""
            sel = np.ones((rows.size, smp.weight.size), dtype=bool)
            for p in self.pool:
                c = con[rows, p]
                if not c.any():
                    continue
                if doms[p].kind == NUMERIC:
                    lo, hi = num_bounds(p, rows, fm[:, p])
                    v = smp.values[p]
                    allowed = (v >= lo[:, None]) & (v <= hi[:, None])
                else:
                    allowed = rank[p][rows] < cat_len(p, rows, fm[:, p])[:, None]
                allowed[~c] = True
                sel &= allowed[:, smp.ucode[p]]
            return np.rint(sel.astype(smp.weight32.dtype) @ smp.weight32).astype(np.int64)

        target = self.theta * S
        # a sample tuned to the full band would miss it on all rows about half the time at its
        # edges; half the band leaves room for the sampling error
        band = max(self.tolerance * target * (0.5 if smp.sampled else 1.0), 1.0)
        t_min = math.log(1.0 / S)
        t_width = 0.25 / S  # below this a step of log f moves no window by a whole position
        d = len(doms)
        best_fm = np.ones((m, d))
        best_err = np.full(m, np.inf)

        def record(rows, fm, c):
            err = np.where(c > 0, np.abs(c - target), np.inf)  # a zero count is never kept (W5)
            better = err < best_err[rows]
            best_err[rows[better]] = err[better]
            best_fm[rows[better]] = fm[better]
            return err <= band

        def solve(rows, t, t_lo, t_hi, slope, fm_of):
            """Root of count(t) = target for each row: Newton steps on log count vs log f
            (slope = how many attributes move) for the first steps, then bisection; the bracket
            [t_lo, t_hi] (count below / on or above target) shrinks at every step.  Stops at a
            hit or when the bracket no longer changes a window by one position."""
            live = np.ones(rows.size, dtype=bool)
            for step in range(_STEPS):
                interrupt_point()
                sub = np.flatnonzero(live)
                if not sub.size:
                    break
                fm = fm_of(sub, t[sub])
                c = count(rows[sub], fm)
                hit = record(rows[sub], fm, c)
                below = c < target
                t_lo[sub[below]] = t[sub[below]]
                t_hi[sub[~below]] = t[sub[~below]]
                live[sub[hit]] = False
                newton = t[sub] + (math.log(target) - np.log(np.maximum(c, 0.5))) / slope[sub]
                mid = (t_lo[sub] + t_hi[sub]) / 2
                inside = (newton > t_lo[sub]) & (newton < t_hi[sub])
                t[sub] = np.where(inside & (step < _NEWTON_STEPS), newton, mid)
                live &= (t_hi - t_lo) > t_width

        # stage 1: one common f per query
        q = con.sum(axis=1)
        t_lo, t_hi = np.full(m, t_min), np.zeros(m)
        t = np.clip(math.log(self.theta) / q, t_min, 0.0)
        solve(np.arange(m), t, t_lo, t_hi, q.astype(float),
              lambda sub, ts: np.repeat(np.exp(ts)[:, None], d, axis=1))
        # stage 2: only the finest constrained attribute moves; the others stay at the smallest
        # common f found on or above target (t_hi), so the count runs from <= 1 up to >= target
        rows = np.flatnonzero(best_err > band)
        if rows.size:
            grain = np.array([smp.grain.get(p, np.iinfo(np.int64).max) for p in range(d)], dtype=np.int64)
            fine = np.argmin(np.where(con[rows], grain[None, :], np.iinfo(np.int64).max), axis=1)
            base = np.repeat(np.exp(t_hi[rows])[:, None], d, axis=1)

            def fine_fm(sub, ts):
                fm = base[sub].copy()
                fm[np.arange(sub.size), fine[sub]] = np.exp(ts)
                return fm

            hi2 = t_hi[rows].copy()
            solve(rows, hi2.copy(), np.full(rows.size, t_min), hi2, np.ones(rows.size), fine_fm)
        # predicates of the best f per query
        part = {}
        all_rows = np.arange(m)
        for i, dm in enumerate(doms):
            c = con[:, i]
            if dm.kind == NUMERIC:
                lo, hi = np.full(m, -np.inf), np.full(m, np.inf)
                if i in u:
                    vlo, vhi = num_bounds(i, all_rows, best_fm[:, i])
                    lo[c], hi[c] = vlo[c], vhi[c]
                part[i] = (lo, hi)
            else:
                mask = np.ones((m, dm.size), dtype=bool)
                if i in rank:
                    L = cat_len(i, all_rows, best_fm[:, i])
                    mask[c] = rank[i][c] < L[c, None]
                part[i] = mask
        return part


def _index_of(doms, names, what):
    pos = {d.name: i for i, d in enumerate(doms)}
    if isinstance(names, str):
        names = [names]
    out = []
    for nm in names:
        if nm not in pos:
            raise errors.unknown(f"{what} names unknown attribute {nm!r}", hint=f"known: {sorted(pos)}")
        if pos[nm] in out:
            raise errors.invalid(f"{what} names {nm!r} twice")
        out.append(pos[nm])
    return out
