"""`pganon export RELEASE`: one relation of a release as CSV or Parquet, for people outside the database.

Only what analysts read leaves the database: the relations a release's layout lists under the
names of the stable views (gt, st, st_long, promise), never the map (key -> group), the levels,
the categories or the source table. So a release must be (or have been) promoted: a candidate
is refused (promote decides what analysts may see), so is a dropped release, and a superseded
release whose risk breaks the dataset's policy today is refused as promoting it again would be
(PolicyRefused). Everything runs in one read-only transaction, so the checks and the rows agree.

Rows leave through COPY ... TO STDOUT: CSV as PostgreSQL writes it (a header line, UTF-8),
Parquet through pyarrow (the optional extra `pganon[parquet]`) from a binary COPY, column types
mapped from the relation's own (`arrow_type`): integers, floats, numeric (decimal), boolean,
date, timestamp, text and one-dimensional arrays keep their type; ranges (a generalized QI
such as [21,38)), json and anything else are written as their PostgreSQL text, and each Parquet
field keeps its PostgreSQL type in its metadata ("pganon.type"), so a reader knows "[21,38)" is
an int4range.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from .errors import PganonError, PolicyRefused, from_db_error

PUBLISHED = ("gt", "st", "st_long", "promise")   # what the stable views pganon_release.<dataset>_* show
FORMATS = ("csv", "parquet")
BATCH_ROWS = 50_000   # Parquet row group and memory bound

# PostgreSQL base type -> (the type binary COPY loads it as, pyarrow type factory name and args)
_SCALARS = {"int2": ("int2", "int16"), "int4": ("int4", "int32"), "int8": ("int8", "int64"),
            "float4": ("float4", "float32"), "float8": ("float8", "float64"), "bool": ("bool", "bool_"),
            "date": ("date", "date32"), "text": ("text", "string"), "varchar": ("text", "string"),
            "bpchar": ("text", "string"), "name": ("text", "string"), "bytea": ("bytea", "binary")}
_TIMES = {"timestamp": None, "timestamptz": "UTC"}


def _translate(exc: psycopg.Error):
    return from_db_error(exc) or exc


def release_info(conn: psycopg.Connection, release: int) -> dict:
    """The release's status, dataset and published relations (name -> oid); refuses what analysts
    cannot read. Call it inside the export's transaction."""
    row = conn.execute(
        "SELECT r.status, d.name, r.layout -> 'relations' FROM pganon.release r "
        "JOIN pganon.dataset d ON d.id = r.dataset_id WHERE r.id = %s", (release,)).fetchone()
    if row is None or row[0] == "dropped":
        raise PganonError(f"release {release} does not exist or was dropped", sqlstate="PA001",
                          hint="list releases with `pganon releases`")
    status, dataset, layout = row
    if status == "candidate":
        raise PganonError(f"release {release} is a candidate: analysts cannot read it, so it is not exported",
                          sqlstate="PA002", hint=f"promote it first (`pganon promote {release}`), or export "
                                                 f"the current release of {dataset!r}")
    if status != "current":
        try:
            failing = conn.execute("SELECT measure, scope, value, threshold FROM pganon.risk(%s) "
                                   "WHERE passed IS FALSE", (release,)).fetchall()
        except psycopg.Error as exc:
            raise _translate(exc) from None
        if failing:
            listing = "; ".join(f"{m} ({s}) = {v} against threshold {t}" for m, s, v, t in failing)
            raise PolicyRefused(f"release {release} breaks the policy of dataset {dataset}: {listing}; "
                                f"promote would refuse it, so export does too", sqlstate="PA009")
    rels = {}
    for which, name in (layout or {}).items():
        if which not in PUBLISHED:
            continue
        oid = conn.execute("SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                           "ON n.oid = c.relnamespace WHERE c.oid = pg_catalog.to_regclass(%s::text) "
                           "AND n.nspname = 'pganon_data'", (name,)).fetchone()
        if oid is None:
            raise PganonError(f"release {release}: its {which} relation {name} is missing", sqlstate="PA001",
                              hint="publish the release again")
        rels[which] = oid[0]
    return {"release": release, "status": status, "dataset": dataset, "relations": rels}


