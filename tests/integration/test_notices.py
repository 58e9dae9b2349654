"""No internal NOTICE reaches the user (issue 13, item 6): psql prints every NOTICE the server
sends, and "table "_pganon_gflags" does not exist, skipping" from an internal DROP ... IF EXISTS
looks like a problem. Install (fresh and re-run over an install), a publish of every family,
promote, verify, risk, compare and drop_release send none; with `SET pganon.progress = on` they
send only pganon's own "pganon: <phase> ..." lines."""

import json

import psycopg
import pytest

from pganon import install
from test_names_values import BASE, METHODS, make_dataset, prepare

# one method per family, and those whose work tables differ (gaa: the covered view of hierarchy
# labels; geneir and one_m: the person family's class labels and generalized sets)
FAMILIES = ["mbf_mslf", "anatomy", "ck_anonymization", "mondrian", "gaa", "semantic", "rating", "danonyir",
            "geneir", "one_m_generalization"]


def _listen(conn, seen):
    conn.add_notice_handler(lambda d: seen.append((d.severity_nonlocalized, d.message_primary)))


def test_install_fresh_and_again_sends_no_notice(make_db, monkeypatch):
    """Install's own connection, fresh and over an existing install (upgrade-time drops of old
    functions included)."""
    seen = []
    made = install.connect

    def connect(*args, **kwargs):
        conn = made(*args, **kwargs)
        _listen(conn, seen)
        return conn
    monkeypatch.setattr(install, "connect", connect)
    dsn = make_db("notices")
    install.install(dsn)
    fresh = list(seen)
    seen.clear()
    install.install(dsn)
    assert {"fresh": fresh, "again": seen} == {"fresh": [], "again": []}


@pytest.mark.parametrize("progress", ["off", "on"])
def test_publish_promote_verify_risk_drop_send_only_progress_notices(conn, progress):
    """Every family, twice in one transaction (an earlier publish's work tables are there) and
    once more in the next: no NOTICE but pganon's progress lines, and none with progress off."""
    seen = []
    _listen(conn, seen)
    conn.execute(f"SET pganon.progress = {progress}")
    for method in FAMILIES:
        params, person, _ = METHODS[method]
        if method != "one_m_generalization":
            params = dict(params, queries=50)
        ds = make_dataset(conn, BASE, person)
        prepare(conn, method, ds, BASE)
        seen.clear()
        with conn.transaction():
            first = conn.execute("SELECT pganon.publish(%s, %s, %s::jsonb)", (ds, method, json.dumps(params))).fetchone()[0]
            conn.execute("SELECT pganon.publish(%s, %s, %s::jsonb)", (ds, method, json.dumps(params)))
        rid = conn.execute("SELECT pganon.publish(%s, %s, %s::jsonb, true)", (ds, method, json.dumps(params))).fetchone()[0]
        conn.execute("SELECT pganon.promote(%s)", (first,))
        conn.execute("SELECT * FROM pganon.verify(%s)", (rid,)).fetchall()
        conn.execute("SELECT * FROM pganon.risk(%s)", (rid,)).fetchall()
        conn.execute("SELECT pganon.compare(ARRAY[%s, %s]::bigint[])", (first, rid))
        conn.execute("SELECT pganon.drop_release(%s)", (rid,))
        conn.execute("SELECT pganon.drop_release(%s)", (first,))
        other = [m for m in seen if not m[1].startswith("pganon: ")]
        assert other == [], (method, other)
        progress_lines = [m for m in seen if m[1].startswith("pganon: ")]
        if progress == "off":
            assert progress_lines == [], (method, progress_lines)
        else:
            assert ("NOTICE", "pganon: snapshot ...") in progress_lines, (method, progress_lines)
