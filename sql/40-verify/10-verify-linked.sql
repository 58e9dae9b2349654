-- The independent verifier of GT/ST releases with bucket links ((c,k)-anonymization and
-- (p,k)-angelization, spec 004 §1.4-1.5). Like 00-verify.sql it shares no code with the engine:
-- every check is SQL over the release relations, the recorded parameters and the source.
-- pganon.verify (00-verify.sql) dispatches the 'linked' family here.

CREATE OR REPLACE FUNCTION pganon._verify_linked(lay jsonb, source regclass, source_rows bigint,
                                                 suppressed_rows bigint, dataset_id int)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
-- GT/ST releases with bucket links ((c,k)-anonymization, (p,k)-angelization; spec 004 §1.4-1.5).
DECLARE
  gt regclass := (lay->'relations'->>'gt')::regclass;
  st regclass := (lay->'relations'->>'st')::regclass;
  stl regclass := (lay->'relations'->>'st_long')::regclass;
  map regclass := (lay->'relations'->>'map')::regclass;
  cats regclass := (lay->'relations'->>'categories')::regclass;
  keycol text := lay->>'key';
  delta text := lay->>'delta';
  zeta text[] := ARRAY(SELECT jsonb_array_elements_text(lay->'zeta'));
  k int := (lay->>'k')::int;
  ck boolean := lay->>'model' = 'ck';
  need int := coalesce((lay->>'c')::int, (lay->>'p')::int);
  -- eq. (4) is checked when the release promises strict mode or says every pair meets it;
  -- eq. (5) only for a release that asked for mode 'relax' (and records it)
  is_strict boolean := coalesce(lay->>'mode', 'strict') = 'strict' OR lay->>'mode_achieved' = 'strict';
  relaxed jsonb := coalesce(lay->'relaxed', '{}');
  cf int := (lay->>'c_f')::int;
  qcols text; gcells text := ''; qi jsonb;
  n bigint; m bigint; bad bigint; bad2 bigint; ex text; sub text;
  nb bigint; nv bigint; nr bigint; mx bigint;
  sas text[]; masks text; singles text; viol text; exs text; cells text;
  groups text; broken text; bucket_masks text; found boolean;
