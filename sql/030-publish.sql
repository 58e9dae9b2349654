-- Publishing: the PL/Python entry point and the view swap it ends with.

DROP FUNCTION IF EXISTS pganon._publish(text, text, jsonb);  -- replaced by pganon._call('publish')
DROP FUNCTION IF EXISTS pganon.publish(text, text, jsonb);    -- gained the promote argument
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
  'Takes a SHARE lock on the source table while it runs. Methods: mbf, msdcf, mmdcf, mbf_mslf, msdcf_mslf, '
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
  'Going back to an earlier release is a promote of that release.';

DROP FUNCTION IF EXISTS pganon._expose(text, text, text);
CREATE OR REPLACE FUNCTION pganon._expose(dataset text, relations jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- The stable views <dataset>_gt, <dataset>_st, <dataset>_promise (what the release guarantees)
-- and, for releases that have one, <dataset>_st_long (the ST in long form). A view the release
-- does not have is dropped. Called by promote only.
DECLARE
  suffix text;
  v text;
  target text;
  deps text;
BEGIN
  FOREACH suffix IN ARRAY ARRAY['gt', 'st', 'st_long', 'promise'] LOOP
    v := dataset || '_' || suffix;
    target := relations->>suffix;
    SELECT string_agg(DISTINCT c.oid::regclass::text, ', ') INTO deps
      FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class c ON c.oid = r.ev_class
     WHERE d.refobjid = to_regclass(format('pganon_release.%I', v)) AND c.oid <> d.refobjid;
    IF target IS NULL THEN
      IF to_regclass(format('pganon_release.%I', v)) IS NOT NULL THEN
        IF deps IS NOT NULL THEN
          RAISE EXCEPTION 'cannot drop view pganon_release.%: % depend on it', v, deps
            USING ERRCODE = 'PA008', HINT = 'drop or change the dependent objects, then publish again';
        END IF;
        EXECUTE format('DROP VIEW pganon_release.%I', v);
      END IF;
      CONTINUE;
    END IF;
    BEGIN
      EXECUTE format('CREATE OR REPLACE VIEW pganon_release.%I AS SELECT * FROM %s', v, target::regclass);
    EXCEPTION WHEN invalid_table_definition OR feature_not_supported OR datatype_mismatch THEN
      -- The new release has other columns: the view must be dropped, unless something uses it.
      IF deps IS NOT NULL THEN
        RAISE EXCEPTION 'cannot replace view pganon_release.%: % depend on it', v, deps
          USING ERRCODE = 'PA008', HINT = 'drop or change the dependent objects, then publish again';
      END IF;
      EXECUTE format('DROP VIEW pganon_release.%I', v);
      EXECUTE format('CREATE VIEW pganon_release.%I AS SELECT * FROM %s', v, target::regclass);
    END;
    EXECUTE format('COMMENT ON VIEW pganon_release.%I IS %L', v,
                   format('pganon: current release of dataset %s (%s)', dataset, target));
    EXECUTE format('GRANT SELECT ON pganon_release.%I TO pganon_reader', v);
  END LOOP;
END $$;

DROP FUNCTION IF EXISTS pganon._audit(bigint, text);  -- replaced by pganon._call('audit')
CREATE OR REPLACE FUNCTION pganon.audit(release bigint, delta text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT pganon._call('audit', jsonb_build_object('release', release, 'delta', delta)) $$;
COMMENT ON FUNCTION pganon.audit(bigint, text) IS
  'The fingerprint-correlation attack on a GT/ST release (spec 004 §2.8): linkable bucket pairs via delta, '
  'singleton intersections, pfcorr/ffcorr breaches, vulnerable records (covered, correct), PriRisk. '
  'Admin only: reads the source. delta defaults to the release''s own.';
