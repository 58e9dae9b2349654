"""The CLI's wiring: exit codes, one-line errors without tracebacks, a summary table."""

import re
import subprocess
import sys

import pytest

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
