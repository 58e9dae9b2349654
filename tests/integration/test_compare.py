"""`pganon compare` and `pganon report` (issue 6): several methods on one snapshot measured on
one shared workload, nothing kept afterwards, and HTML reports that a real browser renders with
every plot drawn."""

import json
import random
import re
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from helpers import publish, rendered_plots
from pganon import compare, report_html

ROOT = Path(__file__).resolve().parents[2]
DISEASES = ["flu", "hiv", "cancer", "cold", "asthma", "ulcer"]
DRUGS = ["a", "b", "c", "d"]


@pytest.fixture
def people(conn, name):
    return _people(conn, name)


def _people(conn, name, seed=7):
    """600 random people: QIs age, zip, sex; SAs disease and drug, every value at level 1 (l = 2)."""
    rnd = random.Random(seed)
    conn.execute(f'CREATE TABLE "{name}" (id int PRIMARY KEY, age int, zip text, sex text, disease text, drug text)')
    with conn.cursor().copy(f'COPY "{name}" FROM STDIN') as cp:
        for i in range(600):
            cp.write_row((i, rnd.randint(18, 80), f"1{rnd.randint(0, 9)}{rnd.randint(0, 3)}", rnd.choice("MF"),
                          rnd.choice(DISEASES), rnd.choice(DRUGS)))
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'id')", (name, name))
    for col, role in [("age", "quasi"), ("zip", "quasi"), ("sex", "quasi"), ("disease", "sensitive"), ("drug", "sensitive")]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    for col, values in (("disease", DISEASES), ("drug", DRUGS)):
        for v in values:
            conn.execute("SELECT pganon.set_security_level(%s, %s, %s, 1)", (name, col, v))
    conn.execute("SELECT pganon.set_delta(%s, 'disease')", (name,))
    return name


def _state(conn):
    return (conn.execute("SELECT count(*) FROM pganon.release").fetchone()[0],
            conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'pganon_data'").fetchone()[0],
            conn.execute("SELECT count(*) FROM pg_views WHERE schemaname = 'pganon_release'").fetchone()[0])


SETTINGS = dict(methods=["mondrian", "mbf_mslf", "ck_anonymization", "mmdcf", "anatomy", "rating"], ks=[2, 4], ls=[2, 3],
                thetas=[0.1, 0.3], fractions=[0.5], queries=60)


@pytest.fixture(scope="module")
def compared(db_dsn):
    """The module's one comparison of SETTINGS (reused: a comparison is the slow part), run while
    a promoted release of the dataset is current, with the catalog's state before and after."""
    name = f"cmp_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        _people(conn, name)
        current = publish(conn, name, "mondrian", k=3, promote=True)
        before = _state(conn)
        res = compare.run(conn, name, compare.Settings(**SETTINGS))
        after = _state(conn)
        now = conn.execute("SELECT id FROM pganon.releases WHERE dataset = %s AND is_current", (name,)).fetchone()[0]
    return {"res": res, "before": before, "after": after, "current": current, "now": now}


