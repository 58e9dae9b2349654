"""GAA, the Greedy Anonymization Algorithm of Mauger, Le Mahec and Dequen (2023), with the
merge strategies S1-S7 and the pure l_div / t_clo baselines (spec 001-metrics-strategies.md
§2-3): a planning engine, no database access.

GAA starts from the equivalence classes of the table (identical QI tuples together) and, while a
class has fewer than k rows, merges a smallest such class C_s with the partner a strategy picks
among all other classes; merging replaces both tuples by their attribute-wise LCA.  Recoding is
global and multidimensional: identical tuples always share a class.  Per DESIGN.md the engine
reads the smallest input: the DISTINCT QI tuples with their row counts and (for strategies that
look at the sensitive attribute) their sensitive-value histograms, which the database computes
with GROUP BY.  It returns, per input tuple, its class and the class's generalized tuple; the
database assigns rows set-based.

The code, by responsibility: this module checks the input, runs GAA and records its options;
`gaa_run` holds the state of a run, the greedy loop, merge costs and the bookkeeping of merges;
`gaa_strategies` the partner choice of S1-S7 and the pure l_div / t_clo strategies with the
privacy scores of the candidates; `gaa_measures` the measures l_div and t_clo of a class or a
table as plain, exact functions.

Decisions (spec items in brackets):

- G1  Φ is k-anonymity: a class violates it when it has fewer than k rows.  k must not exceed
      the number of rows.  Each step merges two classes, so GAA stops after at most
      (#tuples - 1) steps with every class >= k rows [§2.2].  l-diversity or t-closeness as Φ
      (allowed by the paper, never run by it, A15) is not offered.
- G2  Class ids (the tie rule's order) are creation ids: the input tuples are 0 .. n-1 in input
      order (give them in a stable order, e.g. by their first row key); a merged class gets the
      next id.  Ties, both for C_s (among the smallest violators) and for the partner (inside
      the strategy's final set), go to the smallest id [A5].  With `seed`, every tie is drawn
      uniformly from the tied classes (sorted by id) with `random.Random(seed)`: the same seed
      gives the same result.
- G3  When the merged tuple equals the tuple of another live class E, E absorbs the merged
      classes and keeps its id (classes are defined by their tuple) [A6].  The privacy of a
      candidate merge is that of the class it creates, E included.
- G4  Merge cost: cost_mode 'pairwise' is Def. 6 on the two classes' current tuples, not
      weighted by class sizes (faithful; this is what snowballs NCP and LLM to the root on
      Table 1) [A4]; 'size_weighted' is the true increase of mu_T,
      |C_s| * cost(f_s -> a) + |C| * cost(f -> a).  Costs are exact integers (D scaled by the
      metric's least common denominator, `infoloss.Metric.scaled`); int64 when the bound
      allows, Python ints otherwise.
- G5  Strategies [Def. 17, §3.5]: S1 min cost; S2 max l_div among min cost; S3 min cost among
      max l_div; S4 min cost / l_div; S5 min t_clo among min cost; S6 min cost among min t_clo;
      S7 min cost * t_clo, then min cost [§3.3 P]; 'l_div' max l_div; 't_clo' min t_clo.
      privacy_scope 'table' (faithful, default) scores a candidate by the table after the
      merge: l_div = min over its classes, t_clo = max; 'class' by the merged class alone [A7].
- G6  Exactness of ties: costs and t_clo (L1; rational: sum |c_s N - n N_s| / (n N)) and the
      S7 product are compared exactly; l_div is exp(entropy) and not rational, so entropies
      within ENTROPY_TOL (absolute) are equal, and S4's cost / l_div values within a relative
      RATIO_TOL [§2.3].
- G7  The global sensitive distribution P(S, T) is the sum of the given histograms, fixed once
      [A18].  t_clo uses the L1 norm (0 .. 2); tclo_scale='tv' halves it (0 .. 1) in the
      measures [A9]; a constant factor never changes a choice.
- G8  Scale [§2.3]: a step is one vectorized scan over the live classes (per QI one gather from
      a cached row of costs to C_s's node), so a run is O(#tuples^2 * m) numpy work.  S1, S2
      and S5 score privacy only inside the min-cost set.  The others score every candidate
      without building merged histograms: a merged class's entropy is the candidate's sum of
      c ln c plus the terms of C_s's few values, its t_clo numerator a sum over per-class
      deviation columns.  In table scope the table's value is the merged class's against the
      extreme class E1 of the others (the three most extreme kept in a pool across steps,
      §2.3); entropy being concave and L1 distance convex, a merge of classes no more extreme
      than E1 leaves E1's value, so only the candidates that touch E1 or that the bound
      (n_c v_c + n_s v_s) / n does not clear are computed.  This is exact for t_clo (from
      2^17 rows on, where floats may misorder t_clo values, every candidate is computed); an
      entropy taken from E1 or summed incrementally differs from a direct sum by rounding
      only, far inside ENTROPY_TOL (G6).  Full UCI Adult_Mar (8 QIs, 16,290 tuples), NLLM,
      k = 10: S1 about 2.3 s of CPU with numpy 1.24, every other strategy within 2x.
      Wide hierarchies (more than 4,096 nodes: a 13,000-leaf ZIP, numbers with 50,000
      distinct values): a leaf's rows are its parent's with one entry changed, so they are
      derived per step and never kept, and inner rows are kept within a cap (`gaa_run`); the
      costs and choices are the same.  wide_zip, 63,000 tuples, 5 QIs, k = 10: about 50 s of
      CPU and 320 MB (the per-node rows of every leaf used to take 23 GB).
- G9  Persons (`persons`: per input tuple the ids of the persons owning its rows, when one
      person may own several rows).  Φ counts persons: a class violates it when it holds
      fewer than k distinct persons, C_s is a class with the fewest persons, and k must not
      exceed the persons of the table.  A class's persons are the union of its members'
      (a person with rows of several tuples counts once per class), kept as a set per class.
      Costs and the strategies' privacy scores still read rows; only Φ changes, so without
      persons the run is the same as before.  A person's tuples may end in several classes
      (GAA recodes tuples globally; merging every tuple a person owns would chain persons
      together): the GT publishes no person id, so each class still hides its persons among k.
"""

