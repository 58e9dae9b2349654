"""Unit tests for pganon_engine.risk.chain_attack (issue 11, finding 1): the chain attack on a Rating
release's AT + IDT, run on releases of the engine's small-data path (`rating.rating`).

The attack is sound: on the paper's deterministic variant (FIFO dealing, groups in creation order,
tuples numbered in dealing order) its hypothesis holds, so it is never refuted and every pin is
right.  It is strong there (most tuples of a many-valued attribute pinned), and it gets nothing
from a seeded release, whose dealing is random: a sound attack that pins nothing is what shows the
numbering carries no information.
"""

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pganon_engine.risk import chain_attack as ca
from pganon_engine.methods.rating import rating as rt

# Table 5 of spec 003 §4.5 (t, age, sex, cp, trestbps, fbs, thalach, restecg), SC (3; 2; ...; 2)
TABLE5 = [(28, "M", "typical angina", 145, 108, 150, 0), (29, "M", "asymptomatic", 130, 101, 162, 1),
          (21, "M", "atypical angina", 120, 110, 148, 0), (30, "M", "atypical angina", 172, 130, 178, 1),
          (36, "M", "non-anginal pain", 160, 125, 187, 0), (37, "F", "atypical angina", 150, 130, 172, 1),
          (41, "F", "non-anginal pain", 140, 105, 153, 0), (48, "F", "asymptomatic", 120, 110, 114, 1),
          (56, "F", "atypical angina", 138, 110, 151, 1), (65, "F", "asymptomatic", 150, 105, 148, 0)]
NAMES = ["age", "sex", "cp", "trestbps", "fbs", "thalach", "restecg"]


def arrays(release, columns, tk=None):
    """The published AT / IDT of a small-data release as the attack reads them, and the truth:
    per attribute the value of each AT row (tk defaults to 1..m in dealing order)."""
    m = len(release.kept)
    at = {"tk": np.arange(1, m + 1) if tk is None else np.asarray(tk)}
    idt, truth = {}, {}
    for a, g_of, groups in zip(release.attributes, release.group, release.idt):
        col = columns[a.index - 1]
        truth[a.name] = [str(col[t]) for t in release.kept]
        if g_of is None:  # SC 1: one group per tuple
            g_of, groups = list(range(m)), [[col[t]] for t in release.kept]
        at[a.name] = np.asarray(g_of)
        gs = [g for g, vals in enumerate(groups) for _ in vals]
        vs = [str(v) for vals in groups for v in vals]
        idt[a.name] = (np.asarray(gs, dtype=np.int64), np.asarray(vs, dtype=object), np.ones(len(gs), dtype=np.int64))
    return at, idt, truth


def table(n, seed):
    """A synthetic table with the shape of a census extract: many-valued, few-valued, binary."""
    rnd = random.Random(seed)
    return [[rnd.randint(17, 90) for _ in range(n)],
            [rnd.choice("MF") for _ in range(n)],
            [rnd.choice("abcdefg") for _ in range(n)],
            [min(99, int(rnd.expovariate(1 / 12))) for _ in range(n)]], ["age", "sex", "edu", "hours"], [2, 2, 3, 2]


def correct(fig, truth):
    return sum(truth[i] == v for i, v in fig["_pins"].items())


def test_table5_faithful_pins_are_all_right():
    """The deterministic variant in creation order: 'same' stays consistent on every attribute;
    cp and fbs lose four tuples each (cp: t1 is the only 'typical angina', and the chains of
    'asymptomatic' and 'atypical angina' do the rest), every pin right."""
    cols = [[r[i] for r in TABLE5] for i in range(7)]
    rel = rt.rating(cols, [3, 2, 2, 2, 2, 2, 2], names=NAMES, order="creation")
    at, idt, truth = arrays(rel, cols)
    for a in NAMES:
        r = ca.attack_attribute(at["tk"], at[a], *idt[a], direction="same")
        assert r["consistent"], a
        assert all(truth[a][i] == v for i, v in r["pins"].items()), a
    cp = ca.attack_attribute(at["tk"], at["cp"], *idt["cp"], direction="same")
    assert cp["pins"] == {0: "typical angina", 3: "atypical angina", 7: "asymptomatic", 9: "asymptomatic"}
    assert ca.attack_attribute(at["tk"], at["fbs"], *idt["fbs"], direction="same")["pinned"] == 4


