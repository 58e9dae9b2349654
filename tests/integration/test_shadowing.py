"""No hijack of the installer (issue 12, item 1; "Why" 1): a database owner who is not a superuser
plants functions and operators named like the ones `pganon install` / `uninstall` call; the
installer refuses to run while they exist, and even with that check switched off none of them
ever runs, because every statement pganon's Python runs pins search_path and qualifies its calls."""

import ast
import re
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pganon import connection, install

ROOT = Path(__file__).resolve().parents[2]

# The review's attack, and two more of its kind: each logs that it ran and, when it runs as a
# superuser, makes its owner a CREATEROLE role.
BAIT = """
CREATE TABLE public.shadow_log (fn text, run_as text);
GRANT INSERT ON public.shadow_log TO PUBLIC;
CREATE FUNCTION {schema}.pg_advisory_xact_lock(key integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.shadow_log VALUES ('pg_advisory_xact_lock', current_user);
  EXECUTE format('ALTER ROLE %I CREATEROLE', {owner});
END $$;
CREATE FUNCTION {schema}.to_regclass(name varchar) RETURNS regclass LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.shadow_log VALUES ('to_regclass', current_user);
  RETURN NULL;
END $$;
CREATE FUNCTION {schema}.shadow_eq(a name, b varchar) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.shadow_log VALUES ('=', current_user);
  RETURN a::text = b::text;
END $$;
CREATE OPERATOR {schema}.= (LEFTARG = name, RIGHTARG = varchar, FUNCTION = {schema}.shadow_eq);
"""


