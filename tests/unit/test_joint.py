"""The reconstructed joint distribution of a release (pganon_engine.metrics.joint): the masses against a
literal enumeration of the cell semantics on random releases, KL and confidence at their known
extremes, and the shared workload's cells."""

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pganon_engine.metrics import estimate, joint, workload
from pganon_engine.metrics.ncp import ncp_percent

NAMES = ["age", "sex", "disease", "drug"]
KINDS = ["numeric", "categorical", "categorical", "categorical"]
AGES = [20, 25, 30, 35.5]
SEXES = ["F", "M"]
DISEASES = ["flu", "hiv", "cold"]
DRUGS = ["a", "b"]
DOMAIN = [AGES, SEXES, DISEASES, DRUGS]


def _original(records):
    c = Counter(records)
    rows = sorted(c, key=repr)
    return joint.Original(NAMES, KINDS, rows, [c[r] for r in rows])


def _literal_prob(cell, value, domain, numeric):
    """P(value | cell) read straight from the module docstring's cell semantics."""
    if cell == "*":
        return 1 / len(domain)
    if isinstance(cell, dict):
        tot = sum(m for v, m in cell.items() if v in domain)
        return cell.get(value, 0) / tot if tot else 0.0
    if numeric and isinstance(cell, tuple):
        inside = [v for v in domain if cell[0] <= v <= cell[1]]
        return (1 / len(inside)) if value in inside else 0.0
    if isinstance(cell, (set, frozenset, list)):
        present = [v for v in set(cell) if v in domain]
        return (1 / len(present)) if value in present else 0.0
    return 1.0 if cell == value else 0.0


def _literal_masses(orig, rel, x):
    full = qi = 0.0
    per = [0.0] * (len(NAMES) - rel.n_qis)
    for cells, w in zip(rel.cells, rel.weights):
        f = [_literal_prob(c, v, DOMAIN_OBS[i], KINDS[i] == "numeric") for i, (c, v) in enumerate(zip(cells, x))]
        fq = w * math.prod(f[:rel.n_qis])
        qi += fq
        full += fq * math.prod(f[rel.n_qis:])
        for j in range(len(per)):
            per[j] += fq * f[rel.n_qis + j]
    return full, qi, per


DOMAIN_OBS = None


def _cell(draw, i):
    dom = DOMAIN[i]
    kind = draw(st.sampled_from(["exact", "set", "multiset", "star"] + (["range"] if KINDS[i] == "numeric" else [])))
    if kind == "exact":
        return draw(st.sampled_from(dom))
    if kind == "star":
        return "*"
    if kind == "range":
        a, b = sorted(draw(st.lists(st.sampled_from(dom), min_size=2, max_size=2)))
        return (a, b)
    vals = draw(st.lists(st.sampled_from(dom), min_size=1, max_size=len(dom), unique=True))
    if kind == "set":
        return frozenset(vals)
    return {v: draw(st.integers(1, 4)) for v in vals}


@st.composite
def cases(draw):
    records = draw(st.lists(st.tuples(*[st.sampled_from(d) for d in DOMAIN]), min_size=1, max_size=25))
    n_qis = draw(st.integers(0, 2))
    classes = []
    for _ in range(draw(st.integers(1, 6))):
        classes.append((tuple(_cell(draw, i) for i in range(4)), draw(st.sampled_from([1, 2, 0.5, 3]))))
    return records, n_qis, classes


@settings(max_examples=150, deadline=None)
@given(cases())
def test_masses_equal_a_literal_enumeration(case):
    global DOMAIN_OBS
    records, n_qis, classes = case
    orig = _original(records)
    DOMAIN_OBS = [sorted({r[i] for r in records}) for i in range(4)]
    rel = joint.Release(NAMES, KINDS, n_qis)
    for cells, w in classes:
        rel.add(cells, w)
    ms = joint.masses(orig, rel)
    rows = sorted(Counter(records), key=repr)
    for t, x in enumerate(rows):
        full, qi, per = _literal_masses(orig, rel, x)
        assert ms.full[t] == pytest.approx(full, abs=1e-9)
        assert ms.qi[t] == pytest.approx(qi, abs=1e-9)
        for j, v in enumerate(per):
            assert ms.per_sa[j][t] == pytest.approx(v, abs=1e-9)


