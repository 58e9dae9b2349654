"""Issue 6 experiments: spec 003's comparison (Tables 15-17, claims C3-C8, C10, C14-C19) on UCI
Adult and on NMES 1987 (the health-survey table of the (c,k) experiments, 7 SAs), and the 1:M
claims on the INFORMS-like synthetic table (Adult and NMES have one record per person, so 1:M
generalization needs a multi-record table: the paper's own INFORMS is not obtainable offline).

    .venv/bin/python benchmarks/msa_comparison.py [--quick] [--only adult,nmes,informs] [--persons 5000]

Adult and NMES go through `pganon compare` (everything rolled back afterwards) with nine methods:
Mondrian, Mondrian-l (distinct l-diversity per SA), Anatomy, Rating, semantic anonymization (rules
at coverage 1.0, the paper's, and 0.8), (p,k)-angelization, (c,k)-anonymization, MMDCF-MSLF and
GAA; k in {5, 10, 20} (the paper's 10 and 20 and one below), l in {2, 3, 5}; the default setting
k = 10 and l = 3 (Adult) or 2 (NMES, whose binary SAs admit no 3-diverse class).  Each dataset gets the compare report with the claims next to
the measured numbers (results/msa_comparison_<dataset>.html, .json, .csv); results/
msa_comparison.md gathers the claims and Tables 15-16 side by side.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import psycopg

from common import fresh_database
from pganon import compare, datasets, releases, report_html
from pganon_engine.methods.linked import ck_categories

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ["mondrian", "mondrian_l", "anatomy", "rating", "semantic", "semantic_80", "pk_angelization",
           "ck_anonymization", "mmdcf_mslf", "gaa"]
# Per table: the default l (Mondrian-l's l too). NMES has binary SAs (adldiff, medicaid, privins):
# no class can hold 3 distinct values of them, so its l-diverse methods run at l = 2.
L_DEFAULT = {"adult": 3, "nmes": 2}

# spec 003 Table 15 / 16 and the reference anchors of §5.3
PAPER = {"mondrian_ncp": {10: 12.0, 20: 15.03}, "one_m": {"qid_ncp": 11.68, "sa_ncp": 6.70},
         "one_m_seconds": {10: 21.9, 20: 18.84}, "mondrian_seconds": {10: 2.0, 20: 1.2},
         "anchor_adult_mondrian_k10": {"strict": 12.19, "relaxed": 24.91}}


def _claim(cid, text, source, held, numbers):
    status = "not testable" if held is None else ("held" if held else "not held")
    return {"id": cid, "claim": text, "source": source, "status": status, "numbers": numbers}


def _runs(res, method, sweep=None):
    return [r for r in res["runs"] if r["method"] == method and (sweep is None or r["sweep"] == sweep)]


def _default(res, method):
    return next((r for r in res["runs"] if r["method"] == method and r["default"]), None)


def table_claims(res):
    """C3, C8, C10, C14, C16, C17, C18 on one compare result."""
    out = []
    m = {r["k"]: r["measures"].get("ncp_percent") for r in _runs(res, "mondrian", "k")}
    if 10 in m and 20 in m:
        out.append(_claim("C3", "Mondrian's NCP grows slightly with k (12% at k = 10, 15.03% at k = 20)", "Table 15",
                          m[20] >= m[10], f"NCP {m[10]:.2f}% (k = 10) -> {m[20]:.2f}% (k = 20); all k: "
                          + ", ".join(f"{k}: {v:.2f}%" for k, v in sorted(m.items()))))
    sems = [(r["method"], r["k"], r["l"], r["measures"]["metrics"].get("semantic", {}))
            for r in res["runs"] if r["method"] in ("semantic", "semantic_80")]
    hits = [x for x in sems if x[3].get("flagged")]
    text = "semantic anonymization removes classes a rule covers, at a cost in information"
    if sems and not hits:
        out.append(_claim("C8", text, "§5.A, Table 17", None,
                          f"no class of the l-diverse base releases is covered by a rule ({len(sems)} runs, coverage "
                          f"1.0 and 0.8): the l-diversity cuts already mix the rules' values"))
    elif hits:
        held = all(s["qid_ncp_after"] >= s["qid_ncp_before"] and s["dm_after"] >= s["dm_before"] for *_, s in hits)
        out.append(_claim("C8", text, "§5.A, Table 17", held, "; ".join(
            f"{m} k = {k}, l = {l}: {len(s['flagged'])} of {s['classes_before']} classes flagged, {s['merges']} merges, "
            f"QID-NCP {s['qid_ncp_before']:.2f}% -> {s['qid_ncp_after']:.2f}%, DM {s['dm_before']:,.0f} -> "
            f"{s['dm_after']:,.0f}" for m, k, l, s in hits) + "; every release verified: no class covered by a rule"))
    rat, ml = _default(res, "rating"), _default(res, "mondrian_l")
    if rat and ml:
        a, b = rat["measures"]["are"].get("0.05"), ml["measures"]["are"].get("0.05")
        out.append(_claim("C10", "Rating answers COUNT queries better than l-diversity (ARE, qd = 2, s = 5%)", "Table 17",
                          a is not None and b is not None and a < b,
                          f"ARE Rating {a:.4f} vs Mondrian-l {b:.4f} ({b / a:.1f}x); the paper's ~100x is from the "
                          f"Rating paper" if a and b else "ARE missing"))
    for axis, label in (("rows", "rows"), ("sas", "sensitive attributes")):
        grows, lines = [], []
        for method in res["settings"]["methods"]:
            pts = sorted((s["x"], s["seconds"]) for s in res["scaling"] if s["axis"] == axis and s["method"] == method)
            if len(pts) >= 2:
                grows.append(pts[-1][1] >= pts[0][1])
                lines.append(f"{method} {pts[0][1]:.2f} s -> {pts[-1][1]:.2f} s")
        out.append(_claim("C14", f"run time grows with the number of {label}", "Figs. 7-8", all(grows) if grows else None,
                          f"{sum(grows)}/{len(grows)} methods: " + "; ".join(lines)))
    rr = _runs(res, "rating")
    if rr:
        out.append(_claim("C16", "every Rating group holds at least SC_i distinct values", "§5.B", True,
                          f"{len(rr)} Rating releases passed the independent sc_diversity check"))
    lm = res["settings"]["extra"]["mondrian_l"]["privacy"]["l"]
    ldiv = [(r, r["l"]) for r in _runs(res, "anatomy")] + [(r, lm) for r in _runs(res, "mondrian_l")]
    if ldiv:
        mins = [(r["method"], l, (r["measures"].get("class_sizes") or {}).get("min")) for r, l in ldiv]
        out.append(_claim("C17", "a distinct l-diverse release is l-anonymous (k-anonymous for k <= l)", "§6.1",
                          all(mn is not None and mn >= l for _, l, mn in mins),
                          "; ".join(f"{m} l = {l}: smallest class {mn}" for m, l, mn in mins)))
    w = ck_categories.weights(["cp", "trestbps", "restecg", "thalach", "fbs"],
                              {"cp": ["trestbps", "restecg", "thalach"], "trestbps": [], "restecg": ["trestbps", "fbs"],
                               "thalach": ["cp", "trestbps", "fbs"], "fbs": ["trestbps"]}, chi={"cp": 0.5})
    out.append(_claim("C18", "an SA's weight is its dependency count", "Table 8",
                      w.weights == {"cp": 3, "trestbps": 0, "restecg": 2, "thalach": 3, "fbs": 1},
                      f"weights {w.weights} (Table 8: cp 3, trestbps 0, restecg 2, thalach 3, fbs 1)"))
    return out


def run_table(name, quick):
    dsn = fresh_database(f"pganon_bench_msa_{name}")
    with psycopg.connect(dsn, autocommit=True) as conn:
        datasets.load(conn, name)
        settings = compare.Settings(
            methods=METHODS, aliases={"mondrian_l": "mondrian", "semantic_80": "semantic"},
            extra={"mondrian_l": {"privacy": {"model": "l_diversity", "l": L_DEFAULT[name]}},
                   "semantic_80": {"coverage": 0.8}},
            ks=[10, 20] if quick else [5, 10, 20], ls=[2, 3] if quick else [2, 3, 5],
            k_default=10, l_default=L_DEFAULT[name],
            thetas=[0.05, 0.1] if quick else [0.05, 0.1, 0.2], fractions=[0.5] if quick else [0.25, 0.5],
            sa_counts=[1, 2] if quick else None, queries=200 if quick else 1000)
        t = time.perf_counter()
        res = compare.run(conn, name, settings, progress=lambda m: print(f"[{name} {time.perf_counter() - t:6.0f}s] {m}",
                                                                         flush=True))
    res["claims"] = table_claims(res)
    return res


def run_informs(persons, quick):
    """1:M generalization sweeps and Mondrian on the same records (C4-C7, C15, C19)."""
    dsn = fresh_database("pganon_bench_msa_informs")
    rows = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        datasets.load(conn, "adult")
        datasets.load(conn, "informs_synthetic", persons=persons)
        ks = [10, 20] if quick else [5, 10, 20, 30, 40, 50]
        ls = [3, 5] if quick else [2, 3, 5, 7, 9]
        settings = [("k", k, 5) for k in ks] + [("l", 10, l) for l in ls if l != 5]
        for sweep, k, l in settings:
            t0 = time.perf_counter()
            try:
                rid = releases.publish(conn, "informs_synthetic", "one_m_generalization", {"k": k, "l": l})
            except Exception as exc:  # an unsatisfiable setting is a result too
                rows.append({"method": "one_m_generalization", "sweep": sweep, "k": k, "l": l, "error": str(exc)[:200]})
                continue
            wall = time.perf_counter() - t0
            m = releases.get(conn, release=rid)["metrics"]
            rows.append({"method": "one_m_generalization", "sweep": sweep, "k": k, "l": l, "seconds": round(wall, 2),
                         "qid_ncp": m["qid_ncp_percent"], "sa_ncp": m["sa_ncp_percent"], "classes": m["classes"],
                         "sa_buckets": m["sa_buckets"], "splits": m["partition_splits"], "persons": m["persons"]})
            print(json.dumps(rows[-1]), flush=True)
        for k in (10, 20):
            t0 = time.perf_counter()
            rid = releases.publish(conn, "informs_synthetic", "mondrian", {"k": k, "queries": 0})
            wall = time.perf_counter() - t0
            m = releases.get(conn, release=rid)["metrics"]
            rows.append({"method": "mondrian", "sweep": "k", "k": k, "seconds": round(wall, 2), "ncp": m["ncp_percent"],
                         "classes": m["classes"]})
            print(json.dumps(rows[-1]), flush=True)
        records = conn.execute("SELECT count(*) FROM informs_synthetic").fetchone()[0]
    return {"persons": persons, "records": records, "rows": rows, "claims": informs_claims(rows, persons, records)}


def _trend(seq):
    return all(b >= a - 1e-9 for a, b in zip(seq, seq[1:]))


def informs_claims(rows, persons, records):
    ok = [r for r in rows if r["method"] == "one_m_generalization" and "error" not in r]
    ksw = sorted((r for r in ok if r["sweep"] == "k"), key=lambda r: r["k"])
    lsw = sorted([r for r in ok if r["sweep"] == "l"] + [r for r in ksw if r["k"] == 10], key=lambda r: r["l"])
    out = []
    data = f"INFORMS-like synthetic, {persons:,} persons / {records:,} records"
    if ksw:
        out.append(_claim("C4", "QID-NCP and SA-NCP of 1:M generalization increase slightly with k", "§6.1",
                          _trend([r["qid_ncp"] for r in ksw]) and _trend([r["sa_ncp"] for r in ksw]),
                          "; ".join(f"k = {r['k']}: QID {r['qid_ncp']:.2f}%, SA {r['sa_ncp']:.2f}%" for r in ksw)))
    if lsw:
        out.append(_claim("C5", "QID-NCP of 1:M generalization increases with l", "§6.1", _trend([r["qid_ncp"] for r in lsw]),
                          "; ".join(f"l = {r['l']}: QID {r['qid_ncp']:.2f}%" for r in lsw)))
    by_k = {r["k"]: r for r in ksw}
    if 10 in by_k and 20 in by_k:
        t10, t20 = by_k[10]["seconds"], by_k[20]["seconds"]
        ts = [r["seconds"] for r in lsw]
        flat = max(ts) <= 1.5 * min(ts) if ts else None
        out.append(_claim("C6", "1:M generalization runs a little faster at larger k and about as fast for any l",
                          "§6.2, Table 16", t20 <= t10 * 1.1 and bool(flat),
                          f"{t10:.2f} s (k = 10) -> {t20:.2f} s (k = 20); over l {min(ts):.2f}-{max(ts):.2f} s "
                          f"(paper: 21.9 s -> 18.84 s)"))
    mond = {r["k"]: r for r in rows if r["method"] == "mondrian"}
    if 10 in mond and 10 in by_k:
        out.append(_claim("C7", "Mondrian is much faster than 1:M generalization on the same data", "Table 16",
                          mond[10]["seconds"] < by_k[10]["seconds"],
                          f"k = 10: Mondrian {mond[10]['seconds']:.2f} s on the records vs 1:M {by_k[10]['seconds']:.2f} s "
                          f"(paper 2 s vs 21.9 s)"))
    out.append(_claim("C15", "(k,l)-diversity protects 1:M data: every fingerprint shared by >= k persons, >= l per class",
                      "§1.1", bool(ok), f"{len(ok)} releases passed the independent person verifier "
                      f"({len(rows) - len(ok) - len(mond)} settings not satisfiable)"))
    if len(ksw) >= 2:
        sp = [r["sa_buckets"] for r in ksw]
        out.append(_claim("C19", "a larger k gives fewer Partition buckets", "§6.2", all(b <= a for a, b in zip(sp, sp[1:])),
                          "; ".join(f"k = {r['k']}: {r['sa_buckets']} buckets" for r in ksw)))
    for c in out:
        c["numbers"] = f"{c['numbers']} [{data}]"
        c["data"] = "informs_synthetic"
    return out


def write_md(tables, informs, args):
    lines = ["# Multiple sensitive attributes: the methods side by side (spec 003 §5-6)", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M:%S')} on {platform.platform()} (`msa_comparison.py {args.cmd}`). "
             "Adult and NMES through `pganon compare` (nothing kept); the reports with every plot are "
             "`msa_comparison_<dataset>.html`.", "", "## Claims", "",
             "| dataset | id | claim | source | status | measured |", "|---|---|---|---|---|---|"]
    for name, res in tables.items():
        for c in res["claims"]:
            if c.get("data") != "informs_synthetic":
                lines.append(f"| {name} | {c['id']} | {c['claim']} | {c['source']} | **{c['status']}** | {c['numbers']} |")
    if informs:
        for c in informs["claims"]:
            lines.append(f"| informs_synthetic | {c['id']} | {c['claim']} | {c['source']} | **{c['status']}** | {c['numbers']} |")
    lines += ["", "## Table 15 / 16 next to the paper", "",
              "| data | method | k | l | measured NCP % | paper | measured s | paper s |", "|---|---|---|---|---|---|---|---|"]
    for name, res in tables.items():
        for r in _runs(res, "mondrian", "k"):
            lines.append(f"| {name} | Mondrian | {r['k']} | | {r['measures'].get('ncp_percent', 0):.2f} | "
                         f"{PAPER['mondrian_ncp'].get(r['k'], '')} | {r['wall_seconds']:.2f} | {PAPER['mondrian_seconds'].get(r['k'], '')} |")
    if informs:
        for r in informs["rows"]:
            if r["method"] == "one_m_generalization" and "error" not in r and r["l"] == 5:
                lines.append(f"| informs_synthetic | 1:M generalization | {r['k']} | 5 | QID {r['qid_ncp']:.2f} / SA "
                             f"{r['sa_ncp']:.2f} | {'QID 11.68 / SA 6.70' if r['k'] == 10 else ''} | {r['seconds']:.2f} | "
                             f"{PAPER['one_m_seconds'].get(r['k'], '')} |")
    lines += ["", "## Table 17 on this data (default setting: k = 10, l = 3 for Adult, 2 for NMES)", "",
              "| data | method | KL | ARE θ=0.05 | NCP % | suppressed % | SA confidence mean | vulnerable | s |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, res in tables.items():
        for method in res["settings"]["methods"]:
            r = _default(res, method)
            if not r:
                continue
            m = r["measures"]
            conf = [v["mean"] for k, v in (m.get("confidence") or {}).items() if not k.startswith("(")]
            vuln = ((m.get("metrics") or {}).get("audit") or {}).get("n_vulnerable_correct")
            lines.append(f"| {name} | {method} | {m.get('kl_divergence', 0):.3f} | {(m.get('are') or {}).get('0.05', 0):.4f} | "
                         f"{m.get('ncp_percent', 0):.2f} | {100 * m.get('suppression', 0):.2f} | "
                         f"{sum(conf) / len(conf):.3f} | {'' if vuln is None else vuln} | {r['wall_seconds']:.2f} |")
    (RESULTS / "msa_comparison.md").write_text("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="adult,nmes,informs")
    ap.add_argument("--persons", type=int, default=5000)
    args = ap.parse_args()
    args.cmd = " ".join(x for x in ("--quick" if args.quick else "", f"--only {args.only}", f"--persons {args.persons}") if x)
    only = set(args.only.split(","))
    RESULTS.mkdir(exist_ok=True)
    tables = {}
    for name in ("adult", "nmes"):
        if name in only:
            res = run_table(name, args.quick)
            tables[name] = res
            report_html.write(res, RESULTS, f"msa_comparison_{name}", report_html.compare_html(res))
    informs = run_informs(args.persons, args.quick) if "informs" in only else None
    if informs:
        (RESULTS / "msa_comparison_informs.json").write_text(json.dumps(informs, indent=1))
        for res in tables.values():  # the 1:M claims belong in every report too
            res["claims"] += informs["claims"]
            report_html.write(res, RESULTS, f"msa_comparison_{res['dataset']['dataset']}", report_html.compare_html(res))
    write_md(tables, informs, args)
    print(f"wrote {RESULTS / 'msa_comparison.md'}")


if __name__ == "__main__":
    main()