@pytest.fixture
def owned_db(server_dsn, make_db):
    """A fresh database owned by a login role that is not a superuser: (superuser dsn, owner dsn, owner)."""
    dsn = make_db("shadow")
    owner, pw = f"dbowner_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    with psycopg.connect(server_dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(owner), sql.Literal(pw)))
        c.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
            sql.Identifier(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]), sql.Identifier(owner)))
    yield dsn, psycopg.conninfo.make_conninfo(dsn, user=owner, password=pw), owner
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("DROP OWNED BY {} CASCADE").format(sql.Identifier(owner)))
    with psycopg.connect(server_dsn, autocommit=True) as c:
        c.execute(sql.SQL("ALTER DATABASE {} OWNER TO CURRENT_USER").format(
            sql.Identifier(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"])))
        c.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(owner)))


def _plant(owner_dsn, owner, schema="public"):
    with psycopg.connect(owner_dsn, autocommit=True) as c:
        if schema != "public":
            c.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        c.execute(BAIT.format(schema=sql.Identifier(schema).as_string(c), owner=sql.Literal(owner).as_string(c)))


def _damage(dsn, owner):
    """What the bait did: its log, and whether its owner gained any privilege."""
    with psycopg.connect(dsn) as c:
        log = c.execute("SELECT fn, run_as FROM public.shadow_log").fetchall()
        role = c.execute("SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls, "
                         "(SELECT count(*) FROM pg_auth_members WHERE member = r.oid) "
                         "FROM pg_roles r WHERE rolname = %s", (owner,)).fetchone()
    return log, role


NO_PRIVILEGE = (False, False, False, False, False, 0)


def test_search_path_shadowing_install_refuses_and_runs_nothing(owned_db):
    dsn, owner_dsn, owner = owned_db
    _plant(owner_dsn, owner)
    with pytest.raises(install.PganonError) as exc:
        install.install(dsn)
    assert exc.value.sqlstate == "PA010"
    assert "public.pg_advisory_xact_lock(integer)" in str(exc.value) and owner in str(exc.value)
    assert "public.to_regclass(character varying)" in str(exc.value)
    assert "operator public.=(name,character varying)" in str(exc.value)
    assert "nothing was changed" in str(exc.value)
    assert _damage(dsn, owner) == ([], NO_PRIVILEGE)
    with psycopg.connect(dsn) as c:   # nothing done: not even the schema or the extension
        assert c.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pganon%'").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM pg_extension WHERE extname = 'plpython3u'").fetchone()[0] == 0
    with pytest.raises(install.PganonError) as exc:
        install.uninstall(dsn)
    assert exc.value.sqlstate == "PA010"
    assert _damage(dsn, owner) == ([], NO_PRIVILEGE)


def test_search_path_shadowing_nothing_runs_even_without_the_check(owned_db, monkeypatch):
    """The second line of defence alone: pinned search_path and qualified, exactly typed calls."""
    dsn, owner_dsn, owner = owned_db
    _plant(owner_dsn, owner)
    monkeypatch.setattr(install, "_shadows", lambda raw: [])
    install.install(dsn)
    install.install(dsn)   # the upgrade path too
    assert install.status(dsn)["installed"] is True
    with connection.connect(dsn) as c:   # what every CLI command runs on
        assert c.execute("SHOW search_path").fetchone()[0] == "pg_catalog, pg_temp"
        assert connection.resolve_relation(c, "shadow_log") == "public.shadow_log"
        assert connection.creation_schema(c) == "public"
    install.uninstall(dsn)
    assert _damage(dsn, owner) == ([], NO_PRIVILEGE)
    # The bait is real: an unpinned superuser session calling the lock with an int4 runs it.
    with psycopg.connect(dsn) as c:
        superuser = c.execute("SELECT current_user").fetchone()[0]
        c.execute("SELECT pg_advisory_xact_lock(%s)", (install.INSTALL_LOCK,))
    log, role = _damage(dsn, owner)
    assert log == [("pg_advisory_xact_lock", superuser)] and role[1] is True


def test_search_path_shadowing_in_a_schema_on_the_database_search_path(owned_db):
    dsn, owner_dsn, owner = owned_db
    _plant(owner_dsn, owner, schema="app")
    with psycopg.connect(owner_dsn, autocommit=True) as c:   # the owner may set its database's default
        c.execute(sql.SQL("ALTER DATABASE {} SET search_path = app, public").format(
            sql.Identifier(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"])))
    with pytest.raises(install.PganonError) as exc:
        install.install(dsn)
    assert exc.value.sqlstate == "PA010" and "app.pg_advisory_xact_lock(integer)" in str(exc.value)
    assert _damage(dsn, owner) == ([], NO_PRIVILEGE)


def test_search_path_shadowing_pganon_schema_made_by_another_role_is_refused(owned_db):
    """A schema `pganon` the database owner made first would let them swap the engine's code."""
    dsn, owner_dsn, owner = owned_db
    with psycopg.connect(owner_dsn, autocommit=True) as c:
        c.execute("CREATE SCHEMA pganon")
    with pytest.raises(install.PganonError) as exc:
        install.install(dsn)
    assert exc.value.sqlstate == "PA010" and f"schema pganon (owner {owner})" in str(exc.value)
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT to_regclass('pganon._engine_module')").fetchone()[0] is None


def test_shadowing_check_ignores_functions_that_cannot_capture_a_call(make_db):
    """A function over a type of its own, or an exact twin of a pg_catalog function (pg_catalog
    comes first, so the twin never wins), cannot capture install's calls: it does not block it."""
    dsn = make_db("shadow")
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE DOMAIN public.label AS text")
        c.execute("CREATE FUNCTION public.count(x public.label) RETURNS int LANGUAGE sql AS 'SELECT 1'")
        c.execute("CREATE FUNCTION public.version() RETURNS text LANGUAGE sql AS 'SELECT ''app 1'''")
    install.install(dsn)
    install.uninstall(dsn)


# --- every call pganon's Python makes is qualified ------------------------------------------------

SQL_KEYWORDS = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|GRANT|REVOKE|WITH|FROM|WHERE|JOIN)\b")
CALL = re.compile(r'(?<![\w."$])([A-Za-z_][A-Za-z0-9_]*)\s*\(')
NOT_CALLS = {"coalesce", "nullif", "greatest", "least", "exists", "in", "any", "all", "array", "row", "cast",
             "values", "over", "filter", "extract", "overlay", "position", "trim", "substring", "grouping",
             # type names that take a modifier, e.g. numeric(10, 2)
             "numeric", "varchar", "char", "bit", "time", "timestamp", "interval"}


def _sql_strings(path: Path):
    """(line, text) of every string literal of a module that is SQL: an argument of execute / SQL /
    _call, or text with an SQL keyword."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    sqlish = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("SQL", "execute", "executemany", "_call", "copy"):
                sqlish.update(id(s) for s in ast.walk(node.args[0]) if isinstance(s, ast.Constant))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                id(node) in sqlish or SQL_KEYWORDS.search(node.value)):
            yield node.lineno, node.value


def test_every_function_call_in_pganon_python_is_schema_qualified(conn):
    catalog_functions = {r[0] for r in conn.execute(
        "SELECT DISTINCT proname::text FROM pg_proc WHERE pronamespace = 'pg_catalog'::regnamespace")}
    unqualified = []
    for path in sorted((ROOT / "pganon").glob("*.py")):
        for line, text in _sql_strings(path):
            for m in CALL.finditer(text):
                name = m.group(1).lower()
                if name in catalog_functions and name not in NOT_CALLS:
                    unqualified.append(f"{path.name}:{line}: {m.group(1)}(")
    assert unqualified == [], "write pg_catalog.<function>( in SQL that pganon's Python runs"


def test_install_shadow_list_covers_every_function_install_calls():
    text = (ROOT / "pganon" / "install.py").read_text(encoding="utf-8")
    called = set(re.findall(r"pg_catalog\.(\w+)\s*\(", text))
    assert called and called <= set(install.CALLS), sorted(called - set(install.CALLS))


def test_connections_pin_search_path_and_keep_the_users_for_names(db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("CREATE TABLE IF NOT EXISTS public.pinned_probe (id int)")
        users = c.execute("SHOW search_path").fetchone()[0]
    with connection.connect(db_dsn, autocommit=False) as c:
        assert c.execute("SHOW search_path").fetchone()[0] == connection.PINNED_SEARCH_PATH
        assert c.user_search_path == users and "public" in users
        c.rollback()   # a rollback does not undo the pin (it is set outside any transaction)
        assert c.execute("SHOW search_path").fetchone()[0] == connection.PINNED_SEARCH_PATH
        assert connection.resolve_relation(c, "pinned_probe") == "public.pinned_probe"
        assert connection.resolve_relation(c, "no_such_table") == "no_such_table"
        assert connection.resolve_relation(c, "not a name (") == "not a name ("
        assert c.execute("SHOW search_path").fetchone()[0] == connection.PINNED_SEARCH_PATH
