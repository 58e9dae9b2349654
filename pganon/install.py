"""Install, upgrade, uninstall and inspect pganon in a database.

Install = (1) Alembic migrates the catalog tables of schema `pganon`, (2) the engine's modules are
stored in `pganon._engine_module`, so PL/Python imports them through the database connection and
the server's file system is never written, (3) every file of `sql/` is applied in the order of
`sql_files` (they are all re-runnable). All three run in one transaction under an advisory lock,
so two installs cannot interleave and a failed install changes nothing.

Install runs as a superuser, usually in a database that other roles own and can write to, so it
trusts nothing they could have planted: its connection pins `search_path` (pganon.connection),
every function it calls is qualified with exact argument types, and it refuses to start while an
object outside pganon shadows one it calls or pganon's schemas belong to someone else (`_shadows`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import psycopg
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from psycopg import sql

import pganon_engine

from . import __version__, resource_dir
from .connection import PINNED_SEARCH_PATH, connect, resolve_dsn
from .errors import PganonError

ROOT = Path(__file__).resolve().parents[1]   # the checkout, for tests; sql/ and migrations/: resource_dir
ENGINE_DIR = Path(pganon_engine.__file__).resolve().parent
INSTALL_LOCK = 7_413_001  # pg_advisory_xact_lock key shared by install and uninstall
SCHEMAS = ("pganon_release", "pganon_data", "pganon")
READER_ROLE = "pganon_reader"
ADMIN_ROLE = "pganon_admin"
ROLES = (READER_ROLE, ADMIN_ROLE)

# What install and uninstall call, besides pganon's own functions: the pg_catalog functions of
# their statements (and SQLAlchemy's `select current_schema()`) and the operators they use. An
# object of the same name on a default search_path is refused (tests/integration/test_shadowing.py
# checks this list against the statements of this file).
CALLS = ("count", "current_database", "current_schema", "now", "pg_advisory_xact_lock", "pg_describe_object",
         "substr", "to_regclass", "unnest", "version")
OPERATORS = ("=", "<>", "||")

SUPERUSER_HINT = ("run `pganon install` once as a superuser (plpython3u is an untrusted language: only a "
                  "superuser may create its functions); afterwards `GRANT pganon_admin TO <role>` lets that "
                  "role use pganon without superuser")


def sql_files() -> list[Path]:
    """The files of `sql/` in the order install applies them: its numbered folders in name order,
    the numbered files of each folder in name order (sql/README.md lists them; a .sql file
    anywhere else in sql/ would not be applied, and tests/unit/test_sql_order.py refuses one)."""
    return sorted(resource_dir("sql").glob("*/*.sql"))


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
    """A SQLAlchemy engine over pganon's pinned connections (any libpq DSN, URL or key=value)."""
    target = resolve_dsn(dsn)
    return sa.create_engine("postgresql+psycopg://", creator=lambda: connect(target, autocommit=False),
                            poolclass=sa.pool.NullPool)


def _alembic_config(conn: sa.Connection) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(resource_dir("migrations")))
    cfg.attributes["connection"] = conn
    return cfg


def _raw(conn: sa.Connection):
    """The psycopg connection under SQLAlchemy: executes multi-statement SQL files untouched."""
    return conn.connection.driver_connection


def _begin(raw, what: str) -> None:
    """Common pre-flight of install and uninstall: pinned path, the lock, a superuser, no shadows."""
    if raw.execute("SHOW search_path").fetchone()[0] != PINNED_SEARCH_PATH:
        raise RuntimeError(f"{what}: search_path is not pinned (a bug: connect through pganon.connection)")
    raw.execute("SELECT pg_catalog.pg_advisory_xact_lock(%s::pg_catalog.int8)", (INSTALL_LOCK,))
    if raw.execute("SHOW is_superuser").fetchone()[0] != "on":
        user = raw.execute("SELECT current_user").fetchone()[0]
        raise PganonError(f"{what} needs a superuser; role {user!r} is not one", sqlstate="42501",
                          hint=SUPERUSER_HINT)
    found = _shadows(raw)
    if found:
        shown = "; ".join(found[:10]) + (f"; and {len(found) - 10} more" if len(found) > 10 else "")
        raise PganonError(
            f"{what} refused: {len(found)} object(s) not made by pganon could capture what it runs as "
            f"superuser: {shown}", sqlstate="PA010",
            hint="drop or rename them (or ask their owner to), then run it again; nothing was changed")


