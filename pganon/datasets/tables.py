"""Table names and table creation shared by every loader: a name parsed as PostgreSQL parses it,
an existing table refused or replaced, rows COPYed in, then key, comment and ANALYZE, all in one
transaction. Kept in one place so every dataset follows the same naming and replace rules (see
the package docstring).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

import psycopg
from psycopg import sql

from ..connection import creation_schema, resolve_relation
from .fetch import DatasetError


def _check_rows(rows, what: str = "rows") -> None:
    if rows is None:
        return
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise DatasetError(f"{what} must be a positive integer, got {rows!r}", sqlstate="PA002")


# --------------------------------------------------------------------------------------------
# Table names and table creation
# --------------------------------------------------------------------------------------------

TableName = Union[str, Sequence[str]]


@dataclass(frozen=True)
class _Rel:
    schema: str
    name: str

    @property
    def ident(self) -> sql.Identifier:
        return sql.Identifier(self.schema, self.name)

    def display(self, conn) -> str:
        return self.ident.as_string(conn)


def _parse_name(cur, table: TableName) -> list[str]:
    """Split a table name into 1 or 2 parts with PostgreSQL's own rules (parse_ident)."""
    if isinstance(table, str):
        if not table.strip():
            raise DatasetError("table name is empty", sqlstate="PA002")
        # parse_ident raises on invalid input, which would abort the surrounding transaction.
        # Wrap it in a savepoint so the error can be turned into a DatasetError cleanly.
        try:
            with cur.connection.transaction():
                cur.execute("SELECT pg_catalog.parse_ident(%s::pg_catalog.text)", (table,))
                parts = cur.fetchone()[0]
        except psycopg.errors.InvalidParameterValue as e:
            raise DatasetError(
                f"invalid table name {table!r} ({e.diag.message_primary})", sqlstate="PA002",
                hint="names follow SQL rules: double-quote a name that has capitals, spaces or "
                "punctuation, e.g. '\"Adult; drop\"' or 'my_schema.\"My Table\"', or pass a "
                "(schema, name) tuple") from e
    else:
        parts = list(table)
        if not all(isinstance(p, str) and p for p in parts):
            raise DatasetError(f"table name parts must be non-empty strings, got {table!r}",
                               sqlstate="PA002")
    if len(parts) not in (1, 2):
        raise DatasetError(f"table name {table!r} has {len(parts)} parts", sqlstate="PA002",
                           hint="give 'table' or 'schema.table'")
    for p in parts:
        if "\x00" in p:
            raise DatasetError(f"table name {table!r} contains a NUL character",
                               sqlstate="PA002")
        if len(p.encode("utf-8")) > 63:
            raise DatasetError(
                f"name part {p!r} is longer than PostgreSQL's 63-byte identifier limit "
                "(it would be truncated)", sqlstate="PA002", hint="choose a shorter name")
    return parts


def _target(cur, table: TableName) -> _Rel:
    """Where a new table called ``table`` would be created (schema must exist)."""
    parts = _parse_name(cur, table)
    if len(parts) == 1:
        schema = creation_schema(cur.connection)  # the user's current_schema, under their own search_path
        if schema is None:
            raise DatasetError(
                f"no existing schema on search_path to create {parts[0]!r} in",
                sqlstate="PA001", hint="qualify the name ('schema.table') or fix search_path")
        return _Rel(schema, parts[0])
    cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (parts[0],))
    if cur.fetchone() is None:
        raise DatasetError(
            f"schema {sql.Identifier(parts[0]).as_string(cur.connection)} does not exist",
            sqlstate="PA001", hint="create it first (CREATE SCHEMA ...) or use another table name")
    return _Rel(parts[0], parts[1])


def _existing(cur, table: TableName) -> _Rel | None:
    """Resolve an existing relation like PostgreSQL does (search_path for unqualified names)."""
    parts = _parse_name(cur, table)
    if len(parts) == 1:
        cur.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE c.oid = pg_catalog.to_regclass(%s::pg_catalog.text)",
            (resolve_relation(cur.connection, sql.Identifier(parts[0]).as_string(cur.connection)),))
    else:
        cur.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s", parts)
    r = cur.fetchone()
    return _Rel(r[0], r[1]) if r else None


_RELKIND = {"r": "table", "p": "partitioned table", "v": "view", "m": "materialized view",
            "f": "foreign table", "i": "index", "I": "index", "S": "sequence",
            "c": "composite type", "t": "TOAST table"}


def _prepare_target(cur, table: TableName, replace: bool) -> _Rel:
    """Resolve ``table`` and make room for it: refuse if it exists, unless ``replace``."""
    rel = _target(cur, table)
    conn = cur.connection
    cur.execute(
        "SELECT c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s", (rel.schema, rel.name))
    r = cur.fetchone()
    if r is None:
        return rel
    kind = _RELKIND.get(r[0], "relation")
    if not replace:
        raise DatasetError(
            f"{kind} {rel.display(conn)} already exists", sqlstate="PA002",
            hint="pass replace=True (CLI: --replace) to drop and reload it, or choose another "
            "table name (CLI: --table)")
    if r[0] not in ("r", "p"):
        raise DatasetError(f"{rel.display(conn)} is a {kind}, not a table; refusing to drop it",
                           sqlstate="PA002", hint="choose another table name")
    try:
        with conn.transaction():
            cur.execute(sql.SQL("DROP TABLE {}").format(rel.ident))
    except psycopg.errors.DependentObjectsStillExist as e:
        detail = (e.diag.message_detail or "").replace("\n", "; ")
        raise DatasetError(
            f"cannot replace {rel.display(conn)}: other objects depend on it ({detail})",
            sqlstate="PA008", hint="drop them first (releases: pganon drop-release), or load "
            "into another table name") from e
    return rel


def _create_table(cur, rel: _Rel, columns: Sequence[tuple[str, str]]) -> None:
    cols = sql.SQL(", ").join(
        sql.SQL("{} {} NOT NULL").format(sql.Identifier(c), sql.SQL(t)) for c, t in columns)
    cur.execute(sql.SQL("CREATE TABLE {} ({})").format(rel.ident, cols))


def _finish_table(cur, rel: _Rel, key: str, comment: str) -> None:
    cur.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY ({})")
                .format(rel.ident, sql.Identifier(key)))
    cur.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(rel.ident, sql.Literal(comment)))
    cur.execute(sql.SQL("ANALYZE {}").format(rel.ident))


def _copy_rows(cur, rel: _Rel, columns: Sequence[str], rows) -> int:
    stmt = sql.SQL("COPY {} ({}) FROM STDIN").format(
        rel.ident, sql.SQL(", ").join(map(sql.Identifier, columns)))
    n = 0
    with cur.copy(stmt) as copy:
        for row in rows:
            copy.write_row(row)
            n += 1
    return n


def _load_table(conn: psycopg.Connection, table: TableName, replace: bool,
                columns: Sequence[tuple[str, str]], data, key: str, comment: str) -> int:
    """Make ``table`` (``replace`` an existing one) with ``columns`` (name, SQL type), COPY
    ``data`` into it, add the primary key on ``key``, comment and ANALYZE it, all in
    ``conn.transaction()``. Returns the number of rows."""
    with conn.transaction(), conn.cursor() as cur:
        rel = _prepare_target(cur, table, replace)
        _create_table(cur, rel, columns)
        n = _copy_rows(cur, rel, [c for c, _ in columns], data)
        _finish_table(cur, rel, key, comment)
    return n
