"""The report of the generalization experiments: benchmarks/results/generalization.md (the
summary of findings first, then one section per study with its tables and claim checks) and the
rows as generalization.json.

Why a module of its own: the report is rewritten from the JSON alone (`--report-only`) and after
every study of a long run; it only lays out what generalization_claims judges and
generalization_studies measured.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

from generalization_claims import (PAPER, claims_baselines, claims_metric, claims_metric_switch,
                                   claims_strategy, competition_ranks, nauc_ranking, strategy_tables)
from generalization_studies import BASELINES, KS, METRICS, SPEED, TABLES, TARGETS

def _table(columns):
    """Rank rows from several [(name, value)] lists side by side; a rank shared by equal values
    is shown once per column as 'name (=r)'."""
    n = max(len(c) for _, c in columns)
    head = "| Rank | " + " | ".join(f"{t}: name | NAUC" for t, _ in columns) + " |"
    sep = "|---|" + "---|---|" * len(columns)
    lines = [head, sep]
    ranks = [competition_ranks(c) for _, c in columns]
    for i in range(n):
        cells = []
        for (_, c), rk in zip(columns, ranks):
            if i < len(c):
                tie = rk[i] != i + 1 or (i + 1 < len(c) and rk[i + 1] == rk[i])
                cells += [f"{c[i][0]}" + (f" (={rk[i]})" if tie else ""), f"{c[i][1]:.2f}"]
            else:
                cells += ["", ""]
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    return lines


def _fmt(x, nd=2):
    return "-" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def _paper_cells(paper, metric):
    p = PAPER.get((paper, metric))
    if not p:
        return None
    return [[f"S{s} {v:g}" for s, v in p[m]] for m in ("alteration", "l_div", "t_clo")]


def write_strategy(lines, st):
    tables = strategy_tables(st)
    lines += ["## Strategy study (Tables 4-5)", "",
              "NAUC % on [3, 15000] (trapezoid on linear k) over the 14 k of A10; alteration (under the metric that "
              "guides the run) and t-closeness (L1) lower is better, l-diversity (% of l_div(T*)) higher is better. "
              "Tables as the paper's Tables 4-5: ranks best first, the paper's column for the same table and metric "
              "beside ours. Mapping of the paper's tables: Adult_Age (S = age) and Adult_Mar (S = marital_status) as "
              "in the paper, 8 QIs; florida_30162_Aff cannot be reproduced (the Florida voter extract is not "
              "available offline and not redistributable), so **Adult_Aff stands in for it**: the same shape - four "
              "demographic QIs (age for year of birth, sex, race, native_country as the place attribute) and a "
              "few-valued, skewed, non-demographic S, workclass (7 values, l_div(T*) = 2.66, Affiliation's is "
              "about 3.16). Its paper column is florida's, for the shape of the ranking only. Privacy scope "
              "'table' is the literal Defs 15-16 (a candidate is scored by the whole table after the merge); "
              "'class' scores the merged class alone (A7).", ""]
    for (table, scope, metric), (alt, ldv, tcl) in tables.items():
        paper = TABLES.get(table, (None, None, table))[2]
        lmax = next(r["l_div_max"] for r in st if r["table"] == table)
        lines += [f"### {table}, metric {metric.upper() if metric == 'nllm' else metric.title()}, scope {scope} "
                  f"(l_div(T*) = {lmax:.2f})", ""]
        pc = _paper_cells(paper, metric)
        head = ["Alteration", "l-diversity", "t-closeness"]
        row0 = "| Rank | " + " | ".join(f"{h}: strategy | NAUC" for h in head)
        if pc:
            row0 += " | " + " | ".join(f"paper {paper} {h}" for h in head)
        lines += [row0 + " |", "|---|" + "---|---|" * 3 + ("---|" * 3 if pc else "")]
        rks = [competition_ranks(c) for c in (alt, ldv, tcl)]
        for i in range(len(alt)):
            cells = []
            for col, rk in zip((alt, ldv, tcl), rks):
                tie = rk[i] != i + 1 or (i + 1 < len(col) and rk[i + 1] == rk[i])
                cells += [col[i][0] + (f" (={rk[i]})" if tie else ""), f"{col[i][1]:.2f}"]
            if pc:
                cells += [pc[0][i], pc[1][i], pc[2][i]]
            lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
        lines.append("")
    claims = claims_strategy(tables)
    keys = list(tables)
    if claims:
        lines += ["### Paper claims on the strategies (spec 001 §7.3)", "",
                  "One column per table / metric / scope; **no** marks a claim that does not hold here, with its "
                  "numbers. Equal NAUCs (identical curves: several strategies often make the same merges) are ties, "
                  "written S1=S2: a group is 'the best / last three' when no other strategy is strictly better / "
                  "worse than one of them; 'worst', 'best' and 'between' are strict.", ""]
        short = lambda k: f"{k[0]} {k[2].upper() if k[2] == 'nllm' else k[2].title()} {k[1]}"
        lines += ["| claim | " + " | ".join(short(k) for k in keys) + " |", "|---|" + "---|" * len(keys)]
        for claim, per in claims.items():
            lines.append(f"| {claim} | " + " | ".join(
                (("yes: " if per[k][0] else "**no**: ") + per[k][1]) if k in per else "-" for k in keys) + " |")
        held = sum(ok for per in claims.values() for ok, _ in per.values())
        total = sum(len(per) for per in claims.values())
        lines += ["", f"{held} of {total} claim checks hold.", ""]
    sw = claims_metric_switch(tables)
    if sw:
        lines += ["Item 24 (NLLM and Total give nearly the same strategy orderings): Spearman rho between the NLLM "
                  "and Total NAUCs of S1..S7, per measure (alteration / l-div / t-clo); the paper's own Tables 4 vs 5 "
                  "beside it.", "", "| table | scope | ours | paper |", "|---|---|---|---|"]
        for table, scope, ours, pp, paper in sw:
            lines.append(f"| {table} | {scope} | {' / '.join(f'{x:+.2f}' for x in ours)} | "
                         f"{' / '.join(f'{x:+.2f}' for x in pp)} ({paper}) |")
        lines.append("")
    base = claims_baselines(st)
    if base:
        lines += ["### Pure strategies l_div and t_clo (Figures 5-7, items 17-22), NLLM", "",
                  "First k: the first k of the grid where the pure strategy's l_div reaches 99.9 % of l_div(T*), or "
                  "its t_clo is at most 0.001. Paper values read from the text of §4.3.2.", "",
                  "| table | scope | S1 alt % at k=3 (paper) | l_div: alt % at k=3 (paper) | l_div: first k at max "
                  "(paper) | alt % there | t_clo: alt % at k=3 (paper) | t_clo: first k ~0 (paper) | alt % there |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for b in base:
            p = b["p"]
            lines.append(f"| {b['table']} | {b['scope']} | {_fmt(b['s1_alt3'])} ({_fmt(p['s1_alt3'])}) | "
                         f"{_fmt(b['ldiv_alt3'])} ({_fmt(p['ldiv_alt3'])}) | {_fmt(b['ldiv_k'])} ({p['ldiv_k']}) | "
                         f"{_fmt(b['ldiv_alt_at_k'])} | {_fmt(b['tclo_alt3'])} ({_fmt(p['tclo_alt3'])}) | "
                         f"{_fmt(b['tclo_k'])} ({p['tclo_k']}) | {_fmt(b['tclo_alt_at_k'])} |")
        lines += ["", "Curves (alteration % / l_div / t_clo per k):", "",
                  "| table | scope | strategy | " + " | ".join(str(k) for k in KS) + " |",
                  "|---|---|---|" + "---|" * len(KS)]
        for table in TABLES:
            for scope in ("table", "class"):
                for strategy in ["S1"] + BASELINES:
                    rs = sorted((r for r in st if r["table"] == table and r.get("scope", "table") == scope
                                 and r["metric"] == "nllm" and r["strategy"] == strategy), key=lambda r: r["k"])
                    if rs:
                        lines.append(f"| {table} | {scope} | {strategy} | " + " | ".join(
                            f"{r['alteration']:.1f} / {r['l_div']:.2f} / {r['t_clo']:.3f}" for r in rs) + " |")
        lines.append("")
    secs = [r["seconds"] for r in st]
    lines += [f"GAA publish seconds in this study ({len(secs)} releases): median {statistics.median(secs)}, "
              f"max {max(secs)}.", ""]


def write_mondrian(lines, mo, rows):
    by = {(r["mode"], r["k"]): r for r in mo}
    ks = sorted({r["k"] for r in mo})
    lines += ["## Mondrian on Adult (8 QIs, SA income)", "",
              "QIs age, workclass, education_num, marital_status, occupation, race, sex, native_country; numeric age "
              "and education_num are cut at medians and published as ranges, the categorical QIs split along the "
              "shipped hierarchies and published as hierarchy nodes. NCP % = the mean over QIs and records of "
              "(range width / domain width) or (leaves under the node - 1) / (leaves - 1) (a leaf counts 0, A15).", ""]
    s10, x10, s20 = by.get(("strict", 10)), by.get(("relaxed", 10)), by.get(("strict", 20))
    checks = []
    if s10 and s20:
        checks.append(("NCP grows from k = 10 to k = 20 (spec 003 C3; paper 12 % -> 15.03 % on INFORMS)",
                       s20["ncp"] >= s10["ncp"], f"{s10['ncp']:.2f} -> {s20['ncp']:.2f}"))
    for mode in ("strict", "relaxed"):
        seq = [by[(mode, k)] for k in ks if (mode, k) in by]
        dips = [(a["k"], b["k"]) for a, b in zip(seq, seq[1:]) if b["ncp"] < a["ncp"] - 1e-9]
        checks.append((f"{mode}: NCP never falls as k grows over 2..100 (not a theorem for Mondrian)", not dips,
                       f"{len(dips)} fall(s)" + (f", e.g. k = {dips[0][0]} -> {dips[0][1]}" if dips else "")))
        checks.append((f"{mode}: every class holds at least k rows (classes <= n / k)",
                       all(r["classes"] * r["k"] <= 30162 for r in seq), f"{len(seq)} k values"))
    both = [k for k in ks if ("strict", k) in by and ("relaxed", k) in by]
    worse = [k for k in both if by[("relaxed", k)]["ncp"] > by[("strict", k)]["ncp"] + 1e-9]
    checks.append(("relaxed loses no more than strict (NCP relaxed <= strict at every k)", not worse,
                   f"relaxed higher at {len(worse)} of {len(both)} k" + (f", e.g. k = {worse[0]}" if worse else "")))
    if s10 and x10:
        checks.append(("reference anchor: Basic Mondrian on Adult, K = 10: 12.19 % strict / 24.91 % relaxed "
                       "(reference README, other hierarchies and a leaf counting 1/|A|, A15), within 2.5 points",
                       abs(s10["ncp"] - 12.19) <= 2.5 and abs(x10["ncp"] - 24.91) <= 2.5,
                       f"ours {s10['ncp']:.2f} / {x10['ncp']:.2f}"))
        checks.append(("Mondrian at k = 10 takes about 2 s (spec 003 Table 16: 2 s)", s10["seconds"] <= 2.0,
                       f"{s10['seconds']} s end to end, queries off"))
    lines += ["| check | holds | numbers |", "|---|---|---|"]
    lines += [f"| {c} | {'yes' if ok else '**no**'} | {n} |" for c, ok, n in checks]
    lines += ["", "| k | strict NCP % | strict classes | strict s | relaxed NCP % | relaxed classes | relaxed s |",
              "|---|---|---|---|---|---|---|"]
    for k in ks:
        s, x = by.get(("strict", k)), by.get(("relaxed", k))
        cells = [k]
        for r in (s, x):
            cells += ["-", "-", "-"] if r is None else [f"{r['ncp']:.2f}", r["classes"], r["seconds"]]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    per = [(mode, by[(mode, 10)]["ncp_by_attribute"]) for mode in ("strict", "relaxed")
           if (mode, 10) in by and "ncp_by_attribute" in by[(mode, 10)]]
    if per:
        cols = list(per[0][1])
        lines += ["", "NCP % per QI at k = 10 (where the loss is):", "", "| mode | " + " | ".join(cols) + " |",
                  "|---|" + "---|" * len(cols)]
        lines += [f"| {mode} | " + " | ".join(f"{d[c]:.1f}" for c in cols) + " |" for mode, d in per]
    qe = [r for r in rows if r["study"] == "mondrian_qe"]
    if qe:
        lines += ["", f"With the default query-error workload (1,000 queries, theta 0.1), k = 10 strict takes "
                      f"{qe[0]['seconds']} s end to end (mean query error {qe[0]['query_error']:.3f}); "
                      f"phases {qe[0]['phases']}."]
    lines.append("")


def write_speed(lines, sp):
    lines += ["## Speed (issue 4 acceptance)", "",
              "Each case published in a fresh connection, end to end (`pganon.publish`: snapshot, plan, assign, "
              "materialize, verify, measure, expose), with the query-error workload off (queries = 0) for the "
              "repeated runs and on (the default 1,000 queries) for one more; each run beside a "
              "`CREATE TABLE AS SELECT` of the same columns (key, QIs, SA) timed just before it. The machine has "
              "2 cores shared with other developers: the ratio is the number to compare across runs; `load` is "
              "the 1-minute load average at the end of the run.", "",
              "| case | rows | QIs | queries | runs | seconds median (min-max) | target | CTAS s median | "
              "ratio median | plan s | verify s | measure s | load |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for case in SPEED:
        for q in (0, 1000):
            rs = [r for r in sp if r["case"] == case and r["queries"] == q]
            if not rs:
                continue
            secs = [r["seconds"] for r in rs]
            med = statistics.median(secs)
            tgt = TARGETS.get(case)
            verdict = "-" if tgt is None or q else (f"< {tgt:g} s: {'yes' if med < tgt else '**no**'}")
            ph = lambda x: statistics.median(r["phases"].get(x, 0) for r in rs)
            lines.append(f"| {case} | {rs[0]['rows']:,} | {rs[0]['qis']} | {q} | {len(rs)} | {med:.2f} "
                         f"({min(secs):.2f}-{max(secs):.2f}) | {verdict} | "
                         f"{statistics.median(r['ctas_seconds'] for r in rs):.3f} | "
                         f"{statistics.median(r['ratio'] for r in rs):.0f} | {ph('plan'):.2f} | {ph('verify'):.2f} | "
                         f"{ph('measure'):.2f} | {max(r['load'] for r in rs):.1f} |")
    lines.append("")


def write_summary(lines, rows):
    """The findings first: every paper claim checked below, counted, with the numbers that decide
    it; then the notes recorded for this run (rows of study 'note')."""
    out = []
    met = [r for r in rows if r["study"] == "metric"]
    if met:
        claims, (alt, _, _) = claims_metric(met)
        bad = [f"{c.split(' (')[0]} ({n})" for c, ok, n in claims if not ok]
        out.append(f"- **Metric study** (Table 3, NAUC on [3, 2000]): {len(claims) - len(bad)} of {len(claims)} "
                   f"claims hold. Not held: " + "; ".join(bad) + ". The linear-k NAUC is decided by k >= 250 (a few "
                   "dozen classes left); on [3, 100] NLLM is best on mean alteration and LLM worst on all three "
                   "criteria (second table below).")
    st = [r for r in rows if r["study"] == "strategy"]
    if st:
        tables = strategy_tables(st)
        claims = claims_strategy(tables)
        parts = []
        for claim, per in claims.items():
            held = sum(ok for ok, _ in per.values())
            parts.append(f"{claim.split(' (')[0]}: {held}/{len(per)}")
        out.append("- **Strategy study** (Tables 4-5; 3 tables x 2 metrics x 2 privacy scopes = 12 columns): claims "
                   "held per column - " + "; ".join(parts) + ".")
        s1 = []
        for table, (_, _, paper) in TABLES.items():
            for metric in ("nllm", "total"):
                key = (table, "table", metric)
                if key in tables and (paper, metric) in PAPER:
                    ours = dict(tables[key][0])["S1"]
                    theirs = dict((f"S{x}", v) for x, v in PAPER[(paper, metric)]["alteration"])["S1"]
                    s1.append(f"{table} {metric} {ours:.1f} vs {theirs:g}")
        out.append("- S1's alteration NAUC, ours (table scope) vs the paper: " + "; ".join(s1) + " (Adult_Aff against "
                   "florida's, a stand-in). Our shipped hierarchies are coarser than the paper's unknown ones (A1), "
                   "so every curve reaches the root sooner and all alteration NAUCs sit higher.")
        out.append("- A literal S5 (min t_clo among min-cost partners, Def. 17) behaves like S1, as spec A8 predicts: "
                   "it is neither the worst on alteration nor the best on l/t in any column; the paper's S5 rows "
                   "(99-100 % alteration, best l/t) are not reproduced. S2 and S5 only break ties of cost, which "
                   "NLLM's leaf-count costs rarely have: under NLLM in table scope S2 = S5 = S1 on Adult_Age and "
                   "Adult_Mar.")
        k3 = lambda t, sc, x: next((r["alteration"] for r in st if (r["table"], r["scope"], r["metric"], r["strategy"],
                                                                    r["k"]) == (t, sc, "nllm", x, 3)), None)
        diag = [f"{t}: S1 {k3(t, 'table', 'S1'):.2f}, S3 {k3(t, 'table', 'S3'):.2f} (class scope: S3 "
                f"{k3(t, 'class', 'S3'):.2f})" for t in TABLES
                if None not in (k3(t, "table", "S1"), k3(t, "table", "S3"), k3(t, "class", "S3"))]
        if diag:
            out.append("- Table vs class scope (A7): the spec's diagnostic holds - in table scope S3's alteration at "
                       "k = 3 equals S1's (NLLM: " + "; ".join(diag) + "), because the table's l_div is decided by a "
                       "worst class the merge does not touch, so nearly all candidates tie and cost decides. Class "
                       "scope makes S3/S6/S7 privacy-first from the start.")
        base = claims_baselines(st)
        if base:
            out.append("- Pure l_div / t_clo strategies: alteration at k = 3 and the first k at the optimum, ours vs "
                       "paper: " + "; ".join(
                           f"{b['table']} {b['scope']}: {_fmt(b['ldiv_alt3'], 1)} / {_fmt(b['tclo_alt3'], 1)} % "
                           f"(paper {_fmt(b['p']['ldiv_alt3'])}), optimum from k = {b['ldiv_k']} / {b['tclo_k']} "
                           f"(paper {b['p']['ldiv_k']} / {b['p']['tclo_k']})" for b in base) + ". Alteration is "
                       "100 % wherever the optimum is reached (item 22 holds).")
    mo = {(r["mode"], r["k"]): r for r in rows if r["study"] == "mondrian"}
    if ("strict", 10) in mo and ("relaxed", 10) in mo:
        a, b = mo[("strict", 10)], mo[("relaxed", 10)]
        per = a.get("ncp_by_attribute", {})
        worst = max(per, key=per.get) if per else None
        out.append(f"- **Mondrian** (k = 10): NCP {a['ncp']:.2f} % strict / {b['ncp']:.2f} % relaxed, "
                   f"{a['classes']} / {b['classes']} classes; the reference README's 12.19 / 24.91 % are not met"
                   + (f": {worst} alone loses {per[worst]:.1f} % (its shipped hierarchy is one level, leaf -> *, so a "
                      f"partition splits it only when every value has k rows)" if worst else "") + ". NCP grows with k "
                   "in both modes; relaxed is not always below strict.")
    sp = [r for r in rows if r["study"] == "speed"]
    if sp:
        bits = []
        for case, tgt in TARGETS.items():
            rs = [r for r in sp if r["case"] == case and r["queries"] == 0]
            if rs:
                med = statistics.median(r["seconds"] for r in rs)
                bits.append(f"{case} {med:.2f} s (target < {tgt:g} s: {'met' if med < tgt else '**missed**'}; "
                            f"{statistics.median(r['ratio'] for r in rs):.0f}x CTAS)")
        qe = [r for r in sp if r["case"] == "mondrian_adult" and r["queries"] == 1000]
        out.append("- **Speed**, query error off: " + "; ".join(bits) + "." + (
            f" With the default 1,000-query workload Mondrian k = 10 on Adult takes {qe[0]['seconds']:.1f} s, "
            f"{qe[0]['phases'].get('measure', 0):.1f} s of it in measure (drawing the query workload, "
            "workload.make_queries), so the 2 s target holds only with queries = 0." if qe else ""))
    notes = [r for r in rows if r["study"] == "note"]
    if out or notes:
        lines += ["## Summary", ""] + out
        if notes:
            lines += ["", "Run notes:", ""] + [f"- ({r['about']}) {r['text']}" for r in notes]
        lines.append("")


def write(rows, args):
    results = Path(args.results)
    results.mkdir(exist_ok=True)
    (results / "generalization.json").write_text(json.dumps(rows, indent=1))
    lines = ["# Generalization experiments (spec 001 §4, spec 003 §5)", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M:%S')} on {platform.platform()} (`{args.cmd}`). UCI Adult, "
             "30,162 rows, the shipped hierarchies (pganon/data/hierarchies; the paper's are unknown, A1). "
             "GAA with the faithful options (pairwise cost, ties to the smallest creation id; table scope unless "
             "a table says 'class'). Seconds: end-to-end publish (snapshot to expose, verification included), "
             "query error off unless stated. Reproduce: `nice -n 5 .venv/bin/python "
             "benchmarks/generalization_experiments.py --only <study>`; the report alone from the JSON: "
             "`--report-only`.", ""]
    write_summary(lines, rows)
    met = [r for r in rows if r["study"] == "metric"]
    if met:
        claims, (alt, gen, root) = claims_metric(met)
        lines += ["## Metric study (Table 3): NAUC % on [3, 2000], lower is better", ""]
        lines += _table([("Mean alteration", alt), ("% generalized", gen), ("% at the root", root)])
        lines += ["", "| claim (spec 001 §7.3) | holds | numbers |", "|---|---|---|"]
        lines += [f"| {c} | {'yes' if ok else '**no**'} | {n} |" for c, ok, n in claims]
        small = [r for r in met if r["k"] <= 100]
        if len({r["k"] for r in small}) >= 2:
            hi = max(r["k"] for r in small)
            lines += ["", "The linear-k NAUC on [3, 2000] is decided by k >= 250, where a table has a few dozen "
                      f"classes. The same ranking and claims on [3, {hi}] (realistic k; not the paper's range):", ""]
            lines += _table([(t, nauc_ranking(small, "metric", c, 3, hi)) for t, c in
                             (("Mean alteration", "mean_alteration"), ("% generalized", "p_gen"), ("% at the root", "p_root"))])
            c2, _ = claims_metric(small, 3, hi)
            lines += ["", "| claim on [3, 100] | holds | numbers |", "|---|---|---|"]
            lines += [f"| {c} | {'yes' if ok else '**no**'} | {n} |" for c, ok, n in c2]
        lines += ["", "Per k (mean alteration % / % generalized / % root / classes / s):", "",
                  "| metric | " + " | ".join(str(k) for k in sorted({r['k'] for r in met})) + " |",
                  "|---|" + "---|" * len({r['k'] for r in met})]
        for metric in METRICS:
            rs = sorted((r for r in met if r["metric"] == metric), key=lambda r: r["k"])
            lines.append(f"| {metric} | " + " | ".join(
                f"{r['mean_alteration']:.1f} / {r['p_gen']:.1f} / {r['p_root']:.1f} / {r['classes']} / {r['seconds']}"
                for r in rs) + " |")
        lines.append("")
    st = [r for r in rows if r["study"] == "strategy"]
    if st:
        write_strategy(lines, st)
    mo = [r for r in rows if r["study"] == "mondrian"]
    if mo:
        write_mondrian(lines, mo, rows)
    sp = [r for r in rows if r["study"] == "speed"]
    if sp:
        write_speed(lines, sp)
    (results / "generalization.md").write_text("\n".join(lines) + "\n")
