"""Unit tests for pganon_engine.models.fcorr_fast, the vectorized fingerprint-correlation audit:
it must give the reference's (`fcorr`) summary, listed pairs, vulnerable records and PriRisk,
on the paper's tables (spec 004-ck-anonymization.md section 3, fixtures in `fcorr_helpers`) and
on random releases with wide value domains (several mask words), and tick once per block.
"""

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pganon_engine.models import fcorr as fc
from pganon_engine.models import fcorr_fast

from fcorr_helpers import GT2, GT5, MODEL, SOURCE, ST3, ST6, ST_COLS, T1, build_st, members


# --------------------------------------------------------------------------------------------
# The vectorized audit (fcorr_fast) against the reference
# --------------------------------------------------------------------------------------------


def _same_as_reference(gt, st_, model, source=None, sizes=None, detail=50, block=fcorr_fast.BLOCK):
    """fcorr_fast.audit gives the reference's summary, listed pairs, vulnerable records and
    PriRisk; returns the reference audit."""
    ref = fc.audit(gt, st_, model, source=source, sizes=sizes)
    fast = fcorr_fast.audit(gt, st_, model, source=source, sizes=sizes, detail=detail, block=block)
    assert fast.summary == ref.summary
    assert fast.pairs == tuple(f for f in ref.pairs if f.singletons)[:detail]
    rv, fv = ref.vulnerability, fast.vulnerability
    assert (fv.covered, fv.correct, fv.n_covered, fv.n_correct) == (rv.covered, rv.correct, rv.n_covered, rv.n_correct)
    assert fast.risk == ref.risk
    return ref


@pytest.mark.parametrize("gt, st_, block", [(GT2, ST3, fcorr_fast.BLOCK), (GT2, ST3, 1),
                                            (GT5, ST6, fcorr_fast.BLOCK), (GT5, ST6, 3)])
def test_fast_audit_equals_reference_on_the_papers_tables(gt, st_, block):
    ref = _same_as_reference(gt, st_, MODEL, source=SOURCE, block=block)
    assert ref.summary["n_linkable_pairs"] in (1, 3)  # Table 6 and Table 3 (claim 5)
    _same_as_reference(gt, st_, MODEL, block=block)  # no source: counts unknown


def test_fast_audit_table3_lists_the_breaching_pairs_and_counts_disclosures():
    fast = fcorr_fast.audit(GT2, ST3, MODEL, source=SOURCE, detail=2)
    assert [(f.i, f.j) for f in fast.pairs] == [(1, 3), (2, 3)]   # (2, 4) is the third, not listed
    assert fast.summary["n_disclosures"] == 4 and fast.vulnerability.disclosures is None
    assert fast.vulnerability.correct == {"p1", "p2", "p4", "p9"}


def test_fast_audit_covered_count_from_st_counts_without_source():
    counted = {b: {a: dict(Counter(T1[p][a] for p in pids)) for a in ST_COLS}
               for b, pids in members(GT2).items()}
    ref = _same_as_reference(GT2, counted, MODEL)
    assert ref.vulnerability.n_covered == 7


WIDE = ["d", "s1", "s2", "s3"]


@st.composite
def wide_releases(draw):
    """Random releases for the fast path: up to 14 buckets, value domains from 2 to 150 values
    (several mask words), delta shared or private, one-to-one or one-to-many links, counts or sets."""
    n = draw(st.integers(1, 40))
    nb = draw(st.integers(1, min(n, 14)))
    bucket = draw(st.permutations([i % nb for i in range(n)]))
    dom = {a: draw(st.sampled_from([2, 3, 5, 70, 150])) for a in WIDE}
    private = draw(st.booleans())
    src = {}
    for r in range(n):
        # wide domains: mostly a few values far apart, so that two buckets share values that
        # land in different mask words
        vals = {a: draw(st.integers(0, dom[a] - 1) if dom[a] < 70 else
                        st.one_of(st.sampled_from([0, 1, 63, 64, 69, dom[a] - 1]), st.integers(0, dom[a] - 1)))
                for a in WIDE}
        if private:
            vals["d"] = (bucket[r], vals["d"])
        src[f"r{r}"] = vals
    if draw(st.booleans()):  # bucket 0 holds every value of each wide SA (several words in use)
        for x in range(max(dom.values())):
            vals = {a: x % dom[a] for a in WIDE}
            src[f"w{x}"] = {**vals, "d": (bucket[0], vals["d"])} if private else vals
            bucket.append(bucket[0])
    n = len(src)
    ecs = [draw(st.integers(0, 2)) for _ in range(n)]
    gt = [(rid, (ecs[r],), bucket[r], ecs[r], bucket[r]) for r, rid in enumerate(src)]
    if draw(st.booleans()):  # one-to-many: every row links to all buckets of its class, home given
        links = {}
        for r in range(n):
            links.setdefault(ecs[r], set()).add(bucket[r])
        gt = [(rid, qi, sorted(links[ec]), ec, b) for rid, qi, b, ec, _ in gt]
    st_ = build_st([(rid, qi, home) for rid, qi, _, _, home in gt], src, counts=draw(st.booleans()))
    return gt, st_, src


