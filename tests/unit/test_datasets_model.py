"""The ``adult_model`` dataset without a database: the fitted model (refitting Adult gives the
shipped file exactly), the chain's shape, the exact alias tables the SQL draws from, the back-off
for parent combinations Adult lacks, its registry entry and attribute file, and the input
refused before any database work."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dataset_helpers import DATA, load_attr
from pganon import datasets as ds
from pganon.datasets import DatasetError
from pganon.datasets import adult_model as am, adult_model_refit as refit


def test_refit_on_adult_gives_the_shipped_file_exactly(adult):
    shipped = (DATA / ds.MODEL_FILE).read_text(encoding="utf-8")
    assert am.model_json(ds.fit_adult_model(adult)) == shipped
    assert len(shipped.encode()) < 100_000   # small enough to ship
    assert ds.packaged_adult_model()["rows"] == ds.ADULT_COMPLETE_ROWS


def test_refit_command_says_up_to_date(capsys):
    assert refit.main([]) == 0
    assert "up to date" in capsys.readouterr().out


def test_chain_is_decomposable_and_draws_parents_first():
    # each parent set lies within the family of one earlier attribute, so the table keeps
    # Adult's joint distribution of every family (and so every marginal) in expectation
    families = []
    for col, parents in ds.MODEL_CHAIN:
        drawn = {c for fam in families for c in fam}
        assert set(parents) <= drawn
        assert not parents or any(set(parents) <= fam for fam in families), col
        families.append({col, *parents})
    assert {c for c, _ in ds.MODEL_CHAIN} | {"id", "education_num"} == set(ds.ADULT_COLUMNS)


@pytest.mark.parametrize("weights", [[1], [0, 5], [3, 0, 0, 1], [1, 2, 3, 4, 5, 6, 7],
                                     [9782, 20380], [0, 0, 7, 0], list(range(41))])
def test_alias_table_gives_each_code_its_exact_probability(weights):
    table = ds.alias_table(weights)
    m, total = len(weights), sum(weights)
    prob = [Fraction(0)] * m
    for j, (thr, alias) in enumerate(table):
        assert 0 <= thr <= total and 0 <= alias < m
        prob[j] += Fraction(thr, total * m)
        prob[alias] += Fraction(total - thr, total * m)
    assert prob == [Fraction(w, total) for w in weights]


@pytest.mark.parametrize("weights", [[], [0, 0], [3, -1]])
def test_alias_table_refuses_weights_without_mass(weights):
    with pytest.raises(DatasetError, match="non-negative with a positive sum"):
        ds.alias_table(weights)


def _implied(packed: list[int], m: int) -> list[float]:
    """What the SQL draws from one packed row: column j w.p. 1/m, kept below its 31-bit
    threshold, else its alias."""
    p = [0.0] * m
    for j, cell in enumerate(packed):
        keep = (cell >> 10) / 2**31
        p[j] += keep / m
        p[cell & 1023] += (1 - keep) / m
    return p


def test_packed_tables_draw_adults_conditional_counts():
    model = ds.packaged_adult_model()
    for d in am.model_arrays(model):
        var, m = model["variables"][d["column"]], d["m"]
        assert len(d["table"]) % m == 0
        for combo, counts in var["counts"]:
            key = 0
            for code, radix in zip(combo, d["radix"]):
                key = key * radix + code
            got = _implied(d["table"][key * m:(key + 1) * m], m)
            assert got == pytest.approx([c / sum(counts) for c in counts], abs=1e-8)
        if "slices" in var:
            for b, sl in enumerate(var["slices"]):
                mv = d["slices_m"]
                got = _implied(d["slice_table"][b * mv:(b + 1) * mv], mv)
                n = sum(c for _, c in sl)
                assert got[:len(sl)] == pytest.approx([c / n for _, c in sl], abs=1e-8)
                assert d["slice_values"][b * mv:b * mv + len(sl)] == [v for v, _ in sl]


def test_parent_combinations_adult_lacks_back_off_to_fewer_parents(adult):
    rows = [r for r in adult if r.sex == "Male" or r.education != "Doctorate"]
    model = ds.fit_adult_model(rows)
    var = model["variables"]["occupation"]        # parents education, sex
    edu = model["variables"]["education"]["values"].index("Doctorate")
    female = model["variables"]["sex"]["values"].index("Female")
    assert [edu, female] not in [k for k, _ in var["counts"]]
    sizes = {"education": 16, "sex": 2}
    cond = am._conditional(var, sizes, len(var["values"]))
    doctors = [r.occupation for r in rows if r.education == "Doctorate"]
    assert cond[edu * 2 + female] == [doctors.count(v) for v in var["values"]]
    # a model fitted on few rows (bins nobody reached) still gives complete tables
    for d in am.model_arrays(ds.fit_adult_model(adult[:50])):
        assert len(d["table"]) == d["m"] * math.prod(d["radix"])
        if "slice_table" in d:
            bins = len(ds.MODEL_BINS[d["column"]][0]) - 1
            assert len(d["slice_table"]) == len(d["slice_values"]) == bins * d["slices_m"]


def test_fit_refuses_no_rows_and_values_outside_the_bins(adult):
    with pytest.raises(DatasetError, match="no rows") as e:
        ds.fit_adult_model([])
    assert e.value.sqlstate == "PA002"
    with pytest.raises(DatasetError, match="age = 12 lies outside the model's bins 17..90") as e:
        ds.fit_adult_model([adult[0]._replace(age=12)])
    assert e.value.sqlstate == "PA004"
    with pytest.raises(DatasetError, match="two education_num values"):
        ds.fit_adult_model([adult[0], adult[0]._replace(education_num=adult[0].education_num + 1)])


def test_a_model_file_of_another_chain_is_refused(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / ds.MODEL_FILE).write_text('{"format": 1, "chain": ["sex"], '
                                                   '"variables": {}}', encoding="utf-8")
    monkeypatch.setattr(am, "_data_file", lambda name: tmp_path / "data" / name)
    with pytest.raises(DatasetError, match="does not match this pganon's model chain") as e:
        ds.packaged_adult_model()
    assert e.value.sqlstate == "PA004" and "--write" in e.value.hint
    (tmp_path / "data" / ds.MODEL_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(DatasetError, match="cannot read adult_model.json"):
        ds.packaged_adult_model()


@pytest.mark.parametrize("rows, seed, message", [
    (0, 1, "rows must be a positive integer"), (None, 1, "rows must be"),
    (2**31, 1, "rows must be at most"), (10, -2**63 - 1, "seed must be a 64-bit integer"),
    (10, 1.0, "seed must be"), (10, False, "seed must be")])
def test_bad_rows_or_seed_refused_before_touching_the_database(rows, seed, message):
    with pytest.raises(DatasetError, match=message) as e:
        ds.make_adult_model(None, "t", rows if rows is not None else "10", seed)
    assert e.value.sqlstate == "PA002"


def test_registry_entry_and_attribute_file():
    d = ds.DATASETS["adult_model"]
    assert d.loader is ds.make_adult_model and d.rows_allowed and d.default_rows == 1_000_000
    assert d.default_table == "adult_model" and d.attributes == "adult_model.yaml"
    mod, base = load_attr("adult_model.yaml"), load_attr("adult.yaml")
    assert mod["dataset"] == mod["source"] == "adult_model"
    drop = lambda doc: {k: v for k, v in doc.items() if k not in ("dataset", "source")}
    assert drop(mod) == drop(base)
