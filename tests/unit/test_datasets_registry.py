"""Datasets without a database, the registry: every dataset's name, attribute file, table and
loader, how a load is dispatched, and the errors naming the known datasets and files."""

from __future__ import annotations

import pytest
import yaml

from pganon import datasets as ds
from pganon.datasets import DatasetError


# ---------------------------------------------------------------------------- registry


def test_registry_names_files_and_tables():
    assert set(ds.DATASETS) == {"adult", "adult_model", "nmes", "table1", "ck_table1", "adult_synthetic", "rwm5yr", "informs_synthetic", "wide_zip"}
    for name, d in ds.DATASETS.items():
        assert d.name == name
        doc = yaml.safe_load(d.attributes_path.read_text(encoding="utf-8"))
        assert doc["dataset"] == name and doc["source"] == d.default_table
    assert ds.DATASETS["adult"].loader is ds.load_adult
    assert ds.DATASETS["nmes"].loader is ds.load_nmes
    assert not ds.DATASETS["nmes"].rows_allowed
    assert ds.DATASETS["table1"].loader is ds.load_table1
    assert ds.DATASETS["adult_synthetic"].loader is ds.make_synthetic_adult
    assert ds.DATASETS["adult_synthetic"].default_rows == 1_000_000
    # entries also read as mappings (the CLI's `dataset list` uses d.get("description"))
    d = ds.DATASETS["table1"]
    assert d.get("description") == d.description and d["loader"] is ds.load_table1
    assert dict(d)["default_table"] == "table1" and d.get("nope", 5) == 5
    with pytest.raises(KeyError):
        d["nope"]


def test_registry_dispatch_passes_table_rows_and_options():
    calls = []

    def loader(conn, **kw):
        calls.append((conn, kw))
        return 7

    sized = ds.Dataset("x", "", "x_default", "adult.yaml", loader, rows_allowed=True,
                       default_rows=100)
    fixed = ds.Dataset("y", "", "y_default", "table1.yaml", loader, rows_allowed=False)
    assert sized.load("C") == 7
    assert sized.load("C", table="s.t", rows=5, replace=True, seed=3) == 7
    assert fixed.load("C") == 7
    assert calls == [
        ("C", {"table": "x_default", "rows": 100, "replace": False}),
        ("C", {"table": "s.t", "rows": 5, "replace": True, "seed": 3}),
        ("C", {"table": "y_default", "replace": False}),
    ]
    with pytest.raises(DatasetError, match="fixed size") as e:
        fixed.load("C", rows=3)
    assert e.value.sqlstate == "PA002"
    assert len(calls) == 3


def test_get_dataset_names_the_known_ones():
    assert ds.get_dataset("table1") is ds.DATASETS["table1"]
    with pytest.raises(DatasetError, match="unknown dataset 'adults' .hint: known datasets: "
                                           "adult, adult_model, adult_synthetic, ck_table1, informs_synthetic, nmes, rwm5yr, table1, wide_zip") as e:
        ds.get_dataset("adults")
    assert e.value.sqlstate == "PA001"


def test_dataset_error_is_a_pganon_error_so_the_cli_prints_one_line():
    from pganon.errors import PganonError
    assert issubclass(DatasetError, PganonError)


def test_unknown_attribute_file_raises():
    with pytest.raises(DatasetError, match="no packaged attribute file"):
        ds.attribute_file("nope.yaml")