def _default_path_schemas(raw) -> list[str]:
    """Existing schemas on a default search_path in this database: the installing role's own,
    every per-database/per-role setting that applies here ($user meaning each role), and public."""
    user_path = getattr(raw, "user_search_path", "") or '"$user", public'
    settings = [user_path] + [r[0] for r in raw.execute(
        "SELECT pg_catalog.substr(c.cfg, 13) FROM pg_catalog.pg_db_role_setting s, "
        "pg_catalog.unnest(s.setconfig) AS c(cfg) "
        "WHERE s.setdatabase IN (0, (SELECT d.oid FROM pg_catalog.pg_database d "
        "                            WHERE d.datname = pg_catalog.current_database())) "
        "AND pg_catalog.substr(c.cfg, 1, 12) = 'search_path='")]
    names = {"public"}
    for setting in settings:
        names.update(_split_path(setting))
    return [r[0] for r in raw.execute(
        "SELECT n.nspname::pg_catalog.text FROM pg_catalog.pg_namespace n "
        "WHERE (n.nspname = ANY (%s::pg_catalog.text[]) "
        "       OR (%s AND n.nspname IN (SELECT r.rolname FROM pg_catalog.pg_roles r))) "
        "AND n.nspname <> 'pg_catalog' ORDER BY 1", (sorted(names - {"$user"}), "$user" in names))]


def _split_path(setting: str) -> list[str]:
    """The schema names of a search_path setting (`"$user", public, "My Schema"`)."""
    names, cur, quoted, was_quoted, i = [], "", False, False, 0
    while i <= len(setting):
        ch = setting[i] if i < len(setting) else ","
        if ch == '"' and quoted and setting[i + 1:i + 2] == '"':
            cur += '"'
            i += 1
        elif ch == '"':
            quoted, was_quoted = not quoted, True
        elif ch == "," and not quoted:
            names.append(cur if was_quoted else cur.strip().lower())
            cur, was_quoted = "", False
        elif quoted or not ch.isspace():
            cur += ch
        i += 1
    return [n for n in names if n]


def _shadows(raw) -> list[str]:
    """Objects that could run someone else's code in install's superuser session, or replace
    pganon's: in a schema on a default search_path, a function named like one install calls
    (over built-in types only, and not an exact twin of pg_catalog's, which can never win) or an
    operator like one it uses, that no extension owns (an extension runs the server's own code);
    and pganon schemas or pganon functions owned by a role that is not a superuser."""
    rows = raw.execute("""
        SELECT 'function ' || p.oid::pg_catalog.regprocedure::pg_catalog.text
               || ' (owner ' || p.proowner::pg_catalog.regrole::pg_catalog.text || ')'
          FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = ANY (%(schemas)s::pg_catalog.text[]) AND p.proname = ANY (%(calls)s::pg_catalog.text[])
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                                                            AND e.objid = p.oid AND e.deptype = 'e')
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_type t WHERE t.oid = ANY (p.proargtypes)
                                                           AND t.typnamespace <> 'pg_catalog'::pg_catalog.regnamespace)
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_proc c WHERE c.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
                                                           AND c.proname = p.proname AND c.proargtypes = p.proargtypes)
        UNION ALL
        SELECT 'operator ' || o.oid::pg_catalog.regoperator::pg_catalog.text
               || ' (owner ' || o.oprowner::pg_catalog.regrole::pg_catalog.text || ')'
          FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
         WHERE n.nspname = ANY (%(schemas)s::pg_catalog.text[]) AND o.oprname = ANY (%(ops)s::pg_catalog.text[])
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend e WHERE e.classid = 'pg_catalog.pg_operator'::pg_catalog.regclass
                                                            AND e.objid = o.oid AND e.deptype = 'e')
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_type t WHERE t.oid IN (o.oprleft, o.oprright)
                                                           AND t.typnamespace <> 'pg_catalog'::pg_catalog.regnamespace)
        UNION ALL
        SELECT 'schema ' || n.nspname::pg_catalog.text || ' (owner ' || n.nspowner::pg_catalog.regrole::pg_catalog.text || ')'
          FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner
         WHERE n.nspname = ANY (%(ours)s::pg_catalog.text[]) AND NOT r.rolsuper
        UNION ALL
        SELECT 'function ' || p.oid::pg_catalog.regprocedure::pg_catalog.text
               || ' (owner ' || p.proowner::pg_catalog.regrole::pg_catalog.text || ')'
          FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_roles r ON r.oid = p.proowner
         WHERE p.pronamespace = (SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname = 'pganon')
           AND NOT r.rolsuper
         ORDER BY 1""", {"schemas": _default_path_schemas(raw), "calls": list(CALLS), "ops": list(OPERATORS),
                         "ours": list(SCHEMAS)})
    return [r[0] for r in rows]


