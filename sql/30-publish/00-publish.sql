-- Publishing: the PL/Python entry point and the view swap it ends with.

-- Functions of earlier versions, dropped where an upgrade finds them: an existence check, not
-- DROP ... IF EXISTS, whose "does not exist, skipping" NOTICE every fresh install would print.
DO $$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT x FROM unnest(ARRAY[
             pg_catalog.to_regprocedure('pganon._publish(text, text, jsonb)'),   -- replaced by pganon._call('publish')
             pg_catalog.to_regprocedure('pganon.publish(text, text, jsonb)'),    -- gained the promote argument
             pg_catalog.to_regprocedure('pganon._expose(text, text, text)'),     -- became _expose(bigint)
             pg_catalog.to_regprocedure('pganon._expose(text, jsonb)'),
             pg_catalog.to_regprocedure('pganon._audit(bigint, text)')]) AS x    -- replaced by pganon._call('audit')
           WHERE x IS NOT NULL LOOP
    EXECUTE format('DROP FUNCTION %s', f);
  END LOOP;
END $$;

CREATE OR REPLACE FUNCTION pganon.publish(dataset text, method text, params jsonb DEFAULT '{}',
                                          promote boolean DEFAULT false)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT (pganon._call('publish', jsonb_build_object('dataset', dataset, 'method', method,
                                                         'params', coalesce(params, '{}'),
                                                         'promote', coalesce(promote, false))))::bigint $$;
COMMENT ON FUNCTION pganon.publish(text, text, jsonb, boolean) IS
  'Publish a candidate release of a dataset in one transaction: verified, measured and risk-assessed, '
  'invisible to analysts until pganon.promote(release) (or promote => true here, which refuses and '
  'rolls back the whole publish when the dataset''s policy does not hold). Returns the release id. '
  'Reads the source once (a one-statement snapshot; later phases and the verification read that '
  'snapshot), so writes to the source never wait for it; one publish, promote or drop_release per dataset '
  'at a time, waiting at most 10 s (or the session''s lower lock_timeout) before PA011. Methods: mbf, msdcf, mmdcf, mbf_mslf, msdcf_mslf, '
  'mmdcf_mslf, anatomy (bucketization), ck_anonymization, pk_angelization (GT/ST with bucket links), gaa, '
  'mondrian, semantic (generalization), danonyir, geneir, one_m_generalization (persons), rating; '
  'parameters per method in docs/sql-api.md. Example: SELECT pganon.publish(''adult'', ''mmdcf_mslf'', ''{"d": 3}'');';

CREATE OR REPLACE FUNCTION pganon.promote(release bigint) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT (pganon._call('promote', jsonb_build_object('release_id', release)))::bigint $$;
COMMENT ON FUNCTION pganon.promote(bigint) IS
  'Make a candidate (or superseded) release the dataset''s current release: the views in pganon_release '
  'switch to it in this transaction. Refused (PA009, with the failing figures) when its risk breaks the '
  'dataset''s policy (pganon.risk, pganon.set_policy) or it keeps the engine''s own numbering. '
  'Going back to an earlier release is a promote of that release. Readers are not blocked: when the release '
  'has the columns of the one shown, only the rows the views read change; otherwise the views are rebuilt '
  'once no transaction reads them (waiting at most 10 s, or the session''s lower lock_timeout, then PA011).';

-- Concurrency (issue 12). A publish, promote or drop_release of a dataset holds the dataset's
-- lock (pganon._lock_dataset) until it commits: one at a time per dataset. pganon waits for any
-- lock at most pganon._lock_timeout_ms(), then fails with PA011 naming what it waited for. The
-- views analysts read are never replaced under them: they read stable tables per dataset whose
-- rows a promote replaces (pganon._expose).

CREATE OR REPLACE FUNCTION pganon._lock_timeout_ms() RETURNS int
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  -- 10 s, or the session's own lock_timeout when it is set lower (0, no timeout, means 10 s)
  SELECT CASE WHEN s.setting::int > 0 THEN least(s.setting::int, 10000) ELSE 10000 END
    FROM pg_catalog.pg_settings s WHERE s.name = 'lock_timeout'
$$;
COMMENT ON FUNCTION pganon._lock_timeout_ms() IS
  'Internal: how long pganon waits for a lock, in ms: 10 s, or the session''s lock_timeout when lower.';

