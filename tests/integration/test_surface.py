"""Golden file of pganon's public surface: functions (volatility, security, search_path pinned),
views, and what pganon_reader may touch. Refresh after an intended change with:
    PGANON_REFRESH_GOLDEN=1 .venv/bin/python -m pytest tests/integration/test_surface.py
"""

import os
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "surface.txt"


def surface(conn) -> str:
    funcs = conn.execute("""
        SELECT p.oid::regprocedure::text, p.provolatile, p.prosecdef,
               coalesce(array_to_string(p.proconfig, ','), '') LIKE 'search_path=%%' AS pinned,
               l.lanname
          FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
         WHERE n.nspname = 'pganon' ORDER BY 1""").fetchall()
    views = conn.execute("""SELECT n.nspname || '.' || c.relname, c.relkind FROM pg_class c
                             JOIN pg_namespace n ON n.oid = c.relnamespace
                            WHERE n.nspname = 'pganon' ORDER BY 1""").fetchall()
    reader = conn.execute("""
        SELECT 'schema ' || nspname FROM pg_namespace WHERE has_schema_privilege('pganon_reader', oid, 'USAGE')
           AND nspname LIKE 'pganon%%'
        UNION ALL
        SELECT 'execute ' || p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'pganon' AND has_function_privilege('pganon_reader', p.oid, 'EXECUTE')
        UNION ALL
        SELECT 'select ' || n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname IN ('pganon', 'pganon_data') AND has_table_privilege('pganon_reader', c.oid, 'SELECT')
        ORDER BY 1""").fetchall()
    lines = [f"function {f} volatility={v} definer={d} search_path_pinned={pin} language={lang}"
             for f, v, d, pin, lang in funcs]
    lines += [f"relation {r} kind={k}" for r, k in views]
    lines += [f"reader may {r}" for (r,) in reader]
    return "\n".join(lines) + "\n"


def test_public_surface_matches_golden(conn):
    now = surface(conn)
    if os.environ.get("PGANON_REFRESH_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(now)
    assert now == GOLDEN.read_text()


# The only SECURITY DEFINER functions, each for a reason stated in sql/30-publish/20-roles.sql.
DEFINERS = {"pganon.grant_reader(regrole)", "pganon.revoke_reader(regrole)"}


def test_every_function_pins_search_path_and_only_the_reader_grants_are_definer(conn):
    lines = [l for l in surface(conn).splitlines() if l.startswith("function")]
    assert [l for l in lines if "search_path_pinned=False" in l] == []
    assert {l.split()[1] for l in lines if "definer=True" in l} == DEFINERS


def test_the_definers_grant_nothing_but_the_reader_role(conn, name):
    """A member of pganon_admin may hand out pganon_reader, nothing stronger."""
    import psycopg
    conn.execute(f'CREATE ROLE "{name}" NOLOGIN')
    try:
        conn.execute("SELECT pganon.grant_reader(%s)", (name,))
        assert conn.execute("SELECT pg_has_role(%s, 'pganon_reader', 'MEMBER') AND NOT "
                            "pg_has_role(%s, 'pganon_admin', 'MEMBER')", (name, name)).fetchone()[0]
        for bad in ("pganon_admin", "pganon_reader"):
            try:
                conn.execute("SELECT pganon.grant_reader(%s)", (bad,))
                raise AssertionError("granted pganon_reader to " + bad)
            except psycopg.Error as exc:
                assert exc.sqlstate == "PA002"
        conn.execute("SELECT pganon.revoke_reader(%s)", (name,))
        assert not conn.execute("SELECT pg_has_role(%s, 'pganon_reader', 'MEMBER')", (name,)).fetchone()[0]
    finally:
        conn.execute(f'DROP ROLE "{name}"')


def test_reader_gets_only_the_release_schema(conn):
    assert [l for l in surface(conn).splitlines() if l.startswith("reader may")] == ["reader may schema pganon_release"]
