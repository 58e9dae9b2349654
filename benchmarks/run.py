"""`make bench`: publish time of the six bucketization methods, as ratios to a plain table copy.

For each table (Adult, n = 30,162; a synthetic Adult-like table of 1,000,000 rows) and d = 3, 5:
  - CTAS: `CREATE TABLE ... AS SELECT` of the same columns (key, QIs, the d SAs), timed;
  - each method published in a fresh connection, timed end to end, with the backend's peak
    resident memory (VmHWM of its /proc entry) after the publish, and the phase seconds.
Writes benchmarks/results/bucketization.{json,md}. Usage: run.py [--rows N] [--methods a,b] [--skip-1m]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import psycopg
from psycopg import sql

from common import METHODS, fresh_database
from pganon import datasets, releases

QIS = ["age", "sex", "native_country", "income"]
SAS = ["occupation", "education", "marital_status", "workclass", "race"]
RESULTS = Path(__file__).resolve().parent / "results"


def peak_kib(pid: int) -> int | None:
    """VmHWM of a server backend (readable when we run as root or as the cluster owner)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def ctas_seconds(dsn: str, table: str, d: int) -> float:
    cols = ["id"] + QIS + SAS[:d]
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS bench_ctas")
        t0 = time.perf_counter()
        c.execute(sql.SQL("CREATE TABLE bench_ctas AS SELECT {} FROM {}").format(
            sql.SQL(", ").join(map(sql.Identifier, cols)), sql.Identifier(table)))
        dt = time.perf_counter() - t0
        c.execute("DROP TABLE bench_ctas")
    return dt


def publish_once(dsn: str, dataset: str, method: str, d: int) -> dict:
    with psycopg.connect(dsn, autocommit=True) as c:
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        base = peak_kib(pid)
        t0 = time.perf_counter()
        rid = releases.publish(c, dataset, method, {"d": d})
        wall = time.perf_counter() - t0
        peak = peak_kib(pid)
        rel = releases.get(c, release=rid)
        c.execute("SELECT pganon.drop_release(%s)", (rid,))   # keep the disk small
    m = rel["metrics"]
    return {"method": method, "d": d, "seconds": round(wall, 3), "peak_rss_mib": round(peak / 1024, 1) if peak else None,
            "idle_rss_mib": round(base / 1024, 1) if base else None, "groups": rel["groups"],
            "suppressed": rel["suppressed_rows"], "ail": m["ail"], "sr": m["sr"], "buckets": m["buckets"],
            "phases": rel["phase_seconds"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the synthetic table")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--skip-1m", action="store_true")
    args = ap.parse_args()
    methods = args.methods.split(",")

    dsn = fresh_database("pganon_bench")
    with psycopg.connect(dsn, autocommit=True) as c:
        datasets.load(c, "adult")
        tables = [("adult", "adult")]
        if not args.skip_1m:
            datasets.load(c, "adult_synthetic", rows=args.rows)
            tables.append(("adult_synthetic", "adult_synthetic"))

    runs = []
    for dataset, table in tables:
        n = psycopg.connect(dsn).execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]
        for d in (3, 5):
            ctas = ctas_seconds(dsn, table, d)
            for method in methods:
                r = publish_once(dsn, dataset, method, d)
                r.update(table=table, rows=n, ctas_seconds=round(ctas, 3), ratio=round(r["seconds"] / ctas, 1))
                runs.append(r)
                print(f"{table:16} n={n:>8} d={d} {method:11} {r['seconds']:8.2f}s  x{r['ratio']:<6} "
                      f"peak {r['peak_rss_mib']} MiB  groups {r['groups']}  SR {r['sr']:.4f}  AIL {r['ail']:.4f}", flush=True)
    RESULTS.mkdir(exist_ok=True)
    meta = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.platform(), "cpus": __import__("os").cpu_count()}
    (RESULTS / "bucketization.json").write_text(json.dumps({"meta": meta, "runs": runs}, indent=1))
    lines = ["# Bucketization publish times", "", f"Run {meta['when']} on {meta['machine']} ({meta['cpus']} cores). "
             "`ratio` = publish seconds / seconds of `CREATE TABLE AS SELECT` of the same columns, same run.", "",
             "| table | rows | d | method | seconds | CTAS s | ratio | peak backend RSS MiB | buckets | groups | SR | AIL | plan s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['table']} | {r['rows']} | {r['d']} | {r['method']} | {r['seconds']:.2f} | {r['ctas_seconds']:.2f} | "
                     f"{r['ratio']} | {r['peak_rss_mib']} | {r['buckets']} | {r['groups']} | {r['sr']:.4f} | {r['ail']:.4f} | "
                     f"{r['phases'].get('plan')} |")
    (RESULTS / "bucketization.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'bucketization.md'}")


if __name__ == "__main__":
    main()
