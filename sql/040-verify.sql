-- The independent verifier: SQL over the release relations, the recorded levels and the source,
-- deliberately sharing no code with the engine. publish() calls it and aborts on any failure;
-- an admin may call it on any release at any time (it reads the source, so it is admin-only).

CREATE OR REPLACE FUNCTION pganon._verify_bucketization(lay jsonb, source regclass, source_rows bigint,
                                                        suppressed_rows bigint, dataset_id int)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
DECLARE
  gt regclass := (lay->'relations'->>'gt')::regclass;
  st regclass := (lay->'relations'->>'st')::regclass;
  map regclass := (lay->'relations'->>'map')::regclass;
  lv regclass := (lay->'relations'->>'levels')::regclass;
  keycol text := lay->>'key';
  lsl boolean := lay->>'model' = 'lsl';
  lbase int := (lay->>'l')::int;
  sa text;
  q jsonb;
  n bigint; m bigint; k bigint; bad bigint;
  ex text;
  gt_cols text := '';
  src_cols text := '';
  contain text := 'true';
  sa_cols text;
  coltype text;
BEGIN
  -- 1+2. diversity of every group per sensitive attribute (Def 10/11, or Def 7/8 for the
  -- baselines), with group sizes taken from the GT; and GT and ST agree on groups and sizes.
  -- One hash aggregate per SA over the ST (an unpivot would sort); group sizes are the ST's own
  -- sums here, and the GT's sizes must equal them (gt_st_agree).
  SELECT string_agg(format('SELECT group_id, %L AS sa, %I::text AS v, sum(count) AS c FROM %s GROUP BY 1, 3', x, x, st),
                    ' UNION ALL ') INTO sa_cols FROM jsonb_array_elements_text(lay->'sas') x;
  EXECUTE format(
    'SELECT count(*), min(format(''group %%s: %%s=%%s occurs %%s times in %%s rows, l=%%s'', v.group_id, v.sa, v.v,
                                  v.c, stn.n, coalesce(lv.l::text, ''none'')))
       FROM (%1$s) v JOIN (SELECT group_id, sum(count) AS n FROM %2$s GROUP BY 1) stn USING (group_id)
       LEFT JOIN %3$s lv ON lv.sa = v.sa AND lv.value = v.v
      WHERE CASE WHEN %4$L THEN lv.l IS NULL OR v.c * lv.l > stn.n ELSE v.c * %5$s > stn.n END',
    sa_cols, st, lv, lsl, coalesce(lbase, 0)) INTO bad, ex;
  EXECUTE format('SELECT count(*) FROM (SELECT group_id, count(*) AS n FROM %s GROUP BY 1) a
                  FULL JOIN (SELECT group_id, sum(count) AS n FROM %s GROUP BY 1) b USING (group_id)
                  WHERE a.n IS DISTINCT FROM b.n', gt, st) INTO k;
  "check" := CASE WHEN lsl THEN 'lsl_diversity' ELSE 'l_diversity' END;
  passed := bad = 0;
  detail := CASE WHEN passed THEN 'every group is ' || CASE WHEN lsl THEN 'L_sl-diverse per sensitive attribute'
                 ELSE format('%s-diverse per sensitive attribute', lbase) END
            ELSE format('%s violation(s), e.g. %s', bad, ex) END;
  RETURN NEXT;
  "check" := 'gt_st_agree'; passed := k = 0;
  detail := CASE WHEN passed THEN 'GT and ST have the same groups and group sizes'
                 ELSE format('%s group(s) differ between GT and ST', k) END;
  RETURN NEXT;

  -- 3. every source row is published once or counted as suppressed
  EXECUTE format('SELECT count(*), count(DISTINCT %I) FROM %s', keycol, map) INTO n, m;
  EXECUTE format('SELECT count(*) FROM %s', gt) INTO k;
  EXECUTE format('SELECT count(*) FROM %s m WHERE NOT EXISTS (SELECT 1 FROM %s s WHERE s.%I = m.%I)',
                 map, source, keycol, keycol) INTO bad;
  "check" := 'partition';
  passed := n = m AND n = k AND n + suppressed_rows = source_rows AND bad = 0;
  detail := format('%s published + %s suppressed = %s source rows; %s GT rows; %s duplicate and %s unknown keys',
                   n, suppressed_rows, source_rows, k, n - m, bad);
  RETURN NEXT;

  -- 4. the published rows are the source rows of their group (exact or contained in the generalization)
  FOR q IN SELECT * FROM jsonb_array_elements(lay->'qis') LOOP
    gt_cols := gt_cols || format(', %I', q->>'column');
    src_cols := src_cols || format(', s.%I', q->>'column');
    SELECT format_type(a.atttypid, a.atttypmod) INTO coltype FROM pg_attribute a
     WHERE a.attrelid = gt AND a.attname = q->>'column';
    contain := contain || CASE
      WHEN coltype LIKE '%range' THEN format(' AND g.%I @> s.%I%s', q->>'column', q->>'column',
                                             CASE WHEN coltype = 'numrange' THEN '::numeric' ELSE '' END)
      WHEN coltype LIKE '%[]' THEN format(' AND s.%I::text = ANY (g.%I)', q->>'column', q->>'column')
      ELSE format(' AND g.%I = s.%I', q->>'column', q->>'column') END;
  END LOOP;
  SELECT string_agg(format('%I', x), ', '), string_agg(format('s.%I', x), ', ') INTO sa_cols, ex
    FROM jsonb_array_elements_text(lay->'sas') x;
  -- Multiset equality per group through a row count and a sum of 64-bit row hashes: one pass over
  -- map and source, hash aggregates only; a wrong row goes unnoticed with probability ~2^-64.
  EXECUTE format(
    'WITH src AS (SELECT m.group_id, count(*) AS n, sum(hash_record_extended(ROW(%1$s), 7)) AS hq,
                         sum(hash_record_extended(ROW(%2$s), 7)) AS hs
                    FROM %3$s m JOIN %4$s s USING (%5$I) GROUP BY 1),
          g AS (SELECT group_id, count(*) AS n, sum(hash_record_extended(ROW(%6$s), 7)) AS hq FROM %7$s GROUP BY 1),
          t AS (SELECT group_id, sum(count) AS n, sum(hash_record_extended(ROW(%8$s), 7)::numeric * count) AS hs,
                       count(*) - count(DISTINCT ROW(%8$s)) AS dup FROM %9$s GROUP BY 1)
     SELECT (SELECT count(*) FROM g FULL JOIN src USING (group_id) WHERE (g.n, g.hq) IS DISTINCT FROM (src.n, src.hq)),
            (SELECT count(*) FROM t FULL JOIN src USING (group_id) WHERE (t.n, t.hs) IS DISTINCT FROM (src.n, src.hs) OR t.dup > 0)',
    substr(src_cols, 3), ex, map, source, keycol, substr(gt_cols, 3), gt, sa_cols, st) INTO m, bad;
  IF (lay->>'generalized')::boolean THEN
    -- A generalized GT holds ranges and value sets: check that each contains its source values.
    EXECUTE format('SELECT count(*) FROM %s m JOIN %s s USING (%I)
                    JOIN (SELECT DISTINCT ON (group_id) * FROM %s ORDER BY group_id) g USING (group_id)
                    WHERE NOT (%s)', map, source, keycol, gt, contain) INTO m;
  END IF;
  "check" := 'gt_matches_source'; passed := m = 0;
  detail := CASE WHEN passed THEN 'every group of the GT holds exactly (or contains) the quasi-identifiers of its source rows'
                 ELSE format('%s group(s) of the GT do not match the source', m) END;
  RETURN NEXT;
  "check" := 'st_matches_source'; passed := bad = 0;
  detail := CASE WHEN passed THEN 'every group of the ST counts exactly the sensitive vectors of its source rows'
                 ELSE format('%s group(s) of the ST do not match the source', bad) END;
  RETURN NEXT;

  -- 5. nothing that identifies: no identifier column and no key in GT or ST
  SELECT count(*), string_agg(a.attname, ', ') INTO bad, ex FROM pg_attribute a
   WHERE a.attrelid IN (gt, st) AND a.attnum > 0 AND NOT a.attisdropped
     AND (a.attname = keycol OR a.attname IN (SELECT x.column_name FROM pganon.attribute x
                                               WHERE x.dataset_id = _verify_bucketization.dataset_id
                                                 AND x.role = 'identifier'));
  "check" := 'no_identifiers'; passed := bad = 0;
  detail := CASE WHEN passed THEN 'GT and ST carry no key or identifier column'
                 ELSE 'published identifier columns: ' || ex END;
  RETURN NEXT;
END $$;

CREATE OR REPLACE FUNCTION pganon.verify(release bigint)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
DECLARE r record;
BEGIN
  SELECT x.layout, x.status, x.source_rows, x.suppressed_rows, x.dataset_id, d.source INTO r
    FROM pganon.release x JOIN pganon.dataset d ON d.id = x.dataset_id WHERE x.id = release;
  IF NOT FOUND OR r.status <> 'published' THEN
    RAISE EXCEPTION 'release % does not exist or was dropped', release USING ERRCODE = 'PA001',
      HINT = 'list releases with SELECT * FROM pganon.releases';
  END IF;
  IF r.layout->>'family' = 'bucketization' THEN
    RETURN QUERY SELECT * FROM pganon._verify_bucketization(r.layout, r.source, r.source_rows,
                                                            r.suppressed_rows, r.dataset_id);
  ELSE
    RAISE EXCEPTION 'release % has an unknown layout family %', release, r.layout->>'family' USING ERRCODE = 'PA002';
  END IF;
END $$;
COMMENT ON FUNCTION pganon.verify(bigint) IS
  'Check a release independently of the engine: one row per check (check, passed, detail). Admin only: reads the source.';
