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
table { border-collapse: collapse; background: #fff; border: 1px solid var(--line); font-size: 13px; max-width: 100%; }
th, td { padding: 6px 8px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th { background: #eef0f4; font-weight: 600; position: sticky; top: 0; white-space: normal; vertical-align: bottom; }
td.l, th.l { text-align: left; }
td.l { white-space: normal; overflow-wrap: break-word; }
td.w { white-space: normal; min-width: 220px; max-width: 640px; overflow-wrap: break-word; }
table.glance { width: 100%; }
table.glance td.l:nth-child(2) { min-width: 150px; }
.exact { color: var(--muted); font-style: italic; }
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
      var texts = Array.prototype.map.call(s.querySelectorAll('text'), function (t) {
        return {t: t.textContent, r: t.getBoundingClientRect(), c: t.getAttribute('class') || ''};
      });
      var overlaps = [];
      for (var i = 0; i < texts.length; i++) {
        for (var j = i + 1; j < texts.length; j++) {
          var a = texts[i].r, c = texts[j].r;
          var w = Math.min(a.right, c.right) - Math.max(a.left, c.left), h = Math.min(a.bottom, c.bottom) - Math.max(a.top, c.top);
          if (w > 0.5 && h > 0.5 && a.width > 0 && c.width > 0) { overlaps.push(texts[i].t + ' / ' + texts[j].t); }
        }
      }
      var outside = texts.filter(function (x) {
        return x.r.width > 0 && (x.r.left < b.left - 0.5 || x.r.right > b.right + 0.5 || x.r.top < b.top - 0.5 ||
                                 x.r.bottom > b.bottom + 0.5); }).map(function (x) { return x.t; });
      var ticks = function (axis) {
        return Array.prototype.map.call(s.querySelectorAll('text.tick.' + axis), function (t) {
          return t.firstChild ? t.firstChild.nodeValue : t.textContent; });
      };
      return {title: s.getAttribute('aria-label'), width: Math.round(b.width), height: Math.round(b.height),
              marks: marks.length, drawn: drawn, lines: s.querySelectorAll('path.line').length,
              front: s.querySelectorAll('.mark.front').length, front_lines: s.querySelectorAll('path.front').length,
              x_ticks: ticks('x'), y_ticks: ticks('y'), overlaps: overlaps, outside: outside};
    });
    var page = document.documentElement, clipped = [];
    Array.prototype.forEach.call(document.querySelectorAll('table.glance td, table.glance th, .scroll'), function (e) {
      if (e.scrollWidth > e.clientWidth + 1) { clipped.push((e.textContent || '').slice(0, 60)); }
    });
    page.setAttribute('data-layout', JSON.stringify({viewport: window.innerWidth, page: page.scrollWidth,
                                                     clipped: clipped}));
    page.setAttribute('data-rendered', JSON.stringify(plots));
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


def _attrs(attrs) -> str:
    return "".join(f' {k}="{escape(str(v), quote=True)}"' for k, v in (attrs or {}).items())


def _table(headers, rows, *, left=(0,), rank=None, wrap=(), cls=""):
    """rows: lists of (text, value) or (text, value, attributes) cells; rank: {column index: 'low'
    | 'high'} colours the best and worst numeric value of those columns (a cell whose value is None
    is not ranked: an exact QI is not "best"). Headers and text cells wrap; a table never needs
    more width than its container (the page is read at 1280 px)."""
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
    out = [f"<div class=\"scroll\"><table class=\"{cls}\"><thead><tr>"]
    out += [f"<th class=\"{'l' if i in left else ''}\">{h}</th>" for i, h in enumerate(headers)]
    out.append("</tr></thead><tbody>")
    for i, r in enumerate(rows):
        out.append("<tr>")
        for j, cell in enumerate(r):
            text, attrs = cell[0], (cell[2] if len(cell) > 2 else None)
            c = " ".join(c for c in ("l" if j in left else "", "w" if j in wrap else "", marks.get((i, j), "")) if c)
            out.append(f"<td class=\"{c}\"{_attrs(attrs)}>{text}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _metric(h: dict, col: str, *, rank=True):
    """A cell of one headline number (pganon.release_metrics): the shown text, the value that
    ranks it (None: not ranked) and data-metric / data-value attributes, so a test can check
    that every report shows the number the catalog holds."""
    v = h.get(col) if h else None
    attrs = {"data-metric": col, "data-release": (h or {}).get("release", ""),
             "data-value": "" if v is None else json.dumps(v)}
    if col in ("ncp_percent", "query_error") and h and h.get("qis_exact") and v == 0:
        attrs["title"] = f"{col} 0: every quasi-identifier is published exactly"
        return ("<span class=\"exact\">exact</span>", None, attrs)
    if v is None:   # a query error publish did not measure (its default) is said so, not left blank
        return ("<span class=\"na\">not measured</span>" if col == "query_error" else "<span class=\"na\">–</span>",
                None, attrs)
    return (_num(v), v if rank else None, attrs)


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
    return f"{escape(name)}" + (f" <span class=\"small\">{_breakable(text)}</span>" if text else "")


def _breakable(text) -> str:
    """Escaped text that may wrap after an underscore (long method and parameter names) when its
    table cell is narrow, and only then."""
    return escape(str(text)).replace("_", "_<wbr>")


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


def _risk_cells(h, rows):
    """At-a-glance cells: figures that break the policy, the worst identity (prosecutor) risk and
    the worst attacker confidence (pganon.release_metrics), each with the threshold of the figure
    that reaches it (pganon.risk)."""
    def worst(col, measure):
        text, value, attrs = _metric(h, col)
        got = [r for r in rows or [] if r["measure"] == measure and r["value"] is not None]
        if value is None or not got:
            return (text, value, attrs)
        r = max(got, key=lambda x: x["value"])
        thr = f"<br><span class=\"small\">≤ {_num(r['threshold'])}</span>" if r["threshold"] is not None else ""
        cls = {False: "no", True: "ok"}.get(r["passed"], "")
        return (f"<span class=\"{cls}\">{text}</span>{thr}", value, attrs)
    text, n_fail, attrs = _metric(h, "risk_failures")
    fail = (f"<span class=\"{'no' if n_fail else 'ok'}\">{text}</span>", n_fail, attrs)
    return [fail, worst("prosecutor_risk_max", "prosecutor_risk_max"),
            worst("attacker_confidence_max", "attacker_confidence_max")]


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
    headers = ["method", "promise", "policy failures", "identity risk", "attacker confidence", "suppressed %",
               "NCP %", "KL (nats)", f"ARE θ={theta0}", "DM", "median class", "vulnerable records", "seconds"]
    for method in st["methods"]:
        r = defaults.get(method)
        sw = f"<span class=\"swatch\" style=\"background:{colours.colour(method)}\"></span>{_breakable(method)}"
        if r is None:
            err = next((f["error"] for f in res["failures"] if f["method"] == method), "not run")
            rows.append([(sw, None), (f"<span class=\"no\">failed</span>: {escape(err)}", None)] +
                        [("–", None)] * (len(headers) - 2))
            continue
        m, h = r["measures"], r["headline"]
        if m.get("not_comparable"):
            sw += f"<br><span class=\"small\">{escape(m['not_comparable'])}</span>"
        are0 = (m.get("are") or {}).get(str(theta0))
        median = (m.get("class_sizes") or {}).get("median")
        secs = _metric(h, "seconds")
        ratio = h["seconds"] / copy_full if copy_full and h.get("seconds") else None
        if ratio:
            secs = (secs[0] + f"<br><span class=\"small\">{ratio:.0f}× copy</span>", secs[1], secs[2])
        rows.append([(sw, None), (_guarantee(method, r["params"], m.get("model")), None), *_risk_cells(h, r.get("risk")),
                     _metric(h, "suppressed_percent"), _metric(h, "ncp_percent"),
                     (_num(m.get("kl_divergence")), m.get("kl_divergence")), (_num(are0), are0), _metric(h, "dm"),
                     (_num(median), None), _metric(h, "vulnerable"), secs])
    low = {headers.index(c): "low" for c in headers if c not in ("method", "promise", "median class")}
    body.append("<section><h2>At a glance</h2>" + _table(headers, rows, left=(0, 1), rank=low, cls="glance")
                + f"<p class=\"small\">Default setting k = {st['k0']}, l = {st['l0']} (where a method takes them). "
                "Green: best in its column, red: worst. <i>exact</i>: the quasi-identifiers are published as they are "
                "(NCP 0, not ranked): such a release protects by breaking the link between QIs and sensitive values, "
                "and its identity risk says so. Every release passed its independent verification before it was "
                "measured (a release that fails it is never published). Identity risk and attacker confidence are the "
                "worst figures of <code>pganon.risk</code> with the threshold they are held to; KL divergence and ARE "
                "compare the joint distribution rebuilt from the release with the original rows. "
                "<a href=\"#definitions\">How the numbers are computed</a>.</p></section>")
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
    cards.append(_card(svgplot.line_chart(are_series, title="ARE against selectivity", x_label="selectivity θ",
                                          y_label="ARE (shared workload)", colours=colours, log_y=True),
                       f"{res['workload'].get('queries', 0)} seeded COUNT queries per θ, each on 2 random QIs and one "
                       "SA, the same queries for every method."))
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
    sa_names = [a for a in info["sas"] if any(a in (r["measures"].get("confidence") or {}) for r in defaults.values())]
    if sa_names:
        series, base = [], {}
        for method in st["methods"]:
            conf = ((defaults.get(method) or {}).get("measures") or {}).get("confidence") or {}
            if conf:
                series.append({"name": method, "values": [(conf.get(a) or {}).get("max") for a in sa_names]})
                base.update({a: conf[a]["baseline"] for a in sa_names if (conf.get(a) or {}).get("baseline") is not None})
        cards.append(_card(svgplot.bar_chart(sa_names, series, title="What an attacker can be sure of",
                                             y_label="worst-case confidence", colours=colours, baseline=base),
                           "The most an attacker who knows a person's QIs can be sure of that person's sensitive value, "
                           "per attribute (pganon.risk attacker_confidence_max). Black dashes: the best guess with no "
                           "release (the most common value's share)."))
    risk_cards, fronts = _risk_utility(runs, colours)
    body.append("<section><h2>Risk against utility</h2><div class=\"cards\">" + "".join(risk_cards) + "</div></section>")
    body.append("<section><h2>Plots</h2><div class=\"cards\">" + "".join(cards) + "</div></section>")
    if res.get("claims"):
        body.append(_claims(res["claims"]))
    # --- every run
    detail = []
    for r in runs:
        m, h = r["measures"], r["headline"]
        on = [name for name, ids in fronts.items() if r["release"] in ids]
        detail.append([(escape(r["method"]), None), (escape(r["sweep"]), None), (_num(r["k"]), None), (_num(r["l"]), None),
                       _metric(h, "ncp_percent"), _metric(h, "prosecutor_risk_max"), _metric(h, "attacker_confidence_max"),
                       (escape(", ".join(on)) if on else "", None), (_num(m.get("kl_divergence")), None),
                       (" / ".join(_num(v) for _, v in sorted((m.get("are") or {}).items())), None),
                       _metric(h, "dm"), (_num(m.get("classes")), None), _metric(h, "suppressed_percent"),
                       _metric(h, "seconds"), (str(r["release"]), None)])
    body.append("<section><details><summary>Every measured run</summary>" + _table(
        ["method", "sweep", "k", "l", "NCP %", "identity risk", "attacker confidence", "on the front", "KL",
         "ARE per θ " + ", ".join(map(str, sorted(st["thetas"]))), "DM", "classes", "suppressed %", "seconds",
         "release"], detail, left=(0, 1, 7)) + "</details></section>")
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


# The risk-utility plots: (loss: a headline column or a pganon.compare measure, its axis title;
# risk: a headline column, its axis title; the name of the plot's front in the runs table).
RISK_PLOTS = ((("headline", "ncp_percent"), "NCP %", "attacker_confidence_max", "attacker confidence", "confidence"),
              (("headline", "ncp_percent"), "NCP %", "prosecutor_risk_max", "identity risk", "identity"),
              (("measures", "kl_divergence"), "KL divergence (nats)", "attacker_confidence_max", "attacker confidence",
               "confidence, KL"))


def _risk_utility(runs, colours):
    """Risk (pganon.risk's worst figures) against loss for every measured release, the Pareto
    front ringed: the cards and, per plot, the releases on its front. NCP % is the headline
    loss; KL divergence also counts what a release loses between QIs and sensitive values, which
    NCP of exactly published QIs does not see."""
    cards, fronts = [], {}
    for (where, loss), x_label, col, label, short in RISK_PLOTS:
        def x(r):
            return _get(r[where], loss)
        pts = [r for r in runs if x(r) is not None and r["headline"].get(col) is not None]
        front = svgplot.pareto_front([(x(r), r["headline"][col]) for r in pts])
        fronts[short] = {pts[i]["release"] for i in front}
        names = list(dict.fromkeys(r["method"] for r in pts))
        series = [{"name": n, "points": [(x(r), r["headline"][col], _setting(r)) for r in pts if r["method"] == n]}
                  for n in names]
        on = ", ".join(_setting(pts[i]) for i in sorted(front, key=lambda i: x(pts[i])))
        left_out = sorted({r["method"] for r in runs} - set(names))
        note = (f"Each marker is one release of the comparison (every k and l); lower and further left is better. "
                f"Ringed and joined: the Pareto front, the releases no other release beats on both {x_label} and "
                f"{label}: {on or 'none'}.")
        if loss == "ncp_percent":
            note += " At NCP 0 the QIs are published exactly."
        if left_out:
            note += f" Not shown (no {x_label} or no {label} figure): {', '.join(left_out)}."
        title = f"{label[0].upper()}{label[1:]} against {'information loss' if loss == 'ncp_percent' else 'KL divergence'}"
        cards.append(_card(svgplot.scatter_chart(series, title=title, x_label=x_label, y_label=label, colours=colours,
                                                 y_max=1.0), note))
    return cards, fronts


def _setting(r):
    """A release of a sweep by the setting that varies: "mondrian k=5", "anatomy l=3"."""
    return f"{r['method']} {r['sweep']}={r[r['sweep']]}" if r["sweep"] in ("k", "l") else r["method"]


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


# Shown on the compare page beside the headline numbers: the measures of the shared workload
# (pganon.compare), which only a comparison computes.
COMPARE_MEASURES = (
    ("KL divergence", "KL(P ‖ P*) in nats over the joint domain of QIs and SAs: P the original rows, P* what an "
     "analyst rebuilds from the release, each record spread uniformly over its published cells (observed values) "
     "and independently across attributes; suppressed rows count as fully generalized."),
    ("ARE", "Mean relative error |estimate − true| / true of {queries} seeded COUNT queries per selectivity θ "
     "({scheme}), the same queries for every release, the estimate uniform within the published cells. Unlike "
     "the query error a release stores, these queries name a sensitive attribute too, so they also measure what "
     "a release loses between QIs and sensitive values."),
    ("median class", "The median size of the release's own groups (equivalence classes, QI groups, anatomy "
     "groups, Rating rows with the same QI labels)."),
    ("Pareto front", "A release is on the front of a risk-utility plot when no other release of the comparison "
     "has both a lower (or equal) NCP % and a lower (or equal) risk figure, one of them strictly lower."),
)


def _definitions(res=None):
    from . import releases
    w = (res or {}).get("workload") or {}
    items = [(label, text) for _, label, text in releases.METRICS.values()]
    if res is not None:
        items += [(k, v.format(queries=w.get("queries", 0), scheme=w.get("scheme", "")))
                  for k, v in COMPARE_MEASURES]
    return ("<section id=\"definitions\"><details><summary>How the numbers are computed</summary><dl class=\"kv\">" +
            "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in items) +
            "<dt>where</dt><dd>Every headline number is a column of the view <code>pganon.release_metrics</code>: "
            "<code>pganon publish</code>, <code>pganon releases</code>, <code>pganon report</code> and "
            "<code>pganon compare</code> show the same figure for a release.</dd></dl></details></section>")


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
    from . import releases
    h = rep.get("headline") or info.get("headline") or {}
    now = rep.get("query_error_now")   # measured by the report when publish stored none
    cost = [(label, _metric(h, col, rank=False)) for _, (col, label, _) in releases.METRICS.items()
            if (h.get(col) is not None or (col == "query_error" and now))
            and col not in ("published_rows", "suppressed_rows", "risk_failures", "prosecutor_risk_max",
                            "attacker_confidence_max")]
    if now:
        cost.append((f"query error, measured now ({now.get('queries', 0):,} queries at θ = {now.get('theta')})"
                     if "mean" in now else "query error, measured now",
                     (_num(now["mean"]), None) if "mean" in now else (escape(now.get("error", "")), None)))
    cost += [("KL divergence (nats)", (_num(m.get("kl_divergence")), None)), ("classes", (_num(m.get("classes")), None)),
             ("median class size", (_num((m.get("class_sizes") or {}).get("median")), None))]
    cost += [(f"ARE at θ = {t} (shared workload)", (_num(v), None)) for t, v in sorted((m.get("are") or {}).items())]
    # the method's other stored measures, under their own names (the headline ones are above)
    shown = {"published_rows", "suppressed_rows", "d", "groups", "classes", "ncp_percent", "qid_ncp_percent", "ail", "sr",
             "dm", "c_avg", "nloss", "v"}
    met = info.get("metrics") or {}
    cost += [(k.upper() if len(k) <= 3 else k.replace("_", " "), (_num(v), None)) for k, v in met.items()
             if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in shown]
    cards = []
    if m.get("are"):
        cards.append(_card(svgplot.line_chart([{"name": info["method"], "points": sorted((float(t), v) for t, v in m["are"].items())}],
                                              title="ARE against selectivity", x_label="selectivity θ",
                                              y_label="ARE (shared workload)", colours=colours, log_y=True),
                           "The comparison's workload: seeded COUNT queries on 2 random QIs and one SA, estimated "
                           "uniformly within the published cells (not the release's own query error, which asks "
                           "about QIs only)."))
    if m.get("size_distribution"):
        labels = [f"{b['lo']}" if b["lo"] == b["hi"] else f"{b['lo']}–{b['hi']}" for b in m["size_distribution"]]
        cards.append(_card(svgplot.bar_chart(labels, [{"name": info["method"], "values": [b["records"] for b in m["size_distribution"]]}],
                                             title="Class sizes", y_label="records", x_label="class size",
                                             colours=colours, log_y=True), "Records per class-size band."))
    body.append("<section><h2>What it costs in utility</h2><dl class=\"kv\">" +
                "".join(f"<dt>{escape(k)}</dt><dd{_attrs(c[2] if len(c) > 2 else None)}>{c[0]}</dd>" for k, c in cost) +
                "</dl>" + (f"<div class=\"cards\" style=\"margin-top:14px\">{''.join(cards)}</div>" if cards else "") +
                "</section>")
    conf = m.get("confidence") or {}
    attack = []
    names = [a for a in (info.get("layout") or {}).get("sas") or [] if (conf.get(a) or {}).get("mean") is not None]
    names += [a for a in conf if a not in names and conf[a].get("mean") is not None]
    if names:
        attack.append(_card(svgplot.bar_chart(names, [{"name": "mean", "values": [conf[a].get("mean") for a in names]},
                                                      {"name": "worst case", "values": [conf[a].get("max") for a in names]}],
                                              title="What an attacker believes", y_label="confidence",
                                              colours=svgplot.Colours(["mean", "worst case"]),
                                              baseline={a: conf[a].get("baseline") for a in names}),
                            "Mean and worst-case probability an attacker who knows a person's QIs gives that person's "
                            "true value (pganon.risk attacker_confidence_mean / _max); black dashes: the best guess "
                            "with no release (the most common value's share)."))
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
    body.append(_definitions())
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
        heads = ["seconds", "ncp_percent", "qis_exact", "dm", "suppressed_percent", "prosecutor_risk_max",
                 "attacker_confidence_max"]
        w.writerow(["method", "sweep", "k", "l", "release"] + heads + ["kl_divergence", "classes"] +
                   [f"are_theta_{t}" for t in thetas])
        for r in res["runs"]:
            m, h = r["measures"], r["headline"]
            w.writerow([r["method"], r["sweep"], r["k"], r["l"], r["release"]] + [h.get(c) for c in heads] +
                       [m.get("kl_divergence"), m.get("classes")] + [(m.get("are") or {}).get(str(t)) for t in thetas])
        paths["csv"] = out / f"{stem}.csv"
        paths["csv"].write_text(buf.getvalue(), encoding="utf-8")
    return {k: str(v) for k, v in paths.items()}
