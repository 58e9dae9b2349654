"""The paper's numbers for the generalization experiments and the checks of its claims on our
rows: NAUC rankings per criterion (trapezoid on linear k), competition ranks with ties, Spearman
rho between orderings, and per study the list of (claim, holds, numbers) (spec 001 §7.3, items
13-26).

Why a module of its own: what counts as "the claim holds" (ties, strictness, the NAUC range) is
the scientific judgement of the experiments; it reads only result rows, so it is kept apart from
running the studies (generalization_studies) and from the Markdown layout
(generalization_report).
"""

from __future__ import annotations

import statistics

from generalization_studies import STRATEGIES, TABLES
from pganon_engine.metrics import infoloss

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


def nauc_ranking(rows, key, criterion, lo, hi, higher_better=False, scale=None):
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


def competition_ranks(col):
    """Competition ranks of a best-first [(name, value)] list: equal values share a rank (1, 2, 2, 4)."""
    out = []
    for i, (_, v) in enumerate(col):
        out.append(out[-1] if i and _same(v, col[i - 1][1]) else i + 1)
    return out


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
    alt = nauc_ranking(rows, "metric", "mean_alteration", lo, hi)
    gen = nauc_ranking(rows, "metric", "p_gen", lo, hi)
    root = nauc_ranking(rows, "metric", "p_root", lo, hi)
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
    alt = nauc_ranking(rs, "strategy", "alteration", lo, hi)
    ldv = nauc_ranking(rs, "strategy", "l_div", lo, hi, higher_better=True, scale=lambda r: 100 * r["l_div"] / r["l_div_max"])
    tcl = nauc_ranking(rs, "strategy", "t_clo", lo, hi, scale=lambda r: 100 * r["t_clo"])
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
        rk = competition_ranks(col)
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
