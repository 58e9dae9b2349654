"""Helpers the dataset tests (test_datasets_*.py) share, one copy: where the packaged data files
and the test fixtures are, an attribute file read as YAML, its security levels as sets, and a
fresh cache directory seeded with a verified archive."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml

from pganon import datasets as ds

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DATA = Path(ds.__file__).resolve().parents[1] / "data"


def load_attr(name: str) -> dict:
    return yaml.safe_load((DATA / name).read_text(encoding="utf-8"))


def levels_of(doc: dict) -> dict[str, dict[int, set]]:
    return {sa: {lvl: set(vals) for lvl, vals in m.items()}
            for sa, m in doc["security_levels"].items()}


def cache_with(tmp_path: Path, archive: Path) -> Path:
    """A fresh cache dir holding only a link/copy of a verified cached archive (in the same
    subdirectory, e.g. adult/ or nmes/)."""
    (tmp_path / archive.parent.name).mkdir(parents=True)
    dst = tmp_path / archive.parent.name / archive.name
    try:
        os.link(archive, dst)
    except OSError:
        shutil.copyfile(archive, dst)
    return tmp_path