def test_faithful_release_loses_most_tuples_and_seeded_release_none():
    """3,000 tuples.  Faithful: most tuples of the many-valued attributes are pinned, all of them
    right, far above chance (tk and group ids permuted).  Seeded (random dealing, ties, residues):
    every hypothesis is refuted, nothing pinned."""
    cols, names, sc = table(3000, 1)
    rel = rt.rating(cols, sc, names=names, order="creation", eligibility="suppress")
    at, idt, truth = arrays(rel, cols)
    res = ca.attack(at, idt, permutations=2, seed=5)
    for a in ("age", "edu", "hours"):
        f = res[a]
        assert f["pinned_share"] > 0.4, (a, f)
        assert correct(f, truth[a]) == f["pinned"], a
        assert f["chance_max"] < 0.05, (a, f)
    assert res["sex"]["pinned"] == 0  # two values: swapping every group's pair is as consistent
    seeded = rt.rating(cols, sc, names=names, order="creation", eligibility="suppress", tie="random",
                       residue="random", seed=11)
    at, idt, truth = arrays(seeded, cols)
    res = ca.attack(at, idt, permutations=1)
    for a in names:
        f = res[a]
        assert f["pinned"] == 0 and not any(h["consistent"] for h in f["hypotheses"]), (a, f)


def test_opposite_direction_reads_a_reversed_numbering():
    """Tuples numbered against the dealing order: 'same' is refuted or pins nothing wrong, and
    'opposite' pins exactly what 'same' pins on the forward numbering."""
    cols, names, sc = table(800, 2)
    rel = rt.rating(cols, sc, names=names, order="creation", eligibility="suppress")
    m = len(rel.kept)
    fwd_at, idt, truth = arrays(rel, cols)
    rev_at, _, _ = arrays(rel, cols, tk=np.arange(m, 0, -1))
    for a in ("age", "hours"):
        f = ca.attack_attribute(fwd_at["tk"], fwd_at[a], *idt[a], direction="same")
        r = ca.attack_attribute(rev_at["tk"], rev_at[a], *idt[a], direction="opposite")
        assert r["consistent"] and r["pins"] == f["pins"] and f["pinned"] > m / 4, a


def test_sc_one_is_published_ungrouped_and_fully_pinned():
    """SC 1 publishes the value (groups of one): the attack pins all of it, which is the promise."""
    cols, names, _ = table(50, 3)
    rel = rt.rating(cols, [1, 2, 1, 1], names=names, eligibility="suppress")
    at, idt, truth = arrays(rel, cols)
    f = ca.attack(at, idt, permutations=1)["age"]
    assert f["pinned"] == len(truth["age"]) and f["sc"] == 1 and correct(f, truth["age"]) == f["pinned"]


def test_at_and_idt_that_disagree_refute_nothing_and_pin_nothing():
    r = ca.attack_attribute([1, 2, 3, 4], [0, 0, 1, 1], [0, 0, 1], ["a", "b", "a"], [1, 1, 1])
    assert not r["consistent"] and r["pinned"] == 0 and r["why"] == "AT and IDT disagree"
    with pytest.raises(ValueError):
        ca.attack_attribute([1, 2], [0, 0], [0, 0], ["a", "b"], [1, 1], direction="sideways")


def test_figures_are_json_able_and_chance_is_reproducible():
    import json
    cols, names, sc = table(300, 4)
    rel = rt.rating(cols, sc, names=names, order="creation", eligibility="suppress")
    at, idt, _ = arrays(rel, cols)
    a, b = ca.attack(at, idt, permutations=3, seed=9), ca.attack(at, idt, permutations=3, seed=9)
    for x in names:
        fa = {k: v for k, v in a[x].items() if k not in ("_pins", "seconds")}
        fb = {k: v for k, v in b[x].items() if k not in ("_pins", "seconds")}
        assert fa == fb
        json.dumps(fa)
        assert 0 <= fa["chance_mean"] <= fa["chance_max"] <= 1 and fa["permutations"] == 3


# --------------------------------------------------------------------------------------------
# Properties: sound on every faithful release, and blind on seeded ones of a useful size
# --------------------------------------------------------------------------------------------

