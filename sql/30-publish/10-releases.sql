-- Releases: the list, their risk against the dataset's policy, dropping one.

CREATE OR REPLACE FUNCTION pganon.risk(release bigint)
RETURNS TABLE (measure text, scope text, value float8, threshold float8, passed boolean, detail text)
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  -- The threshold is the dataset's policy for the measure when it sets one (null: none), else
  -- the release's own promise. published_share must reach its threshold, every other measure
  -- must stay at or below it.
  SELECT r.measure, r.scope, r.value, t.threshold,
         CASE WHEN t.threshold IS NULL OR r.value IS NULL THEN NULL
              WHEN r.measure = 'published_share' THEN r.value >= t.threshold - 1e-12
              ELSE r.value <= t.threshold + 1e-12 END,
         r.detail
    FROM pganon.release_risk r
    JOIN pganon.release x ON x.id = r.release_id
    JOIN pganon.dataset d ON d.id = x.dataset_id,
         LATERAL (SELECT CASE WHEN r.policy_key IS NULL THEN NULL
                              WHEN d.policy ? r.policy_key THEN (d.policy->>r.policy_key)::float8
                              ELSE r.promise END AS threshold) t
   WHERE r.release_id = risk.release
   ORDER BY r.ord
$$;
COMMENT ON FUNCTION pganon.risk(bigint) IS
  'What an analyst can learn from a release, measured from the analyst''s seat when it was published '
  '(linkage again at promote): one row per measure and scope with its threshold (the dataset''s policy, '
  'else the release''s promise) and whether it passes (NULL: informational). See docs/concepts.md.';

CREATE OR REPLACE VIEW pganon.releases AS
SELECT r.id, d.name AS dataset, r.method, r.params, r.status, r.status = 'current' AS is_current,
       r.source_rows, r.published_rows, r.suppressed_rows, r.groups, r.metrics, r.phase_seconds,
       (SELECT sum(value::numeric) FROM jsonb_each_text(r.phase_seconds)) AS seconds,
       r.engine_version, r.created_at, r.promoted_at,
       (SELECT count(*) FROM pganon.risk(r.id) x WHERE x.passed IS FALSE) AS risk_failures
  FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id;
COMMENT ON VIEW pganon.releases IS
  'Every release: parameters, status (candidate, current, superseded, dropped), row counts, metrics, '
  'seconds per phase and how many risk figures break the dataset''s policy.';

CREATE OR REPLACE FUNCTION pganon.assess(release bigint) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT (pganon._call('assess', jsonb_build_object('release', release)))::bigint $$;
COMMENT ON FUNCTION pganon.assess(bigint) IS
  'Measure a release''s risk again (linkage against the releases promoted now) and store it; returns the id.';

CREATE OR REPLACE FUNCTION pganon.set_policy(dataset text, policy jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE did int := pganon._dataset_id(dataset);
BEGIN
  PERFORM pganon._call('validate_policy', jsonb_build_object('policy', coalesce(policy, '{}')));
  UPDATE pganon.dataset SET policy = coalesce(set_policy.policy, '{}') WHERE id = did;
END $$;
COMMENT ON FUNCTION pganon.set_policy(text, jsonb) IS
  'Set the risk thresholds promote enforces for a dataset: {"measure": number or null, ...}; a measure '
  'left out takes each release''s promise, null switches its threshold off. Measures: published_share '
  '(minimum, default 0.5), prosecutor_risk_max, records_below_k, attacker_confidence_max, order, '
  'numbering, chain_attack, linkage, composed_prosecutor_risk (maxima). Replaces the whole policy.';

CREATE OR REPLACE FUNCTION pganon.drop_release(release bigint) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- Drops only the release's own tables, pganon_data.r<id>_<suffix> (pganon._release_relation
-- refuses a layout naming anything else, before anything is dropped), and, when the release is
-- current, the dataset's views and the stable tables they read (pganon._hide); a release that is
-- not current never touches the views. Holds the dataset's lock (pganon._lock_dataset), so it
-- cannot interleave with a publish or promote of the dataset.
DECLARE
  r record;
  sfx text;
  rel regclass;
  rels regclass[] := '{}';
  own text;
BEGIN
  PERFORM pg_catalog.set_config('lock_timeout', pganon._lock_timeout_ms()::text, true);  -- until this returns
  SELECT x.dataset_id, d.name INTO r FROM pganon.release x JOIN pganon.dataset d ON d.id = x.dataset_id
   WHERE x.id = release;
  IF FOUND THEN
    own := pganon._owner_to_act_as(r.dataset_id);   -- drop with the owner's rights (roles.py)
    IF own IS NOT NULL THEN
      EXECUTE format('SET LOCAL ROLE %I', own);
    END IF;
    PERFORM pganon._lock_dataset(r.dataset_id, format('drop_release(%s) of dataset %s', release, r.name));
  END IF;
  SELECT x.status, x.dataset_id, x.layout INTO r FROM pganon.release x WHERE x.id = release;  -- as of the lock
  IF NOT FOUND OR r.status = 'dropped' THEN
    RAISE EXCEPTION 'release % does not exist or was dropped', release USING ERRCODE = 'PA001',
      HINT = 'list releases with SELECT * FROM pganon.releases';
  END IF;
  FOR sfx IN SELECT jsonb_object_keys(r.layout->'relations') LOOP
    rel := pganon._release_relation(release, sfx);
    IF rel IS NOT NULL THEN
      rels := rels || rel;
    END IF;
  END LOOP;
  UPDATE pganon.release x SET status = 'dropped' WHERE x.id = drop_release.release;
  IF r.status = 'current' THEN
    -- nothing falls back silently: another release is shown only when the DBA promotes it
    PERFORM pganon._hide(r.dataset_id, format('drop_release(%s)', release));
  END IF;
  BEGIN
    FOREACH rel IN ARRAY rels LOOP
      EXECUTE format('DROP TABLE %s', rel);
    END LOOP;
  EXCEPTION WHEN lock_not_available THEN
    RAISE EXCEPTION 'drop_release(%) waited % s for sessions reading % to finish, held by %', release,
                    round(pganon._lock_timeout_ms() / 1000.0, 1), rel, pganon._lock_holders(ARRAY[rel::oid], r.dataset_id)
      USING ERRCODE = 'PA011', HINT = 'retry when those transactions have ended';
  END;
END $$;
COMMENT ON FUNCTION pganon.drop_release(bigint) IS
  'Drop a release''s relations. Dropping the current release removes the dataset''s views until '
  'another release is promoted; dropping any other release leaves the views alone. Waits at most 10 s '
  '(or the session''s lower lock_timeout) for a publish or promote of the dataset, then fails with PA011.';
