"""Publish, promote and readers at the same time (issue 12, "Why" 4 and 5): per dataset one
publish, promote or drop_release at a time with a bounded wait; the views and the catalog agree
on the current release in every snapshot, GT and ST together; readers reading the views in any
order never deadlock a publish or promote; a reader's open transaction never makes production
writes to the source wait. Threads with their own connections, as separate sessions would be."""

from __future__ import annotations

import random
import threading
import time

import psycopg
import pytest
from psycopg import sql

from helpers import TABLE1_LEVELS

QIS = ("age", "sex", "race", "zipcode")
SAS = ("physician", "disease")
# every policy threshold off but the published share: these tests are about concurrency, and
# releases of the same rows promoted in turn would otherwise be refused for linkage
POLICY = '{"published_share": 0, "prosecutor_risk_max": null, "records_below_k": null, ' \
         '"attacker_confidence_max": null, "linkage": null, "composed_prosecutor_risk": null}'
LOCK_WAIT = 10.0           # pganon's default bound on a lock wait (pganon._lock_timeout_ms)


def make_dataset(conn, name, rows=400, person=None):
    """A Table-1-like source of `rows` rows (values of spec 000 Table 1, spread by a hash),
    declared with Table 1's security levels and a policy that only asks for rows. With
    `person`, also a column `person` (three records each, the same QIs) and a second dataset of
    that name over the same table, declaring it as the person column (one SA, disease)."""
    src = "(i + 2) / 3" if person else "i"
    conn.execute(sql.SQL("""
        CREATE TABLE {t} AS SELECT i AS rid, (i + 2) / 3 AS person, 20 + (hashint4({s}) & 65535) %% 50 AS age,
               (ARRAY['M', 'F'])[1 + (hashint4({s} + 1) & 1)] AS sex,
               (ARRAY['White', 'Black', 'Asian'])[1 + (hashint4({s} + 2) & 65535) %% 3] AS race,
               13000 + (hashint4({s} + 3) & 65535) %% 60 AS zipcode,
               (ARRAY['Anne', 'Bob', 'John', 'Mary', 'Sam'])[1 + (hashint4(i + 4) & 65535) %% 5] AS physician,
               (ARRAY['Flu', 'Pneumonia', 'Gastritis', 'HIV', 'Cancer'])[1 + (hashint4(i + 5) & 65535) %% 5] AS disease
          FROM generate_series(1, %s) i""").format(t=sql.Identifier(name), s=sql.SQL(src)), (rows,))
    conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (rid)").format(sql.Identifier(name)))
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid')", (name, name))
    for col in QIS:
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'quasi')", (name, col))
    for col in SAS:
        conn.execute("SELECT pganon.set_attribute(%s, %s, 'sensitive')", (name, col))
    for col, levels in TABLE1_LEVELS.items():
        for value, level in levels.items():
            conn.execute("SELECT pganon.set_security_level(%s, %s, %s, %s)", (name, col, value, level))
    conn.execute("SELECT pganon.set_delta(%s, 'physician')", (name,))     # (c,k), (p,k): the linking SA
    conn.execute("SELECT pganon.set_policy(%s, %s)", (name, POLICY))
    if person:
        conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'rid', person_column => 'person')",
                     (person, name))
        for col in QIS:
            conn.execute("SELECT pganon.set_attribute(%s, %s, 'quasi')", (person, col))
        conn.execute("SELECT pganon.set_attribute(%s, 'disease', 'sensitive')", (person,))
        conn.execute("SELECT pganon.set_policy(%s, %s)", (person, POLICY))


def _publish(conn, ds, promote=False, **params):
    import json
    params = {"min_group": 2, **params}
    return conn.execute("SELECT pganon.publish(%s, 'mmdcf_mslf', %s::jsonb, %s)",
                        (ds, json.dumps(params), promote)).fetchone()[0]


