"""Issue 4 experiments: the metric study and the strategy study of Mauger et al. (spec 001 §4.2-4.8)
with GAA, Mondrian's NCP and class counts for k = 2..100 (spec 003 §5), and publish speed, on UCI
Adult.

    .venv/bin/python benchmarks/generalization_experiments.py [--only metric,strategy,mondrian,speed]
        [--quick] [--scopes table,class] [--repeats 3] [--report-only]

Metric study (Table 3): all nine attributes as QIs (age, sex, race, marital_status, education,
native_country, workclass, occupation, income), GAA with S1 for each of the seven metrics and the
14 values of k (A10); every table scored by mean alteration over the seven metrics, % generalized
and % at the root; NAUC on [3, 2000] (trapezoid on linear k, A11).
Strategy study (Tables 4-5): the paper's three real tables mapped onto Adult (TABLES):
Adult_Age (S = age) and Adult_Mar (S = marital_status) as in the paper, the other eight of the
nine as QIs; florida_30162_Aff (voter list, S = party affiliation, QIs zipcode, year of birth,
gender, race) is not available offline, so Adult_Aff stands in for it: the same shape (four
demographic QIs: age for year of birth, sex, race, native_country as the place attribute) and a
few-valued, skewed, non-demographic S, workclass (7 values, l_div(T*) = 2.66; Affiliation's is
about 3.16).  Metrics NLLM and Total; strategies S1..S7, and the pure l_div / t_clo baselines
under NLLM (Figures 5-7; A16); privacy scope 'table' (the literal Defs 15-16) and 'class' (A7);
alteration under the run's metric, l_div(T) = exp(min class entropy of S) and t_clo(T) = max L1
distance (pganon.check on the published GT); NAUC on [3, 15000].
Mondrian: QIs age, workclass, education_num, marital_status, occupation, race, sex,
native_country; SA income; strict and relaxed; taxonomy splits on the shipped hierarchies; every
k from 2 to 100.
Speed: GAA (9 QIs, k = 10) and Mondrian (8 QIs, k = 10) on Adult, Mondrian on 1,000,000 rows of
adult_synthetic, each publish timed end to end (fresh connection; snapshot to expose,
verification included) `--repeats` times, each beside a `CREATE TABLE AS SELECT` of the same
columns (key, QIs, SAs) timed just before it: the ratio is what compares across runs of a shared
machine.  Once more per case with the default query-error workload (1,000 queries).

Writes benchmarks/results/generalization.{md,json} (after each study, and within the strategy
study after each table, metric and scope, so a long run keeps what it has; a run with --only keeps
the other studies' rows from the previous JSON).  Seconds are end-to-end publish times (snapshot
to expose, verification included), with the query-error workload switched off (queries = 0)
unless stated.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import psycopg
from psycopg import sql

from common import fresh_database
from pganon import datasets, releases
from pganon_engine.metrics import infoloss

RESULTS = Path(__file__).resolve().parent / "results"
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

# spec 001 §4.7-4.8: Tables 4 (NLLM) and 5 (Total), best first: (strategy, NAUC %)
PAPER = {
    ("Adult_Age", "nllm"): {
        "alteration": [(4, 69.71), (2, 70.07), (1, 71.19), (7, 79.46), (3, 88.02), (6, 89.77), (5, 99.6)],
        "l_div": [(5, 98.56), (6, 96.29), (3, 94.9), (7, 90.41), (4, 86.65), (1, 83.35), (2, 82.22)],
        "t_clo": [(5, 1.36), (6, 4.65), (3, 7.15), (7, 12.14), (4, 17.44), (1, 17.63), (2, 20.13)]},
    ("Adult_Mar", "nllm"): {
        "alteration": [(4, 72.92), (2, 73.37), (1, 76.58), (7, 83.35), (3, 90.43), (6, 92.45), (5, 99.28)],
        "l_div": [(5, 97.85), (7, 94.01), (6, 93.85), (3, 89.46), (1, 73.97), (2, 72.64), (4, 66.77)],
        "t_clo": [(5, 1.2), (6, 3.7), (7, 4.95), (3, 9.4), (1, 20.69), (4, 24.48), (2, 24.99)]},
    ("florida_30162_Aff", "nllm"): {
        "alteration": [(2, 72.71), (1, 72.72), (4, 72.79), (7, 80.34), (3, 90.24), (6, 90.89), (5, 100.0)],
        "l_div": [(5, 99.98), (3, 98.74), (6, 98.68), (7, 97.43), (2, 86.65), (1, 86.64), (4, 86.6)],
        "t_clo": [(5, 0.02), (6, 3.06), (3, 3.1), (7, 4.93), (2, 15.98), (1, 15.98), (4, 16.01)]},
    ("Adult_Age", "total"): {
        "alteration": [(2, 79.97), (7, 83.9), (1, 84.51), (4, 85.93), (3, 90.87), (6, 92.42), (5, 99.6)],
        "l_div": [(5, 98.56), (3, 95.71), (6, 95.17), (7, 90.61), (4, 88.6), (1, 82.16), (2, 81.99)],
        "t_clo": [(5, 1.36), (3, 5.18), (6, 6.22), (7, 11.47), (4, 13.59), (1, 17.88), (2, 20.6)]},
    ("Adult_Mar", "total"): {
        "alteration": [(1, 78.39), (4, 78.96), (2, 83.96), (7, 90.13), (6, 92.93), (3, 93.26), (5, 99.83)],
        "l_div": [(5, 99.16), (6, 96.4), (3, 96.01), (7, 95.98), (4, 82.25), (2, 78.25), (1, 73.78)],
        "t_clo": [(5, 0.43), (7, 2.45), (6, 3.8), (3, 6.37), (4, 13.24), (2, 17.12), (1, 18.24)]},
    ("florida_30162_Aff", "total"): {
        "alteration": [(4, 67.55), (1, 67.86), (2, 69.51), (7, 82.07), (3, 89.54), (6, 91.3), (5, 100.0)],
        "l_div": [(5, 99.98), (3, 98.64), (6, 98.62), (7, 97.14), (1, 88.63), (2, 88.59), (4, 87.76)],
        "t_clo": [(5, 0.02), (6, 2.37), (3, 3.77), (7, 4.63), (1, 15.09), (2, 15.2), (4, 15.82)]},
}
# spec 001 §7.3 items 17-22 (Figures 5-7): per paper table, S1's alteration at k = 3, the pure
# strategies' alteration at k = 3, and the first k where l_div reaches its maximum / t_clo ~ 0
PAPER_BASE = {
    "Adult_Mar": {"s1_alt3": 2.77, "ldiv_alt3": 60, "tclo_alt3": 60, "ldiv_k": 50, "tclo_k": 50},
    "Adult_Age": {"s1_alt3": None, "ldiv_alt3": None, "tclo_alt3": None, "ldiv_k": 500, "tclo_k": 500},
    "florida_30162_Aff": {"s1_alt3": 1.23, "ldiv_alt3": 97, "tclo_alt3": 97, "ldiv_k": 10, "tclo_k": 10},
}


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
                p = dict(params, sensitive=[sa], **({} if workload else {"queries": 0}))
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


# ---- report ---------------------------------------------------------------------------------


def _rank(rows, key, criterion, lo, hi, higher_better=False, scale=None):
    """[(name, NAUC)] best first for one criterion."""
    by = {}
    for r in rows:
        by.setdefault(r[key], []).append((r["k"], r[criterion] if scale is None else scale(r)))
    res = []
    for name, pts in by.items():
        ks = [k for k, _ in pts]
        if min(ks) > lo or max(ks) < hi:
            continue
        res.append((name, float(infoloss.nauc(ks, [float(v) for _, v in pts], lo, hi))))
    return sorted(res, key=lambda x: -x[1] if higher_better else x[1])


def _same(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _ranks(col):
    """Competition ranks of a best-first [(name, value)] list: equal values share a rank (1, 2, 2, 4)."""
    out = []
    for i, (_, v) in enumerate(col):
        out.append(out[-1] if i and _same(v, col[i - 1][1]) else i + 1)
    return out


def _table(columns):
    """Rank rows from several [(name, value)] lists side by side; a rank shared by equal values
    is shown once per column as 'name (=r)'."""
    n = max(len(c) for _, c in columns)
    head = "| Rank | " + " | ".join(f"{t}: name | NAUC" for t, _ in columns) + " |"
    sep = "|---|" + "---|---|" * len(columns)
    lines = [head, sep]
    ranks = [_ranks(c) for _, c in columns]
    for i in range(n):
        cells = []
        for (_, c), rk in zip(columns, ranks):
            if i < len(c):
                tie = rk[i] != i + 1 or (i + 1 < len(c) and rk[i + 1] == rk[i])
                cells += [f"{c[i][0]}" + (f" (={rk[i]})" if tie else ""), f"{c[i][1]:.2f}"]
            else:
                cells += ["", ""]
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    return lines


def _spearman(a, b):
    """Spearman's rho of two {name: value} maps over their common names (average ranks for ties)."""
    names = sorted(set(a) & set(b))

    def ranks(d):
        vals = sorted(d[x] for x in names)
        return [sum(i for i, v in enumerate(vals) if v == d[x]) / vals.count(d[x]) for x in names]
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float("nan")


