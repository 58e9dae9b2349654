"""QI grouping (Function 4) for (c,k)-anonymization and the (p,k) baseline: k-anonymous QI groups
formed from the QI values alone, independent of the fingerprint buckets.  Apart from the
planners because it is a step of its own (a callable can replace it) and `pk` reuses its sort
order for batches.

Decision (numbered with those of `ck`; spec section 7 items in brackets):

- A12 QI grouping 'sort_cut' (Function 4, spec 2.6 step 6) [7.10]: sort by the numeric QIs,
      then the categorical ones (each in the given order), ties in T order; cut k consecutive
      records per group; when fewer than 2k remain they form the last group.  A callable can
      replace it (e.g. to inject Table 5's partition); its group ids are renumbered 1.. in order
      of first appearance and each group must have >= k records.
"""

from __future__ import annotations

from collections import Counter

from . import ck_input

__all__ = ["qi_groups", "QI_GROUPINGS", "sort_key"]


def sort_key(qi_rows, kinds, order):
    cols = [i for i, x in enumerate(kinds) if x == "numeric"]
    cols += [i for i, x in enumerate(kinds) if x != "numeric"]
    pos = [0] * len(order)
    for p, r in enumerate(order):
        pos[r] = p
    try:
        return sorted(range(len(qi_rows)), key=lambda r: (tuple(qi_rows[r][i] for i in cols), pos[r]))
    except TypeError:
        raise ValueError("a QI column holds values of mixed types that cannot be ordered; "
                         "encode each QI with one type") from None


def _sort_cut(qi_rows, k, kinds, order):
    idx = sort_key(qi_rows, kinds, order)
    n = len(idx)
    out = [0] * n
    g, start = 0, 0
    while start < n:
        g += 1
        end = n if n - start < 2 * k else start + k
        for r in idx[start:end]:
            out[r] = g
        start = end
    return out


QI_GROUPINGS = {"sort_cut": _sort_cut}


def qi_groups(qi_rows, k, method="sort_cut", kinds=None, seed=None):
    """k-anonymous QI groups, formed from the QI values alone (A12).

    qi_rows  one tuple of QI values per record
    method   a name in QI_GROUPINGS ('sort_cut', the paper's Function 4) or a callable
             ``f(qi_rows, k) -> group id per record``
    kinds    'numeric' / 'categorical' per QI (default: numeric when every value is a number)
    Returns a list with a group id (1..G) per record.  sort_cut needs only the distinct QI
    vectors with their counts; this list form is for the planner.
    """
    k = ck_input.integer(k, "k", 2)
    qi_rows = [tuple(r) for r in qi_rows]
    n = len(qi_rows)
    if k > n:
        raise ValueError(f"k = {k} is larger than the number of records ({n}); lower k")
    d = len(qi_rows[0])
    if any(len(r) != d for r in qi_rows):
        raise ValueError("every QI row must have the same number of values")
    order = ck_input.t_order(n, seed)
    if callable(method):
        raw = list(method(qi_rows, k))
        if len(raw) != n:
            raise ValueError(f"the QI grouping returned {len(raw)} group ids for {n} records; "
                             f"it must return one per record")
        renum = {}
        for r in order:
            renum.setdefault(raw[r], len(renum) + 1)
        out = [renum[g] for g in raw]
    elif method in QI_GROUPINGS:
        out = QI_GROUPINGS[method](qi_rows, k, ck_input.kinds(qi_rows, d, kinds), order)
    else:
        raise ValueError(f"unknown QI grouping {method!r}; expected one of {sorted(QI_GROUPINGS)} "
                         f"or a callable")
    small = sorted(g for g, c in Counter(out).items() if c < k)
    if small:
        raise ValueError(f"QI group(s) {small} have fewer than k = {k} records; a QI grouping must "
                         f"give every group >= k records")
    return out