def test_compare_measures_every_method_and_keeps_nothing(compared):
    res = compared["res"]
    assert compared["after"] == compared["before"]  # rolled back: no release, relation or view left
    assert all(any(x["measure"] == "published_share" for x in r["risk"]) for r in res["runs"])
    assert "policy failures" in report_html.compare_html(res)
    assert compared["now"] == compared["current"]
    # (c,k) links buckets through a second SA: its SA sweep starts at two
    assert not res["failures"], res["failures"]
    runs = res["runs"]
    # k methods run at each k, l methods at each l, the others once
    assert sorted((r["method"], r["sweep"], r["k"], r["l"]) for r in runs) == sorted(
        [("mondrian", "k", 2, 3), ("mondrian", "k", 4, 3), ("ck_anonymization", "k", 2, 3), ("ck_anonymization", "k", 4, 3),
         ("mbf_mslf", "fixed", 4, 3), ("mmdcf", "l", 4, 2), ("mmdcf", "l", 4, 3), ("anatomy", "l", 4, 2),
         ("anatomy", "l", 4, 3), ("rating", "l", 4, 2), ("rating", "l", 4, 3)])
    for r in runs:
        m = r["measures"]
        assert m["covers_all"] and m["kl_divergence"] >= 0
        assert set(m["are"]) == {"0.1", "0.3"} and all(v >= 0 for v in m["are"].values())
        assert sum(b["records"] for b in m["size_distribution"]) == m["published"]
        assert set(m["confidence"]) >= {"disease", "drug"}
    by = {(r["method"], r["k"], r["l"]): r["measures"] for r in runs}
    # mondrian generalizes the QIs, the bucketization methods publish them exactly
    assert by[("mondrian", 2, 3)]["ncp_percent"] > 0 and by[("mbf_mslf", 4, 3)]["ncp_percent"] == 0
    assert by[("mondrian", 4, 3)]["ncp_percent"] >= by[("mondrian", 2, 3)]["ncp_percent"]
    # Rating groups every attribute, QIs included; anatomy keeps them exact
    assert by[("rating", 4, 3)]["ncp_percent"] > by[("rating", 4, 2)]["ncp_percent"] > 0
    assert by[("anatomy", 4, 3)]["ncp_percent"] == 0
    # a larger l makes an attacker less sure of the sensitive values
    assert by[("anatomy", 4, 3)]["confidence"]["disease"]["max"] < by[("anatomy", 4, 2)]["confidence"]["disease"]["max"] + 1e-9
    # the fcorr audit the (c,k) release keeps is carried along
    assert by[("ck_anonymization", 4, 3)]["metrics"]["audit"]["n_vulnerable_correct"] == 0
    axes = {(s["axis"], s["method"]) for s in res["scaling"]}
    assert ("rows", "(copy: CREATE TABLE AS)") in axes and ("sas", "mondrian") in axes
    assert {s["x"] for s in res["scaling"] if s["axis"] == "rows" and s["method"] == "mondrian"} == {300, 600}
    assert {s["x"] for s in res["scaling"] if s["axis"] == "sas" and s["method"] == "mbf_mslf"} == {1, 2}
    assert {s["x"] for s in res["scaling"] if s["axis"] == "sas" and s["method"] == "ck_anonymization"} == {2}


def test_a_setting_a_method_cannot_meet_is_reported_and_the_rest_goes_on(conn, people):
    res = compare.run(conn, people, compare.Settings(methods=["mondrian", "mmdcf"], ks=[2, 5000], ls=[2], thetas=[0.2],
                                                     fractions=[], sa_counts=[2], queries=20))
    failed = [(f["method"], f["k"]) for f in res["failures"]]
    assert failed == [("mondrian", 5000)]
    assert {(r["method"], r["k"]) for r in res["runs"]} == {("mondrian", 2), ("mmdcf", 5000)}  # mmdcf takes no k


def test_compare_report_renders_every_plot_in_a_browser(compared, tmp_path):
    res = compared["res"]
    html = report_html.compare_html(res)
    paths = report_html.write(res, tmp_path, "cmp", html)
    assert json.loads(Path(paths["json"]).read_text())["dataset"]["rows"] == 600
    assert Path(paths["csv"]).read_text().count("\n") == len(res["runs"]) + 1
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html
    plots = rendered_plots(paths["html"], tmp_path)
    titles = [p["title"] for p in plots]
    assert titles == ["Attacker confidence against information loss", "Identity risk against information loss",
                      "Attacker confidence against KL divergence", "Information loss against k",
                      "KL divergence against k", "Information loss against l", "ARE against selectivity",
                      "Publish time against rows", "Publish time against the number of SAs", "Class sizes",
                      "What an attacker can be sure of"]
    for p in plots:
        assert p["width"] >= 400 and p["height"] >= 250, p
        assert p["marks"] > 0 and p["drawn"] == p["marks"], p
        assert p["overlaps"] == [] and p["outside"] == [], p
    q = next(p for p in plots if p["title"] == "ARE against selectivity")
    assert q["marks"] == 2 * 6 and q["lines"] == 6  # two selectivities for each of the six methods


