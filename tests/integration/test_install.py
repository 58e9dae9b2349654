"""Install is idempotent, upgrade equals a fresh install, uninstall leaves nothing behind."""

import subprocess
from pathlib import Path

import psycopg
import pytest

import pganon
from pganon import install, resource_dir
from pganon.server import PG_BIN


def _objects(dsn):
    """Everything pganon could leave behind, as comparable sets."""
    with psycopg.connect(dsn) as c:
        return {
            "schemas": set(r[0] for r in c.execute("SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' ")),
            "functions": set(r[0] for r in c.execute(
                "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')")),
            "extensions": set(r[0] for r in c.execute("SELECT extname FROM pg_extension")),
            "reader_role": c.execute("SELECT count(*) FROM pg_roles WHERE rolname = 'pganon_reader'").fetchone()[0],
        }


def _schema_dump(dsn):
    out = subprocess.run([str(PG_BIN / "pg_dump"), "--schema-only", "--no-owner", "-n", "pganon*", "-d", dsn],
                         check=True, capture_output=True, text=True).stdout
    return "\n".join(l for l in out.splitlines() if not l.startswith(("--", "\\restrict", "\\unrestrict")))


def test_install_twice_equals_install_once_and_uninstall_leaves_nothing(make_db):
    dsn = make_db("inst")
    before = _objects(dsn)
    first = install.install(dsn)
    head = sorted(f.name.split("_")[0] for f in (resource_dir("migrations") / "versions").glob("0*.py"))[-1]
    assert first["catalog_revision_before"] is None and first["catalog_revision"] == head
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT pganon.version()").fetchone()[0] == install.__version__
    dump1 = _schema_dump(dsn)
    second = install.install(dsn)
    assert second["catalog_revision_before"] == head
    assert _schema_dump(dsn) == dump1
    assert install.status(dsn)["engine_up_to_date"] is True
    install.uninstall(dsn)
    after = _objects(dsn)
    assert after["schemas"] == before["schemas"]
    assert after["functions"] == before["functions"]
    assert after["extensions"] == before["extensions"]


def test_sql_and_migrations_are_found_in_the_checkout_or_else_inside_the_package(monkeypatch):
    """"Why": the wheel had no sql/ or migrations/ and install ended in an Alembic traceback.
    tests/integration/test_wheel.py installs a real wheel; here, the lookup's two places."""
    root = pganon.source_checkout()
    assert root is not None and resource_dir("sql") == root / "sql" and resource_dir("migrations") == root / "migrations"
    monkeypatch.setattr(pganon, "source_checkout", lambda: None)        # installed: inside the package
    package = Path(pganon.__file__).resolve().parent
    with pytest.raises(install.PganonError) as exc:                   # a checkout has no pganon/sql
        resource_dir("sql")
    assert str(package / "sql") in str(exc.value) and "reinstall pganon" in exc.value.hint


def test_uninstall_keeps_plpython_the_dba_had(make_db):
    dsn = make_db("inst")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE EXTENSION plpython3u")
    install.install(dsn)
    install.uninstall(dsn)
    assert "plpython3u" in _objects(dsn)["extensions"]


def test_reinstall_after_engine_change_reloads_code_in_open_sessions(make_db, monkeypatch):
    """A session that already imported the engine picks up re-installed code (no stale modules)."""
    dsn = make_db("inst")
    install.install(dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        h1 = c.execute("SELECT pganon._engine_boot()").fetchone()[0]
        mods = install.engine_modules()
        changed = [(n, p, s + "\n# changed\n" if n == "pganon_engine" else s) for n, p, s in mods]
        monkeypatch.setattr(install, "engine_modules", lambda: changed)
        install.install(dsn)
        h2 = c.execute("SELECT pganon._engine_boot()").fetchone()[0]
        assert h1 != h2
        src = c.execute("DO $$ import pganon_engine, inspect $$ LANGUAGE plpython3u").statusmessage
        assert src == "DO"


def test_engine_is_loaded_from_the_database_not_the_file_system(db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("SELECT pganon._engine_boot()")
        c.execute("""CREATE OR REPLACE FUNCTION pg_temp.engine_file() RETURNS text LANGUAGE plpython3u AS
                     $$ import pganon_engine.methods.bucketization.family as m; return m.__file__ $$""")
        assert c.execute("SELECT pg_temp.engine_file()").fetchone()[0] == "<pganon_engine:pganon_engine.methods.bucketization.family>"


def test_install_without_plpython_available_says_what_to_do(monkeypatch, make_db):
    dsn = make_db("inst")
    real = install._raw

    class Fake:
        def __init__(self, raw):
            self.raw = raw

        def execute(self, q, *a):
            if "pg_available_extensions" in q:
                return self.raw.execute("SELECT 1 WHERE false")
            return self.raw.execute(q, *a)

    monkeypatch.setattr(install, "_raw", lambda conn: Fake(real(conn)))
    with pytest.raises(install.PganonError, match="plpython3u is not available"):
        install.install(dsn)
    assert "pganon" not in _objects(dsn)["schemas"]


def test_install_creates_both_roles_nologin_once(make_db):
    dsn = make_db("inst")
    install.install(dsn)
    install.install(dsn)
    with psycopg.connect(dsn) as c:
        rows = c.execute("SELECT rolname, rolcanlogin, rolsuper FROM pg_roles "
                         "WHERE rolname IN ('pganon_reader', 'pganon_admin') ORDER BY 1").fetchall()
    assert rows == [("pganon_admin", False, False), ("pganon_reader", False, False)]


@pytest.fixture
def login_owner(server_dsn, make_db):
    """A database owned by a login role that is not a superuser: (its dsn as that role, superuser dsn)."""
    import uuid
    from psycopg import sql
    dsn = make_db("inst")
    db = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    role, pw = f"owner_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    with psycopg.connect(server_dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(pw)))
        c.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(db), sql.Identifier(role)))
    yield psycopg.conninfo.make_conninfo(dsn, user=role, password=pw), dsn
    with psycopg.connect(server_dsn, autocommit=True) as c:
        c.execute(sql.SQL("ALTER DATABASE {} OWNER TO CURRENT_USER").format(sql.Identifier(db)))
        c.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_install_as_non_superuser_says_a_superuser_is_needed(login_owner):
    owner_dsn, dsn = login_owner
    for step in (install.install, install.uninstall):
        with pytest.raises(install.PganonError) as exc:
            step(owner_dsn)
        assert exc.value.sqlstate == "42501"
        assert "needs a superuser" in str(exc.value) and "plpython3u is an untrusted language" in exc.value.hint
    assert "pganon" not in _objects(dsn)["schemas"]


