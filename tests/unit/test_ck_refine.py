"""Unit tests for pganon_engine.methods.linked.ck_refine and ck_buckets: RefineFB against a literal
reading of A9/A10 on random and mid-size tables, and the vectorized pair statuses of the bucket
store against the pairwise ones."""

from collections import Counter
from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pganon_engine.methods.linked import ck, ck_buckets
from test_ck_plan import _ck, _n_categories, small_tables


# --------------------------------------------------------------------------------------------
# Refinement: the fast implementation against a literal one
# --------------------------------------------------------------------------------------------
# `_LiteralRefiner` is A9/A10 read literally: every status recomputed from the FBs' value sets,
# every candidate swap carried out and undone, every dissolve placed over all FBs, every pair
# below target re-queued after a change.  ck_refine's `Refiner` caches and skips work; both must
# give the same FBs and events.


def _lit_level(st, i, j):
    lev = 2
    for a in range(st.m):
        if a == st.d:
            continue
        common = set(st.cnt[i][a]) & set(st.cnt[j][a])
        if len(common) == 1:
            if a not in st.zeta:
                return 0
            lev = 1
    return lev


def _lit_partners(st, b):
    return {g for g in st.rows if g != b and set(st.cnt[g][st.d]) & set(st.cnt[b][st.d])}


def _lit_placement(st, rows, gone, partner, c_f, allow_excess):
    live = [b for b in sorted(st.rows) if b != gone]
    extra = Counter()
    out = []
    for r in rows:
        v = st.codes[st.d][r]
        best = min(live, key=lambda b: (st.cnt[b][st.d].get(v, 0) + extra[b, v] >= c_f,
                                        st.cnt[b][st.d].get(v, 0) + extra[b, v] == 0,
                                        b != partner, b))
        if st.cnt[best][st.d].get(v, 0) + extra[best, v] >= c_f and not allow_excess:
            return None
        out.append((r, best))
        extra[best, v] += 1
    return out


class _LiteralRefiner:
    def __init__(self, st, c_f, ids, tick=None):
        self.st, self.c_f, self.ids, self.events = st, c_f, ids, []

    def dissolve(self, gone, partner, allow_excess, why):
        st = self.st
        rows = list(st.rows[gone])
        plan = _lit_placement(st, rows, gone, partner, self.c_f, allow_excess)
        if plan is None:
            return None
        for r, b in plan:
            st.move(r, gone, b)
        st.drop(gone)
        self.events.append(("dissolve", why, tuple(self.ids[r] for r in rows)))
        return {b for _, b in plan}

    def try_swap(self, i, j, target):
        st = self.st
        d = st.d
        others = {}
        for b, o in ((i, j), (j, i)):
            for g in _lit_partners(st, b) - {o}:
                p = (min(b, g), max(b, g))
                others[p] = _lit_level(st, *p)
        for v in sorted(set(st.cnt[i][d]) & set(st.cnt[j][d])):
            ra = [r for r in st.rows[i] if st.codes[d][r] == v]
            rb = [r for r in st.rows[j] if st.codes[d][r] == v]
            for a in ra:
                for b in rb:
                    st.move(a, i, j)
                    st.move(b, j, i)
                    if _lit_level(st, i, j) >= target and all(
                            _lit_level(st, *p) >= lv for p, lv in others.items()):
                        self.events.append(("swap", self.ids[a], self.ids[b]))
                        return True
                    st.move(b, i, j)
                    st.move(a, j, i)
        return False

    def run(self, target, allow_excess):
        st = self.st
        todo = {(i, j) for i, j in combinations(sorted(st.rows), 2)
                if j in _lit_partners(st, i) and _lit_level(st, i, j) < target}
        stuck = set()
        while todo:
            i, j = min(todo)
            todo.discard((i, j))
            if i not in st.rows or j not in st.rows or (i, j) in stuck \
                    or _lit_level(st, i, j) >= target:
                continue
            if self.try_swap(i, j, target):
                touched = {i, j}
            else:
                gone, partner = (i, j) if len(st.rows[i]) < len(st.rows[j]) else (j, i)
                why = "eq. (4)" if target == 2 else "eq. (5)"
                touched = self.dissolve(gone, partner, allow_excess, why)
                if touched is None:
                    stuck.add((i, j))
                    continue
            for b in touched:
                for g in _lit_partners(st, b):
                    p = (min(b, g), max(b, g))
                    if _lit_level(st, *p) < target:
                        todo.add(p)


def _facts(p):
    return p.fb, p.initial_fb, p.events, p.mode_achieved, p.cf_exceeded, p.stuck_pairs


def _literal(monkeypatch, plan):
    with monkeypatch.context() as m:
        m.setattr(ck, "Refiner", _LiteralRefiner)
        return plan()


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(small_tables(), st.one_of(st.none(), st.integers(0, 99)))
def test_refinement_equals_literal_reading(monkeypatch, t, seed):
    rows, k, c, c_f, mode = t
    if c > _n_categories(rows, k):
        return
    fast = _ck(rows, k, c, c_f, mode, seed, "allow")
    assert _facts(fast) == _facts(_literal(monkeypatch, lambda: _ck(rows, k, c, c_f, mode, seed, "allow")))


