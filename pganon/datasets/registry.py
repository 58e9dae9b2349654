"""The registry of bundled datasets that ``pganon dataset list|load`` reads: each name with its
loader, default table and packaged attribute file, and :func:`load`, which loads a dataset and
declares it in the pganon catalog in one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable

import psycopg

from .adult import load_adult
from .adult_model import make_adult_model
from .fetch import DatasetError, _data_file
from .nmes import load_nmes
from .rwm5yr import load_rwm5yr
from .synthetic import make_informs_synthetic, make_synthetic_adult
from .table1 import load_ck_table1, load_table1
from .tables import TableName, _target
from .wide_zip import make_wide_zip


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------

def attribute_file(name: str) -> Path:
    """Path of a packaged attribute file, e.g. ``attribute_file('adult.yaml')``."""
    p = _data_file(name)
    if not p.is_file():
        raise DatasetError(f"no packaged attribute file {name!r} in pganon/data", sqlstate="PA001")
    return Path(str(p))


@dataclass(frozen=True)
class Dataset(Mapping):
    """A named dataset the CLI can load: ``pganon dataset load NAME [--rows N] [--table T]``.

    ``attributes`` names the packaged attribute file (YAML) declaring key, QIs, SAs, security
    levels and l per level; its ``source`` is ``default_table``, and :func:`load` declares it on
    whatever table was loaded. Read-only mapping too (``d["loader"]``, ``d.get("description")``).
    """
    name: str
    description: str
    default_table: str
    attributes: str
    loader: Callable[..., int]
    rows_allowed: bool
    default_rows: int | None = None

    def __getitem__(self, key: str):
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    @classmethod
    def _keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @property
    def attributes_path(self) -> Path:
        return attribute_file(self.attributes)

    def load(self, conn: psycopg.Connection, *, table: TableName | None = None,
             rows: int | None = None, replace: bool = False, **options) -> int:
        """Load this dataset's table into ``table`` (default ``default_table``); returns rows."""
        if rows is not None and not self.rows_allowed:
            raise DatasetError(f"dataset {self.name!r} has a fixed size", sqlstate="PA002",
                               hint="do not pass rows (--rows)")
        table = self.default_table if table is None else table
        kwargs = dict(table=table, replace=replace, **options)
        if self.rows_allowed:
            kwargs["rows"] = self.default_rows if rows is None else rows
        return self.loader(conn, **kwargs)


DATASETS: dict[str, Dataset] = {
    d.name: d for d in (
        Dataset("adult", "UCI Adult, the 30,162 complete rows of adult.data (paper section 5.2)",
                "adult", "adult.yaml", load_adult, rows_allowed=True),
        Dataset("nmes", "NMES 1987 (Deb & Trivedi 1997): 4,406 people aged 66 and over, "
                "7 sensitive attributes", "nmes", "nmes.yaml", load_nmes, rows_allowed=False),
        Dataset("table1", "Table 1 of Xiao & Li 2020: 9 patients, 2 sensitive attributes",
                "table1", "table1.yaml", load_table1, rows_allowed=False),
        Dataset("ck_table1", "Table 1 of Khan et al. 2020: 9 patients, 6 sensitive attributes with "
                "their dependencies (Table 11)", "ck_table1", "ck_table1.yaml", load_ck_table1,
                rows_allowed=False),
        Dataset("adult_synthetic",
                "Adult-like table sampled with replacement from a loaded 'adult' table "
                "(default 1,000,000 rows; options source=, seed=)",
                "adult_synthetic", "adult_synthetic.yaml", make_synthetic_adult,
                rows_allowed=True, default_rows=1_000_000),
        Dataset("adult_model",
                "Adult-like table drawn from a model fitted on UCI Adult: new combinations of "
                "values with Adult's marginals and main dependencies; needs no Adult table "
                "(default 1,000,000 rows; option seed=)",
                "adult_model", "adult_model.yaml", make_adult_model,
                rows_allowed=True, default_rows=1_000_000),
        Dataset("rwm5yr", "German health registry 1984-1988 (R COUNT rwm5yr): 19,609 yearly "
                "records of 6,127 persons, doctor visits per year; person column person_id",
                "rwm5yr", "rwm5yr.yaml", load_rwm5yr, rows_allowed=False),
        # rows_allowed so that rows reaches the loader, which refuses it with a hint (the size
        # is given in persons); rows=None, the default, is what it expects.
        Dataset("informs_synthetic",
                "INFORMS-like multi-record table: persons with Adult demographics sampled from "
                "a loaded 'adult' table and ~10 distinct ICD-9-CM diagnoses each (default "
                "50,000 persons; options persons=, mean_records=, source=, seed=)",
                "informs_synthetic", "informs_synthetic.yaml", make_informs_synthetic,
                rows_allowed=True, default_rows=None),
        Dataset("wide_zip",
                "Wide domains for generalization at scale: a 13,000-value ZIP code with a "
                "5 -> 3 -> 1 digit hierarchy, numeric QIs with ~40,000-50,000 distinct values, "
                "12 diseases (default 63,000 rows; option seed=)",
                "wide_zip", "wide_zip.yaml", make_wide_zip, rows_allowed=True,
                default_rows=63_000),
    )
}


def get_dataset(name: str) -> Dataset:
    """The registered dataset called ``name``; DatasetError listing the known names otherwise."""
    try:
        return DATASETS[name]
    except KeyError:
        raise DatasetError(f"unknown dataset {name!r}", sqlstate="PA001",
                           hint=f"known datasets: {', '.join(sorted(DATASETS))}") from None


def load(conn: psycopg.Connection, name: str, *, table: TableName | None = None,
         rows: int | None = None, replace: bool = False, declare: bool = True,
         **options) -> dict:
    """``pganon dataset load NAME``: load dataset ``name`` into ``table`` and, unless ``declare``
    is false, declare it in the pganon catalog from its attribute file with the loaded table as
    source (``catalog.apply``). Both happen in one transaction: all of it, or nothing.

    ``options`` go to the loader (``source``/``seed`` for adult_synthetic, ``seed`` for
    adult_model and wide_zip, ``persons``/``mean_records``/``source``/``seed`` for informs_synthetic,
    ``cache_dir`` for adult, nmes and rwm5yr). Returns a summary: dataset, table, rows, seconds,
    and what was declared.
    """
    d = get_dataset(name)
    t0 = time.perf_counter()
    target = d.default_table if table is None else table
    with conn.transaction():
        n = d.load(conn, table=target, rows=rows, replace=replace, **options)
        with conn.cursor() as cur:
            qualified = _target(cur, target).display(conn)
        info: dict = {"dataset": name, "table": qualified, "rows": n}
        if declare:
            from .. import catalog
            try:
                decl = catalog.apply(conn, d.attributes_path, source=qualified)
            except (psycopg.errors.UndefinedFunction, psycopg.errors.InvalidSchemaName) as e:
                raise DatasetError(
                    f"cannot declare {name!r}: pganon is not installed in this database "
                    f"({e.diag.message_primary})", sqlstate="PA001",
                    hint="run `pganon install` first, or load the table only (--no-apply, "
                    "declare=False)") from e
            info.update({"declared as": decl["dataset"], "attributes": decl["attributes"],
                         "security levels": decl["security_levels"]})
    info["seconds"] = round(time.perf_counter() - t0, 3)
    return info
