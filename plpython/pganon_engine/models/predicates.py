"""Privacy models, checked from aggregates (issue 4, point 5): the model registry (`MODELS` and
the parsing of each model's parameters), the per-class admissibility test Mondrian/GAA take
(`predicate`) and the achieved value per model that `pganon.check` reports (`check`).

The models themselves live beside this module: `aggregates` (the validated input: histograms,
classes, `Aggregates`, `from_groups` / `from_rows`), `diversity` (k-anonymity, (alpha,k),
distinct / entropy / recursive (c,l)-diversity: judged on each class alone) and `distances`
(t-closeness with its EMD ground distances, basic and enhanced beta-likeness, delta-disclosure:
each class against the table's distribution).  This module is where a model is named, its
thresholds parsed and its verdict decided, one source of truth for `predicate` and `check`.

Why aggregates: every model here is a function of the equivalence classes' sizes and per-SA value
counts, which the database computes with GROUP BY.  The engine then holds one histogram per
(class, SA), never a row, so its memory grows with classes x values (DESIGN "Bounded memory").

Decisions (M3-M4 are stated in `diversity`, M5-M7 in `distances`):

- M1  Scopes.  'attribute' (pyCANON ``gen=True``): classes = GROUP BY QIs, each SA judged on its
      own histogram.  'joint' (pyCANON ``gen=False``): for SA s the classes are GROUP BY QIs +
      the other SAs (the other SAs treated as QIs).  With one SA both are the same.  Several
      SAs combine to the worst SA: min for k and l, max for alpha, c, t, beta and delta.  k
      (also the k of (alpha,k)) always comes from the QI classes, as in pyCANON.
- M2  Arithmetic.  Counts are integers.  Measures that are rational in the counts (alpha, L1,
      EMD equal/ordered/hierarchical, basic beta, c) are computed exactly (integers/fractions)
      and rounded once to the nearest double at the end; a threshold compares that double
      with the given number (so t = 0.3 holds for an achieved 3/10).  Measures with logarithms
      are doubles: entropy H = -fsum(p ln p) with p = c/n; delta uses ln of the exactly rounded
      ratio q/p; the enhanced-beta bound is -ln p of the exactly rounded p.  The entropy test
      H >= ln l is exact: when |H - ln l| <= 1e-9 it is decided in integers,
      n'^n' * b^n' >= a^n' * prod c'^c' with l = a/b and counts divided by their gcd.
- M8  The global histogram defaults to the sum of the classes (the checked table itself); a
      given one must contain every value seen in a class (p > 0), e.g. the whole table for
      `predicate`.
- M9  Thresholds: k, l: achieved >= parameter; entropy: every class has H >= ln l; alpha, t,
      beta: achieved <= parameter; c (recursive) and delta: strict, as their definitions.
      ``holds`` is None when no threshold is given.  `check` decides ``holds`` with the same
      per-class tests that `predicate` returns (one source of truth).
- M10 Nothing is chosen at random and no tie is broken: results do not depend on input order
      or on a seed.
"""

import math
import numbers
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from pganon_engine.core.errors import invalid, unknown

from . import distances, diversity
from .aggregates import INF, READINGS, Aggregates, choice, count, covered, hist, integer

SCOPES = ("attribute", "joint")

# model -> (threshold parameters, option parameters)
MODELS = {
    "k_anonymity": (("k",), ()),
    "alpha_k_anonymity": (("alpha", "k"), ("scope",)),
    "l_diversity": (("l",), ("scope",)),
    "entropy_l_diversity": (("l",), ("scope",)),
    "recursive_cl_diversity": (("c",), ("l", "scope", "reading")),
    "t_closeness": (("t",), ("scope", "distance", "order", "hierarchy")),
    "basic_beta_likeness": (("beta",), ("scope",)),
    "enhanced_beta_likeness": (("beta",), ("scope", "reading")),
    "delta_disclosure": (("delta",), ("scope", "reading")),
}


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------


