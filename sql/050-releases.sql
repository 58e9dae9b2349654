-- Releases: the list, dropping one, and where the stable views point.

CREATE OR REPLACE VIEW pganon.releases AS
SELECT r.id, d.name AS dataset, r.method, r.params, r.status,
       r.id = (SELECT max(x.id) FROM pganon.release x WHERE x.dataset_id = r.dataset_id AND x.status = 'published')
         AS is_current,
       r.source_rows, r.published_rows, r.suppressed_rows, r.groups, r.metrics, r.phase_seconds,
       (SELECT sum(value::numeric) FROM jsonb_each_text(r.phase_seconds)) AS seconds,
       r.engine_version, r.created_at
  FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id;
COMMENT ON VIEW pganon.releases IS 'Every release: parameters, status, row counts, metrics and seconds per phase.';

CREATE OR REPLACE FUNCTION pganon.drop_release(release bigint) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  r record;
  rel text;
  newest bigint;
BEGIN
  SELECT x.*, d.name INTO r FROM pganon.release x JOIN pganon.dataset d ON d.id = x.dataset_id WHERE x.id = release;
  IF NOT FOUND OR r.status <> 'published' THEN
    RAISE EXCEPTION 'release % does not exist or was dropped', release USING ERRCODE = 'PA001',
      HINT = 'list releases with SELECT * FROM pganon.releases';
  END IF;
  UPDATE pganon.release x SET status = 'dropped' WHERE x.id = drop_release.release;
  SELECT max(id) INTO newest FROM pganon.release WHERE dataset_id = r.dataset_id AND status = 'published';
  IF newest IS NULL THEN
    EXECUTE format('DROP VIEW IF EXISTS pganon_release.%I, pganon_release.%I, pganon_release.%I',
                   r.name || '_gt', r.name || '_st', r.name || '_st_long');
  ELSIF newest < release THEN
    PERFORM pganon._expose(r.name, (SELECT layout->'relations' FROM pganon.release WHERE id = newest));
  END IF;
  FOR rel IN SELECT value FROM jsonb_each_text(r.layout->'relations') LOOP
    IF to_regclass(rel) IS NOT NULL THEN
      EXECUTE format('DROP TABLE %s', to_regclass(rel));
    END IF;
  END LOOP;
END $$;
COMMENT ON FUNCTION pganon.drop_release(bigint) IS
  'Drop a release''s relations; the stable views fall back to the newest remaining release.';
