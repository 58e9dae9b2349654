"""No release changes (issue 15): every case of tests/release_digests.py gives, with this
checkout's engine, the release (relations in their order, map, counts, verify, risk) or the
refusal that the engine before the performance work gave (tests/fixtures/release_digests.json,
made by tests/fixtures/make_release_digests.py)."""

import json
from pathlib import Path

import psycopg
import pytest

import release_digests

EXPECTED = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "release_digests.json").read_text())


@pytest.fixture(scope="module")
def outcomes(make_db):
    from pganon import install
    dsn = make_db("digests")
    install.install(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        release_digests.setup(conn)
        return {case: release_digests.outcome(conn, dataset, method, params)
                for case, dataset, method, params in release_digests.cases()}


def test_the_fixture_covers_every_case_and_every_method():
    cases = [c for c, *_ in release_digests.cases()]
    assert sorted(cases) == sorted(EXPECTED["cases"])
    from pganon.cli.parser import methods
    assert {m for _, _, m, _ in release_digests.cases()} == set(methods())


@pytest.mark.parametrize("case", [c for c, *_ in release_digests.cases()])
def test_same_release_as_before(outcomes, case):
    want, got = EXPECTED["cases"][case], outcomes[case]
    assert got.keys() == want.keys()
    assert {k: v for k, v in got.items() if want[k] != v} == {}, f"differs from the engine at {EXPECTED['engine']}"
