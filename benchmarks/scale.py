"""`make bench-scale`: publish time at 100k, 1M (and 10M) rows as ratios to a table copy, seconds
per phase, peak backend memory and load average, against the targets of issue 15; and a side
by side with ANJANA, anonypyx and pyCANON (scale_peers.py).

For each size n a template database is made once (pganon installed, Adult and the `--data` table
of n rows loaded, VACUUM ANALYZEd); every (method, n) run gets a fresh database copied from it
(`CREATE DATABASE ... TEMPLATE`), where a `CREATE TABLE AS` of the key, QIs and SAs is timed
(median of 3) right before the publish, so each ratio compares two timings of the same run.
Each publish runs under `statement_timeout` (`--timeout`): a run that does not finish is
recorded as "did not finish in X s" instead of hanging the benchmark.

    .venv/bin/python benchmarks/scale.py [--data adult_model] [--sizes 100000,1000000]
        [--methods mondrian,anatomy] [--timeout 1800] [--dsn postgresql://...] [--no-peers | --peers-only]

Sizes: `--sizes`, else the SIZES environment variable, else 100k and 1M (and 10M with FULL=1).
Writes benchmarks/results/scale.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import psycopg
from psycopg import sql

from memory_scaling import PeakSampler
from pganon import datasets, install, releases, server
from run import peak_kib

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_DATA, FALLBACK_DATA = "adult_model", "adult_synthetic"
# method -> (params, largest n it runs at by default: None = every size)
RUNS = {
    "mmdcf_mslf": ({"d": 5}, None),
    "mondrian": ({"k": 10}, None),
    "anatomy": ({}, None),
    "gaa": ({"k": 10}, None),
    "ck_anonymization": ({"k": 10, "c": 2, "c_f": 2, "c_f_excess": "allow"}, 100_000),
}
TPL, RUN_DB = "pganon_scale_tpl", "pganon_scale_run"


def sizes_from(arg: str | None) -> list[int]:
    """--sizes, else $SIZES, else 100k and 1M, plus 10M when FULL=1."""
    text = arg or os.environ.get("SIZES")
    if text:
        return [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    return [100_000, 1_000_000] + ([10_000_000] if os.environ.get("FULL") == "1" else [])


def pick_data(wanted: str) -> tuple[str, str]:
    """The dataset to load and a note for the report: `adult_model` falls back to
    `adult_synthetic` while the realistic generator is not registered yet."""
    if wanted in datasets.DATASETS:
        return wanted, f"`{wanted}` ({datasets.DATASETS[wanted].description})"
    if wanted == DEFAULT_DATA:
        return FALLBACK_DATA, (f"`{FALLBACK_DATA}` (fallback: `{DEFAULT_DATA}` is not registered in "
                               f"pganon.datasets in this tree; `{FALLBACK_DATA}` resamples Adult rows, "
                               "so it has only Adult's distinct QI vectors)")
    sys.exit(f"unknown dataset {wanted!r}; known: {', '.join(sorted(datasets.DATASETS))}")


def recreate(admin: str, name: str, template: str | None = None) -> str:
    """(Re)create database `name`, empty or as a copy of `template`; its DSN."""
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)) + (
            sql.SQL(" TEMPLATE {}").format(sql.Identifier(template)) if template else sql.SQL("")))
    return psycopg.conninfo.make_conninfo(admin, dbname=name)


def drop_db(admin: str, name: str) -> None:
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def prepare(admin: str, data: str, n: int) -> dict:
    """The template database for size n: pganon, Adult and the data table; returns its columns."""
    dsn = recreate(admin, TPL)
    install.install(dsn)
    t0 = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as c:
        datasets.load(c, "adult")
        datasets.load(c, data, rows=n)
        table = datasets.get_dataset(data).default_table
        c.execute(sql.SQL("VACUUM (ANALYZE, FREEZE) {}").format(sql.Identifier(table)))
        attrs = c.execute("SELECT column_name, role FROM pganon.attributes WHERE dataset = %s ORDER BY position",
                          (data,)).fetchall()
        key = c.execute("SELECT key_column FROM pganon.dataset WHERE name = %s", (data,)).fetchone()[0]
        rows = c.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]
    return {"table": table, "key": key, "rows": rows, "load_seconds": round(time.perf_counter() - t0, 1),
            "qis": [a for a, r in attrs if r == "quasi"], "sas": [a for a, r in attrs if r == "sensitive"]}


def ctas_seconds(dsn: str, table: str, cols: list[str], repeat: int = 3) -> float:
    """Median seconds of `CREATE TABLE AS SELECT cols FROM table` (the floor a publish is held to)."""
    times = []
    with psycopg.connect(dsn, autocommit=True) as c:
        for _ in range(repeat):
            c.execute("DROP TABLE IF EXISTS bench_ctas")
            t0 = time.perf_counter()
            c.execute(sql.SQL("CREATE TABLE bench_ctas AS SELECT {} FROM {}").format(
                sql.SQL(", ").join(map(sql.Identifier, cols)), sql.Identifier(table)))
            times.append(time.perf_counter() - t0)
        c.execute("DROP TABLE bench_ctas")
    return statistics.median(times)


def publish_run(dsn: str, dataset: str, method: str, params: dict, timeout: int, check: dict | None) -> dict:
    """One publish under statement_timeout with its peak backend memory (VmHWM and sampled RssAnon),
    phase seconds and load average; `check` = {qis, sas, csv}: also time pganon.check k-anonymity
    on the release's GT and export the GT for pyCANON."""
    out = {"method": method, "params": params, "load_before": round(os.getloadavg()[0], 2)}
    with psycopg.connect(dsn, autocommit=True) as c:
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        c.execute(sql.SQL("SET statement_timeout = {}").format(sql.Literal(f"{int(timeout)}s")))
        sampler = PeakSampler(pid)
        sampler.start()
        t0 = time.perf_counter()
        try:
            rid = releases.publish(c, dataset, method, params)
            out["status"] = "ok"
        except psycopg.errors.QueryCanceled:
            rid, out["status"] = None, f"did not finish in {timeout} s"
        except Exception as exc:   # a method refusing the data is a result to report, not a crash
            rid, out["status"] = None, f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        wall = time.perf_counter() - t0
        peak = peak_kib(pid)
        sampler.stop.set()
        sampler.join()
        out.update(seconds=round(wall, 3), load_after=round(os.getloadavg()[0], 2),
                   peak_rss_mib=round(peak / 1024, 1) if peak else None,
                   peak_private_mib=round(sampler.peak["RssAnon"] / 1024, 1) or None)
        if rid is None:
            return out
        c.execute("RESET statement_timeout")
        rel = releases.get(c, release=rid)
        out["phases"] = rel["phase_seconds"]
        out["verify_share"] = round(rel["phase_seconds"].get("verify", 0) / wall, 3)
        if check:
            out["check"] = check_gt(c, rid, check)
        c.execute("SELECT pganon.drop_release(%s)", (rid,))
    return out


