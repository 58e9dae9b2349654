"""Candidate -> current (issue 11, finding 8): a publish is invisible to analysts until promote;
promote switches the views in one step and only when the dataset's policy holds; going back is
a promote; nothing a refused promote touches changes."""

import psycopg
import pytest
from psycopg import sql

from helpers import create_table1, declare_table1, publish, relation


def _reader(conn, query, args=None):
    conn.execute("SET ROLE pganon_reader")
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.execute("RESET ROLE")


def _view(conn, ds, which="gt"):
    return sql.Identifier("pganon_release", f"{ds}_{which}")


def _status(conn, rid):
    return conn.execute("SELECT status FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0]


@pytest.fixture
def ds(conn, name):
    create_table1(conn, name)
    declare_table1(conn, name, name)
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0}')", (name,))
    return name


def test_a_candidate_is_invisible_to_the_reader_and_promote_switches_the_views(conn, ds):
    first = publish(conn, ds, "mondrian", k=3)
    assert _status(conn, first) == "candidate"
    assert conn.execute("SELECT to_regclass(%s)", (f"pganon_release.{ds}_gt",)).fetchone()[0] is None
    with pytest.raises(psycopg.errors.InsufficientPrivilege):   # nor through the release tables
        _reader(conn, sql.SQL("SELECT * FROM {}").format(sql.SQL(relation(conn, first))))
    conn.execute("SELECT pganon.promote(%s)", (first,))
    assert _status(conn, first) == "current"
    shown = _reader(conn, sql.SQL("SELECT * FROM {}").format(_view(conn, ds)))
    assert len(shown) == 9
    promise = _reader(conn, sql.SQL("SELECT method, model, promise FROM {}").format(_view(conn, ds, "promise")))
    assert promise[0][:2] == ("mondrian", "k_anonymity") and promise[0][2]["k"] == 3
    assert "seed" not in promise[0][2] and "numbering_seed" not in promise[0][2]

    second = publish(conn, ds, "mmdcf_mslf", min_group=1)          # other columns: a GT/ST release
    assert _reader(conn, sql.SQL("SELECT * FROM {}").format(_view(conn, ds))) == shown   # unchanged
    assert conn.execute("SELECT to_regclass(%s)", (f"pganon_release.{ds}_st",)).fetchone()[0] is None
    conn.execute("SELECT pganon.promote(%s)", (second,))
    assert [_status(conn, first), _status(conn, second)] == ["superseded", "current"]
    assert sum(r[-1] for r in _reader(conn, sql.SQL("SELECT * FROM {}").format(_view(conn, ds, "st")))) == 9
    rows = conn.execute("SELECT id, is_current FROM pganon.releases WHERE dataset = %s ORDER BY id", (ds,)).fetchall()
    assert rows == [(first, False), (second, True)]

    conn.execute("SELECT pganon.promote(%s)", (first,))                    # going back is a promote
    assert [_status(conn, first), _status(conn, second)] == ["current", "superseded"]
    assert sorted(_reader(conn, sql.SQL("SELECT * FROM {}").format(_view(conn, ds)))) == sorted(shown)
    assert conn.execute("SELECT to_regclass(%s)", (f"pganon_release.{ds}_st",)).fetchone()[0] is None


def test_a_refused_promote_changes_nothing_and_names_the_figures(conn, ds):
    ok = publish(conn, ds, "mondrian", k=3, promote=True)
    before = sorted(conn.execute(sql.SQL("SELECT * FROM {}").format(_view(conn, ds))).fetchall())
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0, \"prosecutor_risk_max\": 0.4}')", (ds,))
    weak = publish(conn, ds, "mondrian", k=2)
    failing = conn.execute("SELECT measure, value, threshold FROM pganon.risk(%s) WHERE NOT passed", (weak,)).fetchall()
    assert failing == [("prosecutor_risk_max", 0.5, 0.4)]
    with pytest.raises(psycopg.Error) as exc:
        conn.execute("SELECT pganon.promote(%s)", (weak,))
    assert exc.value.sqlstate == "PA009"
    assert "prosecutor_risk_max (records) = 0.5 > threshold 0.4" in exc.value.diag.message_primary
    assert [_status(conn, ok), _status(conn, weak)] == ["current", "candidate"]
    assert sorted(conn.execute(sql.SQL("SELECT * FROM {}").format(_view(conn, ds))).fetchall()) == before
    # the release keeps its own promise: a null policy entry switches the threshold off
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0, \"prosecutor_risk_max\": null}')", (ds,))
    assert conn.execute("SELECT passed FROM pganon.risk(%s) WHERE measure = 'prosecutor_risk_max'",
                        (weak,)).fetchone()[0] is None
    conn.execute("SELECT pganon.promote(%s)", (weak,))
    assert _status(conn, weak) == "current"


