"""pganon_reader reads the stable release views and nothing else."""

import psycopg
import pytest

from helpers import create_table1, declare_table1, publish


@pytest.fixture
def released(conn, name):
    create_table1(conn, name)
    declare_table1(conn, name, name)
    rid = publish(conn, name, "mmdcf_mslf", promote=True)
    return name, rid


def _as_reader(conn, query):
    conn.execute("SET ROLE pganon_reader")
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.execute("RESET ROLE")


def test_reader_selects_the_stable_views(conn, released):
    ds, _ = released
    assert len(_as_reader(conn, f'SELECT * FROM pganon_release."{ds}_gt"')) == 9
    assert sum(r[-1] for r in _as_reader(conn, f'SELECT * FROM pganon_release."{ds}_st"')) == 9


@pytest.mark.parametrize("target", ["source", "map", "gt_table", "catalog", "releases", "publish", "verify"])
def test_reader_cannot_reach_anything_else(conn, released, target):
    ds, rid = released
    query = {
        "source": f'SELECT * FROM "{ds}"',
        "map": f"SELECT * FROM pganon_data.r{rid}_map",
        "gt_table": f"SELECT * FROM pganon_data.r{rid}_gt",
        "catalog": "SELECT * FROM pganon.security_level",
        "releases": "SELECT * FROM pganon.releases",
        "publish": f"SELECT pganon.publish('{ds}', 'mbf')",
        "verify": f"SELECT * FROM pganon.verify({rid})",
    }[target]
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _as_reader(conn, query)
