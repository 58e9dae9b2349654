"""The runs of the generalization experiments (see generalization_experiments.py for the studies
and how to start them): the design (attributes, k grids, the strategy study's tables, the speed
cases and their targets) and each study as publishes against the database, one JSON row per run.

Why a module of its own: running the studies takes hours against a server and appends rows;
judging the rows against the paper (generalization_claims) and writing the report
(generalization_report) read only those rows, so a report can be rewritten without a server.
"""

from __future__ import annotations

import json
import os
import time

import psycopg
from psycopg import sql

from pganon import datasets, releases
from pganon_engine.metrics import infoloss

METRICS = list(infoloss.METRICS)
KS = [3, 4, 5, 10, 20, 50, 100, 250, 500, 1000, 2000, 5000, 10000, 15000]
NINE = ["age", "sex", "race", "marital_status", "education", "native_country", "workclass", "occupation", "income"]
STRATEGIES = ["S1", "S2", "S3", "S4", "S5", "S6", "S7"]
BASELINES = ["l_div", "t_clo"]
# strategy study: table -> (S, QIs, the paper's table it stands for)
TABLES = {
    "Adult_Age": ("age", [q for q in NINE if q != "age"], "Adult_Age"),
    "Adult_Mar": ("marital_status", [q for q in NINE if q != "marital_status"], "Adult_Mar"),
    "Adult_Aff": ("workclass", ["age", "sex", "race", "native_country"], "florida_30162_Aff"),
}
MONDRIAN_QIS = ["age", "workclass", "education_num", "marital_status", "occupation", "race", "sex", "native_country"]
MONDRIAN_KS = list(range(2, 101))


def declare(conn, qis, sa, dataset="adult"):
    """Roles for one study: the given QIs, one SA, every other column insensitive."""
    cols = [r[0] for r in conn.execute("SELECT column_name FROM pganon.attributes WHERE dataset = %s", (dataset,))]
    for c in cols:
        role = "quasi" if c in qis else "sensitive" if c == sa else "insensitive"
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (dataset, c, role))


def publish(conn, method, params, dataset="adult"):
    t0 = time.perf_counter()
    rid = releases.publish(conn, dataset, method, dict(params, queries=params.get("queries", 0)))
    wall = time.perf_counter() - t0
    rel = releases.get(conn, release=rid)
    return rid, rel, wall


def gt_measures(conn, rid, qis, sa):
    """l_div(T) and t_clo(T) (L1) of S over the published QI vectors (pganon.check)."""
    gt = f"pganon_data.r{rid}_gt"
    l = conn.execute("SELECT pganon.check(%s::regclass, %s, %s, 'entropy_l_diversity')", (gt, qis, [sa])).fetchone()[0]
    t = conn.execute("SELECT pganon.check(%s::regclass, %s, %s, 't_closeness', '{\"distance\": \"l1\"}')",
                     (gt, qis, [sa])).fetchone()[0]
    return float(l["value"]), float(t["value"])


def drop(conn, rid):
    conn.execute("SELECT pganon.drop_release(%s)", (rid,))


# ---- studies --------------------------------------------------------------------------------


def metric_study(conn, ks, out):
    declare(conn, NINE, "relationship")  # S plays no role with S1 (spec §4.1: all nine are QIs)
    for metric in METRICS:
        for k in ks:
            rid, rel, wall = publish(conn, "gaa", {"k": k, "metric": metric, "sensitive": ["relationship"]})
            m = rel["metrics"]
            row = {"study": "metric", "metric": metric, "k": k, "mean_alteration": m["mean_alteration"],
                   "alteration": m["alteration"], "p_gen": m["p_gen"], "p_root": m["p_root"],
                   "classes": m["classes"], "seconds": round(wall, 2)}
            out.append(row)
            print(json.dumps(row), flush=True)
            drop(conn, rid)


def strategy_study(conn, tables, ks, metrics, scopes, out, flush, done=()):
    """Every (table, scope, metric): S1..S7 and, under the first metric, the pure baselines;
    runs in `done` ((table, scope, metric, strategy, k), already in `out`) are skipped."""
    for table in tables:
        sa, qis, _ = TABLES[table]
        declare(conn, qis, sa)
        lmax = ldiv_max(conn, sa)
        for scope in scopes:
            for metric in metrics:
                strategies = STRATEGIES + (BASELINES if metric == metrics[0] else [])
                for strategy in strategies:
                    for k in ks:
                        if (table, scope, metric, strategy, k) in done:
                            continue
                        rid, rel, wall = publish(conn, "gaa", {"k": k, "metric": metric, "strategy": strategy,
                                                               "sa": sa, "sensitive": [sa], "privacy_scope": scope})
                        ldiv, tclo = gt_measures(conn, rid, qis, sa)
                        m = rel["metrics"]
                        row = {"study": "strategy", "table": table, "scope": scope, "metric": metric,
                               "strategy": strategy, "k": k, "alteration": m["alteration"], "l_div": ldiv,
                               "t_clo": tclo, "l_div_max": lmax, "classes": m["classes"], "seconds": round(wall, 2)}
                        out.append(row)
                        print(json.dumps(row), flush=True)
                        drop(conn, rid)
                    flush()