def _fingerprint(rel):
    """A statement part giving (rows, sum of row hashes) of a relation: equal for equal multisets."""
    return sql.SQL("(SELECT row(count(*), coalesce(sum(hashtext(x::text)), 0))::text FROM {} x)").format(rel)


def _view(ds, which):
    return sql.Identifier("pganon_release", f"{ds}_{which}")


def _release_rel(rid, which):
    return sql.Identifier("pganon_data", f"r{rid}_{which}")


def _connect(dsn):
    return psycopg.connect(dsn, autocommit=True)


class _Run:
    """Shared by the threads of one test: a stop flag and what went wrong."""

    def __init__(self):
        self.stop = threading.Event()
        self.errors = []
        self.lock = threading.Lock()

    def fail(self, what):
        with self.lock:
            self.errors.append(what)


def _reader(dsn, run, ds, order, stats):
    """Reads the views in a loop, in `order`, in one transaction each: READ COMMITTED in the
    given order (the shape that deadlocked promote), or REPEATABLE READ checking that the views
    hold exactly the current release of its snapshot, GT and ST together."""
    with _connect(dsn) as c:
        while not run.stop.is_set():
            try:
                if order == "rr":
                    with c.transaction():
                        c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                        rid = c.execute("SELECT r.id FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id "
                                        "WHERE d.name = %s AND r.status = 'current'", (ds,)).fetchone()[0]
                        time.sleep(random.random() * 0.05)     # a promote may commit meanwhile
                        shown = c.execute(sql.SQL("SELECT {}, {}").format(
                            _fingerprint(_view(ds, "gt")), _fingerprint(_view(ds, "st")))).fetchone()
                        truth = c.execute(sql.SQL("SELECT {}, {}").format(
                            _fingerprint(_release_rel(rid, "gt")), _fingerprint(_release_rel(rid, "st")))).fetchone()
                    if shown != truth:
                        run.fail(f"RR reader: views {shown} differ from current release {rid} {truth}")
                else:
                    with c.transaction():
                        for which in order:
                            c.execute(sql.SQL("SELECT count(*) FROM {}").format(_view(ds, which))).fetchone()
                            time.sleep(random.random() * 0.02)
                stats[order] = stats.get(order, 0) + 1
            except psycopg.Error as exc:
                run.fail(f"reader {order}: {exc.sqlstate} {exc}")
                return


def _admin(dsn, run, ds, seed, ops, outcomes):
    """Publishes and promotes in a random order: publish (promote in the same transaction or
    not), promote a release published by anyone, promote a superseded one (going back)."""
    rng = random.Random(seed)
    with _connect(dsn) as c:
        for _ in range(ops):
            op = rng.choice(["publish", "publish_promote", "promote", "promote"])
            t0 = time.monotonic()
            try:
                if op == "publish":
                    _publish(c, ds)
                elif op == "publish_promote":
                    _publish(c, ds, promote=True)
                else:
                    ids = [r[0] for r in c.execute(
                        "SELECT r.id FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id "
                        "WHERE d.name = %s AND r.status <> 'dropped'", (ds,))]
                    c.execute("SELECT pganon.promote(%s)", (rng.choice(ids),))
                outcomes.append((op, "ok", time.monotonic() - t0))
            except psycopg.Error as exc:
                outcomes.append((op, exc.sqlstate, time.monotonic() - t0))
                if exc.sqlstate != "PA011":          # a bounded wait that ran out is the only failure allowed
                    run.fail(f"{op}: {exc.sqlstate} {exc}")


def _current_matches_views(conn, ds):
    rid = conn.execute("SELECT r.id FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id "
                       "WHERE d.name = %s AND r.status = 'current'", (ds,)).fetchone()[0]
    shown = conn.execute(sql.SQL("SELECT {}, {}, {}").format(
        _fingerprint(_view(ds, "gt")), _fingerprint(_view(ds, "st")), _fingerprint(_view(ds, "promise")))).fetchone()
    truth = conn.execute(sql.SQL("SELECT {}, {}, {}").format(
        _fingerprint(_release_rel(rid, "gt")), _fingerprint(_release_rel(rid, "st")),
        _fingerprint(_release_rel(rid, "promise")))).fetchone()
    return shown == truth


