"""(c,k)-anonymization and (p,k)-angelization on full UCI Adult (30,162 rows), seconds per phase,
before and after a change, side by side in one run.

Setting (spec 004; the `pganon compare` configuration): sensitive attributes occupation,
education, marital_status, workclass, race; QIs age, sex, native_country, income; delta =
occupation; (c,k) with k = 10, c = 2, c_f = 2; (p,k) with k = 10, p = 2; no query workload.
Each side gets its own database on the embedded server: `after` is installed from this working
tree, `before` from `git archive <rev>` in a temporary directory (its own SQL, migrations and
engine). Publishes alternate between the sides, so a busy machine slows both alike; the table
gives seconds per phase (plan, verify, measure = NCP and the fcorr audit), wall seconds, and
the before/after ratio.

    .venv/bin/python benchmarks/linked_speed.py [--before REV] [--repeat 1] [--rows N] [--no-before]

Also checks that both sides publish the same plan and the same audit summary (it exits 1 if
they differ). Prints a markdown table; writes nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

from pganon import releases, server

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "11f6d6a"  # the last commit before the vectorized pair scans
SAS = ["occupation", "education", "marital_status", "workclass", "race"]
RUNS = [("(c,k)", "ck_anonymization", {"k": 10, "c": 2, "c_f": 2, "queries": 0}),
        ("(p,k)", "pk_angelization", {"k": 10, "p": 2, "queries": 0})]
PHASES = ["plan", "verify", "measure"]


def _database(name: str) -> str:
    admin = server.start()
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return psycopg.conninfo.make_conninfo(admin, dbname=name)


SETUP = """
import sys, psycopg, pganon, pganon_engine
from pganon import datasets, install
dsn, tree, rows = sys.argv[1], sys.argv[2], (int(sys.argv[3]) or None)
assert pganon.__file__.startswith(tree) and pganon_engine.__file__.startswith(tree), "wrong tree"
install.install(dsn)
with psycopg.connect(dsn, autocommit=True) as conn:
    datasets.load(conn, "adult", rows=rows)
    conn.execute("SELECT pganon.set_delta('adult', 'occupation')")
"""


def _setup(dsn: str, rev: str | None, rows: int | None, tmp: str) -> None:
    """Install pganon into `dsn` as of git revision `rev` (its package, SQL, migrations and
    engine; None = this working tree) and load Adult with that version's loader."""
    tree = ROOT
    if rev is not None:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(tree / "plpython")]))
    subprocess.run([sys.executable, "-c", SETUP, dsn, str(tree), str(rows or 0)], check=True, env=env, cwd=tmp)


def _publish(dsn: str, method: str, params: dict) -> dict:
    """Publish once; seconds per phase, the audit summary and the plan (bucket, group per record)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        t0 = time.perf_counter()
        rid = releases.publish(conn, "adult", method, dict(params, sensitive=SAS))
        wall = time.perf_counter() - t0
        rel = releases.get(conn, release=rid)
        lay = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
        plan = conn.execute(sql.SQL("SELECT array_agg(bucket_id ORDER BY {k}), array_agg(group_id ORDER BY {k}) FROM {m}").format(
            k=sql.Identifier(lay["key"]), m=sql.SQL(lay["relations"]["map"]))).fetchone()
        conn.execute("SELECT pganon.drop_release(%s)", (rid,))
    ph = rel["phase_seconds"]
    return {"wall": wall, **{p: ph.get(p, 0.0) for p in PHASES},
            "other": wall - sum(ph.get(p, 0.0) for p in PHASES),
            "audit": rel["metrics"]["audit"], "fb": plan}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=BEFORE, help=f"git revision of the 'before' side (default {BEFORE})")
    ap.add_argument("--no-before", action="store_true", help="time this tree only")
    ap.add_argument("--repeat", type=int, default=1, help="publishes per side and method; the fastest counts")
    ap.add_argument("--rows", type=int, default=None, help="Adult's first rows only (default: all 30,162)")
    args = ap.parse_args(argv)
    sides = {"after": _database("pganon_linked_speed_after")}
    with tempfile.TemporaryDirectory() as tmp:
        _setup(sides["after"], None, args.rows, tmp)
        if not args.no_before:
            sides["before"] = _database("pganon_linked_speed_before")
            _setup(sides["before"], args.before, args.rows, tmp)
        best = {}
        for label, method, params in RUNS:
            for _ in range(args.repeat):
                for side in sorted(sides, reverse=True):  # before, then after
                    r = _publish(sides[side], method, params)
                    print(f"{label} {side}: {r['wall']:.1f} s", file=sys.stderr, flush=True)
                    key = (label, side)
                    if key not in best or r["wall"] < best[key]["wall"]:
                        best[key] = r
    same = True
    cols = PHASES + ["other", "wall"]
    print(f"UCI Adult ({args.rows or 30162} rows), seconds per phase"
          + (f"; before = {args.before}, after = this tree" if "before" in sides else "") + "\n")
    print("| method | side | " + " | ".join(cols) + " |")
    print("|---|---|" + "---:|" * len(cols))
    for label, _, _ in RUNS:
        for side in sorted(sides, reverse=True):
            r = best[label, side]
            print(f"| {label} | {side} | " + " | ".join(f"{r[c]:.2f}" for c in cols) + " |")
        if "before" in sides:
            b, a = best[label, "before"], best[label, "after"]
            print(f"| {label} | before / after | " + " | ".join(
                f"{b[c] / a[c]:.1f}x" if a[c] > 0.005 else "-" for c in cols) + " |")
            if b["audit"] != a["audit"] or b["fb"] != a["fb"]:
                same = False
                print(f"\n{label}: the two sides differ (plan or audit summary)", file=sys.stderr)
    if "before" in sides:
        print("\nSame plans (bucket and group per record) and audit summaries on both sides: "
              + ("yes" if same else "NO"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