def check_gt(c, rid: int, check: dict) -> dict:
    """pganon.check k_anonymity on the GT, timed; the GT's QI columns written to check['csv']."""
    gt = f"pganon_data.r{int(rid)}_gt"
    t0 = time.perf_counter()
    r = c.execute("SELECT pganon.check(%s::regclass, %s, %s, 'k_anonymity')",
                  (gt, check["qis"], check["sas"][:1])).fetchone()[0]
    secs = time.perf_counter() - t0
    cols = sql.SQL(", ").join(sql.Identifier(q) for q in check["qis"] + check["sas"][:1])
    with open(check["csv"], "wb") as f, c.cursor().copy(sql.SQL("COPY (SELECT {} FROM {}) TO STDOUT WITH CSV HEADER")
                                                       .format(cols, sql.SQL(gt))) as cp:
        for block in cp:
            f.write(block)
    return {"seconds": round(secs, 3), "k": r["value"], "relation": "GT of this release"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=DEFAULT_DATA, help="dataset to scale (default adult_model, else adult_synthetic)")
    ap.add_argument("--sizes", help="comma-separated row counts (default: $SIZES, else 100000,1000000; FULL=1 adds 10M)")
    ap.add_argument("--methods", default=",".join(RUNS))
    ap.add_argument("--timeout", type=int, default=1800, help="statement_timeout per publish, seconds")
    ap.add_argument("--dsn", help="a server to use instead of the embedded one (needs CREATEDB)")
    ap.add_argument("--all-sizes", action="store_true", help="run every method at every size (ck too)")
    ap.add_argument("--no-peers", action="store_true", help="skip the ANJANA / anonypyx / pyCANON section")
    ap.add_argument("--peers-only", action="store_true", help="only the peer section, added to results/scale.json")
    ap.add_argument("--peer-rows", type=int, default=1_000_000, help="rows of the large peer table")
    ap.add_argument("--peer-timeout", type=int, default=900, help="seconds per peer run")
    args = ap.parse_args()
    started = time.time()
    sizes, methods = sizes_from(args.sizes), args.methods.split(",")
    unknown = [m for m in methods if m not in RUNS]
    if unknown:
        sys.exit(f"unknown method(s) {unknown}; known: {', '.join(RUNS)}")
    data, data_note = pick_data(args.data)
    admin = args.dsn or server.start()
    print(f"data {data}; sizes {sizes}; methods {methods}", flush=True)

    import scale_peers, scale_report   # noqa: E401 (after argument parsing: --help stays fast)
    if args.peers_only:
        result = json.loads((RESULTS / "scale.json").read_text())
        data = result["meta"]["data"]
    else:
        runs, tables = matrix(admin, data, sizes, methods, args)
        result = {"meta": scale_report.meta(data, data_note, sizes, methods, args, started),
                  "tables": {str(k): v for k, v in tables.items()}, "runs": runs, "peers": None}
        result["meta"]["wall_seconds"] = round(time.time() - started)
        scale_report.write(result, RESULTS)   # kept even when the peer section fails
    if not args.no_peers:
        t0 = time.time()
        try:
            peers = scale_peers.run_all(admin, data, result["runs"], args)
        except Exception as exc:   # a peer or a dataset failing must not lose the matrix above
            peers = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            drop_db(admin, scale_peers.PEER_DB)
        peers.update(wall_seconds=round(time.time() - t0), command=scale_report.meta(
            data, "", sizes, methods, args, t0)["command"])
        result["peers"] = peers
        scale_report.write(result, RESULTS)
    print(f"wrote {RESULTS / 'scale.md'} in {round(time.time() - started)} s")


