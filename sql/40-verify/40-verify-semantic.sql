-- The semantic check of a release made by method 'semantic' (spec 003 §2.3, A11): no equivalence
-- class of the GT is covered by a recorded semantic rule at the recorded threshold. Independent of
-- the engine: the rules are read from the layout and evaluated in SQL on the GT's SA values.

CREATE OR REPLACE FUNCTION pganon._semantic_match(v text, predicate text, vals text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  -- numbers compare as numbers when both sides read as numbers, text as text otherwise
  SELECT CASE
    WHEN v IS NULL THEN false
    WHEN predicate IN ('in', '=') THEN
      v = ANY (vals) OR (v ~ '^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$' AND EXISTS (
        SELECT 1 FROM unnest(vals) x WHERE x ~ '^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$' AND x::numeric = v::numeric))
    WHEN v !~ '^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$' THEN false
    WHEN predicate = 'between' THEN v::numeric BETWEEN vals[1]::numeric AND vals[2]::numeric
    WHEN predicate = '>' THEN v::numeric > vals[1]::numeric
    WHEN predicate = '>=' THEN v::numeric >= vals[1]::numeric
    WHEN predicate = '<' THEN v::numeric < vals[1]::numeric
    WHEN predicate = '<=' THEN v::numeric <= vals[1]::numeric
  END $$;
COMMENT ON FUNCTION pganon._semantic_match(text, text, text[]) IS
  'Internal: does a sensitive value satisfy a semantic rule''s predicate (numbers as numbers).';

CREATE OR REPLACE FUNCTION pganon._verify_semantic(lay jsonb)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
DECLARE
  gt regclass := (lay->'relations'->>'gt')::regclass;
  theta numeric := (lay->'semantic'->>'coverage')::numeric;
  r jsonb;
  bad bigint := 0; n bigint; ex text; first text;
BEGIN
  FOR r IN SELECT * FROM jsonb_array_elements(lay->'semantic'->'rules') LOOP
    EXECUTE format('SELECT count(*), min(format(''class %%s: rule %%s covers %%s of %%s rows'', class_id, %L, m, c))
                      FROM (SELECT class_id, count(*) AS c,
                                   count(*) FILTER (WHERE pganon._semantic_match(%I::text, %L, %L::text[])) AS m
                              FROM %s GROUP BY class_id) x
                     WHERE m >= $1 * c', r->>'id', r->>'sa', r->>'predicate',
                   ARRAY(SELECT jsonb_array_elements_text(r->'vals')), gt)
      USING theta INTO n, ex;
    bad := bad + n;
    first := coalesce(first, ex);
  END LOOP;
  "check" := 'no_effective_rule'; passed := bad = 0;
  detail := CASE WHEN passed THEN format('no class is covered by a semantic rule at coverage %s', theta)
                 ELSE format('%s (class, rule) pair(s) at coverage >= %s, e.g. %s', bad, theta, first) END;
  RETURN NEXT;
END $$;