BEGIN
  SELECT string_agg(format('%I', x->>'column'), ', ') INTO qcols FROM jsonb_array_elements(lay->'qis') x;

  -- k-anonymity: every published QI vector (the group's ranges and its kept categorical values)
  -- occurs at least k times, and every group has at least k rows
  EXECUTE format('SELECT count(*), min(format(''group %%s has a QI vector on %%s rows'', group_id, c))
                    FROM (SELECT group_id, count(*) AS c FROM %s GROUP BY group_id, %s) x WHERE c < %s',
                 gt, qcols, k) INTO bad, ex;
  "check" := 'k_anonymity'; passed := bad = 0;
  detail := CASE WHEN passed THEN format('every QI vector of the GT occurs at least k = %s times', k)
                 ELSE format('%s QI vector(s) below k = %s, e.g. %s', bad, k, ex) END;
  RETURN NEXT;

  -- categories per bucket (c of (c,k), p of (p,k)) and records per delta value per bucket (c_f)
  EXECUTE format('SELECT count(*) FILTER (WHERE ncat < %1$s OR n < %2$s), min(format(''bucket %%s: %%s categories, %%s records'', bucket_id, ncat, n))
                    FROM (SELECT m.bucket_id, count(DISTINCT c.category) AS ncat, count(*) AS n
                            FROM %3$s m JOIN %4$s s USING (%5$I) LEFT JOIN %6$s c ON c.value = s.%7$I::text
                           GROUP BY m.bucket_id) x',
                 need, k, map, source, keycol, cats, delta) INTO bad, ex;
  "check" := CASE WHEN ck THEN 'c_diversity' ELSE 'p_sensitivity' END;
  passed := bad = 0;
  detail := CASE WHEN passed THEN format('every bucket holds records of at least %s categories and at least k = %s records', need, k)
                 ELSE format('%s bucket(s) fall short, e.g. %s', bad, ex) END;
  RETURN NEXT;
  IF ck THEN
    -- c_f: no (bucket, delta value) holds more than c_f records, unless the release records that
    -- c_f was relaxed (asked for with c_f_excess 'allow'); then the recorded figures must be the
    -- true ones, so a release cannot understate how far it exceeds c_f
    EXECUTE format('SELECT count(*), count(DISTINCT bucket_id), count(DISTINCT v), coalesce(sum(n - %5$s), 0), coalesce(max(n), 0),
                           min(format(''bucket %%s holds %%s records of %%s'', bucket_id, n, v))
                      FROM (SELECT m.bucket_id, s.%1$I::text AS v, count(*) AS n FROM %2$s m JOIN %3$s s USING (%4$I)
                             GROUP BY 1, 2 HAVING count(*) > %5$s) x', delta, map, source, keycol, cf)
      INTO bad, nb, nv, nr, mx, ex;
    "check" := 'c_f';
    IF relaxed ? 'c_f_exceeded' THEN
      passed := (bad, nb, nv, nr, mx) = ((relaxed->>'c_f_exceeded')::bigint, (relaxed->>'buckets_over_c_f')::bigint,
                                         (relaxed->>'delta_values_over_c_f')::bigint, (relaxed->>'records_over_c_f')::bigint,
                                         (relaxed->>'max_delta_count')::bigint);
      detail := CASE WHEN passed
        THEN format('c_f = %s relaxed, as the release records: %s (bucket, %s value) pair(s) above c_f in %s bucket(s), '
                    '%s %s value(s), %s record(s) above c_f, at most %s records of one value in a bucket',
                    cf, bad, delta, nb, nv, delta, nr, mx)
        ELSE format('the release records c_f = %s relaxed by %s pair(s), %s bucket(s), %s value(s), %s record(s), max %s, '
                    'but its buckets hold %s pair(s), %s bucket(s), %s value(s), %s record(s), max %s above c_f',
                    cf, relaxed->>'c_f_exceeded', relaxed->>'buckets_over_c_f', relaxed->>'delta_values_over_c_f',
                    relaxed->>'records_over_c_f', relaxed->>'max_delta_count', bad, nb, nv, nr, mx) END;
    ELSE
      passed := bad = 0;
      detail := CASE WHEN passed THEN format('no bucket holds more than c_f = %s records of one %s value', cf, delta)
                     ELSE format('%s (bucket, %s value) pair(s) above c_f = %s in %s bucket(s) (%s record(s) above c_f, '
                                 'up to %s in one bucket, e.g. %s), and the release does not record c_f as relaxed',
                                 bad, delta, cf, nb, nr, mx, ex) END;
    END IF;
    RETURN NEXT;

    sas := ARRAY(SELECT x FROM jsonb_array_elements_text(lay->'sas') x WHERE x <> delta ORDER BY x);
    SELECT string_agg(format('(%L, %I::text[])', x, x), ', ') INTO cells FROM jsonb_array_elements_text(lay->'sas') x;
    -- eq. (4) (strict) or eq. (5) (relaxed) for every pair of buckets that share a delta value:
    -- no other SA (outside zeta for eq. 5) may have exactly one value in common. The value sets
    -- are read from the published ST (what analysts read), not from its long form. Each bucket's
    -- value set of each SA is first made a bit string over that SA's values (one pass over the
    -- ST's values). Buckets are then grouped by value set, so the work grows with the number of
    -- distinct value sets squared, not with the pairs of buckets (nearly every pair of buckets
    -- shares a delta value when delta has few values):
    --  * linkable pairs: per pair of distinct delta sets that meet, the product of their bucket
    --    counts, plus c(c-1)/2 within each set;
    --  * a pair of buckets breaks the equation in SA s iff it shares a delta value and its s sets
    --    meet in one value. Two different s sets M1, M2 meeting in one value are held by such a
    --    pair iff the union of the delta sets of the buckets holding M1 meets that of M2 (a
    --    common value v: a bucket with M1 and one with M2 both hold v); buckets with the same
    --    one-value s set form one iff two of them share a delta value, i.e. the sum of their
    --    delta set sizes exceeds the size of the union.
    -- Only when some pair breaks the equation are the pairs themselves enumerated (one nested
    -- loop over the bucket pairs, one AND and bit count per SA), to count them and name the
    -- smallest; the detail is then the same as always. Memory: one bit string per bucket and SA.
    SELECT coalesce(string_agg(format('bit_or(set_bit(c.zero, c.code, 1)) FILTER (WHERE v.sa = %L) AS m%s', x.sa, x.n - 1), ', ' ORDER BY x.n), ''),
           coalesce(string_agg(format('bit_count(a.m%1$s & b.m%1$s) = 1 AS s%1$s', x.n - 1), ', ' ORDER BY x.n), ''),
           coalesce(string_agg(format('s%s', x.n - 1), ' OR ' ORDER BY x.n) FILTER (WHERE is_strict OR NOT x.sa = ANY (zeta)), 'false'),
           coalesce(string_agg(format('CASE WHEN s%s THEN format(''buckets %%s and %%s share one %%s value'', i, j, %L) END', x.n - 1, x.sa), ', ' ORDER BY x.n)
                      FILTER (WHERE is_strict OR NOT x.sa = ANY (zeta)), 'NULL'),
           coalesce(string_agg(format(', g%1$s AS (SELECT m%1$s AS ms, bit_or(d) AS dor, sum(bit_count(d)) AS dsum FROM m
                                                    WHERE d IS NOT NULL AND m%1$s IS NOT NULL GROUP BY 1)', x.n - 1), '' ORDER BY x.n)
                      FILTER (WHERE is_strict OR NOT x.sa = ANY (zeta)), ''),
           coalesce(string_agg(format('EXISTS (SELECT 1 FROM g%1$s a JOIN g%1$s b ON a.ms < b.ms AND bit_count(a.ms & b.ms) = 1
                                                                           AND bit_count(a.dor & b.dor) > 0)
                                       OR EXISTS (SELECT 1 FROM g%1$s WHERE bit_count(ms) = 1 AND dsum > bit_count(dor))', x.n - 1), ' OR ' ORDER BY x.n)
                      FILTER (WHERE is_strict OR NOT x.sa = ANY (zeta)), 'false')
      INTO masks, singles, viol, exs, groups, broken
      FROM (SELECT s.sa, row_number() OVER (ORDER BY s.sa) AS n FROM unnest(sas) AS s(sa)) x;
    bucket_masks := format('WITH v AS (SELECT DISTINCT s.bucket_id, x.sa, u.value FROM %1$s s CROSS JOIN LATERAL (VALUES %4$s) AS x(sa, vals)
                                          CROSS JOIN LATERAL unnest(x.vals) AS u(value) WHERE u.value IS NOT NULL),
                                 c AS (SELECT sa, value, (dense_rank() OVER (PARTITION BY sa ORDER BY value) - 1)::int AS code,
                                              repeat(''0'', (count(*) OVER (PARTITION BY sa))::int)::varbit AS zero
                                         FROM (SELECT DISTINCT sa, value FROM v) x),
                                 m AS MATERIALIZED (SELECT v.bucket_id AS b, bit_or(set_bit(c.zero, c.code, 1)) FILTER (WHERE v.sa = %2$L) AS d%3$s
                                                      FROM v JOIN c USING (sa, value) GROUP BY v.bucket_id)',
                           st, delta, CASE WHEN masks = '' THEN '' ELSE ', ' || masks END, cells);
    EXECUTE bucket_masks || format(', l AS (SELECT d, count(*) AS c FROM m WHERE d IS NOT NULL GROUP BY 1)%1$s
                                    SELECT (SELECT coalesce(sum(CASE WHEN a.d = b.d THEN a.c * (a.c - 1) / 2 ELSE a.c * b.c END), 0)
                                              FROM l a JOIN l b ON a.d <= b.d AND bit_count(a.d & b.d) > 0), %2$s',
                                   groups, broken) INTO n, found;
    bad := 0; ex := NULL;
    IF found THEN
      EXECUTE bucket_masks || format(' SELECT count(*), count(*) FILTER (WHERE %1$s), min(LEAST(%2$s, NULL)) FILTER (WHERE %1$s)
                                         FROM (SELECT a.b AS i, b.b AS j%3$s FROM m a JOIN m b ON a.b < b.b AND bit_count(a.d & b.d) > 0 OFFSET 0) p',
                                     viol, exs, CASE WHEN singles = '' THEN '' ELSE ', ' || singles END) INTO n, bad, ex;
    END IF;
    "check" := CASE WHEN is_strict THEN 'fcorr_eq4' ELSE 'fcorr_eq5' END; passed := bad = 0;
    detail := CASE WHEN passed THEN format('%s linkable bucket pair(s); none shares exactly one value of %s', n,
                                           CASE WHEN is_strict THEN 'any other SA' ELSE 'an SA outside zeta' END)
                                    || CASE WHEN is_strict THEN '' ELSE ' (mode relax, as the release records)' END
                   ELSE format('%s of %s linkable pair(s) break eq. %s, e.g. %s', bad, n, CASE WHEN is_strict THEN 4 ELSE 5 END, ex) END;
    RETURN NEXT;
  END IF;

  -- every source row is published at most once, and the rest are counted as suppressed
  RETURN QUERY SELECT * FROM pganon._verify_partition(map, source, keycol, gt, suppressed_rows, source_rows);

  -- the GT holds, per (group, bucket), as many rows as the map, each group's numeric cells are the
  -- group's exact [min, max], and kept categorical values are those of the group's records
  FOR qi IN SELECT * FROM jsonb_array_elements(lay->'qis') LOOP
    -- the range type of the GT's cell and its subtype: the group's [min, max] is built in it (a
    -- smallint group as int4range of integers, a real one as numrange of numerics)
    SELECT format_type(a.atttypid, NULL), format_type(r.rngsubtype, NULL) INTO ex, sub
      FROM pg_attribute a LEFT JOIN pg_range r ON r.rngtypid = a.atttypid
     WHERE a.attrelid = gt AND a.attname = qi->>'column';
    gcells := gcells || CASE WHEN qi->>'kind' IN ('numeric', 'date')
      THEN format(' + (SELECT count(*) FROM (SELECT m.group_id, min(s.%1$I) AS lo, max(s.%1$I) AS hi FROM %2$s m JOIN %3$s s USING (%4$I) GROUP BY 1) r
                        JOIN %5$s g USING (group_id) WHERE g.%1$I IS DISTINCT FROM %6$s(r.lo::%7$s, r.hi::%7$s, ''[]''))',
                  qi->>'column', map, source, keycol, gt, ex, sub)
      WHEN coalesce((qi->>'hierarchy')::boolean, false)
      -- with a hierarchy: a leaf cell is a kept value (counted as below); an inner node is the
      -- group's generalization, one per group, and it covers every record of the group
      THEN replace(format(' + (SELECT count(*) FROM (SELECT group_id, bucket_id, %1$I AS v, count(*) AS c FROM %2$s WHERE %1$I IN (SELECT node FROM leaves) GROUP BY 1, 2, 3) g
                        FULL JOIN (SELECT m.group_id, m.bucket_id, s.%1$I::text AS v, count(*) AS c FROM %3$s m JOIN %4$s s USING (%5$I)
                                    WHERE m.group_id IN (SELECT group_id FROM %2$s WHERE %1$I IN (SELECT node FROM leaves)) GROUP BY 1, 2, 3) r
                          USING (group_id, bucket_id, v) WHERE g.c IS DISTINCT FROM r.c)
                  + (SELECT count(*) FROM (SELECT group_id FROM %2$s WHERE %1$I NOT IN (SELECT node FROM leaves) GROUP BY 1 HAVING count(DISTINCT %1$I) > 1) x)
                  + (SELECT count(*) FROM %3$s m JOIN %4$s s USING (%5$I)
                       JOIN (SELECT DISTINCT group_id, %1$I AS cell FROM %2$s WHERE %1$I NOT IN (SELECT node FROM leaves)) g USING (group_id)
                       LEFT JOIN pganon._hierarchy_closure(%6$s, %7$L) h ON h.node = g.cell AND h.leaf = s.%1$I::text
                      WHERE h.node IS NULL)',
                  qi->>'column', gt, map, source, keycol, dataset_id, qi->>'column'),
                   '(SELECT node FROM leaves)',
                   format('(SELECT n.node FROM pganon.hierarchy_node n WHERE n.dataset_id = %1$s AND n.column_name = %2$L
                             AND NOT EXISTS (SELECT 1 FROM pganon.hierarchy_node x WHERE x.dataset_id = %1$s
                                             AND x.column_name = %2$L AND x.parent = n.node))', dataset_id, qi->>'column'))
      ELSE format(' + (SELECT count(*) FROM (SELECT group_id, bucket_id, %1$I AS v, count(*) AS c FROM %2$s WHERE %1$I <> ''*'' GROUP BY 1, 2, 3) g
                        FULL JOIN (SELECT m.group_id, m.bucket_id, s.%1$I::text AS v, count(*) AS c FROM %3$s m JOIN %4$s s USING (%5$I)
                                    WHERE m.group_id IN (SELECT group_id FROM %2$s WHERE %1$I <> ''*'') GROUP BY 1, 2, 3) r
                          USING (group_id, bucket_id, v) WHERE g.c IS DISTINCT FROM r.c)',
                  qi->>'column', gt, map, source, keycol) END;
  END LOOP;
  EXECUTE format('SELECT (SELECT count(*) FROM (SELECT group_id, bucket_id, count(*) AS c FROM %1$s GROUP BY 1, 2) g
                            FULL JOIN (SELECT group_id, bucket_id, count(*) AS c FROM %2$s GROUP BY 1, 2) r USING (group_id, bucket_id)
                           WHERE g.c IS DISTINCT FROM r.c)%3$s', gt, map, gcells) INTO bad;
  "check" := 'gt_matches_source'; passed := bad = 0;
  detail := CASE WHEN passed THEN 'every GT row is its record''s group generalization and links to its record''s bucket'
                 ELSE format('%s mismatch(es) between the GT and the source', bad) END;
  RETURN NEXT;

  -- the ST holds, per bucket and SA, exactly the distinct values of the bucket's records
  EXECUTE format('SELECT count(*) FROM (SELECT bucket_id, sa, value FROM %1$s) a
                    FULL JOIN (SELECT DISTINCT m.bucket_id, x.sa, x.value FROM %2$s m JOIN %3$s s USING (%4$I),
                               LATERAL (VALUES %5$s) AS x(sa, value)) b USING (bucket_id, sa, value)
                   WHERE a.bucket_id IS NULL OR b.bucket_id IS NULL',
                 stl, map, source, keycol,
                 (SELECT string_agg(format('(%L, s.%I::text)', x, x), ', ') FROM jsonb_array_elements_text(lay->'sas') x)) INTO bad;
  EXECUTE format('SELECT count(*) FROM (SELECT bucket_id, sa, value FROM %1$s) a FULL JOIN (SELECT t.bucket_id, x.sa, u.value
                  FROM %2$s t, LATERAL (VALUES %3$s) AS x(sa, vals), unnest(x.vals) AS u(value)) b USING (bucket_id, sa, value)
                  WHERE a.bucket_id IS NULL OR b.bucket_id IS NULL', stl, st,
                 (SELECT string_agg(format('(%L, t.%I::text[])', x, x), ', ') FROM jsonb_array_elements_text(lay->'sas') x)) INTO bad2;
  "check" := 'st_matches_source'; passed := bad = 0 AND bad2 = 0;
  detail := CASE WHEN passed THEN 'every bucket of the ST lists exactly the distinct sensitive values of its records'
                 ELSE format('%s (bucket, SA, value) mismatch(es) with the source, %s between ST and its long form', bad, bad2) END;
  RETURN NEXT;

  RETURN QUERY SELECT * FROM pganon._verify_no_identifiers(ARRAY[gt, st, stl], keycol, dataset_id);
END $$;