def install(dsn: str | None = None) -> dict:
    """Install or upgrade pganon in the database; idempotent."""
    mods = engine_modules()
    digest = engine_hash(mods)
    eng = _engine(dsn)
    try:
        with eng.begin() as conn:
            raw = _raw(conn)
            _begin(raw, "install")
            if not raw.execute("SELECT 1 FROM pg_catalog.pg_available_extensions "
                               "WHERE name = 'plpython3u'").fetchone():
                raise PganonError("plpython3u is not available in this server", sqlstate="PA002",
                                  hint="install postgresql-plpython3-15 on the server (scripts/setup.sh does)")
            had_plpython = raw.execute("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'plpython3u'").fetchone()
            first_install = not raw.execute(
                "SELECT pg_catalog.to_regclass('pganon._installation'::pg_catalog.text)").fetchone()[0]
            # existence checks, not IF NOT EXISTS, whose "already exists, skipping" NOTICE every
            # re-run would print
            if not had_plpython:
                raw.execute("CREATE EXTENSION plpython3u")
            if not raw.execute("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'pganon'").fetchone():
                raw.execute("CREATE SCHEMA pganon")
            before = MigrationContext.configure(conn, opts={"version_table_schema": "pganon"}).get_current_revision()
            repaired = _repair_early_0001(raw)
            command.upgrade(_alembic_config(conn), "head")
            raw.execute("DELETE FROM pganon._engine_module")
            with raw.cursor() as cur:
                cur.executemany("INSERT INTO pganon._engine_module (name, is_package, source) VALUES (%s, %s, %s)", mods)
            raw.execute(
                "INSERT INTO pganon._installation (version, engine_hash, created_plpython) VALUES (%s, %s, %s) "
                "ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, "
                "engine_hash = EXCLUDED.engine_hash, installed_at = pg_catalog.now()",
                (__version__, digest, bool(first_install and not had_plpython)))
            _ensure_roles(raw)
            for path in sql_files():
                raw.execute(path.read_text(encoding="utf-8"))
            after = MigrationContext.configure(conn, opts={"version_table_schema": "pganon"}).get_current_revision()
    finally:
        eng.dispose()
    out = {"version": __version__, "catalog_revision_before": before, "catalog_revision": after,
           "engine_modules": len(mods), "engine_hash": digest[:12]}
    if repaired:
        out["repaired"] = repaired
    return out


def _repair_early_0001(raw) -> str | None:
    """Catalogs installed at the first commits (45e09cd, fa07089) carry revision 0001 without
    `_installation.created_plpython`, which 0001 gained after it was released (037425a). Alembic
    sees 0001 either way, so this pre-step rebuilds that one table as 0001 makes it today (same
    column order, constraints and comment-free shape as a fresh install). created_plpython is
    recorded false: nobody knows whether pganon created plpython3u then, so uninstall keeps it."""
    if not raw.execute("SELECT pg_catalog.to_regclass('pganon._installation'::pg_catalog.text)").fetchone()[0]:
        return None
    if raw.execute("SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = 'pganon._installation'::pg_catalog.regclass "
                   "AND attname = 'created_plpython' AND NOT attisdropped").fetchone():
        return None
    raw.execute("""
        CREATE TEMP TABLE _pganon_installation_0001 ON COMMIT DROP AS SELECT * FROM pganon._installation;
        DROP TABLE pganon._installation;
        CREATE TABLE pganon._installation (
            singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            version       text NOT NULL,
            engine_hash   text NOT NULL,
            created_plpython boolean NOT NULL DEFAULT false,
            installed_at  timestamptz NOT NULL DEFAULT pg_catalog.now()
        );
        INSERT INTO pganon._installation (singleton, version, engine_hash, created_plpython, installed_at)
        SELECT singleton, version, engine_hash, false, installed_at FROM pg_temp._pganon_installation_0001;
        DROP TABLE pg_temp._pganon_installation_0001;
    """)
    return "0001 as first released (no _installation.created_plpython): rebuilt as 0001 is now"


def _ensure_roles(raw) -> None:
    # Roles are cluster-wide: create each once, never recreate (other databases may use it).
    for role in ROLES:
        if not raw.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s::pg_catalog.text", (role,)).fetchone():
            raw.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))


