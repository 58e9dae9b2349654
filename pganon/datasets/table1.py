"""The two paper fixtures packaged as CSV in ``pganon/data``: Table 1 of Xiao & Li 2020
(``table1``) and Table 1 of Khan et al. 2020 (``ck_table1``). Nothing is downloaded.
"""

from __future__ import annotations

import csv
import io

import psycopg

from .fetch import DatasetError, _data_file
from .tables import TableName, _load_table


TABLE1_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rid", "integer"), ("ssn", "integer"), ("name", "text"), ("age", "integer"), ("sex", "text"),
    ("race", "text"), ("zipcode", "integer"), ("physician", "text"), ("disease", "text"),
)


#: Columns of Table 1 of spec 004 §3.1 (Khan et al.) with their SQL types; dates stay text.
CK_TABLE1_COLUMNS: tuple[tuple[str, str], ...] = (
    ("pid", "text"), ("name", "text"), ("gender", "text"), ("age", "integer"), ("zipcode", "integer"),
    ("cancer_type", "text"), ("cancer_treatment", "text"), ("physician", "text"),
    ("diagnosis_date", "text"), ("symptom", "text"), ("diagnosis_method", "text"),
)


def _fixture_rows(file: str, columns) -> list[tuple]:
    """The records of a packaged paper fixture (a CSV in ``pganon/data`` with a checked header)."""
    text = _data_file(file).read_text(encoding="utf-8")
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    want = [c for c, _ in columns]
    if header != want:
        raise DatasetError(f"{file} header is {header}, expected {want}", sqlstate="PA004")
    return [tuple(int(v) if t == "integer" else v for v, (_, t) in zip(rec, columns))
            for rec in reader if rec]


def table1_rows() -> list[tuple]:
    """The nine records of spec 000 §6.1 Table 1 from ``pganon/data/table1.csv``."""
    return _fixture_rows("table1.csv", TABLE1_COLUMNS)


def load_table1(conn: psycopg.Connection, table: TableName = "table1",
                replace: bool = False) -> int:
    """Load the paper's Table 1 (spec 000 §6.1): rid, ssn, name, age, sex, race, zipcode,
    physician, disease; ``rid`` is the primary key. Returns 9."""
    return _load_table(conn, table, replace, TABLE1_COLUMNS, table1_rows(), "rid",
                       "Table 1 of Xiao & Li (2020), spec 000 section 6.1. "
                       "Loaded by pganon.datasets.load_table1.")


def load_ck_table1(conn: psycopg.Connection, table: TableName = "ck_table1",
                   replace: bool = False) -> int:
    """Load Table 1 of Khan et al. (spec 004 §3.1): 9 patients, 3 QIs, 6 sensitive attributes,
    values verbatim; ``pid`` is the primary key. Returns 9."""
    return _load_table(conn, table, replace, CK_TABLE1_COLUMNS, _fixture_rows("ck_table1.csv", CK_TABLE1_COLUMNS),
                       "pid", "Table 1 of Khan et al. (2020), spec 004 section 3.1. "
                       "Loaded by pganon.datasets.load_ck_table1.")
