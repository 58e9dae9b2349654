"""Unit tests for pganon_engine.hierarchy.build and the shipped Adult hierarchies
(pganon/data/hierarchies/adult/, spec 001 §1.2, §4.1, §6 A1).

Expected rows are worked out by hand; Adult value counts are transcribed from spec 000 §5.2 (the
five SAs) or, for the columns the spec does not count, from the 30,162 complete rows of UCI
adult.data (each list sums to 30,162, which the tests check)."""

import os
from collections import Counter
from decimal import Decimal
from datetime import date, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pganon_engine.hierarchy import build as hb
from pganon_engine.core.errors import EngineError

REPO = Path(__file__).resolve().parents[2]
ADULT_DIR = REPO / "pganon" / "data" / "hierarchies" / "adult"


def fails(call, *args, match, **kwargs):
    """call(*args, **kwargs) raises pganon's invalid-argument error whose message contains
    `match`; returns the error."""
    with pytest.raises(EngineError) as info:
        call(*args, **kwargs)
    assert info.value.sqlstate == "PA002"
    assert match in str(info.value), str(info.value)
    return info.value


def tree_of(rows):
    """Independent tree check: one parent per node, one root, no leaf inside a path, no cycle.
    Returns (parent map, root)."""
    parent, leaves = {}, [r[0] for r in rows]
    assert len(set(leaves)) == len(leaves), "a leaf appears twice"
    for row in rows:
        assert len(set(row)) == len(row), f"row {row} repeats a label"
        for child, par in zip(row, row[1:]):
            assert parent.setdefault(child, par) == par, f"{child} has two parents"
        assert not set(row[1:]) & set(leaves), f"row {row} passes through a leaf"
    roots = {r[-1] for r in rows}
    assert len(roots) == 1, f"roots {roots}"
    root = roots.pop()
    assert root not in parent
    for node in parent:
        seen = set()
        while node != root:
            assert node not in seen, "cycle"
            seen.add(node)
            node = parent[node]
    return parent, root


# --------------------------------------------------------------------------------------------
# ARX CSV
# --------------------------------------------------------------------------------------------

ARX = "Male;*\nFemale;*\n"


def test_read_csv_arx_rows():
    assert hb.read_csv(ARX) == [["Male", "*"], ["Female", "*"]]


def test_read_csv_strips_bom_from_text_and_bytes():
    assert hb.read_csv("\ufeff" + ARX) == [["Male", "*"], ["Female", "*"]]
    assert hb.read_csv(("\ufeff" + ARX).encode("utf-8")) == [["Male", "*"], ["Female", "*"]]


def test_read_csv_crlf_blank_lines_and_missing_final_newline():
    assert hb.read_csv("a;x;*\r\n\r\nb;x;*") == [["a", "x", "*"], ["b", "x", "*"]]


def test_read_csv_quoted_fields_keep_separator_quote_and_blanks():
    text = '"a;b";" x ";*\n"say ""hi""";" x ";*\n'
    assert hb.read_csv(text) == [["a;b", " x ", "*"], ['say "hi"', " x ", "*"]]


def test_read_csv_comma_when_asked():
    assert hb.read_csv("United-States,North America,*\n", sep=",") == \
        [["United-States", "North America", "*"]]


def test_read_csv_ragged_row_names_the_line():
    err = fails(hb.read_csv, "a;x;*\n\nb;x;*\nc;*\n", match="line 4 has 2 fields, line 1 has 3")
    assert "separator" in err.hint


def test_read_csv_empty_field_names_line_and_field():
    fails(hb.read_csv, "a;x;*\nb;;*\n", match="line 2, field 2 is empty")


def test_read_csv_unclosed_quote():
    fails(hb.read_csv, 'a;x;*\n"b;x;*\n', match="hierarchy file line")


def test_read_csv_no_rows():
    fails(hb.read_csv, "\ufeff\n\n", match="no rows")


def test_read_csv_wrong_separator_is_named():
    err = fails(hb.read_csv, "Male,*\nFemale,*\n", match="contains ','")
    assert err.hint == "read it with sep=','"


def test_read_csv_not_utf8():
    fails(hb.read_csv, b"a;\xff;*\n", match="not UTF-8")


