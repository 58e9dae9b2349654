-- SA linking metadata for GT/ST methods with one-to-many links ((c,k)-anonymization, spec 004
-- §1.3): which sensitive attributes identify which (the weights), the external factor chi, and an
-- explicit delta or zeta. Delta and zeta are resolved by the engine (pganon.sa_model).

CREATE OR REPLACE FUNCTION pganon._sensitive_column(did int, dataset text, column_name text, what text)
RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pganon.attribute a WHERE a.dataset_id = did
                    AND a.column_name = _sensitive_column.column_name AND a.role = 'sensitive') THEN
    RAISE EXCEPTION '% "%" is not a sensitive attribute of dataset "%"', what, column_name, dataset
      USING ERRCODE = 'PA001',
            HINT = 'declare it first with pganon.set_attribute(dataset, column, ''sensitive''); list them in pganon.attributes';
  END IF;
END $$;

CREATE OR REPLACE FUNCTION pganon.set_dependency(dataset text, column_name text, identified_by text[])
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  did int := pganon._dataset_id(dataset);
  x text;
BEGIN
  PERFORM pganon._sensitive_column(did, dataset, column_name, 'column');
  FOREACH x IN ARRAY coalesce(identified_by, '{}') LOOP
    IF x = column_name THEN
      RAISE EXCEPTION 'sensitive attribute "%" is listed in its own dependency list', column_name
        USING ERRCODE = 'PA002', HINT = 'an attribute cannot identify itself: remove it from identified_by';
    END IF;
    PERFORM pganon._sensitive_column(did, dataset, x, 'identifying column');
  END LOOP;
  DELETE FROM pganon.sa_dependency d WHERE d.dataset_id = did AND d.column_name = set_dependency.column_name;
  INSERT INTO pganon.sa_dependency (dataset_id, column_name, identified_by)
  SELECT DISTINCT did, set_dependency.column_name, u FROM unnest(identified_by) AS u;
END $$;
COMMENT ON FUNCTION pganon.set_dependency(text, text, text[]) IS
  'Domain knowledge: the sensitive attributes that identify column_name (Khan et al. 2020, Table 11). '
  'Its weight is their number. Replaces the earlier list; ''{}'' clears it.';

CREATE OR REPLACE FUNCTION pganon._linking_row(did int) RETURNS void
LANGUAGE sql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ INSERT INTO pganon.sa_linking (dataset_id) VALUES (did) ON CONFLICT DO NOTHING $$;

CREATE OR REPLACE FUNCTION pganon.set_external_factor(dataset text, column_name text, chi numeric)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE did int := pganon._dataset_id(dataset);
BEGIN
  PERFORM pganon._sensitive_column(did, dataset, column_name, 'column');
  PERFORM pganon._linking_row(did);
  UPDATE pganon.sa_linking l
     SET chi = CASE WHEN set_external_factor.chi IS NULL THEN l.chi - column_name
                    ELSE l.chi || jsonb_build_object(column_name, set_external_factor.chi) END
   WHERE l.dataset_id = did;
END $$;
COMMENT ON FUNCTION pganon.set_external_factor(text, text, numeric) IS
  'The external factor chi of a sensitive attribute: added to its weight when it ties for the maximum '
  '(Khan et al. 2020), e.g. because its values are public elsewhere. NULL removes it.';

CREATE OR REPLACE FUNCTION pganon.set_delta(dataset text, column_name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE did int := pganon._dataset_id(dataset);
BEGIN
  IF column_name IS NOT NULL THEN
    PERFORM pganon._sensitive_column(did, dataset, column_name, 'delta');
  END IF;
  PERFORM pganon._linking_row(did);
  UPDATE pganon.sa_linking l SET delta = column_name WHERE l.dataset_id = did;
END $$;
COMMENT ON FUNCTION pganon.set_delta(text, text) IS
  'Explicit delta, the SA that links fingerprint buckets (must be one of the maximum-weighted SAs). NULL: derive it.';

CREATE OR REPLACE FUNCTION pganon.set_zeta(dataset text, columns text[]) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE did int := pganon._dataset_id(dataset); x text;
BEGIN
  FOREACH x IN ARRAY coalesce(columns, '{}') LOOP
    PERFORM pganon._sensitive_column(did, dataset, x, 'zeta column');
  END LOOP;
  PERFORM pganon._linking_row(did);
  UPDATE pganon.sa_linking l SET zeta = columns WHERE l.dataset_id = did;
END $$;
COMMENT ON FUNCTION pganon.set_zeta(text, text[]) IS
  'Explicit zeta, the minimum-weighted SAs that the relaxed condition eq. (5) ignores. NULL: derive it.';

CREATE OR REPLACE VIEW pganon.sa_dependencies AS
SELECT d.name AS dataset, a.column_name,
       coalesce(array_agg(x.identified_by::text ORDER BY b.position) FILTER (WHERE x.identified_by IS NOT NULL),
                '{}') AS identified_by,
       count(x.identified_by)::int AS weight,
       (l.chi ->> a.column_name)::numeric AS chi,
       l.delta::text = a.column_name::text AS is_delta
  FROM pganon.attribute a JOIN pganon.dataset d ON d.id = a.dataset_id
  LEFT JOIN pganon.sa_dependency x ON x.dataset_id = a.dataset_id AND x.column_name = a.column_name
  LEFT JOIN pganon.attribute b ON b.dataset_id = x.dataset_id AND b.column_name = x.identified_by
  LEFT JOIN pganon.sa_linking l ON l.dataset_id = a.dataset_id
 WHERE a.role = 'sensitive'
 GROUP BY d.name, a.column_name, a.position, l.chi, l.delta
 ORDER BY d.name, a.position;
COMMENT ON VIEW pganon.sa_dependencies IS
  'Per sensitive attribute: the SAs that identify it, its weight (their number), chi, and whether it is the explicit delta.';
