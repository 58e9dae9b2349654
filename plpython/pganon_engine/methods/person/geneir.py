"""GeneIR (Tong et al., as described in spec 002 §3.6): the taxonomy-based, bottom-up baseline
for identity-reserved models.

Why it is here: it is the paper's comparison point for DAnonyIR (information loss 1.86-3.04x,
far faster) and the method whose IR outputs show the "vulnerable" classes that motivate the EIR
models (Table 3).  Persons are grouped by their current generalized QI vector; every group that
meets the model leaves D with its current nodes (local recoding across rounds); then one QI is
generalized one level up its taxonomy for the persons still in D, and so on.  Leftover persons
join the closest class.

Input as for `danonyir.danonyir`, plus one taxonomy per QI: a `hierarchy.Hierarchy` or a plain
parent map {node: parent} (the root's parent None or absent).  Data values must be leaves: a
categorical value is matched to the leaf labelled with it (str() of a non-string value), a
numeric value to the leaf whose label reads as that number.

Decisions (spec §3.6 and §3.8 item 16):

- G1  Rounds: round 0 groups by the leaves; each later round generalizes one QI one step up
      (a node without a parent stays), for the persons still in D only.  Groups are visited in
      order of their first person (Id_num) and get class ids in the order they leave D.
- G2  Attribute choice: ``order`` (QI names) pins the first choices; then, with ``seed``, a
      uniform draw from ``random.Random(seed)`` among the QIs not yet at the root for every
      person in D; without ``seed`` the QI with the lowest level (ties: QI order).  A pinned
      QI already at the root is refused.
- G3  Stop: D empty, or every QI at the root, or - for the monotone models 'kl' and 'el' -
      D as a whole fails the model (then no group of D can ever meet it).  For 'ab'/'eab' the
      last test proves nothing (a subset can meet alpha/beta when D does not), so those run
      until the root.
- G4  Residual persons (Id_num order) join the class with the smallest Eq. 17 distance, the
      class generalized to the lowest common ancestors covering the person, losses in GLM
      (leaf sets / leaf intervals, `ir_metrics.node_cell`); ties: the earliest class.  For
      'ab'/'eab' only classes that still hold qualify.  GeneIR does not weigh suppression: a
      person is suppressed only when no class qualifies (or D* is empty).
- G5  Domains default to the taxonomy: numeric [min leaf, max leaf], categorical the leaves
      (overridable as in DAnonyIR).  Published cells are the node labels (`IrClass.labels`)
      and the sets/intervals they stand for (`IrClass.cells`, used for loss and queries).
- G6  Models: any of 'kl', 'ab', 'el', 'eab' (the paper runs 'kl' and 'ab').
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import numpy as np

from pganon_engine.core.errors import bad_data, invalid
from pganon_engine.hierarchy.tree import Hierarchy
from pganon_engine.metrics import ir_metrics
from pganon_engine.metrics.workload import NUMERIC, Domain
from pganon_engine.models import ir_models, ir_states

from .danonyir import _finish, _kinds, _monotone_fails, _persons, _qis, _seed, nearest_valid

__all__ = ["geneir", "taxonomy"]


def taxonomy(name, tax):
    """A Hierarchy from a Hierarchy or a parent map {node: parent}."""
    if isinstance(tax, Hierarchy):
        return tax
    if isinstance(tax, Mapping):
        return Hierarchy.from_edges(name, list(tax.items()))
    raise invalid(f"the taxonomy of {name!r} must be a Hierarchy or a mapping node -> parent, "
                  f"not {type(tax).__name__}")


def _leaves(h, kind, qi, values):
    """Leaf ids of the data values of one QI."""
    if kind == NUMERIC:
        by_num = {}
        for leaf in h.leaves:
            by_num[ir_metrics._leaf_number(h, h.labels[leaf])] = int(leaf)
        out, bad = [], []
        for v in values:
            leaf = by_num.get(ir_metrics.exact(v))
            if leaf is None:
                bad.append(v)
            out.append(leaf)
        if bad:
            raise bad_data(f"{len(set(bad))} value(s) of {qi!r} are not leaves of its taxonomy: "
                           + ", ".join(repr(x) for x in list(dict.fromkeys(bad))[:10]),
                           hint=f"add them as leaves of the taxonomy of {qi!r}")
        return np.array(out, dtype=np.int64)
    labels = [v if isinstance(v, str) else str(v) for v in values]
    return h.leaf_ids(labels)


def _domain(h, kind, qi, override):
    if kind == NUMERIC:
        nums = [ir_metrics._leaf_number(h, h.labels[x]) for x in h.leaves]
        lo, hi = (min(nums), max(nums)) if override is None else tuple(ir_metrics.exact(x) for x in override)
        if min(nums) < lo or max(nums) > hi:
            raise bad_data(f"the taxonomy of {qi!r} has leaves outside the domain [{lo}, {hi}]")
        return Domain.numeric(qi, lo=lo, hi=hi)
    leaves = [h.labels[x] for x in h.leaves]
    cats = leaves if override is None else list(dict.fromkeys(override))
    missing = sorted(set(leaves) - set(cats))
    if missing:
        raise bad_data(f"the domain of {qi!r} lacks taxonomy leaves {missing[:10]}")
    return Domain.categorical(qi, cats)


def geneir(persons, qis, taxonomies, model, params, *, kinds=None, domains=None, seed=None, order=(),
           trace=False, tick=None):
    """Anonymize persons with GeneIR (spec §3.6; G1-G6).

    persons, qis, kinds, model, params  as for `danonyir.danonyir`
    taxonomies  {QI: Hierarchy or parent map}, one per QI
    domains     {QI: (lo, hi) or [values]} overriding the taxonomy's domain (G5)
    seed        None: deterministic attribute choice (G2); an int: seeded random choice
    order       QI names pinned as the first generalization steps (G2), e.g. the paper's
                ['age', 'postcode', 'age', 'gender'] for Table 3
    trace       keep ('round', QI, level), ('class', class id, ids) and ('residual', id, class
                id or None, distance) steps in `IrRelease.trace`
    tick        called once per round and per residual person, so the database can notice a
                cancel (`Db.interruptible`); no effect on the result
    """
    qis = _qis(qis)
    p = ir_models.parse_params(model, params)
    seed = _seed(seed)
    ids, qrows, sas = _persons(persons, qis)
    kinds = _kinds(qrows, qis, kinds)
    taxonomies = dict(taxonomies or {})
    missing = [q for q in qis if q not in taxonomies]
    if missing:
        raise invalid(f"no taxonomy for QI(s) {missing}", hint="GeneIR needs one taxonomy per QI")
    extra = sorted(set(taxonomies) - set(qis))
    if extra:
        raise invalid(f"taxonomies given for unknown QI(s) {extra}", hint=f"QIs: {qis}")
    overrides = dict(domains or {})
    bad = sorted(set(overrides) - set(qis))
    if bad:
        raise invalid(f"domains given for unknown QI(s) {bad}", hint=f"QIs: {qis}")
    hs = [taxonomy(q, taxonomies[q]) for q in qis]
    doms = tuple(_domain(h, k, q, overrides.get(q)) for h, k, q in zip(hs, kinds, qis))
    order = list(order or ())
    for a in order:
        if a not in qis:
            raise invalid(f"order names {a!r}, which is not a QI", hint=f"QIs: {qis}")
    n, d = len(ids), len(qis)
    cur = np.stack([_leaves(h, k, q, [r[j] for r in qrows]) for j, (h, k, q) in enumerate(zip(hs, kinds, qis))],
                   axis=1)
    rng = random.Random(seed) if seed is not None else None
    log = [] if trace else None
    level = [0] * d
    left = np.arange(n)
    groups, nodes, used = [], [], []

    def sweep(left):
        keyed = {}
        for i in left.tolist():
            keyed.setdefault(tuple(cur[i].tolist()), []).append(i)
        out = set()
        for key, members in keyed.items():
            st = ir_states.make_state(model, p)
            ok = False
            for i in members:
                ok = st.add(sas[i])
            if ok:
                groups.append(members)
                nodes.append(list(key))
                out.update(members)
                if log is not None:
                    log.append(("class", len(groups), tuple(ids[i] for i in members)))
        return left[[i not in out for i in left.tolist()]] if out else left

    left = sweep(left)
    while left.size:
        if tick is not None:
            tick()
        if model in ("kl", "el") and _monotone_fails(model, p, [sas[i] for i in left.tolist()]):
            break
        open_ = [j for j in range(d) if (hs[j].parent[cur[left, j]] >= 0).any()]
        if not open_:
            break
        if order:
            a = order.pop(0)
            j = qis.index(a)
            if j not in open_:
                raise invalid(f"order generalizes {a!r} after it reached the root of its taxonomy",
                              hint="list each QI at most (taxonomy height - 1) times")
        elif rng is not None:
            j = rng.choice(open_)
        else:
            j = min(open_, key=lambda x: (level[x], x))
        level[j] += 1
        used.append(qis[j])
        par = hs[j].parent[cur[left, j]]
        cur[left, j] = np.where(par >= 0, par, cur[left, j])
        if log is not None:
            log.append(("round", qis[j], level[j]))
        left = sweep(left)

    # residuals (G4)
    glm = [np.array([float(ir_metrics.glm(ir_metrics.node_cell(h, v, k), dom)) for v in range(len(h))])
           for h, k, dom in zip(hs, kinds, doms)]
    leaf = np.stack([_leaves(h, k, q, [r[j] for r in qrows]) for j, (h, k, q) in enumerate(zip(hs, kinds, qis))],
                    axis=1) if n else np.zeros((0, d), dtype=np.int64)
    states = []
    for members in groups:
        st = ir_states.make_state(model, p)
        for i in members:
            st.add(sas[i])
        states.append(st)
    recs = [float(sum(len(sas[i]) for i in m)) for m in groups]
    for i in left.tolist():
        if tick is not None:
            tick()
        if not groups:
            if log is not None:
                log.append(("residual", ids[i], None, float("inf")))
            continue
        node_arr = np.array(nodes, dtype=np.int64)
        k_cls = sum(glm[j][node_arr[:, j]] for j in range(d))
        joint = np.stack([hs[j].lca_many(int(leaf[i, j]), node_arr[:, j]) for j in range(d)], axis=1)
        k_joint = sum(glm[j][joint[:, j]] for j in range(d))
        dist = len(sas[i]) * k_joint + np.array(recs) * (k_joint - k_cls)
        r, best = nearest_valid(states, dist, model, sas[i])
        if r >= 0:
            groups[r].append(i)
            nodes[r] = joint[r].tolist()
            recs[r] += len(sas[i])
            states[r].add(sas[i])
        if log is not None:
            log.append(("residual", ids[i], r + 1 if r >= 0 else None, best))

    cells = [tuple(ir_metrics.node_cell(h, v, k) for h, v, k in zip(hs, nd, kinds)) for nd in nodes]
    labels = [tuple(h.labels[v] for h, v in zip(hs, nd)) for nd in nodes]
    unsat = _monotone_fails(model, p, sas)
    tie_rule = ("attribute: " + ("lowest level, then QI order" if seed is None else "seeded uniform draw")
                + "; groups and residual targets: first person / earliest class")
    return _finish("geneir", model, p, qis, kinds, doms, ids, qrows, sas, groups, group_cells=cells,
                   group_labels=labels, seed=seed, order=tuple(used), unsatisfiable=unsat,
                   tie_rule=tie_rule, trace=log or [])