def ldiv_max(conn, sa):
    """l_div(T*) of S: the entropy l-diversity of the whole table as one class."""
    r = conn.execute("SELECT pganon.check('adult', '{}', %s, 'entropy_l_diversity')", ([sa],)).fetchone()[0]
    return float(r["value"])


def mondrian_study(conn, ks, out):
    declare(conn, MONDRIAN_QIS, "income")
    for mode in ("strict", "relaxed"):
        for k in ks:
            rid, rel, wall = publish(conn, "mondrian", {"k": k, "mode": mode})
            m = rel["metrics"]
            row = {"study": "mondrian", "mode": mode, "k": k, "ncp": m["ncp_percent"], "classes": m["classes"],
                   "c_avg": m["c_avg"], "dm": m["dm"], "seconds": round(wall, 2), "phases": rel["phase_seconds"],
                   "ncp_by_attribute": m["ncp_by_attribute"]}
            out.append(row)
            print(json.dumps(row), flush=True)
            drop(conn, rid)
    rid, rel, wall = publish(conn, "mondrian", {"k": 10, "queries": 1000})
    out.append({"study": "mondrian_qe", "k": 10, "mode": "strict", "seconds": round(wall, 2),
                "query_error": rel["metrics"]["query_error"]["mean"], "phases": rel["phase_seconds"]})
    drop(conn, rid)


# speed cases: name -> (dataset, method, QIs, SA, params); the acceptance targets in seconds
SPEED = {
    "gaa_adult_s1": ("adult", "gaa", NINE, "relationship", {"k": 10, "metric": "nllm", "strategy": "S1"}),
    "gaa_adult_s4": ("adult", "gaa", NINE, "relationship", {"k": 10, "metric": "nllm", "strategy": "S4"}),
    "gaa_adult_s7": ("adult", "gaa", NINE, "relationship", {"k": 10, "metric": "nllm", "strategy": "S7"}),
    "mondrian_adult": ("adult", "mondrian", MONDRIAN_QIS, "income", {"k": 10, "mode": "strict"}),
    "mondrian_adult_relaxed": ("adult", "mondrian", MONDRIAN_QIS, "income", {"k": 10, "mode": "relaxed"}),
    "mondrian_1m": ("adult_synthetic", "mondrian", MONDRIAN_QIS, "income", {"k": 10, "mode": "strict"}),
}
TARGETS = {"gaa_adult_s1": 60.0, "mondrian_adult": 2.0, "mondrian_1m": 120.0}


def ctas_seconds(dsn, table, cols):
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS bench_gen_ctas")
        t0 = time.perf_counter()
        c.execute(sql.SQL("CREATE TABLE bench_gen_ctas AS SELECT {} FROM {}").format(
            sql.SQL(", ").join(map(sql.Identifier, cols)), sql.Identifier(table)))
        dt = time.perf_counter() - t0
        c.execute("DROP TABLE bench_gen_ctas")
    return dt


def speed_study(dsn, repeats, rows_1m, out, cases=None):
    """Each case: `repeats` x (CTAS of the same columns, then a publish with queries = 0 in a fresh
    connection), then one publish with the default query-error workload."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('adult_synthetic')").fetchone()[0] is None:
            datasets.load(conn, "adult_synthetic", rows=rows_1m)
    for name, (dataset, method, qis, sa, params) in SPEED.items():
        if cases and name not in cases:
            continue
        with psycopg.connect(dsn, autocommit=True) as conn:
            declare(conn, qis, sa, dataset)
            n = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(dataset))).fetchone()[0]
        for rep in range(repeats + 1):
            workload = rep == repeats  # the last run: default query-error workload
            ctas = ctas_seconds(dsn, dataset, ["id"] + qis + [sa])
            with psycopg.connect(dsn, autocommit=True) as conn:
                p = dict(params, sensitive=[sa], queries=1000 if workload else 0)
                t0 = time.perf_counter()
                rid = releases.publish(conn, dataset, method, p)
                wall = time.perf_counter() - t0
                rel = releases.get(conn, release=rid)
                drop(conn, rid)
            row = {"study": "speed", "case": name, "dataset": dataset, "rows": n, "method": method,
                   "qis": len(qis), "params": params, "queries": 1000 if workload else 0,
                   "seconds": round(wall, 3), "ctas_seconds": round(ctas, 3), "ratio": round(wall / ctas, 1),
                   "phases": rel["phase_seconds"], "classes": rel["metrics"]["classes"],
                   "load": os.getloadavg()[0]}
            out.append(row)
            print(json.dumps(row), flush=True)
