"""The side-by-side section of `make bench-scale`: ANJANA, anonypyx and pyCANON from PyPI against
pganon on Adult and on the scaled table (1M rows by default).

Each peer gets its own virtual environment under ~/.cache/pganon/peers/<name> (or
$PGANON_PEERS_DIR), made on first use with the interpreter of this venv: ANJANA pins a pyCANON of
its own, so the three cannot share one, and none may enter the project venv. A peer that does
not install is reported with pip's reason and skipped. The peers run in a subprocess
(benchmarks/peers.py) on a CSV export of the same rows, QIs and k as pganon's publish, under a
wall-clock limit (`--peer-timeout`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import yaml
from psycopg import sql

from pganon import datasets, install

PEERS = {"anjana": "anjana==1.2.3", "anonypyx": "anonypyx==0.2.11", "pycanon": "pycanon==1.3.6"}
# The pure-Python in-memory Mondrian the issue compares with (not on PyPI): a checkout of this
# commit, $PGANON_GONG_MONDRIAN or cloned under the peers dir; run by this interpreter (pandas).
GONG_URL, GONG_COMMIT = "https://github.com/qiyuangong/Mondrian", "49d49cfb3348e769b7cb5138deda6ee67bda8749"
ROOT = Path(os.environ.get("PGANON_PEERS_DIR", Path.home() / ".cache" / "pganon" / "peers"))
WORK = ROOT.parent / "scale"
RUNNER = Path(__file__).resolve().parent / "peers.py"
PEER_DB = "pganon_scale_peer"
K = 10


def gt_csv(n: int) -> str:
    WORK.mkdir(parents=True, exist_ok=True)
    return str(WORK / f"gt_{n}.csv")


def table_csv(name: str, n: int) -> Path:
    WORK.mkdir(parents=True, exist_ok=True)
    return WORK / f"{name}_{n}.csv"


def ensure(name: str) -> dict:
    """The peer's venv, made and filled on first use; {ok, python | reason}."""
    venv, req = ROOT / name, PEERS[name]
    py = venv / "bin" / "python"
    st = {"requirement": req, "venv": str(venv), "python": str(py)}
    module = name
    probe = [str(py), "-c", f"import {module}, importlib.metadata as m; print(m.version({name!r}))"]
    if py.exists() and subprocess.run(probe, capture_output=True, text=True).stdout.strip() == req.split("==")[1]:
        return dict(st, ok=True)
    base = getattr(sys, "_base_executable", sys.executable)
    steps = [[base, "-m", "venv", str(venv)], [str(py), "-m", "pip", "install", "-q", req]]
    for cmd in steps:
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            errors = [ln for ln in (p.stderr + p.stdout).splitlines() if "ERROR" in ln] or (p.stderr or p.stdout).splitlines()[-2:]
            return dict(st, ok=False, reason=f"`{' '.join(cmd[-3:])}` failed on Python "
                        f"{sys.version.split()[0]}: " + " ".join(errors)[:400])
    return dict(st, ok=True)


def ensure_gong() -> dict:
    """The qiyuangong/Mondrian checkout, cloned at GONG_COMMIT on first use; {ok, python, dir | reason}."""
    d = Path(os.environ.get("PGANON_GONG_MONDRIAN", ROOT / "qiyuangong-Mondrian"))
    st = {"requirement": f"{GONG_URL}@{GONG_COMMIT[:7]}", "dir": str(d), "venv": str(d), "python": sys.executable}
    if not (d / "mondrian.py").is_file():
        for cmd in (["git", "clone", "-q", GONG_URL, str(d)], ["git", "-C", str(d), "checkout", "-q", GONG_COMMIT]):
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                return dict(st, ok=False, reason=f"`{' '.join(cmd)}` failed: {(p.stderr or p.stdout).strip()[:300]}")
    return dict(st, ok=True)


def _meta(c, dataset: str) -> dict:
    rows = c.execute("SELECT column_name, role, kind FROM pganon.attributes WHERE dataset = %s ORDER BY position",
                     (dataset,)).fetchall()
    key, table = c.execute("SELECT key_column, source FROM pganon.dataset WHERE name = %s", (dataset,)).fetchone()
    spec = datasets.get_dataset(dataset).attributes_path
    hier = yaml.safe_load(spec.read_text()).get("hierarchies") or {}
    qis = [a for a, r, _ in rows if r == "quasi"]
    return {"key": key, "table": table, "qis": qis, "sas": [a for a, r, _ in rows if r == "sensitive"],
            "numeric": [a for a, r, k in rows if r == "quasi" and k == "numeric"],
            "hierarchies": {q: str((spec.parent / hier[q]).resolve()) for q in qis if q in hier},
            "rows": c.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.SQL(table))).fetchone()[0]}


def export_table(c, m: dict, path: Path) -> None:
    cols = sql.SQL(", ").join(map(sql.Identifier, [m["key"]] + m["qis"] + m["sas"][:1]))
    with open(path, "wb") as f, c.cursor().copy(sql.SQL("COPY (SELECT {} FROM {}) TO STDOUT WITH CSV HEADER")
                                               .format(cols, sql.SQL(m["table"]))) as cp:
        for block in cp:
            f.write(block)


