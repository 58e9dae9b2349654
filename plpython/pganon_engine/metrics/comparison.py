"""`pganon.compare(releases, params)`: the measures every release shape shares, side by side on
one shared workload (issue 6).  Releases of one dataset made from the same rows and attributes
are measured against the same original tuples and the same seeded queries, so their numbers
compare; each release is read from its own relations (`reconstruct`).

Per release: KL divergence of the reconstructed joint distribution, the shared workload's ARE
at each selectivity theta, NCP% of the QI cells, DM, the release's own class sizes, the
suppression rate, the attacker's confidence in each SA (joint.J4), its recorded metrics (AIL,
SR, the fcorr audit, ...) and seconds per phase.  Pure reading: nothing is written.
"""

import numpy as np

from pganon_engine.core import params as P
from pganon_engine.core.errors import invalid

from . import estimate, joint, ncp, reconstruct

THETAS = (0.05, 0.1, 0.2)


def compare(db, releases, params=None):
    params = dict(params or {})
    P.unknown_params("compare", params, {"thetas", "queries", "seed", "qd"})
    thetas = params.get("thetas", list(THETAS))
    if not isinstance(thetas, list) or not thetas:
        raise invalid("parameter thetas must be a non-empty list of selectivities in (0, 1]")
    thetas = [P.fraction({"theta": t}, "theta", None) for t in thetas]
    queries = P.integer(params, "queries", 0, default=1000)
    seed = P.integer(params, "seed", 0, default=0)
    qd = P.integer(params, "qd", 1, default=2)
    if not isinstance(releases, list) or not releases:
        raise invalid("give at least one release id")
    shared = {}  # (source, attributes, limit) -> (Original, {theta: workloads})
    out = []
    for rid in releases:
        info, ds, rel, why = reconstruct.read(db, int(rid))
        row = _summary(info)
        if rel is None:
            row["not_comparable"] = why
            out.append(row)
            continue
        key = (ds.source, tuple(rel.names), info["params"].get("limit"))
        if key not in shared:
            orig = reconstruct.original(db, ds, info["layout"], info["params"])
            shared[key] = (orig, {})
        orig, workloads = shared[key]
        row.update(_measure(orig, rel, workloads, thetas, queries, seed, qd))
        out.append(row)
    return {"releases": out, "workload": {"thetas": thetas, "queries": queries, "seed": seed, "qd": qd,
                                          "scheme": "spec 003 §3.2: qd random QIs plus one SA, domain fractions"}}


def _summary(info):
    lay, m = info["layout"], info["metrics"] or {}
    n = int(info["source_rows"])
    return {"release": info["id"], "dataset": info["dataset"], "method": info["method"], "params": info["params"],
            "family": lay.get("family"), "model": lay.get("model"), "qis": [q["column"] for q in lay.get("qis", [])],
            "sas": lay.get("sas"), "rows": n, "published": int(info["published_rows"]),
            "suppressed": int(info["suppressed_rows"]), "suppression": int(info["suppressed_rows"]) / n if n else 0.0,
            "seconds": round(sum(info["phase_seconds"].values()), 4), "phase_seconds": info["phase_seconds"],
            "metrics": m}


def _measure(orig, rel, workloads, thetas, queries, seed, qd):
    ms = joint.masses(orig, rel)
    kl, covers = joint.kl_divergence(orig, ms)
    cells, weights = joint.workload_cells(orig, rel)
    nq = rel.n_qis
    res = {"kl_divergence": kl, "covers_all": covers, "confidence": joint.confidence(orig, ms),
           "dm": joint.discernibility(rel.group_sizes, rel.suppressed, orig.n),
           "classes": len(rel.group_sizes), "class_sizes": _sizes(rel.group_sizes),
           "size_distribution": joint.size_distribution(rel.group_sizes)}
    doms = None
    if nq:
        doms = _domains(orig, workloads)
        ncells, nweights = joint.workload_cells(orig, rel, split=False)
        res["ncp_percent"] = ncp.ncp_percent([c[:nq] for c in ncells], nweights, doms[:nq])
    if queries:
        doms = doms or _domains(orig, workloads)
        cache = {}

        def prepared(j):  # the release as SA j's queries see it, parsed once for every theta
            if j not in cache:
                cache[j] = estimate.prepare(doms, *(joint.project(cells, weights, nq, j) if j is not None
                                                    else (cells, weights)))
            return cache[j]
        are = {}
        for t in thetas:
            if t not in workloads:
                workloads[t] = joint.shared_workload(doms, nq, t, queries, seed, qd)
            are[str(t)] = joint.are(workloads[t], prepared)
        res["are"] = are
    return res


def _domains(orig, workloads):
    if "domains" not in workloads:
        expand = np.repeat(np.arange(len(orig.counts)), orig.counts.astype(np.int64))
        workloads["domains"] = joint.workload_domains(orig, expand)
    return workloads["domains"]


def _sizes(g):
    if not len(g):
        return None
    a = np.asarray(g, dtype=np.float64)
    return {"min": int(a.min()), "median": float(np.median(a)), "mean": float(a.mean()), "max": int(a.max())}