@pytest.mark.parametrize("sep", ["", ";;", '"', "\n", None])
def test_bad_separator(sep):
    fails(hb.read_csv, ARX, sep=sep, match="separator must be one character")
    fails(hb.write_csv, [["a", "*"]], sep=sep, match="separator must be one character")


def test_write_csv_exact_text():
    rows = [["a;b", 'say "hi"', "*"], ["c", "x y", "*"], ["d\re", "f\ng", "*"]]
    assert hb.write_csv(rows) == '"a;b";"say ""hi""";*\nc;x y;*\n"d\re";"f\ng";*\n'
    assert hb.write_csv(rows[:2], sep=",") == 'a;b,"say ""hi""",*\nc,x y,*\n'
    assert hb.read_csv(hb.write_csv(rows)) == rows


@pytest.mark.parametrize("rows, match", [
    ([], "no rows"),
    ([["a", "*"], ["b", "x", "*"]], "row 2 has 3 fields, row 1 has 2"),
    ([["a", 1]], "row 1, field 2 is 1"),
    ([["a", ""]], "row 1, field 2 is ''"),
    (["a;*"], "row 1 is 'a;*'"),
    ("a;*", "rows must be a list"),
])
def test_write_csv_refuses(rows, match):
    fails(hb.write_csv, rows, match=match)


labels = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(width=st.integers(1, 4), n=st.integers(1, 6), data=st.data(),
       sep=st.sampled_from([";", ",", "\t", "|"]))
def test_csv_round_trip(width, n, data, sep):
    rows = data.draw(st.lists(st.lists(labels, min_size=width, max_size=width),
                              min_size=n, max_size=n))
    if rows[0][0].startswith("\ufeff"):       # documented exception (H1)
        rows[0][0] = "x" + rows[0][0]
    if width == 1 and any(c in r[0] for r in rows for c in ";,\t|" if c != sep):
        return                                 # read_csv refuses it as a separator mistake
    assert hb.read_csv(hb.write_csv(rows, sep=sep), sep=sep) == rows


# --------------------------------------------------------------------------------------------
# intervals
# --------------------------------------------------------------------------------------------


def test_intervals_age_widths_5_10_20():
    assert hb.intervals([17, 23, 20, 90], (5, 10, 20)) == [
        ["17", "[15,20)", "[10,20)", "[0,20)", "*"],
        ["20", "[20,25)", "[20,30)", "[20,40)", "*"],
        ["23", "[20,25)", "[20,30)", "[20,40)", "*"],
        ["90", "[90,95)", "[90,100)", "[80,100)", "*"],
    ]


def test_intervals_origin():
    assert hb.intervals([1, 4, 5, 16], (4, 8), origin=1) == [
        ["1", "[1,5)", "[1,9)", "*"],
        ["4", "[1,5)", "[1,9)", "*"],
        ["5", "[5,9)", "[1,9)", "*"],
        ["16", "[13,17)", "[9,17)", "*"],
    ]


def test_intervals_decimals_keep_their_text_and_negative_values_floor():
    assert hb.intervals([0.25, -0.1, "2.50", Decimal("1.75"), 1], ("0.5", 1)) == [
        ["-0.1", "[-0.5,0)", "[-1,0)", "*"],
        ["0.25", "[0,0.5)", "[0,1)", "*"],
        ["1", "[1,1.5)", "[1,2)", "*"],
        ["1.75", "[1.5,2)", "[1,2)", "*"],
        ["2.50", "[2.5,3)", "[2,3)", "*"],
    ]


def test_intervals_value_on_a_bound_goes_up_and_duplicates_merge():
    assert hb.intervals([10, 10, "10", 9], 10) == [["9", "[0,10)", "*"], ["10", "[10,20)", "*"]]


def test_intervals_numpy_integers():
    np = pytest.importorskip("numpy")
    assert hb.intervals(np.array([3, 7]), [5]) == [["3", "[0,5)", "*"], ["7", "[5,10)", "*"]]


def test_intervals_no_widths_is_flat():
    assert hb.intervals([2, 1], ()) == [["1", "*"], ["2", "*"]]