def columns(conn: psycopg.Connection, oid: int) -> list[dict]:
    """The relation's columns: name, PostgreSQL type (as format_type shows it), type name, typmod,
    category and element type name."""
    cur = conn.execute(
        "SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), t.typname::text, a.atttypmod, "
        "t.typcategory::text, e.typname::text, t.typtype::text FROM pg_catalog.pg_attribute a "
        "JOIN pg_catalog.pg_type t ON t.oid = a.atttypid LEFT JOIN pg_catalog.pg_type e ON e.oid = t.typelem "
        "AND t.typcategory = 'A' WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        (oid,))
    return [dict(zip(("name", "pg_type", "typname", "typmod", "category", "element", "typtype"), r))
            for r in cur.fetchall()]


def _ident(conn, oid: int) -> sql.Composable:
    nsp, rel = conn.execute("SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class c "
                            "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s",
                            (oid,)).fetchone()
    return sql.Identifier(nsp, rel)


def _choose(info: dict, which: str) -> int:
    if which not in PUBLISHED:
        raise PganonError(f"relation must be one of {', '.join(PUBLISHED)}, not {which!r}", sqlstate="PA002")
    if which not in info["relations"]:
        raise PganonError(f"release {info['release']} has no {which}: it publishes "
                          f"{', '.join(info['relations'])}", sqlstate="PA001")
    return info["relations"][which]


@contextmanager
def _snapshot(conn):
    """One read-only repeatable-read transaction (the connection in autocommit, as `connect`
    makes it): the checks and the rows see one snapshot. Database errors leave as PganonError
    when they carry pganon's SQLSTATE."""
    try:
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            conn.execute("SET LOCAL client_encoding = 'UTF8'")
            yield
    except psycopg.Error as exc:
        raise _translate(exc) from None


def to_csv(conn: psycopg.Connection, release: int, which: str, out) -> dict:
    """Write the relation as CSV with a header line to the binary stream `out`."""
    with _snapshot(conn):
        info = release_info(conn, release)
        oid = _choose(info, which)
        cols = columns(conn, oid)
        with conn.cursor() as cur:
            with cur.copy(sql.SQL("COPY {} TO STDOUT (FORMAT csv, HEADER true)").format(_ident(conn, oid))) as cp:
                for chunk in cp:
                    out.write(chunk)
            n = cur.rowcount
    return {"release": release, "relation": which, "rows": n, "columns": len(cols), "format": "csv"}


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise PganonError("Parquet export needs pyarrow, which is not installed",
                          hint="pip install 'pganon[parquet]'") from None
    return pyarrow, pyarrow.parquet


def _numeric_shape(conn, ident, col) -> tuple[int, int] | None:
    """(precision, scale) that holds every value of an unconstrained numeric column, or None when
    no decimal128 can (NaN, infinity, more than 38 digits)."""
    c = sql.Identifier(col["name"])
    digits, scale, special = conn.execute(sql.SQL(
        "SELECT pg_catalog.max(pg_catalog.length(pg_catalog.trunc(pg_catalog.abs({c}))::text)) "
        "FILTER (WHERE {c} NOT IN ('NaN', 'Infinity', '-Infinity')), "
        "pg_catalog.max(pg_catalog.scale({c})), pg_catalog.bool_or({c} IN ('NaN', 'Infinity', '-Infinity')) FROM {t}").format(
        c=c, t=ident)).fetchone()
    if special:
        return None
    precision = max(1, (digits or 1) + (scale or 0))
    return (precision, scale or 0) if precision <= 38 else None


def arrow_type(conn, ident, col: dict, pa):
    """(select expression, binary COPY type, pyarrow type) for one column; text when nothing fits."""
    c = sql.Identifier(col["name"])
    t = col["typname"]
    if t in _SCALARS:
        load, arrow = _SCALARS[t]
        return (c if load != "text" or t == "text" else sql.SQL("{}::text").format(c)), load, getattr(pa, arrow)()
    if t in _TIMES:
        return c, t, pa.timestamp("us", tz=_TIMES[t])
    if t == "numeric":
        if col["typmod"] >= 4:
            precision, scale = ((col["typmod"] - 4) >> 16) & 0xFFFF, (col["typmod"] - 4) & 0xFFFF
            shape = (precision, scale) if precision <= 38 else None
        else:
            shape = _numeric_shape(conn, ident, col)
        if shape:
            return c, "numeric", pa.decimal128(*shape)
    if col["category"] == "A" and col["element"] in _SCALARS:
        load, arrow = _SCALARS[col["element"]]
        return sql.SQL("{}::{}").format(c, sql.SQL(load + "[]")), load + "[]", pa.list_(getattr(pa, arrow)())
    return sql.SQL("{}::text").format(c), "text", pa.string()


def to_parquet(conn: psycopg.Connection, release: int, which: str, out) -> dict:
    """Write the relation as Parquet to `out` (a path or a binary stream), BATCH_ROWS at a time."""
    pa, pq = _pyarrow()
    with _snapshot(conn):
        info = release_info(conn, release)
        oid = _choose(info, which)
        ident = _ident(conn, oid)
        cols = columns(conn, oid)
        mapped = [arrow_type(conn, ident, col, pa) for col in cols]
        schema = pa.schema(
            [pa.field(col["name"], arrow, metadata={"pganon.type": col["pg_type"]})
             for col, (_, _, arrow) in zip(cols, mapped)],
            metadata={"pganon.release": str(release), "pganon.relation": which, "pganon.dataset": info["dataset"]})
        query = sql.SQL("COPY (SELECT {} FROM {}) TO STDOUT (FORMAT binary)").format(
            sql.SQL(", ").join(expr for expr, _, _ in mapped), ident)
        n = 0
        with pq.ParquetWriter(out, schema) as writer, conn.cursor() as cur, cur.copy(query) as cp:
            cp.set_types([load for _, load, _ in mapped])
            batch = []
            for row in cp.rows():
                batch.append(row)
                if len(batch) >= BATCH_ROWS:
                    writer.write_table(_table(pa, schema, batch))
                    n, batch = n + len(batch), []
            if batch or n == 0:
                writer.write_table(_table(pa, schema, batch))
                n += len(batch)
    return {"release": release, "relation": which, "rows": n, "columns": len(cols), "format": "parquet"}


def _table(pa, schema, rows):
    cols = list(zip(*rows)) if rows else [[] for _ in schema]
    return pa.Table.from_arrays([pa.array(list(v), type=f.type) for v, f in zip(cols, schema)], schema=schema)


def to_file(conn, release: int, which: str, fmt: str, path: str | Path) -> dict:
    """Export to `path`, written under a temporary name and renamed when complete: a failed export
    leaves no partial file behind (and an existing file stays as it was)."""
    if fmt not in FORMATS:
        raise PganonError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}", sqlstate="PA002")
    path = Path(path)
    part = path.with_name(f".{path.name}.partial")
    try:
        with open(part, "wb") as f:
            out = (to_csv if fmt == "csv" else to_parquet)(conn, release, which, f)
        os.replace(part, path)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise PganonError(f"cannot write {path}: {exc.strerror}", hint="check the directory and its permissions") \
            from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return {**out, "output": str(path)}
