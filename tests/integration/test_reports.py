"""Reports that agree (issue 13, item 7): one definition per headline number, shown the same by the
CLI summary, the catalog view pganon.release_metrics, `pganon report` and `pganon compare`; exact
QIs labelled "exact", never "best"; the compare page readable at 1280 px with integer ticks on
integer axes, no overlapping labels and a risk-utility plot with its Pareto front; `compare`
counting its progress n/N.

The traps of the issue, by their shape: a bucketization release showed NCP 39.5 % in the CLI (the
spread of its groups' QI values, stored under ncp_percent) and 0 in the report (its QIs are
published exactly); its query error was 0 in one place and 0.25 in another (the QI-only workload
of the release against the comparison's QI + SA workload, under one name)."""

import json
import random
import re
import subprocess
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import psycopg
import pytest

from helpers import CHROMIUM
from test_compare import _people
from pganon import compare, releases, report_html, svgplot

# one release per family: generalized (2), bucketization (2, QIs exact), linked, rating
KEPT = [("mondrian", {"k": 4}), ("gaa", {"k": 4}), ("mbf_mslf", {}), ("anatomy", {"l": 3}),
        ("ck_anonymization", {"k": 4, "c": 2, "c_f": 2, "c_f_excess": "allow"}),
        ("rating", {"sc": 2, "eligibility": "suppress"})]
SETTINGS = dict(methods=["mondrian", "gaa", "mbf_mslf", "anatomy", "ck_anonymization", "rating"], ks=[2, 4], ls=[2, 3],
                thetas=[0.1, 0.3], fractions=[0.5], queries=60)
# every headline column a report shows, and the summary key the CLI prints it under
SUMMARY_KEY = {col: key for key, (col, _, _) in releases.METRICS.items()}


def _dataset(conn, name):
    """test_compare's 600 random people (seed 11), with hierarchies for gaa."""
    _people(conn, name, seed=11)
    conn.execute("""SELECT pganon.build_hierarchy(%s, 'age', 'intervals', '{"widths": [5, 10, 20]}')""", (name,))
    conn.execute("SELECT pganon.build_hierarchy(%s, 'zip', 'redaction')", (name,))
    conn.execute("SELECT pganon.set_hierarchy(%s, 'sex', %s)", (name, "M;*\nF;*\n"))


class _Cells(HTMLParser):
    """Every element carrying data-metric: (release, column) -> (data-value, shown text)."""

    def __init__(self):
        super().__init__()
        self.found, self._open = {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-metric" in a:
            self._open = [(int(a["data-release"]), a["data-metric"]), a["data-value"], "", tag]

    def handle_data(self, data):
        if self._open:
            self._open[2] += data

    def handle_endtag(self, tag):
        if self._open and tag == self._open[3]:
            key, value, text, _ = self._open
            self.found.setdefault(key, (json.loads(value) if value else None, text.strip()))
            self._open = None


def _cells(html):
    p = _Cells()
    p.feed(html)
    return p.found


def _render(html_path, tmp_path, width=1280):
    """Open a report in headless Chromium at `width` px; what its inline check recorded: the
    page's layout (scroll width, clipped cells) and per plot its ticks, marks and overlaps."""
    out = subprocess.run(CHROMIUM + [f"--user-data-dir={tmp_path / 'chromium'}", f"--window-size={width},1000",
                                     "--hide-scrollbars", "--virtual-time-budget=10000", "--dump-dom",
                                     Path(html_path).resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    head = out.stdout[:out.stdout.index(">", out.stdout.index("<html"))]

    def attr(name):
        start = head.index(f'{name}="') + len(f'{name}="')
        return json.loads(unescape(head[start:head.index('"', start)]))
    return attr("data-layout"), attr("data-rendered")


@pytest.fixture(scope="module")
def world(db_dsn, tmp_path_factory):
    """One dataset, a kept release of each family with its report, and one comparison run (the
    suite's only one here) with its page rendered at 1280 px."""
    tmp = tmp_path_factory.mktemp("reports")
    name = f"rep_{random.Random().randrange(16 ** 8):08x}"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        _dataset(conn, name)
        kept = {m: conn.execute("SELECT pganon.publish(%s, %s, %s::jsonb)", (name, m, json.dumps(p))).fetchone()[0]
                for m, p in KEPT}
        reports = {m: compare.release_report(conn, rid) for m, rid in kept.items()}
        html = {m: report_html.release_html(rep) for m, rep in reports.items()}
        lines = []
        res = compare.run(conn, name, compare.Settings(**SETTINGS), progress=lines.append)
        page = report_html.compare_html(res)
        paths = report_html.write(res, tmp, "cmp", page)
        layout, plots = _render(paths["html"], tmp)
        yield {"name": name, "kept": kept, "reports": reports, "html": html, "res": res, "page": page, "paths": paths,
               "layout": layout, "plots": plots, "progress": lines, "dsn": db_dsn}


def _close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b)))