def test_eight_sessions_publish_and_promote_while_readers_read_in_every_order(db_dsn, conn, name):
    make_dataset(conn, name)
    _publish(conn, name, promote=True)
    run, outcomes, stats = _Run(), [], {}
    readers = [threading.Thread(target=_reader, args=(db_dsn, run, name, order, stats))
               for order in (("gt", "st"), ("st", "gt"), "rr", "rr")]
    admins = [threading.Thread(target=_admin, args=(db_dsn, run, name, seed, 3, outcomes)) for seed in range(8)]
    for t in readers + admins:
        t.start()
    for t in admins:
        t.join(timeout=120)
    run.stop.set()
    for t in readers:
        t.join(timeout=30)
    assert run.errors == []
    assert len(outcomes) == 24
    ok = [o for o in outcomes if o[1] == "ok"]
    assert len(ok) >= 12, outcomes                                   # most of them went through
    slowest_publish = max(s for op, r, s in ok if op.startswith("publish"))
    # a wait is bounded: by the operations queued ahead (each at most the slowest) or by the timeout
    assert all(s < LOCK_WAIT + 2 * slowest_publish + 5 for _, _, s in outcomes), outcomes
    assert stats.get("rr", 0) > 10 and stats.get(("gt", "st"), 0) > 10 and stats.get(("st", "gt"), 0) > 10, stats
    assert conn.execute("SELECT count(*) FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id "
                        "WHERE d.name = %s AND r.status = 'current'", (name,)).fetchone()[0] == 1
    assert _current_matches_views(conn, name)
    # "Why" 4: dropping the release the views read failed (2BP01); no view reads a release's own
    # tables now, so every other release drops and the views stay as they are
    for (rid,) in conn.execute("SELECT r.id FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id "
                               "WHERE d.name = %s AND r.status <> 'current'", (name,)).fetchall():
        conn.execute("SELECT pganon.drop_release(%s)", (rid,))
    assert _current_matches_views(conn, name)


