"""Properties of pganon_engine.models.fcorr, the fingerprint-correlation auditor (spec
004-ck-anonymization.md, sections 1.6, 2.6-2.8), on random record-level releases: no shared
delta value means no breach, a copied record makes an ffcorr breach, results do not depend on
row, bucket or label order, and the vulnerable records and PriRisk keep their invariants.
"""

import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pganon_engine.models import fcorr as fc

from fcorr_helpers import build_st


SAS = ["d", "s1", "s2", "s3"]
PLAIN = fc.sa_model(SAS, "d")  # no dependency map: zeta is empty (strict semantics)


@st.composite
def releases(draw, delta_private=False, counts=False):
    """A random record-level release: source records, buckets, classes, GT rows and ST."""
    n = draw(st.integers(2, 24))
    nb = draw(st.integers(1, min(n, 6)))
    bucket = draw(st.permutations([i % nb for i in range(n)]))
    ecs = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    src = {}
    for r in range(n):
        d = draw(st.integers(0, 4))
        src[f"r{r}"] = {"d": (bucket[r], d) if delta_private else d,
                        **{a: draw(st.integers(0, 3)) for a in SAS[1:]}}
    gender = draw(st.lists(st.sampled_from("FM*"), min_size=n, max_size=n))
    gt = [(f"r{r}", (gender[r], ecs[r]), bucket[r], ecs[r]) for r in range(n)]
    return gt, build_st(gt, src, counts), src


PROP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROP
@given(releases(delta_private=True))
def test_no_shared_delta_value_no_pair_no_breach(rel):
    gt, st_, src = rel
    a = fc.audit(gt, st_, PLAIN, source=src)
    assert a.pairs == ()
    assert (a.summary["n_breaches"], a.summary["n_vulnerable_covered"], a.summary["n_vulnerable_correct"]) == (0, 0, 0)
    assert a.summary["strict_ok"] and a.summary["relaxed_ok"]


@PROP
@given(st.integers(2, 5), st.integers(1, 4), st.data())
def test_copying_a_record_into_a_disjoint_bucket_makes_an_ffcorr_breach(nb, per, data):
    # Values are tagged with their bucket, so no two buckets share any value; then one record
    # of bucket i is copied into bucket j: every SA intersection of (i, j) becomes {its value}.
    src, gt = {}, []
    for b in range(nb):
        for k in range(per):
            rid = f"b{b}r{k}"
            src[rid] = {a: (b, data.draw(st.integers(0, 2))) for a in SAS}
            gt.append((rid, ("*",), b))
    assert fc.audit(gt, build_st(gt, src), PLAIN, source=src).summary["n_breaches"] == 0
    i, j = sorted(data.draw(st.lists(st.integers(0, nb - 1), min_size=2, max_size=2, unique=True)))
    copied = f"b{i}r{data.draw(st.integers(0, per - 1))}"
    src["new"] = dict(src[copied])
    gt.append(("new", ("*",), j))
    a = fc.audit(gt, build_st(gt, src), PLAIN, source=src)
    assert [(f.i, f.j, f.kind) for f in a.pairs] == [(i, j, "ffcorr")]
    assert a.pairs[0].singletons == {s: src[copied][s] for s in SAS[1:]}
    assert not a.pairs[0].eq4_ok and not a.pairs[0].eq5_ok
    same_delta = {r for r in src if r.startswith(f"b{i}r") and src[r]["d"] == src[copied]["d"]}
    # Covered: every record of bucket i or j with the copied delta value; correct: at least the
    # copy and its original, whose true values are exactly the disclosed ones.
    assert a.vulnerability.covered == same_delta | {"new"}
    assert {copied, "new"} <= a.vulnerability.correct <= a.vulnerability.covered


def _canon(a):
    return (a.summary, a.pairs, a.vulnerability, a.risk)


@PROP
@given(releases(), st.randoms(use_true_random=False))
def test_results_independent_of_row_and_bucket_order(rel, rnd):
    gt, st_, src = rel
    base = fc.audit(gt, st_, PLAIN, source=src)
    gt2 = list(gt)
    rnd.shuffle(gt2)
    bids = list(st_)
    rnd.shuffle(bids)
    st2 = {b: {a: set(rnd.sample(sorted(st_[b][a]), len(st_[b][a]))) for a in reversed(SAS)} for b in bids}
    keys = list(src)
    rnd.shuffle(keys)
    src2 = {k: src[k] for k in keys}
    assert _canon(fc.audit(gt2, st2, PLAIN, source=src2)) == _canon(base)


@PROP
@given(releases(), st.sampled_from([PLAIN, fc.sa_model(SAS, "d", {"d": ["s1", "s2"], "s1": ["d"]})]))
def test_invariants_of_any_release(rel, model):
    gt, st_, src = rel
    a = fc.audit(gt, st_, model, source=src)
    v = a.vulnerability
    assert v.correct <= v.covered
    for f in a.pairs:
        assert f.i != f.j and f.shared
        assert st_[f.i]["d"] & st_[f.j]["d"] == f.shared
        assert (not f.eq4_ok) or f.eq5_ok  # strict implies relaxed
        if f.breach:
            assert not f.eq4_ok
    # Every vulnerable record carries a disclosed delta value in a breached pair's bucket.
    home = {rid: b for rid, _, b, _ in gt}
    for rid in v.covered:
        assert any(src[rid]["d"] == d.delta_value and home[rid] in (d.i, d.j) for d in v.disclosures)
    # Spec 1.6: record-level links never give PriRisk above 1/|E|; one-to-one gives equality.
    for g in a.risk.by_ec.values():
        assert g.within_bound
        if all(sum(1 for r in gt if r[2] == b) == sum(1 for r in gt if r[2] == b and r[3] == g.ec)
               for b in g.buckets):
            assert g.ratio == g.bound


@PROP
@given(releases(counts=True))
def test_covered_count_from_counts_equals_covered_from_source(rel):
    gt, st_, src = rel
    with_source = fc.vulnerable_records(gt, st_, PLAIN, source=src)
    counts_only = fc.vulnerable_records(gt, st_, PLAIN)
    assert counts_only.n_covered == len(with_source.covered)


@PROP
@given(releases(), st.randoms(use_true_random=False))
def test_relabelling_buckets_keeps_the_counts(rel, rnd):
    gt, st_, src = rel
    new = list(range(100, 100 + len(st_)))
    rnd.shuffle(new)
    ren = dict(zip(sorted(st_), new))
    gt2 = [(rid, qi, ren[b], ec) for rid, qi, b, ec in gt]
    st2 = {ren[b]: cells for b, cells in st_.items()}
    s1 = fc.audit(gt, st_, PLAIN, source=src).summary
    s2 = fc.audit(gt2, st2, PLAIN, source=src).summary
    assert s1 == s2


def test_hypothesis_generator_produces_breaches_sometimes():
    # Guard against vacuous properties: the generator must hit linkable pairs and breaches.
    rnd = random.Random(4)
    seen = Counter()
    for _ in range(200):
        n, nb = rnd.randint(4, 24), rnd.randint(2, 6)
        src = {f"r{r}": {a: rnd.randint(0, 3) for a in SAS} for r in range(n)}
        gt = [(f"r{r}", ("*",), r % nb, 0) for r in range(n)]
        s = fc.audit(gt, build_st(gt, src), PLAIN, source=src).summary
        seen["pairs"] += s["n_linkable_pairs"] > 0
        seen["breach"] += s["n_breaches"] > 0
    assert seen["pairs"] > 50 and seen["breach"] > 10
