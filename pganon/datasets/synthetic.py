"""The two generators that build a table inside the database from a loaded ``adult`` table:
``adult_synthetic`` (Adult resampled, any size) and ``informs_synthetic`` (persons with several
diagnosis records each, standing in for INFORMS 2008, which cannot be redistributed).

Both are done in SQL with hash-derived choices, so a seed gives the same table on every server
and platform. ``make_informs_synthetic`` is one long SQL pipeline; it is kept whole rather than
split so that each draw's key (``p * 4096 + j``) can be read in one place.
"""

from __future__ import annotations

import csv
import io
import math
from fractions import Fraction
from typing import NamedTuple, Sequence, Union

import psycopg
from psycopg import sql

from .adult import ADULT_COLUMNS, _ADULT_DDL_TYPES
from .fetch import DatasetError, _data_file
from .tables import (TableName, _Rel, _check_rows, _create_table, _existing, _finish_table,
                     _prepare_target, _target)


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
    _check_seed(seed)
    with conn.transaction(), conn.cursor() as cur:
        src, rel = _source_and_target(conn, cur, source, ADULT_COLUMNS, table)
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
        _numbered_source(cur, tmp, src, rest)
        cur.execute(sql.SQL(
            "INSERT INTO {dst} ({cols}) "
            "SELECT g.i, {scols} "
            "FROM pg_catalog.generate_series(1, {rows}) AS g(i) "
            "JOIN {tmp} AS s "
            "  ON s.pos = ((pg_catalog.hashint4extended(g.i, ({seed})::bigint) & 9223372036854775807) "
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


def _numbered_source(cur, tmp, src, cols) -> None:
    """The source's `cols` numbered 0..n-1 (`pos`, by id) in a temp table keyed on pos, analyzed:
    the sampling join is then planned as one hash join of rows x n, whatever the source ids are."""
    cur.execute(sql.SQL(
        "CREATE TEMP TABLE {tmp} AS SELECT (pg_catalog.row_number() OVER (ORDER BY {id}) - 1)::integer "
        "AS pos, {cols} FROM {src}").format(
            tmp=tmp, id=sql.Identifier("id"), src=src.ident, cols=sql.SQL(", ").join(map(sql.Identifier, cols))))
    cur.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (pos)").format(tmp))
    cur.execute(sql.SQL("ANALYZE {} (pos)").format(tmp))


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


def _source_and_target(conn, cur, source: TableName, columns, table: TableName) -> tuple[_Rel, _Rel]:
    """The generators' Adult source (it must exist and hold `columns`) and their target table,
    which must not be the source: checked before anything is written."""
    src = _existing(cur, source)
    if src is None:
        raise DatasetError(
            f"source table {source!r} does not exist", sqlstate="PA001",
            hint="load it first: pganon dataset load adult (datasets.load_adult(conn))")
    missing = [c for c in columns if c not in _columns_of(cur, src)]
    if missing:
        raise DatasetError(
            f"source {src.display(conn)} lacks the Adult columns {', '.join(missing)}",
            sqlstate="PA002", hint="give a table made by load_adult")
    rel = _target(cur, table)
    if (rel.schema, rel.name) == (src.schema, src.name):
        raise DatasetError(
            f"the synthetic table cannot replace its own source {src.display(conn)}",
            sqlstate="PA002", hint="choose another table name")
    return src, rel


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
        src, rel = _source_and_target(conn, cur, source, ("id",) + INFORMS_ADULT_COLUMNS, table)
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
        _numbered_source(cur, tmp_src, src, INFORMS_ADULT_COLUMNS)
        cur.execute(sql.SQL(
            "CREATE TEMP TABLE {tmp} AS SELECT (x.o - 1)::integer AS idx, x.code "
            "FROM pg_catalog.unnest(%s::text[]) WITH ORDINALITY AS x(code, o)").format(tmp=tmp_code),
            ([d.code for d in diagnoses],))
        cur.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (idx)").format(tmp_code))
        cur.execute(sql.SQL("ANALYZE {}").format(tmp_code))
        # Key of the j-th choice of person p: p * 4096 + j; 2 * INFORMS_MAX_RECORDS + 8 draws
        # from j = 16 stay below 4096.
        key = lambda j: sql.SQL("pg_catalog.hashint8extended((g.p::bigint << 12) | {j}, ({seed})::bigint)"
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
