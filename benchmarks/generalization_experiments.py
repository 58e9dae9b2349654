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

The code, by job: generalization_studies (the design and the runs against the database),
generalization_claims (the paper's numbers and the checks of its claims), generalization_report
(the Markdown report and the JSON); this file is the command line (`make bench-gen`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import psycopg

from common import fresh_database
from generalization_report import write
from generalization_studies import (KS, MONDRIAN_KS, SPEED, TABLES, metric_study, mondrian_study,
                                    speed_study, strategy_study)
from pganon import datasets

RESULTS = Path(__file__).resolve().parent / "results"


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
