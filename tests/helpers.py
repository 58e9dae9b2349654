"""Small helpers shared by the integration tests (one copy, imported everywhere)."""

from __future__ import annotations

import psycopg
from psycopg import sql

from pganon import datasets


def create_table1(conn: psycopg.Connection, table: str) -> None:
    """Spec 000 Table 1 as a table named `table`, through the dataset loader users run."""
    datasets.load_table1(conn, table)


TABLE1_LEVELS = {"physician": {"Anne": 1, "Bob": 1, "John": 1, "Mary": 1, "Sam": 1},
                 "disease": {"Flu": 0, "Pneumonia": 1, "Gastritis": 1, "HIV": 2, "Cancer": 2}}


def declare_table1(conn: psycopg.Connection, dataset: str, table: str) -> None:
    """Declare Table 1 through the SQL API, as a DBA would."""
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid')", (dataset, table))
    for col, role, kind in [("ssn", "identifier", None), ("name", "identifier", None), ("age", "quasi", "numeric"),
                            ("sex", "quasi", "categorical"), ("race", "quasi", "categorical"),
                            ("zipcode", "quasi", "numeric"), ("physician", "sensitive", "categorical"),
                            ("disease", "sensitive", "categorical")]:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s, %s)", (dataset, col, role, kind))
    for col, levels in TABLE1_LEVELS.items():
        for value, level in levels.items():
            conn.execute("SELECT pganon.set_security_level(%s, %s, %s, %s)", (dataset, col, value, level))


def table_of(conn, name: str, columns: str, rows) -> None:
    """CREATE TABLE name (columns) and COPY the rows in (name unquoted: tests pass plain names)."""
    conn.execute(f"CREATE TABLE {name} ({columns})")
    with conn.cursor().copy(f"COPY {name} FROM STDIN") as cp:
        for r in rows:
            cp.write_row(r)


def declare(conn, dataset: str, key: str, roles, table: str | None = None) -> None:
    """Register `table` (default: the dataset's name) as `dataset` and declare (column, role) pairs."""
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, %s)", (dataset, table or dataset, key))
    for col, role in roles:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (dataset, col, role))


def publish(conn, dataset: str, method: str, promote: bool = False, **params) -> int:
    """A candidate release (promoted in the same transaction when asked); returns its id."""
    import json
    return conn.execute("SELECT pganon.publish(%s, %s, %s::jsonb, %s)",
                        (dataset, method, json.dumps(params), promote)).fetchone()[0]


def relation(conn, release: int, which: str = "gt") -> str:
    """The quoted name of a release relation (gt, st, st_long, map ...), candidate or not."""
    return conn.execute("SELECT layout->'relations'->>%s FROM pganon.release WHERE id = %s",
                        (which, release)).fetchone()[0]


def groups_of(conn, release: int, key: str = "rid") -> list[set]:
    """The release's groups as sets of source keys, in group-id order (reads the admin-only map)."""
    rows = conn.execute(sql.SQL("SELECT group_id, array_agg({} ORDER BY {}) FROM {} GROUP BY 1 ORDER BY 1").format(
        sql.Identifier(key), sql.Identifier(key), sql.Identifier("pganon_data", f"r{release}_map"))).fetchall()
    return [set(keys) for _, keys in rows]


def checks(conn, release: int) -> dict:
    return {c: (p, d) for c, p, d in conn.execute('SELECT "check", passed, detail FROM pganon.verify(%s)', (release,))}


def create_ck_table1(conn: psycopg.Connection, table: str) -> None:
    """Spec 004 Table 1 as table `table`, declared as dataset `table` from its bundled file
    (Table 11 dependencies, chi on physician), through the dataset loader users run."""
    datasets.load(conn, "ck_table1", table=table)
    conn.execute("UPDATE pganon.dataset SET name = %s WHERE name = 'ck_table1'", (table,))


def bucket_members(conn, release: int, key: str = "pid") -> list[set]:
    """The release's buckets as sets of source keys, in bucket-id order (admin-only map)."""
    rows = conn.execute(sql.SQL("SELECT bucket_id, array_agg({} ORDER BY {}) FROM {} GROUP BY 1 ORDER BY 1").format(
        sql.Identifier(key), sql.Identifier(key), sql.Identifier("pganon_data", f"r{release}_map"))).fetchall()
    return [set(keys) for _, keys in rows]


CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def rendered_plots(html_path, tmp_path) -> list[dict]:
    """Open an HTML report in headless Chromium and return what its inline check saw: per
    <svg class="plot"> its title, rendered width/height and how many marks it drew."""
    import json
    import subprocess
    from html import unescape
    from pathlib import Path

    out = subprocess.run(CHROMIUM + [f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=10000",
                                     "--dump-dom", Path(html_path).resolve().as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    head = out.stdout[:out.stdout.index(">", out.stdout.index("<html"))]
    start = head.index('data-rendered="') + len('data-rendered="')
    return json.loads(unescape(head[start:head.index('"', start)]))