def dependents(raw) -> list[str]:
    """Objects outside pganon's schemas that `DROP SCHEMA ... CASCADE` would drop with pganon: a
    user's view on a release view (and views on that view), a function or column using a catalog
    type, a foreign key to a catalog table, an index or policy calling a pganon function ...
    Walks pg_depend from pganon's objects as the drop would (a column's dependants only when the
    column goes, a view with its rule); listed as PostgreSQL describes them."""
    return [r[0] for r in raw.execute("""
        WITH RECURSIVE ours AS (
            SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname = ANY (%(ours)s::pg_catalog.text[])
        ), gone (cls, oid, sub) AS (
            SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, c.oid, 0 FROM pg_catalog.pg_class c
             WHERE c.relnamespace IN (SELECT oid FROM ours)
            UNION
            SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, p.oid, 0 FROM pg_catalog.pg_proc p
             WHERE p.pronamespace IN (SELECT oid FROM ours)
            UNION
            SELECT 'pg_catalog.pg_type'::pg_catalog.regclass, t.oid, 0 FROM pg_catalog.pg_type t
             WHERE t.typnamespace IN (SELECT oid FROM ours)
            UNION
            SELECT x.cls, x.oid, x.sub
              FROM gone g
              JOIN pg_catalog.pg_depend d ON d.refclassid = g.cls AND d.refobjid = g.oid
                                         AND (g.sub = 0 OR d.refobjsubid = g.sub) AND d.deptype IN ('n', 'a', 'i')
             CROSS JOIN LATERAL (  -- a view goes with its rule
                SELECT d.classid, d.objid, d.objsubid
                UNION ALL
                SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, w.ev_class, 0
                  FROM pg_catalog.pg_rewrite w JOIN pg_catalog.pg_class v ON v.oid = w.ev_class
                 WHERE d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND w.oid = d.objid
                   AND v.relkind IN ('v', 'm')) AS x (cls, oid, sub)
        ), placed AS (  -- each object with the schema it lives in (its table's, for a column's parts)
            SELECT g.*, COALESCE(
                (SELECT c.relnamespace FROM pg_catalog.pg_class c
                  WHERE g.cls = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.oid = g.oid),
                (SELECT p.pronamespace FROM pg_catalog.pg_proc p
                  WHERE g.cls = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = g.oid),
                (SELECT t.typnamespace FROM pg_catalog.pg_type t
                  WHERE g.cls = 'pg_catalog.pg_type'::pg_catalog.regclass AND t.oid = g.oid),
                (SELECT c.relnamespace FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class c ON c.oid = k.conrelid
                  WHERE g.cls = 'pg_catalog.pg_constraint'::pg_catalog.regclass AND k.oid = g.oid),
                (SELECT t.typnamespace FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_type t ON t.oid = k.contypid
                  WHERE g.cls = 'pg_catalog.pg_constraint'::pg_catalog.regclass AND k.oid = g.oid),
                (SELECT c.relnamespace FROM pg_catalog.pg_attrdef a JOIN pg_catalog.pg_class c ON c.oid = a.adrelid
                  WHERE g.cls = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND a.oid = g.oid),
                (SELECT c.relnamespace FROM pg_catalog.pg_trigger r JOIN pg_catalog.pg_class c ON c.oid = r.tgrelid
                  WHERE g.cls = 'pg_catalog.pg_trigger'::pg_catalog.regclass AND r.oid = g.oid),
                (SELECT c.relnamespace FROM pg_catalog.pg_policy o JOIN pg_catalog.pg_class c ON c.oid = o.polrelid
                  WHERE g.cls = 'pg_catalog.pg_policy'::pg_catalog.regclass AND o.oid = g.oid),
                (SELECT c.relnamespace FROM pg_catalog.pg_rewrite w JOIN pg_catalog.pg_class c ON c.oid = w.ev_class
                  WHERE g.cls = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND w.oid = g.oid)) AS nsp
              FROM gone g
        )
        SELECT pg_catalog.pg_describe_object(p.cls, p.oid, p.sub)
          FROM placed p
         WHERE (p.nsp IS NULL OR p.nsp NOT IN (SELECT oid FROM ours UNION ALL
                                               SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname = 'pg_toast'))
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_rewrite w JOIN pg_catalog.pg_class v ON v.oid = w.ev_class
                            WHERE p.cls = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND w.oid = p.oid
                              AND v.relkind IN ('v', 'm'))                       -- a view's rule: the view is listed
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_trigger r                    -- a foreign key's triggers:
                            WHERE p.cls = 'pg_catalog.pg_trigger'::pg_catalog.regclass AND r.oid = p.oid
                              AND r.tgisinternal)                                -- the constraint is listed
           AND NOT (p.sub <> 0 AND (p.cls, p.oid, 0) IN (SELECT cls, oid, sub FROM gone))  -- a column of a listed view
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_type t                       -- a relation's row type,
                            WHERE p.cls = 'pg_catalog.pg_type'::pg_catalog.regclass AND t.oid = p.oid  -- an array type:
                              AND (t.typrelid <> 0 OR t.typelem <> 0 AND t.typcategory = 'A'))  -- listed with theirs
         ORDER BY 1""", {"ours": list(SCHEMAS)})]