def claims_metric(rows, lo=3, hi=2000):
    alt = _rank(rows, "metric", "mean_alteration", lo, hi)
    gen = _rank(rows, "metric", "p_gen", lo, hi)
    root = _rank(rows, "metric", "p_root", lo, hi)
    worst2 = lambda r: {n for n, _ in r[-2:]}
    normalized = {"distortion", "total", "ncp", "nllm", "wnllm"}
    a, g, t = dict(alt), dict(gen), dict(root)
    return [
        ("LLM and WLLM are the two worst metrics on all three criteria (item 13)",
         all(worst2(r) == {"llm", "wllm"} for r in (alt, gen, root)),
         "; ".join(f"{c}: worst two {sorted(worst2(r))}" for c, r in (("alteration", alt), ("%gen", gen), ("%root", root)))),
        ("normalized metrics beat LLM and WLLM on alteration (item 13)",
         max(a[m] for m in normalized) < min(a["llm"], a["wllm"]),
         f"worst normalized {max(normalized, key=a.get)} {max(a[m] for m in normalized):.2f} vs best of LLM/WLLM "
         f"{min(a['llm'], a['wllm']):.2f}"),
        ("normalized metrics beat LLM and WLLM on % generalized and % root (item 13)",
         all(max(d[m] for m in normalized) < min(d["llm"], d["wllm"]) for d in (g, t)),
         f"%gen: worst normalized {max(g[m] for m in normalized):.2f} vs {min(g['llm'], g['wllm']):.2f}; "
         f"%root: {max(t[m] for m in normalized):.2f} vs {min(t['llm'], t['wllm']):.2f}"),
        ("NLLM best on mean alteration on Adult (item 14; paper 56.07)", alt[0][0] == "nllm",
         f"best {alt[0][0]} {alt[0][1]:.2f}, NLLM {a['nllm']:.2f}"),
        ("NLLM best on % generalized on Adult (item 14; paper 59.63)", gen[0][0] == "nllm",
         f"best {gen[0][0]} {gen[0][1]:.2f}, NLLM {g['nllm']:.2f}"),
        ("Distortion best on % root, NLLM second (item 14; paper 48.35, 49.74)",
         [n for n, _ in root[:2]] == ["distortion", "nllm"], ", ".join(f"{n} {v:.2f}" for n, v in root[:2])),
    ], (alt, gen, root)


