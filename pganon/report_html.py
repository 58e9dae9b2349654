"""Self-contained HTML reports: `pganon compare` (several methods side by side) and
`pganon report` (one release).  One file, inline CSS and SVG, no network: it opens offline in any
browser.  A small inline script records what the browser drew (each plot's size and marks) in
`<html data-rendered>`, which the browser test reads."""

from __future__ import annotations

import csv
import io
import json
import math
from html import escape
from pathlib import Path

from . import svgplot

PAGE_CSS = """
:root { --ink: #1d2330; --muted: #5b6475; --line: #dde1e8; --bg: #f6f7f9; --good: #e3f4ea; --bad: #fbe9e7; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; }
header { background: #1d2330; color: #fff; padding: 20px 32px 16px; }
header h1 { margin: 0 0 4px; font-size: 22px; font-weight: 600; }
header p { margin: 0; color: #c7cdd8; }
main { padding: 20px 32px 40px; max-width: 1500px; }
section { margin: 0 0 26px; }
h2 { font-size: 17px; margin: 0 0 10px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(480px, 1fr)); gap: 16px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card p.note { color: var(--muted); font-size: 12px; margin: 4px 2px 0; }
table { border-collapse: collapse; background: #fff; border: 1px solid var(--line); font-size: 13px; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th { background: #eef0f4; font-weight: 600; position: sticky; top: 0; }
td.l, th.l { text-align: left; }
td.w { white-space: normal; min-width: 260px; max-width: 640px; }
td.best { background: var(--good); font-weight: 600; }
td.worst { background: var(--bad); }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
.ok { color: #1a7f37; font-weight: 600; } .no { color: #b42318; font-weight: 600; } .na { color: var(--muted); }
.kv { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; background: #fff;
      border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.kv dt { color: var(--muted); } .kv dd { margin: 0; }
.small { color: var(--muted); font-size: 12px; }
details { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; }
summary { cursor: pointer; font-weight: 600; }
.scroll { overflow-x: auto; }
"""

RENDER_CHECK = """
<script>
(function () {
  function measure() {
    var plots = Array.prototype.map.call(document.querySelectorAll('svg.plot'), function (s) {
      var b = s.getBoundingClientRect(), marks = s.querySelectorAll('.mark'), drawn = 0;
      Array.prototype.forEach.call(marks, function (m) {
        var r = m.getBBox(); if (r.width > 0 && r.height > 0) { drawn++; }
      });
      return {title: s.getAttribute('aria-label'), width: Math.round(b.width), height: Math.round(b.height),
              marks: marks.length, drawn: drawn, lines: s.querySelectorAll('path.line').length};
    });
    document.documentElement.setAttribute('data-rendered', JSON.stringify(plots));
  }
  if (document.readyState === 'complete') { measure(); } else { window.addEventListener('load', measure); }
})();
</script>
"""


def _num(v, digits=3):
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return "–"
        a = abs(v)
        if a >= 1e6:
            return f"{v / 1e6:.3g} M"
        if a >= 100:
            return f"{v:,.0f}"
        return f"{v:.{digits}g}" if a < 1 else f"{v:.{max(digits - 1, 1)}f}".rstrip("0").rstrip(".") or "0"
    return escape(str(v))


def _page(title, subtitle, body):
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{PAGE_CSS}{svgplot.CSS}</style></head><body>"
            f"<header><h1>{escape(title)}</h1><p>{subtitle}</p></header><main>{body}</main>{RENDER_CHECK}</body></html>\n")