@pytest.mark.parametrize("values, widths, match", [
    ([], (5,), "intervals has no values"),
    (None, (5,), "intervals needs a list of values"),
    ([1, None], (5,), "is NULL"),
    ([1, True], (5,), "is a boolean"),
    ([1, float("nan")], (5,), "not a finite number"),
    ([1, "inf"], (5,), "not a finite number"),
    ([1, "abc"], (5,), "not a number"),
    ([1, " 2"], (5,), "not a number"),
    ([1, object()], (5,), "has type object, not a number"),
    ([1], (10, 25), "width 25 at level 2 is not a larger multiple of the width 10"),
    ([1], (10, 10), "width 10 at level 2 is not a larger multiple"),
    ([1], (10, 5), "width 5 at level 2 is not a larger multiple"),
    ([1], (0,), "widths must be positive"),
    ([1], (-5,), "widths must be positive"),
])
def test_intervals_refuses(values, widths, match):
    fails(hb.intervals, values, widths, match=match)


def _bounds(label):
    lo, hi = label[1:-1].split(",")
    return Decimal(lo), Decimal(hi)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(-500, 500), min_size=1, max_size=30),
       base=st.integers(1, 7), factors=st.lists(st.integers(2, 4), max_size=3),
       origin=st.integers(-20, 20))
def test_intervals_nest_and_hold_their_values(values, base, factors, origin):
    widths = [base]
    for f in factors:
        widths.append(widths[-1] * f)
    rows = hb.intervals(values, widths, origin=origin)
    assert [int(r[0]) for r in rows] == sorted(set(values))
    tree_of(rows)
    for row in rows:
        assert len(row) == len(widths) + 2 and row[-1] == "*"
        v = Decimal(row[0])
        prev = (v, v)
        for label, w in zip(row[1:-1], widths):
            lo, hi = _bounds(label)
            assert hi - lo == w and (lo - origin) % w == 0
            assert lo <= prev[0] and prev[1] <= hi and lo <= v < hi
            prev = (lo, hi)


# --------------------------------------------------------------------------------------------
# cut_intervals
# --------------------------------------------------------------------------------------------


def test_cut_intervals_open_ends_and_nesting():
    assert hb.cut_intervals([10, 18, 40, 70, 30], [[65, 18, 30, 45], [30]]) == [
        ["10", "(,18)", "(,30)", "*"],
        ["18", "[18,30)", "(,30)", "*"],
        ["30", "[30,45)", "[30,)", "*"],
        ["40", "[30,45)", "[30,)", "*"],
        ["70", "[65,)", "[30,)", "*"],
    ]


def test_cut_intervals_unchanged_interval_refused_when_balanced():
    err = fails(hb.cut_intervals, [10, 40, 70], [[18, 30, 45, 65], [18, 65]],
                match="interval (,18) (holding 10) is the same at levels 1 and 2")
    assert "balanced=False" in err.hint


def test_cut_intervals_unbalanced_writes_an_unchanged_interval_once():
    rows = hb.cut_intervals([10, 40, 70], [[18, 30, 45, 65], [18, 65]], balanced=False)
    assert rows == [["10", "(,18)", "*"], ["40", "[30,45)", "[18,65)", "*"], ["70", "[65,)", "*"]]
    tree_of(rows)
    fails(hb.write_csv, rows, match="row 2 has 4 fields, row 1 has 3")


def test_cut_intervals_unpopulated_unchanged_interval_is_fine():
    assert hb.cut_intervals([20, 40], [[18, 30, 65], [18, 65]]) == [
        ["20", "[18,30)", "[18,65)", "*"], ["40", "[30,65)", "[18,65)", "*"]]


@pytest.mark.parametrize("cuts, match", [
    ([[18, 65], [30]], "cut 30 at level 2 is not a cut at level 1"),
    ([[18], []], "cuts level 2 has no cut points"),
    ([], "cuts must be a list of levels"),
    (18, "cuts must be a list of levels"),
    ([18, 65], "cuts level 1 is 18"),
    ([[18, None]], "cut at level 1 is NULL"),
])
def test_cut_intervals_refuses(cuts, match):
    fails(hb.cut_intervals, [20], cuts, match=match)


# --------------------------------------------------------------------------------------------
# dates
# --------------------------------------------------------------------------------------------


def test_dates_day_month_year():
    assert hb.dates([date(2024, 3, 15), "2023-12-31", "2024-03-15"]) == [
        ["2023-12-31", "2023-12", "2023", "*"],
        ["2024-03-15", "2024-03", "2024", "*"],
    ]