def _number(v, name, lo, hi=INF, lo_open=False):
    if isinstance(v, Decimal):
        v = float(v)
    ok = (not isinstance(v, bool) and isinstance(v, numbers.Real) and not math.isnan(v)
          and (v > lo if lo_open else v >= lo) and v <= hi)
    if not ok:
        rng = f"{'>' if lo_open else '>='} {lo}" + (f" and <= {hi}" if hi != INF else "")
        raise invalid(f"parameter {name} must be a number {rng}, not {v!r}")
    return v


def _model(model):
    if model not in MODELS:
        raise unknown(f"unknown privacy model {model!r}", hint=f"models: {', '.join(MODELS)}")
    return model


def _params(model, params):
    params = dict(params or {})
    thresholds, options = MODELS[model]
    extra = sorted(set(params) - set(thresholds) - set(options))
    if extra:
        raise invalid(f"unknown parameter(s) {extra} for model {model}",
                      hint=f"parameters of {model}: {sorted(thresholds + options)}")
    p = {"scope": choice(params.get("scope", "attribute"), SCOPES, "scope"),
         "reading": choice(params.get("reading", "standard"), READINGS, "reading")}
    if "k" in params:
        p["k"] = integer(params["k"], "k", 1)
    if "l" in params:
        if model == "entropy_l_diversity":
            p["l"] = _number(params["l"], "l", 1)
        else:
            p["l"] = integer(params["l"], "l", 2 if model == "recursive_cl_diversity" else 1)
    if "alpha" in params:
        p["alpha"] = _number(params["alpha"], "alpha", 0, 1, lo_open=True)
    if "c" in params:
        p["c"] = _number(params["c"], "c", 0, lo_open=True)
    for name in ("t", "beta"):
        if name in params:
            p[name] = _number(params[name], name, 0)
    if "delta" in params:
        p["delta"] = _number(params["delta"], "delta", 0, lo_open=True)
    p["distance"] = params.get("distance", "auto")
    p["order"] = params.get("order") or {}
    p["hierarchy"] = params.get("hierarchy") or {}
    for name in ("order", "hierarchy"):
        if not hasattr(p[name], "items"):
            raise invalid(f"parameter {name} must map each SA name to its {name}",
                          hint=f"e.g. {{\"{name}\": {{\"salary\": ...}}}}")
    return p


def _distance(p, sa):
    d = p["distance"]
    if hasattr(d, "items"):
        d = d.get(sa, "auto")
    return choice(d, distances.DISTANCES, f"distance of {sa!r}")


def _globals(model, p, sas, global_hists):
    """Per SA a prepared `distances.Global` for the models that need the global distribution."""
    if model not in ("t_closeness", "basic_beta_likeness", "enhanced_beta_likeness", "delta_disclosure"):
        return {}
    if global_hists is None:
        raise invalid(f"{model} needs the global histogram of every sensitive attribute")
    out = {}
    for s in sas:
        if s not in global_hists:
            raise invalid(f"global histograms lack sensitive attribute {s!r}")
        h = hist(global_hists[s], f"global histogram of {s!r}")
        if model == "t_closeness":
            out[s] = distances.Global(s, h, distance=_distance(p, s), order=p["order"].get(s),
                             parents=p["hierarchy"].get(s))
        else:
            out[s] = distances.Global(s, h)
    return out


# --------------------------------------------------------------------------------------------
# Per-class predicates (one source of truth for check's `holds` and for Mondrian/GAA)
# --------------------------------------------------------------------------------------------


