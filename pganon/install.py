"""Install, upgrade, uninstall and inspect pganon in a database.

Install = (1) Alembic migrates the catalog tables of schema `pganon`, (2) the engine's modules are
stored in `pganon._engine_module`, so PL/Python imports them through the database connection and
the server's file system is never written, (3) every file of `sql/` is applied in name order
(they are all re-runnable). All three run in one transaction under an advisory lock, so two
installs cannot interleave and a failed install changes nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import psycopg
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext

import pganon_engine

from . import __version__
from .connection import resolve_dsn
from .errors import PganonError

ROOT = Path(__file__).resolve().parents[1]
SQL_DIR = ROOT / "sql"
MIGRATIONS_DIR = ROOT / "migrations"
ENGINE_DIR = Path(pganon_engine.__file__).resolve().parent
INSTALL_LOCK = 7_413_001  # pg_advisory_xact_lock key shared by install and uninstall
SCHEMAS = ("pganon_release", "pganon_data", "pganon")
READER_ROLE = "pganon_reader"


def engine_modules() -> list[tuple[str, bool, str]]:
    """(module name, is_package, source) for every module of the engine package."""
    mods = []
    for path in sorted(ENGINE_DIR.rglob("*.py")):
        rel = path.relative_to(ENGINE_DIR.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods.append((".".join(parts), is_pkg, path.read_text(encoding="utf-8")))
    return mods


def engine_hash(mods: list[tuple[str, bool, str]]) -> str:
    h = hashlib.sha256()
    for name, is_pkg, src in mods:
        h.update(f"{name}\0{is_pkg}\0{src}\0".encode())
    return h.hexdigest()


def _engine(dsn: str | None) -> sa.Engine:
    """A SQLAlchemy engine over psycopg that accepts any libpq DSN (URL or key=value form)."""
    target = resolve_dsn(dsn)
    return sa.create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(target),
                            poolclass=sa.pool.NullPool)


def _alembic_config(conn: sa.Connection) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = conn
    return cfg


def _raw(conn: sa.Connection):
    """The psycopg connection under SQLAlchemy: executes multi-statement SQL files untouched."""
    return conn.connection.driver_connection


def install(dsn: str | None = None) -> dict:
    """Install or upgrade pganon in the database; idempotent."""
    mods = engine_modules()
    digest = engine_hash(mods)
    eng = _engine(dsn)
    try:
        with eng.begin() as conn:
            raw = _raw(conn)
            raw.execute("SELECT pg_advisory_xact_lock(%s)", (INSTALL_LOCK,))
            if not raw.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'plpython3u'").fetchone():
                raise PganonError("plpython3u is not available in this server",
                                  hint="install postgresql-plpython3-15 on the server (scripts/setup.sh does)")
            had_plpython = raw.execute("SELECT 1 FROM pg_extension WHERE extname = 'plpython3u'").fetchone()
            first_install = not raw.execute("SELECT to_regclass('pganon._installation')").fetchone()[0]
            raw.execute("CREATE EXTENSION IF NOT EXISTS plpython3u")
            raw.execute("CREATE SCHEMA IF NOT EXISTS pganon")
            before = MigrationContext.configure(conn, opts={"version_table_schema": "pganon"}).get_current_revision()
            command.upgrade(_alembic_config(conn), "head")
            raw.execute("DELETE FROM pganon._engine_module")
            with raw.cursor() as cur:
                cur.executemany("INSERT INTO pganon._engine_module (name, is_package, source) VALUES (%s, %s, %s)", mods)
            raw.execute(
                "INSERT INTO pganon._installation (version, engine_hash, created_plpython) VALUES (%s, %s, %s) "
                "ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, "
                "engine_hash = EXCLUDED.engine_hash, installed_at = now()",
                (__version__, digest, bool(first_install and not had_plpython)))
            _ensure_reader_role(raw)
            for path in sorted(SQL_DIR.glob("*.sql")):
                raw.execute(path.read_text(encoding="utf-8"))
            after = MigrationContext.configure(conn, opts={"version_table_schema": "pganon"}).get_current_revision()
    finally:
        eng.dispose()
    return {"version": __version__, "catalog_revision_before": before, "catalog_revision": after,
            "engine_modules": len(mods), "engine_hash": digest[:12]}


def _ensure_reader_role(raw) -> None:
    # Roles are cluster-wide: create it once, never recreate (other databases may use it).
    raw.execute(f"""
        DO $$ BEGIN
          IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
            CREATE ROLE {READER_ROLE} NOLOGIN;
          END IF;
        END $$""")


def uninstall(dsn: str | None = None, drop_role: bool = True) -> dict:
    """Remove every pganon object from the database (releases included); the reader role too
    when no other database still uses it."""
    eng = _engine(dsn)
    role_dropped = False
    try:
        with eng.begin() as conn:
            raw = _raw(conn)
            raw.execute("SELECT pg_advisory_xact_lock(%s)", (INSTALL_LOCK,))
            created_plpython = False
            if raw.execute("SELECT to_regclass('pganon._installation')").fetchone()[0]:
                created_plpython = raw.execute("SELECT created_plpython FROM pganon._installation").fetchone()[0]
            for schema in SCHEMAS:
                raw.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            if drop_role and raw.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (READER_ROLE,)).fetchone():
                raw.execute(f"REVOKE ALL ON DATABASE {_quote(raw, _dbname(raw))} FROM {READER_ROLE}")
            if created_plpython:  # only what pganon itself created; RESTRICT keeps others' functions safe
                raw.execute("SAVEPOINT ext")
                try:
                    raw.execute("DROP EXTENSION plpython3u")
                except psycopg.errors.DependentObjectsStillExist:
                    raw.execute("ROLLBACK TO SAVEPOINT ext")
        if drop_role:
            role_dropped = _try_drop_role(eng)
    finally:
        eng.dispose()
    return {"uninstalled": True, "reader_role_dropped": role_dropped}


def _dbname(raw) -> str:
    return raw.execute("SELECT current_database()").fetchone()[0]


def _quote(raw, ident: str) -> str:
    from psycopg import sql
    return sql.Identifier(ident).as_string(raw)


def _try_drop_role(eng: sa.Engine) -> bool:
    with eng.connect() as conn:
        raw = _raw(conn)
        raw.autocommit = True
        try:
            raw.execute(f"DROP ROLE IF EXISTS {READER_ROLE}")
            return True
        except psycopg.errors.DependentObjectsStillExist:
            return False  # another database still grants to it; it stays for that one


def status(dsn: str | None = None) -> dict:
    from .connection import connect
    with connect(dsn) as conn:
        row = conn.execute("SELECT to_regclass('pganon._installation') IS NOT NULL").fetchone()
        if not row[0]:
            return {"installed": False}
        inst = conn.execute("SELECT version, engine_hash, installed_at FROM pganon._installation").fetchone()
        rev = conn.execute("SELECT version_num FROM pganon.alembic_version").fetchone()
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM pganon.dataset), (SELECT count(*) FROM pganon.release WHERE status <> 'dropped')"
        ).fetchone()
    current = engine_hash(engine_modules())
    return {"installed": True, "version": inst[0], "catalog_revision": rev[0] if rev else None,
            "installed_at": inst[2].isoformat(timespec="seconds"), "datasets": counts[0], "releases": counts[1],
            "engine_up_to_date": inst[1] == current, "package_version": __version__}
