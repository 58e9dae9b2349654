"""The only engine module that touches `plpy`: a small database handle for the pipeline modules.

Pipeline code calls `db.rows(sql, args, types)` and `db.ident(name)`; tests can hand in any
object with the same methods. Prepared plans are cached per query text for the session.
"""

import time

from .errors import EngineError


class Db:
    def __init__(self, plpy):
        self._plpy = plpy
        self._plans = {}

    def rows(self, query, args=(), types=()):
        """Run one statement; return its rows as a list of dicts (empty for utility statements)."""
        if args:
            key = (query, tuple(types))
            plan = self._plans.get(key)
            if plan is None:
                plan = self._plans[key] = self._plpy.prepare(query, list(types))
            return list(self._plpy.execute(plan, list(args)))
        return list(self._plpy.execute(query))

    def one(self, query, args=(), types=()):
        rs = self.rows(query, args, types)
        return rs[0] if rs else None

    def run(self, query, args=(), types=()):
        self.rows(query, args, types)

    def try_run(self, query, sqlstates):
        """Run a statement in a subtransaction; False (and nothing changed) if the server refused
        it with one of `sqlstates`. Any other error is raised, and a cancel, statement_timeout or
        shutdown (class 57) always is, whatever `sqlstates` says."""
        try:
            with self._plpy.subtransaction():
                self._plpy.execute(query)
            return True
        except self._plpy.SPIError as exc:
            code = getattr(exc, "sqlstate", None) or ""
            if code.startswith("57") or code not in sqlstates:
                raise
            return False

    def interruptible(self, every=0.2):
        """A callback for long pure-Python loops: at most every `every` seconds it runs a trivial
        statement, where the server notices a cancel request or statement_timeout (Python code
        alone never does)."""
        state = {"next": time.monotonic() + every}

        def tick():
            now = time.monotonic()
            if now >= state["next"]:
                state["next"] = now + every
                self._plpy.execute("SELECT 1")
        return tick

    def ident(self, name):
        return self._plpy.quote_ident(name)

    def literal(self, value):
        return self._plpy.quote_literal(value)

    def notice(self, message):
        self._plpy.notice(message)


def drop_temp(db, table):
    """Drop the temp work table `table` ("pg_temp._pganon_...") when this session has it. Not
    DROP ... IF EXISTS: that sends the client a "does not exist, skipping" NOTICE, which psql
    prints as if something were wrong (issue 13)."""
    if db.one("SELECT pg_catalog.to_regclass($1) IS NOT NULL AS e", [table], ["text"])["e"]:
        db.run(f"DROP TABLE {table}")


def drop_work_tables(db):
    """Drop the temp work tables an earlier publish of this transaction left (they live until
    commit), so that several publishes can share one transaction (`pganon compare`)."""
    for t in db.rows("SELECT relname::text AS name FROM pg_catalog.pg_class "
                     "WHERE relnamespace = pg_catalog.pg_my_temp_schema() AND relkind = 'r' "
                     "AND relname LIKE '\\_pganon\\_%'"):
        db.run(f"DROP TABLE pg_temp.{db.ident(t['name'])}")


def raise_as_sql(plpy, exc):
    """Re-raise an EngineError as a SQL error with pganon's SQLSTATE, hint and detail."""
    kw = {"sqlstate": exc.sqlstate}
    if exc.hint:
        kw["hint"] = exc.hint
    if exc.detail:
        kw["detail"] = exc.detail
    plpy.error(str(exc), **kw)


def call(plpy, fn, **kwargs):
    """Run one engine entry point from a PL/Python wrapper, mapping EngineError to SQL errors."""
    try:
        return fn(Db(plpy), **kwargs)
    except EngineError as exc:
        raise_as_sql(plpy, exc)


class Phases:
    """Seconds per pipeline phase, in the order run (stored with the release)."""

    def __init__(self, db=None):
        self.seconds = {}
        self._db = db
        # Progress lines only when the session asks for them (the CLI sets pganon.progress = on).
        self._loud = db is not None and (db.one(
            "SELECT current_setting('pganon.progress', true) AS v") or {}).get("v") == "on"

    def run(self, name, fn, *args, **kwargs):
        if self._loud:
            self._db.notice(f"pganon: {name} ...")
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        self.seconds[name] = round(time.perf_counter() - t0, 4)
        return out


def pg_array(column):
    """A PostgreSQL array literal of an integer column: the server parses one text value, where
    plpy would convert a list element by element."""
    return "{" + ",".join(map(str, column.tolist())) + "}"