def matrix(admin: str, data: str, sizes: list[int], methods: list[str], args) -> tuple[list, dict]:
    """Every (size, method) publish against its CTAS, each in a fresh copy of the size's template."""
    runs, tables = [], {}
    for n in sizes:
        meta = prepare(admin, data, n)
        tables[n] = meta
        print(f"n={n}: template ready in {meta['load_seconds']} s ({meta['rows']} rows)", flush=True)
        cols = [meta["key"]] + meta["qis"] + meta["sas"]
        for method in methods:
            params, cap = RUNS[method]
            if cap is not None and n > cap and not args.all_sizes:
                runs.append({"method": method, "params": params, "rows": n,
                             "status": f"skipped (runs up to {cap:,} rows; --all-sizes)"})
                continue
            dsn = recreate(admin, RUN_DB, TPL)
            ctas = ctas_seconds(dsn, meta["table"], cols)
            r = publish_run(dsn, data, method, params, args.timeout, None)
            r.update(rows=meta["rows"], ctas_seconds=round(ctas, 3),
                     ratio=round(r["seconds"] / ctas, 1) if r["status"] == "ok" else None)
            runs.append(r)
            print(json.dumps(r), flush=True)
        drop_db(admin, RUN_DB)
        drop_db(admin, TPL)
    return runs, tables

if __name__ == "__main__":
    main()