def test_first_publishes_of_a_new_dataset_in_parallel(db_dsn, conn, name):
    make_dataset(conn, name, rows=60)
    results, run = [], _Run()

    def first(seed):
        with _connect(db_dsn) as c:
            try:
                results.append(_publish(c, name, promote=seed % 2 == 0))
            except psycopg.Error as exc:
                run.fail(f"{exc.sqlstate} {exc}")

    threads = [threading.Thread(target=first, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert run.errors == [] and len(results) == 6
    statuses = dict(conn.execute("SELECT r.id, r.status FROM pganon.release r JOIN pganon.dataset d "
                                 "ON d.id = r.dataset_id WHERE d.name = %s", (name,)).fetchall())
    assert sorted(statuses) == sorted(results)
    assert sorted(statuses.values()).count("current") == 1
    assert _current_matches_views(conn, name)


def test_an_open_reader_never_makes_production_writes_wait(db_dsn, conn, name):
    """Why 5: an analyst's open transaction stalled publish at its last step while publish held
    SHARE on the source, so production writes waited. Now publish takes no lock on the source
    and a promote of a release with the same columns takes none a reader holds; a promote that
    must rebuild the views (other columns) waits for the reader at most lock_timeout and fails
    with PA011, while writes to the source still go through."""
    make_dataset(conn, name, rows=3000)
    first = _publish(conn, name, promote=True)
    run, latencies = _Run(), []

    def writer():
        with _connect(db_dsn) as c:
            i = 0
            while not run.stop.is_set():
                i += 1
                t0 = time.monotonic()
                c.execute(sql.SQL("UPDATE {} SET zipcode = zipcode WHERE rid = %s").format(sql.Identifier(name)),
                          (1 + i % 3000,))
                latencies.append(time.monotonic() - t0)
                time.sleep(0.005)

    with _connect(db_dsn) as analyst, _connect(db_dsn) as admin:
        analyst.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        seen = analyst.execute(sql.SQL("SELECT {}").format(_fingerprint(_view(name, "gt")))).fetchone()
        w = threading.Thread(target=writer)
        w.start()
        try:
            time.sleep(0.2)
            second = _publish(admin, name, promote=True)           # same columns: rows only
            assert admin.execute("SELECT status FROM pganon.release WHERE id = %s", (second,)).fetchone()[0] == "current"
            # the analyst's snapshot still shows the release current in it, whole
            assert analyst.execute(sql.SQL("SELECT {}").format(_fingerprint(_view(name, "gt")))).fetchone() == seen
            assert analyst.execute("SELECT status FROM pganon.release WHERE id = %s", (first,)).fetchone()[0] == "current"
            other = admin.execute("SELECT pganon.publish(%s, 'mondrian', '{\"k\": 3}')", (name,)).fetchone()[0]
            admin.execute("SET lock_timeout = '1s'")                 # lower than pganon's 10 s: it wins
            t0 = time.monotonic()
            with pytest.raises(psycopg.Error) as exc:
                admin.execute("SELECT pganon.promote(%s)", (other,))   # other columns: must rebuild the views
            waited = time.monotonic() - t0
            assert exc.value.sqlstate == "PA011" and 0.9 < waited < 3, waited
            msg = exc.value.diag.message_primary
            assert f"promote of release {other}" in msg and f"pid {analyst.info.backend_pid}" in msg, msg
            assert "plpy" not in msg and "Traceback" not in msg
        finally:
            run.stop.set()
            w.join(timeout=30)
        analyst.execute("COMMIT")
        assert len(latencies) > 20 and max(latencies) < 0.5, (len(latencies), max(latencies))
        admin.execute("RESET lock_timeout")
        admin.execute("SELECT pganon.promote(%s)", (other,))          # the reader is gone: rebuilt
        assert _mondrian_shown(admin, name, other)
    # publish read one snapshot while the writer ran: its own checks passed on it, and the source
    # it read was never locked against the writer (SHARE would have needed UPDATE privilege too)
    assert all(p for _, p, _ in conn.execute("SELECT * FROM pganon.verify(%s)", (second,)))


def _mondrian_shown(conn, ds, rid):
    shown = conn.execute(sql.SQL("SELECT {}").format(_fingerprint(_view(ds, "gt")))).fetchone()
    return shown == conn.execute(sql.SQL("SELECT {}").format(_fingerprint(_release_rel(rid, "gt")))).fetchone() and \
        conn.execute("SELECT to_regclass(%s)", (f"pganon_release.{ds}_st",)).fetchone()[0] is None


def test_readers_in_both_orders_never_deadlock_a_promote_that_rebuilds_the_views(db_dsn, conn, name):
    """Why 5: a reader reading _st then _gt deadlocked a promote that replaced the views one
    after the other (promote the victim 12 of 12 times). A promote that must rebuild them (the
    shape changes at every promote here) takes all their locks at once or none, and never makes
    a reader wait for long: no reader gets an error, no reader statement waits a second, and the
    promotes go through between the readers' transactions."""
    make_dataset(conn, name, rows=60)
    buckets = _publish(conn, name, promote=True)
    generalized = conn.execute("SELECT pganon.publish(%s, 'mondrian', '{\"k\": 3}')", (name,)).fetchone()[0]
    run, stats, outcomes, waits = _Run(), {}, [], []
    readers = [threading.Thread(target=_reader_lenient, args=(db_dsn, run, name, order, stats, waits))
               for order in (("gt", "st"), ("st", "gt"), ("st", "gt"))]
    for t in readers:
        t.start()
    try:
        with _connect(db_dsn) as c:
            for i in range(8):
                rid = generalized if i % 2 == 0 else buckets
                t0 = time.monotonic()
                try:
                    c.execute("SELECT pganon.promote(%s)", (rid,))
                    outcomes.append(("ok", time.monotonic() - t0))
                except psycopg.Error as exc:
                    outcomes.append((exc.sqlstate, time.monotonic() - t0))
                time.sleep(0.1)
    finally:
        run.stop.set()
        for t in readers:
            t.join(timeout=30)
    assert run.errors == []
    assert {o for o, _ in outcomes} <= {"ok", "PA011"} and max(s for _, s in outcomes) < LOCK_WAIT + 3, outcomes
    assert sum(o == "ok" for o, _ in outcomes) >= 6, outcomes
    assert stats.get(("st", "gt"), 0) > 5 and stats.get(("gt", "st"), 0) > 5, stats
    assert max(waits) < 1.0, max(waits)
    assert _current_matches_views_any(conn, name)


def _reader_lenient(dsn, run, ds, order, stats, waits):
    """A READ COMMITTED reader reading the views in `order` in one transaction, with a pause
    between transactions (an analyst, not a loop holding the views forever). A view may be
    missing for a moment (the release shown has no ST): only a deadlock or any other error fails."""
    with _connect(dsn) as c:
        while not run.stop.is_set():
            try:
                with c.transaction():
                    for which in order:
                        t0 = time.monotonic()
                        c.execute(sql.SQL("SELECT count(*) FROM {}").format(_view(ds, which))).fetchone()
                        waits.append(time.monotonic() - t0)
                        time.sleep(random.random() * 0.02)
                stats[order] = stats.get(order, 0) + 1
            except psycopg.errors.UndefinedTable:
                pass
            except psycopg.Error as exc:
                run.fail(f"reader {order}: {exc.sqlstate} {exc}")
                return
            time.sleep(random.random() * 0.05)


def _current_matches_views_any(conn, ds):
    rid, family = conn.execute("SELECT r.id, r.layout->>'family' FROM pganon.release r JOIN pganon.dataset d "
                               "ON d.id = r.dataset_id WHERE d.name = %s AND r.status = 'current'", (ds,)).fetchone()
    if family == "generalized":
        return _mondrian_shown(conn, ds, rid)
    return _current_matches_views(conn, ds)


def test_every_lock_a_publish_waits_for_is_bounded_and_named(db_dsn, conn, name):
    """"Why" 5: publish set no lock_timeout. A publish waits at most lock_timeout (10 s, here the
    session's lower 0.5 s) for the dataset (another publish) and for its source (a session
    holding ACCESS EXCLUSIVE on it), and says what it waited for with PA011."""
    make_dataset(conn, name, rows=60)
    with _connect(db_dsn) as holder, _connect(db_dsn) as admin:
        admin.execute("SET lock_timeout = '500ms'")
        holder.execute("BEGIN")
        holder.execute("SELECT pganon._lock_dataset(id, 'test') FROM pganon.dataset WHERE name = %s", (name,))
        t0 = time.monotonic()
        with pytest.raises(psycopg.Error) as exc:
            _publish(admin, name)
        assert exc.value.sqlstate == "PA011" and 0.4 < time.monotonic() - t0 < 2.5
        msg = exc.value.diag.message_primary
        assert msg.startswith(f"publish of dataset {name} waited 0.5 s for another publish, promote or drop_release")
        assert f"pid {holder.info.backend_pid}" in msg
        holder.execute("ROLLBACK")
        holder.execute("BEGIN")
        holder.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(sql.Identifier(name)))
        t0 = time.monotonic()
        with pytest.raises(psycopg.Error) as exc:
            _publish(admin, name)
        assert exc.value.sqlstate == "PA011" and 0.4 < time.monotonic() - t0 < 2.5
        assert f"on its source public.{name}" in exc.value.diag.message_primary
        holder.execute("ROLLBACK")
        assert admin.execute("SHOW lock_timeout").fetchone()[0] == "500ms"      # the session's own, untouched
        _publish(admin, name)