def test_identity_release_has_no_divergence_and_full_confidence():
    records = [(20, "F", "flu", "a"), (20, "F", "flu", "a"), (25, "M", "hiv", "b"), (35.5, "F", "cold", "a")]
    orig = _original(records)
    rel = joint.Release(NAMES, KINDS, 2)
    for x, n in Counter(records).items():
        rel.add(x, n)
    ms = joint.masses(orig, rel)
    kl, covers = joint.kl_divergence(orig, ms)
    assert covers and kl == pytest.approx(0.0, abs=1e-12)
    conf = joint.confidence(orig, ms)
    assert conf["disease"]["mean"] == pytest.approx(1.0) and conf["(all SAs)"]["max"] == pytest.approx(1.0)


def test_fully_suppressed_release_is_the_uniform_product():
    records = [(20, "F", "flu", "a"), (25, "M", "hiv", "b"), (25, "M", "cold", "b"), (30, "F", "flu", "a")]
    orig = _original(records)
    rel = joint.Release(NAMES, KINDS, 2, suppressed=len(records)).finish()
    ms = joint.masses(orig, rel)
    kl, covers = joint.kl_divergence(orig, ms)
    uniform = 1 / (3 * 2 * 3 * 2)  # observed values: 3 ages, 2 sexes, 3 diseases, 2 drugs
    assert covers and kl == pytest.approx(sum(0.25 * math.log(0.25 / uniform) for _ in records))
    conf = joint.confidence(orig, ms)
    assert conf["disease"]["mean"] == pytest.approx(1 / 3) and conf["drug"]["max"] == pytest.approx(1 / 2)
    assert conf["disease"]["baseline_mean"] == pytest.approx((2 * 0.5 + 0.25 + 0.25) / 4)


def test_a_release_that_misses_a_record_has_infinite_divergence():
    records = [(20, "F", "flu", "a"), (25, "M", "hiv", "b")]
    orig = _original(records)
    rel = joint.Release(NAMES, KINDS, 2)
    rel.add((20, "F", "flu", "a"), 2)
    kl, covers = joint.kl_divergence(orig, joint.masses(orig, rel))
    assert kl is None and not covers


def test_discernibility_and_size_distribution():
    assert joint.discernibility([2, 3, 3], suppressed=1, n=9) == 4 + 9 + 9 + 9
    bands = joint.size_distribution([2, 3, 3, 12])
    assert bands == [{"lo": 2, "hi": 2, "classes": 1, "records": 2}, {"lo": 3, "hi": 3, "classes": 2, "records": 6},
                     {"lo": 10, "hi": 19, "classes": 1, "records": 12}]


def _observed(cell, obs):
    """Does a cell cover an observed value (every cell of a real release of the records does)?"""
    if isinstance(cell, tuple):
        return any(cell[0] <= v <= cell[1] for v in obs)
    if isinstance(cell, (dict, frozenset)):
        return bool(set(cell) & obs)
    return cell == "*" or cell in obs


@settings(max_examples=80, deadline=None)
@given(cases(), st.integers(0, 10**6))
def test_workload_cells_estimate_like_the_literal_cells(case, seed):
    """Splitting numeric multisets and widening numeric sets to [min, max] gives the estimator's
    own reading of the cells (J5); categorical sets keep their observed values."""
    records, n_qis, classes = case
    orig = _original(records)
    expand = np.repeat(np.arange(len(orig.counts)), orig.counts.astype(int))
    doms = joint.workload_domains(orig, expand)
    obs = set(doms[2].categories)
    rng = np.random.default_rng(seed)
    preds = []
    for _ in range(5):
        lo, hi = sorted(rng.choice(AGES, 2))
        preds.append({"age": (float(lo), float(hi)), "disease": [v for v in rng.choice(DISEASES, 2, replace=False) if v in obs]})
    wl = workload.queries_from_predicates(doms, preds)
    rel = joint.Release(NAMES, KINDS, n_qis)
    observed = [{float(v) for v in doms[0].values}] + [set(d.categories) for d in doms[1:]]
    for cells, w in classes:
        if isinstance(cells[0], dict):
            cells = ({v: m for v, m in cells[0].items() if v in observed[0]},) + cells[1:]
        if any(not _observed(c, observed[i]) for i, c in enumerate(cells)):
            continue  # a categorical cell without an observed value: no release of these records has it
        rel.add(cells, w)
    if not rel.cells:
        return
    cells, weights = joint.workload_cells(orig, rel)
    est = estimate.estimated_counts(wl, cells, weights)
    integer = doms[0].integer

    def frac(a, b, lo, hi, integer):
        return float(estimate._numeric_fraction(np.asarray(a), np.asarray(b), np.asarray(lo), np.asarray(hi), integer))
    for qn, p in enumerate(preds):
        want = 0.0
        a, b = p["age"]
        for c, w in zip(rel.cells, rel.weights):
            age, dis = c[0], c[2]
            if isinstance(age, dict):
                fa = sum(m for v, m in age.items() if a <= v <= b) / sum(age.values())
            elif isinstance(age, frozenset):
                fa = frac(a, b, min(age), max(age), integer)
            elif age == "*":
                fa = frac(a, b, doms[0].lo, doms[0].hi, integer)
            elif isinstance(age, tuple):
                fa = frac(a, b, age[0], age[1], integer)
            else:
                fa = float(a <= age <= b)
            if dis == "*":
                fd = len(p["disease"]) / len(obs)
            elif isinstance(dis, dict):
                kept = {v: m for v, m in dis.items() if v in obs}
                fd = sum(m for v, m in kept.items() if v in p["disease"]) / sum(kept.values())
            elif isinstance(dis, frozenset):
                kept = dis & obs
                fd = len(kept & set(p["disease"])) / len(kept)
            else:
                fd = float(dis in p["disease"])
            want += w * float(fa) * fd
        assert est[qn] == pytest.approx(want, abs=1e-9)


