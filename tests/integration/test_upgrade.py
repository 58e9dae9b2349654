"""Upgrades (issue 12, item 6; "Why" 8): released migrations never change, and every catalog state
an install could have left (tests/fixtures/catalog_states, one pg_dump per state, see
migrations/README.md) upgrades through today's `install` to a catalog identical to a fresh
install's, keeps its datasets and releases, and stays usable."""

import hashlib
import re
import subprocess
from pathlib import Path

import psycopg
import pytest

from helpers import publish
from pganon import install
from pganon.server import PG_BIN

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ROOT / "migrations" / "versions"
STATES = ROOT / "tests" / "fixtures" / "catalog_states"

# sha256 of every released migration (line endings normalized). A new migration adds its line
# here once released; a released one never changes: write a new revision instead.
RELEASED = {
    "0001_catalog.py": "741886b8f4ef8a3a49f73c1c247983cf63fb31381db07e6cbd97126e4995ddec",
    "0002_sa_linking.py": "b482623aee363523b2e844e2cd3378e659a225665b3e8f59d62a23fed306e1e2",
    "0003_hierarchy.py": "173dbede392d3014a65993bf1094d505dcced4a7a9bdb399b5e343c29e54f092",
    "0004_semantic_rule.py": "6032db2b0673b584486b6403ffc1d88b20d9022b1670112564d17c9794fef2b3",
    "0005_candidate_promote.py": "d3cd9940d0c4d2eed31b516b16d9390e223d3fe3c4449d991b7bccaa056f68e1",
    "0006_dataset_owner.py": "f65250eac9b013309e50b717c2a4ae147053c140702c941a7804158b6a201103",
    "0007_security_level_hash_key.py": "aa7cd07878f26a06c9397e4601a0bb2fa8e648806e045708775a89e0739057ed",
    "0008_attribute_default_level.py": "586680384a66920259372b5d7a846be92bfc909e613c25a0066dcfe99d47b0a3",
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def test_released_migrations_are_frozen():
    found = {p.name: _sha(p) for p in sorted(VERSIONS.glob("*.py"))}
    changed = [n for n, h in RELEASED.items() if found.get(n) != h]
    assert changed == [], f"released migrations changed or removed: {changed}; add a new revision instead"
    new = [f'"{n}": "{h}",' for n, h in found.items() if n not in RELEASED]
    assert new == [], "new migrations: add their lines to RELEASED in this test:\n" + "\n".join(new)


def _dump(dsn: str) -> str:
    """The catalog as pg_dump sees it: schema pganon whole, and the two release schemas
    themselves (comments, grants), not the release relations in them (users' data)."""
    out = subprocess.run(
        [str(PG_BIN / "pg_dump"), "--schema-only", "--no-owner", "-d", dsn, "-n", "pganon", "-n", "pganon_data",
         "-n", "pganon_release", "--exclude-table=pganon_data.*", "--exclude-table=pganon_release.*"],
        check=True, capture_output=True, text=True).stdout
    return "\n".join(line for line in out.splitlines() if line and not line.startswith(("--", "\\restrict", "\\unrestrict")))


@pytest.fixture
def fresh_catalog(make_db):
    """A fresh install's catalog, made next to each upgrade (sql/ may change between tests)."""
    dsn = make_db("upg_fresh")
    install.install(dsn)
    return _dump(dsn)


def _restore(dsn: str, state: Path) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:   # what the dump takes for granted
        c.execute("CREATE EXTENSION IF NOT EXISTS plpython3u")
        install._ensure_roles(c)
    subprocess.run([str(PG_BIN / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", str(state)],
                   check=True, capture_output=True, text=True)


def _states():
    return sorted(STATES.glob("*.sql"))


def test_every_catalog_state_has_a_dump():
    """The six states of migrations/README.md (0001 as first released, then one per revision), and
    0008 as the last flat engine left it (issue 14 moved the engine into packages)."""
    assert [p.stem for p in _states()] == ["0001", "0001_first", "0002", "0003", "0004", "0005", "0008"]


@pytest.mark.parametrize("state", _states(), ids=lambda p: p.stem)
def test_upgrade_from_each_catalog_state_equals_a_fresh_install(state, make_db, fresh_catalog):
    header = state.read_text(encoding="utf-8").splitlines()[:2]
    revision = re.search(r"Alembic revision (\d{4})", header[0]).group(1)
    releases = int(re.search(r"and (\d+) release", header[1]).group(1))
    dsn = make_db("upg")
    _restore(dsn, state)

    first = install.install(dsn)
    assert first["catalog_revision_before"] == revision
    assert ("repaired" in first) == (state.stem == "0001_first")
    assert _dump(dsn) == fresh_catalog
    second = install.install(dsn)                       # idempotent: install twice = once
    assert second["catalog_revision_before"] == second["catalog_revision"] and "repaired" not in second
    assert _dump(dsn) == fresh_catalog

    with psycopg.connect(dsn, autocommit=True) as c:    # the user's catalog survived, and works
        assert c.execute("SELECT count(*) FROM pganon.attribute").fetchone()[0] == 8
        assert c.execute("SELECT count(*) FROM pganon.security_level").fetchone()[0] == 10
        statuses = [r[0] for r in c.execute("SELECT status FROM pganon.release ORDER BY id")]
        assert statuses == (["superseded", "current"] if releases == 2 else [])
        if releases:
            assert c.execute("SELECT count(*) FROM pganon_release.table1_gt").fetchone()[0] > 0
        if state.stem == "0008":   # releases the flat engine made verify under the packaged one
            old = [r[0] for r in c.execute("SELECT id FROM pganon.release ORDER BY id")]
            assert len(old) == 2
            for rid in old:
                failed = c.execute('SELECT "check", detail FROM pganon.verify(%s) WHERE NOT passed', (rid,)).fetchall()
                assert failed == [], (rid, failed)
        rid = publish(c, "table1", "mbf_mslf", promote=True)
        assert c.execute("SELECT status FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0] == "current"
        assert all(p for _, p, _ in c.execute('SELECT "check", passed, detail FROM pganon.verify(%s)', (rid,)))
        assert c.execute("SELECT count(*) FROM pganon_release.table1_gt").fetchone()[0] > 0


def test_first_catalog_state_uninstalls_without_upgrading(make_db):
    """A catalog of the first commits (no created_plpython) can also just be removed."""
    dsn = make_db("upg")
    _restore(dsn, STATES / "0001_first.sql")
    assert install.uninstall(dsn)["uninstalled"] is True
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pganon%'").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM pg_extension WHERE extname = 'plpython3u'").fetchone()[0] == 1