def test_cli_view_report_and_compare_show_one_number_per_metric(world, db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        for method, rid in world["kept"].items():
            cur = conn.execute("SELECT * FROM pganon.release_metrics WHERE release = %s", (rid,))
            view = dict(zip([c.name for c in cur.description], cur.fetchone()))
            summary = releases.summary(releases.get(conn, release=rid))
            shown = _cells(world["html"][method])
            checked = 0
            for col, key in SUMMARY_KEY.items():
                # the CLI summary prints every number the view holds for the release, the same
                assert _close(summary.get(key), view[col]), (method, key, summary.get(key), view[col])
                if (rid, col) in shown:  # the single-release report: the same number, and shown as such
                    value, text = shown[(rid, col)]
                    assert _close(value, view[col]), (method, col, value, view[col])
                    assert text == ("exact" if view["qis_exact"] and col in ("ncp_percent", "query_error") and value == 0
                                    else "not measured" if col == "query_error" and value is None
                                    else report_html._num(value)), (method, col, text)
                    checked += 1
            assert checked >= 5, (method, shown)
    # the compare page: every headline cell is the release's row of the view, read before the rollback
    page = _cells(world["page"])
    runs = {r["release"]: r for r in world["res"]["runs"]}
    assert {rid for rid, _ in page} == set(runs)
    for (rid, col), (value, _) in page.items():
        assert _close(value, runs[rid]["headline"][col]), (runs[rid]["method"], col)
    # a comparison publishes what a kept release of the same setting publishes: the same numbers
    for method, params in KEPT:
        twin = next((r for r in world["res"]["runs"] if r["method"] == method and
                     all(r["params"].get(k) == v for k, v in params.items() if k not in ("sc", "eligibility"))), None)
        if twin is None or method == "rating":  # rating's SC is capped per attribute by the comparison
            continue
        mine = world["reports"][method]["headline"]
        for col in ("ncp_percent", "group_ncp_percent", "dm", "groups", "suppressed_percent", "prosecutor_risk_max",
                    "attacker_confidence_max", "qis_exact"):
            assert _close(twin["headline"][col], mine[col]) if not isinstance(mine[col], bool) else \
                twin["headline"][col] == mine[col], (method, col, twin["headline"][col], mine[col])


def test_a_bucketization_release_has_one_ncp_exact_and_its_group_spread_named_apart(world, db_dsn):
    """The trap: 39.5 % in the CLI, 0 in the report. QIs published exactly: NCP 0 everywhere,
    labelled exact; the groups' QI spread the method stores is "group NCP%"."""
    rid = world["kept"]["mbf_mslf"]
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        stored = conn.execute("SELECT metrics FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]
        s = releases.summary(releases.get(conn, release=rid))
    assert stored["ncp_percent"] > 10 and stored["query_error"]["exact"]
    assert s["NCP%"] == 0 and s["group NCP%"] == pytest.approx(stored["ncp_percent"]) and s["query error"] == 0
    assert world["reports"]["mbf_mslf"]["measures"]["ncp_percent"] == 0   # pganon.compare's own estimate is not shown
    assert _cells(world["html"]["mbf_mslf"])[(rid, "ncp_percent")] == (0, "exact")
    # the comparison's ARE is another measure under another name, never "query error"
    assert "ARE at θ = 0.1 (shared workload)" in world["html"]["mbf_mslf"]
    # on the compare page exact NCP is neither best nor worst; mondrian's (the lowest > 0) is best
    glance = world["page"][world["page"].index("table class=\"glance\""):world["page"].index("</table>",
                                                                                             world["page"].index("glance"))]
    ncp = re.findall(r'<td class="([^"]*)" data-metric="ncp_percent" data-release="(\d+)"', glance)
    by = {r["release"]: r for r in world["res"]["runs"]}
    for cls, rel in ncp:
        if by[int(rel)]["headline"]["qis_exact"]:
            assert "best" not in cls and "worst" not in cls
    best = [by[int(rel)]["method"] for cls, rel in ncp if "best" in cls]
    assert best == ["mondrian"], ncp


def test_compare_page_fits_1280_px_with_a_risk_utility_front(world):
    lay, plots = world["layout"], world["plots"]
    assert lay["viewport"] == 1280 and lay["page"] <= 1280 and lay["clipped"] == [], lay
    by = {p["title"]: p for p in plots}
    ru = by["Attacker confidence against information loss"]
    ident = by["Identity risk against information loss"]
    for p in (ru, ident):
        assert p["marks"] == len(world["res"]["runs"]) and p["drawn"] == p["marks"]   # every release, drawn
        assert 1 <= p["front"] < p["marks"]
    # the front is what no other release beats on both axes, and the page says which releases
    runs = world["res"]["runs"]
    pts = [(r["headline"]["ncp_percent"], r["headline"]["prosecutor_risk_max"]) for r in runs]
    front = svgplot.pareto_front(pts)
    assert ident["front"] == len(front) and ident["front_lines"] == (1 if len(set(pts[i] for i in front)) > 1 else 0)
    for i in front:
        assert not any(a <= pts[i][0] and b <= pts[i][1] and (a, b) != pts[i] for a, b in pts)
    assert "the Pareto front, the releases no other release beats" in world["page"]
    for p in plots:
        assert p["overlaps"] == [] and p["outside"] == [], p   # no label over another, none cut off
    integer = [p for p in plots if p["title"].endswith((" k", " l", "against rows", "number of SAs"))]
    assert len(integer) == 5
    for p in integer:
        assert p["x_ticks"] and all(re.fullmatch(r"\d+", t) for t in p["x_ticks"]), p
    assert all(re.fullmatch(r"\d+", t) for t in by["Class sizes"]["y_ticks"])   # records


def test_compare_prints_progress_n_of_n(world):
    lines = world["progress"]
    publishes = [l for l in lines if l.startswith("publish ")]
    counts = [tuple(map(int, re.match(r"publish (\d+)/(\d+): ", l).groups())) for l in publishes]
    total = counts[0][1]
    assert counts == [(i, total) for i in range(1, total + 1)]
    measures = [l for l in lines if l.startswith("measure ")]
    assert len(measures) == len(world["res"]["runs"]) and measures[-1].startswith(f"measure {len(measures)}/{len(measures)}:")
    assert "publish 1/" in publishes[0] and "mondrian k=2" in publishes[0]
    assert lines.index(publishes[-1]) < lines.index(measures[0])


def test_integer_axes_get_whole_ticks_and_the_front_is_pareto():
    assert svgplot.nice_ticks(2, 4, integer=True) == [2, 3, 4]
    assert svgplot.nice_ticks(2, 4) == [2.0, 2.5, 3.0, 3.5, 4.0]      # a real-valued axis may halve
    assert svgplot.nice_ticks(1, 2, integer=True) == [1, 2]
    assert all(isinstance(t, int) for t in svgplot.nice_ticks(300, 600_000, integer=True))
    svg = svgplot.line_chart([{"name": "m", "points": [(2, 1.5), (4, 2.5)]}], title="t", x_label="k", y_label="y",
                             colours=svgplot.Colours(["m"]))
    assert re.findall(r'class="tick x"[^>]*>([^<]+)<', svg) == ["2", "3", "4"]
    assert svgplot.pareto_front([(0, 1), (1, 0.5), (2, 0.5), (0, 1), (3, 0.1), (3, 0.2)]) == [0, 1, 3, 4]


def test_an_admin_reads_the_headline_numbers_of_its_own_releases_only(server_dsn, db_dsn, world):
    """pganon.release_metrics follows the catalog's row-level security: `pganon releases` run by a
    member of pganon_admin shows its releases' numbers and nobody else's."""
    from psycopg import sql

    from helpers import create_table1, declare_table1
    role, pw = f"adm_{random.Random().randrange(16 ** 8):08x}", "pw-" + world["name"]
    table = f"{role}_t1"
    with psycopg.connect(server_dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(pw)))
        c.execute(sql.SQL("GRANT pganon_admin TO {}").format(sql.Identifier(role)))
    try:
        with psycopg.connect(db_dsn, autocommit=True) as su:
            create_table1(su, table)
            su.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(table), sql.Identifier(role)))
        with psycopg.connect(psycopg.conninfo.make_conninfo(db_dsn, user=role, password=pw), autocommit=True) as a:
            declare_table1(a, table, table)
            rid = a.execute("SELECT pganon.publish(%s, 'mmdcf_mslf')", (table,)).fetchone()[0]
            assert a.execute("SELECT release FROM pganon.release_metrics").fetchall() == [(rid,)]
            s = releases.summary(releases.get(a, release=rid))
            assert s["NCP%"] == 0 and s["group NCP%"] > 0 and s["risk failures"] >= 0
            assert [r["id"] for r in releases.list_releases(a)] == [rid]
            a.execute("SELECT pganon.drop_dataset(%s)", (table,))
    finally:
        with psycopg.connect(db_dsn, autocommit=True) as su:
            su.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
            su.execute(sql.SQL("DROP OWNED BY {} CASCADE").format(sql.Identifier(role)))
        with psycopg.connect(server_dsn, autocommit=True) as c:
            c.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_a_query_error_publish_did_not_measure_is_not_measured_everywhere_and_the_report_measures_it(world, db_dsn):
    """Issue 15: publish runs no query workload by default. The view, the CLI summary and the
    report's headline say "not measured" (NULL), one definition; the report measures it now with
    pganon.query_error and shows it under its own name."""
    rid = world["kept"]["mondrian"]
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT query_error FROM pganon.release_metrics WHERE release = %s", (rid,)).fetchone() == (None,)
        assert releases.summary(releases.get(conn, release=rid))["query error"] is None
        now = conn.execute("SELECT pganon.query_error(%s)", (rid,)).fetchone()[0]
    rep = world["reports"]["mondrian"]
    assert rep["headline"]["query_error"] is None and rep["query_error_now"] == now and now["mean"] > 0
    html = world["html"]["mondrian"]
    assert _cells(html)[(rid, "query_error")] == (None, "not measured")
    assert f"<dt>query error, measured now (1,000 queries at θ = 0.1)</dt><dd>{report_html._num(now['mean'])}</dd>" in html
    # a release with exact QIs keeps its stored exact 0 and is measured by nobody again
    assert "query_error_now" not in world["reports"]["mbf_mslf"]
