"""statement_timeout stops a publish within a second in every phase, and leaves nothing (issue 12,
"Why" 6: the query-error workload had no interrupt checks and no bound on `queries`; a million
queries ran 556 s past a 20 s statement_timeout, and danonyir's measurement ignored a cancel for
2-5 s).

Per method family, a calibration publish with progress notices tells when each phase starts;
then statement_timeout is set to fire early in measure (most of it still to run), and in plan when
the plan takes a while at this size (the planners of the bucketization, anatomy and generalized
families read aggregates and take a fraction of a second whatever the rows), or else of the
family's longest phase."""

from __future__ import annotations

import json
import time

import psycopg
import pytest
from test_concurrency import make_dataset

ROWS = 12000
# family -> (dataset: the table's or its person-column twin, method, params); the workload's
# queries make measure take a few seconds at ROWS rows
CASES = {
    "bucketization": ("table", "mmdcf_mslf", {"generalize": True, "queries": 8000}),
    "anatomy": ("table", "anatomy", {"queries": 8000}),
    "generalized": ("table", "mondrian", {"k": 5, "queries": 8000}),
    "semantic": ("table", "semantic", {"k": 5, "l": 2, "queries": 8000}),
    "linked": ("table", "ck_anonymization", {"k": 5, "queries": 4000}),
    "person": ("person", "danonyir", {"model": "el", "l": 2, "queries": 500}),
    "rating": ("table", "rating", {"eligibility": "suppress"}),
}
LONG = 0.4          # a phase shorter than this (in the calibration run) is not aimed at
SLACK = 1.0         # the issue's bound: statement_timeout stops a publish within 1 s
AIM = 0.3           # fire this far into the phase (or in its middle when shorter): most of it is left


