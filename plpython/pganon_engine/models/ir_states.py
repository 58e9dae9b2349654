"""Incremental decision states of the identity-reserved models (spec 002 Algs. 5, 6 and the
(k,l) / (alpha,beta) analogues): one growing equivalence class fed one person at a time, which
says after each person whether the class now holds, and whether one more person would make it
hold.  DAnonyIR and GenEIR grow their classes with these.

Why apart: `ir_models` decides a finished class from its statistics; these keep running
counters (and for EIR l a witness hitting set) so that a planner pays per person added, not per
class re-checked.  Decision labels follow `ir_models` (I1-I9).

- I7  Incremental states (Algs. 5, 6 and the kl/ab analogues) take one person's values per
      `add`.  The EIR l state keeps a witness hitting set of size < l: a new person it already
      hits changes nothing, otherwise witness + one of the new values is tried, and only when
      that reaches l is the bounded search run; once the class holds it holds for good
      (monotone).  `hitting_sets()` gives Alg. 5's family on demand (Berge).
"""

from __future__ import annotations

from collections import Counter

from pganon_engine.core.errors import bad_data

from .hitting_sets import below, canonical, min_hs_size, minimal_hitting_sets
from .ir_models import le, parse_params

__all__ = ["make_state", "KlState", "AbState", "ElState"]


# --------------------------------------------------------------------------------------------
# Incremental decision states (I7)
# --------------------------------------------------------------------------------------------


class _State:
    """One growing class.  add(values) feeds one person (the SA values of its records) and
    returns whether the class now holds; merge(other) feeds every person of another state."""

    def __init__(self):
        self.n_persons = 0
        self.n_records = 0
        self.persons = []  # the value tuples fed, in order

    def _feed(self, vals):
        vals = tuple(vals)
        if not vals:
            raise bad_data("a person has no records", hint="give each person at least one SA value")
        self.n_persons += 1
        self.n_records += len(vals)
        self.persons.append(vals)
        return vals

    def merge(self, other):
        for vals in other.persons:
            self.add(vals)
        return self.holds()


class KlState(_State):
    """SatPriIRInc_kl: n_Q >= k and m_Q >= l."""

    def __init__(self, k, l):
        super().__init__()
        self.k, self.l = k, l
        self.values = set()

    def add(self, values):
        self.values.update(self._feed(values))
        return self.holds()

    def holds(self):
        return self.n_persons >= self.k and len(self.values) >= self.l

    def would_hold(self, values):
        return self.n_persons + 1 >= self.k and len(self.values | set(values)) >= self.l


class AbState(_State):
    """SatPriIRInc_ab (eir=False, beta over records) and SatPriIRInc_Eab (Alg. 6, eir=True,
    beta over persons)."""

    def __init__(self, alpha, beta, eir):
        super().__init__()
        self.alpha, self.beta, self.eir = alpha, beta, eir
        self.max_rec = 0
        self.cnt = Counter()
        self.max_cnt = 0

    def _counts(self, vals):
        return set(vals) if self.eir else vals

    def add(self, values):
        vals = self._feed(values)
        self.max_rec = max(self.max_rec, len(vals))
        cnt = self.cnt
        for s in self._counts(vals):
            cnt[s] += 1
            if cnt[s] > self.max_cnt:
                self.max_cnt = cnt[s]
        return self.holds()

    def _ok(self, n_rec, n_per, max_rec, max_cnt):
        return le(max_rec, n_rec, self.alpha) and le(max_cnt, n_per if self.eir else n_rec, self.beta)

    def holds(self):
        if not self.n_records:
            return True
        return self._ok(self.n_records, self.n_persons, self.max_rec, self.max_cnt)

    def would_hold(self, values):
        vals = tuple(values)
        mc = self.max_cnt
        for s, c in Counter(self._counts(vals)).items():
            mc = max(mc, self.cnt[s] + c)
        return self._ok(self.n_records + len(vals), self.n_persons + 1, max(self.max_rec, len(vals)), mc)


class ElState(_State):
    """SatPriIRInc_El: min-HS >= l, kept with a witness hitting set of size < l (I7)."""

    def __init__(self, l):
        super().__init__()
        self.l = l
        self.sets = []
        self._witness = frozenset() if l >= 1 else None

    def add(self, values):
        s = frozenset(self._feed(values))
        self.sets.append(s)
        w = self._witness
        if w is None:
            return True
        if w & s:
            return False
        if len(w) + 1 < self.l:
            self._witness = w | {canonical(s)[0]}
            return False
        self._witness = below(self.sets, self.l)
        return self._witness is None

    def holds(self):
        return self._witness is None

    def would_hold(self, values):
        if self._witness is None:
            return True
        s = frozenset(values)
        if self._witness & s or len(self._witness) + 1 < self.l:
            return False
        return below(self.sets + [s], self.l) is None

    def hitting_sets(self):
        """Alg. 5's ℋ_Q: every minimal hitting set of the persons fed so far."""
        return minimal_hitting_sets(self.sets)

    def min_hs(self):
        return min_hs_size(self.sets)


def make_state(model, params):
    """A fresh incremental decision state for `model` (I7)."""
    p = parse_params(model, params)
    if model == "kl":
        return KlState(p["k"], p["l"])
    if model == "el":
        return ElState(p["l"])
    return AbState(p["alpha"], p["beta"], eir=(model == "eab"))