def test_publish_with_promote_rolls_back_whole_when_refused(conn, ds):
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0, \"prosecutor_risk_max\": 0.1}')", (ds,))
    n_rel = conn.execute("SELECT count(*) FROM pganon.release").fetchone()[0]
    n_tab = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'pganon_data'").fetchone()[0]
    with pytest.raises(psycopg.Error) as exc:
        publish(conn, ds, "mondrian", k=2, promote=True)
    assert exc.value.sqlstate == "PA009"
    assert conn.execute("SELECT count(*) FROM pganon.release").fetchone()[0] == n_rel
    assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'pganon_data'").fetchone()[0] == n_tab


def test_the_engines_own_numbering_is_a_fixture_option_promote_refuses(conn, ds):
    rid = publish(conn, ds, "mondrian", k=3, numbering="creation")
    assert conn.execute("SELECT params->>'numbering' FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0] == "creation"
    with pytest.raises(psycopg.Error) as exc:
        conn.execute("SELECT pganon.promote(%s)", (rid,))
    assert exc.value.sqlstate == "PA009" and "numbering" in exc.value.diag.message_primary
    with pytest.raises(psycopg.Error) as exc:
        publish(conn, ds, "mondrian", k=3, numbering="sorted")
    assert exc.value.sqlstate == "PA002"
    paper = publish(conn, ds, "rating", tie="first", eligibility="suppress")   # Rating's deterministic dealing
    with pytest.raises(psycopg.Error) as exc:
        conn.execute("SELECT pganon.promote(%s)", (paper,))
    assert exc.value.sqlstate == "PA009" and "tie = 'first'" in exc.value.diag.message_primary


def test_dropping_the_current_release_removes_the_views_without_falling_back(conn, ds):
    a = publish(conn, ds, "mondrian", k=3, promote=True)
    b = publish(conn, ds, "mondrian", k=2, promote=True)
    conn.execute("SELECT pganon.drop_release(%s)", (b,))
    for which in ("gt", "promise"):
        assert conn.execute("SELECT to_regclass(%s)", (f"pganon_release.{ds}_{which}",)).fetchone()[0] is None
    assert _status(conn, a) == "superseded"          # shown again only when the DBA promotes it
    conn.execute("SELECT pganon.promote(%s)", (a,))
    assert len(conn.execute(sql.SQL("SELECT * FROM {}").format(_view(conn, ds))).fetchall()) == 9


def test_one_current_release_per_dataset_whatever_writes_the_catalog(conn, ds):
    a = publish(conn, ds, "mondrian", k=3, promote=True)
    b = publish(conn, ds, "mondrian", k=3)
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("UPDATE pganon.release SET status = 'current' WHERE id = %s", (b,))
    assert _status(conn, a) == "current"


def test_unknown_policy_keys_and_values_are_refused(conn, ds):
    for bad, state in (('{"k": 3}', "PA002"), ('{"prosecutor_risk_max": 2}', "PA002"),
                       ('{"published_share": "half"}', "PA002")):
        with pytest.raises(psycopg.Error) as exc:
            conn.execute("SELECT pganon.set_policy(%s, %s::jsonb)", (ds, bad))
        assert exc.value.sqlstate == state
    with pytest.raises(psycopg.Error) as exc:
        conn.execute("SELECT pganon.set_policy('no such dataset', '{}')")
    assert exc.value.sqlstate == "PA001"


ROW_METHODS = {"mbf": {}, "msdcf": {}, "mmdcf": {}, "mbf_mslf": {}, "msdcf_mslf": {}, "mmdcf_mslf": {},
               "anatomy": {"l": 2}, "ck_anonymization": {"k": 2}, "pk_angelization": {"k": 2}, "rating": {}}


@pytest.mark.parametrize("method", sorted(ROW_METHODS))
def test_a_person_column_refuses_the_methods_that_count_rows(conn, name, method):
    """Finding 3: these methods group rows, not persons; with a person column declared they are
    refused before any work, naming the methods that protect persons."""
    create_table1(conn, name)
    declare_table1(conn, name, name)
    conn.execute("UPDATE pganon.dataset SET person_column = 'name' WHERE name = %s", (name,))
    n_rel = conn.execute("SELECT count(*) FROM pganon.release").fetchone()[0]
    with pytest.raises(psycopg.Error) as exc:
        publish(conn, name, method, **ROW_METHODS[method])
    assert exc.value.sqlstate == "PA003"
    assert 'person column "name"' in exc.value.diag.message_primary
    assert "mondrian" in exc.value.diag.message_hint and "danonyir" in exc.value.diag.message_hint
    assert conn.execute("SELECT count(*) FROM pganon.release").fetchone()[0] == n_rel


def _oid(conn, rel):
    return conn.execute("SELECT to_regclass(%s)::oid", (rel,)).fetchone()[0]


def test_a_promote_with_the_same_columns_replaces_rows_and_other_drops_leave_the_views(conn, ds):
    """Issue 12: the views are not replaced under readers. Promoting a release with the same
    columns changes only the rows they read; dropping a release that is not current never
    touches them."""
    a = publish(conn, ds, "mondrian", k=3, promote=True)
    views = {w: _oid(conn, f"pganon_release.{ds}_{w}") for w in ("gt", "promise")}
    b = publish(conn, ds, "mondrian", k=2)
    conn.execute("SELECT pganon.promote(%s)", (b,))
    assert {w: _oid(conn, f"pganon_release.{ds}_{w}") for w in views} == views        # the same views
    shown = sorted(conn.execute(sql.SQL("SELECT * FROM {}").format(_view(conn, ds))).fetchall())
    assert shown == sorted(conn.execute(sql.SQL("SELECT * FROM {}").format(sql.SQL(relation(conn, b)))).fetchall())
    assert conn.execute(sql.SQL("SELECT promise->>'k' FROM {}").format(_view(conn, ds, "promise"))).fetchone()[0] == "2"
    conn.execute("SELECT pganon.drop_release(%s)", (a,))                           # not current
    assert {w: _oid(conn, f"pganon_release.{ds}_{w}") for w in views} == views
    assert sorted(conn.execute(sql.SQL("SELECT * FROM {}").format(_view(conn, ds))).fetchall()) == shown


def _forge(conn, rid, suffix, target):
    """A release row copied from `rid`, its relations named as pganon names them for its own id
    except `suffix`, which names `target`: what a role with write access to the catalog could
    insert."""
    return conn.execute(
        "WITH n AS (SELECT nextval('pganon.release_id_seq') AS id) "
        "INSERT INTO pganon.release (id, dataset_id, method, params, engine_version, layout, source_rows, "
        "published_rows, suppressed_rows, groups, metrics) "
        "SELECT n.id, dataset_id, method, params, engine_version, jsonb_set(layout, '{relations}', "
        "  (SELECT jsonb_object_agg(k, CASE WHEN k = %s THEN %s::text ELSE format('pganon_data.r%%s_%%s', n.id, k) END) "
        "     FROM jsonb_object_keys(layout->'relations') k)), "
        "source_rows, published_rows, suppressed_rows, groups, metrics FROM pganon.release r, n WHERE r.id = %s "
        "RETURNING id", (suffix, target, rid)).fetchone()[0]


@pytest.mark.parametrize("suffix", ["gt", "map"])
def test_a_forged_release_cannot_make_drop_release_or_promote_touch_an_unrelated_table(conn, ds, suffix):
    """Why 2: a forged release row made a superuser's drop_release drop an unrelated table. A
    release's relations are only ever pganon_data.r<its id>_<suffix>, ordinary tables."""
    conn.execute(f'CREATE TABLE "{ds}_precious" (x int)')
    conn.execute(f'INSERT INTO "{ds}_precious" VALUES (1)')
    real = publish(conn, ds, "mondrian", k=3)
    forged = _forge(conn, real, suffix, f'public."{ds}_precious"')
    for call in ("drop_release", "promote"):
        with pytest.raises(psycopg.Error) as exc:
            conn.execute(f"SELECT pganon.{call}(%s)", (forged,))
        assert exc.value.sqlstate == "PA004", call
        assert f'names public."{ds}_precious" as its {suffix} relation' in exc.value.diag.message_primary
    assert conn.execute(f'SELECT x FROM "{ds}_precious"').fetchall() == [(1,)]
    assert _status(conn, forged) == "candidate"
    assert conn.execute("SELECT to_regclass(%s)", (f"pganon_release.{ds}_gt",)).fetchone()[0] is None
    # the real release's own tables under another release's name are refused too
    other = _forge(conn, real, suffix, relation(conn, real, suffix))
    with pytest.raises(psycopg.Error) as exc:
        conn.execute("SELECT pganon.drop_release(%s)", (other,))
    assert exc.value.sqlstate == "PA004"
    assert conn.execute("SELECT to_regclass(%s)", (relation(conn, real, suffix),)).fetchone()[0] is not None


def test_a_relation_squatting_a_view_name_is_refused(conn, ds, name):
    """Another role's relation under the name of a dataset's view is never shown nor written."""
    role = f"squat_{name}"
    conn.execute(f"CREATE ROLE {role}")
    try:
        conn.execute(f'CREATE VIEW pganon_release."{ds}_gt" AS SELECT 1 AS x')
        conn.execute(f'ALTER VIEW pganon_release."{ds}_gt" OWNER TO {role}')
        rid = publish(conn, ds, "mondrian", k=3)
        with pytest.raises(psycopg.Error) as exc:
            conn.execute("SELECT pganon.promote(%s)", (rid,))
        assert exc.value.sqlstate == "PA002" and f"belongs to role {role}" in exc.value.diag.message_primary
        assert _status(conn, rid) == "candidate"
        assert conn.execute(f'SELECT * FROM pganon_release."{ds}_gt"').fetchall() == [(1,)]
    finally:
        conn.execute(f'DROP VIEW IF EXISTS pganon_release."{ds}_gt"')
        conn.execute(f"DROP ROLE {role}")


def test_verify_reads_the_source_as_it_is_now(conn, ds):
    """Publish verifies against its snapshot; pganon.verify later checks the live source, so a
    row written since makes the checks that compare with the source fail (the release is what
    it was)."""
    rid = publish(conn, ds, "mondrian", k=3)
    assert all(p for _, p, _ in conn.execute("SELECT * FROM pganon.verify(%s)", (rid,)))
    conn.execute(f'CREATE TABLE "{ds}_copy" AS TABLE "{ds}"')
    conn.execute(f'DELETE FROM "{ds}" WHERE rid = (SELECT min(rid) FROM "{ds}")')
    failed = {c for c, p, _ in conn.execute("SELECT * FROM pganon.verify(%s)", (rid,)) if not p}
    assert "partition" in failed
    assert all(p for _, p, _ in conn.execute("SELECT * FROM pganon._verify_release(%s, %s::regclass)",
                                             (rid, f'"{ds}_copy"')))


def test_views_made_before_stable_tables_are_rebuilt_by_the_next_promote(conn, ds):
    """A database upgraded from issue 11 has views reading the current release's own tables;
    the next promote rebuilds them over the stable tables, and dropping that release works."""
    old = publish(conn, ds, "mondrian", k=3)
    conn.execute("UPDATE pganon.release SET status = 'current' WHERE id = %s", (old,))
    for w in ("gt", "promise"):
        conn.execute(sql.SQL("CREATE VIEW {} AS SELECT * FROM {}").format(
            _view(conn, ds, w), sql.SQL(relation(conn, old, w))))
    new = publish(conn, ds, "mondrian", k=2)
    conn.execute("SELECT pganon.promote(%s)", (new,))
    assert sorted(conn.execute(sql.SQL("SELECT * FROM {}").format(_view(conn, ds))).fetchall()) == \
        sorted(conn.execute(sql.SQL("SELECT * FROM {}").format(sql.SQL(relation(conn, new)))).fetchall())
    conn.execute("SELECT pganon.drop_release(%s)", (old,))                         # nothing reads it now
    conn.execute("SELECT pganon.drop_release(%s)", (new,))
    for w in ("gt", "promise"):
        assert _oid(conn, f"pganon_release.{ds}_{w}") is None
    assert conn.execute("SELECT count(*) FROM pg_class WHERE relnamespace = 'pganon_data'::regnamespace "
                        "AND relname LIKE %s", (f"d{_dataset_id(conn, ds)}\\_%",)).fetchone()[0] == 0


def _dataset_id(conn, ds):
    return conn.execute("SELECT id FROM pganon.dataset WHERE name = %s", (ds,)).fetchone()[0]
