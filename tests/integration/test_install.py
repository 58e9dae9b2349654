"""Install is idempotent, upgrade equals a fresh install, uninstall leaves nothing behind."""

import subprocess
from pathlib import Path

import psycopg
import pytest

from pganon import install
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
    head = sorted(f.name.split("_")[0] for f in (Path(__file__).resolve().parents[2] / "migrations" / "versions").glob("0*.py"))[-1]
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
                     $$ import pganon_engine.lsl as m; return m.__file__ $$""")
        assert c.execute("SELECT pg_temp.engine_file()").fetchone()[0] == "<pganon_engine:pganon_engine.lsl>"


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