def test_dates_chosen_levels():
    assert hb.dates(["2019-11-02"], levels=("month", "quarter", "year", "decade")) == [
        ["2019-11-02", "2019-11", "2019-Q4", "2019", "2010s", "*"]]
    assert hb.dates(["2019-11-02"], levels="year") == [["2019-11-02", "2019", "*"]]


def test_dates_over_timestamps_keep_the_text_as_leaf_and_add_the_day():
    """A timestamp column's text (PostgreSQL's output, with or without a zone) is the leaf, so it
    matches the data; its day is the first level (issue 13: gaa and geneir over timestamps)."""
    assert hb.dates(["2024-03-15 08:30:00", "2024-03-15 09:00:00.5+01", "2023-12-31 23:59:59"]) == [
        ["2023-12-31 23:59:59", "2023-12-31", "2023-12", "2023", "*"],
        ["2024-03-15 08:30:00", "2024-03-15", "2024-03", "2024", "*"],
        ["2024-03-15 09:00:00.5+01", "2024-03-15", "2024-03", "2024", "*"],
    ]
    assert hb.dates(["2024-03-15 08:30:00"], levels=("year",)) == [["2024-03-15 08:30:00", "2024", "*"]]


@pytest.mark.parametrize("values, kwargs, match", [
    ([], {}, "dates has no values"),
    (["2024-01-01"], {"levels": ("day", "month")}, "level day would repeat the date"),
    (["2024-02-30 10:00:00"], {}, "is not a valid date"),
    (["2024-01-01 25:00:00"], {}, "is not a valid date"),
    (["2024-01-01", None], {}, "dates has a NULL value"),
    ([datetime(2024, 1, 1, 12)], {}, "is a timestamp, not a date"),
    (["2024-02-30"], {}, "is not a valid date"),
    (["15/03/2024"], {}, "is not a date"),
    (["20240315"], {}, "is not a date"),
    ([20240315], {}, "is not a date"),
    (["2024-01-01"], {"levels": ("week",)}, "unknown date level 'week'"),
    (["2024-01-01"], {"levels": ("year", "month")}, "not distinct and finest first"),
    (["2024-01-01"], {"levels": ("year", "year")}, "not distinct and finest first"),
])
def test_dates_refuses(values, kwargs, match):
    fails(hb.dates, values, match=match, **kwargs)


# --------------------------------------------------------------------------------------------
# redaction
# --------------------------------------------------------------------------------------------


def test_redaction_zip_one_character_per_level():
    assert hb.redaction(["47677", "47602", 47677]) == [
        ["47602", "4760*", "476**", "47***", "4****", "*****"],
        ["47677", "4767*", "476**", "47***", "4****", "*****"],
    ]


def test_redaction_pads_short_codes_on_the_right_with_hash():
    rows = hb.redaction(["47677", "476"])
    assert rows == [
        ["476", "476#*", "476**", "47***", "4****", "*****"],
        ["47677", "4767*", "476**", "47***", "4****", "*****"],
    ]
    tree_of(rows)


def test_redaction_right_alignment_restores_leading_zeros():
    assert hb.redaction([2134, 47677], align="right", pad="0", keep=3) == [
        ["2134", "021**", "*****"], ["47677", "476**", "*****"]]


def test_redaction_keep_levels_and_char():
    assert hb.redaction(["ab12"], keep=(1, 3, 3), char="X") == [["ab12", "ab1X", "aXXX", "XXXX"]]


def test_redaction_single_character_codes():
    assert hb.redaction(["b", "a"]) == [["a", "*"], ["b", "*"]]


@pytest.mark.parametrize("values, kwargs, match", [
    ([], {}, "redaction has no values"),
    (["123", None], {}, "redaction has a NULL value"),
    (["123", ""], {}, "empty code"),
    (["12*"], {}, "code '12*' contains the redaction character '*'"),
    (["12#", "1234"], {}, "code '12#' contains the padding character '#'"),
    (["123"], {"pad": "*"}, "pad and char are both '*'"),
    (["123"], {"pad": "##"}, "pad must be one character"),
    (["123"], {"align": "centre"}, "align must be 'left' or 'right'"),
    (["123"], {"keep": 3}, "keep has 3"),
    (["123"], {"keep": (0,)}, "keep has 0"),
    ([1.5], {}, "is not a code"),
    ([True], {}, "is not a code"),
])
def test_redaction_refuses(values, kwargs, match):
    fails(hb.redaction, values, match=match, **kwargs)


