"""Datasets without a database, Table 1 of the paper: the packaged CSV, its typed rows and its
attribute file."""

from __future__ import annotations

import csv
import io

from pganon import datasets as ds
from dataset_helpers import DATA, FIXTURES, levels_of, load_attr


# ---------------------------------------------------------------------------- Table 1


def test_table1_csv_matches_spec_6_1():
    paper = list(csv.reader(io.StringIO((FIXTURES / "table1_paper.csv").read_text(encoding="utf-8"))))
    ours = list(csv.reader(io.StringIO((DATA / "table1.csv").read_text(encoding="utf-8"))))
    assert [h.lower() for h in paper[0]] == ours[0] == [c for c, _ in ds.TABLE1_COLUMNS]
    assert ours[1:] == paper[1:]
    assert len(ours) == 10


def test_table1_rows_are_typed():
    rows = ds.table1_rows()
    assert rows[0] == (1, 19200, "Sam", 21, "M", "White", 11000, "John", "Flu")
    assert rows[7] == (8, 12000, "Lucy", 26, "F", "Black", 15000, "Sam", "HIV")
    assert [r[0] for r in rows] == list(range(1, 10))


def test_table1_yaml_matches_spec_6_1():
    doc = load_attr("table1.yaml")
    assert (doc["dataset"], doc["source"], doc["key_column"], doc["person_column"]) == \
        ("table1", "table1", "rid", None)
    assert [(a["column"], a["role"], a["kind"]) for a in doc["attributes"]] == [
        ("ssn", "identifier", "categorical"), ("name", "identifier", "categorical"),
        ("age", "quasi", "numeric"), ("sex", "quasi", "categorical"),
        ("race", "quasi", "categorical"), ("zipcode", "quasi", "numeric"),
        ("physician", "sensitive", "categorical"), ("disease", "sensitive", "categorical")]
    assert levels_of(doc) == {
        "physician": {1: {"John", "Bob", "Anne", "Sam", "Mary"}},
        "disease": {0: {"Flu"}, 1: {"Pneumonia", "Gastritis"}, 2: {"HIV", "Cancer"}}}
    assert doc["level_l"] == {0: 1, 1: 2, 2: 3}
    rows = ds.table1_rows()
    cols = [c for c, _ in ds.TABLE1_COLUMNS]
    for sa in ("physician", "disease"):
        listed = [v for vals in doc["security_levels"][sa].values() for v in vals]
        assert sorted(listed) == sorted({r[cols.index(sa)] for r in rows})
