"""Small helpers shared by the integration tests (one copy, imported everywhere)."""

from __future__ import annotations

import csv
from pathlib import Path

import psycopg
from psycopg import sql

DATA = Path(__file__).resolve().parents[1] / "pganon" / "data"


def create_table1(conn: psycopg.Connection, table: str) -> None:
    """Spec 000 Table 1 as a table named `table` (quoted as given)."""
    ident = sql.Identifier(*table.split(".")) if "." in table and not table.startswith('"') else sql.Identifier(table)
    conn.execute(sql.SQL("CREATE TABLE {} (rid int PRIMARY KEY, ssn int, name text, age int, sex text, race text, "
                         "zipcode int, physician text, disease text)").format(ident))
    with open(DATA / "table1.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with conn.cursor() as cur:
        with cur.copy(sql.SQL("COPY {} (rid, ssn, name, age, sex, race, zipcode, physician, disease) FROM STDIN").format(ident)) as cp:
            for r in rows:
                cp.write_row([r["rid"], r["ssn"], r["name"], r["age"], r["sex"], r["race"], r["zipcode"],
                              r["physician"], r["disease"]])


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


def publish(conn, dataset: str, method: str, **params) -> int:
    import json
    return conn.execute("SELECT pganon.publish(%s, %s, %s::jsonb)", (dataset, method, json.dumps(params))).fetchone()[0]


def groups_of(conn, release: int, key: str = "rid") -> list[set]:
    """The release's groups as sets of source keys, in group-id order (reads the admin-only map)."""
    rows = conn.execute(sql.SQL("SELECT group_id, array_agg({} ORDER BY {}) FROM {} GROUP BY 1 ORDER BY 1").format(
        sql.Identifier(key), sql.Identifier(key), sql.Identifier("pganon_data", f"r{release}_map"))).fetchall()
    return [set(keys) for _, keys in rows]


def checks(conn, release: int) -> dict:
    return {c: (p, d) for c, p, d in conn.execute('SELECT "check", passed, detail FROM pganon.verify(%s)', (release,))}
