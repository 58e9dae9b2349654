"""coltypes: the one engine-side mapping from a column type to its cell, subtype and number line
(issue 13, item 5). The SQL it writes is run against PostgreSQL in
tests/integration/test_column_types.py; here, the choices themselves."""

import math

import pytest

from pganon_engine.core import coltypes
from pganon_engine.core.errors import EngineError


def test_every_type_a_dba_declares_has_a_cell_of_its_own_range_family():
    assert {t: (c.kind, c.range) for t, c in coltypes.TYPES.items()} == {
        "smallint": ("numeric", "int4range"), "integer": ("numeric", "int4range"),
        "bigint": ("numeric", "int8range"), "numeric": ("numeric", "numrange"),
        "real": ("numeric", "numrange"), "double precision": ("numeric", "numrange"),
        "date": ("date", "daterange"), "timestamp without time zone": ("date", "tsrange"),
        "timestamp with time zone": ("date", "tstzrange")}
    # a smallint cell is built from integers (int4range has no smallint constructor), a float
    # one from numerics: the cast the verifier compares in
    assert coltypes.cell("lo", "hi", coltypes.TYPES["smallint"]) == "int4range((lo)::integer, (hi)::integer, '[]')"
    assert coltypes.cell("lo", "hi", coltypes.TYPES["real"]) == "numrange((lo)::numeric, (hi)::numeric, '[]')"


def test_reading_a_range_back_gives_the_type_it_holds():
    for t in coltypes.TYPES.values():
        assert coltypes.RANGES[t.range].range == t.range
        assert coltypes.RANGES[t.range].unit == t.unit


def test_closed_bounds_discrete_ranges_end_one_below_their_exclusive_upper():
    lo, hi = coltypes.bounds("c", coltypes.TYPES["date"])
    assert lo == "lower(c)" and "upper(c) - 1" in hi and "upper_inc(c)" in hi
    assert coltypes.bounds("c", coltypes.TYPES["timestamp with time zone"]) == ("lower(c)", "upper(c)")
    assert "- 1" not in coltypes.bounds("c", coltypes.TYPES["numeric"])[1]


def test_number_line_dates_in_days_timestamps_in_seconds_floats_as_their_cells():
    assert "/ 86400" in coltypes.number("x", coltypes.TYPES["date"])
    assert "/ 86400" not in coltypes.number("x", coltypes.TYPES["timestamp without time zone"])
    assert coltypes.number("x", coltypes.TYPES["real"]) == "((x)::numeric)::float8"


@pytest.mark.parametrize("text, typ, expected", [
    ("1970-01-11", "date", 10.0),
    ("1969-12-31", "date", -1.0),
    ("1970-01-01 00:01:00", "timestamp without time zone", 60.0),      # read as UTC
    ("1970-01-01 02:00:00+02", "timestamp with time zone", 0.0),
    ("1970-01-01 00:00:00.25+00", "timestamp with time zone", 0.25),
    ("-2.5", "numeric", -2.5),
])
def test_number_of_text_is_the_sql_number_line(text, typ, expected):
    assert math.isclose(coltypes.number_of_text(text, coltypes.TYPES[typ]), expected)


def test_a_declaration_that_no_longer_fits_its_column_is_refused_or_read_by_its_kind():
    with pytest.raises(EngineError) as e:
        coltypes.of({"column": "age", "kind": "numeric", "type": "text"})
    assert e.value.sqlstate == "PA003" and '"age"' in str(e.value) and "text" in str(e.value)
    with pytest.raises(EngineError):
        coltypes.of({"column": "d", "kind": "numeric", "type": "date"})
    assert coltypes.of_kind("text", "numeric") is coltypes.TYPES["numeric"]
    assert coltypes.of_kind("text", "date") is coltypes.TYPES["date"]
    assert coltypes.of_kind("bigint", "numeric") is coltypes.TYPES["bigint"]


def test_only_discrete_types_with_a_storable_successor_problem_have_a_top():
    tops = {t: c.top for t, c in coltypes.TYPES.items() if c.top}
    assert tops == {"integer": "2147483647", "bigint": "9223372036854775807", "date": "5874897-12-31"}
    assert all(coltypes.TYPES[t].discrete for t in tops)
