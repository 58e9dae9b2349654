"""Spec 004 §5 experiments: (c,k)-anonymization against the (p,k)-angelization baseline, side by
side, on UCI Adult (first N rows) and on NMES 1987 (4,406 people, 7 sensitive attributes).

For each setting both methods publish the same rows; the report gives NCP%, query error (1,000
seeded COUNT queries at selectivity theta), vulnerable records of the fcorr attack (`correct`
and `covered`, spec 004 §2.8), linkable bucket pairs, and seconds. Sweeps: k, the number of
sensitive attributes, theta, and the QI set (age+sex, then all declared QIs).

    .venv/bin/python benchmarks/ck_experiments.py [--adult-rows 0 (all)] [--nmes-rows 0 (all)] [--quick]

The refinement, the verifier's eq. (4)/(5) check and the audit work on linkable bucket pairs,
whose number is quadratic in the buckets (4.5 million for a (p,k) release of full Adult at k = 10);
they are vectorized (numpy bit masks, SQL bit strings), so full Adult publishes in seconds.

Writes benchmarks/results/ck_experiments.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import psycopg

from common import fresh_database
from pganon import datasets, releases

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = {"(c,k)": ("ck_anonymization", {"c": 2, "c_f": 2, "c_f_excess": "allow"}), "(p,k)": ("pk_angelization", {"p": 2})}

# dataset -> (delta, sensitive attributes in the order they are added, all QIs)
SETUPS = {
    "adult": ("occupation", ["occupation", "education", "marital_status", "workclass", "race", "relationship"],
              ["age", "sex", "native_country", "income"]),
    "nmes": ("numchron", ["numchron", "hlth", "adldiff", "medicaid", "privins", "hosp", "emr"],
             ["age", "sex", "region", "black", "maried"]),
}


def set_qis(conn, dataset: str, qis: list[str], all_qis: list[str]) -> None:
    for q in all_qis:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (dataset, q, "quasi" if q in qis else "insensitive"))


def run_one(conn, dataset, label, k, sas, theta, limit):
    method, extra = METHODS[label]
    params = {"k": k, "sensitive": sas, "theta": theta, "queries": 1000, **extra}
    if limit:
        params["limit"] = limit
    t0 = time.perf_counter()
    rid = releases.publish(conn, dataset, method, params)
    wall = time.perf_counter() - t0
    rel = releases.get(conn, release=rid)
    conn.execute("SELECT pganon.drop_release(%s)", (rid,))
    m, ph = rel["metrics"], rel["phase_seconds"]
    a = m["audit"]
    return {"method": label, "k": k, "d": len(sas), "theta": theta, "ncp": m["ncp_percent"],
            "query_error": m["query_error"]["mean"], "vulnerable_correct": a["n_vulnerable_correct"],
            "vulnerable_covered": a["n_vulnerable_covered"], "linkable_pairs": a["n_linkable_pairs"],
            "breaches": a["n_breaches"], "groups": m["groups"], "buckets": m["buckets"],
            "seconds": round(wall, 2), "seconds_without_audit": round(wall - ph.get("measure", 0), 2)}


def sweep(conn, dataset, limit, quick):
    delta, sas_all, qis_all = SETUPS[dataset]
    conn.execute("SELECT pganon.set_attribute(%s, %s, 'sensitive')", (dataset, sas_all[-1]))  # Adult: relationship
    conn.execute("SELECT pganon.set_delta(%s, %s)", (dataset, delta))
    ks = [2, 4, 6, 8, 10] if not quick else [2, 6]
    ds_ = list(range(2, len(sas_all) + 1)) if not quick else [2, len(sas_all)]
    thetas = [0.05, 0.1, 0.2, 0.3] if not quick else [0.1]
    rows = []
    for qset, qis in (("age+sex", ["age", "sex"]), ("all QIs", qis_all)):
        set_qis(conn, dataset, qis, qis_all)
        settings = [("k", k, 4, 0.1) for k in ks] if qset == "age+sex" else [("qis", 4, 4, 0.1)]
        if qset == "age+sex":
            settings += [("d", 4, d, 0.1) for d in ds_] + [("theta", 4, 4, t) for t in thetas]
        for sweep_name, k, d, theta in settings:
            for label in METHODS:
                r = run_one(conn, dataset, label, k, sas_all[:d], theta, limit)
                r.update(dataset=dataset, qis=qset, sweep=sweep_name, rows=limit or "all")
                rows.append(r)
                print(json.dumps(r), flush=True)
    set_qis(conn, dataset, qis_all, qis_all)
    return rows


def claims(rows):
    """The paper's claims, checked on the measured rows (spec 004 §8)."""
    out = []
    for dataset in sorted({r["dataset"] for r in rows}):
        rs = [r for r in rows if r["dataset"] == dataset]
        ck = [r for r in rs if r["method"] == "(c,k)"]
        pk = [r for r in rs if r["method"] == "(p,k)"]
        out.append((dataset, "(c,k) has no vulnerable record", all(r["vulnerable_correct"] == 0 for r in ck),
                    f"max {max(r['vulnerable_correct'] for r in ck)}"))
        out.append((dataset, "(p,k) has vulnerable records", all(r["vulnerable_correct"] > 0 for r in pk),
                    f"min {min(r['vulnerable_correct'] for r in pk)}"))
        for sweep_name in ("k", "d"):
            seq = [r["vulnerable_correct"] for r in pk if r["sweep"] == sweep_name]
            grows = all(b >= a for a, b in zip(seq, seq[1:]))
            out.append((dataset, f"(p,k) vulnerable records grow with {sweep_name}", grows, " -> ".join(map(str, seq))))
        pairs = [(c, p) for c in ck for p in pk if (c["sweep"], c["k"], c["d"], c["theta"], c["qis"]) ==
                 (p["sweep"], p["k"], p["d"], p["theta"], p["qis"])]
        out.append((dataset, "NCP% of (c,k) below (p,k)", all(c["ncp"] < p["ncp"] for c, p in pairs),
                    f"{sum(c['ncp'] < p['ncp'] for c, p in pairs)}/{len(pairs)} settings"))
        out.append((dataset, "query error of (c,k) below (p,k)",
                    all(c["query_error"] < p["query_error"] for c, p in pairs),
                    f"{sum(c['query_error'] < p['query_error'] for c, p in pairs)}/{len(pairs)} settings"))
    return out


