-- The independent verifier of Rating releases (spec 003 §2.4): the Attribute Table (AT: tk and a
-- group per attribute) and the ID Table (IDT: attribute, group_id, value, count), read against
-- the source through the admin-only map (key, tk). Shares no code with the engine.

CREATE OR REPLACE FUNCTION pganon._verify_rating(lay jsonb, source regclass, source_rows bigint,
                                                 suppressed_rows bigint, dataset_id int)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
DECLARE
  at regclass := (lay->'relations'->>'gt')::regclass;
  idt regclass := (lay->'relations'->>'st')::regclass;
  map regclass := (lay->'relations'->>'map')::regclass;
  keycol text := lay->>'key';
  attrs text[];
  a text;
  bad bigint; ex text;
  h_at numeric := 0; h_idt numeric; h_src numeric := 0; h_grp numeric;
  x numeric; y numeric;
BEGIN
  SELECT array_agg(q->>'column') || ARRAY(SELECT jsonb_array_elements_text(lay->'sas')) INTO attrs
    FROM jsonb_array_elements(lay->'qis') q;
  -- 1. every group of every attribute holds at least SC pairwise-distinct values, none twice:
  -- distinct values are counted (NULL as one), not IDT rows, and a value on two rows or with a
  -- count other than 1 fails
  EXECUTE format('SELECT count(*), min(format(''%%s group %%s: %%s distinct value(s) in %%s row(s), counts %%s to %%s, SC %%s'',
                         attribute, group_id, nv, nr, mn, mx, sc))
                    FROM (SELECT attribute, group_id, count(DISTINCT value) + max((value IS NULL)::int) AS nv,
                                 count(*) AS nr, min(count) AS mn, max(count) AS mx,
                                 ($1->>attribute)::int AS sc FROM %s GROUP BY 1, 2) g
                   WHERE nv < sc OR nr > nv OR mn IS DISTINCT FROM 1 OR mx IS DISTINCT FROM 1 OR sc IS NULL', idt)
    USING lay->'sc' INTO bad, ex;
  "check" := 'sc_diversity'; passed := bad = 0;
  detail := CASE WHEN passed THEN 'every group of every attribute holds at least SC pairwise-distinct values'
                 ELSE format('%s group(s) violate it, e.g. %s', bad, ex) END;
  RETURN NEXT;
  -- 2. one AT row per published record; published + suppressed = source
  RETURN QUERY SELECT * FROM pganon._verify_partition(map, source, keycol, at, suppressed_rows, source_rows);
  -- 3. AT and IDT agree on every group's size, and 4. the IDT holds exactly the source values
  -- of each group's tuples: sums of 64-bit hashes of (attribute, group[, value]) on both sides
  EXECUTE format('SELECT coalesce(sum(hashint8extended(hashtext(attribute || '':'' || group_id)::int8, 3)::numeric * count), 0),
                         coalesce(sum(hashint8extended(hash_record_extended(ROW(attribute, group_id, value), 5), 3)::numeric * count), 0)
                    FROM %s', idt) INTO h_grp, h_idt;
  FOREACH a IN ARRAY attrs LOOP
    EXECUTE format('SELECT coalesce(sum(hashint8extended(hashtext(%1$L || '':'' || t.%2$I)::int8, 3)), 0),
                           coalesce(sum(hashint8extended(hash_record_extended(ROW(%1$L::text, t.%2$I, s.%2$I::text), 5), 3)), 0)
                      FROM %3$s m JOIN %4$s s USING (%5$I) JOIN %6$s t USING (tk)', a, a, map, source, keycol, at)
      INTO x, y;
    h_at := h_at + x; h_src := h_src + y;
  END LOOP;
  "check" := 'at_idt_agree'; passed := h_at = h_grp;
  detail := CASE WHEN passed THEN 'the AT and the IDT give every group of every attribute the same size'
                 ELSE 'the AT''s group sizes differ from the IDT''s' END;
  RETURN NEXT;
  "check" := 'idt_matches_source'; passed := h_src = h_idt;
  detail := CASE WHEN passed THEN 'every group of the IDT holds exactly the source values of its tuples'
                 ELSE 'the IDT''s (attribute, group, value, count) rows differ from the source''s' END;
  RETURN NEXT;
  RETURN QUERY SELECT * FROM pganon._verify_no_identifiers(ARRAY[at, idt], keycol, dataset_id);
END $$;