def test_ncp_cells_keep_a_numeric_multiset_as_its_range():
    """Rating publishes an age group {21, 28, 29}: the estimator may split it into exact values
    (linear), NCP must charge its span."""
    records = [(20, "F", "flu", "a"), (25, "M", "hiv", "b"), (30, "F", "flu", "a"), (35.5, "M", "cold", "b")]
    orig = _original(records)
    rel = joint.Release(NAMES, KINDS, 2)
    rel.add(({20: 1, 30: 1}, {"F": 2}, "flu", "a"), 2)
    rel.add(({25: 1, 35.5: 1}, {"M": 2}, {"hiv": 1, "cold": 1}, "b"), 2)
    split, _ = joint.workload_cells(orig, rel)
    whole, _ = joint.workload_cells(orig, rel, split=False)
    assert len(split) == 4 and len(whole) == 2
    assert [c[0] for c in whole] == [(20.0, 30.0), (25.0, 35.5)]
    expand = np.repeat(np.arange(len(orig.counts)), orig.counts.astype(int))
    doms = joint.workload_domains(orig, expand)
    ncp = ncp_percent([c[:2] for c in whole], [2, 2], doms[:2])
    assert ncp == pytest.approx(100 * (2 * 10 / 15.5 + 2 * 10.5 / 15.5) / (4 * 2))


@settings(max_examples=40, deadline=None)
@given(cases(), st.integers(0, 10**6))
def test_projected_classes_estimate_the_shared_workload_like_the_whole_release(case, seed):
    """Merging the classes that agree on the QIs and SA j leaves SA j's queries' estimates as
    they were: the other SAs are never constrained by them."""
    records, n_qis, classes = case
    if n_qis == 0 or len(set(records)) < 2:
        return
    orig = _original(records)
    expand = np.repeat(np.arange(len(orig.counts)), orig.counts.astype(int))
    doms = joint.workload_domains(orig, expand)
    observed = [{float(v) for v in doms[0].values}] + [set(d.categories) for d in doms[1:]]
    rel = joint.Release(NAMES, KINDS, n_qis)
    for cells, w in classes:
        if isinstance(cells[0], dict):
            cells = ({v: m for v, m in cells[0].items() if v in observed[0]},) + cells[1:]
        if all(_observed(c, observed[i]) for i, c in enumerate(cells)):
            rel.add(cells, w)
    if not rel.cells:
        return
    cells, weights = joint.workload_cells(orig, rel)
    try:
        wls = joint.shared_workload(doms, n_qis, 0.5, 30, seed, qd=1)
    except Exception as exc:  # a tiny table may leave no query with a record
        assert "found no record" in str(exc)
        return
    whole = estimate.prepare(doms, cells, weights)
    projected = {j: estimate.prepare(doms, *joint.project(cells, weights, n_qis, j)) for j, _ in wls}
    for j, wl in wls:
        assert np.allclose(estimate.estimated_counts(wl, whole), estimate.estimated_counts(wl, projected[j]))
    assert joint.are(wls, lambda j: whole) == pytest.approx(joint.are(wls, projected.get))
