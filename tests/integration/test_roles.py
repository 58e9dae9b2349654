"""Delegation without escalation (issue 12, item 2; "Why" 2 and 3): members of pganon_admin
manage their own datasets on tables they can read, see nothing of other admins', never touch the
engine's code, and nobody's code runs with somebody else's rights. Every role here logs in for
real (no SET ROLE from a superuser session)."""

import uuid

import psycopg
import pytest
from psycopg import sql

from helpers import create_table1, declare_table1, publish


@pytest.fixture
def cluster(server_dsn, fresh_dsn):
    """Login roles made for one test (dropped after it): {name: dsn to the fresh database}."""
    made, dsns = [], {}

    def role(label, admin=True):
        name, pw = f"{label}_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
        with psycopg.connect(server_dsn, autocommit=True) as c:
            c.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(name), sql.Literal(pw)))
            if admin:
                c.execute(sql.SQL("GRANT pganon_admin TO {}").format(sql.Identifier(name)))
        made.append(name)
        dsns[name] = psycopg.conninfo.make_conninfo(fresh_dsn, user=name, password=pw)
        return name

    yield role, dsns
    with psycopg.connect(fresh_dsn, autocommit=True) as c:
        for name in made:
            c.execute(sql.SQL("DROP OWNED BY {} CASCADE").format(sql.Identifier(name)))
    with psycopg.connect(server_dsn, autocommit=True) as c:
        for name in made:
            c.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


def _as(dsn):
    return psycopg.connect(dsn, autocommit=True)


def _state(conn, name):
    return conn.execute("SELECT status FROM pganon.releases WHERE id = %s", (name,)).fetchone()


def test_an_admin_with_select_only_runs_the_quick_start(conn, fresh_dsn, cluster):
    role, dsns = cluster
    admin, analyst = role("adm"), role("ana", admin=False)
    with _as(fresh_dsn) as su:
        create_table1(su, "patients")                        # owned by the superuser
        su.execute(sql.SQL("GRANT SELECT ON patients TO {}").format(sql.Identifier(admin)))
    with _as(dsns[admin]) as a:
        declare_table1(a, "patients", "patients")
        a.execute("SELECT pganon.set_policy('patients', '{\"published_share\": 0}')")
        rid = publish(a, "patients", "mmdcf_mslf")
        assert all(p for _, p, _ in a.execute("SELECT * FROM pganon.verify(%s)", (rid,)))
        assert a.execute("SELECT count(*) FROM pganon.risk(%s)", (rid,)).fetchone()[0] > 5
        a.execute("SELECT pganon.promote(%s)", (rid,))
        assert a.execute("SELECT status FROM pganon.releases WHERE id = %s", (rid,)).fetchone()[0] == "current"
        a.execute("SELECT pganon.grant_reader(%s)", (analyst,))            # no superuser needed
        owner = a.execute("SELECT owner::text FROM pganon.dataset WHERE name = 'patients'").fetchone()[0]
        assert owner == admin
    with _as(dsns[analyst]) as r:
        assert sum(row[-1] for row in r.execute('SELECT * FROM pganon_release."patients_st"')) == 9
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            r.execute("SELECT * FROM patients")
    with _as(dsns[admin]) as a:
        a.execute("SELECT pganon.revoke_reader(%s)", (analyst,))
    with _as(dsns[analyst]) as r, pytest.raises(psycopg.errors.InsufficientPrivilege):
        r.execute('SELECT * FROM pganon_release."patients_st"')


def test_admins_see_and_touch_only_their_own_datasets(conn, fresh_dsn, cluster):
    role, dsns = cluster
    a_role, b_role = role("adma"), role("admb")
    with _as(fresh_dsn) as su:
        create_table1(su, "t_a")
        su.execute(sql.SQL("GRANT SELECT ON t_a TO {}, {}").format(sql.Identifier(a_role), sql.Identifier(b_role)))
    with _as(dsns[a_role]) as a:
        declare_table1(a, "ds_a", "t_a")
        a.execute("SELECT pganon.set_policy('ds_a', '{\"published_share\": 0}')")
        rid = publish(a, "ds_a", "mondrian", k=3, promote=True)
    with _as(dsns[b_role]) as b:
        for q in ("SELECT count(*) FROM pganon.dataset", "SELECT count(*) FROM pganon.security_level",
                  "SELECT count(*) FROM pganon.release", "SELECT count(*) FROM pganon.releases",
                  "SELECT count(*) FROM pganon.attributes", "SELECT count(*) FROM pganon.release_risk"):
            assert b.execute(q).fetchone()[0] == 0, q                  # another admin's rows: invisible
        for q, state in (("SELECT pganon.publish('ds_a', 'mondrian', '{\"k\": 3}')", "PA001"),
                         ("SELECT pganon.set_security_level('ds_a', 'disease', 'HIV', 0)", "PA001"),
                         (f"SELECT pganon.drop_release({rid})", "PA001"),
                         ("SELECT pganon.register_dataset('ds_a', 't_a', 'rid')", "PA002"),
                         ("SELECT pganon.hierarchy_csv('ds_a', 'age')", "PA001")):
            with pytest.raises(psycopg.Error) as exc:
                b.execute(q)
            assert exc.value.sqlstate == state, (q, exc.value)
        assert b.execute("UPDATE pganon.dataset SET key_column = 'ssn' WHERE name = 'ds_a'").rowcount == 0
        assert b.execute(f"DELETE FROM pganon.release WHERE id = {rid}").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):   # A's release tables are A's
            b.execute(f"DROP TABLE pganon_data.r{rid}_gt")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):   # and so are A's views
            b.execute('CREATE OR REPLACE VIEW pganon_release."ds_a_gt" AS SELECT 1 AS x')
    with _as(dsns[a_role]) as a:                                     # A's dataset is untouched
        assert a.execute("SELECT key_column FROM pganon.dataset WHERE name = 'ds_a'").fetchone()[0] == "rid"
        assert a.execute("SELECT status FROM pganon.release WHERE id = %s", (rid,)).fetchone()[0] == "current"