def _strategy_nauc(rs, lo, hi):
    alt = _rank(rs, "strategy", "alteration", lo, hi)
    ldv = _rank(rs, "strategy", "l_div", lo, hi, higher_better=True, scale=lambda r: 100 * r["l_div"] / r["l_div_max"])
    tcl = _rank(rs, "strategy", "t_clo", lo, hi, scale=lambda r: 100 * r["t_clo"])
    return alt, ldv, tcl


def strategy_tables(rows):
    """{(table, scope, metric): (alt, l_div, t_clo)} over S1..S7, NAUC on [3, max k]."""
    out = {}
    for key in sorted({(r["table"], r.get("scope", "table"), r["metric"]) for r in rows}, key=_block_order):
        rs = [r for r in rows if (r["table"], r.get("scope", "table"), r["metric"]) == key and r["strategy"] in STRATEGIES]
        if rs:
            out[key] = _strategy_nauc(rs, 3, max(r["k"] for r in rs))
    return out


def _block_order(key):
    table, scope, metric = key
    return (list(TABLES).index(table) if table in TABLES else 9, scope != "table", metric != "nllm", metric)


def claims_strategy(tables):
    """Per claim, per (table, scope, metric): (holds, numbers).  Equal NAUCs (identical curves are
    common: several strategies often make the same merges) are ties: a group is 'the best three'
    when no other strategy is strictly better than one of them; 'worst', 'best' and 'between'
    are strict."""
    claims = {}
    G = ("S1", "S2", "S4")
    others = lambda xs: [x for x in STRATEGIES if x not in xs]
    lt = lambda a, b: a < b and not _same(a, b)

    def put(claim, key, ok, text):
        claims.setdefault(claim, {})[key] = (ok, text)

    def order(col, sign):
        rk = _ranks(col)
        return sign.join(f"{n}" + ("=" if i + 1 < len(col) and rk[i + 1] == rk[i] else "")
                         for i, (n, _) in enumerate(col)).replace("=" + sign, "=")
    for key, (alt, ldv, tcl) in tables.items():
        a, l, t = dict(alt), dict(ldv), dict(tcl)
        if set(a) != set(STRATEGIES):
            continue
        put("alteration: {S1,S2,S4} the best three (item 23)", key,
            not any(lt(a[o], a[g]) for o in others(G) for g in G), order(alt, " < "))
        put("alteration: S5 the worst (item 23; a literal S5 is expected near S1, A8)", key,
            all(lt(a[o], a["S5"]) for o in others(["S5"])), f"S5 {a['S5']:.2f}, S1 {a['S1']:.2f}")
        put("alteration: S7 between {S1,S2,S4} and {S3,S6} (item 23)", key,
            all(lt(a[g], a["S7"]) for g in G) and all(lt(a["S7"], a[x]) for x in ("S3", "S6")),
            f"S7 {a['S7']:.2f}; {{S1,S2,S4}} max {max(a[g] for g in G):.2f}; {{S3,S6}} min "
            f"{min(a['S3'], a['S6']):.2f}")
        put("S5 best on l-diversity and on t-closeness (item 23; not expected of a literal S5, A8)", key,
            all(lt(l[o], l["S5"]) and lt(t["S5"], t[o]) for o in others(["S5"])),
            f"l: {ldv[0][0]} {ldv[0][1]:.1f} (S5 {l['S5']:.1f}); t: {tcl[0][0]} {tcl[0][1]:.1f} (S5 {t['S5']:.1f})")
        put("l-diversity: {S1,S2,S4} the last three (item 23)", key,
            not any(lt(l[o], l[g]) for o in others(G) for g in G), order(ldv, " > "))
        put("t-closeness: {S1,S2,S4} the last three (item 23)", key,
            not any(lt(t[g], t[o]) for o in others(G) for g in G), order(tcl, " < "))
        put("S3 and S6 favour l/t at high alteration: each worse on alteration and better on l and t than "
            "each of S1, S2, S4 (§4.3.2)", key,
            all(lt(a[y], a[x]) and lt(l[y], l[x]) and lt(t[x], t[y]) for x in ("S3", "S6") for y in G),
            f"alt S3 {a['S3']:.1f} S6 {a['S6']:.1f} vs max {max(a[g] for g in G):.1f}; l S3 {l['S3']:.1f} S6 "
            f"{l['S6']:.1f} vs max {max(l[g] for g in G):.1f}; t S3 {t['S3']:.1f} S6 {t['S6']:.1f} vs min "
            f"{min(t[g] for g in G):.1f}")
        put("the worst l-div NAUC > 66 % and the worst t-clo NAUC < 25 % (item 23)", key,
            ldv[-1][1] > 66 and tcl[-1][1] < 25, f"{ldv[-1][1]:.1f} / {tcl[-1][1]:.1f}")
        ra, rt = _spearman(a, l), _spearman(a, t)
        put("more alteration, better l and t (item 26): Spearman rho(alt, l-div) > 0 and rho(alt, t-clo) < 0 "
            "over S1..S7", key, ra > 0 and rt < 0, f"{ra:+.2f} / {rt:+.2f}")
    return claims


def claims_metric_switch(tables):
    """Item 24: NLLM <-> Total changes the strategy orderings only slightly.  Spearman rho between
    the two metrics' NAUCs per measure, ours and the paper's."""
    out = []
    for table, (_, _, paper) in TABLES.items():
        for scope in ("table", "class"):
            x, y = tables.get((table, scope, "nllm")), tables.get((table, scope, "total"))
            if not x or not y:
                continue
            ours = [_spearman(dict(x[i]), dict(y[i])) for i in range(3)]
            pp = [_spearman({f"S{s}": v for s, v in PAPER[(paper, "nllm")][m]},
                            {f"S{s}": v for s, v in PAPER[(paper, "total")][m]}) for m in ("alteration", "l_div", "t_clo")]
            out.append((table, scope, ours, pp, paper))
    return out