def _class_test(model, p, g):
    """test(size, {SA: histogram}) -> bool for the thresholds in p (M9).  Only the thresholds
    that p holds are tested; for the k of k-anonymity and (alpha,k) the size is used."""
    k = p.get("k")

    def size_ok(n):
        return k is None or n >= k

    if model == "k_anonymity":
        return lambda n, hs: size_ok(n)
    if model == "alpha_k_anonymity":
        a = p.get("alpha")
        # over the size n, which every class of records has as its histograms' sum; a Mondrian
        # part judged over persons (mondrian D9) gives persons and persons holding each value
        return lambda n, hs: size_ok(n) and (a is None or all(
            float(Fraction(max(h.values()), n)) <= a for h in hs.values()))
    if model == "l_diversity":
        return lambda n, hs: all(len(h) >= p["l"] for h in hs.values())
    if model == "entropy_l_diversity":
        return lambda n, hs: all(diversity.entropy_at_least(h, p["l"]) for h in hs.values())
    if model == "recursive_cl_diversity":
        c, l = Fraction(p["c"]), p["l"]
        if p["reading"] == "pycanon":
            return lambda n, hs: all(diversity.recursive_c(h, l, "pycanon") <= c for h in hs.values())

        def rec(n, hs):
            for h in hs.values():
                r1, tail = diversity.r1_and_tail(h, l, True)
                if not r1 < c * tail:
                    return False
            return True
        return rec
    if model == "t_closeness":
        return lambda n, hs: all(float(g[s].t(h)) <= p["t"] for s, h in hs.items())
    if model == "basic_beta_likeness":
        return lambda n, hs: all(float(g[s].beta(h)) <= p["beta"] for s, h in hs.items())
    if model == "enhanced_beta_likeness":
        if p["reading"] == "pycanon":
            raise invalid("enhanced beta-likeness in the 'pycanon' reading is a table-level number, "
                          "not a per-class test", hint="use reading 'standard' for a predicate")
        return lambda n, hs: all(g[s].enhanced_ok(h, p["beta"]) for s, h in hs.items())
    if model == "delta_disclosure":
        return lambda n, hs: all(g[s].delta(h, p["reading"]) < p["delta"] for s, h in hs.items())
    raise AssertionError(model)


def _required(model, p):
    thresholds, _ = MODELS[model]
    need = {"recursive_cl_diversity": ("c", "l")}.get(model)
    if need:
        missing = [x for x in need if x not in p]
        if missing:
            raise invalid(f"a {model} predicate needs parameter(s) {missing}")
    elif not any(x in p for x in thresholds):
        raise invalid(f"a {model} predicate needs a threshold: {' or '.join(thresholds)}")


def predicate(model, params, global_hists=None):
    """An admissible-cut test for Mondrian/GAA: ``test(size, {SA: histogram}) -> bool`` is
    true iff a candidate class satisfies the model's thresholds in ``params`` for every SA
    whose histogram it is given (attribute scope, M1).  ``global_hists`` ({SA: histogram} of
    the whole table) is needed by t-closeness, beta-likeness and delta-disclosure; it is
    prepared once here."""
    model = _model(model)
    p = _params(model, params)
    if p["scope"] != "attribute":
        raise invalid("a per-class predicate works in the attribute scope only",
                      hint="the joint scope regroups rows by the other SAs; check the result with check()")
    _required(model, p)
    g = _globals(model, p, list(global_hists or {}), global_hists)
    test = _class_test(model, p, g)

    def admissible(size, sa_histograms):
        size = count(size, "class size")
        hs = {s: hist(h, f"histogram of {s!r}") for s, h in (sa_histograms or {}).items()}
        if g and any(s not in g for s in hs):
            raise invalid(f"no global histogram for SA(s) {sorted(s for s in hs if s not in g)}")
        return test(size, hs)

    return admissible


# --------------------------------------------------------------------------------------------
# check: achieved value per model, and whether the requested thresholds hold
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """The result of `check`.

    value   the achieved value: k (int); (alpha, k) for alpha_k_anonymity; l (int, or a real
            for entropy); (c, l) for recursive_cl_diversity (c an int, INF or None); t, beta
            or delta (float, INF possible)
    per_sa  SA -> that SA's achieved value (alpha, l, c, t, beta, delta); empty for k
    holds   whether every requested threshold holds; None when none was given
    """

    model: str
    scope: str
    value: object
    per_sa: dict = field(default_factory=dict)
    holds: bool = None
    params: dict = field(default_factory=dict)

    def as_json(self):
        """Plain JSON-able dict (infinity as the string 'Infinity', as PostgreSQL spells it)."""
        def j(x):
            if isinstance(x, tuple):
                return [j(y) for y in x]
            if isinstance(x, float) and math.isinf(x):
                return "Infinity"
            return x
        return {"model": self.model, "scope": self.scope, "value": j(self.value),
                "per_sa": {s: j(v) for s, v in self.per_sa.items()}, "holds": self.holds,
                "params": self.params}


