"""The (p,k)-angelization baseline of Khan et al. (2020) (spec 004-ck-anonymization.md, section
2.7): batches of >= k records covering >= p categories of CtgT, each batch also its QI group
(one-to-one linking), published as pk_angelization next to (c,k) for comparison.  A method of its
own, so a module of its own; it shares the input checks (`ck_input`), the category table
(`ck_categories`) and the QI sort order (`ck_grouping`) with (c,k).

Decision (numbered with those of `ck`; spec section 7 items in brackets):

- A15 (p,k) batches (spec 2.7 proposal): records sorted as in A12; a batch takes the next k
      records, then the first remaining record of a missing category until it has p
      categories; when fewer than 2k records remain they form the last batch; a last batch
      without p categories (or k records) joins the previous batch.  No c_f, no fcorr check;
      the QI group of a record is its batch (one-to-one).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from . import ck_input
from .ck_categories import CategoryTable, categories
from .ck_grouping import sort_key

__all__ = ["PkPlan", "pk_plan"]


@dataclass
class PkPlan:
    """A (p,k) plan: per record (input order) its batch id, which is also its QI group id
    (one-to-one), and its CtgT category."""

    ids: list
    batch: list
    group: list
    category: list
    categories: CategoryTable
    delta: str
    n_batches: int

    def batches(self):
        """Batch id -> record ids (input order)."""
        return ck_input.members(self.ids, self.batch)


def pk_plan(records, qis, sas, p, k, delta, *, key=None, kinds=None, seed=None):
    """Plan a (p,k)-angelized release (A15): batches of >= k records covering >= p categories
    of CtgT (built as for (c,k), A4), grouped by QI locality; GT group = batch.

    records, qis, sas, key, kinds, seed  as for `ck_plan`; delta an SA name or a `Weights`
    p  minimum number of categories per batch (>= 1, <= number of categories)
    k  minimum batch size (>= 2)
    """
    qis, sas = ck_input.columns(qis, sas)
    p = ck_input.integer(p, "p", 1)
    k = ck_input.integer(k, "k", 2)
    delta, _ = ck_input.delta_zeta(delta, None, sas)
    ids, qrows, srows = ck_input.records(records, qis, sas, key)
    n = len(ids)
    if k > n:
        raise ValueError(f"k = {k} is larger than the number of records ({n}); lower k")
    order = ck_input.t_order(n, seed)
    d = sas.index(delta)
    dvals = [s[d] for s in srows]
    ctg = categories(order, dvals, k)
    if p > len(ctg):
        raise ValueError(f"p = {p} but the category table has only {len(ctg)} categories; "
                         f"lower p, or lower k (categories are packed until they hold k records)")
    cat = [ctg.of_value[v] for v in dvals]
    idx = sort_key(qrows, ck_input.kinds(qrows, len(qis), kinds), order) if qis else list(order)
    pos = [0] * n
    for i, r in enumerate(idx):
        pos[r] = i
    removed = bytearray(n)
    by_cat = {}
    for r in idx:
        by_cat.setdefault(cat[r], deque()).append(r)

    def head(dq):
        while dq and removed[dq[0]]:
            dq.popleft()
        return dq[0] if dq else None

    batches, left, ptr = [], n, 0
    while left:
        while removed[idx[ptr]]:
            ptr += 1
        alive = (r for r in idx[ptr:] if not removed[r])
        if left < 2 * k:
            b = list(alive)
        else:
            b = [next(alive) for _ in range(k)]
            cats = {cat[r] for r in b}
            while len(cats) < p:
                best = None
                for cc, dq in by_cat.items():
                    if cc not in cats:
                        h = head(dq)
                        if h is not None and (best is None or pos[h] < pos[best]):
                            best = h
                if best is None:
                    break
                b.append(best)
                cats.add(cat[best])
            if len(cats) < p:
                b = [r for r in idx[ptr:] if not removed[r]]
        if batches and (len(b) < k or len({cat[r] for r in b}) < p):
            batches[-1].extend(b)
        else:
            batches.append(b)
        for r in b:
            removed[r] = 1
        left -= len(b)
    batch = [0] * n
    for i, b in enumerate(batches, start=1):
        for r in b:
            batch[r] = i
    return PkPlan(ids=ids, batch=batch, group=list(batch), category=cat, categories=ctg,
                  delta=delta, n_batches=len(batches))