def _first_k(rs, test):
    hit = [r["k"] for r in sorted(rs, key=lambda r: r["k"]) if test(r)]
    return hit[0] if hit else None


def claims_baselines(rows):
    """Items 17-22 per (table, scope): ours next to the paper's (Figures 5-7)."""
    out = []
    for table, (_, _, paper) in TABLES.items():
        for scope in ("table", "class"):
            rs = [r for r in rows if r["table"] == table and r.get("scope", "table") == scope and r["metric"] == "nllm"]
            ld = [r for r in rs if r["strategy"] == "l_div"]
            tc = [r for r in rs if r["strategy"] == "t_clo"]
            s1 = [r for r in rs if r["strategy"] == "S1" and r["k"] == 3]
            if not ld or not tc:
                continue
            at3 = lambda xs: next((r["alteration"] for r in xs if r["k"] == 3), None)
            kl = _first_k(ld, lambda r: r["l_div"] >= 0.999 * r["l_div_max"])
            kt = _first_k(tc, lambda r: r["t_clo"] <= 0.001)
            alt_at = lambda xs, k: next((r["alteration"] for r in xs if r["k"] == k), None)
            out.append({"table": table, "scope": scope, "paper": paper, "p": PAPER_BASE[paper],
                        "s1_alt3": s1[0]["alteration"] if s1 else None, "ldiv_alt3": at3(ld), "tclo_alt3": at3(tc),
                        "ldiv_k": kl, "tclo_k": kt, "ldiv_alt_at_k": alt_at(ld, kl), "tclo_alt_at_k": alt_at(tc, kt)})
    return out


def _fmt(x, nd=2):
    return "-" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def _paper_cells(paper, metric):
    p = PAPER.get((paper, metric))
    if not p:
        return None
    return [[f"S{s} {v:g}" for s, v in p[m]] for m in ("alteration", "l_div", "t_clo")]