def uninstall(dsn: str | None = None, drop_role: bool = True, cascade: bool = False) -> dict:
    """Remove every pganon object from the database (releases included); its roles too when no
    other database still uses them. Refuses while objects outside pganon depend on it (users'
    views on release views, ...), unless `cascade`, which drops them as well and lists them."""
    eng = _engine(dsn)
    roles_dropped = False
    try:
        with eng.begin() as conn:
            raw = _raw(conn)
            _begin(raw, "uninstall")
            deps = dependents(raw)
            if deps and not cascade:
                shown = "; ".join(deps[:20]) + (f"; and {len(deps) - 20} more" if len(deps) > 20 else "")
                raise PganonError(
                    f"uninstall refused: {len(deps)} object(s) outside pganon depend on it and would be dropped "
                    f"with it: {shown}", sqlstate="PA008",
                    hint="drop or change them first, or run `pganon uninstall --cascade` to drop them too; "
                         "nothing was changed")
            created_plpython = False
            if raw.execute("SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = "
                           "pg_catalog.to_regclass('pganon._installation'::pg_catalog.text) "
                           "AND attname = 'created_plpython' AND NOT attisdropped").fetchone():
                row = raw.execute("SELECT created_plpython FROM pganon._installation").fetchone()
                created_plpython = bool(row and row[0])
            for schema in SCHEMAS:
                raw.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
            if drop_role:
                db = sql.Identifier(raw.execute("SELECT pg_catalog.current_database()").fetchone()[0])
                for role in ROLES:
                    if raw.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s::pg_catalog.text",
                                   (role,)).fetchone():
                        raw.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM {}").format(db, sql.Identifier(role)))
            if created_plpython:  # only what pganon itself created; RESTRICT keeps others' functions safe
                raw.execute("SAVEPOINT ext")
                try:
                    raw.execute("DROP EXTENSION plpython3u")
                except psycopg.errors.DependentObjectsStillExist:
                    raw.execute("ROLLBACK TO SAVEPOINT ext")
        if drop_role:
            roles_dropped = [_try_drop_role(eng, role) for role in ROLES]
    finally:
        eng.dispose()
    out = {"uninstalled": True, "reader_role_dropped": bool(roles_dropped and roles_dropped[0]),
           "admin_role_dropped": bool(roles_dropped and roles_dropped[1])}
    if deps:
        out["dropped_dependents"] = "; ".join(deps)
    return out


def _try_drop_role(eng: sa.Engine, role: str) -> bool:
    with eng.connect() as conn:
        raw = _raw(conn)
        raw.autocommit = True
        try:
            raw.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
            return True
        except psycopg.errors.DependentObjectsStillExist:
            return False  # another database still grants to it; it stays for that one


def status(dsn: str | None = None) -> dict:
    with connect(dsn) as conn:
        row = conn.execute("SELECT pg_catalog.to_regclass('pganon._installation'::pg_catalog.text) IS NOT NULL").fetchone()
        if not row[0]:
            return {"installed": False}
        inst = conn.execute("SELECT version, engine_hash, installed_at FROM pganon._installation").fetchone()
        rev = conn.execute("SELECT version_num FROM pganon.alembic_version").fetchone()
        counts = conn.execute(
            "SELECT (SELECT pg_catalog.count(*) FROM pganon.dataset), "
            "(SELECT pg_catalog.count(*) FROM pganon.release WHERE status <> 'dropped')").fetchone()
    current = engine_hash(engine_modules())
    return {"installed": True, "version": inst[0], "catalog_revision": rev[0] if rev else None,
            "installed_at": inst[2].isoformat(timespec="seconds"), "datasets": counts[0], "releases": counts[1],
            "engine_up_to_date": inst[1] == current, "package_version": __version__}
