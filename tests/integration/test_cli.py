"""The CLI's wiring: exit codes, one-line errors without tracebacks, a summary table, --format json
and csv on every command."""

import argparse
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pganon.cli.parser import build_parser
from pganon.install import ROOT


def run(*args, dsn=None):
    cmd = [sys.executable, "-m", "pganon.cli", *args] + (["--dsn", dsn] if dsn else [])
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_publish_prints_summary_and_progress_then_verify_passes(db_dsn):
    r = run("dataset", "load", "table1", "--replace", dsn=db_dsn)
    assert r.returncode == 0, r.stderr
    r = run("publish", "table1", "mbf_mslf", "--show", "3", "--promote", dsn=db_dsn)
    assert r.returncode == 0, r.stderr
    header = r.stdout.splitlines()[0]
    for col in ("groups", "suppressed", "AIL", "SR", "NCP%", "seconds", "status"):
        assert col in header
    assert "pganon_release.table1_gt" in r.stdout and "pganon_release.table1_st" in r.stdout
    assert "pganon: plan ..." in r.stderr and "pganon: assess ..." in r.stderr   # progress lines
    assert "does not exist" not in r.stderr                                     # no NOTICE noise
    v = run("verify", "table1", dsn=db_dsn)
    assert v.returncode == 0 and "lsl_diversity" in v.stdout and "False" not in v.stdout
    lst = run("releases", "table1", dsn=db_dsn)
    assert lst.returncode == 0 and " current " in lst.stdout


def test_publish_makes_a_candidate_that_promote_shows(fresh_dsn):
    assert run("dataset", "load", "table1", dsn=fresh_dsn).returncode == 0
    r = run("publish", "table1", "mondrian", "-p", "k=3", "--quiet", dsn=fresh_dsn)
    assert r.returncode == 0, r.stderr
    rid = re.search(r"^candidate (\d+)", r.stdout, re.M).group(1)
    assert f"pganon promote {rid}" in r.stdout
    shown = run("show", "table1", dsn=fresh_dsn)
    assert shown.returncode == 2 and "no current release" in shown.stderr   # nothing visible yet
    risk = run("risk", rid, dsn=fresh_dsn)
    assert risk.returncode == 0 and "prosecutor_risk_max" in risk.stdout and "records_below_k" in risk.stdout
    p = run("promote", rid, dsn=fresh_dsn)
    assert p.returncode == 0 and f"release {rid} is now the current release" in p.stdout, p.stderr
    assert run("show", "table1", dsn=fresh_dsn).returncode == 0


def test_promote_refused_by_the_policy_exits_3_with_the_figures(fresh_dsn):
    assert run("dataset", "load", "table1", dsn=fresh_dsn).returncode == 0
    r = run("set-policy", "table1", '{"prosecutor_risk_max": 0.2}', dsn=fresh_dsn)
    assert r.returncode == 0 and '"prosecutor_risk_max": 0.2' in r.stdout, r.stderr
    r = run("publish", "table1", "mondrian", "-p", "k=2", "--quiet", dsn=fresh_dsn)
    rid = re.search(r"^candidate (\d+)", r.stdout, re.M).group(1)
    assert "breaks the policy" in r.stdout
    failing = run("risk", rid, "--failing", dsn=fresh_dsn)
    assert failing.returncode == 3 and "prosecutor_risk_max" in failing.stdout and "FAIL" in failing.stdout
    p = run("promote", rid, dsn=fresh_dsn)
    assert p.returncode == 3 and "prosecutor_risk_max (records) = 0.5 > threshold 0.2" in p.stderr
    assert "Traceback" not in p.stderr
    bad = run("set-policy", "table1", '{"k": 3}', dsn=fresh_dsn)
    assert bad.returncode == 2 and "unknown policy key" in bad.stderr


def test_ck_publish_audit_and_dependencies_from_the_cli(db_dsn):
    assert run("dataset", "load", "ck_table1", "--replace", dsn=db_dsn).returncode == 0
    r = run("publish", "ck_table1", "pk_angelization", "-p", "k=2", "-p", "p=2", "--quiet", dsn=db_dsn)
    assert r.returncode == 0, r.stderr
    assert "query error" in r.stdout.splitlines()[0] and "vulnerable" in r.stdout.splitlines()[0]
    a = run("audit", "ck_table1", dsn=db_dsn)
    assert a.returncode == 2 and "no current release of dataset 'ck_table1'" in a.stderr   # only a candidate
    a = run("audit", re.search(r"^candidate (\d+)", r.stdout, re.M).group(1), dsn=db_dsn)
    assert a.returncode == 0, a.stderr
    assert "linkable pairs" in a.stdout and "vulnerable correct" in a.stdout
    bad = run("set-dependency", "ck_table1", "physician", "--identified-by", "physician", dsn=db_dsn)
    assert bad.returncode == 2 and "own dependency list" in bad.stderr
    ok = run("set-dependency", "ck_table1", "symptom", "--identified-by", "physician,cancer_type", dsn=db_dsn)
    assert ok.returncode == 0 and "weight 2" in ok.stdout


