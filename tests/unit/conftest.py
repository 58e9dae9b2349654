"""Session fixtures of the dataset tests (test_datasets_*.py): UCI Adult and NMES 1987 fetched
(or their cache verified) and parsed once per session, for every module that reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pganon import datasets as ds


@pytest.fixture(scope="session")
def adult_path() -> Path:
    return ds.fetch_adult()


@pytest.fixture(scope="session")
def adult(adult_path):
    return ds.adult_rows(adult_path)


@pytest.fixture(scope="session")
def nmes_path() -> Path:
    return ds.fetch_nmes()


@pytest.fixture(scope="session")
def nmes(nmes_path):
    return ds.nmes_rows(nmes_path)