CREATE OR REPLACE FUNCTION pganon._lock_holders(relations oid[], dataset_id int) RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  -- The other sessions holding a lock on one of the relations, or the lock of the dataset: pid,
  -- role and, where the caller may see it, state and since when.
  SELECT coalesce(string_agg(DISTINCT format('pid %s (%s)', l.pid, concat_ws(', ', a.usename, a.state,
                      CASE WHEN a.xact_start IS NOT NULL
                           THEN format('transaction open for %s s', round(extract(epoch FROM clock_timestamp() - a.xact_start)::numeric, 1)) END)),
                    '; '), 'a session that has since finished')
    FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
   WHERE l.granted AND l.pid <> pg_catalog.pg_backend_pid()
     AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
     AND ((l.locktype = 'relation' AND l.relation = ANY (relations))
          OR (l.locktype = 'advisory' AND l.classid = 1885823342::oid AND l.objid = dataset_id::oid AND l.objsubid = 1))
$$;
COMMENT ON FUNCTION pganon._lock_holders(oid[], int) IS
  'Internal: the sessions holding a lock on one of the relations or on the dataset (for PA011 messages).';

CREATE OR REPLACE FUNCTION pganon._lock_dataset(dataset_id int, what text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- One publish, promote or drop_release per dataset at a time: a transaction-level advisory lock
-- keyed on the dataset id (high 32 bits 1885823342, 'pgan'), waited for at most
-- pganon._lock_timeout_ms(). An advisory lock, not a row lock, so that a timeout can name the
-- session that holds it.
DECLARE ms int := pganon._lock_timeout_ms();
BEGIN
  PERFORM pg_catalog.set_config('lock_timeout', ms::text, true);   -- undone when this function returns
  PERFORM pg_catalog.pg_advisory_xact_lock((1885823342::bigint << 32) | dataset_id::bigint);
EXCEPTION WHEN lock_not_available THEN
  RAISE EXCEPTION '% waited % s for another publish, promote or drop_release of the same dataset, held by %',
                  what, round(ms / 1000.0, 1), pganon._lock_holders('{}', dataset_id)
    USING ERRCODE = 'PA011',
          HINT = 'one publish, promote or drop_release per dataset runs at a time; retry when it has committed '
                 '(pganon waits at most 10 s, or the session''s lock_timeout when lower)';
END $$;
COMMENT ON FUNCTION pganon._lock_dataset(int, text) IS
  'Internal: serialize publish, promote and drop_release per dataset (a bounded wait; PA011 names the holder).';

CREATE OR REPLACE FUNCTION pganon._lock_all(relations regclass[], what text, dataset_id int) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- ACCESS EXCLUSIVE on every relation, all of them or none, without ever making a reader fail or
-- wait long. An attempt, in a subtransaction, takes them one after the other, each waiting at
-- most a short step, so short that the whole attempt holds a lock while waiting for less than
-- half of deadlock_timeout: a reader that waits for one of its locks while holding another is
-- never reported as a deadlock (the attempt gives up first and undoes itself, holding nothing),
-- and a reader never queues behind it for longer than that. Attempts repeat, a few ms apart,
-- until one finds a moment when no transaction reads the relations; after
-- pganon._lock_timeout_ms() it fails with PA011 naming the sessions that hold them.
DECLARE
  ms int := pganon._lock_timeout_ms();
  deadline timestamptz := clock_timestamp() + make_interval(secs => ms / 1000.0);
  step int;
  rel regclass;
BEGIN
  IF coalesce(cardinality(relations), 0) = 0 THEN
    RETURN;
  END IF;
  SELECT greatest(1, least(100, s.setting::int / 2 / cardinality(relations))) INTO step
    FROM pg_catalog.pg_settings s WHERE s.name = 'deadlock_timeout';
  LOOP
    BEGIN
      PERFORM pg_catalog.set_config('lock_timeout', step::text, true);
      FOREACH rel IN ARRAY relations LOOP
        EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', rel);
      END LOOP;
      RETURN;
    EXCEPTION WHEN lock_not_available THEN
      IF clock_timestamp() >= deadline THEN
        RAISE EXCEPTION '% waited % s for the transactions reading % to end, held by %', what, round(ms / 1000.0, 1),
                        array_to_string(relations::text[], ', '), pganon._lock_holders(relations::oid[], dataset_id)
          USING ERRCODE = 'PA011',
                HINT = 'the views are rebuilt only when the release shown has other columns (another method, other '
                       'attributes); retry when those transactions have ended, or promote a release with the same '
                       'columns (pganon waits at most 10 s, or the session''s lock_timeout when lower)';
      END IF;
    END;
    PERFORM pg_catalog.pg_sleep(0.005 + random() * 0.02);
  END LOOP;
END $$;
COMMENT ON FUNCTION pganon._lock_all(regclass[], text, int) IS
  'Internal: ACCESS EXCLUSIVE on all the relations or none, never holding one while waiting for another longer than half of deadlock_timeout (PA011 after the timeout).';

CREATE OR REPLACE FUNCTION pganon._release_relation(release bigint, suffix text) RETURNS regclass
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- The release's relation for a suffix (gt, st, map ...), or NULL when it has none or it is gone.
-- Only ever pganon_data.r<release>_<suffix>, an ordinary table: a layout naming anything else
-- (a forged or tampered release row) is refused before anything is touched, so that no caller's
-- drop_release or promote can be made to drop or expose an unrelated relation.
DECLARE
  named text;
  expected text := format('pganon_data.%I', format('r%s_%s', release, suffix));
  found oid;
  kind "char";
BEGIN
  SELECT x.layout->'relations'->>suffix INTO named FROM pganon.release x WHERE x.id = release;
  IF named IS NULL THEN
    RETURN NULL;
  END IF;
  IF named IS DISTINCT FROM expected THEN
    RAISE EXCEPTION 'release % names % as its % relation, not %: pganon touches only the relations it made for a release',
                    release, named, suffix, expected
      USING ERRCODE = 'PA004', HINT = 'the release row was changed by hand; restore its layout or delete the row';
  END IF;
  SELECT c.oid, c.relkind INTO found, kind FROM pg_catalog.pg_class c
   WHERE c.relnamespace = 'pganon_data'::regnamespace AND c.relname = format('r%s_%s', release, suffix);
  IF found IS NULL THEN
    RETURN NULL;
  END IF;
  IF kind <> 'r' THEN
    RAISE EXCEPTION '% is not the table pganon made for release % (relkind %)', expected, release, kind
      USING ERRCODE = 'PA004', HINT = 'somebody replaced it; drop it by hand after checking what it is';
  END IF;
  RETURN found::regclass;
END $$;
COMMENT ON FUNCTION pganon._release_relation(bigint, text) IS
  'Internal: a release''s relation pganon_data.r<id>_<suffix> (an ordinary table), checked against its layout.';

CREATE OR REPLACE FUNCTION pganon._columns(rel regclass) RETURNS text[]
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT array_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)) ORDER BY a.attnum)
    FROM pg_catalog.pg_attribute a WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped
$$;
COMMENT ON FUNCTION pganon._columns(regclass) IS 'Internal: a relation''s columns with their types, in order.';

CREATE OR REPLACE FUNCTION pganon._shown(dataset_id int, suffix text,
                                         OUT view_rel regclass, OUT table_rel regclass, OUT reads_table boolean)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- What shows a dataset's current release for a suffix: the view pganon_release.<dataset>_<suffix>
-- and the stable table pganon_data.d<dataset id>_<suffix> (each NULL when absent), and whether the
-- view reads that table (not so for views made before issue 12, which read a release table). A
-- relation under one of these names that is not a view (a table), or that belongs to a role other
-- than the dataset's owner or a superuser, is refused: another role could otherwise squat the
-- name and make a promote write into, or show analysts, a relation of its own.
DECLARE
  d record;
  rel regclass;
  want "char";
BEGIN
  SELECT x.name, x.owner::oid AS owner INTO d FROM pganon.dataset x WHERE x.id = dataset_id;
  view_rel := to_regclass(format('pganon_release.%I', d.name || '_' || suffix));
  table_rel := to_regclass(format('pganon_data.%I', format('d%s_%s', dataset_id, suffix)));
  FOREACH rel IN ARRAY ARRAY[view_rel, table_rel] LOOP
    CONTINUE WHEN rel IS NULL;
    want := CASE WHEN rel = view_rel THEN 'v' ELSE 'r' END;
    IF (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = rel) <> want THEN
      RAISE EXCEPTION '% is not the % pganon made for dataset %', rel, CASE want WHEN 'v' THEN 'view' ELSE 'table' END, d.name
        USING ERRCODE = 'PA002', HINT = 'drop or rename it, then promote again';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_roles o ON o.oid = c.relowner
                    WHERE c.oid = rel AND (c.relowner = d.owner OR o.rolsuper)) THEN
      RAISE EXCEPTION '% belongs to role %, not to %, the owner of dataset %', rel,
                      (SELECT pg_catalog.pg_get_userbyid(c.relowner) FROM pg_catalog.pg_class c WHERE c.oid = rel),
                      pg_catalog.pg_get_userbyid(d.owner), d.name
        USING ERRCODE = 'PA002', HINT = 'another role made a relation under a name pganon uses; a superuser should drop it';
    END IF;
  END LOOP;
  reads_table := view_rel IS NOT NULL AND table_rel IS NOT NULL AND EXISTS (
    SELECT 1 FROM pg_catalog.pg_depend x JOIN pg_catalog.pg_rewrite w ON w.oid = x.objid
     WHERE x.classid = 'pg_catalog.pg_rewrite'::regclass AND w.ev_class = view_rel AND x.refobjid = table_rel);
