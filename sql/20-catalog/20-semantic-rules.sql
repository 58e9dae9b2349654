-- Semantic rules (spec 003 §2.3): what the data owner knows about sensitive values. Method
-- 'semantic' merges every equivalence class that one rule covers (nearly) entirely, so that no
-- published class reveals the rule's category (a similarity attack).

CREATE OR REPLACE FUNCTION pganon.set_semantic_rule(dataset text, rule_id text, column_name text, predicate text,
                                                    vals text[], category text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  did int := pganon._dataset_id(dataset);
  n int := coalesce(array_length(vals, 1), 0);
  v text;
BEGIN
  PERFORM pganon._sensitive_column(did, dataset, column_name, 'column');
  IF coalesce(rule_id, '') = '' OR coalesce(category, '') = '' THEN
    RAISE EXCEPTION 'a semantic rule needs a rule_id and a category' USING ERRCODE = 'PA002',
      HINT = 'e.g. pganon.set_semantic_rule(''heart'', ''H1'', ''cp'', ''in'', ''{1,2}'', ''heart disease'')';
  END IF;
  IF octet_length(rule_id) > 200 THEN
    RAISE EXCEPTION 'a rule_id is at most 200 bytes (this one has %)', octet_length(rule_id) USING ERRCODE = 'PA002';
  END IF;
  IF predicate IS NULL OR predicate NOT IN ('in', 'between', '=', '>', '>=', '<', '<=') THEN
    RAISE EXCEPTION 'unknown predicate % for semantic rule %', coalesce(predicate, 'NULL'), rule_id
      USING ERRCODE = 'PA002', HINT = 'predicates: in, between, =, >, >=, <, <=';
  END IF;
  IF (predicate = 'in' AND n = 0) OR (predicate = 'between' AND n <> 2)
     OR (predicate NOT IN ('in', 'between') AND n <> 1) THEN
    RAISE EXCEPTION 'semantic rule % with predicate % needs %', rule_id, predicate,
      CASE predicate WHEN 'in' THEN 'at least one value' WHEN 'between' THEN 'two values (low, high)'
                     ELSE 'exactly one value' END
      USING ERRCODE = 'PA002', HINT = 'give the values as a text array, e.g. ''{150,200}''';
  END IF;
  IF predicate <> 'in' AND predicate <> '=' THEN
    FOREACH v IN ARRAY vals LOOP
      IF v !~ '^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$' THEN
        RAISE EXCEPTION 'semantic rule %: % compares numbers, and % is not one', rule_id, predicate,
          quote_literal(left(v, 40)) || CASE WHEN length(v) > 40 THEN '…' ELSE '' END
          USING ERRCODE = 'PA002', HINT = 'use predicate ''in'' with a list of values for categories';
      END IF;
    END LOOP;
    IF predicate = 'between' AND vals[1]::numeric > vals[2]::numeric THEN
      RAISE EXCEPTION 'semantic rule %: between % and % is empty', rule_id, left(vals[1], 40), left(vals[2], 40)
        USING ERRCODE = 'PA002', HINT = 'give the low bound first';
    END IF;
  END IF;
  INSERT INTO pganon.semantic_rule AS r (dataset_id, rule_id, column_name, predicate, vals, category)
  VALUES (did, rule_id, column_name, predicate, vals, category)
  ON CONFLICT (dataset_id, rule_id) DO UPDATE
     SET column_name = EXCLUDED.column_name, predicate = EXCLUDED.predicate, vals = EXCLUDED.vals,
         category = EXCLUDED.category;
END $$;
COMMENT ON FUNCTION pganon.set_semantic_rule(text, text, text, text, text[], text) IS
  'Declare (or replace) a semantic rule on a sensitive attribute: predicate in (vals = the values), '
  'between (vals = {low, high}, inclusive) or =, >, >=, <, <= (one value; numeric comparisons), and its '
  'category. Example: SELECT pganon.set_semantic_rule(''heart'', ''H2'', ''trestbps'', ''between'', '
  '''{150,200}'', ''high resting blood pressure'');';

CREATE OR REPLACE FUNCTION pganon.drop_semantic_rule(dataset text, rule_id text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE did int := pganon._dataset_id(dataset);
BEGIN
  DELETE FROM pganon.semantic_rule r WHERE r.dataset_id = did AND r.rule_id = drop_semantic_rule.rule_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'dataset "%" has no semantic rule %', dataset, rule_id USING ERRCODE = 'PA001',
      HINT = 'list them with SELECT * FROM pganon.semantic_rules';
  END IF;
END $$;
COMMENT ON FUNCTION pganon.drop_semantic_rule(text, text) IS 'Remove one semantic rule of a dataset.';

CREATE OR REPLACE VIEW pganon.semantic_rules AS
SELECT d.name AS dataset, r.rule_id, r.column_name, r.predicate, r.vals, r.category
  FROM pganon.semantic_rule r JOIN pganon.dataset d ON d.id = r.dataset_id
 ORDER BY d.name, r.rule_id;
COMMENT ON VIEW pganon.semantic_rules IS 'The semantic rules of every dataset (semantic anonymization as compared by Nasr et al.).';
