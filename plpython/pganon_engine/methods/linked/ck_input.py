"""The input both linked planners take (`ck.ck_plan`, `pk.pk_plan`) and the helpers they share
with QI grouping and the GT cells: parameter and column checks, one record per row as ids, QI
values and SA values, T order, QI kinds, delta and zeta, and `members` (a plan's label -> record
ids).  Kept apart so that every piece of the (c,k) and (p,k) code checks its input one way.

Decision (numbered with those of `ck`; spec section 7 items in brackets):

- A16 Ties follow T order by default.  With ``seed`` (an int) T order is replaced by a
      permutation from ``random.Random(seed).shuffle``; that one permutation randomizes every
      T-order tie (category packing ties, CreateFB picks, swap order, QI sort ties), so the
      same seed gives the same plan.
"""

from __future__ import annotations

import numbers
import operator
import random
from collections import Counter
from collections.abc import Mapping

from .ck_categories import Weights

__all__ = ["integer", "columns", "records", "t_order", "kinds", "delta_zeta", "members"]


def integer(x, what, minimum):
    if isinstance(x, bool):
        raise ValueError(f"{what} must be an integer, got {x!r}")
    try:
        x = operator.index(x)
    except TypeError:
        raise ValueError(f"{what} must be an integer, got {x!r}") from None
    if x < minimum:
        raise ValueError(f"{what} = {x} is invalid; {what} must be >= {minimum}")
    return x


def columns(qis, sas):
    for name, cols, empty_ok in (("qis", qis, True), ("sas", sas, False)):
        if cols is None or isinstance(cols, str):
            raise ValueError(f"{name} must be a list of column names, not the string {cols!r}")
        if not empty_ok and not cols:
            raise ValueError(f"{name} must name at least one column")
        dup = sorted({c for c in cols if list(cols).count(c) > 1})
        if dup:
            raise ValueError(f"column(s) {dup} listed twice in {name}; list each once")
    both = sorted(set(qis) & set(sas))
    if both:
        raise ValueError(f"column(s) {both} are both quasi-identifier and sensitive; "
                         f"declare each column in one role")
    return list(qis), list(sas)


def records(records, qis, sas, key):
    """(ids, qi_rows, sa_rows).  A record is a mapping with the QI and SA columns (its id is
    record[key], or its position when key is None) or a triple (id, QI values, SA values)."""
    ids, qrows, srows = [], [], []
    for i, r in enumerate(records):
        if isinstance(r, Mapping):
            try:
                rid = i if key is None else r[key]
                q = tuple(r[c] for c in qis)
                s = tuple(r[c] for c in sas)
            except KeyError as e:
                raise ValueError(f"record {i} has no column {e.args[0]!r}; every record needs "
                                 f"the key, QI and SA columns") from None
        else:
            try:
                rid, q, s = r
                q, s = tuple(q), tuple(s)
            except (TypeError, ValueError):
                raise ValueError(f"record {i} must be a mapping or a triple (id, QI values, "
                                 f"SA values), got {r!r}") from None
            if len(q) != len(qis) or len(s) != len(sas):
                raise ValueError(f"record {i} has {len(q)} QI and {len(s)} SA values; expected "
                                 f"{len(qis)} and {len(sas)} (in the order of qis and sas)")
        for cols, vals in ((qis, q), (sas, s)):
            for c, v in zip(cols, vals):
                if v is None:
                    raise ValueError(f"record {rid!r} has NULL in {c!r}; remove or impute NULLs "
                                     f"before planning")
        ids.append(rid)
        qrows.append(q)
        srows.append(s)
    if not ids:
        raise ValueError("no records to plan")
    if len(set(ids)) != len(ids):
        dup = next(x for x, n in Counter(ids).items() if n > 1)
        raise ValueError(f"record id {dup!r} occurs more than once; ids must be unique")
    return ids, qrows, srows


def t_order(n, seed):
    """T order (A16): input order, or a seeded permutation of it."""
    order = list(range(n))
    if seed is not None:
        random.Random(integer(seed, "seed", -(2 ** 63))).shuffle(order)
    return order


def kinds(qi_rows, d, kinds):
    if kinds is None:
        return ["numeric" if all(isinstance(r[i], numbers.Real) and not isinstance(r[i], bool)
                                 for r in qi_rows) else "categorical" for i in range(d)]
    kinds = list(kinds)
    if len(kinds) != d or any(x not in ("numeric", "categorical") for x in kinds):
        raise ValueError(f"kinds must list 'numeric' or 'categorical' for each of the {d} QIs, "
                         f"got {kinds!r}")
    return kinds


def delta_zeta(delta, zeta, sas):
    if isinstance(delta, Weights):
        if zeta is None:
            zeta = delta.zeta
        delta = delta.delta
    if delta not in sas:
        raise ValueError(f"delta {delta!r} is not one of the sensitive attributes {sas}; "
                         f"choose it with weights(...) or name an SA")
    zeta = () if zeta is None else zeta
    if isinstance(zeta, str):
        raise ValueError(f"zeta must be a list of SA names, not the string {zeta!r}")
    bad = sorted(set(zeta) - set(sas))
    if bad:
        raise ValueError(f"zeta names {bad}, which are not sensitive attributes {sas}")
    if delta in zeta:
        raise ValueError(f"zeta must not contain delta {delta!r}")
    return delta, frozenset(zeta)


def members(ids, labels):
    out = {}
    for rid, g in zip(ids, labels):
        out.setdefault(g, []).append(rid)
    return dict(sorted(out.items()))