TABLES = st.integers(1, 3).flatmap(lambda d: st.tuples(
    st.integers(2, 60).flatmap(lambda n: st.lists(
        st.lists(st.integers(0, 8), min_size=n, max_size=n), min_size=d, max_size=d)),
    st.lists(st.integers(1, 4), min_size=d, max_size=d)))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=TABLES, reverse=st.booleans())
def test_attack_is_sound_on_faithful_releases(table, reverse):
    """The paper's variant, creation order: the true hypothesis is never refuted and every pin is
    the tuple's value, whatever the table (residues, SC 1, groups past MAX_ENUM included)."""
    cols, sc = table
    rel = rt.rating(cols, sc, order="creation", eligibility="suppress")
    m = len(rel.kept)
    at, idt, truth = arrays(rel, cols, tk=np.arange(m, 0, -1) if reverse else None)
    for a in truth:
        r = ca.attack_attribute(at["tk"], at[a], *idt[a], direction="opposite" if reverse else "same")
        assert r["consistent"], (a, r)
        assert all(truth[a][i] == v for i, v in r["pins"].items()), (a, r)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n=st.integers(300, 600), sc=st.integers(2, 4))
def test_seeded_releases_give_no_more_than_one_over_sc(seed, n, sc):
    """Random dealing: whatever the attacker's hypothesis, the tuples pinned to their true value
    stay within 1/SC of each attribute (the method's promise)."""
    rnd = random.Random(seed)
    cols = [[rnd.randint(0, 40) for _ in range(n)], [rnd.choice("abcdef") for _ in range(n)]]
    rel = rt.rating(cols, [sc, sc], order="creation", eligibility="suppress", tie="random", residue="random",
                    seed=seed)
    at, idt, truth = arrays(rel, cols)
    for a in truth:
        for d in ca.DIRECTIONS:
            r = ca.attack_attribute(at["tk"], at[a], *idt[a], direction=d)
            right = sum(truth[a][i] == v for i, v in r["pins"].items())
            assert right <= len(truth[a]) / sc, (a, d, r["pinned"], right)


def test_group_step_enumerates_matchings_and_finds_hall_sets():
    """Three tuples, three slots: two slots that can only take tuples 0 and 1 leave tuple 2 to the
    third slot (a Hall set the singleton rules alone do not see)."""
    A = ca._Attribute([1, 2, 3], [0, 0, 0], [0, 0, 0], np.array([0, 1, 2]), np.array(["a", "b", "c"]), [1, 1, 1])
    cand = np.array([[True, True, False], [True, True, False], [True, True, True]])
    out = ca._group_step(A, cand)
    assert out[2].tolist() == [False, False, True]
    assert Counter(out.sum(axis=1).tolist()) == Counter([2, 2, 1])


@settings(max_examples=200, deadline=None)
@given(data=st.data(), chains=st.lists(st.integers(1, 12), min_size=1, max_size=6), M=st.integers(1, 4))
def test_chain_sweeps_and_pointer_jumping_agree(data, chains, M):
    """The chain bound by sweeps (`_chain_min`) equals the pointer-jumping composition
    (`_scan_min`) and the plain left-to-right recurrence, on random candidate sets."""
    n = sum(chains)
    K = np.array(data.draw(st.lists(st.lists(st.integers(0, 30), min_size=M, max_size=M), min_size=n, max_size=n)),
                 dtype=np.float64)
    cand = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=M, max_size=M), min_size=n, max_size=n)))
    prev = np.full(n, -1)
    start = 0
    for length in chains:
        prev[start + 1:start + length] = np.arange(start, start + length - 1)
        start += length
    expect = np.empty(n)
    for s_ in range(n):
        low = expect[prev[s_]] if prev[s_] >= 0 else -np.inf
        above = [k for k, c in zip(K[s_], cand[s_]) if c and k > low]
        expect[s_] = min(above) if above else np.inf
    jump = ca._scan_min(K, cand, prev)
    assert np.array_equal(jump, expect)
    sweep = ca._chain_min(K, cand, prev)
    if np.isinf(expect).any():
        assert np.isinf(sweep).any()   # sweeps stop at the first infeasible slot
    else:
        assert np.array_equal(sweep, expect)
    assert np.array_equal(ca._chain_min(K, cand, prev, sweeps=1), expect) or np.isinf(expect).any()