def _cli(*args):
    import sys
    return subprocess.run([sys.executable, "-m", "pganon.cli", *args], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=300)


def test_install_on_an_unreachable_server_is_one_line_exit_2():
    bad = "postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=3"
    with pytest.raises(install.PganonError) as exc:
        install.install(bad)
    assert exc.value.sqlstate == "08001"
    for cmd in ("install", "uninstall", "status"):
        r = _cli(cmd, "--dsn", bad)
        assert r.returncode == 2, r.stderr
        errors = [line for line in r.stderr.splitlines() if not line.startswith("[")]   # not progress lines
        assert len(errors) == 1 and errors[0].startswith("pganon: error: cannot connect to the database: ")
        assert "Connection refused" in errors[0] and "Traceback" not in r.stderr
        assert "nowhere" not in r.stderr   # the DSN is not echoed


def test_uninstall_refuses_while_user_objects_depend_on_pganon_then_cascade_drops_them(make_db):
    """"Why" 8: DROP SCHEMA ... CASCADE silently took users' views and functions with it."""
    from helpers import create_table1, declare_table1, publish
    dsn = make_db("inst")
    install.install(dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        create_table1(c, "table1")
        declare_table1(c, "table1", "table1")
        publish(c, "table1", "mbf_mslf", promote=True)
        c.execute("CREATE VIEW public.gt_copy AS SELECT * FROM pganon_release.table1_gt")
        c.execute("CREATE VIEW public.gt_count AS SELECT count(*) FROM public.gt_copy")   # goes with gt_copy
        c.execute("CREATE FUNCTION public.n_releases() RETURNS bigint LANGUAGE sql "
                  "BEGIN ATOMIC SELECT count(*) FROM pganon.release; END")
        c.execute("CREATE TABLE public.notes (dataset int REFERENCES pganon.dataset, note text)")
        c.execute("CREATE VIEW public.unrelated AS SELECT note FROM public.notes")          # stays
        c.execute("CREATE VIEW pganon_release.own_view AS SELECT 1 AS one")   # inside pganon: not listed
    before = _objects(dsn)
    with pytest.raises(install.PganonError) as exc:
        install.uninstall(dsn)
    assert exc.value.sqlstate == "PA008"
    msg = str(exc.value)
    assert "4 object(s) outside pganon" in msg, msg
    for shown in ("view public.gt_copy", "view public.gt_count", "function public.n_releases()",
                  "constraint notes_dataset_fkey on table public.notes"):
        assert shown in msg, msg
    assert "unrelated" not in msg and "own_view" not in msg and "--cascade" in exc.value.hint
    assert _objects(dsn) == before                       # nothing done
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT count(*) FROM public.gt_count").fetchone()[0] > 0
    r = _cli("uninstall", "--dsn", dsn)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "view public.gt_copy" in r.stderr
    r = _cli("uninstall", "--cascade", "--dsn", dsn)
    assert r.returncode == 0, r.stderr
    assert "view public.gt_copy" in r.stdout
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT to_regclass('public.gt_copy')").fetchone()[0] is None
        assert c.execute("SELECT to_regclass('public.unrelated')").fetchone()[0] == "unrelated"   # notes stays
    assert "pganon" not in _objects(dsn)["schemas"]
