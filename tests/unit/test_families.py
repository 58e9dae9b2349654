"""The family interface (release/families.py): every methods/ subpackage is registered once and
its `family` module provides every step of `Family` with the same parameters, so the pipeline
can call any family the same way and a new method cannot be half-wired."""

import inspect
import pkgutil

import pytest

import pganon_engine.methods
from pganon_engine.release import families, pipeline
from pganon_engine.release.families import FAMILIES, REGISTRY, Family

STEPS = ["parse_params", "build", "layout", "recorded_params", "measure"]


def test_every_methods_subpackage_is_registered_once():
    subpackages = {m.name for m in pkgutil.iter_modules(pganon_engine.methods.__path__) if m.ispkg}
    registered = [f.__name__.split(".")[2] for f in REGISTRY]
    assert sorted(registered) == sorted(subpackages)
    assert all(f.__name__.endswith(".family") for f in REGISTRY)


@pytest.mark.parametrize("family", REGISTRY, ids=lambda f: f.__name__.split(".")[2])
def test_family_satisfies_the_protocol(family):
    assert isinstance(family, Family)
    assert isinstance(family.PROTECTS_PERSONS, bool)
    for step in STEPS:
        want = [p for p in inspect.signature(getattr(Family, step)).parameters if p != "self"]
        got = list(inspect.signature(getattr(family, step)).parameters)
        assert got == want, f"{family.__name__}.{step}{tuple(got)} differs from Family.{step}{tuple(want)}"


def test_each_method_has_exactly_one_family():
    counted = [m for f in REGISTRY for m in f.METHODS]
    assert len(counted) == len(set(counted)) == len(FAMILIES)


def test_a_family_missing_a_step_is_not_a_family():
    class Half:
        METHODS = ("x",)
        PROTECTS_PERSONS = False

        def parse_params(self, method, params, ds):
            return {}

    assert not isinstance(Half(), Family)


def test_the_pipeline_names_no_method():
    """Adding a method touches the registry, never the pipeline."""
    source = inspect.getsource(pipeline)
    for method in FAMILIES:
        assert f'"{method}"' not in source and f"'{method}'" not in source
    assert not [line for line in source.splitlines() if "pganon_engine.methods" in line]
    assert families.person_aware_methods() == sorted(m for m, f in FAMILIES.items() if f.PROTECTS_PERSONS)
