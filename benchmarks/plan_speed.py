"""Planner speed on synthetic Adult-like bucket counts (not a test; run by hand).

Draws n records of d independent categorical SAs with the Adult marginals of spec section 5.2
(Occupation, Education, Marital, Workclass, Race, in the Table 4 order), levels from spec
section 5.3 reading R2, l = (1, 2, 3); builds buckets in first-appearance order and times
`bucketize.plan` (tie='first') for the six algorithms.

    .venv/bin/python benchmarks/plan_speed.py [--n 1000000] [--d 3 5] [--variants mbf ...]
"""

import argparse
import sys
import time

import numpy as np

from pganon_engine.methods.bucketization import bucketize, inputs

OCC = {"Prof-specialty": 4038, "Craft-repair": 4030, "Exec-managerial": 3992,
       "Adm-clerical": 3721, "Sales": 3584, "Other-service": 3212, "Machine-op-inspct": 1966,
       "Transport-moving": 1572, "Handlers-cleaners": 1350, "Farming-fishing": 989,
       "Tech-support": 912, "Protective-serv": 644, "Priv-house-serv": 143, "Armed-Forces": 9}
EDU = {"HS-grad": 9840, "Some-college": 6678, "Bachelors": 5044, "Masters": 1627,
       "Assoc-voc": 1307, "11th": 1048, "Assoc-acdm": 1008, "10th": 820, "7th-8th": 557,
       "Prof-school": 542, "9th": 455, "12th": 377, "Doctorate": 375, "5th-6th": 288,
       "1st-4th": 151, "Preschool": 45}
MAR = {"Married-civ-spouse": 14065, "Never-married": 9726, "Divorced": 4214, "Separated": 939,
       "Widowed": 827, "Married-spouse-absent": 370, "Married-AF-spouse": 21}
WC = {"Private": 22286, "Self-emp-not-inc": 2499, "Local-gov": 2067, "State-gov": 1279,
      "Self-emp-inc": 1074, "Federal-gov": 943, "Without-pay": 14}
RACE = {"White": 25933, "Black": 2817, "Asian-Pac-Islander": 895, "Amer-Indian-Eskimo": 286,
        "Other": 231}


def level(attr, v):
    if attr == "occ":
        return 2 if v == "Armed-Forces" else (0 if v == "Other-service" else 1)
    if attr == "edu":
        return 1
    if attr == "mar":
        return 1 if v in ("Married-civ-spouse", "Never-married") else 2
    if attr == "wc":
        return 0 if v in ("Private", "Without-pay") else (1 if v.startswith("Self") else 2)
    return 0 if v in ("White", "Other") else (1 if v == "Black" else 2)


DIMS = [("occ", OCC), ("edu", EDU), ("mar", MAR), ("wc", WC), ("race", RACE)]


def synth(n, d, seed=0):
    rng = np.random.default_rng(seed)
    cols, levtabs = [], []
    for name, freq in DIMS[:d]:
        vals = list(freq)
        p = np.array([freq[v] for v in vals], dtype=float)
        cols.append(rng.choice(len(vals), size=n, p=p / p.sum()))
        levtabs.append(np.array([level(name, v) for v in vals]))
    X = np.stack(cols, 1)
    uniq, first, counts = np.unique(X, axis=0, return_index=True, return_counts=True)
    order = np.argsort(first)
    U, sizes = uniq[order], counts[order]
    lev = np.stack([levtabs[j][U[:, j]] for j in range(d)], 1)
    return sizes.tolist(), U.ravel().tolist(), lev.ravel().tolist()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, nargs="+", default=[3, 5])
    ap.add_argument("--variants", nargs="+", default=list(inputs.VARIANTS))
    ap.add_argument("--baseline", choices=["both", "mslf", "base"], default="both")
    a = ap.parse_args(argv)
    L = {0: 1, 1: 2, 2: 3}
    modes = {"both": (True, False), "mslf": (True,), "base": (False,)}[a.baseline]
    for d in a.d:
        sizes, values, levels = synth(a.n, d)
        print(f"n={a.n} d={d} buckets={len(sizes)}", flush=True)
        for mslf in modes:
            for v in a.variants:
                t = time.perf_counter()
                p = bucketize.plan(sizes, values, levels, L, v, mslf=mslf)
                el = time.perf_counter() - t
                m = bucketize.metrics_from_plan(p, sizes, values, levels, L, mslf=mslf)
                name = v.upper() + ("-MSLF" if mslf else "")
                print(f"  {name:11s} {el:7.2f}s groups={p.n_groups} runs={len(p.run_bucket)} "
                      f"main={p.main_picks} placed={p.residual_placed} "
                      f"suppressed={p.n_suppressed} AIL={float(m['ail']):.4f} "
                      f"SR={float(m['sr']):.4f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
