"""The admissible-cut predicates of Mondrian (`mondrian` D7) and how the parts of a cut are
judged by them: SA histograms per part built in bounded chunks, over rows, over persons (D9),
and whether a cut keeps every person whole (D10).

Why a module of its own: the predicate is what a caller chooses (k-anonymity, distinct
l-diversity, any test of a part's size and histograms) while the search for cuts is fixed; the
in-memory driver (`mondrian.partition`) and the cut decided from aggregates (`mondrian_cuts`)
both judge parts through `evaluate` here.
"""

from __future__ import annotations

import numpy as np

from pganon_engine.core.errors import invalid

from .mondrian_schema import int_list, positive

__all__ = ["k_anonymity", "distinct_l_diversity", "all_of"]

_HIST_CELLS = 1 << 22  # histogram cells built at once when evaluating a batch predicate


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
    k = positive(k, "k")
    return _Predicate(f"k_anonymity({k})", lambda n, hs: n >= k, lambda n, hs: n >= k, False)


def distinct_l_diversity(l, channels=None):
    """Every part has >= l distinct codes in each SA channel (all channels, or the listed
    indices).  Over several SAs jointly: give the SA-vector code (`sa_vector_codes`) as a
    channel and name only that one."""
    l = positive(l, "l")
    sel = None if channels is None else tuple(int_list(channels, "channels"))

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


def check_predicate(p):
    if not callable(p):
        raise invalid(f"predicate {p!r} is not callable",
                      hint="give predicate(size, sa_histograms) -> bool, e.g. k_anonymity(10)")
    return p


def evaluate(pred, sizes, hists, names):
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


def parts_ok(pred, key, m, sa_rows, schema, persons=None, weights=None):
    """Predicate per part for rows labelled key in 0..m-1 (every part non-empty); sa_rows per
    channel the SA codes of those rows.  Histograms are built in chunks of parts (D7).  With
    persons (a person code per row), the parts are judged over persons (D9); with weights (per
    row the rows it stands for, mondrian D11) sizes and histograms count those."""
    if persons is not None:
        return _person_parts_ok(pred, key, m, sa_rows, schema, persons)
    sizes = _count(key, m, weights)
    if not getattr(pred, "uses_sa", True) or not schema.sa_sizes:
        return evaluate(pred, sizes, (), schema.sa_names)
    total_v = sum(schema.sa_sizes)
    step = max(1, _HIST_CELLS // total_v)
    if m <= step:
        hists = [_count(key * v + s, m * v, weights).reshape(m, v)
                 for s, v in zip(sa_rows, schema.sa_sizes)]
        return evaluate(pred, sizes, hists, schema.sa_names)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    out = np.zeros(m, bool)
    for a in range(0, m, step):
        b = min(m, a + step)
        lo, hi = np.searchsorted(ks, [a, b])
        sub = order[lo:hi]
        kk = key[sub] - a
        ws = None if weights is None else weights[sub]
        hists = [_count(kk * v + s[sub], (b - a) * v, ws).reshape(b - a, v)
                 for s, v in zip(sa_rows, schema.sa_sizes)]
        out[a:b] = evaluate(pred, sizes[a:b], hists, schema.sa_names)
    return out


def _count(key, m, weights):
    """bincount of key (0..m-1), each entry counted weights times (exact int64: a float sum of
    integers below 2**53)."""
    if weights is None:
        return np.bincount(key, minlength=m)
    return np.bincount(key, weights=weights, minlength=m).astype(np.int64)


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
    = per code the distinct persons of the part holding it.  Chunked by parts as `parts_ok`."""
    sizes = np.bincount(_distinct(key, persons)[0], minlength=m)
    if not getattr(pred, "uses_sa", True) or not schema.sa_sizes:
        return evaluate(pred, sizes, (), schema.sa_names)
    held = [_distinct(key, s, persons)[:2] for s in sa_rows]  # (part, code) per (part, code, person)
    step = max(1, _HIST_CELLS // sum(schema.sa_sizes))
    out = np.zeros(m, bool)
    for a in range(0, m, step):
        b = min(m, a + step)
        hists = []
        for (kc, sc), v in zip(held, schema.sa_sizes):
            lo, hi = np.searchsorted(kc, [a, b])
            hists.append(np.bincount((kc[lo:hi] - a) * v + sc[lo:hi], minlength=(b - a) * v).reshape(b - a, v))
        out[a:b] = evaluate(pred, sizes[a:b], hists, schema.sa_names)
    return out


def persons_whole(seg, key, persons, S):
    """D10, per segment 0..S-1: do the parts (key) of its rows hold each of its persons in one
    part, i.e. persons summed over its parts = its distinct persons?"""
    in_parts = np.bincount(_distinct(seg, key, persons)[0], minlength=S)
    return in_parts == np.bincount(_distinct(seg, persons)[0], minlength=S)