END $$;
COMMENT ON FUNCTION pganon._shown(int, text) IS
  'Internal: the view and stable table that show a dataset''s current release for a suffix (kinds and owners checked).';

CREATE OR REPLACE FUNCTION pganon._dependents(rels regclass[]) RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  -- user objects (views, rules) built on the relations, apart from pganon's own views over them
  SELECT string_agg(DISTINCT c.oid::regclass::text, ', ')
    FROM pg_catalog.pg_depend x JOIN pg_catalog.pg_rewrite w ON w.oid = x.objid
    JOIN pg_catalog.pg_class c ON c.oid = w.ev_class
   WHERE x.classid = 'pg_catalog.pg_rewrite'::regclass AND x.refobjid = ANY (rels) AND c.oid <> ALL (rels)
$$;
COMMENT ON FUNCTION pganon._dependents(regclass[]) IS
  'Internal: the views built on some of the relations, other than those relations themselves.';

CREATE OR REPLACE FUNCTION pganon._expose(release bigint) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- Show the release promote has just made current, in promote's transaction, through the views
-- pganon_release.<dataset>_gt, _st, _st_long (ST in long form) and _promise, for the suffixes it
-- has (a view it lacks is dropped). Each view reads the stable table pganon_data.d<dataset id>_<suffix>.
-- When that table has the release's columns, only its rows change (DELETE + INSERT): readers are
-- never blocked, and a reader's snapshot keeps showing the release current in that snapshot,
-- GT and ST together with the catalog's rows. Otherwise (another method, other columns, a suffix
-- gained or lost) the view and table are rebuilt after pganon._lock_all holds all their locks at
-- once; a REPEATABLE READ transaction whose snapshot predates that rebuild reads the rebuilt views
-- empty (PostgreSQL's catalog is not versioned by snapshot). Called by promote only, which holds
-- the dataset's lock.
DECLARE
  r record;
  s record;
  sfx text;
  target regclass;
  v text;
  t text;
  rebuild text[] := '{}';
  locks regclass[] := '{}';
  deps text;
BEGIN
  SELECT x.dataset_id, d.name INTO r FROM pganon.release x JOIN pganon.dataset d ON d.id = x.dataset_id
   WHERE x.id = release;
  -- 1. what changes: rows only, or views and tables (refusing before anything is touched)
  FOREACH sfx IN ARRAY ARRAY['gt', 'st', 'st_long', 'promise'] LOOP
    target := pganon._release_relation(release, sfx);
    IF target IS NULL AND (SELECT x.layout->'relations' ? sfx FROM pganon.release x WHERE x.id = release) THEN
      RAISE EXCEPTION 'the % relation of release % is gone', sfx, release USING ERRCODE = 'PA001',
        HINT = 'publish the release again';
    END IF;
    SELECT * INTO s FROM pganon._shown(r.dataset_id, sfx);
    IF target IS NULL AND s.view_rel IS NULL AND s.table_rel IS NULL THEN
      CONTINUE;
    END IF;
    IF target IS NOT NULL AND s.reads_table
       AND pganon._columns(target) = pganon._columns(s.table_rel) THEN
      CONTINUE;                                           -- same shape: rows only (step 3)
    END IF;
    rebuild := rebuild || sfx;
    IF s.view_rel IS NOT NULL THEN locks := locks || s.view_rel; END IF;
    IF s.table_rel IS NOT NULL THEN locks := locks || s.table_rel; END IF;
  END LOOP;
  deps := pganon._dependents(locks);
  IF deps IS NOT NULL THEN
    RAISE EXCEPTION 'cannot replace the views of dataset % (release % has other columns): % depend on them',
                    r.name, release, deps
      USING ERRCODE = 'PA008', HINT = 'drop or change the dependent objects, then promote again';
  END IF;
  -- 2. rebuild: all locks at once, then drop and create
  PERFORM pganon._lock_all(locks, format('promote of release %s', release), r.dataset_id);
  FOREACH sfx IN ARRAY rebuild LOOP
    target := pganon._release_relation(release, sfx);
    SELECT * INTO s FROM pganon._shown(r.dataset_id, sfx);
    v := format('pganon_release.%I', r.name || '_' || sfx);
    t := format('pganon_data.%I', format('d%s_%s', r.dataset_id, sfx));
    IF s.view_rel IS NOT NULL THEN EXECUTE format('DROP VIEW %s', s.view_rel); END IF;
    IF s.table_rel IS NOT NULL THEN EXECUTE format('DROP TABLE %s', s.table_rel); END IF;
    IF target IS NOT NULL THEN
      EXECUTE format('CREATE TABLE %s AS TABLE %s', t, target);
      EXECUTE format('COMMENT ON TABLE %s IS %L', t, format('pganon: the rows of the current release of dataset %s, read by %s', r.name, v));
      EXECUTE format('CREATE VIEW %s AS SELECT * FROM %s', v, t);
      EXECUTE format('COMMENT ON VIEW %s IS %L', v, format('pganon: the current release of dataset %s', r.name));
      EXECUTE format('GRANT SELECT ON %s TO pganon_reader', v);
    END IF;
  END LOOP;
  -- 3. same shape: the stable tables take the release's rows
  FOREACH sfx IN ARRAY ARRAY['gt', 'st', 'st_long', 'promise'] LOOP
    CONTINUE WHEN sfx = ANY (rebuild);
    target := pganon._release_relation(release, sfx);
    CONTINUE WHEN target IS NULL;
    SELECT * INTO s FROM pganon._shown(r.dataset_id, sfx);
    EXECUTE format('DELETE FROM %s', s.table_rel);
    EXECUTE format('INSERT INTO %s TABLE %s', s.table_rel, target);
  END LOOP;
END $$;
COMMENT ON FUNCTION pganon._expose(bigint) IS
  'Internal (promote): show a release through the dataset''s views: rows replaced when the shape is the same, views rebuilt with all locks at once otherwise.';

CREATE OR REPLACE FUNCTION pganon._hide(dataset_id int, what text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- Remove a dataset's views and their stable tables (drop_release of the current release):
-- refused (PA008) when user objects depend on them, all locks taken at once (pganon._lock_all).
DECLARE
  sfx text;
  s record;
  locks regclass[] := '{}';
  deps text;
BEGIN
  FOREACH sfx IN ARRAY ARRAY['gt', 'st', 'st_long', 'promise'] LOOP
    SELECT * INTO s FROM pganon._shown(dataset_id, sfx);
    IF s.view_rel IS NOT NULL THEN locks := locks || s.view_rel; END IF;
    IF s.table_rel IS NOT NULL THEN locks := locks || s.table_rel; END IF;
  END LOOP;
  deps := pganon._dependents(locks);
  IF deps IS NOT NULL THEN
    RAISE EXCEPTION 'cannot drop the views of dataset %: % depend on them', (SELECT name FROM pganon.dataset d WHERE d.id = dataset_id), deps
      USING ERRCODE = 'PA008', HINT = 'drop or change the dependent objects, then drop the release again';
  END IF;
  PERFORM pganon._lock_all(locks, what, dataset_id);
  FOREACH sfx IN ARRAY ARRAY['gt', 'st', 'st_long', 'promise'] LOOP
    SELECT * INTO s FROM pganon._shown(dataset_id, sfx);
    IF s.view_rel IS NOT NULL THEN EXECUTE format('DROP VIEW %s', s.view_rel); END IF;
    IF s.table_rel IS NOT NULL THEN EXECUTE format('DROP TABLE %s', s.table_rel); END IF;
  END LOOP;
END $$;
COMMENT ON FUNCTION pganon._hide(int, text) IS
  'Internal (drop_release of the current release): drop the dataset''s views and stable tables.';

CREATE OR REPLACE FUNCTION pganon.audit(release bigint, delta text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT pganon._call('audit', jsonb_build_object('release', release, 'delta', delta)) $$;
COMMENT ON FUNCTION pganon.audit(bigint, text) IS
  'The fingerprint-correlation attack on a GT/ST release (Khan et al. 2020, §1.1): linkable bucket pairs via delta, '
  'singleton intersections, pfcorr/ffcorr breaches, vulnerable records (covered, correct), PriRisk. '
  'Admin only: reads the source. delta defaults to the release''s own.';