def peer(tool: str, st: dict, csv: str, m: dict, timeout: int) -> dict:
    """One peer run in its venv; {seconds, ...} or {status} when it failed or ran out of time."""
    if not st["ok"]:
        return {"status": "not installed"}
    cmd = [st["python"], str(RUNNER), tool, "--csv", csv, "--qis", ",".join(m["qis"]), "--sa", m["sas"][0],
           "--k", str(K), "--numeric", ",".join(m["numeric"])]
    cmd += [a for q, p in m["hierarchies"].items() for a in ("--hierarchy", f"{q}={p}")]
    if tool == "gong":
        cmd += ["--gong-dir", st["dir"]]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"did not finish in {timeout} s"}
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["?"])[-1]
        return {"status": f"failed: {last[:200]}"}
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["process_seconds"] = round(time.perf_counter() - t0, 2)
    return out


def run_all(admin: str, data: str, runs: list, args) -> dict:
    """Adult and `data` at --peer-rows rows in one database: pganon mondrian and gaa (k = 10,
    query workload off) and pganon.check, then the peers on the same rows."""
    import scale   # the publish/timing helpers; imported late (scale imports this module)
    installed = {name: ensure(name) for name in PEERS}
    installed["gong"] = ensure_gong()
    for name, st in installed.items():
        print(f"peer {name}: {'ok' if st['ok'] else st['reason']}", flush=True)
    dsn = scale.recreate(admin, PEER_DB)
    install.install(dsn)
    todo = [("adult", None)] + ([(data, args.peer_rows)] if args.peer_rows else [])
    anonymize, check, failed = [], [], []
    for dataset, rows in todo:
        with psycopg.connect(dsn, autocommit=True) as c:
            try:
                datasets.load(c, dataset, rows=rows)
            except Exception as exc:   # e.g. a generator that refuses: report it, keep the other table
                failed.append(f"{dataset} ({rows or 'all'} rows) did not load: {type(exc).__name__}: {str(exc)[:300]}")
                print(failed[-1], flush=True)
                continue
            m = _meta(c, dataset)
            c.execute(sql.SQL("VACUUM (ANALYZE, FREEZE) {}").format(sql.SQL(m["table"])))
            csv = table_csv(dataset, m["rows"])
            export_table(c, m, csv)
        base = {"table": dataset, "rows": m["rows"], "qis": m["qis"], "k": K}
        pg = {}
        for method in ("mondrian", "gaa"):
            chk = {"qis": m["qis"], "sas": m["sas"], "csv": gt_csv(m["rows"])} if method == "mondrian" else None
            late = next((x for x in runs if x["method"] == method and x["rows"] == m["rows"]
                         and x["status"].startswith("did not finish")), None)
            r = (dict(late, status=late["status"] + " (main run, not repeated)") if late and not chk else
                 scale.publish_run(dsn, dataset, method, {"k": K, "queries": 0}, args.timeout, chk))
            pg[method] = r
            anonymize.append(dict(base, tool="pganon", algorithm=f"{method} (queries 0)", status=r["status"],
                                  seconds=r["seconds"] if r["status"] == "ok" else None,
                                  pganon_seconds=None, result=f"peak RSS {r['peak_rss_mib']} MiB"))
            print(json.dumps(anonymize[-1]), flush=True)
        for tool, algorithm, ref in (("anjana", "greedy full-domain generalization, no suppression", "gaa"),
                                     ("anonypyx", "Mondrian (in memory)", "mondrian"),
                                     ("gong", "Mondrian (pure Python, in memory; qiyuangong/Mondrian)", "mondrian")):
            r = peer(tool, installed[tool], str(csv), m, args.peer_timeout)
            ref_run = pg[ref]
            anonymize.append(dict(base, tool=tool, algorithm=algorithm, status=r.get("status", "ok"),
                                  seconds=r.get("seconds"), pganon_method=ref, result=r.get("result", r.get("status")),
                                  pganon_seconds=ref_run["seconds"] if ref_run["status"] == "ok" else None,
                                  pganon_status=ref_run["status"]))
            if tool == "anjana" and pg["mondrian"]["status"] == "ok":   # the comparison: mondrian vs ANJANA
                anonymize[-1]["vs_mondrian"] = round(r["seconds"] / pg["mondrian"]["seconds"], 1) if r.get("seconds") else None
            print(json.dumps(anonymize[-1]), flush=True)
        mc = pg["mondrian"].get("check")
        row = dict(base, pganon_seconds=mc["seconds"] if mc else None, pganon_k=mc["k"] if mc else None)
        if mc:
            row["pycanon"] = peer("pycanon", installed["pycanon"], gt_csv(m["rows"]), m, args.peer_timeout)
        check.append(row)
        print(json.dumps(row), flush=True)
    scale.drop_db(admin, PEER_DB)
    note = (f"Same rows (CSV export of key, QIs and the first SA), same QIs, k = {K}. pganon publishes with "
            "the query workload off (`queries: 0`) and its publish seconds include verification and "
            "materializing the release; the peers' seconds are their algorithm alone on a DataFrame in "
            "memory (CSV read excluded). ANJANA gets pganon's hierarchies of the QIs and no suppression "
            "(`supp_level` 0); its ratio is taken to pganon's gaa (both full-domain generalization over "
            "hierarchies; `vs_mondrian` in scale.json has it against mondrian too); anonypyx's and qiyuangong/Mondrian's "
            "(every QI an ordered code, categorical ones by sorted value; the call timed whole) to pganon's mondrian. "
            f"Peer venvs: {ROOT}/<name> (separate: ANJANA pins its own pyCANON); limit {args.peer_timeout} s per peer run.")
    # the report names no path of this checkout: gong runs with the project's own interpreter
    shown = {name: dict(st, python="the project's interpreter") if name == "gong" else st
             for name, st in installed.items()}
    return {"install": shown, "anonymize": anonymize, "check": check, "note": note, "failed": failed}