def write_strategy(lines, st):
    tables = strategy_tables(st)
    lines += ["## Strategy study (Tables 4-5)", "",
              "NAUC % on [3, 15000] (trapezoid on linear k) over the 14 k of A10; alteration (under the metric that "
              "guides the run) and t-closeness (L1) lower is better, l-diversity (% of l_div(T*)) higher is better. "
              "Tables as the paper's Tables 4-5: ranks best first, the paper's column for the same table and metric "
              "beside ours. Mapping of the paper's tables: Adult_Age (S = age) and Adult_Mar (S = marital_status) as "
              "in the paper, 8 QIs; florida_30162_Aff cannot be reproduced (the Florida voter extract is not "
              "available offline and not redistributable), so **Adult_Aff stands in for it**: the same shape - four "
              "demographic QIs (age for year of birth, sex, race, native_country as the place attribute) and a "
              "few-valued, skewed, non-demographic S, workclass (7 values, l_div(T*) = 2.66, Affiliation's is "
              "about 3.16). Its paper column is florida's, for the shape of the ranking only. Privacy scope "
              "'table' is the literal Defs 15-16 (a candidate is scored by the whole table after the merge); "
              "'class' scores the merged class alone (A7).", ""]
    for (table, scope, metric), (alt, ldv, tcl) in tables.items():
        paper = TABLES.get(table, (None, None, table))[2]
        lmax = next(r["l_div_max"] for r in st if r["table"] == table)
        lines += [f"### {table}, metric {metric.upper() if metric == 'nllm' else metric.title()}, scope {scope} "
                  f"(l_div(T*) = {lmax:.2f})", ""]
        pc = _paper_cells(paper, metric)
        head = ["Alteration", "l-diversity", "t-closeness"]
        row0 = "| Rank | " + " | ".join(f"{h}: strategy | NAUC" for h in head)
        if pc:
            row0 += " | " + " | ".join(f"paper {paper} {h}" for h in head)
        lines += [row0 + " |", "|---|" + "---|---|" * 3 + ("---|" * 3 if pc else "")]
        rks = [_ranks(c) for c in (alt, ldv, tcl)]
        for i in range(len(alt)):
            cells = []
            for col, rk in zip((alt, ldv, tcl), rks):
                tie = rk[i] != i + 1 or (i + 1 < len(col) and rk[i + 1] == rk[i])
                cells += [col[i][0] + (f" (={rk[i]})" if tie else ""), f"{col[i][1]:.2f}"]
            if pc:
                cells += [pc[0][i], pc[1][i], pc[2][i]]
            lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
        lines.append("")
    claims = claims_strategy(tables)
    keys = list(tables)
    if claims:
        lines += ["### Paper claims on the strategies (spec 001 §7.3)", "",
                  "One column per table / metric / scope; **no** marks a claim that does not hold here, with its "
                  "numbers. Equal NAUCs (identical curves: several strategies often make the same merges) are ties, "
                  "written S1=S2: a group is 'the best / last three' when no other strategy is strictly better / "
                  "worse than one of them; 'worst', 'best' and 'between' are strict.", ""]
        short = lambda k: f"{k[0]} {k[2].upper() if k[2] == 'nllm' else k[2].title()} {k[1]}"
        lines += ["| claim | " + " | ".join(short(k) for k in keys) + " |", "|---|" + "---|" * len(keys)]
        for claim, per in claims.items():
            lines.append(f"| {claim} | " + " | ".join(
                (("yes: " if per[k][0] else "**no**: ") + per[k][1]) if k in per else "-" for k in keys) + " |")
        held = sum(ok for per in claims.values() for ok, _ in per.values())
        total = sum(len(per) for per in claims.values())
        lines += ["", f"{held} of {total} claim checks hold.", ""]
    sw = claims_metric_switch(tables)
    if sw:
        lines += ["Item 24 (NLLM and Total give nearly the same strategy orderings): Spearman rho between the NLLM "
                  "and Total NAUCs of S1..S7, per measure (alteration / l-div / t-clo); the paper's own Tables 4 vs 5 "
                  "beside it.", "", "| table | scope | ours | paper |", "|---|---|---|---|"]
        for table, scope, ours, pp, paper in sw:
            lines.append(f"| {table} | {scope} | {' / '.join(f'{x:+.2f}' for x in ours)} | "
                         f"{' / '.join(f'{x:+.2f}' for x in pp)} ({paper}) |")
        lines.append("")
    base = claims_baselines(st)
    if base:
        lines += ["### Pure strategies l_div and t_clo (Figures 5-7, items 17-22), NLLM", "",
                  "First k: the first k of the grid where the pure strategy's l_div reaches 99.9 % of l_div(T*), or "
                  "its t_clo is at most 0.001. Paper values read from the text of §4.3.2.", "",
                  "| table | scope | S1 alt % at k=3 (paper) | l_div: alt % at k=3 (paper) | l_div: first k at max "
                  "(paper) | alt % there | t_clo: alt % at k=3 (paper) | t_clo: first k ~0 (paper) | alt % there |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for b in base:
            p = b["p"]
            lines.append(f"| {b['table']} | {b['scope']} | {_fmt(b['s1_alt3'])} ({_fmt(p['s1_alt3'])}) | "
                         f"{_fmt(b['ldiv_alt3'])} ({_fmt(p['ldiv_alt3'])}) | {_fmt(b['ldiv_k'])} ({p['ldiv_k']}) | "
                         f"{_fmt(b['ldiv_alt_at_k'])} | {_fmt(b['tclo_alt3'])} ({_fmt(p['tclo_alt3'])}) | "
                         f"{_fmt(b['tclo_k'])} ({p['tclo_k']}) | {_fmt(b['tclo_alt_at_k'])} |")
        lines += ["", "Curves (alteration % / l_div / t_clo per k):", "",
                  "| table | scope | strategy | " + " | ".join(str(k) for k in KS) + " |",
                  "|---|---|---|" + "---|" * len(KS)]
        for table in TABLES:
            for scope in ("table", "class"):
                for strategy in ["S1"] + BASELINES:
                    rs = sorted((r for r in st if r["table"] == table and r.get("scope", "table") == scope
                                 and r["metric"] == "nllm" and r["strategy"] == strategy), key=lambda r: r["k"])
                    if rs:
                        lines.append(f"| {table} | {scope} | {strategy} | " + " | ".join(
                            f"{r['alteration']:.1f} / {r['l_div']:.2f} / {r['t_clo']:.3f}" for r in rs) + " |")
        lines.append("")
    secs = [r["seconds"] for r in st]
    lines += [f"GAA publish seconds in this study ({len(secs)} releases): median {statistics.median(secs)}, "
              f"max {max(secs)}.", ""]


def write_mondrian(lines, mo, rows):
    by = {(r["mode"], r["k"]): r for r in mo}
    ks = sorted({r["k"] for r in mo})
    lines += ["## Mondrian on Adult (8 QIs, SA income)", "",
              "QIs age, workclass, education_num, marital_status, occupation, race, sex, native_country; numeric age "
              "and education_num are cut at medians and published as ranges, the categorical QIs split along the "
              "shipped hierarchies and published as hierarchy nodes. NCP % = the mean over QIs and records of "
              "(range width / domain width) or (leaves under the node - 1) / (leaves - 1) (a leaf counts 0, A15).", ""]
    s10, x10, s20 = by.get(("strict", 10)), by.get(("relaxed", 10)), by.get(("strict", 20))
    checks = []
    if s10 and s20:
        checks.append(("NCP grows from k = 10 to k = 20 (spec 003 C3; paper 12 % -> 15.03 % on INFORMS)",
                       s20["ncp"] >= s10["ncp"], f"{s10['ncp']:.2f} -> {s20['ncp']:.2f}"))
    for mode in ("strict", "relaxed"):
        seq = [by[(mode, k)] for k in ks if (mode, k) in by]
        dips = [(a["k"], b["k"]) for a, b in zip(seq, seq[1:]) if b["ncp"] < a["ncp"] - 1e-9]
        checks.append((f"{mode}: NCP never falls as k grows over 2..100 (not a theorem for Mondrian)", not dips,
                       f"{len(dips)} fall(s)" + (f", e.g. k = {dips[0][0]} -> {dips[0][1]}" if dips else "")))
        checks.append((f"{mode}: every class holds at least k rows (classes <= n / k)",
                       all(r["classes"] * r["k"] <= 30162 for r in seq), f"{len(seq)} k values"))
    both = [k for k in ks if ("strict", k) in by and ("relaxed", k) in by]
    worse = [k for k in both if by[("relaxed", k)]["ncp"] > by[("strict", k)]["ncp"] + 1e-9]
    checks.append(("relaxed loses no more than strict (NCP relaxed <= strict at every k)", not worse,
                   f"relaxed higher at {len(worse)} of {len(both)} k" + (f", e.g. k = {worse[0]}" if worse else "")))
    if s10 and x10:
        checks.append(("reference anchor: Basic Mondrian on Adult, K = 10: 12.19 % strict / 24.91 % relaxed "
                       "(reference README, other hierarchies and a leaf counting 1/|A|, A15), within 2.5 points",
                       abs(s10["ncp"] - 12.19) <= 2.5 and abs(x10["ncp"] - 24.91) <= 2.5,
                       f"ours {s10['ncp']:.2f} / {x10['ncp']:.2f}"))
        checks.append(("Mondrian at k = 10 takes about 2 s (spec 003 Table 16: 2 s)", s10["seconds"] <= 2.0,
                       f"{s10['seconds']} s end to end, queries off"))
    lines += ["| check | holds | numbers |", "|---|---|---|"]
    lines += [f"| {c} | {'yes' if ok else '**no**'} | {n} |" for c, ok, n in checks]
    lines += ["", "| k | strict NCP % | strict classes | strict s | relaxed NCP % | relaxed classes | relaxed s |",
              "|---|---|---|---|---|---|---|"]
    for k in ks:
        s, x = by.get(("strict", k)), by.get(("relaxed", k))
        cells = [k]
        for r in (s, x):
            cells += ["-", "-", "-"] if r is None else [f"{r['ncp']:.2f}", r["classes"], r["seconds"]]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    per = [(mode, by[(mode, 10)]["ncp_by_attribute"]) for mode in ("strict", "relaxed")
           if (mode, 10) in by and "ncp_by_attribute" in by[(mode, 10)]]
    if per:
        cols = list(per[0][1])
        lines += ["", "NCP % per QI at k = 10 (where the loss is):", "", "| mode | " + " | ".join(cols) + " |",
                  "|---|" + "---|" * len(cols)]
        lines += [f"| {mode} | " + " | ".join(f"{d[c]:.1f}" for c in cols) + " |" for mode, d in per]
    qe = [r for r in rows if r["study"] == "mondrian_qe"]
    if qe:
        lines += ["", f"With the default query-error workload (1,000 queries, theta 0.1), k = 10 strict takes "
                      f"{qe[0]['seconds']} s end to end (mean query error {qe[0]['query_error']:.3f}); "
                      f"phases {qe[0]['phases']}."]
    lines.append("")


def write_speed(lines, sp):
    lines += ["## Speed (issue 4 acceptance)", "",
              "Each case published in a fresh connection, end to end (`pganon.publish`: snapshot, plan, assign, "
              "materialize, verify, measure, expose), with the query-error workload off (queries = 0) for the "
              "repeated runs and on (the default 1,000 queries) for one more; each run beside a "
              "`CREATE TABLE AS SELECT` of the same columns (key, QIs, SA) timed just before it. The machine has "
              "2 cores shared with other developers: the ratio is the number to compare across runs; `load` is "
              "the 1-minute load average at the end of the run.", "",
              "| case | rows | QIs | queries | runs | seconds median (min-max) | target | CTAS s median | "
              "ratio median | plan s | verify s | measure s | load |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for case in SPEED:
        for q in (0, 1000):
            rs = [r for r in sp if r["case"] == case and r["queries"] == q]
            if not rs:
                continue
            secs = [r["seconds"] for r in rs]
            med = statistics.median(secs)
            tgt = TARGETS.get(case)
            verdict = "-" if tgt is None or q else (f"< {tgt:g} s: {'yes' if med < tgt else '**no**'}")
            ph = lambda x: statistics.median(r["phases"].get(x, 0) for r in rs)
            lines.append(f"| {case} | {rs[0]['rows']:,} | {rs[0]['qis']} | {q} | {len(rs)} | {med:.2f} "
                         f"({min(secs):.2f}-{max(secs):.2f}) | {verdict} | "
                         f"{statistics.median(r['ctas_seconds'] for r in rs):.3f} | "
                         f"{statistics.median(r['ratio'] for r in rs):.0f} | {ph('plan'):.2f} | {ph('verify'):.2f} | "
                         f"{ph('measure'):.2f} | {max(r['load'] for r in rs):.1f} |")
    lines.append("")


def write_summary(lines, rows):
    """The findings first: every paper claim checked below, counted, with the numbers that decide
    it; then the notes recorded for this run (rows of study 'note')."""
    out = []
    met = [r for r in rows if r["study"] == "metric"]
    if met:
        claims, (alt, _, _) = claims_metric(met)
        bad = [f"{c.split(' (')[0]} ({n})" for c, ok, n in claims if not ok]
        out.append(f"- **Metric study** (Table 3, NAUC on [3, 2000]): {len(claims) - len(bad)} of {len(claims)} "
                   f"claims hold. Not held: " + "; ".join(bad) + ". The linear-k NAUC is decided by k >= 250 (a few "
                   "dozen classes left); on [3, 100] NLLM is best on mean alteration and LLM worst on all three "
                   "criteria (second table below).")
    st = [r for r in rows if r["study"] == "strategy"]
    if st:
        tables = strategy_tables(st)
        claims = claims_strategy(tables)
        parts = []
        for claim, per in claims.items():
            held = sum(ok for ok, _ in per.values())
            parts.append(f"{claim.split(' (')[0]}: {held}/{len(per)}")
        out.append("- **Strategy study** (Tables 4-5; 3 tables x 2 metrics x 2 privacy scopes = 12 columns): claims "
                   "held per column - " + "; ".join(parts) + ".")
        s1 = []
        for table, (_, _, paper) in TABLES.items():
            for metric in ("nllm", "total"):
                key = (table, "table", metric)
                if key in tables and (paper, metric) in PAPER:
                    ours = dict(tables[key][0])["S1"]
                    theirs = dict((f"S{x}", v) for x, v in PAPER[(paper, metric)]["alteration"])["S1"]
                    s1.append(f"{table} {metric} {ours:.1f} vs {theirs:g}")
        out.append("- S1's alteration NAUC, ours (table scope) vs the paper: " + "; ".join(s1) + " (Adult_Aff against "
                   "florida's, a stand-in). Our shipped hierarchies are coarser than the paper's unknown ones (A1), "
                   "so every curve reaches the root sooner and all alteration NAUCs sit higher.")
        out.append("- A literal S5 (min t_clo among min-cost partners, Def. 17) behaves like S1, as spec A8 predicts: "
                   "it is neither the worst on alteration nor the best on l/t in any column; the paper's S5 rows "
                   "(99-100 % alteration, best l/t) are not reproduced. S2 and S5 only break ties of cost, which "
                   "NLLM's leaf-count costs rarely have: under NLLM in table scope S2 = S5 = S1 on Adult_Age and "
                   "Adult_Mar.")
        k3 = lambda t, sc, x: next((r["alteration"] for r in st if (r["table"], r["scope"], r["metric"], r["strategy"],
                                                                    r["k"]) == (t, sc, "nllm", x, 3)), None)
        diag = [f"{t}: S1 {k3(t, 'table', 'S1'):.2f}, S3 {k3(t, 'table', 'S3'):.2f} (class scope: S3 "
                f"{k3(t, 'class', 'S3'):.2f})" for t in TABLES
                if None not in (k3(t, "table", "S1"), k3(t, "table", "S3"), k3(t, "class", "S3"))]
        if diag:
            out.append("- Table vs class scope (A7): the spec's diagnostic holds - in table scope S3's alteration at "
                       "k = 3 equals S1's (NLLM: " + "; ".join(diag) + "), because the table's l_div is decided by a "
                       "worst class the merge does not touch, so nearly all candidates tie and cost decides. Class "
                       "scope makes S3/S6/S7 privacy-first from the start.")
        base = claims_baselines(st)
        if base:
            out.append("- Pure l_div / t_clo strategies: alteration at k = 3 and the first k at the optimum, ours vs "
                       "paper: " + "; ".join(
                           f"{b['table']} {b['scope']}: {_fmt(b['ldiv_alt3'], 1)} / {_fmt(b['tclo_alt3'], 1)} % "
                           f"(paper {_fmt(b['p']['ldiv_alt3'])}), optimum from k = {b['ldiv_k']} / {b['tclo_k']} "
                           f"(paper {b['p']['ldiv_k']} / {b['p']['tclo_k']})" for b in base) + ". Alteration is "
                       "100 % wherever the optimum is reached (item 22 holds).")
    mo = {(r["mode"], r["k"]): r for r in rows if r["study"] == "mondrian"}
    if ("strict", 10) in mo and ("relaxed", 10) in mo:
        a, b = mo[("strict", 10)], mo[("relaxed", 10)]
        per = a.get("ncp_by_attribute", {})
        worst = max(per, key=per.get) if per else None
        out.append(f"- **Mondrian** (k = 10): NCP {a['ncp']:.2f} % strict / {b['ncp']:.2f} % relaxed, "
                   f"{a['classes']} / {b['classes']} classes; the reference README's 12.19 / 24.91 % are not met"
                   + (f": {worst} alone loses {per[worst]:.1f} % (its shipped hierarchy is one level, leaf -> *, so a "
                      f"partition splits it only when every value has k rows)" if worst else "") + ". NCP grows with k "
                   "in both modes; relaxed is not always below strict.")
    sp = [r for r in rows if r["study"] == "speed"]
    if sp:
        bits = []
        for case, tgt in TARGETS.items():
            rs = [r for r in sp if r["case"] == case and r["queries"] == 0]
            if rs:
                med = statistics.median(r["seconds"] for r in rs)
                bits.append(f"{case} {med:.2f} s (target < {tgt:g} s: {'met' if med < tgt else '**missed**'}; "
                            f"{statistics.median(r['ratio'] for r in rs):.0f}x CTAS)")
        qe = [r for r in sp if r["case"] == "mondrian_adult" and r["queries"] == 1000]
        out.append("- **Speed**, query error off: " + "; ".join(bits) + "." + (
            f" With the default 1,000-query workload Mondrian k = 10 on Adult takes {qe[0]['seconds']:.1f} s, "
            f"{qe[0]['phases'].get('measure', 0):.1f} s of it in measure (drawing the query workload, "
            "workload.make_queries), so the 2 s target holds only with queries = 0." if qe else ""))
    notes = [r for r in rows if r["study"] == "note"]
    if out or notes:
        lines += ["## Summary", ""] + out
        if notes:
            lines += ["", "Run notes:", ""] + [f"- ({r['about']}) {r['text']}" for r in notes]
        lines.append("")


def write(rows, args):
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "generalization.json").write_text(json.dumps(rows, indent=1))
    lines = ["# Generalization experiments (spec 001 §4, spec 003 §5)", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M:%S')} on {platform.platform()} (`{args.cmd}`). UCI Adult, "
             "30,162 rows, the shipped hierarchies (pganon/data/hierarchies; the paper's are unknown, A1). "
             "GAA with the faithful options (pairwise cost, ties to the smallest creation id; table scope unless "
             "a table says 'class'). Seconds: end-to-end publish (snapshot to expose, verification included), "
             "query error off unless stated. Reproduce: `nice -n 5 .venv/bin/python "
             "benchmarks/generalization_experiments.py --only <study>`; the report alone from the JSON: "
             "`--report-only`.", ""]
    write_summary(lines, rows)
    met = [r for r in rows if r["study"] == "metric"]
    if met:
        claims, (alt, gen, root) = claims_metric(met)
        lines += ["## Metric study (Table 3): NAUC % on [3, 2000], lower is better", ""]
        lines += _table([("Mean alteration", alt), ("% generalized", gen), ("% at the root", root)])
        lines += ["", "| claim (spec 001 §7.3) | holds | numbers |", "|---|---|---|"]
        lines += [f"| {c} | {'yes' if ok else '**no**'} | {n} |" for c, ok, n in claims]
        small = [r for r in met if r["k"] <= 100]
        if len({r["k"] for r in small}) >= 2:
            hi = max(r["k"] for r in small)
            lines += ["", "The linear-k NAUC on [3, 2000] is decided by k >= 250, where a table has a few dozen "
                      f"classes. The same ranking and claims on [3, {hi}] (realistic k; not the paper's range):", ""]
            lines += _table([(t, _rank(small, "metric", c, 3, hi)) for t, c in
                             (("Mean alteration", "mean_alteration"), ("% generalized", "p_gen"), ("% at the root", "p_root"))])
            c2, _ = claims_metric(small, 3, hi)
            lines += ["", "| claim on [3, 100] | holds | numbers |", "|---|---|---|"]
            lines += [f"| {c} | {'yes' if ok else '**no**'} | {n} |" for c, ok, n in c2]
        lines += ["", "Per k (mean alteration % / % generalized / % root / classes / s):", "",
                  "| metric | " + " | ".join(str(k) for k in sorted({r['k'] for r in met})) + " |",
                  "|---|" + "---|" * len({r['k'] for r in met})]
        for metric in METRICS:
            rs = sorted((r for r in met if r["metric"] == metric), key=lambda r: r["k"])
            lines.append(f"| {metric} | " + " | ".join(
                f"{r['mean_alteration']:.1f} / {r['p_gen']:.1f} / {r['p_root']:.1f} / {r['classes']} / {r['seconds']}"
                for r in rs) + " |")
        lines.append("")
    st = [r for r in rows if r["study"] == "strategy"]
    if st:
        write_strategy(lines, st)
    mo = [r for r in rows if r["study"] == "mondrian"]
    if mo:
        write_mondrian(lines, mo, rows)
    sp = [r for r in rows if r["study"] == "speed"]
    if sp:
        write_speed(lines, sp)
    (RESULTS / "generalization.md").write_text("\n".join(lines) + "\n")


def reused_database(name):
    """The DSN of database `name` when it already holds pganon and the adult dataset (a resumed
    run after a server restart need not DROP DATABASE, which waits for every backend), else None."""
    from pganon import server
    dsn = psycopg.conninfo.make_conninfo(server.start(), dbname=name)
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            ok = c.execute("SELECT to_regclass('pganon._installation') IS NOT NULL AND "
                           "to_regclass('adult') IS NOT NULL").fetchone()[0]
    except psycopg.OperationalError:
        return None
    return dsn if ok else None


def main():
    global RESULTS
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="metric,strategy,mondrian,speed")
    ap.add_argument("--quick", action="store_true", help="a few k values (a smoke run)")
    ap.add_argument("--strategy-metrics", default="nllm,total")
    ap.add_argument("--scopes", default="table,class", help="privacy scopes of the strategy study")
    ap.add_argument("--tables", default=",".join(TABLES), help="tables of the strategy study")
    ap.add_argument("--repeats", type=int, default=3, help="speed: timed publishes per case (queries off)")
    ap.add_argument("--rows", type=int, default=1_000_000, help="speed: rows of adult_synthetic")
    ap.add_argument("--cases", default=",".join(SPEED), help="speed: cases to run")
    ap.add_argument("--resume", action="store_true",
                    help="strategy: keep the runs of the previous JSON and do the missing ones")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from the JSON")
    ap.add_argument("--results", default=str(RESULTS), help="directory of generalization.{md,json}")
    args = ap.parse_args()
    RESULTS = Path(args.results)
    if args.report_only:
        args.cmd = "generalization_experiments.py (report rewritten from results/generalization.json)"
        write(json.loads((RESULTS / "generalization.json").read_text()), args)
        return
    args.cmd = "generalization_experiments.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k not in ("quick", "report_only", "results", "resume")) + (
        " --quick" if args.quick else "")
    only = set(args.only.split(","))
    args.cmd += " (and earlier runs of the other studies)" if only != {"metric", "strategy", "mondrian", "speed"} else ""
    ks = [3, 10, 100, 2000] if args.quick else KS
    dsn = reused_database("pganon_bench_gen") if args.resume else None
    dsn = dsn or fresh_database("pganon_bench_gen")
    # keep the studies this run does not redo (a run of one study updates its part of the report)
    old = RESULTS / "generalization.json"
    redo = {"metric": {"metric"}, "mondrian": {"mondrian", "mondrian_qe"}, "strategy": {"strategy"}, "speed": {"speed"}}
    skip = set().union(*(redo[x] for x in only))
    rows = [r for r in json.loads(old.read_text())] if old.exists() else []
    rows = [r for r in rows if r["study"] not in skip and not (r["study"] == "note" and r["about"] in only)]
    if "strategy" in only and set(args.tables.split(",")) != set(TABLES):  # redo only the named tables
        rows += [r for r in json.loads(old.read_text()) if r["study"] == "strategy"
                 and r["table"] not in args.tables.split(",")] if old.exists() else []
    done = set()
    if args.resume and "strategy" in only and old.exists():
        prev = [r for r in json.loads(old.read_text()) if r["study"] == "strategy"]
        rows = [r for r in rows if r["study"] != "strategy"] + prev
        done = {(r["table"], r["scope"], r["metric"], r["strategy"], r["k"]) for r in prev}
        print(f"resuming: {len(done)} strategy runs kept", flush=True)
    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('adult')").fetchone()[0] is None:
            datasets.load(conn, "adult")
        if "metric" in only:
            metric_study(conn, ks, rows)
            write(rows, args)
        if "mondrian" in only:
            mondrian_study(conn, [2, 10, 20, 100] if args.quick else MONDRIAN_KS, rows)
            write(rows, args)
        if "strategy" in only:
            strategy_study(conn, args.tables.split(","), [3, 10, 100, 15000] if args.quick else KS, args.strategy_metrics.split(","),
                           args.scopes.split(","), rows, lambda: write(rows, args), done)
            write(rows, args)
    if "speed" in only:
        speed_study(dsn, 1 if args.quick else args.repeats, 100_000 if args.quick else args.rows, rows,
                    set(args.cases.split(",")))
        write(rows, args)
    print(f"wrote {RESULTS / 'generalization.md'}")


if __name__ == "__main__":
    main()
