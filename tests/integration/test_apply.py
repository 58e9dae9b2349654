"""`pganon apply FILE`: a declarative file sets everything in one transaction, or nothing."""

import json

import pytest

from helpers import create_table1
from pganon import catalog
from pganon.errors import PganonError
from pganon.install import ROOT


def test_apply_table1_yaml_declares_everything(conn, name):
    create_table1(conn, name)
    info = catalog.apply(conn, ROOT / "pganon/data/table1.yaml", source=name)
    assert info["security_levels"] == 10
    rows = conn.execute("SELECT column_name, role, kind FROM pganon.attributes WHERE dataset = 'table1' ORDER BY position").fetchall()
    assert [r[0] for r in rows] == ["ssn", "name", "age", "sex", "race", "zipcode", "physician", "disease"]
    assert dict((r[0], r[1]) for r in rows)["disease"] == "sensitive"


def test_apply_json_and_failure_leaves_nothing(conn, name, tmp_path):
    create_table1(conn, name)
    spec = {"dataset": name, "source": name, "key_column": "rid",
            "attributes": [{"column": "age", "role": "quasi", "kind": "numeric"},
                           {"column": "disease", "role": "sensitive"}],
            "security_levels": {"disease": {0: ["Flu"], 9: ["HIV"]}}}   # level 9 has no l
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(PganonError) as err:
        catalog.apply(conn, path)
    assert err.value.sqlstate == "PA003"
    assert conn.execute("SELECT count(*) FROM pganon.dataset WHERE name = %s", (name,)).fetchone()[0] == 0
    spec["security_levels"]["disease"] = {0: ["Flu"], 2: ["HIV"]}
    path.write_text(json.dumps(spec))
    assert catalog.apply(conn, path)["security_levels"] == 2


def test_apply_rejects_unknown_keys(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("dataset: a\nsource: b\nkey_column: id\nattribute: []\n")
    with pytest.raises(PganonError, match=r"x.yaml:4: unknown key 'attribute' \(did you mean 'attributes'\?\)") as e:
        catalog.read_spec(path)
    assert e.value.sqlstate == "PA002"


def test_apply_sets_the_policy_and_a_bad_policy_leaves_nothing(conn, name, tmp_path):
    create_table1(conn, name)
    base = {"dataset": name, "source": name, "key_column": "rid",
            "attributes": [{"column": "age", "role": "quasi", "kind": "numeric"},
                           {"column": "disease", "role": "sensitive"}],
            "security_levels": {"disease": {0: ["Flu"], 1: ["Pneumonia", "Gastritis"], 2: ["HIV", "Cancer"]}}}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(dict(base, policy={"prosecutor_risk_max": 0.1, "published_share": None})))
    assert catalog.apply(conn, path)["policy"] == {"prosecutor_risk_max": 0.1, "published_share": None}
    assert catalog.policy(conn, name) == {"prosecutor_risk_max": 0.1, "published_share": None}
    path.write_text(json.dumps(dict(base, policy={"k": 5})))
    with pytest.raises(PganonError) as err:
        catalog.apply(conn, path)
    assert err.value.sqlstate == "PA002" and "unknown policy key" in str(err.value)
    assert catalog.policy(conn, name) == {"prosecutor_risk_max": 0.1, "published_share": None}   # unchanged
    path.write_text(json.dumps(base))                         # no policy key: back to the promises
    catalog.apply(conn, path)
    assert catalog.policy(conn, name) == {}


@pytest.mark.parametrize("path", sorted((ROOT / "pganon/data").glob("*.yaml")), ids=lambda p: p.name)
def test_every_bundled_declaration_file_passes_the_schema(path):
    spec = catalog.read_spec(path)
    assert spec["dataset"] and spec["key_column"]
    for by_level in (spec.get("security_levels") or {}).values():
        assert all(isinstance(v, str) for values in by_level.values() for v in values)