@pytest.fixture(scope="module")
def source(db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as c:
        make_dataset(c, "interrupts", rows=ROWS, person="interrupts_p")
        from pganon import catalog
        catalog.set_semantic_rule(c, "interrupts", "R1", "disease", "in", ["HIV", "Cancer"], "serious")
    return {"table": "interrupts", "person": "interrupts_p"}


def _run(dsn, dataset, method, params, timeout_ms=None):
    """One publish with progress notices: (elapsed s, SQLSTATE or release id, [(offset s, phase)])."""
    notes = []
    with psycopg.connect(dsn, autocommit=True) as c:
        c.add_notice_handler(lambda d: notes.append((time.monotonic(), d.message_primary)))
        c.execute("SET pganon.progress = on")
        if timeout_ms:
            c.execute(f"SET statement_timeout = {int(timeout_ms)}")
        t0 = time.monotonic()
        try:
            out = c.execute("SELECT pganon.publish(%s, %s, %s::jsonb)", (dataset, method, json.dumps(params))).fetchone()[0]
        except psycopg.Error as exc:
            out = exc.sqlstate
        elapsed = time.monotonic() - t0
    phases = [(t - t0, m[len("pganon: "):-len(" ...")]) for t, m in notes
              if m.startswith("pganon: ") and m.endswith(" ...")]
    return elapsed, out, phases


def _spans(phases, total):
    """phase -> (start, end) offsets."""
    ends = [t for t, _ in phases[1:]] + [total]
    return {name: (t, e) for (t, name), e in zip(phases, ends)}


def _aimed_run(dsn, dataset, method, params, spans, target, landed):
    """A publish with statement_timeout aimed AIM into `target` (calibrated by `spans`), re-aimed
    up to 5 times since calibration drifts on a shared machine, until the phase running at the
    timeout satisfies `landed`: (timeout s, elapsed s, SQLSTATE or release id, phases seen,
    phases started before the timeout)."""
    start, end = spans[target]
    for attempt in range(5):
        t = start + min(AIM, (end - start) / 2)
        elapsed, out, seen = _run(dsn, dataset, method, params, timeout_ms=t * 1000)
        at = [name for offset, name in seen if offset <= t]
        if at and landed(at[-1]):
            break
        # this run was faster or slower than the calibration: aim at where the phase was now
        now = _spans(seen, elapsed)
        if target in now:
            start, end = now[target][0], max(now[target][1], now[target][0] + 0.2)
        elif now:                        # cut before the target: shift by the last phase's drift
            cut = list(now)[-1]
            drift = now[cut][0] - spans[cut][0]
            start, end = start + drift, end + drift
    return t, elapsed, out, seen, at


def _leftovers(conn):
    return conn.execute("SELECT (SELECT count(*) FROM pganon.release), (SELECT count(*) FROM pg_catalog.pg_class "
                        "WHERE relnamespace = 'pganon_data'::regnamespace)").fetchone()


@pytest.mark.parametrize("family", sorted(CASES))
def test_statement_timeout_stops_every_family_within_a_second_in_plan_and_measure(db_dsn, conn, source, family):
    which, method, params = CASES[family]
    dataset = source[which]
    total, rid, phases = _run(db_dsn, dataset, method, params)
    assert isinstance(rid, int), rid
    conn.execute("SELECT pganon.drop_release(%s)", (rid,))
    spans = _spans(phases, total)
    targets = [p for p in ("plan", "measure") if spans[p][1] - spans[p][0] >= LONG]
    if "plan" not in targets:        # the family's longest other phase (not the last) stands in for plan
        targets.append(max((p for p in list(spans)[:-1] if p not in targets), key=lambda p: spans[p][1] - spans[p][0]))
    before = _leftovers(conn)
    last = list(spans)[-1]
    for target in targets:
        stand_in = target not in ("plan", "measure")   # a short phase: any phase before the last will do
        t, elapsed, out, seen, at = _aimed_run(db_dsn, dataset, method, params, spans, target,
                                               lambda name: name == target or stand_in and name in spans
                                               and name != last)
        assert at and (at[-1] == target or stand_in and at[-1] != last), (target, t, seen)
        assert out == "57014", (target, out)                                     # query_canceled
        assert elapsed - t < SLACK, f"{family} {method}: {target} stopped {elapsed - t:.2f} s after the timeout"
        assert _leftovers(conn) == before                                         # nothing left


def test_statement_timeout_anywhere_in_a_publish_stops_it_within_a_second(db_dsn, conn, source):
    """The acceptance's "in every phase": a timeout aimed into each phase of a mondrian publish
    (snapshot to assess) stops it within SLACK with query_canceled and leaves nothing."""
    total, rid, phases = _run(db_dsn, source["table"], *CASES["generalized"][1:])
    assert isinstance(rid, int), rid
    conn.execute("SELECT pganon.drop_release(%s)", (rid,))
    spans = _spans(phases, total)
    before, hit = _leftovers(conn), set()
    for target in spans:                                 # AIM into each phase (or its middle)
        t, elapsed, out, seen, at = _aimed_run(db_dsn, source["table"], *CASES["generalized"][1:], spans,
                                               target, lambda name: name == target)
        if isinstance(out, int):                         # every run was faster than the aim
            conn.execute("SELECT pganon.drop_release(%s)", (out,))
            continue
        hit.add(at[-1] if at else "start")
        assert out == "57014", (t, out)
        assert elapsed - t < SLACK, f"stopped {elapsed - t:.2f} s after a timeout at {t:.2f} s in {hit}"
        assert _leftovers(conn) == before
    assert len(hit) >= len(spans) // 2, (hit, spans)     # most phases were hit (short ones may be missed)


def test_queries_above_the_bound_are_refused_before_any_work(conn, source):
    """Why 6: `queries: 1000000` ran for minutes; the workload is bounded and the refusal
    comes before the snapshot."""
    before = conn.execute("SELECT last_value FROM pganon.release_id_seq").fetchone()[0]
    with pytest.raises(psycopg.Error) as exc:
        conn.execute("SELECT pganon.publish('interrupts', 'mondrian', '{\"k\": 5, \"queries\": 1000000}')")
    assert exc.value.sqlstate == "PA002"
    assert "100,000" in exc.value.diag.message_primary and "plpy" not in exc.value.diag.message_primary
    assert conn.execute("SELECT last_value FROM pganon.release_id_seq").fetchone()[0] == before