@pytest.mark.parametrize("args,message", [
    (("publish", "nobody", "mbf"), 'dataset "nobody" is not registered'),
    (("set-l", "table1", "1", "9"), "l must not decrease"),
    (("publish", "table1", "mbf", "-p", "k=3"), "unknown parameter"),
    (("verify", "999999"), "release 999999 does not exist"),
])
def test_user_errors_exit_2_with_one_line_and_no_traceback(db_dsn, args, message):
    run("dataset", "load", "table1", "--replace", dsn=db_dsn)
    r = run(*args, dsn=db_dsn)
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_no_server_and_no_dsn_says_what_to_do(tmp_path, monkeypatch):
    env = {"PATH": "/usr/bin:/bin", "PGANON_HOME": str(tmp_path / "none"), "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "pganon.cli", "status"], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=60)
    assert r.returncode == 2 and "pganon server start" in r.stderr and "Traceback" not in r.stderr


def test_hierarchy_and_check_commands(db_dsn, tmp_path):
    assert run("dataset", "load", "table1", "--replace", dsn=db_dsn).returncode == 0
    csv = tmp_path / "sex.csv"
    csv.write_text("M;*\nF;*\n")
    r = run("hierarchy", "set", "table1", "sex", "--file", str(csv), dsn=db_dsn)
    assert r.returncode == 0 and "height" in r.stdout, r.stderr
    r = run("hierarchy", "build", "table1", "age", "--builder", "intervals", "-p", "widths=[10,20]", dsn=db_dsn)
    assert r.returncode == 0, r.stderr
    r = run("hierarchy", "build", "table1", "race", "--builder", "redaction", dsn=db_dsn)
    assert r.returncode == 0, r.stderr
    lst = run("hierarchy", "list", "table1", dsn=db_dsn)
    assert [ln.split("|")[1].strip() for ln in lst.stdout.splitlines()[2:]] == ["age", "race", "sex"]
    assert run("hierarchy", "show", "table1", "sex", dsn=db_dsn).stdout == "F;*\nM;*\n"
    r = run("publish", "table1", "mondrian", "-p", "k=3", "--quiet", "--promote", dsn=db_dsn)
    assert r.returncode == 0 and "DM" in r.stdout.splitlines()[0], r.stderr
    ok = run("check", "pganon_release.table1_gt", "k_anonymity", "--qis", "age,sex,race,zipcode", "-p", "k=3",
             dsn=db_dsn)
    assert ok.returncode == 0 and "True" in ok.stdout, ok.stderr
    fails = run("check", "table1", "l_diversity", "--qis", "age,sex", "--sas", "disease", "-p", "l=2", dsn=db_dsn)
    assert fails.returncode == 1 and "False" in fails.stdout
    bad = run("hierarchy", "set", "table1", "sex", dsn=db_dsn)
    assert bad.returncode == 2 and "needs --file" in bad.stderr and "Traceback" not in bad.stderr


def test_releases_lists_every_family_with_the_union_of_columns_and_show_what_exists(fresh_dsn):
    """"Why": `pganon releases` died with KeyError 'AIL' once a mondrian release existed (its
    summary has DM and C_avg instead), and `pganon show` failed when the current release had no ST."""
    assert run("dataset", "load", "table1", dsn=fresh_dsn).returncode == 0
    first = run("publish", "table1", "mbf_mslf", "--quiet", "--promote", dsn=fresh_dsn)
    second = run("publish", "table1", "mondrian", "-p", "k=3", "--quiet", "--promote", dsn=fresh_dsn)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    r = run("releases", dsn=fresh_dsn)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    header, _, *rows = r.stdout.splitlines()
    cols = [c.strip() for c in header.split("|")]
    assert {"AIL", "SR", "DM", "C_avg", "NCP%"} <= set(cols) and cols[-1] == "seconds"
    cells = {c[2]: dict(zip(cols, c)) for c in ([x.strip() for x in row.split("|")] for row in rows)}
    assert cells["mondrian"]["AIL"] == "" and cells["mondrian"]["DM"] != ""      # blank where absent
    assert cells["mbf_mslf"]["DM"] == "" and cells["mbf_mslf"]["AIL"] != ""
    shown = run("show", "table1", "--rows", "2", dsn=fresh_dsn)              # mondrian: no ST
    assert shown.returncode == 0, shown.stderr
    assert "pganon_release.table1_gt" in shown.stdout and "pganon_release.table1_promise" in shown.stdout
    assert "table1_st " not in shown.stdout
    as_json = json.loads(run("show", "table1", "--rows", "2", "--format", "json", dsn=fresh_dsn).stdout)
    assert list(as_json) == ["gt", "promise"] and len(as_json["gt"]) == 2 and "class_id" in as_json["gt"][0]
    no_st = run("show", "table1", "--view", "st", dsn=fresh_dsn)
    assert no_st.returncode == 2 and no_st.stderr.splitlines() == [
        "pganon: error: PA001: the current release of 'table1' has no st view (hint: it has: gt, promise)"]
    many = run("show", "table1", "--format", "csv", dsn=fresh_dsn)
    assert many.returncode == 2 and "choose one with --view" in many.stderr
    gt = list(csv.DictReader(io.StringIO(run("show", "table1", "--view", "gt", "--format", "csv",
                                             dsn=fresh_dsn).stdout)))
    assert len(gt) == 9 and set(gt[0]) == {"class_id", "age", "sex", "race", "zipcode", "physician", "disease"}


def _json_run(dsn, *args):
    # export's own --format is the file's (csv, parquet): the global one goes before the command
    r = run("--format", "json", *args, dsn=dsn) if args[0] == "export" else run(*args, "--format", "json", dsn=dsn)
    assert r.returncode == 0, (args, r.stderr)
    assert "Traceback" not in r.stderr
    try:
        return json.loads(r.stdout), r
    except ValueError:
        raise AssertionError(f"{args}: stdout is not JSON: {r.stdout[:300]!r}") from None


def _same_keys(rows):
    """A JSON table: a non-empty list of objects that all have the same keys, in the same order."""
    assert isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows)
    assert all(list(r) == list(rows[0]) for r in rows)
    return rows


