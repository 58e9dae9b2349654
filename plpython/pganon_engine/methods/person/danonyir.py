"""DAnonyIR (spec 002 §3.2-3.5, Algorithms 1 and 7): greedy clustering of persons into
equivalence classes that meet an identity-reserved model, with set generalization.

Why clustering over persons: in an identity-reserved release every record of a person stays
linked through Id_num, so a person (all of its records, with one QI vector) is the unit that
moves.  A class grows from a seed person by taking the nearest remaining person (Eq. 17) or
merging the nearest finished class (Eq. 18), whichever costs less, until the pluggable
incremental decision function (`ir_models` states: 'kl', 'ab', 'el', 'eab') says it holds;
leftovers go to the nearest class that stays valid, or are suppressed when that is cheaper
(Handle).  Published cells are the class's identity element: [min, max] per numeric QI and the
value set per categorical QI (`ir_metrics`).

Input: persons as (person id, QI values, SA values of the person's records); QI values are one
vector per person (`persons_from_records` groups per-record rows and refuses a person whose
records disagree on a QI, §3.8 item 10).  Output: an `IrRelease` with per person its Id_num and
class (None when suppressed), per class its persons and generalized cells, the suppressed
persons, Loss and NLoss (Eqs. 14-15), and what the release must record (`release_info`).

Decisions (spec §3.8 items in brackets):

- D1  Id_num: 1..n in input order (first appearance) [§3.2 line 1].
- D2  Tie order: input order; with ``seed`` (an int) a permutation from
      ``random.Random(seed).shuffle``.  Every tie follows it: the nearest person (line 7) is
      the first in tie order among those within the tolerance of D4 [item 2].  Classes tie by
      creation (the earliest created finished class) [item 2].
- D3  Seeds (line 3): without ``seed`` the first remaining person in tie order; with ``seed``
      a uniform draw among the remaining persons from the same ``random.Random``
      [item 1].  ``seeds`` pins the first seeds (person ids) before either rule applies; the
      paper's example is seeds [Ella, Tim] (Id_num 6, 3).  The decision function is evaluated
      on the seed alone [§3.2 proposal].
- D4  Distances are computed in floats, vectorized; two distances within 1e-9 (relative, at
      least absolute 1e-9) are a tie.  Loss and NLoss are recomputed exactly from the final
      cells (Fractions for integer data and domains).
- D5  Line 9: add the person when Dist(p', Q) <= Dist(Q', Q) (ties add); a merged class leaves
      D* and its persons are fed to the decision state one by one [items 3, 4].
- D6  Handle (Alg. 7): residual persons of the last unsatisfied class in the order they joined
      it [item 8]; the nearest class by Eq. 17 (ties: earliest created) among those that still
      hold after adding the person - checked for 'ab'/'eab' only, 'kl'/'el' are monotone
      [item 16]; merge iff its distance < |R(p)| * |QI| (suppression cost), else suppress
      (a tie suppresses) [item 9].  A merge updates the class's cells and state at once.
- D7  Suppressed persons are not published; they cost |QI| per record in Loss and count in
      NLoss's denominator [item 7].  If D as a whole fails a monotone model ('kl', 'el') no
      class can form and everything is suppressed (NLoss = 1, §6 item 17); `unsatisfiable`
      says so, and strict=True refuses such input before any work.
- D8  Domains: observed by default, overridable per QI (`ir_metrics` R1) [item 5].

Cost (spec §3.7): O(d n^2) over persons.  Each growth step scans the remaining persons and the
finished classes with numpy: per numeric QI a clip against the class interval, per categorical
QI a gather from a per-value table; the increment G of the class's per-record loss gives
Dist(p, Q) = |R(p)| (K + G) + |Q| G with K the class's own per-record loss (Eq. 17 in closed
form).  Removed persons are masked and the arrays compacted when half are gone.  Memory:
persons x QIs numbers, and classes x (numeric QIs + sum of categorical domain sizes) bytes.
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from pganon_engine.core.errors import bad_data, invalid, unsatisfiable
from pganon_engine.core.interrupts import interrupt_point
from pganon_engine.metrics import ir_metrics
from pganon_engine.metrics.workload import CATEGORICAL, NUMERIC
from pganon_engine.models import ir_models, ir_states

__all__ = ["IrClass", "IrRelease", "persons_from_records", "danonyir", "nearest_valid", "TOL"]

TOL = 1e-9
_INF = float("inf")


# --------------------------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------------------------


def persons_from_records(records, person, qis, sa):
    """(person id, QI values, SA values) triples from per-record mappings, in first-appearance
    order of the persons; a person whose records differ on a QI is refused (§3.8 item 10)."""
    out, where = [], {}
    for i, r in enumerate(records):
        if not isinstance(r, Mapping):
            raise invalid(f"record {i} must be a mapping of column -> value, got {r!r}")
        try:
            pid, q, v = r[person], tuple(r[c] for c in qis), r[sa]
        except KeyError as e:
            raise bad_data(f"record {i} has no column {e.args[0]!r}",
                           hint="every record needs the person, QI and SA columns") from None
        j = where.get(pid)
        if j is None:
            where[pid] = len(out)
            out.append((pid, q, [v]))
        else:
            if out[j][1] != q:
                raise bad_data(f"person {pid!r} has records with different QI values: {out[j][1]!r} "
                               f"and {q!r}", hint="identity-reserved methods need one QI vector per "
                                                  "person; fix the data or drop the varying QI")
            out[j][2].append(v)
    return out


def _persons(persons, qis):
    ids, qrows, sas = [], [], []
    for i, p in enumerate(persons):
        try:
            pid, q, v = p
        except (TypeError, ValueError):
            raise invalid(f"person {i} must be (person id, QI values, SA values), got {p!r}") from None
        q = tuple(q)
        if len(q) != len(qis):
            raise invalid(f"person {pid!r} has {len(q)} QI values for {len(qis)} QIs {list(qis)}")
        for c, x in zip(qis, q):
            if x is None or (isinstance(x, float) and x != x):
                raise bad_data(f"person {pid!r} has NULL in QI {c!r}", hint="remove or impute NULLs first")
        ids.append(pid)
        qrows.append(q)
        sas.append(ir_models._person_values(pid, v, "input"))
    if not ids:
        raise invalid("no persons to anonymize")
    if len(set(ids)) != len(ids):
        seen = set()
        dup = next(x for x in ids if x in seen or seen.add(x))
        raise bad_data(f"person {dup!r} is listed twice", hint="give each person once, with all its records")
    return ids, qrows, sas


def _kinds(qrows, qis, kinds):
    if kinds is None:
        return [NUMERIC if all(isinstance(r[j], numbers.Real) and not isinstance(r[j], bool) for r in qrows)
                else CATEGORICAL for j in range(len(qis))]
    if isinstance(kinds, Mapping):
        kinds = [kinds.get(q) for q in qis]
    kinds = list(kinds)
    if len(kinds) != len(qis) or any(k not in (NUMERIC, CATEGORICAL) for k in kinds):
        raise invalid(f"kinds must give 'numeric' or 'categorical' for each of the QIs {list(qis)}, got {kinds!r}")
    for j, k in enumerate(kinds):
        if k == NUMERIC:
            bad = next((r[j] for r in qrows if isinstance(r[j], bool) or not isinstance(r[j], numbers.Real)), None)
            if bad is not None:
                raise bad_data(f"numeric QI {qis[j]!r} holds {bad!r}", hint="declare it categorical")
    return kinds


def _qis(qis):
    if qis is None or isinstance(qis, str):
        raise invalid(f"qis must be a list of QI names, not {qis!r}")
    qis = list(qis)
    if not qis:
        raise invalid("at least one QI is needed")
    if len(set(qis)) != len(qis):
        raise invalid(f"a QI is listed twice in {qis}")
    return qis


def _seed(seed):
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise invalid(f"seed must be an integer, not {seed!r}")
    return int(seed)


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IrClass:
    """One published class: its id, persons (ids, in the order they joined), record count and
    cells per QI ((lo, hi) or a frozenset; GeneIR also the taxonomy node labels)."""

    ec: int
    persons: tuple
    n_records: int
    cells: tuple
    labels: tuple | None = None


@dataclass
class IrRelease:
    """An identity-reserved release plan (DAnonyIR or GeneIR)."""

    method: str
    model: str
    params: dict
    qis: tuple
    kinds: tuple
    domains: tuple
    ids: list
    id_num: list
    ec: list
    classes: list
    suppressed: tuple
    n_records: int
    suppressed_records: int
    loss: object
    nloss: object
    seed: object = None
    seeds: tuple = ()
    order: tuple = ()
    unsatisfiable: bool = False
    tie_rule: str = ""
    trace: list = field(default_factory=list)

    def members(self):
        """Class id -> person ids."""
        return {c.ec: c.persons for c in self.classes}

    def sa_classes(self, persons):
        """{class id: {person id: SA values}} of this release, for `ir_models.check`; persons
        as given to the method."""
        sa = {p[0]: list(p[2]) for p in persons}
        return {c.ec: {pid: sa[pid] for pid in c.persons} for c in self.classes}

    def release_info(self):
        """What a release records: method, model, params, seed, pinned seeds, attribute order
        (GeneIR), tie rule, sizes, suppression and NLoss."""
        return {"method": self.method, "model": self.model,
                "params": {k: float(v) if isinstance(v, Fraction) else v for k, v in self.params.items()},
                "seed": self.seed, "seeds": list(self.seeds), "order": list(self.order),
                "tie_rule": self.tie_rule, "persons": len(self.ids), "records": self.n_records,
                "classes": len(self.classes), "suppressed_persons": len(self.suppressed),
                "suppressed_records": self.suppressed_records, "nloss": float(self.nloss),
                "unsatisfiable": self.unsatisfiable}


def _finish(method, model, params, qis, kinds, doms, ids, qrows, sas, groups, group_cells=None,
            group_labels=None, **extra):
    """IrRelease from the final groups (lists of person indices, in class order); cells are the
    groups' identity elements unless given (GeneIR's taxonomy cells)."""
    n = len(ids)
    ec = [None] * n
    classes, table = [], []
    for g, members in enumerate(groups, start=1):
        if not g & 255:
            interrupt_point()      # the loss of a big release takes seconds of Python (issue 12)
        if group_cells is not None:
            cells = tuple(group_cells[g - 1])
        else:
            cells = []
            for j, d in enumerate(doms):
                vals = [qrows[i][j] for i in members]
                if d.kind == NUMERIC:
                    vals = [ir_metrics.exact(v) for v in vals]
                    cells.append((min(vals), max(vals)))
                else:
                    cells.append(frozenset(vals))
            cells = tuple(cells)
        recs = sum(len(sas[i]) for i in members)
        for i in members:
            ec[i] = g
        classes.append(IrClass(ec=g, persons=tuple(ids[i] for i in members), n_records=recs, cells=cells,
                               labels=None if group_labels is None else tuple(group_labels[g - 1])))
        table.append((recs, cells))
    supp = tuple(ids[i] for i in range(n) if ec[i] is None)
    supp_recs = sum(len(sas[i]) for i in range(n) if ec[i] is None)
    lo = ir_metrics.table_loss(table, doms, supp_recs)
    return IrRelease(method=method, model=model, params=params, qis=tuple(qis), kinds=tuple(kinds),
                     domains=doms, ids=list(ids), id_num=list(range(1, n + 1)), ec=ec, classes=classes,
                     suppressed=supp, n_records=lo.records, suppressed_records=supp_recs, loss=lo.total,
                     nloss=lo.nloss, **extra)


def _monotone_fails(model, params, sas):
    """D as a whole fails a monotone model (D7)."""
    if model not in ("kl", "el"):
        return False
    st = ir_states.make_state(model, params)
    for v in sas:
        st.add(v)
    return not st.holds()


# --------------------------------------------------------------------------------------------
# The clustering engine
# --------------------------------------------------------------------------------------------


class _Space:
    """Persons as normalized arrays: numeric QIs scaled to [0, 1] by their domain span, and
    categorical QIs as offsets into one flat table of per-value weights 1 / (|X| - 1)."""

    def __init__(self, doms, qrows, sas):
        self.num = [j for j, d in enumerate(doms) if d.kind == NUMERIC]
        self.cat = [j for j, d in enumerate(doms) if d.kind == CATEGORICAL]
        n = len(qrows)
        self.XN = np.zeros((n, len(self.num)))
        for a, j in enumerate(self.num):
            d = doms[j]
            span = d.hi - d.lo
            if span > 0:
                self.XN[:, a] = (np.array([float(r[j]) for r in qrows]) - d.lo) / span
        sizes = [doms[j].size for j in self.cat]
        self.off = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if sizes else np.zeros(0, np.int64)
        self.W = np.zeros(int(sum(sizes)))
        self.w = np.zeros(len(self.cat))
        self.CO = np.zeros((n, len(self.cat)), dtype=np.int64)
        for a, j in enumerate(self.cat):
            d = doms[j]
            look = {v: c for c, v in enumerate(d.categories)}
            w = 1.0 / (d.size - 1) if d.size > 1 else 0.0
            self.w[a] = w
            self.W[self.off[a]:self.off[a] + d.size] = w
            self.CO[:, a] = np.array([look[r[j]] for r in qrows], dtype=np.int64) + self.off[a]
        self.wsum = float(self.w.sum())
        self.R = np.array([float(len(v)) for v in sas])
        self.nflat = self.W.size


class _Class:
    """The identity element of a growing class in normalized form, with its decision state."""

    def __init__(self, sp, state):
        self.sp = sp
        self.lo = np.full(len(sp.num), np.inf)
        self.hi = np.full(len(sp.num), -np.inf)
        self.member = np.zeros(sp.nflat, dtype=bool)
        self.lk = sp.W.copy()
        self.S = np.zeros(len(sp.cat), dtype=np.int64)
        self.nrec = 0.0
        self.K = 0.0
        self.members = []
        self.state = state

    def _k(self):
        self.K = float((self.hi - self.lo).sum() + ((self.S - 1) * self.sp.w).sum()) if self.members else 0.0

    def add(self, i, sa):
        sp = self.sp
        x = sp.XN[i]
        np.minimum(self.lo, x, out=self.lo)
        np.maximum(self.hi, x, out=self.hi)
        for a, code in enumerate(sp.CO[i]):
            if not self.member[code]:
                self.member[code] = True
                self.lk[code] = 0.0
                self.S[a] += 1
        self.nrec += sp.R[i]
        self.members.append(i)
        self._k()
        return self.state.add(sa)

    def absorb(self, cl, row):
        """Merge finished class `row` of `cl` (line 12)."""
        sp = self.sp
        np.minimum(self.lo, cl.LO[row], out=self.lo)
        np.maximum(self.hi, cl.HI[row], out=self.hi)
        self.member |= cl.MT[:, row].astype(bool)
        self.lk = np.where(self.member, 0.0, sp.W)
        if len(sp.cat):
            self.S = np.add.reduceat(self.member.astype(np.int64), sp.off)
        self.nrec += cl.N[row]
        self.members.extend(cl.members[row])
        self._k()
        return self.state.merge(cl.states[row])


class _Finished:
    """D*: finished classes as rows (creation order), with a dead mask."""

    def __init__(self, sp, cap=64):
        self.sp = sp
        self.count = 0
        self.cap = 0
        dn, dc = len(sp.num), len(sp.cat)
        self.LO = np.zeros((0, dn))
        self.HI = np.zeros((0, dn))
        self.K = np.zeros(0)
        self.N = np.zeros(0)
        self.S = np.zeros((0, dc), dtype=np.int64)
        self.SW = np.zeros(0)
        self.MT = np.zeros((sp.nflat, 0), dtype=np.uint8)
        self.pen = np.zeros(0)
        self.members = []
        self.states = []
        self.alive = 0
        self._grow(cap)

    def _grow(self, cap):
        def g(a, shape_tail, fill=0):
            b = np.full((cap,) + shape_tail, fill, dtype=a.dtype)
            b[:self.cap] = a[:self.cap]
            return b
        dn, dc = len(self.sp.num), len(self.sp.cat)
        self.LO, self.HI = g(self.LO, (dn,)), g(self.HI, (dn,))
        self.K, self.N, self.SW = g(self.K, ()), g(self.N, ()), g(self.SW, ())
        self.S = g(self.S, (dc,))
        self.pen = g(self.pen, (), _INF)
        mt = np.zeros((self.sp.nflat, cap), dtype=np.uint8)
        mt[:, :self.cap] = self.MT[:, :self.cap]
        self.MT = mt
        self.cap = cap

    def add(self, q):
        if self.count == self.cap:
            self._grow(2 * self.cap)
        r = self.count
        self.count += 1
        self.LO[r], self.HI[r], self.K[r], self.N[r] = q.lo, q.hi, q.K, q.nrec
        self.S[r] = q.S
        self.SW[r] = float((q.S * self.sp.w).sum())
        self.MT[:, r] = q.member
        self.pen[r] = 0.0
        self.members.append(q.members)
        self.states.append(q.state)
        self.alive += 1
        return r

    def kill(self, r):
        self.pen[r] = _INF
        self.members[r] = None
        self.states[r] = None
        self.alive -= 1

    def nearest_to_class(self, q):
        """(row, Dist(Q'', Q)) of the nearest finished class (Eq. 18), (-1, inf) if none."""
        c = self.count
        if not self.alive:
            return -1, _INF
        sp = self.sp
        num = (np.maximum(self.HI[:c], q.hi) - np.minimum(self.LO[:c], q.lo)).sum(axis=1)
        rows = np.flatnonzero(q.member)
        inter = sp.W[rows] @ self.MT[rows, :c] if rows.size else np.zeros(c)
        qsw = float((q.S * sp.w).sum())
        kj = num + self.SW[:c] + qsw - sp.wsum - inter
        d = self.N[:c] * (kj - self.K[:c]) + q.nrec * (kj - q.K) + self.pen[:c]
        return _first_min(d)

    def dist_to_person(self, i):
        """Dist(p, Q'') for every row (Eq. 17), inf for dead rows."""
        c = self.count
        sp = self.sp
        x = sp.XN[i]
        g = np.abs(x - np.clip(x, self.LO[:c], self.HI[:c])).sum(axis=1)
        if len(sp.cat):
            codes = sp.CO[i]
            g = g + sp.wsum - sp.W[codes] @ self.MT[codes, :c]
        return sp.R[i] * (self.K[:c] + g) + self.N[:c] * g + self.pen[:c]

    def take(self, r, i, sa):
        """Person i joins finished class r (Handle's merge)."""
        sp = self.sp
        x = sp.XN[i]
        np.minimum(self.LO[r], x, out=self.LO[r])
        np.maximum(self.HI[r], x, out=self.HI[r])
        for a, code in enumerate(sp.CO[i]):
            if not self.MT[code, r]:
                self.MT[code, r] = 1
                self.S[r, a] += 1
        self.SW[r] = float((self.S[r] * sp.w).sum())
        self.K[r] = float((self.HI[r] - self.LO[r]).sum() + ((self.S[r] - 1) * sp.w).sum())
        self.N[r] += sp.R[i]
        self.members[r].append(i)
        self.states[r].add(sa)


def _first_min(d):
    """(index, value) of the first entry within the tie tolerance of the minimum (D4)."""
    if not d.size:
        return -1, _INF
    i = int(np.argmin(d))
    m = float(d[i])
    if m == _INF:
        return -1, _INF
    j = int(np.argmax(d <= m + TOL * max(1.0, abs(m))))
    return j, float(d[j])


def _tie(a, b):
    return TOL * max(1.0, abs(a), abs(b))


class _Remaining:
    """D: persons not yet in a class, as compacted arrays in tie order (D2)."""

    def __init__(self, sp, order):
        self.sp = sp
        self.order = np.asarray(order, dtype=np.int64)  # tie position -> person index
        self.alive = np.ones(len(order), dtype=bool)  # by person index
        self.left = len(order)
        self._ptr = 0
        self._compact()

    def _compact(self):
        keep = self.order[self.alive[self.order]]
        self.idx = keep
        # one contiguous row per attribute: a scan is d passes over n numbers (4x faster than
        # reducing n rows of d), summed in the same order as a row sum, so bit-identical
        self.XT = np.ascontiguousarray(self.sp.XN[keep].T)
        self.CT = np.ascontiguousarray(self.sp.CO[keep].T)
        self.R = self.sp.R[keep]
        self.pen = np.zeros(len(keep))
        self.pos = np.full(len(self.order), -1, dtype=np.int64)
        self.pos[keep] = np.arange(len(keep))
        self.dead = 0
        self.buf = np.empty(len(keep))

    def remove(self, i):
        self.alive[i] = False
        self.left -= 1
        self.pen[self.pos[i]] = _INF
        self.dead += 1
        if self.dead > 256 and self.dead * 2 > len(self.idx):
            self._compact()

    def first(self):
        while not self.alive[self.order[self._ptr]]:
            self._ptr += 1
        return int(self.order[self._ptr])

    def nearest(self, q):
        """(person index, Dist(p, Q)) of the nearest remaining person (Eq. 17), ties by D2."""
        buf = self.buf
        g = np.zeros(len(self.idx))
        for a, x in enumerate(self.XT):  # sum over numeric QIs of the distance to [lo, hi]
            np.clip(x, q.lo[a], q.hi[a], out=buf)
            np.subtract(x, buf, out=buf)
            np.abs(buf, out=buf)
            g += buf
        if len(self.sp.cat):  # plus the weights of the categorical values the class lacks
            c = np.zeros(len(self.idx))
            for codes in self.CT:
                c += q.lk[codes]
            g += c
        d = self.R * (q.K + g)
        d += q.nrec * g
        d += self.pen
        t, v = _first_min(d)
        return (-1, _INF) if t < 0 else (int(self.idx[t]), v)


class _Picker:
    """Seed selection (D3)."""

    def __init__(self, rem, pinned, rng, order):
        self.rem = rem
        self.pinned = list(pinned)
        self.rng = rng
        if rng is not None:
            self.pool = [int(i) for i in order]
            self.where = {p: t for t, p in enumerate(self.pool)}

    def drop(self, i):
        if self.rng is not None:
            t = self.where.pop(i)
            last = self.pool.pop()
            if last != i:
                self.pool[t] = last
                self.where[last] = t

    def pick(self, ids):
        if self.pinned:
            i = self.pinned.pop(0)
            if not self.rem.alive[i]:
                raise invalid(f"pinned seed {ids[i]!r} is already in a class when its turn comes",
                              hint="pin only persons that are still unclustered, in the order of use")
            return i
        if self.rng is not None:
            return self.pool[self.rng.randrange(len(self.pool))]
        return self.rem.first()


def danonyir(persons, qis, model, params, *, kinds=None, domains=None, seed=None, seeds=(),
             strict=False, trace=False, tick=None):
    """Anonymize persons with DAnonyIR (Algorithm 1 + Handle) under an identity-reserved model.

    persons  (person id, QI values in `qis` order, SA values of the person's records)
    qis      QI names; kinds per QI 'numeric' | 'categorical' (list or {name: kind}; default:
             numeric when every value is a number)
    model    'kl' | 'ab' | 'el' | 'eab' with params {'k','l'} | {'alpha','beta'} | {'l'} (I1)
    domains  {QI: (lo, hi) or [values]} overriding the observed domains (D8)
    seed     None: deterministic (D2, D3); an int: seeded random seeds and tie order
    seeds    person ids pinned as the first seeds, in order (D3)
    strict   refuse input whose whole D fails a monotone model (D7)
    trace    keep the steps in `IrRelease.trace`: ('seed', id), ('add', id, dist, class dist),
             ('merge', class number, dist, person dist), ('close', class number, ids),
             ('handle', id, class number or None, dist, suppression cost); class numbers count
             created classes from 1
    tick     called once per growth step, so the database can notice a cancel or a
             statement_timeout (`Db.interruptible`); no effect on the result
    """
    qis = _qis(qis)
    p = ir_models.parse_params(model, params)
    seed = _seed(seed)
    ids, qrows, sas = _persons(persons, qis)
    kinds = _kinds(qrows, qis, kinds)
    doms = ir_metrics.domains_of(qis, kinds, qrows, domains)
    index = {pid: i for i, pid in enumerate(ids)}
    pinned = []
    for s in seeds or ():
        if s not in index:
            raise bad_data(f"pinned seed {s!r} is not a person of the input")
        pinned.append(index[s])
    unsat = _monotone_fails(model, p, sas)
    if unsat and strict:
        raise unsatisfiable(f"the whole input fails model {model!r} with {p}: no class can satisfy it",
                            hint="lower l (or k), or add persons with more distinct sensitive values")
    n = len(ids)
    order = list(range(n))
    rng = None
    if seed is not None:
        rng = random.Random(seed)
        rng.shuffle(order)
    sp = _Space(doms, qrows, sas)
    rem = _Remaining(sp, order)
    fin = _Finished(sp)
    picker = _Picker(rem, pinned, rng, order)
    log = [] if trace else None
    number = {}  # finished row -> class number (creation count)

    def take_person(q, i):
        rem.remove(i)
        picker.drop(i)
        return q.add(i, sas[i])

    q, sat = None, True
    while rem.left:
        i = picker.pick(ids)
        q = _Class(sp, ir_states.make_state(model, p))
        sat = take_person(q, i)
        if log is not None:
            log.append(("seed", ids[i]))
        while not sat and rem.left:
            if tick is not None:
                tick()
            pi, dp = rem.nearest(q)
            r, dq = fin.nearest_to_class(q)
            if dp <= dq + _tie(dp, dq):
                sat = take_person(q, pi)
                if log is not None:
                    log.append(("add", ids[pi], dp, dq))
            else:
                if log is not None:
                    log.append(("merge", number[r], dq, dp))
                sat = q.absorb(fin, r)
                fin.kill(r)
        if sat:
            r = fin.add(q)
            number[r] = len(number) + 1
            if log is not None:
                log.append(("close", number[r], tuple(ids[m] for m in q.members)))
    if not sat:
        cost_per = len(qis)
        for i in q.members:
            if tick is not None:
                tick()
            d = fin.dist_to_person(i)
            r, best = nearest_valid(fin.states, d, model, sas[i])
            cost = len(sas[i]) * cost_per
            if r >= 0 and best < cost - _tie(best, cost):
                fin.take(r, i, sas[i])
            else:
                r = -1
            if log is not None:
                log.append(("handle", ids[i], number[r] if r >= 0 else None, best, cost))
    groups = [fin.members[r] for r in range(fin.count) if fin.members[r] is not None]
    tie_rule = ("nearest person: first in " + ("input order" if seed is None else "the seeded permutation")
                + "; nearest class: earliest created; distances within 1e-9 tie; "
                + ("seeds: first unclustered person" if seed is None else "seeds: seeded uniform draw"))
    return _finish("danonyir", model, p, qis, kinds, doms, ids, qrows, sas, groups, seed=seed,
                   seeds=tuple(ids[i] for i in pinned), unsatisfiable=unsat, tie_rule=tie_rule,
                   trace=log or [])


def nearest_valid(states, d, model, sa):
    """(row, distance) of the nearest class (ties: earliest row) among those that still hold
    after adding a person with SA values `sa` (D6; checked for 'ab'/'eab' only, the other models
    are monotone); (-1, inf) if none.  Dead rows have distance inf."""
    if model in ("kl", "el"):
        return _first_min(d)
    best, row = _INF, -1
    for r in np.argsort(d, kind="stable"):
        v = float(d[r])
        if v == _INF or (row >= 0 and v > best + _tie(v, best)):
            break
        if states[r].would_hold(sa):
            if row < 0:
                best, row = v, int(r)
            elif r < row:
                row = int(r)
    return row, best
