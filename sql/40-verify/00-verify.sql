-- The independent verifier: SQL over the release relations, the recorded levels and the source,
-- deliberately sharing no code with the engine. publish() calls it and aborts on any failure;
-- an admin may call it on any release at any time (it reads the source, so it is admin-only).

CREATE OR REPLACE FUNCTION pganon._verify_partition(map regclass, source regclass, keycol text, gt regclass,
                                                    suppressed_rows bigint, source_rows bigint)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- One GT row per published record: the map names each source key once, every key exists, and
-- published plus suppressed rows are the source rows (for the families with a per-record GT).
DECLARE n bigint; m bigint; bad bigint; g bigint; uniq boolean;
BEGIN
  -- keys are unique in the map when a unique index says so (the engine adds a primary key);
  -- otherwise they are counted
  SELECT count(*) > 0 INTO uniq FROM pg_index ix JOIN pg_attribute a ON a.attrelid = ix.indrelid
   WHERE ix.indrelid = map AND ix.indisunique AND ix.indnkeyatts = 1 AND ix.indpred IS NULL
     AND a.attnum = ix.indkey[0] AND a.attname = keycol;
  EXECUTE format('SELECT count(*), %4$s, count(*) - count(s.%1$I) FROM %2$s m LEFT JOIN %3$s s USING (%1$I)',
                 keycol, map, source, CASE WHEN uniq THEN 'count(*)' ELSE format('count(DISTINCT m.%I)', keycol) END)
    INTO n, m, bad;
  EXECUTE format('SELECT count(*) FROM %s', gt) INTO g;
  "check" := 'partition'; passed := n = m AND n = g AND n + suppressed_rows = source_rows AND bad = 0;
  detail := format('%s published + %s suppressed = %s source rows; %s GT rows; %s duplicate and %s unknown keys',
                   n, suppressed_rows, source_rows, g, n - m, bad);
  RETURN NEXT;
END $$;

CREATE OR REPLACE FUNCTION pganon._verify_no_identifiers(rels regclass[], keycol text, dataset_id int)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE bad bigint; ex text;
BEGIN
  SELECT count(*), string_agg(a.attname, ', ') INTO bad, ex FROM pg_attribute a
   WHERE a.attrelid = ANY (rels) AND a.attnum > 0 AND NOT a.attisdropped
     AND (a.attname = keycol OR a.attname IN (SELECT x.column_name FROM pganon.attribute x
                                               WHERE x.dataset_id = _verify_no_identifiers.dataset_id AND x.role = 'identifier'));
  "check" := 'no_identifiers'; passed := bad = 0;
  detail := CASE WHEN passed THEN 'the published relations carry no key or identifier column'
                 ELSE 'published identifier columns: ' || ex END;
  RETURN NEXT;
END $$;

CREATE OR REPLACE FUNCTION pganon._verify_st_pass(st regclass, sas jsonb, lsl boolean, lbase int, mg int, dataset_id int,
  minn int, OUT bad bigint, OUT k bigint, OUT st_n numeric, OUT st_bad bigint, OUT st_hs numeric, OUT st_hg numeric,
  OUT unsure bigint[], OUT odd bigint)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