def _skewed_table(n, seed):
    """NMES-like: a 9-valued delta and few-valued, skewed SAs (many one-value intersections)."""
    rnd = __import__("random").Random(seed)
    out = []
    for i in range(n):
        out.append((i, (rnd.randint(66, 100), rnd.choice("MF")),
                    (min(8, int(rnd.expovariate(0.6))),
                     rnd.choices(["poor", "average", "excellent"], [1, 8, 1])[0],
                     rnd.choices([0, 1], [8, 2])[0], rnd.choices(["no", "yes"], [9, 1])[0],
                     rnd.choices(["a", "b", "c", "d"], [5, 3, 1, 1])[0])))
    return out


@pytest.mark.parametrize("n,k,mode,zeta,seed", [
    (240, 4, "strict", (), None),
    (240, 2, "strict", ("s4",), 5),
    (300, 3, "relax", ("s2", "s4"), None),
])
def test_refinement_equals_literal_reading_mid_size(monkeypatch, n, k, mode, zeta, seed):
    recs = _skewed_table(n, 11)
    sas = ["d", "s1", "s2", "s3", "s4"]

    def plan():
        return ck.ck_plan(recs, ["age", "sex"], sas, k, 2, 2, "d", mode, zeta=zeta, c_f_excess="allow",
                          kinds=["numeric", "categorical"], seed=seed)
    fast = plan()
    assert any(e[0] == "dissolve" for e in fast.events)
    assert _facts(fast) == _facts(_literal(monkeypatch, plan))



def _wide_table(n, seed):
    """A delta of 70 values and a non-delta SA of 150 (several mask words per FB), mixed with
    few-valued skewed SAs, so refinement swaps and dissolves."""
    rnd = __import__("random").Random(seed)
    return [(i, (rnd.randint(20, 60), rnd.choice("MF")),
             (i % 70 if i < 150 else rnd.choice([rnd.randint(0, 69), rnd.choice([0, 1, 64, 69])]),
              i if i < 150 else rnd.choice([rnd.randint(0, 149), rnd.choice([0, 63, 64, 65, 149])]),
              rnd.choices(["x", "y", "z"], [8, 1, 1])[0], rnd.choice([0, 1, 2, 3, 66, 130])))
            for i in range(n)]


@pytest.mark.parametrize("n,k,c_f,mode,zeta,seed", [
    (260, 2, 2, "strict", (), None),
    (260, 3, 1, "strict", ("s3",), 3),
    (300, 2, 3, "relax", ("s1",), None),
])
def test_refinement_equals_literal_reading_with_masks_of_several_words(monkeypatch, n, k, c_f, mode, zeta, seed):
    recs = _wide_table(n, 5)
    assert len({r[2][0] for r in recs}) > 64 and len({r[2][1] for r in recs}) > 128  # 2 and 3 words
    sas = ["d", "s1", "s2", "s3"]

    def plan():
        return ck.ck_plan(recs, ["age", "sex"], sas, k, 2, c_f, "d", mode, zeta=zeta, c_f_excess="allow",
                          kinds=["numeric", "categorical"], seed=seed)
    fast = plan()
    assert any(e[0] == "dissolve" for e in fast.events) and any(e[0] == "swap" for e in fast.events)
    assert _facts(fast) == _facts(_literal(monkeypatch, plan))


def test_refinement_forgetting_old_signatures_changes_nothing(monkeypatch):
    recs = _skewed_table(240, 11)
    sas = ["d", "s1", "s2", "s3", "s4"]

    def plan():
        return ck.ck_plan(recs, ["age", "sex"], sas, 2, 2, 2, "d", "strict", zeta=("s4",), c_f_excess="allow",
                          kinds=["numeric", "categorical"])
    base = plan()
    with monkeypatch.context() as m:
        m.setattr(ck_buckets, "_SIG_SLACK", 0)   # compact the signature table on almost every new one
        assert _facts(plan()) == _facts(base)


def test_fb_statuses_vectorized_equal_the_pairwise_ones():
    # Fbs.levels / below (numpy rows) against Fbs.level (the masks) on every pair of FBs,
    # masks of one and of several words
    seen = set()
    for recs in (_skewed_table(120, 2), _wide_table(150, 4)):
        sas = list(range(len(recs[0][2])))
        codes = [[0] * len(recs) for _ in sas]
        for a in sas:
            enc = {}
            for r, rec in enumerate(recs):
                codes[a][r] = enc.setdefault(rec[2][a], len(enc))
        st_ = ck_buckets.Fbs(codes, 0, list(range(len(recs))), frozenset({len(sas) - 1}), 2)
        for b in range(1, 31):
            st_.add(b, [r for r in range(len(recs)) if r % 30 == b - 1])
        for i in st_.rows:
            gs = st_.partners(i)
            assert gs.tolist() == sorted(g for g in st_.rows if g != i
                                         and set(st_.cnt[g][0]) & set(st_.cnt[i][0]))
            assert st_.levels(st_.nm[i], gs).tolist() == [st_.level(i, g) for g in gs.tolist()]
            seen.update(st_.levels(st_.nm[i], gs).tolist())
        for target in (ck_buckets.RELAX, ck_buckets.STRICT):
            assert st_.below(target) == sorted((i, j) for i in st_.rows for j in st_.rows
                                               if i < j and j in st_.partners(i).tolist()
                                               and st_.level(i, j) < target)
        assert st_.width[1] == (1 if len(recs) == 120 else 3)
    assert seen == {0, ck_buckets.RELAX, ck_buckets.STRICT}