@settings(max_examples=200, deadline=None)
@given(codes=st.lists(st.text(alphabet="0123456789", min_size=1, max_size=6), min_size=1,
                      max_size=20),
       align=st.sampled_from(["left", "right"]))
def test_redaction_is_a_balanced_tree(codes, align):
    rows = hb.redaction(codes, align=align)
    tree_of(rows)
    width = max(map(len, codes))
    assert {r[0] for r in rows} == set(codes)
    for row in rows:
        assert len(row) == width + 1 and row[-1] == "*" * width
        for n, label in enumerate(row[1:], start=1):
            assert len(label) == width and label.endswith("*" * n)


# --------------------------------------------------------------------------------------------
# ordered_groups
# --------------------------------------------------------------------------------------------


def test_ordered_groups_two_levels_with_short_last_group_merged():
    rows = hb.ordered_groups(list("abcdefghij"), (2, 4))
    assert [r[1:] for r in rows] == (
        [["[a..b]", "[a..d]", "*"]] * 2 + [["[c..d]", "[a..d]", "*"]] * 2
        + [["[e..f]", "[e..j]", "*"]] * 2 + [["[g..h]", "[e..j]", "*"]] * 2
        + [["[i..j]", "[e..j]", "*"]] * 2)
    assert [r[0] for r in rows] == list("abcdefghij")


def test_ordered_groups_short_tail_of_one_value_joins_the_group_before():
    assert hb.ordered_groups(["low", "mid", "high"], 2) == [
        ["low", "[low..high]", "*"], ["mid", "[low..high]", "*"], ["high", "[low..high]", "*"]]


def test_ordered_groups_keeps_the_given_order():
    assert hb.ordered_groups([3, 1, 2, 0], 2) == [
        ["3", "[3..1]", "*"], ["1", "[3..1]", "*"], ["2", "[2..0]", "*"], ["0", "[2..0]", "*"]]


@pytest.mark.parametrize("values, size, match", [
    ([], 2, "ordered_groups has no values"),
    (["a", None], 2, "ordered_groups has a NULL value"),
    (["a", "b", "a"], 2, "value 'a' appears twice"),
    (["a", "b"], 1, "size 1 at level 1 is not a larger multiple of 1"),
    (["a", "b"], (2, 3), "size 3 at level 2 is not a larger multiple of 2"),
    (["a", "b"], (), "size has no levels"),
    (["a"], 2, "ordered_groups has a single value"),
    (["a", "b", "c"], (4, 8), "level 2 would repeat level 1"),
    (["a", "[a..b]", "b"], 3, "value '[a..b]' is also a generated label"),
    (["a", "*"], 2, "value '*' is also a generated label"),
])
def test_ordered_groups_refuses(values, size, match):
    fails(hb.ordered_groups, values, size, match=match)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(2, 40), fans=st.lists(st.integers(2, 3), min_size=1, max_size=3))
def test_ordered_groups_nest(n, fans):
    sizes = [fans[0]]
    for f in fans[1:]:
        sizes.append(sizes[-1] * f)
    values = [f"v{i:02d}" for i in range(n)]
    try:
        rows = hb.ordered_groups(values, sizes)
    except EngineError as e:               # only a level after an all-in-one level is refused
        assert "would repeat level" in str(e)
        return
    tree_of(rows)
    for level in range(1, len(sizes) + 1):
        groups = {}
        for r in rows:
            groups.setdefault(r[level], []).append(r[0])
        for label, members in groups.items():
            assert label == f"[{members[0]}..{members[-1]}]"
            i = values.index(members[0])
            assert members == values[i:i + len(members)]        # consecutive
        labels = list(dict.fromkeys(r[level] for r in rows))
        for label in labels[:-1]:                               # only the last may be short
            assert len(groups[label]) >= sizes[level - 1]
        for label in labels:                                    # each merges >= 2 children
            assert len({r[level - 1] for r in rows if r[level] == label}) >= 2


# --------------------------------------------------------------------------------------------
# Shipped Adult hierarchies
# --------------------------------------------------------------------------------------------