from collections.abc import Mapping

import numpy as np

from pganon_engine.core.errors import invalid
from pganon_engine.hierarchy.tree import Hierarchy
from pganon_engine.metrics import infoloss

from .gaa_run import Run

STRATEGIES = ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "l_div", "t_clo")
COST_MODES = ("pairwise", "size_weighted")
PRIVACY_SCOPES = ("table", "class")


# ------------------------------------------------------------------------------------ GAA


def strategy_name(s):
    """The canonical name of a strategy: 'S1'..'S7', 'l_div', 't_clo' (1..7 and 's3' too)."""
    if isinstance(s, int) and not isinstance(s, bool) and 1 <= s <= 7:
        return f"S{s}"
    if isinstance(s, str):
        t = s.strip()
        if t.upper() in STRATEGIES[:7]:
            return t.upper()
        t = t.lower().replace("-", "_")
        if t in ("l_div", "ldiv"):
            return "l_div"
        if t in ("t_clo", "tclo"):
            return "t_clo"
    raise invalid(f"unknown strategy {s!r}", hint=f"strategies: {', '.join(STRATEGIES)}")


def gaa(tuples, counts, hierarchies, k, *, metric="nllm", strategy="S1", histograms=None,
        weights=None, distortion_mode="literal", cost_mode="pairwise", privacy_scope="table",
        seed=None, trace=False, tick=None, persons=None):
    """k-anonymize by GAA (§2.2) and return a GaaResult.

    tuples        the distinct QI tuples, one value per QI (leaf label or leaf id), in a stable
                  order (their order is the default tie order, G2)
    counts        rows per tuple (>= 1)
    hierarchies   one Hierarchy per QI, in QI order
    k             the k of k-anonymity (1 .. total rows)
    metric        a name of infoloss.METRICS, 'custom' (with weights) or an infoloss.Metric
    strategy      'S1'..'S7', 'l_div', 't_clo' (G5); all but S1 need histograms
    histograms    per tuple a mapping sensitive value -> rows (summing to its count)
    distortion_mode, weights  passed to infoloss.metric
    cost_mode     'pairwise' (faithful) or 'size_weighted' (G4)
    privacy_scope 'table' (faithful) or 'class' (G5)
    seed          None for smallest-id ties, an int for seeded random ties (G2)
    trace         keep the list of merges in the result
    tick          called every few steps (lets the database cancel a long run)
    persons       None, or per tuple an iterable of the (hashable) ids of its persons: k
                  counts persons (G9)
    """
    hs = list(hierarchies)
    if not hs:
        raise invalid("GAA needs at least one QI hierarchy")
    for h in hs:
        if not isinstance(h, Hierarchy):
            raise invalid(f"{h!r} is not a Hierarchy", hint="build one with Hierarchy.from_paths")
    strategy = strategy_name(strategy)
    if cost_mode not in COST_MODES:
        raise invalid(f"cost_mode must be one of {COST_MODES}, not {cost_mode!r}")
    if privacy_scope not in PRIVACY_SCOPES:
        raise invalid(f"privacy_scope must be one of {PRIVACY_SCOPES}, not {privacy_scope!r}")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise invalid(f"seed must be an integer or None, not {seed!r}")
        seed = int(seed)
    if isinstance(metric, infoloss.Metric):
        met = metric
        if len(met.hierarchies) != len(hs) or any(a is not b for a, b in zip(met.hierarchies, hs)):
            raise invalid("the metric was built on other hierarchies than the ones given",
                          hint="build it with infoloss.metric(name, hierarchies)")
    else:
        met = infoloss.metric(metric, hs, weights=weights, distortion_mode=distortion_mode)
    tuples = list(tuples)
    if not tuples:
        raise invalid("GAA needs at least one tuple")
    for i, t in enumerate(tuples):
        if len(t) != len(hs):
            raise invalid(f"tuple {i + 1} has {len(t)} values for {len(hs)} QIs",
                          hint="give one value per QI, in the order of the hierarchies")
    leaf = np.stack([h.leaf_ids([t[j] for t in tuples]) for j, h in enumerate(hs)])
    cnt = _row_counts(counts, len(tuples))
    total = int(cnt.sum())
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise invalid(f"k must be an integer >= 1, not {k!r}")
    if k > total:
        raise invalid(f"k = {k} is larger than the number of rows ({total})", hint="lower k")
    psets = _person_sets(persons, len(tuples))
    if psets is not None:
        n_persons = len(set().union(*psets))
        if k > n_persons:
            raise invalid(f"k = {k} is larger than the number of persons ({n_persons}, {total} rows)",
                          hint="lower k: k counts persons")
    seen = {}
    for i, row in enumerate(map(tuple, leaf.T.tolist())):
        if row in seen:
            raise invalid(f"tuples {seen[row] + 1} and {i + 1} are the same QI tuple "
                          f"{tuple(h.labels[v] for h, v in zip(hs, row))!r}",
                          hint="give each distinct tuple once with its row count (GROUP BY)")
        seen[row] = i
    hist = None
    if strategy != "S1":
        if histograms is None:
            raise invalid(f"strategy {strategy} needs the sensitive-value histogram of each tuple",
                          hint="pass histograms (per tuple a mapping value -> rows), or use S1")
        hist = _histograms(histograms, cnt)
    run = Run(hs, met, leaf, cnt, hist, int(k), strategy, cost_mode, privacy_scope, seed,
              trace, tick, psets)
    run.loop()
    options = {"k": int(k), "metric": met.name, "strategy": strategy, "cost_mode": cost_mode,
               "privacy_scope": privacy_scope, "distortion_mode": distortion_mode,
               "tie_rule": "smallest creation id" if seed is None else "seeded random",
               "seed": seed}
    if psets is not None:
        options["k_scope"] = "persons"
    return run.result(options)