def _table(headers, rows, *, left=(0,), rank=None, wrap=()):
    """rows: lists of (text, value) cells; rank: {column index: 'low' | 'high'} colours the best
    and worst numeric value of those columns."""
    marks = {}
    for col, better in (rank or {}).items():
        vals = [(i, r[col][1]) for i, r in enumerate(rows) if isinstance(r[col][1], (int, float))
                and not isinstance(r[col][1], bool) and math.isfinite(r[col][1])]
        if len(vals) < 2 or len({v for _, v in vals}) < 2:
            continue
        lo, hi = min(v for _, v in vals), max(v for _, v in vals)
        best, worst = (lo, hi) if better == "low" else (hi, lo)
        for i, v in vals:
            if v == best:
                marks[(i, col)] = "best"
            elif v == worst:
                marks[(i, col)] = "worst"
    out = ["<div class=\"scroll\"><table><thead><tr>"]
    out += [f"<th class=\"{'l' if i in left else ''}\">{h}</th>" for i, h in enumerate(headers)]
    out.append("</tr></thead><tbody>")
    for i, r in enumerate(rows):
        out.append("<tr>")
        for j, (text, _) in enumerate(r):
            cls = " ".join(c for c in ("l" if j in left else "", "w" if j in wrap else "", marks.get((i, j), "")) if c)
            out.append(f"<td class=\"{cls}\">{text}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


MODELS = {"lsl": "L_sl-diversity (security levels)", "l_diversity": "l-diversity", "k_anonymity": "k-anonymity",
          "ck": "(c,k)-anonymization", "pk": "(p,k)-angelization", "anatomy": "l-diverse anatomy",
          "rating": "SC-diverse attribute groups", "semantic": "l-diversity, no effective semantic rule",
          "kl_diversity": "(k,l)-diversity of 1:M data", "kl": "IR (k,l)-anonymity", "el": "EIR l-diversity",
          "ab": "IR (α,β)-anonymity", "eab": "EIR (α,β)-anonymity"}


def _param_text(v):
    """A parameter as a short text: a per-attribute object as its range of values."""
    if isinstance(v, dict) and v and all(isinstance(x, (int, float)) for x in v.values()):
        lo, hi = min(v.values()), max(v.values())
        return f"{lo} per attribute" if lo == hi else f"{lo}–{hi} per attribute"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {x}" for k, x in v.items()) + "}"
    return str(v)


def _guarantee(method, params, model):
    p = {k: v for k, v in (params or {}).items() if k not in ("queries", "theta", "limit", "sensitive", "seed")}
    text = ", ".join(f"{k}={_param_text(v)}" for k, v in sorted(p.items()))
    name = MODELS.get(model, model or method)
    return f"{escape(name)}" + (f" <span class=\"small\">{escape(text)}</span>" if text else "")


def _risk_section(rows) -> str:
    """The risk figures of one release beside their thresholds (pganon.risk)."""
    failing = [r for r in rows if r["passed"] is False]
    head = ("<span class=\"ok\">✓ the dataset's policy holds</span>" if not failing else
            f"<span class=\"no\">✗ {len(failing)} figure(s) break the dataset's policy: promote refuses it</span>")
    mark = {True: "<span class=\"ok\">✓</span>", False: "<span class=\"no\">✗</span>", None: "<span class=\"na\">–</span>"}
    cells = [[(escape(r["measure"]), None), (escape(r["scope"]), None), (_num(r["value"]), None),
              (_num(r["threshold"]), None), (mark[r["passed"]], None), (escape(r["detail"] or ""), None)] for r in rows]
    return (f"<section><h2>What an analyst can learn {head}</h2><p class=\"note\">Measured from the analyst's seat: "
            "the published relations and the release's promise only. Threshold: the dataset's policy, else what the "
            "release promises; – means informational.</p>" +
            _table(["measure", "scope", "value", "threshold", "passes", "detail"], cells, left=(0, 1, 5), wrap=(5,)) +
            "</section>")


def _risk_cells(rows):
    """At-a-glance cells: figures that break the policy, the worst prosecutor risk and attacker
    confidence, each with its threshold."""
    def worst(measure):
        got = [r for r in rows or [] if r["measure"] == measure and r["value"] is not None]
        if not got:
            return ("<span class=\"na\">n/a</span>", None)
        r = max(got, key=lambda x: x["value"])
        thr = f" <span class=\"small\">≤ {_num(r['threshold'])}</span>" if r["threshold"] is not None else ""
        cls = {False: "no", True: "ok"}.get(r["passed"], "")
        return (f"<span class=\"{cls}\">{_num(r['value'])}</span>{thr}", r["value"])
    n_fail = sum(1 for r in rows or [] if r["passed"] is False)
    fail = (f"<span class=\"{'no' if n_fail else 'ok'}\">{n_fail}</span>", n_fail)
    return [fail, worst("prosecutor_risk_max"), worst("attacker_confidence_max")]


