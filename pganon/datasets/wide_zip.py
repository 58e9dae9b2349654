"""``wide_zip``: a table of wide domains for the scale benchmarks of generalization (issue 15):
a 13,000-value ZIP code with a 4-level hierarchy (5 digits -> first 3 -> first 1 -> ``*``) and
numeric QIs with tens of thousands of distinct values, where planners that work per leaf or per
value pair (not per distinct value and hierarchy level) slow down.

The ZIP domain is fixed (:func:`wide_zip_codes`, 10 first digits x 13 three-digit prefixes x 100
codes) and ships as ``pganon/data/hierarchies/wide_zip/zip.csv`` (a test checks the file against
the function), so the hierarchy has its 13,000 leaves whatever the number of rows. Generated in
one ``INSERT ... SELECT`` over ``generate_series``, no row through Python: row ``i`` depends only
on ``i`` and ``seed`` (the first k rows of a larger table equal the table of k rows); each draw is
``hashint8extended(i * 16 + d, seed)`` read as a non-negative integer (d numbers the draws).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from .fetch import DatasetError
from .synthetic import _MAX_INT4, _check_seed
from .tables import TableName, _check_rows, _create_table, _finish_table, _prepare_target

#: Columns in table order with their SQL types.
WIDE_ZIP_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "bigint"), ("zip", "text"), ("age", "smallint"), ("income", "integer"),
    ("hours", "smallint"), ("fnlwgt", "integer"), ("disease", "text"),
)

#: The sensitive attribute's 12 values, drawn uniformly.
WIDE_ZIP_DISEASES: tuple[str, ...] = (
    "asthma", "bronchitis", "cancer", "diabetes", "flu", "gastritis", "hepatitis",
    "hypertension", "influenza", "migraine", "pneumonia", "ulcer",
)

WIDE_ZIP_CODES = 13_000
_PREFIXES = 13          # three-digit prefixes per first digit
_STEP = 7919            # row -> ZIP index step: a prime coprime to 13,000, so any 13,000
                        # consecutive rows hold every ZIP code once

#: The hierarchy file, relative to pganon/data (wide_zip.yaml names it).
ZIP_HIERARCHY_FILE = "hierarchies/wide_zip/zip.csv"


def _zip_sql(j: sql.Composable) -> sql.Composed:
    """The ZIP code of index ``j`` (0 .. 12,999), in SQL; the same as :func:`wide_zip_code`."""
    return sql.SQL(
        "(({j}) / 1300)::text "
        "|| pg_catalog.lpad(((7 * ((({j}) / 100) % 13) + 3 * (({j}) / 1300) + 1) % 100)::text, 2, '0') "
        "|| pg_catalog.lpad((({j}) % 100)::text, 2, '0')").format(j=j)


def wide_zip_code(j: int) -> str:
    """The ZIP code of index ``j``: first digit j // 1300, then the prefix's two digits
    (7 t + 3 d + 1) mod 100 for its t = (j // 100) mod 13 (distinct within a first digit), then
    j mod 100."""
    d, t, e = j // 1300, (j // 100) % _PREFIXES, j % 100
    return f"{d}{(7 * t + 3 * d + 1) % 100:02d}{e:02d}"


def wide_zip_codes() -> list[str]:
    """The 13,000 ZIP codes of the domain, by index."""
    return [wide_zip_code(j) for j in range(WIDE_ZIP_CODES)]


def wide_zip_hierarchy_csv() -> str:
    """The ARX text of the ZIP hierarchy: code; first 3 digits; first digit; ``*`` (sorted)."""
    return "".join(f"{z};{z[:3]};{z[0]};*\n" for z in sorted(wide_zip_codes()))


def make_wide_zip(conn: psycopg.Connection, table: TableName = "wide_zip", rows: int = 63_000,
                  seed: int = 42, replace: bool = False) -> int:
    """Create the ``wide_zip`` table of ``rows`` rows (default 63,000) in one statement.

    Row ``i`` (``id`` 1..rows): ``zip`` the code of index (i - 1) * 7919 + o mod 13,000 (o drawn
    from the seed; so 13,000 rows or more hold all 13,000 codes, fewer rows distinct codes);
    ``age`` 17-90, ``hours`` 1-99, ``income`` a multiple of 4 in 0-250,000 (about 40,000
    distinct values in 63,000 rows), ``fnlwgt`` 10,000 + 10 x (0 .. 129,999) (about 50,000
    distinct), ``disease`` one of :data:`WIDE_ZIP_DISEASES`; each uniform and independent.
    Primary key ``id``; ANALYZEd. Returns ``rows``.
    """
    _check_rows(rows)
    if rows > _MAX_INT4:
        raise DatasetError(f"rows must be at most {_MAX_INT4}, got {rows}", sqlstate="PA002")
    _check_seed(seed)

    def draw(d: int, m: int) -> sql.Composed:
        return sql.SQL("((pg_catalog.hashint8extended((g.i << 4) | {d}, ({seed})::bigint) "
                       "& 9223372036854775807) % {m})").format(
            d=sql.Literal(d), seed=sql.Literal(seed), m=sql.Literal(m))

    offset = sql.SQL("((pg_catalog.hashint8extended(0, ({seed})::bigint) & 9223372036854775807) % {n})"
                     ).format(seed=sql.Literal(seed), n=sql.Literal(WIDE_ZIP_CODES))
    zip_index = sql.SQL("(((g.i - 1) * {step} + {off}) % {n})").format(
        step=sql.Literal(_STEP), off=offset, n=sql.Literal(WIDE_ZIP_CODES))
    with conn.transaction(), conn.cursor() as cur:
        rel = _prepare_target(cur, table, replace)
        _create_table(cur, rel, WIDE_ZIP_COLUMNS)
        cur.execute(sql.SQL(
            "INSERT INTO {dst} ({cols}) "
            "SELECT g.i, {zip}, (17 + {age})::smallint, (4 * {income})::integer, "
            "       (1 + {hours})::smallint, (10000 + 10 * {fnlwgt})::integer, "
            "       ({diseases}::text[])[1 + {disease}] "
            "FROM pg_catalog.generate_series(1::bigint, {rows}::bigint) AS g(i)").format(
                dst=rel.ident, cols=sql.SQL(", ").join(sql.Identifier(c) for c, _ in WIDE_ZIP_COLUMNS),
                zip=_zip_sql(zip_index), age=draw(1, 74), income=draw(2, 62_501),
                hours=draw(3, 99), fnlwgt=draw(4, 130_000),
                diseases=sql.Literal(list(WIDE_ZIP_DISEASES)),
                disease=draw(5, len(WIDE_ZIP_DISEASES)), rows=sql.Literal(rows)))
        _finish_table(cur, rel, "id",
                      f"wide_zip: {rows} rows, seed {seed}: 13,000 ZIP codes (hierarchy 5 -> 3 "
                      "-> 1 digits -> *), age, income, hours, fnlwgt, disease, uniform draws "
                      "hashint8extended(i * 16 + d, seed). Made by pganon.datasets.make_wide_zip.")
    return rows