-- The ST checks of _verify_bucketization in one hash aggregate by group: each SA value has a code
-- (L_sl: the values with a level in the catalog, the others take the default level's l; baseline:
-- the ST's distinct values); a group sums count * l into one b-bit field per code of int4 words, and
-- one add and mask per word tell whether some c * l exceeds n. A group goes to the exact form
-- (unsure) when a field could overflow, a count is NULL or < 1, a value has no code, or three masks
-- of row hashes do not show its SA vectors distinct. bad is NULL when the release does not suit this
-- form (a type whose equality is not its text's, too many values); bad and k are tested for > 0 only.
-- odd (anatomy): groups with n < minn or a vector counted twice where certain, and the NULL group.
DECLARE
  div boolean := lsl OR coalesce(lbase, 0) > 1; r record; cols jsonb := '{}'; cnt int := 0; x text; ord int;
  lmax int := 2; b int := 6; p int; h int; words int := 0; codes int; arms text; marr text; kexp text := '';
  wagg text := ''; wchk text := 'false'; vec text; isnul text := 'false'; unk text := 'false';
BEGIN
  SELECT string_agg(format(', st.%I', y), '' ORDER BY o) INTO vec FROM jsonb_array_elements_text(sas) WITH ORDINALITY AS s(y, o);
  IF div THEN
    -- codes compare values by their text: only types whose equality is that of their text
    IF EXISTS (SELECT 1 FROM jsonb_array_elements_text(sas) y JOIN pg_attribute a ON a.attrelid = st AND a.attname = y
                 LEFT JOIN pg_collation c ON c.oid = a.attcollation
                WHERE a.atttypid NOT IN ('text'::regtype, 'varchar'::regtype, 'int2'::regtype, 'int4'::regtype, 'int8'::regtype)
                   OR NOT coalesce(c.collisdeterministic, true)) THEN
      RETURN;
    END IF;
    -- the values with their l, once per value (pganon._effective_level: its own level, else the default)
    FOR r IN EXECUTE CASE WHEN lsl THEN format('SELECT s.column_name::text AS sa, s.value AS v, cl.l FROM pganon.security_level s
        LEFT JOIN pganon.level_l cl ON cl.dataset_id = s.dataset_id AND cl.level = s.level WHERE s.dataset_id = %s
        AND s.column_name::text IN (SELECT jsonb_array_elements_text(%L)) AND s.value IS NOT NULL ORDER BY 1, 2 LIMIT 401', dataset_id, sas)
      ELSE format('SELECT d.sa, d.v, %s AS l FROM (SELECT %s FROM %s GROUP BY GROUPING SETS (%s)) d ORDER BY 1, 2 LIMIT 401',
        lbase, (SELECT 'CASE' || string_agg(format(' WHEN GROUPING(%1$I) = 0 THEN %1$L', y), '') || ' END AS sa, CASE'
                       || string_agg(format(' WHEN GROUPING(%1$I) = 0 THEN %1$I::text', y), '') || ' END AS v'
                  FROM jsonb_array_elements_text(sas) y),
        st, (SELECT string_agg(format('(%I)', y), ', ') FROM jsonb_array_elements_text(sas) y)) END LOOP
      cnt := cnt + 1;
      cols := jsonb_set(cols, ARRAY[r.sa], coalesce(cols->r.sa, '[]') || jsonb_build_array(jsonb_build_array(r.v, r.l)));
      IF r.l > lmax THEN lmax := r.l; END IF;
    END LOOP;
    IF cnt > 400 THEN RETURN; END IF;
    WHILE (1 << (b - 1)) - 1 < 10 * lmax AND b < 15 LOOP b := b + 1; END LOOP; h := 1 << (b - 1); p := 31 / b;
    FOR x, ord IN SELECT y, o FROM jsonb_array_elements_text(sas) WITH ORDINALITY AS s(y, o) LOOP
      -- code >= 0: a value with l > 1 (its field); -1: l <= 1, never violates; -2: no l; -3: no code (exact form)
      SELECT string_agg(CASE WHEN e->>0 IS NULL THEN '' ELSE format(' WHEN %L THEN %s', e->>0,
               CASE WHEN e->1 = 'null' THEN -2 WHEN (e->>1)::int <= 1 THEN -1 ELSE c - 1 END) END, '' ORDER BY o),
             string_agg(format(',%s', (e->>1)::int << (b * ((c - 1) % p))::int), '' ORDER BY o) FILTER (WHERE c > 0),
             max(CASE WHEN e->>0 IS NOT NULL THEN NULL WHEN e->1 = 'null' THEN -2 WHEN (e->>1)::int <= 1 THEN -1 ELSE c - 1 END)
        INTO arms, marr, cnt
        FROM (SELECT e, o, CASE WHEN e->1 <> 'null' AND (e->>1)::int > 1
                                THEN count(*) FILTER (WHERE e->1 <> 'null' AND (e->>1)::int > 1) OVER (ORDER BY o) END AS c
                FROM jsonb_array_elements(coalesce(cols->x, '[]')) WITH ORDINALITY AS z(e, o)) q;
      -- a value without a code: L_sl, the default level's l decides it when it cannot violate
      codes := -3;
      IF lsl THEN   -- a NULL value never meets a level (the exact form joins on equality): -2
        SELECT CASE WHEN cl.l IS NULL THEN -2 WHEN cl.l <= 1 THEN -1 ELSE -3 END, -2 INTO codes, cnt FROM (SELECT 1) o
          LEFT JOIN pganon.level_l cl ON cl.dataset_id = _verify_st_pass.dataset_id AND cl.level = pganon._default_level(_verify_st_pass.dataset_id, x);
      END IF;
      kexp := kexp || format(', CASE WHEN st.%1$I IS NULL THEN %2$s ELSE %3$s END AS k%4$s', x, coalesce(cnt, -3),   -- no arm: every value uncoded
                             CASE WHEN coalesce(arms, '') = '' THEN codes::text ELSE format('CASE st.%I::text%s ELSE %s END', x, arms, codes) END, ord);
      isnul := isnul || format(' OR k%s = -2', ord); unk := unk || format(' OR k%s = -3', ord);
      FOR w IN 0 .. coalesce((length(marr) - length(replace(marr, ',', '')) - 1) / p, -1) LOOP
        words := words + 1;
        wagg := wagg || format(', sum(CASE WHEN count BETWEEN 1 AND %1$s THEN count * (''{%2$s}''::int4[])[k%3$s + 1] END) FILTER (WHERE k%3$s >= %4$s AND k%3$s < %5$s) AS w%6$s',
                               (h - 1) / lmax, substr(marr, 2), ord, w * p, (w + 1) * p, words);
        wchk := wchk || format(' OR (coalesce(w%s, 0) + (%s - n) * %s) & %s <> 0', words, h - 1,
                               (SELECT sum(1::bigint << (b * f)) FROM generate_series(0, p - 1) f),
                               (SELECT sum(1::bigint << (b * f + b - 1)) FROM generate_series(0, p - 1) f));
      END LOOP;
    END LOOP;
    IF words > 16 THEN RETURN; END IF;   -- a long CASE per row and many sums: the exact form is as fast
  END IF;
  EXECUTE format(
    'SELECT count(*) FILTER (WHERE cert AND CASE WHEN cert THEN %1$s END),
            count(*) FILTER (WHERE certv AND cmax::int8 * %2$s > n), coalesce(sum(n), 0), coalesce(sum(nbad), 0)::bigint,
            coalesce(sum(hs1), 0) + coalesce(sum(hs2), 0), coalesce(sum(hashint8extended(group_id, 11)::numeric * n), 0),
            array_agg(group_id) FILTER (WHERE group_id IS NOT NULL AND NOT (cert AND certv)),
            count(*) FILTER (WHERE group_id IS NULL OR (certv AND cmax > 1) OR n < %10$s)
       FROM (SELECT *, cn = r AND cmin >= 1 AND NOT unk%3$s AS cert,
                    cn = r AND cmin >= 1 AND (o1 = s1 OR o2 = s2 OR o3 = s3) AS certv
               FROM (SELECT group_id, sum(count) AS n, count(*) AS r, count(count) AS cn, min(count) AS cmin, max(count) AS cmax,
                            count(*) FILTER (WHERE count IS NULL OR count < 1) AS nbad,
                            bool_or(%4$s) AS isnul, bool_or(%5$s) AS unk%6$s,
                            bit_or(1 << (hr & 31)::int) AS o1, sum(1 << (hr & 31)::int) AS s1,
                            bit_or(1 << (hr >> 5 & 31)::int) AS o2, sum(1 << (hr >> 5 & 31)::int) AS s2,
                            bit_or(1 << (hr >> 10 & 31)::int) AS o3, sum(1 << (hr >> 10 & 31)::int) AS s3,
                            sum(hr) FILTER (WHERE count IS NOT NULL) AS hs1, sum(hr::numeric * (count - 1)) FILTER (WHERE count <> 1) AS hs2
                       FROM (SELECT st.group_id, st.count, hashint8extended(hash_record_extended(ROW(st.group_id%7$s), 7), 11) AS hr%8$s
                               FROM %9$s st OFFSET 0) s
                      GROUP BY group_id) g) c',
    CASE WHEN div THEN 'isnul OR ' || wchk ELSE 'false' END, mg,
    CASE WHEN words > 0 THEN format(' AND n * %s < %s', lmax, h) ELSE '' END, isnul, unk, wagg, vec, kexp, st, minn)
    INTO bad, k, st_n, st_bad, st_hs, st_hg, unsure, odd;
END $$;
COMMENT ON FUNCTION pganon._verify_st_pass(regclass, jsonb, boolean, int, int, int, int) IS
  'Internal: the ST checks of _verify_bucketization in one hash aggregate by group; the groups it cannot decide in unsure.';

CREATE OR REPLACE FUNCTION pganon._verify_bucketization(lay jsonb, source regclass, source_rows bigint,
                                                        suppressed_rows bigint, dataset_id int)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
DECLARE
  gt regclass := (lay->'relations'->>'gt')::regclass;
  st regclass := (lay->'relations'->>'st')::regclass;
  map regclass := (lay->'relations'->>'map')::regclass;
  keycol text := lay->>'key';
  lsl boolean := lay->>'model' = 'lsl';
  lbase int := (lay->>'l')::int;
  mg int := coalesce((lay->>'min_group')::int, 1);   -- releases before min_group promised 1
  sa text;
  q jsonb;
  n bigint; m bigint; k bigint; bad bigint;
  st_n numeric; st_bad bigint; st_hs numeric; st_hg numeric;
  gt_n bigint; gt_hq numeric; gt_hg numeric;
  src_hq numeric; src_hs numeric; src_hg numeric;
  count_keys boolean;
  ex text;
  gt_cols text := '';
  src_cols text := '';
  contain text := 'true';
  gsel text := '';
  convert boolean := false;
  sp record;
  sa_cols text;
  coltype text;
  one text;
  unsure bigint[];
BEGIN
  -- 1. diversity of every group per sensitive attribute (Def 10/11, or Def 7/8 for the
  -- baselines), on the ST's counts; values whose l is 1 can never violate (c * 1 <= n).
  -- Anatomy promises more on the SA vector: at least l rows per group, no vector twice.
  IF lay->>'model' = 'anatomy' THEN
    -- the ST sums too (2-4 below); the exact statements run only when a group is not shown to pass
    SELECT x.st_n, x.st_bad, x.st_hs, x.st_hg, x.odd, x.unsure INTO st_n, st_bad, st_hs, st_hg, k, unsure
      FROM pganon._verify_st_pass(st, lay->'sas', false, NULL, 1, dataset_id, lbase) x;
    bad := 0;
    SELECT string_agg(format('%I', x), ', ') INTO sa_cols FROM jsonb_array_elements_text(lay->'sas') x;
    IF k = 0 AND unsure IS NOT NULL THEN   -- the groups whose vectors the pass could not tell apart
      EXECUTE format('SELECT count(*) FROM (SELECT sum(count) AS c FROM %s WHERE group_id::bigint = ANY ($1)
                        GROUP BY group_id, %s) v WHERE c > 1', st, sa_cols) INTO k USING unsure;
    END IF;
    IF k > 0 THEN
      EXECUTE format(
        'SELECT count(*) FILTER (WHERE c > 1), min(format(''group %%s holds a sensitive vector %%s times'', group_id, c))
           FROM (SELECT group_id, sum(count) AS c FROM %s GROUP BY group_id, %s) v', st, sa_cols) INTO bad, ex;
      EXECUTE format('SELECT count(*), min(format(''group %%s has %%s rows'', group_id, n))
                        FROM (SELECT group_id, sum(count) AS n FROM %s GROUP BY 1) g WHERE n < %s', st, lbase)
        INTO k, detail;
    END IF;
    "check" := 'anatomy'; passed := bad = 0 AND k = 0;
    detail := CASE WHEN passed THEN format('every group has at least %s rows with pairwise distinct sensitive vectors', lbase)
                   WHEN bad > 0 THEN format('%s repeated vector(s), e.g. %s', bad, ex)
                   ELSE format('%s group(s) below l = %s, e.g. %s', k, lbase, detail) END;
    RETURN NEXT;
  END IF;
  -- L_sl: each value's l comes from the catalog (the l of its effective security level,
  -- pganon._effective_level, looked up once per distinct value), never from the release's own
  -- level table; a value without a level gets no l and fails.
  SELECT string_agg(CASE WHEN lsl THEN format(
           'SELECT st.group_id, %1$L AS sa, st.%2$I::text AS v, sum(st.count) AS c, max(cl.l) AS l FROM %3$s st
              LEFT JOIN (SELECT x.v, pganon._effective_level(%4$s, %1$L, x.v) AS level
                           FROM (SELECT DISTINCT %2$I::text AS v FROM %3$s) x) cs ON cs.v = st.%2$I::text
              LEFT JOIN pganon.level_l cl ON cl.dataset_id = %4$s AND cl.level = cs.level
             WHERE cl.l IS DISTINCT FROM 1 GROUP BY 1, 3', x, x, st, dataset_id)
         ELSE format('SELECT group_id, %L AS sa, %I::text AS v, sum(count) AS c, %s AS l FROM %s
                       WHERE %s > 1 GROUP BY 1, 3', x, x, coalesce(lbase, 0), st, coalesce(lbase, 0)) END,
                    ' UNION ALL ') INTO sa_cols FROM jsonb_array_elements_text(lay->'sas') x;
  IF lay->>'model' IS DISTINCT FROM 'anatomy' THEN
    -- The exact one-pass form of the diversity, min_group and sums 2-4 below, over the ST or over
    -- some of its groups ($1): each row carries its group's size and, from windows over its group,
    -- the count of its value of each SA and of its whole vector, with the value's l from a small map
    -- (one per (SA, distinct value)); a row flags the pair it belongs to.
    SELECT string_agg(format(', sum(st.count) OVER (PARTITION BY st.group_id, st.%I) AS c%s', x, ord)
                      || CASE WHEN lsl THEN format(', l%s.l AS l%s', ord, ord) ELSE '' END, '' ORDER BY ord),
           string_agg(format(' LEFT JOIN lv l%1$s ON l%1$s.sa = %2$L AND l%1$s.v = st.%3$I::text', ord, x, x), '' ORDER BY ord),
           string_agg(CASE WHEN lsl THEN format(' OR (l%1$s IS DISTINCT FROM 1 AND (l%1$s IS NULL OR c%1$s * l%1$s > n))', ord)
                           ELSE format(' OR c%s * %s > n', ord, lbase) END, '' ORDER BY ord),
           string_agg(format('(%I)', x), ', ' ORDER BY ord),
           string_agg(format(' WHEN GROUPING(%1$I) = 0 THEN %1$L', x), '' ORDER BY ord),
           string_agg(format(' WHEN GROUPING(%1$I) = 0 THEN %1$I::text', x), '' ORDER BY ord),
           string_agg(format(', st.%I', x), '' ORDER BY ord)
      INTO gt_cols, src_cols, contain, gsel, sa, ex, detail
      FROM jsonb_array_elements_text(lay->'sas') WITH ORDINALITY AS y(x, ord);
    one := format(
      'WITH s0 AS NOT MATERIALIZED (SELECT * FROM %4$s%8$s), %1$s w AS (SELECT st.group_id, st.count, sum(st.count) OVER (PARTITION BY st.group_id) AS n%2$s,
                         sum(st.count) OVER (PARTITION BY st.group_id%3$s) AS cv,
                         hashint8extended(hash_record_extended(ROW(st.group_id%3$s), 7), 11)::numeric * st.count AS hs
                    FROM s0 st%5$s)
       SELECT count(*) FILTER (WHERE group_id IS NOT NULL AND (false%6$s)), count(*) FILTER (WHERE group_id IS NOT NULL AND cv * %7$s > n),
              coalesce(sum(count), 0), count(*) FILTER (WHERE count IS NULL OR count < 1), coalesce(sum(hs), 0),
              coalesce(sum(hashint8extended(group_id, 11)::numeric * count), 0) FROM w',
      CASE WHEN lsl THEN format('lv AS MATERIALIZED (SELECT d.sa, d.v, cl.l FROM (SELECT CASE%1$s END AS sa, CASE%2$s END AS v
                                  FROM s0 GROUP BY GROUPING SETS (%4$s)) d LEFT JOIN pganon.level_l cl
                                    ON cl.dataset_id = %5$s AND cl.level = pganon._effective_level(%5$s, d.sa, d.v)),',
                                sa, ex, st, gsel, dataset_id) ELSE '' END,
      CASE WHEN lsl OR lbase > 1 THEN gt_cols ELSE '' END, detail, st,
      CASE WHEN lsl THEN src_cols ELSE '' END, CASE WHEN lsl OR lbase > 1 THEN contain ELSE '' END, mg, ' WHERE $2 OR group_id::bigint = ANY ($1)');
    -- one hash aggregate by group decides the groups it can (pganon._verify_st_pass); the exact
    -- form the others, or the whole ST when the release does not suit the aggregate. A check
    -- passes iff it passes the exact statements, which run only to describe a failure.
    SELECT x.bad, x.k, x.st_n, x.st_bad, x.st_hs, x.st_hg, x.unsure INTO bad, k, st_n, st_bad, st_hs, st_hg, unsure
      FROM pganon._verify_st_pass(st, lay->'sas', lsl, lbase, mg, dataset_id, 1) x;
    IF bad IS NULL THEN
      EXECUTE one INTO bad, k, st_n, st_bad, st_hs, st_hg USING NULL::bigint[], true;
    ELSIF unsure IS NOT NULL THEN
      EXECUTE one INTO m, n USING unsure, false;
      bad := bad + m; k := k + n;
    END IF;
    gt_cols := ''; src_cols := ''; contain := 'true'; gsel := '';
  END IF;
  IF lay->>'model' IS DISTINCT FROM 'anatomy' AND bad > 0 THEN
    EXECUTE format(
      'SELECT count(*), min(format(''group %%s: %%s=%%s occurs %%s times in %%s rows, l=%%s'', v.group_id, v.sa, v.v,
                                    v.c, stn.n, coalesce(v.l::text, ''none'')))
         FROM (%1$s) v JOIN (SELECT group_id, sum(count) AS n FROM %2$s GROUP BY 1) stn USING (group_id)
        WHERE v.l IS NULL OR v.c * v.l > stn.n', sa_cols, st) INTO bad, ex;
  END IF;
  IF lay->>'model' IS DISTINCT FROM 'anatomy' THEN
    "check" := CASE WHEN lsl THEN 'lsl_diversity' ELSE 'l_diversity' END;
    passed := bad = 0;
    detail := CASE WHEN passed THEN 'every group is ' || CASE WHEN lsl THEN 'L_sl-diverse per sensitive attribute'
                   ELSE format('%s-diverse per sensitive attribute', lbase) END
              ELSE format('%s violation(s), e.g. %s', bad, ex) END;
    RETURN NEXT;

    -- min_group (the promise that no row's whole sensitive vector is exposed): every group has
    -- at least mg rows and no sensitive vector fills more than 1/mg of it
    bad := k;
    IF bad > 0 THEN
      SELECT string_agg(format('%I', x), ', ') INTO sa_cols FROM jsonb_array_elements_text(lay->'sas') x;
      EXECUTE format(
        'SELECT count(*), min(format(''group %%s: a sensitive vector on %%s of its %%s rows'', v.group_id, v.c, stn.n))
           FROM (SELECT group_id, sum(count) AS c FROM %1$s GROUP BY group_id, %2$s) v
           JOIN (SELECT group_id, sum(count) AS n FROM %1$s GROUP BY 1) stn USING (group_id)
          WHERE v.c * %3$s > stn.n', st, sa_cols, mg) INTO bad, ex;
    END IF;
    "check" := 'min_group'; passed := bad = 0;
    detail := CASE WHEN NOT passed THEN format('%s group(s) expose a sensitive vector above 1/%s, e.g. %s', bad, mg, ex)
                   WHEN mg = 1 THEN 'min_group = 1: groups of one and whole sensitive vectors may be published (the paper''s setting)'
                   ELSE format('every group has at least %s rows and no sensitive vector above 1/%s of them', mg, mg) END;
    RETURN NEXT;
  END IF;

  -- 2-4. One pass each over ST, GT and map + source. Multisets are compared through a count and
  -- a sum of 64-bit row hashes of (group_id, values): a wrong row, or a right row in the wrong
  -- group, goes unnoticed with probability ~2^-64. The record hash is re-hashed because
  -- hash_record_extended combines its columns linearly, so sums of it alone would not see rows
  -- whose values were swapped between groups. No per-group aggregate is needed.
  FOR q IN SELECT * FROM jsonb_array_elements(lay->'qis') LOOP
    gt_cols := gt_cols || format(', %I', q->>'column');
    src_cols := src_cols || format(', s.%I', q->>'column');
    SELECT format_type(a.atttypid, a.atttypmod) INTO coltype FROM pg_attribute a
     WHERE a.attrelid = gt AND a.attname = q->>'column';
    -- a range cell and its records are compared in the cell's range type, or in one space per
    -- kind when the column's type changed since (pganon._verify_space: cells converted once per group)
    sp := pganon._verify_space(q->>'kind', gt, source, q->>'column');
    contain := contain || CASE
      WHEN coltype LIKE '%range' THEN format(' AND g.%I @> s.%I::%s', q->>'column', q->>'column', sp.subtype)
      WHEN coltype LIKE '%[]' THEN format(' AND s.%I::text = ANY (g.%I)', q->>'column', q->>'column')
      ELSE format(' AND g.%I = s.%I', q->>'column', q->>'column') END;
    gsel := gsel || CASE WHEN coltype LIKE '%range' AND sp.convert
      THEN format(', %1$I::text::%2$s AS %1$I', q->>'column', sp.range_type)
      ELSE format(', %I', q->>'column') END;
    convert := convert OR (coltype LIKE '%range' AND sp.convert);
  END LOOP;
  SELECT string_agg(format(', %I', x), ''), string_agg(format(', s.%I', x), '') INTO sa_cols, ex
    FROM jsonb_array_elements_text(lay->'sas') x;
  EXECUTE format('SELECT count(*), coalesce(sum(hashint8extended(hash_record_extended(ROW(group_id%1$s), 7), 11)), 0),
                         coalesce(sum(hashint8extended(group_id, 11)), 0) FROM %2$s', gt_cols, gt)
    INTO gt_n, gt_hq, gt_hg;
  -- keys are unique in the map when a unique index says so (the engine adds a primary key);
  -- otherwise they are counted
  SELECT count(*) = 0 INTO count_keys FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid
   WHERE i.indrelid = map AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL
     AND a.attnum = i.indkey[0] AND a.attname = keycol;
  EXECUTE format('SELECT count(*), %6$s, count(*) - count(s.%1$I),
                         coalesce(sum(hashint8extended(hash_record_extended(ROW(m.group_id%2$s), 7), 11)), 0),
                         coalesce(sum(hashint8extended(hash_record_extended(ROW(m.group_id%3$s), 7), 11)), 0),
                         coalesce(sum(hashint8extended(m.group_id, 11)), 0)
                    FROM %4$s m LEFT JOIN %5$s s ON s.%1$I = m.%1$I', keycol, src_cols, ex, map, source,
                 CASE WHEN count_keys THEN format('count(DISTINCT m.%I)', keycol) ELSE 'count(*)' END)
    INTO n, m, bad, src_hq, src_hs, src_hg;
  "check" := 'gt_st_agree'; passed := gt_n = st_n AND gt_hg = st_hg;
  detail := CASE WHEN passed THEN 'GT and ST have the same groups and group sizes'
                 ELSE format('GT (%s rows) and ST (%s records) differ in their groups or group sizes', gt_n, st_n) END;
  RETURN NEXT;
  -- every source row is published once or counted as suppressed
  "check" := 'partition';
  passed := n = m AND n = gt_n AND n + suppressed_rows = source_rows AND bad = 0;
  detail := format('%s published + %s suppressed = %s source rows; %s GT rows; %s duplicate and %s unknown keys',
                   n, suppressed_rows, source_rows, gt_n, n - m, bad);
  RETURN NEXT;

  -- the published rows are the source rows of their group (exact, or contained in the generalization)
  IF (lay->>'generalized')::boolean THEN
    EXECUTE format('SELECT count(*) FROM %s m JOIN %s s USING (%I)
                    JOIN (SELECT group_id%s FROM (SELECT DISTINCT ON (group_id) * FROM %s ORDER BY group_id) x%s) g
                      USING (group_id)
                    WHERE NOT (%s)', map, source, keycol, gsel, gt,
                   CASE WHEN convert THEN ' OFFSET 0' ELSE '' END,   -- converted cells: once per group
                   contain) INTO k;
    passed := k = 0 AND gt_n = n AND gt_hg = src_hg;
  ELSE
    k := NULL;
    passed := gt_n = n AND gt_hq = src_hq;
  END IF;
  "check" := 'gt_matches_source';
  detail := CASE WHEN passed THEN 'every group of the GT holds exactly (or contains) the quasi-identifiers of its source rows'
                 WHEN k > 0 THEN format('%s source row(s) are not contained in their group''s generalization', k)
                 ELSE 'the GT''s (group, quasi-identifiers) rows differ from those of the source' END;
  RETURN NEXT;
  "check" := 'st_matches_source'; passed := st_n = n AND st_hs = src_hs AND st_bad = 0;
  detail := CASE WHEN passed THEN 'every group of the ST counts exactly the sensitive vectors of its source rows'
                 WHEN st_bad > 0 THEN format('%s ST row(s) have a count below 1', st_bad)
                 ELSE 'the ST''s (group, sensitive vector, count) rows differ from those of the source' END;
  RETURN NEXT;

  -- 5. nothing that identifies: no identifier column and no key in GT or ST
  RETURN QUERY SELECT * FROM pganon._verify_no_identifiers(ARRAY[gt, st], keycol, dataset_id);
END $$;

CREATE OR REPLACE FUNCTION pganon._hierarchy_closure(dataset_id int, column_name name)
RETURNS TABLE (node text, leaf text)
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  -- every (ancestor-or-self, leaf) pair of a stored hierarchy, walked from the catalog's parent links
  WITH RECURSIVE up(node, leaf) AS (
    SELECT n.node, n.node FROM pganon.hierarchy_node n
     WHERE n.dataset_id = $1 AND n.column_name = $2
       AND NOT EXISTS (SELECT 1 FROM pganon.hierarchy_node c WHERE c.dataset_id = $1 AND c.column_name = $2
                                                               AND c.parent = n.node)
    UNION ALL
    SELECT n.parent, up.leaf FROM up JOIN pganon.hierarchy_node n
      ON n.dataset_id = $1 AND n.column_name = $2 AND n.node = up.node AND n.parent IS NOT NULL)
  SELECT node, leaf FROM up
$$;
COMMENT ON FUNCTION pganon._hierarchy_closure(int, name) IS
  'Internal: (node, leaf) for every node of a hierarchy and every leaf below it (the node itself for a leaf).';

CREATE OR REPLACE FUNCTION pganon._verify_generalized(lay jsonb, source regclass, source_rows bigint,
                                                      suppressed_rows bigint, dataset_id int)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
-- Generalized releases (gaa, mondrian): one GT row per record, QIs recoded per class.
DECLARE
  gt regclass := (lay->'relations'->>'gt')::regclass;
  map regclass := (lay->'relations'->>'map')::regclass;
  keycol text := lay->>'key';
  k int := (lay->>'k')::int;
  priv jsonb := lay->'privacy';
  qcols text; cover text := ''; ctes text := ''; hjoins text := ''; vsel text := ''; sp record; qi jsonb; sa text; i int := 0;
  n bigint; m bigint; bad bigint; bad2 bigint; ex text; val float8;
  -- the one-pass form of the checks below: x is the GT per (class, QI vector), r the map and the
  -- source per (class, the record's non-range QI values), v the class's vector, hN the leaf ->
  -- ancestor map of the N-th QI's hierarchy (built once, joined by equality on the few rows of r).
  -- Vectors are grouped as text arrays (one key the planner hashes; equal text, equal value)
  xq text := ''; rq text := ''; nr int := 1; ra text := ''; fv text := ''; fctes text := ''; coltype text;
  fjoins text := ''; fcover text := ''; sag text; sas text; gt_n bigint; gt_h numeric; nulls bigint; unknown bigint;
  src_h numeric; uncovered bigint; count_keys boolean;
BEGIN
  SELECT string_agg(format('%I', x->>'column'), ', ') INTO qcols FROM jsonb_array_elements(lay->'qis') x;

  -- each class publishes one QI vector, that vector covers every member's values, and the GT
  -- holds per class exactly the members' sensitive values (the statements of the exact form,
  -- run only when the one-pass form finds a failure, so its detail counts records)
  FOR qi IN SELECT * FROM jsonb_array_elements(lay->'qis') LOOP
    i := i + 1;
    xq := xq || format(', g.%I::text', qi->>'column');
    SELECT format_type(a.atttypid, a.atttypmod) INTO coltype FROM pg_attribute a
     WHERE a.attrelid = gt AND a.attname = qi->>'column';
    IF qi->>'form' = 'range' THEN
      -- cell and record in the cell's range type (a smallint value as an integer in its int4range),
      -- or in one space per kind when the column's type changed since (pganon._verify_space)
      sp := pganon._verify_space(qi->>'kind', gt, source, qi->>'column');
      cover := cover || format(' OR NOT s.%1$I::%2$s <@ v.%1$I', qi->>'column', sp.subtype);
      vsel := vsel || CASE WHEN sp.convert THEN format(', %1$I::text::%2$s AS %1$I', qi->>'column', sp.range_type)
                           ELSE format(', %I', qi->>'column') END;
      -- a range holds every value of a set iff it holds the set's least and greatest
      fv := fv || format(', qv[%s]::%s AS q%s', i + 1, CASE WHEN sp.convert THEN sp.range_type ELSE coltype END, i);
      ra := ra || format(', min(s.%1$I::%2$s) AS lo%3$s, max(s.%1$I::%2$s) AS hi%3$s', qi->>'column', sp.subtype, i);
      fcover := fcover || format(' OR NOT (r.lo%1$s <@ v.q%1$s AND r.hi%1$s <@ v.q%1$s)', i);
    ELSIF qi->>'form' = 'values' THEN
      cover := cover || format(' OR NOT s.%1$I::text = ANY (v.%1$I)', qi->>'column');
      vsel := vsel || format(', %I', qi->>'column');
      fv := fv || format(', qv[%s]::%s AS q%s', i + 1, coltype, i);
      rq := rq || format(', s.%I::text', qi->>'column'); nr := nr + 1;
      fcover := fcover || format(' OR NOT r.qv[%s] = ANY (v.q%s)', nr, i);
    ELSE  -- a hierarchy label: the record's value must be a leaf below it
      vsel := vsel || format(', %I', qi->>'column');
      ctes := ctes || format(', h%s AS (SELECT * FROM pganon._hierarchy_closure(%s, %L))', i, dataset_id, qi->>'column');
      hjoins := hjoins || format(' LEFT JOIN h%1$s ON h%1$s.node = v.%2$I AND h%1$s.leaf = s.%2$I::text', i, qi->>'column');
      cover := cover || format(' OR h%s.node IS NULL', i);
      fv := fv || format(', qv[%s]::%s AS q%s', i + 1, coltype, i);
      rq := rq || format(', s.%I::text', qi->>'column'); nr := nr + 1;
      fctes := fctes || format(', h%s AS MATERIALIZED (SELECT * FROM pganon._hierarchy_closure(%s, %L))', i, dataset_id, qi->>'column');
      fjoins := fjoins || format(' LEFT JOIN h%1$s ON h%1$s.node = v.q%1$s AND h%1$s.leaf = r.qv[%2$s]', i, nr);
      fcover := fcover || format(' OR h%s.node IS NULL', i);
    END IF;
  END LOOP;
  -- (group, sensitive values) rows are compared through a count and a sum of 64-bit row hashes
  -- (as in _verify_bucketization); NULLs, which the exact form never matches, take the exact form
  SELECT string_agg(format(', g.%I::text', x), ''), string_agg(format(', s.%I::text', x), '') INTO sag, sas
    FROM jsonb_array_elements_text(lay->'sas') x;
  SELECT count(*) = 0 INTO count_keys FROM pg_index ix JOIN pg_attribute a ON a.attrelid = ix.indrelid
   WHERE ix.indrelid = map AND ix.indisunique AND ix.indnkeyatts = 1 AND ix.indpred IS NULL
     AND a.attnum = ix.indkey[0] AND a.attname = keycol;
  EXECUTE format('WITH x AS MATERIALIZED (SELECT g.class_id AS cls, ARRAY[NULL::text%1$s] AS qv, count(*) AS n,
                            sum(hashint8extended(hash_record_extended(ROW(g.class_id::int8%2$s), 7), 11)) AS h,
                            count(*) FILTER (WHERE NOT ROW(g.class_id%2$s) IS NOT NULL) AS nulls FROM %3$s g GROUP BY 1, 2),
                       v AS MATERIALIZED (SELECT DISTINCT ON (cls) cls%4$s FROM x ORDER BY cls),
                       r AS MATERIALIZED (SELECT m.class_id AS cls, ARRAY[NULL::text%5$s] AS qv, count(*) AS n, count(s.%6$I) AS ns%7$s,
                            sum(hashint8extended(hash_record_extended(ROW(m.class_id::int8%8$s), 7), 11))
                              FILTER (WHERE s.%6$I IS NOT NULL) AS h
                            FROM %9$s m LEFT JOIN %10$s s USING (%6$I) GROUP BY 1, 2)%11$s
                  SELECT kq.bad, kq.ex, xs.n, xs.h, xs.nulls, xs.multi, rs.n, rs.unknown, rs.h, rc.uncovered
                    FROM (SELECT count(*) AS bad, min(format(''a QI vector on %%s rows'', c)) AS ex
                            FROM (SELECT sum(n) AS c FROM x GROUP BY qv) y WHERE c < %12$s) kq,
                         (SELECT coalesce(sum(n), 0) AS n, coalesce(sum(h), 0) AS h, coalesce(sum(nulls), 0) AS nulls,
                                 (SELECT count(*) FROM (SELECT cls FROM x GROUP BY cls HAVING count(*) > 1) y) AS multi FROM x) xs,
                         (SELECT coalesce(sum(n), 0) AS n, coalesce(sum(n - ns), 0) AS unknown, coalesce(sum(h), 0) AS h FROM r) rs,
                         (SELECT count(*) AS uncovered FROM r LEFT JOIN v USING (cls)%13$s
                           WHERE r.ns > 0 AND (v.cls IS NULL%14$s)) rc',
                 xq, sag, gt, fv, rq, keycol, ra, sas, map, source, fctes, coalesce(k::text, 'NULL'), fjoins, fcover)
    INTO bad, ex, gt_n, gt_h, nulls, bad2, n, unknown, src_h, uncovered;

  -- k-anonymity over what an analyst sees: every published QI vector occurs at least k times
  -- (vectors equal in value but not in text were counted apart above: a failure is recounted)
  IF bad > 0 THEN
    EXECUTE format('SELECT count(*), min(format(''a QI vector on %%s rows'', c))
                      FROM (SELECT count(*) AS c FROM %s GROUP BY %s) x WHERE c < %s', gt, qcols, k) INTO bad, ex;
  END IF;
  "check" := 'k_anonymity'; passed := bad = 0;
  detail := CASE WHEN passed THEN format('every QI vector of the GT occurs at least k = %s times', k)
                 ELSE format('%s QI vector(s) below k = %s, e.g. %s', bad, k, ex) END;
  RETURN NEXT;

  -- a dataset with a person column: k, the privacy model (and semantic rules) count persons,
  -- and persons stay whole when the layout says so (20-verify-person.sql)
  IF lay ? 'person' THEN
    RETURN QUERY SELECT * FROM pganon._verify_person_k(map, source, keycol, lay->>'person', gt,
                                                       ARRAY(SELECT x->>'column' FROM jsonb_array_elements(lay->'qis') x), k);
    RETURN QUERY SELECT * FROM pganon._verify_person_privacy(map, source, keycol, lay->>'person', gt,
                   ARRAY(SELECT x->>'column' FROM jsonb_array_elements(lay->'qis') x),
                   ARRAY(SELECT jsonb_array_elements_text(lay->'sas')), priv, coalesce((lay->>'persons_whole')::boolean, false));
    IF lay ? 'semantic' THEN
      RETURN QUERY SELECT * FROM pganon._verify_person_rules(lay, source);
    END IF;
  END IF;

  -- the privacy model the release promises beyond k, per published SA, over the QI vectors
  -- (over persons above when there is a person column)
  IF priv IS NOT NULL AND jsonb_typeof(priv) = 'object' AND NOT lay ? 'person' THEN
    FOR sa IN SELECT jsonb_array_elements_text(lay->'sas') LOOP
      IF priv->>'model' = 'l_diversity' THEN
        EXECUTE format('SELECT min(c) FROM (SELECT count(DISTINCT %I) AS c FROM %s GROUP BY %s) x', sa, gt, qcols) INTO val;
        passed := val >= (priv->>'l')::float8;
      ELSIF priv->>'model' = 'entropy_l_diversity' THEN
        EXECUTE format('SELECT min(h) FROM (SELECT -sum(p * ln(p)) AS h FROM (
                          SELECT %2$s, count(*)::float8 / sum(count(*)) OVER (PARTITION BY %2$s) AS p
                            FROM %1$s GROUP BY %2$s, %3$I) y GROUP BY %2$s) x', gt, qcols, sa) INTO val;
        val := exp(val);
        passed := ln(val) >= ln((priv->>'l')::float8) - 1e-9;
      ELSIF priv->>'model' = 'alpha_k_anonymity' THEN
        EXECUTE format('SELECT max(c::float8 / t) FROM (SELECT count(*) AS c, sum(count(*)) OVER (PARTITION BY %2$s) AS t
                          FROM %1$s GROUP BY %2$s, %3$I) x', gt, qcols, sa) INTO val;
        passed := val <= (priv->>'alpha')::float8 + 1e-12;
      ELSE  -- t_closeness: sum over all values of |q - p| (l1), halved for the equal-distance EMD
        EXECUTE format('WITH g AS (SELECT %3$I AS v, count(*)::float8 / sum(count(*)) OVER () AS p FROM %1$s GROUP BY 1),
                             c AS (SELECT ROW(%2$s)::text AS cls, %3$I AS v, count(*)::float8 / sum(count(*)) OVER (PARTITION BY %2$s) AS q
                                     FROM %1$s GROUP BY %2$s, %3$I)
                        SELECT max(d) FROM (SELECT cls, sum(abs(c.q - g.p) - g.p) + 1 AS d FROM c JOIN g USING (v) GROUP BY cls) x',
                       gt, qcols, sa) INTO val;
        IF priv->>'distance' = 'equal' THEN val := val / 2; END IF;
        passed := val <= (priv->>'t')::float8 + 1e-9;
      END IF;
      "check" := format('%s(%s)', priv->>'model', sa);
      detail := format('achieved %s over the QI vectors; required %s', round(val::numeric, 6),
                       (priv - 'model')::text);
      RETURN NEXT;
    END LOOP;
  END IF;

  -- every source row is published at most once, and the rest are counted as suppressed
  IF count_keys THEN
    EXECUTE format('SELECT count(DISTINCT %I) FROM %s', keycol, map) INTO m;
  ELSE
    m := n;
  END IF;
  "check" := 'partition'; passed := n = m AND n = gt_n AND n + suppressed_rows = source_rows AND unknown = 0;
  detail := format('%s published + %s suppressed = %s source rows; %s GT rows; %s duplicate and %s unknown keys',
                   n, suppressed_rows, source_rows, gt_n, n - m, unknown);
  RETURN NEXT;

  IF bad2 = 0 AND uncovered = 0 AND nulls = 0 AND gt_n = n - unknown AND gt_h = src_h THEN
    bad := 0; bad2 := 0; m := 0;
  ELSE
    EXECUTE format('SELECT count(*) FROM (SELECT class_id FROM %s GROUP BY class_id HAVING count(DISTINCT ROW(%s)) > 1) x', gt, qcols) INTO bad;
    -- MATERIALIZED where cells are converted: once per class, not once per record
    EXECUTE format('WITH v AS %9$s (SELECT class_id%8$s FROM (SELECT DISTINCT ON (class_id) * FROM %1$s ORDER BY class_id) x)%6$s
                    SELECT count(*) FROM %2$s m JOIN %3$s s USING (%4$I) LEFT JOIN v USING (class_id)%7$s
                     WHERE v.class_id IS NULL%5$s', gt, map, source, keycol, cover, ctes, hjoins, vsel,
                   CASE WHEN vsel LIKE '%::text::%' THEN 'MATERIALIZED' ELSE '' END) INTO bad2;
    EXECUTE format('SELECT count(*) FROM (SELECT class_id, %1$s, count(*) AS c FROM %2$s GROUP BY class_id, %1$s) g
                      FULL JOIN (SELECT m.class_id, %3$s, count(*) AS c FROM %4$s m JOIN %5$s s USING (%6$I) GROUP BY m.class_id, %3$s) r
                      USING (class_id, %1$s) WHERE g.c IS DISTINCT FROM r.c',
                   (SELECT string_agg(format('%I', x), ', ') FROM jsonb_array_elements_text(lay->'sas') x), gt,
                   (SELECT string_agg(format('s.%I', x), ', ') FROM jsonb_array_elements_text(lay->'sas') x),
                   map, source, keycol) INTO m;
  END IF;
  "check" := 'gt_matches_source'; passed := bad = 0 AND bad2 = 0 AND m = 0;
  detail := CASE WHEN passed THEN 'every class publishes one QI vector that covers its records, with their sensitive values'
                 ELSE format('%s class(es) with several QI vectors, %s record(s) not covered, %s SA count mismatch(es)', bad, bad2, m) END;
  RETURN NEXT;

  RETURN QUERY SELECT * FROM pganon._verify_no_identifiers(ARRAY[gt], keycol, dataset_id);
END $$;

CREATE OR REPLACE FUNCTION pganon._verify_space(kind text, cell regclass, source regclass, col text,
                                                OUT range_type text, OUT subtype text, OUT convert boolean)
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  -- The verifier's own type mapping (independent of the engine's coltypes.py): how a range cell
  -- of column `col` of relation `cell` and the values of `col` in `source` (the base type of a
  -- domain) are compared. Where the cell's range type holds every value of the source's type
  -- (int4range: smallint, integer; int8range: any integer; numrange: any number, real and double
  -- precision cast to numeric, the cast the engine builds their cells with, so no float is ever
  -- compared; daterange: date; tsrange: timestamp; tstzrange: timestamptz), in that range type
  -- (convert false). Otherwise (the column's type changed since the release) in one space per
  -- kind, the cell read through its text (convert true): numeric as numrange over numeric, date
  -- as tstzrange over timestamptz (in the session's time zone on both sides).
  WITH t AS (
    SELECT (SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = cell AND a.attname = col) AS c,
           (SELECT CASE WHEN y.typtype = 'd' THEN y.typbasetype ELSE y.oid END FROM pg_attribute a
              JOIN pg_type y ON y.oid = a.atttypid WHERE a.attrelid = source AND a.attname = col) AS s)
  SELECT CASE WHEN d.direct THEN format_type(t.c, NULL) WHEN kind = 'date' THEN 'tstzrange' ELSE 'numrange' END,
         CASE WHEN d.direct THEN format_type(r.rngsubtype, NULL) WHEN kind = 'date' THEN 'timestamptz' ELSE 'numeric' END,
         NOT d.direct
    FROM t LEFT JOIN pg_range r ON r.rngtypid = t.c,
         LATERAL (SELECT coalesce(
           (t.c = 'int4range'::regtype AND t.s IN ('int2'::regtype, 'int4'::regtype))
        OR (t.c = 'int8range'::regtype AND t.s IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype))
        OR (t.c = 'numrange'::regtype AND t.s IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype, 'numeric'::regtype,
                                                  'float4'::regtype, 'float8'::regtype))
        OR (t.c = 'daterange'::regtype AND t.s = 'date'::regtype)
        OR (t.c = 'tsrange'::regtype AND t.s = 'timestamp'::regtype)
        OR (t.c = 'tstzrange'::regtype AND t.s = 'timestamptz'::regtype), false) AS direct) d
$$;
COMMENT ON FUNCTION pganon._verify_space(text, regclass, regclass, text) IS
  'Internal (verifier): the range type and subtype in which a QI''s cells and its source values are compared, and whether the cells are converted to it.';

CREATE OR REPLACE FUNCTION pganon._verify_types(release bigint, lay jsonb, source regclass, dataset_id int)
RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- Refuse (PA003) to compare a release with a source whose numeric or date column no longer has
-- a type of its kind (ALTER TABLE ... TYPE after the release), naming the column, the type the
-- release was made from (recorded in its layout since issue 13; its kind before) and the type
-- now, instead of failing inside a check with "operator does not exist". The verifier's own
-- list of types per kind, as pganon._verify_space compares them.
DECLARE
  q record;
  now_type text;
  cat "char";
BEGIN
  FOR q IN SELECT x->>'column' AS col, x->>'kind' AS kind, coalesce(x->>'type', x->>'kind') AS was, 'quasi-identifier' AS role
             FROM jsonb_array_elements(lay->'qis') x
           UNION ALL
           SELECT a.column_name::text, a.kind, a.kind, 'sensitive attribute' FROM pganon.attribute a
            WHERE a.dataset_id = _verify_types.dataset_id AND a.column_name::text IN (SELECT jsonb_array_elements_text(lay->'sas'))
  LOOP
    CONTINUE WHEN q.kind IS NULL OR q.kind NOT IN ('numeric', 'date');
    SELECT format_type(b.oid, NULL), b.typcategory INTO now_type, cat
      FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
      JOIN pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
     WHERE a.attrelid = source AND a.attname = q.col AND a.attnum > 0 AND NOT a.attisdropped;
    IF now_type IS NULL THEN
      RAISE EXCEPTION 'column "%" of % no longer exists; release % published it', q.col, source, release
        USING ERRCODE = 'PA001', HINT = 'a release can only be verified against the table it was made from';
    END IF;
    IF (q.role = 'quasi-identifier' AND q.kind = 'numeric'
        AND now_type NOT IN ('smallint', 'integer', 'bigint', 'numeric', 'real', 'double precision'))
       OR (q.role = 'quasi-identifier' AND q.kind = 'date'
        AND now_type NOT IN ('date', 'timestamp without time zone', 'timestamp with time zone'))
       OR (q.role = 'sensitive attribute' AND cat <> CASE q.kind WHEN 'numeric' THEN 'N' ELSE 'D' END) THEN
      RAISE EXCEPTION '% "%" of % has type % now, but release % was published from % values: its type changed, and the release cannot be compared with it',
                      q.role, q.col, source, now_type, release, q.was
        USING ERRCODE = 'PA003',
              HINT = format('cast it back (ALTER TABLE %s ALTER %I TYPE %s USING ...), or declare it again for its '
                            'new type (pganon.set_attribute) and publish a new release', source, q.col, q.was);
    END IF;
  END LOOP;
END $$;
COMMENT ON FUNCTION pganon._verify_types(bigint, jsonb, regclass, int) IS
  'Internal (verifier): refuse (PA003) a source whose numeric or date column changed type since the release.';

CREATE OR REPLACE FUNCTION pganon._verify_release(release bigint, source regclass)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
-- The checks of a release against `source`: publish passes its one-statement snapshot of the
-- source (what the release was made from, so rows written to the source meanwhile cannot fail
-- it), pganon.verify the live source.
DECLARE r record;
BEGIN
  SELECT x.layout, x.status, x.source_rows, x.suppressed_rows, x.dataset_id INTO r
    FROM pganon.release x WHERE x.id = release;
  IF NOT FOUND OR r.status = 'dropped' THEN
    RAISE EXCEPTION 'release % does not exist or was dropped', release USING ERRCODE = 'PA001',
      HINT = 'list releases with SELECT * FROM pganon.releases';
  END IF;
  PERFORM pganon._verify_types(release, r.layout, source, r.dataset_id);
  IF r.layout->>'family' = 'bucketization' THEN
    RETURN QUERY SELECT * FROM pganon._verify_bucketization(r.layout, source, r.source_rows,
                                                            r.suppressed_rows, r.dataset_id);
  ELSIF r.layout->>'family' = 'linked' THEN
    RETURN QUERY SELECT * FROM pganon._verify_linked(r.layout, source, r.source_rows,
                                                     r.suppressed_rows, r.dataset_id);
  ELSIF r.layout->>'family' = 'generalized' THEN
    RETURN QUERY SELECT * FROM pganon._verify_generalized(r.layout, source, r.source_rows,
                                                          r.suppressed_rows, r.dataset_id);
    IF r.layout ? 'semantic' THEN
      RETURN QUERY SELECT * FROM pganon._verify_semantic(r.layout);
    END IF;
  ELSIF r.layout->>'family' = 'rating' THEN
    RETURN QUERY SELECT * FROM pganon._verify_rating(r.layout, source, r.source_rows, r.suppressed_rows, r.dataset_id);
  ELSIF r.layout->>'family' = 'person' THEN
    RETURN QUERY SELECT * FROM pganon._verify_person(r.layout, source, r.source_rows, r.suppressed_rows, r.dataset_id);
  ELSE
    RAISE EXCEPTION 'release % has an unknown layout family %', release, r.layout->>'family' USING ERRCODE = 'PA002';
  END IF;
END $$;
COMMENT ON FUNCTION pganon._verify_release(bigint, regclass) IS
  'Internal: the checks of pganon.verify against a given source relation (publish: its snapshot of the source).';

CREATE OR REPLACE FUNCTION pganon.verify(release bigint)   -- VOLATILE: it switches to the dataset's owner
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
DECLARE src regclass; did int; own text;
BEGIN
  SELECT d.source, d.id INTO src, did FROM pganon.release x JOIN pganon.dataset d ON d.id = x.dataset_id
   WHERE x.id = release;
  IF FOUND THEN   -- read the source and the release with the owner's rights (roles.py)
    own := pganon._owner_to_act_as(did);
    IF own IS NOT NULL THEN
      EXECUTE format('SET LOCAL ROLE %I', own);
    END IF;
  END IF;
  RETURN QUERY SELECT * FROM pganon._verify_release(release, src);
END $$;
COMMENT ON FUNCTION pganon.verify(bigint) IS
  'Check a release independently of the engine, against the source as it is now: one row per check '
  '(check, passed, detail). Publish ran the same checks on its snapshot of the source; rows written to '
  'the source since then make partition and *_matches_source fail here. Admin only: reads the source.';