def _person_sets(persons, n):
    """G9: one set of person ids per tuple, or None."""
    if persons is None:
        return None
    persons = list(persons)
    if len(persons) != n:
        raise invalid(f"{len(persons)} person lists for {n} tuples", hint="give the persons of every tuple")
    out = []
    for i, ps in enumerate(persons):
        if isinstance(ps, (str, bytes)) or not hasattr(ps, "__iter__"):
            raise invalid(f"tuple {i + 1}: its persons must be a collection of ids, not {ps!r}")
        ps = set(ps)
        if not ps:
            raise invalid(f"tuple {i + 1} has rows but no person", hint="every row belongs to a person")
        out.append(ps)
    return out


def _row_counts(counts, n):
    counts = list(counts)
    if len(counts) != n:
        raise invalid(f"{len(counts)} counts for {n} tuples", hint="give one row count per tuple")
    for c in counts:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
            raise invalid(f"a tuple's row count is {c!r}, not an integer >= 1")
    return np.array(counts, dtype=np.int64)


def _histograms(histograms, cnt):
    histograms = list(histograms)
    if len(histograms) != len(cnt):
        raise invalid(f"{len(histograms)} histograms for {len(cnt)} tuples")
    col = {}
    for h in histograms:
        if not isinstance(h, Mapping):
            raise invalid(f"a histogram is {h!r}, not a mapping value -> rows")
        for v in h:
            col.setdefault(v, len(col))
    mat = np.zeros((len(cnt), len(col)), dtype=np.int64)
    for i, h in enumerate(histograms):
        for v, c in h.items():
            if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0:
                raise invalid(f"tuple {i + 1}: the count of {v!r} is {c!r}")
            mat[i, col[v]] = c
        if mat[i].sum() != cnt[i]:
            raise invalid(f"tuple {i + 1}: its histogram holds {int(mat[i].sum())} rows, its "
                          f"count is {int(cnt[i])}", hint="histograms must count the same rows")
    return mat