def _mean_conf(conf):
    vals = [v["mean"] for k, v in (conf or {}).items() if not k.startswith("(")]
    return sum(vals) / len(vals) if vals else None


def _max_conf(conf):
    vals = [v["max"] for k, v in (conf or {}).items() if not k.startswith("(")]
    return max(vals) if vals else None


def _mid(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


# ------------------------------------------------------------------------------------ compare


def compare_html(res: dict) -> str:
    info, st = res["dataset"], res["settings"]
    runs = res["runs"]
    colours = svgplot.Colours(st["methods"])
    theta0 = _mid(st["thetas"])
    defaults = {r["method"]: r for r in runs if r.get("default")}
    copy_full = next((s["seconds"] for s in res["scaling"] if s["axis"] == "rows" and s["method"].startswith("(copy")
                      and s["x"] == info["rows"]), None)
    body = []
    # --- at a glance
    rows = []
    for method in st["methods"]:
        r = defaults.get(method)
        sw = f"<span class=\"swatch\" style=\"background:{colours.colour(method)}\"></span>{escape(method)}"
        if r is None:
            err = next((f["error"] for f in res["failures"] if f["method"] == method), "not run")
            rows.append([(sw, None), (f"<span class=\"no\">failed</span>: {escape(err)}", None)] + [("–", None)] * 13)
            continue
        m = r["measures"]
        if m.get("not_comparable"):
            sw += f"<br><span class=\"small\">{escape(m['not_comparable'])}</span>"
        met = m.get("metrics") or {}
        vuln = (met.get("audit") or {}).get("n_vulnerable_correct")
        are0 = (m.get("are") or {}).get(str(theta0))
        ratio = r["wall_seconds"] / copy_full if copy_full else None
        rows.append([(sw, None), (_guarantee(method, r["params"], m.get("model")), None),
                     ("<span class=\"ok\">✓ verified</span>", None), *_risk_cells(r.get("risk")),
                     (_num(100 * m.get("suppression", 0.0)), 100 * m.get("suppression", 0.0)),
                     (_num(m.get("ncp_percent")), m.get("ncp_percent")),
                     (_num(m.get("kl_divergence")), m.get("kl_divergence")),
                     (_num(are0), are0), (_num(m.get("dm")), m.get("dm")),
                     (_num((m.get("class_sizes") or {}).get("median")), (m.get("class_sizes") or {}).get("median")),
                     (_num(_mean_conf(m.get("confidence"))) + f" <span class=\"small\">/ {_num(_max_conf(m.get('confidence')))}</span>",
                      _mean_conf(m.get("confidence"))),
                     (_num(vuln) if vuln is not None else "<span class=\"na\">n/a</span>", vuln),
                     (f"{_num(r['wall_seconds'])}" + (f" <span class=\"small\">({ratio:.0f}× copy)</span>" if ratio else ""),
                      r["wall_seconds"])])
    headers = ["method", "promise", "verified", "policy failures", "prosecutor risk", "attacker confidence",
               "suppressed %", "NCP %", "KL (nats)", f"ARE θ={theta0}", "DM",
               "median class", "SA confidence mean / max", "vulnerable", "seconds"]
    body.append("<section><h2>At a glance</h2>" + _table(headers, rows, left=(0, 1),
                rank={6: "low", 7: "low", 8: "low", 9: "low", 10: "low", 12: "low", 13: "low", 14: "low"})
                + f"<p class=\"small\">Default setting k = {st['k0']}, l = {st['l0']} (where a method takes them). "
                "Green: best in its column, red: worst. Every release passed its independent verification before it "
                "was measured (a release that fails it is never published). KL divergence and ARE compare the "
                "reconstructed joint distribution with the original rows; SA confidence is what an attacker who "
                "knows a person's quasi-identifiers believes about that person's sensitive value (1 = certain).</p>"
                "</section>")
    # --- plots
    cards = []
    ks, ls = sorted(st["ks"]), sorted(st["ls"])

    def sweep_series(measure, sweep, xs):
        series = []
        for method in st["methods"]:
            pts = [(r[sweep], _get(r["measures"], measure)) for r in runs
                   if r["method"] == method and r["sweep"] == sweep]
            if pts:
                series.append({"name": method, "points": sorted(pts)})
            else:
                flat = defaults.get(method)
                if flat is not None and _get(flat["measures"], measure) is not None:
                    v = _get(flat["measures"], measure)
                    series.append({"name": method, "points": [(x, v) for x in xs], "dashed": True})
        return series

    if len(ks) > 1:
        cards.append(_card(svgplot.line_chart(sweep_series("ncp_percent", "k", ks), title="Information loss against k",
                                              x_label="k", y_label="NCP %", colours=colours),
                           "NCP% of the published quasi-identifier cells. Dashed: the method does not take k."))
        cards.append(_card(svgplot.line_chart(sweep_series("kl_divergence", "k", ks), title="KL divergence against k",
                                              x_label="k", y_label="KL (nats)", colours=colours),
                           "Distance of the reconstructed joint distribution (QIs and SAs) from the original."))
    if len(ls) > 1:
        cards.append(_card(svgplot.line_chart(sweep_series("ncp_percent", "l", ls), title="Information loss against l",
                                              x_label="l (c, p, SC)", y_label="NCP %", colours=colours),
                           "Methods that take l (Rating: SC per attribute). Dashed: the method does not take l."))
    are_series = []
    for method in st["methods"]:
        r = defaults.get(method)
        if r and r["measures"].get("are"):
            are_series.append({"name": method, "points": sorted((float(t), v) for t, v in r["measures"]["are"].items())})
    cards.append(_card(svgplot.line_chart(are_series, title="Query error against selectivity", x_label="selectivity θ",
                                          y_label="ARE", colours=colours, log_y=True),
                       f"{res['workload'].get('queries', 0)} seeded COUNT queries per θ, each on 2 random QIs and one "
                       "SA (spec 003 §3.2), the same queries for every method."))
    for axis, title, xl in (("rows", "Publish time against rows", "rows"),
                            ("sas", "Publish time against the number of SAs", "sensitive attributes")):
        pts = [s for s in res["scaling"] if s["axis"] == axis]
        names = list(dict.fromkeys(s["method"] for s in pts))
        series = [{"name": n, "points": sorted((s["x"], s["seconds"]) for s in pts if s["method"] == n),
                   "dashed": n.startswith("(copy")} for n in names]
        if series:
            note = ("End to end: snapshot, plan, assign, materialize, verify, measure. Dashed: a plain CREATE TABLE AS "
                    "of the same rows and columns." if axis == "rows" else "End to end, the first d declared SAs.")
            cards.append(_card(svgplot.line_chart(series, title=title, x_label=xl, y_label="seconds", colours=colours,
                                                  log_y=True), note))
    bands = []
    for method in st["methods"]:
        r = defaults.get(method)
        for b in (r["measures"].get("size_distribution") or []) if r else []:
            label = f"{b['lo']}" if b["lo"] == b["hi"] else f"{b['lo']}–{b['hi']}"
            if label not in bands:
                bands.append((b["lo"], label))
    bands = [lab for _, lab in sorted(set(bands))]
    if bands:
        series = []
        for method in st["methods"]:
            r = defaults.get(method)
            if not r or not r["measures"].get("size_distribution"):
                continue
            by = {(f"{b['lo']}" if b["lo"] == b["hi"] else f"{b['lo']}–{b['hi']}"): b["records"]
                  for b in r["measures"]["size_distribution"]}
            series.append({"name": method, "values": [by.get(lab) for lab in bands]})
        cards.append(_card(svgplot.bar_chart(bands, series, title="Class sizes", y_label="records", x_label="class size",
                                             colours=colours, log_y=True),
                           "Records per class-size band: the release's own groups (equivalence classes, QI groups, "
                           "anatomy groups, Rating rows with the same QI labels)."))
    sa_names = []
    for r in defaults.values():
        for k in (r["measures"].get("confidence") or {}):
            if not k.startswith("(") and k not in sa_names:
                sa_names.append(k)
    if sa_names:
        series, base = [], {}
        for method in st["methods"]:
            r = defaults.get(method)
            conf = (r or {}).get("measures", {}).get("confidence") or {}
            if conf:
                series.append({"name": method, "values": [(conf.get(a) or {}).get("mean") for a in sa_names]})
                for a in sa_names:
                    if a in conf and "baseline_mean" in conf[a]:
                        base[a] = conf[a]["baseline_mean"]
        cards.append(_card(svgplot.bar_chart(sa_names, series, title="What an attacker believes", y_label="mean confidence",
                                             colours=colours, baseline=base),
                           "Mean probability an attacker who knows a person's QIs gives that person's true sensitive "
                           "value. Black dashes: the same belief with no release (the value's frequency)."))
    body.append("<section><h2>Plots</h2><div class=\"cards\">" + "".join(cards) + "</div></section>")
    if res.get("claims"):
        body.append(_claims(res["claims"]))
    # --- every run
    detail = []
    for r in runs:
        m = r["measures"]
        detail.append([(escape(r["method"]), None), (escape(r["sweep"]), None), (_num(r["k"]), None), (_num(r["l"]), None),
                       (_num(m.get("ncp_percent")), None), (_num(m.get("kl_divergence")), None),
                       (" / ".join(_num(v) for _, v in sorted((m.get("are") or {}).items())), None),
                       (_num(m.get("dm")), None), (_num(m.get("classes")), None),
                       (_num(100 * m.get("suppression", 0.0)), None), (_num(r["wall_seconds"]), None),
                       (str(r["release"]), None)])
    body.append("<section><details><summary>Every measured run</summary>" + _table(
        ["method", "sweep", "k", "l", "NCP %", "KL", "ARE per θ " + ", ".join(map(str, sorted(st["thetas"]))), "DM",
         "classes", "suppressed %", "seconds", "release"], detail, left=(0, 1)) + "</details></section>")
    if res["failures"]:
        body.append("<section><h2>Settings a method could not meet</h2>" + _table(
            ["method", "sweep", "setting", "error"],
            [[(escape(f["method"]), None), (escape(f["sweep"]), None),
              (escape(json.dumps({k: v for k, v in f.get("params", {}).items() if k != "queries"})), None),
              (escape(f["error"]), None)] for f in res["failures"]], left=(0, 1, 2, 3), wrap=(3,)) + "</section>")
    body.append(_definitions(res))
    sub = (f"{_num(info['rows'])} rows of <code>{escape(info['source'])}</code> · QIs {escape(', '.join(info['qis']))} · "
           f"SAs {escape(', '.join(info['sas']))} · {escape(res['created'])} · pganon {escape(str(res.get('version')))} · "
           f"{_num(res['seconds'])} s. Nothing was kept: every release was rolled back.")
    return _page(f"pganon compare — {info['dataset']}", sub, "".join(body))


def _get(measures, name):
    v = measures.get(name)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _card(svg, note):
    return f"<div class=\"card\">{svg}<p class=\"note\">{escape(note)}</p></div>"


def _claims(claims):
    rows = []
    for c in claims:
        status = c["status"]
        cls = {"held": "ok", "not held": "no"}.get(status, "na")
        rows.append([(escape(c["id"]), None), (escape(c["claim"]), None), (escape(c.get("source", "")), None),
                     (f"<span class=\"{cls}\">{escape(status)}</span>", None), (escape(c.get("numbers", "")), None)])
    return ("<section><h2>The paper's claims on this data</h2>" +
            _table(["id", "claim", "source", "status", "measured"], rows, left=(0, 1, 2, 3, 4), wrap=(1, 4)) + "</section>")


def _definitions(res):
    w = res.get("workload") or {}
    return ("<section><details><summary>How the numbers are computed</summary><dl class=\"kv\">"
            "<dt>NCP %</dt><dd>Normalized certainty penalty of the quasi-identifier cells: a range's width over the "
            "domain's, a value set's size over the domain's (0 for one value), 100 % for suppressed cells; mean over "
            "records and QIs.</dd>"
            "<dt>KL divergence</dt><dd>KL(P ‖ P*) in nats over the joint domain of QIs and SAs: P the original rows, P* "
            "what an analyst rebuilds from the release, each record spread uniformly over its published cells "
            "(observed values) and independently across attributes; suppressed rows count as fully generalized.</dd>"
            f"<dt>ARE</dt><dd>Mean relative error |estimate − true| / true of {w.get('queries', 0)} seeded COUNT queries "
            f"per selectivity θ ({escape(str(w.get('scheme', '')))}), the estimate uniform within the published cells "
            "(pganon_engine.workload).</dd>"
            "<dt>DM</dt><dd>Discernibility: Σ |class|² + suppressed × N over the release's own classes.</dd>"
            "<dt>SA confidence</dt><dd>P*(s | QIs) of each record's own sensitive value s, averaged over records (and its "
            "maximum): how sure an attacker who knows the quasi-identifiers is.</dd>"
            "<dt>vulnerable records</dt><dd>Records whose sensitive value the fingerprint-correlation attack recovers "
            "(spec 004 §2.8, the correct variant), for GT/ST releases with bucket links.</dd>"
            "<dt>seconds</dt><dd>Wall time of pganon.publish, every phase included (verification too).</dd>"
            "</dl></details></section>")


# ------------------------------------------------------------------------------------ one release


def release_html(rep: dict) -> str:
    info, m = rep["release"], rep.get("measures") or {}
    colours = svgplot.Colours([info["method"]])
    body = []
    promise = _guarantee(info["method"], info["params"], (info.get("layout") or {}).get("model"))
    kv = [("dataset", escape(info["dataset"])), ("method", escape(info["method"])), ("promise", promise),
          ("parameters", f"<code>{escape(json.dumps(info['params'], sort_keys=True))}</code>"),
          ("rows", f"{_num(info['source_rows'])} source · {_num(info['published_rows'])} published · "
                   f"{_num(info['suppressed_rows'])} suppressed"),
          ("created", escape(str(info.get("created_at", "")))), ("engine", escape(str(info.get("engine_version"))))]
    body.append("<section><h2>What was promised</h2><dl class=\"kv\">" +
                "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in kv) + "</dl></section>")
    checks = rep.get("checks") or []
    ok = all(c["passed"] for c in checks)
    body.append(f"<section><h2>What was verified <span class=\"{'ok' if ok else 'no'}\">"
                f"{'✓ all checks pass' if ok else '✗ a check fails'}</span></h2>" +
                _table(["check", "passed", "detail"], [[(escape(c["check"]), None),
                                                         (("<span class=\"ok\">✓</span>" if c["passed"] else
                                                           "<span class=\"no\">✗</span>"), None),
                                                         (escape(c["detail"] or ""), None)] for c in checks],
                       left=(0, 2)) + "</section>")
    if rep.get("risk") is not None:
        body.append(_risk_section(rep["risk"]))
    met = info.get("metrics") or {}
    cost = [("NCP %", m.get("ncp_percent")), ("KL divergence (nats)", m.get("kl_divergence")),
            ("DM", m.get("dm")), ("classes", m.get("classes")),
            ("median class size", (m.get("class_sizes") or {}).get("median")),
            ("suppressed %", 100 * m["suppression"] if "suppression" in m else None)]
    cost += [(f"ARE at θ = {t}", v) for t, v in sorted((m.get("are") or {}).items())]
    shown = {"published_rows", "suppressed_rows", "d", "groups", "classes", "ncp_percent"}  # listed above
    cost += [(k.upper() if len(k) <= 3 else k.replace("_", " "), v) for k, v in met.items()
             if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in shown]
    cards = []
    if m.get("are"):
        cards.append(_card(svgplot.line_chart([{"name": info["method"], "points": sorted((float(t), v) for t, v in m["are"].items())}],
                                              title="Query error against selectivity", x_label="selectivity θ",
                                              y_label="ARE", colours=colours, log_y=True),
                           "Seeded COUNT queries on 2 random QIs and one SA, estimated uniformly within the published cells."))
    if m.get("size_distribution"):
        labels = [f"{b['lo']}" if b["lo"] == b["hi"] else f"{b['lo']}–{b['hi']}" for b in m["size_distribution"]]
        cards.append(_card(svgplot.bar_chart(labels, [{"name": info["method"], "values": [b["records"] for b in m["size_distribution"]]}],
                                             title="Class sizes", y_label="records", x_label="class size",
                                             colours=colours, log_y=True), "Records per class-size band."))
    body.append("<section><h2>What it costs in utility</h2><dl class=\"kv\">" +
                "".join(f"<dt>{escape(k)}</dt><dd>{_num(v)}</dd>" for k, v in cost if v is not None) +
                "</dl>" + (f"<div class=\"cards\" style=\"margin-top:14px\">{''.join(cards)}</div>" if cards else "") +
                "</section>")
    conf = m.get("confidence") or {}
    attack = []
    if conf:
        names = [a for a in conf if not a.startswith("(")]
        attack.append(_card(svgplot.bar_chart(names, [{"name": info["method"], "values": [conf[a]["mean"] for a in names]},
                                                      {"name": "worst record", "values": [conf[a]["max"] for a in names]}],
                                              title="What an attacker believes", y_label="confidence",
                                              colours=svgplot.Colours([info["method"], "worst record"]),
                                              baseline={a: conf[a].get("baseline_mean") for a in names}),
                            "Mean (and worst-case) probability an attacker who knows a person's QIs gives that person's "
                            "true sensitive value; black dashes: the same without the release."))
    audit = rep.get("audit")
    lines = []
    if audit:
        s = audit.get("summary", {})
        lines = [("linkable bucket pairs", s.get("n_linkable_pairs")), ("pairs that breach (pfcorr/ffcorr)", s.get("n_breaches")),
                 ("vulnerable records (correct)", s.get("n_vulnerable_correct")),
                 ("vulnerable records (covered)", s.get("n_vulnerable_covered")),
                 ("PriRisk max", s.get("pririsk_max"))]
    elif rep.get("audit_note"):
        lines = [("fingerprint-correlation audit", rep["audit_note"])]
    body.append("<section><h2>What an attacker learns</h2>" +
                (f"<div class=\"cards\">{''.join(attack)}</div>" if attack else "") +
                ("<dl class=\"kv\" style=\"margin-top:14px\">" +
                 "".join(f"<dt>{escape(k)}</dt><dd>{_num(v) if not isinstance(v, str) else escape(v)}</dd>"
                         for k, v in lines) + "</dl>" if lines else "") + "</section>")
    sub = f"release {info['id']} of <code>{escape(info['dataset'])}</code> · {escape(info['method'])}"
    return _page(f"pganon report — release {info['id']}", sub, "".join(body))


# ------------------------------------------------------------------------------------ files


def write(res: dict, out_dir, stem: str, html: str) -> dict:
    """Write stem.html, stem.json and (for comparisons) stem.csv into out_dir; their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"html": out / f"{stem}.html", "json": out / f"{stem}.json"}
    paths["html"].write_text(html, encoding="utf-8")
    paths["json"].write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
    if "runs" in res:
        buf = io.StringIO()
        w = csv.writer(buf)
        thetas = sorted(res["settings"]["thetas"])
        w.writerow(["method", "sweep", "k", "l", "release", "seconds", "ncp_percent", "kl_divergence", "dm", "classes",
                    "suppression"] + [f"are_theta_{t}" for t in thetas])
        for r in res["runs"]:
            m = r["measures"]
            w.writerow([r["method"], r["sweep"], r["k"], r["l"], r["release"], r["wall_seconds"], m.get("ncp_percent"),
                        m.get("kl_divergence"), m.get("dm"), m.get("classes"), m.get("suppression")] +
                       [(m.get("are") or {}).get(str(t)) for t in thetas])
        paths["csv"] = out / f"{stem}.csv"
        paths["csv"].write_text(buf.getvalue(), encoding="utf-8")
    return {k: str(v) for k, v in paths.items()}