def check(model, params, agg):
    """Assess ``agg`` (`Aggregates`) under ``model`` with ``params`` (a jsonb-like dict):
    thresholds (k, alpha, l, c, t, beta, delta) and options (scope 'attribute' | 'joint';
    reading 'standard' | 'pycanon'; for t: distance 'auto' | 'l1' | 'equal' | 'ordered' |
    'hierarchical' or {SA: distance}, order {SA: [values]}, hierarchy {SA: {node: parent}}).
    Returns a `Check` with the achieved value and whether the thresholds hold."""
    model = _model(model)
    if not isinstance(agg, Aggregates):
        raise invalid("check needs Aggregates", hint="build them with from_groups or from_rows")
    raw = dict(params or {})
    p = _params(model, raw)
    scope = p["scope"]
    sas = agg.sas
    if not sas and model != "k_anonymity":
        raise invalid(f"{model} needs at least one sensitive attribute",
                      hint="only k_anonymity can be checked without one")
    g = _globals(model, p, sas, agg.global_hists)
    if g:
        for s in sas:
            for i, h in enumerate(agg.scope_classes(s, scope)):
                covered(h, g[s].p, s, f"class {i + 1}")
    k = min(n for n, _ in agg.classes)
    per_sa = {}

    def each(fn):
        return {s: fn(s, agg.scope_classes(s, scope)) for s in sas}

    if model == "k_anonymity":
        value = k
    elif model == "alpha_k_anonymity":
        per_sa = each(lambda s, hs: diversity.alpha(hs))
        value = (max(per_sa.values()), k)
    elif model == "l_diversity":
        per_sa = each(lambda s, hs: diversity.distinct_l(hs))
        value = min(per_sa.values())
    elif model == "entropy_l_diversity":
        per_sa = each(lambda s, hs: diversity.entropy_l(hs))
        value = min(per_sa.values())
    elif model == "recursive_cl_diversity":
        l = p.get("l")
        if l is None:
            by = "attribute" if p["reading"] == "pycanon" else scope
            l = min(diversity.distinct_l(agg.scope_classes(s, by)) for s in sas)
        p["l"] = l
        if l < 2:
            per_sa = {s: None for s in sas}
            value = (None, l)
        else:
            per_sa = each(lambda s, hs: max(diversity.recursive_c(h, l, p["reading"]) for h in hs))
            value = (max(per_sa.values()), l)
    elif model == "t_closeness":
        per_sa = each(lambda s, hs: float(max(g[s].t(h) for h in hs)))
        value = max(per_sa.values())
    elif model == "basic_beta_likeness":
        per_sa = each(lambda s, hs: float(max(g[s].beta(h) for h in hs)))
        value = max(per_sa.values())
    elif model == "enhanced_beta_likeness":
        per_sa = each(lambda s, hs: distances.enhanced_beta(g[s], hs, p["reading"]))
        value = max(per_sa.values())
    else:
        per_sa = each(lambda s, hs: max(g[s].delta(h, p["reading"]) for h in hs))
        value = max(per_sa.values())

    holds = _holds(model, p, agg, g, value, k)
    return Check(model=model, scope=scope, value=value, per_sa=per_sa, holds=holds, params=raw)


def _holds(model, p, agg, g, value, k):
    thresholds, _ = MODELS[model]
    if not any(x in p for x in thresholds):
        return None
    if model == "recursive_cl_diversity" and value[0] is None:
        return False
    if model == "enhanced_beta_likeness" and p["reading"] == "pycanon":
        return value <= p["beta"]
    test = _class_test(model, p, g)
    size_only = model in ("k_anonymity",) or (model == "alpha_k_anonymity" and "alpha" not in p)
    if size_only or p["scope"] == "attribute" or len(agg.sas) == 1:
        if not all(test(n, hs) for n, hs in agg.classes):
            return False
        return True
    # joint scope: every SA is tested in its own grouping; k still on the QI classes
    if "k" in p and k < p["k"]:
        return False
    q = dict(p)
    q.pop("k", None)
    test = _class_test(model, q, g)
    return all(test(n, hs) for s in agg.sas for n, hs in agg.joint[s])