def test_an_admin_cannot_declare_what_it_cannot_read(conn, fresh_dsn, cluster):
    role, dsns = cluster
    admin = role("adm")
    with _as(fresh_dsn) as su:
        create_table1(su, "secret")
        su.execute(sql.SQL("GRANT SELECT (rid, age, sex, disease) ON secret TO {}").format(sql.Identifier(admin)))
        create_table1(su, "closed")
    with _as(dsns[admin]) as a:
        with pytest.raises(psycopg.Error) as exc:
            a.execute("SELECT pganon.register_dataset('c', 'closed', 'rid')")
        assert exc.value.sqlstate == "PA002" and "cannot read" in exc.value.diag.message_primary
        a.execute("SELECT pganon.register_dataset('s', 'secret', 'rid')")   # the whole table is not readable
    # ... but the engine never reads more than the declared columns the admin can read
    with _as(dsns[admin]) as a:
        with pytest.raises(psycopg.Error) as exc:
            a.execute("SELECT pganon.set_attribute('s', 'zipcode', 'quasi')")
        assert exc.value.sqlstate == "PA002" and 'column "zipcode"' in exc.value.diag.message_primary
        a.execute("SELECT pganon.set_attribute('s', 'age', 'quasi')")


def test_the_engine_code_and_installation_are_read_only_to_admins(conn, fresh_dsn, cluster):
    role, dsns = cluster
    admin = role("adm")
    with _as(dsns[admin]) as a:
        assert a.execute("SELECT count(*) FROM pganon._engine_module").fetchone()[0] > 10   # loadable
        for q in ("UPDATE pganon._engine_module SET source = 'import os' WHERE name = 'pganon_engine.release.pipeline'",
                  "INSERT INTO pganon._engine_module VALUES ('pganon_engine.evil', false, 'x = 1')",
                  "UPDATE pganon._installation SET engine_hash = 'x'",
                  "CREATE OR REPLACE FUNCTION pganon.version() RETURNS text LANGUAGE sql AS $$SELECT 'x'$$"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                a.execute(q)


def test_a_superuser_acting_on_an_admins_dataset_never_runs_its_code(conn, fresh_dsn, cluster):
    """'Why' 3: a function inside a registered view ran as postgres. Now whoever publishes, the
    view's code runs as the dataset's owner, which may not escalate."""
    role, dsns = cluster
    admin, other = role("adm"), role("oth")
    with _as(fresh_dsn) as su:
        create_table1(su, "base")
        su.execute(sql.SQL("GRANT SELECT ON base TO {}, {}").format(sql.Identifier(admin), sql.Identifier(other)))
        su.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}, {}").format(sql.Identifier(admin), sql.Identifier(other)))
    trap = """
        CREATE TABLE public.{log} (who text);
        GRANT INSERT ON public.{log} TO PUBLIC;
        CREATE FUNCTION public.{fn}(x text) RETURNS text LANGUAGE plpgsql VOLATILE AS $f$
        BEGIN
          INSERT INTO public.{log} VALUES (current_user);
          BEGIN EXECUTE 'ALTER ROLE {me} CREATEROLE'; EXCEPTION WHEN others THEN NULL; END;
          RETURN x;
        END $f$;
        CREATE VIEW public.{view} AS SELECT rid, ssn, name, age, sex, race, zipcode, public.{fn}(physician) AS physician,
               disease FROM public.base;"""
    with _as(dsns[admin]) as a:
        a.execute(trap.format(log="alog", fn="afn", me=admin, view="aview"))
        declare_table1(a, "trapped", "aview")
        a.execute("SELECT pganon.set_policy('trapped', '{\"published_share\": 0}')")
    with _as(dsns[other]) as o:
        o.execute(trap.format(log="olog", fn="ofn", me=other, view="oview"))
        o.execute(sql.SQL("GRANT SELECT ON public.oview TO {}").format(sql.Identifier(admin)))
    with _as(fresh_dsn) as su:
        rid = publish(su, "trapped", "mondrian", k=3)               # a superuser publishes A's dataset
        su.execute("SELECT pganon.assess(%s)", (rid,))
        su.execute("SELECT pganon.promote(%s)", (rid,))
        assert all(p for _, p, _ in su.execute("SELECT * FROM pganon.verify(%s)", (rid,)))
        again = publish(su, "trapped", "mondrian", k=2)
        su.execute("SELECT pganon.drop_release(%s)", (again,))
        assert {w for (w,) in su.execute("SELECT who FROM public.alog")} == {admin}   # never postgres
        assert su.execute("SELECT current_user").fetchone()[0] == "postgres"          # and back to itself
        assert not su.execute("SELECT rolcreaterole FROM pg_roles WHERE rolname = %s", (admin,)).fetchone()[0]
    with _as(dsns[admin]) as a:                                    # a view owned by another role: refused
        with pytest.raises(psycopg.Error) as exc:             # refused when declared, before any publish
            declare_table1(a, "borrowed", "public.oview")
        assert exc.value.sqlstate == "PA002" and "is a view owned by" in exc.value.diag.message_primary
    with _as(fresh_dsn) as su:
        assert su.execute("SELECT count(*) FROM public.olog").fetchone()[0] == 0       # its code never ran
