"""The bucketization ST is built from the plan (`family.st_counts`) instead of an aggregate over
the map: its (group, bucket, count) rows must be those of the records the plan deals out
(`runs.expand`, the planner's own reading), for every variant and tie rule."""

import random
from collections import Counter

import pytest

from pganon_engine.methods.bucketization import bucketize as bz
from pganon_engine.methods.bucketization import runs
from pganon_engine.methods.bucketization.family import st_counts

L3 = {0: 1, 1: 2, 2: 3}


def random_buckets(rng, n_buckets, d):
    sizes = [rng.choice([0, 1, 1, 2, 3, 5, 8, 40]) for _ in range(n_buckets)]
    values = [rng.randrange(6) for _ in range(n_buckets * d)]
    levels = [v % 3 for v in values]
    return sizes, values, levels


@pytest.mark.parametrize("variant", ["mbf", "msdcf", "mmdcf"])
@pytest.mark.parametrize("tie", ["first", "random"])
@pytest.mark.parametrize("seed", range(4))
def test_st_counts_are_the_dealt_records(variant, tie, seed):
    rng = random.Random(seed)
    d = rng.choice([1, 2, 3])
    sizes, values, levels = random_buckets(rng, rng.randrange(5, 60), d)
    plan = bz.plan(sizes, values, levels, L3, variant, mslf=True, tie=tie, seed=seed, min_group=rng.choice([1, 2]))
    expected = Counter()
    for g, records in enumerate(runs.expand(plan)):
        for b, rank in records:
            if rank < sizes[b]:
                expected[(g, b)] += 1
    g, b, c = st_counts(plan, sizes)
    got = {(int(x), int(y)): int(z) for x, y, z in zip(g, b, c)}
    assert got == dict(expected)
    assert sum(got.values()) == sum(sizes) - plan.n_suppressed
    assert list(zip(g.tolist(), b.tolist())) == sorted(got)   # one row per (group, bucket), in order