def write(rows, args):
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ck_experiments.json").write_text(json.dumps(rows, indent=1))
    lines = ["# (c,k)-anonymization vs (p,k)-angelization (spec 004 §5)", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M:%S')} on {platform.platform()} ({args.cmd}). "
             f"Adult: {'all 30,162 rows' if not args.adult_rows else f'first {args.adult_rows} rows'} in file order; "
             f"NMES: {'all 4,406 rows' if not args.nmes_rows else f'first {args.nmes_rows} rows'} in key order; "
             "delta = occupation (Adult) / numchron (NMES); c = 2, c_f = 2, p = 2; "
             "1,000 seeded queries. `vuln` = vulnerable records (`correct` / `covered`, spec 004 §2.8); "
             "`s` = publish seconds including the audit.", "", "## Claims", "",
             "| dataset | claim | holds | numbers |", "|---|---|---|---|"]
    lines += [f"| {d} | {c} | {'yes' if ok else '**no**'} | {n} |" for d, c, ok, n in claims(rows)]
    for dataset in sorted({r["dataset"] for r in rows}):
        for sweep_name in ("k", "d", "theta", "qis"):
            rs = [r for r in rows if r["dataset"] == dataset and r["sweep"] == sweep_name]
            if not rs:
                continue
            title = "all QIs (k = 4, d = 4)" if sweep_name == "qis" else f"varying {sweep_name} (QIs age, sex)"
            lines += ["", f"## {dataset}: {title}", "",
                      "| QIs | k | d | theta | method | NCP% | query error | vuln correct / covered | linkable pairs | breaches | groups | buckets | s |",
                      "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
            for r in rs:
                lines.append(f"| {r['qis']} | {r['k']} | {r['d']} | {r['theta']} | {r['method']} | {r['ncp']:.2f} | "
                             f"{r['query_error']:.4f} | {r['vulnerable_correct']} / {r['vulnerable_covered']} | "
                             f"{r['linkable_pairs']} | {r['breaches']} | {r['groups']} | {r['buckets']} | {r['seconds']} |")
    (RESULTS / "ck_experiments.md").write_text("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--adult-rows", type=int, default=0, help="0 = all 30,162 rows")
    ap.add_argument("--nmes-rows", type=int, default=0, help="0 = all 4,406 rows")
    ap.add_argument("--quick", action="store_true", help="a small grid (for a smoke run)")
    args = ap.parse_args()
    args.cmd = (f"ck_experiments.py --adult-rows {args.adult_rows} --nmes-rows {args.nmes_rows}"
                + (" --quick" if args.quick else ""))
    dsn = fresh_database("pganon_bench_ck")
    rows = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        datasets.load(conn, "adult")
        datasets.load(conn, "nmes")
        rows += sweep(conn, "adult", args.adult_rows, args.quick)
        rows += sweep(conn, "nmes", args.nmes_rows, args.quick)
    write(rows, args)
    print(f"wrote {RESULTS / 'ck_experiments.md'}")


if __name__ == "__main__":
    main()