# Spec 000 §5.2 value frequencies in the 30,162 complete rows.
SPEC_COUNTS = {
    "occupation": {
        "Prof-specialty": 4038, "Craft-repair": 4030, "Exec-managerial": 3992,
        "Adm-clerical": 3721, "Sales": 3584, "Other-service": 3212, "Machine-op-inspct": 1966,
        "Transport-moving": 1572, "Handlers-cleaners": 1350, "Farming-fishing": 989,
        "Tech-support": 912, "Protective-serv": 644, "Priv-house-serv": 143, "Armed-Forces": 9},
    "education": {
        "HS-grad": 9840, "Some-college": 6678, "Bachelors": 5044, "Masters": 1627,
        "Assoc-voc": 1307, "11th": 1048, "Assoc-acdm": 1008, "10th": 820, "7th-8th": 557,
        "Prof-school": 542, "9th": 455, "12th": 377, "Doctorate": 375, "5th-6th": 288,
        "1st-4th": 151, "Preschool": 45},
    "marital_status": {
        "Married-civ-spouse": 14065, "Never-married": 9726, "Divorced": 4214, "Separated": 939,
        "Widowed": 827, "Married-spouse-absent": 370, "Married-AF-spouse": 21},
    "workclass": {
        "Private": 22286, "Self-emp-not-inc": 2499, "Local-gov": 2067, "State-gov": 1279,
        "Self-emp-inc": 1074, "Federal-gov": 943, "Without-pay": 14},
    "race": {"White": 25933, "Black": 2817, "Asian-Pac-Islander": 895, "Amer-Indian-Eskimo": 286,
             "Other": 231},
}
# Not counted by the spec: counted in the 30,162 complete rows of UCI adult.data.
DATA_COUNTS = {
    "sex": {"Male": 20380, "Female": 9782},
    "income": {"<=50K": 22654, ">50K": 7508},
    "native_country": {
        "United-States": 27504, "Mexico": 610, "Philippines": 188, "Germany": 128,
        "Puerto-Rico": 109, "Canada": 107, "India": 100, "El-Salvador": 100, "Cuba": 92,
        "England": 86, "Jamaica": 80, "South": 71, "Italy": 68, "China": 68,
        "Dominican-Republic": 67, "Vietnam": 64, "Guatemala": 63, "Japan": 59, "Poland": 56,
        "Columbia": 56, "Iran": 42, "Taiwan": 42, "Haiti": 42, "Portugal": 34, "Nicaragua": 33,
        "Peru": 30, "Greece": 29, "Ecuador": 27, "France": 27, "Ireland": 24, "Hong": 19,
        "Cambodia": 18, "Trinadad&Tobago": 18, "Thailand": 17, "Laos": 17, "Yugoslavia": 16,
        "Outlying-US(Guam-USVI-etc)": 14, "Hungary": 13, "Honduras": 12, "Scotland": 11,
        "Holand-Netherlands": 1},
    # education_num is a one-to-one recoding of education (1 = Preschool ... 16 = Doctorate).
    "education_num": {
        "9": 9840, "10": 6678, "13": 5044, "14": 1627, "11": 1307, "7": 1048, "12": 1008,
        "6": 820, "4": 557, "15": 542, "5": 455, "8": 377, "16": 375, "3": 288, "2": 151,
        "1": 45},
}
# Ages that occur: 17..90 except 87 and 89 (the file has leaves for the whole range).
AGES_PRESENT = [str(a) for a in range(17, 91) if a not in (87, 89)]

HEIGHTS = {"age": 5, "education_num": 4, "education": 4, "workclass": 3, "marital_status": 3,
           "occupation": 3, "native_country": 3, "race": 2, "sex": 2, "income": 2}


def adult_file(name):
    return hb.read_csv((ADULT_DIR / f"{name}.csv").read_text(encoding="utf-8"))


def test_transcribed_counts_cover_the_complete_rows():
    for counts in list(SPEC_COUNTS.values()) + list(DATA_COUNTS.values()):
        assert sum(counts.values()) == 30162


def test_shipped_files_are_exactly_the_adult_qis():
    assert sorted(p.stem for p in ADULT_DIR.glob("*.csv")) == sorted(HEIGHTS)
    assert (ADULT_DIR.parent / "README.md").is_file()


