"""Every CLI command with a bad input exits 2 with one line on stderr and no traceback; help on
every argument; `publish --help` lists exactly the engine's methods; the exit codes of an
interrupt, an internal error and a closed pipe (issue 13, item 3)."""

import argparse
import subprocess
import sys

import psycopg
import pytest

from pganon import releases
from pganon.cli.parser import METHOD_HELP, build_parser, methods
from pganon.cli.run import main
from pganon.install import ROOT
from test_cli import run

UNREACHABLE = "postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=3"
MALFORMED = "postgresql://someone:secret@[nowhere"   # libpq's message would quote it, password and all

# (command line, dsn: "db" = the test database, "down" = an unreachable server, "malformed" = not a
#  connection string, None = none needed, what the one line says). Every subcommand appears at least once (checked below).
BAD = [
    (["server", "restart"], None, "invalid choice: 'restart'"),
    (["install"], "down", "cannot connect to the database"),
    (["upgrade"], "down", "cannot connect to the database"),
    (["uninstall"], "down", "cannot connect to the database"),
    (["status"], "down", "cannot connect to the database"),
    (["releases"], "down", "cannot connect to the database"),
    (["install"], "malformed", "PA002: --dsn is not a valid connection string"),
    (["verify", "1"], "malformed", "PA002: --dsn is not a valid connection string"),
    (["register", "nobody_ds", "no_such_table", "id"], "db", 'table "no_such_table" does not exist'),
    (["set-attribute", "nobody", "age", "quasi"], "db", "PA001: dataset"),
    (["set-attribute", "table1", "age", "boss"], "db", "invalid choice: 'boss'"),
    (["set-level", "table1", "disease", "Flu", "high"], "db", "invalid int value: 'high'"),
    (["set-level", "table1", "disease", "HIVV", "2"], "db", "PA002: value 'HIVV' never occurs"),
    (["set-default-level", "table1", "age", "1"], "db", "PA00"),
    (["set-l", "nobody", "1", "2"], "db", "PA001: dataset"),
    (["set-dependency", "nobody", "x", "--identified-by", "y"], "db", "PA001: dataset"),
    (["set-delta", "nobody"], "db", "PA001: dataset"),
    (["set-chi", "table1", "disease", "lots"], "db", "'lots' is not a number"),
    (["set-chi", "nobody", "disease", "0.5"], "db", "PA001: dataset"),
    (["hierarchy", "set", "table1", "sex"], "db", "needs --file"),
    (["hierarchy", "set", "table1", "sex", "--file", "/nonexistent/h.csv"], "db", "cannot read /nonexistent/h.csv"),
    (["hierarchy", "build", "table1", "age", "--builder", "intervals", "--params", "{widths: 5}"], "db",
     "--params is not valid JSON"),
    (["hierarchy", "show", "nobody", "age"], "db", "PA001: dataset"),
    (["check", "no_such_relation", "k_anonymity", "--qis", "a"], "db", "no_such_relation"),
    (["check", "table1", "k_anonymity", "--qis", "age", "--params", "[1, 2]"], "db", "--params must be a JSON object"),
    (["check", "table1", "k_anonymity"], "db", "the following arguments are required: --qis"),
    (["rule", "set", "table1", "r1"], "db", "rule set needs --column"),
    (["apply", "/nonexistent/spec.yaml"], "db", "cannot read /nonexistent/spec.yaml"),
    (["dataset", "load", "no_such_dataset"], "db", "PA001: unknown dataset 'no_such_dataset'"),
    (["dataset", "load"], "db", "dataset load needs a NAME"),
    (["publish", "table1", "mbf_mslf", "--params", "{bad"], "db", "--params is not valid JSON"),
    (["publish", "table1", "no_such_method"], "db", "PA002: unknown method 'no_such_method'"),
    (["publish", "nobody", "mbf"], "db", 'dataset "nobody" is not registered'),
    (["publish", "table1", "mbf", "--show", "3", "--format", "json"], "db", "--show prints tables"),
    (["promote", "999999"], "db", "PA001: release 999999"),
    (["promote", "latest"], "db", "invalid int value: 'latest'"),
    (["risk", "nobody"], "db", "PA001: there is no current release of dataset 'nobody'"),
    (["set-policy", "table1", "{prosecutor_risk_max: 0.1}"], "db", "the policy is not valid JSON"),
    (["set-policy", "table1", '{"k": 3}'], "db", "unknown policy key"),
    (["verify", "999999"], "db", "release 999999 does not exist"),
    (["audit", "999999"], "db", "999999"),
    (["compare", "nobody", "--k", "five"], "db", "expected comma-separated integers, not 'five'"),
    (["compare", "table1", "--out", "/nonexistent/dir"], "db", "--out /nonexistent/dir: no such directory"),
    (["report", "nobody"], "db", "PA001: there is no current release of dataset 'nobody'"),
    (["show", "nobody"], "db", "PA001: dataset 'nobody' has no current release"),
    (["drop-release", "999999"], "db", "999999"),
    (["export", "999999"], "db", "PA001: release 999999 does not exist or was dropped"),
    (["export", "table1", "--relation", "map"], "db", "invalid choice: 'map'"),
    (["export", "table1", "--format", "xlsx"], "db", "invalid choice: 'xlsx'"),
    (["releases", "--format", "yaml"], "db", "invalid choice: 'yaml'"),
]


