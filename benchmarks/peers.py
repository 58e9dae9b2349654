"""The peer runners of `make bench-scale` (scale_peers.py starts them): ANJANA, anonypyx, pyCANON
and qiyuangong/Mondrian (`gong`, a pure-Python in-memory Mondrian run from its checkout) on a CSV export of the table pganon published, each inside its own virtual environment (the
peers pin conflicting pyCANON versions and never enter the project venv), so this file imports
nothing from pganon.

    <peer venv>/bin/python benchmarks/peers.py anjana|anonypyx|pycanon|gong --csv T.csv --qis a,b
        [--sa s] [--k 10] [--numeric age] [--hierarchy qi=path.csv ...] [--gong-dir checkout]

Prints one JSON line: seconds of the algorithm alone (the CSV read is timed apart, as
read_seconds) and what it produced.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import time

import pandas as pd


def read(args) -> tuple[pd.DataFrame, float]:
    t0 = time.perf_counter()
    df = pd.read_csv(args.csv, keep_default_na=False)
    for q in args.qis:
        if q not in args.numeric:
            df[q] = df[q].astype(str)
    return df, time.perf_counter() - t0


def run_anjana(df: pd.DataFrame, args) -> dict:
    """ANJANA's k-anonymity: greedy full-domain generalization over the given hierarchies
    (one QI one level up per step, re-checking with pyCANON), no suppression allowed."""
    from anjana.anonymity import k_anonymity
    hierarchies = {}
    for spec in args.hierarchy:
        qi, path = spec.split("=", 1)
        h = pd.read_csv(path, header=None, sep=";", dtype={0: int} if qi in args.numeric else str,
                        keep_default_na=False)
        hierarchies[qi] = {i: h[i] for i in h.columns}
    ident = [c for c in df.columns if c not in args.qis and c != args.sa]
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        out = k_anonymity(df, ident, args.qis, args.k, args.supp, hierarchies)
    secs = time.perf_counter() - t0
    levels = {q: int(out[q].nunique()) for q in args.qis}
    return {"seconds": secs, "rows_out": len(out), "result": f"{len(df) - len(out)} rows suppressed; distinct values per QI {levels}"}


def run_anonypyx(df: pd.DataFrame, args) -> dict:
    """anonypyx's Mondrian (k-anonymity only), categorical QIs as pandas categories."""
    import anonypyx
    for q in args.qis:
        if q not in args.numeric:
            df[q] = df[q].astype("category")
    t0 = time.perf_counter()
    out = anonypyx.Anonymiser(df, k=args.k, feature_columns=args.qis, sensitive_column=args.sa,
                              algorithm="Mondrian").anonymise()
    secs = time.perf_counter() - t0
    return {"seconds": secs, "rows_out": len(out), "result": f"{len(out)} output rows"}


def run_pycanon(df: pd.DataFrame, args) -> dict:
    """pyCANON's k-anonymity check of the table as it is (the pganon release's GT)."""
    from pycanon import anonymity
    t0 = time.perf_counter()
    k = anonymity.k_anonymity(df, args.qis)
    return {"seconds": time.perf_counter() - t0, "k": int(k), "result": f"k = {k}"}


def run_gong(df: pd.DataFrame, args) -> dict:
    """qiyuangong/Mondrian (strict Mondrian, LeFevre et al. 2006, pure Python in memory), imported
    from the checkout --gong-dir: every QI an ordered integer code (a categorical one by its
    values' sorted order, as its own Adult reader codes them), the SA last; the call timed whole."""
    import sys
    sys.path.insert(0, args.gong_dir)
    from mondrian import mondrian
    cols = []
    for q in args.qis:
        if q in args.numeric:
            cols.append(df[q].astype(int).tolist())
        else:
            codes = {v: i for i, v in enumerate(sorted(df[q].unique()))}
            cols.append([codes[v] for v in df[q]])
    data = [list(r) + [s] for r, s in zip(zip(*cols), df[args.sa].astype(str).tolist())]
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        result, (ncp, own) = mondrian(data, args.k, False)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "result": f"NCP {ncp:.2f}%, {len(result)} rows; its own timer "
                                          f"{own:.2f} s (split only)"}


RUNNERS = {"anjana": run_anjana, "anonypyx": run_anonypyx, "pycanon": run_pycanon, "gong": run_gong}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tool", choices=sorted(RUNNERS))
    ap.add_argument("--csv", required=True)
    ap.add_argument("--qis", required=True, type=lambda s: s.split(","))
    ap.add_argument("--sa")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--supp", type=float, default=0, help="ANJANA's suppression limit, percent of rows")
    ap.add_argument("--numeric", type=lambda s: [x for x in s.split(",") if x], default=[])
    ap.add_argument("--hierarchy", action="append", default=[], help="qi=path (ANJANA)")
    ap.add_argument("--gong-dir", help="a checkout of github.com/qiyuangong/Mondrian (gong)")
    args = ap.parse_args()
    df, read_s = read(args)
    out = RUNNERS[args.tool](df, args)
    out.update(read_seconds=round(read_s, 3), rows=len(df), seconds=round(out["seconds"], 3))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