@pytest.mark.parametrize("name", sorted(HEIGHTS))
def test_shipped_file_is_a_balanced_tree_with_root_star(name):
    text = (ADULT_DIR / f"{name}.csv").read_text(encoding="utf-8")
    assert not text.startswith("\ufeff") and text.endswith("\n") and "\r" not in text
    rows = hb.read_csv(text)                         # rectangular, or it raises
    assert {len(r) for r in rows} == {HEIGHTS[name]}
    _, root = tree_of(rows)
    assert root == "*"
    assert all("*" not in label for r in rows for label in r[:-1])
    assert hb.write_csv(rows) == text                # canonical form


@pytest.mark.parametrize("name", sorted(SPEC_COUNTS) + sorted(DATA_COUNTS))
def test_shipped_leaves_are_the_values_that_occur(name):
    counts = SPEC_COUNTS.get(name) or DATA_COUNTS[name]
    assert sorted(r[0] for r in adult_file(name)) == sorted(counts)


def test_shipped_age_covers_17_to_90():
    leaves = [r[0] for r in adult_file("age")]
    assert leaves == [str(a) for a in range(17, 91)]
    assert set(AGES_PRESENT) <= set(leaves)


def test_shipped_numeric_files_are_the_builders_output():
    assert adult_file("age") == hb.intervals(range(17, 91), (5, 10, 20))
    assert adult_file("education_num") == hb.intervals(range(1, 17), (4, 8), origin=1)


def test_shipped_age_rows_hand_checked():
    rows = {r[0]: r[1:] for r in adult_file("age")}
    assert rows["17"] == ["[15,20)", "[10,20)", "[0,20)", "*"]
    assert rows["39"] == ["[35,40)", "[30,40)", "[20,40)", "*"]
    assert rows["90"] == ["[90,95)", "[90,100)", "[80,100)", "*"]


@pytest.mark.parametrize("name, leaf, path", [
    ("workclass", "Private", ["Private sector", "*"]),
    ("workclass", "State-gov", ["Government", "*"]),
    ("workclass", "Self-emp-not-inc", ["Self-employed", "*"]),
    ("workclass", "Without-pay", ["Unemployed", "*"]),
    ("education", "Preschool", ["Primary School", "Primary education", "*"]),
    ("education", "HS-grad", ["High School", "Secondary education", "*"]),
    ("education", "Assoc-voc", ["Professional Education", "Higher education", "*"]),
    ("education", "Doctorate", ["Graduate", "Higher education", "*"]),
    ("marital_status", "Married-AF-spouse", ["Spouse present", "*"]),
    ("marital_status", "Married-spouse-absent", ["Spouse not present", "*"]),
    ("occupation", "Tech-support", ["White-collar", "*"]),
    ("occupation", "Craft-repair", ["Blue-collar", "*"]),
    ("occupation", "Armed-Forces", ["Other", "*"]),
    ("native_country", "South", ["Asia", "*"]),
    ("native_country", "Trinadad&Tobago", ["North America", "*"]),
    ("native_country", "Columbia", ["South America", "*"]),
    ("native_country", "England", ["Europe", "*"]),
    ("education_num", "12", ["[9,13)", "[9,17)", "*"]),
    ("income", ">50K", ["*"]),
])
def test_shipped_groupings(name, leaf, path):
    assert {r[0]: r[1:] for r in adult_file(name)}[leaf] == path


def _cached_adult():
    root = os.environ.get("PGANON_CACHE") or str(Path.home() / ".cache" / "pganon")
    path = Path(root).expanduser() / "adult" / "adult.data"
    return path if path.is_file() else None


@pytest.mark.skipif(_cached_adult() is None, reason="UCI adult.data is not in the pganon cache")
def test_shipped_leaves_cover_every_value_of_cached_adult_data():
    from pganon.datasets import ADULT_COMPLETE_ROWS, adult_rows
    rows = adult_rows(_cached_adult())
    assert len(rows) == ADULT_COMPLETE_ROWS
    for name in HEIGHTS:
        seen = Counter(str(getattr(r, name)) for r in rows)
        leaves = {r[0] for r in adult_file(name)}
        assert set(seen) <= leaves, (name, set(seen) - leaves)
        if name in SPEC_COUNTS or name in DATA_COUNTS:
            assert seen == (SPEC_COUNTS.get(name) or DATA_COUNTS[name])
        else:
            assert sorted(seen, key=int) == AGES_PRESENT
