-- Generalization hierarchies (spec 001 §1.2): one tree per attribute of a dataset, declared from
-- an ARX-style CSV (one row per leaf, leaf to root) or built from the column's values. The engine
-- validates the tree and that every value in the data is a leaf before anything is stored.

CREATE OR REPLACE FUNCTION pganon.set_hierarchy(dataset text, column_name text, csv text, sep text DEFAULT ';')
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT pganon._call('set_hierarchy', jsonb_build_object('dataset', dataset, 'column', column_name,
                                                              'csv', csv, 'sep', sep)) $$;
COMMENT ON FUNCTION pganon.set_hierarchy(text, text, text, text) IS
  'Declare the hierarchy of a dataset column from ARX-style CSV text: one row per leaf, leaf first, root last. '
  'Every value of the column must be a leaf. Replaces an earlier hierarchy. Returns its shape. '
  'Example: SELECT pganon.set_hierarchy(''adult'', ''sex'', E''Male;*\nFemale;*'');';

CREATE OR REPLACE FUNCTION pganon.build_hierarchy(dataset text, column_name text, builder text,
                                                  params jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT pganon._call('build_hierarchy', jsonb_build_object('dataset', dataset, 'column', column_name,
                                                                'builder', builder, 'params', params)) $$;
COMMENT ON FUNCTION pganon.build_hierarchy(text, text, text, jsonb) IS
  'Build the hierarchy of a dataset column from its distinct values. Builders: intervals '
  '(numeric; params {"widths": [5, 10, 20]}, each a multiple of the previous), dates (day > month > year), '
  'redaction (codes such as ZIP, one character more masked per level). '
  'Example: SELECT pganon.build_hierarchy(''adult'', ''age'', ''intervals'', ''{"widths": [5, 10, 20]}'');';

CREATE OR REPLACE FUNCTION pganon.hierarchy_csv(dataset text, column_name text, sep text DEFAULT ';')
RETURNS text
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT pganon._call('hierarchy_csv', jsonb_build_object('dataset', dataset, 'column', column_name,
                                                              'sep', sep)) #>> '{}' $$;
COMMENT ON FUNCTION pganon.hierarchy_csv(text, text, text) IS
  'The stored hierarchy of a dataset column as ARX-style CSV text (one row per leaf, leaf to root).';

CREATE OR REPLACE FUNCTION pganon.drop_hierarchy(dataset text, column_name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  DELETE FROM pganon.hierarchy h WHERE h.dataset_id = pganon._dataset_id(dataset)
     AND h.column_name = drop_hierarchy.column_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'column "%" of dataset "%" has no hierarchy', column_name, dataset
      USING ERRCODE = 'PA001', HINT = 'list them in pganon.hierarchies';
  END IF;
END $$;
COMMENT ON FUNCTION pganon.drop_hierarchy(text, text) IS 'Remove the hierarchy of a dataset column.';

CREATE OR REPLACE VIEW pganon.hierarchies AS
SELECT d.name AS dataset, h.column_name, h.origin, h.height, h.n_leaves AS leaves,
       (SELECT count(*) FROM pganon.hierarchy_node n
         WHERE n.dataset_id = h.dataset_id AND n.column_name = h.column_name) AS nodes,
       h.created_at
  FROM pganon.hierarchy h JOIN pganon.dataset d ON d.id = h.dataset_id;
COMMENT ON VIEW pganon.hierarchies IS 'The declared generalization hierarchies, one row per dataset column.';