def test_every_printing_command_speaks_json_and_csv(fresh_dsn, tmp_path):
    """`--format json` on every command: stdout parses, tables are lists of objects with stable
    keys, numbers are numbers; progress and notes stay on stderr. CSV has the same keys as header."""
    from pganon import datasets
    seen = set()

    def j(*args):
        seen.add(args[0])
        return _json_run(fresh_dsn, *args)

    assert j("install")[0]["catalog_revision"]
    assert j("upgrade")[0]["version"]
    assert j("status")[0]["installed"] is True
    assert isinstance(j("server", "status")[0]["running"], bool)
    names = [d["name"] for d in _same_keys(j("dataset", "list")[0])]
    assert "table1" in names and "ck_table1" in names
    loaded, r = j("dataset", "load", "table1")
    assert loaded["rows"] == 9 and "loading table1" in r.stderr                  # progress on stderr
    assert j("dataset", "load", "ck_table1")[0]["dataset"] == "ck_table1"
    assert isinstance(j("register", "t1copy", "table1", "rid")[0]["id"], int)
    assert j("set-attribute", "t1copy", "disease", "sensitive")[0] == {
        "dataset": "t1copy", "column": "disease", "role": "sensitive", "kind": None}
    assert j("set-level", "t1copy", "disease", "Flu", "0")[0]["level"] == 0
    assert j("set-default-level", "t1copy", "disease", "1")[0]["default_level"] == 1
    assert j("set-l", "t1copy", "1", "2")[0]["l"] == 2
    assert j("set-dependency", "ck_table1", "symptom", "--identified-by", "physician,cancer_type")[0]["weight"] == 2
    assert j("set-delta", "ck_table1")[0]["delta"] is None
    assert j("set-chi", "ck_table1", "physician", "0.5")[0]["chi"] == 0.5   # "Why": a float where SQL wants numeric
    assert j("apply", str(datasets.DATASETS["table1"].attributes_path), "--source", "table1")[0]["dataset"] == "table1"
    assert j("set-policy", "table1", '{"prosecutor_risk_max": 1}')[0]["policy"]["prosecutor_risk_max"] == 1
    assert j("hierarchy", "build", "table1", "race", "--builder", "redaction")[0]["height"] >= 1
    (tmp_path / "sex.csv").write_text("M;*\nF;*\n")
    assert j("hierarchy", "set", "table1", "sex", "--file", str(tmp_path / "sex.csv"))[0]["leaves"] == 2
    assert [h["column"] for h in _same_keys(j("hierarchy", "list", "table1")[0])] == ["race", "sex"]
    assert j("hierarchy", "show", "table1", "sex")[0] == [{"level_0": "F", "level_1": "*"},
                                                         {"level_0": "M", "level_1": "*"}]
    assert j("rule", "set", "table1", "r1", "--column", "disease", "--predicate", "in", "--values", "HIV,Cancer",
             "--category", "serious")[0]["values"] == ["HIV", "Cancer"]
    assert _same_keys(j("rule", "list", "table1")[0])[0]["rule"] == "r1"
    assert j("rule", "drop", "table1", "r1")[0]["dropped"] is True

    summary, r = j("publish", "table1", "mbf_mslf")                            # progress not --quiet
    assert isinstance(summary["release"], int) and isinstance(summary["groups"], int)
    assert isinstance(summary["ncp_percent"], (int, float)) and isinstance(summary["wall_seconds"], float)
    assert "pganon: plan ..." in r.stderr and f"pganon promote {summary['release']}" in r.stderr   # notes too
    first = summary["release"]
    assert j("promote", str(first))[0] == {"release": first, "status": "current"}
    second = j("publish", "table1", "mondrian", "-p", "k=3", "--quiet", "--promote")[0]["release"]
    rels = _same_keys(j("releases")[0])
    assert {"ail", "dm", "ncp_percent", "risk_failures", "seconds"} <= set(rels[0])
    assert [r["release"] for r in rels] == [first, second] and rels[1]["ail"] is None
    assert set(j("show", "table1", "--rows", "3")[0]) == {"gt", "promise"}
    risk = _same_keys(j("risk", "table1")[0])
    assert list(risk[0]) == ["measure", "scope", "value", "threshold", "passed", "detail"]
    assert any(isinstance(x["value"], float) for x in risk)
    checks = _same_keys(j("verify", "table1")[0])
    assert list(checks[0]) == ["check", "passed", "detail"] and all(c["passed"] is True for c in checks)
    held = _same_keys(j("check", "pganon_release.table1_gt", "k_anonymity", "--qis", "age,sex,race,zipcode",
                        "-p", "k=3")[0])
    assert held[0]["model"] == "k_anonymity" and held[0]["holds"] is True
    ck = j("publish", "ck_table1", "pk_angelization", "-p", "k=2", "-p", "p=2", "--quiet")[0]["release"]
    audit = j("audit", str(ck))[0]
    assert isinstance(audit["summary"]["n_buckets"], int) and "pairs_with_singletons" in audit
    files = _same_keys(j("report", str(second), "--out", str(tmp_path))[0])
    assert {f["file"] for f in files} >= {"html", "json"}
    files = _same_keys(j("compare", "table1", "--methods", "mbf_mslf", "--k", "2", "--l", "2", "--thetas", "0.2",
                         "--rows", "0.5", "--queries", "10", "--out", str(tmp_path), "--quiet")[0])
    assert all(Path(f["path"]).exists() for f in files)
    done = j("export", "table1", "--output", str(tmp_path / "gt.csv"))[0]
    assert done["rows"] == 9 and done["relation"] == "gt" and (tmp_path / "gt.csv").exists()
    assert j("drop-release", str(first))[0] == {"release": first, "dropped": True}

    for args in (["releases"], ["risk", "table1"], ["verify", "table1"], ["dataset", "list"], ["status"],
                 ["hierarchy", "list", "table1"], ["show", "table1", "--view", "gt"]):
        as_json = _json_run(fresh_dsn, *args)[0]
        r = run(*args, "--format", "csv", dsn=fresh_dsn)
        assert r.returncode == 0, r.stderr
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        expected = as_json if isinstance(as_json, list) else [as_json]
        if isinstance(as_json, dict) and set(as_json) == {"gt"}:
            expected = as_json["gt"]
        assert [list(x) for x in rows[:1]] == [list(x) for x in expected[:1]] and len(rows) == len(expected), args

    assert j("uninstall")[0]
    commands = set(next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices)
    assert seen == commands