def test_release_report_shows_checks_costs_and_attack(conn, people, tmp_path):
    rid = publish(conn, people, "ck_anonymization", k=3, c=2, c_f=2)
    rep = compare.release_report(conn, rid)
    assert all(c["passed"] for c in rep["checks"]) and rep["audit"]["summary"]["n_vulnerable_correct"] == 0
    assert rep["measures"]["release"] == rid and rep["measures"]["kl_divergence"] > 0
    paths = report_html.write(rep, tmp_path, "rel", report_html.release_html(rep))
    text = Path(paths["html"]).read_text()
    assert "What was promised" in text and "fcorr_eq4" in text and "vulnerable records (correct)" in text
    risk = {(r["measure"], r["scope"]): r for r in rep["risk"]}
    assert risk[("prosecutor_risk_max", "records")]["threshold"] == pytest.approx(1 / 3)
    assert "What an analyst can learn" in text and "prosecutor_risk_max" in text
    plots = rendered_plots(paths["html"], tmp_path)
    assert [p["title"] for p in plots] == ["ARE against selectivity", "Class sizes", "What an attacker believes"]
    assert all(p["drawn"] == p["marks"] > 0 and p["overlaps"] == [] == p["outside"] for p in plots), plots


def test_cli_compare_and_report(db_dsn, conn, people, tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "pganon.cli", *a, "--dsn", db_dsn], capture_output=True,
                                    text=True, cwd=ROOT, timeout=600)
    r = run("compare", people, "--methods", "mondrian,mbf_mslf", "--k", "2,3", "--l", "2", "--thetas", "0.2",
            "--rows", "0.5", "--queries", "30", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / f"compare-{people}.html").exists() and "Traceback" not in r.stderr
    # progress on stderr, one line per publish and per measured release, numbered n/N
    done = [tuple(map(int, m)) for m in re.findall(r"\] publish (\d+)/(\d+): ", r.stderr)]
    assert done == [(i, 7) for i in range(1, 8)], r.stderr   # mondrian k = 2, 3, mbf_mslf, then rows and SAs of both
    assert re.findall(r"\] measure (\d+)/3: ", r.stderr) == ["1", "2", "3"], r.stderr
    rid = publish(conn, people, "mondrian", k=3)
    r = run("report", str(rid), "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / f"release-{rid}.html").exists()
    r = run("compare", "nobody", "--out", str(tmp_path))
    assert r.returncode == 2 and r.stderr.startswith("pganon: error:") and "Traceback" not in r.stderr


def test_person_methods_compare_and_one_row_per_person_is_named_not_measured(conn, name):
    """danonyir publishes one record per row and is measured; one_m_generalization publishes one
    row per person with a generalized SA set, which the report names as not comparable."""
    rnd = random.Random(3)
    conn.execute(f'CREATE TABLE "{name}" (rid int PRIMARY KEY, pid int, age int, sex text, disease text)')
    with conn.cursor().copy(f'COPY "{name}" FROM STDIN') as cp:
        rid = 0
        for pid in range(120):
            age, sex = rnd.randint(20, 70), rnd.choice("MF")
            for d in rnd.sample(DISEASES, rnd.randint(1, 3)):
                cp.write_row((rid, pid, age, sex, d))
                rid += 1
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid', person_column => 'pid')", (name, name))
    for col, role in [("age", "quasi"), ("sex", "quasi"), ("disease", "sensitive")]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    conn.execute("SELECT pganon.set_hierarchy(%s, 'disease', %s)", (name, "".join(f"{d};*\n" for d in DISEASES)))
    res = compare.run(conn, name, compare.Settings(methods=["danonyir", "one_m_generalization", "mondrian"], ks=[2, 3],
                                                   ls=[2], thetas=[0.2], fractions=[], queries=40))
    assert not res["failures"], res["failures"]
    by = {(r["method"], r["k"]): r["measures"] for r in res["runs"]}
    assert by[("danonyir", 3)]["covers_all"] and by[("danonyir", 3)]["kl_divergence"] >= 0
    assert "one row per person" in by[("one_m_generalization", 3)]["not_comparable"]
    assert "one row per person" in report_html.compare_html(res)
