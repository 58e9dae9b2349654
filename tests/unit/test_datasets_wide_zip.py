"""The ``wide_zip`` dataset's fixed parts, without a database: the ZIP domain and its shipped
hierarchy file, and the attribute file that declares a hierarchy for every QI (gaa needs one)."""

from __future__ import annotations

import yaml

from pganon.datasets import registry
from pganon.datasets.fetch import _data_file
from pganon.datasets.wide_zip import (WIDE_ZIP_CODES, ZIP_HIERARCHY_FILE, wide_zip_code,
                                      wide_zip_codes, wide_zip_hierarchy_csv)


def test_zip_domain_is_13000_five_digit_codes_in_130_prefixes():
    codes = wide_zip_codes()
    assert len(codes) == len(set(codes)) == WIDE_ZIP_CODES == 13_000
    assert all(len(z) == 5 and z.isdigit() for z in codes)
    assert len({z[:3] for z in codes}) == 130 and len({z[0] for z in codes}) == 10
    assert wide_zip_code(0) == "00100" and wide_zip_code(12_999) == "91299"


def test_shipped_hierarchy_is_the_domain_five_three_one_digits_star():
    text = _data_file(ZIP_HIERARCHY_FILE).read_text(encoding="utf-8")
    assert text == wide_zip_hierarchy_csv()
    rows = [line.split(";") for line in text.splitlines()]
    assert len(rows) == 13_000
    assert all(r == [r[0], r[0][:3], r[0][0], "*"] for r in rows)


def test_attribute_file_declares_a_hierarchy_per_qi():
    d = registry.get_dataset("wide_zip")
    assert d.default_rows == 63_000 and d.rows_allowed
    spec = yaml.safe_load(d.attributes_path.read_text(encoding="utf-8"))
    qis = [a["column"] for a in spec["attributes"] if a["role"] == "quasi"]
    assert qis == ["zip", "age", "income", "hours", "fnlwgt"]
    assert set(spec["hierarchies"]) == set(qis)
    assert spec["hierarchies"]["zip"] == ZIP_HIERARCHY_FILE
    assert [a["column"] for a in spec["attributes"] if a["role"] == "sensitive"] == ["disease"]
