"""Where pganon connects: `--dsn`, else `$PGANON_DSN`, else the embedded local server.

Every connection pganon makes comes from `connect`, which pins `search_path` to `pg_catalog,
pg_temp` before anything else runs: a function or operator that someone planted in `public` (or
any schema of the role's default path) can then never be picked for a call pganon's Python makes,
however its arguments are typed. The role's own path is kept aside, only to resolve table names
the user typed unqualified (`resolve_relation`, `creation_schema`), as psql would.
"""

from __future__ import annotations

import os

import psycopg

from . import server
from .errors import PganonError

PINNED_SEARCH_PATH = "pg_catalog, pg_temp"


class PinnedConnection(psycopg.Connection):
    """A psycopg connection whose search_path pganon pinned; `user_search_path` is the role's own."""

    user_search_path: str = ""


def resolve_dsn(dsn: str | None = None) -> str:
    if dsn:
        return dsn
    if os.environ.get("PGANON_DSN"):
        return os.environ["PGANON_DSN"]
    srv = server.default_server()
    if not server.is_running(srv):
        raise PganonError("no database given and the local server is not running", sqlstate="08001",
                          hint="run `pganon server start`, or pass --dsn / set PGANON_DSN")
    return srv.dsn()


def connect(dsn: str | None = None, autocommit: bool = True) -> PinnedConnection:
    """A connection with search_path pinned (session level, so no rollback undoes it)."""
    target = resolve_dsn(dsn)
    try:
        conn = PinnedConnection.connect(target, autocommit=True)
    except psycopg.ProgrammingError:  # a malformed DSN: libpq's message quotes it, password and all
        raise PganonError("the connection string is malformed (not shown: it may hold a password)",
                          sqlstate="08001", hint="write it as key=value pairs or a postgresql:// URI") from None
    except psycopg.OperationalError as exc:
        # libpq's reason (never the DSN: it may hold a password), without its own indented hint
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        reason = lines[0].removeprefix("connection failed: ") if lines else type(exc).__name__
        raise PganonError(f"cannot connect to the database: {reason}", sqlstate="08001",
                          hint="is the server running, and are host, port, user and password right?") from None
    try:
        # SHOW and SET call no function: nothing planted can run before the path is pinned.
        conn.user_search_path = conn.execute("SHOW search_path").fetchone()[0]
        conn.execute(f"SET search_path = {PINNED_SEARCH_PATH}")
        conn.autocommit = autocommit
    except BaseException:
        conn.close()
        raise
    return conn


def _with_user_path(conn: psycopg.Connection, query: str, args: tuple):
    """Run one fully qualified name-resolving query under the role's own search_path, then pin
    again; a connection pganon did not make keeps the path its owner gave it."""
    if not isinstance(conn, PinnedConnection):
        return conn.execute(query, args).fetchone()[0]
    user = conn.user_search_path
    with conn.transaction():  # an error rolls the path back with it
        conn.execute("SELECT pg_catalog.set_config('search_path', %s::pg_catalog.text, true)", (user,))
        value = conn.execute(query, args).fetchone()[0]
        conn.execute("SELECT pg_catalog.set_config('search_path', %s::pg_catalog.text, true)",
                     (PINNED_SEARCH_PATH,))
    return value


def resolve_relation(conn: psycopg.Connection, name: str) -> str:
    """`name` as the user meant it (their search_path for an unqualified name), qualified and
    quoted; unchanged when no relation has that name, so the caller's own error names it."""
    if not isinstance(conn, PinnedConnection):
        return name
    try:
        found = _with_user_path(
            conn, "SELECT pg_catalog.to_regclass(%s::pg_catalog.text)::pg_catalog.oid", (name,))
    except psycopg.Error:  # not a name at all: the caller's own statement says so
        return name
    if found is None:
        return name
    return conn.execute(
        "SELECT pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.' "
        "OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname) "
        "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
        "WHERE c.oid OPERATOR(pg_catalog.=) %s::pg_catalog.oid", (found,)).fetchone()[0]


def creation_schema(conn: psycopg.Connection) -> str | None:
    """The schema an unqualified CREATE TABLE of the user would use (their current_schema)."""
    return _with_user_path(conn, "SELECT pg_catalog.current_schema()", ())