WIDE_MODELS = [fc.sa_model(WIDE, "d"), fc.sa_model(WIDE, "d", {"d": ["s1", "s2"], "s1": ["d"]}),
               fc.sa_model(WIDE, "d", zeta=["s1", "s2", "s3"]), fc.sa_model(["d"], "d")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wide_releases(), st.sampled_from(WIDE_MODELS), st.sampled_from([1, 5, 64, fcorr_fast.BLOCK]),
       st.sampled_from([0, 1, 3, 50]), st.booleans())
def test_fast_audit_equals_reference_on_random_releases(rel, model, block, detail, with_source):
    gt, st_, src = rel
    if model.sensitive == ("d",):
        st_ = {b: {"d": cells["d"]} for b, cells in st_.items()}
        src = {r: {"d": v["d"]} for r, v in src.items()}
    _same_as_reference(gt, st_, model, source=src if with_source else None, detail=detail, block=block)


def test_fast_audit_two_common_values_in_different_words_are_no_singleton():
    # s1 has 70 values (two mask words); bucket 2 shares two of them with bucket 1, one in each
    # word: not a singleton; bucket 3 shares one: a singleton.
    st_ = {1: {"d": {"v"}, "s1": set(range(70))}, 2: {"d": {"v"}, "s1": {0, 69}}, 3: {"d": {"v"}, "s1": {69}}}
    m = fc.sa_model(["d", "s1"], "d")
    ref = _same_as_reference([], st_, m)
    assert [(f.i, f.j) for f in ref.pairs if f.singletons] == [(1, 3), (2, 3)]
    assert fcorr_fast._words([1 | 1 << 69], 70).tolist() == [[1, 32]]


def test_fast_audit_random_releases_reach_breaches_and_several_words():
    # Guard against vacuous properties: multi-word domains with breaches and vulnerable records.
    rnd = random.Random(7)
    seen = Counter()
    for _ in range(60):
        n, nb = rnd.randint(20, 60), rnd.randint(3, 12)
        src = {f"r{r}": {"d": rnd.randint(0, 99), "s1": rnd.randint(0, 149), "s2": rnd.randint(0, 2),
                         "s3": rnd.randint(0, 69)} for r in range(n)}
        gt = [(f"r{r}", ("*",), r % nb, 0) for r in range(n)]
        s = _same_as_reference(gt, build_st(gt, src), fc.sa_model(WIDE, "d"), source=src, block=7).summary
        seen["pairs"] += s["n_linkable_pairs"] > 0
        seen["correct"] += s["n_vulnerable_correct"] > 0
    assert seen["pairs"] > 30 and seen["correct"] > 10


def test_fast_audit_calls_the_tick_once_per_block():
    ticks = []
    fcorr_fast.audit(GT2, ST3, MODEL, source=SOURCE, block=1, tick=lambda: ticks.append(1))
    assert len(ticks) >= 4  # one block per bucket at block=1, and more for the records


@pytest.mark.parametrize("source", [None, {}])
def test_fast_audit_of_an_empty_release(source):
    ref = _same_as_reference([], {}, fc.sa_model(["d", "s"], "d"), source=source)
    assert ref.summary["n_buckets"] == 0 and ref.summary["n_vulnerable_covered"] == 0