@pytest.fixture(scope="module")
def table1_dsn(db_dsn):
    r = run("dataset", "load", "table1", "--replace", dsn=db_dsn)
    assert r.returncode == 0, r.stderr
    return db_dsn


@pytest.mark.parametrize("argv,where,says", BAD, ids=[" ".join(a) for a, _, _ in BAD])
def test_bad_input_exits_2_with_one_line_and_no_traceback(request, argv, where, says):
    dsn = {"db": lambda: request.getfixturevalue("table1_dsn"), "down": lambda: UNREACHABLE,
           "malformed": lambda: MALFORMED, None: lambda: None}[where]()
    r = run(*argv, dsn=dsn)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pganon: error: "), r.stderr
    assert says in lines[0], lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert "nowhere" not in r.stderr and "secret" not in r.stderr   # a DSN is never echoed


def test_every_subcommand_has_a_bad_input_case():
    parser = build_parser()
    commands = set(_subparsers(parser).choices)
    assert commands == {argv[0] for argv, _, _ in BAD}


def _subparsers(parser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_every_argument_has_help():
    """Walks the whole argparse tree: an argument, positional or not, without help fails."""
    missing = []

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {a.dest for a in action._choices_actions if a.help}
                missing.extend(f"{path} {name} (the command)" for name in action.choices if name not in helped)
                for name, child in action.choices.items():
                    walk(child, f"{path} {name}")
            elif not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "pganon")
    assert missing == []


def test_method_table_describes_exactly_the_engine_and_database_methods(table1_dsn, conn):
    """One source of truth: the engine's registry; the help table may neither miss nor invent one,
    and the engine installed in the database knows the same methods."""
    from pganon_engine.release.families import FAMILIES
    assert set(METHOD_HELP) == set(FAMILIES) == set(methods())
    with pytest.raises(psycopg.Error) as exc:
        conn.execute("SELECT pganon.publish('table1', 'no_such_method', '{}')")
    hint = exc.value.diag.message_hint
    assert hint.startswith("methods: ")
    assert set(hint.removeprefix("methods: ").split(", ")) == set(METHOD_HELP)


def test_publish_help_lists_every_method_with_its_line():
    r = run("publish", "--help")
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    listed = lines[lines.index(next(ln for ln in lines if ln.startswith("methods ("))) + 1:]
    assert [ln.split()[0] for ln in listed] == sorted(METHOD_HELP)
    for ln in listed:
        name, text = ln.split(None, 1)
        assert text == METHOD_HELP[name]


@pytest.mark.parametrize("position", ["before", "after"])
def test_traceback_shows_where_the_error_came_from(db_dsn, position):
    args = ["--traceback", "verify", "999999"] if position == "before" else ["verify", "999999", "--traceback"]
    r = run(*args, dsn=db_dsn)
    assert r.returncode != 0 and "Traceback (most recent call last)" in r.stderr
    assert "release 999999 does not exist" in r.stderr


def _main(monkeypatch, capsys, argv, boom):
    """pganon.cli.run.main in-process with releases.list_releases raising `boom`."""
    def raise_it(*a, **k):
        raise boom
    monkeypatch.setattr(releases, "list_releases", raise_it)
    code = main(argv)
    return code, capsys.readouterr()


def test_interrupt_exits_130_with_one_line(db_dsn, monkeypatch, capsys):
    code, out = _main(monkeypatch, capsys, ["releases", "--dsn", db_dsn], KeyboardInterrupt())
    assert code == 130 and out.err == "pganon: interrupted\n" and out.out == ""


def test_a_bug_exits_4_with_one_line_and_asks_for_traceback(db_dsn, monkeypatch, capsys):
    code, out = _main(monkeypatch, capsys, ["releases", "--dsn", db_dsn], ZeroDivisionError("division by zero"))
    assert code == 4
    assert out.err.splitlines() == ["pganon: internal error: ZeroDivisionError: division by zero "
                                    "(a bug: run again with --traceback and report it)"]


def test_a_database_error_the_cli_raised_itself_keeps_its_sqlstate(db_dsn, monkeypatch, capsys):
    """A raw psycopg error (here from drop-release's own statement) is one line with its SQLSTATE."""
    code = main(["drop-release", "999999", "--dsn", db_dsn])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("pganon: error: PA001: ") and len(err.splitlines()) == 1


def test_closed_stdout_is_not_an_error(db_dsn):
    """`pganon dataset list | head -1`: the reader leaves early; no traceback, exit 141."""
    p = subprocess.Popen([sys.executable, "-m", "pganon.cli", "dataset", "list", "--format", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    p.stdout.close()   # nobody reads
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141 and err == ""
